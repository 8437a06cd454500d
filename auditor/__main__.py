"""`python -m auditor`: the command line."""

from auditor.cli import entry

entry()
