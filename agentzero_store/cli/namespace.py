"""``agentzero namespace grant|revoke|list``: shared namespaces of an org.

A namespace is created by its first use (``grant`` by its owner creates it) and owned by
the agent that made it; only the owner grants and revokes. Denials exit 3.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from .agent_common import AgentOpt, OrgOpt, open_memory, writer
from .common import JsonOpt, cli_command, emit, out, show_table

app = typer.Typer(no_args_is_help=True)
NameArg = Annotated[str, typer.Argument(metavar="NAMESPACE", help="The namespace's name.")]
MemberArg = Annotated[str, typer.Argument(metavar="AGENT", help="The agent to grant or revoke.")]


def _set_access(name: str, member: str, org: str, agent: str, granted: bool) -> None:
    with writer(org, agent) as mem:
        ns = mem.namespace(name)
        (ns.grant if granted else ns.revoke)(member)
        members = ns.members()
    said = f"{member} may use {name}" if granted else f"{member} may no longer use {name}"
    emit(
        {"namespace": name, "owner": ns.owner, "members": members},
        lambda: out.print(f"{said} (members: {', '.join(members) or 'none'})"),
    )


@app.command()
@cli_command
def grant(
    name: NameArg,
    member: MemberArg,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Let AGENT read and write NAMESPACE (created, owned by --agent, if new)."""
    _set_access(name, member, org, agent, True)


@app.command()
@cli_command
def revoke(
    name: NameArg,
    member: MemberArg,
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Take AGENT's access to NAMESPACE away (from its next call on)."""
    _set_access(name, member, org, agent, False)


@app.command("list")
@cli_command
def list_(
    org: OrgOpt = "default",
    agent: AgentOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """The namespaces --agent owns or is granted."""
    with open_memory(org, agent) as mem:
        found = mem.namespaces()

    def human() -> None:
        if not found:
            out.print("no namespaces")
            return
        t = Table("namespace", "owner", "role", "members", "created")
        for n in found:
            t.add_row(n.name, n.owner, n.role, ", ".join(n.members), n.created_at.isoformat())
        show_table(t)

    emit(
        [
            {
                "name": n.name,
                "owner": n.owner,
                "role": n.role,
                "members": list(n.members),
                "created_at": n.created_at.isoformat(),
            }
            for n in found
        ],
        human,
    )


__all__ = ["app"]
