"""The spelling an org or agent id, namespace or session name is used under.

New names take their one normal form (``base.limits.scope_name``: NFKC, case kept;
invisible characters and mixed scripts refused), so "team", "team\\u200b" and "tеam"
(a Cyrillic е) can no longer be three scopes that look alike. Names were matched
exactly before, so a store may hold data under a spelling that now folds to another or
is refused: such a spelling is kept, exactly as given, when the store already holds
data under it (``stored``), with a warning, and never used to make a new scope.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

from ..base.errors import InvalidArgumentError
from ..base.limits import check_name, scope_name


def resolve(names: Sequence[tuple[str, str]], stored: Callable[[], bool]) -> list[str]:
    """The spellings to use for ``names`` ((what, name) pairs that make one scope
    together): their normal forms; or the names as given when one differs from its
    normal form or is refused, and ``stored()`` says the store holds data under the
    names as given (asked only then). Raises the first refusal otherwise."""
    for what, name in names:
        check_name(what, name)  # what no spelling may hold (control characters, length)
    folded: list[str] = []
    refused: InvalidArgumentError | None = None
    for what, name in names:
        try:
            folded.append(scope_name(what, name))
        except InvalidArgumentError as exc:
            refused = refused or exc
            folded.append(name)
    if refused is None and all(f == n for f, (_, n) in zip(folded, names, strict=True)):
        return folded
    if stored():
        warnings.warn(
            f"{', '.join(f'{w} {n!r}' for w, n in names)}: data is stored under this "
            "spelling, which new names no longer take (they are NFKC, without invisible "
            "characters or mixed scripts); it is used as given",
            stacklevel=3,
        )
        return [n for _, n in names]
    if refused is not None:
        raise refused
    return folded


__all__ = ["resolve"]
