"""A2A: the agent card and the ``agent-memory`` skill, through an ``a2a-sdk`` client."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_text_part
from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest, TaskState

from .conftest import BOT_NOTE, Server


async def _ask(server: Server, token: str, *parts: Any) -> tuple[Any, Any]:
    """The card and the task answering one message of ``parts``."""
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        card = await A2ACardResolver(http, server.base).get_agent_card()
        client = await create_client(card, ClientConfig(httpx_client=http, streaming=False))
        msg = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=list(parts))
        task = None
        async for event in client.send_message(SendMessageRequest(message=msg)):
            if event.HasField("task"):
                task = event.task
        await client.close()
        return card, task


def _result(task: Any) -> Any:
    [artifact] = task.artifacts
    [data] = get_data_parts(artifact.parts)
    return data


def test_the_card_advertises_agent_memory(server: Server) -> None:
    card, _ = anyio.run(_ask, server, server.token, new_text_part("tea"))
    assert [s.id for s in card.skills] == ["agent-memory"]
    assert card.supported_interfaces[0].url == server.base + "/a2a"
    assert "bearer" in card.security_schemes


def test_remember_then_recall_as_tasks(server: Server) -> None:
    _, made = anyio.run(_ask, server, server.token, new_text_part("remember: Ana keeps bees"))
    assert made.status.state == TaskState.TASK_STATE_COMPLETED
    assert _result(made)["status"] == "created"
    _, hit = anyio.run(
        _ask, server, server.token, new_data_part({"op": "recall", "query": "bees", "limit": 3})
    )
    assert hit.status.state == TaskState.TASK_STATE_COMPLETED
    assert "Ana keeps bees" in [h["content"] for h in _result(hit)["results"]]


def test_a_read_only_scoped_token_recalls_its_agent_and_cannot_remember(server: Server) -> None:
    ro = server.tokens["ro"]
    _, hit = anyio.run(_ask, server, ro, new_text_part("quokkas"))
    assert [h["content"] for h in _result(hit)["results"]] == [BOT_NOTE]
    _, refused = anyio.run(_ask, server, ro, new_text_part("remember: not allowed"))
    assert refused.status.state == TaskState.TASK_STATE_FAILED
    assert _result(refused)["error"] == "read_only"


def test_the_card_needs_the_token(server: Server) -> None:
    r = httpx.get(server.base + "/.well-known/agent-card.json", timeout=30)
    assert r.status_code == 401
