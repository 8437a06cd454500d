"""`auditor report --mlflow`: a finished audit logged to an MLflow run.

What is logged: the opinion as the tag `auditor.opinion` (and `auditor.run_folder`, `auditor.version`); each rule's
status as the tag `rule.<pack>.<rule id>` (PASS, WARN, FAIL, WAIVED, ERROR, UNMEASURED, SKIPPED) and the number it
judged as the metric of the same name (with `.ci95_low` / `.ci95_high` when it judged an interval: a per-query
rule's value is a share of queries, not the evidence metric it names); each evidence metric a rule names, under its
own name, with its 95% interval as the evidence reports it; and the run folder as artifacts under
`auditor/<run folder name>`.
MLflow allows letters, digits, `_ - . /` and spaces in metric and tag names everywhere: `@` becomes `_at_`
(`ranking_quality.ndcg@10.mean` → `ranking_quality.ndcg_at_10.mean`), any other character `_`; evidence.json,
among the artifacts, keeps the evidence's own names.

Which run: the active one (a caller's `mlflow.start_run()`), else $MLFLOW_RUN_ID's, else a new run in
$MLFLOW_EXPERIMENT_ID or $MLFLOW_EXPERIMENT_NAME (made if missing; MLflow's default experiment otherwise), ended once
logged. Where: the spec's `model.tracking_uri`, else $MLFLOW_TRACKING_URI; with neither, `--mlflow` is refused
before the audit runs (MLflow would start a store of its own in the working folder).
"""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError, shorten
from auditor.core.urls import scrubbed

EXTRA_FIX = "install it: pip install 'auditor[mlflow]'"
_NOT_ALLOWED = re.compile(r"[^\w\-. /]")  # what MLflow allows everywhere (a colon is refused on Windows)
MAX_NAME = 250  # MLflow's longest metric or tag key
BATCH_TAGS, BATCH_METRICS = 100, 1000  # MLflow's log_batch limits


def metric_name(name: str) -> str:
    """`name` as MLflow accepts a metric or tag key: `@` → `_at_`, other characters MLflow refuses → `_`, no empty,
    `.` or `..` path segment (MLflow refuses names a path would normalise), at most 250 characters."""
    text = _NOT_ALLOWED.sub("_", name.replace("@", "_at_"))
    segments = [part if part not in ("", ".", "..") else "_" for part in text.split("/")]
    return "/".join(segments)[:MAX_NAME] or "_"


def check_ready(spec_path: Path) -> str | None:
    """Before the audit runs: mlflow is installed and there is somewhere to log to. Returns the tracking URI (None:
    the active run's)."""
    try:
        import mlflow
    except ImportError:
        raise InputError("--mlflow needs the mlflow package, which is not installed", where="--mlflow",
                         fix=EXTRA_FIX) from None
    from auditor.inputs.spec import load_spec
    from auditor.models.mlflow import quiet, tracking_uri

    quiet()
    spec, _ = load_spec(spec_path)
    chosen = tracking_uri(spec.model.tracking_uri, base_dir=Path(spec_path).parent.resolve(), spec_file=spec_path,
                          must_exist=False)
    if chosen is None and mlflow.active_run() is None:
        raise InputError("--mlflow names no MLflow tracking server or store to log to", where="--mlflow",
                         fix="set $MLFLOW_TRACKING_URI (e.g. sqlite:///mlflow.db, https://mlflow.example) or the "
                             "spec's `model.tracking_uri`")
    return chosen


def log_audit(run: Any, *, tracking_uri: str | None) -> str:
    """Log a finished audit (`engine.AuditRun`) to MLflow (module docstring); returns the MLflow run id. Any MLflow
    failure is one InputError line (the run folder is written already)."""
    import mlflow

    from auditor.models.mlflow import bounded

    try:
        with bounded():  # MLflow's timeout and retries from ours while we log, restored after
            return _log(mlflow, run, tracking_uri)
    except InputError:
        raise
    except Exception as exc:
        first = scrubbed(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot log the audit to MLflow at {_shown(tracking_uri)} ({shorten(first, 200)})",
                         where="--mlflow", fix="check the tracking URI, the run and the credentials MLflow reads "
                                               "from the environment") from None


def _shown(uri: str | None) -> str:
    from auditor.models.mlflow import recorded_uri

    return recorded_uri(uri) or "the active run's tracking URI"


