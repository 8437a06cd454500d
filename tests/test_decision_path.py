"""Decision-path ground truth (paper 001): tree arrays for scikit-learn models, Saabas additivity, frequency,
similarity measures, and the `decision_path_accuracy` evidence end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.metrics import roc_auc_score
from sklearn.tree import DecisionTreeRegressor

import auditor.checks.decision_path as dp
from auditor.explain import registry
from auditor.scoring.trees import LEAF, TreeEnsemble
from tests.conftest import make_bookstore_context, shared_data_dir, write_spec
from tests.helpers import evidence, report

# --- ground truth ----------------------------------------------------------------------------------------------------


def reference_paths(ensemble: TreeEnsemble, X: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Plain-Python walk from each leaf to the root: the definition, step by step."""
    leaves = ensemble.leaf_indices(X)
    contrib, freq = np.zeros((len(X), ensemble.n_features)), np.zeros((len(X), ensemble.n_features))
    for row in range(len(X)):
        trees = 0
        for t in range(ensemble.n_trees):
            path = []
            node = int(leaves[row, t])
            while ensemble.parent[node] >= 0:
                path.append((int(ensemble.parent[node]), node))
                node = int(ensemble.parent[node])
            for parent, child in path:
                contrib[row, ensemble.feature[parent]] += ensemble.weight[t] * (values[child] - values[parent])
                freq[row, ensemble.feature[parent]] += 1.0 / len(path)
            trees += bool(path)
        freq[row] /= max(trees, 1)
    return contrib, freq


@pytest.mark.parametrize("convention", ["count_weighted", "internal"])
def test_saabas_additivity_on_lambdamart(lambdamart, convention: str) -> None:
    booster, X, _, _ = lambdamart
    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    truth = dp.ground_truth(ensemble, X, values=convention)
    raw = booster.predict(X, raw_score=True)
    np.testing.assert_allclose(truth.bias + truth.value_change.sum(axis=1), raw, rtol=0, atol=1e-9)
    contrib, freq = reference_paths(ensemble, X[:40], dp.node_values(ensemble, convention))
    np.testing.assert_allclose(truth.value_change[:40], contrib, rtol=0, atol=1e-12)
    np.testing.assert_allclose(truth.frequency[:40], freq, rtol=0, atol=1e-12)
    if convention == "internal":
        assert truth.bias == pytest.approx(ensemble.value[ensemble.roots].sum(), abs=1e-12)


def test_count_weighted_bias_is_treeshap_expected_value(lambdamart) -> None:
    booster, X, _, _ = lambdamart
    truth = dp.ground_truth(TreeEnsemble.from_lightgbm(booster.dump_model()), X[:5])
    bias_column = booster.predict(X[:5], pred_contrib=True)[:, -1]
    np.testing.assert_allclose(bias_column, truth.bias, rtol=0, atol=1e-9)
    internal = dp.ground_truth(TreeEnsemble.from_lightgbm(booster.dump_model()), X[:5], values="internal")
    assert abs(internal.bias - truth.bias) > 1e-3  # the two conventions really differ on lambdarank trees


def test_frequency_sums_to_one_per_tree_and_depth(lambdamart) -> None:
    booster, X, _, _ = lambdamart
    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    truth = dp.ground_truth(ensemble, X)
    np.testing.assert_allclose(truth.frequency.sum(axis=1), 1.0, atol=1e-12)
    leaves = ensemble.leaf_indices(X)
    for t in range(ensemble.n_trees):  # each tree alone: its shares sum to 1, its depth is its path length
        single = TreeEnsemble(**{**_arrays(ensemble), "roots": ensemble.roots[t:t + 1]})
        one = dp.ground_truth(single, X[:30])
        np.testing.assert_allclose(one.frequency.sum(axis=1), 1.0, atol=1e-12)
        lengths = [_path_length(ensemble, int(leaf)) for leaf in leaves[:30, t]]
        np.testing.assert_array_equal(one.depth, lengths)
    assert np.all(truth.depth >= 1) and np.all(truth.depth <= 6)  # 7 leaves: at most 6 splits deep


def _arrays(ensemble: TreeEnsemble) -> dict:
    keys = ("feature", "threshold", "left", "right", "parent", "default_left", "missing", "value", "count", "roots",
            "n_features")
    return {k: getattr(ensemble, k) for k in keys}


def _path_length(ensemble: TreeEnsemble, leaf: int) -> int:
    n = 0
    while ensemble.parent[leaf] >= 0:
        leaf, n = int(ensemble.parent[leaf]), n + 1
    return n


