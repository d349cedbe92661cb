"""Issue 18, item 6: off a terminal, a table is one tab-separated line per row.

A `store verify` finding names a long file path; a wrapped table cut it across lines,
so it could not be grepped. Human output to a pipe or file is now header + rows, tab
separated, never wrapped or cut; `--json` is unchanged.
"""

from __future__ import annotations

from pathlib import Path

from ..conftest import js, run_cli


def test_verify_findings_are_one_greppable_line_each_off_a_terminal(tmp_path: Path) -> None:
    # A deep data dir, so the path is far wider than any terminal.
    root = tmp_path / ("a-rather-long-folder-name-" * 6) / "data"
    run_cli(root, "init", passphrase="pw")
    run_cli(root, "rag", "ingest", "--id", "d", "--text", "some words", passphrase="pw")
    (root / "rag" / "index.jsonl").unlink()
    p = run_cli(root, "store", "verify", passphrase="pw", check=False, env={"COLUMNS": "60"})
    assert p.returncode == 5
    lines = p.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("severity\t"))
    assert lines[header].split("\t") == ["severity", "file", "where", "problem", "fix"]
    error = [line for line in lines[header + 1 :] if line.startswith("error\t")]
    assert len(error) == 1
    cells = error[0].split("\t")
    assert cells[1] == str(root / "rag" / "index.jsonl")  # whole, on the row's own line
    assert "the document log is missing" in cells[3]
    # --json is as it was.
    rep = js(run_cli(root, "store", "verify", "--json", passphrase="pw", check=False))
    assert rep["findings"][0]["file"] == str(root / "rag" / "index.jsonl")


def test_memory_recent_rows_are_tab_separated_off_a_terminal(tmp_path: Path) -> None:
    root = tmp_path / "data"
    run_cli(root, "init", passphrase="pw")
    run_cli(root, "memory", "append", "first\tline with a tab", passphrase="pw")
    p = run_cli(root, "memory", "recent", passphrase="pw", env={"COLUMNS": "40"})
    lines = p.stdout.splitlines()
    assert lines[0].split("\t") == ["created", "role", "conversation", "id", "content"]
    assert len(lines) == 2 and lines[1].split("\t")[-1] == "first line with a tab"
