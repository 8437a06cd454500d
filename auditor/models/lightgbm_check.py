"""Is a LightGBM model text safe to hand to LightGBM? A strict reader of the text format, then a rehearsal.

LightGBM's C++ reader trusts its input: a truncated or edited `model.txt` makes it read past the end of the text,
index arrays out of range or follow child pointers in a cycle, so the process dies (SIGSEGV, abort) or hangs with
pages of `[LightGBM] [Fatal]` on the terminal. Two defences, both on every load:

1. `check_model_text` reads the whole format as LightGBM's `GBDT::LoadModelFromString` and `Tree::Tree(str)` do
   (v4) and refuses anything they would misread: header keys and their counts, every tree's arrays (lengths from
   `num_leaves`, numbers that parse, child indices that form one tree from the root, features within
   `max_feature_idx`, categorical bitsets within bounds), `tree_sizes` against the real tree blocks, `end of trees`,
   the parameters section and the `pandas_categorical` line. A refusal is one line: file, line number, what, fix.
2. `rehearse_load` loads the text in a throw-away process (`_lightgbm_child.py`: an interpreter without
   site-packages that opens LightGBM's shared library through ctypes) as `lightgbm.Booster(model_str=...)` would,
   and scores a few rows. Whatever the checker missed crashes or hangs that process, not the audit. Cost: ~16 ms
   to start plus LightGBM's parse (33 ms for the bookstore model, 0.2 s for 1,000 trees of 255 leaves).

docs/security.md has the measurements and what each defence does not cover.
"""

from __future__ import annotations

import json
import math
import re
from itertools import pairwise
from pathlib import Path

from auditor.core.errors import InputError
from auditor.models.base import BOUND_FIX, MAX_SCORE, bound_problem
from auditor.models.rehearsal import rehearse

MAX_LEAVES = 131_072  # LightGBM's own limit on num_leaves
MAX_DEPTH = 512  # LightGBM's TreeSHAP and JSON dump, and the dump's reader, recurse once per level
MAX_FEATURES = 1_000_000
TREE_LINES = 22  # Tree::Tree(str) reads at most this many key lines
INT32 = 2**31
_SAVE_AGAIN = "the file is damaged or was edited: save the model again with `Booster.save_model()`"
_TRUNCATED = "the file is cut short: copy all of it again, or save the model again with `Booster.save_model()`"
# Objectives whose saved form LightGBM reads back; multi-class models give several scores per document.
OBJECTIVES = {"regression", "regression_l1", "huber", "fair", "poisson", "quantile", "mape", "gamma", "tweedie",
              "binary", "cross_entropy", "cross_entropy_lambda", "lambdarank", "rank_xendcg", "custom", "none"}
TREE_KEYS = {"num_leaves", "num_cat", "split_feature", "split_gain", "threshold", "decision_type", "left_child",
             "right_child", "leaf_value", "leaf_weight", "leaf_count", "internal_value", "internal_weight",
             "internal_count", "cat_boundaries", "cat_threshold", "is_linear", "shrinkage", "leaf_const",
             "num_features", "leaf_features", "leaf_coeff"}
_HEADER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:=([^=]*))?")
_TREE_LINE = re.compile(r"([a-z_]+)=(.*)")
_INT = re.compile(r"-?[0-9]{1,12}")
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,4})?|-?inf|nan")
_OBJECTIVE_TOKEN = re.compile(r"[a-z_]+:-?[0-9.eE+-]{1,30}|sqrt")
_PARAMETER = re.compile(r"\[[A-Za-z0-9_]+: [^\n]*\]")


class _Bad(Exception):
    def __init__(self, line: int, problem: str, fix: str = _SAVE_AGAIN) -> None:
        super().__init__(problem)
        self.line, self.problem, self.fix = line, problem, fix


