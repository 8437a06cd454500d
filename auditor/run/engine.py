"""The audit pipeline, and nothing else: spec → inputs → evidence → findings → run folder.

All bad input is found in `prepare` before any evidence runs, so a failed audit never leaves a half-written
report; the run folder is written under a temporary name and renamed into place at the end.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from auditor import __version__
from auditor.core.errors import InputError, shorten
from auditor.core.files import sha256_file, write_new
from auditor.core.threads import cpu_count
from auditor.evidence import ALWAYS, REGISTRY, run_order
from auditor.evidence.base import AuditContext, Detection, EvidenceResult, Progress
from auditor.evidence.document import SCHEMA, EvidenceDocument
from auditor.evidence.executor import Executor, core_limit, usable_jobs
from auditor.evidence.kinds.dataset.measure import add_score_facts
from auditor.evidence.registry import EvidenceKind
from auditor.inputs import feature_dictionary
from auditor.inputs.data import RankingData, load_ranking_data, read_feature_names
from auditor.inputs.spec import AuditSpec, DatasetSpec, ExecutorSpec, load_spec
from auditor.judging.policy import (
    Finding,
    LoadedPack,
    applicability,
    applies_to,
    builtin_packs_from,
    bundled_policies_dir,
    check_assignments,
    check_metrics,
    check_waivers,
    coverage,
    evaluate,
    judged_severity,
    judging_rules,
    law_scope,
    load_packs,
    opinion,
    unjudged,
)
from auditor.models import load_model, open_model
from auditor.models.base import CountingRanker, Ranker
from auditor.run.archive import Rerun, write_archive
from auditor.trust.keys import SigningMaterial

EVIDENCE_SCHEMA = SCHEMA  # what this version writes (auditor/evidence/document.py reads v1 too)
_LIBRARIES = ("numpy", "pandas", "scipy", "scikit-learn", "lightgbm", "shap", "pydantic", "jinja2", "matplotlib")


@dataclass
class PreparedAudit:
    """A validated spec with its model, data and policy packs loaded: everything checked, nothing computed."""

    spec: AuditSpec
    raw: dict[str, Any]
    spec_path: Path
    model: Ranker
    data: RankingData
    packs: list[LoadedPack]
    background: RankingData | None = None
    signing: SigningMaterial | None = None
    baseline: EvidenceDocument | None = None
    features: dict[str, dict] = field(default_factory=dict)  # the feature dictionary (inputs/feature_dictionary.py)
    logged: Any = None  # kind `mlflow`: where the model came from (auditor.models.mlflow.LoggedModel)
    rerun: Rerun | None = None  # `auditor report --from-run`: the archived run it reruns
    notes: list[str] = field(default_factory=list)  # for the person running it (what the archive left out)
    register_shown: str | None = None  # the register the run is recorded in, as people may see it

    def close(self) -> None:
        """Remove what loading left behind: the artifact folder downloaded for an MLflow model."""
        if self.logged is not None:
            self.logged.close()


@dataclass
class AuditRun:
    run_dir: Path
    findings: list[Finding]
    opinion: str
    results: dict[str, EvidenceResult] = field(default_factory=dict)
    unjudged: list[Detection] = field(default_factory=list)  # detections no applied rule judges
    budget: dict[str, Any] | None = None  # what the spec's budget chose (evidence.json `budget`)
    register_error: InputError | None = None  # the register could not be read or written: the run still was
    document: EvidenceDocument | None = None  # evidence.json as written
    prepared: PreparedAudit | None = None  # what it ran on (the Python API writes the run again elsewhere)
    started: dt.datetime | None = None


def prepare(spec_path: str | Path, *, progress: Progress | None = None, seed: int | None = None,
            timestamp_url: str | None = None, rerun: Rerun | None = None) -> PreparedAudit:
    """Load and check everything the audit needs; raises InputError on the first problem. `seed` overrides the
    spec's (it draws the dataset's query sample), `timestamp_url` the spec's TSA. `rerun`: an archived run's spec
    (`auditor report --from-run`): inputs it did not archive read where the run found them, its archived packs for
    the named ones, and no signing (the keys are not archived)."""
    progress = progress or Progress()
    spec_path = Path(spec_path)
    spec, raw = load_spec(spec_path, relocate=dict(rerun.relocate) if rerun is not None else None)
    base = spec_path.parent.resolve()
    with builtin_packs_from(rerun.packs if rerun is not None else None):
        packs = load_packs(spec.policies, base_dir=base, spec_file=spec_path)
    check_metrics(packs, {**ALWAYS, **REGISTRY}, {*ALWAYS, *(name for name, _ in spec.evidence_items())})
    check_waivers(spec.waivers, packs, spec_file=spec_path)
    check_assignments(spec.findings, packs, spec_file=spec_path)
    if spec.output.templates is not None:
        from auditor.report.render import check_templates

        check_templates(spec.output.templates)
    model, logged = open_model(spec.model, base_dir=base, spec_file=spec_path)
    if logged is not None:  # the registered model's name and version where the spec leaves them out
        spec = spec.model_copy(update={"model": logged.filled(spec.model)})
    seed = spec.seed if seed is None else seed
    data = load_dataset(spec.dataset, model, seed, "dataset")
    _check_rankable(data, spec.dataset.path)
    background = load_dataset(spec.background, model, seed, "background") if spec.background is not None else None
    for index, (name, options) in enumerate(spec.evidence_items()):  # options that name features of the data
        check = REGISTRY[name].check
        if check is not None:
            try:
                check(options, data)
            except InputError as exc:
                raise InputError(exc.problem, file=spec_path, where=f"evidence.{index}.{name}.{exc.where}",
                                 fix=exc.fix) from None
    _check_documents(spec.output.documents, spec, data, where="output.documents", spec_file=spec_path,
                     packs=[p.pack.pack for p in packs])
    features = feature_dictionary.build(dict(spec.features), spec.feature_dictionary, data.feature_names,
                                        spec_file=spec_path)
    signing = None
    if spec.signing is not None and rerun is None:  # keys and passphrase are checked before any evidence runs
        from auditor.trust.keys import load_material

        signing = load_material(spec.signing, spec_file=spec_path, timestamp_url=timestamp_url)
    baseline = None
    if spec.baseline is not None:  # a previous run: readable, and of this evidence schema
        from auditor.run.diff import load_run

        baseline = load_run(spec.baseline, where="baseline", spec_file=spec_path)  # a v1 run read as v2
    return PreparedAudit(spec=spec, raw=raw, spec_path=spec_path, model=model, data=data, packs=packs,
                         background=background, signing=signing, baseline=baseline, features=features,
                         logged=logged, rerun=rerun)  # (an error before this leaves `logged`'s folder to its finalizer)


def _check_rankable(data: RankingData, path: Path) -> None:
    """A query with one document has no ranking: with fewer than two queries of two or more documents every
    measure would be trivially perfect (nDCG 1.0) or undefined."""
    rankable = int(np.sum(data.query_sizes() >= 2))
    if rankable < 2:
        raise InputError(f"only {rankable} of the {data.n_queries} queries have two or more documents: there is "
                         "no ranking to audit", file=path,
                         fix="check `dataset.query_column` (or the `qid:` fields): each query needs the documents "
                             "it ranks")


def load_dataset(ds: DatasetSpec, model: Ranker, seed: int, role: str) -> RankingData:
    """The data a spec's `dataset:` or `background:` (`role`) names, read for this model: its feature count and
    names, the query sample drawn from the stream `<role>/sample` of `seed`; a model's categorical features hold
    codes of its categories."""
    try:
        names = read_feature_names(ds.feature_names) if ds.feature_names else None
        data = load_ranking_data(
            ds.path, format=ds.format, n_features=model.n_features, feature_names=names,
            model_feature_names=model.feature_names, query_column=ds.query_column, label_column=ds.label_column,
            doc_id_column=ds.doc_id_column, feature_columns=ds.feature_columns, query_file=ds.query_file,
            zero_based=ds.zero_based, nan_policy=ds.nan_policy, max_label=ds.max_label,
            sample_queries=ds.sample_queries, sample_rng=np.random.default_rng([seed, *f"{role}/sample".encode()]),
            max_bytes=ds.max_bytes, max_docs_per_query=ds.max_docs_per_query,
            attribute_columns=list(ds.attribute_columns))
        _check_categories(data, getattr(getattr(model, "inner", model), "category_counts", None), ds.path)
        return data
    except InputError as exc:  # the readers' fixes name `dataset.` keys: for the background, name its own
        if role == "dataset":
            raise
        def renamed(text: str) -> str:
            return text.replace("`dataset.", f"`{role}.")

        raise InputError(renamed(exc.problem), file=exc.file, where=exc.where,
                         fix=exc.fix and renamed(exc.fix)) from None


def _check_categories(data: RankingData, counts: dict[int, int] | None, path: Path) -> None:
    if not counts:
        return
    from auditor.models.xgboost import check_category_codes

    found = check_category_codes(data.X, counts)
    if found is not None:
        row, feature, value = found
        raise InputError(f"feature '{data.feature_names[feature][:60]}' is categorical in the model (codes 0 to "
                         f"{counts[feature] - 1}), but document {row + 1} holds {value:g}", file=path,
                         fix="give each categorical feature the code its category had in training, or leave it empty "
                             "(missing)")


def _check_documents(names: Sequence[str], spec: AuditSpec, data: RankingData, *, where: str,
                     spec_file: Path | None, packs: Sequence[str]) -> None:
    """The documents asked for are known and the spec gives them what they need (before any evidence runs)."""
    from auditor.report.documents import check_requested

    try:
        check_requested(list(names), dict(spec.evidence_items()), data, where=where, packs=packs)
    except InputError as exc:
        raise InputError(exc.problem, file=spec_file, where=exc.where, fix=exc.fix) from None


def run_audit(spec_path: str | Path, *, out: Path | None = None, seed: int | None = None,
              progress: Progress | None = None, today: dt.date | None = None,
              executor: ExecutorSpec | None = None, notify: Callable[[str], None] | None = None,
              register: str | None = None, timestamp_url: str | None = None,
              formats: list[str] | None = None, rerun: Rerun | None = None,
              documents: list[str] | None = None, keep_downloads: bool = False) -> AuditRun:
    """Run the audit a spec describes, write its run folder and record it in the register. Returns where it went
    and the verdicts. `executor` overrides the spec's (the command line's --jobs / --executor / --scheduler),
    `register` the spec's register (`off`: none); `notify` receives one-line notes for the person running it
    (e.g. stale temporary folders removed). A register that cannot be used does not stop the run: its folder is
    written without the register's sections and `register_error` says why. `formats` overrides the spec's output
    formats (what is rendered, not what is measured: the Python API renders HTML only until a run is saved),
    `documents` its output documents (the command line's --document). `keep_downloads`: an MLflow model's
    downloaded folder stays until the returned run is collected (the Python API saves and signs the run later)."""
    progress = progress or Progress()
    started = _utc_now()
    prepared = prepare(spec_path, progress=progress, seed=seed, timestamp_url=timestamp_url, rerun=rerun)
    try:
        done = _run_prepared(prepared, started, out=out, seed=seed, progress=progress, today=today,
                             executor=executor, notify=notify, register=register, formats=formats,
                             documents=documents)
        for note in prepared.notes:
            (notify or (lambda _: None))(note)
        return done
    finally:
        if not keep_downloads:
            prepared.close()  # else removed when the run (holding `prepared`) is collected: LoggedModel's finalizer


def _run_prepared(prepared: PreparedAudit, started: dt.datetime, *, out: Path | None, seed: int | None,
                  progress: Progress, today: dt.date | None, executor: ExecutorSpec | None,
                  notify: Callable[[str], None] | None, register: str | None,
                  formats: list[str] | None = None, documents: list[str] | None = None) -> AuditRun:
    """`run_audit` once everything is loaded and checked: the evidence, the verdicts, the run folder, the
    register."""
    from auditor.register import review as reviews

    spec = prepared.spec
    if formats is not None:
        spec = spec.model_copy(update={"output": spec.output.model_copy(update={"formats": formats})})
    if documents is not None:
        _check_documents(documents, spec, prepared.data, where="--document", spec_file=None,
                         packs=[p.pack.pack for p in prepared.packs])
        spec = spec.model_copy(update={"output": spec.output.model_copy(update={"documents": documents})})
    out_dir = out if out is not None else spec.output.dir
    check_output_folder(out_dir)  # before any evidence runs
    review = reviews.open_review(reviews.location(spec, out_dir, register), reviews.system_name(spec))
    if review.location is not None:  # where the run is recorded: the bundle names it (no credentials), so an
        from auditor.core.urls import shown  # approval finds the register the run is in

        prepared.register_shown = shown(str(Path(review.location).absolute()) if "://" not in review.location
                                        else review.location)
    if review.error is not None:
        (notify or (lambda _: None))(f"the register cannot be used ({review.error.problem}); the run is written "
                                     "without it")
    for folder in remove_stale_temporaries(out_dir):
        (notify or (lambda _: None))(f"removed {folder}, the temporary folder of a run that was stopped more than a "
                                     "day ago")
    seed = spec.seed if seed is None else seed
    today = today or started.date()
    chosen = executor if executor is not None else spec.executor
    if chosen.jobs is not None and usable_jobs(chosen.jobs, chosen.address) < chosen.jobs:
        (notify or (lambda _: None))(f"{chosen.jobs} jobs asked for, but this machine has {cpu_count()} cores: "
                                     f"using {cpu_count()}")
    ctx = AuditContext(data=prepared.data, model=CountingRanker(prepared.model), seed=seed, progress=progress,
                       background=prepared.background, masking=spec.masking.strategy,
                       masking_samples=spec.masking.samples,
                       executor=_start_executor(chosen, prepared.spec_path),
                       feature_units={name: info["unit"] for name, info in prepared.features.items()
                                      if info.get("unit")})

    always = always_present_options(spec, today,
                                    previous_review=review.previous is not None and review.error is None)
    results = {name: _run_plugin(ALWAYS[name], always[name], ctx)[0] for name in ALWAYS}
    seconds: dict[str, float] = {}
    drawn: list[tuple[list[Any], Any]] = []  # figures the workers draw while this process measures (`_draw_aside`)
    try:
        with core_limit(chosen.jobs):
            items, plan, choice = planned(prepared, ctx.workers)  # cost model and budget (auditor/run/cost.py)
            requested = dict(items)  # as the budget chose them
            estimate = {name: item.seconds for (name, _), item in zip(items, plan.items, strict=True)}
            serial = {name: item.serial_seconds if item.serial_seconds is not None else item.seconds
                      for (name, _), item in zip(items, plan.items, strict=True)}
            order = run_order(list(requested))  # items another uses run first (EvidenceKind.uses)
            pooled = _warm_workers(ctx, order, serial, {name: item.queries for (name, _), item in zip(items, plan.items,
                                                                                                     strict=True)})
            measured: list[list[Any]] = []  # figures of items measured, not yet given to a worker
            with progress.task("Evidence items", len(order), overall=True) as overall:
                for index, name in enumerate(order):
                    if name not in pooled:  # this item runs here: the workers are free to draw
                        drawn += _draw_aside(ctx.executor, measured)
                        measured = []
                    later = sum(estimate[n] for n in order[index + 1:]) + plan.render_seconds
                    progress.item(name, estimate[name], later=later)
                    ctx.executor.seconds = serial[name]  # `auto`: the pool for long items (AUTO_MIN_SECONDS)
                    plugin = REGISTRY[name]
                    ctx.inputs = {used: results[used] for used in plugin.uses if used in results}
                    results[name], seconds[name] = _run_plugin(plugin, requested[name], ctx)
                    if results[name].figures:
                        measured.append(list(results[name].figures))
                    overall.advance()
        ctx.inputs = {}
        add_score_facts(results["dataset"], ctx)  # the scores the items computed: how much order they give
        results = {name: results[name] for name in [*ALWAYS, *requested]}  # report and detections in spec order

        findings = evaluate(prepared.packs, results, requested=set(results), waivers=list(spec.waivers),
                            today=today, provider=spec.audit.provider.model_dump())
        not_judged = unjudged(all_detections(results), findings)
        verdict = opinion(findings, not_judged)
        document = evidence_document(prepared, results, findings, verdict, seed=seed,
                                     run={"started_at": started.isoformat(), "finished_at": _utc_now().isoformat(),
                                          "evaluated_on": today.isoformat(), "seconds": seconds,
                                          "cost": cost_record(plan, seconds, results), "host": platform.node(),
                                          "executor": {"kind": ctx.executor.kind,
                                                       "workers": ctx.executor.workers}})
        _keep_drawn(drawn)  # the workers' last drawings went on while this process judged; the last item's figures
        # are drawn with the report
    finally:
        ctx.executor.close()
        ctx.inputs = {}
    if choice is not None:  # what the budget chose and why: deterministic, so outside the run block
        document.budget = choice.to_json()
    block = reviews.review_block(review, document)
    if block is not None:  # the system's findings as this review leaves them (the register's view)
        document.review = block
    previous: tuple[EvidenceDocument | dict[str, Any], str] | None = None
    if prepared.baseline is not None and spec.baseline is not None:  # (prepare read the one from the other)
        previous = (prepared.baseline, spec.baseline.name)
    elif review.previous is not None and review.error is None:
        previous = (review.previous["document"], review.previous["run_name"])
    if previous is not None:  # the "since last review" section: the baseline, else the register's last review
        from auditor.run.diff import compare

        try:
            document.since_last_review = compare(previous[0], document, old_name=previous[1],
                                                    new_name="this run", file=prepared.spec_path)
        except InputError:
            if prepared.baseline is not None:
                raise
            # a review recorded by an auditor of another evidence schema: no comparison, said in the review block
            _previous_block(document)["not_compared"] = "recorded by an auditor of another evidence schema"
        except reviews.UNREADABLE as exc:
            if prepared.baseline is not None:
                raise
            # the register's previous review holds what no audit of ours wrote: no comparison, and the run says so
            _previous_block(document)["not_compared"] = f"the register's copy cannot be read ({exc!r:.80})"
    run_dir = write_run(out_dir, spec, document, results, prepared, started)
    try:
        reviews.record(review, document, run_dir)
    except InputError as exc:
        review.error = exc
    return AuditRun(run_dir=run_dir, findings=findings, opinion=verdict, results=results, unjudged=not_judged,
                    budget=document.budget, register_error=review.error, document=document,
                    prepared=prepared, started=started)


def _previous_block(document: EvidenceDocument) -> dict[str, Any]:
    """The review block's `previous` (a throwaway dict when the block has none)."""
    found = (document.review or {}).get("previous")
    return found if isinstance(found, dict) else {}


def planned(prepared: PreparedAudit, workers: int) -> tuple[list[tuple[str, Any]], Any, Any]:
    """The evidence items to run (as the spec's budget chose them: auditor/run/budget.py), their cost estimate on this
    machine, and the budget's choice (None without a budget)."""
    from auditor.run.cost import plan_audit

    choice = budget_choice(prepared)
    items = choice.items if choice is not None else prepared.spec.evidence_items()
    return items, plan_audit(prepared, items, workers=workers), choice


def budget_choice(prepared: PreparedAudit) -> Any:
    """The spec budget's choice, planned at the model's reference speed (deterministic); None without a budget."""
    if prepared.spec.budget is None:
        return None
    from auditor.run.budget import choose, reference_speed
    from auditor.run.cost import render_seconds, shape_of

    items = prepared.spec.evidence_items()
    speed, masked = reference_speed(prepared.model, prepared.data.n_features)
    shape = shape_of(prepared.data, prepared.background, prepared.model, rows_per_second=speed,
                     masked_rows_per_second=masked)
    return choose(items, shape, minutes=prepared.spec.budget.minutes,
                  render_seconds=render_seconds(list(prepared.spec.output.formats), len(items)))


def cost_record(plan: Any, seconds: dict[str, float], results: dict[str, EvidenceResult]) -> dict[str, Any]:
    """Estimate against actual per evidence item, for the run block (wall-clock: varies between runs)."""
    from auditor.run.cost import compared

    return {**plan.to_json(), "compared": compared(plan, seconds, {n: r.n_model_rows for n, r in results.items()})}


def _warm_workers(ctx: AuditContext, order: list[str], serial: dict[str, float], queries: dict[str, int]) -> set[str]:
    """The items whose queries run on worker processes. When there are any (`executor.pool_plan`), `auto` is told
    so (every long item then uses them) and they are started now, while this process runs the first items."""
    from auditor.evidence.executor import pool_plan

    candidates = [name for name in order if name in REGISTRY and REGISTRY[name].pooled]
    if ctx.workers <= 1 or not hasattr(ctx.executor, "warm"):
        return set()
    pooled = set(candidates) if ctx.executor.kind == "processes" else \
        {name for name, use in zip(candidates, pool_plan([(serial[n], queries[n]) for n in candidates]), strict=True)
         if use}
    if pooled:
        if hasattr(ctx.executor, "expected"):
            ctx.executor.expected = True
        ctx.executor.warm(ctx.worker_state())
    return pooled


def _draw_aside(executor: Executor, measured: list[list[Any]]) -> list[tuple[list[Any], Any]]:
    """Have the workers draw measured items' figures (`plots.drawings`, one task an item) while this process
    measures the next item, when the workers run: the cores an item measured here leaves idle do the drawing the
    report would do later, alone."""
    submit = getattr(executor, "submit", None)
    if submit is None or not measured:
        return []
    from auditor.report.plots import drawings

    futures = [(figures, submit(drawings, figures)) for figures in measured]
    return [(figures, future) for figures, future in futures if future is not None]


def _keep_drawn(drawn: list[tuple[list[Any], Any]]) -> None:
    """The workers' drawings, kept for the report (`plots.keep_drawings`); one that failed is drawn again when the
    report asks, where its error is reported."""
    if not drawn:
        return
    from auditor.report.plots import keep_drawings

    for figures, future in drawn:
        try:
            keep_drawings(figures, future.result())
        except Exception:  # a worker's failure: the report draws the figure itself
            continue


def _start_executor(spec: ExecutorSpec, spec_file: Path) -> Executor:
    """The executor the spec asks for; a Dask scheduler that cannot be reached is bad input (exit 2)."""
    from auditor.evidence.executor import make_executor

    try:
        return make_executor(spec.kind, spec.jobs, spec.address)
    except ImportError as exc:
        raise InputError(f"the Dask executor needs the 'distributed' package ({exc})", file=spec_file,
                         where="executor.kind", fix="pip install 'auditor[dask]', or choose kind processes") from None
    except OSError as exc:
        from auditor.core.urls import shown

        raise InputError(f"cannot reach the Dask scheduler at {shown(str(spec.address))} ({exc})", file=spec_file,
                         where="executor.address", fix="start the scheduler or correct the address") from None


def _run_plugin(plugin: EvidenceKind, options: Any, ctx: AuditContext) -> tuple[EvidenceResult, float]:
    """Run one plugin; an unexpected failure becomes an ERROR result so the other evidence still runs."""
    name = plugin.name
    rows_before = ctx.model.rows_evaluated
    start = time.perf_counter()
    try:
        result = plugin.run(ctx, options)  # measured, then presented
    except InputError:
        raise
    except Exception as exc:
        result = EvidenceResult(name=name, status="error", error=f"{type(exc).__name__}: {exc}")
    result.n_model_rows = ctx.model.rows_evaluated - rows_before
    not_produced(result)
    return result, round(time.perf_counter() - start, 3)


def not_produced(result: EvidenceResult) -> None:
    """Evidence that was requested but did not come is itself a finding: the audit is narrower than asked."""
    if result.status == "ok":
        return
    failed = result.status == "error"
    what, done = {"error": ("failed", "failed"), "unmeasured": ("was not measured", "was not measured")}.get(
        result.status, ("does not apply", "was skipped"))
    result.detect("evidence-not-produced", f"Requested evidence {what}: {result.name}",
                  f"'{result.name}' {done}: {result.error}",
                  severity="major" if failed else "minor", subject=result.name,
                  citation="EU AI Act (Reg. 2024/1689) Annex IV — the documentation the audit was asked to produce")


def always_present_options(spec: AuditSpec, today: dt.date | None = None, *,
                           previous_review: bool = False) -> dict[str, Any]:
    """The options of the items every audit has (`evidence.ALWAYS`): the governance facts read from the spec, and
    the evaluation day (`today`), the audit's date, which the distribution date is counted from. The audit is
    compared with a previous review when the spec names a `baseline:` or the register holds one
    (`previous_review`): "since the last review" is then in the report."""
    from auditor.evidence.kinds.dataset.measure import DatasetOptions
    from auditor.evidence.kinds.governance.measure import GovernanceOptions

    return {"dataset": DatasetOptions(),
            "governance": GovernanceOptions(audit=spec.audit.model_dump(), signed=spec.signing is not None,
                                            baseline_present=spec.baseline is not None or previous_review,
                                            features_described=len(spec.features) > 0
                                            or spec.feature_dictionary is not None,
                                            data_source_stated=spec.dataset.description is not None
                                            and bool((spec.dataset.description.frame or "").strip()),
                                            data_window=spec.dataset.description.window
                                            if spec.dataset.description is not None else None,
                                            data_type=spec.dataset.description.data_type
                                            if spec.dataset.description is not None else None,
                                            evaluated_on=today.isoformat() if today is not None else None)}


def evidence_document(prepared: PreparedAudit, results: dict[str, EvidenceResult], findings: list[Finding],
                      verdict: str, *, seed: int, run: dict[str, Any]) -> EvidenceDocument:
    """evidence.json: everything the report says, as data, checked against its type before anything reads it.
    Only `run` changes between identical runs."""
    spec = prepared.spec
    return EvidenceDocument.model_validate(_plain({
        "schema": EVIDENCE_SCHEMA,
        "tool": {"name": "auditor", "version": __version__, "python": platform.python_version(),
                 "libraries": {lib: _version(lib) for lib in _LIBRARIES}},
        "audit": spec.audit.model_dump(mode="json"),  # dates as YYYY-MM-DD: the register stores this document
        "spec": {"file": prepared.spec_path.name, "sha256": sha256_file(prepared.spec_path),
                 "content": _plain(prepared.raw)},
        "seed": seed,
        "inputs": inputs_manifest(prepared),
        "evidence": {name: result.to_json() for name, result in results.items()},
        "evidence_order": list(results),  # the report's order of sections (the keys above are sorted when written)
        "policies": [{"pack": p.pack.pack, "title": p.pack.title, "version": p.pack.version, "sha256": p.sha256,
                      "source": p.path.name, "applies_to": applies_to(p),
                      "applicability": applicability(p, spec.audit.provider.model_dump()),
                      **({"coverage": coverage(p, {m for r in results.values() for m in r.metrics},
                                               {name for name, r in results.items() if r.status == "ok"},
                                               {f.rule: f.status for f in findings if f.pack == p.pack.pack})}
                         if p.pack.covers else {})} for p in prepared.packs],
        "other_laws": law_scope(prepared.packs, spec.audit.provider.model_dump()),
        "waivers": [_plain(w.model_dump()) for w in spec.waivers],
        "assignments": [_plain(a.model_dump()) for a in spec.findings],
        "feature_dictionary": prepared.features,
        "findings": [f.to_json() for f in findings],
        "detections": [_judged_detection(d, findings) for d in all_detections(results)],
        "opinion": verdict,
        "run": run,
    }))


def _judged_detection(detection: Any, findings: list[Finding]) -> dict[str, Any]:
    """A detection as evidence.json keeps it: the rules that judge it and, when any does, their severity (the
    evidence's own rating kept as `evidence_severity`), so one fact has one severity everywhere."""
    rules = judging_rules(detection, findings)
    out = {**detection.to_json(), "judged_by_rules": rules}
    if rules:
        out["evidence_severity"] = out["severity"]
        out["severity"] = judged_severity(out["severity"], rules, findings)
    return out


def inputs_manifest(prepared: PreparedAudit) -> dict[str, Any]:
    spec = prepared.spec
    model: dict[str, Any] = {"describe": prepared.model.describe(), "version": spec.model.version,
                             "training_date": spec.model.training_date.isoformat() if spec.model.training_date
                             else None}
    if spec.model.preprocessing is not None:
        model["preprocessing"] = spec.model.preprocessing
    if spec.model.path is not None:
        model.update(file=spec.model.path.name, sha256=sha256_file(spec.model.path))
    if prepared.logged is not None:  # kind mlflow: the native file inside the artifact folder, and where it came from
        logged = prepared.logged
        model.update(file=logged.file, sha256=logged.sha256(logged.file), mlflow=logged.to_json())
    ds = spec.dataset
    dataset: dict[str, Any] = {"file": ds.path.name, "sha256": sha256_file(ds.path), "format": ds.format or "inferred",
                               "n_docs": prepared.data.n_docs, "n_queries": prepared.data.n_queries,
                               "n_features": prepared.data.n_features,
                               "feature_names": prepared.data.feature_names,
                               "description": ds.description.model_dump() if ds.description is not None else {}}
    if prepared.data.attributes:  # kept beside the data, never given to the model
        dataset["attribute_columns"] = list(prepared.data.attributes)
    for key, extra in (("feature_names", ds.feature_names), ("query_file", prepared.data.query_file)):
        if extra is not None:  # the query file also when read by convention (`X.query` beside `X`)
            dataset[f"{key}_file"] = {"file": extra.name, "sha256": sha256_file(extra)}
    out = {"model": model, "dataset": dataset}
    if spec.feature_dictionary is not None:
        out["feature_dictionary"] = {"file": spec.feature_dictionary.name,
                                     "sha256": sha256_file(spec.feature_dictionary)}
    if spec.background is not None and prepared.background is not None:
        out["background"] = {"file": spec.background.path.name, "sha256": sha256_file(spec.background.path),
                             "n_docs": prepared.background.n_docs, "n_queries": prepared.background.n_queries}
    return out


def write_run(out_dir: Path, spec: AuditSpec, document: EvidenceDocument, results: dict[str, EvidenceResult],
              prepared: PreparedAudit, started: dt.datetime) -> Path:
    """Write into a hidden temporary folder, then rename it into place: a run folder is complete or absent. Any
    OS error on the way (disk full, no permission, read-only) is bad input naming the path, never a half run."""
    from auditor.report.render import render_html

    check_output_folder(out_dir)
    formats = set(spec.output.formats)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", dir=out_dir))
    except OSError as exc:
        raise _write_error(exc, out_dir) from None
    except BaseException:  # stopped (SIGTERM, Ctrl-C) as the folder was made, before `tmp` held it: ours by pid
        for made in Path(out_dir).glob(f"{TEMP_PREFIX}{os.getpid()}-*"):
            shutil.rmtree(made, ignore_errors=True)
        raise
    try:
        (tmp / "evidence.json").write_text(dump_json(document.to_json()), encoding="utf-8")
        # the evidence every PDF of the run carries (8 MB of JSON on wide data: written once)
        attached = dump_json(reproducible_document(document)).encode("utf-8") if "pdf" in formats else b""
        if formats & {"html", "pdf"} and "report" in spec.output.documents:
            signer = prepared.signing.details if prepared.signing is not None else None
            html = render_html(document, results, spec_text=prepared.spec_path.read_text(encoding="utf-8"),
                               signer=signer, timings=spec.output.timings, templates=spec.output.templates)
            if "html" in formats:
                (tmp / "report.html").write_text(html, encoding="utf-8")
            if "pdf" in formats:
                from auditor.report.pdf import fixed_date, render_pdf

                pdf = render_pdf(html, attachment=attached, date=fixed_date(document.run.get("evaluated_on")),
                                 title=spec.audit.title)
                (tmp / "report.pdf").write_bytes(pdf)
        from auditor.report.documents import write_documents

        write_documents(tmp, list(spec.output.documents), document,
                        evidence_bytes=(tmp / "evidence.json").read_bytes(),
                        attachment=attached, formats=formats,
                        templates=spec.output.templates)
        archived = write_archive(tmp, prepared.spec_path, input_files(prepared), mode=spec.output.archive_inputs,
                                 max_mb=spec.output.archive_max_mb,
                                 builtin_packs=prepared.rerun.packs if prepared.rerun and prepared.rerun.packs
                                 else bundled_policies_dir())
        prepared.notes += [f"not archived in the run (over output.archive_max_mb): {what}"
                           for what in archived.left_out]
        if prepared.signing is not None:  # inside the temporary folder: a signed run is complete or absent
            from auditor.trust.sign import sign_run

            sign_run(tmp, prepared.signing, input_files(prepared), bundle_predicate(document, prepared.register_shown),
                     approver=spec.audit.approver)
        final = rename_free(tmp, out_dir, f"{run_stem(spec.audit.title)}-{started.strftime(RUN_TIME)}")
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _write_error(exc, out_dir) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


TEMP_PREFIX = ".run-"  # + pid + random: the folder a run is written into before it is renamed into place
STALE_AFTER = dt.timedelta(days=1)


def check_output_folder(out_dir: Path) -> None:
    """Refuse an output folder that is not a folder, or that lies inside a run folder: a run nested in another
    would add files to it after signing and break its verification."""
    out_dir = Path(out_dir)
    try:
        if out_dir.exists() and not out_dir.is_dir():
            raise InputError("the output path exists and is not a folder", file=out_dir,
                             fix="choose another `--out`")
        for folder in [out_dir.absolute(), *out_dir.absolute().parents]:
            if folder.is_symlink() and not folder.exists():  # found only at the rename, after all the evidence ran
                raise InputError(f"the output folder {'is' if folder == out_dir.absolute() else 'lies in'} a link "
                                 f"that leads nowhere ({folder}: its target does not exist, or it links to itself)",
                                 file=out_dir, fix="remove the link or choose another `--out`")
            if (folder / "evidence.json").is_file() or (folder / "bundle.dsse.json").is_file():
                raise InputError(f"the output folder is inside the run folder {folder}", file=out_dir,
                                 fix="choose an `--out` outside any run folder (runs are never nested)")
    except OSError as exc:  # a name too long, a loop of links
        raise InputError(f"cannot use this output folder ({exc.strerror or exc})", file=shorten(str(out_dir)),
                         fix="choose another `--out`") from None


def remove_stale_temporaries(out_dir: Path, *, now: dt.datetime | None = None) -> list[Path]:
    """Temporary folders of runs that were killed: older than a day and their process gone. Returns what was
    removed (the caller says so)."""
    if not Path(out_dir).is_dir():
        return []
    now = now or dt.datetime.now(dt.UTC)
    removed = []
    for folder in sorted(Path(out_dir).glob(f"{TEMP_PREFIX}*")):
        try:
            age = now - dt.datetime.fromtimestamp(folder.lstat().st_mtime, dt.UTC)
        except OSError:
            continue
        if not folder.is_dir() or folder.is_symlink() or age < STALE_AFTER or _pid_alive(folder.name):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed


def _pid_alive(name: str) -> bool:
    """Whether the process that named a temporary folder `.run-<pid>-...` still runs (older names: unknown, no)."""
    match = re.match(rf"{re.escape(TEMP_PREFIX)}(\d+)-", name)
    if match is None:
        return False
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _write_error(exc: OSError, out_dir: Path) -> InputError:
    """An OS error while writing the run, as one line with the path and what to do."""
    import errno

    path = exc.filename or out_dir
    fixes = {errno.ENOSPC: "free disk space or choose another `--out` folder",
             errno.EDQUOT: "free space in your quota or choose another `--out` folder",
             errno.EACCES: "choose an `--out` folder you may write to",
             errno.EPERM: "choose an `--out` folder you may write to",
             errno.EROFS: "choose an `--out` folder on a writable file system"}
    return InputError(f"cannot write the run ({exc.strerror or type(exc).__name__}); nothing was written",
                      file=path, fix=fixes.get(exc.errno or 0, "choose another `--out` folder"))


def all_detections(results: dict[str, EvidenceResult]) -> list[Detection]:
    """Every detection of the audit, in evidence order (the always-present items first)."""
    return [d for result in results.values() for d in result.detections]


def reproducible_document(document: EvidenceDocument) -> dict[str, Any]:
    """evidence.json as attached to report.pdf: the `run` block keeps only what the same spec + seed reproduce
    (`evaluated_on`); wall-clock times, durations and host stay in the run folder's evidence.json."""
    run = {"evaluated_on": document.run.get("evaluated_on"),
           "note": "timings and host are in the run folder's evidence.json"}
    return {**document.to_json(), "run": run}


def input_files(prepared: PreparedAudit) -> list[tuple[str, Path]]:
    """(role, path) of every input file the audit read: listed, with sha256, in the signed bundle.

    Not listed: the signing keys (secrets; the certificate and key ids are in the predicate), the register (a
    database the run itself writes to), modules a callable model's module imports, and the tool's bundled report
    templates (part of the tool, whose version the predicate states)."""
    spec = prepared.spec
    out: list[tuple[str, Path]] = [("spec", prepared.spec_path)]
    out += [(f"policy pack {p.pack.pack}", p.path) for p in prepared.packs]
    if spec.model.path is not None:
        out.append(("model", spec.model.path))
    if prepared.logged is not None:  # kind mlflow: every file of the artifact folder, the native file as the model
        logged = prepared.logged
        out += [("model" if a["file"] == logged.file else "model artifact", logged.folder / a["file"])
                for a in logged.artifacts]
    source = getattr(prepared.model, "source", None)
    if spec.model.kind == "callable" and isinstance(source, Path) and source.is_file():
        out.append(("model module", source))  # the file of `model.entry`'s module (the code that scores)
    for role, ds, data in (("dataset", spec.dataset, prepared.data), ("background", spec.background,
                                                                        prepared.background)):
        if ds is None:
            continue
        out.append((role, ds.path))
        query_file = data.query_file if data is not None else ds.query_file  # named, or read by convention
        for key, extra in (("feature_names", ds.feature_names), ("query_file", query_file)):
            if extra is not None:
                out.append((f"{role} {key}", extra))
    if spec.feature_dictionary is not None:
        out.append(("feature dictionary", spec.feature_dictionary))
    for name, options in spec.evidence_items():  # files an evidence item reads, e.g. a published statement
        out += [(f"evidence {name}.{key}", value) for key, value in options if isinstance(value, Path)]
    if spec.output.templates is not None:
        out += [(f"template {name}", path) for name, path in _template_files(spec.output.templates)]
    if spec.baseline is not None:  # the previous run the 'since last review' section compares with
        baseline = spec.baseline / "evidence.json" if spec.baseline.is_dir() else spec.baseline
        out.append(("baseline evidence", baseline))
    return out


def _template_files(folder: Path) -> list[tuple[str, Path]]:
    """(name relative to `folder`, path) of every regular file under an organisation's template folder, in name
    order. Links are not followed: `check_templates` allows only links to files inside the folder, which are
    listed by their own names."""
    out = []
    for parent, folders, files in os.walk(folder, followlinks=False):
        folders.sort()
        for name in sorted(files):
            path = Path(parent, name)
            if not path.is_symlink() and path.is_file():
                out.append((path.relative_to(folder).as_posix(), path))
    return sorted(out)


def bundle_predicate(document: EvidenceDocument, register: str | None = None) -> dict[str, Any]:
    """What the signed statement says about the run, besides the file hashes."""
    predicate = {"tool": {"name": "auditor", "version": __version__}, "audit": document.audit,
                 "opinion": document.opinion, "seed": document.seed,
                 "evaluated_on": document.run.get("evaluated_on"), "evidence_schema": EVIDENCE_SCHEMA}
    review = document.review or {}
    if isinstance(review.get("trail"), dict):  # the register's trail as the review saw it: signed, it pins it
        predicate["register"] = {"system": review.get("system"), **review["trail"], "location": register}
    return predicate


def dump_json(document: dict[str, Any]) -> str:
    """Stable JSON: sorted keys, no NaN (null instead), UTF-8."""
    return json.dumps(_plain(document), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # most of an 8 MB document: as they are
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    return value


def _free_name(out_dir: Path, stem: str) -> Path:
    """The first of `stem`, `stem-2`, ... that names nothing in `out_dir` (a broken link is something)."""
    candidate, n = out_dir / stem, 1
    while os.path.lexists(candidate):
        n += 1
        candidate = out_dir / f"{stem}-{n}"
    return candidate


def rename_free(tmp: Path, out_dir: Path, stem: str, *, attempts: int = 100) -> Path:
    """Rename the finished run to a free name. Another run finishing in the same second can take the name between
    the check and the rename (the rename then fails: its folder is not empty): take the next free name."""
    import errno

    for _ in range(attempts - 1):
        final = _free_name(out_dir, stem)
        try:
            os.rename(tmp, final)
            return final
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                raise
    final = _free_name(out_dir, stem)
    os.rename(tmp, final)
    return final


RUN_TIME = "%Y%m%dT%H%M%SZ"  # a run folder is `<run_stem(title)>-<UTC time>[-n]`


def run_stem(title: str) -> str:
    """The start of a run folder's name: the audit's title in lower-case letters, digits and hyphens."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return slug[:40].rstrip("-") or "audit"


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def train_ilmart(spec_path: Path, out: Path, *, config: Any, validation_share: float = 0.2,
                    seed: int | None = None) -> tuple[Any, dict[str, float]]:
    """`auditor train-ilmart`: ILMART on the spec's `background` (training) data with its labels, saved as a
    LightGBM model file at `out` (never overwritten); returns the fit and nDCG@10 on the spec's dataset."""
    from dataclasses import replace

    from auditor.checks.ranking import per_query_ndcg
    from auditor.surrogate.train import fit_on_labels

    if out.exists():
        raise InputError("the file exists already", file=out, fix="choose another --out or move the file away")
    spec, _ = load_spec(spec_path)  # model and data only: no policies, templates or signing keys are needed
    model = load_model(spec.model, base_dir=Path(spec_path).parent.resolve(), spec_file=spec_path)
    if spec.background is None:
        raise InputError("the spec has no `background` (training) data to train on", file=spec_path,
                         fix="add `background: {path: train.csv}` with relevance labels")
    used_seed = spec.seed if seed is None else seed
    train = load_dataset(spec.background, model, used_seed, "background")
    if train.y is None:
        raise InputError("the background data has no relevance labels", file=spec_path,
                         fix="set `background.label_column` to the label column")
    rng = np.random.default_rng([spec.seed if seed is None else seed, *b"train-ilmart"])
    config = replace(config, seed=spec.seed if seed is None else seed)
    fit = fit_on_labels(train, rng, validation_share=validation_share, config=config)
    text = fit.booster.model_to_string()
    write_new(out, text)
    test = load_dataset(spec.dataset, model, used_seed, "dataset")
    summary: dict[str, float] = {}
    if test.y is not None:
        for label, booster in (("ilmart", fit.main_booster), ("ilmarti", fit.booster)):
            scores = np.asarray(booster.predict(test.X, raw_score=True))
            summary[label] = float(per_query_ndcg(scores, test.y, test.query_ptr, [10])[:, 0].mean())
    return fit, summary