def sklearn_models(X: np.ndarray, y: np.ndarray) -> list:
    return [DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y),
            GradientBoostingRegressor(n_estimators=20, max_depth=3, subsample=0.8, random_state=0).fit(X, y),
            RandomForestRegressor(n_estimators=8, max_depth=5, random_state=0).fit(X, y)]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["tree", "gbr", "forest"])
def test_sklearn_models_flatten_and_add_up(index: int) -> None:
    import shap

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 5))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * (X[:, 2] > 0) + 0.1 * rng.normal(size=400)
    model = sklearn_models(X, y)[index]
    ensemble = TreeEnsemble.from_sklearn(model)
    rows = np.vstack([X, rng.normal(size=(200, 5))])
    if index < 2:  # same float32 reading and summation order as scikit-learn: bit for bit
        assert np.array_equal(ensemble.predict(rows), model.predict(rows))
    else:  # the forest averages: 1/n · Σ instead of Σ / n
        np.testing.assert_allclose(ensemble.predict(rows), model.predict(rows), rtol=0, atol=1e-12)
    for convention in ("count_weighted", "internal"):
        truth = dp.ground_truth(ensemble, rows, values=convention)
        np.testing.assert_allclose(truth.bias + truth.value_change.sum(axis=1), model.predict(rows), rtol=0,
                                   atol=1e-9)
    # scikit-learn's node value is already the (weighted) mean below: the two conventions coincide
    np.testing.assert_allclose(dp.node_values(ensemble), dp.node_values(ensemble, "internal"), rtol=0, atol=1e-9)
    expected = float(np.ravel(shap.TreeExplainer(model).expected_value)[0])
    assert dp.ground_truth(ensemble, rows[:1]).bias == pytest.approx(expected, abs=1e-9)


def test_sklearn_missing_values_follow_the_model() -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 3))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.isnan(X[:, 1])
    model = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y)
    assert np.array_equal(TreeEnsemble.from_sklearn(model).predict(X), model.predict(X))


def hand_ensemble(internal: tuple[float, float, float, float] = (0.0, 3.0, 0.0, 1.0)) -> TreeEnsemble:
    """Two trees over 3 features, node counts and leaf values chosen for round numbers.

    Tree 1: f0 <= 0.5 ? leaf 1.0 (4 rows) : (f1 <= 0.3 ? leaf 2.0 (2 rows) : leaf 5.0 (4 rows)).
    Tree 2: f2 <= 0.5 ? leaf -1.0 (5 rows) : (f2 <= 0.8 ? leaf 0.0 (1 row) : leaf 2.0 (4 rows)).
    """
    r0, r2, r5, r7 = internal  # library "internal" values of the split nodes 0, 2, 5, 7
    L = LEAF
    return TreeEnsemble(
        feature=np.array([0, L, 1, L, L, 2, L, 2, L, L], dtype=np.int32),
        threshold=np.array([0.5, 0, 0.3, 0, 0, 0.5, 0, 0.8, 0, 0]),
        left=np.array([1, L, 3, L, L, 6, L, 8, L, L], dtype=np.int32),
        right=np.array([2, L, 4, L, L, 7, L, 9, L, L], dtype=np.int32),
        parent=np.array([-1, 0, 0, 2, 2, -1, 5, 5, 7, 7], dtype=np.int32),
        default_left=np.zeros(10, dtype=bool), missing=np.zeros(10, dtype=np.int8),
        value=np.array([r0, 1.0, r2, 2.0, 5.0, r5, -1.0, r7, 0.0, 2.0]),
        count=np.array([10, 4, 6, 2, 4, 10, 5, 5, 1, 4], dtype=np.float64),
        roots=np.array([0, 5], dtype=np.int32), n_features=3)


