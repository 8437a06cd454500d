"""The `Ranker` protocol every model loader returns, and a wrapper that counts model rows evaluated."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from auditor.core.errors import InputError

MAX_SCORE = 1e30  # |score| beyond this is refused: far above any ranker's, and sums of squares of millions of such
# scores stay finite in float64 (XGBoost sums its trees in float32, whose largest number is 3.4e38)
SCORE_FIX = ("the model must give every row a finite score: check the data for values it cannot take (missing "
             "values, values far outside its training range) and the model for divisions or logarithms of features")


@runtime_checkable
class Ranker(Protocol):
    """A scoring function over documents. Scores are only comparable inside one query."""

    @property
    def kind(self) -> str: ...

    @property
    def n_features(self) -> int | None: ...

    @property
    def feature_names(self) -> list[str] | None: ...

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Raw scores, one per row of X (float64)."""
        ...

    def contributions(self, X: np.ndarray) -> np.ndarray | None:
        """Exact TreeSHAP values (n_rows × (n_features + 1), last column the bias), or None if not a tree model."""
        ...

    def describe(self) -> dict[str, Any]:
        """Identity facts for the report: kind, trees, objective, ..."""
        ...


class CountingRanker:
    """Wraps a Ranker and counts the rows it scores: the model call is the cost of an audit, so we report it."""

    def __init__(self, ranker: Ranker) -> None:
        self.inner = ranker
        self.rows_evaluated = 0
        self._count_lock = threading.Lock()  # threads of one batch may score at once

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_count_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._count_lock = threading.Lock()

    @property
    def concurrent_predict(self) -> bool:
        """Whether the model may score from several threads at once (models say so; unknown ones may not)."""
        return bool(getattr(self.inner, "concurrent_predict", False))

    @property
    def kind(self) -> str:
        return self.inner.kind

    @property
    def n_features(self) -> int | None:
        return self.inner.n_features

    @property
    def feature_names(self) -> list[str] | None:
        return self.inner.feature_names

    def predict(self, X: np.ndarray) -> np.ndarray:
        with self._count_lock:
            self.rows_evaluated += int(X.shape[0])
        scores = np.asarray(self.inner.predict(X), dtype=np.float64).reshape(-1)
        check_scores(scores, int(X.shape[0]), file=getattr(self.inner, "source", None))
        return scores

    def exact_trees(self) -> Any:
        """The model's trees in array form when they score as the model does **bit for bit** (probe rows at, just
        below and just above every threshold, 0 and NaN), else None; decided once. Masked rows are then scored off
        the trees (`auditor.scoring.masked_scoring`) instead of being built and predicted. AUDITOR_MASKED_ROWS=predict
        turns it off (benchmarks compare the two)."""
        if "_exact_trees" not in self.__dict__:
            self._exact_trees = None if os.environ.get("AUDITOR_MASKED_ROWS") == "predict" else \
                decided_trees(self.inner)
        return self._exact_trees

    def count(self, rows: int) -> None:
        """Count rows scored without `predict` (masked rows read off the trees): each is one model row."""
        with self._count_lock:
            self.rows_evaluated += int(rows)

    def contributions(self, X: np.ndarray) -> np.ndarray | None:
        out = self.inner.contributions(X)
        if out is not None:
            with self._count_lock:
                self.rows_evaluated += int(X.shape[0])
        return out

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


# Each executor task wraps the process's one model in a new counting wrapper: the trees are decided once per model
# (dumping a LightGBM model and probing its trees costs ~0.07 s at 150 trees, and a wide audit runs dozens of tasks).
_DECIDED: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_DECIDED_LOCK = threading.Lock()


def decided_trees(ranker: Any) -> Any:
    """`bit_identical_trees(ranker)`, once per model object (kept while the model lives)."""
    with _DECIDED_LOCK:
        try:
            if ranker in _DECIDED:
                return _DECIDED[ranker]
        except TypeError:  # a model that cannot be weakly referenced or hashed: decided by each wrapper
            return bit_identical_trees(ranker)
        _DECIDED[ranker] = found = bit_identical_trees(ranker)
        return found


