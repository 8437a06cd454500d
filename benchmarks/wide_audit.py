"""The full default audit on wide data, as a new user runs it: every evidence kind at its defaults, all five
built-in policy packs, HTML + PDF — wall time, peak memory, and `auditor validate`'s estimate against the actual.

    .venv/bin/python benchmarks/wide_audit.py                          # 136 features, 43 queries (issue 28)
    .venv/bin/python benchmarks/wide_audit.py --queries 50 200         # peak memory at 50 and 200 queries
    .venv/bin/python benchmarks/wide_audit.py --features 700           # the 700-feature run
    .venv/bin/python benchmarks/wide_audit.py --spec examples/bookstore/audit.yaml   # any spec (signing dropped)
    .venv/bin/python benchmarks/wide_audit.py --curve 34 68 136 272    # explainer seconds per query vs features

Data and model come from `benchmarks/wide_data.py` (kept in /tmp/auditor-wide/<features>[-q<queries>]). Each
audit runs as `auditor report` in a fresh process (stderr not a terminal: the plain progress lines go to
`<run>/progress.log`); wall time is the process's, peak memory the largest maximum RSS of the processes it waited
for (`resource.getrusage(RUSAGE_CHILDREN)`: the audit's own; the pool's workers, started by a forkserver, are not
among them), CPU the machine's busy seconds meanwhile (`/proc/stat`). The estimate is the `total` line `auditor
validate` prints (probe included) against the wall time of `auditor report`; per item, evidence.json's
`run.cost.compared`.

`--curve` times `local_explanations` alone (default methods, k = 5, no effect-of-k curve, 5 queries, serial)
on data of each feature count, and fits the slope of log(seconds per query) against log(features).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from benchmarks import smoke  # noqa: E402

AUDITOR = [sys.executable, "-m", "auditor"]
PACKS = ["starter", "eu-ai-act-annex-iv", "eu-dma-art6-5", "eu-dsa-art27-34", "eu-p2b-art5", "model-governance"]


def wide_spec(features: int, queries: int, out: Path | None = None, *, budget: float | None = None,
              base: Path | None = None) -> Path:
    """The full default spec on the wide data (prepared once): every evidence kind, all packs, HTML + PDF. `base`:
    wide_data's spec of data already prepared (smoke mode: tiny), audited on its first evidence items and exposure,
    HTML only."""
    from wide_data import feature_names, prepare

    folder = out or Path("/tmp/auditor-wide") / (str(features) if queries == 43 else f"{features}-q{queries}")
    few, base = base is not None, base or prepare(folder, features, test_queries=queries)
    folder = base.parent
    spec = yaml.safe_load(base.read_text())
    names = feature_names(features)
    group = _group_column(folder / "test.parquet", names)
    evidence = smoke.few(spec["evidence"]) if few else spec["evidence"]
    spec["evidence"] = [*evidence, {"exposure": {"group": [group], "own": {group: 0}}}]
    spec["policies"] = PACKS
    spec["output"] = {"dir": "runs", "formats": ["html"] if few else ["html", "pdf"]}
    if budget is not None:
        spec["budget"] = {"minutes": budget}
    path = folder / ("full.yaml" if budget is None else f"budget{budget:g}.yaml")
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _group_column(test: Path, names: list[str]) -> str:
    """The first feature with 2-20 values in the test data, the exposure evidence's group column (a count column
    takes more values as queries are added)."""
    import pandas as pd

    frame = pd.read_parquet(test, columns=names)
    return next(name for name in names if 2 <= frame[name].nunique(dropna=False) <= 20)


def copied_spec(spec: Path) -> Path:
    """A spec as given, minus signing (its keys are made by `make demo`), writing its runs to /tmp."""
    raw = yaml.safe_load(spec.read_text())
    raw.pop("signing", None)
    raw["output"] = {**raw.get("output", {}), "dir": "/tmp/auditor-wide-runs"}
    for block in ("model", "dataset", "background"):
        if isinstance(raw.get(block), dict) and "path" in raw[block]:
            raw[block]["path"] = str((spec.parent / raw[block]["path"]).resolve())
    path = Path("/tmp/auditor-wide-runs") / f"{spec.stem}-bench.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def estimate(spec: Path) -> float:
    """`auditor validate`'s total, in seconds."""
    out = subprocess.run([*AUDITOR, "validate", str(spec)], capture_output=True, text=True, check=True).stdout
    total = next(line for line in out.splitlines() if line.strip().startswith("total")).split()[1:]
    return float(total[0]) * (60 if total[1] == "min" else 1)


