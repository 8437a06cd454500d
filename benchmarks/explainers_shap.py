"""Benchmark: auditor's TreeShap and KernelShap side by side with shap's TreeExplainer and KernelExplainer.

On MQ2008 Fold1 test (LETOR 4.0, 46 features) with the LambdaMART of `examples/mq2008` (its `model.txt`, trained
there by `examples/mq2008/train.py` when missing):

* TreeSHAP (path-dependent): the same 5,000 rows (the 2,874 test rows repeated) through ours and
  `shap.TreeExplainer(booster).shap_values`;
* TreeSHAP (interventional): 50 rows, the same 1,000 evenly spaced background rows for both;
* KernelSHAP: the top-scored document of each of the first 10 queries, nsamples=200, the same single mean-row
  background (the default masker), ours vs `shap.KernelExplainer(f, mean_row).shap_values(x, nsamples=200,
  l1_reg=False)`. Both sample, so they differ by sampling noise; each is also compared with the exact Shapley values
  of the same game (interventional TreeSHAP with the one mean row as background).

    .venv/bin/python benchmarks/explainers_shap.py [--smoke]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import lightgbm as lgb
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import shap  # noqa: E402

from auditor.explain.base import QueryView  # noqa: E402
from auditor.explain.kernelshap import KernelShap  # noqa: E402
from auditor.explain.treeshap import TreeShap  # noqa: E402
from auditor.inputs.data import RankingData, load_ranking_data  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from auditor.models.lightgbm import LightGBMRanker  # noqa: E402
from auditor.models.masking import Masker  # noqa: E402
from benchmarks import smoke  # noqa: E402


@dataclass(frozen=True)
class Sizes:
    """How much each comparison explains."""

    tree_rows: int = 5_000  # path-dependent TreeSHAP: test rows, repeated
    interventional_rows: int = 50
    queries: int = 10  # KernelSHAP: the top document of each of the first queries
    nsamples: int = 200


SMOKE = Sizes(tree_rows=50, interventional_rows=5, queries=3, nsamples=50)


def timed(function: Callable[[], np.ndarray], repeats: int = 1) -> tuple[float, np.ndarray]:
    """Best wall time of `repeats` runs, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    with smoke.workdir(args.smoke) as tmp:
        fold = smoke.mq2008(tmp)
        data = load_ranking_data(fold.folder / "test.txt", n_features=46)
        booster = lgb.Booster(model_file=str(fold.model))
    compare(data, booster, SMOKE if args.smoke else Sizes())


def compare(data: RankingData, booster: lgb.Booster, sizes: Sizes) -> None:
    """Ours and shap's explainers on the same rows (module docstring): seconds, differences, notes."""
    model = CountingRanker(LightGBMRanker(booster))
    raw = lambda A: booster.predict(A, raw_score=True)  # noqa: E731
    masker = Masker.from_background(data.X)  # the default: one mean row
    rows: list[tuple[str, float, float, float]] = []
    notes: list[str] = []

    # TreeSHAP, path-dependent: the same 5,000 rows.
    X = data.X[np.arange(sizes.tree_rows) % data.n_docs]
    view = QueryView(X=X, scores=np.zeros(len(X)), query_id="all", background=data.X)
    ours_s, ours = timed(lambda: TreeShap().attribute(model, view, np.arange(len(X)), masker,
                                                      np.random.default_rng(0)).values, repeats=2)
    shap_s, theirs = timed(lambda: shap.TreeExplainer(booster).shap_values(X), repeats=2)
    rows.append((f"TreeSHAP path ({sizes.tree_rows} rows)", ours_s, shap_s, float(np.abs(ours - theirs).max())))

    # TreeSHAP, interventional: 1,000 background rows for both (explainer construction included in both times).
    explainer = TreeShap(mode="interventional")
    background = explainer.background_rows(data.X)
    Xi = data.X[:sizes.interventional_rows]
    view = QueryView(X=Xi, scores=np.zeros(len(Xi)), query_id="all", background=data.X)
    ours_s, ours = timed(lambda: TreeShap(mode="interventional").attribute(model, view, np.arange(len(Xi)), masker,
                                                                           np.random.default_rng(0)).values)
    shap_s, theirs = timed(lambda: shap.TreeExplainer(
        booster, data=shap.maskers.Independent(background, max_samples=len(background)),
        feature_perturbation="interventional").shap_values(Xi, check_additivity=False))
    rows.append((f"TreeSHAP interventional ({sizes.interventional_rows} rows × {len(background)} bg)", ours_s, shap_s,
                 float(np.abs(ours - theirs).max())))

    # KernelSHAP: top document of the first 10 queries, one mean-row background for both.
    queries = []
    for q in range(data.n_queries):
        part = data.X[data.query_slice(q)]
        scores = raw(part)
        if len(part) >= 2 and np.ptp(scores) > 0:
            queries.append(QueryView(X=part, scores=scores, query_id=data.query_ids[q], background=data.X))
        if len(queries) == sizes.queries:
            break
    tops = np.array([view.X[view.top_docs(1)[0]] for view in queries])
    kernel = KernelShap(nsamples=sizes.nsamples)
    rng = np.random.default_rng(0)
    rows_before = model.rows_evaluated
    ours_s, ours = timed(lambda: np.vstack([kernel.attribute(model, view, view.top_docs(1), masker, rng).values
                                            for view in queries]))
    our_rows = model.rows_evaluated - rows_before
    np.random.seed(0)
    reference = shap.KernelExplainer(raw, masker.fill)
    shap_s, theirs = timed(lambda: reference.shap_values(tops, nsamples=sizes.nsamples, l1_reg=False, silent=True))
    rows.append((f"KernelSHAP ({sizes.queries} top docs, nsamples={sizes.nsamples}, mean row)", ours_s, shap_s,
                 float(np.abs(ours - theirs).max())))

    exact = shap.TreeExplainer(booster, data=shap.maskers.Independent(masker.fill, max_samples=1),
                               feature_perturbation="interventional").shap_values(tops, check_additivity=False)
    varying = int(np.mean([(top != masker.fill[0]).sum() for top in tops]))
    notes.append(f"KernelSHAP: {varying} of {data.n_features} features vary on average (2^{varying} − 2 coalitions, "
                 f"so {sizes.nsamples} samples really sample); our run scored {our_rows} model rows in {len(queries)} "
                 "predict calls.")
    notes.append(f"KernelSHAP vs exact Shapley values of the same game (interventional TreeSHAP, mean row): max |φ| "
                 f"{np.abs(exact).max():.4f}; max abs error ours {np.abs(ours - exact).max():.4f}, shap "
                 f"{np.abs(theirs - exact).max():.4f}; RMSE ours {np.sqrt(np.mean((ours - exact) ** 2)):.4f}, shap "
                 f"{np.sqrt(np.mean((theirs - exact) ** 2)):.4f}.")

    print(f"MQ2008 Fold1 test: {data.n_docs} rows, {data.n_queries} queries; model {booster.num_trees()} trees, "
          f"{booster.num_feature()} features; shap {shap.__version__}, lightgbm {lgb.__version__}, "
          f"{os.cpu_count()} CPUs\n")
    print("| method | ours s | shap s | ratio shap/ours | max abs diff |")
    print("|---|---:|---:|---:|---:|")
    for name, ours_s, shap_s, diff in rows:
        print(f"| {name} | {ours_s:.3f} | {shap_s:.3f} | {shap_s / ours_s:.1f} | {diff:.2e} |")
    print()
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
