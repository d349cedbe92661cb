"""The item store keeps the store's promises: a batch survives kill -9 whole or not at
all, a wrong key changes no byte, no plaintext lands under the data dir, a second
process sees what the first wrote, and two writing processes wait or fail clearly."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from agentzero_store import ItemStore, WrongKeyError
from agentzero_store.base.errors import StoreLockedError

from ..conftest import FAST, scan_for, tree_digest
from ..promises.test_canary import needles_for

KEY = bytes(range(1, 33))

# Writes batches of 20 items that all carry the batch's number, printing it after each
# commit; the parent kills it at a random instant.
_BATCH_CHILD = """
import sys
from agentzero_store import ItemStore, StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
s = ItemStore.open(sys.argv[1], key=bytes(range(1, 33)), config=StoreConfig(kdf=FAST_KDF_FOR_TESTS))
g = 0
while True:
    g += 1
    with s.batch() as b:
        for i in range(20):
            b.put(("gen",), str(i), {"g": g, "pad": "x" * 2000}, data=bytes(3000))
    sys.stdout.write(f"ACK {g}\\n")
    sys.stdout.flush()
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("seed", range(3))
def test_kill_mid_batch_leaves_a_whole_batch(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "data"
    ItemStore.open(root, key=KEY, config=FAST).close()
    child = subprocess.Popen(
        [sys.executable, "-c", _BATCH_CHILD, str(root)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acked = 0
    deadline = time.monotonic() + 60
    rng = np.random.default_rng(seed)
    want = 2 + int(rng.integers(0, 4))
    while acked < want and time.monotonic() < deadline:
        line = child.stdout.readline()
        if line.startswith("ACK "):
            acked = int(line.split()[1])
    time.sleep(float(rng.uniform(0, 0.05)))  # somewhere inside a later batch
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    for line in child.stdout:
        if line.startswith("ACK "):
            acked = int(line.split()[1])
    assert acked >= want
    with ItemStore.open(root, key=KEY, config=FAST) as s:
        gens = {i.value["g"] for i in s.scan(("gen",))}
        assert s.count(("gen",)) == 20
    assert len(gens) == 1, f"a torn batch: generations {gens}"
    assert gens.pop() >= acked  # every acknowledged batch survived


def test_wrong_key_changes_no_byte(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with ItemStore.open(root, key=KEY, config=FAST) as s:
        s.put(("a",), "k", {"v": 1})
    before = tree_digest(root)
    with pytest.raises(WrongKeyError):
        ItemStore.open(root, key=bytes(32), config=FAST)
    with pytest.raises(WrongKeyError):
        ItemStore.open(root, passphrase="not it", config=FAST)
    assert tree_digest(root) == before


def test_no_plaintext_under_the_data_dir(tmp_path: Path) -> None:
    root = tmp_path / "data"
    words = [f"canary{secrets.token_hex(6)}" for _ in range(6)]
    vec = np.random.default_rng(1).normal(size=(2, 16)).astype(np.float32)
    with ItemStore.open(root, key=KEY, config=FAST, collection=words[0]) as s:
        s.put(
            (words[1], "ns"),
            words[2],
            {"field": words[3]},
            data=words[4].encode(),
            vectors={"field": vec[0]},
            text=f"keyword {words[5]}",
        )
        s.put(("x",), "y", {"v": 1}, vectors={"field": vec[1]})
        s.delete(("x",), "y")
        with s.batch() as b:
            b.put(("z",), "k", {"v": words[3]})
    assert scan_for(root, needles_for(words, vec)) == []


def test_reopen_in_a_fresh_process(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with ItemStore.open(root, key=KEY, config=FAST, collection="c") as s:
        s.put(
            ("users", "alice"),
            "fact",
            {"likes": "tea"},
            data=b"\x01\x02",
            vectors={"f": [1.0, 0.0]},
        )
    out = _run(
        "import sys\n"
        "from agentzero_store import ItemStore, StoreConfig\n"
        "from agentzero_store.base.config import FAST_KDF_FOR_TESTS\n"
        "with ItemStore.open(sys.argv[1], key=bytes(range(1, 33)), collection='c',"
        " config=StoreConfig(kdf=FAST_KDF_FOR_TESTS), create=False) as s:\n"
        "    i = s.get(('users', 'alice'), 'fact')\n"
        "    h = s.search(('users',), vector=[1.0, 0.0])[0]\n"
        "    print(i.value, i.data, h.item.key, round(h.score, 3))\n",
        str(root),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "{'likes': 'tea'} b'\\x01\\x02' fact 1.0"


_HOLDER = """
import sys, time
from agentzero_store import ItemStore, StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
s = ItemStore.open(sys.argv[1], key=bytes(range(1, 33)), config=StoreConfig(kdf=FAST_KDF_FOR_TESTS))
with s.batch() as b:
    b.put(("p",), "holder", {"v": 1})
    print("IN", flush=True)
    time.sleep(float(sys.argv[2]))
print("OUT", flush=True)
"""


def test_two_processes_wait_or_fail_clearly(tmp_path: Path) -> None:
    root = tmp_path / "data"
    ItemStore.open(root, key=KEY, config=FAST).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(root), "3"], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "IN"
    impatient = replace(FAST, writer_lock_timeout_s=0.3)
    with ItemStore.open(root, key=KEY, config=impatient) as s:
        with pytest.raises(StoreLockedError) as e:
            s.put(("p",), "second", {"v": 2})
        assert e.value.hint or "waited" in e.value.message
        assert s.get(("p",), "holder") is None  # not committed yet: not visible
    patient = replace(FAST, writer_lock_timeout_s=30)
    with ItemStore.open(root, key=KEY, config=patient) as s:
        s.put(("p",), "second", {"v": 2})  # waits for the holder's commit
        assert holder.wait(timeout=30) == 0
        assert {i.key for i in s.scan(("p",))} == {"holder", "second"}


def test_rotation_backup_and_verify_cover_the_items(tmp_path: Path) -> None:
    """The items live in memory.db: the data dir's own operations carry them."""
    from agentzero_store import Credential
    from agentzero_store.ops import backup_store, restore_store, rotate_keys, verify_store

    root, cred = tmp_path / "data", Credential.from_passphrase("items pass")
    with ItemStore.open(root, passphrase="items pass", config=FAST) as s:
        s.put(("users", "a"), "fact", {"likes": "tea"}, vectors={"f": [1.0, 0.0]}, text="tea")
    rotate_keys(root, cred)
    assert verify_store(root, cred).clean
    backup_store(root, cred, tmp_path / "backup")
    restore_store(tmp_path / "backup", tmp_path / "restored", cred)
    for where in (root, tmp_path / "restored"):
        with ItemStore.open(where, passphrase="items pass", config=FAST, create=False) as s:
            assert s.get(("users", "a"), "fact").value == {"likes": "tea"}  # type: ignore[union-attr]
            hit = s.search(("users",), vector=[1.0, 0.0], text="tea", ranking="hybrid")[0]
            assert hit.item.key == "fact" and hit.score == pytest.approx(1.0)
