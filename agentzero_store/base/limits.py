"""Hard caps on what a caller may pass in, and the checks that enforce them.

Each cap exists because the value would otherwise reach something that cannot take it,
and fail there with a crash instead of an error that names the argument:

- a result limit sizes native allocations (Tantivy, hnswlib and numpy allocate per hit
  asked for: ``limit=10**9`` asked Tantivy for 128 GB and aborted the process; ``2**63``
  overflowed SQLite's integer);
- text holding a lone surrogate (what Python makes of bytes that are not UTF-8 on a command
  line, or ``"\\udcff"`` from any caller) cannot be encoded as UTF-8, so SQLCipher, the
  document log and every hash of it fail deep inside;
- NaN and infinity are not JSON, and unbounded metadata is stored, sealed, copied and
  read back with every hit;
- a time to live of ``1e20`` seconds overflows ``datetime``, and so does a time zone
  that moves a valid local time past year 9999 in UTC (every read of it failed later);
- keys.json is read before anything in it can be authenticated: its KDF parameters
  decide how much memory and time every open spends.

And one check is not of a size: names that look alike must be one name or none
(``scope_name``), or "team" and "team\\u200b" are two tenants nobody can tell apart.

These are limits of the API, not tunables: they are the same for every store, so a value
one process accepts, every other process reads back. Every violation is an
``InvalidArgumentError`` (CLI exit 2) whose message names the argument and the cap.
"""

from __future__ import annotations

import json
import math
import operator
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .errors import InvalidArgumentError

MAX_RESULTS = 10_000
"""Most results one recall, query or ``recent`` call returns (memory and documents)."""

MAX_METADATA_BYTES = 64 * 1024
"""Largest metadata of one memory or document: its compact JSON, in UTF-8 bytes."""

MAX_METADATA_DEPTH = 32
"""Deepest nesting of objects and arrays in metadata (JSON parsers recurse per level)."""

MAX_TTL_SECONDS = 100 * 365 * 24 * 3600
"""Longest time to live (``expires_in``): 100 years of 365 days, 3,153,600,000 s."""

TIME_ROOM = timedelta(days=366)
"""Slack kept at each end of ``datetime``'s range: a year, for what the store computes
from a time (a calendar window of the year before or after it, an undo window, a local
time for display) without leaving the range."""
EARLIEST_TIME = datetime.min.replace(tzinfo=UTC) + TIME_ROOM
"""Earliest time a caller may pass (0002-01-02 UTC)."""
LATEST_TIME = datetime.max.replace(tzinfo=UTC) - TIME_ROOM
"""Latest time a caller may pass (9998-12-30 UTC)."""

# keys.json is read before anything is authenticated, so what it asks for is bounded.
# scrypt needs 128 * n * r bytes and n * r * p units of work per open: n=2**22 asked for
# 4 GiB. The defaults (config.KdfParams: n=2**15, r=8, p=1) sit well inside.
SCRYPT_N_MIN = 2**10
"""Smallest scrypt cost n read from or written to keys.json (a power of two)."""
SCRYPT_N_MAX = 2**20
"""Largest scrypt cost n (a power of two): 1 GiB with r=8."""
SCRYPT_R_MAX = 16
"""Largest scrypt block size r."""
SCRYPT_P_MAX = 4
"""Largest scrypt parallelism p."""
SCRYPT_MAX_MEMORY = 1 << 30
"""Largest scrypt memory, 128 * n * r bytes: 1 GiB."""
KEY_HEADER_MAX_BYTES = 1 << 20
"""Largest keys.json read (one is under 2 KiB; a few slots stay far below this)."""

_TEXT_HINT = (
    "send Unicode text that encodes as UTF-8; on a command line, an argument held bytes "
    "that are not UTF-8 (check the terminal's or the script's encoding)"
)


