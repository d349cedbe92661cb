"""The agent-memory layer."""
