"""Is a CatBoost model safe to hand to CatBoost, and is it one the audit covers? A strict reader of CatBoost's JSON
export, and a rehearsal.

CatBoost's JSON reader trusts what it reads: measured with CatBoost 1.2.10 on the bookstore ranker, a tree with
one leaf value too few or too many, a split on float feature 50 or −3 of an 11-feature model, an unknown split
index or a split type changed to one-hot all load and score without an error (reading past arrays, or ignoring
the field), and a tree with ten times its splits kills the process (SIGSEGV). Its reader of `.cbm` files crashed
on 4 of 60 random byte changes (SIGSEGV) and refused the rest cleanly. The split a tree makes is the one its
`split_index` names (its `border` and `float_feature_index` fields are not read back), so a file whose fields
disagree scores differently from what it shows. Two defences, both on every load (docs/security.md):

1. `check_model` reads the JSON export and refuses anything CatBoost would misread or the audit does not cover:
   float features only (categorical, text and embedding features refused: their values go through learned
   statistics, `ctr_data`, that this tool does not audit), one score per document, `float_features` indexed
   0..n−1 once each with finite, increasing borders; per oblivious tree at most 16 splits, each a float split
   whose `split_index`, feature and border agree, and 2^depth finite leaf values and non-negative leaf weights;
   non-symmetric trees (Depthwise, Lossguide) at most 512 levels with the same split checks; a finite scale and
   one bias. A refusal names the tree: `model.json:oblivious_trees.3: ...`.
2. `rehearse_catboost` loads the bytes in a throw-away process (`_catboost_child.py`), scores probe rows and
   exports the model as JSON. For a `.cbm` file that export is what `check_model` reads (the file as CatBoost read
   it); a JSON file is checked first, as written.
"""

from __future__ import annotations

import math
import tempfile
from itertools import pairwise
from pathlib import Path
from typing import Any, TypeGuard

from auditor.core.errors import InputError
from auditor.models.base import BOUND_FIX, MAX_SCORE, bound_problem
from auditor.models.json_dump import json_cap, parse_json_dump
from auditor.models.rehearsal import MiB, rehearse

CHILD = Path(__file__).with_name("_catboost_child.py")
REHEARSAL_SECONDS = 60.0  # plus a second per MiB; importing catboost alone takes ~1 s
MAX_OBLIVIOUS_DEPTH = 16  # CatBoost's own limit on `depth`
MAX_DEPTH = 512
MAX_FEATURES = 1_000_000
SAVE_AGAIN = ("the file is damaged or was edited: save the model again with CatBoost's `model.save_model("
              "'model.cbm')`")
_NOT_FLOAT = ("categorical, text and embedding features are not audited (CatBoost turns them into learned "
              "statistics this tool does not check)")
_FIX_FLOAT = "encode them as numbers before training (e.g. one-hot or target statistics you compute) and train again"
_NAN = {"AsIs", "AsFalse", "AsTrue"}


def file_format(data: bytes, *, file: Path) -> str:
    """`cbm` (CatBoost's binary format, magic `CBM1`) or `json` (its JSON export)."""
    if data[:4] == b"CBM1":
        return "cbm"
    if data.lstrip()[:1] == b"{":
        return "json"
    raise InputError("not a CatBoost model (neither a .cbm file nor CatBoost's JSON export)", file=file,
                     fix="save the model with CatBoost's `model.save_model('model.cbm')`")


def parse_json(text: bytes, *, file: Path, what: str = "the model") -> dict[str, Any]:
    return parse_json_dump(text, file=file, library="a CatBoost", key="features_info", save_again=SAVE_AGAIN,
                           save_json="export the model with CatBoost's "
                                     "`model.save_model('model.json', format='json')`", what=what)


class _Bad(Exception):
    def __init__(self, where: str, problem: str, fix: str = SAVE_AGAIN) -> None:
        super().__init__(problem)
        self.where, self.problem, self.fix = where, problem, fix


def check_model(doc: dict[str, Any], *, file: Path) -> None:
    """Raise InputError (`FILE:oblivious_trees.N: problem; fix`) unless `doc` is a single-output CatBoost model of
    float features whose every split CatBoost reads as it is written (see the module's docstring)."""
    try:
        _check(doc)
    except _Bad as bad:
        raise InputError(bad.problem, file=file, where=bad.where, fix=bad.fix) from None


