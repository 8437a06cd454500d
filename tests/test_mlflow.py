"""Models from an MLflow registry (`model: {kind: mlflow, uri: ...}`) and `auditor report --mlflow`, against a real
local tracking store (SQLite in a temporary folder): the bookstore's LightGBM model logged with
`mlflow.lightgbm.log_model` and registered as catalogue-ranker version 1, audited with the small bad-input baseline
spec (one cheap evidence item). Skipped without the mlflow extra, except the refusals that say to install it."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
import pytest

from auditor.inputs.spec import ModelSpec
from auditor.models import open_model
from tests.helpers import evidence, report
from tests.inputs import DROP, RANKERS, Case, assert_one_error_line, invoke, write_base_spec

BOOKSTORE_MODEL = Path(__file__).resolve().parents[1] / "examples" / "bookstore" / "model.txt"


@dataclass(frozen=True)
class Store:
    """A tracking store with the logged models: its URI, the artifact folder of catalogue-ranker version 1, the
    run that logged it, and the refused or trusted-only models."""

    uri: str
    folder: Path
    catalogue: Path  # catalogue-ranker version 1's artifact folder (model.lgb, MLmodel, ...)
    run_id: str
    sklearn_model: Any  # the LGBMRanker logged as sklearn-ranker (scikit-learn API: refused without trust)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    pytest.importorskip("mlflow", reason="the mlflow extra is not installed (pip install 'auditor[mlflow]')")
    import mlflow
    import mlflow.lightgbm
    import mlflow.pyfunc

    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder}/mlflow.db"
    before = os.environ.get("MLFLOW_TRACKING_URI")
    mlflow.set_tracking_uri(uri)  # the fluent API logs there (and sets $MLFLOW_TRACKING_URI): undone below
    try:
        client = mlflow.MlflowClient(uri)
        experiment = client.create_experiment("rankers", artifact_location=str(folder / "artifacts"))
        booster = lgb.Booster(model_file=str(BOOKSTORE_MODEL))
        with mlflow.start_run(experiment_id=experiment) as run:  # pip_requirements: no dependency inference (slow)
            mlflow.lightgbm.log_model(booster, name="model", registered_model_name="catalogue-ranker",
                                      pip_requirements=["lightgbm"])

        class FirstFeature(mlflow.pyfunc.PythonModel):  # a python_function-only model: its score is feature 0
            def predict(self, context, model_input, params=None):  # no hints: MLflow would validate inputs by them
                return np.asarray(model_input, dtype=np.float64)[:, 0]

        with mlflow.start_run(experiment_id=experiment):
            mlflow.pyfunc.log_model(name="scorer", python_model=FirstFeature(), pip_requirements=[],
                                    registered_model_name="pyfunc-ranker")
        rng = np.random.default_rng(0)
        X, sizes = rng.random((60, 4)), [10] * 6
        ranker = lgb.LGBMRanker(n_estimators=3, num_leaves=4, min_child_samples=2, verbose=-1)
        ranker.fit(X, rng.integers(0, 3, 60), group=sizes)
        with mlflow.start_run(experiment_id=experiment):
            mlflow.lightgbm.log_model(ranker, name="model", registered_model_name="sklearn-ranker",
                                      pip_requirements=["lightgbm"],
                                      skops_trusted_types=["lightgbm.sklearn.LGBMRanker"])
        catalogue = Path(client.get_model_version_download_uri("catalogue-ranker", "1"))
    finally:
        mlflow.set_tracking_uri(None)  # type: ignore[arg-type]
        if before is not None:
            os.environ["MLFLOW_TRACKING_URI"] = before
    yield Store(uri=uri, folder=folder, catalogue=catalogue, run_id=run.info.run_id, sklearn_model=ranker)


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No MLflow variables from outside, and a private temporary folder (downloads go there: checked empty)."""
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME",
                 "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(name, raising=False)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def _spec(base: Path, uri: str, **model: Any) -> Path:
    return write_base_spec(base, model={"path": DROP, "kind": "mlflow", "uri": uri, **model})


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rows(n_features: int) -> np.ndarray:
    return np.random.default_rng(3).random((50, n_features)) * 4 - 1


