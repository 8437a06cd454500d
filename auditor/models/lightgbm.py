"""LightGBM boosters from LightGBM's text model format or its JSON dump (`Booster.dump_model()`)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, TypedDict

import lightgbm as lgb
import numpy as np

from auditor.core.errors import InputError
from auditor.core.files import MAX_MODEL_BYTES, read_bytes
from auditor.models.json_dump import check_json_size
from auditor.models.lightgbm_check import check_json_dump, check_model_text, model_text, rehearse_load

_MISSING_CODES = {"None": 0, "Zero": 1, "NaN": 2}


class _Quiet(TypedDict):
    """LightGBM's log level, a parameter of every call that takes parameters (it is global and a call resets it)."""

    verbosity: int


class _Threads(TypedDict, total=False):
    """The threads a prediction may use; absent: LightGBM's default."""

    num_threads: int


_QUIET: _Quiet = {"verbosity": -1}


class _DebugLog:
    """LightGBM's native messages (`[LightGBM] [Info] ...`, printed on stdout by default) go to the debug log:
    the terminal shows the auditor's own lines only. Registered on import, so worker processes that unpickle a
    model (and import this module to do so) are quiet too."""

    log = logging.getLogger("auditor.lightgbm")

    def info(self, message: str) -> None:
        self.log.debug("%s", message)

    def warning(self, message: str) -> None:
        self.log.debug("%s", message)


lgb.register_logger(_DebugLog())


class LightGBMRanker:
    """A LightGBM Booster as a Ranker. Predictions are raw scores (what a ranker sorts by)."""

    kind = "lightgbm"
    # LightGBM's predict takes a shared lock and builds its predictor per call: calls from several threads at once
    # are safe (LightGBM issue #666) and give the same scores.
    concurrent_predict = True

    def __init__(self, booster: lgb.Booster) -> None:
        self.booster = booster
        self.n_features = int(booster.num_feature())
        self.feature_names = list(booster.feature_name())

    # Below this many rows, starting OpenMP threads costs more than it saves (two threads win from about 1,000
    # rows: docs/benchmarks.md, "Local explainers"). The per-query searches make many such calls.
    # (A numba traversal of the same trees, auditor/scoring/trees.py, is bit-identical but not faster: 0.7-1.1x.)
    SMALL_BATCH = 1_000

    def predict(self, X: np.ndarray) -> np.ndarray:
        threads: _Threads = {"num_threads": 1} if X.shape[0] < self.SMALL_BATCH else _threads()
        return np.asarray(self.booster.predict(X, raw_score=True, **threads, **_QUIET), dtype=np.float64)

    def contributions(self, X: np.ndarray) -> np.ndarray:
        """LightGBM's own TreeSHAP (`pred_contrib`): exact, and what shap's TreeExplainer calls underneath."""
        return np.asarray(self.booster.predict(X, pred_contrib=True, **_threads(), **_QUIET), dtype=np.float64)

    contributions_method = "LightGBM's pred_contrib"

    def tree_ensemble(self) -> Any:
        """The array form (`scoring.trees.TreeEnsemble`) from LightGBM's own dump; UnsupportedModel for parts it does
        not cover (categorical splits, linear trees)."""
        from auditor.scoring.trees import TreeEnsemble

        return TreeEnsemble.from_lightgbm(self.booster.dump_model())

    def describe(self) -> dict[str, Any]:
        params = self.booster.params or {}
        dump_objective = _objective_from_model(self.booster)
        return {
            "kind": self.kind,
            "library": f"lightgbm {lgb.__version__}",
            "n_features": self.n_features,
            "n_trees": int(self.booster.num_trees()),
            "objective": params.get("objective", dump_objective),
        }


def _threads() -> _Threads:
    """The calling thread's own budget (a pool thread: 1), one thread inside an executor's worker (the workers
    fill the cores), LightGBM's default elsewhere."""
    from auditor.core.threads import THREADS_ENV, thread_budget, thread_budget_here

    if thread_budget_here() is not None or THREADS_ENV in os.environ:
        return {"num_threads": thread_budget()}
    return {}


def _objective_from_model(booster: lgb.Booster) -> str:
    for line in booster.model_to_string(num_iteration=0).splitlines()[:20]:
        if line.startswith("objective="):
            return line.split("=", 1)[1]
    return "unknown"


