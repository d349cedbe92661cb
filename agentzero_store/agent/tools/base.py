"""What every agent tool shares: declared arguments, input validation and scope pinning.

A tool declares its arguments once, as ``Arg`` values; the published JSON Schema and the
validation of incoming calls are both derived from that one list, so they cannot drift.
Validation errors are ``InvalidArgumentError`` with a hint naming what the model should
send instead: an LLM reads the hint and retries.

Scope pinning: a tool built for one tenant (``org_id``/``agent_id`` fixed at
construction) publishes those fields as ``const`` and refuses any other value with
``ScopeViolationError``. The caller never gets to choose a tenant.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ...base.errors import AgentZeroStoreError, InvalidArgumentError
from ...base.limits import check_name, check_text
from ...base.modes import ACCEPTED, plain_mode
from ...embed.vectors import Embedder

JsonType = Literal["string", "integer", "number", "boolean", "object", "array"]
Result = dict[str, Any]

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),  # of strings: the only arrays a tool takes (entities, types)
}


class ScopeViolationError(AgentZeroStoreError):
    """A call asked for an org or agent other than the one the tool is pinned to."""

    code = "scope_violation"
    exit_code = 2
    default_hint = "this tool is pinned to one org/agent: omit org_id and agent_id"


@dataclass(frozen=True)
class Arg:
    """One declared argument: its JSON type, constraints and documentation."""

    name: str
    type: JsonType
    description: str
    required: bool = False
    default: Any = None
    enum: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None
    const: str | None = None  # a pinned value: anything else is a scope violation
    max_items: int | None = None  # arrays: at most this many items
    scope_id: bool = False  # an org or agent id: no control characters (``check_name``)

    def schema(self) -> dict[str, Any]:
        """This argument as a JSON Schema property."""
        s: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.type == "array":
            # An array of non-empty strings; enum and max_length constrain each item.
            item: dict[str, Any] = {"type": "string", "minLength": 1}
            if self.enum is not None:
                item["enum"] = list(self.enum)
            if self.max_length is not None:
                item["maxLength"] = self.max_length
            s["items"] = item
            if self.max_items is not None:
                s["maxItems"] = self.max_items
            if self.default is not None:
                s["default"] = self.default
            return s
        if self.const is not None:
            s["const"] = self.const
        if self.enum is not None:
            s["enum"] = list(self.enum)
        if self.default is not None:
            s["default"] = self.default
        if self.minimum is not None:
            s["minimum"] = self.minimum
        if self.maximum is not None:
            s["maximum"] = self.maximum
        if self.max_length is not None:
            s["maxLength"] = self.max_length
        if self.type == "string" and self.const is None and self.enum is None:
            s["minLength"] = 1
        return s

    def check(self, value: Any) -> Any:
        """``value`` if it fits; otherwise a typed error that says what would."""
        # bool is an int in Python but not an integer in JSON Schema.
        ok = isinstance(value, _PY_TYPES[self.type]) and not (
            isinstance(value, bool) and self.type != "boolean"
        )
        if not ok:
            raise InvalidArgumentError(
                f"{self.name} must be a JSON {self.type}, got {_json_type(value)}",
                hint=f"{self.name}: {self.description}",
            )
        if self.type == "number" and not math.isfinite(value):
            # NaN passes every comparison below; Python's json reads NaN and Infinity.
            raise InvalidArgumentError(
                f"{self.name} must be a finite number, got {value!r}",
                hint=f"{self.name}: {self.description}",
            )
        if self.type == "array":
            return self._check_items(value)
        if self.type == "string":
            check_text(self.name, value)  # a lone surrogate cannot be stored
            if self.scope_id:
                check_name(self.name, value)
        if self.const is not None and value != self.const:
            raise ScopeViolationError(
                f"{self.name} is pinned to {self.const!r} for this tool; "
                f"{value!r} is another tenant",
                hint=f"omit {self.name} (it is always {self.const!r})",
            )
        if self.enum is not None and value not in self.enum:
            raise InvalidArgumentError(
                f"{self.name} must be one of {', '.join(self.enum)}; got {value!r}",
                hint=f"{self.name}: {self.description}",
            )
        if self.minimum is not None and value < self.minimum:
            raise InvalidArgumentError(
                f"{self.name} must be at least {_number(self.minimum)}, got {value!r}",
                hint=f"{self.name}: {self.description}",
            )
        if self.maximum is not None and value > self.maximum:
            raise InvalidArgumentError(
                f"{self.name} must be at most {_number(self.maximum)}, got {value!r}",
                hint=f"{self.name}: {self.description}",
            )
        if self.type == "string" and not value.strip():
            raise InvalidArgumentError(
                f"{self.name} must not be empty", hint=f"{self.name}: {self.description}"
            )
        if self.max_length is not None and len(value) > self.max_length:
            raise InvalidArgumentError(
                f"{self.name} is {len(value)} characters; the limit is {self.max_length}",
                hint=f"shorten {self.name} (split a long text into several calls)",
            )
        return value

    def _check_items(self, value: list[Any]) -> list[str]:
        """An array argument: each item a non-empty string (of ``enum``, if given)."""
        hint = f"{self.name}: {self.description}"
        if self.max_items is not None and len(value) > self.max_items:
            raise InvalidArgumentError(
                f"{self.name} has {len(value)} items; the limit is {self.max_items}", hint=hint
            )
        for item in value:
            if not isinstance(item, str):
                raise InvalidArgumentError(
                    f"{self.name} must be an array of strings, got an item of type "
                    f"{_json_type(item)}",
                    hint=hint,
                )
            check_text(self.name, item)
            if not item.strip():
                raise InvalidArgumentError(f"{self.name} must not hold an empty string", hint=hint)
            if self.enum is not None and item not in self.enum:
                raise InvalidArgumentError(
                    f"each {self.name} item must be one of {', '.join(self.enum)}; got {item!r}",
                    hint=hint,
                )
            if self.max_length is not None and len(item) > self.max_length:
                raise InvalidArgumentError(
                    f"an item of {self.name} is {len(item)} characters; the limit is "
                    f"{self.max_length}",
                    hint=hint,
                )
        return list(value)


def _number(x: float) -> str:
    """``3,153,600,000`` rather than ``3.1536e+09`` for a whole bound."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for name, types in _PY_TYPES.items():
        if isinstance(value, types):
            return name
    return "array" if isinstance(value, list) else type(value).__name__


