"""Models logged with MLflow (`model: {kind: mlflow, uri: models:/catalogue-ranker/3}`).

The URI is resolved with MLflow — a registered version (`models:/<name>/<version>`, `@<alias>`, `/latest`, a stage),
a logged model (`models:/m-<id>`), a run's artifact (`runs:/<run id>/<path>`), or a folder holding an MLmodel file
— and its artifact folder downloaded into a private temporary folder (a local folder is read where it is). The
MLmodel file names the flavours; the first of `FLAVOURS` whose file is the library's own format is handed to that
kind's loader (`models.load_file`), so it is checked and rehearsed exactly as a file named by `model.path` is.
Nothing is unpickled: a flavour whose file is a pickle or skops archive (LightGBM's scikit-learn API) is refused,
and a model whose only loadable flavour is `python_function` is run through MLflow's pyfunc loader as a `callable`
model, with `trust: true` (it runs the model's code).

MLflow resolves some URIs through its process-wide tracking and registry URIs whatever the caller passes
(`runs:/` to a logged model, `models:/`), so every URI is turned into its storage location here, with a client made
for the spec's tracking URI, and only that location is downloaded.

mlflow is imported here only, on first use: `import auditor.inputs.spec` and the other kinds never load it (~2 s).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
import urllib.parse
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from auditor.core.errors import InputError, shorten
from auditor.core.files import read_bytes, sha256_file
from auditor.core.urls import scrubbed
from auditor.models.base import Ranker
from auditor.models.callable import CallableRanker

if TYPE_CHECKING:
    from auditor.inputs.spec import ModelSpec

EXTRA = "install it: pip install 'auditor[mlflow]'"
MLMODEL = "MLmodel"
MAX_MLMODEL_BYTES = 1 << 20
MAX_ARTIFACT_FILES = 10_000
TEMP_PREFIX = "auditor-mlflow-"
NATIVE = "LightGBM, XGBoost, CatBoost or ONNX"
LOG_NATIVE = "log it with mlflow.lightgbm (a Booster), mlflow.xgboost, mlflow.catboost or mlflow.onnx"
# MLflow's HTTP client while our calls run (`bounded`): its defaults wait 120 s for each request and retry 7 times
# with exponential backoff, minutes for one call to a dead or stalled server
HTTP_BOUNDS = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "20", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
               "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}
# storage MLflow reaches without any timeout (ftplib's default): a silent server hangs the audit
NO_DEADLINE_SCHEMES = ("ftp",)


@dataclass
class LoggedModel:
    """Where a `kind: mlflow` model came from: what evidence.json records (`inputs.model.mlflow`, `to_json`) and the
    local folder its files were read from (`folder`; a temporary one is removed by `close()`, at the latest when
    this object is collected)."""

    uri: str
    tracking_uri: str | None  # as recorded: without user name, password or query
    flavour: str  # the flavour loaded: lightgbm, xgboost, catboost, onnx or python_function
    loaded_as: str  # the model kind that loaded it (callable for python_function)
    file: str | None  # the native file the kind's loader read, relative to the artifact folder
    name: str | None = None  # the registered model and version (models:/ URIs of the registry)
    version: str | None = None
    run_id: str | None = None
    model_id: str | None = None  # MLflow 3's logged model id (m-...)
    artifacts: list[dict[str, Any]] = field(default_factory=list)  # {file, sha256, bytes} of every file, by name
    folder: Path = Path()  # the artifact folder (holds the MLmodel file)
    temporary: Path | None = None  # the temporary folder it was downloaded into (None: a local folder, read in place)
    _cleanup: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.temporary is not None:
            self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.temporary), True)

    def close(self) -> None:
        """Remove the downloaded artifact folder (a local folder named by the URI is left alone)."""
        if self._cleanup is not None:
            self._cleanup()

    def sha256(self, name: str | None) -> str | None:
        return next((a["sha256"] for a in self.artifacts if a["file"] == name), None)

    def to_json(self) -> dict[str, Any]:
        return {"uri": self.uri, "tracking_uri": self.tracking_uri, "flavour": self.flavour,
                "loaded_as": self.loaded_as, "file": self.file, "registered_model": self.name,
                "version": self.version, "run_id": self.run_id, "model_id": self.model_id,
                "artifacts": self.artifacts}

    def filled(self, spec: ModelSpec) -> ModelSpec:
        """The spec's model with `name` and `version` taken from the registry where the spec leaves them out."""
        update: dict[str, str] = {}
        if spec.name is None and self.name and len(self.name) <= 200 and re.fullmatch(r"[^/\s][^/]*", self.name):
            update["name"] = self.name
        if spec.version is None and self.version:
            update["version"] = self.version
        return spec.model_copy(update=update) if update else spec


