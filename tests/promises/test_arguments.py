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
from agentzero_store.agent.mcp import ToolHost
from agentzero_store.base.limits import MAX_METADATA_BYTES, MAX_METADATA_DEPTH, MAX_RESULTS
from agentzero_store.base.limits import MAX_TTL_SECONDS as MAX_TTL
from agentzero_store.embed.vectors import as_vector, as_vectors
from agentzero_store.tools import MemoryAppendTool
from rag.store import DocumentStore

from ..agent.test_mcp import result, server_params
from ..conftest import FAST, PASSPHRASE, js, rand_vectors, run_cli, tree_digest

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


# ----------------------------------------------------------------- 2. text that is not UTF-8

# Bytes that are not UTF-8 on a command line reach Python as lone surrogates
# (surrogateescape); subprocess encodes these str arguments back to the raw bytes.
NOT_UTF8 = "\udcff"  # the byte 0xff
CESU_SURROGATE = "a\udced\udca0\udc80"  # b"a\xed\xa0\x80": an encoded lone surrogate


def test_cli_arguments_that_are_not_utf8_are_refused_for_every_command(cli_store: Path) -> None:
    before = tree_digest(cli_store)
    cases: list[tuple[tuple[str, ...], str]] = [
        (("memory", "append", NOT_UTF8, *NO_EMBEDDER), "CONTENT"),
        (("memory", "append", CESU_SURROGATE, *NO_EMBEDDER), "CONTENT"),
        (("memory", "append", "fine", "--org", NOT_UTF8, *NO_EMBEDDER), "--org"),
        (("memory", "append", "fine", "--metadata", '{"k": "\udcff"}', *NO_EMBEDDER), "metadata"),
        (("memory", "recall", NOT_UTF8, "--mode", "keyword"), "QUERY"),
        (("memory", "recent", "--conversation", NOT_UTF8), "--conversation"),
        (("memory", "get", "id" + NOT_UTF8), "ENTRY_ID"),
        (("memory", "delete", NOT_UTF8), "ENTRY_ID"),
        (("rag", "query", NOT_UTF8), "TEXT"),
        (("rag", "ingest", "--id", NOT_UTF8, "--text", "x", *NO_EMBEDDER), "--id"),
        (("rag", "ingest", "--id", "x", "--text", CESU_SURROGATE, *NO_EMBEDDER), "--text"),
    ]
    for args, named in cases:
        err = _assert_clean_failure(run_cli(cli_store, *args, "--json", check=False))
        assert named in err["message"] and "surrogate" in err["message"], (args, err)
    # The human form too: a message and a hint on stderr, exit 2, nothing else.
    p = run_cli(cli_store, "memory", "append", NOT_UTF8, *NO_EMBEDDER, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "not valid Unicode" in p.stderr and "hint:" in p.stderr
    assert tree_digest(cli_store) == before  # refused before anything was opened


SURROGATE = "x\ud800y"


@pytest.mark.parametrize(
    "fields",
    [
        {"content": SURROGATE},
        {"role": SURROGATE},
        {"org_id": SURROGATE},
        {"agent_id": SURROGATE},
        {"conversation_id": SURROGATE},
        {"id": SURROGATE},
        {"embedding_model": SURROGATE},
        {"metadata": {"k": SURROGATE}},
        {"metadata": {SURROGATE: 1}},
        {"metadata": {"k": [{"deep": SURROGATE}]}},
    ],
)
def test_memory_entry_with_lone_surrogates_is_a_typed_error(fields: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError, match="surrogate"):
        MemoryEntry(**{"content": "ok", **fields})


def test_memory_reads_with_lone_surrogates_are_typed_errors(memory: SqliteMemoryStore) -> None:
    memory.append(MemoryEntry(content="hello"))
    calls = [
        lambda: memory.get(SURROGATE),
        lambda: memory.delete(SURROGATE),
        lambda: memory.keyword_recall(SURROGATE),
        lambda: memory.recall(SURROGATE, mode="keyword"),
        lambda: memory.hybrid_recall(SURROGATE, rand_vectors(1)[0]),
        lambda: memory.recent(5, org_id=SURROGATE),
        lambda: memory.count(conversation_id=SURROGATE),
        lambda: memory.forget(agent_id=SURROGATE),
    ]
    for call in calls:
        with pytest.raises(InvalidArgumentError, match="surrogate"):
            call()
    assert memory.count() == 1


def test_documents_with_lone_surrogates_are_typed_errors(data_dir: Path) -> None:
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.ingest("ok", "hello document")
        before = docs.log.path.read_bytes()
        calls = [
            lambda: docs.ingest(SURROGATE, "text"),
            lambda: docs.ingest("d", "text " + SURROGATE),
            lambda: docs.ingest("d", "text", title=SURROGATE),
            lambda: docs.ingest("d", "text", source_path=SURROGATE),
            lambda: docs.ingest("d", "text", metadata={"k": SURROGATE}),
            lambda: docs.query(SURROGATE),
            lambda: docs.delete(SURROGATE),
        ]
        for call in calls:
            with pytest.raises(InvalidArgumentError, match="surrogate"):
                call()
        # No document can have such an id, so looking one up is simply "not found".
        assert docs.get(SURROGATE) is None
        assert docs.log.path.read_bytes() == before
        assert [d.id for d in docs.documents()] == ["ok"]


# ----------------------------------------------------------------- 3. duplicate ids


def test_duplicate_id_is_typed_and_never_says_whose_it_is(memory: SqliteMemoryStore) -> None:
    memory.append(MemoryEntry(content="tenant A's secret", id="note-1", org_id="A"))
    seq = memory.source_seq()
    with pytest.raises(DuplicateIdError) as other_tenant:
        memory.append(MemoryEntry(content="mine", id="note-1", org_id="B"))
    with pytest.raises(DuplicateIdError) as same_tenant:
        memory.append(MemoryEntry(content="changed", id="note-1", org_id="A"))
    # The same words whoever holds the id: a caller cannot probe other tenants' ids.
    assert str(other_tenant.value) == str(same_tenant.value)
    assert other_tenant.value.to_dict() == same_tenant.value.to_dict()
    assert "secret" not in str(other_tenant.value) and "'A'" not in str(other_tenant.value)
    assert other_tenant.value.code == "duplicate_id" and other_tenant.value.exit_code == 2
    assert isinstance(other_tenant.value, InvalidArgumentError)
    assert memory.source_seq() == seq and memory.count() == 1


def test_resending_an_identical_memory_with_its_id_is_a_no_op(memory: SqliteMemoryStore) -> None:
    entry = MemoryEntry(content="remember this", id="m1", org_id="A", metadata={"n": 1})
    assert memory.append(entry) == "m1"
    seq = memory.source_seq()
    # A retry after a lost acknowledgement succeeds and writes nothing.
    assert memory.append(entry) == "m1"
    assert memory.append_many([entry, MemoryEntry(content="new", id="m2")]) == ["m1", "m2"]
    assert memory.count() == 2 and memory.source_seq() == seq + 1
    # Any difference is a conflict, and a batch with a conflict writes nothing.
    for changed in (
        entry.with_(metadata={"n": 2}),
        entry.with_(role="assistant"),
        entry.with_(conversation_id="c9"),
        entry.with_(kind="self_noted"),
    ):
        with pytest.raises(DuplicateIdError):
            memory.append_many([MemoryEntry(content="another"), changed])
    assert memory.count() == 2 and memory.source_seq() == seq + 1


def test_duplicate_ids_within_one_batch_are_refused(memory: SqliteMemoryStore) -> None:
    with pytest.raises(DuplicateIdError, match="twice"):
        memory.append_many([MemoryEntry(content="a", id="x"), MemoryEntry(content="b", id="x")])
    assert memory.count() == 0


def test_cli_import_with_a_taken_id_is_a_typed_error(cli_store: Path, tmp_path: Path) -> None:
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"content": "first", "id": "fixed"}) + "\n")
    run_cli(cli_store, "memory", "import", str(lines), *NO_EMBEDDER)
    run_cli(cli_store, "memory", "import", str(lines), *NO_EMBEDDER)  # identical: a no-op
    lines.write_text(json.dumps({"content": "other", "id": "fixed", "org_id": "B"}) + "\n")
    p = run_cli(cli_store, "memory", "import", str(lines), *NO_EMBEDDER, "--json", check=False)
    err = _assert_clean_failure(p, code="duplicate_id")
    assert "fixed" in err["message"]
    assert len(js(run_cli(cli_store, "memory", "recent", "--json"))) == 2


