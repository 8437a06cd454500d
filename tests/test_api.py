"""The Python API (`from auditor import Audit`): an audit of a Booster and a DataFrame held in memory is a spec, so
it gives what the CLI gives on the files `save` writes; results as DataFrames; the summary inline; errors raised."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from auditor import Audit
from auditor.cli import app
from auditor.core.errors import InputError
from tests.conftest import PASS, _keygen, verify

LIGHT = ["ranking_quality", "global_importance"]


def _same_evidence(a: dict, b: dict) -> None:
    """Equal but for the wall-clock run block and the register's view (the API runs without a register)."""
    for key in sorted(set(a) | set(b)):
        if key not in ("run", "review", "since_last_review"):
            assert a.get(key) == b.get(key), key


@pytest.fixture(scope="module")
def result(frame: pd.DataFrame, booster: lgb.Booster) -> object:
    audit = Audit(model=booster, data=frame, doc_id="doc_id", evidence=LIGHT, policies=["eu-p2b-art5"],
                  title="Notebook audit <b>", organisation="Example Books GmbH", seed=11)
    return audit.run(jobs=1)


def test_an_audit_of_a_booster_and_a_frame_gives_what_the_cli_gives_on_its_saved_inputs(result, tmp_path):
    run = result.save(tmp_path / "out")
    inputs = tmp_path / "out" / "inputs"
    assert sorted(p.name for p in inputs.iterdir()) == ["audit.yaml", "data.parquet", "model.txt"]
    assert (inputs / "audit.yaml").read_text() == result.audit.to_spec()
    saved = json.loads((run / "evidence.json").read_text())
    manifest = saved["inputs"]
    assert manifest["model"]["file"] == "model.txt" and manifest["dataset"]["file"] == "data.parquet"
    import hashlib

    assert manifest["dataset"]["sha256"] == hashlib.sha256((inputs / "data.parquet").read_bytes()).hexdigest()
    cli = CliRunner().invoke(app, ["report", str(inputs / "audit.yaml"), "--out", str(tmp_path / "cli"), "--quiet",
                                   "--fail-on", "never", "--register", "off"])
    assert cli.exit_code == 0, cli.output
    _same_evidence(saved, json.loads((Path(cli.stdout.strip()).parent / "evidence.json").read_text()))
    assert saved["seed"] == 11 and saved["opinion"] == result.opinion


def test_results_are_frames_with_intervals(result):
    metrics = result.metrics
    assert list(metrics.columns) == ["metric", "value", "ci95_low", "ci95_high", "evidence"]
    assert not metrics["metric"].str.endswith((".ci95_low", ".ci95_high")).any()  # read into their own columns
    ndcg = metrics.set_index("metric").loc["ranking_quality.ndcg@10.mean"]
    assert ndcg["ci95_low"] <= ndcg["value"] <= ndcg["ci95_high"] and ndcg["evidence"] == "ranking_quality"
    findings = result.findings
    assert {"rule", "pack", "status", "severity", "metric", "value", "message"} <= set(findings.columns)
    assert set(findings["status"]) <= {"PASS", "FAIL", "WARN", "ERROR", "SKIPPED", "WAIVED", "UNMEASURED"}
    # the pack asks for evidence this light audit did not request: not measured, not failed (issue 56)
    assert (findings["status"] == "UNMEASURED").any() and not (findings["status"] == "FAIL").any()
    assert result.opinion == "positive with comments"
    assert result.evidence["ranking_quality"].metrics["ranking_quality.ndcg@10.mean"] == ndcg["value"]
    assert result.opinion in repr(result)


def test_the_summary_shows_inline_in_a_sandboxed_frame(result):
    shown = result._repr_html_()
    frame = re.search(r'<iframe sandbox="" [^>]*srcdoc="([^"]*)"', shown)
    assert frame, shown[:300]
    inner = html.unescape(frame.group(1))
    assert 'id="summary"' in inner and "Executive summary" in inner and "<style>" in inner
    assert "Notebook audit &lt;b&gt;" in result.report_html()  # the title escaped in the report
    assert "<script" not in inner.lower()
    assert 'id="findings"' not in inner  # the summary page only, not the whole report
    assert 'href="#' not in inner  # issue 58: no pointer to a section the frame does not hold