def load_logged(ref: ModelSpec, *, base_dir: Path, spec_file: Path | None = None) -> tuple[Ranker, LoggedModel]:
    """The model a `kind: mlflow` spec names, and where it came from (module docstring). Raises InputError naming
    the spec and `model.uri` (or `model.tracking_uri`) with the fix."""
    assert ref.uri is not None  # guaranteed by ModelSpec's validator
    mlflow = _mlflow(spec_file)
    uri = ref.uri.strip()
    local = _local_folder(uri, base_dir)
    tracking = None
    if local is None:
        tracking = tracking_uri(ref.tracking_uri, base_dir=base_dir, spec_file=spec_file)
        if tracking is None and urllib.parse.urlsplit(uri).scheme in ("models", "runs"):
            raise InputError("a models:/ or runs:/ URI needs the MLflow tracking server or store it is registered "
                             "in", file=spec_file, where="model.uri",
                             fix="set `model.tracking_uri` (e.g. sqlite:///mlflow.db, https://mlflow.example) or "
                                 "$MLFLOW_TRACKING_URI")
    facts: dict[str, str | None] = {}
    if local is not None:
        if not (local / MLMODEL).is_file():
            what = "no such folder" if not local.exists() else f"no {MLMODEL} file in this folder"
            raise InputError(f"{what}: {shorten(str(local))}", file=spec_file, where="model.uri",
                             fix="name the folder MLflow saved the model to (it holds an MLmodel file), or a "
                                 "models:/ or runs:/ URI")
        folder, temporary = local, None
    else:
        _check_scheme(uri, uri=uri, spec_file=spec_file)
        with bounded():
            location, facts = _resolve(mlflow, uri, tracking, spec_file=spec_file)
            _check_scheme(location, uri=uri, spec_file=spec_file)  # the registry's answer, checked as the spec's URI
            temporary = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
            try:
                folder = _download(mlflow, location, temporary, tracking, uri=uri, spec_file=spec_file)
            except BaseException:
                shutil.rmtree(temporary, ignore_errors=True)
                raise
    try:
        ranker, logged = _open(folder, ref, uri=uri, tracking=tracking, facts=facts, temporary=temporary,
                               spec_file=spec_file)
    except BaseException:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        raise
    return ranker, logged


# --- MLflow itself ------------------------------------------------------------------------------------------------

def _mlflow(spec_file: Path | None) -> Any:
    try:
        import mlflow
    except ImportError:
        raise InputError("kind `mlflow` needs the mlflow package, which is not installed", file=spec_file,
                         where="model.kind", fix=EXTRA) from None
    quiet()
    return mlflow


def quiet() -> None:
    """MLflow's INFO lines (database set-up) and download bars stay off the terminal unless asked for
    ($MLFLOW_LOGGING_LEVEL, $MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR)."""
    if not os.environ.get("MLFLOW_LOGGING_LEVEL"):
        logging.getLogger("mlflow").setLevel(logging.WARNING)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


@contextlib.contextmanager
def bounded() -> Iterator[None]:
    """MLflow's HTTP timeout, retries and backoff set from ours (HTTP_BOUNDS) while our calls run, and restored
    after them: without this one call to a stalled tracking server or artifact store waits minutes. A value the
    environment already sets is the person's choice and kept."""
    import logging

    saved = {name: os.environ.get(name) for name in HTTP_BOUNDS}
    for name, value in HTTP_BOUNDS.items():
        if saved[name] is None:
            os.environ[name] = value
    pool = logging.getLogger("urllib3.connectionpool")  # its retry warnings print the URL with its token
    level = pool.level
    pool.setLevel(logging.ERROR)
    try:
        yield
    finally:
        pool.setLevel(level)
        for name, before in saved.items():
            if before is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before