def scope_args(
    org_id: str | None, agent_id: str | None, *, conversation: bool = True
) -> tuple[Arg, ...]:
    """The org/agent(/conversation) arguments, pinned (``const``) where a value is given."""
    org = (
        Arg(
            "org_id",
            "string",
            "The organisation (tenant). Pinned by the host.",
            const=org_id,
            scope_id=True,
        )
        if org_id is not None
        else Arg("org_id", "string", "Only memories of this organisation (tenant).", scope_id=True)
    )
    agent = (
        Arg("agent_id", "string", "The agent. Pinned by the host.", const=agent_id, scope_id=True)
        if agent_id is not None
        else Arg("agent_id", "string", "Only memories of this agent.", scope_id=True)
    )
    conv = Arg("conversation_id", "string", "Only memories of this conversation.")
    return (org, agent, conv) if conversation else (org, agent)


class AgentTool:
    """Base of every tool: a name, a description for the model, arguments, ``run``.

    Subclasses set ``name``, ``description`` and ``args`` and implement ``_run``.
    """

    name: str = ""
    description: str = ""
    args: tuple[Arg, ...] = ()
    writes = False  # True: the host takes the data dir's writer role around each call

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's input (an object; unknown keys refused)."""
        return {
            "type": "object",
            "properties": {a.name: a.schema() for a in self.args},
            "required": [a.name for a in self.args if a.required],
            "additionalProperties": False,
        }

    def definition(self) -> dict[str, Any]:
        """Name, description and input schema (the shape most tool-use APIs take)."""
        return {"name": self.name, "description": self.description, "input_schema": self.schema()}

    def parse(self, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        """Validate a call's arguments (a JSON object, or its text); fill in defaults."""
        if isinstance(arguments, str | bytes):
            try:
                arguments = json.loads(arguments)
            except ValueError as exc:
                raise InvalidArgumentError(
                    f"{self.name}: the arguments are not JSON ({exc})",
                    hint="send one JSON object, e.g. " + json.dumps(self._example()),
                ) from exc
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise InvalidArgumentError(
                f"{self.name}: the arguments must be a JSON object, got {_json_type(arguments)}",
                hint="send one JSON object, e.g. " + json.dumps(self._example()),
            )
        known = {a.name: a for a in self.args}
        unknown = sorted(set(arguments) - set(known))
        if unknown:
            raise InvalidArgumentError(
                f"{self.name}: unknown argument(s) {', '.join(map(repr, unknown))}",
                hint=f"{self.name} accepts: {', '.join(known)}",
            )
        out: dict[str, Any] = {}
        for arg in self.args:
            value = arguments.get(arg.name)
            if value is None:
                if arg.required:
                    raise InvalidArgumentError(
                        f"{self.name}: {arg.name} is required",
                        hint=f"{arg.name}: {arg.description}",
                    )
                # A pinned field always takes its pinned value: the tenant is the host's call.
                value = arg.const if arg.const is not None else arg.default
                out[arg.name] = value
            else:
                out[arg.name] = arg.check(value)
        return out

    def run(self, arguments: Mapping[str, Any] | str | None = None) -> Result:
        """Validate ``arguments`` and run the tool; returns a JSON-ready dict."""
        return self._run(self.parse(arguments))

    __call__ = run

    def _run(self, args: dict[str, Any]) -> Result:
        raise NotImplementedError

    def _example(self) -> dict[str, Any]:
        return {a.name: "…" for a in self.args if a.required}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def mode_arg(semantic: bool, auto: str) -> Arg:
    """The ``mode`` argument of every search tool: the modes of ``base.modes`` (``bm25``
    kept as the old name of ``keyword``), ``auto`` by default; without an embedder
    (``semantic`` False) only ``auto`` and ``keyword``. ``auto``: what auto does here."""
    modes = ACCEPTED if semantic else ("auto", "keyword", "bm25")
    return Arg(
        "mode",
        "string",
        f"auto ({auto}), keyword (exact words, BM25; bm25 is the same), semantic (meaning) "
        "or hybrid (those two fused)."
        if semantic
        else "auto or keyword (exact words, BM25; bm25 is the same): without an embedder, "
        "searching by meaning is not offered.",
        default="auto",
        enum=modes,
    )


def search_args(what: str, max_limit: int, semantic: bool, auto: str) -> tuple[Arg, Arg, Arg]:
    """The ``query``, ``limit`` and ``mode`` (``mode_arg``) arguments every search tool
    takes."""
    return (
        Arg(
            "query", "string", "What to look for, in plain words.", required=True, max_length=4_096
        ),
        Arg(
            "limit",
            "integer",
            f"How many {what} to return, best first.",
            default=5,
            minimum=1,
            maximum=max_limit,
        ),
        mode_arg(semantic, auto),
    )


def search_result(results: list[Result], mode: str, embedder: Embedder | None) -> Result:
    """A search tool's answer over a memory or document store: results, the mode that
    ran (``auto`` resolved: ``base.modes.plain_mode``) and which embedder answered (None
    when none took part)."""
    mode = plain_mode(mode, has_embedder=embedder is not None)
    return {
        "results": results,
        "mode": mode,
        "embedder": embedder.model_id if embedder is not None and mode != "keyword" else None,
    }


def require_one(tool: str, args: Mapping[str, Any], names: Sequence[str]) -> None:
    """Refuse a call that gives none of ``names`` (e.g. a forget without a target)."""
    if all(args.get(n) in (None, False) for n in names):
        raise InvalidArgumentError(
            f"{tool}: give at least one of {', '.join(names)}",
            hint="nothing is deleted without an explicit target",
        )