# ----------------------------------------------------------------- 4. time to live


def test_mcp_time_to_live_is_bounded(data_dir: Path, tmp_path: Path) -> None:
    SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST).close()
    params = server_params(data_dir, env={"AGENTZERO_EMBEDDER": "none"})
    errlog = (tmp_path / "stderr.log").open("w")

    async def session() -> None:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            ttl = tools["memory_append"].input_schema["properties"]["expires_in_seconds"]
            assert ttl["maximum"] == MAX_TTL
            for bad in (1e20, MAX_TTL + 1, 1e308):
                r = await s.call_tool("memory_append", {"content": "x", "expires_in_seconds": bad})
                err = result(r)
                assert r.is_error and err["error"] == "invalid_argument", err
                assert f"{MAX_TTL:,}" in err["message"] and err["hint"]
            r = await s.call_tool("memory_append", {"content": "x", "expires_in_seconds": MAX_TTL})
            assert not r.is_error, result(r)

    with errlog:
        anyio.run(session)
    assert "internal_error" not in (tmp_path / "stderr.log").read_text()


def test_tool_refuses_non_finite_numbers(memory: SqliteMemoryStore) -> None:
    host = ToolHost([MemoryAppendTool(memory)])
    for raw in (
        '{"content": "x", "expires_in_seconds": NaN}',
        '{"content": "x", "expires_in_seconds": Infinity}',
    ):
        tool = host.tools["memory_append"]
        with pytest.raises(InvalidArgumentError, match="finite"):
            tool.run(raw)
    ok, res = host.call("memory_append", {"content": "x", "expires_in_seconds": 1e20})
    assert not ok and res["error"] == "invalid_argument"
    assert memory.count() == 0


