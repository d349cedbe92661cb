"""The A2A surface: an agent card advertising the ``agent-memory`` skill, and the A2A
message endpoint answering it (``a2a-sdk``: its JSON-RPC binding at ``/a2a``).

A message is one memory operation, answered as a task (completed with the result as a
data artifact, or failed with the error's code, message and hint):

- a data part ``{"op": "recall", "query": ..., ...}`` or ``{"op": "remember",
  "content": ..., ...}``: the rest are the ``memory_recall`` / ``memory_remember`` tool's
  arguments;
- text ``remember: <content>``: remember it; any other text: recall with it as the query.

The operation runs as the sender's token allows (its host: scope, read-only), through
the same tools as ``/rpc`` and ``/mcp``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from ..base.version import __version__
from .gate import GRANT_KEY
from .hosts import Served
from .tokens import Grant

if TYPE_CHECKING:
    from a2a.server.agent_execution import AgentExecutor
    from a2a.types.a2a_pb2 import AgentCard
    from starlette.routing import BaseRoute

SKILL_ID = "agent-memory"
RPC_PATH = "/a2a"
OPS = {"recall": "memory_recall", "remember": "memory_remember"}
_SERVED = "agentzero.served"


def agent_card(base_url: str) -> AgentCard:
    """The card: one skill, the JSON-RPC binding at ``base_url`` + ``/a2a``, bearer auth."""
    from a2a.types.a2a_pb2 import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        HTTPAuthSecurityScheme,
        SecurityRequirement,
        SecurityScheme,
        StringList,
    )

    return AgentCard(
        name="agentzero memory",
        description="Encrypted local memory of this machine's agents: recall what was said, "
        "learned or decided; remember something new.",
        version=__version__,
        supported_interfaces=[
            AgentInterface(
                url=base_url + RPC_PATH, protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["application/json"],
        security_schemes={
            "bearer": SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer", description="the token in the server's token file"
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList(list=[])})],
        skills=[
            AgentSkill(
                id=SKILL_ID,
                name="Agent memory",
                description='Recall memories (text, or data {"op": "recall", "query": ...}) '
                'or remember one (text "remember: ...", or data {"op": "remember", '
                '"content": ...}). Answered as a task with a JSON artifact.',
                tags=["memory", "recall", "remember"],
                examples=["What does Ana like to drink?", "remember: Ana prefers green tea"],
                input_modes=["text/plain", "application/json"],
                output_modes=["application/json"],
            )
        ],
    )


def operation(texts: list[str], data: list[Any]) -> tuple[str, dict[str, Any]]:
    """(tool name, arguments) of a message's parts; raises ``ValueError`` saying why not."""
    if data:
        spec = data[0]
        if not isinstance(spec, dict) or spec.get("op") not in OPS:
            raise ValueError('a data part needs "op": "recall" or "remember"')
        args = {k: _narrow(v) for k, v in spec.items() if k != "op"}
        return OPS[spec["op"]], args
    text = "\n".join(texts).strip()
    if not text:
        raise ValueError("an empty message: send text, or a data part with an op")
    head, sep, rest = text.partition(":")
    if sep and head.strip().lower() == "remember":
        return "memory_remember", {"content": rest.strip()}
    return "memory_recall", {"query": text}


def _narrow(v: Any) -> Any:
    # A data part's numbers arrive as doubles (protobuf Value): 5.0 means the integer 5.
    return int(v) if isinstance(v, float) and v.is_integer() else v


def make_executor(served: Callable[[Mapping[str, Any]], Served]) -> AgentExecutor:
    """The executor: ``served(call_state)`` is the sender's host (from the gate)."""
    from a2a.helpers.proto_helpers import (
        get_data_parts,
        get_text_parts,
        new_data_part,
        new_task_from_user_message,
        new_text_message,
    )
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.tasks import TaskUpdater

    class MemoryExecutor(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            msg = context.message
            assert msg is not None  # a message/send always carries one
            task = context.current_task or new_task_from_user_message(msg)
            if context.current_task is None:
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            sender = served(context.call_context.state)
            try:
                name, args = operation(get_text_parts(msg.parts), get_data_parts(msg.parts))
            except ValueError as exc:
                result = {"error": "invalid_argument", "message": str(exc), "hint": SKILL_HINT}
                ok = False
            else:
                refused = sender.refusal(name)
                if refused is not None:
                    ok, result = False, refused
                else:
                    ok, result = await run_in_threadpool(sender.host.call, name, args)
            if ok:
                await updater.add_artifact([new_data_part(result)], name="result")
                await updater.complete()
            else:
                await updater.add_artifact([new_data_part(result)], name="error")
                await updater.failed(
                    new_text_message(
                        f"{result.get('message')} (hint: {result.get('hint')})",
                        context_id=task.context_id,
                        task_id=task.id,
                    )
                )

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            return None  # every operation finishes at once: nothing to cancel

    return MemoryExecutor()


MAX_TASKS = 256  # finished tasks kept for tasks/get: each holds recalled text (in RAM only)


SKILL_HINT = 'send text to recall, "remember: ..." to remember, or a data part with an op'


def a2a_routes(base_url: str, served: Callable[[Grant], Served]) -> list[BaseRoute]:
    """The card route and the message endpoint's route (behind the server's gate)."""
    from a2a.auth.user import User
    from a2a.server.context import ServerCallContext
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import (
        DefaultServerCallContextBuilder,
        create_agent_card_routes,
        create_jsonrpc_routes,
    )
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types.a2a_pb2 import Task
    from starlette.requests import Request

    class TokenUser(User):
        """The sender, named by its token file (tasks are kept apart per token)."""

        def __init__(self, name: str) -> None:
            self._name = name

        @property
        def is_authenticated(self) -> bool:
            return True

        @property
        def user_name(self) -> str:
            return self._name

    class ContextBuilder(DefaultServerCallContextBuilder):
        def build(self, request: Request) -> ServerCallContext:
            ctx = super().build(request)
            grant = request.scope[GRANT_KEY]
            ctx.state[_SERVED] = grant
            ctx.user = TokenUser(grant.name)
            return ctx

    class BoundedTaskStore(InMemoryTaskStore):
        """The SDK's in-memory task store, keeping the last ``MAX_TASKS`` tasks: a
        long-running server must not hold every answer it ever gave."""

        def __init__(self) -> None:
            super().__init__()
            self._order: OrderedDict[str, ServerCallContext] = OrderedDict()

        async def save(self, task: Task, context: ServerCallContext) -> None:
            await super().save(task, context)
            self._order[task.id] = context
            self._order.move_to_end(task.id)
            while len(self._order) > MAX_TASKS:
                old, ctx = self._order.popitem(last=False)
                await super().delete(old, ctx)

    card = agent_card(base_url)
    handler = DefaultRequestHandler(
        agent_executor=make_executor(lambda state: served(state[_SERVED])),
        task_store=BoundedTaskStore(),
        agent_card=card,
    )
    return [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, RPC_PATH, context_builder=ContextBuilder()),
    ]


__all__ = ["OPS", "RPC_PATH", "SKILL_ID", "a2a_routes", "agent_card", "operation"]