def test_registered_version_audits_as_its_file(store: Store, base: Path, no_env: Path) -> None:
    """models:/catalogue-ranker/1 is audited through LightGBM's checker and rehearsal like a file: the evidence names
    the registry version, the run and the artifact's hash; the report shows them; the scores and evidence equal
    those of the native file audited directly; the downloaded folder is gone afterwards."""
    code, html = report(_spec(base, "models:/catalogue-ranker/1", tracking_uri=store.uri))
    assert code in (0, 1) and html is not None
    doc = evidence(html)
    model = doc["inputs"]["model"]
    logged = model["mlflow"]
    assert (logged["registered_model"], logged["version"], logged["run_id"]) == ("catalogue-ranker", "1",
                                                                               store.run_id)
    assert (logged["flavour"], logged["loaded_as"], logged["file"]) == ("lightgbm", "lightgbm", "model.lgb")
    assert model["file"] == "model.lgb" and model["sha256"] == _sha256(store.catalogue / "model.lgb")
    assert {a["file"]: a["sha256"] for a in logged["artifacts"]}["MLmodel"] == _sha256(store.catalogue / "MLmodel")
    assert model["version"] == "1" and doc["review"]["system"] == "catalogue-ranker"  # filled from the registry
    text = html.read_text(encoding="utf-8")
    assert "registered model <code>catalogue-ranker</code> version 1" in text
    assert model["sha256"] in text and "Model artifact (MLflow)" in text
    assert not list(no_env.glob("auditor-mlflow-*"))

    direct_code, direct = report(write_base_spec(base, name="direct.yaml"))
    assert direct_code == code and direct is not None
    assert evidence(direct)["evidence"] == doc["evidence"]
    ranker, logged_model = open_model(ModelSpec(kind="mlflow", uri="models:/catalogue-ranker/1",
                                                tracking_uri=store.uri), base_dir=base)
    assert logged_model is not None
    native, _ = open_model(ModelSpec(path=BOOKSTORE_MODEL), base_dir=base)
    rows = _rows(native.n_features or 12)
    assert np.array_equal(ranker.predict(rows), native.predict(rows))
    logged_model.close()
    assert not list(no_env.glob("auditor-mlflow-*"))


