"""Model loaders: every kind ends in a `Ranker`. Pickles and Python callables only with explicit trust."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from auditor.models.base import CountingRanker, Ranker

if TYPE_CHECKING:
    from auditor.spec import ModelSpec

__all__ = ["CountingRanker", "Ranker", "load_model"]


def load_model(ref: ModelSpec, *, base_dir: Path, spec_file: Path | None = None) -> Ranker:
    if ref.kind == "callable":
        from auditor.models.callable import load_callable

        return load_callable(ref.entry or "", trust=ref.trust, search_path=base_dir, n_features=None,
                             spec_file=spec_file)
    assert ref.path is not None  # guaranteed by ModelSpec's validator
    if ref.kind == "sklearn":
        from auditor.models.sklearn import load_sklearn

        return load_sklearn(ref.path, trust=ref.trust)
    from auditor.models.lightgbm import load_lightgbm

    return load_lightgbm(ref.path)
