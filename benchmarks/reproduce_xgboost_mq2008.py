"""Table 2 (paper 000) and Table 3 (paper 001) layouts on MQ2008 Fold1 for an XGBoost LambdaMART beside the LightGBM
one, through the product's own evidence (`local_explanations`, `decision_path_accuracy`, `global_importance`).

    .venv/bin/python benchmarks/reproduce_xgboost_mq2008.py [--queries N] [--no-optimum] [--out file.md]

Needs ../shared/data (or $AUDITOR_DATA). Trains examples/mq2008/model.txt and xgboost.json first if missing
(examples/mq2008/train.py: the same features, the same early-stopping protocol). Settings as
benchmarks/reproduce_valid_explanations.py (k = 5, k curve 3/5/7/10, then k = 3 against the exhaustive optimum)
and benchmarks/reproduce_decision_paths.py (top 5 documents of every query, four explainers). Prints markdown.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.checks.ranking import per_query_ndcg  # noqa: E402
from auditor.evidence.base import AuditContext, EvidenceResult  # noqa: E402
from auditor.evidence.kinds.decision_path_accuracy import measure as decision_path_accuracy  # noqa: E402
from auditor.evidence.kinds.global_importance import ENTRY as GLOBAL_IMPORTANCE  # noqa: E402
from auditor.evidence.kinds.global_importance import measure as global_importance  # noqa: E402
from auditor.evidence.kinds.local_explanations import measure as local_explanations  # noqa: E402
from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions  # noqa: E402
from auditor.evidence.kinds.local_explanations.present import label  # noqa: E402
from auditor.inputs.data import load_ranking_data  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from auditor.models.lightgbm import load_lightgbm  # noqa: E402
from auditor.models.xgboost import load_xgboost  # noqa: E402
from benchmarks import smoke  # noqa: E402

MODELS = {"lightgbm": "LightGBM", "xgboost": "XGBoost"}
EXPLAINERS = ["lirme", "exs", "treeshap", "kernelshap"]
METRICS = {"auc": "AUC (top-5)", "spearman": "Spearman", "euclidean": "Euclidean"}


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def contexts(seed: int, tmp: Path | None = None) -> tuple[dict[str, AuditContext], dict[str, str]]:
    """Both LambdaMARTs audited on MQ2008 Fold1 test, and a line on each; with `tmp` (smoke mode) on the tiny
    look-alike of `smoke.mq2008`."""
    fold = smoke.mq2008(tmp)
    names = fold.feature_names()
    test = load_ranking_data(fold.folder / "test.txt", n_features=46, feature_names=names)
    background = load_ranking_data(fold.folder / "train.txt.gz", n_features=46, feature_names=names)
    rankers = {"lightgbm": load_lightgbm(fold.model), "xgboost": load_xgboost(fold.xgboost())}
    facts = {}
    for key, ranker in rankers.items():
        scores = ranker.predict(test.X)
        ndcg = per_query_ndcg(scores, test.y, test.query_ptr, [10])[:, 0].mean()
        trees = ranker.tree_ensemble()
        leaves = np.diff(np.append(trees.roots, trees.feature.size))
        facts[key] = (f"{ranker.describe()['n_trees']} trees of at most {int((leaves + 1).max() // 2)} leaves; test "
                      f"nDCG@10 {ndcg:.3f} (all-zero queries count 1)")
    return ({key: AuditContext(data=test, model=CountingRanker(ranker), seed=seed, background=background,
                               masking="mean") for key, ranker in rankers.items()}, facts)


def fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=None, help="a seeded sample of queries (default: all 156)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-optimum", action="store_true", help="skip the k = 3 run against the exhaustive optimum")
    parser.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.queries, args.no_optimum = args.queries or 2, True
    valid = _module(ROOT / "benchmarks" / "reproduce_valid_explanations.py", "reproduce_valid")
    paths = _module(ROOT / "benchmarks" / "reproduce_decision_paths.py", "reproduce_paths")
    with smoke.workdir(args.smoke) as tmp:
        ctxs, facts = contexts(args.seed, tmp)
    import lightgbm
    import xgboost

    lines = [f"Machine: {platform.machine()}, Python {platform.python_version()}, LightGBM {lightgbm.__version__}, "
             f"XGBoost {xgboost.__version__}; seed {args.seed}; queries: {args.queries or 'all'}.", ""]
    for key in MODELS:
        lines.append(f"- **{MODELS[key]}**: {facts[key]}.")
    seconds: dict[str, float] = {}

    # TreeSHAP over every test document: does it add up, and what XGBoost's float32 sums cost
    lines += ["", "## Exact TreeSHAP over all test documents (`global_importance`)", "",
              "| model | additivity max abs error | score rounding (library vs exact sum of the trees) | TreeSHAP by |",
              "| --- | --- | --- | --- |"]
    for key, ctx in ctxs.items():
        result = GLOBAL_IMPORTANCE.run(ctx, global_importance.GlobalImportanceOptions())  # presented: its note
        m = result.metrics
        lines.append(f"| {MODELS[key]} | {m['global_importance.additivity.max_abs_error']:.1e} | "
                     f"{m.get('global_importance.score_rounding.max_abs', 0.0):.1e} | "
                     f"{result.tables[0].note.split('TreeSHAP by ')[-1].rstrip('.')} |")

    main_runs: dict[str, EvidenceResult] = {}
    k3_runs: dict[str, EvidenceResult] = {}
    for key, ctx in ctxs.items():
        start = time.perf_counter()
        main_runs[key] = local_explanations.run(ctx, LocalExplanationsOptions(
            k=5, k_curve=[3, 5, 7, 10], queries=args.queries, optimum_max_subsets=0))
        if not args.no_optimum:
            k3_runs[key] = local_explanations.run(ctx, LocalExplanationsOptions(
                k=3, k_curve=[], queries=args.queries, optimum_max_subsets=20_000))
        seconds[f"{key} local"] = time.perf_counter() - start
    methods = LocalExplanationsOptions().methods
    first = main_runs["lightgbm"].metrics

    def metric(result: EvidenceResult, method: str, name: str) -> float | None:
        return result.metrics.get(f"local.{method}.{name}")

    lines += ["", f"## Table 2 layout: MQ2008 Fold1 test, k = 5 ({int(first['local.queries'])} queries)", "",
              "| method | validity LightGBM | validity XGBoost | paper ListWise | completeness LightGBM | "
              "completeness XGBoost | paper ListWise |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for method in methods:
        paper = valid.PAPER_LISTWISE.get(method, (None, None))
        lines.append(f"| {label(method)} | " + " | ".join(
            [fmt(metric(main_runs[k], method, "validity.mean")) for k in MODELS] + [fmt(paper[0])]
            + [fmt(metric(main_runs[k], method, "completeness.mean")) for k in MODELS] + [fmt(paper[1])]) + " |")
    lines += ["", "## Effect of k on mean validity (LightGBM / XGBoost)", "",
              "| method | k = 3 | k = 5 | k = 7 | k = 10 |", "| --- | --- | --- | --- | --- |"]
    for method in methods:
        cells = [" / ".join(fmt(metric(main_runs[key], method, f"validity.mean@k{k}")) for key in MODELS)
                 for k in (3, 5, 7, 10)]
        lines.append(f"| {label(method)} | " + " | ".join(cells) + " |")
    if k3_runs:
        lines += ["", f"## k = 3 against the exhaustive optimum (paper's ListWise optimum: "
                      f"{valid.PAPER_OPTIMUM_K3})", "",
                  "| method | validity LightGBM | share of optimum | validity XGBoost | share of optimum |",
                  "| --- | --- | --- | --- | --- |"]
        for method in [*methods, "optimum"]:
            lines.append(f"| {label(method)} | " + " | ".join(
                f"{fmt(metric(k3_runs[k], method, 'validity.mean'))} | "
                f"{fmt(metric(k3_runs[k], method, 'share_of_optimum'))}" for k in MODELS) + " |")

    path_runs: dict[str, EvidenceResult] = {}
    for key, ctx in ctxs.items():
        start = time.perf_counter()
        path_runs[key] = decision_path_accuracy.run(ctx, decision_path_accuracy.DecisionPathOptions(
            explainers=EXPLAINERS, queries=args.queries, docs_per_query=5))
        seconds[f"{key} decision paths"] = time.perf_counter() - start
    lines += ["", "## Table 3 layout: explanation accuracy against decision-path ground truth (mean ± std over "
                  "documents)", "",
              "| model | ground truth | similarity | LIRME | LIRME (paper, LambdaMART) | EXS | EXS (paper) | "
              "TreeSHAP | KernelSHAP |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for kind in ("value_change", "frequency"):
        for name in METRICS:
            for key in MODELS:
                paper = paths.PAPER.get(("lambdamart", kind, name), {})
                p = {n: (f"{paper[n][0]:.3f} ± {paper[n][1]:.2f}" if n in paper else "—") for n in ("lirme", "exs")}
                result = path_runs[key]
                lines.append(f"| {MODELS[key]} | {paths.GTS[kind]} | {METRICS[name]} | "
                             f"{paths.cell(result, 'lirme', kind, name)} | {p['lirme']} | "
                             f"{paths.cell(result, 'exs', kind, name)} | {p['exs']} | "
                             f"{paths.cell(result, 'treeshap', kind, name)} | "
                             f"{paths.cell(result, 'kernelshap', kind, name)} |")
    lines += ["", "| model | path depth mean (min, max) | decision-path additivity error | documents explained |",
              "| --- | --- | --- | --- |"]
    for key in MODELS:
        m = path_runs[key].metrics
        lines.append(f"| {MODELS[key]} | {m['decision_path.depth.mean']:.2f} ({m['decision_path.depth.min']:.2f}, "
                     f"{m['decision_path.depth.max']:.2f}) | {m['decision_path.additivity.max_abs_error']:.1e} | "
                     f"{int(m['decision_path.docs'])} |")
    lines += ["", "Wall time: " + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items()) + "."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
