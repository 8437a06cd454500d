"""Model loaders: every kind ends in a `Ranker`. Pickles and Python callables only with explicit trust.

`KINDS` is the registry: each model kind, the file suffixes that name it unambiguously, and its loader. The spec's
`model.kind` choices, the inference from a file name and `auditor init` read it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.core.errors import InputError
from auditor.models.base import CountingRanker, Ranker

if TYPE_CHECKING:
    from auditor.inputs.spec import ModelKindName, ModelSpec
    from auditor.models.mlflow import LoggedModel

__all__ = ["KINDS", "CountingRanker", "Ranker", "kind_from_file", "kind_from_suffix", "load_file", "load_model",
           "open_model"]


@dataclass(frozen=True)
class ModelKind:
    name: ModelKindName
    label: str
    suffixes: tuple[str, ...]  # file suffixes that name this kind alone (`.json` names none: several write it)
    load: Callable[[Path, bool], Ranker] | None  # (path, trust) -> Ranker; None for `mlflow`, `callable` (no file)


def _lightgbm(path: Path, trust: bool) -> Ranker:
    from auditor.models.lightgbm import load_lightgbm

    return load_lightgbm(path)


def _sklearn(path: Path, trust: bool) -> Ranker:
    from auditor.models.sklearn import load_sklearn

    return load_sklearn(path, trust=trust)


def _xgboost(path: Path, trust: bool) -> Ranker:
    from auditor.models.xgboost import load_xgboost

    return load_xgboost(path)


def _catboost(path: Path, trust: bool) -> Ranker:
    from auditor.models.catboost import load_catboost

    return load_catboost(path)


def _onnx(path: Path, trust: bool) -> Ranker:
    from auditor.models.onnx import load_onnx

    return load_onnx(path)


KINDS: dict[str, ModelKind] = {kind.name: kind for kind in (
    ModelKind("lightgbm", "LightGBM text model or JSON dump", (".txt", ".model", ".lgb"), _lightgbm),
    ModelKind("sklearn", "scikit-learn tree model (skops; pickle with trust)", (".skops", ".pkl", ".pickle",
                                                                                ".joblib"), _sklearn),
    ModelKind("xgboost", "XGBoost JSON or UBJSON model", (".ubj", ".bst"), _xgboost),
    ModelKind("catboost", "CatBoost .cbm model or JSON export", (".cbm",), _catboost),
    ModelKind("onnx", "ONNX graph (run with ONNX Runtime on CPU)", (".onnx",), _onnx),
    ModelKind("mlflow", "a model logged with MLflow (models:/, runs:/ or its folder): its LightGBM, XGBoost, "
                        "CatBoost or ONNX file", (), None),
    ModelKind("callable", "Python function module:function (with trust)", (), None),
)}


def kind_from_suffix(path: Path) -> ModelKindName | None:
    """The kind a file name alone says (`.json` says `lightgbm`, as before other kinds existed; a file's content
    tells the JSON kinds apart: `kind_from_file`)."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "lightgbm"
    return next((kind.name for kind in KINDS.values() if suffix in kind.suffixes), None)


# `kind_from_file`: a key in the first kilobytes of a JSON model, and the kind it gives away (first match wins).
_JSON_MARKS: tuple[tuple[bytes, ModelKindName], ...] = (
    (b'"learner"', "xgboost"), (b'"features_info"', "catboost"), (b'"oblivious_trees"', "catboost"),
    (b'"tree_info"', "lightgbm"), (b'"name"', "lightgbm"))


def kind_from_file(path: Path) -> ModelKindName | None:
    """The kind by the file's name, and for `.json` by its first kilobytes: XGBoost's model starts with a `learner`
    object, CatBoost's export with `features_info`, LightGBM's dump with `name: tree`. For `auditor init`."""
    if path.suffix.lower() != ".json":
        return kind_from_suffix(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return None
    for key, kind in _JSON_MARKS:
        if key in head:
            return kind
    return "lightgbm"


def load_model(ref: ModelSpec, *, base_dir: Path, spec_file: Path | None = None) -> Ranker:
    return open_model(ref, base_dir=base_dir, spec_file=spec_file)[0]


def open_model(ref: ModelSpec, *, base_dir: Path,
               spec_file: Path | None = None) -> tuple[Ranker, LoggedModel | None]:
    """The model a spec names and, for kind `mlflow`, where it came from (`models/mlflow.py`: the URI resolved, the
    artifact files and their hashes; `close()` removes the downloaded folder)."""
    if ref.kind == "mlflow":
        from auditor.models.mlflow import load_logged

        ranker, logged = load_logged(ref, base_dir=base_dir, spec_file=spec_file)
        return ranker, logged
    if ref.kind == "callable":
        from auditor.models.callable import load_callable

        return load_callable(ref.entry or "", trust=ref.trust, search_path=base_dir, n_features=None,
                             spec_file=spec_file), None
    assert ref.path is not None and ref.kind is not None  # guaranteed by ModelSpec's validator
    return load_file(ref.kind, ref.path, ref.trust), None


def load_file(kind: ModelKindName, path: Path, trust: bool) -> Ranker:
    """A model file of a kind that has one (not `mlflow` or `callable`): checked, rehearsed and loaded."""
    load = KINDS[kind].load
    assert load is not None  # only `mlflow` and `callable` have no file to load
    ranker = load(path, trust)
    if getattr(ranker, "source", None) is None:  # the file an error about its scores names (`base.check_scores`)
        setattr(ranker, "source", path)  # noqa: B010 (an optional attribute: not part of the Ranker protocol)
    _check_names(ranker.feature_names, path)
    return ranker


def _check_names(names: list[str] | None, path: Path) -> None:
    """A model that names a feature twice is refused: data columns are matched to the model's features by name, so
    `price` named in the place of `n_reviews` fed the price column to both, without a word."""
    first: dict[str, int] = {}
    for index, name in enumerate(names or []):
        if name in first:
            raise InputError(f"the model names feature '{name[:40]}' twice (features {first[name] + 1} and "
                             f"{index + 1})", file=path,
                             fix="save the model with one name per feature (the data's columns are matched to "
                                 "them by name)")
        first[name] = index