def model_text(data: bytes, *, file: Path) -> str:
    """The bytes as the text LightGBM will read: UTF-8 with `\\n` line ends."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError("the model file is not UTF-8 text", file=file, where=str(line), fix=_SAVE_AGAIN) from None
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        raise InputError("a carriage return inside a line", file=file, where=str(text.count("\n", 0, text.index("\r"))
                                                                                  + 1), fix=_SAVE_AGAIN)
    return text


def check_model_text(text: str, *, file: Path) -> None:
    """Raise InputError (`FILE:LINE: problem; fix`) unless LightGBM reads `text` as the model it appears to be."""
    if "\0" in text:  # LightGBM reads a C string: it would stop there
        raise InputError("a NUL character in the model text", file=file, where=str(text.count("\n", 0,
                         text.index("\0")) + 1), fix=_SAVE_AGAIN)
    lines = text.split("\n")
    if lines[-1] == "":  # the text's last newline ends a line; it does not start an empty one
        lines.pop()
    try:
        _check(lines)
        _check_pandas_line(text, len(lines))
    except _Bad as bad:
        raise InputError(bad.problem, file=file, where=str(bad.line), fix=bad.fix) from None


# --- the header -----------------------------------------------------------------------------------------------

def _check(lines: list[str]) -> None:
    if not lines or lines[0] != "tree":
        raise _Bad(1, "not a LightGBM model file (it does not start with `tree`)",
                   "save the model with `Booster.save_model()`, or set `model.kind` to the right kind")
    header: dict[str, tuple[str, int]] = {}
    at = 1
    while at < len(lines) and not lines[at].startswith("Tree="):
        line = lines[at]
        if line == "end of trees":
            raise _Bad(at + 1, "the model has no trees", "train the model before auditing it")
        if line:
            match = _HEADER.fullmatch(line)
            if match is None:
                raise _Bad(at + 1, f"header line `{line[:40]}` is not `key=value`")
            if match[1] in header:
                raise _Bad(at + 1, f"`{match[1]}` appears twice in the header")
            header[match[1]] = (match[2] or "", at + 1)
        at += 1
    if at == len(lines):
        raise _Bad(at, "the file ends before the first tree (`Tree=0`)", _TRUNCATED)
    first_tree = at
    n_features = _check_header(header, at + 1)
    end = _check_trees(lines, first_tree, n_features)
    if "tree_sizes" in header:
        _check_tree_sizes(lines, first_tree, end, header["tree_sizes"])
    _check_tail(lines, end + 1)


def _int(value: str, line: int, key: str, low: int, high: int) -> int:
    if _INT.fullmatch(value) is None:
        raise _Bad(line, f"`{key}={value[:20]}` is not an integer")
    number = int(value)
    if not low <= number <= high:
        raise _Bad(line, f"`{key}={number}` is out of range ({low} to {high})")
    return number


def _tokens(value: str) -> list[str]:
    """Space-separated values, as LightGBM splits them (runs of spaces count as one)."""
    return [token for token in value.split(" ") if token]


def _check_header(header: dict[str, tuple[str, int]], tree_line: int) -> int:
    """The header's keys; returns the model's number of features."""
    for key in ("num_class", "label_index", "max_feature_idx", "feature_names", "feature_infos"):
        if key not in header:
            raise _Bad(tree_line - 1, f"the header has no `{key}=` line")
    value, line = header["num_class"]
    if _int(value, line, "num_class", 0, INT32 - 1) != 1:
        raise _Bad(line, f"num_class={value}: a multi-class model gives several scores per document, a ranker one",
                   "audit a model trained with one output (lambdarank, rank_xendcg, regression, binary)")
    if "num_tree_per_iteration" in header:
        value, line = header["num_tree_per_iteration"]
        if _int(value, line, "num_tree_per_iteration", 0, INT32 - 1) != 1:
            raise _Bad(line, f"num_tree_per_iteration={value}: a ranker has one tree per iteration")
    _int(*header["label_index"], "label_index", 0, INT32 - 1)
    value, line = header["max_feature_idx"]
    n_features = _int(value, line, "max_feature_idx", 0, MAX_FEATURES - 1) + 1
    for key in ("feature_names", "feature_infos", "monotone_constraints"):
        if key in header:
            value, line = header[key]
            count = len(_tokens(value))
            if count != n_features:
                raise _Bad(line, f"{key} has {count} entries, max_feature_idx={n_features - 1} needs {n_features}")
    if "monotone_constraints" in header:
        value, line = header["monotone_constraints"]
        for token in _tokens(value):
            _int(token, line, "monotone_constraints", -1, 1)
    if "objective" in header:
        value, line = header["objective"]
        words = _tokens(value)
        if not words or words[0] not in OBJECTIVES:
            name = words[0] if words else ""
            multi = name.startswith("multiclass")
            raise _Bad(line, f"objective `{name[:30]}` is " + ("multi-class: a ranker gives one score per document"
                                                              if multi else "not one LightGBM saves"),
                       "audit a model trained with one output (lambdarank, rank_xendcg, regression, binary)" if multi
                       else _SAVE_AGAIN)
        for word in words[1:]:
            if _OBJECTIVE_TOKEN.fullmatch(word) is None:
                raise _Bad(line, f"objective option `{word[:30]}` is not `name:number`")
    return n_features


# --- the trees ------------------------------------------------------------------------------------------------

def _check_trees(lines: list[str], at: int, n_features: int) -> int:
    """Every `Tree=i` block from line index `at`; returns the index of the `end of trees` line. The trees' largest
    leaves together bound every score: beyond MAX_SCORE they are refused (1e308 twice is inf)."""
    index, bound = 0, 0.0
    while True:
        while at < len(lines) and lines[at] == "":
            at += 1
        if at == len(lines) or (at == len(lines) - 1 and lines[at] not in (f"Tree={index}", "end of trees")):
            raise _Bad(len(lines), f"the file ends after {index} trees, without `end of trees`", _TRUNCATED)
        if lines[at] == "end of trees":
            return at
        if lines[at] != f"Tree={index}":
            raise _Bad(at + 1, f"expected `Tree={index}` or `end of trees`, found `{lines[at][:40]}`")
        fields: dict[str, tuple[str, int]] = {}
        at += 1
        while True:
            if at == len(lines) or (at == len(lines) - 1 and lines[at] != ""):  # no blank line follows: LightGBM
                raise _Bad(len(lines), f"the file ends inside tree {index}", _TRUNCATED)  # would read past the end
            line = lines[at]
            if line == "":
                break
            if len(fields) == TREE_LINES:
                raise _Bad(at + 1, f"tree {index} has more than {TREE_LINES} lines (LightGBM stops reading there)")
            match = _TREE_LINE.fullmatch(line) if line.isascii() else None
            if match is None:
                raise _Bad(at + 1, f"tree {index}: line `{line[:40]}` is not `key=value`")
            if match[1] in fields:
                raise _Bad(at + 1, f"tree {index}: `{match[1]}` appears twice")
            fields[match[1]] = (match[2], at + 1)
            at += 1
        bound += _check_tree(index, fields, at, n_features)
        if not bound <= MAX_SCORE:
            how = f"the largest leaf of each of trees 0 to {index}, summed"
            raise _Bad(fields["leaf_value"][1], f"tree {index}: {bound_problem(bound, how)}", BOUND_FIX)
        index += 1


def _check_tree(index: int, fields: dict[str, tuple[str, int]], end: int, n_features: int) -> float:
    """Check one tree; return its largest |leaf value|."""
    where = f"tree {index}"
    for key in ("num_leaves", "num_cat", "leaf_value"):
        if key not in fields:
            raise _Bad(end, f"{where} has no `{key}=` line")
    unknown = sorted(set(fields) - TREE_KEYS)
    if unknown:
        raise _Bad(fields[unknown[0]][1], f"{where}: unknown field `{unknown[0]}`")
    if "is_linear" in fields and _int(*fields["is_linear"], "is_linear", 0, 1):
        raise _Bad(fields["is_linear"][1], f"{where} is a linear tree (is_linear=1), which this tool does not audit",
                   "audit a model trained without `linear_tree`")
    n = _int(*fields["num_leaves"], "num_leaves", 1, MAX_LEAVES)
    num_cat = _int(*fields["num_cat"], "num_cat", 0, n - 1)
    if "shrinkage" in fields:
        _floats(fields["shrinkage"], where, "shrinkage", 1, finite=True)
    largest = max(abs(float(v)) for v in _floats(fields["leaf_value"], where, "leaf_value", n, finite=True))
    if n == 1:  # LightGBM reads nothing else of a one-leaf tree (it writes its other arrays empty)
        return largest
    if "leaf_weight" in fields:
        _floats(fields["leaf_weight"], where, "leaf_weight", n, finite=True)
    if "leaf_count" in fields:
        _ints(fields["leaf_count"], where, "leaf_count", n, 0, INT32 - 1)
    for key in ("left_child", "right_child", "split_feature", "threshold"):
        if key not in fields:
            raise _Bad(end, f"{where} has no `{key}=` line")
    splits = n - 1
    left = _ints(fields["left_child"], where, "left_child", splits, -n, splits - 1)
    right = _ints(fields["right_child"], where, "right_child", splits, -n, splits - 1)
    features = _ints(fields["split_feature"], where, "split_feature", splits, 0, INT32 - 1)
    beyond = next((f for f in features if f >= n_features), None)
    if beyond is not None:
        raise _Bad(fields["split_feature"][1], f"{where} splits on feature {beyond}, beyond the model's "
                   f"{n_features} features (max_feature_idx={n_features - 1})", _SAVE_AGAIN)
    thresholds = _floats(fields["threshold"], where, "threshold", splits)
    if "split_gain" in fields:  # thresholds and gains may be infinite: LightGBM clamps them (AvoidInf)
        _floats(fields["split_gain"], where, "split_gain", splits)
    for key in ("internal_value", "internal_weight"):  # written raw into the JSON dump: nan/inf would break it
        if key in fields:
            _floats(fields[key], where, key, splits, finite=True)
    if "internal_count" in fields:
        _ints(fields["internal_count"], where, "internal_count", splits, 0, INT32 - 1)
    decisions = (_ints(fields["decision_type"], where, "decision_type", splits, 0, 11) if "decision_type" in fields
                 else [0] * splits)
    if any((d >> 2) & 3 == 3 for d in decisions):
        raise _Bad(fields["decision_type"][1], f"{where}: decision_type has an unknown missing-value type")
    _check_shape(left, right, where, (fields["left_child"][1], fields["right_child"][1]))
    categorical = [i for i, d in enumerate(decisions) if d & 1]
    if categorical or num_cat:
        _check_categories(categorical, thresholds, num_cat, fields, where, end)
    return largest


def _values(field: tuple[str, int], where: str, key: str, count: int, pattern: re.Pattern[str], kind: str,
            needs: str) -> list[str]:
    value, line = field
    tokens = _tokens(value)
    if len(tokens) != count:
        raise _Bad(line, f"{where}: {key} has {len(tokens)} values, {needs} needs {count}")
    if not all(map(pattern.fullmatch, tokens)):
        token = next(t for t in tokens if pattern.fullmatch(t) is None)
        raise _Bad(line, f"{where}: {key} holds `{token[:20]}`, not {kind}")
    return tokens


def _ints(field: tuple[str, int], where: str, key: str, count: int, low: int, high: int, *,
          needs: str = "num_leaves") -> list[int]:
    numbers = list(map(int, _values(field, where, key, count, _INT, "an integer", needs)))
    if numbers and not (low <= min(numbers) and max(numbers) <= high):
        number = next(n for n in numbers if not low <= n <= high)
        raise _Bad(field[1], f"{where}: {key} holds {number}, out of range ({low} to {high})")
    return numbers


def _floats(field: tuple[str, int], where: str, key: str, count: int, *, finite: bool = False) -> list[str]:
    """The values as written (checked to be numbers, and finite if asked); `float()` them where the value
    matters."""
    tokens = _values(field, where, key, count, _FLOAT, "a number", "num_leaves")
    if finite and not all(map(math.isfinite, map(float, tokens))):
        token = next(t for t in tokens if not math.isfinite(float(t)))
        raise _Bad(field[1], f"{where}: {key} holds `{token[:20]}`, not a finite number")
    return tokens


def _check_shape(left: list[int], right: list[int], where: str, lines: tuple[int, int]) -> None:
    """Children must form one binary tree from node 0: every split and every leaf reached exactly once, from the
    root (no cycle, no orphan), at most MAX_DEPTH levels deep. Leaves are written `~leaf` (negative)."""
    n_splits = len(left)
    seen_split = [False] * n_splits
    seen_leaf = [False] * (n_splits + 1)
    seen_split[0] = True
    stack = [(0, 0)]
    while stack:
        node, depth = stack.pop()
        if depth >= MAX_DEPTH:
            raise _Bad(lines[0], f"{where} is deeper than {MAX_DEPTH} levels", "audit a model with shallower trees "
                       "(LightGBM's `max_depth`)")
        for child, line in ((left[node], lines[0]), (right[node], lines[1])):
            if child < 0:
                if seen_leaf[~child]:
                    raise _Bad(line, f"{where}: leaf {~child} has two parents; the children do not form a tree")
                seen_leaf[~child] = True
            else:
                if seen_split[child]:
                    raise _Bad(line, f"{where}: node {child} is reached twice (a cycle or two parents); the children "
                               "do not form a tree")
                seen_split[child] = True
                stack.append((child, depth + 1))
    missing = next((i for i, seen in enumerate(seen_split) if not seen), None)
    if missing is not None:
        raise _Bad(lines[0], f"{where}: node {missing} is not reachable from the root")
    missing = next((i for i, seen in enumerate(seen_leaf) if not seen), None)
    if missing is not None:
        raise _Bad(lines[0], f"{where}: leaf {missing} is not reachable from the root")


def _check_categories(categorical: list[int], thresholds: list[str], num_cat: int,
                      fields: dict[str, tuple[str, int]], where: str, end: int) -> None:
    """A categorical split's threshold indexes `cat_boundaries`, whose ranges index the bitset `cat_threshold`."""
    line = fields["decision_type"][1] if "decision_type" in fields else end
    if categorical and num_cat == 0:
        raise _Bad(line, f"{where} has categorical splits but num_cat=0")
    for key in ("cat_boundaries", "cat_threshold"):
        if key not in fields:
            raise _Bad(end, f"{where} has num_cat={num_cat} but no `{key}=` line")
    boundaries = _ints(fields["cat_boundaries"], where, "cat_boundaries", num_cat + 1, 0, INT32 - 1,
                       needs="num_cat + 1")
    if boundaries[0] != 0 or any(b < a for a, b in pairwise(boundaries)):
        raise _Bad(fields["cat_boundaries"][1], f"{where}: cat_boundaries must start at 0 and never decrease")
    _ints(fields["cat_threshold"], where, "cat_threshold", boundaries[-1], 0, 2**32 - 1,
          needs="the last cat_boundaries value")
    for node in categorical:
        value = float(thresholds[node])
        if not (value.is_integer() and 0 <= value < num_cat):
            raise _Bad(fields["threshold"][1], f"{where}: categorical split {node} has threshold {value}, not a "
                       f"category set 0 to {num_cat - 1}")


