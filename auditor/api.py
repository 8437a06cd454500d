"""The Python API: `from auditor import Audit` — an audit of a model and data held in memory (a notebook's
`lightgbm.Booster` and DataFrame) that is still a spec.

The spec stays the single source of truth of an audit: `Audit(...)` writes its in-memory inputs (the model as
LightGBM text, the data as Parquet) and a spec naming them into a staging folder, validates that spec as the CLI
does, and `run()` runs the engine on it. So an audit through the API and the same spec through `auditor report`
give the same evidence.json (tested), errors are the same `InputError` (file, place, fix), raised, and `save()`
writes the inputs beside the run folder (`inputs/`: the spec, the model, the data, hashed in the manifest as
they are in the run) so `auditor report <out>/inputs/audit.yaml` reproduces it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import html
import numbers
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from auditor.core.errors import InputError, shorten
from auditor.core.metric_names import HIGH, LOW

if TYPE_CHECKING:
    from auditor.evidence.document import EvidenceDocument

SPEC_NAME = "audit.yaml"
_ARGUMENTS = {"data.parquet": "data", "background.parquet": "background", "model.txt": "model"}  # staged files
INPUTS = "inputs"  # the folder `save` writes the inputs and the spec into, beside the run folder


class Audit:
    """An audit to run: `Audit(model=booster, data=frame, query="qid", label="label", doc_id="doc_id",
    evidence=["ranking_quality", {"global_importance": {}}], policies=["eu-p2b-art5"], seed=7, audit={...})`,
    or `Audit.from_spec("audit.yaml")`. Other keyword arguments are spec sections (`masking=`, `waivers=`,
    `output=`, ...), as a spec file writes them; `features=` is the spec's feature dictionary,
    `{"price": {"meaning": "Price", "unit": "EUR"}}`.

    `model`: a `lightgbm.Booster` or fitted `LGBMRanker`, an `xgboost.Booster` or fitted `XGBRanker`, a fitted
    CatBoost model (`CatBoostRanker`), each staged in its own native format, or a scikit-learn `Pipeline` ending in
    one (its ranker audited on what its transforms output from `data`); a model file's path (`model_kind=`
    names its kind where the name does not, e.g. an XGBoost `.json`); an MLflow URI (`models:/name/version`,
    `runs:/...`: the tracking URI from $MLFLOW_TRACKING_URI); or a `module:function` string (a callable scorer, which
    needs `trust=True` as in a spec). `data` and `background`: a pandas DataFrame
    (one row a document, a query's rows together) or a data file's path; `dataset={...}` adds the data's spec
    options (`nan_policy`, `description`, `sample_queries`, ...), which the background shares but for the last two.
    `columns`: the feature columns (default: every numeric column but the query, label and document id); a list
    given as `features=` is read as `columns=` for one release, with a warning."""

    def __init__(self, model: Any, data: Any, *, query: str = "qid", label: str | None = "label",
                 doc_id: str | None = None, columns: Sequence[str] | None = None, background: Any = None,
                 evidence: Sequence[str | dict[str, Any]] = ("ranking_quality", "global_importance"),
                 policies: Sequence[str] = (), seed: int = 7, title: str = "Audit from Python",
                 organisation: str = "Not stated", trust: bool = False, model_kind: str | None = None,
                 **sections: Any) -> None:
        columns = _columns(columns, sections)
        for keyword, value in (("columns", columns), ("evidence", evidence), ("policies", policies)):
            if isinstance(value, str):  # list("eu-p2b-art5") would be eleven one-letter packs
                raise InputError(f"{keyword}= takes a list, not one string", where=f"Audit({keyword}=...)",
                                 fix=f"write {keyword}=[{value[:60]!r}]")
        for keyword in ("audit", "dataset"):
            if not isinstance(sections.get(keyword, {}), dict):
                raise InputError(f"{keyword}= takes a mapping of spec keys, not a {type(sections[keyword]).__name__}",
                                 where=f"Audit({keyword}=...)",
                                 fix='e.g. audit={"owner": "..."} (the title is title=)' if keyword == "audit" else
                                 'e.g. dataset={"nan_policy": "missing"} (the data itself is data=)')
        self._folder = Path(tempfile.mkdtemp(prefix="auditor-api-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._folder, ignore_errors=True)
        reads = {"query_column": query, "label_column": label, "doc_id_column": doc_id,
                 "feature_columns": list(columns) if columns is not None else None}
        preprocessing = None
        pipeline = _pipeline_parts(model)
        if pipeline is not None:  # the ranker audited on the features the pipeline's transforms give it
            transforms, ranker = pipeline
            kept = {query, label, doc_id}
            data, outputs = _transformed(transforms, data, kept, columns, "data")
            if background is not None:
                background, _ = _transformed(transforms, background, kept, columns, "background")
            reads["feature_columns"] = outputs
            preprocessing = _pipeline_text(model, outputs)
            model = ranker
        spec: dict[str, Any] = {
            "audit": {"title": title, "organisation": organisation, **sections.pop("audit", {})},
            "model": {**_staged_model(model, self._folder, trust), **_set({"kind": model_kind}),
                      **_set({"preprocessing": preprocessing}), **sections.pop("model", {})},
        }
        data = _categoricals(model, data, "data")
        if background is not None:
            background = _categoricals(model, background, "background")
        reading = sections.pop("dataset", {})  # e.g. {"nan_policy": "missing"}: the data's options in a spec
        spec["dataset"] = {**_staged_data(data, self._folder / "data.parquet", "data"), **_set(reads), **reading}
        if background is not None:  # read as the data are, but whole and without their description
            shared = {k: v for k, v in reading.items() if k not in ("description", "sample_queries")}
            spec["background"] = {**_staged_data(background, self._folder / "background.parquet", "background"),
                                  **_set(reads), **shared}
        spec["evidence"] = [item if isinstance(item, dict) else {item: {}} for item in evidence]
        spec.update(policies=list(policies), seed=seed, **sections)
        spec.setdefault("output", {"dir": "reports", "formats": ["html"]})
        self.spec_path = self._folder / SPEC_NAME
        self.spec_path.write_text(yaml.safe_dump(_plain(spec), sort_keys=False, allow_unicode=True),
                                  encoding="utf-8")
        self._in_memory = True
        try:
            self._check()
        except InputError as exc:
            raise self._named(exc) from None

    def _named(self, exc: InputError) -> InputError:
        """An error in a staged file names this call's argument (`Audit(data=...)`, with the row), not a temporary
        file, and its fix the keyword that sets a spec key (`dataset={"nan_policy": "missing"}`)."""
        if not self._in_memory or exc.file is None or Path(exc.file).parent != self.spec_path.parent:
            return exc
        if exc.file == str(self.spec_path):
            place = exc.where if exc.where and not re.fullmatch(r"\d+:\d+", exc.where) else "..."  # a line:column
            where = f"Audit({place})"
        else:
            where = f"Audit({_ARGUMENTS.get(Path(exc.file).name, '...')}=...)" + (f" {exc.where}" if exc.where else "")
        fix = exc.fix and re.sub(r"`(dataset|background|model)\.(\w+): ([^`]+)`",
                                 lambda m: f"`{m[1]}={{{m[2]!r}: {yaml.safe_load(m[3])!r}}}`", exc.fix)
        return InputError(_keywords(exc.problem), where=where, fix=fix and _keywords(fix))

    @classmethod
    def from_spec(cls, path: str | Path) -> Audit:
        """The audit a spec file describes (checked now; its paths are relative to the file, as for the CLI)."""
        audit = cls.__new__(cls)
        audit.spec_path = Path(path)
        audit._in_memory = False
        audit._check()
        return audit

    def _check(self) -> None:
        from auditor.inputs.spec import load_spec

        self.spec, self._raw = load_spec(self.spec_path)

    def to_spec(self) -> str:
        """The spec as YAML: for an in-memory audit, the one `save` writes to `<out>/inputs/audit.yaml`, naming
        the model and data files saved beside it."""
        return self.spec_path.read_text(encoding="utf-8")

    def run(self, *, jobs: int | None = None, progress: bool = False, register: str = "off") -> AuditResult:
        """Run the audit: evidence, findings and an HTML report in a temporary run folder (`AuditResult.save`
        writes it where it belongs, in the formats asked for, signed or not). `jobs`: cores, as `--jobs`;
        `progress`: progress bars on stderr; `register`: as `--register` (default `off`: a notebook's trial runs
        are not reviews)."""
        from auditor.evidence.base import Progress
        from auditor.inputs.spec import ExecutorSpec
        from auditor.run.engine import run_audit

        if jobs is not None:  # jobs=-1 (scikit-learn's "every core") was pydantic's traceback
            if not isinstance(jobs, numbers.Integral) or isinstance(jobs, bool) or jobs < 1:
                raise InputError(f"jobs={jobs!r}: the cores to use are 1 or more", where="run(jobs=...)",
                                 fix="jobs=1 runs on one core; leave jobs out for the spec's executor (every core)")
            jobs = int(jobs)
        executor = None if jobs is None else ExecutorSpec.model_validate(
            {**self.spec.executor.model_dump(), "jobs": jobs, "kind": "serial" if jobs == 1 else "auto"})
        out = Path(tempfile.mkdtemp(prefix="auditor-run-"))
        try:
            if progress:
                from auditor.run.progress import for_terminal

                with for_terminal() as bar:
                    run = run_audit(self.spec_path, out=out, progress=bar, executor=executor, register=register,
                                    formats=["html"], keep_downloads=True)
            else:
                run = run_audit(self.spec_path, out=out, progress=Progress(), executor=executor,
                                register=register, formats=["html"], keep_downloads=True)
        except InputError as exc:
            shutil.rmtree(out, ignore_errors=True)
            raise self._named(exc) from None
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)
            raise
        return AuditResult(self, run, out)


class AuditResult:
    """What a run found: `opinion`, `findings` and `metrics` as DataFrames, `evidence` (each kind's typed result),
    `report_html()`, and `save(out_dir)` for the run folder the CLI writes. Shown inline in Jupyter as the report's
    executive summary."""

    def __init__(self, audit: Audit, run: Any, scratch: Path) -> None:
        self.audit: Audit | None = audit
        self._run = run
        self._scratch = scratch
        self._cleanup = weakref.finalize(self, shutil.rmtree, scratch, ignore_errors=True)
        self.opinion: str = run.opinion
        self.document: EvidenceDocument = run.document  # evidence.json, typed (auditor/evidence/document.py)
        self.evidence: dict[str, Any] = run.results
        self.folder: Path | None = None  # the run folder a loaded result was read from
        self._loaded: Any = None  # its evidence as read back (auditor.commands.render_run.LoadedRun)

    @classmethod
    def load(cls, run_folder: str | Path, *, pubkey: str | Path | None = None) -> AuditResult:
        """A run folder read back (`auditor report`'s, or `save()`'s): opinion, findings, metrics, tables and the
        inline summary, from its evidence.json alone. A signed run's evidence is first compared with the digest its
        bundle lists, and with `pubkey` the bundle's signature is checked; `auditor verify` checks everything."""
        from auditor.commands.render_run import load_run

        loaded = load_run(Path(run_folder), pubkey=None if pubkey is None else Path(pubkey))
        result = cls.__new__(cls)
        result.audit, result._run, result.folder = None, None, loaded.folder
        result.document, result.evidence = loaded.document, loaded.results
        result.opinion = loaded.document.opinion
        result._loaded = loaded
        return result

    @property
    def findings(self) -> Any:
        """One row a rule of the applied packs: rule, pack, status, severity, metric, value, interval, message."""
        import pandas as pd

        columns = ["rule", "pack", "status", "severity", "title", "metric", "value", "ci95_low", "ci95_high",
                   "requirement", "message", "remedy", "citation", "evidence"]
        rows = []
        for f in self.document.findings:
            low, high = f.interval or (None, None)
            rows.append({**{key: getattr(f, key) for key in columns if key not in ("ci95_low", "ci95_high")},
                         "ci95_low": low, "ci95_high": high})
        return pd.DataFrame(rows, columns=columns)

    @property
    def metrics(self) -> Any:
        """One row a metric of every evidence item: metric, value, its 95% interval when it has one, evidence."""
        import pandas as pd

        rows = []
        for name, result in self.document.items():
            for metric in result.metrics:
                if metric.endswith((f".{LOW}", f".{HIGH}")):
                    continue
                found = result.reading(metric)
                rows.append({"metric": metric, "value": found.value if found else None,
                             "ci95_low": found.low if found else None, "ci95_high": found.high if found else None,
                             "evidence": name})
        return pd.DataFrame(rows, columns=["metric", "value", "ci95_low", "ci95_high", "evidence"])

    def tables(self, kind: str) -> dict[str, Any]:
        """An evidence item's tables as DataFrames, by title (what its report section shows)."""
        import pandas as pd

        result = self.evidence.get(kind)
        if result is None:
            raise InputError(f"this audit has no evidence '{kind}'", where="AuditResult.tables",
                             fix=f"one of {', '.join(self.evidence)}")
        return {table.title: pd.DataFrame(table.rows, columns=table.columns) for table in result.tables}

    def explanations(self, query: str | None = None, method: str | None = None) -> Any:
        """One query's attributions as a `shap.Explanation` (documents × features, with each document's base value
        and feature values), so `shap.plots.waterfall(result.explanations()[0])` and `shap.plots.bar` work; from a
        saved run too. `query`: its id (default: the first query evidence.json keeps).

        `method` None: the exact TreeSHAP values of `global_importance` (its option `keep_queries`). A local
        explanation method (`"shap5"`, `"lirme1"`, ... as the spec's `local_explanations.methods` names them): that
        method's values for the query's top documents (`local_explanations.keep_queries`; base values 0: the
        method explains the ranking, not a score), with its validity, completeness and, when `confidence` ran,
        whether it is flagged low-confidence and why, in the returned object's `audit` dict — a flagged explanation
        warns (`FlaggedExplanationWarning`): a reviewer must not rely on it."""
        if method is not None:
            return self._local_explanation(query, method)
        import numpy as np
        import shap

        item = self.document.evidence.get("global_importance")
        kept = item.attributions if item is not None else None
        if not kept or not kept.get("queries"):
            raise InputError("this audit kept no per-document attributions", where="AuditResult.explanations",
                             fix="request `global_importance` (a tree model; its option keep_queries > 0)")
        by_query = {str(entry["query"]): entry for entry in kept["queries"]}
        entry = by_query.get(str(query)) if query is not None else kept["queries"][0]
        if entry is None:
            shown = ", ".join(list(by_query)[:10])
            raise InputError(f"query '{query}' is not among the {len(by_query)} whose attributions the run kept",
                             where="AuditResult.explanations(query=...)", fix=f"one of {shown}"
                             + (" …" if len(by_query) > 10 else "") + " (more with global_importance.keep_queries)")
        values = np.array([[np.nan if v is None else v for v in row] for row in entry["phi"]], dtype=np.float64)
        data = np.array([[np.nan if v is None else v for v in row] for row in entry["values"]], dtype=np.float64)
        return shap.Explanation(values=values, base_values=np.asarray(entry["bias"], dtype=np.float64), data=data,
                                feature_names=list(kept["feature_names"]), instance_names=list(entry["docs"]))

    def _local_explanation(self, query: str | None, method: str) -> Any:
        """`explanations(query, method=...)` for a local explanation method."""
        import warnings

        import numpy as np
        import shap

        from auditor.explain import registry

        item = self.document.evidence.get("local_explanations")
        kept = item.attributions if item is not None else None
        found = [e for e in (kept or {}).get("explanations", []) if e["method"] == method]
        if not found:
            methods = sorted({e["method"] for e in (kept or {}).get("explanations", [])})
            raise InputError(f"this audit kept no attributions of method '{method}'",
                             where="AuditResult.explanations(method=...)",
                             fix=f"one of {', '.join(methods)}" if methods else
                             "request `local_explanations` with an attribution method (keep_queries > 0)")
        assert kept is not None  # found holds its entries
        entry = next((e for e in found if e["query"] == str(query)), None) if query is not None else found[0]
        if entry is None:
            raise InputError(f"query '{query}' is not among the {len(found)} whose {method} attributions the run "
                             "kept", where="AuditResult.explanations(query=...)",
                             fix="one of " + ", ".join(e["query"] for e in found[:10])
                             + " (more with local_explanations.keep_queries)")
        values = np.array([[np.nan if v is None else v for v in row] for row in entry["phi"]], dtype=np.float64)
        data = np.array([[np.nan if v is None else v for v in row] for row in entry["values"]], dtype=np.float64)
        explanation = shap.Explanation(values=values, base_values=np.zeros(len(values)), data=data,
                                       feature_names=list(kept["feature_names"]), instance_names=list(entry["docs"]))
        flag = self._flag(entry["query"], method)
        explanation.audit = {"query": entry["query"], "method": method, "label": registry.method(method).label,
                             "validity": entry["validity"], "completeness": entry["completeness"],
                             "flagged": None if flag is None else bool(flag.get("flagged")),
                             "reasons": [] if flag is None else list(flag.get("reasons") or [])}
        if explanation.audit["flagged"]:
            warnings.warn(f"the {explanation.audit['label']} explanation of query {entry['query']} is flagged "
                          f"low-confidence ({'; '.join(explanation.audit['reasons']) or 'see the confidence section'})"
                          ": a reviewer must not rely on it", FlaggedExplanationWarning, stacklevel=3)
        return explanation

    def _flag(self, query: str, method: str) -> dict[str, Any] | None:
        """The confidence evidence's record of one explanation (flagged, reasons), or None when it did not run."""
        item = self.document.evidence.get("confidence")
        return next((r for r in (item.records if item is not None else [])
                     if str(r.get("query")) == query and r.get("method") == method), None)

    def report_html(self) -> str:
        """The whole report as one self-contained HTML page (a loaded run's drawn from its evidence)."""
        if self._run is None:
            from auditor.commands.render_run import html_of

            return html_of(self._loaded)
        return (self._run.run_dir / "report.html").read_text(encoding="utf-8")

    def log_mlflow(self) -> str:
        """Log this audit to MLflow as `auditor report --mlflow` does (the active run, $MLFLOW_RUN_ID's, or a new
        one; the tracking URI from the spec's `model.tracking_uri` or $MLFLOW_TRACKING_URI), linked to an audited
        MLflow model's version. Returns the MLflow run id."""
        from auditor.commands import mlflow_log

        if self._run is None or self.audit is None:
            raise InputError(f"this result was loaded from {self.folder}", where="AuditResult.log_mlflow",
                             fix="log the audit when it runs (`auditor report --mlflow`, or log_mlflow() on the "
                                 "result of Audit(...).run())")
        tracking = mlflow_log.check_ready(self.audit.spec_path)
        return mlflow_log.log_audit(self._run, tracking_uri=tracking)

    def save(self, out_dir: str | Path, *, formats: Sequence[str] | None = None,
             signing: dict[str, Any] | None = None) -> Path:
        """Write the run folder into `out_dir` as `auditor report` does (evidence.json, and `formats`, default the
        spec's; signed with `signing`, a spec `signing:` section whose paths are relative to the working folder, or
        the spec's own). An in-memory audit's inputs go to `<out_dir>/inputs/` with the spec that names them; the
        evidence is the run's, unchanged. Returns the run folder."""
        from auditor.inputs.spec import load_spec
        from auditor.run.engine import check_output_folder, write_run

        if self._run is None or self.audit is None:
            raise InputError(f"this result was loaded from {self.folder}, which holds its run folder already",
                             where="AuditResult.save", fix="copy that folder, or draw its report again with "
                                                           "`auditor render`")
        out_dir = Path(out_dir)
        prepared = self._run.prepared
        chosen = _checked_formats(formats)  # all that is asked is checked before anything is written
        material = prepared.signing if signing is None else self._signing(signing)
        try:
            check_output_folder(out_dir)
        except InputError as exc:
            raise InputError(exc.problem, where="save(out_dir=...)",
                             fix=(exc.fix or "").replace("`--out`", "out_dir")) from None
        spec_path = self.audit.spec_path
        inputs = out_dir / INPUTS
        made = self.audit._in_memory and not os.path.lexists(inputs)
        fresh = not os.path.lexists(out_dir)
        try:
            if self.audit._in_memory:
                spec_path = _saved_inputs(self.audit.spec_path.parent, inputs)
            spec, _ = load_spec(spec_path)
            spec = spec.model_copy(update={"output": spec.output.model_copy(
                update={"formats": chosen if chosen is not None else spec.output.formats})})
            prepared = dataclasses.replace(prepared, spec=spec, spec_path=spec_path, signing=material)
            return write_run(out_dir, spec, self.document, self.evidence, prepared, self._run.started)
        except BaseException:
            if made:  # no run folder: no inputs of it either, nor a folder made for them
                shutil.rmtree(inputs, ignore_errors=True)
            if fresh:
                with contextlib.suppress(OSError):
                    out_dir.rmdir()  # only if empty
            raise

    def _signing(self, signing: Any) -> Any:
        """`save(signing=...)`'s keys, loaded (a passphrase asked for, a TSA reached) before anything is written."""
        from pydantic import ValidationError

        from auditor.inputs.spec import SigningSpec
        from auditor.trust.keys import load_material

        try:
            chosen = SigningSpec.model_validate(signing, context={"base_dir": Path.cwd()})
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            place = ".".join(str(part) for part in first["loc"])
            raise InputError(f"{place + ': ' if place else ''}{first['msg']}", where="save(signing=...)",
                             fix="give a spec `signing:` section as a dict (key, passphrase_env, bundle_key)") from None
        audit = self.audit
        assert audit is not None  # `save` refuses a loaded result before asking for keys
        try:
            return load_material(chosen, spec_file=audit.spec_path, timestamp_url=None)
        except InputError as exc:
            if exc.file != str(audit.spec_path) or not audit._in_memory:
                raise
            raise InputError(exc.problem, where="save(signing=...)", fix=exc.fix) from None

    def _repr_html_(self) -> str:
        """The executive summary in a sandboxed frame: the report's styles and the notebook's do not meet."""
        page = self.report_html()
        style = re.search(r"<style>.*?</style>", page, re.S)
        summary = re.search(r'<section id="summary".*?</section>', page, re.S)
        body = summary.group(0) if summary else "<p>No summary was rendered.</p>"
        # the frame holds the summary alone: a pointer to a section of the report would lead nowhere in it
        body = re.sub(r'<a href="#[^"]*"[^>]*>(.*?)</a>', r"\1", body, flags=re.S)
        inner = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">{style.group(0) if style else ""}'
                 f"</head><body>{body}</body></html>")
        return (f'<iframe sandbox="" title="Audit summary" srcdoc="{html.escape(inner, quote=True)}" '
                'style="width:100%;height:640px;border:1px solid #ccc"></iframe>'
                f"<p>Opinion: <strong>{html.escape(self.opinion)}</strong>. The whole report: "
                "<code>result.save(folder)</code> writes it with evidence.json.</p>")

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for finding in self.document.findings:
            counts[finding.status] = counts.get(finding.status, 0) + 1
        shown = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no rules applied"
        return f"<AuditResult opinion={self.opinion!r} ({shown})>"


class FlaggedExplanationWarning(UserWarning):
    """An explanation the confidence evidence flagged low-confidence: shown, but not to be relied on."""


_KEYWORDS = {"query_column": "query", "label_column": "label", "doc_id_column": "doc_id", "feature_columns": "columns"}


def _columns(columns: Sequence[str] | None, sections: dict[str, Any]) -> Sequence[str] | None:
    """`columns=`, or a list passed as `features=` (its meaning before the spec's feature dictionary took the name),
    moved to `columns=` with a FutureWarning; a mapping under `features=` stays the dictionary (a spec section)."""
    import warnings

    legacy = sections.get("features")
    if legacy is None or isinstance(legacy, dict):
        return columns
    if isinstance(legacy, str):
        raise InputError("features= takes the feature dictionary, a mapping {name: {meaning, unit}}; the feature "
                         "columns are columns=", where="Audit(features=...)", fix=f"write columns=[{legacy[:60]!r}]")
    if columns is not None:
        raise InputError("both columns= and a list under features= name the feature columns",
                         where="Audit(features=...)", fix="give the feature columns as columns= only")
    warnings.warn("Audit(features=[...]) names the feature columns: write columns=[...] (features= is the spec's "
                  "feature dictionary, {name: {meaning, unit}}); the list form goes in the next release",
                  FutureWarning, stacklevel=3)
    del sections["features"]
    return list(legacy)


def _keywords(text: str) -> str:
    """A spec key the API sets by a keyword named as that keyword: `dataset.query_column` → `query=`."""
    return re.sub(r"`(?:dataset|background)\.(query_column|label_column|doc_id_column|feature_columns)`",
                  lambda m: f"`{_KEYWORDS[m[1]]}=`", text)


def _set(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def _staged_model(model: Any, folder: Path, trust: bool) -> dict[str, Any]:
    """The spec's `model:` for `model`, writing an in-memory model into `folder` (LightGBM's own text format)."""
    booster = getattr(model, "booster_", model)  # a fitted LGBMRanker holds its Booster
    if type(booster).__module__.startswith("lightgbm") and hasattr(booster, "model_to_string"):
        (folder / "model.txt").write_text(booster.model_to_string(), encoding="utf-8")
        return {"path": "model.txt", "kind": "lightgbm"}
    library = type(model).__module__.split(".")[0]
    if library == "xgboost" and hasattr(model, "save_model"):  # XGBRanker (its Booster inside) or a Booster
        inner = model.get_booster() if hasattr(model, "get_booster") else model
        inner.save_model(str(folder / "model.json"))  # XGBoost's own JSON: read strictly by models/xgboost_check.py
        return {"path": "model.json", "kind": "xgboost"}
    if library == "catboost" and hasattr(model, "save_model"):  # CatBoostRanker, CatBoost
        model.save_model(str(folder / "model.cbm"))
        return {"path": "model.cbm", "kind": "catboost"}
    if isinstance(model, str) and model.startswith(("models:/", "runs:/")):  # an MLflow model by URI
        return {"kind": "mlflow", "uri": model}
    if isinstance(model, (str, Path)) and ":" in str(model) and not Path(model).exists():
        return {"kind": "callable", "entry": str(model), "trust": trust}
    if isinstance(model, (str, Path)):
        return {"path": str(Path(model).resolve()), "trust": trust}
    if callable(model) and hasattr(model, "__qualname__"):  # a scorer the spec can name as module:function
        module = getattr(model, "__module__", None)
        if module in (None, "__main__") or "<" in model.__qualname__:
            raise InputError("a scoring function defined in the notebook or script itself cannot be named by the "
                             "spec that reproduces the audit", where="Audit(model=...)",
                             fix="define it in a module (e.g. scorer.py beside the notebook) and pass it from there")
        return {"kind": "callable", "entry": f"{module}:{model.__qualname__}", "trust": trust}
    raise InputError(f"cannot audit the {type(model).__name__} object held in memory", where="Audit(model=...)",
                     fix="pass a LightGBM Booster or LGBMRanker, an XGBoost Booster or XGBRanker, a CatBoost model, "
                         "a model file's path (LightGBM, XGBoost, CatBoost, ONNX, skops; model_kind= names the kind "
                         "of a .json file), or a 'module:function' scorer with trust=True")


def _pipeline_parts(model: Any) -> tuple[Any, Any] | None:
    """(its transforms, its ranker) for a scikit-learn Pipeline; None for any other model."""
    if type(model).__name__ != "Pipeline" or not type(model).__module__.startswith("sklearn."):
        return None
    steps = list(getattr(model, "steps", []))
    ranker = steps[-1][1] if steps else None
    if ranker is None or isinstance(ranker, str) or not hasattr(ranker, "predict"):
        raise InputError("the Pipeline does not end in a ranker", where="Audit(model=...)",
                         fix="end it in a fitted LGBMRanker, XGBRanker or CatBoostRanker, or pass the ranker itself")
    return (model[:-1] if len(steps) > 1 else None), ranker


def _transformed(transforms: Any, data: Any, kept: set[str | None], columns: Sequence[str] | None,
                 role: str) -> tuple[Any, list[str]]:
    """The data as the pipeline's ranker sees them: its input columns replaced by what its transforms output
    (named by `get_feature_names_out`), the query, label, id and other columns kept; and the output names."""
    import numpy as np
    import pandas as pd

    if not hasattr(data, "columns"):
        raise InputError("a Pipeline's transforms run on a DataFrame", where=f"Audit({role}=...)",
                         fix="pass the data as a pandas DataFrame (e.g. pandas.read_parquet(path))")
    frame = data.reset_index(drop=True)
    names = [str(c) for c in frame.columns]
    given = list(columns) if columns is not None else [n for n in names if n not in kept and
                                                       pd.api.types.is_numeric_dtype(frame[n])]
    if transforms is None:
        return frame, given
    fitted = getattr(transforms, "feature_names_in_", None)
    inputs = [str(c) for c in fitted] if fitted is not None else given
    missing = next((c for c in inputs if c not in names), None)
    if missing is not None:
        raise InputError(f"the Pipeline was fitted on column '{missing[:80]}', which the data do not hold",
                         where=f"Audit({role}=...)", fix="pass the columns the pipeline was fitted on")
    try:
        out = transforms.transform(frame[inputs])
    except Exception as exc:  # the owner's transforms: any failure is their data's problem
        raise InputError(f"the Pipeline's transforms fail on the data ({type(exc).__name__}: "
                         f"{shorten(str(exc), 160)})", where=f"Audit({role}=...)",
                         fix="pass data the pipeline can transform: the columns and types it was fitted on") from None
    if hasattr(out, "toarray"):  # a sparse matrix (OneHotEncoder's default)
        out = out.toarray()
    try:
        values = np.asarray(out, dtype=np.float64) if not hasattr(out, "columns") else out.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("the Pipeline's transforms output values that are not numbers (a column passed through as "
                         "text?)", where=f"Audit({role}=...)",
                         fix="encode every column the ranker reads as numbers inside the pipeline") from None
    try:
        outputs = [str(n) for n in transforms.get_feature_names_out()]
    except (AttributeError, ValueError, TypeError):  # a transform that does not name its outputs
        outputs = [str(n) for n in out.columns] if hasattr(out, "columns") else \
            [f"feature_{i}" for i in range(values.shape[1])]
    if values.ndim != 2 or values.shape != (len(frame), len(outputs)):
        raise InputError(f"the Pipeline's transforms give {values.shape}, not one row per document",
                         where=f"Audit({role}=...)", fix="audit the ranker on a DataFrame of its own features")
    others = [n for n in names if n not in inputs]
    clash = next((n for n in outputs if n in others), None)
    if clash is not None:
        raise InputError(f"the Pipeline outputs a feature named '{clash[:80]}', which is also a column of the data",
                         where=f"Audit({role}=...)", fix="rename that column of the data")
    kept_frame = frame[others].copy()
    kept_frame.columns = others
    return pd.concat([kept_frame, pd.DataFrame(values, columns=outputs)], axis=1), outputs


def _pipeline_text(pipeline: Any, outputs: list[str]) -> str:
    """What the report says the data went through: the pipeline's steps, and that the audit is of its ranker."""
    steps = [f"{name} ({type(step).__name__})" for name, step in pipeline.steps[:-1]
             if step is not None and not isinstance(step, str)]
    name, ranker = pipeline.steps[-1]
    if not steps:
        return f"a scikit-learn Pipeline of its ranker {name} ({type(ranker).__name__}) alone: no transform"
    return (f"a scikit-learn Pipeline: {', then '.join(steps)}; its ranker {name} ({type(ranker).__name__}) is "
            f"audited on the {len(outputs)} features its transforms output, applied to the data by the Python API")


def _categoricals(model: Any, data: Any, role: str) -> Any:
    """A DataFrame's pandas `category` columns as the codes the model was trained on, mapped through the model's own
    record of its categories as its predict maps them: LightGBM's `pandas_categorical` (a value it never saw is
    missing), XGBoost's stored categories (a value it never saw is refused: XGBoost's predict does not read it as
    missing). Any other model is refused with the fix (its codes are the model's to give)."""
    if not hasattr(data, "dtypes"):
        return data
    columns = [str(c) for c, dtype in data.dtypes.items() if str(dtype) == "category"]
    if not columns:
        return data
    import numpy as np

    trained, unseen_missing = _trained_categories(model, columns)
    missing = next((c for c in columns if c not in trained), None)
    if missing is not None:
        raise InputError(f"column '{missing[:80]}' holds pandas categories, and the model does not say which codes "
                         "they had when it was trained", where=f"Audit({role}=...)",
                         fix="pass the numeric codes the model was trained on (e.g. frame[column].cat.codes with the "
                             "training categories); a LightGBM or XGBoost model trained on the DataFrame's "
                             "categories maps them itself")
    frame = data.copy()
    for column in columns:
        values = frame[column].astype(object)
        codes = values.map({value: float(code) for code, value in enumerate(trained[column])})
        unseen = codes.isna() & values.notna()
        if not unseen_missing and unseen.any():
            raise InputError(f"column '{column[:80]}' holds {str(values[unseen].iloc[0])[:40]!r}, a category the "
                             "model was not trained on", where=f"Audit({role}=...)",
                             fix="drop those rows, or set the value to missing (NaN) if that is what it means")
        # missing (NaN), as the model's predict reads a missing (or, LightGBM, unseen) value
        frame[column] = codes.to_numpy(dtype=np.float64, na_value=np.nan)
    return frame


def _trained_categories(model: Any, columns: list[str]) -> tuple[dict[str, list[Any]], bool]:
    """The categories each categorical column had in training, by column name, as the model records them; and
    whether the model reads a value it never saw as missing (LightGBM) or not (XGBoost)."""
    booster = getattr(model, "booster_", model)
    lightgbm = getattr(booster, "pandas_categorical", None)
    if lightgbm:  # the category columns' lists, in the DataFrame's order
        return (dict(zip(columns, lightgbm, strict=True)) if len(lightgbm) == len(columns) else {}), True
    library = type(model).__module__.split(".")[0]
    if library == "xgboost" and hasattr(model, "save_model"):
        inner = model.get_booster() if hasattr(model, "get_booster") else model
        try:
            stored = inner.get_categories(export_to_arrow=True).to_arrow()
        except (AttributeError, TypeError, ValueError):  # XGBoost before 3.1 keeps no categories
            return {}, False
        names = inner.feature_names or []
        return {str(name): list(values.to_pylist()) for name, values in (stored or []) if values is not None
                and str(name) in names}, False
    return {}, True


def _staged_data(data: Any, target: Path, role: str) -> dict[str, Any]:
    """The spec's `dataset:` (or `background:`) for `data`, writing a DataFrame to `target` as Parquet."""
    if isinstance(data, (str, Path)):
        return {"path": str(Path(data).resolve())}
    if hasattr(data, "to_parquet") and hasattr(data, "columns"):
        frame = data.reset_index(drop=True)
        names = [str(c) for c in frame.columns]
        twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
        if twice is not None:  # pyarrow refuses them with a ValueError listing every column
            raise InputError(f"two columns are named '{twice[:80]}'", where=f"Audit({role}=...)",
                             fix="rename one (a column is named by its text: 1 and '1' are one name)")
        frame.columns = names
        try:
            frame.to_parquet(target, index=False)
        except (ValueError, TypeError, ArithmeticError, ImportError) as exc:  # pyarrow's errors subclass these
            raise InputError(f"cannot stage the data as Parquet: {_arrow_problem(exc)}", where=f"Audit({role}=...)",
                             fix="give each column one type: numbers, or text (`frame[column].astype(str)`)") from None
        return {"path": target.name}
    raise InputError(f"cannot read a {type(data).__name__} as the {role}", where=f"Audit({role}=...)",
                     fix="pass a pandas DataFrame (one row a document) or a data file's path")


def _arrow_problem(exc: BaseException) -> str:
    """pyarrow's complaint in one short line, naming the column when it does ("Conversion failed for column
    doc_id with type object")."""
    text = " ".join(str(part) for part in exc.args) if exc.args else type(exc).__name__
    column = re.search(r"column (.+?) with type (\w+)", text)
    first = str(exc.args[0]) if exc.args else text
    head = first.splitlines()[0][:160] if first else type(exc).__name__
    return f"column '{column[1][:80]}' ({column[2]}): {head}" if column else head


def _checked_formats(formats: Sequence[str] | None) -> list[str] | None:
    """`save(formats=...)` as the spec's `output.formats` allows them: `formats="pdf"` (a string, i.e. 'p', 'd',
    'f') or `["docx"]` wrote no report and said nothing."""
    if formats is None:
        return None
    from pydantic import TypeAdapter, ValidationError

    from auditor.inputs.spec import OutputSpec

    allowed: Any = OutputSpec.model_fields["formats"].annotation
    if isinstance(formats, str):
        raise InputError("formats= takes a list, not one string", where="save(formats=...)",
                         fix=f"write formats=[{formats[:20]!r}]")
    try:
        return list(TypeAdapter(allowed).validate_python(list(formats)))
    except (ValidationError, TypeError):
        given = list(formats) if isinstance(formats, (list, tuple)) else [formats]
        wrong = next((f for f in given if f not in ("html", "pdf")), formats)
        raise InputError(f"no report format {str(wrong)[:40]!r}", where="save(formats=...)",
                         fix="choose from 'html' and 'pdf'") from None


def _plain(value: Any, at: str = "") -> Any:
    """The spec as plain YAML values: numpy scalars and arrays (a notebook's `seed=np.int64(7)`, `cutoffs=
    np.arange(1, 11)`) as Python numbers and lists, paths as text; anything else YAML cannot write is bad input
    naming its place, not a RepresenterError."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return _plain(value.tolist(), at)
    if isinstance(value, dict):
        return {_plain(key, at): _plain(item, f"{at}.{key}" if at else str(key)) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{at}.{i}") for i, item in enumerate(value)]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, bool) or type(value) in (str, int, float, dt.date, dt.datetime):
        return value
    for kind in (str, int, float):  # subclasses YAML's safe writer does not know (an enum of str)
        if isinstance(value, kind):
            return kind(value)
    raise InputError(f"cannot write a {type(value).__name__} into the spec (at {at or 'the top'})",
                     where="Audit(...)", fix="pass plain values: text, numbers, booleans, lists and dicts of them")


def _saved_inputs(staging: Path, target: Path) -> Path:
    """Copy the staged spec and the files it names into `target` (new or holding the same files); the spec's path
    there."""
    if os.path.lexists(target) and not target.is_dir():
        raise InputError("is not a folder", file=target, fix="move it away, or save into another folder")
    if target.exists() and any(target.iterdir()):
        same = all((target / f.name).is_file() and (target / f.name).read_bytes() == f.read_bytes()
                   for f in staging.iterdir() if f.is_file())
        if not same:
            raise InputError("holds other inputs", file=target, fix="save into another folder (one audit's inputs a "
                                                                    "folder)")
    target.mkdir(parents=True, exist_ok=True)
    for file in staging.iterdir():
        if file.is_file():
            shutil.copyfile(file, target / file.name)
    return target / SPEC_NAME