def audit(spec: Path, jobs: int | None) -> dict:
    """`auditor report` in a fresh process: wall seconds, peak RSS (MB), the run folder."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu_before = usage.ru_maxrss, busy_seconds()
    started = time.perf_counter()
    run = subprocess.run([*AUDITOR, "report", str(spec), *(["--jobs", str(jobs)] if jobs else [])],
                         capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if run.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({run.returncode}): {run.stderr[-2000:]}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak, cpu = usage.ru_maxrss, busy_seconds() - cpu_before
    folder = Path(run.stdout.strip()).parent
    (folder / "progress.log").write_text(run.stderr)
    return {"wall": wall, "cpu": cpu, "peak_mb": max(peak, before) / 1024, "folder": folder,
            "evidence": json.loads((folder / "evidence.json").read_text())}


def busy_seconds() -> float:
    """CPU seconds the machine has spent busy (/proc/stat: every process, the audit's workers included). The
    workers a forkserver starts are not the audit's children: `RUSAGE_CHILDREN` missed their time (38 s of a 72 s
    audit on two busy cores)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def show(label: str, estimated: float, measured: dict) -> None:
    doc = measured["evidence"]
    budget = doc.get("budget")
    if budget:
        print("\nbudget: " + " ".join(budget["choices"]))
    print(f"\n## {label}: {measured['wall']:.0f} s wall ({measured['wall'] / 60:.1f} min), peak RSS "
          f"{measured['peak_mb']:.0f} MB, CPU {measured['cpu']:.0f} s (the machine's busy seconds; load "
          f"{os.getloadavg()[0]:.1f}); validate estimated {estimated:.0f} s (actual / estimate "
          f"{measured['wall'] / estimated:.2f}); opinion {doc['opinion']}; run {measured['folder']}")
    print("| evidence | queries | rows est. | rows | s est. | s | actual / est. |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for c in doc["run"]["cost"]["compared"]:
        print(f"| {c['evidence']} | {c['queries']} | {c['estimated_rows']:,} | {c['rows']:,} | "
              f"{c['estimated_seconds']:.1f} | {c['seconds']:.1f} | {c['ratio']} |")


def curve(features_list: list[int], queries: int, tmp: Path | None = None) -> None:
    """Seconds per query of local_explanations vs feature count, and the log-log slope; `tmp`: smoke mode's folder
    (tiny data there)."""
    from local_wide import run_once
    from wide_data import prepare

    points = []
    print("| features | seconds per query | model rows per query |")
    print("| ---: | ---: | ---: |")
    for features in features_list:
        spec = smoke.wide(tmp / f"{features}-curve", features) if tmp else prepare(
            Path("/tmp/auditor-wide") / f"{features}-curve", features, train_queries=100, test_queries=queries)
        seconds, _, rows = run_once(spec, {"queries": queries, "k_curve": []}, jobs=1)
        points.append((features, seconds / queries))
        print(f"| {features} | {seconds / queries:.1f} | {rows / queries:,.0f} |", flush=True)
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    slope = float(np.polyfit(x, y, 1)[0])
    print(f"slope of log(seconds per query) on log(features): {slope:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--queries", type=int, nargs="+", default=[43])
    parser.add_argument("--spec", type=Path, help="audit this spec instead of the wide data")
    parser.add_argument("--jobs", type=int, help="`auditor report --jobs` (default: the spec's, every CPU)")
    parser.add_argument("--curve", type=int, nargs="*", help="feature counts for the explainer-time curve")
    parser.add_argument("--curve-queries", type=int, default=5)
    parser.add_argument("--budget", type=float, help="add `budget: {minutes: N}` to the wide spec")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:  # tiny data, a few evidence items, HTML only; --curve on 8 and 16 features, 2 queries
        args.curve, args.curve_queries = None if args.curve is None else [8, 16], 2
    with smoke.workdir(args.smoke) as tmp:
        if args.curve:
            curve(args.curve, args.curve_queries, tmp)
            return 0
        if tmp is not None:
            specs = [("smoke: 16 features, 4 queries", wide_spec(16, 4, budget=args.budget, base=smoke.wide(tmp)))]
        elif args.spec:
            specs = [(str(args.spec), copied_spec(args.spec))]
        else:
            specs = [(f"{args.features} features, {q} queries", wide_spec(args.features, q, budget=args.budget))
                     for q in args.queries]
        for label, spec in specs:
            estimated = estimate(spec)
            show(label, estimated, audit(spec, args.jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