def _log(mlflow: Any, run: Any, tracking_uri: str | None) -> str:
    from mlflow.entities import Metric, RunTag

    from auditor import __version__

    active = mlflow.active_run()
    client = mlflow.MlflowClient() if active is not None else mlflow.MlflowClient(tracking_uri=tracking_uri)
    run_id = active.info.run_id if active is not None else os.environ.get("MLFLOW_RUN_ID")
    started = run_id is None
    if run_id is None:
        created = client.create_run(_experiment(client), run_name=f"audit {run.run_dir.name}"[:250])
        run_id = created.info.run_id
    tags = {"auditor.opinion": run.opinion, "auditor.run_folder": run.run_dir.name, "auditor.version": __version__}
    for finding in run.findings:
        tags[metric_name(f"rule.{finding.pack}.{finding.rule}")] = finding.status
    metrics = {metric_name(name): value for name, value in judged(run.findings, run.results).items()}
    now = int(time.time() * 1000)
    tag_list = [RunTag(key, str(value)[:8000]) for key, value in sorted(tags.items())]
    metric_list = [Metric(key, value, now, 0) for key, value in sorted(metrics.items())]
    for start in range(0, len(tag_list), BATCH_TAGS):
        client.log_batch(run_id, tags=tag_list[start:start + BATCH_TAGS])
    for start in range(0, len(metric_list), BATCH_METRICS):
        client.log_batch(run_id, metrics=metric_list[start:start + BATCH_METRICS])
    client.log_artifacts(run_id, str(run.run_dir), artifact_path=f"auditor/{metric_name(run.run_dir.name)}")
    _link_model(client, run, run_id)
    if started:
        client.set_terminated(run_id)
    return str(run_id)


def _link_model(client: Any, run: Any, run_id: str) -> None:
    """An audited MLflow model and its audit, linked both ways: the audit run names the model (tags, and MLflow 3's
    logged model as the run's model input); the registered version names its latest audit (tags)."""
    from mlflow.entities import RunTag

    logged = ((run.document.inputs or {}).get("model") or {}).get("mlflow")
    if not isinstance(logged, dict):
        return
    tags = {f"auditor.model.{key}": str(logged[key]) for key in ("uri", "registered_model", "version", "run_id",
                                                                  "model_id") if logged.get(key)}
    client.log_batch(run_id, tags=[RunTag(key, value[:5000]) for key, value in sorted(tags.items())])
    if logged.get("model_id"):
        from mlflow.entities import LoggedModelInput

        client.log_inputs(run_id, models=[LoggedModelInput(model_id=str(logged["model_id"]))])
    if logged.get("registered_model") and logged.get("version"):
        for key, value in (("auditor.audit_run", run_id), ("auditor.audit_opinion", run.opinion),
                           ("auditor.audit_folder", run.run_dir.name)):
            client.set_model_version_tag(str(logged["registered_model"]), str(logged["version"]), key, value)


def judged(findings: list[Any], results: dict[str, Any]) -> dict[str, float]:
    """The numbers the rules judged (module docstring), by their names before MLflow's spelling: per rule
    `rule.<pack>.<id>` (and its interval), and the evidence metrics the rules name with their intervals."""
    from auditor.core.metric_names import HIGH, LOW

    reported = {name: value for result in results.values() for name, value in result.metrics.items()}
    out: dict[str, float] = {}

    def add(name: str, value: Any) -> None:
        if isinstance(value, (int, float)) and math.isfinite(value):
            out[name] = float(value)

    for finding in findings:
        rule = f"rule.{finding.pack}.{finding.rule}"
        add(rule, finding.value)
        if finding.interval is not None:
            add(f"{rule}.{LOW}", finding.interval[0])
            add(f"{rule}.{HIGH}", finding.interval[1])
        if finding.metric in reported:
            add(finding.metric, reported[finding.metric])
            for stem in (finding.metric, finding.metric.removesuffix(".mean")):
                if f"{stem}.{LOW}" in reported and f"{stem}.{HIGH}" in reported:
                    add(f"{stem}.{LOW}", reported[f"{stem}.{LOW}"])
                    add(f"{stem}.{HIGH}", reported[f"{stem}.{HIGH}"])
                    break
    return out


def _experiment(client: Any) -> str:
    """$MLFLOW_EXPERIMENT_ID, else $MLFLOW_EXPERIMENT_NAME's (made when missing), else MLflow's default ("0")."""
    if os.environ.get("MLFLOW_EXPERIMENT_ID"):
        return os.environ["MLFLOW_EXPERIMENT_ID"]
    name = os.environ.get("MLFLOW_EXPERIMENT_NAME")
    if not name:
        return "0"
    found = client.get_experiment_by_name(name)
    return str(found.experiment_id) if found is not None else str(client.create_experiment(name))
