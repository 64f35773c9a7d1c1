"""Archive-wide knowledge derived from everything indexed: the alias table (one name per
entity) and quotation clusters (the same quotation across articles)."""
