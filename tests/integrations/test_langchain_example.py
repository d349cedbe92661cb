"""examples/langchain_retriever_chain.py runs offline (fake embeddings, a scripted chat
model): the chain answers from the retrieved document, the history holds the
conversation, recall finds it; afterwards no document, id, metadata value or message is
in plaintext anywhere under the data dir."""

from __future__ import annotations

from pathlib import Path

from .adapter_support import plaintext_hits, run_example, strings_in


def test_retriever_chain(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    out = run_example("langchain_retriever_chain.py", data_dir)
    assert out["answers"] == ["Expense reports are due on the fifth.", "On the fifth, every month."]
    assert out["retrieved"] == ["expenses"]
    assert out["history"] == [
        "When are expense reports due?",
        "Expense reports are due on the fifth.",
        "Remind me: expense reports?",
        "On the fifth, every month.",
    ]
    assert set(out["recalled"]) == {"When are expense reports due?", "Remind me: expense reports?"}
    secrets_ = strings_in(out) | {"kettle", "expenses", "staging", "facilities", "finance"}
    assert plaintext_hits(data_dir, sorted(secrets_)) == []
