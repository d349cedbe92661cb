"""``agentzero ui`` through the real console script: the URL line, errors, shutdown."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agentzero_store.agentmem import AgentMemory
from tests.conftest import FAST, PASSPHRASE, run_cli

from .conftest import NEEDLE, URL_LINE, csrf_of, running_ui, seed


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


def test_org_and_agent_pin_the_page_through_the_real_command(data_dir: Path) -> None:
    seed(data_dir)
    with AgentMemory.open(
        data_dir, org_id="acme", agent_id="a1", passphrase=PASSPHRASE, config=FAST
    ) as mem:
        mem.remember("a1 keeps the otter feeding schedule")
    with running_ui(data_dir, "--org", "acme", "--agent", "a1") as line:
        m = URL_LINE.match(line)
        assert m is not None, line
        with httpx.Client(base_url=f"http://127.0.0.1:{m.group(1)}", timeout=60) as c:
            page = c.get(line, follow_redirects=True).text
            assert "otter feeding schedule" in page
            assert NEEDLE not in page  # default / default's memory is not this page's
            assert '<span class="scope" title="pinned by --org/--agent">acme / a1</span>' in page
            assert 'id="scope-select"' not in page  # no switcher
            csrf = csrf_of(c.get("/health").text)
            r = c.post("/scope", data={"csrf": csrf, "scope": json.dumps(["default", "default"])})
            assert r.status_code == 403 and "pinned" in r.text
            assert NEEDLE not in c.get("/").text


def test_org_or_agent_alone_is_a_cli_error_with_a_hint(data_dir: Path) -> None:
    seed(data_dir)
    for given, missing in (("--org", "--agent"), ("--agent", "--org")):
        p = run_cli(
            data_dir,
            "ui",
            "--no-browser",
            "--embedder",
            "none",
            given,
            "acme",
            passphrase=PASSPHRASE,
            check=False,
        )
        assert p.returncode == 2, p.stderr
        assert p.stdout == ""  # nothing served
        assert f"error: {given} pins the page only together with {missing}" in p.stderr
        assert "hint: give both --org and --agent, or neither" in p.stderr
        assert "Traceback" not in p.stderr


def _listeners(port: int) -> list[str]:
    """The local addresses (hex, as the kernel lists them) of every TCP socket listening
    on ``port``, IPv4 and IPv6 (Linux's /proc/net/tcp*)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


def _outward_address() -> str | None:
    """This machine's address on its default route (no packet is sent), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only picks the route's source address
        except OSError:
            return None
        address = str(s.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_it_listens_on_loopback_only(data_dir: Path) -> None:
    seed(data_dir)
    with running_ui(data_dir) as line:
        m = URL_LINE.match(line)
        assert m is not None, line
        port = int(m.group(1))
        checked = 0
        if Path("/proc/net/tcp").exists():
            # One listening socket, on 127.0.0.1 (0100007F): not 0.0.0.0, not [::].
            assert _listeners(port) == ["0100007F"]
            checked += 1
        outward = _outward_address()
        if outward is not None:  # another address of this machine is refused
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((outward, port), timeout=10).close()
            checked += 1
        assert checked, "neither /proc/net/tcp nor a non-loopback address to check with"
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            pass  # while loopback answers