def test_hand_built_tree_ground_truth() -> None:
    ensemble = hand_ensemble()
    X = np.array([[0.9, 0.9, 0.9], [0.1, 0.0, 0.1], [0.9, 0.1, 0.6]])
    np.testing.assert_allclose(ensemble.predict(X), [7.0, 0.0, 2.0])
    # count-weighted: node 2 = (2·2 + 4·5)/6 = 4, root 1 = (4·1 + 6·4)/10 = 2.8; node 7 = 8/5 = 1.6,
    # root 2 = (5·(−1) + 5·1.6)/10 = 0.3
    np.testing.assert_allclose(dp.node_values(ensemble)[[0, 2, 5, 7]], [2.8, 4.0, 0.3, 1.6])
    truth = dp.ground_truth(ensemble, X)
    assert truth.bias == pytest.approx(3.1)
    np.testing.assert_allclose(truth.value_change, [[4 - 2.8, 5 - 4, (1.6 - 0.3) + (2 - 1.6)],
                                                    [1 - 2.8, 0, -1 - 0.3],
                                                    [4 - 2.8, 2 - 4, (1.6 - 0.3) + (0 - 1.6)]], atol=1e-12)
    # frequency: tree 1 path {f0, f1} → ½ each; tree 2 splits twice on f2 → 1; averaged over the two trees
    np.testing.assert_allclose(truth.frequency, [[0.25, 0.25, 0.5], [0.5, 0, 0.5], [0.25, 0.25, 0.5]], atol=1e-12)
    np.testing.assert_allclose(truth.depth, [2, 1, 2])
    internal = dp.ground_truth(ensemble, X, values="internal")  # roots 0 and 0, node 2 = 3, node 7 = 1
    assert internal.bias == 0.0
    np.testing.assert_allclose(internal.value_change[0], [3 - 0, 5 - 3, (1 - 0) + (2 - 1)], atol=1e-12)
    np.testing.assert_allclose(internal.bias + internal.value_change.sum(axis=1), [7.0, 0.0, 2.0], atol=1e-12)


@pytest.mark.realdata
def test_ground_truth_adds_up_to_the_score_on_mq2008(mq2008_trained: Path) -> None:
    import lightgbm as lgb

    from auditor.inputs.data import load_ranking_data

    model = mq2008_trained / "model.txt"
    booster = lgb.Booster(model_file=str(model))
    data = load_ranking_data(shared_data_dir() / "MQ2008" / "Fold1" / "test.txt", n_features=46)
    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    truth = dp.ground_truth(ensemble, data.X)
    assert data.X.shape[0] == 2874 and ensemble.n_trees >= 50
    np.testing.assert_allclose(truth.bias + truth.value_change.sum(axis=1), booster.predict(data.X, raw_score=True),
                               rtol=0, atol=1e-9)


# --- similarity ------------------------------------------------------------------------------------------------------

def test_spearman_by_hand_and_degenerate_cases() -> None:
    assert dp.spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert dp.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # ties get average ranks: e ranks (1.5, 1.5, 3), g (1, 2, 3) → 1.5 / √(1.5 · 2)
    assert dp.spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(1.5 / np.sqrt(3.0))
    assert np.isnan(dp.spearman([0, 0, 0], [1, 2, 3])) and np.isnan(dp.spearman([1, 2, 3], [5, 5, 5]))
    rng = np.random.default_rng(0)
    for _ in range(20):
        e, g = rng.integers(0, 4, 12).astype(float), rng.normal(size=12)
        assert dp.spearman(e, g) == pytest.approx(spearmanr(e, g).statistic, abs=1e-12)
    sims = dp.similarity(np.array([-3.0, 1.0, 2.0]), np.array([3.0, 1.0, 2.0]))
    assert sims["spearman"] == pytest.approx(-0.5) and sims["spearman_abs"] == pytest.approx(1.0)


def test_euclidean_similarity_by_hand() -> None:
    assert dp.euclidean_similarity([2, 0], [5, 0]) == pytest.approx(1.0)  # scale does not matter
    assert dp.euclidean_similarity([1, 0], [0, 1]) == pytest.approx(1 / (1 + np.sqrt(2)))
    assert dp.euclidean_similarity([1, -2], [-1, 2]) == pytest.approx(1 / 3)
    assert dp.euclidean_similarity([0, 0], [0, 0]) == 1.0
    assert dp.euclidean_similarity([0, 0], [3, 4]) == 0.5
    assert dp.euclidean_similarity([3, 4], [4, 3]) == pytest.approx(1 / (1 + np.sqrt(0.08)))  # (.6,.8) vs (.8,.6)


