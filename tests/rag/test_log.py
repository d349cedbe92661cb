"""Document log: round trips, change feed, group commit, locking, no plaintext on disk."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentzero_store.base.errors import (
    InvalidArgumentError,
    StoreClosedError,
    StoreLockedError,
    StoreNotFoundError,
)
from agentzero_store.storage.keys import StoreKeys
from rag.log import DocumentLog
from rag.records import Change, Delete, StaleFeedError, Upsert, content_hash
from tests.conftest import scan_for, text_needles

from .conftest import make_keys, state_of


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def test_new_log_has_header_only(log_path: Path, keys: StoreKeys) -> None:
    with DocumentLog.open(log_path, keys) as log:
        assert log.seq == 0 and len(log) == 0 and log.header.origin == "new"
        assert log.store_id == keys.store_id
    assert log_path.read_bytes().count(b"\n") == 1


def test_missing_log_without_create(log_path: Path, keys: StoreKeys) -> None:
    with pytest.raises(StoreNotFoundError):
        DocumentLog.open(log_path, keys, create=False)
    with pytest.raises(StoreNotFoundError):
        DocumentLog.open(log_path, keys, readonly=True)
    assert not log_path.exists()


def test_upsert_delete_reopen_round_trip(log_path: Path, keys: StoreKeys) -> None:
    clock = FakeClock()
    with DocumentLog.open(log_path, keys, clock=clock) as log:
        a1 = log.upsert("a", "first text", title="A", source_path="/x/a.md", metadata={"k": [1]})
        log.upsert("b", "bee")
        a2 = log.upsert("a", "second text", title="A2")
        assert log.delete("b") == Change(4, "delete", "b", None)
        assert log.delete("b") is None and log.delete("never") is None  # nothing written
        assert log.seq == 4
    with DocumentLog.open(log_path, keys, clock=clock) as log:
        assert log.seq == 4 and log.ids() == ["a"] and "b" not in log
        rec = log.get("a")
        assert rec is not None and rec.text == "second text" and rec.title == "A2"
        assert rec.content_hash == content_hash("second text")
        assert a1.record is not None and a2.record is not None
        # Replacing keeps created_at, moves updated_at.
        assert rec.created_at == a1.record.created_at < rec.updated_at == a2.record.updated_at
        assert rec.source_path is None and dict(rec.metadata) == {}
        assert log.get("b") is None and log.seq_of("a") == 3


def test_change_feed_shape(log_path: Path, keys: StoreKeys) -> None:
    with DocumentLog.open(log_path, keys) as log:
        log.upsert("a", "one")
        log.upsert("b", "two")
        log.upsert("a", "three")
        log.delete("b")
        feed = list(log.changes_since(0))
        assert [(c.seq, c.op, c.doc_id) for c in feed] == [
            (1, "upsert", "a"),
            (2, "upsert", "b"),
            (3, "upsert", "a"),
            (4, "delete", "b"),
        ]
        seq, op, doc_id, record = feed[0]  # unpacks as a tuple
        assert record is not None and record.text == "one"  # superseded versions too
        assert feed[3].record is None
        assert [c.seq for c in log.changes_since(2)] == [3, 4]
        assert list(log.changes_since(4)) == []
        assert [(s, r.id, r.text) for s, r in log.iter_live()] == [(3, "a", "three")]
        with pytest.raises(StaleFeedError):
            log.changes_since(5)
        with pytest.raises(InvalidArgumentError):
            log.changes_since(-1)


def test_append_many_is_one_write_and_one_fsync(log_path: Path, keys: StoreKeys) -> None:
    from .conftest import FakeFaultyIO

    io = FakeFaultyIO()
    with DocumentLog.open(log_path, keys, io=io) as log:
        io.calls.clear()
        out = log.append_many(
            [Upsert("a", "x"), Upsert("b", "y"), Delete("a"), Delete("zz"), Upsert("a", "z")]
        )
        assert io.calls["write"] == 1 and io.calls["fsync"] == 1
        assert [c.seq if c else None for c in out] == [1, 2, 3, None, 4]
        assert log.append_many([]) == [] and io.calls["write"] == 1
        assert state_of(log) == {"b": "y", "a": "z"}
    with DocumentLog.open(log_path, keys) as log:
        assert state_of(log) == {"b": "y", "a": "z"} and log.seq == 4


def test_invalid_input_writes_nothing(log_path: Path, keys: StoreKeys) -> None:
    with DocumentLog.open(log_path, keys) as log:
        before = log_path.read_bytes()
        for bad in (
            lambda: log.upsert("", "x"),
            lambda: log.upsert("a", 3),
            lambda: log.upsert("a", "x", metadata={"f": object()}),
            lambda: log.append_many([Upsert("a", "x"), "nope"]),
        ):
            with pytest.raises(InvalidArgumentError):
                bad()
        assert log_path.read_bytes() == before and log.seq == 0


def test_metadata_is_frozen_copy(log_path: Path, keys: StoreKeys) -> None:
    meta = {"tags": ["a"]}
    with DocumentLog.open(log_path, keys) as log:
        ch = log.upsert("a", "x", metadata=meta)
        meta["tags"].append("b")
        assert ch.record is not None and ch.record.metadata == {"tags": ["a"]}
        with pytest.raises(TypeError):
            ch.record.metadata["x"] = 1  # type: ignore[index]


def test_one_writer_lock_and_readonly(log_path: Path, keys: StoreKeys) -> None:
    with DocumentLog.open(log_path, keys) as log:
        log.upsert("a", "x")
        with pytest.raises(StoreLockedError, match="open for writing by another process"):
            DocumentLog.open(log_path, keys)
        with DocumentLog.open(log_path, keys, readonly=True) as ro:
            assert state_of(ro) == {"a": "x"}
            with pytest.raises(InvalidArgumentError):
                ro.upsert("b", "y")
            with pytest.raises(InvalidArgumentError):
                ro.compact()
    with DocumentLog.open(log_path, keys) as log:  # lock released on close
        assert log.seq == 1


def test_closed_log_refuses_use(log_path: Path, keys: StoreKeys) -> None:
    log = DocumentLog.open(log_path, keys)
    log.close()
    log.close()
    with pytest.raises(StoreClosedError):
        log.upsert("a", "x")
    with pytest.raises(StoreClosedError):
        list(log.changes_since(0))


def test_no_document_plaintext_on_disk(tmp_path: Path, keys: StoreKeys) -> None:
    path = tmp_path / "rag" / "index.jsonl"
    secret_id = "/home/alice/private/diagnosis-letter.txt"
    sentence = "The quarterly merger with Wintermute Holdings closes on the ninth of March."
    with DocumentLog.open(path, keys) as log:
        log.upsert(
            secret_id,
            sentence,
            title="Confidential merger memo",
            source_path="/home/alice/private/memo.docx",
            metadata={"owner": "Alice Zephyr"},
        )
        log.upsert("plain-id", "Zebras quietly negotiate the Antarctic treaty renewal.")
        log.delete("plain-id")
        log.compact()
    needles = [
        b"Wintermute",
        b"Antarctic",
        b"Confidential merger",
        b"alice",
        b"Zephyr",
        b"plain-id",
        b"diagnosis",
    ]
    needles += text_needles(sentence)
    assert scan_for(tmp_path, needles) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("upsert"), st.sampled_from("abcde"), st.text(max_size=30)),
            st.tuples(st.just("delete"), st.sampled_from("abcde"), st.none()),
            st.tuples(st.just("batch"), st.sampled_from("abcde"), st.text(max_size=5)),
            st.tuples(st.just("reopen"), st.none(), st.none()),
            st.tuples(st.just("compact"), st.none(), st.none()),
        ),
        max_size=25,
    )
)
def test_property_reopen_matches_model(ops: list[tuple[str, str | None, str | None]]) -> None:
    keys = make_keys()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "rag" / "index.jsonl"
        model: dict[str, str] = {}
        log = DocumentLog.open(path, keys)
        try:
            for op, doc_id, text in ops:
                if op == "upsert":
                    assert doc_id is not None and text is not None
                    log.upsert(doc_id, text)
                    model[doc_id] = text
                elif op == "delete":
                    assert doc_id is not None
                    log.delete(doc_id)
                    model.pop(doc_id, None)
                elif op == "batch":
                    assert doc_id is not None and text is not None
                    log.append_many([Upsert(doc_id, text), Delete(doc_id), Upsert(doc_id, text)])
                    model[doc_id] = text
                elif op == "reopen":
                    log.close()
                    log = DocumentLog.open(path, keys)
                else:
                    log.compact()
                    assert log.seq == len(model)
            log.close()
            log = DocumentLog.open(path, keys)
            assert state_of(log) == model
            # Replaying the change feed from scratch gives the same state.
            replayed: dict[str, str] = {}
            for _seq, _op, doc_id_, rec in log.changes_since(0):
                if rec is not None:
                    replayed[doc_id_] = rec.text
                else:
                    replayed.pop(doc_id_, None)
            assert replayed == model
            assert [s for s, _ in log.iter_live()] == sorted(s for s, _ in log.iter_live())
        finally:
            log.close()