def bit_identical_trees(ranker: Any) -> Any:
    """`ranker.tree_ensemble()` if it reproduces `ranker.predict` exactly on probe rows, else None."""
    from auditor.scoring.masked_scoring import masked_ensemble, masked_scores
    from auditor.scoring.trees import probe_rows

    ensemble = masked_ensemble(ranker)
    if ensemble is None or ensemble.n_features != ranker.n_features:
        return None
    rows = probe_rows(ensemble, np.random.default_rng(0))
    try:  # every feature kept: the rows themselves, scored by the kernel the audit will use
        ours = masked_scores(ensemble, rows, rows[0], np.ones((1, rows.shape[1]), dtype=bool))[0]
        same = np.array_equal(np.asarray(ranker.predict(rows), dtype=np.float64).reshape(-1), ours)
    except Exception:  # a model that cannot score the probe rows keeps its own predict
        return None
    return ensemble if same else None


BOUND_FIX = "retrain the model, or save it again if the file was edited (a ranker's leaf values are small numbers)"


def bound_problem(bound: float, how: str) -> str:
    """The refusal of a tree model whose scores the sum of each tree's largest |leaf| does not keep in range."""
    return f"a score can reach {bound:.3g} ({how}), beyond ±{MAX_SCORE:.0e}: the model's scores may be infinite"


def check_scores(scores: np.ndarray, rows: int, *, file: Any, where: str | None = None) -> None:
    """InputError naming the model's file unless there is one finite score within ±MAX_SCORE per row: a NaN or an
    infinite score ranks nothing, and every measure computed from it would be silently meaningless."""
    if scores.shape[0] != rows:
        raise InputError(f"the model returned {scores.shape[0]} scores for {rows} rows", file=file, where=where,
                         fix="export or write the model to give one score per input row (output [rows] or "
                             "[rows, 1])")
    bad = np.flatnonzero(~(np.abs(scores) <= MAX_SCORE))  # NaN compares false
    if bad.size:
        raise InputError(f"the model returned {scores[bad[0]]:.6g} for {bad.size} of {rows} rows (first: row "
                         f"{bad[0]}); scores must be finite and within ±{MAX_SCORE:.0e}", file=file, where=where,
                         fix=SCORE_FIX)


def thread_count() -> int:
    """Threads one model call may use: the calling thread's budget, one inside an executor's worker, else every
    CPU this process may run on (`auditor.evidence.executor.thread_budget`)."""
    from auditor.core.threads import thread_budget

    return thread_budget()


AGREEMENT = 1e-9  # array form and library agree to this, relative to max(1, |score|)
MAX_CELLS = 32_000_000  # values (rows × features) built for one predict call: 256 MB of float64


def rows_per_call(n_features: int, max_rows: int = 2_000_000, cells: int | None = None) -> int:
    """Rows one batched predict may take: `max_rows`, fewer on wide data, so that the rows built for it stay
    within `cells` values (default MAX_CELLS; 2M rows of 700 features would be 11 GB: a worker was killed for it)."""
    budget = MAX_CELLS if cells is None else int(cells)
    return max(1, min(int(max_rows), budget // max(int(n_features), 1)))


def checked_ensemble(build: Callable[[], Any], predict: Callable[[np.ndarray], np.ndarray], *, library: str,
                     rows: int = 512) -> tuple[Any, str]:
    """A tree model's array form (`scoring.trees.TreeEnsemble`) and "" — or None and why not — after checking that
    it scores probe rows (values at, just below and just above every threshold, 0, NaN) as the library does.

    The tree evidence (TreeSHAP, decision paths) reads the array form; this check is what makes it the model.
    A model the array form does not cover, or one it does not reproduce, keeps its library predictions and has
    its tree evidence SKIPPED with the reason."""
    from auditor.scoring.trees import UnsupportedModel, probe_rows

    try:
        ensemble = build()
    except UnsupportedModel as exc:
        return None, f"this {library} model has a part the tree evidence does not cover: {exc}"
    probes = probe_rows(ensemble, np.random.default_rng(0), rows)
    ours, theirs = ensemble.predict(probes), np.asarray(predict(probes), dtype=np.float64).reshape(-1)
    error = float(np.max(np.abs(ours - theirs) / np.maximum(1.0, np.abs(theirs)), initial=0.0))
    if not error <= AGREEMENT:
        return None, (f"the tree arrays read from this {library} model do not reproduce its scores (relative error "
                      f"{error:.3g} on probe rows), so no tree evidence is computed from them")
    return ensemble, ""