def _check_scheme(location: str, *, uri: str, spec_file: Path | None) -> None:
    """Refuse storage MLflow would reach without a deadline (NO_DEADLINE_SCHEMES); MLflow itself refuses the
    schemes it has no client for."""
    scheme = urllib.parse.urlsplit(location).scheme.lower()
    if scheme in NO_DEADLINE_SCHEMES:
        where = "" if location == uri else f" (where {shorten(uri)} is stored)"
        raise InputError(f"MLflow reads {scheme}:// storage{where} without any timeout, so a silent server would "
                         "hang the audit", file=spec_file, where="model.uri",
                         fix="copy the model to storage MLflow reaches over HTTP(S), S3, GCS, Azure or a local "
                             "folder, and name it there")


def _local_folder(uri: str, base_dir: Path) -> Path | None:
    """The folder a local URI names (a path, relative to the spec's folder, or file:), else None."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme == "file":
        return Path(urllib.parse.unquote(parts.path))
    if parts.scheme and len(parts.scheme) > 1:  # models:, runs:, s3:, ... (a one-letter scheme is a drive)
        return None
    path = Path(uri).expanduser()
    return path if path.is_absolute() else base_dir / path


def tracking_uri(given: str | None, *, base_dir: Path, spec_file: Path | None, must_exist: bool = True) -> str | None:
    """The tracking URI: the spec's `model.tracking_uri` (`given`; a relative SQLite or folder path starts from the
    spec's folder), else $MLFLOW_TRACKING_URI, else None. With `must_exist`, a local store must exist: MLflow would
    make an empty one, and the model would be 'not found' in it."""
    where = "model.tracking_uri" if given else "model.uri"
    chosen = given or os.environ.get("MLFLOW_TRACKING_URI") or None
    if chosen is None:
        return None
    base = base_dir if given else Path.cwd()
    parts = urllib.parse.urlsplit(chosen)
    store: Path | None = None
    if parts.scheme == "sqlite" and chosen.startswith("sqlite:///") and chosen != "sqlite:///:memory:":
        store = Path(urllib.parse.unquote(chosen[len("sqlite:///"):].split("?")[0]))
        if not store.is_absolute():
            store = base / store
            chosen = f"sqlite:///{store}"
    elif parts.scheme == "file" or not parts.scheme or len(parts.scheme) == 1:
        store = Path(urllib.parse.unquote(parts.path)) if parts.scheme == "file" else Path(chosen).expanduser()
        if not store.is_absolute():
            store = base / store
        chosen = str(store)
    if must_exist and store is not None and not store.exists():
        source = "" if given else " ($MLFLOW_TRACKING_URI)"
        raise InputError(f"no MLflow store at {shorten(str(store))}{source}", file=spec_file, where=where,
                         fix="name the tracking store the model is registered in (relative paths start from the "
                             "spec's folder)")
    return chosen


def recorded_uri(uri: str | None) -> str | None:
    """A URI as evidence.json keeps it: without user name, password, query or fragment (tokens travel there)."""
    if uri is None:
        return None
    netloc = urllib.parse.urlsplit(uri).netloc
    out = uri.split("#")[0].split("?")[0]
    return out.replace(netloc, netloc.rpartition("@")[2], 1) if "@" in netloc else out


@contextlib.contextmanager
def _mlflow_errors(uri: str, tracking: str | None, spec_file: Path | None) -> Iterator[None]:
    """Anything MLflow raises while resolving or downloading: one InputError line naming the URI."""
    try:
        yield
    except InputError:
        raise
    except Exception as exc:
        first = scrubbed(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
        raise InputError(f"MLflow cannot fetch {shorten(uri)} from {recorded_uri(tracking)} "
                         f"({shorten(first, 200)})", file=spec_file, where="model.uri",
                         fix="check the URI, `model.tracking_uri` and the credentials MLflow reads from the "
                             "environment") from None


def _client(mlflow: Any, tracking: str | None) -> Any:
    registry = os.environ.get("MLFLOW_REGISTRY_URI") or tracking
    return mlflow.MlflowClient(tracking_uri=tracking, registry_uri=registry)


def _missing(exc: Exception) -> bool:
    return getattr(exc, "error_code", None) == "RESOURCE_DOES_NOT_EXIST"


def _resolve(mlflow: Any, uri: str, tracking: str | None, *,
             spec_file: Path | None) -> tuple[str, dict[str, str | None]]:
    """The storage location of the model's artifact folder, and what the URI resolved to (registered name,
    version, run id, logged model id)."""
    parts = urllib.parse.urlsplit(uri)
    with _mlflow_errors(uri, tracking, spec_file):
        client = _client(mlflow, tracking)
        if parts.scheme == "models":
            return _registered(client, uri, parts.path.lstrip("/"), tracking, spec_file)
        if parts.scheme == "runs":
            return _run_artifact(client, uri, parts.path.lstrip("/"), tracking, spec_file)
    return uri, {}  # s3://, gs://, mlflow-artifacts:/, ...: a storage location already


def _registered(client: Any, uri: str, path: str, tracking: str | None,
                spec_file: Path | None) -> tuple[str, dict[str, str | None]]:
    segments = path.split("/")
    if len(segments) == 1 and "@" not in segments[0] and segments[0].startswith("m-"):  # a logged model's id
        try:
            logged = client.get_logged_model(segments[0])
        except Exception as exc:
            if _missing(exc):
                raise InputError(f"no logged model '{shorten(segments[0], 80)}' at {recorded_uri(tracking)}",
                                 file=spec_file, where="model.uri", fix="check the model id (or name a registered "
                                 "version: models:/<name>/<version>)") from None
            raise
        return logged.artifact_location, {"model_id": logged.model_id, "run_id": logged.source_run_id}
    alias: str | None = None
    if len(segments) == 2 and segments[0] and segments[1]:
        name, selector = segments
    elif len(segments) == 1 and "@" in segments[0]:
        name, _, alias = segments[0].rpartition("@")
        selector = ""
    else:
        raise InputError(f"'{shorten(uri)}' is not a registered model's URI", file=spec_file, where="model.uri",
                         fix="write models:/<name>/<version>, models:/<name>@<alias> or models:/<name>/latest")
    try:
        client.get_registered_model(name)
    except Exception as exc:
        if _missing(exc):
            known = [m.name for m in client.search_registered_models(max_results=20)]
            raise InputError(f"no registered model '{shorten(name, 80)}' at {recorded_uri(tracking)}",
                             file=spec_file, where="model.uri",
                             fix=f"check the name (registered there: {_listed(known)})") from None
        raise
    versions = sorted((str(v.version) for v in client.search_model_versions(f"name = '{_quoted(name)}'")),
                      key=lambda v: int(v) if v.isdigit() else -1)
    try:
        if alias is not None:
            found = client.get_model_version_by_alias(name, alias)
        elif selector.isdigit():
            found = client.get_model_version(name, selector)
        elif selector.lower() == "latest":
            if not versions:
                raise InputError(f"the registered model '{shorten(name, 80)}' has no version", file=spec_file,
                                 where="model.uri", fix="register a version of it first")
            found = client.get_model_version(name, versions[-1])
        else:  # a stage (MLflow 2's Staging, Production): the latest version in it
            with _no_warnings():
                in_stage = client.get_latest_versions(name, stages=[selector])
            if not in_stage:
                raise InputError(f"the registered model '{shorten(name, 80)}' has no version in stage "
                                 f"'{shorten(selector, 40)}'", file=spec_file, where="model.uri",
                                 fix=f"name a version (it has {_listed(versions)}) or an alias")
            found = in_stage[0]
    except InputError:
        raise
    except Exception as exc:
        if _missing(exc) or (alias is not None and "alias" in str(exc).lower()):
            what = f"alias '{shorten(alias, 40)}'" if alias is not None else f"version {shorten(selector, 40)}"
            raise InputError(f"the registered model '{shorten(name, 80)}' has no {what} at "
                             f"{recorded_uri(tracking)}", file=spec_file, where="model.uri",
                             fix=f"name one of its versions: {_listed(versions)}") from None
        raise
    version = str(found.version)
    location = client.get_model_version_download_uri(name, version)
    return location, {"name": name, "version": version, "run_id": found.run_id,
                      "model_id": getattr(found, "model_id", None)}


def _run_artifact(client: Any, uri: str, path: str, tracking: str | None,
                  spec_file: Path | None) -> tuple[str, dict[str, str | None]]:
    run_id, _, artifact = path.partition("/")
    artifact = artifact.strip("/")
    if not run_id or not artifact:
        raise InputError(f"'{shorten(uri)}' names no artifact of a run", file=spec_file, where="model.uri",
                         fix="write runs:/<run id>/<path of the model in the run> (e.g. runs:/<id>/model)")
    try:
        run = client.get_run(run_id)
    except Exception as exc:
        if _missing(exc):
            raise InputError(f"no run '{shorten(run_id, 80)}' at {recorded_uri(tracking)}", file=spec_file,
                             where="model.uri", fix="check the run id") from None
        raise
    name, _, rest = artifact.partition("/")
    with contextlib.suppress(Exception):  # MLflow 3 logs a model beside the run, under its own id
        for logged in client.search_logged_models(experiment_ids=[run.info.experiment_id],
                                                  filter_string=f"name = '{_quoted(name)}'"):
            if logged.source_run_id == run_id:
                location = logged.artifact_location.rstrip("/") + (f"/{rest}" if rest else "")
                return location, {"run_id": run_id, "model_id": logged.model_id}
    return f"{run.info.artifact_uri.rstrip('/')}/{artifact}", {"run_id": run_id}


def _download(mlflow: Any, location: str, into: Path, tracking: str | None, *, uri: str,
              spec_file: Path | None) -> Path:
    """The artifact folder at `location`, copied under `into` (a new private temporary folder)."""
    with _mlflow_errors(uri, tracking, spec_file):
        got = Path(mlflow.artifacts.download_artifacts(artifact_uri=location, dst_path=str(into),
                                                       tracking_uri=tracking))
    if got != into and into not in got.parents:  # MLflow handed back a folder of its own: copy it under `into`
        shutil.copytree(got, into / "model", symlinks=True)
        got = into / "model"
    if not (got / MLMODEL).is_file():
        raise InputError(f"{shorten(uri)} holds no {MLMODEL} file: it is not a model MLflow logged",
                         file=spec_file, where="model.uri",
                         fix="name the model's folder (runs:/<run id>/<model path>) or a registered version")
    return got


@contextlib.contextmanager
def _no_warnings() -> Iterator[None]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _quoted(name: str) -> str:
    return name.replace("\\", "\\\\").replace("'", "\\'")


def _listed(items: list[str], most: int = 10) -> str:
    if not items:
        return "none"
    shown = ", ".join(shorten(item, 60) for item in items[-most:])
    return shown if len(items) <= most else f"… {shown} ({len(items)} in all)"


# --- the artifact folder ------------------------------------------------------------------------------------------

FLAVOURS = ("lightgbm", "xgboost", "catboost", "onnx")  # native flavours, tried in this order


def _open(folder: Path, ref: ModelSpec, *, uri: str, tracking: str | None, facts: dict[str, str | None],
          temporary: Path | None, spec_file: Path | None) -> tuple[Ranker, LoggedModel]:
    artifacts = _artifacts(folder, uri=uri, spec_file=spec_file)
    mlmodel = _read_mlmodel(folder / MLMODEL, uri=uri, spec_file=spec_file)
    flavours = mlmodel.get("flavors")
    if not isinstance(flavours, dict) or not flavours:
        raise InputError(f"the {MLMODEL} file of {shorten(uri)} lists no flavours", file=spec_file,
                         where="model.uri", fix="name a model logged with MLflow (mlflow.<flavour>.log_model)")
    run_id = facts.get("run_id") or _text(mlmodel.get("run_id"))
    model_id = facts.get("model_id") or _text(mlmodel.get("model_id"))

    def logged(flavour: str, loaded_as: str, file: str | None) -> LoggedModel:
        return LoggedModel(uri=uri, tracking_uri=recorded_uri(tracking), flavour=flavour, loaded_as=loaded_as,
                           file=file, name=facts.get("name"), version=facts.get("version"), run_id=run_id,
                           model_id=model_id, artifacts=artifacts, folder=folder, temporary=temporary)

    refusal: InputError | None = None
    for flavour in FLAVOURS:
        conf = flavours.get(flavour)
        if conf is None:
            continue
        found = _native_file(flavour, conf if isinstance(conf, dict) else {}, uri=uri, spec_file=spec_file)
        if isinstance(found, InputError):
            refusal = refusal or found
            continue
        kind, relative = found
        path = _inside(folder, relative, uri=uri, flavour=flavour, spec_file=spec_file)
        return _load_native(kind, path, ref.trust, relative=relative, uri=uri, spec_file=spec_file), \
            logged(flavour, kind, relative)
    if "python_function" in flavours and (refusal is None or ref.trust):
        listed = ", ".join(sorted(str(f) for f in flavours))
        if not ref.trust:
            raise InputError(f"{shorten(uri)} has no {NATIVE} flavour this tool reads (its flavours: "
                             f"{shorten(listed, 120)}); its python_function flavour runs the model's own code "
                             "(unpickles it) with your rights", file=spec_file, where="model.uri",
                             fix=f"set `model.trust: true` if you trust that code, or {LOG_NATIVE}")
        return _load_pyfunc(folder, uri=uri, spec_file=spec_file), logged("python_function", "callable", None)
    if refusal is not None:
        raise refusal
    listed = ", ".join(sorted(str(f) for f in flavours))
    raise InputError(f"{shorten(uri)} has no flavour this tool loads (its flavours: {shorten(listed, 120)})",
                     file=spec_file, where="model.uri",
                     fix=f"{LOG_NATIVE}, or with a python_function flavour and `model.trust: true`")


def _artifacts(folder: Path, *, uri: str, spec_file: Path | None) -> list[dict[str, Any]]:
    """{file, sha256, bytes} of every regular file under the artifact folder, by name (links not followed)."""
    out: list[dict[str, Any]] = []
    for parent, folders, files in os.walk(folder, followlinks=False):
        folders.sort()
        for name in sorted(files):
            path = Path(parent, name)
            if path.is_symlink() or not path.is_file():
                continue
            if len(out) >= MAX_ARTIFACT_FILES:
                raise InputError(f"{shorten(uri)} holds more than {MAX_ARTIFACT_FILES:,} files: not a model's "
                                 "folder", file=spec_file, where="model.uri", fix="name the model's own folder")
            out.append({"file": path.relative_to(folder).as_posix(), "sha256": sha256_file(path),
                        "bytes": path.stat().st_size})
    return sorted(out, key=lambda a: str(a["file"]))


def _read_mlmodel(path: Path, *, uri: str, spec_file: Path | None) -> dict[str, Any]:
    from auditor.core.yaml_io import parse_yaml

    data = read_bytes(path, limit=MAX_MLMODEL_BYTES, what="MLmodel file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"the {MLMODEL} file of {shorten(uri)} is not UTF-8 text", file=spec_file,
                         where="model.uri", fix="name a model logged with MLflow") from None
    try:
        doc, _ = parse_yaml(text, Path(MLMODEL))
    except InputError as exc:
        raise InputError(f"the {MLMODEL} file of {shorten(uri)}: {exc.problem}", file=spec_file,
                         where="model.uri", fix="name a model logged with MLflow") from None
    if not isinstance(doc, dict):
        raise InputError(f"the {MLMODEL} file of {shorten(uri)} is not a mapping", file=spec_file,
                         where="model.uri", fix="name a model logged with MLflow")
    return doc


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, (str, int)) and str(value) else None


def _native_file(flavour: str, conf: dict[str, Any], *, uri: str,
                 spec_file: Path | None) -> tuple[str, str] | InputError:
    """(kind, file) of a flavour whose file is its library's own format, or why not (an InputError to raise when
    no other flavour loads)."""
    def refused(problem: str, fix: str) -> InputError:
        return InputError(f"{shorten(uri)}: {problem}", file=spec_file, where="model.uri", fix=fix)

    data = conf.get("data")
    if flavour == "lightgbm":
        model_class = str(conf.get("model_class", "lightgbm.basic.Booster"))
        if model_class != "lightgbm.basic.Booster":
            fmt = conf.get("serialization_format", "pickle")
            return refused(f"its lightgbm flavour holds a {model_class.rpartition('.')[2]} (LightGBM's "
                           f"scikit-learn API) serialised as {fmt}, not LightGBM's model file, and this tool does "
                           "not unpickle models",
                           "log its booster instead: mlflow.lightgbm.log_model(model.booster_, ...); or set "
                           "`model.trust: true` to run its python_function flavour")
        return "lightgbm", str(data or "model.lgb")
    if flavour == "xgboost":
        fmt = str(conf.get("model_format") or Path(str(data or "model.xgb")).suffix.lstrip("."))
        if fmt not in ("json", "ubj"):
            return refused(f"its xgboost flavour is saved in XGBoost's legacy '{fmt}' format, which XGBoost 3 no "
                           "longer reads", "log it again with mlflow.xgboost.log_model(model, ..., "
                           "model_format='ubj') (or 'json')")
        return "xgboost", str(data or f"model.{fmt}")
    if flavour == "catboost":
        fmt = str(conf.get("save_format", "cbm"))
        if fmt not in ("cbm", "json"):
            return refused(f"its catboost flavour is saved as '{fmt}', not CatBoost's .cbm or JSON model",
                           "log it again with mlflow.catboost.log_model(model, ...) (format cbm, the default)")
        return "catboost", str(data or "model.cb")
    return "onnx", str(data or "model.onnx")


def _inside(folder: Path, relative: str, *, uri: str, flavour: str, spec_file: Path | None) -> Path:
    """The flavour's file: a regular file inside the artifact folder (an MLmodel naming `/etc/...` or `../x` reads
    nothing outside it)."""
    path = (folder / relative).resolve()
    if Path(relative).is_absolute() or folder.resolve() not in path.parents or not path.is_file():
        raise InputError(f"{shorten(uri)}: the {flavour} flavour's file '{shorten(relative, 80)}' is not a file "
                         "in the model's folder", file=spec_file, where="model.uri",
                         fix="log the model again with MLflow (its MLmodel names a file beside it)")
    return path


def _load_native(kind: str, path: Path, trust: bool, *, relative: str, uri: str, spec_file: Path | None) -> Ranker:
    """The kind's own loader on the flavour's file; its error names the URI and the file inside it."""
    from auditor.models import load_file

    try:
        return load_file(kind, path, trust)  # type: ignore[arg-type]
    except InputError as exc:
        fix = exc.fix
        if kind == "onnx" and "external file" in exc.problem:
            fix = "log it with its tensors inside: mlflow.onnx.log_model(model, ..., save_as_external_data=False)"
        where = f":{exc.where}" if exc.where else ""
        raise InputError(f"{shorten(uri)}, file {relative}{where}: {exc.problem}", file=spec_file,
                         where="model.uri", fix=fix) from None


# --- python_function: the model's own code, with trust --------------------------------------------------------------

class PyfuncRanker(CallableRanker):
    """An MLflow python_function model as a callable model: its `predict` on a DataFrame with the signature's
    column names (when it has them), else on the array."""

    def __init__(self, model: Any, uri: str, names: list[str] | None) -> None:
        super().__init__(self._score, f"mlflow.pyfunc:{uri}", len(names) if names else None)
        self.model = model
        self.uri = uri
        self.feature_names = names  # type: ignore[assignment]
        self.loader = str(getattr(model.metadata, "flavors", {}).get("python_function", {}).get("loader_module")
                          or "")

    def _score(self, X: np.ndarray) -> Any:
        if self.feature_names:
            import pandas as pd

            return self.model.predict(pd.DataFrame(X, columns=self.feature_names))
        return self.model.predict(X)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "flavour": "python_function", "loader_module": self.loader,
                "n_features": self.n_features}


def _load_pyfunc(folder: Path, *, uri: str, spec_file: Path | None) -> PyfuncRanker:
    import mlflow.pyfunc

    try:
        model = mlflow.pyfunc.load_model(str(folder))
    except Exception as exc:
        first = scrubbed(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
        raise InputError(f"MLflow cannot load the python_function flavour of {shorten(uri)} "
                         f"({shorten(first, 200)})", file=spec_file, where="model.uri",
                         fix="install what the model needs (its requirements.txt) in this environment") from None
    names = None
    with contextlib.suppress(Exception):
        schema = model.metadata.get_input_schema()
        if schema is not None and schema.has_input_names():
            names = [str(n) for n in schema.input_names()]
    return PyfuncRanker(model, uri, names)
