"""The adapters' typed errors: ours (a code and a hint) and LangGraph's own type, so
code that catches either keeps working."""

from __future__ import annotations

from langgraph.store.base import InvalidNamespaceError

from ... import InvalidArgumentError


class InvalidNamespace(InvalidArgumentError, InvalidNamespaceError):
    """A namespace LangGraph refuses: empty, a label that is empty, not a string, holds
    a period or NUL, or the reserved root ``"langgraph"``."""

    code = "invalid_namespace"
    default_hint = (
        "a namespace is a non-empty tuple of non-empty strings without '.', e.g. ('users', 'alice')"
    )


class UnsupportedOperation(InvalidArgumentError, ValueError):
    """An operation the store does not know (``batch`` runs LangGraph's four)."""

    code = "unsupported_operation"
    default_hint = "pass GetOp, PutOp, SearchOp or ListNamespacesOp (langgraph.store.base)"


__all__ = ["InvalidNamespace", "UnsupportedOperation"]
