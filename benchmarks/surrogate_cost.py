"""Wall time and peak memory of fitting an ILMART surrogate (auditor/surrogate), in a fresh process.

    .venv/bin/python benchmarks/surrogate_cost.py --synthetic 1000000 --features 136 [--json out.json]
    .venv/bin/python benchmarks/surrogate_cost.py --mq2008

Synthetic: queries of 50-150 documents, uniform features (float32), a black-box score made of smooth main effects
of the first 20 features, 5 products of feature pairs and noise; the surrogate fits its per-query standardised
values (regression target, the default). Peak memory is the process's VmHWM (Linux), data included. MQ2008: the
LambdaMART of examples/mq2008 on Fold1 train (vali for early stopping), as the `surrogate` evidence does.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.surrogate.fidelity import standardised  # noqa: E402
from auditor.surrogate.ilmart import IlmartConfig, RankSet, fit_ilmart  # noqa: E402


def peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e6
    return float("nan")


def synthetic(n_docs: int, n_features: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = []
    while sum(sizes) < n_docs:
        sizes.append(int(rng.integers(50, 151)))
    sizes[-1] -= sum(sizes) - n_docs
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    X = rng.random((n_docs, n_features), dtype=np.float32)
    score = np.zeros(n_docs)
    for f in range(min(20, n_features)):
        score += (1.0 / (f + 1)) * np.sin(3.0 * X[:, f] + f)
    for i, j in [(0, 1), (2, 3), (4, 7), (5, 9), (10, 11)]:
        if j < n_features:
            score += 0.5 * X[:, i] * X[:, j]
    score += 0.1 * rng.standard_normal(n_docs)
    return X, score, ptr


def split(X: np.ndarray, y: np.ndarray, ptr: np.ndarray, share: float = 0.2) -> tuple[RankSet, RankSet]:
    n_queries = len(ptr) - 1
    cut = round(n_queries * (1 - share))
    return (RankSet(X[: ptr[cut]], y[: ptr[cut]], np.diff(ptr[: cut + 1])),
            RankSet(X[ptr[cut]:], y[ptr[cut]:], np.diff(ptr[cut:])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=0, help="documents of the synthetic set")
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--mq2008", action="store_true")
    parser.add_argument("--interactions", type=int, default=10)
    parser.add_argument("--max-rounds", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    config = IlmartConfig(objective="regression", n_interactions=args.interactions, max_rounds=args.max_rounds,
                          num_threads=args.threads)
    if args.mq2008:
        import lightgbm as lgb

        from auditor.data import load_ranking_data

        root = Path(os.environ.get("AUDITOR_DATA", ROOT.parent / "shared" / "data"))
        folder = root / "MQ2008" / "Fold1"
        blackbox = lgb.Booster(model_file=str(ROOT / "examples" / "mq2008" / "model.txt"))
        parts = [load_ranking_data(folder / name, format="svmlight", n_features=46) for name in ("train.txt.gz",
                                                                                                "vali.txt")]
        before = peak_mb()
        started = time.perf_counter()
        sets = [RankSet(d.X, standardised(blackbox.predict(d.X, raw_score=True), d.query_ptr), d.query_sizes())
                for d in parts]
        label, n_docs, n_features = "MQ2008 Fold1 train", parts[0].n_docs, 46
    else:
        X, score, ptr = synthetic(args.synthetic, args.features)
        before = peak_mb()
        started = time.perf_counter()
        sets = list(split(X, standardised(score, ptr), ptr))
        label, n_docs, n_features = "synthetic", args.synthetic, args.features
    fit = fit_ilmart(sets[0], sets[1], config=config)
    seconds = time.perf_counter() - started
    print(json.dumps({"data": label, "docs": n_docs, "features": n_features, "seconds": round(seconds, 2),
                      "phases": {k: round(v, 2) for k, v in fit.seconds.items()}, "peak_mb": round(peak_mb(), 1),
                      "peak_mb_before_fit": round(before, 1), "main_trees": fit.main_trees,
                      "interaction_trees": fit.interaction_trees, "probe_trees": fit.probe_trees,
                      "main_features": len(fit.main_features), "pairs": len(fit.pairs), "threads": args.threads}))


if __name__ == "__main__":
    main()
