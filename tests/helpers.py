"""Small helpers several test modules share (not a test module; fixtures and the bookstore's helpers are in
conftest.py, the bad-input baseline and the example rankers' files in inputs.py)."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.evidence.base import EvidenceResult
from auditor.evidence.document import SCHEMA, EvidenceDocument, EvidenceItem
from auditor.inputs.spec import Waiver
from auditor.judging.policy import LoadedPack, PolicyPack, evaluate

# --- the CLI (test_cli, test_decision_path) ------------------------------------------------------------------------

runner = CliRunner()


def report(spec: Path, *args: str) -> tuple[int, Path | None]:
    result = runner.invoke(app, ["report", str(spec), "--quiet", *args])
    assert "Traceback" not in result.output, result.output
    path = Path(result.stdout.strip()) if result.exit_code in (0, 1) else None
    return result.exit_code, path


def evidence(report_path: Path) -> dict:
    return json.loads((report_path.parent / "evidence.json").read_text())


# --- a typed evidence document from the parts a test sets (summary, register, diff, disclosure tests) ---------------

_FINDING = {"title": "", "pack": "", "severity": "minor", "metric": "", "value": None, "requirement": "",
            "citation": "", "rationale": "", "message": ""}
_DETECTION = {"message": "", "severity": "minor", "citation": ""}


def document_of(**parts: object) -> EvidenceDocument:
    """An evidence document holding `parts` (top-level blocks as evidence.json spells them), every other block empty;
    an item's status defaults to ok, a finding's and a detection's texts to empty."""
    raw: dict = {"schema": SCHEMA, "tool": {"version": "test"}, "audit": {}, "spec": {}, "seed": 0, "inputs": {},
                 "evidence": {}, "evidence_order": [], "policies": [], "other_laws": [], "waivers": [],
                 "assignments": [], "feature_dictionary": {}, "findings": [], "detections": [], "opinion": "",
                 "run": {}, **parts}
    raw["evidence"] = {name: {"status": "ok", "figures": [], "how_to_read": "", **item}
                       for name, item in raw["evidence"].items()}
    raw["findings"] = [{**_FINDING, **f} for f in raw["findings"]]
    raw["detections"] = [{**_DETECTION, **d} for d in raw["detections"]]
    return EvidenceDocument.model_validate(raw)


# --- nDCG as LightGBM computes it (test_ranking_metrics, test_cli) -------------------------------------------------

def lightgbm_ndcg(scores: np.ndarray, labels: np.ndarray, sizes: np.ndarray, k: int) -> float:
    """LightGBM's ndcg@k for fixed scores: a zero-round booster evaluated with init_score = scores."""
    data = lgb.Dataset(np.zeros((len(scores), 1)), labels, group=sizes, init_score=scores)
    record: dict = {}
    lgb.train({"objective": "lambdarank", "metric": "ndcg", "eval_at": [k], "verbosity": -1, "num_leaves": 2},
              lgb.Dataset(np.zeros((len(scores), 1)), labels, group=sizes), num_boost_round=1,
              valid_sets=[data], valid_names=["v"], callbacks=[lgb.record_evaluation(record)],
              init_model=None)
    return record["v"][f"ndcg@{k}"][0]


# --- rules judged on hand-made evidence (test_policy_packs, test_interval_judging) ---------------------------------

TODAY = dt.date(2026, 11, 22)
BASE = {"title": "t", "evidence": "ranking_quality", "citation": "c", "rationale": "r", "severity": "major"}


def packs(*rules: dict, name: str = "p") -> list[LoadedPack]:
    model = PolicyPack(pack=name, title=name.upper(), version="1", rules=[{**BASE, **r} for r in rules])
    return [LoadedPack(pack=model, path=Path(f"{name}.yaml"), sha256="0")]


def judge(rules: list[LoadedPack], evidence: dict, *, requested: set[str] | None = None,
          waivers: tuple[Waiver, ...] = ()) -> list:
    return evaluate(rules, evidence, requested=set(evidence) if requested is None else requested,
                    waivers=list(waivers), today=TODAY)


def quality(per_query: dict[str, dict[str, float]] | None = None, **metrics: float) -> dict[str, EvidenceResult]:
    return {"ranking_quality": EvidenceResult(name="ranking_quality", metrics=dict(metrics),
                                              per_query=per_query or {})}


# --- the executive summary's page (test_summary_page, test_report_layout) ------------------------------------------

