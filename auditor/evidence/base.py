"""Plain result types every evidence plugin returns, and the context it runs in.

Results are plain data (numbers, strings, lists): no display objects inside, so evidence.json, policies and
templates can all read the same thing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

from auditor.core.errors import InputError
from auditor.evidence.document import EvidenceItem
from auditor.inputs.data import RankingData
from auditor.models.base import CountingRanker

ATTRIBUTION_VALUES = 50_000  # attribution values an item's evidence.json part keeps at most (`attributions`)
T = TypeVar("T")
R = TypeVar("R")
Status = Literal["ok", "error", "skipped", "unmeasured"]
# skipped: the evidence does not apply (a tree measure of a model without trees); unmeasured: it would, but the spec
# did not give what it needs (no declared parameters, no sensitive parameter, no group column): its rules are NOT
# MEASURED with the spec change in `error`, never "does not apply" (docs/policies.md)


@dataclass(frozen=True)
class Table:
    """A table for the report and evidence.json. `rows` hold plain values in `columns` order."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""
    volatile: bool = False  # wall-clock figures: shown in the report, kept out of evidence.json
    # rows shown in the evidence section; the whole table goes to the report's appendix. None: the report's rule
    # (long tables show their first rows); 0: the whole table is detail, in the appendix only
    body_rows: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title, "columns": self.columns, "rows": self.rows, "note": self.note}
        if self.body_rows is not None:  # how the report lays it out: kept so a run renders again as it did
            out["body_rows"] = self.body_rows
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Table:
        return cls(title=str(raw["title"]), columns=[str(c) for c in raw["columns"]], rows=list(raw["rows"]),
                   note=str(raw.get("note", "")), body_rows=raw.get("body_rows"))


@dataclass(frozen=True)
class Figure:
    """A figure for the report, as data: `chart` names a drawing of the report's (auditor/report/plots.py `CHARTS`)
    and `data` its arguments, encoded as plain JSON on creation (auditor/evidence/figures.py), stored in
    evidence.json and drawn when a document is rendered. `description` is its text alternative: one sentence saying
    what the figure shows, with its main numbers, for a reader who cannot see it."""

    title: str
    chart: str
    data: dict[str, Any]
    caption: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        from auditor.evidence.figures import encode

        object.__setattr__(self, "data", {name: encode(value) for name, value in self.data.items()})

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "chart": self.chart, "data": self.data, "caption": self.caption,
                "description": self.description}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Figure:
        """The figure as evidence.json stores it: its data already encoded (decoded when drawn)."""
        figure = cls(title=str(raw["title"]), chart=str(raw["chart"]), data={}, caption=str(raw.get("caption", "")),
                     description=str(raw.get("description", "")))
        object.__setattr__(figure, "data", dict(raw["data"]))
        return figure


@dataclass(frozen=True)
class Detection:
    """Something the evidence found that a reader must know whether or not a policy rule judges it: an undeclared
    main parameter, a paid-placement effect, explanations that do not reproduce the rankings... A rule judges it
    when it addresses one of `judged_by` (metric names); otherwise the executive summary lists it under "detected
    but not judged by any rule" and the opinion can be at best "positive with comments" (docs/policies.md)."""

    kind: str  # stable identifier of the problem, e.g. "undeclared-main-parameter"
    title: str  # one line a non-specialist understands, naming the feature/explainer
    message: str  # what was measured, with the figures and their interval
    severity: Literal["critical", "major", "minor"]
    citation: str  # the requirement it bears on
    judged_by: tuple[str, ...] = ()  # metrics whose rules judge it; () = no rule can (e.g. evidence that failed)
    value: float | None = None
    interval: tuple[float, float] | None = None
    evidence: str = ""
    subject: str = ""  # what it is about when the kind can occur several times (a feature, an explainer, a group):
    # with the kind, the finding's stable key across reviews (auditor/register/lifecycle.py)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "message": self.message, "severity": self.severity,
                "citation": self.citation, "judged_by": list(self.judged_by), "value": _plain(self.value),
                "interval": None if self.interval is None else [_plain(v) for v in self.interval],
                "evidence": self.evidence, "subject": self.subject}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Detection:
        interval = raw.get("interval")
        return cls(kind=str(raw["kind"]), title=str(raw["title"]), message=str(raw["message"]),
                   severity=raw["severity"], citation=str(raw["citation"]),
                   judged_by=tuple(str(m) for m in raw.get("judged_by", ())), value=_number(raw.get("value")),
                   interval=None if interval is None else (_number(interval[0]), _number(interval[1])),
                   evidence=str(raw.get("evidence", "")), subject=str(raw.get("subject", "")))


