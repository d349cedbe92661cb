"""SkillStore on a real SQLCipher memory.db, and its Markdown export and import
(issue 17)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentzero_store import (
    AgentMemory,
    InvalidArgumentError,
    NotFoundError,
    SchemaVersionError,
    Skill,
    SkillFileError,
    SkillStore,
)
from agentzero_store.agentmem.skills.markdown import (
    FORMAT,
    SkillParseError,
    file_names,
    parse,
    render,
)
from agentzero_store.agentmem.skills.records import check_skill
from agentzero_store.agentmem.skills.repository import SCHEMA_KEY
from agentzero_store.base.config import Layout
from agentzero_store.memory.sqlite.source import LAYER_WRITES
from tests.conftest import FAST, PASSPHRASE, scan_for, text_needles
from tests.support.sqlcipher_pages import find_plaintext

from .conftest import Clock, open_memory

DEPLOY = ("Deploy app", "Ship the web app.\nStaging first.", ["run tests", "build", "ship"])


@pytest.fixture
def skills(mem: AgentMemory) -> SkillStore:
    return SkillStore(mem)


# ---------------------------------------------------------------------- one skill
def test_save_load_and_upsert_by_name(skills: SkillStore, clock: Clock) -> None:
    s = skills.save(*DEPLOY, tags=["ops", "Web", "OPS"])
    assert s == Skill("Deploy app", DEPLOY[1], tuple(DEPLOY[2]), ("ops", "Web"))
    assert s.created_at == s.updated_at == clock.now
    assert skills.load("  deploy   APP ") == s  # names compare case- and space-insensitively
    clock.advance(hours=1)
    again = skills.save("deploy app", "", ["ship"])
    assert (again.name, again.description, again.steps, again.tags) == (
        "deploy app",
        "",
        ("ship",),
        (),
    )
    assert again.created_at == s.created_at and again.updated_at == clock.now
    assert skills.list() == [again]
    clock.advance(hours=1)
    seq = skills.memory.store.source_seq()
    layer_writes = "SELECT value FROM meta WHERE key = ?"
    acks = skills.memory.store.database.query(layer_writes, (LAYER_WRITES,))
    same = skills.save("deploy app", "", [" ship "])  # identical once normalised: a no-op
    assert same.updated_at == again.updated_at and skills.memory.store.source_seq() == seq
    assert skills.memory.store.database.query(layer_writes, (LAYER_WRITES,)) == acks


def test_skills_survive_reopen_and_migrate_once(data_dir: Path, clock: Clock) -> None:
    with open_memory(data_dir, clock) as mem:
        SkillStore(mem).save(*DEPLOY)
    with SkillStore.open(data_dir, **open_kwargs(clock)) as skills:
        assert skills.load("Deploy app").steps == tuple(DEPLOY[2])
        db = skills.memory.store.database
        assert db.query("SELECT value FROM meta WHERE key = ?", (SCHEMA_KEY,)) == [("1",)]
        with skills.memory.store.transaction() as tx:
            tx.execute("UPDATE meta SET value = '2' WHERE key = ?", (SCHEMA_KEY,))
    with open_memory(data_dir, clock) as mem, pytest.raises(SchemaVersionError, match="skills"):
        SkillStore(mem)


def open_kwargs(clock: Clock, **kw: object) -> dict[str, object]:
    args: dict[str, object] = {
        "passphrase": PASSPHRASE,
        "config": FAST,
        "clock": clock,
        "org_id": "acme",
        "agent_id": "a1",
    }
    args.update(kw)
    return args


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("  ", "d", ["x"]), "the skill name must not be blank"),
        (("a\nb", "d", ["x"]), "one line"),
        ((5, "d", ["x"]), "the skill name must be a string"),
        (("n", None, ["x"]), "the description must be a string"),
        (("n", "d", "do it"), "steps must be a list"),
        (("n", "d", []), "at least one step"),
        (("n", "d", ["ok", " "]), "step 2 must not be blank"),
        (("n", "d", ["ok", "two\nlines"]), "step 2 must be one line"),
        (("n", "d", ["ok", 3]), "step 2 must be a string"),
        (("n", "d", ["x"], "ops"), "tags must be a list"),
        (("n", "d", ["x"], ["a,b"]), "tag 1 holds a comma"),
        (("n", "d", ["x"], ["ok", ""]), "tag 2 must not be blank"),
        (("n" * 201, "d", ["x"]), "at most 200"),
        (("n", "bell \x07", ["x"]), "control character"),
    ],
)
def test_bad_skills_are_refused_clearly(
    skills: SkillStore, args: tuple[object, ...], says: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=says):
        skills.save(*args)  # type: ignore[arg-type]
    assert skills.list() == []


def test_missing_skills_are_a_typed_not_found(skills: SkillStore) -> None:
    for call in (lambda: skills.load("nope"), lambda: skills.delete("nope")):
        with pytest.raises(NotFoundError) as info:
            call()
        assert info.value.code == "not_found" and info.value.exit_code == 4


def test_find_by_tag_and_list(skills: SkillStore) -> None:
    skills.save("b-skill", "", ["x"], ["Ops", "db"])
    skills.save("A-skill", "", ["x"], ["ops"])
    skills.save("c-skill", "", ["x"], [])
    assert [s.name for s in skills.list()] == ["A-skill", "b-skill", "c-skill"]
    assert [s.name for s in skills.find_by_tag("OPS")] == ["A-skill", "b-skill"]
    assert [s.name for s in skills.find_by_tag("db")] == ["b-skill"]
    assert skills.find_by_tag("none") == []
    skills.save("b-skill", "", ["x"], ["db"])  # re-tagged: no longer ops
    assert [s.name for s in skills.find_by_tag("ops")] == ["A-skill"]
    with pytest.raises(InvalidArgumentError):
        skills.find_by_tag(" ")


def test_another_org_or_agent_never_sees_a_skill(data_dir: Path, clock: Clock) -> None:
    with open_memory(data_dir, clock) as mem:
        SkillStore(mem).save(*DEPLOY, tags=["ops"])
    for org, agent in (("acme", "a2"), ("other", "a1")):
        with open_memory(data_dir, clock, org_id=org, agent_id=agent) as mem:
            theirs = SkillStore(mem)
            assert theirs.list() == [] and theirs.find_by_tag("ops") == []
            with pytest.raises(NotFoundError):
                theirs.load("Deploy app")
            with pytest.raises(NotFoundError):
                theirs.delete("Deploy app")
            theirs.save("Deploy app", "their own", ["x"], ["ops"])
            theirs.delete("Deploy app")
    with open_memory(data_dir, clock) as mem:
        assert SkillStore(mem).load("Deploy app").steps == tuple(DEPLOY[2])


def test_skills_are_encrypted_and_delete_leaves_no_text(data_dir: Path, clock: Clock) -> None:
    """Deleted on every page, the keys' b-tree interior pages included: enough skills that
    both tables (their keys hold the name and tag) are more than one page deep."""
    word = "marzipanoctopus"
    with open_memory(data_dir, clock) as mem:
        skills = SkillStore(mem)
        with skills.repo.transaction() as tx:
            for i in range(300):
                name = f"routine {i:03d} " + "padding " * 12
                skills.repo.upsert(
                    tx, check_skill(name, "", ["x"], [f"tag {i:03d} " + "pad " * 12]), 0
                )
        skills.save(f"feed the {word}", f"the {word} eats at dawn", [f"find the {word}"], [word])
        skills.save("water the fern", "weekly", ["pour"])
        keys = mem.store.keys
        db_pages = mem.store.database.query("PRAGMA page_count")[0][0]
        assert db_pages > 40
        assert scan_for(data_dir, text_needles(word)) == []  # no file holds it in the clear
        db = Layout(data_dir).memory_db
        assert find_plaintext(db, keys.sqlcipher_key, [word.encode()])  # the scan can see it
        skills.delete(f"Feed the {word.upper()}")
        assert find_plaintext(db, keys.sqlcipher_key, [word.encode()]) == []
        assert [s.name for s in skills.list()][-1] == "water the fern"
        assert len(skills.list()) == 301
    assert find_plaintext(db, keys.sqlcipher_key, [word.encode()]) == []


# ---------------------------------------------------------------------- Markdown
def test_export_then_import_gives_identical_skills(
    skills: SkillStore, data_dir: Path, clock: Clock, tmp_path: Path
) -> None:
    skills.save(*DEPLOY, tags=["ops", "web"])
    skills.save("Morning routine", "", ["wake", "coffee: strong", "2. not a number"], [])
    skills.save("Notes", "## Steps\nA description may hold the heading.\n\n---", ["one"], ["x"])
    skills.save("Ünïcode ☕ name", "tabs\tand  spaces kept", ["✓ done"], ["café"])
    out = tmp_path / "export"
    report = skills.export_markdown(out)
    assert report.to_dict()["exported"] == 4
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(f for _, f in report.files) and len(files) == 4
    for p in out.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600  # plaintext: the owner's only
    text = (out / "deploy-app.md").read_text()
    assert text == (
        f"---\nformat: {FORMAT}\nname: Deploy app\ntags: ops, web\n---\n\n"
        "Ship the web app.\nStaging first.\n\n## Steps\n\n1. run tests\n2. build\n3. ship\n"
    )
    with open_memory(data_dir, clock, agent_id="a2") as mem:
        other = SkillStore(mem)
        result = other.import_markdown(out)
        assert (result.files, result.created, result.updated, result.unchanged) == (4, 4, 0, 0)
        assert other.list() == skills.list()
        assert other.import_markdown(out).unchanged == 4  # again: nothing changes


def test_export_refuses_the_data_dir_and_existing_files(
    skills: SkillStore, data_dir: Path, tmp_path: Path
) -> None:
    skills.save(*DEPLOY)
    for inside in (data_dir, data_dir / "skills", data_dir / "a" / ".." / "b"):
        with pytest.raises(InvalidArgumentError, match="inside the data dir"):
            skills.export_markdown(inside)
    link = tmp_path / "link"
    link.symlink_to(data_dir)
    with pytest.raises(InvalidArgumentError, match="inside the data dir"):
        skills.export_markdown(link / "out")
    assert not (data_dir / "skills").exists() and not (data_dir / "b").exists()

    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    with pytest.raises(InvalidArgumentError, match="not a directory"):
        skills.export_markdown(a_file)

    out = tmp_path / "out"
    out.mkdir()
    (out / "deploy-app.md").write_text("mine")
    with pytest.raises(InvalidArgumentError, match="already exist"):
        skills.export_markdown(out)
    assert (out / "deploy-app.md").read_text() == "mine"
    skills.export_markdown(out, overwrite=True)
    assert parse((out / "deploy-app.md").read_text()) == skills.load("Deploy app")
    assert [p.name for p in out.iterdir()] == ["deploy-app.md"]  # no temp file left


def test_file_names_are_safe_and_distinct() -> None:
    names = [
        "../../etc/passwd",
        "A/B",
        "a b",
        "A  B",
        "con",
        ".hidden",
        "日本語",
        "x" * 200,
        "Café au lait",
    ]
    got = file_names([Skill(n, "", ("x",)) for n in names])
    assert got[:6] == [
        "etc-passwd.md",
        "a-b.md",
        "a-b-2.md",
        "a-b-3.md",
        "con-skill.md",
        "hidden.md",
    ]
    assert got[6].startswith("skill-") and len(got[7]) == 63 and got[8] == "cafe-au-lait.md"
    assert len(set(got)) == len(got)
    for f in got:
        assert "/" not in f and "\\" not in f and not f.startswith(".") and f.endswith(".md")


def test_a_malformed_file_imports_nothing_and_names_file_and_line(
    skills: SkillStore, tmp_path: Path
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    good = Skill("Good", "fine", ("a", "b"), ("t",))
    (src / "good.md").write_text(render(good))
    (src / "bad-step.md").write_text("---\nname: Bad\n---\n\n## Steps\n\n1. ok\nnot numbered\n")
    (src / "no-name.md").write_text("---\ntags: x\n---\n## Steps\n1. a\n")
    (src / "twin.md").write_text(render(Skill("GOOD", "twin", ("c",))))
    (src / "notes.txt").write_text("not a skill file: ignored")
    (src / "latin1.md").write_bytes("---\nname: caf\xe9\n".encode("latin-1"))
    with pytest.raises(SkillFileError) as info:
        skills.import_markdown(src)
    problems = info.value.problems
    assert f"{src / 'bad-step.md'}:8: expected a numbered step like '1. Do this'" in problems
    assert f"{src / 'no-name.md'}:3: the front matter has no 'name:'" in problems
    assert any(p.startswith(f"{src / 'latin1.md'}: not UTF-8") for p in problems)
    assert any(str(src / "twin.md") in p and "good.md" in p for p in problems)
    assert len(problems) == 4 and "nothing was imported" in info.value.message
    assert info.value.to_dict()["problems"] == problems and info.value.exit_code == 2
    assert skills.list() == []  # all or nothing


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("name: x\n", 1, "starts with a '---'"),
        ("---\nname: x\n", 3, "not closed"),
        ("---\nname: x\nauthor: me\n---\n## Steps\n1. a\n", 3, "unknown front matter key"),
        ("---\nformat: other/2\nname: x\n---\n## Steps\n1. a\n", 2, "unknown format"),
        ("---\nname x\n---\n## Steps\n1. a\n", 2, "key: value"),
        ("---\nname: x\n---\nno heading\n", 5, "no '## Steps'"),
        ("---\nname: x\n---\n## Steps\n\n", 4, "at least one step"),
        ("---\nname:   \n---\n## Steps\n1. a\n", 2, "must not be blank"),
        ("---\nname: x\ntags: a, \x07b\n---\n## Steps\n1. a\n", 3, "tag 2"),
    ],
)
def test_parse_errors_carry_their_line(text: str, line: int, says: str) -> None:
    with pytest.raises(SkillParseError, match=says) as info:
        parse(text)
    assert info.value.line == line


one_line = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=30
).filter(lambda s: s.strip() != "")
any_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


@settings(max_examples=200, deadline=None)
@given(
    name=one_line,
    description=any_text,
    steps=st.lists(one_line, min_size=1, max_size=6),
    tags=st.lists(one_line.filter(lambda s: "," not in s), max_size=4),
)
def test_markdown_round_trips_every_valid_skill(
    name: str, description: str, steps: list[str], tags: list[str]
) -> None:
    try:
        skill = check_skill(name, description, steps, tags)
    except InvalidArgumentError:
        return  # e.g. a control character in the description: refused before any file
    assert parse(render(skill)) == skill
    assert parse(render(skill).replace("\n", "\r\n")) == skill  # saved by a Windows editor


def test_import_of_a_missing_directory_is_not_found(skills: SkillStore, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        skills.import_markdown(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert skills.import_markdown(empty).files == 0
    assert os.listdir(empty) == []
