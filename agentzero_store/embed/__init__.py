"""Embedders: text in, checked float32 vectors out.

- ``vectors``: the ``Embedder`` protocol and the checks every vector passes;
- ``local``: ``LocalEmbedder``, all-MiniLM-L6-v2 on CPU, offline;
- ``api``: ``ApiEmbedder``, any OpenAI-compatible ``/v1/embeddings`` endpoint;
- ``factory``: an embedder chosen by name (``--embedder``, ``AGENTZERO_EMBEDDER``).

The stores take any ``Embedder``; they never import ``local``, ``api`` or ``factory``.
"""
