"""evidence.json as one type: what every reader of a run takes (the report, the summary, the register, the history,
`diff`, JUnit, the disclosure draft, `auditor render` and the Python API) instead of indexing a dict by hand.

A document is read once, where it enters — `read_document` on a file's or the register's JSON, the engine on what it
has measured — and validated there: a reader downstream never meets a missing key or a string where a number was.
Schema v2 is v1 made definite: every item keeps its figure data, its reading guide and its order, every detection
the rules that judge it. Metrics keep the flat names the policy packs judge (`ranking_quality.ndcg@10.ci95_low` is a
metric a rule addresses): an estimate's value and interval are read together as a `Reading` (`EvidenceItem.reading`,
`EvidenceItem.estimates`) through `auditor.core.metric_names`, the one place of that spelling. A v1 document (a run or a
register review written before v2) reads through `upgrade_v1`, which drops nothing it knows and says in `adapted`
what it filled in.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, ValidationError

from auditor.core import metric_names
from auditor.core.errors import InputError

SCHEMA = "auditor.evidence/v2"
V1 = "auditor.evidence/v1"
READABLE = (V1, SCHEMA)

Severity = Literal["critical", "major", "minor", "info"]  # a judged detection takes its rule's, which may be info
ItemStatus = Literal["ok", "error", "skipped", "unmeasured"]
Number = StrictFloat | None  # a number, never a string or a bool read as one; null where it was not finite


class _Part(BaseModel):
    """A part of the document: exactly the keys the writer puts there, nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class TablePart(_Part):
    title: str
    columns: list[str]
    rows: list[Any]
    note: str = ""
    body_rows: int | None = None  # rows shown in the section (the rest in the appendix); None: the report's rule


class FigurePart(_Part):
    """A figure's drawing (`chart`, one of the report's charts) and its arguments, encoded as plain JSON
    (auditor/evidence/figures.py); drawn when a document is rendered."""

    title: str
    chart: str
    data: dict[str, Any]
    caption: str = ""
    description: str = ""


class DetectionPart(_Part):
    """Something the evidence found (auditor.evidence.base.Detection). At the top level of a document it also
    names the rules that judge it and, when any does, carries their severity (the evidence's own rating kept as
    `evidence_severity`)."""

    kind: str
    title: str
    message: str
    severity: Severity
    citation: str
    judged_by: list[str] = Field(default_factory=list)
    value: Number = None
    interval: tuple[Number, Number] | None = None
    evidence: str = ""
    subject: str = ""
    judged_by_rules: list[str] | None = None
    evidence_severity: Severity | None = None

    @property
    def key(self) -> str:
        """Its key as a finding across reviews: its kind, and what it is about when the kind can occur several
        times (a feature, an explainer, a group)."""
        return f"{self.kind}:{self.subject}" if self.subject else self.kind


class FindingPart(_Part):
    """One rule's verdict (auditor.judging.policy.Finding as written)."""

    rule: str
    title: str
    pack: str
    status: str
    severity: str
    metric: str
    value: Number
    requirement: str
    citation: str
    rationale: str
    message: str
    waiver: dict[str, Any] | None = None
    evidence: str = ""
    interval: tuple[Number, Number] | None = None
    inconclusive: bool = False
    remedy: str = ""
    threshold_reason: str = ""
    finding: str = ""

    @property
    def identity(self) -> str:
        """The finding it belongs to: one for every pack's rule that judges the same fact (its own rule id in
        documents written before identities)."""
        return self.finding or self.rule


class EvidenceItem(_Part):
    """What one evidence item measured, as stored. `figures` is None only for a v1 run that did not keep them."""

    status: ItemStatus
    summary: str = ""
    error: str = ""
    metrics: dict[str, Number] = Field(default_factory=dict)
    tables: list[TablePart] = Field(default_factory=list)
    figures: list[FigurePart] | None
    records: list[dict[str, Any]] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    n_model_rows: int = 0
    how_to_read: str
    detections: list[DetectionPart] = Field(default_factory=list)
    unmeasured: dict[str, str] = Field(default_factory=dict)
    per_query: dict[str, dict[str, Number]] = Field(default_factory=dict)
    attributions: dict[str, Any] | None = None  # global_importance: TreeSHAP per document of some queries
    # a presenting kind (one with a `section`): the options it measured under and the facts its `present` reads
    options: dict[str, Any] | None = None
    facts: dict[str, Any] | None = None

    @property
    def measured(self) -> bool:
        return self.status == "ok"

    def value(self, metric: str) -> float | None:
        """`metric`'s value, None when absent or not finite."""
        return self.metrics.get(metric)

    def reading(self, metric: str) -> metric_names.Reading | None:
        """`metric` with its 95% interval when it is an estimate; None when absent or null."""
        return metric_names.read(self.metrics, metric)

    def estimates(self) -> Iterator[tuple[str, metric_names.Reading]]:
        """Every `<name>.mean` estimate with its interval, in name order (what a comparison of two runs reads)."""
        return metric_names.estimates(self.metrics)