def test_spec_version_wins_and_run_and_folder_uris(store: Store, base: Path, no_env: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A version the spec states is kept (the registry's is recorded beside it); runs:/<run>/model, the artifact
    folder itself and $MLFLOW_TRACKING_URI give the same model file."""
    ref = ModelSpec(kind="mlflow", uri="models:/catalogue-ranker/latest", tracking_uri=store.uri, version="2026.11")
    _, logged = open_model(ref, base_dir=base)
    assert logged is not None and logged.version == "1" and logged.filled(ref).version == "2026.11"
    assert logged.filled(ref).name == "catalogue-ranker"
    expected = _sha256(store.catalogue / "model.lgb")
    by_run = open_model(ModelSpec(uri=f"runs:/{store.run_id}/model", tracking_uri=store.uri), base_dir=base)[1]
    assert by_run is not None and by_run.sha256("model.lgb") == expected and by_run.name is None
    by_folder = open_model(ModelSpec(uri=str(store.catalogue)), base_dir=base)[1]
    assert by_folder is not None and by_folder.sha256("model.lgb") == expected and by_folder.temporary is None
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.uri)
    by_env = open_model(ModelSpec(uri="models:/catalogue-ranker/1"), base_dir=base)[1]
    assert by_env is not None and by_env.tracking_uri == store.uri


@pytest.mark.parametrize(("uri", "needles"), [
    ("models:/catalogue-ranker/7", ("has no version 7", "name one of its versions: 1")),
    ("models:/catalogue-ranker@champion", ("has no alias 'champion'",)),
    ("models:/no-such-ranker/1", ("no registered model 'no-such-ranker'", "catalogue-ranker")),
    ("runs:/0123456789abcdef/model", ("no run '0123456789abcdef'",)),
])
def test_unknown_model_or_version_is_bad_input(store: Store, base: Path, no_env: Path, uri: str,
                                               needles: tuple[str, ...]) -> None:
    spec = _spec(base, uri, tracking_uri=store.uri)
    assert_one_error_line(invoke("validate", str(spec), "--quiet"), Case(spec, spec, "model.uri", needles))
    assert not list(no_env.glob("auditor-mlflow-*"))


def test_tracking_store_must_be_named_and_exist(store: Store, base: Path, no_env: Path) -> None:
    spec = _spec(base, "models:/catalogue-ranker/1")
    assert_one_error_line(invoke("validate", str(spec), "--quiet"),
                          Case(spec, spec, "model.uri", ("needs the MLflow tracking server", "MLFLOW_TRACKING_URI")))
    spec = _spec(base, "models:/catalogue-ranker/1", tracking_uri="sqlite:///missing.db")
    assert_one_error_line(invoke("validate", str(spec), "--quiet"),
                          Case(spec, spec, "model.tracking_uri", ("no MLflow store at", "missing.db")))
    assert not (base / "missing.db").exists()  # MLflow would have made an empty store


def test_pyfunc_only_model_needs_trust(store: Store, base: Path, no_env: Path) -> None:
    """A model with only the python_function flavour runs its own code: refused without `trust`, then a callable."""
    spec = _spec(base, "models:/pyfunc-ranker/1", tracking_uri=store.uri)
    assert_one_error_line(invoke("validate", str(spec), "--quiet"),
                          Case(spec, spec, "model.uri", ("python_function", "model.trust: true")))
    ranker, logged = open_model(ModelSpec(uri="models:/pyfunc-ranker/1", tracking_uri=store.uri, trust=True),
                                base_dir=base)
    assert ranker.kind == "callable" and logged is not None and logged.flavour == "python_function"
    rows = _rows(4)
    assert np.array_equal(ranker.predict(rows), rows[:, 0])


def test_lightgbm_scikit_learn_api_is_not_unpickled(store: Store, base: Path, no_env: Path) -> None:
    """LightGBM's scikit-learn API is logged as a skops or pickle file, not LightGBM's model file: refused, with the
    fix (log the booster); with `trust` its python_function flavour scores it."""
    spec = _spec(base, "models:/sklearn-ranker/1", tracking_uri=store.uri)
    assert_one_error_line(invoke("validate", str(spec), "--quiet"),
                          Case(spec, spec, "model.uri", ("LGBMRanker", "does not unpickle", "model.booster_")))
    ranker, logged = open_model(ModelSpec(uri="models:/sklearn-ranker/1", tracking_uri=store.uri, trust=True),
                                base_dir=base)
    assert ranker.kind == "callable" and logged is not None and logged.flavour == "python_function"
    rows = _rows(4)
    assert np.allclose(ranker.predict(rows), store.sklearn_model.predict(rows))


def test_xgboost_flavour_loads_as_its_file(store: Store, base: Path, no_env: Path) -> None:
    xgb = pytest.importorskip("xgboost", reason="the xgboost extra is not installed")
    import mlflow
    import mlflow.xgboost

    booster = xgb.Booster(model_file=str(RANKERS / "xgboost.json"))
    client = mlflow.MlflowClient(store.uri)
    experiment = client.get_experiment_by_name("rankers").experiment_id
    mlflow.set_tracking_uri(store.uri)
    try:
        with mlflow.start_run(experiment_id=experiment):
            mlflow.xgboost.log_model(booster, name="model", registered_model_name="xgb-ranker",
                                     pip_requirements=["xgboost"])
    finally:
        mlflow.set_tracking_uri(None)  # type: ignore[arg-type]
        os.environ.pop("MLFLOW_TRACKING_URI", None)
    ranker, logged = open_model(ModelSpec(uri="models:/xgb-ranker/1", tracking_uri=store.uri), base_dir=base)
    native, _ = open_model(ModelSpec(path=RANKERS / "xgboost.json", kind="xgboost"), base_dir=base)
    assert logged is not None and (logged.flavour, logged.loaded_as, logged.file) == ("xgboost", "xgboost",
                                                                                     "model.ubj")
    rows = _rows(native.n_features or 11)
    assert np.array_equal(ranker.predict(rows), native.predict(rows))


def test_report_logs_to_mlflow(store: Store, base: Path, no_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--mlflow`: a new run (in $MLFLOW_EXPERIMENT_NAME) gets the opinion and each rule's status as tags, the judged
    numbers as metrics (MLflow's spelling: ndcg@10 → ndcg_at_10) and the run folder as artifacts; an active run
    is logged to instead."""
    import mlflow

    client = mlflow.MlflowClient(store.uri)  # (an experiment made by MLflow would keep artifacts in ./mlruns)
    client.create_experiment("audits", artifact_location=str(base / "audit-artifacts"))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.uri)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "audits")
    spec = write_base_spec(base)
    code, html = report(spec, "--mlflow")
    assert code in (0, 1) and html is not None
    doc = evidence(html)
    experiment = client.get_experiment_by_name("audits")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    logged = runs[0].data
    assert logged.tags["auditor.opinion"] == doc["opinion"]
    assert logged.tags["auditor.run_folder"] == html.parent.name
    for finding in doc["findings"]:
        assert logged.tags[f"rule.{finding['pack']}.{finding['rule']}"] == finding["status"]
        if finding["value"] is not None:
            assert logged.metrics[f"rule.{finding['pack']}.{finding['rule']}"] == pytest.approx(finding["value"])
    quality = doc["evidence"]["ranking_quality"]["metrics"]
    assert logged.metrics["ranking_quality.ndcg_at_10.mean"] == pytest.approx(quality["ranking_quality.ndcg@10.mean"])
    assert logged.metrics["ranking_quality.ndcg_at_10.ci95_low"] == pytest.approx(
        quality["ranking_quality.ndcg@10.ci95_low"])
    artifacts = {a.path for a in client.list_artifacts(runs[0].info.run_id, f"auditor/{html.parent.name}")}
    assert f"auditor/{html.parent.name}/evidence.json" in artifacts

    mlflow.set_tracking_uri(store.uri)
    try:
        with mlflow.start_run(experiment_id=experiment.experiment_id) as active:
            code, html = report(spec, "--mlflow")
    finally:
        mlflow.set_tracking_uri(None)  # type: ignore[arg-type]
    assert html is not None
    assert client.get_run(active.info.run_id).data.tags["auditor.run_folder"] == html.parent.name
    assert len(client.search_runs([experiment.experiment_id])) == 2