def test_cli_time_to_live_is_bounded(cli_store: Path) -> None:
    for bad in ("1e20", "0", "-5", "nan", "inf"):
        p = run_cli(
            cli_store,
            "memory",
            "append",
            "x",
            "--expires-in",
            bad,
            *NO_EMBEDDER,
            "--json",
            check=False,
        )
        err = _assert_clean_failure(p)
        assert "expires" in err["message"], err


# ----------------------------------------------------------------- 5. vectors


def test_huge_finite_vectors_are_normalised_not_zeroed(memory: SqliteMemoryStore) -> None:
    # 3e38 is a finite float32, but its square overflowed: the stored vector was all zeros.
    big = np.full(384, 3e38, dtype=np.float32)
    big[::2] = -3e38
    eid = memory.append_with_embedding(MemoryEntry(content="big"), big)
    stored = np.frombuffer(memory.vectors_after(0, 1)[0][1], dtype=np.float32)
    expected = big.astype(np.float64) / np.linalg.norm(big.astype(np.float64))
    np.testing.assert_allclose(stored, expected, rtol=1e-6)
    hit = memory.semantic_recall(big, 1)[0]
    assert hit.id == eid and hit.score == pytest.approx(1.0, abs=1e-5)
    tiny = np.full(384, 1e-30, dtype=np.float32)  # its square underflowed to "all zeros"
    np.testing.assert_allclose(as_vector(tiny, 384), np.full(384, 384**-0.5), rtol=1e-6)


