"""rag: the document store on top of agentzero_store (sealed log, chunking, ingest, query)."""
