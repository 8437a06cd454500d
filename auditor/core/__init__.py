"""Helpers every stage uses and that import nothing of the pipeline: errors, safe file reading, how untrusted text,
numbers and metric names are shown, spans of time, URLs and the thread budgets."""
