"""HTTP endpoints, one module per resource: search, documents, writes, meta."""
