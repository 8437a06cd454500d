"""Cost known before the run: the estimate per evidence item, the record of estimate vs actual, the budget."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.run.budget import MIN_QUERIES, choose, reference_speed
from auditor.run.cost import Shape, estimate_items, probe_speed
from auditor.run.engine import prepare
from tests.conftest import LIGHT_LOCAL, LIGHT_PAIRWISE

runner = CliRunner()


def _spec(folder: Path, evidence: list, **extra: object) -> Path:
    spec = yaml.safe_load((folder / "audit.yaml").read_text())
    spec["evidence"] = evidence
    spec["output"] = {"dir": "reports", "formats": ["html"]}
    spec.update(extra)
    path = folder / "cost.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


EVIDENCE = [{"ranking_quality": {}}, LIGHT_LOCAL, LIGHT_PAIRWISE, {"parameter_influence": {"sensitive": ["sponsored"]}},
            {"exposure": {"group": ["own_brand"], "own": {"own_brand": 1}}}]


def test_run_records_estimate_against_actual_and_an_unmet_budget_is_said(bookstore: Path) -> None:
    spec = _spec(bookstore, EVIDENCE, budget={"minutes": 0.01})
    result = runner.invoke(app, ["report", str(spec), "--out", str(bookstore / "out")])
    assert result.exit_code in (0, 1), result.output
    assert "budget: The budget of 0.01 minutes cannot be met" in result.stderr
    report = Path(result.stdout.strip())
    doc = json.loads((report.parent / "evidence.json").read_text())
    compared = {c["evidence"]: c for c in doc["run"]["cost"]["compared"]}
    assert list(compared) == [name for item in EVIDENCE for name in item]
    for name, c in compared.items():  # model rows are estimated within a factor of 2 (exactly counted after)
        assert c["rows"] > 0 and 0.5 <= c["estimated_rows"] / c["rows"] <= 2.0, (name, c)
        assert c["seconds"] is not None and c["estimated_seconds"] >= 0  # rounded: a fast item may show 0.0
    budget = doc["budget"]
    assert budget["fits"] is False and budget["queries"] == MIN_QUERIES and budget["reduced_sizes"] is True
    # local_explanations' own sample (8) is smaller than the budget's minimum: kept, so no sentence claims it
    assert not any("local_explanations, " in s or "local_explanations audit" in s for s in budget["choices"])
    html = report.read_text()
    assert "Cost of the audit: estimated before it ran, and actual" in html and "Seconds est." not in html
    assert "cannot be met even at the minimum" in html  # a limitation, and in the summary's "not covered"
    assert html.count("Time budget (0.01 minutes)") >= 1


def test_validate_prints_the_estimate_per_item_and_the_total(bookstore: Path) -> None:
    spec = _spec(bookstore, EVIDENCE)
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1].startswith("estimated cost on this machine (model scores ")
    named = [line.split()[0] for line in lines[2:]]
    assert named == ["ranking_quality", "local_explanations", "pairwise", "parameter_influence", "exposure", "report",
                     "total"]
    assert "budget" not in result.stdout
    quiet = runner.invoke(app, ["validate", str(spec), "--quiet"])
    assert quiet.exit_code == 0 and len(quiet.stdout.splitlines()) == 1


def test_budget_is_deterministic_monotone_and_fits(bookstore: Path) -> None:
    spec = _spec(bookstore, [LIGHT_LOCAL | {"local_explanations": {**LIGHT_LOCAL["local_explanations"],
                                                                   "queries": None, "k_curve": [3, 5]}},
                             {"pairwise": {"top": 3}}, {"confidence": {"k": 3}}])
    prepared = prepare(spec)
    speed, masked = reference_speed(prepared.model, prepared.data.n_features)
    assert (speed, masked) == reference_speed(prepared.model, prepared.data.n_features)
    assert 200_000 < speed < 400_000 and 200_000 < masked < 400_000  # the calibration's 300k and 320k
    shape = Shape(sizes=np.asarray(prepared.data.query_sizes()), features=prepared.data.n_features, trees=80,
                  background_docs=prepared.background.n_docs, background_queries=prepared.background.n_queries,
                  rows_per_second=speed, masked_rows_per_second=masked)
    items = prepared.spec.evidence_items()
    full = sum(c.seconds for c in estimate_items(items, shape))
    chosen = [choose(items, shape, minutes=full * share / 60, render_seconds=0.0) for share in (0.3, 0.6, 2.0)]
    assert [c.fits for c in chosen] == [True, True, True]
    assert chosen[2].queries is None and chosen[2].items == items  # fits: nothing reduced
    assert MIN_QUERIES <= chosen[0].queries <= chosen[1].queries < 79
    for c in chosen[:2]:
        assert c.estimated_seconds <= c.minutes * 60
        assert {name: o.queries for name, o in c.items} == {name: c.queries for name, _ in items}
    again = choose(items, shape, minutes=full * 0.3 / 60, render_seconds=0.0)
    assert again.to_json() == chosen[0].to_json()


def test_probe_measures_a_positive_speed(lambdamart) -> None:
    from auditor.models.lightgbm import LightGBMRanker

    booster, X, _, _ = lambdamart
    rows_per_second, masked, search, seconds = probe_speed(LightGBMRanker(booster), X, rows=500, repeats=2)
    assert rows_per_second > 1000 and masked > 1000 and search > 1000 and 0 < seconds < 5

    class Scores:  # a model without trees: its search steps are timed as its masked rows
        def predict(self, rows: np.ndarray) -> np.ndarray:
            return rows.sum(axis=1)

    rows_per_second, masked, search, seconds = probe_speed(Scores(), X, rows=500, repeats=2)
    assert search == masked and rows_per_second > 1000


@pytest.mark.parametrize(("budget", "problem"), [
    ("{minutes: 0}", "budget.minutes: Input should be greater than 0"),
    ("{minutes: '15'}", "budget.minutes: Input should be a valid number"),
    ("{minute: 15}", "unknown key 'minute' in budget (did you mean 'minutes'?)"),
])
def test_bad_budget_is_one_line_naming_the_place(bookstore: Path, budget: str, problem: str) -> None:
    text = (bookstore / "audit.yaml").read_text() + f"budget: {budget}\n"
    path = bookstore / "bad.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith(f"error: {path}:") and problem.split(" (")[0] in line, line


def test_every_registered_method_is_costed():
    """A registered explainer the cost model does not know would be estimated at 0 model rows and make budgets
    choose blind: every method but RANDOM (which scores nothing) costs more than measuring its sets."""
    from auditor.evidence.costs import local_rows
    from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions
    from auditor.explain import registry
    from auditor.run.cost import Shape

    shape = Shape(sizes=np.full(10, 20), features=30, trees=100, background_docs=500, background_queries=20,
                  rows_per_second=1e6)
    options = LocalExplanationsOptions(background_rows=5)
    measuring_only = local_rows(options, ["random"], shape, 20.0, [5], shared=False)
    for method in registry.methods():
        if method != "random":
            assert local_rows(options, [method], shape, 20.0, [5], shared=False) > measuring_only, method


def test_shared_attributions_are_counted_once_and_only_those_that_are_shared():
    """Decision paths re-use local explanations' attributions only for the explainers local explanations ran: with
    [random, treeshap1] there, decision paths' LIRME is its own work (it was estimated at 0 rows)."""
    from auditor.evidence.kinds.decision_path_accuracy.options import DecisionPathOptions
    from auditor.evidence.kinds.local_explanations.options import LocalExplanationsOptions
    from auditor.run.cost import Shape

    shape = Shape(sizes=np.full(10, 20), features=12, trees=80, background_docs=500, background_queries=20,
                  rows_per_second=1e6)
    paths = DecisionPathOptions(explainers=["treeshap", "lirme"])
    lirme_rows = 10 * (paths.lime.samples + 4)  # shared draws: samples + 4 a query
    for methods, expected in ((["random", "treeshap1"], lirme_rows), (["random", "treeshap1", "lirme5"], 0)):
        local = LocalExplanationsOptions(methods=methods, k_curve=[])
        estimated = estimate_items([("local_explanations", local), ("decision_path_accuracy", paths)], shape)
        assert estimated[1].rows == expected, methods
    alone = estimate_items([("decision_path_accuracy", paths)], shape)[0]
    assert alone.rows == lirme_rows + 10 * 5 + shape.docs  # and TreeSHAP's 5 documents a query, and the scores
