"""Where LIRME's and EXS's time goes on MQ2008 Fold1 test: CPU seconds per phase, everything on ONE thread.

    .venv/bin/python benchmarks/lime_phases.py [exs|lirme] [--per-document-draws] [--repeats 3]

`benchmarks/explainers.py` gives the overhead ratio (wall time ÷ LightGBM alone on the same rows); this script says
what the part beyond the model is made of: every phase of `attribute_many` (drawing the rows, the model call,
standardising, kernel weights, labels, the surrogate fits) is timed by a wrapper around its function, with BLAS,
OpenMP (LightGBM) and the block workers limited to one thread, so the phases add up to the total and each is CPU
time. The last of `--repeats` runs is printed (the first also loads the compiled kernels and builds the sampler).
Needs ../shared/data (or $AUDITOR_DATA); trains examples/mq2008/model.txt if missing.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import auditor.explain.exs as exs  # noqa: E402
import auditor.explain.lirme as lirme  # noqa: E402
import auditor.explain.perturb as perturb  # noqa: E402
from auditor.checks.validity import has_order  # noqa: E402
from auditor.evidence.explainers import build  # noqa: E402
from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions  # noqa: E402
from auditor.explain.base import QueryView  # noqa: E402
from benchmarks import smoke  # noqa: E402
from benchmarks.reproduce_valid_explanations import context  # noqa: E402

# (module, function, phase): the functions `attribute_many` calls by their module-level name.
PHASES = [
    (perturb, "draw_rows", "drawing the rows (sampler)"),
    (perturb, "split_scored", "standardising"),
    (perturb, "standardised_kernel", "kernel weights"),
    (exs, "exs_labels", "EXS labels"),
    (exs, "l2_svr", "EXS: L2 start"),
    (exs, "l1_svr", "EXS: exact L1 fit"),
    (lirme, "weighted_ridge", "LIRME: ridge fit"),
]


def timed(seconds: collections.Counter, phase: str, function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[phase] += time.perf_counter() - start

    return wrapper


@contextlib.contextmanager
def phases_timed(seconds: collections.Counter) -> Iterator[None]:
    """Every phase's function wrapped by its timer, and one block at a time on this thread, while the block runs;
    restored afterwards, as the modules are shared with whatever runs next in this process."""
    saved = [(module, name, getattr(module, name)) for module, name, _ in PHASES]
    saved.append((perturb, "workers", perturb.workers))
    for module, name, phase in PHASES:
        setattr(module, name, timed(seconds, phase, getattr(module, name)))
    perturb.workers = lambda: 1
    try:
        yield
    finally:
        for module, name, function in saved:
            setattr(module, name, function)


def profile(ctx, method: str, per_document_draws: bool, repeats: int) -> None:
    """Time the phases of one explainer's `attribute_many` over every query with an order; print the last run."""
    seconds: collections.Counter = collections.Counter()
    data, model, masker = ctx.data, ctx.model, ctx.masker()
    options = LocalExplanationsOptions(k=5, lime={"shared_samples": not per_document_draws})
    explainer = build(options)[method]
    scores = ctx.scores()
    queries = [i for i in range(data.n_queries) if has_order(scores[data.query_slice(i)])]
    views = [QueryView(X=data.X[data.query_slice(i)], scores=scores[data.query_slice(i)],
                       query_id=data.query_ids[i], background=ctx.reference().X) for i in queries]
    model.predict = timed(seconds, "the model (LightGBM)", model.predict)
    try:
        with phases_timed(seconds):
            for _ in range(repeats):
                seconds.clear()
                start = time.perf_counter()
                with threadpool_limits(1):  # BLAS and LightGBM's OpenMP
                    explainer.attribute_many(model, views, [view.top_docs(5) for view in views], masker,
                                             [np.random.default_rng([7, qi]) for qi in queries])
                total = time.perf_counter() - start
    finally:
        del model.predict  # the instance attribute: back to the class's method
    draws = "per-document draws" if per_document_draws else "shared draws"
    print(f"{method.upper()}, top 5 documents of {len(views)} queries, {draws}, one thread: {total:.3f} s\n")
    print("| phase | CPU seconds | share |")
    print("| --- | ---: | ---: |")
    for phase, value in seconds.most_common():
        print(f"| {phase} | {value:.3f} | {value / total:.0%} |")
    rest = total - sum(seconds.values())
    print(f"| the rest (loops, blocks, bookkeeping) | {rest:.3f} | {rest / total:.0%} |")
    model_seconds = seconds["the model (LightGBM)"]
    print(f"\nTotal ÷ model: {total / model_seconds:.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", nargs="?", choices=["exs", "lirme"], help="required, but with --smoke (both)")
    parser.add_argument("--per-document-draws", action="store_true",
                        help="draw samples per document (lime.shared_samples: false), the paper's configuration")
    parser.add_argument("--repeats", type=int, default=3)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.method is None and not args.smoke:
        parser.error("the method is required: exs or lirme")
    with smoke.workdir(args.smoke) as tmp:
        ctx, _ = context(None, 7, tmp)
    for method in [args.method] if args.method else ["exs", "lirme"]:
        profile(ctx, method, args.per_document_draws, 1 if args.smoke else args.repeats)


if __name__ == "__main__":
    main()
