"""``verify``'s check of the acknowledgement ledger (``sources.ledger``)."""

from __future__ import annotations

from ...base.config import Layout
from ...base.errors import AgentZeroStoreError
from ...storage.ack_format import SOURCES, Source, SourceState
from ...storage.acks import Ledger
from ...storage.keys import StoreKeys
from .report import FIX_ACCEPT, Finding, VerifyReport


def check_ledger(
    layout: Layout, keys: StoreKeys, report: VerifyReport
) -> dict[Source, SourceState]:
    """What the ledger says was acknowledged (a source it cannot vouch for: nothing)."""
    states: dict[Source, SourceState] = {s: SourceState() for s in SOURCES}
    path = layout.ledger
    if not path.exists():
        if keys.acks_required:
            report.findings.append(
                Finding(
                    str(path),
                    None,
                    "the acknowledgement ledger is missing: whether a source lost "
                    "acknowledged data cannot be told",
                    FIX_ACCEPT,
                )
            )
        else:
            report.findings.append(
                Finding(
                    str(path),
                    None,
                    "no acknowledgement ledger yet (a store from before it); the next open "
                    "starts one from the sources as they are",
                    "none needed",
                    "note",
                )
            )
        return states
    try:
        ledger = Ledger(layout.root, keys.ledger_key, keys.store_id, writable=False)
    except AgentZeroStoreError as exc:
        report.findings.append(Finding(str(path), None, exc.message, FIX_ACCEPT))
        return states
    with ledger:
        for source in SOURCES:
            got = ledger.read(source)
            if got.state is None:
                report.findings.append(
                    Finding(
                        str(path),
                        f"{source} entry",
                        "no slot of this entry authenticates",
                        FIX_ACCEPT,
                    )
                )
                continue
            if got.damaged:
                report.findings.append(
                    Finding(
                        str(path),
                        f"{source} entry, slot {got.damaged[0]}",
                        "a slot does not authenticate (a torn update); the other holds the "
                        "state and the next update rewrites it",
                        "none needed",
                        "note",
                    )
                )
            states[source] = got.state
    report.checked["acknowledged"] = {
        source: {
            "created": st.created,
            "seq": st.seq,
            **({"generation": st.generation} if source == "documents" else {}),
            "accepted_losses": len(st.losses),
        }
        for source, st in states.items()
    }
    return states


__all__ = ["check_ledger"]
