"""The local-explanation evidence of MQ2008 Fold1 test under each executor: serial, worker processes, Dask.

Runs `local_explanations` (default options unless narrowed) once per run on the same context and prints wall time
(worker start-up included), model rows, the speed-up over the first run (`--jobs 1`: one core), and whether the
evidence is identical. Target of issue 8: `--jobs 2` at least 1.7x faster than serial. Needs ../shared/data (or
$AUDITOR_DATA).

    nice .venv/bin/python benchmarks/executors.py                     # all 156 queries, every method
    nice .venv/bin/python benchmarks/executors.py --queries 40 --methods treeshap5 lirme5 greedy_cover_eps
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.evidence.executor import core_limit, make_executor  # noqa: E402
from auditor.evidence.explainers import method_names  # noqa: E402
from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions, run  # noqa: E402
from benchmarks import smoke  # noqa: E402
from benchmarks.reproduce_valid_explanations import context  # noqa: E402

# name -> (executor kind, workers, core limit): how `auditor report` runs with --jobs 1, --executor serial (no
# --jobs: every core by threads), --jobs 2, and --executor dask --jobs 2.
RUNS = {"jobs1": ("serial", 1, 1), "serial-threads": ("serial", 1, None), "jobs2": ("processes", 2, 2),
        "dask2": ("dask", 2, 2)}
SMOKE_RUNS = ["jobs1", "serial-threads"]  # starting worker processes or a Dask cluster takes longer than a smoke run
SMOKE_METHODS = ["treeshap5", "lirme5", "greedy_cover_eps"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=None, help="a seeded sample of queries (default: all)")
    parser.add_argument("--methods", nargs="+", default=None, choices=method_names())
    parser.add_argument("--k-curve", type=int, nargs="*", default=None, help="sizes for the effect-of-k curve "
                        "(default: the evidence's [3, 5, 7, 10]; give none to skip it and its exhaustive optimum)")
    parser.add_argument("--runs", nargs="+", default=None, choices=list(RUNS),
                        help="jobs1 = --jobs 1 (one core, the reference); serial-threads = --executor serial "
                             "(this process, every core by threads); jobs2 = --jobs 2 (worker processes); dask2 "
                             f"(default: all; with --smoke {' '.join(SMOKE_RUNS)})")
    parser.add_argument("--seed", type=int, default=7)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.queries, args.methods, args.k_curve = args.queries or 2, args.methods or SMOKE_METHODS, args.k_curve or []
    runs = args.runs or (SMOKE_RUNS if args.smoke else list(RUNS))
    options = LocalExplanationsOptions(queries=args.queries, **({"methods": args.methods} if args.methods else {}),
                                       **({"k_curve": args.k_curve} if args.k_curve is not None else {}))
    print(f"local_explanations on MQ2008 Fold1 test ({args.queries or 'all'} queries; methods: "
          f"{', '.join(options.methods)}; k = {options.k}, curve {options.k_curve})\n")
    print("| run | executor | workers | core limit | seconds | model rows | speed-up vs first run "
          "| evidence identical to first run |")
    print("|---|---|---|---|---|---|---|---|")
    reference: str | None = None
    first_seconds: float | None = None
    for name in runs:
        kind, jobs, cores = RUNS[name]
        with smoke.workdir(args.smoke) as tmp:
            ctx, _ = context(args.queries, args.seed, tmp)
        ctx.scores()  # the shared full-data scores are not part of the per-query work
        start = time.perf_counter()
        ctx.executor = make_executor(kind, jobs)  # type: ignore[arg-type]
        try:
            with core_limit(cores):
                result = run(ctx, options)
        finally:
            ctx.executor.close()
        seconds = time.perf_counter() - start
        evidence = json.dumps(result.to_json(), sort_keys=True)
        same = "—" if reference is None else ("yes" if evidence == reference else "NO")
        speed = "—" if first_seconds is None else f"{first_seconds / seconds:.2f}×"
        if reference is None:
            reference, first_seconds = evidence, seconds
        print(f"| {name} | {kind} | {ctx.workers} | {cores or 'none'} | {seconds:.1f} | {ctx.model.rows_evaluated:,} "
              f"| {speed} | {same} |", flush=True)


if __name__ == "__main__":
    main()
