"""How the audit's cost grows with the data: 10k, 100k and 1M documents of MSLR-like data, per executor.

Synthetic MSLR-shaped data (136 features, 60-180 documents a query, graded labels; `treeshap_speed.mslr_like`),
written as Parquet (float32 features, row groups of 50k rows); a LambdaMART of 500 trees × 63 leaves trained on a
separate 100k-document training file, which is also the audit's background. Each size is audited with the same
spec — a bookstore-style evidence set whose per-query items work on fixed query samples — by `auditor report` in a
fresh process, timed from outside; memory is the peak of the summed RSS of the audit's whole process tree (workers
included; shared library pages count once per process), the peak of its summed PSS (shared pages split between
the processes: the physical memory held), both polled every 0.2 s, and the main process's high-water mark (VmHWM).

    nice .venv/bin/python benchmarks/scale.py                                   # every size, every executor
    nice .venv/bin/python benchmarks/scale.py --sizes 1000000 --executors serial --evidence acceptance

`--evidence acceptance` is the issue's 1M-document audit: global importance, ranking quality, local explanations
on a 500-query sample, surrogate. Data and model are cached in --cache (default /tmp/auditor-scale).
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import smoke  # noqa: E402
from benchmarks.treeshap_speed import N_FEATURES, mslr_like  # noqa: E402

AUDITOR = [sys.executable, "-m", "auditor"]  # this interpreter's auditor (the repository has no .venv in a worktree)
# Per-query work is what an expensive model makes expensive (a 500 × 63 model scores ~30k rows/s on one core), so
# the per-query items work on fixed query samples and the validity search gets a smaller row budget.
LOCAL = {"methods": ["treeshap5", "lirme5", "greedy_cover_eps", "validity_search"], "k": 5, "k_curve": [],
         "search": {"max_rows": 5_000}}
SURROGATE = {"interactions": 5, "max_rounds": 200, "top_effects": 4, "top_pairs": 1}
EVIDENCE = {
    "full": [  # the bookstore example's kinds, per-query items on fixed samples
        {"ranking_quality": {"cutoffs": [1, 5, 10]}},
        {"global_importance": {"top": 15}},
        {"local_explanations": {**LOCAL, "queries": 32}},
        {"decision_path_accuracy": {"explainers": ["treeshap", "lirme"], "top_k": 5, "docs_per_query": 2,
                                    "queries": 10}},
        {"pairwise": {"queries": 16, "permutations": 2, "max_neighbours": 10}},
        {"confidence": {"methods": ["treeshap5", "lirme5", "greedy_cover_eps"], "k": 5, "queries": 10}},
        {"surrogate": SURROGATE},
        {"parameter_influence": {"sensitive": ["f1"]}},
    ],
    "acceptance": [  # the 1M-document audit
        {"global_importance": {"top": 15}},
        {"ranking_quality": {"cutoffs": [1, 5, 10]}},
        {"local_explanations": {**LOCAL, "methods": ["random", "treeshap5", "lirme5"], "queries": 500}},
        {"surrogate": SURROGATE},
    ],
}
EXECUTORS = {"serial": ["--jobs", "1"], "jobs2": ["--jobs", "2"], "dask": ["--executor", "dask", "--jobs", "2"]}


def write_parquet(path: Path, n_rows: int, seed: int, chunk: int = 50_000) -> None:
    """MSLR-like rows written chunk by chunk (one row group each), so even 1M rows never sit in memory twice."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    writer, written, next_query = None, 0, 0
    names = [f"f{i + 1}" for i in range(N_FEATURES)]
    while written < n_rows:
        X, labels, sizes = mslr_like(min(chunk, n_rows - written), rng)
        qid = np.repeat(np.arange(next_query, next_query + len(sizes)), sizes)
        next_query += len(sizes)
        columns = {"qid": pa.array(qid), "label": pa.array(labels)}
        columns.update({name: pa.array(X[:, j].astype(np.float32)) for j, name in enumerate(names)})
        table = pa.table(columns)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
        written += len(X)
    writer.close()


def train_model(train: Path, out: Path, trees: int, leaves: int, threads: int = 2) -> None:
    import lightgbm as lgb
    import pyarrow.parquet as pq

    frame = pq.read_table(train).to_pandas()
    sizes = frame.groupby("qid", sort=False).size().to_numpy()
    X = frame[[f"f{i + 1}" for i in range(N_FEATURES)]].to_numpy(np.float64)
    params = {"objective": "lambdarank", "num_leaves": leaves, "learning_rate": 0.05, "min_data_in_leaf": 20,
              "verbosity": -1, "seed": 0, "num_threads": threads}
    booster = lgb.train(params, lgb.Dataset(X, frame["label"].to_numpy(), group=sizes), num_boost_round=trees)
    booster.save_model(str(out))


def prepare(cache: Path, sizes: list[int], trees: int, leaves: int, train_rows: int = 100_000, threads: int = 2
            ) -> None:
    """Training data, model and one test file a size in `cache`, each written unless present."""
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "train.parquet").exists():
        write_parquet(cache / "train.parquet", train_rows, seed=1)
    if not (cache / "model.txt").exists():
        start = time.perf_counter()
        train_model(cache / "train.parquet", cache / "model.txt", trees, leaves, threads)
        print(f"(trained {trees} trees × {leaves} leaves in {time.perf_counter() - start:.0f} s)", file=sys.stderr)
    for size in sizes:
        if not (cache / f"test_{size}.parquet").exists():
            write_parquet(cache / f"test_{size}.parquet", size, seed=2)


