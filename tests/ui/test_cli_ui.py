"""``agentzero ui`` through the real console script: the URL line, errors, shutdown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import PASSPHRASE, run_cli

from .conftest import NEEDLE, URL_LINE, running_ui, seed


def test_the_first_stdout_line_is_the_one_time_url(data_dir: Path) -> None:
    seed(data_dir)
    with running_ui(data_dir) as line:
        m = URL_LINE.match(line)
        assert m is not None, line
        base = f"http://127.0.0.1:{m.group(1)}"
        with httpx.Client(base_url=base, timeout=60) as c:
            assert c.get("/").status_code == 401
            r = c.get(line, follow_redirects=True)
            assert r.status_code == 200 and NEEDLE in r.text
            assert c.get(line).status_code == 401  # once only


def test_a_chosen_port_is_used(data_dir: Path) -> None:
    seed(data_dir)
    import socket

    with socket.socket() as s:  # a port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with running_ui(data_dir, "--port", str(port)) as line:
        m = URL_LINE.match(line)
        assert m is not None and int(m.group(1)) == port


def test_wrong_passphrase_is_a_cli_error_with_a_hint(data_dir: Path) -> None:
    seed(data_dir)
    p = run_cli(
        data_dir, "ui", "--no-browser", "--embedder", "none", passphrase="wrong", check=False
    )
    assert p.returncode == 3
    assert p.stdout == ""  # no URL: nothing is served
    assert "error:" in p.stderr and "hint:" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_missing_store_is_a_cli_error_with_a_hint(tmp_path: Path) -> None:
    p = run_cli(tmp_path / "none", "ui", "--no-browser", check=False)
    assert p.returncode == 4, p.stderr
    assert p.stdout == ""
    assert "error:" in p.stderr and "hint:" in p.stderr and "init" in p.stderr
    assert not (tmp_path / "none").exists()  # nothing created


def test_help_and_no_web_import_for_other_commands(data_dir: Path) -> None:
    assert "--no-browser" in run_cli(data_dir, "ui", "--help").stdout
    # The CLI imports the web stack only when `ui` runs: other commands stay fast.
    code = (
        "import sys, agentzero_store.cli; "
        "print(sorted({'starlette', 'uvicorn', 'jinja2'} & set(sys.modules)))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_a_port_in_use_is_a_cli_error_with_a_hint(data_dir: Path) -> None:
    seed(data_dir)
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        p = run_cli(
            data_dir,
            "ui",
            "--no-browser",
            "--embedder",
            "none",
            "--port",
            str(port),
            passphrase=PASSPHRASE,
            check=False,
        )
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    assert f"127.0.0.1:{port}" in p.stderr and "--port 0" in p.stderr