def test_top_k_auc_by_hand_and_against_sklearn() -> None:
    g = np.array([0.5, -0.3, 0.1, 0.0, 0.0])
    assert dp.top_k_positives(g, 2).tolist() == [True, True, False, False, False]
    assert dp.top_k_auc([0.9, -0.8, 0.1, 0.2, 0.3], g, 2) == 1.0  # |e| ranks both positives first
    assert dp.top_k_auc([0.1, 0.2, 0.9, 0.8, 0.7], g, 2) == 0.0
    assert dp.top_k_auc([0.9, 0.25, 0.5, 0.2, 0.3], g, 2) == pytest.approx(4 / 6)  # 0 beats all 3; 1 beats one
    assert dp.top_k_auc(np.zeros(5), g, 2) == 0.5  # all scores tied
    # ties straddling the cut all count; a feature with g = 0 is never positive
    assert dp.top_k_positives([0.25, 0.25, 0.25, 0.25, 0, 0], 2).sum() == 4
    assert dp.top_k_positives([0.5, 0.2, 0, 0], 5).tolist() == [True, True, False, False]
    assert np.isnan(dp.top_k_auc([1, 2, 3], [0, 0, 0], 2))  # no positive
    assert np.isnan(dp.top_k_auc([1, 2, 3], [1, 2, 3], 3))  # no negative
    rng = np.random.default_rng(1)
    for _ in range(30):
        e, g = np.round(rng.normal(size=15), 1), rng.normal(size=15) * (rng.random(15) < 0.7)
        ks = list(range(1, 11))
        curve = dp.auc_curve(e, g, ks)
        for k, value in zip(ks, curve, strict=True):
            positives = dp.top_k_positives(g, k)
            if 0 < positives.sum() < len(g):
                assert value == pytest.approx(roc_auc_score(positives, np.abs(e)), abs=1e-12)
            else:
                assert np.isnan(value)


# --- evidence --------------------------------------------------------------------------------------------------------

LIGHT = {"decision_path_accuracy": {"queries": 3, "docs_per_query": 2, "lime": {"samples": 200},
                                    "kernelshap": {"nsamples": 50}}}


@pytest.mark.slow
def test_evidence_end_to_end_on_bookstore(bookstore: Path) -> None:
    import yaml

    spec = yaml.safe_load((bookstore / "audit.yaml").read_text())
    spec_path = write_spec(bookstore, evidence=[item for item in spec["evidence"]  # LIGHT replaces the spec's item
                                                if not {"local_explanations", "decision_path_accuracy"} & set(item)]
                           + [LIGHT])
    code, path = report(spec_path, "--out", str(bookstore / "out"))
    assert code in (0, 1) and path is not None
    result = evidence(path)["evidence"]["decision_path_accuracy"]
    assert result["status"] == "ok", result["error"]
    metrics = result["metrics"]
    assert metrics["decision_path.docs"] == 6 and metrics["decision_path.queries"] == 3
    assert metrics["decision_path.additivity.max_abs_error"] < 1e-9
    for name in ("treeshap", "kernelshap", "lirme", "exs"):
        for kind in ("value_change", "frequency"):
            for metric in ("spearman", "spearman_abs", "euclidean", "auc"):
                assert f"decision_path.{name}.{kind}.{metric}.mean" in metrics
        assert metrics[f"decision_path.{name}.rows"] > 0
    # TreeSHAP shares the ground truth's baseline (count-weighted values): it must agree far better than chance
    assert metrics["decision_path.treeshap.value_change.spearman.mean"] > 0.5
    assert metrics["decision_path.treeshap.value_change.auc.mean"] > 0.8
    assert result["tables"][0]["title"].startswith("Explanation accuracy against decision-path ground truth")
    assert len(result["tables"][0]["rows"]) == 8 and len(result["records"]) == 6
    assert set(result["records"][0]) >= {"query", "doc", "rank", "depth", "treeshap", "lirme"}
    assert result["n_model_rows"] == sum(metrics[f"decision_path.{n}.rows"]
                                         for n in ("treeshap", "kernelshap", "lirme", "exs"))
    assert "Decision-path accuracy" in path.read_text()


def test_evidence_is_skipped_for_a_callable_model(bookstore: Path) -> None:
    from auditor.evidence import REGISTRY
    from auditor.evidence.base import AuditContext
    from auditor.inputs.data import load_ranking_data
    from auditor.models.base import CountingRanker
    from auditor.models.callable import CallableRanker

    plugin = REGISTRY["decision_path_accuracy"]
    data = load_ranking_data(bookstore / "test.csv", query_column="qid", label_column="label", doc_id_column="doc_id")
    model = CountingRanker(CallableRanker(lambda X: X[:, 0], "test:score", data.n_features))
    result = plugin.run(AuditContext(data=data, model=model, seed=7), plugin.options(**LIGHT["decision_path_accuracy"]))
    assert result.status == "skipped" and "decision paths" in result.error
    assert model.rows_evaluated == 0 and not result.metrics


# --- work shared with local_explanations -------------------------------------------------------------------------

SMALL = {"kernelshap": {"nsamples": 64}, "lime": {"samples": 300}}


