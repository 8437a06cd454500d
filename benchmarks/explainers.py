"""Cost of every local explainer on MQ2008 Fold1 test, against the cost of the model itself.

    .venv/bin/python benchmarks/explainers.py [--queries N] [--k 5]

For each method: wall time over the audited queries, model rows evaluated, and the overhead ratio = method wall
time ÷ the time LightGBM takes to score the same number of rows in ONE call. A ratio near 1 means the method
spends its time in the model, as it should; the target is ≤ 1.5 for the greedy family and LIRME/EXS. Then the
side-by-side with the peer library (shap) on the same rows: `benchmarks/explainers_shap.py`.
Needs ../shared/data (or $AUDITOR_DATA); trains examples/mq2008/model.txt if missing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import auditor.evidence.local_explanations as local_explanations  # noqa: E402
from auditor.checks.validity import has_order  # noqa: E402
from auditor.evidence.local_explanations import ATTRIBUTION_BASES, LABELS, LocalExplanationsOptions  # noqa: E402
from auditor.explain.base import QueryView  # noqa: E402
from benchmarks.reproduce_valid_explanations import context  # noqa: E402

# `_explainers` is being renamed `explainers_for` in the working tree: run on both sides of that change.
make_explainers = getattr(local_explanations, "explainers_for", None) or local_explanations._explainers


def model_seconds(model, X: np.ndarray, rows: int) -> float:
    """Time for LightGBM to score `rows` rows (test rows tiled) in one call, best of 3."""
    if rows == 0:
        return float("nan")
    block = np.resize(X, (rows, X.shape[1]))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        model.inner.booster.predict(block, raw_score=True)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
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
    args = parser.parse_args()
    ctx, _ = context(None, 7)
    data, model, masker = ctx.data, ctx.model, ctx.masker()
    options = LocalExplanationsOptions(k=args.k, lime={"shared_samples": not args.per_document_draws})
    explainers = make_explainers(options)
    scores = ctx.scores()
    queries = [i for i in range(data.n_queries) if has_order(scores[data.query_slice(i)])][: args.queries]
    views = [QueryView(X=data.X[data.query_slice(i)], scores=scores[data.query_slice(i)], query_id=data.query_ids[i],
                       background=ctx.reference().X) for i in queries]
    print(f"MQ2008 Fold1 test: {len(views)} queries, k = {args.k}, {model.describe()['n_trees']} trees\n")
    print("| method | seconds | model rows | rows/s | LightGBM alone on those rows (s) | overhead ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    bases = {m[:-1]: ATTRIBUTION_BASES[m[:-1]] for m in options.methods if m[:-1] in ATTRIBUTION_BASES}
    runs = [(LABELS[f"{prefix}5"].replace("-5", "") + " (top 5 docs)", base, True) for prefix, base in bases.items()]
    runs += [(LABELS[m], m, False) for m in options.methods if m[:-1] not in ATTRIBUTION_BASES]
    if args.only:
        runs = [run for run in runs if run[1] in args.only]
    for label, key, attribution in runs:
        explainer = explainers[key]
        many = attribution and hasattr(explainer, "attribute_many") and not args.per_query_calls
        before, start = model.rows_evaluated, time.perf_counter()
        if many:  # as the evidence runs them: every query's own generator, a block of queries scored in one call
            explainer.attribute_many(model, views, [view.top_docs(5) for view in views], masker,
                                     [np.random.default_rng([7, qi]) for qi in queries])
        else:
            for qi, view in zip(queries, views, strict=True):
                rng = np.random.default_rng([7, qi])
                if attribution:
                    explainer.attribute(model, view, view.top_docs(5), masker, rng)
                else:
                    explainer.select(model, view, args.k, masker, rng)
        seconds, rows = time.perf_counter() - start, model.rows_evaluated - before
        alone = model_seconds(model, data.X, rows)
        ratio = seconds / alone if rows else float("nan")
        print(f"| {label} | {seconds:.2f} | {rows:,} | {rows / seconds:,.0f} | {alone:.2f} | {ratio:.2f} |")
    if not args.skip_shap:
        print("\nPeer library on the same rows (benchmarks/explainers_shap.py):\n", flush=True)
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "explainers_shap.py")], check=False)


if __name__ == "__main__":
    main()
