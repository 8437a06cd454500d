"""ILMART on stock LightGBM (auditor/surrogate): structure of the trees, exact decomposition, fidelity measures,
the bookstore's planted effects, the `surrogate` evidence and `auditor train-ilmart`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from auditor.inputs.data import load_ranking_data
from auditor.report.plots import draw
from auditor.scoring.trees import TreeEnsemble
from auditor.surrogate.decompose import decompose
from auditor.surrogate.fidelity import fidelity, rank_grades, standardised
from auditor.surrogate.ilmart import IlmartConfig, RankSet, fit_ilmart, tree_feature_sets
from auditor.surrogate.train import fit_on_labels, fit_surrogate, recombine
from tests.conftest import BOOKSTORE, make_queries

FAST = {"num_threads": 1, "max_rounds": 300, "patience": 20}


def _planted() -> tuple[RankSet, RankSet, np.ndarray]:
    """Training and validation queries with a planted interaction (x1 · x2), overlapping candidate pairs, and
    NaN-free inputs; and all their rows."""
    rng = np.random.default_rng(5)
    X, _, sizes = make_queries(rng, 160, 6, min_docs=8, max_docs=20)
    signal = 2.0 * X[:, 0] + 3.0 * X[:, 1] * X[:, 2] + 0.5 * X[:, 3] + 0.2 * rng.standard_normal(len(X))
    y = np.digitize(signal, np.quantile(signal, [0.5, 0.75, 0.9, 0.97])).astype(float)
    cut = int(sizes[:120].sum())
    return RankSet(X[:cut], y[:cut], sizes[:120]), RankSet(X[cut:], y[cut:], sizes[120:]), X


@pytest.fixture(scope="module")
def synthetic_fit():
    """A fit on the planted data (`_planted`)."""
    train, valid, X = _planted()
    fit = fit_ilmart(train, valid, config=IlmartConfig(n_interactions=3, num_leaves=7, **FAST))
    return fit, X


def test_main_effect_trees_use_one_feature_each(synthetic_fit):
    fit, _ = synthetic_fit
    for paths in tree_feature_sets(fit.booster)[: fit.main_trees]:
        assert len(frozenset().union(*paths)) <= 1
    assert set(fit.main_features) >= {0, 1, 2}


def test_interaction_paths_stay_inside_one_selected_pair(synthetic_fit):
    fit, _ = synthetic_fit
    assert fit.interaction_trees > 0 and 1 <= len(fit.pairs) <= 3
    assert all(i in fit.main_features and j in fit.main_features for i, j in fit.pairs)
    allowed = [frozenset(p) for p in fit.pairs]
    for paths in tree_feature_sets(fit.booster, start=fit.main_trees):
        for path in paths:
            assert any(path <= pair for pair in allowed), (path, fit.pairs)


def test_planted_interaction_is_selected(synthetic_fit):
    fit, _ = synthetic_fit
    assert (1, 2) in fit.pairs


def test_decomposition_reproduces_the_raw_score(synthetic_fit):
    fit, X = synthetic_fit
    parts = decompose(TreeEnsemble.from_lightgbm(fit.booster.dump_model()))
    rng = np.random.default_rng(0)
    probe = np.vstack([X, rng.uniform(-1, 2, size=(200, X.shape[1]))])
    probe[rng.random(probe.shape) < 0.05] = np.nan  # missing values go through the tables' NaN entries
    expected = fit.booster.predict(probe, raw_score=True)
    assert np.max(np.abs(parts.predict(probe) - expected)) <= 1e-9
    assert all(len(e.features) in (1, 2) for e in parts.effects) and parts.pair_effects


def test_fidelity_measures():
    ptr = np.array([0, 4, 7, 8])
    blackbox = np.array([4.0, 3.0, 2.0, 1.0, 1.0, 1.0, 1.0, 5.0])
    same = fidelity(2 * blackbox + 1, blackbox, ptr)
    assert same["kendall"][0] == pytest.approx(1.0) and same["ndcg@10"][0] == pytest.approx(1.0)
    assert np.isnan(same["kendall"][1]) and np.isnan(same["kendall"][2])  # no order to follow; one document
    assert same["explained"] == pytest.approx(1.0)
    reverse = fidelity(-blackbox, blackbox, ptr)
    assert reverse["kendall"][0] == pytest.approx(-1.0) and reverse["ndcg@10"][0] < 1
    grades = rank_grades(np.array([0.1, 0.9, 0.5, 0.5, 3.0]), np.array([0, 4, 5]), levels=4)
    assert grades.tolist() == [0, 3, 2, 2, 3]
    z = standardised(blackbox, ptr)
    assert z[:4].mean() == pytest.approx(0) and z[:4].std() == pytest.approx(1) and np.all(z[4:] == 0)


def test_the_surrogate_is_the_same_at_any_thread_count(synthetic_fit):
    """The evidence trains it on the audit's cores: deterministic row-wise histograms make the same trees on one
    thread as on three (a machine's cores never change the evidence)."""
    train, valid, _ = _planted()
    three = fit_ilmart(train, valid, config=IlmartConfig(n_interactions=3, num_leaves=7,
                                                         **{**FAST, "num_threads": 3}))
    one = synthetic_fit[0]

    def trees(fit: Any) -> str:
        return str(fit.booster.model_to_string().split("parameters:")[0])  # the parameters name the thread count

    assert trees(three) == trees(one) and "Tree=3" in trees(one)


def test_kendall_stopping_keeps_the_best_validation_tau():
    rng = np.random.default_rng(8)
    X, _, sizes = make_queries(rng, 80, 4, min_docs=6, max_docs=12)
    y = X[:, 0] + X[:, 1] * X[:, 2]
    cut = int(sizes[:60].sum())
    train, valid = RankSet(X[:cut], y[:cut], sizes[:60]), RankSet(X[cut:], y[cut:], sizes[60:])
    config = IlmartConfig(objective="regression", n_interactions=2, num_leaves=7, stopping="kendall", **FAST)
    fit = fit_ilmart(train, valid, config=config)
    ptr = np.concatenate([[0], np.cumsum(sizes[60:])])
    tau = np.nanmean(fidelity(fit.booster.predict(valid.X), valid.y, ptr)["kendall"])
    best = max(fit.valid_score.values())
    assert tau == pytest.approx(best) and 0.5 < tau <= 1  # the feval is fidelity's mean Kendall tau_b
    with pytest.raises(ValueError):
        IlmartConfig(stopping="ndcg")  # type: ignore[arg-type]


def test_recombined_documents_mix_features_within_their_query():
    X = np.array([[0.0, 10.0], [1.0, 11.0], [2.0, 12.0], [5.0, 50.0], [6.0, 60.0]])
    ptr = np.array([0, 3, 5])
    rows, new_ptr = recombine(X, ptr, np.array([1, 0]), np.random.default_rng(0), per_document=4)
    assert new_ptr.tolist() == [0, 10, 25]
    assert np.array_equal(rows[:2], X[3:5]) and np.array_equal(rows[10:13], X[:3])  # real rows first, per query
    assert set(rows[2:10, 0]) <= {5.0, 6.0} and set(rows[2:10, 1]) <= {50.0, 60.0}
    assert set(rows[13:25, 0]) <= {0.0, 1.0, 2.0} and set(rows[13:25, 1]) <= {10.0, 11.0, 12.0}
    assert {(a, b) for a, b in rows[13:25]} - {(a, b) for a, b in X[:3]}  # some rows are new combinations
    again, _ = recombine(X, ptr, np.array([1, 0]), np.random.default_rng(0), per_document=4)
    assert np.array_equal(rows, again)


def test_synthetic_documents_are_scored_by_the_black_box_and_kept_out_of_validation():
    rng = np.random.default_rng(9)
    X, _, sizes = make_queries(rng, 40, 4, min_docs=5, max_docs=10)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    calls = []

    def score(rows):
        calls.append(len(rows))
        return rows[:, 0] - rows[:, 1]

    fitted = fit_surrogate(X, score(X), ptr, np.random.default_rng(1), config=IlmartConfig(n_interactions=1, **FAST),
                           score=score, synthetic_per_document=2)
    # the last call scored the training queries' real documents and their 2 synthetic ones each
    assert fitted.n_synthetic > 0 and calls[-1] == fitted.n_synthetic + fitted.n_synthetic // 2
    assert fitted.n_synthetic < 2 * int(sizes.sum())  # the validation queries got none
    with pytest.raises(ValueError, match="score"):
        fit_surrogate(X, score(X), ptr, np.random.default_rng(1), synthetic_per_document=2)


def test_bookstore_ilmart_recovers_planted_effects():
    """generate.py: relevance rises with genre match, price in range, (avg_review − 3.5) · log(1 + n_reviews) (mean
    rating 3.9, so more reviews help), sales and recency; is_ebook has no direct effect."""
    train = load_ranking_data(BOOKSTORE / "train.csv", doc_id_column="doc_id")
    fit = fit_on_labels(train, np.random.default_rng(3), config=IlmartConfig(num_leaves=15, **FAST))
    parts = decompose(TreeEnsemble.from_lightgbm(fit.booster.dump_model()))
    names = train.feature_names
    frame = pd.DataFrame(train.X, columns=names)

    def effect_of(feature: str, low: float, high: float) -> float:
        """Total effect change (main + pairs with the feature), averaged over the data, from low to high."""
        at = []
        for value in (low, high):
            X = frame.to_numpy().copy()
            X[:, names.index(feature)] = value
            at.append(parts.predict(X).mean())
        return at[1] - at[0]

    assert effect_of("genre_match", 0, 1) > 0.5
    assert effect_of("price_in_range", 0, 1) > 0.5
    assert effect_of("n_reviews", 2, 2000) > 0
    assert effect_of("avg_review", 3.0, 4.8) > 0
    assert effect_of("publishing_year", 1990, 2025) > 0
    assert effect_of("sales_rank_log", 1.0, 3.5) > 0
    planted = min(effect_of("genre_match", 0, 1), effect_of("price_in_range", 0, 1))
    assert abs(effect_of("is_ebook", 0, 1)) < 0.1 * planted  # no planted effect: flat (or unused)


def test_surrogate_evidence_on_the_bookstore(bookstore: Path):
    from auditor.evidence.base import AuditContext
    from auditor.evidence.kinds.surrogate.measure import SurrogateOptions, run
    from auditor.models.base import CountingRanker
    from auditor.run.engine import prepare

    prepared = prepare(bookstore / "audit.yaml")
    ctx = AuditContext(data=prepared.data, model=CountingRanker(prepared.model), seed=7,
                       background=prepared.background)
    light = {"interactions": 3, "top_effects": 2, "top_pairs": 1, "num_leaves": 7, "synthetic_per_document": 2}
    result = _presented(run(ctx, SurrogateOptions(**light)), SurrogateOptions(**light))
    m = result.metrics
    assert m["surrogate.fidelity.kendall.mean"] > 0.75 and m["surrogate.fidelity.ndcg@10.mean"] > 0.9
    assert m["surrogate.decomposition.max_abs_error"] <= 1e-9
    assert 1 <= m["surrogate.n_interactions"] <= 3 and m["surrogate.n_main_effects"] >= 4
    assert m["surrogate.fidelity.kendall.mean"] >= m["surrogate.fidelity.main_effects.kendall.mean"] - 0.02
    assert [f.title.split(":")[0] for f in result.figures] == [
        "Main effects", "Interactions", "How much of the model's ordering the surrogate's largest effects hold"]
    assert all(draw(f).startswith("<svg") for f in result.figures)
    # fidelity against size: the whole surrogate at the last cut, the 3 drawn effects (2 main, 1 pair) short of it
    frontier = result.facts["frontier"]
    n_effects = m["surrogate.n_main_effects"] + m["surrogate.n_interactions"]
    assert len(frontier["kendall"]) == n_effects and sum(frontier["pair"]) == m["surrogate.n_interactions"]
    assert frontier["kendall"][-1] == pytest.approx(m["surrogate.fidelity.kendall.mean"], abs=1e-6)
    assert m["surrogate.fidelity.drawn.effects"] == 3
    assert frontier["kendall"][0] < m["surrogate.fidelity.drawn.kendall.mean"] <= frontier["kendall"][-1] + 0.02
    assert 1 <= m["surrogate.fidelity.effects_for_95pct"] <= n_effects
    assert frontier["kendall"][int(m["surrogate.fidelity.effects_for_95pct"]) - 1] >= 0.95 * frontier["kendall"][-1]
    assert "3 effects drawn, read alone, rank like the model" in result.summary
    all_drawn = SurrogateOptions(**{**light, "top_effects": 30, "top_pairs": 100})
    every = _presented(run(ctx, all_drawn), all_drawn).summary  # every effect drawn: no cut to compare
    assert f"All its {int(n_effects)} effects are drawn below" in every and "read alone" not in every
    assert {r["effect"] for r in result.records} >= {"genre_match", "price_in_range"}
    assert m["surrogate.training.synthetic_documents"] > 0
    again = _presented(run(ctx, SurrogateOptions(**light)), SurrogateOptions(**light))
    assert again.metrics == m and again.figures == result.figures


def _presented(result: Any, options: Any) -> Any:
    """The result as the engine keeps it: presented from its stored form (issue 52: its figures are `present`'s)."""
    from auditor.evidence.document import EvidenceItem
    from auditor.evidence.kinds.surrogate import ENTRY

    result.options = options.model_dump(mode="json")
    result.present(ENTRY.presented(EvidenceItem.model_validate(result.to_json())))
    return result


def test_train_ilmart_command(bookstore: Path):
    from auditor.cli import app

    runner = CliRunner()
    out = bookstore / "ilmart.txt"
    done = runner.invoke(app, ["train-ilmart", str(bookstore / "audit.yaml"), "--out", str(out),
                               "--interactions", "2", "--leaves", "7"])
    assert done.exit_code == 0, done.output
    booster = lgb.Booster(model_file=str(out))
    assert booster.feature_name()[:2] == ["genre_match", "price"]
    parts = decompose(TreeEnsemble.from_lightgbm(booster.dump_model()))  # interpretable by construction
    assert len(parts.pair_effects) <= 2
    again = runner.invoke(app, ["train-ilmart", str(bookstore / "audit.yaml"), "--out", str(out)])
    assert again.exit_code == 2 and again.output.count("\n") == 1 and "exists already" in again.output


def test_surrogate_evidence_is_exact_on_negative_and_missing_features():
    """The issue's case: features with negative values (LightGBM writes "≤ 0" as −1e-35), exact zeros, −0.0 and
    missing values. Bias + Σ effects must still be the surrogate's score (the starter pack's BASE-10)."""
    from auditor.evidence.base import AuditContext
    from auditor.evidence.kinds.surrogate.measure import SurrogateOptions, run
    from auditor.inputs.data import RankingData
    from auditor.models.base import CountingRanker
    from auditor.models.lightgbm import LightGBMRanker

    rng = np.random.default_rng(8)
    X, _, sizes = make_queries(rng, 60, 5, min_docs=10, max_docs=20)
    X = X - 0.5  # every feature straddles 0
    X[:, 1] = np.round(4 * X[:, 1])  # integers -2..2: many exact zeros
    X[rng.random(len(X)) < 0.1, 1] = -0.0
    X[rng.random(len(X)) < 0.1, 3] = np.nan
    signal = X[:, 0] + (X[:, 1] < 0) - 0.5 * (X[:, 1] == 0) + np.nan_to_num(X[:, 3], nan=-1.0)
    y = np.digitize(signal, np.quantile(signal, [0.5, 0.8])).astype(float)
    model = lgb.train({"objective": "lambdarank", "num_leaves": 7, "min_data_in_leaf": 10, "verbosity": -1,
                       "num_threads": 1, "seed": 1, "deterministic": True}, lgb.Dataset(X, y, group=sizes), 30)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    data = RankingData(X=X, y=y, query_ptr=ptr, query_ids=[f"q{i}" for i in range(len(sizes))],
                       doc_ids=[f"d{i}" for i in range(len(X))], feature_names=[f"f{i}" for i in range(5)])
    ctx = AuditContext(data=data, model=CountingRanker(LightGBMRanker(model)), seed=3)
    result = run(ctx, SurrogateOptions(interactions=2, num_leaves=4, min_data_in_leaf=5, max_rounds=200,
                                       top_effects=2, top_pairs=1))
    assert result.metrics["surrogate.decomposition.max_abs_error"] <= 1e-9
    cuts = [c for r in result.records for axis in (r["cuts"] if r["effect"].count("×") else [r["cuts"]]) for c in axis]
    assert -1.0000000180025095e-35 in cuts  # the threshold of the issue is in the tables


def test_the_heatmap_caption_says_when_documents_reach_past_the_colour_scale() -> None:
    """The scale ends at the largest cell mean; a document pushed further is named in the caption, not clipped in
    silence (a reader took ±0.156 for the largest push while a document reached −0.266)."""
    from auditor.evidence.kinds.surrogate.present import _scale_note

    wide = _scale_note(0.156, [(-0.266, 0.15)])  # each panel's lowest and highest push
    assert "±0.156, the largest cell mean of all pairs" in wide and "−0.266" in wide.replace("-", "−")
    assert "covers every document's push" in _scale_note(0.3, [(-0.2, 0.25)])
