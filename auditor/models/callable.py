"""A Python function as the model (`module:function`): runs user code, so only with `trust: true`."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import numpy as np

from auditor.core.errors import InputError
from auditor.models.base import check_scores


class CallableRanker:
    """Scores from `function(X) -> scores`. Not a tree model, so no exact contributions."""

    kind = "callable"

    def __init__(self, function: Any, entry: str, n_features: int | None, source: Path | None = None) -> None:
        self.function = function
        self.entry = entry
        self.n_features = n_features
        self.feature_names = None
        self.source = source  # the module's file: where an error about its scores points

    def predict(self, X: np.ndarray) -> np.ndarray:
        scores = np.asarray(self.function(X), dtype=np.float64).reshape(-1)
        check_scores(scores, X.shape[0], file=self.source or self.entry, where=self.entry.partition(":")[2])
        return scores

    def contributions(self, X: np.ndarray) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "entry": self.entry, "n_features": self.n_features}


def load_callable(entry: str, *, trust: bool, search_path: Path, n_features: int | None,
                  spec_file: Path | None = None) -> CallableRanker:
    if not trust:
        raise InputError(f"the model `{entry}` is Python code that would run with your rights", file=spec_file,
                         where="model.entry", fix="set `model.trust: true` if you trust that code")
    module_name, colon, attr = entry.partition(":")
    if not colon or not module_name or not attr:
        raise InputError(f"`{entry}` is not `module:function`", file=spec_file, where="model.entry",
                         fix="write it as `package.module:function`")
    sys.path.insert(0, str(search_path))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise InputError(f"cannot import module '{module_name}' ({type(exc).__name__}: {exc})", file=spec_file,
                         where="model.entry", fix="check the module name and that it sits next to the spec") from None
    finally:
        sys.path.remove(str(search_path))
    function = getattr(module, attr, None)
    if not callable(function):
        raise InputError(f"'{module_name}' has no function '{attr}'", file=spec_file, where="model.entry",
                         fix="name a function that takes a 2-D array and returns one score per row")
    source = getattr(module, "__file__", None)
    return CallableRanker(function, entry, n_features, Path(source) if source else None)
