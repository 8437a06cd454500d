"""Is an XGBoost model safe to hand to XGBoost? A strict reader of its JSON model, then a rehearsal.

XGBoost's JSON reader checks array lengths but not what the arrays say: measured with XGBoost 3.2 on the bookstore
ranker, a split on feature −5 or 2^31−1, a child index pointing back to the root or past the tree, a categorical
split without its categories, a leaf vector size of 5, a tree assigned to class 5 of a one-class model, or JSON
nested 100,000 deep each kill the process (SIGSEGV, or `free(): invalid next size`), and a split on feature 50 of
an 11-feature model scores rows by reading past them. UBJSON, XGBoost's binary JSON, crashed on 1 of 96 cuts and
10 of 60 random byte changes (SIGSEGV). Two defences, both on every load (docs/security.md):

1. `check_model` reads the JSON document as XGBoost's `RegTree::LoadModel` and `GBTreeModel::LoadModel` do and
   refuses anything they would misread or that a ranker cannot be: one output (`num_class` ≤ 1, `num_target` 1,
   every `tree_info` 0), the `gbtree` booster (gblinear and dart refused with a fix), categorical splits only on
   features typed `c` and with their category sets in bounds, per tree every array `num_nodes` long, children that
   form one tree from node 0
   (no cycle, no orphan but XGBoost's deleted nodes, at most 512 levels), parents that agree, split features
   within `num_feature`, finite split conditions, leaf values and covers. A refusal names the tree and node.
2. `rehearse_xgboost` loads the bytes in a throw-away process (`_xgboost_child.py`: ctypes on the very
   `libxgboost.so` this process uses, no site-packages), scores probe rows, and has XGBoost save the model as
   JSON. For UBJSON that JSON is what `check_model` reads (the file as XGBoost understood it); for JSON the
   original text is checked first, with positions. This process's XGBoost then loads only JSON the checker passed.

The legacy binary format (before XGBoost 1.0's JSON; no longer read by XGBoost 3) is refused with the fix.
"""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.models.base import BOUND_FIX, MAX_SCORE, bound_problem
from auditor.models.json_dump import json_cap, parse_json_dump
from auditor.models.rehearsal import MiB, rehearse

CHILD = Path(__file__).with_name("_xgboost_child.py")
REHEARSAL_SECONDS = 60.0  # plus a second per MiB of model: a sound model loads in a small part of that
MAX_DEPTH = 512  # as for LightGBM: our TreeSHAP tables and every walk of the trees stay bounded
MAX_FEATURES = 1_000_000
SAVE_AGAIN = ("the file is damaged or was edited: save the model again with XGBoost's "
              "`booster.save_model('model.json')`")
_SAVE_JSON = ("load it with the XGBoost version that wrote it (before 3.0) and save it again with "
              "`booster.save_model('model.json')` or `'model.ubj'`")
_ARRAYS = ("left_children", "right_children", "parents", "split_indices", "split_conditions", "default_left",
           "base_weights", "sum_hessian", "loss_changes")
_NO_PARENT = {-1, 2147483647}  # XGBoost's kInvalidNodeId, as saved by versions before and after 2.0


def file_format(data: bytes, *, file: Path) -> str:
    """`json` or `ubjson` (XGBoost's two model formats since 1.0), told apart by their first bytes; anything else
    — the legacy binary format, or not an XGBoost model — is refused."""
    head = data.lstrip()[:2]
    if head[:1] == b"{" and (head[1:2] in (b'"', b"}") or head[1:2].isspace()):
        return "json"
    if head[:1] == b"{" and head[1:2] in (b"i", b"U", b"I", b"l", b"L"):  # UBJSON: `{` then a key's length type
        return "ubjson"
    raise InputError("not an XGBoost JSON or UBJSON model (XGBoost's legacy binary format is not read)", file=file,
                     fix=_SAVE_JSON)


def parse_json(text: bytes, *, file: Path, what: str = "the model") -> dict[str, Any]:
    return parse_json_dump(text, file=file, library="an XGBoost", key="learner", save_again=SAVE_AGAIN,
                           save_json="save the model with XGBoost's `booster.save_model('model.json')`", what=what)


