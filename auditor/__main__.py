"""`python -m auditor`: the command line."""

from auditor.cli import app

app(prog_name="auditor")