def test_bad_arguments_raise_input_errors_naming_the_argument(frame, booster):
    with pytest.raises(InputError) as caught:
        Audit(model=booster, data=frame, evidence=[{"local_explanations": {"k": 0}}])
    assert caught.value.file is None and caught.value.where.startswith("Audit(")
    assert "local_explanations.k" in str(caught.value) and "auditor-api-" not in str(caught.value)
    with pytest.raises(InputError, match=r"Audit\(model=...\): cannot audit the object object.*LightGBM Booster"):
        Audit(model=object(), data=frame)
    with pytest.raises(InputError, match=r"Audit\(model=...\).*define it in a module"):
        Audit(model=lambda X: X[:, 0], data=frame, trust=True)  # the spec could not name it
    with pytest.raises(InputError, match=r"Audit\(data=...\).*DataFrame"):
        Audit(model=booster, data=[[1, 2]])
    with pytest.raises(InputError, match="no built-in policy pack"):  # found when it runs, named the same way
        Audit(model=booster, data=frame, policies=["eu-p2b-nope"]).run()
    with pytest.raises(InputError, match="search_id") as caught:  # the data as the reader sees it
        Audit(model=booster, data=frame, query="search_id").run()
    assert caught.value.where == "Audit(data=...)" and "`query=`" in str(caught.value)  # the argument, the keyword


def test_save_signs_and_renders_what_it_is_asked_for(result, tmp_path, monkeypatch):
    keys = _keygen(tmp_path / "keys")
    monkeypatch.setenv("TEST_KEY_PASS", PASS)
    run = result.save(tmp_path / "out", formats=["html"], signing={
        "key": str(keys / "signer.p12"), "passphrase_env": "TEST_KEY_PASS",
        "bundle_key": str(keys / "bundle-ed25519.pem")})
    assert (run / "report.html").is_file() and (run / "bundle.dsse.json").is_file()
    code, output = verify({"keys": keys}, run)
    assert code == 0, output


@pytest.mark.slow
def test_the_bookstore_through_the_api_is_the_bookstore_through_the_cli(signed, monkeypatch):
    """The session's signed bookstore run (the bundled example with lighter explainer settings, through the CLI)
    and the API on the same spec: the same evidence.json."""
    monkeypatch.setenv("TEST_KEY_PASS", PASS)
    api = Audit.from_spec(signed["spec"]).run()
    _same_evidence(api.document.to_json(), json.loads((signed["run"] / "evidence.json").read_text()))
    assert {"local_explanations", "confidence", "surrogate", "exposure"} <= set(api.evidence)


def test_a_ranker_fitted_with_the_sklearn_api_on_wide_data_with_gaps(tmp_path):
    """Data unlike the bookstore: 60 features with hostile names, negative values, missing values, single-document
    queries and string query ids; an LGBMRanker rather than a Booster."""
    import numpy as np

    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 25, 40)
    sizes[:3] = 1
    X = rng.normal(size=(int(sizes.sum()), 60)) - 0.5
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.clip((np.nan_to_num(X[:, 0]) * 2 + rng.normal(size=len(X))).round(), 0, 4).astype(int)
    frame = pd.DataFrame(X, columns=[f"f {i} <ü>" for i in range(60)])
    frame.insert(0, "query", np.repeat([f"q-{i}" for i in range(40)], sizes))
    frame.insert(1, "grade", y)
    ranker = lgb.LGBMRanker(n_estimators=30, num_leaves=7, min_child_samples=5, verbosity=-1)
    ranker.fit(frame.iloc[:, 2:], y, group=sizes)
    with pytest.raises(InputError) as caught:
        Audit(model=ranker, data=frame, query="query", label="grade").run()
    assert caught.value.where.startswith("Audit(data=...)") and "dataset={'nan_policy': 'missing'}" in caught.value.fix
    result = Audit(model=ranker, data=frame, query="query", label="grade", dataset={"nan_policy": "missing"},
                   evidence=["ranking_quality", "global_importance"]).run(jobs=1)
    facts = result.metrics.set_index("metric")["value"]
    assert facts["dataset.single_doc_queries"] == (sizes == 1).sum() >= 3 and facts["dataset.n_features"] == 60
    assert facts["dataset.missing_values"] > 0
    assert "f 0 &lt;ü&gt;" in result.report_html() and "f 0 <ü>" not in result.report_html()
    run = result.save(tmp_path / "out")
    assert json.loads((run / "evidence.json").read_text())["inputs"]["dataset"]["feature_names"][0] == "f 0 <ü>"


