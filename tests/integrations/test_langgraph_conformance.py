"""LangGraph's own checkpointer conformance suite (langgraph-checkpoint-conformance)
against ``AgentZeroSaver``: every required test, and those of every optional capability
(delete_for_runs, copy_thread, prune), all of which it implements."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncGenerator

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langgraph.checkpoint.conformance import checkpointer_test, validate  # noqa: E402

from agentzero_store.integrations.langgraph import AgentZeroSaver  # noqa: E402

from ..conftest import FAST  # noqa: E402

KEY = bytes(range(1, 33))


@checkpointer_test(name="AgentZeroSaver")
async def agentzero_saver() -> AsyncGenerator[AgentZeroSaver, None]:
    with tempfile.TemporaryDirectory() as tmp:
        saver = AgentZeroSaver(tmp + "/data", key=KEY, config=FAST)
        try:
            yield saver
        finally:
            saver.close()


async def test_conformance_suite() -> None:
    report = await validate(agentzero_saver)
    failures = {
        name: result.failures
        for name, result in report.results.items()
        if result is not None and result.failures
    }
    assert failures == {}, failures
    ran = {
        name for name, result in report.results.items() if result is not None and result.detected
    }
    assert ran >= {
        "put",
        "put_writes",
        "get_tuple",
        "list",
        "delete_thread",
        "delete_for_runs",
        "copy_thread",
    }
    assert report.passed_all_base() and report.passed_all()
