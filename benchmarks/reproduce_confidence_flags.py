"""Do the low-confidence flags earn their keep? The product's `confidence` evidence on MQ2008 Fold1 test with the
LightGBM LambdaMART of examples/mq2008: flagged vs unflagged explanations by validity and decision-path accuracy,
with the criterion under test left out of the flags, and query-clustered bootstrap intervals.

    .venv/bin/python benchmarks/reproduce_confidence_flags.py [--queries N] [--records FILE]
        [--out docs/reproductions/confidence-flags.md]

Needs ../shared/data (or $AUDITOR_DATA). Trains examples/mq2008/model.txt first if it is missing. Prints markdown.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from reproduce_decision_paths import contexts  # noqa: E402

from auditor.evidence.confidence import ConfidenceOptions, run  # noqa: E402


def table_markdown(table: Any) -> str:
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in table.rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--records", type=Path, default=None, help="also write the per-explanation records (JSON)")
    args = parser.parse_args()
    ctx, facts = contexts(args.seed)["lambdamart"]
    options = ConfidenceOptions(queries=args.queries, methods=["treeshap5", "shap5", "lirme5", "exs5", "greedy",
                                                               "greedy_cover_eps", "validity_search"])
    start = time.perf_counter()
    result = run(ctx, options)
    seconds = time.perf_counter() - start
    parts = [
        "# Low-confidence flags on MQ2008 Fold1 test",
        "",
        f"Model: {facts}. Masking: training mean. k = {options.k}; every criterion at its default threshold "
        f"({', '.join(f'{k} {v:g}' for k, v in options.thresholds.model_dump().items())}). "
        f"{int(result.metrics['confidence.explanations'])} explanations of "
        f"{int(result.metrics['confidence.explanations']) // len(options.methods)} queries; "
        f"{seconds:.0f} s on {platform.machine()} (2 cores, shared).",
        "",
        "Command: `.venv/bin/python benchmarks/reproduce_confidence_flags.py --out "
        "docs/reproductions/confidence-flags.md`",
        "",
    ]
    for table in result.tables:
        if table.title.startswith("Explanations not to rely on"):
            continue
        parts += [f"## {table.title}", "", table_markdown(table), "", f"_{table.note}_", ""]
    parts += [f"Summary: {result.summary}", ""]
    text = "\n".join(parts)
    print(text)
    if args.out:
        args.out.write_text(text)
    if args.records:
        args.records.write_text(json.dumps(result.records))


if __name__ == "__main__":
    main()