def test_columns_name_the_feature_columns_and_features_is_the_dictionary(frame, booster):
    """Issue 58: `features=` meant the feature columns while the spec's `features:` is the feature dictionary; now
    `columns=` names the columns, `features=` takes the dictionary (as the spec does), and a list under `features=`
    still works for a release, with a FutureWarning."""
    described = {"price": {"meaning": "Price of the book", "unit": "EUR"}}
    audit = Audit(model=booster, data=frame, doc_id="doc_id", features=described, evidence=["ranking_quality"])
    spec = yaml.safe_load(audit.spec_path.read_text())
    assert spec["features"] == described and "feature_columns" not in spec["dataset"]
    result = audit.run()
    assert result.document.metric("governance", "governance.features_described") == 1.0
    names = [c for c in frame.columns if c not in ("qid", "label", "doc_id")]
    chosen = Audit(model=booster, data=frame, doc_id="doc_id", columns=names, evidence=["ranking_quality"])
    assert yaml.safe_load(chosen.spec_path.read_text())["dataset"]["feature_columns"] == names
    with pytest.warns(FutureWarning, match="write columns="):
        legacy = Audit(model=booster, data=frame, doc_id="doc_id", features=names, evidence=["ranking_quality"])
    assert yaml.safe_load(legacy.spec_path.read_text())["dataset"]["feature_columns"] == names
    with pytest.raises(InputError, match="both columns= and a list under features="):
        Audit(model=booster, data=frame, doc_id="doc_id", columns=names, features=names)


def test_xgboost_and_catboost_rankers_audit_from_memory_with_their_own_scores(tmp_path: Path) -> None:
    """Issue 58 item 3: an in-memory XGBRanker and CatBoostRanker are staged in their native formats; the staged
    model scores exactly as the object's own predict, and the audit runs; an XGBoost .json by path needs only
    model_kind=."""
    import catboost
    import xgboost

    from auditor.models import load_file

    rng = np.random.default_rng(3)
    queries, per = 30, 10
    X = rng.normal(size=(queries * per, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=len(X)) > 0.5).astype(int) + (X[:, 0] > 1)
    qid = np.repeat(np.arange(queries), per)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(4)]).assign(qid=qid, label=y)
    rankers = {"model.json": xgboost.XGBRanker(n_estimators=20, max_depth=3).fit(X, y, qid=qid),
               "model.cbm": catboost.CatBoostRanker(iterations=20, depth=3, verbose=False, allow_writing_files=False)
               .fit(X, y, group_id=qid)}
    for name, ranker in rankers.items():
        audit = Audit(ranker, frame, evidence=["ranking_quality"])
        staged = load_file(audit.spec.model.kind, audit.spec.model.path, False)
        assert np.array_equal(staged.predict(X), ranker.predict(X)), name
        assert audit.run().document.evidence["ranking_quality"].status == "ok"
    rankers["model.json"].save_model(str(tmp_path / "ranker.json"))
    by_path = Audit(str(tmp_path / "ranker.json"), frame, model_kind="xgboost", evidence=["ranking_quality"])
    assert by_path.spec.model.kind == "xgboost"