class _Bad(Exception):
    def __init__(self, where: str, problem: str, fix: str = SAVE_AGAIN) -> None:
        super().__init__(problem)
        self.where, self.problem, self.fix = where, problem, fix


def check_model(doc: dict[str, Any], *, file: Path) -> None:
    """Raise InputError (`FILE:trees.N: problem; fix`) unless XGBoost reads `doc` as the single-output tree
    model it appears to be (see the module's docstring)."""
    try:
        _check(doc)
    except _Bad as bad:
        raise InputError(bad.problem, file=file, where=bad.where, fix=bad.fix) from None


def _get(obj: Any, key: str, where: str, kind: type) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise _Bad(where, f"`{key}` is missing")
    value = obj[key]
    if not isinstance(value, kind):
        raise _Bad(where, f"`{key}` is not {'an object' if kind is dict else 'a list'}")
    return value


def _int_text(value: Any, where: str, key: str, low: int, high: int) -> int:
    """XGBoost writes its parameters as strings: `"11"`."""
    try:
        number = int(str(value))
    except ValueError:
        raise _Bad(where, f"`{key}` is {str(value)[:20]!r}, not a whole number") from None
    if not low <= number <= high:
        raise _Bad(where, f"`{key}` is {number}, outside {low}..{high}")
    return number


def _check(doc: dict[str, Any]) -> None:
    learner = _get(doc, "learner", "learner", dict)
    param = _get(learner, "learner_model_param", "learner", dict)
    n_features = _int_text(param.get("num_feature"), "learner_model_param", "num_feature", 1, MAX_FEATURES)
    one_output = ("a ranker gives one score per document: train it with one target and a ranking or regression "
                  "objective (rank:ndcg, rank:pairwise, reg:squarederror, ...)")
    if _int_text(param.get("num_class", "0"), "learner_model_param", "num_class", 0, 1 << 20) > 1:
        raise _Bad("learner_model_param", "a multi-class model gives several scores per document", one_output)
    if _int_text(param.get("num_target", "1"), "learner_model_param", "num_target", 0, 1 << 20) > 1:
        raise _Bad("learner_model_param", "a multi-target model gives several scores per document", one_output)
    base = str(param.get("base_score", "")).strip().strip("[]").split(",")
    try:
        finite = len(base) == 1 and math.isfinite(float(base[0]))
    except ValueError:
        finite = False
    if not finite:
        raise _Bad("learner_model_param", f"`base_score` is {str(param.get('base_score'))[:30]!r}, not one number")
    objective = learner.get("objective", {})
    if not isinstance(objective, dict) or not isinstance(objective.get("name", ""), str):
        raise _Bad("learner.objective", "the objective is not an object with a name")
    if str(objective.get("name", "")).startswith("multi:"):
        raise _Bad("learner.objective", f"objective {objective['name']} gives several scores per document",
                   one_output)
    types = learner.get("feature_types", [])
    if not isinstance(types, list) or any(not isinstance(t, str) for t in types) or \
            len(types) not in (0, n_features):
        raise _Bad("learner.feature_types", f"feature_types must be {n_features} strings")
    names = learner.get("feature_names", [])
    if not isinstance(names, list) or any(not isinstance(n, str) for n in names) or len(names) not in (0, n_features):
        raise _Bad("learner.feature_names", f"feature_names must be {n_features} strings")
    booster = _get(learner, "gradient_booster", "learner", dict)
    name = booster.get("name")
    if name != "gbtree":
        raise _Bad("learner.gradient_booster", f"booster '{str(name)[:20]}' is not audited: only tree ensembles "
                   "(gbtree) are", "train with booster='gbtree' (dart: the same trees without dropout weights)")
    model = _get(booster, "model", "gradient_booster", dict)
    trees = _get(model, "trees", "gradient_booster.model", list)
    tree_param = _get(model, "gbtree_model_param", "gradient_booster.model", dict)
    n_trees = _int_text(tree_param.get("num_trees"), "gbtree_model_param", "num_trees", 0, 1 << 24)
    _int_text(tree_param.get("num_parallel_tree", "1"), "gbtree_model_param", "num_parallel_tree", 1, 1 << 16)
    if n_trees != len(trees):
        raise _Bad("gbtree_model_param", f"num_trees is {n_trees} but the model holds {len(trees)} trees")
    info = _get(model, "tree_info", "gradient_booster.model", list)
    if len(info) != n_trees or any(v != 0 or isinstance(v, bool) for v in info):
        raise _Bad("gradient_booster.model.tree_info", "tree_info must hold one 0 per tree (one output)")
    indptr = model.get("iteration_indptr", [0, n_trees])
    if not isinstance(indptr, list) or any(not isinstance(v, int) or isinstance(v, bool) for v in indptr) or \
            not indptr or indptr[0] != 0 or indptr[-1] != n_trees or any(b < a for a, b in pairwise(indptr)):
        raise _Bad("gradient_booster.model.iteration_indptr", "iteration_indptr does not split the trees into "
                       "rounds (from 0, never decreasing, ending at num_trees)")
    cats = model.get("cats", {})
    if not isinstance(cats, dict) or any(not isinstance(cats.get(k, []), list)
                                         for k in ("enc", "feature_segments", "sorted_idx")):
        raise _Bad("gradient_booster.model.cats", "the categories the model was trained on are not lists")
    categorical = {i for i, t in enumerate(types) if t == "c"}
    bound = abs(float(base[0]))  # the margin every score starts from, and each tree's largest leaf
    for index, tree in enumerate(trees):
        bound += _check_tree(tree, index, n_features, categorical)
        if not bound <= MAX_SCORE:  # XGBoost sums in float32 (at most 3.4e38): 1e308 is inf already
            how = f"base_score plus the largest leaf of each of trees 0 to {index}"
            raise _Bad(f"trees.{index}", bound_problem(bound, how), BOUND_FIX)


