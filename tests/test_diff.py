"""`auditor diff` and the spec's `baseline:`: a second audit of a model retrained on shifted data (the bookstore
generator's `--shift 0.3 --sponsored-boost 1.5`) against the bundled example."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from auditor.checks.distribution import feature_distributions, psi
from auditor.cli import app
from auditor.core.numbers import figure
from auditor.evidence.document import EvidenceDocument
from tests.conftest import BOOKSTORE
from tests.helpers import document_of

runner = CliRunner()
EVIDENCE = [{"ranking_quality": {"cutoffs": [10]}}, {"global_importance": {}}]


def _run(folder: Path, **extra: object) -> Path:
    spec = {"audit": {"title": "Review", "organisation": "O"}, "model": {"path": "model.txt"},
            "dataset": {"path": "test.csv", "doc_id_column": "doc_id"}, "evidence": EVIDENCE,
            "policies": ["starter"], "output": {"dir": "reports", "formats": ["html"]}, **extra}
    path = folder / "audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = runner.invoke(app, ["report", str(path), "--quiet", "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    return Path(result.stdout.strip()).parent


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    base = tmp_path_factory.mktemp("diff")
    first, second = base / "q3", base / "q4"
    first.mkdir()
    for name in ("model.txt", "test.csv"):
        shutil.copy(BOOKSTORE / name, first / name)
    subprocess.run([sys.executable, str(BOOKSTORE / "generate.py"), "--out", str(second), "--shift", "0.3",
                    "--sponsored-boost", "1.5"], check=True, capture_output=True)
    run_a = _run(first)
    run_b = _run(second, baseline=str(run_a))
    return run_a, run_b, second


def test_psi_oracle() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(0, 1, 20_000)[:, None]
    same = feature_distributions(rng.normal(0, 1, 20_000)[:, None], ["x"])[0]
    moved = feature_distributions(rng.normal(0.5, 1, 20_000)[:, None], ["x"])[0]
    old = feature_distributions(a, ["x"])[0]
    assert psi(old, same) < 0.01
    # PSI of N(0,1) vs N(0.5,1) over deciles is about 0.25 (≈ the symmetric KL divergence, 0.5² = 0.25)
    assert 0.2 < psi(old, moved) < 0.3
    flags = feature_distributions(np.array([[0.0]] * 90 + [[1.0]] * 10), ["f"])[0]
    more = feature_distributions(np.array([[0.0]] * 60 + [[1.0]] * 40), ["f"])[0]
    expected = (0.6 - 0.9) * np.log(0.6 / 0.9) + (0.4 - 0.1) * np.log(0.4 / 0.1)
    assert psi(flags, more) == pytest.approx(expected)


@pytest.mark.slow
def test_diff_reports_the_planted_changes(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    run_a, run_b, _ = runs
    out = tmp_path / "diff.html"
    result = runner.invoke(app, ["diff", str(run_a), str(run_b), "--html", str(out)])
    assert result.exit_code == 0, result.output
    table = result.output.split("Feature drift")[1].splitlines()[1:]
    listed = {line.split()[0]: float(line.split()[1]) for line in table if line.startswith("  ")
              and not line.split()[0].isdigit()}
    doc = json.loads((run_b / "evidence.json").read_text())
    drift = {d["feature"]: d["psi"] for d in doc["since_last_review"]["drift"]}
    # the planted catalogue shift: prices x 1.3 (PSI 0.16, moderate), e-books 30% -> 45% (PSI ≈ 0.097 by formula)
    assert drift["price"] > 0.1 and 0.07 < drift["is_ebook"] < 0.13
    assert drift["genre_match"] < 0.05 and drift["target_age"] < 0.05  # not shifted
    # only features that moved are listed; the stable ones are one line with their count and largest PSI
    assert set(listed) == {f for f, v in drift.items() if v > 0.1} and "price" in listed
    stable = [v for v in drift.values() if v <= 0.1]
    assert f"{len(stable)} of {len(drift)} features stable (PSI < 0.1; the largest of them {figure(max(stable))})" \
        in result.output
    # the retrained model and the new data files are named first, by hash; the spec's own hash changed too
    changed = result.output.split("Inputs that changed")[1].split("\n\n")[0]
    assert "model" in changed and "dataset" in changed and "policy pack" not in changed
    assert result.output.index("Findings that changed") < result.output.index("Inputs that changed") < \
        result.output.index("Metrics that moved")
    assert "entered: sponsored" in result.output  # the paid boost became a main parameter
    html = out.read_text()
    assert "Feature drift" in html and "sponsored" in html and "Inputs that changed" in html
    section = doc["since_last_review"]
    assert section["main_parameters"]["entered"] == ["sponsored"]
    assert "Since last review" in (run_b / "report.html").read_text()
    assert {f["rule"]: f["status"] for f in doc["findings"]}["BASE-1"] in ("PASS", "WARN")


@pytest.mark.slow
def test_diff_bad_input(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    run_a, run_b, second = runs
    nothing = runner.invoke(app, ["diff", str(tmp_path), str(run_b)])
    assert nothing.exit_code == 2 and "no evidence.json here" in nothing.output
    other = tmp_path / "other"
    other.mkdir()
    doc = json.loads((run_a / "evidence.json").read_text())
    (other / "evidence.json").write_text(json.dumps({**doc, "schema": "auditor.evidence/v0"}))
    mixed = runner.invoke(app, ["diff", str(other), str(run_b)])
    assert mixed.exit_code == 2 and "schema 'auditor.evidence/v0' is not one this auditor reads" in mixed.output
    assert len(mixed.output.strip().splitlines()) == 1
    spec = second / "audit.yaml"
    text = spec.read_text()
    spec.write_text(text.replace(f"baseline: {run_a}", f"baseline: {tmp_path}"))
    bad = runner.invoke(app, ["report", str(spec), "--quiet"])
    assert bad.exit_code == 2 and f"{spec}:baseline: no evidence.json here" in bad.output
    spec.write_text(text)


def test_a_metric_is_listed_only_when_it_moved_beyond_both_intervals() -> None:
    from auditor.run.diff import compare

    def doc(mean: float, low: float, high: float) -> EvidenceDocument:
        return document_of(evidence={"ranking_quality": {"metrics": {
            "q.mean": mean, "q.ci95_low": low, "q.ci95_high": high}}})

    wide_new = compare(doc(0.80, 0.78, 0.82), doc(0.84, 0.70, 0.90))  # 0.80 is inside the new, wide interval
    moved = compare(doc(0.80, 0.78, 0.82), doc(0.90, 0.88, 0.92))
    assert wide_new["metrics"] == []
    assert [m["metric"] for m in moved["metrics"]] == ["q.mean"] and moved["metrics"][0]["interval_after"] == \
        [0.88, 0.92]
