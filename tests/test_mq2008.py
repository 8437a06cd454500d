"""Acceptance on real data: the audit's nDCG@10 on MQ2008 Fold1 test equals LightGBM's own metric (±0.002).

Needs ../shared/data (or $AUDITOR_DATA); skipped with the reason when absent. The model is trained here, into a
temporary folder, by the example's own training script.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from tests.conftest import ROOT, shared_data_dir

pytestmark = pytest.mark.realdata
FOLD1 = shared_data_dir() / "MQ2008" / "Fold1"


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (FOLD1 / "test.txt").is_file():
        pytest.skip(f"MQ2008 Fold1 not found in {FOLD1} (set AUDITOR_DATA to the shared data folder)")
    spec = importlib.util.spec_from_file_location("mq2008_train", ROOT / "examples" / "mq2008" / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder = tmp_path_factory.mktemp("mq2008")
    module.train(FOLD1, folder)
    shutil.copy(ROOT / "examples" / "mq2008" / "features.txt", folder / "features.txt")
    text = (ROOT / "examples" / "mq2008" / "audit.yaml").read_text()
    (folder / "audit.yaml").write_text(text.replace("../../../shared/data/MQ2008/Fold1/test.txt",
                                                    str(FOLD1 / "test.txt")))
    return folder


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
