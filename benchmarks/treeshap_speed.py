"""Our numba TreeSHAP (auditor/scoring/fast_treeshap.py) against shap.TreeExplainer and LightGBM's pred_contrib.

Synthetic MSLR-like data (136 features, ~120 documents a query, graded labels, some NaN and many zeros), a
LambdaMART of 500 trees × 63 leaves trained on a small sample (num_threads=2), then path-dependent TreeSHAP of the
same rows by the three, in this one process. shap's TreeExplainer on a booster calls pred_contrib itself, so the
two peers should be close; the ratio that matters is ours/shap.

    nice .venv/bin/python benchmarks/treeshap_speed.py            # 100k rows (the acceptance figure)
    nice .venv/bin/python benchmarks/treeshap_speed.py --rows 20000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numpy as np
import shap

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.scoring.fast_treeshap import FastTreeShap  # noqa: E402
from auditor.scoring.trees import TreeEnsemble  # noqa: E402
from benchmarks import smoke  # noqa: E402

N_FEATURES = 136


def mslr_like(n_rows: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, graded labels (0-4) and query sizes: skewed counts, a few strong features, NaN and zeros."""
    X = rng.lognormal(mean=0.0, sigma=1.0, size=(n_rows, N_FEATURES))
    X[:, ::3] = np.floor(X[:, ::3] * 3)  # count-like columns, many zeros
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0] + 0.5 * X[:, 7] - 0.3 * X[:, 20] + 0.2 * X[:, 50] * X[:, 51])
    signal += rng.normal(scale=1.0, size=n_rows)
    labels = np.digitize(signal, np.quantile(signal, [0.5, 0.75, 0.9, 0.97])).astype(np.int32)
    sizes = []
    while sum(sizes) < n_rows:
        sizes.append(int(min(rng.integers(60, 181), n_rows - sum(sizes))))
    return X, labels, np.array(sizes)


def timed(fn, X: np.ndarray) -> tuple[np.ndarray, float]:
    start = time.perf_counter()
    out = fn(X)
    return np.asarray(out), time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="rows explained (default 100000)")
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--leaves", type=int, default=63)
    parser.add_argument("--train-rows", type=int, default=4_000)
    parser.add_argument("--model", help="reuse this LightGBM model file (written after training when absent)")
    parser.add_argument("--threads", type=int, default=2, help="LightGBM's threads for training (default 2)")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.trees, args.leaves, args.train_rows, args.threads = 200, 10, 7, 500, 1
    rng = np.random.default_rng(0)

    X_train, y_train, sizes = mslr_like(args.train_rows, rng)
    start = time.perf_counter()
    if args.model and Path(args.model).exists():
        booster = lgb.Booster(model_file=args.model)
    else:
        booster = _train(args, X_train, y_train, sizes)
        if args.model:
            booster.save_model(args.model)
    train_seconds = time.perf_counter() - start
    X, _, _ = mslr_like(args.rows, rng)

    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    start = time.perf_counter()
    ours = FastTreeShap(ensemble)
    build_seconds = time.perf_counter() - start
    ours.contributions(X[:10])  # compile (or load the numba cache) outside the timing
    depth = _path_features(ours)
    print(f"model: {booster.num_trees()} trees x {args.leaves} leaves, {N_FEATURES} features, trained on "
          f"{args.train_rows} rows in {train_seconds:.1f} s; distinct features per leaf path: mean {depth.mean():.1f},"
          f" max {depth.max()}; precomputation {build_seconds:.1f} s, tables {ours.tables.table.nbytes / 1e6:.0f} MB")

    explainer = shap.TreeExplainer(booster)
    load_before = os.getloadavg()[0]
    runs = {}
    runs["ours (numba)"] = timed(ours.contributions, X)
    runs["shap.TreeExplainer"] = timed(lambda rows: explainer.shap_values(rows), X)
    runs["LightGBM pred_contrib"] = timed(lambda rows: booster.predict(rows, pred_contrib=True), X)

    reference = runs["LightGBM pred_contrib"][0]
    print(f"\n{args.rows} rows, path-dependent TreeSHAP (all {N_FEATURES} features + bias column)\n")
    print(f"| {'method':<22} | {'seconds':>8} | {'rows/s':>8} | {'max abs diff vs pred_contrib':>28} |")
    print(f"| {'-' * 22} | {'-' * 8}: | {'-' * 8}: | {'-' * 28}: |")
    for name, (values, seconds) in runs.items():
        if values.shape[1] == N_FEATURES:  # shap: no bias column; compare it with its expected_value
            diff = max(np.abs(values - reference[:, :-1]).max(),
                       abs(float(np.ravel(explainer.expected_value)[0]) - reference[0, -1]))
        else:
            diff = np.abs(values - reference).max()
        print(f"| {name:<22} | {seconds:8.2f} | {args.rows / seconds:8.0f} | {diff:28.1e} |")
    ratio = runs["shap.TreeExplainer"][1] / runs["ours (numba)"][1]
    ratio_lgb = runs["LightGBM pred_contrib"][1] / runs["ours (numba)"][1]
    print(f"\nspeed-up: ours is {ratio:.2f}x shap.TreeExplainer and {ratio_lgb:.2f}x pred_contrib "
          f"(ours/shap time ratio {1 / ratio:.3f}); load average (1 min) {load_before:.1f} before the timings, "
          f"{os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs")


def _train(args: argparse.Namespace, X_train: np.ndarray, y_train: np.ndarray, sizes: np.ndarray) -> lgb.Booster:
    params = {"objective": "lambdarank", "num_leaves": args.leaves, "learning_rate": 0.05, "min_data_in_leaf": 20,
              "num_threads": args.threads, "verbosity": -1, "seed": 0, "deterministic": True}
    return lgb.train(params, lgb.Dataset(X_train, y_train, group=sizes), num_boost_round=args.trees)


def _path_features(explainer: FastTreeShap) -> np.ndarray:
    ks = explainer.tables.leaf_k
    return ks[explainer.tables.leaf_start >= 0]


if __name__ == "__main__":
    main()
