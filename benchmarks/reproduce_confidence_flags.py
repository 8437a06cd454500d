"""Do the low-confidence flags earn their keep? The product's `confidence` evidence at its defaults (issue 37: an
estimated reliability per explanation, fitted leaving queries out; flags = estimate below 0.5) on three datasets:
the bookstore example, MQ2008 Fold1 test (shared data), the 136-feature synthetic set of benchmarks/wide_data.py
and its diffuse variant (relevance spread over 24 factors, where top-5 attributions fall to validity about 0.5).
Per dataset: the estimate's held-out AUC and calibration error, the flagged share beside the rule-based flags'
share, the validity and decision-path accuracy gaps between unflagged and flagged explanations, all with
query-bootstrap intervals, and the signals' coefficients.

    .venv/bin/python benchmarks/reproduce_confidence_flags.py [--datasets bookstore mq2008 wide136 wide136d]
        [--queries NAME=N ...] [--records DIR] [--out FILE]
    .venv/bin/python benchmarks/reproduce_confidence_flags.py --study [--study-queries 10] [--study-k 5 10 20]
        [--study-dataset wide136|wide136d]

`--study`: why attributions fail on the 136-feature ranker. `local_explanations` on a seeded sample of its queries
at each k, under the audit's mean masking (validity measured under the mean and under 20 background rows) and under
`masking: {strategy: background, rows: 20}` (the explainers and searches play on the rows).

Each dataset is loaded through the engine's own `prepare` (a spec holding only `confidence`, with its defaults
but `queries`) and the evidence runs in this process (serial executor), as `auditor report` runs it. MQ2008 needs
../shared/data (or $AUDITOR_DATA) and is skipped with a message when it is absent; examples/mq2008/model.txt is
trained first when missing. The wide sets are written by benchmarks/wide_data.py into /tmp/auditor-wide/136 and
/tmp/auditor-wide/136-diffuse when missing. Prints markdown.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from auditor.evidence.base import AuditContext, EvidenceResult  # noqa: E402
from auditor.evidence.kinds.confidence import ENTRY  # noqa: E402
from auditor.explain import registry  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from auditor.run.engine import prepare  # noqa: E402
from benchmarks import smoke  # noqa: E402

DATASETS = ("bookstore", "mq2008", "wide136", "wide136d")
# queries judged per dataset (None: all): each run stays within a few minutes on 2 shared cores
QUERIES: dict[str, int | None] = {"bookstore": None, "mq2008": None, "wide136": None, "wide136d": None}
WIDE = Path("/tmp/auditor-wide/136")
WIDE_DIFFUSE = Path("/tmp/auditor-wide/136-diffuse")
DIFFUSE = {"factors": 24, "decay": 0.5}  # wide_data.py's diffuse variant
AUDIT = {"title": "confidence flags reproduction", "organisation": "auditor benchmarks",
         "purpose": "docs/reproductions/confidence-flags.md"}


def table_markdown(columns: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def spec_for(name: str, tmp: Path | None = None) -> tuple[dict[str, Any] | None, str]:
    """The spec (without `evidence`) of a dataset, with absolute paths, and a line on the model; (None, why) when
    the data is absent. `tmp` (smoke mode): MQ2008 and the wide sets at a tiny size there (benchmarks/smoke.py)."""
    if name == "bookstore":
        folder = ROOT / "examples" / "bookstore"
        return ({"model": {"path": str(folder / "model.txt")},
                 "dataset": {"path": str(folder / "test.csv"), "query_column": "qid", "label_column": "label",
                             "doc_id_column": "doc_id"},
                 "background": {"path": str(folder / "train.csv"), "doc_id_column": "doc_id"},
                 "masking": {"strategy": "mean"}},
                "examples/bookstore (LightGBM LambdaMART, 12 features; background: train.csv)")
    if name == "mq2008":
        try:
            fold = smoke.mq2008(tmp)
        except SystemExit as absent:
            return None, str(absent)
        folder, names = fold.folder, str(fold.features)
        return ({"model": {"path": str(fold.model)},
                 "dataset": {"path": str(folder / "test.txt"), "format": "svmlight", "feature_names": names},
                 "background": {"path": str(folder / "train.txt.gz"), "format": "svmlight", "feature_names": names},
                 "masking": {"strategy": "mean"}},
                "MQ2008 Fold1 test, examples/mq2008/model.txt (LightGBM LambdaMART, 46 features; background: "
                "Fold1 train)")
    if name in ("wide136", "wide136d"):
        from wide_data import prepare as prepare_wide

        folder, shape = (WIDE, {}) if name == "wide136" else (WIDE_DIFFUSE, DIFFUSE)
        if tmp is None:
            prepare_wide(folder, 136, **shape)
        else:
            folder = smoke.wide(tmp / name, **shape).parent
        common = {"query_column": "qid", "label_column": "label", "doc_id_column": "doc_id", "nan_policy": "missing"}
        variant = "" if name == "wide136" else " (diffuse variant: `--factors 24 --decay 0.5`)"
        return ({"model": {"path": str(folder / "model.txt")},
                 "dataset": {"path": str(folder / "test.parquet"), **common},
                 "background": {"path": str(folder / "train.parquet"), **common},
                 "masking": {"strategy": "mean"}},
                f"benchmarks/wide_data.py 136 features{variant} (LightGBM LambdaMART, 150 trees x 31 leaves; "
                "background: its 300 training queries)")
    raise ValueError(name)


def context(spec: dict[str, Any], evidence: list[dict[str, Any]], folder: Path) -> tuple[AuditContext, Any]:
    """Load a spec through the engine's `prepare` and build the context the engine builds (serial executor)."""
    path = folder / "audit.yaml"
    path.write_text(yaml.safe_dump({"audit": AUDIT, **spec, "evidence": evidence, "policies": [], "seed": 7,
                                    "register": False, "output": {"dir": str(folder / "runs"),
                                                                  "formats": ["html"]}}, sort_keys=False))
    prepared = prepare(path)
    s = prepared.spec
    ctx = AuditContext(data=prepared.data, model=CountingRanker(prepared.model), seed=s.seed,
                       background=prepared.background, masking=s.masking.strategy,
                       masking_samples=s.masking.samples)
    return ctx, prepared


