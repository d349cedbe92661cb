"""``examples/langgraph_memory.py``, run as a user runs it (fresh processes): a fact told
in one thread is recalled in another and after a restart, the thread keeps its
messages, and afterwards no fact, message, user, thread or checkpoint field is in
plaintext anywhere under the data dir."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph.graph")

from ..conftest import scan_for, text_needles  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_memory.py"


def run(data_dir: Path, *args: str) -> str:
    env = {**os.environ, "AGENTZERO_PASSPHRASE": "example pass"}
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_example_remembers_across_threads_and_restarts(tmp_path: Path) -> None:
    root = tmp_path / "data"
    tea, user, thread, cake = (f"canary{secrets.token_hex(5)}" for _ in range(4))
    told = run(root, "tell", f"My favorite tea is {tea}", "--user", user, "--thread", thread)
    assert told.splitlines() == [f"[{thread}] Noted.", f"[{thread}] messages in this thread: 2"]
    # A new thread in a new process: the fact comes from the encrypted store.
    asked = run(root, "ask", "What is my favorite tea?", "--user", user)
    assert f"You told me: My favorite tea is {tea}" in asked
    assert "messages in this thread: 2" in asked
    # Another user does not see it.
    assert "I don't know yet." in run(root, "ask", "What is my favorite tea?", "--user", "bob")
    # Back in the first thread: the checkpointer kept its messages.
    more = run(root, "tell", f"I also like {cake} cake", "--user", user, "--thread", thread)
    assert f"[{thread}] messages in this thread: 4" in more
    needles = [
        n
        for word in (tea, user, thread, cake, "favorite tea", "channel_values", "versions_seen")
        for n in text_needles(word)
    ]
    assert scan_for(root, needles) == []
