"""``AgentZeroSaver`` beyond the conformance suite: a kill -9 in the middle of a put,
sealed checkpoints (no plaintext under the data dir), 50 concurrent async calls on one
loop, a real graph, bad configs, closed handles."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from langgraph.channels.delta import DeltaChannel  # noqa: E402
from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.graph import START, StateGraph  # noqa: E402

from agentzero_store import InvalidArgumentError, StoreClosedError, WrongKeyError  # noqa: E402
from agentzero_store.integrations.langgraph import AgentZeroSaver  # noqa: E402

from ..conftest import FAST, scan_for, text_needles  # noqa: E402
from .langgraph_support import KEY  # noqa: E402

# Puts checkpoints whose one channel holds 400 KB that spell the step, printing the step
# after each put returned (acknowledged); the parent kills it at a random instant.
_PUT_CHILD = """
import sys
from langgraph.checkpoint.base import empty_checkpoint
from agentzero_store import StoreConfig
from agentzero_store.base.config import FAST_KDF_FOR_TESTS
from agentzero_store.integrations.langgraph import AgentZeroSaver
fast = StoreConfig(kdf=FAST_KDF_FOR_TESTS)
saver = AgentZeroSaver(sys.argv[1], key=bytes(range(1, 33)), config=fast)
config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
step = 0
while True:
    step += 1
    cp = empty_checkpoint()
    cp["channel_values"] = {"blob": (f"step {step:08d} " * 25_000), "step": step}
    config = saver.put(config, cp, {"source": "loop", "step": step}, {})
    sys.stdout.write(f"ACK {step}\\n")
    sys.stdout.flush()