@pytest.mark.parametrize(
    ("vector", "words"),
    [
        ([1e39] * 384, "float32"),  # finite in float64, infinite once stored as float32
        ([np.inf] * 384, "NaN or infinity"),
        ([np.nan] + [1.0] * 383, "NaN or infinity"),
        ("hello", "number"),
        ([["a"]] * 384, "number"),
        ([0.0] * 384, "all zeros"),
    ],
)
def test_bad_vectors_are_typed_errors_naming_the_problem(vector: Any, words: str) -> None:
    with pytest.raises(DimensionMismatchError, match=words):
        as_vector(vector, 384)
    with pytest.raises(DimensionMismatchError, match=words):
        as_vectors([vector], 384)


def test_bad_vectors_are_refused_by_the_store(memory: SqliteMemoryStore) -> None:
    memory.append_with_embedding(MemoryEntry(content="first"), rand_vectors(1)[0])
    with pytest.raises(DimensionMismatchError, match="float32"):
        memory.append_with_embedding(MemoryEntry(content="x"), [1e39] * 384)
    with pytest.raises(DimensionMismatchError, match="number"):
        memory.semantic_recall("hello", 3)
    assert memory.count() == 1


# ----------------------------------------------------------------- 6. metadata


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), [1.0, float("nan")]])
def test_nan_and_infinity_in_metadata_are_refused(data_dir: Path, value: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="NaN or infinity"):
        MemoryEntry(content="x", metadata={"v": value})
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        with pytest.raises(InvalidArgumentError, match="NaN or infinity"):
            docs.ingest("d", "text", metadata={"v": value})
        assert len(docs) == 0


def test_cli_refuses_nan_metadata(cli_store: Path) -> None:
    for command in (
        ("memory", "append", "x", "--metadata", '{"v": NaN}'),
        ("rag", "ingest", "--id", "d2", "--text", "x", "--metadata", '{"v": Infinity}'),
    ):
        err = _assert_clean_failure(
            run_cli(cli_store, *command, *NO_EMBEDDER, "--json", check=False)
        )
        assert "NaN or infinity" in err["message"]


def _metadata_of_size(n: int) -> dict[str, str]:
    meta = {"k": ""}
    overhead = len(json.dumps(meta, separators=(",", ":")).encode())
    return {"k": "é" * ((n - overhead) // 2) + "x" * ((n - overhead) % 2)}


def test_metadata_size_is_capped(memory: SqliteMemoryStore, data_dir: Path) -> None:
    at_cap, over = _metadata_of_size(MAX_METADATA_BYTES), _metadata_of_size(MAX_METADATA_BYTES + 1)
    eid = memory.append(MemoryEntry(content="x", metadata=at_cap))
    assert memory.get(eid).metadata == at_cap  # type: ignore[union-attr]
    cap = f"{MAX_METADATA_BYTES:,}"
    with pytest.raises(InvalidArgumentError, match=cap):
        MemoryEntry(content="x", metadata=over)
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        docs.ingest("ok", "text", metadata=at_cap)
        with pytest.raises(InvalidArgumentError, match=cap):
            docs.ingest("big", "text", metadata=over)
        assert [d.id for d in docs.documents()] == ["ok"]


def test_metadata_must_round_trip(data_dir: Path) -> None:
    deep: Any = "leaf"
    for _ in range(MAX_METADATA_DEPTH):
        deep = [deep]
    MemoryEntry(content="x", metadata={"d": deep[0]})  # exactly at the depth cap
    bad = [{"d": deep}, {1: "int key"}, {"k": {2: "nested int key"}}, {"k": object()}]
    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST) as docs:
        for meta in bad:
            with pytest.raises(InvalidArgumentError):
                MemoryEntry(content="x", metadata=meta)
            with pytest.raises(InvalidArgumentError):
                docs.ingest("d", "text", metadata=meta)


def test_a_passphrase_that_is_not_utf8_is_a_credential_error(cli_store: Path) -> None:
    """Undecodable bytes in AGENTZERO_PASSPHRASE reach Python as lone surrogates."""
    p = run_cli(cli_store, "memory", "recent", passphrase="caf\udce9", check=False)
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "UTF-8" in p.stderr
