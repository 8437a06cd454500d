"""Degenerate models and runaway settings end in a finding or a clamp, never in a silent pass (issue 33).

A model that scores every document alike used to be certified: on a file sorted by label, file-order tie-breaking
gave nDCG 1.0, every rule passed and the opinion was "positive". `--jobs 10000` asked libgomp for ten thousand
threads.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import os
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.core.threads import THREADS_ENV, cpu_count
from auditor.evidence.executor import core_limit, usable_jobs
from tests.inputs import Case, assert_one_error_line, invoke, pos, spec_text, svmlight_lines, write_base_spec

runner = CliRunner()


def _constant_model(folder: Path) -> None:
    """A real LambdaMART trained on constant features: one leaf per tree, the same score for every document."""
    frame = pd.read_csv(folder / "train.csv")
    features = [c for c in frame.columns if c not in ("qid", "label", "doc_id")]
    sizes = frame.groupby("qid", sort=False).size().to_numpy()
    data = lgb.Dataset(np.zeros((len(frame), len(features))), frame["label"], group=sizes, feature_name=features)
    lgb.train({"objective": "lambdarank", "verbosity": -1}, data, num_boost_round=3).save_model(folder / "model.txt")


def _sorted_by_label(folder: Path) -> None:
    """The test file with each query's documents stored best first: file order alone would rank them perfectly."""
    with (folder / "test.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    header, body = rows[0], rows[1:]
    qid, label = header.index("qid"), header.index("label")
    body.sort(key=lambda row: (row[qid], -float(row[label])))
    with (folder / "test.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows([header, *body])


def _audit(folder: Path, policies: list[str]) -> dict:
    spec = yaml.safe_load((folder / "audit.yaml").read_text())
    spec.update(evidence=[{"ranking_quality": {"cutoffs": [1, 10]}}], policies=policies,
                output={"dir": "reports", "formats": ["html"]})
    spec.pop("disclosure", None)
    path = folder / "constant.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = runner.invoke(app, ["report", str(path), "--out", str(folder / "out"), "--quiet", "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    return json.loads((Path(result.stdout.strip()).parent / "evidence.json").read_text())


def test_a_model_without_any_order_is_never_certified(bookstore: Path) -> None:
    _constant_model(bookstore)
    _sorted_by_label(bookstore)
    (bookstore / "mine.yaml").write_text(yaml.safe_dump({  # a pack that does not judge ties
        "pack": "mine", "title": "Accuracy only", "version": "1",
        "rules": [{"id": "MINE-1", "title": "Good nDCG", "evidence": "ranking_quality",
                   "metric": "ranking_quality.ndcg@10.mean", "fail_if": "< 0.3", "severity": "major",
                   "citation": "internal", "rationale": "accuracy", "threshold_reason": "ours", "remedy": "retrain"}]}))

    doc = _audit(bookstore, ["starter"])
    facts = doc["evidence"]["dataset"]["metrics"]
    assert facts["dataset.tied_score_queries_share"] == 1.0 and facts["dataset.tied_docs_share"] == 1.0
    quality = doc["evidence"]["ranking_quality"]["metrics"]["ranking_quality.ndcg@10.mean"]
    assert quality < 0.7, "tie-aware nDCG is the random order's expectation, not the file order's 1.0"
    detection = next(d for d in doc["evidence"]["dataset"]["detections"] if d["kind"] == "rankings-without-order")
    assert detection["severity"] == "critical"
    base12 = next(f for f in doc["findings"] if f["rule"] == "BASE-12")
    assert base12["status"] == "FAIL" and base12["severity"] == "critical"
    assert doc["opinion"] == "negative"

    doc = _audit(bookstore, ["mine.yaml"])  # no rule judges it: still never "positive"
    assert [f["status"] for f in doc["findings"]] == ["PASS"]
    assert doc["opinion"] == "positive with comments"


def test_jobs_beyond_the_cores_are_clamped(bookstore: Path) -> None:
    assert usable_jobs(10_000) == cpu_count()
    assert usable_jobs(10_000, "tcp://cluster:8786") == 10_000  # a remote cluster has its own cores
    with core_limit(10_000):
        assert int(os.environ[THREADS_ENV]) == cpu_count()
    spec = yaml.safe_load((bookstore / "audit.yaml").read_text())
    spec.update(evidence=[{"ranking_quality": {}}], output={"dir": "reports", "formats": ["html"]})
    (bookstore / "jobs.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    result = runner.invoke(app, ["report", str(bookstore / "jobs.yaml"), "--out", str(bookstore / "out"),
                                 "--jobs", "10000", "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    assert f"10000 jobs asked for, but this machine has {cpu_count()} cores" in result.stderr
    run = json.loads((Path(result.stdout.strip().splitlines()[-1]).parent / "evidence.json").read_text())
    assert run["run"]["executor"]["workers"] <= cpu_count()


def test_paths_too_long_or_from_an_unknown_home_are_one_line_errors(base: Path) -> None:
    """Both were exit 3 ("internal error: OSError: File name too long", "RuntimeError: Could not determine home")."""
    long_model = "a/" * 3000 + "model.txt"
    for model, needles in ((long_model, ("cannot open", "characters)", "File name too long", "check the path")),
                           ("~nobody-has-this-name/model.txt", ("cannot tell which home folder", "full path"))):
        text = spec_text(model={"path": model})
        spec = write_base_spec(base, text)
        result = invoke("report", str(spec), "--out", str(base / "out"), "--quiet")
        line = assert_one_error_line(result, Case(spec, spec, pos(text, "path: ", shift=len("path: ")), needles))
        assert len(line) < 500, "a long path is shortened in the message"
    spec = write_base_spec(base)
    result = invoke("report", str(spec), "--out", str(base / ("b/" * 3000)), "--quiet")
    assert result.exit_code == 2 and "cannot use this output folder" in result.stderr, result.output
    assert list((base / "out").iterdir()) == []


def test_a_query_file_read_by_convention_is_hashed_in_the_manifest(base: Path) -> None:
    """`X.txt.query` beside an SVMlight file without qids is an input like any other: it decides every query."""
    lines = svmlight_lines(base, n_rows=60)
    qids = [line.split()[1] for line in lines]
    (base / "data.txt").write_text("".join(f"{line.split(' ', 2)[0]} {line.split(' ', 2)[2]}\n" for line in lines))
    sizes = [sum(1 for _ in group) for _, group in itertools.groupby(qids)]
    (base / "data.txt.query").write_text("".join(f"{n}\n" for n in sizes))
    spec = write_base_spec(base, dataset={"path": "data.txt"})
    result = invoke("report", str(spec), "--out", str(base / "out"), "--quiet", "--fail-on", "never")
    assert result.exit_code == 0, result.output
    doc = json.loads((Path(result.stdout.strip()).parent / "evidence.json").read_text())
    side = doc["inputs"]["dataset"]["query_file_file"]
    assert side["file"] == "data.txt.query"
    assert side["sha256"] == hashlib.sha256((base / "data.txt.query").read_bytes()).hexdigest()