def _check_tree(tree: Any, index: int, n_features: int, categorical: set[int]) -> float:
    """Check one tree; return its largest |leaf value| (a leaf's value is its `split_conditions` entry)."""
    where = f"trees.{index}"
    if not isinstance(tree, dict):
        raise _Bad(where, "a tree is not an object")
    if tree.get("id", index) != index:
        raise _Bad(where, f"tree {index} has id {str(tree.get('id'))[:20]}")
    param = _get(tree, "tree_param", where, dict)
    n = _int_text(param.get("num_nodes"), where, "num_nodes", 1, 1 << 31)
    deleted = _int_text(param.get("num_deleted", "0"), where, "num_deleted", 0, n - 1)
    if _int_text(param.get("num_feature", n_features), where, "num_feature", 0, MAX_FEATURES) != n_features:
        raise _Bad(where, f"the tree's num_feature is not the model's {n_features}")
    if _int_text(param.get("size_leaf_vector", "1"), where, "size_leaf_vector", 0, 1 << 20) > 1:
        raise _Bad(where, "a multi-target tree gives several scores per document",
                   "train the ranker with one target")
    arrays = {}
    for key in _ARRAYS:
        values = _get(tree, key, where, list)
        if len(values) != n:
            raise _Bad(where, f"{key} has {len(values)} values, num_nodes needs {n}")
        arrays[key] = values
    split_type = tree.get("split_type", [0] * n)
    if not isinstance(split_type, list) or len(split_type) != n:
        raise _Bad(where, f"split_type must have {n} values")
    if any(t not in (0, 1) or isinstance(t, bool) for t in split_type):
        raise _Bad(where, "split_type must be 0 (a threshold) or 1 (a set of categories) for every node")
    _check_categories(tree, where, split_type, arrays["split_indices"], arrays["left_children"], categorical)
    for key in ("left_children", "right_children", "parents", "split_indices"):
        for node, value in enumerate(arrays[key]):
            if not isinstance(value, int) or isinstance(value, bool):
                raise _Bad(where, f"{key} of node {node} is {str(value)[:20]}, not a whole number")
    for node, value in enumerate(arrays["default_left"]):
        if value not in (0, 1):  # 0/1, or false/true
            raise _Bad(where, f"default_left of node {node} is {str(value)[:20]}, not 0 or 1")
    for key in ("split_conditions", "base_weights", "sum_hessian", "loss_changes"):
        for node, value in enumerate(arrays[key]):
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
                raise _Bad(where, f"{key} of node {node} is {str(value)[:20]}, not a finite number")
    left, right = arrays["left_children"], arrays["right_children"]
    parents, features = arrays["parents"], arrays["split_indices"]
    reached = [False] * n
    reached[0] = True
    level, depth, count, largest = [0], 0, 1, 0.0
    while level:
        following = []
        for node in level:
            a, b = left[node], right[node]
            if a == -1 and b == -1:
                largest = max(largest, abs(arrays["split_conditions"][node]))
                continue
            if a == -1 or b == -1:
                raise _Bad(where, f"node {node} has one child")
            if not (0 < a < n and 0 < b < n):
                raise _Bad(where, f"node {node} has a child index out of range (0..{n - 1})")
            if not 0 <= features[node] < n_features:
                raise _Bad(where, f"node {node} splits on feature {features[node]}, beyond the model's {n_features} "
                           f"features (num_feature={n_features})")
            if arrays["sum_hessian"][node] < 0:
                raise _Bad(where, f"node {node} has a negative cover (sum_hessian)")
            for child in (a, b):
                if reached[child]:
                    raise _Bad(where, f"node {child} is reached twice: the children do not form a tree")
                reached[child] = True
                if parents[child] != node:
                    raise _Bad(where, f"node {child}'s parent is {parents[child]}, not {node}")
                following.append(child)
            count += 2
        level = following
        if level:
            depth += 1
            if depth > MAX_DEPTH:
                raise _Bad(where, f"the tree is deeper than {MAX_DEPTH} levels")
    if parents[0] not in _NO_PARENT:
        raise _Bad(where, f"the root's parent is {parents[0]}, not none")
    if n - count != deleted:
        raise _Bad(where, f"{n - count} node(s) are not reachable from the root (num_deleted={deleted})")
    return float(largest)


