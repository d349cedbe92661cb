"""``agentzero memory ...`` over the agent memory (``AgentMemory``): grant, remember,
fact, facts, recall, list, feedback, archive, restore, forget, undo, erase, consolidate,
pin, unpin, context.

Registered on the ``memory`` group beside the memory store's commands (``memory``).
Every command works on one agent's memory: ``--org`` and ``--agent`` (both ``default``
unless given). Writing commands hold the data dir's writer role for the whole command
(on PostgreSQL, given a database URL, there is none: many clients write at once).

The commands live in ``agent_writes`` and ``agent_reads``, what they share (options,
opening the memory, the writer role) in ``agent_common``; this module registers them.
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from .agent_reads import context, facts, list_, recall
from .agent_writes import (
    archive,
    consolidate,
    erase,
    fact,
    feedback,
    forget,
    grant,
    pin,
    remember,
    restore,
    undo,
    unpin,
)
from .common import cli_command

COMMANDS: dict[str, Callable[..., None]] = {
    "grant": grant,
    "remember": remember,
    "fact": fact,
    "facts": facts,
    "recall": recall,
    "list": list_,
    "feedback": feedback,
    "archive": archive,
    "restore": restore,
    "forget": forget,
    "undo": undo,
    "erase": erase,
    "consolidate": consolidate,
    "pin": pin,
    "unpin": unpin,
    "context": context,
}


AGENT_PANEL = "Agent memory (one agent: --org, --agent)"
STORE_PANEL = "The memory store beneath (every scope, raw entries)"


def register_agent_memory_commands(app: typer.Typer) -> None:
    """Add the agent memory's commands to the ``memory`` group, listed first in its help
    under their own heading; the store's own commands (``cli.memory``) under another,
    so ``memory --help`` says which layer each command works on."""
    for info in app.registered_commands:
        info.rich_help_panel = info.rich_help_panel or STORE_PANEL
    for name, fn in COMMANDS.items():
        app.command(name, rich_help_panel=AGENT_PANEL)(cli_command(fn))
    app.registered_commands.sort(key=lambda info: info.rich_help_panel != AGENT_PANEL)


__all__ = ["COMMANDS", "register_agent_memory_commands"]