"""


@pytest.mark.parametrize("seed", range(3))
def test_kill_mid_put_leaves_the_previous_checkpoint(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "data"
    AgentZeroSaver(root, key=KEY, config=FAST).close()
    child = subprocess.Popen(
        [sys.executable, "-c", _PUT_CHILD, str(root)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acked = 0
    deadline = time.monotonic() + 60
    while acked < 3 + seed and time.monotonic() < deadline:
        line = child.stdout.readline()
        if line.startswith("ACK "):
            acked = int(line.split()[1])
    time.sleep(0.005 * (seed + 1))  # inside a later put
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    for line in child.stdout:
        if line.startswith("ACK "):
            acked = int(line.split()[1])
    with AgentZeroSaver(root, key=KEY, config=FAST) as saver:
        latest = saver.get_tuple({"configurable": {"thread_id": "t"}})
        assert latest is not None
        step = latest.checkpoint["channel_values"]["step"]
        assert step >= acked and latest.metadata["step"] == step
        assert latest.checkpoint["channel_values"]["blob"] == f"step {step:08d} " * 25_000
        history = list(saver.list({"configurable": {"thread_id": "t"}}))
        assert [t.metadata["step"] for t in history] == list(range(step, 0, -1))
        for older in history[1:]:  # every earlier checkpoint reads back whole
            s = older.metadata["step"]
            assert older.checkpoint["channel_values"]["blob"] == f"step {s:08d} " * 25_000


def test_checkpoints_are_sealed(tmp_path: Path) -> None:
    root = tmp_path / "data"
    words = {
        k: f"canary{secrets.token_hex(6)}"
        for k in ("thread", "ns", "value", "meta", "write", "task", "channel")
    }
    with AgentZeroSaver(root, key=KEY, config=FAST) as saver:
        cp = empty_checkpoint()
        cp["channel_values"] = {"messages": [f"the user said {words['value']}"]}
        config = {"configurable": {"thread_id": words["thread"], "checkpoint_ns": words["ns"]}}
        stored = saver.put(config, cp, {"source": "input", "step": -1, "note": words["meta"]}, {})
        saver.put_writes(stored, [(words["channel"], {"w": words["write"]})], words["task"])
        got = saver.get_tuple(stored)
        assert got is not None and got.pending_writes == [
            (words["task"], words["channel"], {"w": words["write"]})
        ]
    needles = [n for w in words.values() for n in text_needles(w)]
    assert scan_for(root, needles) == []


async def test_fifty_concurrent_async_calls(tmp_path: Path) -> None:
    with AgentZeroSaver(tmp_path / "data", key=KEY, config=FAST) as saver:

        async def run(i: int) -> tuple[int, object]:
            cp = empty_checkpoint()
            cp["channel_values"] = {"i": i}
            config = {"configurable": {"thread_id": f"t{i % 10}", "checkpoint_ns": ""}}
            stored = await saver.aput(config, cp, {"source": "loop", "step": i}, {})
            await saver.aput_writes(stored, [("out", i), ("extra", -i)], f"task{i}")
            return i, await saver.aget_tuple(stored)

        results = await asyncio.gather(*(run(i) for i in range(50)))
        for i, tup in results:  # each call read back exactly its own checkpoint and writes
            assert tup is not None
            assert tup.checkpoint["channel_values"] == {"i": i}
            assert tup.pending_writes == [(f"task{i}", "out", i), (f"task{i}", "extra", -i)]
        listed = [t async for t in saver.alist(None)]
        assert len(listed) == 50
        per_thread = [t async for t in saver.alist({"configurable": {"thread_id": "t3"}})]
        assert sorted(t.checkpoint["channel_values"]["i"] for t in per_thread) == [
            3,
            13,
            23,
            33,
            43,
        ]


def test_bad_configs_are_typed(tmp_path: Path) -> None:
    with AgentZeroSaver(tmp_path / "data", key=KEY, config=FAST) as saver:
        cp = empty_checkpoint()
        for config, says in [
            ({}, "thread_id"),
            ({"configurable": {}}, "thread_id"),
            ({"configurable": {"thread_id": "t", "checkpoint_ns": 5}}, "checkpoint_ns"),
            ({"configurable": {"thread_id": "t\x1f", "checkpoint_ns": ""}}, "NUL"),
        ]:
            with pytest.raises(InvalidArgumentError, match=says) as e:
                saver.put(config, cp, {}, {})  # type: ignore[arg-type]
            assert e.value.hint
        assert list(saver.list(None)) == []


def test_closed_saver_and_wrong_key(tmp_path: Path) -> None:
    root = tmp_path / "data"
    saver = AgentZeroSaver(root, key=KEY, config=FAST)
    saver.close()
    with pytest.raises(StoreClosedError):
        saver.get_tuple({"configurable": {"thread_id": "t"}})
    with pytest.raises(StoreClosedError):
        asyncio.run(saver.aget_tuple({"configurable": {"thread_id": "t"}}))
    with pytest.raises(WrongKeyError):
        AgentZeroSaver(root, key=bytes(32), config=FAST)


def _log(state: Any, writes: Any) -> list[str]:
    """A DeltaChannel reducer: append every write's entries."""
    out = list(state)
    for w in writes:
        out.extend(w)
    return out


class _Steps(TypedDict):
    log: Annotated[list, DeltaChannel(_log, snapshot_frequency=3)]
    n: int


def test_prune_keeps_what_delta_channels_need(tmp_path: Path) -> None:
    """keep_latest drops old checkpoints but never the ancestors a DeltaChannel is
    rebuilt from (keeping only the latest would rebuild ``log`` from nothing)."""

    def step(s: _Steps) -> dict[str, Any]:
        return {"log": [f"e{s['n']}"], "n": s["n"] + 1}

    builder = StateGraph(_Steps)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    with AgentZeroSaver(tmp_path / "data", key=KEY, config=FAST) as saver:
        graph = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "delta"}}
        other: Any = {"configurable": {"thread_id": "other"}}
        for i in range(7):
            graph.invoke({"n": i}, config)
        graph.invoke({"n": 0}, other)
        want = graph.get_state(config).values
        assert want["log"] == [f"e{i}" for i in range(7)]
        before = len(list(saver.list(config)))
        others = [t.checkpoint["id"] for t in saver.list(other)]
        saver.prune(["delta"], strategy="keep_latest")
        assert graph.get_state(config).values == want  # log rebuilt whole
        after = list(saver.list(config))
        assert 1 < len(after) < before  # pruned, but not down to the latest alone
        assert [t.checkpoint["id"] for t in saver.list(other)] == others
        asyncio.run(saver.aprune(["delta", "other"], strategy="delete"))
        assert list(saver.list(None)) == []
        with pytest.raises(InvalidArgumentError, match="strategy"):
            saver.prune(["x"], strategy="oldest")
