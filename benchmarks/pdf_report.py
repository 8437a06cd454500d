"""A 200-query audit rendered to PDF: time, file size and memory of the rendering (target: < 30 s, < 100 MB).

    .venv/bin/python benchmarks/pdf_report.py [--queries 200]

Builds a 200-query dataset from the bookstore example (its 80 test queries repeated with new query ids), runs
the audit with every evidence kind (local explanations and decision paths on all 200 queries), then renders the
PDF three more times from the same HTML and evidence to time the rendering alone. Per-query detail lives in the
attached evidence.json; the report shows sampled tables and figures.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import sys
import tempfile
import time
from io import BytesIO
from pathlib import Path

import pandas as pd
import yaml
from pyhanko.pdf_utils.reader import PdfFileReader

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.report.pdf import fixed_date, render_pdf  # noqa: E402
from auditor.run.engine import run_audit  # noqa: E402
from benchmarks import smoke  # noqa: E402

BOOKSTORE = ROOT / "examples" / "bookstore"


def build(folder: Path, queries: int, few: bool = False) -> Path:
    """The bookstore's spec and files in `folder`, its test queries repeated to `queries`, HTML + PDF; `few`
    (smoke mode): the first evidence items, HTML only (the PDF rendered here is the one PDF: seconds each)."""
    test = pd.read_csv(BOOKSTORE / "test.csv")
    parts, copy = [], 0
    while sum(len(p["qid"].unique()) for p in parts) < queries:
        part = test.copy()
        part["qid"] = part["qid"] + 100_000 * copy
        parts.append(part)
        copy += 1
    data = pd.concat(parts)
    keep = list(dict.fromkeys(data["qid"]))[:queries]
    data[data["qid"].isin(keep)].to_csv(folder / "test.csv", index=False)
    for name in ("model.txt", "train.csv"):
        shutil.copy(BOOKSTORE / name, folder / name)
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    spec.pop("signing", None)
    spec["output"] = {"dir": "reports", "formats": ["html"] if few else ["html", "pdf"]}
    if few:
        spec["evidence"] = smoke.few(spec["evidence"])
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder / "audit.yaml"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    renders = 3
    if args.smoke:  # three queries, the first evidence items, the PDF rendered once
        args.queries, renders = 3, 1
    with tempfile.TemporaryDirectory() as tmp:
        spec = build(Path(tmp), args.queries, few=args.smoke)
        start = time.perf_counter()
        run = run_audit(spec)
        audit_seconds = time.perf_counter() - start
        html = (run.run_dir / "report.html").read_text()
        evidence = (run.run_dir / "evidence.json").read_bytes()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        times = []
        for _ in range(renders):
            start = time.perf_counter()
            pdf = render_pdf(html, attachment=evidence, date=fixed_date("2026-11-22"))
            times.append(time.perf_counter() - start)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        size = len(pdf)  # the run's report.pdf is the same rendering
        pages = len(PdfFileReader(BytesIO(pdf), strict=False).root["/Pages"]["/Kids"])
    print(f"| queries | audit s (all evidence) | PDF render s (median of {renders}) | PDF MB | evidence.json MB | "
          "pages | process peak RSS MB |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(f"| {args.queries} | {audit_seconds:.1f} | {statistics.median(times):.1f} | {size / 1e6:.2f} | "
          f"{len(evidence) / 1e6:.2f} | {pages} | {max(before, peak) / 1024:.0f} |")
    ok = statistics.median(times) < 30 and size < 100e6
    print(f"\n{'PASS' if ok else 'FAIL'}: render {statistics.median(times):.1f} s (limit 30 s), "
          f"file {size / 1e6:.2f} MB (limit 100 MB)")


if __name__ == "__main__":
    main()
