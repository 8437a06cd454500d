"""Acceptance on real data: the audit's nDCG@10 on MQ2008 Fold1 test equals LightGBM's own metric (±0.002).

Needs ../shared/data (or $AUDITOR_DATA); skipped with the reason when absent. The model is trained here, into a
temporary folder, by the example's own training script.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app

pytestmark = [pytest.mark.realdata, pytest.mark.slow]  # slow: trains on MQ2008 and audits it


@pytest.fixture(scope="module")
def trained(mq2008_trained: Path) -> Path:
    return mq2008_trained


def test_ndcg_matches_lightgbm_on_mq2008(trained: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(trained / "audit.yaml"), "--quiet", "--out",
                                      str(trained / "out")])
    assert result.exit_code in (0, 1), result.output
    doc = json.loads((Path(result.stdout.strip()).parent / "evidence.json").read_text())
    ours = doc["evidence"]["ranking_quality"]["metrics"]
    lightgbm = json.loads((trained / "lightgbm_metrics.json").read_text())
    for k in (1, 3, 5, 10):
        assert ours[f"ranking_quality.ndcg@{k}.mean"] == pytest.approx(lightgbm[f"ndcg@{k}"], abs=0.002)
    assert doc["inputs"]["dataset"]["n_queries"] == 156
    assert doc["inputs"]["dataset"]["feature_names"][20] == "bm25_body"
    assert doc["evidence"]["global_importance"]["metrics"]["global_importance.additivity.max_abs_error"] < 1e-9
