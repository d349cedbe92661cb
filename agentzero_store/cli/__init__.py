"""The ``agentzero`` command line: one module per command group, composed in ``root``.

- ``root``: the root command ``app``, ``init``, ``mcp``, and ``main`` (the console script);
- ``common``: global options, opening stores, output, one place mapping errors to exits;
- ``memory``, ``store``, ``ops``, ``reembed``, ``rag``: the command groups.
"""

from .root import app, main

__all__ = ["app", "main"]