def scrypt_problem(n: Any, r: Any, p: Any) -> str | None:
    """What is wrong with scrypt parameters ``n``, ``r``, ``p``, or None if they are in
    bounds (``SCRYPT_*`` above, and scrypt's own rule n < 2**(16 r) from RFC 7914)."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (n, r, p)):
        return "n, r and p must be integers"
    if not SCRYPT_N_MIN <= n <= SCRYPT_N_MAX or n & (n - 1):
        return f"n={_show(n)} must be a power of two from 2**10 to 2**20"
    if not 1 <= r <= SCRYPT_R_MAX:
        return f"r={_show(r)} must be from 1 to {SCRYPT_R_MAX}"
    if not 1 <= p <= SCRYPT_P_MAX:
        return f"p={_show(p)} must be from 1 to {SCRYPT_P_MAX}"
    if n >= 1 << (16 * r):  # OpenSSL reports this one as a MemoryError
        return f"n={n} must be below 2**(16*r) for r={r}"
    if 128 * n * r > SCRYPT_MAX_MEMORY:
        return f"n={n} with r={r} needs {128 * n * r >> 20} MiB, more than 1 GiB"
    return None


def _show(v: int) -> str:
    return str(v) if abs(v) < 10**12 else f"<a {v.bit_length()}-bit number>"


def check_limit(n: Any, name: str = "limit") -> int:
    """``n`` as an int if it is a whole number in 1..``MAX_RESULTS``; else a typed error.

    Any integer type is accepted (``numpy.int64`` included); bool and float are not.
    """
    try:
        if isinstance(n, bool):
            raise TypeError
        value = operator.index(n)
    except TypeError:
        raise InvalidArgumentError(
            f"{name} must be a positive integer, got {n!r}", hint=f"1 to {MAX_RESULTS:,}"
        ) from None
    if value <= 0:
        raise InvalidArgumentError(
            f"{name} must be a positive integer, got {value}", hint=f"1 to {MAX_RESULTS:,}"
        )
    if value > MAX_RESULTS:
        raise InvalidArgumentError(
            f"{name} is {value:,}; a call returns at most {MAX_RESULTS:,} results "
            "(agentzero_store.base.limits.MAX_RESULTS)",
            hint=f"ask for at most {MAX_RESULTS:,}, and narrow the scope or the query for more",
        )
    return value


def check_text(name: str, value: Any) -> str:
    """``value`` if it is a str that encodes as UTF-8; else an ``InvalidArgumentError``.

    A lone surrogate cannot be encoded. The message gives its position, never the text
    (it may be private).
    """
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a string, got {type(value).__name__}")
    if not value.isascii():  # the common case costs one scan, no copy
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArgumentError(
                f"{name} is not valid Unicode text: character {exc.start} is a lone "
                f"surrogate (U+{ord(value[exc.start]):04X})",
                hint=_TEXT_HINT,
            ) from None
    return value


MAX_NAME = 200  # characters of an org or agent id, a namespace or session name


def check_name(what: str, value: object) -> str:
    """A non-empty org or agent id, namespace or session name without control characters.

    The agent memory's own scope ids hold one (namespaces and sessions, see
    ``agentmem.namespaces``), so an id refused here can never name its way into them.
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"{what} must be a non-empty string")
    check_text(what, value)
    if len(value) > MAX_NAME:
        raise InvalidArgumentError(f"{what} is longer than {MAX_NAME} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidArgumentError(
            f"{what} must not hold control characters", hint="use printable characters"
        )
    return value


_TIME_HINT = "give an aware datetime, e.g. datetime.now(timezone.utc) or 2025-06-01T12:00:00+00:00"


def check_time(name: str, value: Any) -> datetime:
    """``value`` if it is an aware datetime between ``EARLIEST_TIME`` and
    ``LATEST_TIME`` in UTC; else an ``InvalidArgumentError``.

    The one check of every time a caller passes in (records, ``as_of``, ``at``, ``now``,
    ``--expires-at``, JSONL, tools): a naive time is ambiguous (and fails in arithmetic
    with aware ones), and a time past the range is stored as a number no read can turn
    back into a ``datetime``.
    """
    if not isinstance(value, datetime):
        raise InvalidArgumentError(
            f"{name} must be a datetime, got {type(value).__name__}", hint=_TIME_HINT
        )
    try:
        offset = value.utcoffset()
    except ValueError as exc:  # a tzinfo whose offset is a day or more
        raise InvalidArgumentError(f"{name} has an invalid time zone: {exc}") from None
    if offset is None:
        raise InvalidArgumentError(f"{name} must be timezone-aware", hint=_TIME_HINT)
    # Comparing aware datetimes subtracts the offsets without building the UTC value,
    # so this cannot overflow where value.astimezone(UTC) would.
    if not EARLIEST_TIME <= value <= LATEST_TIME:
        raise InvalidArgumentError(
            f"{name} is {value.isoformat()}, outside {EARLIEST_TIME:%Y-%m-%d} to "
            f"{LATEST_TIME:%Y-%m-%d} in UTC (agentzero_store.base.limits)",
            hint="check the date and its time zone",
        )
    return value