def _check_tree_sizes(lines: list[str], first: int, end: int, field: tuple[str, int]) -> None:
    """LightGBM jumps to each tree by `tree_sizes` (bytes); they must be the real blocks, or it reads elsewhere."""
    value, line = field
    starts = [i for i in range(first, end) if lines[i].startswith("Tree=")] + [end]
    sizes = _tokens(value)
    if len(sizes) != len(starts) - 1:
        raise _Bad(line, f"tree_sizes lists {len(sizes)} trees, the file has {len(starts) - 1}")
    for index, (token, (start, stop)) in enumerate(zip(sizes, pairwise(starts), strict=True)):
        actual = sum(len(lines[i]) + 1 for i in range(start, stop))
        if _INT.fullmatch(token) is None or int(token) != actual:
            raise _Bad(line, f"tree_sizes gives tree {index} {token[:20]} bytes, it has {actual}")


def _check_tail(lines: list[str], at: int) -> None:
    """After `end of trees`: the parameters section, whose lines LightGBM splits at `:` and turns into JSON."""
    inside = False
    for number in range(at, len(lines)):
        line = lines[number]
        if line == "parameters:":
            inside = True
        elif line == "end of parameters":
            inside = False
            break
        elif inside and line and _PARAMETER.fullmatch(line) is None:
            if number == len(lines) - 1:
                break  # the last line, cut short: reported below
            raise _Bad(number + 1, f"parameter line `{line[:40]}` is not `[name: value]`")
    if inside:
        raise _Bad(len(lines), "the file ends inside the parameters section (no `end of parameters`)", _TRUNCATED)


