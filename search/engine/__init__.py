"""The storage engine: a Whoosh index in a folder, its per-segment files, merges, checksums.

It knows documents, fields and segments, not names, quotations or queries: features that
keep derived data per segment or per commit plug in through ``engine.hooks``.
"""
