"""Fail closed on bad arguments: every one is a typed ``InvalidArgumentError`` (exit 2)
with a hint, every limit is capped with an error naming the cap, and no argument reaches
a native crash. Each test reproduces a finding of issue 13 through the surface where it
was found: the real ``agentzero`` console script, the Python API, or the MCP server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from mcp import ClientSession, stdio_client

from agentzero_store import (
    DimensionMismatchError,
    DuplicateIdError,
    InvalidArgumentError,
    MemoryEntry,
    SqliteMemoryStore,
)
from agentzero_store.embeddings import as_vector, as_vectors
from agentzero_store.limits import MAX_METADATA_BYTES, MAX_METADATA_DEPTH, MAX_RESULTS
from agentzero_store.limits import MAX_TTL_SECONDS as MAX_TTL
from agentzero_store.mcp_server import ToolHost
from agentzero_store.tools import MemoryAppendTool
from rag.store import DocumentStore

from .conftest import FAST, PASSPHRASE, js, rand_vectors, run_cli, tree_digest
from .test_mcp import result, server_params

NO_EMBEDDER = ("--embedder", "none")
CAP = f"{MAX_RESULTS:,}"  # "10,000": every limit error names the cap


def _assert_clean_failure(p: Any, code: str = "invalid_argument", rc: int = 2) -> dict[str, Any]:
    """A failed CLI call: the right exit status, a JSON error with a hint, no traceback."""
    assert p.returncode == rc, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "panicked" not in p.stderr, p.stderr
    err: dict[str, Any] = js(p)
    assert err["error"] == code and err["hint"], err
    return err


@pytest.fixture
def cli_store(data_dir: Path) -> Path:
    """A CLI-made store with one memory and one document (no embedder)."""
    run_cli(data_dir, "init")
    run_cli(data_dir, "memory", "append", "hello memory", *NO_EMBEDDER)
    run_cli(data_dir, "rag", "ingest", "--id", "doc", "--text", "hello document", *NO_EMBEDDER)
    return data_dir


@pytest.fixture
def memory(data_dir: Path) -> Any:
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as s:
        yield s


# ----------------------------------------------------------------- 1. result limits


def test_cli_result_limits_are_capped_naming_the_cap(cli_store: Path) -> None:
    # `rag query --limit 1000000000` asked Tantivy for 128 GB and aborted (exit 134).
    huge = [
        ("rag", "query", "hello", "--limit", "1000000000"),
        ("memory", "recent", "--limit", str(2**63)),  # OverflowError in SQLite's bind
        ("memory", "recall", "hello", "--mode", "keyword", "--limit", str(MAX_RESULTS + 1)),
    ]
    for args in huge:
        err = _assert_clean_failure(run_cli(cli_store, *args, "--json", check=False))
        assert CAP in err["message"], err
    # The cap itself is allowed.
    hits = js(run_cli(cli_store, "rag", "query", "hello", "--limit", str(MAX_RESULTS), "--json"))
    assert [h["id"] for h in hits] == ["doc"]


@pytest.mark.parametrize("limit", [10**9, 2**63, MAX_RESULTS + 1, 0, -1, 2.5, True, "5"])
def test_api_result_limits_are_capped(data_dir: Path, limit: Any) -> None:
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as s:
        s.append_with_embedding(MemoryEntry(content="hello"), rand_vectors(1)[0])
        q = rand_vectors(1, seed=1)[0]
        calls = [
            lambda: s.recent(limit),
            lambda: s.keyword_recall("hello", limit),
            lambda: s.semantic_recall(q, limit),
            lambda: s.hybrid_recall("hello", q, limit),
            lambda: s.recall("hello", limit, mode="keyword"),
        ]
        for call in calls:
            with pytest.raises(InvalidArgumentError) as info:
                call()
            if isinstance(limit, int) and limit > MAX_RESULTS:
                assert CAP in str(info.value)
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.ingest("d", "hello document")
        with pytest.raises(InvalidArgumentError) as info:
            docs.query("hello", limit)
        if isinstance(limit, int) and limit > MAX_RESULTS:
            assert CAP in str(info.value)


def test_api_limit_at_the_cap_and_numpy_ints_work(data_dir: Path) -> None:
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as s:
        s.append_with_embedding(MemoryEntry(content="hello"), rand_vectors(1)[0])
        assert len(s.recent(MAX_RESULTS)) == 1
        assert len(s.keyword_recall("hello", np.int64(3))) == 1
        assert len(s.semantic_recall(rand_vectors(1)[0], MAX_RESULTS)) == 1
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.ingest("d", "hello document")
        assert [h.id for h in docs.query("hello", MAX_RESULTS)] == ["d"]