class _Visible(HTMLParser):
    """The text of one section, without what is set in small technical type (`.key`)."""

    def __init__(self, section: str) -> None:
        super().__init__()
        self.section, self.inside, self.hidden, self.text = section, 0, 0, []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attrs = dict(attrs)
        if tag == "section" and attrs.get("id") == self.section:
            self.inside = 1
        elif self.inside and tag == "section":
            self.inside += 1
        if self.inside and (self.hidden or "key" in (attrs.get("class") or "").split()):
            self.hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if self.hidden:
            self.hidden -= 1
        if self.inside and tag == "section":
            self.inside -= 1

    def handle_data(self, data: str) -> None:
        if self.inside and not self.hidden:
            self.text.append(data)


def section_text(html: str, section: str) -> str:
    parser = _Visible(section)
    parser.feed(html)
    return "".join(parser.text)


def _metric_keys(run: Path) -> set[str]:
    document = json.loads((run / "evidence.json").read_text())
    keys = {k for e in document["evidence"].values() for k in e.get("metrics", {})}
    return keys | {f["metric"] for f in document["findings"]}


def _pages(pdf: Path) -> list[str]:
    if not shutil.which("pdftotext"):
        pytest.skip("poppler-utils (pdftotext) not installed; .ci/run installs them")
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    return text.split("\f")


def summary_page_checks(run: Path) -> None:
    """The summary is one page of its own, followed by the findings; no metric key in the summary, nor in the
    findings outside small type."""
    pages = _pages(run / "report.pdf")
    starts = [i for i, p in enumerate(pages) if re.search(r"^\s*Executive summary\s*$", p, re.M)
              and "Findings by severity" in p]
    assert len(starts) == 1, "the summary has a page of its own"
    first = starts[0]
    assert re.search(r"^\s*Coverage\s*$", pages[first], re.M), "the whole summary is on its page"
    assert re.search(r"^\s*Findings\s*$", pages[first + 1], re.M), "the findings open the next page"
    html = (run / "report.html").read_text()
    keys = _metric_keys(run)
    for section in ("summary", "findings"):
        visible = section_text(html, section)
        shown = sorted(k for k in keys if re.search(rf"(?<![\w.]){re.escape(k)}(?![\w@])", visible))
        assert not shown, (section, shown)


def assert_consistent(run: Path) -> None:
    """The run's report says what its evidence holds (auditor/report/consistency.py): no printed value, interval,
    severity or pointer contradicts evidence.json."""
    from auditor.report.consistency import check

    document = EvidenceDocument.model_validate(json.loads((run / "evidence.json").read_text()))
    problems = check((run / "report.html").read_text(), document)
    assert not problems, problems[:10]


# --- shared by several test modules (a test module never imports another) ------------------------------------------

def amend_pdf_title(pdf: Path, title: str) -> None:
    """What an editor would do to a signed report.pdf: an incremental update that changes its title, written in
    place (tests/test_signing.py after signing, tests/test_approval.py after the approval)."""
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

    amended = pdf.with_name("amended.pdf")
    with pdf.open("rb") as handle:
        writer = IncrementalPdfFileWriter(handle)
        writer.document_meta.title = title
        writer.update_root()
        with amended.open("wb") as out:
            writer.write(out)
    amended.replace(pdf)


def rehash_trail(location: str, system: str | None = None) -> None:
    """What a database administrator who knows the trail would do after editing rows: recompute the content and hash
    of every trail entry (of `system`, or all), so the chain is whole again (tests/test_trail.py, test_decisions.py)."""
    from sqlalchemy import create_engine, text

    from auditor.register import trail
    from auditor.register.store import register_url

    engine = create_engine(register_url(location))
    with engine.begin() as connection:
        names = dict(connection.execute(text("SELECT id, run_name FROM runs")).all())
        tables = {"run": "runs", "event": "finding_events", "approval": "approvals"}
        prev = trail.GENESIS
        where, params = ("WHERE system = :s ", {"s": system}) if system is not None else ("", {})
        for entry in connection.execute(text(f"SELECT id, kind, ref FROM trail {where}ORDER BY seq"),
                                        params).mappings().all():
            row = connection.execute(text(f"SELECT * FROM {tables[entry['kind']]} WHERE id = :i"),
                                     {"i": entry["ref"]}).mappings().one()
            record = trail.content(entry["kind"], dict(row), names)
            digest = trail.link(prev, record)
            connection.execute(text("UPDATE trail SET content = :c, prev = :p, hash = :h WHERE id = :i"),
                               {"c": record, "p": prev, "h": digest, "i": entry["id"]})
            prev = digest
    engine.dispose()


