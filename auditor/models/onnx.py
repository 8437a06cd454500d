"""ONNX models (neural rankers exported from PyTorch, TensorFlow, scikit-learn, ...), run with ONNX Runtime on CPU.

Loading: the bytes are read once and the graph checked (`onnx_check.check_graph`: standard operators only, no
Loop, no external tensors, one float input [rows × features], one score output); ONNX Runtime then creates a
session and scores probe rows in a throw-away process. This process creates its one `InferenceSession` from the
same bytes when it first scores, with as many intra-op threads as the audit's core budget allows there (one in an
executor's worker), no custom-operator library, and ONNX Runtime's log off the terminal.

Not a tree model: `contributions` is None, so tree-only evidence (exact TreeSHAP, decision paths) is SKIPPED with
the reason and everything model-agnostic runs through `predict`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from auditor.errors import InputError
from auditor.files import MAX_MODEL_BYTES, read_bytes
from auditor.models.base import thread_count
from auditor.models.onnx_check import Graph, check_graph, rehearse_onnx


def _onnxruntime() -> Any:
    try:
        import onnxruntime as ort
    except ImportError:  # pragma: no cover - the extra is part of dev
        raise InputError("the model is an ONNX model but onnxruntime is not installed",
                         fix="pip install 'auditor[onnx]'") from None
    ort.set_default_logger_severity(3)  # errors only: they reach us as exceptions
    return ort


class OnnxRanker:
    """An ONNX graph as a Ranker: one score per row, from one InferenceSession, in batches of `BATCH` rows."""

    kind = "onnx"
    # One session, whose intra-op threads already use the budget: calls take turns.
    concurrent_predict = False
    BATCH = 65_536  # rows per run: large enough to amortise the call, small enough to bound a wide graph's memory

    def __init__(self, data: bytes, graph: Graph, path: Path) -> None:
        self.data = data
        self.graph = graph
        self.path = path
        self.n_features = graph.n_features
        self.feature_names = list(graph.feature_names) if graph.feature_names else None
        self._dtype = np.float32 if graph.dtype == "float32" else np.float64
        self._session: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_session"] = None  # a session cannot be pickled: each process makes its own from the bytes
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def session(self) -> Any:
        if self._session is None:
            ort = _onnxruntime()
            options = ort.SessionOptions()
            options.log_severity_level = 3
            options.intra_op_num_threads = thread_count()
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            self._session = ort.InferenceSession(self.data, sess_options=options,
                                                 providers=["CPUExecutionProvider"])
        return self._session

    def predict(self, X: np.ndarray) -> np.ndarray:
        out = np.empty(X.shape[0])
        with self._lock:
            session = self.session()
            for start in range(0, X.shape[0], self.BATCH):
                rows = np.ascontiguousarray(X[start:start + self.BATCH], dtype=self._dtype)
                scores = np.asarray(session.run([self.graph.output_name], {self.graph.input_name: rows})[0])
                if scores.size != rows.shape[0]:
                    raise ValueError(f"the ONNX model returned {scores.size} scores for {rows.shape[0]} rows")
                out[start:start + rows.shape[0]] = scores.reshape(-1)
        bad = np.flatnonzero(~np.isfinite(out))
        if bad.size:  # a ranking of NaN is no ranking: say so rather than let every measure go quiet
            raise ValueError(f"the ONNX model returned {out[bad[0]]} for {bad.size} of {out.size} rows (first: "
                             f"row {bad[0]}); it needs inputs it can score (no missing values?)")
        return out

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
    rehearse_onnx(data, graph, file=path)
    return OnnxRanker(data, graph, path)
