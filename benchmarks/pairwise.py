"""Pairwise explanations (paper 003): RAIPair's error against exact ASIPair as M and H grow, and the time of ASIPair
(exact, all 2^D coalitions) vs RAIPair (H permutations) as D grows — the shape of the paper's Figure 2.

Synthetic and self-contained (no shared data): a LightGBM LambdaMART whose labels depend on 3 of D features (a
sparse model, as Theorem 2 assumes). Usage: python benchmarks/pairwise.py [--pairs 10] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.explain.pairwise import AsiPair, ConditionalFill, RaiPair  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from auditor.models.lightgbm import LightGBMRanker  # noqa: E402
from benchmarks import smoke  # noqa: E402


def sparse_ranker(d: int, seed: int = 0) -> tuple[CountingRanker, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_queries, per_query = 60, 20
    X = rng.uniform(-1, 1, size=(n_queries * per_query, d))
    third = X[:, 2] if d > 2 else X[:, -1]
    latent = 1.5 * X[:, 0] + X[:, 1 % d] - 0.8 * third * (X[:, 0] > 0) + rng.normal(scale=0.2, size=len(X))
    y = np.digitize(latent, np.quantile(latent, [0.5, 0.8, 0.95]))
    booster = lgb.train({"objective": "lambdarank", "verbose": -1, "num_leaves": 15, "min_data_in_leaf": 10,
                         "num_threads": 1, "seed": seed}, lgb.Dataset(X, y, group=[per_query] * n_queries), 100)
    return CountingRanker(LightGBMRanker(booster)), X


def error_table(pairs: int, d: int, fill_kind: str, hs: tuple[int, ...] = (2, 8, 32)) -> None:
    model, X = sparse_ranker(d)
    fill = ConditionalFill(X[:300], fill_kind)  # type: ignore[arg-type]
    rng = np.random.default_rng(1)
    chosen = [tuple(rng.choice(len(X), 2, replace=False)) for _ in range(pairs)]
    exact = [AsiPair(fill).explain(model, X[a], X[b], rng).phi for a, b in chosen]
    print(f"\nRAIPair relative L2 error vs exact ASIPair, D = {d}, {fill_kind} fill, mean over {pairs} pairs "
          "× 2 seeds (paper's RAIPair | with our efficiency re-centring)")
    ms = [m for m in (2, 4, 6, 8) if m < d] + [d]
    print("H \\ M".ljust(8) + "".join(f"{m:>16}" for m in ms))
    for h in hs:
        cells = []
        for m in ms:
            errs: dict[bool, list[float]] = {False: [], True: []}
            for seed in range(2):
                for (a, b), phi in zip(chosen, exact, strict=True):
                    pair = RaiPair(fill, measurements=m, permutations=h).explain(model, X[a], X[b],
                                                                                 np.random.default_rng(seed))
                    # the efficiency re-centring of the same run: φ − mean(deviation) = φ − (Σφ − (g − E[g]))/D
                    recentred = pair.phi - (pair.phi.sum() - (pair.value - pair.base)) / d
                    for eff, est in ((False, pair.phi), (True, recentred)):
                        errs[eff].append(np.linalg.norm(est - phi) / max(np.linalg.norm(phi), 1e-12))
            cells.append(f"{np.mean(errs[False]):.3f} | {np.mean(errs[True]):.3f}")
        print(f"{h:<8}" + "".join(f"{c:>16}" for c in cells))
    perm = []
    for h in hs:
        perm.append(np.mean([np.linalg.norm(AsiPair(fill, exact_max_features=0, permutations=h).explain(
            model, X[a], X[b], np.random.default_rng(0)).phi - phi) / max(np.linalg.norm(phi), 1e-12)
            for (a, b), phi in zip(chosen, exact, strict=True)]))
    print("ASIPair by permutation sampling, same H: " + ", ".join(f"H={h}: {e:.3f}"
                                                                for h, e in zip(hs, perm, strict=True)))


def timing_table(pairs: int, dims: list[int]) -> None:
    print("\nSeconds per pair and model rows per pair as D grows (adaptive fill; RAIPair H = 8, default M)")
    print(f"{'D':>3} {'ASIPair exact s':>16} {'rows':>10} {'RAIPair s':>10} {'rows':>10} {'ratio':>7}")
    for d in dims:
        model, X = sparse_ranker(d)
        fill = ConditionalFill(X[:300], "adaptive")
        rng = np.random.default_rng(2)
        chosen = [tuple(rng.choice(len(X), 2, replace=False)) for _ in range(pairs)]
        out = []
        for explainer in (AsiPair(fill, exact_max_features=d), RaiPair(fill, permutations=8)):
            rows0, start = model.rows_evaluated, time.perf_counter()
            for a, b in chosen:
                explainer.explain(model, X[a], X[b], np.random.default_rng(0))
            out.append(((time.perf_counter() - start) / pairs, (model.rows_evaluated - rows0) / pairs))
        print(f"{d:>3} {out[0][0]:>16.4f} {out[0][1]:>10.0f} {out[1][0]:>10.4f} {out[1][1]:>10.0f} "
              f"{out[0][0] / out[1][0]:>7.1f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="fewer sizes")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    pairs, d, hs, dims = args.pairs, 10, (2, 8, 32), [2, 4, 6, 8] if args.quick else list(range(2, 13))
    if args.smoke:
        pairs, d, hs, dims = 1, 6, (2, 8), [2, 4]
    RaiPair(ConditionalFill(np.zeros((3, 2)) + np.arange(3)[:, None], "masking"), permutations=2)  # warm numba
    error_table(pairs, d, "masking", hs)
    error_table(pairs, d, "adaptive", hs)
    timing_table(pairs, dims)


if __name__ == "__main__":
    main()
