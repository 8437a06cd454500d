"""XGBoost, CatBoost and ONNX rankers: the array form against each library (predictions to 1e-9, TreeSHAP against
its own to 1e-6, missing values, split conventions, oblivious and non-symmetric trees), ONNX scoring, kind
inference, and the standard evidence end to end on the example rankers (examples/rankers, trained by train.py)."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.core.errors import InputError
from auditor.models import kind_from_file
from auditor.models.catboost import load_catboost
from auditor.models.onnx import load_onnx
from auditor.models.xgboost import load_xgboost
from auditor.scoring.trees import probe_rows
from tests.conftest import BOOKSTORE, LIGHT, ROOT

RANKERS = ROOT / "examples" / "rankers"
FEATURES = ["genre_match", "price", "price_in_range", "n_reviews", "avg_review", "is_ebook", "publishing_year",
            "target_age", "sales_rank_log", "author_popularity", "sponsored"]
runner = CliRunner()


@pytest.fixture(scope="module")
def rows() -> np.ndarray:
    """The bookstore test documents, a few NaN cells, and probe rows at every threshold of the XGBoost model."""
    X = pd.read_csv(BOOKSTORE / "test.csv")[FEATURES].to_numpy(np.float64)
    holes = X[:40].copy()
    holes[np.arange(40), np.arange(40) % 11] = np.nan
    return np.vstack([X, holes])


@pytest.fixture(scope="module")
def synthetic() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ranking data with missing values (so trees learn default directions) and values on a grid (so rows fall
    exactly on split thresholds)."""
    rng = np.random.default_rng(3)
    X = np.round(rng.random((600, 5)) * 8) / 8
    X[rng.random(X.shape) < 0.15] = np.nan
    y = np.clip(np.nan_to_num(2 * X[:, 0] + X[:, 1] - X[:, 2], nan=0.5) * 2 + rng.random(600), 0, 4).round()
    return X, y, np.repeat(np.arange(60), 10)


def _probes(ranker, X: np.ndarray) -> np.ndarray:
    return np.vstack([X, probe_rows(ranker.trees, np.random.default_rng(1), 1500)])


# --- XGBoost ------------------------------------------------------------------------------------------------------

def _xgb_scores(path: Path, X: np.ndarray, contribs: bool = False) -> np.ndarray:
    import xgboost as xgb

    booster = xgb.Booster()
    booster.load_model(str(path))
    matrix = xgb.DMatrix(X, feature_names=booster.feature_names)
    return booster.predict(matrix, pred_contribs=contribs, output_margin=not contribs).astype(np.float64)


def test_xgboost_array_form_is_the_model(rows: np.ndarray, tmp_path: Path) -> None:
    ranker = load_xgboost(RANKERS / "xgboost.json")
    assert ranker.trees_problem == "" and ranker.describe()["n_trees"] == 80
    X = _probes(ranker, rows)
    theirs = _xgb_scores(RANKERS / "xgboost.json", X)
    np.testing.assert_allclose(ranker.predict(X), theirs, rtol=0, atol=1e-9)
    np.testing.assert_allclose(ranker.trees.predict(X), theirs, rtol=0, atol=1e-9)  # float32 sums: bit for bit
    ours = ranker.contributions(X)
    np.testing.assert_allclose(ours, _xgb_scores(RANKERS / "xgboost.json", X, contribs=True), rtol=0, atol=1e-6)
    exact = ranker.reference_scores(X, ranker.predict(X))
    np.testing.assert_allclose(ours.sum(axis=1), exact, rtol=0, atol=1e-9)
    assert 0 < np.abs(exact - theirs).max() < 1e-5  # XGBoost's float32 rounding, reported, not hidden
    import xgboost as xgb

    booster = xgb.Booster()
    booster.load_model(str(RANKERS / "xgboost.json"))
    booster.save_model(str(tmp_path / "model.ubj"))
    from_ubj = load_xgboost(tmp_path / "model.ubj")
    np.testing.assert_array_equal(from_ubj.predict(X), ranker.predict(X))
    again = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(again.predict(X), ranker.predict(X))


@pytest.mark.parametrize("objective", ["rank:pairwise", "binary:logistic", "reg:squarederror"])
def test_xgboost_missing_values_thresholds_and_base_margin(synthetic, tmp_path: Path, objective: str) -> None:
    import xgboost as xgb

    X, y, qid = synthetic
    label = (y > 2).astype(float) if objective.startswith("binary") else y
    data = xgb.DMatrix(X, label, qid=qid if objective.startswith("rank") else None)
    booster = xgb.train({"objective": objective, "max_depth": 4, "eta": 0.3, "nthread": 1, "seed": 0}, data, 15)
    booster.save_model(str(tmp_path / "m.json"))
    ranker = load_xgboost(tmp_path / "m.json")
    assert ranker.trees_problem == ""
    assert ranker.trees.default_left[ranker.trees.feature >= 0].any()  # some NaN goes left, some right
    probes = _probes(ranker, X)
    np.testing.assert_allclose(ranker.trees.predict(probes), _xgb_scores(tmp_path / "m.json", probes), rtol=0,
                               atol=1e-9)
    np.testing.assert_allclose(ranker.contributions(probes), _xgb_scores(tmp_path / "m.json", probes, True),
                               rtol=0, atol=1e-6)


