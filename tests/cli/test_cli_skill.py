"""``agentzero skill ...`` through the real console script, in subprocesses (issue 17)."""

from __future__ import annotations

import stat
from pathlib import Path

from ..conftest import js
from ..conftest import run_cli as run


def save(data_dir: Path, name: str, *args: str) -> dict:  # type: ignore[type-arg]
    return js(run(data_dir, "skill", "save", name, *args, "--json"))  # type: ignore[no-any-return]


def content(skills: list[dict]) -> list[dict]:  # type: ignore[type-arg]
    """What a skill is, without when it was written."""
    return [{k: s[k] for k in ("name", "description", "steps", "tags")} for s in skills]


def test_save_show_list_delete(data_dir: Path) -> None:
    run(data_dir, "init")
    saved = save(
        data_dir, "Deploy app", "-d", "Ship it.", "-s", "run tests", "--step", "ship", "-t", "ops"
    )
    assert (saved["name"], saved["steps"], saved["tags"]) == (
        "Deploy app",
        ["run tests", "ship"],
        ["ops"],
    )
    save(data_dir, "Water plants", "-s", "fill the can", "--tag", "home", "--tag", "OPS")
    human = run(data_dir, "skill", "show", "deploy APP").stdout
    assert human == (
        "---\nformat: agentzero-skill/1\nname: Deploy app\ntags: ops\n---\n\n"
        "Ship it.\n\n## Steps\n\n1. run tests\n2. ship\n"
    )
    assert js(run(data_dir, "skill", "show", "Deploy app", "--json"))["description"] == "Ship it."
    listed = js(run(data_dir, "skill", "list", "--json"))
    assert [s["name"] for s in listed] == ["Deploy app", "Water plants"]
    tagged = js(run(data_dir, "skill", "list", "--tag", "ops", "--json"))
    assert [s["name"] for s in tagged] == ["Deploy app", "Water plants"]
    table = run(data_dir, "skill", "list", "--tag", "home").stdout.splitlines()
    assert table == ["name\ttags\tsteps\tdescription", "Water plants\thome, OPS\t1\t"]
    assert js(run(data_dir, "skill", "delete", "water PLANTS", "--json")) == {
        "deleted": "water PLANTS"
    }
    assert run(data_dir, "skill", "list").stdout.splitlines()[1:] == [
        "Deploy app\tops\t2\tShip it."
    ]


def test_errors_have_their_exit_codes(data_dir: Path) -> None:
    missing = run(data_dir, "skill", "list", check=False)
    assert missing.returncode == 4 and "agentzero init" in missing.stderr  # no store yet
    run(data_dir, "init")
    nope = run(data_dir, "skill", "show", "nope", "--json", check=False)
    assert nope.returncode == 4 and js(nope)["error"] == "not_found"
    bad = run(data_dir, "skill", "save", "x", "-s", "two\nlines", "--json", check=False)
    assert bad.returncode == 2 and "step 1 must be one line" in js(bad)["message"]
    no_step = run(data_dir, "skill", "save", "x", check=False)
    assert no_step.returncode == 2 and "--step" in no_step.stderr  # typer: a required option
    wrong = run(data_dir, "skill", "list", passphrase="wrong", check=False)
    assert wrong.returncode == 3


def test_scopes_keep_skills_apart(data_dir: Path) -> None:
    run(data_dir, "init")
    save(data_dir, "Secret plan", "-s", "step one", "--org", "o1", "--agent", "a1")
    assert js(run(data_dir, "skill", "list", "--json")) == []
    assert js(run(data_dir, "skill", "list", "--org", "o1", "--json")) == []
    assert js(run(data_dir, "skill", "list", "--org", "o1", "--agent", "a2", "--json")) == []
    other = run(data_dir, "skill", "show", "Secret plan", "--agent", "a1", check=False)
    assert other.returncode == 4
    mine = js(run(data_dir, "skill", "list", "--org", "o1", "--agent", "a1", "--json"))
    assert [s["name"] for s in mine] == ["Secret plan"]


def test_export_and_import_round_trip(data_dir: Path, tmp_path: Path) -> None:
    run(data_dir, "init")
    for i in range(4):
        save(
            data_dir, f"Skill {i}", "-d", f"number {i}", "-s", "first", "-s", f"then {i}", "-t", "t"
        )
    out = tmp_path / "exported"
    report = js(run(data_dir, "skill", "export", str(out), "--json"))
    assert report["exported"] == 4 and len(list(out.iterdir())) == 4
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in out.iterdir())
    again = run(data_dir, "skill", "export", str(out), "--json", check=False)
    assert again.returncode == 2 and "already exist" in js(again)["message"]
    assert js(run(data_dir, "skill", "export", str(out), "--overwrite", "--json"))["exported"] == 4
    inside = run(data_dir, "skill", "export", str(data_dir / "plain"), check=False)
    assert inside.returncode == 2 and "inside the data dir" in inside.stderr
    assert not (data_dir / "plain").exists()

    imported = js(run(data_dir, "skill", "import", str(out), "--agent", "a2", "--json"))
    assert imported == {
        "directory": str(out),
        "files": 4,
        "created": 4,
        "updated": 0,
        "unchanged": 0,
    }
    theirs = js(run(data_dir, "skill", "list", "--agent", "a2", "--json"))
    assert content(theirs) == content(js(run(data_dir, "skill", "list", "--json")))
    human = run(data_dir, "skill", "import", str(out), "--agent", "a2").stdout
    assert human.strip() == "imported 4 files: 0 created, 0 updated, 4 unchanged"


def test_import_of_a_malformed_file_names_it_and_imports_nothing(
    data_dir: Path, tmp_path: Path
) -> None:
    run(data_dir, "init")
    src = tmp_path / "in"
    src.mkdir()
    (src / "ok.md").write_text("---\nname: Fine\n---\n\n## Steps\n\n1. go\n")
    (src / "broken.md").write_text("---\nname: Broken\n---\n\n## Steps\n\n1. go\n- a bullet\n")
    p = run(data_dir, "skill", "import", str(src), "--json", check=False)
    assert p.returncode == 2
    err = js(p)
    assert err["error"] == "invalid_skill_file"
    assert err["problems"] == [f"{src / 'broken.md'}:8: expected a numbered step like '1. Do this'"]
    human = run(data_dir, "skill", "import", str(src), check=False)
    assert human.returncode == 2 and f"{src / 'broken.md'}:8:" in human.stderr
    assert js(run(data_dir, "skill", "list", "--json")) == []
