"""auditor: audits learning-to-rank models and writes evidence a regulator can check."""

__version__ = "0.1.0"