def load_lightgbm(path: Path) -> LightGBMRanker:
    """A LightGBM model from its text file or JSON dump. The text is checked (`lightgbm_check`) and loaded once in
    a throw-away process before this process loads it, so a damaged file is one InputError, never a crash."""
    data = read_bytes(path, limit=MAX_MODEL_BYTES, what="model file")
    if data.lstrip()[:1] == b"{":
        check_json_size(len(data), file=path, library="LightGBM")
        try:
            dump = json.loads(data)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", file=path, where=f"{exc.lineno}:{exc.colno}",
                             fix="use the output of LightGBM's `Booster.dump_model()` or its text model file") from None
        except (RecursionError, UnicodeDecodeError) as exc:
            problem = "nested too deeply" if isinstance(exc, RecursionError) else "not UTF-8 text"
            raise InputError(f"not a LightGBM JSON dump ({problem})", file=path,
                             fix="use the output of LightGBM's `Booster.dump_model()`") from None
        other = {"learner": "xgboost", "features_info": "catboost"}
        for key, kind in other.items():
            if isinstance(dump, dict) and key in dump:
                raise InputError(f"this is {'an XGBoost' if kind == 'xgboost' else 'a CatBoost'} model, read as "
                                 "LightGBM because a .json file is LightGBM unless the spec says otherwise",
                                 file=path, fix=f"set `model.kind: {kind}` in the spec")
        model_str = json_dump_to_model_string(dump, path)
        try:
            check_model_text(model_str, file=path)
        except InputError as exc:  # the dump passed its own check, so this names a line of the rebuilt text
            raise InputError(f"{exc.problem} (in the text rebuilt from the JSON dump, line {exc.where})",
                             file=path, fix=exc.fix) from None
    else:
        model_str = model_text(data, file=path)
        check_model_text(model_str, file=path)
    rehearse_load(model_str, file=path)
    try:
        booster = lgb.Booster(model_str=model_str)
    except Exception as exc:  # the rehearsal loaded it; anything left is LightGBM's own refusal
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"LightGBM cannot load this model ({first[:200]})", file=path,
                         fix="save the model with `Booster.save_model()`") from None
    return LightGBMRanker(booster)


def json_dump_to_model_string(dump: Any, path: Path) -> str:
    """Rebuild LightGBM's text format from `dump_model()` JSON so that LightGBM itself does the predicting.

    Numerical splits only: a categorical split cannot be rebuilt exactly from the dump and is refused. The dump is
    checked first (`check_json_dump`): single output, trees that are trees, features within the model's.
    """
    check_json_dump(dump, file=path)
    trees = [_tree_to_text(i, info["tree_structure"], info["num_leaves"]) for i, info in enumerate(dump["tree_info"])]
    names = dump["feature_names"]
    header = [
        "tree", f"version={dump.get('version', 'v4')}", f"num_class={dump.get('num_class', 1)}",
        f"num_tree_per_iteration={dump.get('num_tree_per_iteration', 1)}",
        f"label_index={dump.get('label_index', 0)}", f"max_feature_idx={dump['max_feature_idx']}",
        f"objective={dump.get('objective', 'regression')}",
        "feature_names=" + " ".join(names),
        "feature_infos=" + " ".join(_feature_info(dump, name) for name in names), "",
    ]
    return "\n".join(header) + "\n" + "\n".join(trees) + "\nend of trees\n"


def _feature_info(dump: dict[str, Any], name: str) -> str:
    info = dump.get("feature_infos", {}).get(name)
    if not info or "min_value" not in info:
        return "none"
    return f"[{info['min_value']!r}:{info['max_value']!r}]"


def _threshold_text(value: float) -> str:
    """The dump writes ±inf thresholds as ±1e300 (LightGBM's AvoidInf); the text format takes `inf`."""
    value = float(value)
    return ("inf" if value > 0 else "-inf") if abs(value) >= 1e300 else repr(value)


def _tree_to_text(index: int, root: dict[str, Any], num_leaves: int) -> str:
    if num_leaves == 1:
        return (f"Tree={index}\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nsplit_gain=\nthreshold=\ndecision_type=\n"
                f"left_child=\nright_child=\nleaf_value={root['leaf_value']!r}\nleaf_weight=\nleaf_count=\n"
                "internal_value=\ninternal_weight=\ninternal_count=\nis_linear=0\nshrinkage=1\n\n")
    internal: dict[int, dict[str, Any]] = {}
    leaves: dict[int, dict[str, Any]] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if "split_index" not in node:  # as check_json_dump tells leaves from splits
            leaves[node["leaf_index"]] = node
            continue
        internal[node["split_index"]] = node
        stack.extend((node["left_child"], node["right_child"]))

    def child(node: dict[str, Any]) -> int:
        return node["split_index"] if "split_index" in node else ~node["leaf_index"]

    nodes = [internal[i] for i in range(len(internal))]
    leaf = [leaves[i] for i in range(len(leaves))]

    def decision(node: dict[str, Any]) -> int:
        return (2 if node.get("default_left") else 0) | (_MISSING_CODES[node.get("missing_type", "None")] << 2)

    def row(key: str, values: list[Any]) -> str:
        return f"{key}=" + " ".join(repr(v) if isinstance(v, float) else str(v) for v in values)

    lines = [
        f"Tree={index}", f"num_leaves={num_leaves}", "num_cat=0",
        row("split_feature", [n["split_feature"] for n in nodes]),
        row("split_gain", [float(n.get("split_gain", 0.0)) for n in nodes]),
        row("threshold", [_threshold_text(n["threshold"]) for n in nodes]),
        row("decision_type", [decision(n) for n in nodes]),
        row("left_child", [child(n["left_child"]) for n in nodes]),
        row("right_child", [child(n["right_child"]) for n in nodes]),
        row("leaf_value", [float(n["leaf_value"]) for n in leaf]),
        row("leaf_weight", [float(n.get("leaf_weight", 0.0)) for n in leaf]),
        row("leaf_count", [int(n.get("leaf_count", 0)) for n in leaf]),
        row("internal_value", [float(n.get("internal_value", 0.0)) for n in nodes]),
        row("internal_weight", [float(n.get("internal_weight", 0.0)) for n in nodes]),
        row("internal_count", [int(n.get("internal_count", 0)) for n in nodes]),
        "is_linear=0", "shrinkage=1", "", "",
    ]
    return "\n".join(lines)
