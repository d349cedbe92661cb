"""Which failures mean "rebuild the index", and which belong to the caller.

Index libraries fail natively (hnswlib's ``RuntimeError``, tantivy's ``ValueError`` or a
pyo3 ``PanicException``), and an adapter may raise ``SidecarCorruptError`` or
``StoreIOError``: all of those are healed by a rebuild from the source, and never reach
a caller raw. A source's own errors (a damaged database, a disk that fails under it) and
a caller's mistakes (a wrong vector dimension) are not the index's to heal.
"""

from __future__ import annotations

from ..base.errors import AgentZeroStoreError, SidecarCorruptError, StoreIOError


def is_fatal(exc: BaseException) -> bool:
    """True for what must stop everything: a user's ^C or exit."""
    # Native libraries raise RuntimeError, ValueError or pyo3's PanicException (a
    # BaseException): all of them mean "rebuild". Only a user's ^C or exit goes through.
    return isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit)


def index_failure(exc: BaseException) -> bool:
    """True if ``exc``, raised by an index adapter, means "rebuild the index": a native
    error, or the adapter's own ``SidecarCorruptError`` / ``StoreIOError``. Anything
    else (a caller's wrong vector dimension, say) is the caller's to see."""
    if is_fatal(exc):
        return False
    return not isinstance(exc, AgentZeroStoreError) or isinstance(
        exc, SidecarCorruptError | StoreIOError
    )


class IndexFailed(Exception):
    """An index call (not the source) failed: keeps the two apart, since both can raise
    ``StoreIOError`` and only the index's failure is healed by a rebuild."""

    def __init__(self, cause: BaseException) -> None:
        if isinstance(cause, AgentZeroStoreError):
            super().__init__(cause.message)  # without the hint: this text is logged
        else:
            super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause

    def public(self, kind: str) -> AgentZeroStoreError:
        """The error a caller sees: the adapter's own typed one, else a corrupt index."""
        if isinstance(self.cause, AgentZeroStoreError):
            return self.cause
        return SidecarCorruptError(f"the {kind} index failed: {self}")


def is_store_error(exc: BaseException) -> bool:
    """True if ``exc`` is a typed error of the source (not of the index): the caller's."""
    return isinstance(exc, AgentZeroStoreError) and not isinstance(exc, SidecarCorruptError)


__all__ = ["IndexFailed", "index_failure", "is_fatal", "is_store_error"]