def _check_categories(tree: dict[str, Any], where: str, split_type: list[int], features: list[Any],
                      left: list[Any], categorical: set[int]) -> None:
    """A categorical split (split_type 1) lists the categories it sends one way: node i's set is
    `categories[segments[k] : segments[k] + sizes[k]]` for `categories_nodes[k] == i`, on a categorical feature."""
    lists = {key: tree.get(key, []) for key in ("categories", "categories_nodes", "categories_segments",
                                                "categories_sizes")}
    for key, values in lists.items():
        if not isinstance(values, list) or any(not isinstance(v, int) or isinstance(v, bool) or v < 0
                                               for v in values):
            raise _Bad(where, f"{key} must be a list of whole numbers, none negative")
    nodes = lists["categories_nodes"]
    if len(lists["categories_segments"]) != len(nodes) or len(lists["categories_sizes"]) != len(nodes):
        raise _Bad(where, "categories_nodes, categories_segments and categories_sizes must be as long as each other")
    split = [i for i, t in enumerate(split_type) if t == 1]
    if nodes != split:
        raise _Bad(where, "categories_nodes must list exactly the nodes whose split_type is 1, in order")
    for node, start, size in zip(nodes, lists["categories_segments"], lists["categories_sizes"], strict=True):
        if start + size > len(lists["categories"]):
            raise _Bad(where, f"node {node}'s categories run past the categories list")
        if left[node] == -1:
            raise _Bad(where, f"node {node} is a leaf with a categorical split")
        if isinstance(features[node], int) and features[node] not in categorical:
            raise _Bad(where, f"node {node} splits feature {features[node]} by categories, but feature_types does "
                       "not make it categorical ('c')")


def rehearse_xgboost(data: bytes, *, file: Path) -> bytes:
    """Load `data` with XGBoost in a throw-away process first; the model as XGBoost saves it in JSON, or
    InputError if that process fails, crashes, runs out of memory or time."""
    import xgboost as xgb

    library = getattr(getattr(xgb.core, "_LIB", None), "_name", None)
    if not library:  # pragma: no cover - every XGBoost 2-3 has it
        raise InputError("cannot find XGBoost's library to check the model", file=file,
                         fix="reinstall xgboost (`pip install 'auditor[xgboost]'`)")
    memory = 2048 * MiB + 32 * len(data)  # the interpreter, OpenMP, the JSON document and the trees
    _, payload = rehearse(CHILD, [library], data, file=file, library="XGBoost", fix=SAVE_AGAIN, memory=memory,
                          timeout=REHEARSAL_SECONDS + len(data) / MiB, site_packages=False,
                          payload_limit=json_cap("XGBoost"))
    return payload