@dataclass(frozen=True)
class Section:
    """What a kind's `present` says of its stored result (issue 52: measure, then present): the sentences, tables
    and figures of its report section. The engine presents a result from its stored form as it writes the run, and
    `auditor render` presents it again with the wording of the auditor that renders — so a corrected sentence or
    table reaches a signed run's report without running anything."""

    summary: str
    how_to_read: str
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class EvidenceResult:
    """What one evidence item measured. `metrics` are flat dotted names that policy rules address."""

    name: str
    status: Status = "ok"
    summary: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    how_to_read: str = ""
    per_query: dict[str, dict[str, float | None]] = field(default_factory=dict)  # metric -> {query id: value}
    error: str = ""
    n_model_rows: int = 0
    detections: list[Detection] = field(default_factory=list)
    # metrics this item can emit but did not measure in this audit, and why (an input the spec did not give, e.g. no
    # published statement to check): a rule on one is SKIPPED with the reason instead of ERROR (docs/policies.md)
    unmeasured: dict[str, str] = field(default_factory=dict)
    # per-document attributions of some queries, kept so a saved run gives them back (`AuditResult.explanations`):
    # {"method", "feature_names", "queries": [{"query", "docs", "phi", "bias", "values"}], "left_out"}
    attributions: dict[str, Any] | None = None
    # a presenting kind's measured facts that neither metrics nor records hold (plain JSON its `present` reads), and
    # the options it measured under (the spec's, as a budget left them): written only for kinds with a `section`
    facts: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] | None = None
    # values the evidence items that use this one read (their plugin's `uses`), e.g. the surrogate's importance per
    # feature; arrays and small typed values, never written to evidence.json
    shared: dict[str, Any] = field(default_factory=dict)

    def detect(self, kind: str, title: str, message: str, *, severity: Literal["critical", "major", "minor"],
               citation: str, judged_by: tuple[str, ...] = (), value: float | None = None,
               interval: tuple[float, float] | None = None, subject: str = "") -> None:
        """Record a detection of this evidence item (see `Detection`)."""
        self.detections.append(Detection(kind=kind, title=title, message=message, severity=severity,
                                         citation=citation, judged_by=judged_by, value=value, interval=interval,
                                         evidence=self.name, subject=subject))

    def to_json(self) -> dict[str, Any]:
        out = {
            "status": self.status,
            "summary": self.summary,
            "error": self.error,
            "detections": [d.to_json() for d in self.detections],
            "metrics": {k: _plain(v) for k, v in sorted(self.metrics.items())},
            "tables": [t.to_json() for t in self.tables if not t.volatile],
            "records": self.records,
            "notes": self.notes,
            "n_model_rows": self.n_model_rows,
            "how_to_read": self.how_to_read,
            "figures": [f.to_json() for f in self.figures],
        }
        if self.unmeasured:  # only when there are: evidence.json of the other items stays as it was
            out["unmeasured"] = dict(sorted(self.unmeasured.items()))
        if self.attributions is not None:
            out["attributions"] = self.attributions
        if self.options is not None:
            out["options"] = self.options
        if self.facts:
            out["facts"] = self.facts
        if self.per_query:  # values per query that per-query rules judge (`per_query:` in a policy rule)
            out["per_query"] = {name: {q: _plain(v) for q, v in values.items()}
                                for name, values in sorted(self.per_query.items())}
        return out

    def present(self, section: Section) -> None:
        """Take the sentences, tables and figures its kind's `present` made of its stored form (a presenting kind's
        `run` leaves them empty: they are never measured). Tables of wall-clock figures its `run` made stay, after
        them: never stored, they cannot be presented again (a rendered run shows none, as before)."""
        self.summary, self.how_to_read = section.summary, section.how_to_read
        self.tables = [*section.tables, *(t for t in self.tables if t.volatile)]
        self.figures, self.notes = list(section.figures), list(section.notes)

    @classmethod
    def from_item(cls, name: str, item: EvidenceItem) -> EvidenceResult:
        """The result as evidence.json holds it (read as the typed document), for rendering a run again
        (`auditor render`): what the report shows, not `shared` (arrays for other evidence items) nor tables of
        wall-clock figures (never stored). A run written before figures were stored as data says so in a note."""
        result = cls(name=name, status=item.status, summary=item.summary,
                     metrics={k: _number(v) for k, v in item.metrics.items()},
                     tables=[Table.from_json(t.model_dump()) for t in item.tables],
                     figures=[Figure.from_json(f.model_dump()) for f in item.figures or ()],
                     records=[dict(r) for r in item.records], notes=list(item.notes), how_to_read=item.how_to_read,
                     per_query={m: dict(values) for m, values in item.per_query.items()}, error=item.error,
                     n_model_rows=item.n_model_rows,
                     detections=[Detection.from_json(d.model_dump()) for d in item.detections],
                     unmeasured=dict(item.unmeasured), attributions=item.attributions,
                     facts=dict(item.facts or {}), options=None if item.options is None else dict(item.options))
        if item.figures is None and result.status == "ok":
            result.notes.append(FIGURES_NOT_KEPT)
        return result