def test_mlflow_metric_names() -> None:
    from auditor.commands.mlflow_log import metric_name

    assert metric_name("ranking_quality.ndcg@10.mean") == "ranking_quality.ndcg_at_10.mean"
    assert metric_name("rule.eu-p2b-art5.P2B-1") == "rule.eu-p2b-art5.P2B-1"
    assert metric_name("a//b/./c:d\u202e") == "a/_/b/_/c_d_"  # MLflow refuses names a path would normalise
    assert len(metric_name("x" * 400)) == 250


def test_without_the_extra_the_fix_is_to_install_it(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No mlflow installed: kind `mlflow` and `--mlflow` are bad input (exit 2) that names the extra."""
    monkeypatch.setitem(sys.modules, "mlflow", None)  # `import mlflow` raises ImportError
    spec = _spec(base, "models:/catalogue-ranker/1", tracking_uri="sqlite:///mlflow.db")
    assert_one_error_line(invoke("validate", str(spec), "--quiet"),
                          Case(spec, spec, "model.kind", ("mlflow package", "auditor[mlflow]")))
    plain = write_base_spec(base, name="plain.yaml")
    assert_one_error_line(invoke("report", str(plain), "--quiet", "--mlflow"),
                          Case(plain, None, None, ("--mlflow", "auditor[mlflow]")))
    assert not (base / "reports").exists()  # refused before the audit ran


def test_spec_model_kind_mlflow_is_checked() -> None:
    """`uri` means kind mlflow; `path`/`entry` beside it, or `uri`/`tracking_uri` on another kind, are refused."""
    from pydantic import ValidationError

    assert ModelSpec(uri="models:/x/1").kind == "mlflow"
    with pytest.raises(ValidationError, match="remove `path`"):
        ModelSpec(kind="mlflow", uri="models:/x/1", path=BOOKSTORE_MODEL)
    with pytest.raises(ValidationError, match="needs `uri"):
        ModelSpec(kind="mlflow")
    with pytest.raises(ValidationError, match="`tracking_uri` is for kind `mlflow`"):
        ModelSpec(path=BOOKSTORE_MODEL, tracking_uri="sqlite:///m.db")


def test_the_audit_run_and_the_model_version_name_each_other(store: Store, base: Path, no_env: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 58 item 7: `--mlflow` on an audit of models:/catalogue-ranker/1 tags the audit run with the model's URI,
    version and source run, and the registered version with its audit run, opinion and folder."""
    import mlflow

    client = mlflow.MlflowClient(store.uri)
    client.create_experiment("linked", artifact_location=str(base / "linked-artifacts"))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.uri)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "linked")
    code, html = report(_spec(base, "models:/catalogue-ranker/1", tracking_uri=store.uri), "--mlflow")
    assert code in (0, 1) and html is not None
    experiment = client.get_experiment_by_name("linked")
    (audit_run,) = client.search_runs([experiment.experiment_id])
    tags = audit_run.data.tags
    assert (tags["auditor.model.uri"], tags["auditor.model.registered_model"], tags["auditor.model.version"],
            tags["auditor.model.run_id"]) == ("models:/catalogue-ranker/1", "catalogue-ranker", "1", store.run_id)
    version = client.get_model_version("catalogue-ranker", "1").tags
    assert version["auditor.audit_run"] == audit_run.info.run_id
    assert version["auditor.audit_folder"] == html.parent.name and version["auditor.audit_opinion"]


