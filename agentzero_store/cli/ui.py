"""``agentzero ui``: serve the local memory inspector (``agentzero_store.ui``).

The command unlocks the store first, as every other command does (a wrong credential or
a missing store is an error with a hint and its exit code, before any port is opened),
then binds 127.0.0.1, prints the one-time URL as the first line on stdout, opens the
browser (unless ``--no-browser``) and serves until interrupted.
"""

from __future__ import annotations

import sys
import webbrowser
from typing import Annotated

import typer

from ..base.config import Layout
from ..base.errors import InvalidArgumentError
from ..storage.datadir import store_credential
from .common import STATE, EmbedderOpt, cli_command, data_dir, err, make_embedder, store_config


@cli_command
def ui(
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: a free one).")
    ] = 0,
    org: Annotated[
        str | None,
        typer.Option(
            "--org", help="Pin the page to this org's --agent (neither: switch on the page)."
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", help="Pin the page to this --org's agent (neither: switch on the page)."
        ),
    ] = None,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the URL only; open no browser.")
    ] = False,
    embedder: EmbedderOpt = None,
) -> None:
    """Inspect, search, correct and forget an agent's memories in the browser.

    Served on 127.0.0.1 only, to the browser that opens the printed one-time URL.
    --org and --agent pin one agent's memory and come together: one alone would
    pin the other to "default", which is rarely the memory a person meant."""
    if (org is None) != (agent is None):
        given, missing = ("--org", "--agent") if agent is None else ("--agent", "--org")
        raise InvalidArgumentError(
            f"{given} pins the page only together with {missing}",
            hint="give both --org and --agent, or neither: the page then lists every "
            "agent's memory to switch to",
        )
    from ..ops.verify import verify_store  # lazily: only this command needs them here
    from ..ui import Inspector, Secrets, Settings, bind, create_app, serve

    root = data_dir()
    cred = store_credential(Layout(root), key_file=STATE.key_file)
    settings = Settings(
        root,
        cred,
        org_id=org or "default",
        agent_id=agent or "default",
        pinned=org is not None,  # and so is agent (checked above)
        embedder=make_embedder(embedder),
        config=store_config(serving=True),
        verify=lambda tell: verify_store(root, cred, tell).to_dict(),
    )
    inspector = Inspector.open(settings)
    try:
        try:
            sock = bind(port)
        except OSError as exc:
            raise InvalidArgumentError(
                f"cannot listen on 127.0.0.1:{port} ({exc.strerror})",
                hint="choose another --port, or --port 0 for a free one",
            ) from None
        keys = Secrets(port=sock.getsockname()[1])
        sys.stdout.write(keys.url + "\n")  # the first line: tests and scripts read it
        sys.stdout.flush()
        err.print("serving the memory inspector on 127.0.0.1; Ctrl-C stops it")
        if not no_browser:
            webbrowser.open(keys.url)
        serve(create_app(inspector, keys), sock)
    finally:
        inspector.close()


__all__ = ["ui"]