def _check_pandas_line(text: str, n_lines: int) -> None:
    """The last line as `lightgbm.basic._load_pandas_categorical(model_str=...)` finds it: JSON, a list or null."""
    key = "pandas_categorical:"
    last = text[text.rfind("\n", 0, -len(key)):].strip()
    if not last.startswith(key):
        return
    try:
        value = json.loads(last[len(key):])
    except (ValueError, RecursionError):
        value = ""
    if value is not None and not isinstance(value, list):
        raise _Bad(n_lines, "the pandas_categorical line is not a JSON list or null")


# --- the JSON dump ----------------------------------------------------------------------------------------------

_DUMP_FIX = "use the output of `Booster.dump_model()` unchanged, or give the text model (`Booster.save_model()`)"
_MISSING_TYPES = {"None", "Zero", "NaN"}
_WORD = re.compile(r"[^\s=]+")


def check_json_dump(dump: object, *, file: Path) -> int:
    """Raise InputError (`FILE:tree_info.N: problem; fix`) unless `dump` is a single-output `dump_model()` whose
    trees are trees over the model's own features; returns the number of features. Only what the text format can
    carry passes, so the rebuilt text holds no line the dump did not mean."""
    def bad(problem: str, where: str | None = None, fix: str = _DUMP_FIX) -> InputError:
        return InputError(problem, file=file, where=where, fix=fix)

    if not isinstance(dump, dict):
        raise bad("not a LightGBM JSON dump (the top level is not an object)")
    for key in ("max_feature_idx", "feature_names", "tree_info"):
        if key not in dump:
            raise bad(f"not a LightGBM JSON dump (no `{key}`)")
    top = _whole(dump["max_feature_idx"], 0, MAX_FEATURES - 1)
    if top is None:
        raise bad(f"max_feature_idx is {str(dump['max_feature_idx'])[:20]}, not a feature index", "max_feature_idx")
    n_features = top + 1
    names = dump["feature_names"]
    if not isinstance(names, list) or len(names) != n_features:
        count = len(names) if isinstance(names, list) else "no"
        raise bad(f"feature_names has {count} names, max_feature_idx={top} needs {n_features}", "feature_names")
    odd = next((n for n in names if not isinstance(n, str) or _WORD.fullmatch(n) is None), None)
    if odd is not None:
        raise bad(f"feature name {str(odd)[:30]!r} is empty or holds a space or `=`", "feature_names")
    for key in ("num_class", "num_tree_per_iteration"):
        if key in dump and _whole(dump[key], 1, 1) is None:
            raise bad(f"{key} is {str(dump[key])[:20]}: a ranker gives one score per document", key,
                      "audit a model trained with one output (lambdarank, rank_xendcg, regression, binary)")
    if "label_index" in dump and _whole(dump["label_index"], 0, INT32 - 1) is None:
        raise bad("label_index is not a non-negative integer", "label_index")
    for key in ("version", "objective"):
        if key in dump and not (isinstance(dump[key], str) and re.fullmatch(r"[\w.:+ -]{1,200}", dump[key])):
            raise bad(f"{key} is not a short line of text", key)
    infos = dump.get("feature_infos", {})
    if not isinstance(infos, dict) or any(not isinstance(v, dict) or any(
            _number(v.get(k, 0.0)) is None for k in ("min_value", "max_value")) for v in infos.values()):
        raise bad("feature_infos is not a map of feature name to {min_value, max_value} numbers", "feature_infos")
    if not isinstance(dump["tree_info"], list) or not dump["tree_info"]:
        raise bad("the model has no trees (tree_info is empty)", "tree_info", "train the model before auditing it")
    for index, tree in enumerate(dump["tree_info"]):
        problem = _json_tree_problem(tree, n_features)
        if problem is not None:
            raise bad(problem[0], f"tree_info.{index}", problem[1] or _DUMP_FIX)
    return n_features


