"""Masked scores on the 136-feature wide model: today's materialise-and-predict against the jump-table kernel.

Documents of a few test queries (one query = X), fill = the background mean (`Masker` "mean"), masks like the
audit's: random keep-sets of 5 features and their complements (validity, completeness) and greedy-search-like masks
(a base set plus one more feature, for every other feature). In one process, median of `--repeats` runs:

- (a) today's path: `np.where` rows + LightGBM `Booster.predict` (raw scores, num_threads=2);
- (b) the same rows + `TreeEnsemble.predict` (numba walk from the root);
- (c) `auditor.scoring.masked_scoring.masked_scores` (per-document jump tables, built top-down over the splits some mask
  can reach, as compact link tables);
- (d) the same jump tables as node-sized arrays built bottom-up over every split (simpler; here only);
- (e) the plain walk with directions precomputed per document for every node, no jumps (here only);
- (f) no tables: every mask walks from the root, reading x or fill per split (here only).

All are asserted bit-identical to (a). Nodes visited per tree per row (leaf included): the reached leaves' depths
for a full walk, a counting replica of (c)'s walk for the jump tables. The first call of `masked_scores` is timed in
fresh processes with an empty NUMBA_CACHE_DIR. The load average is printed: other work on the two cores slows
every method, so compare the methods of one run.

    .venv/bin/python benchmarks/wide_data.py --features 136     # once: /tmp/auditor-wide/136
    nice .venv/bin/python benchmarks/masked_scoring.py [--queries 4] [--sets 32] [--no-greedy] [--repeats 3]
    nice .venv/bin/python benchmarks/masked_scoring.py --model other.txt    # another model over the same features
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
from numba import get_num_threads, njit, prange

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.run.cost import search_step_masks  # noqa: E402
from auditor.scoring import masked_scoring  # noqa: E402
from auditor.scoring.masked_scoring import _child, _fill_children, masked_scores  # noqa: E402
from auditor.scoring.trees import TreeEnsemble  # noqa: E402
from benchmarks import smoke  # noqa: E402

DATA = Path("/tmp/auditor-wide/136")
OURS = "(c) masked_scores (jump tables)"


def audit_masks(n_features: int, sets: int, rng: np.random.Generator, greedy: bool = True) -> np.ndarray:
    """Random 5-feature keep-sets, their complements, and (`greedy`) a 10-feature base set plus each other feature."""
    five = np.zeros((sets, n_features), dtype=bool)
    for row in five:
        row[rng.choice(n_features, 5, replace=False)] = True
    base = rng.choice(n_features, 10, replace=False)
    others = np.setdiff1d(np.arange(n_features), base)
    plus_one = np.zeros((others.size if greedy else 0, n_features), dtype=bool)
    plus_one[:, base] = True
    plus_one[np.arange(plus_one.shape[0]), others[:plus_one.shape[0]]] = True
    return np.vstack([five, ~five, plus_one])


@njit(cache=True, parallel=True)
def _bottom_up(X, keep, by_fill, feature, threshold, left, right, default_left, missing, value, roots, weight,
               bias, zero_filter, float32_sum, n_tasks, out):
    """(d): the jump tables as node-sized arrays, built bottom-up over every split; summed as (c) sums."""
    n_docs, n_nodes = X.shape[0], feature.shape[0]
    for task in prange(n_tasks):
        jump = np.empty(n_nodes, dtype=np.int32)  # the first leaf or mask-decided split at or below the node
        to_x = np.empty(n_nodes, dtype=np.int32)  # at a mask-decided split: where to jump if its feature is kept
        to_fill = np.empty(n_nodes, dtype=np.int32)  # ... and if it is filled
        for doc in range(task * n_docs // n_tasks, (task + 1) * n_docs // n_tasks):
            x = X[doc]
            for node in range(n_nodes - 1, -1, -1):  # children have larger indices than their parent
                if feature[node] < 0:
                    jump[node] = node
                    continue
                own = _child(x[feature[node]], node, threshold, left, right, default_left, missing, zero_filter)
                if own == by_fill[node]:
                    jump[node] = jump[own]
                else:
                    jump[node] = node
                    to_x[node] = jump[own]
                    to_fill[node] = jump[by_fill[node]]
            for c in range(keep.shape[0]):
                kept = keep[c]
                if float32_sum:
                    small = np.float32(bias)
                    for tree in range(roots.shape[0]):
                        node = jump[roots[tree]]
                        while feature[node] >= 0:
                            node = to_x[node] if kept[feature[node]] else to_fill[node]
                        small = np.float32(small + np.float32(weight[tree] * value[node]))
                    out[c, doc] = np.float64(small)
                else:
                    total = bias
                    for tree in range(roots.shape[0]):
                        node = jump[roots[tree]]
                        while feature[node] >= 0:
                            node = to_x[node] if kept[feature[node]] else to_fill[node]
                        total += weight[tree] * value[node]
                    out[c, doc] = total


@njit(cache=True, parallel=True)
def _plain_walk(X, keep, by_fill, feature, threshold, left, right, default_left, missing, value, roots, weight,
                bias, zero_filter, n_tasks, out):
    """(e): each split's child for x precomputed per document; every mask walks from the root. Float64 sum."""
    n_docs, n_nodes = X.shape[0], feature.shape[0]
    for task in prange(n_tasks):
        own = np.empty(n_nodes, dtype=np.int32)
        for doc in range(task * n_docs // n_tasks, (task + 1) * n_docs // n_tasks):
            x = X[doc]
            for node in range(n_nodes):
                if feature[node] >= 0:
                    own[node] = _child(x[feature[node]], node, threshold, left, right, default_left, missing,
                                       zero_filter)
            for c in range(keep.shape[0]):
                kept = keep[c]
                total = bias
                for tree in range(roots.shape[0]):
                    node = roots[tree]
                    while feature[node] >= 0:
                        node = own[node] if kept[feature[node]] else by_fill[node]
                    total += weight[tree] * value[node]
                out[c, doc] = total


@njit(cache=True, parallel=True)
def _no_tables(X, keep, fill, feature, threshold, left, right, default_left, missing, value, roots, weight, bias,
               zero_filter, out):
    """(f): every (mask, document) walks from the root deciding each split on x or fill. Float64 sum."""
    for doc in prange(X.shape[0]):
        x = X[doc]
        for c in range(keep.shape[0]):
            kept = keep[c]
            total = bias
            for tree in range(roots.shape[0]):
                node = roots[tree]
                while feature[node] >= 0:
                    f = feature[node]
                    node = _child(x[f] if kept[f] else fill[f], node, threshold, left, right, default_left, missing,
                                  zero_filter)
                total += weight[tree] * value[node]
            out[c, doc] = total


@njit(cache=True)
def _jump_visits(X, keep, by_fill, feature, threshold, left, right, default_left, missing, roots, zero_filter):
    """Debug replica of (c) that counts: the nodes its walks visit (each tree's jump target, each mask-decided split
    on the path, the leaf) summed over masks, documents and trees; the splits the masks decide and those some mask
    can reach (what (c)'s build decides), summed over documents."""
    n_nodes = feature.shape[0]
    jump = np.empty(n_nodes, dtype=np.int32)
    to_x = np.empty(n_nodes, dtype=np.int32)
    to_fill = np.empty(n_nodes, dtype=np.int32)
    own = np.empty(n_nodes, dtype=np.int32)
    reach = np.zeros(n_nodes, dtype=np.bool_)
    visits = decided = reached = 0
    for doc in range(X.shape[0]):
        for node in range(n_nodes - 1, -1, -1):
            if feature[node] < 0:
                jump[node] = node
                continue
            own[node] = _child(X[doc, feature[node]], node, threshold, left, right, default_left, missing,
                               zero_filter)
            if own[node] == by_fill[node]:
                jump[node] = jump[own[node]]
            else:
                decided += 1
                jump[node] = node
                to_x[node] = jump[own[node]]
                to_fill[node] = jump[by_fill[node]]
        reach[:] = False
        reach[roots] = True
        for node in range(n_nodes):  # parents first
            if reach[node] and feature[node] >= 0:
                reached += 1
                reach[own[node]] = True
                reach[by_fill[node]] = True
        for c in range(keep.shape[0]):
            for tree in range(roots.shape[0]):
                node = jump[roots[tree]]
                visits += 1
                while feature[node] >= 0:
                    node = to_x[node] if keep[c, feature[node]] else to_fill[node]
                    visits += 1
    return visits, decided, reached


def seconds_of(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def first_call_seconds(model: Path, fill: np.ndarray) -> str:
    """Import, first and second call of `masked_scores` in fresh processes sharing an empty NUMBA_CACHE_DIR: the
    first process compiles, the second loads the cache."""
    code = f"""
import time
t0 = time.perf_counter()
import lightgbm as lgb, numpy as np
from auditor.scoring.masked_scoring import masked_scores
from auditor.scoring.trees import TreeEnsemble
e = TreeEnsemble.from_lightgbm(lgb.Booster(model_file="{model}").dump_model())
fill = np.array({fill.tolist()!r})
X, keep = np.tile(fill, (3, 1)), np.ones((2, fill.size), dtype=bool)
t1 = time.perf_counter()
masked_scores(e, X, fill, keep)
t2 = time.perf_counter()
masked_scores(e, X, fill, keep)
t3 = time.perf_counter()
print(f"import+model {{t1 - t0:.2f}} s, first call {{t2 - t1:.2f}} s, second call {{(t3 - t2) * 1e3:.2f}} ms")
"""
    lines = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("empty cache", "warm cache"):
            done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                                  cwd=Path(__file__).resolve().parents[1])
            lines.append(f"{label}: {done.stdout.strip()}")
    return "; ".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=4, help="test queries scored (default 4)")
    parser.add_argument("--sets", type=int, default=32, help="random 5-feature keep-sets a query (default 32)")
    parser.add_argument("--no-greedy", action="store_true", help="only the 5-sets and complements (few masks)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", type=Path, default=None,
                        help="a LightGBM model over the same 136 features (default: wide_data.py's)")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.queries, args.sets, args.repeats = 2, 4, 1
    with smoke.workdir(args.smoke) as tmp:
        data = smoke.wide(tmp).parent if tmp else DATA
        if not (data / "test.parquet").exists():
            sys.exit(f"{data} is missing: run .venv/bin/python benchmarks/wide_data.py --features 136")
        compare(data, args.model or data / "model.txt", args)