def test_xgboost_interventional_treeshap_adds_up(rows: np.ndarray) -> None:
    from auditor.explain.base import QueryView
    from auditor.explain.treeshap import TreeShap
    from auditor.models.base import CountingRanker

    for model in (load_xgboost(RANKERS / "xgboost.json"), load_catboost(RANKERS / "catboost.cbm")):
        ranker = CountingRanker(model)
        view = QueryView(X=rows[:12], scores=ranker.predict(rows[:12]), query_id="q", background=rows[100:400])
        explainer = TreeShap(mode="interventional", background_size=300)
        phi = explainer.attribute(ranker, view, np.arange(12), None, np.random.default_rng(0)).values
        exact_trees = replace(model.trees, float32_sum=False)  # XGBoost's sums without its float32 rounding
        base = np.mean(exact_trees.predict(rows[100:400]))
        exact = model.reference_scores(rows[:12], view.scores) if hasattr(model, "reference_scores") else view.scores
        np.testing.assert_allclose(phi.sum(axis=1) + base, exact, rtol=0, atol=1e-6)  # as for LightGBM


# --- CatBoost -----------------------------------------------------------------------------------------------------

def _cb_model(path: Path):
    import catboost

    model = catboost.CatBoost()
    model.load_model(str(path), format="json" if path.suffix == ".json" else "cbm")
    return model


def _cb_check(ranker, path: Path, X: np.ndarray) -> None:
    import catboost

    model = _cb_model(path)
    probes = _probes(ranker, X)
    theirs = model.predict(probes, prediction_type="RawFormulaVal")
    np.testing.assert_allclose(ranker.predict(probes), theirs, rtol=0, atol=1e-9)
    np.testing.assert_allclose(ranker.trees.predict(probes), theirs, rtol=0, atol=1e-9)
    shap = model.get_feature_importance(catboost.Pool(probes), type="ShapValues", thread_count=1)
    np.testing.assert_allclose(ranker.contributions(probes), shap, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ranker.contributions(probes).sum(axis=1), theirs, rtol=0, atol=1e-9)


def test_catboost_array_form_is_the_model(rows: np.ndarray, tmp_path: Path) -> None:
    ranker = load_catboost(RANKERS / "catboost.cbm")
    assert ranker.trees_problem == "" and ranker.feature_names == FEATURES
    _cb_check(ranker, RANKERS / "catboost.cbm", rows)
    _cb_model(RANKERS / "catboost.cbm").save_model(str(tmp_path / "m.json"), format="json")
    from_json = load_catboost(tmp_path / "m.json")  # the JSON export scores as the .cbm to the last bits
    np.testing.assert_allclose(from_json.predict(rows), ranker.predict(rows), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("grow", "nan_mode"), [("SymmetricTree", "Min"), ("SymmetricTree", "Max"),
                                                ("Depthwise", "Min"), ("Lossguide", "Max")])
def test_catboost_missing_values_and_tree_shapes(synthetic, tmp_path: Path, grow: str, nan_mode: str) -> None:
    import catboost

    X, y, qid = synthetic
    model = catboost.CatBoost({"loss_function": "YetiRank", "iterations": 12, "depth": 4, "grow_policy": grow,
                               "nan_mode": nan_mode, "random_seed": 0, "thread_count": 1, "verbose": False,
                               "allow_writing_files": False})
    model.fit(catboost.Pool(X, y, group_id=qid))
    model.save_model(str(tmp_path / "m.cbm"))
    ranker = load_catboost(tmp_path / "m.cbm")
    assert ranker.trees_problem == "" and ranker.oblivious == (grow == "SymmetricTree")
    _cb_check(ranker, tmp_path / "m.cbm", X)


# --- ONNX ---------------------------------------------------------------------------------------------------------

def test_onnx_scores_in_batches_as_onnxruntime_does(rows: np.ndarray) -> None:
    import onnxruntime as ort

    ranker = load_onnx(RANKERS / "mlp.onnx")
    with pytest.raises(InputError, match="returned nan for 40 of"):  # the MLP cannot score missing values
        ranker.predict(rows)
    rows = rows[~np.isnan(rows).any(axis=1)]
    assert ranker.n_features == 11 and ranker.contributions(rows) is None
    direct = ort.InferenceSession(str(RANKERS / "mlp.onnx"), providers=["CPUExecutionProvider"])
    theirs = direct.run(None, {"features": rows.astype(np.float32)})[0].astype(np.float64)
    scores = ranker.predict(rows)
    np.testing.assert_array_equal(scores, theirs)
    # a row's score does not depend on the rows that share its batch, nor on the session's threads
    one_by_one = np.concatenate([ranker.predict(rows[i:i + 1]) for i in range(0, 60)])
    np.testing.assert_array_equal(one_by_one, scores[:60])
    ranker.BATCH = 7
    np.testing.assert_array_equal(ranker.predict(rows), scores)
    again = pickle.loads(pickle.dumps(ranker))  # a worker process makes its own session, with one thread
    from auditor.core.threads import threads_here

    with threads_here(1):
        np.testing.assert_array_equal(again.predict(rows), scores)


