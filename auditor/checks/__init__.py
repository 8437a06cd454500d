"""Measures on arrays: pure functions, no files, no spec, no printing."""
