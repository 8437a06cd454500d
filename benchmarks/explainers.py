"""Cost of every local explainer on MQ2008 Fold1 test, against the cost of the model itself.

    .venv/bin/python benchmarks/explainers.py [--queries N] [--k 5] [--repeats 3]

For each method: wall time over the audited queries, model rows evaluated, and the overhead ratio = method wall
time ÷ the time LightGBM takes to score the same rows in ONE call. A ratio near 1 means the method spends its time
in the model, as it should; the target is ≤ 1.5 for the greedy family and LIRME/EXS. The last column is the
difference instead of the ratio (method seconds − LightGBM's seconds on its rows, median over the pairs): the time
the method spends outside the model, which is what a cheaper sampling design (shared draws: fewer rows) cannot hide
and a ratio can (fewer model rows raise the ratio of a method whose own time stays the same).

The rows the method scored are recorded in a first, untimed run (seeded: every run scores the same rows; checked:
LightGBM gives the same scores again). LightGBM takes ~15 % longer on LIME-tabular samples than on real documents
(random feature combinations take less predictable paths), and that is the model's time, not the method's
overhead; the time on the same NUMBER of test rows (tiled), the denominator used until 2026-11-23, is printed too.
The recorded run also warms up (compiled kernels loaded, the background's sampler built), as the denominator's
LightGBM is warm. Then `--repeats` timed runs, each followed by LightGBM alone on the same rows: the ratio is the
median over these pairs (this VM's speed drifts by ±10–30 % over minutes, so a ratio of two measurements taken
apart is noisier than the effects measured here).

Then the side-by-side with the peer library (shap) on the same rows: `benchmarks/explainers_shap.py`.
Needs ../shared/data (or $AUDITOR_DATA); trains examples/mq2008/model.txt if missing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.checks.validity import has_order  # noqa: E402
from auditor.core.threads import threads_here  # noqa: E402
from auditor.evidence.explainers import build  # noqa: E402
from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions  # noqa: E402
from auditor.explain import registry  # noqa: E402
from auditor.explain.base import QueryView  # noqa: E402
from auditor.explain.perturb import parallel_map, workers  # noqa: E402
from benchmarks import smoke  # noqa: E402
from benchmarks.reproduce_valid_explanations import context  # noqa: E402


def model_seconds(model, block: np.ndarray, repeats: int = 3) -> float:
    """Time for LightGBM to score `block` in one call, best of `repeats`."""
    if block.shape[0] == 0:
        return float("nan")
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        model.inner.booster.predict(block, raw_score=True)
        best = min(best, time.perf_counter() - start)
    return best


class Recorder:
    """Keeps every (rows, scores) pair the model is asked for during a run, by reference; `rows()` concatenates
    the rows after checking that LightGBM gives the same scores again (a method that reused and overwrote a row
    buffer would otherwise be timed on rows it never scored)."""

    def __init__(self, model) -> None:
        self.model, self.calls = model, []
        self._predict = model.predict

    def __enter__(self) -> Recorder:
        def predict(X: np.ndarray) -> np.ndarray:
            scores = self._predict(X)
            self.calls.append((X, scores))
            return scores

        self.model.predict = predict
        return self

    def __exit__(self, *exc) -> None:
        del self.model.predict  # the instance attribute: back to the class's method

    def rows(self) -> np.ndarray:
        if not self.calls:
            return np.zeros((0, self.model.n_features or 0))
        rows = np.concatenate([np.asarray(X, dtype=np.float64) for X, _ in self.calls])
        again = np.asarray(self.model.inner.booster.predict(rows, raw_score=True), dtype=np.float64)
        if not np.array_equal(again, np.concatenate([scores for _, scores in self.calls])):
            raise RuntimeError("the recorded rows no longer give the scores the method received")
        return rows


def run_method(explainer, model, masker, queries: list[int], views: list[QueryView], k: int, many: bool,
               attribution: bool, threads: int = 1) -> None:
    """One explainer over the queries: with `many`, as the evidence runs LIRME/EXS (every query's own generator,
    a block of queries scored in one call); otherwise one call per query, on `threads` threads that each score
    on one LightGBM thread, as the evidence's executor workers do (LightGBM on two OpenMP threads takes ~2.3×
    longer on the searches' ~1,000-row calls than on one large call; on one thread per call it does not)."""
    if many:
        explainer.attribute_many(model, views, [view.top_docs(5) for view in views], masker,
                                 [np.random.default_rng([7, qi]) for qi in queries])
        return

    def run(chunk: list[tuple[int, QueryView]]) -> None:
        with threads_here(1) if threads > 1 else nullcontext():
            for qi, view in chunk:
                rng = np.random.default_rng([7, qi])
                if attribution:
                    explainer.attribute(model, view, view.top_docs(5), masker, rng)
                else:
                    explainer.select(model, view, k, masker, rng)

    pairs = list(zip(queries, views, strict=True))
    parallel_map(run, [pairs[start::threads] for start in range(threads)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=None, help="first N queries (default: all 156)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--skip-shap", action="store_true", help="do not run benchmarks/explainers_shap.py")
    parser.add_argument("--only", nargs="+", default=None, metavar="KEY",
                        help="only these explainers (e.g. lirme exs greedy)")
    parser.add_argument("--per-document-draws", action="store_true",
                        help="LIRME/EXS draw samples per document (lime.shared_samples: false)")
    parser.add_argument("--per-query-calls", action="store_true",
                        help="LIRME/EXS one `attribute` call (and one model call) per query, not `attribute_many`")
    parser.add_argument("--sequential", action="store_true",
                        help="per-query methods on the calling thread, LightGBM on all cores per call (before "
                             "2026-11-23); default: on the executor's thread count, one LightGBM thread each")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed runs per method, each paired with LightGBM alone on its rows (default 3)")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:  # explainers_shap.py has a smoke mode of its own
        args.queries, args.repeats, args.skip_shap = args.queries or 2, 1, True
    with smoke.workdir(args.smoke) as tmp:
        ctx, _ = context(None, 7, tmp)
    data, model, masker = ctx.data, ctx.model, ctx.masker()
    options = LocalExplanationsOptions(k=args.k, lime={"shared_samples": not args.per_document_draws})
    explainers = build(options)
    scores = ctx.scores()
    queries = [i for i in range(data.n_queries) if has_order(scores[data.query_slice(i)])][: args.queries]
    views = [QueryView(X=data.X[data.query_slice(i)], scores=scores[data.query_slice(i)], query_id=data.query_ids[i],
                       background=ctx.reference().X) for i in queries]
    print(f"MQ2008 Fold1 test: {len(views)} queries, k = {args.k}, {model.describe()['n_trees']} trees\n")
    print(f"Each method {args.repeats}×, each time followed by LightGBM alone on its rows; medians, and the "
          "ratio's range over the pairs.\n")
    print("| method | seconds | model rows | rows/s | LightGBM alone, tiled test rows (s) | ratio, tiled rows "
          "| LightGBM alone, the method's rows (s) | overhead ratio | ratio range | seconds beyond the model |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    chosen = [registry.method(m) for m in options.methods]
    bases = list(dict.fromkeys(m.explainer.name for m in chosen if m.attribution))
    runs = [(registry.EXPLAINERS[base].label + " (top 5 docs)", base, True) for base in bases]
    runs += [(m.label, m.name, False) for m in chosen if not m.attribution]
    if args.only:
        runs = [run for run in runs if run[1] in args.only]
    threads = 1 if args.sequential else workers()
    for label, key, attribution in runs:
        explainer = explainers[key]
        many = attribution and registry.EXPLAINERS[key].batches and not args.per_query_calls

        # Untimed first run, recorded: it also loads the compiled kernels and builds the background's sampler.
        with Recorder(model) as recorder:
            before = model.rows_evaluated
            run_method(explainer, model, masker, queries, views, args.k, many, attribution, threads)
            rows = model.rows_evaluated - before
        own = recorder.rows()
        recorder.calls.clear()
        if rows == 0:  # RANDOM: no model rows, nothing to compare with
            print(f"| {label} | — | 0 | — | — | — | — | — | — | — |", flush=True)
            continue
        if own.shape[0] != rows:  # TreeSHAP: LightGBM's own pred_contrib, no rows scored through predict
            start = time.perf_counter()
            run_method(explainer, model, masker, queries, views, args.k, many, attribution, threads)
            seconds_here = time.perf_counter() - start
            print(f"| {label} | {seconds_here:.2f} | {rows:,} | — | — | — | — | (model-internal) | — | — |", flush=True)
            continue
        seconds, alone = [], []
        for _ in range(args.repeats):  # each method run paired with the model alone, close in time: this VM drifts
            before, start = model.rows_evaluated, time.perf_counter()
            run_method(explainer, model, masker, queries, views, args.k, many, attribution, threads)
            seconds.append(time.perf_counter() - start)
            if model.rows_evaluated - before != rows:
                raise RuntimeError(f"{label}: a timed run scored {model.rows_evaluated - before:,} rows, the "
                                   f"recorded one {rows:,}")
            alone.append(model_seconds(model, own, repeats=1))
        tiled = model_seconds(model, np.resize(data.X, (rows, data.X.shape[1])))
        del own
        ratios = [s / a for s, a in zip(seconds, alone, strict=True)]
        beyond = [s - a for s, a in zip(seconds, alone, strict=True)]  # the method's own time, in seconds
        median = float(np.median(seconds))
        print(f"| {label} | {median:.2f} | {rows:,} | {rows / median:,.0f} | {tiled:.2f} | {median / tiled:.2f} "
              f"| {np.median(alone):.2f} | {np.median(ratios):.2f} | {min(ratios):.2f}–{max(ratios):.2f} "
              f"| {np.median(beyond):.2f} |", flush=True)
    if not args.skip_shap:
        print("\nPeer library on the same rows (benchmarks/explainers_shap.py):\n", flush=True)
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "explainers_shap.py")], check=False)


if __name__ == "__main__":
    main()
