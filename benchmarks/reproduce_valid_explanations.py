"""Reproduce Table 2 of Singh et al. (paper 000) on MQ2008 Fold1 with a LightGBM LambdaMART, through the product's
own `local_explanations` evidence, and compare every method with the exhaustive optimum at k = 3.

    .venv/bin/python benchmarks/reproduce_valid_explanations.py [--queries N] [--out docs/reproductions/...md]

Needs ../shared/data (or $AUDITOR_DATA). Trains examples/mq2008/model.txt first if it is missing (early stopping
on vali). Masking: training-set mean (the paper's reference code). Prints markdown.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.evidence.base import AuditContext, EvidenceResult  # noqa: E402
from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions, run  # noqa: E402
from auditor.evidence.kinds.local_explanations.present import label  # noqa: E402
from auditor.inputs.data import load_ranking_data  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from auditor.models.lightgbm import load_lightgbm  # noqa: E402
from benchmarks import smoke  # noqa: E402

# Paper 000, Table 2, MQ2008, ListWise (RankLib LambdaMART) column, k = 5.
PAPER_LISTWISE = {"random": (0.041, -0.305), "shap1": (0.124, -0.068), "shap5": (0.135, -0.031),
                  "greedy": (0.259, -0.091), "greedy_cover": (0.280, -0.096), "greedy_cover_eps": (0.361, -0.162)}
PAPER_OPTIMUM_K3 = 0.76  # section 5.3, ListWise


def context(queries: int | None, seed: int, tmp: Path | None = None) -> tuple[AuditContext, int | None]:
    """MQ2008 Fold1 test with the training split as background, audited under mean masking; with `tmp` (smoke
    mode) the tiny look-alike of `smoke.mq2008`."""
    fold = smoke.mq2008(tmp)
    model = CountingRanker(load_lightgbm(fold.model))
    names = fold.feature_names()
    test = load_ranking_data(fold.folder / "test.txt", n_features=46, feature_names=names)
    background = load_ranking_data(fold.folder / "train.txt.gz", n_features=46, feature_names=names)
    return AuditContext(data=test, model=model, seed=seed, background=background, masking="mean"), queries


def metric(result: EvidenceResult, method: str, name: str) -> float | None:
    return result.metrics.get(f"local.{method}.{name}")


def fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=None, help="a seeded sample of queries (default: all 156)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    with smoke.workdir(args.smoke) as tmp:
        ctx, queries = context(args.queries or (2 if args.smoke else None), args.seed, tmp)
    lines = [f"Machine: {platform.machine()}, Python {platform.python_version()}; seed {args.seed}; "
             f"queries: {queries or 'all'}.", ""]

    start = time.perf_counter()
    main_run = run(ctx, LocalExplanationsOptions(k=5, k_curve=[3, 5, 7, 10], queries=queries,
                                                 optimum_max_subsets=0))
    seconds_main = time.perf_counter() - start
    lines += [f"## Table 2 layout: MQ2008 Fold1 test, k = 5 ({int(main_run.metrics['local.queries'])} queries, "
              f"{int(main_run.metrics['local.excluded_queries'])} left out)", "",
              "| method | validity (ours) | paper ListWise | completeness (ours) | paper ListWise |",
              "| --- | --- | --- | --- | --- |"]
    for method in LocalExplanationsOptions().methods:
        paper = PAPER_LISTWISE.get(method, (None, None))
        lines.append(f"| {label(method)} | {fmt(metric(main_run, method, 'validity.mean'))} | {fmt(paper[0])} | "
                     f"{fmt(metric(main_run, method, 'completeness.mean'))} | {fmt(paper[1])} |")
    lines += ["", "## Effect of k on mean validity", "", "| method | k = 3 | k = 5 | k = 7 | k = 10 |",
              "| --- | --- | --- | --- | --- |"]
    for method in LocalExplanationsOptions().methods:
        values = [fmt(metric(main_run, method, f"validity.mean@k{k}")) for k in (3, 5, 7, 10)]
        lines.append(f"| {label(method)} | " + " | ".join(values) + " |")

    start = time.perf_counter()
    k3 = run(ctx, LocalExplanationsOptions(k=3, k_curve=[], queries=queries, optimum_max_subsets=20_000))
    seconds_k3 = time.perf_counter() - start
    optimum = metric(k3, "optimum", "validity.mean")
    lines += ["", f"## k = 3 against the exhaustive optimum (paper's ListWise optimum: {PAPER_OPTIMUM_K3})", "",
              "| method | mean validity | share of optimum |", "| --- | --- | --- |"]
    for method in [*LocalExplanationsOptions().methods, "optimum"]:
        lines.append(f"| {label(method)} | {fmt(metric(k3, method, 'validity.mean'))} | "
                     f"{fmt(metric(k3, method, 'share_of_optimum'))} |")
    lines += ["", f"Optimum mean validity at k = 3: {fmt(optimum)}.", "",
              "## Cost (rows evaluated, all sizes of k in the main run; k = 3 run for the optimum)", "",
              "| method | model rows (main) | model rows (k = 3) |", "| --- | --- | --- |"]
    for method in [*LocalExplanationsOptions().methods, "optimum"]:
        lines.append(f"| {label(method)} | {int(metric(main_run, method, 'rows') or 0):,} | "
                     f"{int(metric(k3, method, 'rows') or 0):,} |")
    lines += ["", f"Wall time: main run {seconds_main:.0f} s, k = 3 run with optimum {seconds_k3:.0f} s."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
