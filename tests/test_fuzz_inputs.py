"""Property-based tests of every reader of user files: any input ends in a result or an InputError (exit 2),
never another exception, a hang or unbounded memory.

Generated inputs are mutations of real ones (the bookstore spec, the starter pack, the bookstore data) and
structured garbage (random YAML values, random SVMlight tokens, random CSV cells, random Parquet columns). Runs are
derandomised (the same examples on every machine, so CI does not flake) and bounded so `make test` stays quick.
"""

from __future__ import annotations

import io
import json
import math
import os
import resource
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.core.errors import InputError
from auditor.inputs.data import RankingData, load_ranking_data
from auditor.inputs.spec import load_spec
from auditor.judging.policy import load_pack
from tests.inputs import BASE_SPEC, EXAMPLE

# `AUDITOR_FUZZ_EXAMPLES=2000 pytest tests/test_fuzz_inputs.py` searches longer, with fresh random examples.
_DEEP = int(os.environ.get("AUDITOR_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=_DEEP or 80, deadline=None, derandomize=not _DEEP, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
STARTER = Path(__file__).resolve().parents[1] / "policies" / "starter.yaml"
SPEC_TEXT = yaml.safe_dump(BASE_SPEC, sort_keys=False)
CSV_TEXT = (EXAMPLE / "test.csv").read_text(encoding="utf-8")
CSV_HEAD = "\n".join(CSV_TEXT.splitlines()[:40]) + "\n"


@pytest.fixture(scope="module")
def folder() -> Path:
    """A folder with the bookstore model and data, so generated specs can name real files."""
    with tempfile.TemporaryDirectory() as name:
        path = Path(name)
        for file in ("model.txt", "test.csv"):
            (path / file).write_bytes((EXAMPLE / file).read_bytes())
        yield path


def ends_well(action: Callable[[], Any], expected: type | tuple[type, ...]) -> Any:
    """Run `action` with a memory ceiling: a result of the expected type or an InputError; anything else fails."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    ceiling = 8 << 30
    resource.setrlimit(resource.RLIMIT_AS, (ceiling if hard == resource.RLIM_INFINITY else min(ceiling, hard), hard))
    try:
        value = action()
    except InputError as exc:
        message = exc.one_line()
        assert "\n" not in message and message.strip(), repr(message)
        return exc
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert isinstance(value, expected), type(value)
    return value


# --- mutations ----------------------------------------------------------------------------------------------------

YAML_CHARS = ":-[]{}&*!|>#'\"\n\t 0123456789.eE+xnaif"


def mutated(text: str, chars: str = YAML_CHARS) -> st.SearchStrategy[str]:
    """`text` with a few edits: deleted, repeated or replaced spans, inserted characters, truncation."""
    edit = st.tuples(st.sampled_from(["delete", "insert", "replace", "repeat", "truncate"]),
                     st.integers(0, max(len(text) - 1, 0)), st.integers(1, 40),
                     st.text(alphabet=st.sampled_from(list(chars)), min_size=1, max_size=12))

    def apply(edits: list[tuple[str, int, int, str]]) -> str:
        out = text
        for kind, at, length, chars in edits:
            at = min(at, len(out))
            if kind == "delete":
                out = out[:at] + out[at + length:]
            elif kind == "insert":
                out = out[:at] + chars + out[at:]
            elif kind == "replace":
                out = out[:at] + chars + out[at + len(chars):]
            elif kind == "repeat":
                out = out[:at] + out[at:at + length] * 3 + out[at:]
            else:
                out = out[:at]
        return out

    return st.lists(edit, min_size=1, max_size=4).map(apply)


yaml_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                         st.text(max_size=20), st.sampled_from(["model.txt", "test.csv", "starter", "2027-01-01",
                                                                "< 0.5", "ranking_quality", "..", "/dev/zero"]))
yaml_values = st.recursive(yaml_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=20)


def _with_change(base: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    """A deep copy of `base` with the key at `path` set to `value` (created where missing)."""
    out = yaml.safe_load(yaml.safe_dump(base))
    node = out
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value
    return out


spec_paths = st.sampled_from([["audit", "title"], ["model", "path"], ["model", "kind"], ["dataset", "path"],
                              ["dataset", "format"], ["dataset", "max_label"], ["evidence"], ["policies"],
                              ["waivers"], ["seed"], ["output", "formats"], ["output", "templates"], ["masking"],
                              ["executor", "jobs"], ["background"], ["signing"], ["unknown"]])


# --- specs and packs ---------------------------------------------------------------------------------------------

@FUZZ
@given(text=mutated(SPEC_TEXT))
def test_spec_loader_on_mutated_text(folder: Path, text: str) -> None:
    spec = folder / "audit.yaml"
    spec.write_text(text, encoding="utf-8")
    ends_well(lambda: load_spec(spec), tuple)


@FUZZ
@given(path=spec_paths, value=yaml_values)
def test_spec_loader_on_changed_values(folder: Path, path: list[str], value: Any) -> None:
    spec = folder / "audit.yaml"
    spec.write_text(yaml.safe_dump(_with_change(BASE_SPEC, path, value)), encoding="utf-8")
    ends_well(lambda: load_spec(spec), tuple)


@FUZZ
@given(data=st.binary(max_size=400))
def test_spec_loader_on_bytes(folder: Path, data: bytes) -> None:
    spec = folder / "audit.yaml"
    spec.write_bytes(data)
    ends_well(lambda: load_spec(spec), tuple)


@FUZZ
@given(text=mutated(STARTER.read_text(encoding="utf-8")))
def test_pack_parser_on_mutated_text(folder: Path, text: str) -> None:
    pack = folder / "pack.yaml"
    pack.write_text(text, encoding="utf-8")
    ends_well(lambda: load_pack("./pack.yaml", base_dir=folder), object)


@pytest.mark.slow
@FUZZ
@given(key=st.sampled_from(["pack", "title", "version", "extends", "requires", "rules", "description"]),
       rule_key=st.sampled_from(["id", "evidence", "metric", "fail_if", "warn_if", "per_query", "severity",
                                 "required", "citation"]), value=yaml_values)
def test_pack_parser_on_changed_values(folder: Path, key: str, rule_key: str, value: Any) -> None:
    raw = yaml.safe_load(STARTER.read_text(encoding="utf-8"))
    raw = _with_change(raw, [key], value) if key != "rules" else raw
    if key == "rules" and raw["rules"]:
        raw["rules"][0][rule_key] = value
    pack = folder / "pack.yaml"
    pack.write_text(yaml.safe_dump(raw), encoding="utf-8")
    ends_well(lambda: load_pack("./pack.yaml", base_dir=folder), object)


# --- data readers ---------------------------------------------------------------------------------------------------

def svmlight_text() -> str:
    frame = pd.read_csv(io.StringIO(CSV_HEAD))
    features = [c for c in frame.columns if c not in ("qid", "label", "doc_id")]
    lines = []
    for _, row in frame.iterrows():
        pairs = " ".join(f"{i}:{row[f]}" for i, f in enumerate(features, start=1))
        lines.append(f"{int(row['label'])} qid:{row['qid']} {pairs} # docid = {row['doc_id']}")
    return "\n".join(lines) + "\n"


SVM_TEXT = svmlight_text()
svm_tokens = st.one_of(
    st.builds(lambda i, v: f"{i}:{v}", st.integers(-3, 10**7), st.one_of(st.floats(allow_nan=True), st.text(
        alphabet="0123456789.eE+-naif", max_size=8))),
    st.builds(lambda q: f"qid:{q}", st.one_of(st.integers(-5, 10**20), st.text(alphabet="0123456789x-", max_size=6))),
    st.sampled_from(["#", "# docid = d1", ":", "::", "1:", ":1", "qid:", "nan", "inf", "-1", "1e400", "\t", "\r"]),
    st.text(alphabet="0123456789:.#qid \t-e", max_size=10))


@FUZZ
@given(text=mutated(SVM_TEXT))
def test_svmlight_reader_on_mutated_text(folder: Path, text: str) -> None:
    path = folder / "data.txt"
    path.write_text(text, encoding="utf-8")
    ends_well(lambda: load_ranking_data(path, format="svmlight"), RankingData)


@FUZZ
@given(lines=st.lists(st.lists(svm_tokens, min_size=1, max_size=8).map(" ".join), min_size=1, max_size=12),
       n_features=st.sampled_from([None, 3, 11]), zero_based=st.sampled_from(["auto", True, False]))
def test_svmlight_reader_on_token_soup(folder: Path, lines: list[str], n_features: int | None,
                                       zero_based: Any) -> None:
    path = folder / "soup.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ends_well(lambda: load_ranking_data(path, format="svmlight", n_features=n_features, zero_based=zero_based),
              RankingData)


@FUZZ
@given(text=mutated(CSV_HEAD), nan_policy=st.sampled_from(["reject", "missing"]))
def test_csv_reader_on_mutated_text(folder: Path, text: str, nan_policy: str) -> None:
    path = folder / "data.csv"
    path.write_text(text, encoding="utf-8")
    ends_well(lambda: load_ranking_data(path, format="csv", doc_id_column="doc_id", nan_policy=nan_policy),
              RankingData)


cells = st.one_of(st.integers(-10**18, 10**18), st.floats(allow_nan=True, allow_infinity=True),
                  st.text(max_size=6), st.none(), st.booleans())


@FUZZ
@given(columns=st.lists(st.sampled_from(["qid", "label", "doc_id", "f1", "f2", "x y", "", "qid"]), min_size=1,
                        max_size=6),
       rows=st.lists(st.lists(cells, min_size=6, max_size=6), min_size=0, max_size=12))
def test_csv_reader_on_random_cells(folder: Path, columns: list[str], rows: list[list[Any]]) -> None:
    path = folder / "cells.csv"
    frame = pd.DataFrame([row[:len(columns)] for row in rows], columns=range(len(columns)))
    frame.columns = columns
    frame.to_csv(path, index=False)
    ends_well(lambda: load_ranking_data(path, format="csv", doc_id_column="doc_id" if "doc_id" in columns else None),
              RankingData)


column_kinds = st.sampled_from(["int", "float", "nan", "text", "bool", "none", "date", "huge"])


def _column(kind: str, n: int, rng: np.random.Generator) -> list[Any]:
    return {"int": lambda: list(rng.integers(0, 4, n)), "float": lambda: list(rng.random(n)),
            "nan": lambda: [math.nan if i % 2 else math.inf for i in range(n)],
            "text": lambda: [f"t{i % 3}" for i in range(n)], "bool": lambda: [bool(i % 2) for i in range(n)],
            "none": lambda: [None] * n, "date": lambda: list(pd.date_range("2026-01-01", periods=n)),
            "huge": lambda: [10**18 * (i % 3) for i in range(n)]}[kind]()


@FUZZ
@given(kinds=st.fixed_dictionaries({"qid": column_kinds, "label": column_kinds, "f1": column_kinds,
                                    "f2": column_kinds}),
       n=st.integers(0, 30), row_group=st.integers(1, 8), sample=st.sampled_from([None, 1, 3]),
       seed=st.integers(0, 2**16))
def test_parquet_reader_on_random_columns(folder: Path, kinds: dict[str, str], n: int, row_group: int,
                                          sample: int | None, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    table = pa.table({name: pa.array(_column(kind, n, rng), from_pandas=True) for name, kind in kinds.items()})
    path = folder / "data.parquet"
    pq.write_table(table, path, row_group_size=row_group)
    ends_well(lambda: load_ranking_data(path, format="parquet", sample_queries=sample,
                                        sample_rng=np.random.default_rng(0)), RankingData)


@FUZZ
@given(cut=st.integers(0, 4000), flips=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), max_size=4))
def test_parquet_reader_on_corrupt_bytes(folder: Path, cut: int, flips: list[tuple[int, int]]) -> None:
    frame = pd.read_csv(io.StringIO(CSV_HEAD))
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    data = bytearray(buffer.getvalue())
    for at, byte in flips:
        data[at % len(data)] = byte
    path = folder / "broken.parquet"
    path.write_bytes(bytes(data[:max(cut, 1)] if cut < len(data) else data))
    ends_well(lambda: load_ranking_data(path, format="parquet", doc_id_column="doc_id"), RankingData)


# --- LightGBM models ------------------------------------------------------------------------------------------------
# A crash inside LightGBM would kill pytest itself. These tests rely on the defence they exercise: LightGBM in this
# process reads only text that `check_model_text` passed and a throw-away process loaded (tests/test_model_checks.py
# tests that rehearsal on its own, in a subprocess). A model that loads is also scored, with contributions.

def small_model(*, sizes: bool) -> str:
    """The bookstore model cut to three trees (so that edits land in trees), with or without `tree_sizes`."""
    import lightgbm as lgb

    text = lgb.Booster(model_file=str(EXAMPLE / "model.txt")).model_to_string(num_iteration=3)
    return text if sizes else "\n".join(line for line in text.split("\n") if not line.startswith("tree_sizes="))


MODEL_SIZED, MODEL_PLAIN = small_model(sizes=True), small_model(sizes=False)
MODEL_CHARS = "0123456789-. =\n\teE+naiTrf[]:"
ROWS = np.vstack([np.zeros(11), np.full(11, np.nan), np.linspace(-1, 3000, 11), np.ones(11)])


def _load_and_score(path: Path) -> Any:
    from auditor.models.lightgbm import LightGBMRanker, load_lightgbm

    ranker = load_lightgbm(path)
    assert isinstance(ranker, LightGBMRanker)
    assert np.isfinite(ranker.predict(ROWS[:, :ranker.n_features] if ranker.n_features <= 11 else
                                      np.zeros((4, ranker.n_features)))).all()
    ranker.contributions(np.zeros((2, ranker.n_features)))
    return ranker


@FUZZ
@given(text=st.one_of(mutated(MODEL_SIZED, MODEL_CHARS), mutated(MODEL_PLAIN, MODEL_CHARS)))
def test_lightgbm_text_on_mutated_text(folder: Path, text: str, capfd: pytest.CaptureFixture[str]) -> None:
    path = folder / "model.txt"
    path.write_text(text, encoding="utf-8")
    ends_well(lambda: _load_and_score(path), object)
    assert "[LightGBM]" not in "".join(capfd.readouterr())


model_tokens = st.one_of(st.integers(-2**33, 2**33).map(str), st.sampled_from(
    ["-1", "0", "1", "2", "3", "10", "11", "14", "15", "-15", "-16", "2147483647", "2147483648", "nan", "inf", "-inf",
     "1e999", "0.5", "-0", "", " ", "x", "1.5", "3e", "=", "--1"]))
tree_keys = st.sampled_from(["num_leaves", "num_cat", "split_feature", "threshold", "decision_type", "left_child",
                             "right_child", "leaf_value", "leaf_count", "internal_count", "cat_boundaries",
                             "cat_threshold", "is_linear", "shrinkage", "max_feature_idx", "num_class",
                             "num_tree_per_iteration", "tree_sizes", "feature_names", "Tree"])


@FUZZ
@given(edits=st.lists(st.tuples(tree_keys, st.integers(0, 3), st.integers(0, 20), model_tokens), min_size=1,
                      max_size=3), sized=st.booleans())
def test_lightgbm_text_on_changed_numbers(folder: Path, edits: list[tuple[str, int, int, str]], sized: bool) -> None:
    """Values replaced inside real lines: child indices, features, counts and flags a hand edit could change."""
    lines = (MODEL_SIZED if sized else MODEL_PLAIN).split("\n")
    for key, nth, position, token in edits:
        hits = [i for i, line in enumerate(lines) if line.startswith(key + "=")]
        if not hits:
            continue
        index = hits[nth % len(hits)]
        name, values = lines[index].split("=", 1)
        parts = values.split(" ") if values else [""]
        parts[position % len(parts)] = token
        lines[index] = f"{name}={' '.join(parts)}"
    path = folder / "model.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    ends_well(lambda: _load_and_score(path), object)


def _dump() -> dict[str, Any]:
    import lightgbm as lgb

    return lgb.Booster(model_str=MODEL_PLAIN).dump_model()


DUMP = _dump()
json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(),
                                     st.text(max_size=8), st.sampled_from(["<=", "==", "NaN", "None", "Zero"])),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                           max_leaves=8)
node_keys = st.sampled_from(["split_index", "split_feature", "threshold", "decision_type", "default_left",
                             "missing_type", "left_child", "right_child", "leaf_index", "leaf_value", "leaf_count",
                             "internal_count", "split_gain"])


@FUZZ
@given(tree=st.integers(0, 2), path=st.lists(st.sampled_from(["left_child", "right_child"]), max_size=4),
       key=node_keys, value=json_values, top=st.sampled_from([None, "max_feature_idx", "feature_names", "num_class",
                                                             "objective", "feature_infos", "tree_info"]),
       delete=st.booleans())
def test_lightgbm_json_dump_on_changed_values(folder: Path, tree: int, path: list[str], key: str, value: Any,
                                             top: str | None, delete: bool) -> None:
    dump = json.loads(json.dumps(DUMP))
    if top is not None:
        dump[top] = value
    else:
        node = dump["tree_info"][tree]["tree_structure"]
        for step in path:
            node = node.get(step, node)
        if delete:
            node.pop(key, None)
        else:
            node[key] = value
    model = folder / "model.json"
    model.write_text(json.dumps(dump), encoding="utf-8")
    ends_well(lambda: _load_and_score(model), object)


@FUZZ
@given(data=st.binary(max_size=600))
def test_lightgbm_loader_on_bytes(folder: Path, data: bytes) -> None:
    path = folder / "model.txt"
    path.write_bytes(b"tree\n" + data)
    ends_well(lambda: _load_and_score(path), object)


# --- XGBoost, CatBoost and ONNX models --------------------------------------------------------------------------------
# As for LightGBM: a crash inside a library would kill pytest, so these rely on the defences they exercise (the
# checkers, and the rehearsal in a throw-away process; tests/test_ranker_checks.py tests the rehearsal alone). A
# model that loads is also scored, with contributions. The CatBoost rehearsal imports catboost (~1 s): fewer cases.
RANKERS = EXAMPLE.parent / "rankers"
FEW = settings(FUZZ, max_examples=_DEEP or 25)
CORRUPT = settings(FUZZ, max_examples=_DEEP or 40)  # a model file loaded and scored an example (~70 ms)


def _small_xgboost() -> dict[str, Any]:
    doc = json.loads((RANKERS / "xgboost.json").read_text(encoding="utf-8"))
    model = doc["learner"]["gradient_booster"]["model"]
    model.update(trees=model["trees"][:3], tree_info=[0, 0, 0], iteration_indptr=[0, 1, 2, 3])
    model["gbtree_model_param"]["num_trees"] = "3"
    return doc


def _small_catboost() -> dict[str, Any]:
    import catboost

    model = catboost.CatBoost()
    model.load_model(str(RANKERS / "catboost.cbm"))
    with tempfile.TemporaryDirectory() as name:
        model.save_model(f"{name}/m.json", format="json")
        doc = json.loads(Path(f"{name}/m.json").read_text(encoding="utf-8"))
    doc["oblivious_trees"] = doc["oblivious_trees"][:3]
    return doc


XGB_SMALL, CB_SMALL = _small_xgboost(), _small_catboost()


def _load_and_score_kind(kind: str, path: Path) -> Any:
    from auditor.models import KINDS

    ranker = KINDS[kind].load(path, False)
    n = ranker.n_features or 11
    rows = np.vstack([ROWS[:, :n], np.zeros((1, n))]) if n <= 11 else np.zeros((4, n))
    if kind == "onnx":  # a network may score NaN as NaN (and then refuses the rows): finite rows only
        rows = np.nan_to_num(rows)
    assert np.isfinite(ranker.predict(rows)).all()
    ranker.contributions(np.zeros((2, n)))
    return ranker


xgb_keys = st.sampled_from(["left_children", "right_children", "parents", "split_indices", "split_conditions",
                            "default_left", "base_weights", "sum_hessian", "split_type", "tree_param", "id",
                            "categories", "categories_nodes"])


@FUZZ
@given(tree=st.integers(0, 2), key=xgb_keys, index=st.integers(0, 12), value=json_values, whole=st.booleans(),
       top=st.sampled_from([None, "num_feature", "num_class", "base_score", "num_target"]))
def test_xgboost_json_on_changed_values(folder: Path, tree: int, key: str, index: int, value: Any, whole: bool,
                                        top: str | None, capfd: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(json.dumps(XGB_SMALL))
    if top is not None:
        doc["learner"]["learner_model_param"][top] = value
    else:
        _change_tree(doc, tree, key, index, value, whole)
    _loads_or_refuses(folder, doc, capfd)


def _change_tree(doc: dict[str, Any], tree: int, key: str, index: int, value: Any, whole: bool) -> None:
    """Set `key` of tree `tree` to `value`, whole or at one index."""
    node = doc["learner"]["gradient_booster"]["model"]["trees"][tree]
    if whole or not isinstance(node.get(key), list) or not node[key]:
        node[key] = value
    else:
        node[key][index % len(node[key])] = value


def _loads_or_refuses(folder: Path, doc: dict[str, Any], capfd: pytest.CaptureFixture[str]) -> None:
    """The changed XGBoost model loads and scores, or is one InputError; XGBoost's own C++ never speaks."""
    path = folder / "xgboost.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    ends_well(lambda: _load_and_score_kind("xgboost", path), object)
    assert "xgboost/src" not in "".join(capfd.readouterr())


def _small_categorical_xgboost() -> dict[str, Any]:
    """Three trees of an XGBRanker trained with `enable_categorical`: splits on sets of categories."""
    import pandas as pd
    import xgboost as xgb

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"x": rng.normal(size=300), "c": pd.Categorical(rng.choice(list("abcdef"), 300))})
    label = ((frame.c.isin(["a", "c", "e"])) + (frame.x > 0)).astype(int)
    model = xgb.XGBRanker(n_estimators=3, max_depth=3, enable_categorical=True, max_cat_to_onehot=1)
    model.fit(frame, label, qid=np.repeat(np.arange(30), 10))
    doc = json.loads(model.get_booster().save_raw("json"))
    assert any(any(t["split_type"]) for t in doc["learner"]["gradient_booster"]["model"]["trees"])
    return doc


