"""Evidence `local_explanations` on a spec's data, timed, with its options overridden from the command line: validity
per method, KernelSHAP's convergence check (predicted agreement of two runs' sets), model rows and seconds per method.

    .venv/bin/python benchmarks/local_wide.py                                  # wide data (benchmarks/wide_data.py)
    .venv/bin/python benchmarks/local_wide.py --methods random shap1 shap5 treeshap5 --nsamples 200 auto 4000
    .venv/bin/python benchmarks/local_wide.py --spec examples/bookstore/audit.yaml          # the spec's own options

Without --spec it prepares (once) the 136-feature data of `benchmarks/wide_data.py` in /tmp/auditor-wide/136
(`--features 700` for the wider one). Every run goes through the engine's own path: `engine.prepare`, an
`AuditContext` with the spec's masking and seed, the executor of `--jobs` (default 2: the pool, as `auditor report`
on this machine; 1: serial), and the evidence's `run`. `--nsamples` repeats the run once per KernelSHAP setting.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.evidence import REGISTRY  # noqa: E402
from auditor.evidence.base import AuditContext  # noqa: E402
from auditor.evidence.executor import core_limit, make_executor  # noqa: E402
from auditor.evidence.explainers import method_names  # noqa: E402
from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions  # noqa: E402
from auditor.evidence.kinds.local_explanations.present import label as method_label  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from auditor.run.engine import prepare  # noqa: E402
from benchmarks import smoke  # noqa: E402
from benchmarks.wide_data import prepare as prepare_wide  # noqa: E402


def spec_options(prepared) -> dict:
    for name, options in prepared.spec.evidence_items():
        if name == "local_explanations":
            return options.model_dump(exclude_unset=True)
    return {}


def run_once(spec: Path, overrides: dict, jobs: int) -> tuple[float, object, int]:
    prepared = prepare(spec)
    options = LocalExplanationsOptions(**{**spec_options(prepared), **overrides})
    s = prepared.spec
    ctx = AuditContext(data=prepared.data, model=CountingRanker(prepared.model), seed=s.seed,
                       background=prepared.background, masking=s.masking.strategy, masking_samples=s.masking.samples,
                       executor=make_executor("processes" if jobs > 1 else "serial", jobs))
    ctx.scores()
    try:
        with core_limit(jobs):
            start = time.perf_counter()
            result = REGISTRY["local_explanations"].run(ctx, options)
            seconds = time.perf_counter() - start
    finally:
        ctx.executor.close()
    return seconds, result, ctx.model.rows_evaluated


def show(title: str, seconds: float, result, rows: int) -> None:
    m = result.metrics
    print(f"\n## {title}: {seconds:.1f} s, {rows:,} model rows, {int(m['local.queries'])} queries, "
          f"k = {int(m['local.k'])}")
    if "local.kernelshap.coalitions.mean" in m:
        print(f"KernelSHAP coalitions per document: {m['local.kernelshap.coalitions.mean']:.0f}; underdetermined "
              f"share {m['local.kernelshap.underdetermined_share']:.2f}")
    print("| method | validity | 95% interval | predicted rerun agreement | model rows | seconds |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    cost = {row[0]: row for table in result.tables if table.title.startswith("Cost") for row in table.rows}
    for key in [*method_names(), "optimum"]:
        label_ = method_label(key)
        v = m.get(f"local.{key}.validity.mean")
        if v is None:
            continue
        agreement = m.get(f"local.{key}.convergence.agreement.mean")
        row = cost.get(label_, [label_, 0, 0, 0.0])
        print(f"| {label_} | {v:.3f} | {m[f'local.{key}.validity.ci95_low']:.3f}–"
              f"{m[f'local.{key}.validity.ci95_high']:.3f} | "
              f"{'' if agreement is None else f'{agreement:.2f}'} | {row[1]:,} | {row[3]:.1f} |")
    for d in result.detections:
        print(f"- detection {d.kind}: {d.title}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", type=Path, help="an audit spec (default: the wide synthetic data)")
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--methods", nargs="+", help="override `methods`")
    parser.add_argument("--nsamples", nargs="+", default=[None], help="KernelSHAP samples: numbers or auto")
    parser.add_argument("--queries", type=int)
    parser.add_argument("--k", type=int)
    parser.add_argument("--k-curve", type=int, nargs="*")
    parser.add_argument("--jobs", type=int, default=2)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:  # serial: starting the pool would take longer than the run
        args.queries, args.k_curve, args.jobs = args.queries or 2, [], 1
    with smoke.workdir(args.smoke) as tmp:
        spec = args.spec or (smoke.wide(tmp) if tmp else
                             prepare_wide(Path("/tmp/auditor-wide") / str(args.features), args.features))
        runs(spec, args)
    return 0


def runs(spec: Path, args: argparse.Namespace) -> None:
    """One run of the evidence per KernelSHAP setting, the command line's overrides over the spec's options."""
    for nsamples in args.nsamples:
        overrides: dict = {}
        for key in ("methods", "queries", "k", "k_curve"):
            if getattr(args, key) is not None:
                overrides[key] = getattr(args, key)
        if nsamples is not None:
            overrides["kernelshap"] = {"nsamples": nsamples if nsamples == "auto" else int(nsamples)}
        seconds, result, rows = run_once(spec, overrides, args.jobs)
        show(f"{spec} nsamples={nsamples or 'default'}", seconds, result, rows)


if __name__ == "__main__":
    sys.exit(main())