def check_optional_time(name: str, value: Any) -> datetime | None:
    """``check_time`` for a value that may be None."""
    return None if value is None else check_time(name, value)


def later(now: datetime, delta: timedelta, name: str) -> datetime:
    """``now`` + ``delta``, refused as ``name`` if that leaves the range of times."""
    try:
        return check_time(name, now + delta)
    except OverflowError:
        raise InvalidArgumentError(
            f"{name} would be past year 9999 ({now.isoformat()} + {delta})",
            hint="check the clock and the time to live",
        ) from None


# Scripts whose letters may share a name (Unicode TS #39, "highly restrictive"): Japanese,
# Chinese and Korean writing mix them, each with Latin; any other mix is refused.
_SCRIPT_MIXES = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)
# The first word of a letter's Unicode name that is not its script.
_NOT_A_SCRIPT = {
    "CJK": "HAN",
    "KATAKANA-HIRAGANA": "",  # the prolonged sound mark "ー" of either
    "MODIFIER": "",
    "FULLWIDTH": "",
    "HALFWIDTH": "",
}


def _script(c: str) -> str:
    """The script of letter ``c`` as the first word of its Unicode name (``LATIN``,
    ``CYRILLIC``, ``GREEK``, ``HAN``...), or '' where that word names none."""
    word = unicodedata.name(c, "").split(" ", 1)[0]
    return _NOT_A_SCRIPT.get(word, word)


def scope_name(what: str, value: object) -> str:
    """``check_name``, then the name's one spelling: NFKC (compatibility forms fold to
    plain ones: full-width "ｔｅａｍ" is "team", "ﬁ" is "fi", composed and decomposed
    accents are one). Case is kept: "Acme" and "acme" are two names, as they always were.

    Refused, as names that look like another: invisible or formatting characters
    (zero-width spaces and joiners, bidi controls, the BOM: Unicode categories Cf, Cc,
    Co, Cn, Cs, Zl, Zp), spaces other than U+0020 and at either end, and letters of more
    than one script (Latin "team" with a Cyrillic "е"), but for the mixes Japanese,
    Chinese and Korean are written in. Digits, punctuation and marks belong to no script.
    """
    check_name(what, value)
    assert isinstance(value, str)
    folded = unicodedata.normalize("NFKC", value)
    hint = "use visible letters of one script, digits, '-', '_', '.' and inner spaces"
    for c in folded:
        cat = unicodedata.category(c)
        if cat in ("Cf", "Cc", "Co", "Cn", "Cs", "Zl", "Zp") or (cat == "Zs" and c != " "):
            raise InvalidArgumentError(
                f"{what} holds an invisible or formatting character (U+{ord(c):04X})",
                hint=hint,
            )
    if folded != folded.strip(" "):
        raise InvalidArgumentError(f"{what} must not start or end with a space", hint=hint)
    if not folded.isascii():
        scripts = {_script(c) for c in folded if unicodedata.category(c).startswith("L")}
        scripts.discard("")
        if len(scripts) > 1 and not any(scripts <= mix for mix in _SCRIPT_MIXES):
            raise InvalidArgumentError(
                f"{what} mixes letters of several scripts ({', '.join(sorted(scripts))}), "
                "so it can look like another name",
                hint=hint,
            )
    if len(folded) > MAX_NAME:  # NFKC can lengthen a name ("ﷺ" is 18 characters)
        raise InvalidArgumentError(f"{what} is longer than {MAX_NAME} characters")
    return folded