def test_an_api_result_logs_itself_to_mlflow(store: Store, base: Path, no_env: Path, frame: Any, booster: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 58 item 7: `AuditResult.log_mlflow()` logs as `--mlflow` does (opinion and rule statuses as tags)."""
    import mlflow

    from auditor import Audit

    client = mlflow.MlflowClient(store.uri)
    client.create_experiment("notebook", artifact_location=str(base / "notebook-artifacts"))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.uri)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "notebook")
    result = Audit(model=booster, data=frame, doc_id="doc_id", evidence=["ranking_quality"],
                   policies=["starter"]).run(jobs=1)
    run_id = result.log_mlflow()
    logged = client.get_run(run_id).data
    assert logged.tags["auditor.opinion"] == result.opinion
    assert {key for key in logged.tags if key.startswith("rule.starter.")}


def test_an_api_audit_of_a_registered_model_saves_signed(store: Store, base: Path, no_env: Path, frame: Any,
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 58 item 7: Audit("models:/…") audits the registered version, and `save()` later still finds the
    downloaded model to archive and sign (it stays until the result is collected)."""
    from auditor import Audit
    from tests.conftest import PASS, _keygen

    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.uri)
    monkeypatch.setenv("TEST_KEY_PASS", PASS)
    keys = _keygen(tmp_path / "keys")
    result = Audit("models:/catalogue-ranker/1", frame, doc_id="doc_id", evidence=["ranking_quality"]).run(jobs=1)
    assert result.document.inputs["model"]["mlflow"]["version"] == "1"
    run = result.save(tmp_path / "out", signing={"key": str(keys / "signer.p12"), "passphrase_env": "TEST_KEY_PASS",
                                                 "bundle_key": str(keys / "bundle-ed25519.pem")})
    assert (run / "bundle.dsse.json").is_file()
    del result
    import gc

    gc.collect()
    assert not list(no_env.glob("auditor-mlflow-*"))  # the download is removed with the result
