"""An undo token never begins with ``-``: pasted as ``agentzero memory undo TOKEN`` a
leading ``-`` reads as an option ("No such option: -5"), which made one forget in 64
impossible to undo from the command line (and a CLI test fail now and then)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentzero_store.agentmem import lifecycle
from agentzero_store.agentmem.lifecycle import undo_token


def test_a_drawn_token_with_a_leading_dash_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # A scripted random source (the point of the test): two tokens with a dash first.
    drawn: Iterator[str] = iter(["-5abc", "-x", "Zk9_-q"])
    monkeypatch.setattr(lifecycle.secrets, "token_urlsafe", lambda n: next(drawn))
    assert undo_token() == "Zk9_-q"


def test_real_tokens_never_begin_with_a_dash() -> None:
    tokens = [undo_token() for _ in range(5_000)]  # ~78 would begin with "-" unchecked
    assert not [t for t in tokens if t.startswith("-")]
    assert len(set(tokens)) == len(tokens) and all(len(t) == 24 for t in tokens)
