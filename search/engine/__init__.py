"""The storage engine: a Whoosh index in a folder, its per-segment files, merges, checksums.

It knows documents, fields and segments, not names, quotations or queries: features that
keep derived data per segment or per commit plug in through ``engine.hooks``.
"""

from newsquarry.search.engine import light as _light

# Whoosh, whichever module imports it first, without the modules it would import for
# nothing (``engine.light``): every process that opens an index starts sooner
_light.register()
