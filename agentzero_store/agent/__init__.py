"""What agents talk to: the agent tools (``tools``) and the MCP server (``mcp``).

The agent-memory layer (memory types, facts that supersede, procedures, decay) will
sit beside them.
"""
