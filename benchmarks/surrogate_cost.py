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
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.surrogate.fidelity import standardised  # noqa: E402
from auditor.surrogate.ilmart import IlmartConfig, RankSet, fit_ilmart  # noqa: E402
from benchmarks import smoke  # noqa: E402


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


Targets = Callable[[], list[RankSet]]  # the fit's training and validation sets, targets computed when called


def mq2008_data(tmp: Path | None) -> tuple[str, int, int, Targets]:
    """Fold1 train and vali, read now; their targets are the LambdaMART's standardised scores, computed when asked
    (in the measured time, as the evidence pays it). `tmp`: smoke mode's tiny look-alike."""
    import lightgbm as lgb

    from auditor.inputs.data import load_ranking_data

    fold = smoke.mq2008(tmp)
    blackbox = lgb.Booster(model_file=str(fold.model))
    parts = [load_ranking_data(fold.folder / name, format="svmlight", n_features=46)
             for name in ("train.txt.gz", "vali.txt")]
    return "MQ2008 Fold1 train", parts[0].n_docs, 46, lambda: [
        RankSet(d.X, standardised(blackbox.predict(d.X, raw_score=True), d.query_ptr), d.query_sizes())
        for d in parts]


def synthetic_data(n_docs: int, n_features: int) -> tuple[str, int, int, Targets]:
    """The synthetic set (module docstring), made now; 20 % of its queries for early stopping."""
    X, score, ptr = synthetic(n_docs, n_features)
    return "synthetic", n_docs, n_features, lambda: list(split(X, standardised(score, ptr), ptr))


def measure(config: IlmartConfig, label: str, n_docs: int, n_features: int, targets: Targets) -> None:
    """Targets and fit, timed; one JSON line: wall time, phases, peak memory (data included)."""
    before = peak_mb()
    started = time.perf_counter()
    sets = targets()
    fit = fit_ilmart(sets[0], sets[1], config=config)
    seconds = time.perf_counter() - started
    print(json.dumps({"data": label, "docs": n_docs, "features": n_features, "seconds": round(seconds, 2),
                      "phases": {k: round(v, 2) for k, v in fit.seconds.items()}, "peak_mb": round(peak_mb(), 1),
                      "peak_mb_before_fit": round(before, 1), "main_trees": fit.main_trees,
                      "interaction_trees": fit.interaction_trees, "probe_trees": fit.probe_trees,
                      "main_features": len(fit.main_features), "pairs": len(fit.pairs),
                      "threads": config.num_threads}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=0, help="documents of the synthetic set")
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--mq2008", action="store_true")
    parser.add_argument("--interactions", type=int, default=10)
    parser.add_argument("--max-rounds", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:  # both: 2,000 synthetic documents of 20 features, and the tiny MQ2008 look-alike
        args.synthetic, args.features, args.max_rounds, args.threads = 2_000, 20, 50, 1
    elif not args.synthetic and not args.mq2008:
        parser.error("give --synthetic N (documents) or --mq2008")
    config = IlmartConfig(objective="regression", n_interactions=args.interactions, max_rounds=args.max_rounds,
                          num_threads=args.threads)
    with smoke.workdir(args.smoke) as tmp:
        if args.mq2008 or args.smoke:
            measure(config, *mq2008_data(tmp))
        if args.synthetic:
            measure(config, *synthetic_data(args.synthetic, args.features))


if __name__ == "__main__":
    main()
