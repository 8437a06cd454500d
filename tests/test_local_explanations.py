"""Evidence `local_explanations` on wider data than the bookstore: KernelSHAP's sample count and its convergence
check."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

from auditor.evidence.base import AuditContext
from auditor.evidence.explainers import build
from auditor.evidence.kinds.local_explanations import ENTRY
from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions
from auditor.inputs.data import RankingData
from auditor.models.base import CountingRanker
from auditor.models.lightgbm import LightGBMRanker
from tests.conftest import make_queries


@pytest.fixture(scope="module")
def forty() -> AuditContext:
    """40 features (2^40 coalitions: KernelSHAP samples), labels driven by the first three."""
    rng = np.random.default_rng(21)
    X, y, sizes = make_queries(rng, 30, 40, min_docs=15, max_docs=30)
    X[:, 5:] += 0.3 * X[:, [0]]  # correlated noise features, as in real data
    booster = lgb.train({"objective": "lambdarank", "num_leaves": 15, "min_data_in_leaf": 10, "verbosity": -1,
                         "seed": 1, "deterministic": True, "num_threads": 1}, lgb.Dataset(X, y, group=sizes), 40)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    data = RankingData(X=X, y=y, query_ptr=ptr, query_ids=[f"q{i}" for i in range(len(sizes))],
                       doc_ids=[f"d{i}" for i in range(len(X))], feature_names=[f"f{i}" for i in range(40)])
    return data, booster


def _run(forty, **options):
    data, booster = forty
    ctx = AuditContext(data=data, model=CountingRanker(LightGBMRanker(booster)), seed=5)
    return ENTRY.run(ctx, LocalExplanationsOptions(methods=["random", "shap1", "shap5"], k=3, k_curve=[], queries=10,
                                             **options))


def test_kernelshap_convergence_check_warns_when_the_sets_move_with_the_sample(forty):
    few = _run(forty, kernelshap={"nsamples": 50})  # fewer coalitions than twice the 40 features
    m = few.metrics
    assert m["local.kernelshap.coalitions.mean"] == 50 and m["local.kernelshap.underdetermined_share"] == 1
    noisy = [d for d in few.detections if d.kind == "explainer-estimate-noisy"]
    assert {d.judged_by[0] for d in noisy} == {"local.shap1.convergence.agreement.mean",
                                               "local.shap5.convergence.agreement.mean"}
    assert any("still noisy" in note and "kernelshap.nsamples" in note for note in few.notes)

    some = _run(forty, kernelshap={"nsamples": 90})  # enough rows to check, too few to settle the sets
    m = some.metrics
    assert m["local.kernelshap.underdetermined_share"] == 0
    assert m["local.shap1.convergence.agreement.mean"] < 0.6
    assert next(d.judged_by[0] for d in some.detections if d.kind == "explainer-estimate-noisy") == \
        "local.shap1.convergence.agreement.mean"

    auto = _run(forty)
    m = auto.metrics
    assert m["local.kernelshap.coalitions.mean"] == 2 * 40 + 2048
    assert m["local.shap5.convergence.agreement.mean"] >= 0.9
    assert m["local.shap1.convergence.agreement.ci95_low"] <= m["local.shap1.convergence.agreement.mean"]
    assert not [d for d in auto.detections if d.kind == "explainer-estimate-noisy"]
    assert not any("still noisy" in note for note in auto.notes)
    assert m["local.shap5.validity.mean"] > few.metrics["local.shap5.validity.mean"]


def test_confidence_rerun_scales_the_automatic_sample_count():
    options = LocalExplanationsOptions()
    assert options.kernelshap.nsamples == "auto"
    assert build(options, scale=0.5)["kernelshap"].samples_for(40) == (2 * 40 + 2048) // 2
    fixed = LocalExplanationsOptions(kernelshap={"nsamples": 300})
    assert build(fixed, scale=0.5)["kernelshap"].samples_for(40) == 150  # a fixed count is scaled by the factory
    assert build(fixed)["kernelshap"].samples_for(40) == 300
    with pytest.raises(ValueError):
        LocalExplanationsOptions(kernelshap={"nsamples": 5})


def test_searches_on_wide_data_try_the_features_with_the_largest_treeshap_spread(forty):
    data, booster = forty
    methods = {"methods": ["greedy_cover_eps", "validity_search"], "k": 3, "k_curve": [], "queries": 4,
               "optimum_max_subsets": 0}

    def audit(candidates):
        ctx = AuditContext(data=data, model=CountingRanker(LightGBMRanker(booster)), seed=5)
        screen = {"candidates": candidates}
        return ENTRY.run(ctx, LocalExplanationsOptions(**methods, greedy=screen, search=screen)), \
            ctx.model.rows_evaluated

    default, _ = audit(60)  # the default: 40 features are never narrowed
    assert LocalExplanationsOptions().search.candidates == 60 and not any("TreeSHAP spread" in n for n in default.notes)
    narrowed, rows = audit(8)
    every, rows_every = audit(None)
    assert any("TreeSHAP spread" in note and "GREEDY-COVER-ε 8" in note for note in narrowed.notes)
    assert rows < rows_every / 2
    assert every.metrics == default.metrics  # 60 > 40 features: the same search
    for method in ("greedy_cover_eps", "validity_search"):
        assert narrowed.metrics[f"local.{method}.validity.mean"] > 0.8 * every.metrics[f"local.{method}.validity.mean"]


def test_the_k_curve_draws_at_most_six_lines_and_keeps_its_references() -> None:
    """Issue 56: at most 6 lines a chart; the optimum and RANDOM always, then the best at the largest k; the table
    holds every method. Lines on top of each other are said to be alike, with how close they are."""
    from auditor.evidence.kinds.local_explanations.present import LINES, _alike, _drawn_lines

    names = [f"m{i}" for i in range(11)] + ["random", "optimum"]
    curve = {m: [0.1, 0.01 * i] for i, m in enumerate(names)}
    drawn = _drawn_lines(curve)
    assert len(drawn) == LINES == 6 and {"random", "optimum"} <= set(drawn)
    assert drawn == [m for m in names if m in drawn]  # in the table's order
    assert set(drawn) - {"random", "optimum"} == {f"m{i}" for i in range(7, 11)}  # the best four at the largest k
    assert _drawn_lines(dict(list(curve.items())[:6])) == names[:6]
    assert _alike(curve, drawn) == (" The 4 explainers drawn lie within 0.0300 of each other at every k, so their "
                                    "lines overlap: on this model they are alike.")
    apart = {**curve, "m10": [0.5, 0.5]}
    assert _alike(apart, drawn) == ""  # 0.4 apart at k = 1: told apart by the chart itself