def spec_for(cache: Path, size: int, evidence: str, few: bool = False) -> Path:
    """The audit spec of one size; `few`: the evidence set's first items only (smoke mode)."""
    spec = {
        "audit": {"title": f"Scale benchmark, {size:,} documents", "organisation": "auditor benchmarks",
                  "owner": "benchmarks/scale.py", "period": "n/a", "purpose": "cost measurement"},
        "model": {"path": "model.txt"},
        "dataset": {"path": f"test_{size}.parquet", "nan_policy": "missing"},  # MSLR-like: 5% missing values
        "background": {"path": "train.parquet", "nan_policy": "missing"},
        "evidence": smoke.few(EVIDENCE[evidence]) if few else EVIDENCE[evidence],
        "seed": 7,
        "output": {"dir": "runs", "formats": ["html"]},
    }
    path = cache / f"audit_{size}_{evidence}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@dataclass
class Memory:
    """Peaks over the audit's process tree (bytes): summed RSS (shared library pages counted once per process),
    summed PSS (shared pages split between the processes sharing them: the physical memory the audit holds), the
    main process's high-water mark, and how many processes were alive at the RSS peak."""

    rss: int = 0
    pss: int = 0
    main_hwm: int = 0
    processes_at_peak: int = 1
    main_at_peak: int = 0  # the main process's RSS at the summed-RSS peak (the rest: workers, forkserver, …)


def measure(spec: Path, executor: str) -> tuple[float, Memory, int, str]:
    """Wall seconds, memory peaks, model rows, run folder."""
    command = [*AUDITOR, "report", str(spec), "--out", str(spec.parent / "runs"), "-q", *EXECUTORS[executor]]
    start = time.perf_counter()
    process = psutil.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    memory = Memory()
    while process.poll() is None:
        try:
            tree = [p for p in [process, *process.children(recursive=True)] if p.is_running()]
            rss = sum(p.memory_info().rss for p in tree)
            if rss > memory.rss:
                memory.rss, memory.processes_at_peak = rss, len(tree)
                memory.main_at_peak = process.memory_info().rss
            memory.pss = max(memory.pss, sum(_pss(p.pid) for p in tree))
            memory.main_hwm = max(memory.main_hwm, _status_bytes(process.pid, "VmHWM:"))
        except psutil.Error:
            pass
        time.sleep(0.2)
    seconds = time.perf_counter() - start
    out, err = process.communicate()
    if process.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({process.returncode}): {err.strip()[-2000:]}")
    run_dir = Path(out.strip().splitlines()[-1]).parent
    import json

    document = json.loads((run_dir / "evidence.json").read_text())
    rows = sum(int(item.get("n_model_rows", 0)) for item in document["evidence"].values())
    return seconds, memory, rows, str(run_dir)


def _pss(pid: int) -> int:
    """Proportional set size from /proc/PID/smaps_rollup (0 when the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _status_bytes(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--executors", nargs="+", default=list(EXECUTORS), choices=list(EXECUTORS))
    parser.add_argument("--evidence", choices=list(EVIDENCE), default="full")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/auditor-scale"))
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--leaves", type=int, default=63)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    with smoke.workdir(args.smoke) as tmp:
        if tmp is None:
            prepare(args.cache, args.sizes, args.trees, args.leaves)
        else:  # a few queries, a small model, one serial audit of the evidence set's first items
            args.cache, args.sizes, args.executors = tmp, [300], ["serial"]
            prepare(tmp, args.sizes, trees=10, leaves=7, train_rows=2_000, threads=1)
        measure_all(args)


def measure_all(args: argparse.Namespace) -> None:
    """Every size audited by every executor: the table, then the growth of wall time with the size."""
    print(f"evidence set '{args.evidence}': {', '.join(next(iter(e)) for e in EVIDENCE[args.evidence])}\n")
    print("| documents | executor | seconds | model rows | peak RSS, all processes (GiB) | processes at that peak "
          "| main process at that peak (GiB) | peak PSS, all processes (GiB) | main process peak RSS (GiB) |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    times: dict[str, list[tuple[int, float]]] = {}
    for size in args.sizes:
        spec = spec_for(args.cache, size, args.evidence, few=args.smoke)
        for executor in args.executors:
            seconds, memory, rows, _ = measure(spec, executor)
            times.setdefault(executor, []).append((size, seconds))
            print(f"| {size:,} | {executor} | {seconds:.1f} | {rows:,} | {memory.rss / 2**30:.2f} "
                  f"| {memory.processes_at_peak} | {memory.main_at_peak / 2**30:.2f} | {memory.pss / 2**30:.2f} "
                  f"| {memory.main_hwm / 2**30:.2f} |", flush=True)
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in psutil.getloadavg())}")
    print("\nlog-log slope of wall time against documents (1 = linear):")
    for executor, points in times.items():
        if len(points) >= 2:
            x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
            slope = np.polyfit(x, y, 1)[0]
            last = math.log(points[-1][1] / points[-2][1]) / math.log(points[-1][0] / points[-2][0])
            print(f"- {executor}: {slope:.2f} over all sizes; {last:.2f} between the two largest")


if __name__ == "__main__":
    main()
