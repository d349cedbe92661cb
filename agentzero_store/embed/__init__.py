"""Embedders: text in, checked float32 vectors out.

- ``vectors``: the ``Embedder`` protocol and the checks every vector passes;
- ``local``: ``LocalEmbedder``, all-MiniLM-L6-v2 on CPU, offline, on two backends:
  - ``onnx_backend`` (onnxruntime) for queries and small batches, fed by ``tokens``
    (the model's ``tokenizer.json``) and ``onnx_cache`` (the per-user, hash-checked
    ONNX file that ``onnx_export`` builds once from the packaged weights with torch);
  - sentence-transformers (torch) for bulk batches;
- ``minilm``: the packaged model's files, hash and shape, shared by both;
- ``api``: ``ApiEmbedder``, any OpenAI-compatible ``/v1/embeddings`` endpoint;
- ``factory``: an embedder chosen by name (``--embedder``, ``AGENTZERO_EMBEDDER``).

The stores take any ``Embedder``; they never import ``local``, ``api`` or ``factory``.
"""
