"""Each evidence kind declares the metric names it can emit; a policy pack naming one no requested kind emits is
bad input when the packs load (exit 2, one line with the pack file, the rule id and the closest names)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.core.errors import InputError
from auditor.evidence import ALWAYS, REGISTRY
from auditor.evidence.registry import metric_pattern
from auditor.judging.policy import builtin_pack_names, check_metrics, load_packs

PLUGINS = {**ALWAYS, **REGISTRY}


@pytest.mark.parametrize("name", builtin_pack_names())
def test_every_builtin_pack_names_only_metrics_its_evidence_emits(name: str, tmp_path: Path) -> None:
    check_metrics(load_packs([name], base_dir=tmp_path), PLUGINS, set(PLUGINS))  # every kind requested


def test_metric_patterns() -> None:
    pattern = metric_pattern("ranking_quality.{ndcg@{k}|map}.{mean|ci95_low}")
    assert pattern.fullmatch("ranking_quality.ndcg@10.mean") and pattern.fullmatch("ranking_quality.map.ci95_low")
    assert not pattern.fullmatch("ranking_quality.ndcg@10.median") and not pattern.fullmatch("ranking_quality.mrr.mean")
    assert not metric_pattern("local.{method}.validity").fullmatch("local.a.b.validity")  # one segment
    assert REGISTRY["local_explanations"].emits("local.treeshap1.validity.mean@k5")
    assert "ranking_quality.ndcg@{k}.mean" in REGISTRY["ranking_quality"].metric_examples()


def test_a_pack_naming_a_metric_no_requested_kind_emits_is_bad_input(bookstore: Path) -> None:
    rule = {"id": "MINE-1", "title": "t", "evidence": "ranking_quality", "metric": "ranking_quality.ndcg@10.maen",
            "fail_if": "< 0.5", "severity": "minor", "citation": "c", "rationale": "r", "threshold_reason": "t"}
    pack = bookstore / "mine.yaml"
    pack.write_text(yaml.safe_dump({"pack": "mine", "title": "M", "version": "1", "rules": [rule]}))
    spec = yaml.safe_load((bookstore / "audit.yaml").read_text())
    spec["policies"] = ["./mine.yaml"]
    spec["evidence"] = [{"ranking_quality": {}}]
    (bookstore / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    result = CliRunner().invoke(app, ["report", str(bookstore / "audit.yaml"), "--quiet"])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and line.startswith(f"error: {pack}")
    assert "MINE-1" in line and "ranking_quality.ndcg@{k}.mean" in line
    # a rule on a kind the spec does not request is SKIPPED when judged, not refused here
    with pytest.raises(InputError):
        check_metrics(load_packs(["./mine.yaml"], base_dir=bookstore), PLUGINS, {"ranking_quality"})
    check_metrics(load_packs(["./mine.yaml"], base_dir=bookstore), PLUGINS, {"dataset"})
