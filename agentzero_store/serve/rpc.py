"""JSON-RPC 2.0 over the agent tools: ``POST /rpc``.

Method names and params are the MCP tools' (``memory_recall`` with
``{"query": ...}``), params by name only. A batch (a JSON array) is answered as an
array, in order, without the notifications (requests without ``id``); a batch of
notifications only is answered with no body (204).

Errors are JSON-RPC error objects: the standard codes for the protocol's own failures
(-32700 parse error, -32600 invalid request, -32601 method not found, -32602 invalid
params, -32603 internal error), and for the store's errors -32602 (a bad argument or a
scope the token may not name) or -32000; ``data`` carries our ``code`` and ``hint``
(and whatever else the error's ``to_dict`` holds).
"""

from __future__ import annotations

import json
from typing import Any

from .hosts import Served

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000  # the store's errors (data.code says which)
MAX_BATCH = 100  # calls in one batch

# The store's error codes that are about the params the caller sent.
_PARAM_CODES = frozenset({"invalid_argument", "scope_violation", "duplicate_id", "read_only"})


class RpcEndpoint:
    """Answers JSON-RPC bodies with the tools of one token (``served``)."""

    def __init__(self, served: Served) -> None:
        self._served = served

    def answer(self, body: bytes) -> bytes | None:
        """The response body for ``body`` (None: notifications only, nothing to say)."""
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):
            # RecursionError: nesting deeper than the parser goes is not JSON we read.
            return _dump(_error(None, PARSE_ERROR, "parse error: the body is not JSON"))
        if isinstance(payload, list):
            if not payload:
                return _dump(_error(None, INVALID_REQUEST, "invalid request: empty batch"))
            if len(payload) > MAX_BATCH:
                return _dump(
                    _error(None, INVALID_REQUEST, f"invalid request: over {MAX_BATCH} calls")
                )
            answers = [a for a in (self._one(item) for item in payload) if a is not None]
            return _dump(answers) if answers else None
        single = self._one(payload)
        return _dump(single) if single is not None else None

    def _one(self, request: object) -> dict[str, Any] | None:
        if not isinstance(request, dict):
            return _error(None, INVALID_REQUEST, "invalid request: not an object")
        rid = request.get("id")
        if not _valid_id(rid):
            return _error(None, INVALID_REQUEST, "invalid request: id must be a string or number")
        method = request.get("method")
        if request.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return _error(
                rid, INVALID_REQUEST, 'invalid request: needs "jsonrpc": "2.0" and a method'
            )
        notification = "id" not in request
        params = request.get("params", {})
        if not isinstance(params, dict):
            out = _error(rid, INVALID_PARAMS, "invalid params: give them by name (an object)")
        elif method not in self._served.known:
            methods = ", ".join(sorted(self._served.host.tools))
            data = {"code": "method_not_found", "hint": f"methods: {methods}"}
            out = _error(rid, METHOD_NOT_FOUND, f"method not found: {method}", data)
        else:
            refused = self._served.refusal(method)
            ok, result = (False, refused) if refused else self._served.host.call(method, params)
            out = _ok(rid, result) if ok else _store_error(rid, result)
        return None if notification else out


def _valid_id(rid: object) -> bool:
    return (
        rid is None
        or isinstance(rid, str)
        or (isinstance(rid, int | float) and not isinstance(rid, bool))
    )


def _error(
    rid: object, code: int, message: str, data: dict[str, Any] | None = None
) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": err}


def _ok(rid: object, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _store_error(rid: object, result: dict[str, Any]) -> dict[str, Any]:
    """A tool's error dict (``{"error": code, "message", "hint", ...}``) as a JSON-RPC
    error: the message on top, our code and hint in ``data``."""
    data = {k: v for k, v in result.items() if k not in ("error", "message")}
    code = str(result.get("error", "store_error"))
    data["code"] = code
    number = (
        INTERNAL_ERROR
        if code == "internal_error"
        else INVALID_PARAMS
        if code in _PARAM_CODES
        else SERVER_ERROR
    )
    return _error(rid, number, str(result.get("message", code)), data)


def _dump(obj: object) -> bytes:
    # ASCII escapes: a lone surrogate echoed in a message still makes valid UTF-8 JSON.
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii")


__all__ = ["RpcEndpoint"]
