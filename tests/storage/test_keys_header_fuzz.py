"""keys.json is untrusted input: every malformed header is a typed error naming it.

Each mutation (a field deleted, given the wrong type, a huge or out-of-range number, bad
base64, a wrong length, a damaged file) is written into a real store made by the CLI and
then opened through the real ``agentzero`` console script: the answer must be a typed
error (exit 5 for a damaged or newer header, 3 where the header is well formed but no
longer opens with the credential), never a traceback, never an open that allocates what
a hostile header asks for (scrypt n=2**22 is 4 GiB per open).
"""

from __future__ import annotations

import base64
import copy
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentzero_store import (
    CorruptStoreError,
    InvalidArgumentError,
    KdfParams,
    SqliteMemoryStore,
    cli,
)
from agentzero_store.base.limits import SCRYPT_N_MAX
from agentzero_store.cli import common as cli_common
from agentzero_store.storage import keys as keys_module

from ..conftest import PASSPHRASE, js, run_cli, tree_digest

Header = dict[str, Any]
Mutation = Callable[[Header], Header | bytes]

# Where each field lives. ``created_at`` is informational (opening never reads it), so
# mutating it must leave a store that still opens.
PATHS: dict[str, tuple[str | int, ...]] = {
    "format": ("format",),
    "store_id": ("store_id",),
    "created_at": ("created_at",),
    "slots": ("slots",),
    "slot": ("slots", 0),
    "slot.id": ("slots", 0, "id"),
    "slot.kind": ("slots", 0, "kind"),
    "slot.kdf": ("slots", 0, "kdf"),
    "kdf.name": ("slots", 0, "kdf", "name"),
    "kdf.n": ("slots", 0, "kdf", "n"),
    "kdf.r": ("slots", 0, "kdf", "r"),
    "kdf.p": ("slots", 0, "kdf", "p"),
    "kdf.salt": ("slots", 0, "kdf", "salt"),
    "slot.nonce": ("slots", 0, "nonce"),
    "slot.wrapped": ("slots", 0, "wrapped"),
}
INFORMATIONAL = {"created_at"}
STRINGS = {"format", "store_id", "created_at", "slot.id", "slot.kind", "kdf.name"}
BASE64 = {"kdf.salt", "slot.nonce", "slot.wrapped"}
INTS = {"kdf.n", "kdf.r", "kdf.p"}


def _set(h: Header, path: tuple[str | int, ...], value: Any) -> Header:
    h = copy.deepcopy(h)
    parent: Any = h
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return h


def _delete(h: Header, path: tuple[str | int, ...]) -> Header:
    h = copy.deepcopy(h)
    parent: Any = h
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    return h


def _b64(n: int) -> str:
    return base64.b64encode(b"\x01" * n).decode()


def _wrong_types(field: str) -> list[Any]:
    """Null and values of every JSON type the field is not."""
    if field in INTS:
        return [None, "32768", 32768.0, True, [], {}]
    if field in STRINGS or field in BASE64:
        return [None, 7, 1.5, False, ["x"], {"x": 1}]
    return [None, "x", 7, [] if field != "slots" else {}]  # containers


