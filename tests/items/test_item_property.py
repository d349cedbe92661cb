"""Hypothesis: any sequence of puts and deletes leaves the item store equal to a dict
model, and prefix reads, namespace listing and counts agree with it (whole segments,
any characters the store allows, including empty segments and '.')."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentzero_store import ItemStore

from ..conftest import FAST

KEY = bytes(range(1, 33))
SEGMENT = st.sampled_from(["a", "ab", "a.b", "", "é", "*", "a b", "b"])
NAMESPACE = st.lists(SEGMENT, min_size=1, max_size=3).map(tuple)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
OP = st.one_of(
    st.tuples(
        st.just("put"),
        NAMESPACE,
        st.sampled_from("xyz"),
        st.dictionaries(st.text(max_size=4), JSON, max_size=3),
    ),
    st.tuples(st.just("delete"), NAMESPACE, st.sampled_from("xyz"), st.none()),
)


@given(ops=st.lists(OP, max_size=25), prefix=st.lists(SEGMENT, max_size=2).map(tuple))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_store_equals_a_dict_model(ops: list[Any], prefix: tuple[str, ...]) -> None:
    model: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        ItemStore.open(Path(tmp) / "data", key=KEY, config=FAST) as s,
    ):
        with s.batch() as b:  # half the ops in one batch, the rest one by one
            for kind, ns, key, value in ops[: len(ops) // 2]:
                if kind == "put":
                    b.put(ns, key, value)
                    model[(ns, key)] = value
                else:
                    b.delete(ns, key)
                    model.pop((ns, key), None)
        for kind, ns, key, value in ops[len(ops) // 2 :]:
            if kind == "put":
                s.put(ns, key, value)
                model[(ns, key)] = value
            else:
                s.delete(ns, key)
                model.pop((ns, key), None)
        for (ns, key), value in model.items():
            got = s.get(ns, key)
            assert got is not None and got.value == value
        under = {k: v for k, v in model.items() if k[0][: len(prefix)] == prefix}
        assert {(i.namespace, i.key): i.value for i in s.scan(prefix)} == under
        assert s.count(prefix) == len(under)
        assert s.namespaces(limit=1000) == sorted({ns for ns, _ in model})
        # Listing takes "*" as a one-segment wildcard (reads take it literally).
        fits = {
            ns
            for ns, _ in model
            if len(ns) >= len(prefix)
            and all(p in ("*", seg) for p, seg in zip(prefix, ns, strict=False))
        }
        assert s.namespaces(match=[("prefix", prefix)], limit=1000) == sorted(fits)