def _f(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def _i(m: dict[str, float], key: str) -> str:
    low, high = m.get(f"{key}.ci95_low"), m.get(f"{key}.ci95_high")
    return "—" if low is None or not np.isfinite(low) else f"{low:.3f} to {high:.3f}"


def summary_rows(result: EvidenceResult, queries: int) -> list[list[Any]]:
    m = result.metrics
    lost = m.get("confidence.attribution_unreliable_queries", float("nan"))
    return [
        ["explanations (query × explainer)", f"{int(m['confidence.explanations'])} ({queries} queries)", ""],
        ["reliable share (measured on the held-out target)", _f(m.get("confidence.reliable_share")), ""],
        ["AUC of the estimate (out of sample)", _f(m.get("confidence.validation.auc")),
         _i(m, "confidence.validation.auc")],
        ["expected calibration error", _f(m.get("confidence.validation.ece")), _i(m, "confidence.validation.ece")],
        ["flagged share (estimate < 0.5)", _f(m.get("confidence.flagged_fraction")),
         _i(m, "confidence.flagged_fraction")],
        ["flagged share, rule-based criteria (before)", _f(m.get("confidence.rules.flagged_fraction")), ""],
        ["validity gap, held-out masking (unflagged − flagged, within explainer)",
         _f(m.get("confidence.validation.validity_gap")), _i(m, "confidence.validation.validity_gap")],
        ["decision-path accuracy gap (unflagged − flagged, within explainer)",
         _f(m.get("confidence.validation.path_accuracy_gap")), _i(m, "confidence.validation.path_accuracy_gap")],
        ["attributions below the validity floor (held-out masking)",
         f"{int(m.get('confidence.widened.explanations', 0))}", ""],
        ["… of them reliable with more of their top features (≤ min(3k, half the features), chosen on the audit's "
         "masking and 5 other rows)",
         _f(m.get("confidence.widened.reliable_share")), ""],
        ["queries with no reliable attribution",
         f"{int(lost)} of {queries} ({_f(m.get('confidence.attribution_unreliable_queries_share'))})"
         if np.isfinite(lost) else "—", ""],
    ]


def within_auc(records: list[dict[str, Any]]) -> float:
    """The estimate's AUC inside one explainer's explanations (NaN with one outcome only)."""
    from auditor.checks.reliability import auc

    return auc(np.array([bool(r["reliable"]) for r in records], dtype=int),
               np.array([r["reliability"] for r in records], dtype=float))


def per_explainer(result: EvidenceResult) -> list[list[Any]]:
    rows = []
    for method in dict.fromkeys(r["method"] for r in result.records):
        mine = [r for r in result.records if r["method"] == method]
        rows.append([registry.label(method), len(mine), _f(np.mean([bool(r["reliable"]) for r in mine])),
                     _f(within_auc(mine)),
                     _f(np.mean([r["reliability"] for r in mine])), _f(np.mean([r["flagged"] for r in mine])),
                     _f(np.mean([r["flagged_by_rules"] for r in mine])),
                     _f(np.mean([r["measures"]["validity"] for r in mine])),
                     _f(np.mean([r["heldout_validity"] for r in mine]))])
    return rows


def meets(m: dict[str, float]) -> list[str]:
    """The issue's acceptance, item by item."""
    def above(key: str, floor: float) -> str:
        low = m.get(f"{key}.ci95_low", float("nan"))
        return "—" if not np.isfinite(low) else ("yes" if low > floor else "no")
    flagged = m.get("confidence.flagged_fraction", float("nan"))
    return [above("confidence.validation.auc", 0.7), "yes" if flagged <= 0.4 else "no",
            above("confidence.validation.validity_gap", 0.0), above("confidence.validation.path_accuracy_gap", 0.0)]


STUDY_METHODS = ["treeshap5", "lirme5", "exs5", "greedy_cover_eps", "validity_search"]


def study(queries: int, ks: list[int], methods: list[str], arms_wanted: list[str], dataset: str = "wide136",
          tmp: Path | None = None) -> str:
    """Validity of each explainer's top-k set on a wide ranker, by k and masking (module docstring)."""
    from auditor.evidence.kinds.local_explanations.measure import run as run_local

    spec, facts = spec_for(dataset, tmp)
    assert spec is not None
    arms = {"mean": {"strategy": "mean"}, "background rows": {"strategy": "background", "rows": 20}}
    arms = {arm: masking for arm, masking in arms.items() if arm.split()[0] in arms_wanted}
    found: dict[tuple[str, int, str], tuple[float, float]] = {}
    seconds: dict[tuple[str, int], float] = {}
    for arm, masking in arms.items():
        for k in ks:
            options: dict[str, Any] = {"methods": methods, "k": k, "k_curve": [], "queries": queries,
                                       "background_rows": 20}
            with tempfile.TemporaryDirectory(prefix="confidence-study-") as folder:
                ctx, prepared = context({**spec, "masking": masking}, [{"local_explanations": options}],
                                        Path(folder))
                (_, chosen), = prepared.spec.evidence_items()
                start = time.perf_counter()
                result = run_local(ctx, chosen)
                seconds[(arm, k)] = time.perf_counter() - start
            for m in methods:
                found[(arm, k, m)] = (result.metrics.get(f"local.{m}.validity.mean", float("nan")),
                                      result.metrics.get(f"local.{m}.validity_rows.mean", float("nan")))
            print(f"study: {arm} k={k} {seconds[(arm, k)]:.0f} s", file=sys.stderr, flush=True)
    columns = ["explainer"] + [f"k={k}: {arm} / rows" for arm in arms for k in ks]
    rows = [[registry.label(m)] + [f"{_f(found[(arm, k, m)][0])} / {_f(found[(arm, k, m)][1])}"
                                   for arm in arms for k in ks] for m in methods]
    return "\n".join([
        f"Wide study: {facts}; {queries} queries (seeded sample); validity = mean Kendall tau-b over queries of the "
        "model's ranking against the ranking with every feature but the explanation's k masked. Each cell: "
        "validity under the arm's own masking / under 20 background rows (tau averaged over the rows). Arm "
        "'mean': the audit masks by the background mean (the default); arm 'background rows': "
        "`masking: {strategy: background, rows: 20}`, explainers and searches play on the rows.", "",
        table_markdown(columns, rows), "",
        "Seconds per run: " + ", ".join(f"{arm} k={k} {s:.0f}" for (arm, k), s in seconds.items()) + ".", ""])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--queries", nargs="*", default=[], metavar="NAME=N",
                        help="queries judged per dataset (default: all); N=all")
    parser.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    parser.add_argument("--records", type=Path, default=None, help="write each dataset's records (JSON) here")
    parser.add_argument("--study", action="store_true", help="the wide-ranker study instead (module docstring)")
    parser.add_argument("--study-queries", type=int, default=10)
    parser.add_argument("--study-dataset", choices=["wide136", "wide136d"], default="wide136")
    parser.add_argument("--study-k", type=int, nargs="+", default=[5, 10, 20])
    parser.add_argument("--study-methods", nargs="+", default=STUDY_METHODS)
    parser.add_argument("--study-arms", nargs="+", choices=["mean", "background"], default=["mean", "background"],
                        help="'background' (explainers play on 20 background rows) costs about 6x 'mean' at k=20")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    with smoke.workdir(args.smoke) as tmp:
        if args.smoke:  # two of the datasets, tiny, two queries each; the study on two queries at k = 3
            args.datasets, args.queries = ["mq2008", "wide136"], ["mq2008=2", "wide136=2"]
            args.study_queries, args.study_k = 2, [3]
        text = (study(args.study_queries, args.study_k, args.study_methods, args.study_arms, args.study_dataset, tmp)
                if args.study else report(args, tmp))
    print(text)
    if args.out:
        args.out.write_text(text)


