"""The query side: parsing, matching, scoring, facets, highlights, suggestions,
interpretations, exports and the search itself (``searching.run_search``)."""
