"""`auditor precompile` (run by `make install`): its parts are valid audits of the data it writes. Running it is
left to the install step every CI run makes (two processes, ~13 s); whether an audit after it compiles nothing is
measured in docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from auditor.cli import app
from auditor.commands.precompile import PARTS, part_spec, write_inputs


def test_each_part_is_a_valid_audit_of_the_data_it_writes(tmp_path: Path) -> None:
    write_inputs(tmp_path)
    assert (tmp_path / "test.letor").read_text().startswith(tuple("0123")), "LETOR lines open with the label"
    kinds = set()
    for part in range(len(PARTS)):
        result = CliRunner().invoke(app, ["validate", str(part_spec(tmp_path, part))])
        assert result.exit_code == 0, result.output
        kinds |= {next(iter(item)) if isinstance(item, dict) else item for item in PARTS[part][1]}
    assert {"local_explanations", "confidence", "pairwise", "decision_path_accuracy"} <= kinds
