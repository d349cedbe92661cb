"""What the CLI says (issue 30, item 12): words, not Python reprs; counts in the right
number; feedback acknowledged; no WARNING for a rebuild that was asked for; a help that
names its two layers and keeps each line whole; ``~`` expanded in every path it takes;
and no index watcher thread for a one-shot command."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from agentzero_store import AgentMemory, SqliteMemoryStore, StoreNotFoundError
from agentzero_store.agentmem.skills.store import SkillStore
from agentzero_store.cli.common import store_config

from ..conftest import FAST, PASSPHRASE, js, run_cli


def test_words_counts_and_acknowledgements(data_dir: Path) -> None:
    run_cli(data_dir, "init")
    none = ("--embedder", "none")
    tea = js(run_cli(data_dir, "memory", "remember", "the user drinks tea", "--json", *none))["id"]
    run_cli(data_dir, "memory", "remember", "the user cycles to work", *none)
    (data_dir.parent / "note.md").write_text("The boiler needs 1.5 bar.\n")
    run_cli(data_dir, "rag", "ingest", str(data_dir.parent / "note.md"), *none)
    fed = run_cli(data_dir, "memory", "feedback", tea, "--used").stdout
    assert f"feedback recorded for {tea}: used" in fed
    assert "not strengthened" in run_cli(data_dir, "memory", "feedback", tea, "--unused").stdout
    forgot = run_cli(data_dir, "memory", "forget", "--id", tea).stdout
    assert forgot.startswith("forgot 1 memory;")
    token = forgot.split("agentzero memory undo ")[1].split()[0]
    assert run_cli(data_dir, "memory", "undo", token).stdout.strip() == "restored 1 memory"
    erased = run_cli(data_dir, "memory", "erase", "--id", tea, "--yes").stdout
    assert erased.startswith("erased 1 memory for good")
    rebuilt = run_cli(data_dir, "store", "rebuild")
    assert "rebuilt" in rebuilt.stdout and "WARNING" not in rebuilt.stderr, rebuilt.stderr
    report = run_cli(data_dir, "store", "verify").stdout
    assert "{" not in report and "'" not in report, report  # no Python dict or repr
    assert "keys: store id " in report and "pages checked yes" in report
    assert report.rstrip().endswith("clean")


def test_memory_help_names_its_two_layers_and_keeps_lines_whole(data_dir: Path) -> None:
    page = run_cli(data_dir, "memory", "--help").stdout
    agent, store = page.index("Agent memory (one agent"), page.index("The memory store beneath")
    assert agent < page.index(" recall ") < store < page.index(" append ")
    assert page.index(" consolidate ") < store < page.index(" gc ")
    # The docstring's own line break no longer splits the sentence.
    assert "are kept. Re-runs skip what was imported." in page


def test_a_tilde_is_the_home_dir_in_every_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    run_cli("~/store", "init", env={"HOME": str(home)})  # "--data-dir=~/store" as a shell
    assert (home / "store" / "keys.json").is_file() and not (tmp_path / "~").exists()
    (home / "in.jsonl").write_text('{"content": "a note from a file"}\n')
    got = run_cli(
        "~/store",
        "memory",
        "import",
        "~/in.jsonl",
        "--json",
        "--embedder",
        "none",
        env={"HOME": str(home)},
    )
    assert js(got)["imported"] == 1
    with AgentMemory.open(home / "store", passphrase="pw", config=FAST) as mem:
        skills = SkillStore(mem)
        skills.save("brew", "Brew tea", ["boil water", "steep 3 minutes"])
        out = skills.export_markdown("~/skills")
        assert Path(out.directory) == home / "skills" and not (tmp_path / "~").exists()
        assert len(list((home / "skills").glob("*.md"))) == 1
        assert skills.import_markdown("~/skills").unchanged == 1


def test_one_shot_commands_start_no_index_watcher(data_dir: Path) -> None:
    assert not store_config().watch_indexes and store_config(serving=True).watch_indexes
    before = set(threading.enumerate())
    cli = replace(store_config(), kdf=FAST.kdf)
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=cli, hnsw=True) as s:
        assert s.hnsw_index is not None and s.hnsw_index._observer is None
        assert set(threading.enumerate()) <= before  # no watchdog thread to race at exit
    with SqliteMemoryStore.open(data_dir, passphrase=PASSPHRASE, config=FAST, hnsw=True) as s:
        assert s.hnsw_index is not None and s.hnsw_index._observer is not None  # a library


def test_open_creates_a_store_unless_told_not_to(tmp_path: Path) -> None:
    missing = tmp_path / "mistyped"
    with pytest.raises(StoreNotFoundError) as info:
        AgentMemory.open(missing, passphrase=PASSPHRASE, config=FAST, create=False)
    assert info.value.hint and not missing.exists()  # nothing created
    with AgentMemory.open(missing, passphrase=PASSPHRASE, config=FAST) as mem:  # the default
        mem.remember("first note")
    with AgentMemory.open(missing, passphrase=PASSPHRASE, config=FAST, create=False) as mem:
        assert [m.content for m in mem.memories()] == ["first note"]
