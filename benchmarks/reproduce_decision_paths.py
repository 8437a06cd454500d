"""Reproduce Table 3 of paper 001 (explanation accuracy against decision-path ground truth) on MQ2008 Fold1 test,
through the product's own `decision_path_accuracy` evidence, for a scikit-learn DecisionTreeRegressor of depth 4
(pointwise, trained on Fold1 train labels) and the LightGBM LambdaMART of examples/mq2008.

    .venv/bin/python benchmarks/reproduce_decision_paths.py [--queries N] [--docs-per-query 5] [--out file.md]

Needs ../shared/data (or $AUDITOR_DATA). Trains examples/mq2008/model.txt first if it is missing. Prints markdown.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.checks.decision_path import ground_truth  # noqa: E402
from auditor.evidence.base import AuditContext, EvidenceResult  # noqa: E402
from auditor.evidence.kinds.decision_path_accuracy.measure import DecisionPathOptions, run  # noqa: E402
from auditor.inputs.data import load_ranking_data  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from auditor.models.capabilities import tree_ensemble  # noqa: E402
from auditor.models.lightgbm import load_lightgbm  # noqa: E402
from auditor.models.sklearn import SklearnTreeRanker  # noqa: E402
from benchmarks import smoke  # noqa: E402

# Paper 001, Table 3: (model, ground truth, metric) -> {explainer: (mean, std)}.
PAPER = {
    ("tree", "value_change", "auc"): {"lirme": (0.652, 0.09), "exs": (0.697, 0.08)},
    ("tree", "value_change", "spearman"): {"lirme": (0.293, 0.12), "exs": (0.303, 0.14)},
    ("tree", "value_change", "euclidean"): {"lirme": (0.825, 0.03), "exs": (0.848, 0.06)},
    ("tree", "frequency", "auc"): {"lirme": (0.65, 0.12), "exs": (0.68, 0.08)},
    ("tree", "frequency", "spearman"): {"lirme": (0.291, 0.12), "exs": (0.30, 0.07)},
    ("tree", "frequency", "euclidean"): {"lirme": (0.61, 0.06), "exs": (0.626, 0.08)},
    ("lambdamart", "value_change", "auc"): {"lirme": (0.567, 0.09), "exs": (0.576, 0.09)},
    ("lambdamart", "value_change", "spearman"): {"lirme": (0.122, 0.16), "exs": (0.12, 0.15)},
    ("lambdamart", "value_change", "euclidean"): {"lirme": (0.819, 0.14), "exs": (0.743, 0.15)},
    ("lambdamart", "frequency", "auc"): {"lirme": (0.582, 0.09), "exs": (0.595, 0.09)},
    ("lambdamart", "frequency", "spearman"): {"lirme": (0.142, 0.16), "exs": (0.135, 0.15)},
    ("lambdamart", "frequency", "euclidean"): {"lirme": (0.75, 0.02), "exs": (0.73, 0.09)},
}
MODELS = {"tree": "Decision tree (depth 4)", "lambdamart": "LambdaMART (LightGBM)"}
GTS = {"value_change": "GT value change (paper: impurity)", "frequency": "GT frequency"}
METRIC_NAMES = {"auc": "AUC (top-5)", "spearman": "Spearman", "spearman_abs": "Spearman on abs values",
                "euclidean": "Euclidean"}
EXPLAINERS = ["lirme", "exs", "treeshap", "kernelshap"]


def contexts(seed: int, tmp: Path | None = None) -> dict[str, tuple[AuditContext, str]]:
    """The decision tree and the LambdaMART audited on MQ2008 Fold1 test; with `tmp` (smoke mode) on the tiny
    look-alike of `smoke.mq2008`."""
    from sklearn.tree import DecisionTreeRegressor

    fold = smoke.mq2008(tmp)
    names = fold.feature_names()
    test = load_ranking_data(fold.folder / "test.txt", n_features=46, feature_names=names)
    background = load_ranking_data(fold.folder / "train.txt.gz", n_features=46, feature_names=names)
    tree = DecisionTreeRegressor(max_depth=4, random_state=seed).fit(background.X, background.y)
    mse = float(np.mean((tree.predict(test.X) - test.y) ** 2))
    out = {}
    for key, ranker, facts in (
            ("tree", SklearnTreeRanker(tree), f"scikit-learn DecisionTreeRegressor(max_depth=4) on Fold1 train "
                                              f"labels; test MSE {mse:.3f} (paper: 0.241)"),
            ("lambdamart", load_lightgbm(fold.model), "examples/mq2008/model.txt")):
        ctx = AuditContext(data=test, model=CountingRanker(ranker), seed=seed, background=background,
                           masking="mean")
        out[key] = (ctx, facts)
    return out


def cell(result: EvidenceResult, name: str, kind: str, metric: str) -> str:
    mean = result.metrics.get(f"decision_path.{name}.{kind}.{metric}.mean")
    std = result.metrics.get(f"decision_path.{name}.{kind}.{metric}.std")
    if mean is None or not np.isfinite(mean):
        return "—"
    return f"{mean:.3f} ± {std:.2f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=None, help="a seeded sample of queries (default: all 156)")
    parser.add_argument("--docs-per-query", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.queries = args.queries or 2
    with smoke.workdir(args.smoke) as tmp:
        models = contexts(args.seed, tmp)
    lines = [f"Machine: {platform.machine()}, Python {platform.python_version()}; seed {args.seed}; queries: "
             f"{args.queries or 'all'}; top {args.docs_per_query} documents per query.", ""]
    results = {}
    for key, (ctx, facts) in models.items():
        ensemble, _ = tree_ensemble(ctx.model)
        ground_truth(ensemble, ctx.data.X[:5])  # compile once
        start = time.perf_counter()
        truth = ground_truth(ensemble, ctx.data.X)
        gt_seconds = time.perf_counter() - start
        start = time.perf_counter()
        result = run(ctx, DecisionPathOptions(explainers=EXPLAINERS, queries=args.queries,
                                              docs_per_query=args.docs_per_query))
        seconds = time.perf_counter() - start
        results[key] = result
        m = result.metrics
        lines += [f"- **{MODELS[key]}**: {facts}; {ensemble.n_trees} tree(s); path depth mean "
                  f"{m['decision_path.depth.mean']:.2f} (min {m['decision_path.depth.min']:.2f}, max "
                  f"{m['decision_path.depth.max']:.2f}); additivity error "
                  f"{m['decision_path.additivity.max_abs_error']:.1e}; "
                  f"ground truth for all {ctx.data.n_docs} test documents in {gt_seconds * 1000:.1f} ms; evidence "
                  f"{seconds:.1f} s, {ctx.model.rows_evaluated:,} model rows; {int(m['decision_path.docs'])} documents "
                  f"explained; EXS degenerate documents: {int(m.get('decision_path.exs.degenerate_docs', 0))}."]
        del truth
    lines += ["", "## Table 3 layout: ours (mean ± std over documents) beside the paper's", "",
              "| model | ground truth | similarity | LIRME | LIRME (paper) | EXS | EXS (paper) | TreeSHAP "
              "| KernelSHAP |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for key, result in results.items():
        for kind in ("value_change", "frequency"):
            for metric in ("auc", "spearman", "spearman_abs", "euclidean"):
                paper = PAPER.get((key, kind, metric), {})
                p = {n: (f"{paper[n][0]:.3f} ± {paper[n][1]:.2f}" if n in paper else "—") for n in ("lirme", "exs")}
                lines.append(f"| {MODELS[key]} | {GTS[kind]} | {METRIC_NAMES[metric]} | "
                             f"{cell(result, 'lirme', kind, metric)} | {p['lirme']} | "
                             f"{cell(result, 'exs', kind, metric)} | {p['exs']} | "
                             f"{cell(result, 'treeshap', kind, metric)} | {cell(result, 'kernelshap', kind, metric)} |")
    lines += ["", "## LIRME / EXS: coefficient form against contribution form (mean)", "",
              "| model | explainer | form | ground truth | AUC | Spearman | Spearman abs | Euclidean |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for key, result in results.items():
        for name in ("lirme", "exs"):
            for form in ("coefficients", "contributions"):
                for kind in ("value_change", "frequency"):
                    vals = [result.metrics.get(f"decision_path.{name}.{form}.{kind}.{m}.mean")
                            for m in ("auc", "spearman", "spearman_abs", "euclidean")]
                    lines.append(f"| {MODELS[key]} | {name.upper()} | {form} | {GTS[kind]} | "
                                 + " | ".join("—" if v is None or not np.isfinite(v) else f"{v:.3f}" for v in vals)
                                 + " |")
    lines += ["", "## Top-K AUC by K (mean over documents)", "",
              "| model | explainer | ground truth | " + " | ".join(f"K={k}" for k in range(1, 11)) + " |",
              "| --- | --- | --- | " + " | ".join("---" for _ in range(10)) + " |"]
    for key, result in results.items():
        for kind in ("value_change", "frequency"):
            for name in EXPLAINERS:
                vals = [result.metrics.get(f"decision_path.{name}.{kind}.auc.mean@k{k}") for k in range(1, 11)]
                lines.append(f"| {MODELS[key]} | {name} | {kind} | "
                             + " | ".join("—" if v is None or not np.isfinite(v) else f"{v:.3f}" for v in vals) + " |")
    lines += ["", "## Spearman correlation between path depth and accuracy (over documents)", "",
              "| model | ground truth | similarity | " + " | ".join(EXPLAINERS) + " |",
              "| --- | --- | --- | " + " | ".join("---" for _ in EXPLAINERS) + " |"]
    for key, result in results.items():
        for kind in ("value_change", "frequency"):
            for metric in ("auc", "spearman", "euclidean"):
                vals = [result.metrics.get(f"decision_path.{n}.{kind}.{metric}.depth_spearman") for n in EXPLAINERS]
                lines.append(f"| {MODELS[key]} | {kind} | {metric} | "
                             + " | ".join("—" if v is None or not np.isfinite(v) else f"{v:.3f}" for v in vals) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