def compare(data: Path, model: Path, args: argparse.Namespace) -> None:
    """Every method on the same masked rows of wide_data's test queries in `data` (module docstring)."""
    rng = np.random.default_rng(0)
    booster = lgb.Booster(model_file=str(model))
    e = TreeEnsemble.from_lightgbm(booster.dump_model())
    test = pd.read_parquet(data / "test.parquet")
    names = [c for c in test.columns if c not in ("qid", "doc_id", "label")]
    train = pd.read_parquet(data / "train.parquet", columns=names).to_numpy(dtype=np.float64)
    fill = np.nanmean(train, axis=0)  # Masker.from_background(..., "mean")
    qids = np.sort(rng.choice(test["qid"].unique(), args.queries, replace=False))
    work = [(test.loc[test["qid"] == q, names].to_numpy(dtype=np.float64),
             audit_masks(len(names), args.sets, rng, not args.no_greedy)) for q in qids]
    n_rows = sum(X.shape[0] * keep.shape[0] for X, keep in work)

    def rows(X: np.ndarray, keep: np.ndarray) -> np.ndarray:
        return np.where(keep[:, None, :], X[None], fill[None, None]).reshape(-1, X.shape[1])

    by_fill = _fill_children(e.rows(fill[None])[0], e.feature, e.threshold, e.left, e.right, e.default_left,
                             e.missing, e.zero_filter)
    methods: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
        "(a) rows + LightGBM predict": lambda X, keep: booster.predict(rows(X, keep), raw_score=True,
                                                                       num_threads=2).reshape(keep.shape[0], -1),
        "(b) rows + TreeEnsemble.predict": lambda X, keep: e.predict(rows(X, keep)).reshape(keep.shape[0], -1),
        OURS: lambda X, keep: fresh_tables(lambda: masked_scores(e, X, fill, keep)),
        "(c) the same, the documents' tables kept": lambda X, keep: masked_scores(e, X, fill, keep),
        "(d) jump tables bottom-up, node-sized": lambda X, keep: _run(_bottom_up, X, keep, by_fill, e, e.float32_sum),
        "(e) precomputed directions, full walk": lambda X, keep: _run(_plain_walk, X, keep, by_fill, e),
        "(f) no tables, x or fill per split": lambda X, keep: _run(_no_tables, X, keep, fill, e),
    }
    for fn in methods.values():  # compile, or load numba's cache, outside the timings
        fn(*work[0])
    load_before = os.getloadavg()
    seconds: dict[str, list[float]] = {name: [] for name in methods}
    scores: dict[str, list[np.ndarray]] = {}
    for _ in range(args.repeats):  # repeats outside, methods inside: a load change hits them all
        for name, fn in methods.items():
            out: list[np.ndarray] = []
            seconds[name].append(seconds_of(lambda fn=fn, out=out: out.extend(fn(X, keep) for X, keep in work)))
            scores[name] = out
    one_mask = statistics.median(seconds_of(lambda: [fresh_tables(lambda X=X, keep=keep: masked_scores(
        e, X, fill, keep[:1])) for X, keep in work]) for _ in range(args.repeats))
    steps = search_steps(e, fill, work, rng, args.repeats)
    load_after = os.getloadavg()

    reference = scores["(a) rows + LightGBM predict"]
    for name, out in scores.items():
        assert all(np.array_equal(a, b) for a, b in zip(out, reference, strict=True)), f"{name} is not bit-identical"
    depth = np.zeros(e.feature.shape[0], dtype=np.int64)
    for node in range(depth.size):  # parents come before children
        depth[node] = depth[e.parent[node]] + 1 if e.parent[node] >= 0 else 1
    full = sum(depth[e.leaf_indices(rows(X, keep))].sum() for X, keep in work) / (n_rows * e.n_trees)
    counted = [_jump_visits(e.rows(X), keep, by_fill, e.feature, e.threshold, e.left, e.right, e.default_left,
                            e.missing, e.roots, e.zero_filter) for X, keep in work]
    jumped = sum(c[0] for c in counted) / (n_rows * e.n_trees)
    n_docs = sum(X.shape[0] for X, _ in work)
    decided, reached = (sum(c[i] for c in counted) / n_docs for i in (1, 2))
    n_splits = int((e.feature >= 0).sum())
    visits = {"(a)": full, "(b)": full, "(c)": jumped, "(d)": jumped, "(e)": full, "(f)": full}
    visits["(c) the same, the documents' tables kept"[:3]] = jumped

    masks = [keep.shape[0] for _, keep in work]
    print(f"model {model}: {e.n_trees} trees, {e.feature.size} nodes ({n_splits} splits), "
          f"{len(names)} features; {len(work)} queries, {n_docs} documents, {masks} masks a query "
          f"({args.sets} random 5-sets, their complements{'' if args.no_greedy else ', base-10 + 1 greedy'}); "
          f"{n_rows} masked rows; "
          f"numba threads {get_num_threads()}; median of {args.repeats}\n")
    base = statistics.median(seconds["(a) rows + LightGBM predict"])
    print("| method | seconds | rows/s | speed-up vs (a) | nodes visited per tree per row |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, times in seconds.items():
        median = statistics.median(times)
        print(f"| {name} | {median:.3f} | {n_rows / median / 1e6:.2f} M | {base / median:.1f}x | "
              f"{visits[name[:3]]:.2f} |")
    c_median = statistics.median(seconds[OURS])
    n_masks = statistics.mean(masks)
    print(f"\nall {len(methods)} bit-identical to (a). Visits include the leaf (a full walk visits depth + 1 nodes).")
    per_tree = n_splits / e.n_trees
    print(f"Per document the masks decide {decided:.0f} of the {n_splits} splits ({decided / n_splits:.0%}); (c) "
          f"builds its tables deciding the {reached:.0f} splits some mask can reach ({reached / e.n_trees:.1f} a tree, "
          f"{reached / e.n_trees / n_masks:.2f} a tree per row over {n_masks:.0f} masks), (d) all {per_tree:.0f} a "
          f"tree. (c) with one "
          f"mask a document (≈ the table builds): {one_mask:.3f} s = {one_mask / c_median:.0%} of (c).")
    print(steps)
    print(f"load average (1/5/15 min) before {load_before[0]:.2f}/{load_before[1]:.2f}/{load_before[2]:.2f}, "
          f"after {load_after[0]:.2f}/{load_after[1]:.2f}/{load_after[2]:.2f}, on {os.cpu_count()} CPUs")
    if args.smoke:
        print("first call of masked_scores: not measured in smoke mode (fresh processes compile it: seconds)")
    else:
        print("first call of masked_scores (fresh processes, NUMBA_CACHE_DIR empty): "
              f"{first_call_seconds(model, fill)}")


def fresh_tables(call: Callable[[], np.ndarray]) -> np.ndarray:
    """`call` with no documents' tables kept from before: (c) builds them, as the other methods build theirs."""
    masked_scoring._table_cache.clear()
    return call()


def search_steps(e: TreeEnsemble, fill: np.ndarray, work: list[tuple[np.ndarray, np.ndarray]],
                 rng: np.random.Generator, repeats: int) -> str:
    """A beam step's masks (5 chosen 4-feature sets, each with every other feature added: the validity search's
    shape; a greedy step is one such set) on each query, tables kept: grouped into families (`mask_families`)
    against every mask walked on its own; bit-identical to TreeEnsemble.predict."""
    steps = [(X, search_step_masks(e.n_features, rng)) for X, _ in work]  # as the audit's speed probe times them
    timings = {}
    saved = masked_scoring._FAMILY_MIN_ROWS
    for label, minimum in (("families", saved), ("each mask on its own", float("inf"))):
        masked_scoring._FAMILY_MIN_ROWS = minimum
        try:
            for X, keep in steps:  # tables built and kernels loaded outside the timing
                scores = masked_scores(e, X, fill, keep)
                rows = np.where(keep[:, None, :], X[None], fill[None, None]).reshape(-1, X.shape[1])
                assert np.array_equal(scores.ravel(), e.predict(rows)), f"{label} is not bit-identical"
            timings[label] = statistics.median(
                seconds_of(lambda: [masked_scores(e, X, fill, keep) for X, keep in steps]) for _ in range(repeats))
        finally:
            masked_scoring._FAMILY_MIN_ROWS = saved
    n_rows = sum(X.shape[0] * keep.shape[0] for X, keep in steps)
    return (f"A search step ({steps[0][1].shape[0]} masks a query: 5 chosen 4-sets, each with every other feature; "
            f"{n_rows} rows, tables kept, bit-identical): families {timings['families']:.3f} s "
            f"({n_rows / timings['families'] / 1e6:.2f} M rows/s), each mask on its own "
            f"{timings['each mask on its own']:.3f} s: {timings['each mask on its own'] / timings['families']:.1f}x.")


def _run(kernel: Callable[..., None], X: np.ndarray, keep: np.ndarray, by: np.ndarray, e: TreeEnsemble,
         *flags: bool) -> np.ndarray:
    X = e.rows(X)
    out = np.empty((keep.shape[0], X.shape[0]))
    extra = (*flags, *(() if kernel is _no_tables else (min(X.shape[0], 4 * get_num_threads()),)))
    kernel(X, keep, by, e.feature, e.threshold, e.left, e.right, e.default_left, e.missing, e.value, e.roots,
           e.weight, float(e.bias), e.zero_filter, *extra, out)
    return out


if __name__ == "__main__":
    main()
