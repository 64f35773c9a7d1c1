"""From files to passages: readers, passage splitting, enrichment (``enrich``) and the
indexer that writes enriched articles through the engine."""