def mutations() -> dict[str, Mutation]:
    out: dict[str, Mutation] = {}
    for field, path in PATHS.items():
        out[f"delete {field}"] = lambda h, p=path: _delete(h, p)
        for v in _wrong_types(field):
            out[f"{field} = {json.dumps(v)}"] = lambda h, p=path, v=v: _set(h, p, v)
    n, r, p, salt = PATHS["kdf.n"], PATHS["kdf.r"], PATHS["kdf.p"], PATHS["kdf.salt"]
    numbers: dict[str, tuple[tuple[str | int, ...], Any]] = {
        "n = 2**22 (4 GiB per open)": (n, 2**22),
        "n = 2**64": (n, 2**64),
        "n = 10**400": (n, 10**400),
        "n = 3 (not a power of two)": (n, 3),
        "n = 2**9 (below the floor)": (n, 2**9),
        "n = 0": (n, 0),
        "n = -32768": (n, -32768),
        "r = 0": (r, 0),
        "r = 2**31": (r, 2**31),
        "r = 64 (128*n*r over 1 GiB)": (r, 64),
        "p = 0": (p, 0),
        "p = 2**31": (p, 2**31),
        "p = 1000": (p, 1000),
    }
    for name, (path, v) in numbers.items():
        out[name] = lambda h, path=path, v=v: _set(h, path, v)
    encodings: dict[str, tuple[tuple[str | int, ...], str]] = {
        "salt not base64": (salt, "!!not base64!!"),
        "nonce not base64": (PATHS["slot.nonce"], "%%%%"),
        "wrapped not base64": (PATHS["slot.wrapped"], "ab$d"),
        "nonce bad padding": (PATHS["slot.nonce"], "YWJj="),
        "wrapped non-ascii": (PATHS["slot.wrapped"], "é" * 64),
        "salt empty": (salt, ""),
        "salt 4 KiB": (salt, _b64(4096)),
        "nonce 8 bytes": (PATHS["slot.nonce"], _b64(8)),
        "nonce 16 bytes": (PATHS["slot.nonce"], _b64(16)),
        "wrapped empty": (PATHS["slot.wrapped"], ""),
        "wrapped 16 bytes": (PATHS["slot.wrapped"], _b64(16)),
        "wrapped 47 bytes": (PATHS["slot.wrapped"], _b64(47)),
        "wrapped 1 MiB": (PATHS["slot.wrapped"], _b64(1 << 20)),
    }
    for name, (path, s) in encodings.items():
        out[name] = lambda h, path=path, s=s: _set(h, path, s)
    out["n = 2**16 with r = 1 (n must be below 2**(16 r))"] = lambda h: _set(
        _set(h, n, 2**16), r, 1
    )
    out["kdf name argon2 (newer)"] = lambda h: _set(h, PATHS["kdf.name"], "argon2")
    out["format agentzero-keys/9 (newer)"] = lambda h: _set(h, ("format",), "agentzero-keys/9")
    out["kind key on a passphrase slot"] = lambda h: _set(h, PATHS["slot.kind"], "key")
    out["kind empty"] = lambda h: _set(h, PATHS["slot.kind"], "")
    out["store_id another store"] = lambda h: _set(h, ("store_id",), "0" * 32)
    out["slots empty"] = lambda h: _set(h, ("slots",), [])
    out["slots with a non-object"] = lambda h: _set(h, ("slots",), [h["slots"][0], "x"])
    out["rotation journal not an object"] = lambda h: _set(h, ("rotation",), 5)
    out["file empty"] = lambda h: b""
    out["file truncated"] = lambda h: json.dumps(h).encode()[:-40]
    out["file a JSON list"] = lambda h: b"[]"
    out["file null"] = lambda h: b"null"
    out["file not UTF-8"] = lambda h: b"\xff\xfe{\x00"
    out["file 2 MiB"] = lambda h: json.dumps({**h, "pad": "x" * (2 << 20)}).encode()
    out["file nested 100k deep"] = lambda h: b"[" * 100_000 + b"]" * 100_000
    out["kdf hkdf-sha256 on a passphrase slot"] = lambda h: _set(
        h, PATHS["kdf.name"], "hkdf-sha256"
    )
    return out


MUTATIONS = mutations()


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str