def report(args: argparse.Namespace, tmp: Path | None) -> str:
    """The confidence evidence on each dataset, and the acceptance table (module docstring)."""
    queries = dict(QUERIES)
    for item in args.queries:
        name, _, n = item.partition("=")
        queries[name] = None if n == "all" else int(n)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    if subprocess.run(["git", "status", "--porcelain", "auditor"], cwd=ROOT, capture_output=True, text=True).stdout:
        commit += " (with uncommitted changes under auditor/)"
    parts = [f"Run {dt.date.today().isoformat()} at commit {commit}; {platform.machine()}, Python "
             f"{platform.python_version()}, serial executor (2 shared cores); seed 7. `confidence` at its defaults "
             "except `queries`.", ""]
    overview = []
    for name in args.datasets:
        first = len(parts)
        spec, facts = spec_for(name, tmp)
        if spec is None:
            print(f"skipping {name}: {facts}", file=sys.stderr)
            parts += [f"## {name}", "", f"Skipped: {facts}.", ""]
            continue
        options: dict[str, Any] = {} if queries[name] is None else {"queries": queries[name]}
        with tempfile.TemporaryDirectory(prefix=f"confidence-{name}-") as folder:
            ctx, prepared = context(spec, [{"confidence": options}], Path(folder))
            (_, chosen), = prepared.spec.evidence_items()
            start = time.perf_counter()
            result = ENTRY.run(ctx, chosen)  # measured, then presented (its tables and summary)
            seconds = time.perf_counter() - start
        m = result.metrics
        n_queries = len({r["query"] for r in result.records})
        overview.append([name, n_queries, int(m["confidence.explanations"]), _f(m.get("confidence.validation.auc")),
                         _i(m, "confidence.validation.auc"), _f(m.get("confidence.flagged_fraction")),
                         _f(m.get("confidence.rules.flagged_fraction")),
                         f"{_f(m.get('confidence.validation.validity_gap'))} "
                         f"({_i(m, 'confidence.validation.validity_gap')})",
                         f"{_f(m.get('confidence.validation.path_accuracy_gap'))} "
                         f"({_i(m, 'confidence.validation.path_accuracy_gap')})", *meets(m), f"{seconds:.0f}"])
        parts += [f"## {name}", "",
                  f"{facts}. {n_queries} of {ctx.data.n_queries} test queries "
                  f"({'all' if chosen.queries is None else f'a seeded sample, `queries: {chosen.queries}`'}); "
                  f"{ctx.data.n_features} features; explainers {', '.join(registry.label(x) for x in chosen.methods)}"
                  f"; k = {chosen.k}; masking: the background mean; held-out target: {chosen.heldout_rows} "
                  f"background rows. Wall time {seconds:.0f} s, {ctx.model.rows_evaluated:,} model rows.", "",
                  table_markdown(["measure", "value", "95% interval"], summary_rows(result, n_queries)), "",
                  "Per explainer:", "",
                  table_markdown(["explainer", "explanations", "reliable (measured)", "AUC within explainer",
                                  "mean estimate",
                                  "flagged (estimate)", "flagged (rules, before)", "validity (audit masking)",
                                  "validity (held-out rows)"], per_explainer(result)), ""]
        for table in result.tables:
            if table.title.startswith(("What the estimate reads", "Do the flags earn their keep")):
                parts += [f"{table.title}:", "", table_markdown(table.columns, table.rows), ""]
        parts += [f"Summary sentence: {result.summary}", ""]
        if args.records:
            args.records.mkdir(parents=True, exist_ok=True)
            (args.records / f"{name}.json").write_text(json.dumps({"metrics": m, "records": result.records}))
        print("\n".join(parts[first:]), file=sys.stderr, flush=True)  # progress for the person running it
    parts += ["## Against the issue's acceptance", "",
              table_markdown(["dataset", "queries", "explanations", "AUC", "AUC 95%", "flagged", "flagged (rules)",
                              "validity gap (95%)", "path gap (95%)", "AUC low > 0.7", "flagged ≤ 0.4",
                              "validity gap low > 0", "path gap low > 0", "seconds"], overview), ""]
    return "\n".join(parts)


if __name__ == "__main__":
    main()