def test_attributions_come_back_as_a_shap_explanation_that_shap_plots(result, booster: lgb.Booster, frame,
                                                                      tmp_path: Path) -> None:
    """Issue 58 item 1: one query's TreeSHAP values as a shap.Explanation whose values and base values add up to
    the model's scores, which shap's own plots draw; a saved run read back gives the same; an unknown query names
    the kept ones."""
    import matplotlib

    matplotlib.use("Agg")
    import shap

    explanation = result.explanations()
    scores = booster.predict(np.asarray(explanation.data))
    assert explanation.values.shape == explanation.data.shape
    assert len(explanation.feature_names) == booster.num_feature()
    assert np.allclose(explanation.values.sum(axis=1) + explanation.base_values, scores, atol=1e-4)
    shap.plots.waterfall(explanation[0], show=False)
    shap.plots.beeswarm(explanation, show=False)
    matplotlib.pyplot.close("all")
    import auditor

    run = result.save(tmp_path / "saved")
    first = result.document.evidence["global_importance"].attributions["queries"][0]["query"]
    again = auditor.load(run).explanations(str(first))
    assert np.allclose(again.values, explanation.values) and list(again.instance_names) == explanation.instance_names
    with pytest.raises(InputError, match="is not among the"):
        result.explanations("no-such-query")


@pytest.mark.slow  # a whole audit with local explanations and confidence
def test_local_explanations_come_back_with_their_validity_and_flag(frame: pd.DataFrame, booster: lgb.Booster,
                                                                   tmp_path: Path) -> None:
    """Issue 58 item 1: a local explanation method's values for a query's top documents as a shap.Explanation
    that shap's bar plot draws, with its validity, completeness and confidence flag in `audit`; a flagged one
    warns; a saved run gives the same; an unknown method names the kept ones."""
    import matplotlib

    matplotlib.use("Agg")
    import shap

    import auditor
    from auditor.api import FlaggedExplanationWarning

    methods = ["treeshap5", "lirme5", "greedy_cover_eps"]
    audit = Audit(model=booster, data=frame, doc_id="doc_id", seed=3, policies=[], title="Local",
                  evidence=[{"local_explanations": {"methods": methods, "k": 3, "k_curve": [], "queries": 6,
                                                    "keep_queries": 4}},
                            {"confidence": {"methods": methods[:2], "k": 3, "queries": 6,
                                            "thresholds": {"validity": 0.99}}}])  # most explanations flagged
    result = audit.run(jobs=1)
    kept = result.document.evidence["local_explanations"].attributions
    assert {e["method"] for e in kept["explanations"]} == {"treeshap5", "lirme5"}  # attribution methods only
    assert 0 < len({e["query"] for e in kept["explanations"]}) <= 4 and kept["left_out"] == 0  # tied queries skip
    records = {(r["query"], r["method"]): r for r in result.document.evidence["local_explanations"].records}
    flags = {(r["query"], r["method"]): r for r in result.document.evidence["confidence"].records}
    assert all("attributions" not in r for r in records.values())  # kept apart: the records are as before
    entry = next(e for e in kept["explanations"] if flags.get((e["query"], e["method"]), {}).get("flagged"))
    with pytest.warns(FlaggedExplanationWarning, match="must not rely on it"):
        explanation = result.explanations(entry["query"], method=entry["method"])
    assert explanation.values.shape == (5, len(explanation.feature_names)) == explanation.data.shape
    assert explanation.audit["validity"] == records[(entry["query"], entry["method"])]["validity"]
    assert explanation.audit["flagged"] is True and explanation.audit["reasons"]
    shap.plots.bar(explanation[0], show=False)
    matplotlib.pyplot.close("all")
    loaded = auditor.load(result.save(tmp_path / "saved"))
    with pytest.warns(FlaggedExplanationWarning):
        again = loaded.explanations(entry["query"], method=entry["method"])
    assert np.allclose(again.values, explanation.values) and again.audit == explanation.audit
    with pytest.raises(InputError, match="lirme5, treeshap5"):
        result.explanations(method="shap1")