@pytest.mark.parametrize("name", [e.name for e in registry.attribution_explainers()])
def test_an_explainers_result_for_a_document_does_not_depend_on_later_documents(name: str) -> None:
    """What lets decision_path_accuracy reuse local_explanations' top-5 attributions for its top 3: every
    attribution explainer the registry calls `reusable` (with these options) must pass."""
    from auditor.evidence.explainers import build
    from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions
    from auditor.explain.base import QueryView

    options = LocalExplanationsOptions(**SMALL)
    entry = registry.EXPLAINERS[name]
    assert entry.reusable(entry.settings(options))
    ctx = make_bookstore_context(2)
    explainer = build(options)[name]
    part = ctx.data.query_slice(0)
    query = QueryView(X=ctx.data.X[part], scores=ctx.scores()[part], query_id="q", background=ctx.reference().X)
    five = explainer.attribute(ctx.model, query, query.top_docs(5), ctx.masker(), np.random.default_rng(1)).values
    three = explainer.attribute(ctx.model, query, query.top_docs(3), ctx.masker(), np.random.default_rng(1)).values
    assert np.abs(five).sum() > 0
    np.testing.assert_array_equal(five[:3], three)


def test_decision_paths_reuse_the_attributions_local_explanations_made() -> None:
    """After local_explanations explained the top 5 documents, decision_path_accuracy's top 3 cost no model rows,
    and its results equal those it computes alone."""
    from auditor.evidence.kinds.decision_path_accuracy import measure as evidence
    from auditor.evidence.kinds.local_explanations import measure as local_explanations

    options = evidence.DecisionPathOptions(docs_per_query=3, **SMALL)
    alone = evidence.run(make_bookstore_context(5), options)
    ctx = make_bookstore_context(5)
    local_explanations.run(ctx, local_explanations.LocalExplanationsOptions(
        methods=["treeshap5", "shap5", "lirme5", "exs5"], k=3, k_curve=[], optimum_max_subsets=0, **SMALL))
    shared = evidence.run(ctx, options)
    assert all(alone.metrics[f"decision_path.{name}.rows"] > 0 for name in ("kernelshap", "lirme", "exs"))
    assert all(shared.metrics[f"decision_path.{name}.rows"] == 0 for name in evidence.DecisionPathOptions().explainers)
    assert shared.records == alone.records
    assert {k: v for k, v in shared.metrics.items() if not k.endswith(".rows")} == \
        {k: v for k, v in alone.metrics.items() if not k.endswith(".rows")}


def test_rank_vector_is_scipys_rankdata():
    """The decision-path measures rank with `rank_vector` (scipy's per-call overhead was most of the evidence's
    time): the same ranks as scipy.stats.rankdata, ties, -0.0, infinities, NaN and empty vectors included."""
    from scipy.stats import rankdata

    from auditor.checks.decision_path import rank_vector

    rng = np.random.default_rng(3)
    vectors = [np.zeros(0), np.array([5.0]), np.array([0.0, -0.0, 1.0]), np.array([np.inf, -np.inf, 0.0, np.inf]),
               np.array([1.0, np.nan, 2.0])]
    vectors += [np.round(rng.normal(size=int(rng.integers(1, 40))), int(rng.integers(0, 3))) for _ in range(300)]
    for x in vectors:
        for method in ("average", "min"):
            np.testing.assert_array_equal(rank_vector(x, method), rankdata(x, method=method))


def test_the_k_curve_caption_says_which_way_this_run_s_lines_go() -> None:
    """Issue 56: the caption said "AUC falls as K grows" (the paper's finding) above the demo's rising curves."""
    from auditor.evidence.kinds.decision_path_accuracy.present import k_curve_caption

    rising = k_curve_caption({"TreeSHAP": [0.6, 0.7, 0.8], "EXS": [0.7, 0.75, 0.9], "LIRME": [0.9, 0.8, 0.5]})
    assert "Here AUC rises as K grows for 2 of 3 lines; it falls for LIRME" in rising
    assert "report that it falls" in rising and "below chance" not in rising
    assert "Here AUC falls as K grows" in k_curve_caption({"TreeSHAP": [0.9, 0.6], "EXS": [0.8, float("nan")]})
    # the lines against the trend by name, and those starting below chance (a reader review, D6)
    falling = k_curve_caption({"TreeSHAP": [0.9, 0.6], "LIRME": [0.8, 0.7], "KernelSHAP": [0.2, 0.6]})
    assert "falls as K grows for 2 of 3 lines; it rises for KernelSHAP; KernelSHAP starts below chance" in falling
