"""The OpenAI Agents SDK's ``Runner`` with an encrypted ``AgentZeroSession`` — offline.

The model is a scripted fake (``FakeWeatherModel``: no LLM, no network): asked about
the weather it calls the ``get_weather`` tool, then answers with the tool's output. The
session keeps every item of the run (the question, the call, the tool's output, the
answer) as encrypted turns of the agent memory: a second run sees the first, and
``AgentMemory.recall`` finds what was said.

    python examples/openai_agents_session.py [DATA_DIR]

Prints one JSON line: the items the session holds and what recall found.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from agentzero_store import AgentMemory
from agentzero_store.integrations.openai_agents import AgentZeroSession

PASSPHRASE = os.environ.get("AGENTZERO_PASSPHRASE", "example passphrase, change me")


class FakeWeatherModel(Model):
    """A scripted stand-in for an LLM: calls the tool, then repeats its output."""

    def __init__(self) -> None:
        self.seen: list[list[Any]] = []  # the input of every call, to show the history

    async def get_response(self, system_instructions: Any, input: Any, *a: Any, **kw: Any) -> Any:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.seen.append(items)
        last = items[-1]
        if last.get("type") == "function_call_output":
            text = f"Here is the forecast: {last['output']}"
            out: Any = ResponseOutputMessage(
                id=f"msg_{len(self.seen)}",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
            )
        else:
            city = "Lyon" if "Lyon" in str(last.get("content")) else "Paris"
            out = ResponseFunctionToolCall(
                id=f"fc_{len(self.seen)}",
                call_id=f"call_{len(self.seen)}",
                type="function_call",
                name="get_weather",
                arguments=json.dumps({"city": city}),
            )
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *a: Any, **kw: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this example does not stream")


@function_tool
def get_weather(city: str) -> str:
    """The (made-up) weather of a city."""
    return f"{city}: sunny spells, 21 degrees"


async def main(data_dir: str) -> dict[str, Any]:
    set_tracing_disabled(True)  # offline: no trace upload
    model = FakeWeatherModel()
    agent = Agent(
        name="forecaster",
        instructions="Answer weather questions.",
        model=model,
        tools=[get_weather],
    )

    # The swap from the SDK's plaintext SQLiteSession("user-42", "conversations.db"):
    session = AgentZeroSession("user-42", data_dir=data_dir, passphrase=PASSPHRASE)
    try:
        first = await Runner.run(agent, "What is the weather in Paris?", session=session)
        second = await Runner.run(agent, "And in Lyon?", session=session)
        items = await session.get_items()
    finally:
        session.close()
    assert len(model.seen[-1]) > 4, "the second run saw the first one's items"

    with AgentMemory.open(data_dir, passphrase=PASSPHRASE) as memory:
        recalled = [h.memory.content for h in memory.recall("Paris weather", k=3)]
    return {
        "answers": [first.final_output, second.final_output],
        "items": items,
        "recalled": recalled,
    }


if __name__ == "__main__":
    where = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="agentzero-example-")
    print(json.dumps(asyncio.run(main(where)), ensure_ascii=False))
