"""The agent memory on PostgreSQL: the repository's interface (``agentmem.repository``)
over the tables of ``schema``, with every text sealed on the client (``codec``) and
every lookup key blinded, so the server never sees what the agent remembers."""