def test_a_pipeline_audits_its_ranker_on_what_its_transforms_give_it(tmp_path: Path) -> None:
    """Issue 58 item 3: a scikit-learn Pipeline (imputer, scaler, LGBMRanker) audits from memory: its ranker staged
    natively, the data as its transforms give them (scores equal to the pipeline's own predict), and the report
    says so; data a transform cannot take, and a pipeline not ending in a ranker, are one-line errors."""
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import StandardScaler

    from auditor.models import load_file

    rng = np.random.default_rng(5)
    queries, per = 40, 8
    X = rng.normal(loc=3.0, size=(queries * per, 4))
    X[rng.random(X.shape) < 0.05] = np.nan  # the imputer's work
    columns = ["price", "rating", "age", "stock"]
    frame = pd.DataFrame(X, columns=columns).assign(qid=np.repeat(np.arange(queries), per),
                                                   doc=[f"d{i}" for i in range(queries * per)])
    frame["label"] = ((np.nan_to_num(X[:, 0], nan=3.0) + rng.normal(scale=0.5, size=len(X))) > 3.5).astype(int)
    pipeline = make_pipeline(SimpleImputer(), StandardScaler(),
                             lgb.LGBMRanker(n_estimators=20, min_child_samples=5, verbose=-1))
    pipeline.fit(frame[columns], frame.label, lgbmranker__group=[per] * queries)
    audit = Audit(pipeline, frame, doc_id="doc", evidence=["ranking_quality", "global_importance"])
    assert audit.spec.model.kind == "lightgbm" and audit.spec.dataset.feature_columns == columns
    staged = pd.read_parquet(audit.spec.dataset.path)
    assert not staged[columns].isna().any().any() and abs(float(staged["price"].mean())) < 1e-9  # transformed
    ranker = load_file("lightgbm", audit.spec.model.path, False)
    assert np.array_equal(ranker.predict(staged[columns].to_numpy()), pipeline.predict(frame[columns]))
    result = audit.run(jobs=1)
    assert result.document.inputs["model"]["preprocessing"].startswith(
        "a scikit-learn Pipeline: simpleimputer (SimpleImputer), then standardscaler (StandardScaler); its ranker "
        "lgbmranker (LGBMRanker) is audited on the 4 features")
    html = (result.save(tmp_path / "out") / "report.html").read_text(encoding="utf-8")
    assert "<dt>Preprocessing</dt><dd>a scikit-learn Pipeline: simpleimputer" in html
    with pytest.raises(InputError, match=r"Audit\(data=...\): the Pipeline was fitted on column 'stock'"):
        Audit(pipeline, frame.drop(columns="stock"), doc_id="doc")
    text = frame.assign(price=frame.price.astype(str).where(frame.price.notna(), "n/a"))
    with pytest.raises(InputError, match=r"the Pipeline's transforms fail on the data \(ValueError"):
        Audit(pipeline, text, doc_id="doc")
    from sklearn.compose import ColumnTransformer

    texts = Pipeline([("keep", ColumnTransformer([("doc", "passthrough", ["doc"])]).fit(frame)),
                      ("rank", pipeline[-1])])  # the ids passed on as a feature
    with pytest.raises(InputError, match="output values that are not numbers"):
        Audit(texts, frame, doc_id="doc")
    with pytest.raises(InputError, match="the Pipeline does not end in a ranker"):
        Audit(Pipeline([("scale", StandardScaler()), ("rank", "passthrough")]), frame)


