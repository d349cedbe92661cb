"""Credentials: a passphrase or a raw 32-byte key, and where one comes from.

A credential is an argument, an environment variable (``AGENTZERO_PASSPHRASE``,
``AGENTZERO_DATA_KEY``, ``AGENTZERO_KEY_FILE``), a 0600 key file, the OS keyring (for a
store created with one: ``os_keyring`` and ``datadir.store_credential``) or a TTY prompt. It only
*opens* the key header; what it unwraps and how lives in ``keys``. Nothing in this
module logs or reprs a secret.
"""

from __future__ import annotations

import base64
import binascii
import getpass
import os
import secrets
import stat
import sys
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..base.errors import CredentialRequiredError, InvalidKeyError

KEY_BYTES = 32

ENV_PASSPHRASE = "AGENTZERO_PASSPHRASE"
ENV_DATA_KEY = "AGENTZERO_DATA_KEY"
ENV_KEY_FILE = "AGENTZERO_KEY_FILE"

CredentialKind = Literal["passphrase", "key"]


@dataclass(frozen=True)
class Credential:
    """A passphrase or a raw 32-byte key. Its repr never shows the secret."""

    kind: CredentialKind
    secret: bytes = field(repr=False)
    # Where it came from, for error messages only ("keyring": the OS keyring's entry).
    origin: str = field(default="", compare=False)

    @classmethod
    def from_passphrase(cls, passphrase: str) -> Credential:
        """A passphrase credential (Unicode-normalised so the same text always fits)."""
        if not passphrase:
            raise InvalidKeyError("the passphrase is empty", hint="choose a non-empty passphrase")
        try:
            return cls("passphrase", unicodedata.normalize("NFC", passphrase).encode("utf-8"))
        except UnicodeEncodeError as exc:  # lone surrogates: undecodable bytes from env/argv
            raise InvalidKeyError(
                "the passphrase is not valid UTF-8 text",
                hint="set AGENTZERO_PASSPHRASE in a UTF-8 locale, or use a key file",
            ) from exc

    @classmethod
    def from_key(cls, key: bytes | str) -> Credential:
        """A raw-key credential from 32 bytes, or 64 hex digits / base64 text."""
        raw = key if isinstance(key, bytes) else parse_key_text(key)
        if len(raw) != KEY_BYTES:
            raise InvalidKeyError(f"a raw key must be {KEY_BYTES} bytes, got {len(raw)}")
        return cls("key", raw)

    @classmethod
    def from_key_file(cls, path: Path | str) -> Credential:
        """A raw-key credential read from a key file, which must not be group/world readable."""
        p = Path(path).expanduser()
        try:
            st = p.stat()
            data = p.read_bytes()
        except OSError as exc:
            raise InvalidKeyError(f"cannot read key file {p}: {exc.strerror}") from exc
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise InvalidKeyError(
                f"key file {p} is readable by other users (mode {stat.S_IMODE(st.st_mode):o})",
                hint=f"chmod 600 {p}",
            )
        if len(data) == KEY_BYTES:
            return cls("key", data)
        try:
            return cls.from_key(data.decode("ascii").strip())
        except UnicodeDecodeError as exc:
            raise InvalidKeyError(f"key file {p} is neither 32 raw bytes nor hex/base64") from exc


def parse_key_text(text: str) -> bytes:
    """Decode a 32-byte key given as 64 hex digits or base64 (standard or URL-safe)."""
    t = text.strip()
    if len(t) == 2 * KEY_BYTES:
        try:
            return bytes.fromhex(t)
        except ValueError:
            pass
    try:
        raw = base64.b64decode(
            t + "=" * (-len(t) % 4), altchars=b"-_" if "-" in t or "_" in t else None, validate=True
        )
    except (binascii.Error, ValueError) as exc:
        raise InvalidKeyError("the key is neither 64 hex digits nor base64") from exc
    if len(raw) != KEY_BYTES:
        raise InvalidKeyError(f"the key decodes to {len(raw)} bytes, expected {KEY_BYTES}")
    return raw


def generate_key_file(path: Path | str) -> Credential:
    """Create a new 0600 key file holding a random key (hex) and return its credential."""
    p = Path(path).expanduser()
    key = secrets.token_bytes(KEY_BYTES)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key.hex().encode("ascii") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return Credential("key", key)


def resolve_credential(
    *,
    passphrase: str | None = None,
    key: bytes | str | None = None,
    key_file: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    prompt: bool | None = None,
    confirm: bool = False,
) -> Credential:
    """Pick the credential: explicit argument, then environment, then a TTY prompt.

    ``prompt=None`` prompts only when stdin is a terminal. ``confirm`` asks twice
    (used when creating a store).
    """
    env = os.environ if env is None else env
    if passphrase is not None:
        return Credential.from_passphrase(passphrase)
    if key is not None:
        return Credential.from_key(key)
    if key_file is not None:
        return Credential.from_key_file(key_file)
    if env.get(ENV_PASSPHRASE):
        return Credential.from_passphrase(env[ENV_PASSPHRASE])
    if env.get(ENV_DATA_KEY):
        return Credential.from_key(env[ENV_DATA_KEY])
    if env.get(ENV_KEY_FILE):
        return Credential.from_key_file(env[ENV_KEY_FILE])
    if prompt is None:
        prompt = sys.stdin.isatty()
    if not prompt:
        raise CredentialRequiredError("no passphrase or key was given")
    first = getpass.getpass("agentzero passphrase: ")
    if confirm and getpass.getpass("repeat passphrase: ") != first:
        raise InvalidKeyError("the passphrases do not match", hint="type the same passphrase twice")
    return Credential.from_passphrase(first)
