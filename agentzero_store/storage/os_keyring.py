"""The OS keyring as a place for a store's raw key (``agentzero init --keyring``).

The keyring holds a random 32-byte key (64 hex digits) under service ``agentzero`` and
account = the store id. keys.json holds it wrapped like any raw key, in a slot with id
``keyring``: only a store with that slot asks the keyring, so opening a passphrase store
never touches (or pops up) the keyring. The keyring is one more credential, never the
only thing that can decrypt: losing the entry is losing that credential, exactly like
losing a key file.

Which backend stores it is the ``keyring`` library's choice: macOS Keychain, Windows
Credential Locker, Secret Service or KWallet on Linux desktops; on a headless machine
none of those exists and the user chooses one with ``PYTHON_KEYRING_BACKEND`` (or
keyring's own config file). A backend keyring itself does not recommend (priority < 1,
e.g. keyrings.alt's file backends, which keep secrets in a plain or weakly protected
file) is used only when chosen that way, never by default: the key must not land in a
plaintext file without the user saying so.

``keyring`` is imported lazily: it loads every installed backend's entry point, and only
a store with a keyring slot needs it. Nothing here logs or reprs the key.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import Any

from ..base.errors import InvalidKeyError, KeyringError
from .credentials import KEY_BYTES, parse_key_text

SERVICE = "agentzero"
KEYRING_SLOT = "keyring"  # the key slot (in keys.json) the keyring's key opens
ENV_BACKEND = "PYTHON_KEYRING_BACKEND"  # keyring's own variable


def keyring_account(header: Mapping[str, Any]) -> str | None:
    """The keyring account of a store whose key header has a keyring slot, else None."""
    if any(s.get("id") == KEYRING_SLOT for s in header["slots"]):
        return str(header["store_id"])
    return None


def _name(backend: object) -> str:
    cls = type(backend)
    return f"{cls.__module__}.{cls.__qualname__}"


def _backend() -> Any:
    """The keyring backend to use, or ``KeyringError`` saying why there is none."""
    try:
        import keyring
        import keyring.core
        from keyring.backends import chainer, fail
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise KeyringError(
            f"the keyring library is not installed ({exc.name})",
            hint="pip install keyring (a dependency of agentzero-store)",
        ) from exc
    try:
        backend = keyring.get_keyring()
        chosen = bool(os.environ.get(ENV_BACKEND)) or keyring.core.load_config() is not None
    except Exception as exc:  # a bad PYTHON_KEYRING_BACKEND or config file
        raise KeyringError(f"the keyring backend could not be loaded ({exc})") from exc
    effective: Any = backend
    if isinstance(backend, chainer.ChainerBackend):
        # It writes to the first backend that accepts: that is the one to judge.
        effective = next(iter(backend.backends), None)
    if effective is None or isinstance(effective, fail.Keyring):
        raise KeyringError("no OS keyring is available on this machine")
    if not chosen and effective.priority < 1:
        raise KeyringError(
            f"the only keyring backend found is {_name(effective)}, which the keyring "
            "library does not recommend (it may keep secrets in a plain file), so it is "
            "not used unless chosen",
            hint=f"to use it anyway, set {ENV_BACKEND}={_name(effective)}; or open the "
            "store with a key file (--key-file) or AGENTZERO_PASSPHRASE instead",
        )
    return backend


def _where(account: str) -> str:
    return f"service {SERVICE!r}, account {account!r}"


def load_key(account: str) -> bytes:
    """The raw key the keyring holds for store ``account`` (``KeyringError`` if none)."""
    backend = _backend()
    try:
        text = backend.get_password(SERVICE, account)
    except Exception as exc:  # locked, denied, D-Bus gone: every backend has its own
        raise KeyringError(
            f"the keyring ({_name(backend)}) could not be read ({type(exc).__name__}: {exc})"
        ) from exc
    if text is None:
        raise KeyringError(
            f"the OS keyring ({_name(backend)}) holds no key for this store ({_where(account)})",
            hint="restore that keyring entry, or open the store with another of its "
            "credentials (AGENTZERO_PASSPHRASE, a recovery key as AGENTZERO_DATA_KEY); "
            "nothing under the data dir was changed",
        )
    try:
        return parse_key_text(text)
    except InvalidKeyError:
        raise KeyringError(
            f"the keyring entry of this store ({_where(account)}) is not a {KEY_BYTES}-byte key",
            hint="it was changed outside agentzero: restore it, or open the store with "
            "another of its credentials",
        ) from None


def store_key(account: str, key: bytes) -> None:
    """Put ``key`` into the keyring for store ``account`` and read it back."""
    backend = _backend()
    try:
        backend.set_password(SERVICE, account, key.hex())
    except Exception as exc:
        raise KeyringError(
            f"the keyring ({_name(backend)}) refused the key ({type(exc).__name__}: {exc})"
        ) from exc
    # Some backends accept a write they cannot keep: the store is created only with a key
    # that can be read back.
    if load_key(account) != key:
        raise KeyringError(f"the keyring ({_name(backend)}) did not keep the key it was given")


def delete_key(account: str) -> None:
    """Remove the keyring entry of store ``account`` (best effort: a creation that failed
    after storing it)."""
    with contextlib.suppress(Exception):  # nothing there, or no backend: nothing to undo
        _backend().delete_password(SERVICE, account)


__all__ = [
    "ENV_BACKEND",
    "KEYRING_SLOT",
    "SERVICE",
    "delete_key",
    "keyring_account",
    "load_key",
    "store_key",
]