class EvidenceDocument(BaseModel):
    """evidence.json. The blocks that echo the spec and the run's context (audit, spec, inputs, tool, run,
    policies, waivers...) stay mappings as the spec's models wrote them; what the evidence produced is typed."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True)

    schema_name: Literal["auditor.evidence/v2"] = Field("auditor.evidence/v2", alias="schema")
    tool: dict[str, Any]
    audit: dict[str, Any]
    spec: dict[str, Any]
    seed: int
    inputs: dict[str, Any]
    evidence: dict[str, EvidenceItem]
    evidence_order: list[str]  # the report's order of sections (the keys of `evidence` are sorted when written)
    policies: list[dict[str, Any]]
    other_laws: list[dict[str, Any]]
    waivers: list[dict[str, Any]]
    assignments: list[dict[str, Any]]
    feature_dictionary: dict[str, Any]
    findings: list[FindingPart]
    detections: list[DetectionPart]
    opinion: str
    run: dict[str, Any]
    budget: dict[str, Any] | None = None
    review: dict[str, Any] | None = None
    since_last_review: dict[str, Any] | None = None
    adapted: list[str] = Field(default_factory=list, exclude=True)  # what reading an older schema filled in
    written_schema: str = Field(default="auditor.evidence/v2", exclude=True)  # the schema the file was written in

    def items(self) -> Iterator[tuple[str, EvidenceItem]]:
        """The evidence items in the report's order."""
        names = [n for n in self.evidence_order if n in self.evidence]
        names += [n for n in self.evidence if n not in names]
        for name in names:
            yield name, self.evidence[name]

    def item(self, name: str) -> EvidenceItem | None:
        return self.evidence.get(name)

    def measured(self, name: str) -> bool:
        """Whether evidence item `name` ran and measured (status ok)."""
        found = self.evidence.get(name)
        return found is not None and found.measured

    def metric(self, evidence: str, metric: str) -> float | None:
        found = self.evidence.get(evidence)
        return None if found is None else found.value(metric)

    def reading(self, evidence: str, metric: str) -> metric_names.Reading | None:
        found = self.evidence.get(evidence)
        return None if found is None else found.reading(metric)

    def all_metrics(self) -> Iterator[tuple[str, str, float | None]]:
        """(evidence item, metric, value) for every metric of every item, items in name order."""
        for name, found in sorted(self.evidence.items()):
            for metric, value in found.metrics.items():
                yield name, metric, value

    def to_json(self) -> dict[str, Any]:
        """The document as evidence.json stores it (v2): the keys the writer set, nothing filled in."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


def read_document(raw: Any, *, file: str | None = None) -> EvidenceDocument:
    """A run's evidence.json (parsed JSON) as the typed document, reading a v1 document through `upgrade_v1`.
    Raises InputError naming the first bad place (`file`: where it was read from)."""
    if isinstance(raw, EvidenceDocument):
        return raw
    if not isinstance(raw, Mapping):
        raise InputError("evidence.json is not a JSON object", file=file,
                         fix="name a run folder written by auditor (its evidence.json)")
    schema = raw.get("schema")
    if schema not in READABLE:
        raise InputError(f"evidence schema {schema!r} is not one this auditor reads ({', '.join(READABLE)})",
                         file=file, where="schema", fix="read the run with the auditor version that wrote it")
    adapted: list[str] = []
    if schema == V1:
        raw, adapted = upgrade_v1(raw)
    try:
        document = EvidenceDocument.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise InputError(f"evidence.json is not as `auditor report` writes it: {where}: {error['msg']}", file=file,
                         fix="name a run folder written by auditor, unchanged since") from None
    document.adapted.extend(adapted)
    document.written_schema = str(schema)
    return document


def upgrade_v1(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A v1 document in v2's shape, and a line for each thing filled in: the order of items (v1 runs before it was
    kept: the items' order as stored), `figures: null` for items whose figures were not kept, an empty reading guide,
    the judging rules of detections (none recorded). Keys v2 no longer has are dropped and named."""
    adapted: list[str] = []
    out = dict(raw)
    out["schema"] = SCHEMA
    evidence = {name: dict(item) for name, item in (raw.get("evidence") or {}).items()}
    if "evidence_order" not in out:
        out["evidence_order"] = list(evidence)
        adapted.append("evidence_order: the stored order of the items")
    for name, item in evidence.items():
        if "figures" not in item:
            item["figures"] = None
            adapted.append(f"evidence.{name}.figures: not kept by this run")
        item.setdefault("how_to_read", "")
        for key in [k for k in item if k not in EvidenceItem.model_fields]:
            del item[key]
            adapted.append(f"evidence.{name}.{key}: not part of v2, left out")
    out["evidence"] = evidence
    for key in ("other_laws", "waivers", "assignments", "policies", "findings", "detections"):
        out.setdefault(key, [])
    for key in ("feature_dictionary", "run"):
        out.setdefault(key, {})
    for key in [k for k in out if k not in EvidenceDocument.model_fields and k != "schema"]:
        del out[key]
        adapted.append(f"{key}: not part of v2, left out")
    return out, adapted


def as_document(value: EvidenceDocument | Mapping[str, Any]) -> EvidenceDocument:
    """The typed document, from itself or from its JSON (for callers that hold evidence.json as parsed)."""
    return value if isinstance(value, EvidenceDocument) else read_document(value)
