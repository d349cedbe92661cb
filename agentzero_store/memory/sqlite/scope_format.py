"""The bytes of a scope map inside a memory-index checkpoint: explicit, versioned, checked.

``MAGIC``, the JSON header's length (u64), the header (format, dimension, row count and
the names still in use per scope field), then per row its label (int64), its scope as
indexes into the names (3 × int32) and its expiry (int64). No pickle; every value is
checked on the way in (``parse``) before a ``ScopeMap`` is built from it.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import numpy.typing as npt

from ...base.errors import SidecarCorruptError

MAGIC = b"AZSCOPE\x00\x01"
FORMAT = 1
_LEN = struct.Struct("<Q")

I64 = npt.NDArray[np.int64]


def encode(
    dim: int,
    labels: I64,
    scope: npt.NDArray[np.int32],
    expires: I64,
    names: list[list[str]],
) -> bytes:
    """The bytes of a map of ``len(labels)`` rows of dimension ``dim``."""
    header = json.dumps(
        {"format": FORMAT, "dim": dim, "count": len(labels), "names": names}, sort_keys=True
    ).encode()
    return b"".join(
        [
            MAGIC,
            _LEN.pack(len(header)),
            header,
            labels.tobytes(),
            np.ascontiguousarray(scope).tobytes(),
            expires.tobytes(),
        ]
    )


def parse(blob: memoryview, dim: int) -> tuple[I64, npt.NDArray[np.int32], I64, list[list[str]]]:
    """The labels, scope ids and expiries in ``blob``, plus the names, checked."""
    head = len(MAGIC) + _LEN.size
    if len(blob) < head or bytes(blob[: len(MAGIC)]) != MAGIC:
        raise SidecarCorruptError("not a scope map (bad magic)")
    (hlen,) = _LEN.unpack_from(blob, len(MAGIC))
    try:
        h = json.loads(bytes(blob[head : head + hlen]))
        n, names = int(h["count"]), h["names"]
        ok = (
            h["format"] == FORMAT
            and h["dim"] == dim
            and n >= 0
            and len(names) == 3
            and all(isinstance(s, str) for ns in names for s in ns)
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise SidecarCorruptError("the scope map header is unreadable") from exc
    body = blob[head + hlen :]
    if not ok or len(body) != n * (8 + 12 + 8):
        raise SidecarCorruptError("the scope map is inconsistent or truncated")
    # Copies (28 bytes a row): the body is unaligned inside the checkpoint.
    labels = np.frombuffer(body, np.int64, n, 0).copy()
    scope = np.frombuffer(body, np.int32, 3 * n, 8 * n).reshape(n, 3).copy()
    expires = np.frombuffer(body, np.int64, n, 20 * n).copy()
    if n and (
        labels.min() <= 0
        or has_duplicates(labels)
        or scope.min() < 0
        or any(int(scope[:, f].max()) >= len(names[f]) for f in range(3))
    ):
        raise SidecarCorruptError("the scope map holds out-of-range values")
    return labels, scope, expires, names


def has_duplicates(a: I64) -> bool:
    """True if some value occurs twice in ``a``."""
    # Not len(np.unique(a)) != len(a): numpy 2.4's unique takes 0.1–0.2 s for 100k ints
    # (measured here), a sort and a compare ~2 ms.
    s = np.sort(a)
    return bool(np.any(s[1:] == s[:-1]))


__all__ = ["FORMAT", "MAGIC", "encode", "has_duplicates", "parse"]
