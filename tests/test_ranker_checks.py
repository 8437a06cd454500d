"""The defences of the XGBoost, CatBoost and ONNX loaders: what each checker refuses (with the place and the fix),
and that the rehearsal alone — checker switched off, in a subprocess so a miss cannot kill pytest — turns the
crashes and hangs measured on edited files into one InputError line."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from auditor.core.errors import InputError
from auditor.models import catboost_check, xgboost_check
from auditor.models.catboost import load_catboost
from auditor.models.onnx import load_onnx
from auditor.models.xgboost import load_xgboost
from tests.conftest import ROOT
from tests.inputs import RANKERS, XGB, catboost_json, onnx_cases, onnx_graph, sum_axes, sum_nodes

CB = catboost_json()


def _tree(doc: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return doc["learner"]["gradient_booster"]["model"]["trees"][index]


def _xgb_edit(change) -> dict[str, Any]:
    doc = copy.deepcopy(XGB)
    change(doc)
    return doc


# --- XGBoost ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("change", "where", "needle"), [
    (lambda d: _tree(d, 3)["split_indices"].__setitem__(0, 50), "trees.3",
     "node 0 splits on feature 50, beyond the model's 11 features"),
    (lambda d: _tree(d)["split_indices"].__setitem__(0, -5), "trees.0", "splits on feature -5"),
    (lambda d: _tree(d)["right_children"].__setitem__(0, 0), "trees.0", "out of range"),
    (lambda d: _tree(d)["left_children"].__setitem__(1, 2), "trees.0", "node 2 is reached twice"),
    (lambda d: _tree(d)["split_conditions"].pop(), "trees.0", "split_conditions has 24 values, num_nodes needs 25"),
    (lambda d: _tree(d)["tree_param"].__setitem__("size_leaf_vector", "5"), "trees.0", "multi-target tree"),
    (lambda d: _tree(d)["split_type"].__setitem__(0, 1), "trees.0",
     "categories_nodes must list exactly the nodes whose split_type is 1"),
    (lambda d: _tree(d).update(split_type=[1] + [0] * 24, categories_nodes=[0], categories_segments=[0],
                               categories_sizes=[1], categories=[0]), "trees.0",
     "by categories, but feature_types does not make it categorical"),
    (lambda d: (d["learner"].__setitem__("feature_types", ["c"] * 11),
                _tree(d).update(split_type=[1] + [0] * 24, categories_nodes=[0], categories_segments=[0],
                                categories_sizes=[5], categories=[0])), "trees.0", "categories run past"),
    (lambda d: _tree(d)["split_conditions"].__setitem__(0, float("nan")), "trees.0", "not a finite number"),
    (lambda d: d["learner"]["gradient_booster"]["model"]["tree_info"].__setitem__(3, 5),
     "gradient_booster.model.tree_info", "one 0 per tree"),
    (lambda d: d["learner"]["learner_model_param"].__setitem__("num_class", "3"), "learner_model_param",
     "multi-class"),
    (lambda d: d["learner"]["gradient_booster"].__setitem__("name", "gblinear"), "learner.gradient_booster",
     "booster 'gblinear' is not audited"),
    (lambda d: d["learner"].__setitem__("feature_types", ["c"] * 3), "learner.feature_types",
     "feature_types must be 11 strings"),
])
def test_xgboost_checker_names_the_damage(change, where: str, needle: str) -> None:
    with pytest.raises(InputError) as caught:
        xgboost_check.check_model(_xgb_edit(change), file=Path("m.json"))
    assert caught.value.where == where and needle in caught.value.problem, caught.value.one_line()


def test_xgboost_legacy_binary_and_other_bytes(tmp_path: Path) -> None:
    (tmp_path / "model.bst").write_bytes(b"binf\x00\x00\x00\x3f" + bytes(200))
    with pytest.raises(InputError, match=r"legacy binary format is not read.*save it again"):
        load_xgboost(tmp_path / "model.bst")
    assert xgboost_check.file_format(b'{"learner": {}}', file=Path("m")) == "json"
    assert xgboost_check.file_format(b"{L\x00\x00\x00\x00\x00\x00\x00\x07learner", file=Path("m")) == "ubjson"


def test_xgboost_ubjson_is_checked_as_xgboost_read_it(tmp_path: Path) -> None:
    """A UBJSON file with a split beyond the features: XGBoost reads it (scoring past the row); the checker refuses
    the JSON the rehearsal saved."""
    import xgboost as xgb

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_xgb_edit(lambda d: _tree(d, 2)["split_indices"].__setitem__(0, 40))))
    booster = xgb.Booster()
    booster.load_model(str(bad))  # XGBoost takes it: this edit does not crash it
    booster.save_model(str(tmp_path / "bad.ubj"))
    with pytest.raises(InputError, match=r"trees\.2: node 0 splits on feature 40.*as XGBoost read it"):
        load_xgboost(tmp_path / "bad.ubj")


# --- CatBoost -----------------------------------------------------------------------------------------------------

def _cb_edit(change) -> dict[str, Any]:
    doc = copy.deepcopy(CB)
    change(doc)
    return doc


def _split(d: dict[str, Any], tree: int = 0, split: int = 0) -> dict[str, Any]:
    return d["oblivious_trees"][tree]["splits"][split]


@pytest.mark.parametrize(("change", "where", "needle"), [
    (lambda d: d["oblivious_trees"][0]["leaf_values"].pop(), "oblivious_trees.0", "4 splits need 16 leaf values"),
    (lambda d: d["oblivious_trees"][2]["leaf_weights"].__setitem__(0, -1), "oblivious_trees.2", "not negative"),
    (lambda d: _split(d).__setitem__("split_index", 10_000), "oblivious_trees.0", "is not one of the model's"),
    (lambda d: _split(d).__setitem__("float_feature_index", 50), "oblivious_trees.0",
     "float feature 50, beyond the model's 11 features"),
    (lambda d: _split(d).__setitem__("border", 0.123), "oblivious_trees.0", "CatBoost would use the first"),
    (lambda d: _split(d).__setitem__("split_type", "OnlineCtr"), "oblivious_trees.0", "not audited"),
    (lambda d: d["oblivious_trees"][0].__setitem__("splits", d["oblivious_trees"][0]["splits"] * 5),
     "oblivious_trees.0", "at most 16"),
    (lambda d: d["features_info"].__setitem__("categorical_features", [{"feature_index": 0}]),
     "features_info.categorical_features", "categorical, text and embedding features are not audited"),
    (lambda d: d["features_info"]["float_features"][3].__setitem__("flat_feature_index", 99),
     "features_info.float_features.3", "not a free column"),
    (lambda d: d.__setitem__("scale_and_bias", [1, [0, 1]]), "scale_and_bias", "several biases"),
])
def test_catboost_checker_names_the_damage(change, where: str, needle: str) -> None:
    with pytest.raises(InputError) as caught:
        catboost_check.check_model(_cb_edit(change), file=Path("m.json"))
    assert caught.value.where == where and needle in caught.value.problem, caught.value.one_line()


def test_catboost_categorical_model_is_refused_with_the_fix(tmp_path: Path) -> None:
    import catboost

    rng = np.random.default_rng(0)
    X = [[float(a), str(b)] for a, b in zip(rng.random(80), rng.integers(0, 3, 80), strict=True)]
    model = catboost.CatBoost({"loss_function": "YetiRank", "iterations": 3, "verbose": False, "thread_count": 1,
                               "allow_writing_files": False})
    model.fit(catboost.Pool(X, rng.integers(0, 3, 80), group_id=np.repeat(np.arange(8), 10), cat_features=[1]))
    model.save_model(str(tmp_path / "cat.cbm"))
    with pytest.raises(InputError, match=r"categorical, text and embedding features are not audited.*encode them"):
        load_catboost(tmp_path / "cat.cbm")


# --- ONNX ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", list(onnx_cases()))
def test_onnx_checker_refuses(case: str, tmp_path: Path) -> None:
    data, needle = onnx_cases()[case]
    (tmp_path / "m.onnx").write_bytes(data)
    with pytest.raises(InputError, match=re.escape(needle)):
        load_onnx(tmp_path / "m.onnx")


def test_onnx_feature_names_from_metadata_and_a_sound_graph(tmp_path: Path) -> None:
    from onnx import helper

    (tmp_path / "m.onnx").write_bytes(onnx_graph(sum_nodes(), sum_axes()))
    ranker = load_onnx(tmp_path / "m.onnx")
    assert ranker.feature_names is None and ranker.predict(np.ones((3, 11))).tolist() == [11.0] * 3
    explicit = [helper.make_node("ReduceSum", ["features", "axes"], ["score"], keepdims=0, domain="ai.onnx")]
    (tmp_path / "explicit.onnx").write_bytes(onnx_graph(explicit, sum_axes(),
                                                        opsets=[helper.make_opsetid("ai.onnx", 17)]))
    assert load_onnx(tmp_path / "explicit.onnx").predict(np.ones((1, 11))).tolist() == [11.0]
    assert load_onnx(RANKERS / "mlp.onnx").feature_names[:2] == ["genre_match", "price"]


# --- the rehearsal alone ------------------------------------------------------------------------------------------

_WITHOUT_CHECKERS = r'''
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from auditor.core.errors import InputError
from auditor.models import catboost, catboost_check, onnx as onnx_model, onnx_check, xgboost, xgboost_check
xgboost.check_model = catboost.check_model = lambda *a, **k: None   # the checkers off: the rehearsal alone
folder = Path(sys.argv[2])
onnx_check.REHEARSAL_SECONDS = 1  # the Loop hangs: the deadline decides only how long the test waits
onnx_check._check_nodes = lambda *a, **k: None
for name, load in (("xgb-cycle.json", xgboost.load_xgboost), ("cb-many-splits.json", catboost.load_catboost),
                   ("loop.onnx", onnx_model.load_onnx)):
    try:
        load(folder / name)
        print("LOADED", name)
    except InputError as exc:
        print("REFUSED", exc.one_line())
'''


@pytest.mark.slow
def test_rehearsal_alone_contains_crashes_and_hangs(tmp_path: Path) -> None:
    """Edits measured to kill XGBoost (the root as its own child: SIGSEGV) and CatBoost (an oblivious tree with
    ten times its splits: SIGSEGV, or SIGABRT under the rehearsal's memory cap), and a Loop of 10^13 iterations
    that hangs ONNX Runtime, each end as one InputError line with the checkers switched off."""
    (tmp_path / "xgb-cycle.json").write_text(
        json.dumps(_xgb_edit(lambda d: _tree(d)["right_children"].__setitem__(0, 0))))
    (tmp_path / "cb-many-splits.json").write_text(json.dumps(_cb_edit(
        lambda d: d["oblivious_trees"][0].__setitem__("splits", d["oblivious_trees"][0]["splits"] * 10))))
    (tmp_path / "loop.onnx").write_bytes(onnx_cases()["loop"][0])
    done = subprocess.run([sys.executable, "-c", _WITHOUT_CHECKERS, str(ROOT), str(tmp_path)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, f"the process died: {done.returncode}\n{done.stdout}\n{done.stderr[-2000:]}"
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("REFUSED") for line in lines), done.stdout
    assert "XGBoost crashed loading this model (SIGSEGV)" in lines[0]
    assert "CatBoost crashed loading this model (SIG" in lines[1]  # SIGSEGV or SIGABRT, by the memory left
    assert "ONNX Runtime did not finish loading this model in 1 s" in lines[2]
    assert not list(tmp_path.glob("core*"))


def test_a_catboost_child_stopped_midway_leaves_no_copy_of_the_model(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The rehearsal's child writes the model into a folder; a child stopped at its deadline (or crashed) cannot
    remove it, so this process makes and removes it (before, every suite run left a copy in /tmp)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # this process's temporary folders...
    monkeypatch.setenv("TMPDIR", str(scratch))  # ...and the child's
    monkeypatch.setattr(catboost_check, "REHEARSAL_SECONDS", 0.1)  # stopped while it imports catboost
    with pytest.raises(InputError, match="did not finish loading"):
        load_catboost(RANKERS / "catboost.cbm")
    assert not list(scratch.iterdir())