XGB_CATEGORICAL = _small_categorical_xgboost()
xgb_categorical_keys = st.sampled_from(["split_type", "categories", "categories_nodes", "categories_segments",
                                        "categories_sizes", "split_indices"])


@settings(FUZZ, max_examples=_DEEP or 40)
@given(tree=st.integers(0, 2), key=xgb_categorical_keys, index=st.integers(0, 12), value=json_values,
       whole=st.booleans(), types=st.sampled_from([None, ["float", "float"], ["c", "c"], ["float"]]))
def test_xgboost_categorical_splits_on_changed_values(folder: Path, tree: int, key: str, index: int, value: Any,
                                                      whole: bool, types: list[str] | None,
                                                      capfd: pytest.CaptureFixture[str]) -> None:
    """A categorical split without its categories killed XGBoost: every change to a categorical model's category
    sets is a model that loads and scores, or one InputError."""
    doc = json.loads(json.dumps(XGB_CATEGORICAL))
    if types is not None:
        doc["learner"]["feature_types"] = types
    _change_tree(doc, tree, key, index, value, whole)
    _loads_or_refuses(folder, doc, capfd)


def _ubjson() -> bytes:
    import xgboost as xgb

    booster = xgb.Booster()
    booster.load_model(bytearray(json.dumps(XGB_SMALL).encode()))
    return bytes(booster.save_raw("ubj"))