FIGURES_NOT_KEPT = ("This section's figures are not in the run's evidence.json (a run written before figures were kept "
                    "as data); the run's own report shows them.")


def _number(value: Any) -> float:
    """A number as evidence.json stores it (null for a value that was not finite) back as a float (NaN)."""
    return float("nan") if value is None else float(value)


def _plain(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None


class Ticker:
    """One unit of progress (a query, a block, a boosting round...): `advance` as work is done. This one is silent;
    auditor/run/progress.py draws them. Used as a context manager, it completes when the block ends."""

    def advance(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> Ticker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Progress:
    """Progress reporting seam: the CLI passes a drawn one (auditor/run/progress.py); tests and --quiet this silent one.
    `task` opens a ticker of `total` units; the engine names the evidence item it runs and its estimated seconds
    (`item`, from auditor/run/cost.py) so tickers can show an ETA before their first unit is done."""

    def item(self, name: str, seconds: float | None, *, later: float = 0.0) -> None:
        """The engine starts evidence item `name`, estimated at `seconds`; `later`: the estimates of the rest."""

    def task(self, description: str, total: int, *, overall: bool = False) -> Ticker:
        """A ticker of `total` units (`overall`: the audit's item count, its ETA the estimates left)."""
        return Ticker()

    def track(self, items: Iterable[T], *, description: str, total: int | None = None) -> Iterator[T]:
        if total is None:
            items = list(items)
            total = len(items)
        with self.task(description, total) as ticker:
            for item in items:
                yield item
                ticker.advance()


@dataclass
class AuditContext:
    """Everything an evidence plugin may use: the data, the (row-counting) model, a seed, progress."""

    data: RankingData
    model: CountingRanker
    seed: int
    progress: Progress = field(default_factory=Progress)
    background: RankingData | None = None
    masking: str = "mean"
    masking_samples: int = 20
    executor: Any = None  # auditor.evidence.executor.Executor; None = serial
    _scores: np.ndarray | None = None
    _masker: Any = None
    _memo: dict[Any, Any] = field(default_factory=dict)
    worker_background: np.ndarray | None = None  # set in executor tasks, which get no `data`
    _state: Any = None
    feature_units: dict[str, str] = field(default_factory=dict)  # the feature dictionary's units, for figure axes
    ticker: Ticker = field(default_factory=Ticker)  # in executor tasks run in this process: per-query ticks

    def tick(self, n: int = 1) -> None:
        """One query (or `n`) of an executor task done: ticks the item's progress when the task runs here."""
        self.ticker.advance(n)

    # the results of the items the running plugin uses (`EvidenceKind.uses`) that ran in this audit; set by the
    # engine before each plugin runs
    inputs: dict[str, EvidenceResult] = field(default_factory=dict)

    def used(self, name: str) -> EvidenceResult | None:
        """The result of evidence item `name`, which the running plugin declares in `uses`, when it ran and
        succeeded in this audit; None when it was not requested or did not produce results."""
        result = self.inputs.get(name)
        return result if result is not None and result.status == "ok" else None

    def rng(self, stream: str) -> np.random.Generator:
        """A generator of its own for each named stream, so adding a plugin never shifts another's numbers."""
        key = [self.seed, *stream.encode()]
        return np.random.default_rng(key)

    def reference(self) -> RankingData:
        """The background data (training set) when the spec names one, else the audited data."""
        return self.background if self.background is not None else self.data

    def reference_rows(self) -> np.ndarray:
        """The background rows (`reference().X`); inside an executor task, the copy shipped to the worker."""
        return self.worker_background if self.worker_background is not None else self.reference().X

    def run_tasks(self, task: Callable[[AuditContext, Any, Any], R], job: Any, payloads: Iterable[Any],
                  *, size: int, ticker: Ticker | None = None) -> Iterator[R]:
        """Per-query work through the audit's executor (see auditor/evidence/executor.py), values in payload order. The
        rows each task evaluated count on this context's model, and its memo entries join this context's memo.
        `ticker` advances by one per query of each payload (a list of queries): per query as a task in this process
        calls `ctx.tick()`, else when its block comes back from a worker."""
        from auditor.evidence.executor import SerialExecutor, ticking

        executor = self.executor if self.executor is not None else SerialExecutor()
        ticker = ticker or Ticker()
        units: deque[int] = deque()
        ticked = [0]

        def counted() -> Iterator[Any]:
            for payload in payloads:
                units.append(len(payload) if isinstance(payload, (list, tuple)) else 1)
                yield payload

        def forward(n: int) -> None:
            ticked[0] += n
            ticker.advance(n)

        for outcome in ticking(forward, executor.map(self.worker_state(), task, job, counted(), size=size)):
            ticker.advance(max(0, units.popleft() - ticked[0]))  # what the task did not tick itself
            ticked[0] = 0
            self.model.rows_evaluated += outcome.rows
            for key, value in outcome.memo.items():
                self._memo.setdefault(key, value)
            yield outcome.value

    def worker_state(self) -> Any:
        """What every executor task reads (`executor.WorkerState`): built once an audit."""
        from auditor.evidence.executor import WorkerState

        if self._state is None:
            self._state = WorkerState(model=self.model.inner, seed=self.seed, masking=self.masking,
                                      masking_samples=self.masking_samples, masker=self.masker(),
                                      background=self.reference_rows())
        return self._state

    @property
    def workers(self) -> int:
        """Workers of the audit's executor (1 when serial): how finely to split per-query work."""
        return 1 if self.executor is None else self.executor.workers

    def masker(self) -> Any:
        """The one Masker every evidence item uses, built once from the background data."""
        if self._masker is None:
            from auditor.models.masking import Masker

            self._masker = Masker.from_background(self.reference().X, self.masking,  # type: ignore[arg-type]
                                                  samples=self.masking_samples, rng=self.rng("masking"))
        return self._masker

    def memo(self, key: Any, compute: Callable[[], T]) -> T:
        """Work shared between evidence items (e.g. one explainer's output for one query): computed once per audit.
        The key must name everything the result depends on, including the random stream it draws from."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]  # type: ignore[no-any-return]

    def query_sample(self, queries: int | None, stream: str, eligible: list[int] | None = None) -> list[int]:
        """The queries an evidence item audits: all `eligible` ones (default every query), or a seeded sample of
        `queries` of them drawn from `stream`, in query order. Items that name the same stream sample the same
        queries."""
        pool = list(range(self.data.n_queries)) if eligible is None else eligible
        if queries is None or queries >= len(pool):
            return pool
        return sorted(pool[int(i)] for i in self.rng(stream).choice(len(pool), size=queries, replace=False))

    def memoized(self, key: Any) -> bool:
        """Whether `memo` already holds `key` (to compute only the missing ones of a batch)."""
        return key in self._memo

    def scores(self) -> np.ndarray:
        """The model's scores for every document, computed once and shared by all plugins."""
        if self._scores is None:
            self._scores = self.model.predict(self.data.X)
        return self._scores


REPRESENTATIVE_MIN_DOCS = 10


def representative_query(sizes: np.ndarray, among: Sequence[int] | None = None) -> int | None:
    """The query a single-query figure shows by default: of `among` (default every query), the first in data order
    with at least `REPRESENTATIVE_MIN_DOCS` documents — enough for rank positions to mean something — else the
    largest (the first of equal size); None when none has two documents. Deterministic and needs no labels, so
    every evidence item that shows one query picks the same one when it audits it."""
    pool = list(range(len(sizes))) if among is None else list(among)
    pool = [q for q in pool if sizes[q] >= 2]
    if not pool:
        return None
    large = [q for q in pool if sizes[q] >= REPRESENTATIVE_MIN_DOCS]
    return large[0] if large else max(pool, key=lambda q: (sizes[q], -q))


def representative_text(query_id: str, size: int) -> str:
    """How the caption says which query a figure shows when the spec named none."""
    if size >= REPRESENTATIVE_MIN_DOCS:
        return f"query {query_id} is the first query with at least {REPRESENTATIVE_MIN_DOCS} documents"
    return f"query {query_id} is the largest query ({size} documents)"


def check_query_id(wanted: str | None, data: RankingData, *, where: str) -> None:
    """An option naming one query for a figure: a query of the audited data with at least two documents, else
    InputError(where=option) with the nearest id."""
    if wanted is None:
        return
    if wanted not in data.query_ids:
        import difflib

        near = difflib.get_close_matches(wanted, data.query_ids, n=1)
        raise InputError(f"'{wanted}' is not a query of the audited data", where=where,
                         fix=f"did you mean '{near[0]}'?" if near else "use a query id of the audited data")
    if data.query_sizes()[data.query_ids.index(wanted)] < 2:
        raise InputError(f"query '{wanted}' has one document: there is no ranking to explain", where=where,
                         fix="name a query with at least two documents")


def check_explanation_size(k: int, n_features: int, *, where: str) -> None:
    """An explanation of every feature is no explanation: masking nothing reproduces the ranking, so every explainer,
    RANDOM included, would score validity 1.0. Refused before any work (InputError(where=option))."""
    if k >= n_features:
        raise InputError(f"an explanation of {k} of the data's {n_features} features leaves nothing out: every "
                         "explainer (RANDOM too) would score a perfect 1.0", where=where,
                         fix=f"set it below {n_features}; at most half the features ({max(n_features // 2, 1)}) "
                             "tells explainers apart")


def size_notes(sizes: list[int], n_features: int, *, what: str = "k") -> list[str]:
    """Report notes for explanation sizes above half the features, where even RANDOM sets reproduce much of a
    ranking and the comparison between explainers loses its power."""
    large = [k for k in sizes if k > n_features / 2]
    if not large:
        return []
    shown = ", ".join(str(k) for k in large)
    return [f"{what} = {shown} is more than half of the {n_features} features: explanations that large keep most "
            "features unmasked, so even RANDOM sets score high validity and the comparison between explainers says "
            "little. Read these figures with the RANDOM row beside them."]