def check_optional_text(name: str, value: Any) -> str | None:
    """``check_text`` for a value that may be None; anything else but a str is refused."""
    return None if value is None else check_text(name, value)


def metadata_json(metadata: Any, name: str = "metadata") -> str:
    """Validate metadata and return its compact JSON (keys in the caller's order).

    Metadata is a JSON object: str keys at every level, JSON values only (no NaN or
    infinity, no other types), at most ``MAX_METADATA_DEPTH`` levels deep, at most
    ``MAX_METADATA_BYTES`` as compact UTF-8 JSON, and valid Unicode throughout.
    """
    if not isinstance(metadata, Mapping):
        raise InvalidArgumentError(
            f"{name} must be a JSON object (a mapping), got {type(metadata).__name__}"
        )
    _check_shape(metadata, name, 1)
    try:
        text = json.dumps(
            dict(metadata),
            allow_nan=False,
            ensure_ascii=False,
            separators=(",", ":"),
        )
    except ValueError as exc:  # NaN or infinity (allow_nan=False)
        raise InvalidArgumentError(
            f"{name} holds NaN or infinity, which JSON cannot represent",
            hint="store such numbers as strings, or leave them out",
        ) from exc
    except TypeError as exc:
        raise InvalidArgumentError(f"{name} is not JSON-serialisable: {exc}") from exc
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{name} is not valid Unicode text: it holds a lone surrogate "
            f"(U+{ord(text[exc.start]):04X})",
            hint=_TEXT_HINT,
        ) from None
    if size > MAX_METADATA_BYTES:
        raise InvalidArgumentError(
            f"{name} is {size:,} bytes as JSON; the limit is {MAX_METADATA_BYTES:,} "
            "(agentzero_store.base.limits.MAX_METADATA_BYTES)",
            hint="keep metadata small (ids, tags, dates); put large data in the content",
        )
    return text


def _check_shape(value: Any, name: str, depth: int) -> None:
    """Str keys at every level and bounded nesting (json.dumps would turn an int key into
    a str silently, and deep nesting exhausts the recursion of every JSON reader)."""
    if depth > MAX_METADATA_DEPTH:
        raise InvalidArgumentError(
            f"{name} is nested more than {MAX_METADATA_DEPTH} levels deep "
            "(agentzero_store.base.limits.MAX_METADATA_DEPTH)",
            hint="flatten the metadata",
        )
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidArgumentError(
                    f"{name} keys must be strings, got {type(k).__name__} {k!r}",
                    hint="JSON object keys are strings",
                )
            if isinstance(v, Mapping | list | tuple):
                _check_shape(v, name, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            if isinstance(v, Mapping | list | tuple):
                _check_shape(v, name, depth + 1)


def expires_after(seconds: Any, now: datetime, name: str = "expires_in") -> datetime:
    """``now`` + ``seconds``, for a finite number of seconds in (0, ``MAX_TTL_SECONDS``]."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise InvalidArgumentError(f"{name} must be a number of seconds, got {seconds!r}")
    if not math.isfinite(seconds) or seconds <= 0 or seconds > MAX_TTL_SECONDS:
        raise InvalidArgumentError(
            f"{name} must be more than 0 and at most {MAX_TTL_SECONDS:,} seconds (100 years); "
            f"got {seconds!r}",
            hint="give the time to live in seconds, or an absolute expiry time",
        )
    return later(now, timedelta(seconds=seconds), name)


__all__ = [
    "EARLIEST_TIME",
    "KEY_HEADER_MAX_BYTES",
    "LATEST_TIME",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_NAME",
    "MAX_RESULTS",
    "MAX_TTL_SECONDS",
    "SCRYPT_MAX_MEMORY",
    "SCRYPT_N_MAX",
    "SCRYPT_N_MIN",
    "SCRYPT_P_MAX",
    "SCRYPT_R_MAX",
    "TIME_ROOM",
    "check_limit",
    "check_name",
    "check_optional_text",
    "check_optional_time",
    "check_text",
    "check_time",
    "expires_after",
    "later",
    "metadata_json",
    "scope_name",
    "scrypt_problem",
]