def _whole(value: object, low: int, high: int) -> int | None:
    """An integer (not a bool) in [low, high], else None."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return None
    return value


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _optional_fields(node: dict, numbers: tuple[str, ...], counts: tuple[str, ...]) -> str | None:
    for key in numbers:  # all but split_gain go into LightGBM's own JSON dump as written: finite
        value = _number(node[key]) if key in node else 0.0
        if value is None or (key != "split_gain" and not math.isfinite(value)):
            return f"{key} is {str(node[key])[:20]}, not a finite number"
    for key in counts:
        if key in node and _whole(node[key], 0, INT32 - 1) is None:
            return f"{key} is {str(node[key])[:20]}, not a count"
    return None


def _json_tree_problem(tree: object, n_features: int) -> tuple[str, str | None] | None:
    """What is wrong with one `tree_info` entry and how to fix it (None: the usual fix), or None."""
    problem = _json_tree_shape(tree, n_features)
    if problem is None or isinstance(problem, tuple):
        return problem
    return problem, None


def _json_tree_shape(tree: object, n_features: int) -> str | tuple[str, str] | None:
    if not isinstance(tree, dict) or not isinstance(tree.get("tree_structure"), dict):
        return "not a tree (no tree_structure object)"
    n = _whole(tree.get("num_leaves"), 1, MAX_LEAVES)
    if n is None:
        return f"num_leaves is {str(tree.get('num_leaves'))[:20]}, not 1 to {MAX_LEAVES}"
    splits: set[int] = set()
    leaves: set[int] = set()
    stack: list[tuple[object, int]] = [(tree["tree_structure"], 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict):
            return "a child is not a node object"
        if depth > MAX_DEPTH:
            return f"deeper than {MAX_DEPTH} levels"
        if "split_index" not in node:  # a leaf (the root of a one-leaf tree has no leaf_index)
            if "leaf_const" in node or "leaf_coeff" in node:
                return ("a linear tree (its leaves carry leaf_const/leaf_coeff), which this tool does not audit",
                        "audit a model trained without `linear_tree`")
            value = _number(node.get("leaf_value"))
            if value is None or not math.isfinite(value):
                return f"a leaf has leaf_value {str(node.get('leaf_value'))[:20]}, not a finite number"
            leaf = _whole(node.get("leaf_index", 0 if n == 1 else None), 0, n - 1)
            if leaf is None or leaf in leaves:
                return f"leaf_index {str(node.get('leaf_index'))[:20]} is missing, repeated or not 0 to {n - 1}"
            leaves.add(leaf)
            problem = _optional_fields(node, ("leaf_weight",), ("leaf_count",))
            if problem is not None:
                return f"leaf {leaf}: {problem}"
            continue
        split = _whole(node["split_index"], 0, n - 2)
        if split is None or split in splits:
            return f"split_index {str(node['split_index'])[:20]} is repeated or not 0 to {n - 2}"
        splits.add(split)
        feature = _whole(node.get("split_feature"), 0, INT32 - 1)
        if feature is None:
            return f"split {split}: split_feature {str(node.get('split_feature'))[:20]} is not a feature index"
        if feature >= n_features:
            return (f"split {split} splits on feature {str(node.get('split_feature'))[:20]}, beyond the model's "
                    f"{n_features} features (max_feature_idx={n_features - 1})")
        if node.get("decision_type") != "<=":
            return (f"split {split} is categorical (decision_type {str(node.get('decision_type'))[:10]!r}), which a "
                    "JSON dump cannot reproduce exactly", "give the model in LightGBM's text format "
                    "(`Booster.save_model()`)")
        if _number(node.get("threshold")) is None:
            return f"split {split} has threshold {str(node.get('threshold'))[:20]}, not a number"
        missing = node.get("missing_type", "None")
        if not isinstance(node.get("default_left", False), bool) or not isinstance(missing, str) \
                or missing not in _MISSING_TYPES:
            return f"split {split}: default_left must be true/false and missing_type one of None, Zero, NaN"
        problem = _optional_fields(node, ("split_gain", "internal_value", "internal_weight"), ("internal_count",))
        if problem is not None:
            return f"split {split}: {problem}"
        stack.append((node.get("left_child"), depth + 1))
        stack.append((node.get("right_child"), depth + 1))
    if len(splits) != n - 1 or len(leaves) != n:
        return f"num_leaves={n} but the tree has {len(leaves)} leaves and {len(splits)} splits"
    return None


# --- the rehearsal ----------------------------------------------------------------------------------------------

CHILD = Path(__file__).with_name("_lightgbm_child.py")
MiB = 1 << 20
REHEARSAL_SECONDS = 60.0  # plus a second per MiB of model text: a sound model parses in a small part of that


def rehearse_load(text: str, *, file: Path) -> None:
    """Load `text` with LightGBM in a throw-away process first (see the module's docstring); InputError if that
    process fails, crashes, runs out of memory or time."""
    import lightgbm as lgb

    library = getattr(getattr(lgb.basic, "_LIB", None), "_name", None)
    if not library:  # pragma: no cover - every LightGBM 4 has it
        return
    data = text.encode("utf-8")
    memory = 2048 * MiB + 16 * len(data)  # address space: the interpreter, OpenMP, and the parsed trees
    rehearse(CHILD, [library], data, file=file, library="LightGBM", fix=_SAVE_AGAIN, memory=memory,
             timeout=REHEARSAL_SECONDS + len(data) / MiB, site_packages=False)
