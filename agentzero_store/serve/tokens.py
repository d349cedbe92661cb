"""The server's bearer tokens: random, written 0600 to a file, each with its scope.

A token is 32 random bytes (URL-safe base64), made fresh on every start and written
(atomically, mode 0600, its directory 0700) to its token file as one line, so a client
reads it with ``cat``. It lives nowhere else: not in a log, not in a repr, not on the
command line. A token's scope says what it may reach: every tenant the server serves, or
one org/agent; writes, or reads only.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import InvalidArgumentError
from ..base.limits import check_name
from ..storage.fileio import atomic_write

TOKEN_FILE_NAME = "serve.token"


def default_token_file() -> Path:
    """Where the main token goes without ``--token-file``: the user's config dir."""
    import platformdirs  # lazily: only the server needs it

    return Path(platformdirs.user_config_dir("agentzero", appauthor=False)) / TOKEN_FILE_NAME


@dataclass(frozen=True)
class TokenScope:
    """What one token may reach: ``org_id``/``agent_id`` pin one tenant (``None``: the
    server's own pins); ``read_only`` keeps it to the tools that write nothing."""

    org_id: str | None = None
    agent_id: str | None = None
    read_only: bool = False

    def __post_init__(self) -> None:
        if (self.org_id is None) != (self.agent_id is None):
            raise InvalidArgumentError(
                "a token's scope names an org and an agent together",
                hint="give both (ORG/AGENT) or neither",
            )
        for name, value in (("org_id", self.org_id), ("agent_id", self.agent_id)):
            if value is not None:
                check_name(name, value)

    def describe(self) -> str:
        """``acme/bot (read-only)``: for the start-up lines, never the token."""
        where = f"{self.org_id}/{self.agent_id}" if self.org_id is not None else "server scope"
        return where + (" (read-only)" if self.read_only else "")

    @classmethod
    def parse(cls, spec: str) -> TokenScope:
        """``ORG/AGENT`` or ``ORG/AGENT/ro``."""
        parts = spec.split("/")
        if len(parts) not in (2, 3) or not all(parts) or (len(parts) == 3 and parts[2] != "ro"):
            raise InvalidArgumentError(
                f"not a token scope: {spec!r}", hint="write ORG/AGENT, or ORG/AGENT/ro"
            )
        return cls(parts[0], parts[1], read_only=len(parts) == 3)


@dataclass(frozen=True)
class Grant:
    """One token, the file it was written to and its scope."""

    name: str  # how logs and A2A task owners name it: the token file's name
    path: Path
    scope: TokenScope
    token: str = field(repr=False)


def issue(path: Path, scope: TokenScope) -> Grant:
    """Make a fresh token for ``scope`` and write it to ``path`` (0600, atomically)."""
    token = secrets.token_urlsafe(32)
    path = path.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(path, (token + "\n").encode("ascii"), mode=0o600)
    return Grant(path.name, path, scope, token)


class TokenTable:
    """The tokens this server accepts; ``match`` compares in constant time."""

    def __init__(self, grants: Sequence[Grant]) -> None:
        self.grants = tuple(grants)

    def match(self, presented: str) -> Grant | None:
        """The grant of ``presented``, or None. Every token is compared (no early exit
        telling how many there are or which one nearly matched)."""
        found: Grant | None = None
        raw = presented.encode("utf-8", "surrogateescape")
        for g in self.grants:
            if hmac.compare_digest(raw, g.token.encode("ascii")):
                found = g
        return found


__all__ = ["Grant", "TokenScope", "TokenTable", "default_token_file", "issue"]
