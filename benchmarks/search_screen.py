"""The set searches (GREEDY family, our validity search, the exhaustive optimum) with and without candidate
screening: the sets each returns per query and k, their validity, model rows and seconds, and the agreement of a
screened run with the unscreened one.

    .venv/bin/python benchmarks/search_screen.py --spec /path/to/mq2008.yaml --save /tmp/mq-all.json
    .venv/bin/python benchmarks/search_screen.py --spec /path/to/mq2008.yaml --compare /tmp/mq-all.json \\
        --candidates 10 15 20 30
    .venv/bin/python benchmarks/search_screen.py --queries 20 --k 5 --save /tmp/wide-all.json     # wide data

Every method runs on every query (or a seeded sample of --queries) and every k with the evidence's own streams
(`local/<method>/<k>/<query>`), one query after another on one LightGBM thread (as the evidence's workers run
them), so seconds compare between runs on a quiet machine. `--save` writes the sets; `--compare FILE` reads the
sets of an earlier (unscreened) run and prints, per method and k, the share of (query, k) whose set is identical,
the mean validity of both and the rows and seconds of both. `--candidates N` runs with
`search.candidates` / `greedy.candidates` = N (the screen by per-query TreeSHAP spread; `all`: null, only the
exact screen); several values are run one after another. Without --candidates the run uses the options' defaults.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.checks.validity import has_order, measure_sets  # noqa: E402
from auditor.core.threads import threads_here  # noqa: E402
from auditor.evidence.base import AuditContext  # noqa: E402
from auditor.evidence.explainers import build  # noqa: E402
from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions  # noqa: E402
from auditor.explain.base import QueryView  # noqa: E402
from auditor.explain.search import Exhaustive  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from auditor.run.engine import prepare  # noqa: E402
from benchmarks import smoke  # noqa: E402
from benchmarks.wide_data import prepare as prepare_wide  # noqa: E402

METHODS = ["greedy", "greedy_cover", "greedy_cover_eps", "validity_search", "optimum"]


def run(spec: Path, methods: list[str], ks: list[int], queries: int | None, overrides: dict) -> dict:
    prepared = prepare(spec)
    s = prepared.spec
    ctx = AuditContext(data=prepared.data, model=CountingRanker(prepared.model), seed=s.seed,
                       background=prepared.background, masking=s.masking.strategy, masking_samples=s.masking.samples)
    options = LocalExplanationsOptions(**overrides)
    explainers = build(options)  # the registered ones; the exhaustive optimum is not among them
    optimum = Exhaustive(max_subsets=options.optimum_max_subsets)
    masker, background = ctx.masker(), ctx.reference_rows()
    data, scores = ctx.data, ctx.scores()
    chosen = ctx.query_sample(queries, "local/queries")
    out: dict = {"sets": {}, "validity": {}, "rows": {}, "seconds": {}}
    with threads_here(1):
        for method in methods:
            for k in ks:
                if method == "optimum" and not optimum.affordable(data.n_features, k):
                    continue
                search = optimum if method == "optimum" else explainers[method]
                key = f"{method}@{k}"
                sets, validity, rows, seconds = {}, {}, 0, 0.0
                for qi in chosen:
                    view = QueryView(X=data.X[data.query_slice(qi)], scores=scores[data.query_slice(qi)],
                                     query_id=data.query_ids[qi], background=background)
                    if not has_order(view.scores):
                        continue
                    before, start = ctx.model.rows_evaluated, time.perf_counter()
                    found = search.select(ctx.model, view, k, masker, ctx.rng(f"local/{method}/{k}/{qi}"))
                    seconds += time.perf_counter() - start
                    rows += ctx.model.rows_evaluated - before
                    sets[view.query_id] = [int(f) for f in found]
                    validity[view.query_id] = float(measure_sets(ctx.model, view.X, view.scores, masker,
                                                                 [tuple(found)])[0][0])
                out["sets"][key], out["validity"][key] = sets, validity
                out["rows"][key], out["seconds"][key] = rows, seconds
                print(f"{key}: {len(sets)} queries, validity {np.mean(list(validity.values())):.4f}, "
                      f"{rows:,} rows, {seconds:.1f} s", file=sys.stderr, flush=True)
    return out


def compare(new: dict, old: dict, label: str) -> None:
    print(f"\n### {label}")
    print("| method @ k | identical sets | validity (unscreened → screened) | rows (unscreened → screened) | "
          "seconds |")
    print("| --- | ---: | --- | --- | --- |")
    for key, sets in new["sets"].items():
        if key not in old["sets"]:
            continue
        same = [sets[q] == old["sets"][key].get(q) for q in sets]
        v_old, v_new = np.mean(list(old["validity"][key].values())), np.mean(list(new["validity"][key].values()))
        print(f"| {key} | {np.mean(same):.1%} ({sum(same)}/{len(same)}) | {v_old:.4f} → {v_new:.4f} | "
              f"{old['rows'][key]:,} → {new['rows'][key]:,} | {old['seconds'][key]:.1f} → "
              f"{new['seconds'][key]:.1f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", type=Path)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument("--k", type=int, nargs="+", default=[3, 5, 7, 10])
    parser.add_argument("--queries", type=int)
    parser.add_argument("--candidates", nargs="+", default=[None])
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.k, args.queries = [3], 2
    with smoke.workdir(args.smoke) as tmp:
        spec = args.spec or (smoke.wide(tmp) if tmp else
                             prepare_wide(Path("/tmp/auditor-wide") / str(args.features), args.features))
        if tmp is None:
            screen(spec, args)
            return 0
        args.save = tmp / "sets.json"  # smoke mode: an unscreened run saved, then a screened one compared with it
        screen(spec, args)
        args.save, args.compare, args.candidates = None, tmp / "sets.json", ["5"]
        screen(spec, args)
    return 0


def screen(spec: Path, args: argparse.Namespace) -> None:
    """A run per `--candidates` value, saved and compared as the options say."""
    old = json.loads(args.compare.read_text()) if args.compare else None
    for text in args.candidates:
        if text is None:
            overrides: dict = {}
        else:
            candidates = None if text == "all" else int(text)
            overrides = {"search": {"candidates": candidates}, "greedy": {"candidates": candidates}}
        result = run(spec, args.methods, args.k, args.queries, overrides)
        if args.save:
            args.save.write_text(json.dumps(result))
        if old is not None:
            compare(result, old, f"candidates = {text or 'default'}")


if __name__ == "__main__":
    sys.exit(main())
