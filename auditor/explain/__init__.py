"""Local explainers for one query's ranking: pure functions of arrays, a model and a masker (no files, no spec)."""