# --- kinds, init ----------------------------------------------------------------------------------------------------

def test_kind_inference_and_a_json_read_as_the_wrong_kind(tmp_path: Path) -> None:
    assert kind_from_file(RANKERS / "xgboost.json") == "xgboost"
    assert kind_from_file(BOOKSTORE / "model.txt") == "lightgbm"
    assert [kind_from_file(Path(f"m{s}")) for s in (".ubj", ".cbm", ".onnx", ".bst")] == \
        ["xgboost", "catboost", "onnx", "xgboost"]
    from auditor.models.lightgbm import load_lightgbm

    with pytest.raises(InputError, match=r"this is an XGBoost model.*model.kind: xgboost"):
        load_lightgbm(RANKERS / "xgboost.json")


@pytest.mark.parametrize(("model", "line"), [("xgboost.json", "  kind: xgboost"),
                                             ("catboost.cbm", "  # kind: catboost"), ("mlp.onnx", "  # kind: onnx")])
def test_init_recognises_the_model(tmp_path: Path, model: str, line: str) -> None:
    spec = tmp_path / "audit.yaml"
    result = runner.invoke(app, ["init", "--model", str(RANKERS / model), "--dataset", str(BOOKSTORE / "test.csv"),
                                 "--out", str(spec)])
    assert result.exit_code == 0, result.output
    assert line in spec.read_text()
    validated = runner.invoke(app, ["validate", str(spec)])
    assert validated.exit_code == 0 and "1627 documents" in validated.output, validated.output


@pytest.mark.slow
def test_train_script_writes_loadable_models(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(RANKERS / "train.py"), "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert load_xgboost(tmp_path / "xgboost.json").trees_problem == ""
    assert load_catboost(tmp_path / "catboost.cbm").trees_problem == ""
    assert load_onnx(tmp_path / "mlp.onnx").n_features == 11


# --- the standard evidence, end to end --------------------------------------------------------------------------

def _spec(folder: Path, kind: str) -> Path:
    """examples/rankers/<kind>.yaml with its data copied beside it and the suite's lighter evidence options."""
    for name in ("test.csv", "train.csv"):
        shutil.copy(BOOKSTORE / name, folder / name)
    spec = yaml.safe_load((RANKERS / f"{kind}.yaml").read_text())
    shutil.copy(RANKERS / spec["model"]["path"], folder / spec["model"]["path"])
    spec["dataset"]["path"], spec["background"]["path"] = "test.csv", "train.csv"
    spec["evidence"] = [next((LIGHT[name] for name in item if name in LIGHT), item) for item in spec["evidence"]]
    spec["output"] = {"dir": "reports", "formats": ["html"]}
    path = folder / "audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["xgboost", "catboost", "onnx"])
def test_standard_evidence_end_to_end(tmp_path: Path, kind: str) -> None:
    spec = _spec(tmp_path, kind)
    result = runner.invoke(app, ["report", str(spec), "--quiet", "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    doc = json.loads((Path(result.stdout.strip()).parent / "evidence.json").read_text())
    status = {name: item["status"] for name, item in doc["evidence"].items()}
    agnostic = ["ranking_quality", "local_explanations", "pairwise", "confidence", "surrogate",
                "disclosure_consistency", "parameter_influence"]
    assert all(status[name] == "ok" for name in agnostic), status
    metrics = {name: item["metrics"] for name, item in doc["evidence"].items()}
    local = metrics["local_explanations"]
    if kind == "onnx":
        assert status["global_importance"] == status["decision_path_accuracy"] == "skipped"
        assert "no exact TreeSHAP" in doc["evidence"]["global_importance"]["error"]
        assert "no decision paths" in doc["evidence"]["decision_path_accuracy"]["error"]
        assert metrics["disclosure_consistency"]["disclosure.measured_on_surrogate"] == 1.0
        assert "local.treeshap1.validity.mean" not in local and "local.validity_search.validity.mean" in local
    else:
        assert status["global_importance"] == status["decision_path_accuracy"] == "ok"
        assert metrics["global_importance"]["global_importance.additivity.max_abs_error"] <= 1e-6
        assert metrics["decision_path_accuracy"]["decision_path.additivity.max_abs_error"] <= 1e-6
        assert metrics["decision_path_accuracy"]["decision_path.treeshap.value_change.auc.mean"] > 0.8
        assert metrics["disclosure_consistency"]["disclosure.measured_on_surrogate"] == 0.0
        assert "local.treeshap1.validity.mean" in local
    assert metrics["surrogate"]["surrogate.fidelity.kendall.mean"] > 0.7
    assert doc["inputs"]["model"]["describe"]["kind"] == kind
