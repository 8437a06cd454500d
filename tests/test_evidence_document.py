"""evidence.json as one type (auditor/evidence/document.py, issue 52 item 1): a run's document reads back as itself,
a v1 document reads through its adapter with every value unchanged, estimates come with their interval, and what no
writer of ours puts there is one line naming the place."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from auditor.core.errors import InputError
from auditor.evidence.document import SCHEMA, V1, EvidenceDocument, read_document, upgrade_v1


@pytest.fixture(scope="module")
def raw(demo: Path) -> dict[str, Any]:
    return json.loads((demo / "evidence.json").read_text())


@pytest.mark.slow
def test_a_run_reads_as_v2_and_writes_back_as_it_was(raw: dict[str, Any]) -> None:
    document = read_document(raw)
    assert raw["schema"] == SCHEMA and document.adapted == [] and document.written_schema == SCHEMA
    assert document.to_json() == raw  # nothing filled in, nothing dropped
    assert [name for name, _ in document.items()] == raw["evidence_order"]
    assert all(item.figures is not None for item in document.evidence.values())


@pytest.mark.slow
def test_an_estimate_is_read_with_its_interval(raw: dict[str, Any]) -> None:
    document = read_document(raw)
    metrics = raw["evidence"]["ranking_quality"]["metrics"]
    found = document.reading("ranking_quality", "ranking_quality.ndcg@10.mean")
    assert found is not None and found.interval == (metrics["ranking_quality.ndcg@10.ci95_low"],
                                                    metrics["ranking_quality.ndcg@10.ci95_high"])
    assert found.value == metrics["ranking_quality.ndcg@10.mean"]
    names = [name for name, _ in document.evidence["ranking_quality"].estimates()]
    assert "ranking_quality.ndcg@10.mean" in names and not any(n.endswith(("ci95_low", "ci95_high")) for n in names)


@pytest.mark.slow
def test_a_v1_document_reads_through_the_adapter_with_every_value_unchanged(raw: dict[str, Any]) -> None:
    old = copy.deepcopy(raw)
    old["schema"] = V1
    old.pop("evidence_order")
    for item in old["evidence"].values():
        item.pop("figures")
        item.pop("how_to_read")
    old["evidence"]["dataset"]["volatile_cost"] = []  # a key an earlier version wrote and v2 does not have
    document = read_document(old)
    assert document.written_schema == V1 and document.schema_name == SCHEMA
    assert "evidence_order: the stored order of the items" in document.adapted
    assert "evidence.dataset.volatile_cost: not part of v2, left out" in document.adapted
    assert all(item.figures is None for item in document.evidence.values())
    for name, item in document.evidence.items():
        assert item.metrics == raw["evidence"][name]["metrics"], name
    assert [f.model_dump() for f in document.findings] == [read_document(raw).findings[i].model_dump()
                                                            for i in range(len(raw["findings"]))]
    assert upgrade_v1(old)[0]["schema"] == SCHEMA and old["schema"] == V1  # the caller's document is not changed
    from auditor.run.diff import compare  # last quarter's v1 run compares with this quarter's v2 run

    since = compare(old, raw)
    assert since["findings"] == [] and since["metrics"] == [] and not any(i["changed"] for i in since["inputs"])


@pytest.mark.parametrize(("edit", "where", "words"), [
    (lambda d: d["evidence"]["x"]["metrics"].update({"x.m": "0.5"}), "evidence.x.metrics.x.m", "valid number"),
    (lambda d: d["evidence"]["x"]["metrics"].update({"x.m": True}), "evidence.x.metrics.x.m", "valid number"),
    (lambda d: d["evidence"]["x"].update(status="fine"), "evidence.x.status", "Input should be"),
    (lambda d: d["evidence"]["x"].pop("figures"), "evidence.x.figures", "Field required"),
    (lambda d: d.update(surprise=1), "surprise", "Extra inputs are not permitted"),
    (lambda d: d["findings"].append({"rule": "R"}), "findings.0.title", "Field required"),
    (lambda d: d.update(schema="auditor.evidence/v9"), "schema", "is not one this auditor reads"),
])
def test_what_no_writer_of_ours_puts_there_is_one_line_naming_the_place(edit: Any, where: str, words: str) -> None:
    from tests.helpers import document_of

    good = document_of(evidence={"x": {"metrics": {"x.m": 0.5}}}).to_json()
    assert isinstance(read_document(good), EvidenceDocument)
    edit(good)
    with pytest.raises(InputError) as caught:
        read_document(good, file="run/evidence.json")
    line = caught.value.one_line()
    assert line.startswith("run/evidence.json") and where in line and words in line and "\n" not in line
