"""ONNX models (neural rankers exported from PyTorch, TensorFlow, scikit-learn, ...), run with ONNX Runtime on CPU.

Loading: the bytes are read once and the graph checked (`onnx_check.check_graph`: standard operators only, no
Loop, no function named like an operator, no external tensors, one float input [rows × features], one score
output); ONNX Runtime then creates a session, scores probe rows and measures the memory of growing batches in a
throw-away process, from which the batch size is chosen (`onnx_scoring.plan_batches`). Scores are computed in a
long-lived child process (`onnx_scoring.Scorer`), started when this process first scores, with as many intra-op
threads as the audit's core budget allows there (one in an executor's worker), no custom-operator library, a
time limit on every call and a memory cap; whatever goes wrong there — and a score that is not a finite number,
or one score too many or too few — is one InputError line naming the model file.

Not a tree model: `contributions` is None, so tree-only evidence (exact TreeSHAP, decision paths) is SKIPPED with
the reason and everything model-agnostic runs through `predict`.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from auditor.core.errors import InputError
from auditor.core.files import MAX_MODEL_BYTES, read_bytes
from auditor.models.base import check_scores, thread_count
from auditor.models.onnx_check import Graph, check_graph, rehearse_onnx
from auditor.models.onnx_scoring import MAX_BATCH, BatchPlan, Scorer, memory_budget, plan_batches
from auditor.models.rehearsal import MiB


def _onnxruntime() -> Any:
    try:
        import onnxruntime as ort
    except ImportError:  # pragma: no cover - the extra is part of dev
        raise InputError("the model is an ONNX model but onnxruntime is not installed",
                         fix="pip install 'auditor[onnx]'") from None
    ort.set_default_logger_severity(3)  # errors only: they reach us as exceptions
    return ort


class OnnxRanker:
    """An ONNX graph as a Ranker: one score per row, from a child process's InferenceSession, in batches of `BATCH`
    rows (chosen from the memory the rehearsal measured)."""

    kind = "onnx"
    # One session, whose intra-op threads already use the budget: calls take turns.
    concurrent_predict = False

    def __init__(self, data: bytes, graph: Graph, path: Path, plan: BatchPlan | None = None) -> None:
        self.data = data
        self.graph = graph
        self.path = path
        self.source = path
        self.plan = plan or BatchPlan(MAX_BATCH, 0, 0.0)
        self.BATCH = self.plan.rows
        self.n_features = graph.n_features
        self.feature_names = list(graph.feature_names) if graph.feature_names else None
        self._dtype = np.float32 if graph.dtype == "float32" else np.float64
        self._scorer: Scorer | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_scorer"] = None  # a child process is not pickled: each process starts its own from the bytes
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def scorer(self) -> Scorer:
        """This process's child (a process that unpickled the ranker, or forked, starts its own)."""
        if self._scorer is None or self._scorer.owner != os.getpid():
            memory = 2048 * MiB + 16 * len(self.data) + 2 * memory_budget()  # the rehearsal's cap, two calls' worth
            self._scorer = Scorer(self.data, self.graph, file=self.path, threads=thread_count(), memory=memory,
                                  plan=self.plan)
        return self._scorer

    def predict(self, X: np.ndarray) -> np.ndarray:
        out = np.empty(X.shape[0])
        with self._lock:
            for start in range(0, X.shape[0], self.BATCH):
                rows = np.ascontiguousarray(X[start:start + self.BATCH], dtype=self._dtype)
                out[start:start + rows.shape[0]] = self._score(rows)
        check_scores(out, X.shape[0], file=self.path)  # a ranking of NaN is no ranking: say so
        return out

    def _score(self, rows: np.ndarray) -> np.ndarray:
        """One batch's scores; InputError (the scorer then stopped) when the child fails or the count is wrong."""
        scorer = self.scorer()
        try:
            scores = scorer.score(rows)
        except InputError:
            scorer.close(kill=True)
            self._scorer = None
            raise
        if scores.size != rows.shape[0]:
            raise InputError(f"the model returned {scores.size} scores for {rows.shape[0]} rows", file=self.path,
                             fix="export it with one score per input row: output shape [rows] or [rows, 1]")
        return scores

    def contributions(self, X: np.ndarray) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        ort = _onnxruntime()
        return {"kind": self.kind, "library": f"onnxruntime {ort.__version__}", "n_features": self.n_features,
                "input": self.graph.input_name, "output": self.graph.output_name, "input_type": self.graph.dtype,
                "opset": self.graph.opset, "nodes": self.graph.n_nodes, "producer": self.graph.producer}


def load_onnx(path: Path) -> OnnxRanker:
    """An ONNX model: its graph checked, a session rehearsed in a throw-away process (module docstring)."""
    _onnxruntime()
    data = read_bytes(path, limit=MAX_MODEL_BYTES, what="model file")
    graph = check_graph(data, file=path)
    outcome = rehearse_onnx(data, graph, file=path, max_rows=MAX_BATCH)
    return OnnxRanker(data, graph, path, plan_batches(outcome, file=path))
