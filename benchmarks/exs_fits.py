"""EXS's exact L1 SVR on the fits a wide audit makes: how many certify, and the seconds a fit, one thread.

    .venv/bin/python benchmarks/exs_fits.py [--features 700] [--queries 8]   # 136 by default
    .venv/bin/python benchmarks/exs_fits.py --smoke

The fits are the ones `local_explanations` (EXS-5, k = 5, shared draws, serial) makes on the wide synthetic data
of `benchmarks/wide_data.py` (prepared once in /tmp/auditor-wide/F): the solver's inputs are recorded as the audit
calls it, then solved again, one after another on one thread, after a first call that loads the compiled kernels.
Printed: the fits, how many the exact solver certified (the others fall back to liblinear in an audit, which is
timed apart on the first of them), and the seconds a certified fit. docs/explainers.md ("Solver") has the history.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import auditor.explain.exs as exs  # noqa: E402
from auditor.explain import svr  # noqa: E402
from benchmarks import local_wide, smoke  # noqa: E402
from benchmarks.wide_data import prepare as prepare_wide  # noqa: E402


def recorded_fits(spec: Path, queries: int) -> list[tuple[np.ndarray, ...]]:
    """The (Z, y, c, start) of every exact L1 fit EXS makes on the spec's first `queries` queries."""
    fits: list[tuple[np.ndarray, ...]] = []
    solve = exs.l1_svr

    def recording(Z: np.ndarray, y: np.ndarray, c: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, bool]:
        fits.append((Z.copy(), y.copy(), c.copy(), start.copy()))
        return solve(Z, y, c, start)

    exs.l1_svr = recording
    try:
        local_wide.run_once(spec, {"methods": ["exs5"], "queries": queries, "k_curve": []}, jobs=1)
    finally:
        exs.l1_svr = solve
    return fits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--queries", type=int, default=8)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    with smoke.workdir(args.smoke) as tmp:
        spec = smoke.wide(tmp) if tmp else prepare_wide(Path("/tmp/auditor-wide") / str(args.features), args.features)
        fits = recorded_fits(spec, 2 if args.smoke else args.queries)
    with threadpool_limits(1):
        svr.l1_svr(*fits[0])  # loads (or compiles) the kernels
        results, seconds = [], []
        for fit in fits:
            start = time.perf_counter()
            results.append(svr.l1_svr(*fit))
            seconds.append(time.perf_counter() - start)
        certified = [s for s, (_, ok) in zip(seconds, results, strict=True) if ok]
        failed = [fit for fit, (_, ok) in zip(fits, results, strict=True) if not ok]
        print(f"{spec}: {len(fits)} fits of {fits[0][0].shape[0]} samples × {fits[0][0].shape[1]} features; "
              f"certified {len(certified)}; {1000 * float(np.mean(certified)) if certified else 0.0:.0f} ms a "
              f"certified fit (median {1000 * float(np.median(certified)) if certified else 0.0:.0f})")
        if failed:
            Z, y, c, _ = failed[0]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                exs.liblinear_svr(Z, y, c, 1.0, "epsilon_insensitive", 20_000)
            print(f"the liblinear fallback of the first that did not certify: {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
