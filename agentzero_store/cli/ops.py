"""``agentzero key ...`` and ``agentzero store verify|backup|restore|accept-loss``: the
worst-day tools.

Thin: each command resolves the credential, calls ``agentzero_store.ops``, and hands
the result to ``emit``; errors map to exit codes in ``common.cli_command``.
``verify`` exits 5 when it finds a problem (after printing every finding).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..base.config import Layout
from ..base.errors import (
    CorruptStoreError,
    CredentialRequiredError,
    InvalidArgumentError,
    InvalidKeyError,
)
from ..ops import backup_store, change_passphrase, export_recovery, restore_store, rotate_keys
from ..ops.accept_loss import accept_loss
from ..ops.verify import VerifyReport, verify_store
from ..storage.credentials import Credential, resolve_credential
from ..storage.datadir import store_credential
from ..storage.keys import unlock_slot
from .common import (
    STATE,
    Advance,
    JsonOpt,
    cli_command,
    data_dir,
    emit,
    err,
    memory_target,
    out,
    progress,
    show_table,
)

ENV_NEW_PASSPHRASE = "AGENTZERO_NEW_PASSPHRASE"

key_app = typer.Typer(no_args_is_help=True)


def _cred(root: Path | None = None) -> Credential:
    # The data dir's (or a backup's) key header says whether the OS keyring is asked.
    return store_credential(Layout(root or data_dir()), key_file=STATE.key_file)


def _target_cred() -> tuple[Path | str, Credential]:
    """Where the key header is (a data dir, or a PostgreSQL URL's ``az_keys``) and the
    credential that opens it. A database store has no OS keyring slot: the credential is
    the environment's, ``--key-file``'s, or a prompt's."""
    target = memory_target()
    if isinstance(target, str):
        return target, resolve_credential(key_file=STATE.key_file)
    return target, _cred(target)


def _new_passphrase() -> str:
    env = os.environ.get(ENV_NEW_PASSPHRASE)
    if env:
        return env
    if not sys.stdin.isatty():
        raise CredentialRequiredError(
            "no new passphrase given", hint=f"set {ENV_NEW_PASSPHRASE} or run on a terminal"
        )
    first = getpass.getpass("new passphrase: ")
    if getpass.getpass("repeat new passphrase: ") != first:
        raise InvalidKeyError("the passphrases do not match", hint="type the same one twice")
    return first


@key_app.command("change-passphrase")
@cli_command
def change_passphrase_cmd(json_out: JsonOpt = False) -> None:
    """Rewrap the master key under a new passphrase (AGENTZERO_NEW_PASSPHRASE or a prompt)."""
    target, cred = _target_cred()
    result = change_passphrase(target, cred, _new_passphrase())
    emit(result, lambda: out.print(f"passphrase changed (slot {result.slot}); no data rewritten"))


@key_app.command("rotate")
@cli_command
def rotate_cmd(json_out: JsonOpt = False) -> None:
    """New master key for every byte: a data dir's memory.db, its archive and the log
    (resumes an interrupted rotation; stop other agentzero processes first), or every
    row of a PostgreSQL store in one transaction (connected clients must reopen).
    """
    target, cred = _target_cred()
    if isinstance(target, str):  # a PostgreSQL URL: the credential is checked first there
        with contextlib.ExitStack() as stack:
            r = rotate_keys(target, cred, progress=_bar(stack))
    else:
        # rotate_keys takes the writer lock before it unlocks: check the credential
        # first, so a wrong one creates and touches no file.
        unlock_slot(Layout(target), cred, allow_rotation=True)
        r = rotate_keys(target, cred)

    def human() -> None:
        if isinstance(target, str):
            rows = sum(n for t, n in r.resealed.items() if t != "az_terms")
            out.print(
                f"rotated the master key of {r.data_dir}: {rows} rows re-keyed in one "
                "transaction; clients opened before must reopen the store"
            )
            for what, ids in r.recomputed.items():
                n = ids if isinstance(ids, int) else len(ids)
                out.print(f"  {what.replace('_', ' ')}: {n}")
        else:
            out.print(
                ("finished the interrupted rotation" if r.resumed else "rotated the master key")
                + f" of {r.data_dir}; indexes are rebuilt on the next open"
            )
        if r.slots_dropped:
            out.print(
                f"credentials no longer valid: {', '.join(r.slots_dropped)} "
                "(run `agentzero key export-recovery` for a new recovery key)"
            )

    emit(r, human)


def _bar(stack: contextlib.ExitStack) -> Callable[[int, int], None]:
    """A (done, total) progress callback drawing a bar from its first call on (once the
    credential was checked and the rows are locked), closed with ``stack``."""
    bar: list[Advance] = []
    seen = [0]

    def cb(done: int, total: int) -> None:
        if not bar:
            bar.append(stack.enter_context(progress("re-keying rows", total)))
        bar[0](done - seen[0])
        seen[0] = done

    return cb


@key_app.command("export-recovery")
@cli_command
def export_recovery_cmd(json_out: JsonOpt = False) -> None:
    """Print a new recovery key (replaces the previous one). Keep it offline."""
    target, cred = _target_cred()
    secret, change = export_recovery(target, cred)

    def human() -> None:
        sys.stdout.write(secret + "\n")
        err.print("recovery key above: it opens the store as AGENTZERO_DATA_KEY; keep it offline")

    emit({"recovery_key": secret, **change.to_dict()}, human)


def verify_cmd(json_out: JsonOpt = False) -> None:
    """Check memory.db and archive pages, every document record, and every index checkpoint."""
    report = verify_store(data_dir(), _cred())
    emit(report, lambda: _print_report(report))
    if not report.clean:
        raise typer.Exit(CorruptStoreError.exit_code)


def _print_report(report: VerifyReport) -> None:
    for name, what in report.checked.items():
        out.print(f"{name}: {describe(what)}", markup=False)
    if report.findings:
        t = Table("severity", "file", "where", "problem", "fix")
        for f in report.findings:
            t.add_row(f.severity, f.file, f.where or "", f.problem, f.fix)
        show_table(t)
    out.print("clean" if report.clean else "NOT clean: see the findings above")


def describe(value: Any) -> str:
    """A checked item of a report in words: ``{"seq": 5, "created": True}`` reads
    ``seq 5, created yes``; nested dicts in parentheses (never a Python repr)."""
    if isinstance(value, dict):
        return ", ".join(
            f"{str(k).replace('_', ' ')} ({describe(v)})"
            if isinstance(v, dict)
            else f"{str(k).replace('_', ' ')} {describe(v)}"
            for k, v in value.items()
        )
    if isinstance(value, list | tuple):
        return ", ".join(describe(v) for v in value) or "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else str(value)


def backup_cmd(
    dest: Annotated[Path, typer.Argument(help="A new (or empty) directory for the backup.")],
    json_out: JsonOpt = False,
) -> None:
    """Consistent encrypted snapshot: memory.db, its archive, the log, keys.json, checksums."""
    r = backup_store(data_dir(), _cred(), dest)

    def human() -> None:
        out.print(f"backup of store {r.store_id} written to {r.path}")
        if not r.recorded:
            out.print("(not noted as its last backup: the user state dir could not be written)")

    emit(r, human)


def restore_cmd(
    backup: Annotated[Path, typer.Argument(help="A directory written by `store backup`.")],
    target: Annotated[
        Path, typer.Option("--data-dir", help="The new, empty data dir to restore into.")
    ],
    json_out: JsonOpt = False,
) -> None:
    """Restore a backup into a new, empty data dir, check it, and verify the result."""
    r = restore_store(backup, target, _cred(backup))
    emit(r, lambda: out.print(f"restored store {r.store_id} into {r.data_dir}; verify: clean"))


def accept_loss_cmd(
    yes: Annotated[
        bool, typer.Option("--yes", help="Do not ask (needed when stdin is not a terminal).")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Accept a lost, truncated or rolled-back source as it is, and record the loss.

    For when `store verify` reports a loss and no backup is to be restored. Damage inside
    a source (a record or page that fails authentication) is not accepted: salvage it.
    """
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidArgumentError(
                "accept-loss records a permanent loss of acknowledged data",
                hint="see what is lost with `agentzero store verify`, then pass --yes",
            )
        typer.confirm(
            "Accept every source as it is now? What the store acknowledged beyond it is "
            "given up for good",
            abort=True,
        )
    r = accept_loss(data_dir(), _cred())

    def human() -> None:
        if not r.losses:
            out.print("nothing to accept: every source holds what was acknowledged")
            return
        for loss in r.losses:
            out.print(f"{loss.source}: {loss.problem}")
            out.print(f"  accepted: expected {loss.expected}, now {loss.found}")
        out.print(f"{r.indexes_dropped} index checkpoints dropped; rebuilt on the next open")

    emit(r, human)


def register_store_commands(app: typer.Typer) -> None:
    """Add verify, backup, restore and accept-loss to the ``agentzero store`` sub-app."""
    app.command("accept-loss")(cli_command(accept_loss_cmd))
    app.command("verify")(cli_command(verify_cmd))
    app.command("backup")(cli_command(backup_cmd))
    app.command("restore")(cli_command(restore_cmd))


__all__ = ["key_app", "register_store_commands"]
