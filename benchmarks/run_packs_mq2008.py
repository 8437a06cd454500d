"""Run every built-in policy pack on MQ2008 Fold1 test: the spec `auditor init --policy NAME` writes, filled in
for this data (declared and sensitive parameters, feature names, training data as background), with the heavier
evidence on a seeded sample of queries. Prints a markdown table of each pack's findings.

    .venv/bin/python benchmarks/run_packs_mq2008.py [--queries 20] [--out docs/reproductions/packs-mq2008.md]

Needs ../shared/data (or $AUDITOR_DATA). Trains examples/mq2008/model.txt first if it is missing.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import smoke  # noqa: E402

# What a search operator would declare for a LETOR-style web ranker (LETOR 4.0 feature names), most important
# first, and one parameter treated as sensitive (link popularity stands in for a paid signal: MQ2008 has none).
DECLARED = ["bm25_whole_document", "lmir_dir_whole_document", "tfidf_whole_document", "pagerank"]
SENSITIVE = ["pagerank"]
AUDITOR = [sys.executable, "-m", "auditor"]
SAMPLED = {"local_explanations", "decision_path_accuracy", "pairwise", "confidence"}


def pack_names() -> list[str]:
    return sorted(p.stem for p in (ROOT / "policies").glob("*.yaml"))


def spec_for(pack: str, fold: smoke.Fold, work: Path, queries: int, few: bool = False) -> Path:
    """`auditor init`'s spec for the pack, filled in for MQ2008 (module docstring); `few`: its first evidence items
    only (smoke mode)."""
    path = work / f"{pack}.yaml"
    subprocess.run([*AUDITOR, "init", "--model", str(fold.model), "--dataset", str(fold.folder / "test.txt"),
                    "--policy", pack, "--out", str(path)], check=True, capture_output=True)
    spec = yaml.safe_load(path.read_text())
    spec["dataset"]["feature_names"] = str(fold.features)
    spec["background"] = {"path": str(fold.folder / "train.txt.gz"), "format": "svmlight",
                          "feature_names": str(fold.features)}
    spec["audit"].update({"owner": "auditor project", "period": "2026-Q4", "purpose": "pack check on MQ2008",
                          "limitations": ["Research data; sensitive parameter is a stand-in."]})
    items = []
    for item in smoke.few(spec["evidence"]) if few else spec["evidence"]:
        (name, options), = item.items()
        options = dict(options or {})
        if name == "disclosure_consistency":
            options["declared"] = DECLARED
        if name == "parameter_influence":
            options["sensitive"] = SENSITIVE
        if name in SAMPLED:
            options["queries"] = queries
        if name == "local_explanations":
            options.update({"k_curve": [], "methods": ["random", "treeshap5", "lirme5", "greedy_cover_eps",
                                                        "validity_search"]})
        if name == "confidence":
            options["methods"] = ["treeshap5", "lirme5", "greedy_cover_eps", "validity_search"]
        items.append({name: options})
    spec["evidence"] = items
    spec.pop("signing", None)
    spec["register"] = False  # each pack's audit on its own: no "since last review" from the pack before
    spec["output"] = {"dir": str(work / "runs")}
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--packs", nargs="+", choices=pack_names(), help="default: all (with --smoke: starter)")
    parser.add_argument("--out", type=Path, default=None)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.queries, args.packs = 2, args.packs or ["starter"]
    lines = ["# Every policy pack on MQ2008 Fold1 test", "",
             f"Specs written by `auditor init --policy NAME`, filled in for MQ2008 (declared parameters "
             f"{DECLARED}, sensitive {SENSITIVE}, training data as background); sampled evidence on "
             f"{args.queries} queries. Command: `.venv/bin/python benchmarks/run_packs_mq2008.py --out "
             "docs/reproductions/packs-mq2008.md`.", "",
             "| pack | exit code | opinion | findings (status: count) | evidence with errors | seconds |",
             "|---|---|---|---|---|---|"]
    details = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fold = smoke.mq2008(work if args.smoke else None)
        for pack in args.packs or pack_names():
            spec = spec_for(pack, fold, work, args.queries, few=args.smoke)
            start = time.perf_counter()
            done = subprocess.run([*AUDITOR, "report", str(spec), "--quiet",
                                   "--fail-on", "never"], capture_output=True, text=True)
            seconds = time.perf_counter() - start
            if done.returncode not in (0, 1):
                if args.smoke:
                    raise SystemExit(f"{pack}: auditor report failed ({done.returncode}): {done.stderr[-2000:]}")
                lines.append(f"| {pack} | {done.returncode} | — | {done.stderr.strip()[:200]} | — | {seconds:.0f} |")
                continue
            run = Path(done.stdout.strip().splitlines()[-1]).parent  # the command prints the report's path
            document = json.loads((run / "evidence.json").read_text())
            findings = document["findings"]
            counts = collections.Counter(f["status"] for f in findings)
            errors = [name for name, ev in document["evidence"].items() if ev["status"] == "error"]
            lines.append(f"| {pack} | {done.returncode} | {document.get('opinion', '—')} | "
                         + ", ".join(f"{s}: {n}" for s, n in sorted(counts.items())) + f" | {', '.join(errors) or '—'}"
                         f" | {seconds:.0f} |")
            details += ["", f"## {pack}", "", "| rule | status | value | message |", "|---|---|---|---|"]
            details += [f"| {f.get('rule')} | {f.get('status')} | {f.get('value')} | "
                        f"{str(f.get('message', '')).replace('|', '/')[:160]} |" for f in findings]
            shutil.rmtree(run)  # one run folder per pack at a time
    text = "\n".join(lines + details) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
