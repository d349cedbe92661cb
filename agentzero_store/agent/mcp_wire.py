"""The MCP server's stdio transport: JSON-RPC messages, one per line, and a reply to every
request, even one the SDK cannot read.

The SDK's own ``stdio_server`` hands a line it cannot validate to the session as an
exception, which only logs it: a ``tools/call`` holding a lone surrogate (``"\\ud800"``,
valid JSON but not Unicode) or arguments nested thousands deep got no answer, and a
client waiting on that id hung. Here such a line is answered at once with a JSON-RPC
error for its id (read from the top level of the line without parsing what is nested),
carrying our error code and a hint like a tool's error. A reply the SDK cannot encode
becomes an error reply for the same id instead of ending the server.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.shared.message import SessionMessage

from ..base.errors import InvalidArgumentError

log = logging.getLogger(__name__)

INVALID_REQUEST = -32600  # JSON-RPC: the JSON is not a valid request object
PARSE_ERROR = -32700  # JSON-RPC: not JSON at all
INTERNAL_ERROR = -32603

RequestId = str | int | None


@contextlib.contextmanager
def protocol_stdin() -> Iterator[anyio.AsyncFile[str]]:
    """A private handle on the real stdin for the protocol, its lines decoded as UTF-8
    (bytes that are not UTF-8 kept as lone surrogates, so they are refused, never
    silently replaced); fd 0 reads the null device meanwhile, so nothing else (a child
    process, a library) can take the client's bytes."""
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    raw = os.fdopen(private, "rb")
    try:
        yield anyio.wrap_file(io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape"))
    finally:
        with contextlib.suppress(OSError):
            os.dup2(raw.fileno(), 0)  # give fd 0 back to the caller's stdin
        with contextlib.suppress(OSError, ValueError):
            raw.close()


@asynccontextmanager
async def json_lines(
    stdin: AsyncIterable[str], stdout: anyio.AsyncFile[str]
) -> AsyncIterator[
    tuple[ObjectReceiveStream[SessionMessage | Exception], ObjectSendStream[SessionMessage]]
]:
    """The (read, write) streams of ``Server.run`` over JSON lines on ``stdin``/``stdout``."""
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    lock = anyio.Lock()  # the reader's refusals and the session's replies share the wire

    async def put(line: str) -> None:
        async with lock:
            await stdout.write(line + "\n")
            await stdout.flush()

    async def reader() -> None:
        async with read_send:
            async for line in stdin:
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # the SDK's validation: pydantic, jiter, ...
                    reply = refusal(line, exc)
                    if reply is not None:
                        await put(reply)
                    continue
                await read_send.send(SessionMessage(message))

    async def writer() -> None:
        async with write_recv:
            async for session_message in write_recv:
                await put(encode(session_message.message))

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        yield read_recv, write_send


def encode(message: types.JSONRPCMessage) -> str:
    """One message as a JSON line; a reply that cannot be encoded (a lone surrogate in a
    stored text) becomes an error reply for its id, so the client still hears back."""
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True)
    except Exception as exc:
        log.error("a reply could not be encoded: %s", type(exc).__name__)
        rid = getattr(message, "id", None)
        return _error(
            rid if isinstance(rid, str | int) else None,
            INTERNAL_ERROR,
            "the reply could not be encoded as JSON (it holds text that is not valid Unicode)",
            "internal_error",
            "see the MCP server's log (stderr)",
        )


def refusal(line: str, exc: Exception) -> str | None:
    """The JSON-RPC error answering a line the SDK refused (``exc``); None for a
    notification (no id: JSON-RPC answers none)."""
    try:
        value: Any = json.loads(line)
    except RecursionError:
        value = None
        why = "it is nested too deeply to read"
    except ValueError:
        rid = top_level_id(line)
        return _error(rid, PARSE_ERROR, "the message is not JSON", *_hint("valid JSON"))
    else:
        why = (
            "a string is not valid Unicode (a lone surrogate escape such as \\ud800, "
            "or bytes that are not UTF-8)"
            if _has_lone_surrogate(value)
            else f"it is not a valid JSON-RPC message ({_first_line(exc)})"
        )
    if isinstance(value, dict):
        if "id" not in value:
            return None  # a notification
        rid = value["id"] if isinstance(value["id"], str | int) else None
    else:
        found = top_level_id(line, with_presence=True)
        if found is False:
            return None
        rid = found if isinstance(found, str | int) else None
    return _error(rid, INVALID_REQUEST, f"request refused: {why}", *_hint("valid"))


def _hint(what: str) -> tuple[str, str]:
    """Our error code and hint for a refused line (as a tool's invalid argument)."""
    return (
        InvalidArgumentError.code,
        f"send {what} UTF-8 JSON, nested at most a few hundred levels deep",
    )


def _error(rid: RequestId, code: int, message: str, our_code: str, hint: str) -> str:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "error": {"code": code, "message": message, "data": {"error": our_code, "hint": hint}},
        },
        ensure_ascii=True,  # the refused line may hold what UTF-8 cannot encode
    )


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def _has_lone_surrogate(value: Any) -> bool:
    """Whether any string in ``value`` (keys included) holds a surrogate code point
    (iterative: the value may be nested deeply)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if any("\ud800" <= c <= "\udfff" for c in v):
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def top_level_id(line: str, *, with_presence: bool = False) -> RequestId | bool:
    """The ``id`` member of the JSON object ``line``, read at the top level only: every
    other member's value is skipped by matching brackets, so no nesting depth can stop
    it. None when there is none or it cannot be read; with ``with_presence``, False
    when the object has no ``id`` member (a notification)."""
    s, i = line, _ws(line, 0)
    try:
        if s[i] != "{":
            return None
        i = _ws(s, i + 1)
        while s[i] != "}":
            if s[i] != '"':
                return None
            end = _string_end(s, i)
            key, i = json.loads(s[i:end]), end
            i = _ws(s, i)
            if s[i] != ":":
                return None
            i = _ws(s, i + 1)
            if key == "id":
                rid, _ = json.JSONDecoder().raw_decode(s, i)
                return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None
            i = _ws(s, _skip_value(s, i))
            if s[i] == ",":
                i = _ws(s, i + 1)
        return False if with_presence else None
    except (IndexError, ValueError):
        return None


def _ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t\r\n":
        i += 1
    return i


def _string_end(s: str, i: int) -> int:
    """The index just past the JSON string whose opening quote is at ``i``."""
    i += 1
    while s[i] != '"':
        i += 2 if s[i] == "\\" else 1
    return i + 1


def _skip_value(s: str, i: int) -> int:
    """The index just past the JSON value starting at ``i`` (strings honoured)."""
    depth = 0
    while True:
        c = s[i]
        if c == '"':
            i = _string_end(s, i)
            if depth == 0:
                return i
            continue
        if depth == 0 and c in ",}":
            return i  # the end of a number, true, false or null
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1


__all__ = ["encode", "json_lines", "protocol_stdin", "refusal", "top_level_id"]