def cli_main(
    data_dir: Path, *args: str, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> Outcome:
    """``agentzero --data-dir DIR ARGS`` through the console script's ``main()``, in this
    process (a process per call would cost ~0.6 s each). Anything but ``SystemExit``
    escaping ``main()`` is what would be a traceback from the real script."""
    mp.setenv("AGENTZERO_PASSPHRASE", PASSPHRASE)
    mp.setenv("AGENTZERO_EMBEDDER", "none")
    mp.setattr(sys, "argv", ["agentzero", "--data-dir", str(data_dir), *args])
    capsys.readouterr()
    umask = os.umask(0o077)  # main() sets the process umask: give this process its own back
    try:
        cli.main()
        code: int = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.umask(umask)
        cli_common.STATE.data_dir = cli_common.STATE.key_file = None
        cli_common.STATE.json = False
    out, err = capsys.readouterr()
    return Outcome(code, out, err)


def _field(name: str) -> str:
    return name.split(" ")[1] if name.startswith("delete ") else name.split(" ")[0]


def _assert_typed(name: str, p: Any) -> None:
    """A malformed header's answer: exit 3 or 5, a JSON error with a hint, no traceback."""
    assert "Traceback" not in p.stderr, (name, p.stderr)
    if _field(name) in INFORMATIONAL:
        assert p.returncode == 0, (name, p.stdout, p.stderr)
        return
    assert p.returncode in (3, 5), (name, p.returncode, p.stdout, p.stderr)
    err = json.loads(p.stdout)
    assert err["error"] in {"corrupt_store", "schema_version", "wrong_key"}, (name, err)
    assert err["hint"], (name, err)
    if p.returncode == 5:
        assert "keys.json" in err["message"], (name, err)


def _write(keys: Path, mutated: Header | bytes) -> None:
    keys.write_bytes(mutated if isinstance(mutated, bytes) else json.dumps(mutated).encode())


def test_every_malformed_key_header_is_a_typed_error_through_the_cli(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_cli(data_dir, "init", passphrase=PASSPHRASE)
    keys = data_dir / "keys.json"
    original = keys.read_bytes()
    header = json.loads(original)
    outcomes: dict[str, int] = {}
    # The KDF cost paid is counted, not timed (a loaded machine makes any honest open
    # slow): every scrypt run must use at most the parameters the store was made with.
    kdf = header["slots"][0]["kdf"]
    paid: list[tuple[int, int, int]] = []
    real_scrypt = keys_module.Scrypt

    def counted_scrypt(*, salt: bytes, length: int, n: int, r: int, p: int) -> Any:
        paid.append((n, r, p))
        return real_scrypt(salt=salt, length=length, n=n, r=r, p=p)

    monkeypatch.setattr(keys_module, "Scrypt", counted_scrypt)
    for name, mutate in MUTATIONS.items():
        _write(keys, mutate(header))
        before = tree_digest(data_dir)
        paid.clear()
        p = cli_main(data_dir, "memory", "recent", "--json", capsys=capsys, mp=monkeypatch)
        # No hostile KDF cost was paid (scrypt n=2**22 is 4 GiB and seconds per open).
        assert all(n <= kdf["n"] and r <= kdf["r"] and q <= kdf["p"] for n, r, q in paid), (
            name,
            paid,
        )
        _assert_typed(name, p)
        assert tree_digest(data_dir) == before, name  # a failed open writes nothing
        outcomes[name] = p.returncode
    keys.write_bytes(original)
    paid.clear()
    assert cli_main(data_dir, "memory", "recent", capsys=capsys, mp=monkeypatch).returncode == 0
    assert paid == [(kdf["n"], kdf["r"], kdf["p"])]  # the count sees a real open's scrypt
    # The KDF bounds are refused as damage before any work, not as a wrong passphrase.
    for name in ("n = 2**22 (4 GiB per open)", "n = 2**64", "r = 2**31", "p = 2**31"):
        assert outcomes[name] == 5, name
    assert len(outcomes) >= 100


# One mutation of each kind, through the real console script in its own process.
IN_A_PROCESS = [
    "delete slots",
    "slot = null",
    'kdf.n = "32768"',
    "n = 2**22 (4 GiB per open)",
    "n = 10**400",
    "r = 0",
    "salt not base64",
    "nonce 8 bytes",
    "wrapped 47 bytes",
    "kdf name argon2 (newer)",
    "file not UTF-8",
    "file nested 100k deep",
    "created_at = 7",
]


def test_malformed_key_headers_through_the_real_console_script(data_dir: Path) -> None:
    run_cli(data_dir, "init", passphrase=PASSPHRASE)
    keys = data_dir / "keys.json"
    header = json.loads(keys.read_bytes())
    for name in IN_A_PROCESS:
        _write(keys, MUTATIONS[name](header))
        p = run_cli(data_dir, "memory", "recent", "--json", passphrase=PASSPHRASE, check=False)
        _assert_typed(name, p)


def test_malformed_raw_key_slots_are_typed_errors_through_the_cli(data_dir: Path) -> None:
    key = os.urandom(32).hex()
    env = {"AGENTZERO_DATA_KEY": key}
    run_cli(data_dir, "init", passphrase="", env=env)
    keys = data_dir / "keys.json"
    header = json.loads(keys.read_bytes())
    scrypt = {"name": "scrypt", "n": 2**10, "r": 8, "p": 1, "salt": _b64(16)}
    for name, mutated in {
        "scrypt on a key slot": _set(header, PATHS["slot.kdf"], scrypt),
        "kind passphrase": _set(header, PATHS["slot.kind"], "passphrase"),
        "delete salt": _delete(header, PATHS["kdf.salt"]),
    }.items():
        keys.write_text(json.dumps(mutated))
        p = run_cli(data_dir, "memory", "recent", "--json", passphrase="", env=env, check=False)
        assert "Traceback" not in p.stderr, (name, p.stderr)
        assert p.returncode in (3, 5) and js(p)["hint"], (name, p.returncode, p.stdout)


@pytest.mark.parametrize(
    "kdf",
    [
        {"n": 2**22},
        {"n": 3000},
        {"n": 2**9},
        {"r": 0},
        {"p": 99},
        {"n": 2**16, "r": 1},  # scrypt needs n < 2**(16 r): OpenSSL's MemoryError
    ],
)
def test_a_store_is_never_created_with_kdf_parameters_it_could_not_open(
    data_dir: Path, kdf: dict[str, int]
) -> None:
    from agentzero_store import StoreConfig

    with pytest.raises(InvalidArgumentError, match="scrypt"):
        SqliteMemoryStore.open(
            data_dir, passphrase=PASSPHRASE, config=StoreConfig(kdf=KdfParams(**kdf))
        )
    assert not data_dir.exists()  # refused before any file (keys.json, ledger) was made


def test_the_largest_allowed_kdf_still_opens(data_dir: Path) -> None:
    from agentzero_store import StoreConfig

    cfg = StoreConfig(kdf=KdfParams(n=SCRYPT_N_MAX, r=2, p=1))  # 256 MiB, ~1 s here
    SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=cfg).close()
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=cfg, create=False):
        pass


def test_key_header_that_is_not_a_file_is_typed(data_dir: Path) -> None:
    SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE).close()
    keys = data_dir / "keys.json"
    keys.unlink()
    keys.mkdir()
    with pytest.raises(CorruptStoreError, match="keys.json"):
        SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, create=False)