def _finite(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _check(doc: dict[str, Any]) -> None:
    info = doc["features_info"]
    for key in ("categorical_features", "text_features", "embedding_features"):
        if info.get(key):
            raise _Bad(f"features_info.{key}", _NOT_FLOAT, _FIX_FLOAT)
    if doc.get("ctr_data"):
        raise _Bad("ctr_data", _NOT_FLOAT, _FIX_FLOAT)
    features = info.get("float_features", [])
    if not isinstance(features, list) or not 1 <= len(features) <= MAX_FEATURES:
        raise _Bad("features_info.float_features", "the model has no float features list")
    n = len(features)
    borders: list[list[float]] = []
    flat = set()
    split_of: list[tuple[int, float]] = []  # CatBoost's split_index → (float feature, border)
    for index, feature in enumerate(features):
        where = f"features_info.float_features.{index}"
        if not isinstance(feature, dict):
            raise _Bad(where, "a float feature is not an object")
        if feature.get("feature_index") != index:
            raise _Bad(where, f"feature_index is {str(feature.get('feature_index'))[:20]}, expected {index}")
        position = feature.get("flat_feature_index")
        if not _whole(position) or not 0 <= position < n or position in flat:
            raise _Bad(where, f"flat_feature_index {str(position)[:20]} is not a free column of the model's {n}")
        flat.add(position)
        values = feature.get("borders", [])
        if not isinstance(values, list) or any(not _finite(b) for b in values):
            raise _Bad(where, "borders must be a list of finite numbers")
        if any(b <= a for a, b in pairwise(values)):
            raise _Bad(where, "borders are not in increasing order")
        treatment = feature.get("nan_value_treatment", "AsIs")
        if not isinstance(treatment, str) or treatment not in _NAN:
            raise _Bad(where, f"nan_value_treatment is not one of {', '.join(sorted(_NAN))}")
        if not isinstance(feature.get("feature_id", ""), str):
            raise _Bad(where, "feature_id is not a string")
        borders.append([float(b) for b in values])
        split_of.extend((index, float(b)) for b in values)
    pair = doc.get("scale_and_bias", [1, [0]])
    bias = pair[1] if isinstance(pair, list) and len(pair) == 2 else None
    if isinstance(bias, list):
        if len(bias) != 1:
            raise _Bad("scale_and_bias", "a model with several biases gives several scores per document",
                       "train the ranker with one output (YetiRank, PairLogit, QueryRMSE, RMSE, ...)")
        bias = bias[0]
    if not _finite(pair[0] if isinstance(pair, list) and pair else None) or not _finite(bias):
        raise _Bad("scale_and_bias", "scale_and_bias is not [scale, [bias]] of finite numbers")
    oblivious, other = doc.get("oblivious_trees", []), doc.get("trees", [])
    if not isinstance(oblivious, list) or not isinstance(other, list):
        raise _Bad("oblivious_trees", "the trees are not a list")
    if oblivious and other:
        raise _Bad("trees", "a model has either oblivious or non-symmetric trees, not both")
    scale, total = abs(float(pair[0])), 0.0  # a score is scale × (the leaves it reaches, summed) + bias
    for key, trees, check in (("oblivious_trees", oblivious, _check_oblivious), ("trees", other, _check_non_symmetric)):
        for index, tree in enumerate(trees):
            total += check(tree, f"{key}.{index}", split_of, borders)
            if not scale * total + abs(float(bias)) <= MAX_SCORE:
                how = f"the bias plus the scale times the largest leaf of each of {key} 0 to {index}"
                raise _Bad(f"{key}.{index}", bound_problem(scale * total + abs(float(bias)), how), BOUND_FIX)


def _check_split(split: Any, where: str, split_of: list[tuple[int, float]], borders: list[list[float]]) -> None:
    if not isinstance(split, dict):
        raise _Bad(where, "a split is not an object")
    if split.get("split_type") != "FloatFeature":
        raise _Bad(where, f"a {str(split.get('split_type'))[:30]} split: {_NOT_FLOAT}", _FIX_FLOAT)
    index, feature, border = split.get("split_index"), split.get("float_feature_index"), split.get("border")
    if not _whole(index) or not 0 <= index < len(split_of):
        raise _Bad(where, f"split_index {str(index)[:20]} is not one of the model's {len(split_of)} borders")
    if not _whole(feature) or not 0 <= feature < len(borders):
        raise _Bad(where, f"the split is on float feature {str(feature)[:20]}, beyond the model's {len(borders)} "
                   "features")
    if not _finite(border) or split_of[index] != (feature, float(border)):
        named = split_of[index]
        raise _Bad(where, f"split_index {index} is border {named[1]!r} of feature {named[0]}, but the split says "
                   f"{str(border)[:30]} of feature {feature} (CatBoost would use the first)")


def _check_oblivious(tree: Any, where: str, split_of: list[tuple[int, float]], borders: list[list[float]]) -> float:
    """Check one oblivious tree; return its largest |leaf value|."""
    if not isinstance(tree, dict) or not isinstance(tree.get("splits"), list):
        raise _Bad(where, "an oblivious tree is not an object with splits")
    splits = tree["splits"]
    if len(splits) > MAX_OBLIVIOUS_DEPTH:
        raise _Bad(where, f"the tree has {len(splits)} splits; CatBoost's oblivious trees have at most "
                   f"{MAX_OBLIVIOUS_DEPTH}")
    for split in splits:
        _check_split(split, where, split_of, borders)
    leaves = 1 << len(splits)
    values, weights = tree.get("leaf_values"), tree.get("leaf_weights")
    if not isinstance(values, list) or not isinstance(weights, list):
        raise _Bad(where, "leaf_values and leaf_weights must be lists")
    if len(values) != leaves and len(values) % leaves == 0 and len(values) > leaves:
        raise _Bad(where, "a multi-dimensional model gives several scores per document",
                   "train the ranker with one output (YetiRank, PairLogit, QueryRMSE, RMSE, ...)")
    if len(values) != leaves or len(weights) != leaves:
        raise _Bad(where, f"{len(splits)} splits need {leaves} leaf values and weights, the tree has "
                   f"{len(values)} and {len(weights)}")
    if any(not _finite(v) for v in values) or any(not _finite(w) or w < 0 for w in weights):
        raise _Bad(where, "a leaf value or weight is not a finite number (weights: not negative)")
    return float(max(map(abs, values)))


def _check_non_symmetric(tree: Any, where: str, split_of: list[tuple[int, float]], borders: list[list[float]]
                         ) -> float:
    """Check one non-symmetric tree; return its largest |leaf value|."""
    stack: list[tuple[Any, int]] = [(tree, 0)]
    largest = 0.0
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _Bad(where, f"the tree is deeper than {MAX_DEPTH} levels")
        if not isinstance(node, dict):
            raise _Bad(where, "a node is not an object")
        if "split" in node:
            _check_split(node["split"], where, split_of, borders)
            if "left" not in node or "right" not in node:
                raise _Bad(where, "a split node needs a left and a right child")
            stack.extend(((node["left"], depth + 1), (node["right"], depth + 1)))
        elif isinstance(node.get("value"), list):
            raise _Bad(where, "a multi-dimensional model gives several scores per document",
                       "train the ranker with one output (YetiRank, PairLogit, QueryRMSE, RMSE, ...)")
        elif not _finite(node.get("value")) or not _finite(node.get("weight", 0)) or node.get("weight", 0) < 0:
            raise _Bad(where, "a leaf value or weight is not a finite number (weights: not negative)")
        else:
            largest = max(largest, abs(float(node["value"])))
    return largest


def rehearse_catboost(data: bytes, fmt: str, *, file: Path) -> bytes:
    """Load `data` with CatBoost in a throw-away process first; CatBoost's JSON export of it, or InputError if that
    process fails, crashes, runs out of memory or time."""
    memory = 2048 * MiB + 32 * len(data)  # the interpreter, catboost's extension (~1 GiB mapped), the model
    # The child's files (a copy of the model) live in a folder this process removes: a child that crashes cannot.
    with tempfile.TemporaryDirectory(prefix="auditor-catboost-") as folder:
        _, payload = rehearse(CHILD, [fmt, folder], data, file=file, library="CatBoost", fix=SAVE_AGAIN,
                              memory=memory, timeout=REHEARSAL_SECONDS + len(data) / MiB,
                              payload_limit=json_cap("CatBoost"))
    return payload
