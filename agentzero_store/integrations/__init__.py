"""Adapters for the frameworks agents are built with: LangGraph, LangChain, OpenAI Agents SDK.

The top layer of the package: nothing in agentzero_store imports it, and each framework is
imported only by its own module here, so the core install needs none of them. Each is an
optional extra: ``pip install "agentzero-store[langgraph]"`` (``[langchain]``,
``[openai-agents]``). The adapters use only the public API of the package.
"""