UBJ = _ubjson()


@pytest.mark.slow
@CORRUPT
@given(cut=st.integers(0, len(UBJ)), flips=st.lists(st.tuples(st.integers(0, len(UBJ) - 1), st.integers(0, 255)),
                                                    max_size=4))
def test_xgboost_ubjson_on_corrupt_bytes(folder: Path, cut: int, flips: list[tuple[int, int]]) -> None:
    data = bytearray(UBJ)
    for at, value in flips:
        data[at] = value
    path = folder / "model.ubj"
    path.write_bytes(bytes(data[:cut] if cut < len(UBJ) // 2 else data))
    ends_well(lambda: _load_and_score_kind("xgboost", path), object)


cb_split_keys = st.sampled_from(["border", "float_feature_index", "split_index", "split_type"])


@FEW
@given(tree=st.integers(0, 2), split=st.integers(0, 3), key=cb_split_keys, value=json_values,
       leaf=st.sampled_from([None, "leaf_values", "leaf_weights"]), feature=st.integers(0, 10),
       feature_key=st.sampled_from([None, "borders", "flat_feature_index", "feature_index", "nan_value_treatment"]))
def test_catboost_json_on_changed_values(folder: Path, tree: int, split: int, key: str, value: Any, leaf: str | None,
                                         feature: int, feature_key: str | None) -> None:
    doc = json.loads(json.dumps(CB_SMALL))
    if feature_key is not None:
        doc["features_info"]["float_features"][feature][feature_key] = value
    elif leaf is not None:
        values = doc["oblivious_trees"][tree][leaf]
        values[split % len(values)] = value
    else:
        doc["oblivious_trees"][tree]["splits"][split][key] = value
    path = folder / "catboost.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    ends_well(lambda: _load_and_score_kind("catboost", path), object)


ONNX_BYTES = (RANKERS / "mlp.onnx").read_bytes()


@pytest.mark.slow
@CORRUPT
@given(cut=st.integers(0, len(ONNX_BYTES)),
       flips=st.lists(st.tuples(st.integers(0, len(ONNX_BYTES) - 1), st.integers(0, 255)), max_size=4))
def test_onnx_on_corrupt_bytes(folder: Path, cut: int, flips: list[tuple[int, int]]) -> None:
    data = bytearray(ONNX_BYTES)
    for at, value in flips:
        data[at] = value
    path = folder / "model.onnx"
    path.write_bytes(bytes(data[:cut] if cut < len(ONNX_BYTES) // 2 else data))
    ends_well(lambda: _load_and_score_kind("onnx", path), object)