class FirstColumn:
    """score = the first feature (a callable model): LL144 tables from scores the test chooses."""

    kind = "callable"
    n_features = 1
    feature_names = None

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X[:, 0].astype(np.float64)

    def contributions(self, X: np.ndarray) -> None:
        return None

    def describe(self) -> dict[str, str]:
        return {"kind": self.kind}


# --- the hiring example (test_selection_rates, test_ll144_summary) -------------------------------------------------

HIRING = Path(__file__).resolve().parents[1] / "examples" / "hiring"


def hiring_run(tmp_path: Path, spec_name: str, *, resamples: int = 400, edit: Any = None) -> Any:
    """The hiring example's audit (selection_rates alone, light) in a copy of the folder; `edit(folder, spec)`
    changes the copy first (test_selection_rates, test_ll144_summary)."""
    from auditor.run.engine import run_audit

    folder = tmp_path / spec_name.removesuffix(".yaml")
    folder.mkdir()
    for name in ("test.csv", "model-biased.txt", "model-fair.txt"):
        shutil.copy(HIRING / name, folder / name)
    spec = yaml.safe_load((HIRING / spec_name).read_text())
    spec["evidence"] = [{"selection_rates": {"categories": ["sex", "race_ethnicity"], "resamples": resamples}}]
    spec["output"] = {"dir": "reports", "formats": ["html"]}
    spec["register"] = False
    if edit is not None:
        edit(folder, spec)
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return run_audit(folder / "audit.yaml", today=dt.date(2026, 12, 1))


def bookstore_under(tmp_path: Path, *, policies: list[str], provider: dict[str, bool] | None = None,
                    register: str | bool = False, documents: tuple[str, ...] = ("report",)) -> Path:
    """A copy of the bookstore with a light spec (`dsa.yaml`) judged by `policies`, its provider facts updated by
    `provider`, unsigned, no owners or waivers: the spec's path (test_dsa_audit, test_implementation_report,
    test_consistency)."""
    from tests.conftest import BOOKSTORE, LIGHT

    folder = tmp_path / "b"
    shutil.copytree(BOOKSTORE, folder)
    spec = yaml.safe_load((folder / "audit.yaml").read_text())
    spec["evidence"] = [next((LIGHT[name] for name in item if name in LIGHT), item) for item in spec["evidence"]]
    spec["policies"] = policies
    spec["audit"]["provider"].update(provider or {})
    spec["findings"], spec["waivers"], spec["register"] = [], [], register
    spec.pop("signing", None)
    spec["output"] = {"dir": "out", "formats": ["html"], "documents": list(documents)}
    (folder / "dsa.yaml").write_text(yaml.safe_dump(spec))
    return folder / "dsa.yaml"


# --- an exposure result as stored (test_exposure, test_executive_summary) ------------------------------------------

def wide_exposure_item() -> EvidenceItem:
    """The wide run's exposure as stored (a reader review): f1_count = 7 has the largest ratio the packs judge, met in
    10 of 43 queries with an interval from 0; four values met in fewer than 10 queries are left out."""
    queries = {"0": 43, "4": 43, "7": 10, "8": 8, "9": 2, "10": 3, "11": 2}
    ratios = {"0": 0.976, "4": 0.648, "7": 1.404, "8": 1.12, "9": 1.52, "10": 0.206, "11": 1.22}
    metrics = {f"exposure.f1_count.{v}.{m}": x for v in queries
               for m, x in (("queries", float(queries[v])), ("ratio", ratios[v]))}
    metrics.update({"exposure.queries": 43.0, "exposure.max.ratio": 1.404, "exposure.max.ratio.ci95_low": 0.0,
                    "exposure.max.ratio.ci95_high": 3.896, "exposure.min.ratio": 0.648,
                    "exposure.min.ratio.ci95_low": 0.458, "exposure.min.ratio.ci95_high": 0.875})
    groups = [{"column": "f1_count", "values": [{"value": v, "label": f"f1_count = {v}"} for v in queries]}]
    return EvidenceItem(status="ok", figures=[], how_to_read="", facts={"groups": groups},
                        options={"min_queries": 10}, metrics=metrics)