def test_pandas_categories_reach_a_lightgbm_model_as_it_maps_them(tmp_path: Path) -> None:
    """Issue 58 item 3: a LightGBM model trained on a DataFrame's category column audits that DataFrame with the
    scores of its own predict (the codes its `pandas_categorical` gives); another model is refused with the fix."""
    import xgboost

    rng = np.random.default_rng(0)
    queries, per = 40, 10
    frame = pd.DataFrame({"qid": np.repeat(np.arange(queries), per), "x": rng.normal(size=queries * per),
                          "colour": pd.Categorical(rng.choice(["red", "green", "blue"], queries * per))})
    frame["label"] = (frame.x > 0).astype(int) + (frame.colour == "red").astype(int)
    data = lgb.Dataset(frame[["x", "colour"]], frame.label, group=[per] * queries)
    model = lgb.train({"objective": "lambdarank", "verbose": -1, "min_data_in_leaf": 5, "min_data_per_group": 5,
                       "cat_smooth": 1}, data, 20)
    audit = Audit(model, frame.sample(frac=1, random_state=1).sort_values("qid", kind="stable"),
                  evidence=["ranking_quality"])
    staged = pd.read_parquet(audit.spec.dataset.path)
    shuffled = frame.sample(frac=1, random_state=1).sort_values("qid", kind="stable")
    assert np.array_equal(model.predict(staged[["x", "colour"]].to_numpy()), model.predict(shuffled[["x", "colour"]]))
    assert audit.run(jobs=1).document.evidence["ranking_quality"].status == "ok"
    other = xgboost.XGBRanker(n_estimators=5).fit(frame[["x"]], frame.label, qid=frame.qid)
    with pytest.raises(InputError, match=r"column 'colour' holds pandas categories.*cat\.codes"):
        Audit(other, frame)


def test_pandas_categories_reach_an_xgboost_model_through_its_stored_categories() -> None:
    """Issue 58 item 3: an XGBRanker trained with `enable_categorical` audits a DataFrame whose categories are in
    another order with the scores of its own predict; its trees split on sets of categories, so TreeSHAP is
    XGBoost's own and the tree evidence that needs the array form is SKIPPED with the reason; a category it never
    saw is refused (XGBoost's predict does not read it as missing)."""
    import xgboost

    rng = np.random.default_rng(0)
    queries, per = 40, 10
    n = queries * per
    frame = pd.DataFrame({"qid": np.repeat(np.arange(queries), per), "x": rng.normal(size=n),
                          "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
                          "size": pd.Categorical(rng.choice([3, 5, 9], n))})
    frame["label"] = (frame.x > 0).astype(int) + (frame.colour == "red").astype(int)
    features = ["x", "colour", "size"]
    model = xgboost.XGBRanker(n_estimators=20, max_depth=3, enable_categorical=True, max_cat_to_onehot=1)
    model.fit(frame[features], frame.label, qid=frame.qid)
    shuffled = frame.assign(colour=frame.colour.cat.reorder_categories(["red", "blue", "green"]))
    audit = Audit(model, shuffled, evidence=["ranking_quality", "global_importance",
                                             {"decision_path_accuracy": {"top_k": 1}}])
    staged = pd.read_parquet(audit.spec.dataset.path)
    from auditor.models import load_file

    ranker = load_file("xgboost", audit.spec.model.path, False)
    assert np.array_equal(ranker.predict(staged[features].to_numpy()),
                          model.predict(frame[features], output_margin=True))
    contributions = ranker.contributions(staged[features].to_numpy())
    assert np.allclose(contributions.sum(axis=1), ranker.predict(staged[features].to_numpy()), atol=1e-5)
    document = audit.run(jobs=1).document
    assert document.evidence["global_importance"].status == "ok"
    skipped = document.evidence["decision_path_accuracy"]
    assert skipped.status == "skipped" and "categorical splits" in skipped.model_dump_json()
    unseen = frame.assign(colour=pd.Categorical(np.where(np.arange(n) % 9 == 0, "purple",
                                                         frame.colour.astype(str))))
    with pytest.raises(InputError, match=r"column 'colour' holds 'purple', a category the model was not trained on"):
        Audit(model, unseen)
    codes = staged.copy()  # codes given as numbers (as a data file holds them): one that is no category's is refused
    codes.loc[5, "colour"] = 3.0
    with pytest.raises(InputError, match=r"feature 'colour' is categorical in the model \(codes 0 to 2\), but "
                                         r"document 6 holds 3;"):
        Audit(model, codes, evidence=["ranking_quality"]).run(jobs=1)
