"""examples/openai_agents_session.py runs offline (a scripted model, no network), its
second run sees the first, recall finds what was said, and afterwards no value, key or
message of the session is in plaintext anywhere under the data dir."""

from __future__ import annotations

from pathlib import Path

from .adapter_support import plaintext_hits, run_example, strings_in


def test_runner_with_agentzero_session(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    out = run_example("openai_agents_session.py", data_dir)
    assert out["answers"] == [
        "Here is the forecast: Paris: sunny spells, 21 degrees",
        "Here is the forecast: Lyon: sunny spells, 21 degrees",
    ]
    kinds = [i.get("type", "message") for i in out["items"]]
    assert kinds == ["message", "function_call", "function_call_output", "message"] * 2
    assert out["items"][0] == {"role": "user", "content": "What is the weather in Paris?"}
    assert any("Paris" in r for r in out["recalled"])
    secrets_ = strings_in(out["items"])
    assert {"What is the weather in Paris?", "call_id", "function_call_output"} <= secrets_
    assert plaintext_hits(data_dir, sorted(secrets_)) == []
