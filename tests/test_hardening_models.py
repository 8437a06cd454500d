"""Model loaders, second hardening round (issue 33): ONNX functions checked as ONNX Runtime resolves them, a time
limit and a measured memory plan for every ONNX call, caps on JSON models, and scores that are not finite numbers
— each one line on stderr naming the model file, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from auditor.core.errors import InputError
from auditor.models import json_dump, onnx_scoring
from auditor.models.catboost import load_catboost
from auditor.models.onnx import load_onnx
from auditor.models.onnx_check import check_graph
from auditor.models.onnx_scoring import MAX_BATCH, MiB, need, plan_batches
from auditor.models.xgboost import load_xgboost
from tests.inputs import (
    DROP,
    FEATURES,
    RANKERS,
    XGB,
    Case,
    N,
    assert_one_error_line,
    catboost_json,
    invoke,
    loop_body,
    snapshot,
    write_base_spec,
)

CB = catboost_json()
YEAR = FEATURES.index("publishing_year")  # 2026 is in the bookstore's data, never in the rehearsal's probe rows


# --- helpers ----------------------------------------------------------------------------------------------------

def _onnx(nodes: list, inits: list, *, functions: list | None = None, opsets: list | None = None,
          features: int = N) -> bytes:
    from onnx import TensorProto, helper

    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("features", TensorProto.FLOAT,
                                                                         ["rows", features])],
                              [helper.make_tensor_value_info("score", TensorProto.FLOAT, ["rows"])], inits)
    model = helper.make_model(graph, opset_imports=opsets or [helper.make_opsetid("", 17)],
                              functions=functions or [])
    model.ir_version = 8
    return model.SerializeToString()


def _tensor(value: Any, name: str, dtype: Any = np.float32) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def _row_sum(into: str = "score", source: str = "features") -> list:
    from onnx import helper

    return [helper.make_node("ReduceSum", [source, "axes"], [into], keepdims=0)]


AXES = [_tensor([1], "axes", np.int64)]


def _year_seen() -> list:
    """Nodes making `seen`, a float 1.0 when some row's publishing year is 2026 (the real data), else 0.0."""
    from onnx import TensorProto, helper

    return [helper.make_node("Gather", ["features", "year_col"], ["year"], axis=1),
            helper.make_node("Equal", ["year", "y2026"], ["hit"]),
            helper.make_node("Cast", ["hit"], ["hit_f"], to=TensorProto.FLOAT),
            helper.make_node("ReduceMax", ["hit_f"], ["seen"], keepdims=0)]


YEAR_INITS = [_tensor(YEAR, "year_col", np.int64), _tensor(2026.0, "y2026")]


def _refused(base: Path, spec: Path, case: Case) -> str:
    """Run the report; one error line as `case` says, nothing written. Returns the line."""
    before = snapshot(base)
    started = time.monotonic()
    result = invoke("report", str(spec), "--out", str(base / "out"), "--quiet")
    line = assert_one_error_line(result, case)
    assert time.monotonic() - started < 60
    assert list((base / "out").iterdir()) == [] and snapshot(base) == before
    return line


# --- 1. ONNX functions: by resolution, not by name ------------------------------------------------------------

def _loop_behind_a_function() -> bytes:
    """A real Loop whose trip count is 10^13 when the data holds 2026 (0 on the probe rows), beside a model-local
    function named ('', 'Loop') that only passes its input through."""
    from onnx import TensorProto, helper

    body = loop_body()
    decoy = helper.make_function("", "Loop", ["m", "c", "v"], ["out"], [helper.make_node("Identity", ["v"], ["out"])],
                                 [helper.make_opsetid("", 17)])
    nodes = [*_year_seen(), *_row_sum("s"), helper.make_node("Mul", ["seen", "huge"], ["trips_f"]),
             helper.make_node("Cast", ["trips_f"], ["trips"], to=TensorProto.INT64),
             helper.make_node("Loop", ["trips", "yes", "s"], ["score"], body=body)]
    inits = [*YEAR_INITS, *AXES, _tensor(1e13, "huge"), _tensor(True, "yes", np.bool_)]
    return _onnx(nodes, inits, functions=[decoy])


def test_a_function_named_loop_does_not_let_a_real_loop_past(tmp_path: Path) -> None:
    """ONNX Runtime runs its own Loop for ('', 'Loop'), not the function: refused when the graph is read."""
    path = tmp_path / "model.onnx"
    path.write_bytes(_loop_behind_a_function())
    with pytest.raises(InputError, match=r"function 'Loop' in domain '', the name of an ONNX Runtime operator") as e:
        check_graph(path.read_bytes(), file=path)
    assert e.value.where == "function Loop" and e.value.file == str(path)


def _gelu_model(domain: str) -> bytes:
    """score = the row's sum of `Gelu(features)`, Gelu a model-local function in `domain` whose body is Identity."""
    from onnx import helper

    function = helper.make_function(domain, "Gelu", ["x"], ["y"], [helper.make_node("Identity", ["x"], ["y"])],
                                    [helper.make_opsetid("", 17)])
    nodes = [helper.make_node("Gelu", ["features"], ["g"], domain=domain), *_row_sum(source="g")]
    return _onnx(nodes, AXES, functions=[function],
                 opsets=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])


def test_a_function_named_like_a_contrib_operator_is_refused(base: Path) -> None:
    """(com.microsoft, Gelu) ran ONNX Runtime's contrib kernel instead of the Identity body the graph shows."""
    path = base / "model.onnx"
    path.write_bytes(_gelu_model("com.microsoft"))
    spec = write_base_spec(base, model={"path": "model.onnx"})
    _refused(base, spec, Case(spec, path, "function Gelu", ("the name of an ONNX Runtime operator",
                                                            "a domain of their own")))
    (base / "own.onnx").write_bytes(_gelu_model("my.functions"))  # its own domain: the body runs
    rows = np.array([[-1.0] * N, [0.5] * N])
    np.testing.assert_allclose(load_onnx(base / "own.onnx").predict(rows), rows.sum(axis=1), rtol=1e-6)


@pytest.mark.parametrize(("domain", "name"), [("ai.onnx", "Scan"), ("ai.onnx.ml", "TreeEnsembleRegressor"),
                                              ("com.microsoft", "FusedMatMul")])
def test_any_runtime_operator_name_is_refused_for_a_function(tmp_path: Path, domain: str, name: str) -> None:
    from onnx import helper

    function = helper.make_function(domain, name, ["x"], ["y"], [helper.make_node("Identity", ["x"], ["y"])],
                                    [helper.make_opsetid("", 17)])
    data = _onnx([helper.make_node(name, ["features"], ["g"], domain=domain), *_row_sum(source="g")], AXES,
                 functions=[function], opsets=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])
    with pytest.raises(InputError, match="the name of an ONNX Runtime operator"):
        check_graph(data, file=tmp_path / "m.onnx")


def test_function_bodies_are_checked_with_their_own_opset_imports(tmp_path: Path) -> None:
    from onnx import helper

    imports_vendor = helper.make_function("my.functions", "F", ["x"], ["y"],
                                          [helper.make_node("Identity", ["x"], ["y"])],
                                          [helper.make_opsetid("", 17), helper.make_opsetid("vendor.ops", 1)])
    data = _onnx([helper.make_node("F", ["features"], ["g"], domain="my.functions"), *_row_sum(source="g")], AXES,
                 functions=[imports_vendor],
                 opsets=[helper.make_opsetid("", 17), helper.make_opsetid("my.functions", 1)])
    with pytest.raises(InputError, match=r"domain 'vendor\.ops', which is not standard") as e:
        check_graph(data, file=tmp_path / "m.onnx")
    assert e.value.where == "function F.opset_import"


# --- 2. a time limit on every ONNX call -----------------------------------------------------------------------

def _slow_on_real_data(size: int = 4000, products: int = 3) -> bytes:
    """Row sums, plus 0 × a chain of [k, k] matrix products whose k is 1 on the probe rows and `size` when a row's
    year is 2026: quick in the rehearsal, ~10^11 multiplications on the real data, in 200 MB."""
    from onnx import TensorProto, helper

    nodes = [*_year_seen(), helper.make_node("Mul", ["seen", "grow"], ["k_f"]),
             helper.make_node("Add", ["k_f", "one"], ["k1"]),
             helper.make_node("Cast", ["k1"], ["k"], to=TensorProto.INT64),
             helper.make_node("Unsqueeze", ["k", "zero_axis"], ["k_v"]),
             helper.make_node("Concat", ["k_v", "k_v"], ["shape"], axis=0),
             helper.make_node("ConstantOfShape", ["shape"], ["m0"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1e-3]))]
    nodes += [helper.make_node("MatMul", [f"m{i}", "m0"], [f"m{i + 1}"]) for i in range(products)]
    nodes += [helper.make_node("ReduceSum", [f"m{products}"], ["total"], keepdims=0),
              helper.make_node("Mul", ["total", "nothing"], ["zero"]), *_row_sum("s"),
              helper.make_node("Add", ["s", "zero"], ["score"])]
    inits = [*YEAR_INITS, *AXES, _tensor(size - 1.0, "grow"), _tensor(1.0, "one"), _tensor([0], "zero_axis", np.int64),
             _tensor(0.0, "nothing")]
    return _onnx(nodes, inits)


def test_a_call_that_runs_long_on_the_real_data_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "slow.onnx"
    path.write_bytes(_slow_on_real_data())
    ranker = load_onnx(path)  # the rehearsal's rows never hold 2026
    rows = np.zeros((5, N))
    np.testing.assert_array_equal(ranker.predict(rows), np.zeros(5))
    monkeypatch.setattr(onnx_scoring, "CALL_SECONDS", 0.5)  # ~4·10^11 multiplications: seconds on any machine
    rows[3, YEAR] = 2026
    started = time.monotonic()
    with pytest.raises(InputError, match=r"ONNX Runtime did not finish scoring 5 rows in 0\.5 s") as e:
        ranker.predict(rows)
    assert time.monotonic() - started < 10 and e.value.file == str(path)
    assert "does not depend on feature values" in str(e.value)
    assert _scoring_children() == []  # the child was killed, not left running


def test_a_call_that_swells_on_the_real_data_is_stopped_by_the_cap(tmp_path: Path) -> None:
    """A [40,000 × 40,000] tensor (6.4 GB) only when a row's year is 2026: the child's address space (4 GiB by
    default) stops it, not the machine's memory (before, the audit's own process allocated it)."""
    path = tmp_path / "swell.onnx"
    path.write_bytes(_slow_on_real_data(size=40_000, products=0))
    ranker = load_onnx(path)
    rows = np.zeros((5, N))
    rows[1, YEAR] = 2026
    with pytest.raises(InputError, match=r"ONNX Runtime ran out of memory scoring 5 rows under the [\d,]+ MiB") as e:
        ranker.predict(rows)
    assert e.value.file == str(path)
    assert _scoring_children() == []


def _scoring_children() -> list[int]:
    """Processes of ours that run `_onnx_serve.py`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and b"_onnx_serve.py" in command:
            found.append(int(entry.name))
    return found


# --- 3. memory: measured before running, and JSON caps ---------------------------------------------------------

def _gram() -> bytes:
    """score_i = Σ_j x_i·x_j: X·Xᵀ, free on 8 rows, 17 GB at the 65,536 rows one call used to take."""
    from onnx import helper

    return _onnx([helper.make_node("Transpose", ["features"], ["t"]), helper.make_node("MatMul", ["features", "t"],
                                                                                      ["p"]), *_row_sum(source="p")],
                 AXES)


def _pairwise() -> bytes:
    """score_i = Σ_j |x_i − x_j|²: an [n, n, features] tensor, 3 MB at 256 rows."""
    from onnx import helper

    nodes = [helper.make_node("Unsqueeze", ["features", "one_axis"], ["a"]),
             helper.make_node("Unsqueeze", ["features", "zero_axis"], ["b"]),
             helper.make_node("Sub", ["a", "b"], ["d"]),
             helper.make_node("Mul", ["d", "d"], ["d2"]),
             helper.make_node("ReduceSum", ["d2", "last_two"], ["score"], keepdims=0)]
    return _onnx(nodes, [_tensor([1], "one_axis", np.int64), _tensor([0], "zero_axis", np.int64),
                         _tensor([1, 2], "last_two", np.int64)])


def test_the_batch_is_chosen_from_the_memory_measured(tmp_path: Path) -> None:
    (tmp_path / "gram.onnx").write_bytes(_gram())
    gram = load_onnx(tmp_path / "gram.onnx")
    assert gram.BATCH < MAX_BATCH and gram.plan.need <= onnx_scoring.BATCH_MEMORY
    assert gram.BATCH >= 1024  # 4 MB of products at 1,024 rows
    rows = np.random.default_rng(0).random((3000, N))
    scores = gram.predict(rows)  # batches of gram.BATCH rows: each row summed against its own batch only
    assert scores.shape == (3000,) and np.isfinite(scores).all()
    assert load_onnx(RANKERS / "mlp.onnx").BATCH == MAX_BATCH  # a ranker's memory grows with its rows: all fit


def test_memory_growth_is_extrapolated_by_its_power() -> None:
    quadratic = {"batches": [[1024, 4 * MiB, 0.01], [2048, 16 * MiB, 0.04]], "failed": None}
    plan = plan_batches(quadratic, file=Path("m.onnx"), budget=1024 * MiB)
    assert plan.rows == 16_384 and plan.need == 1024 * MiB  # 16 MiB × 8²
    batches = [tuple(b) for b in quadratic["batches"]]
    assert need(batches, MAX_BATCH) == 16 * MiB * 32**2  # 16 GiB at 65,536 rows
    linear = {"batches": [[32_768, 8 * MiB, 0.01], [65_536, 16 * MiB, 0.02]], "failed": None}
    assert plan_batches(linear, file=Path("m.onnx"), budget=1024 * MiB).rows == MAX_BATCH
    failed = {"batches": [[256, MiB, 0.01]], "failed": {"rows": 512, "error": "MemoryError"}}
    assert plan_batches(failed, file=Path("m.onnx"), budget=1024 * MiB).rows == 256
    with pytest.raises(InputError, match=r"scoring 256 rows needs about 16.0 MiB.*growing as rows\^2.0"):
        plan_batches({"batches": [[256, 16 * MiB, 0.1], [512, 64 * MiB, 0.4]]}, file=Path("m.onnx"), budget=MiB)


def test_a_graph_whose_smallest_batch_does_not_fit_is_refused(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx_scoring, "BATCH_MEMORY", 2 * MiB)
    (base / "model.onnx").write_bytes(_pairwise())
    spec = write_base_spec(base, model={"path": "model.onnx"})
    line = _refused(base, spec, Case(spec, base / "model.onnx", None, ("scoring 256 rows needs about",
                                                                      "more than the 2 MiB one call may use",
                                                                      "AUDITOR_ONNX_MEMORY_MB")))
    assert re.search(r"growing as rows\^(1\.[5-9]|2\.\d)", line), line  # the pairs: quadratic
    assert load_onnx(RANKERS / "mlp.onnx").BATCH >= 4096  # a ranker's memory grows with its rows: it fits


def _xgboost_ubj(tmp: Path) -> Path:
    import xgboost as xgb

    booster = xgb.Booster()
    booster.load_model(str(RANKERS / "xgboost.json"))
    path = tmp / "model.ubj"
    path.write_bytes(bytes(booster.save_raw("ubj")))
    return path


def _catboost_json(tmp: Path) -> Path:
    path = tmp / "catboost.json"
    path.write_text(json.dumps(CB), encoding="utf-8")
    return path


@pytest.mark.parametrize(("library", "make", "load", "needle"), [
    ("XGBoost", lambda tmp: RANKERS / "xgboost.json", load_xgboost, "of XGBoost JSON, more than the 0 MiB"),
    ("XGBoost", _xgboost_ubj, load_xgboost, "XGBoost saves this model as more than 0 MiB of JSON"),
    ("CatBoost", _catboost_json, load_catboost, "of CatBoost JSON, more than the 0 MiB"),
    ("CatBoost", lambda tmp: RANKERS / "catboost.cbm", load_catboost, "CatBoost saves this model as more than 0"),
], ids=["xgboost-json", "xgboost-ubjson-export", "catboost-json", "catboost-cbm-export"])
def test_json_models_beyond_their_cap_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, library: str,
                                                  make: Any, load: Any, needle: str) -> None:
    """Caps measured so that a 4 GB machine survives the load (json_dump's docstring); a file's export counts too."""
    path = make(tmp_path)
    monkeypatch.setitem(json_dump.JSON_CAPS, library, 16 * 1024)  # 16 KiB: the examples are 30-160 KB
    with pytest.raises(InputError, match=needle) as e:
        load(path)
    assert e.value.file == str(path) and "AUDITOR_MAX_JSON_MODEL_MB" in str(e.value)
    monkeypatch.setenv("AUDITOR_MAX_JSON_MODEL_MB", "64")  # the way out, on a machine with the memory
    assert load(path).n_features == 11


def test_a_lightgbm_dump_beyond_its_cap_is_refused(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lightgbm as lgb

    dump = lgb.Booster(model_file=str(base / "model.txt")).dump_model()
    (base / "model.json").write_text(json.dumps(dump), encoding="utf-8")
    monkeypatch.setitem(json_dump.JSON_CAPS, "LightGBM", 64 * 1024)
    spec = write_base_spec(base, model={"path": "model.json"})
    _refused(base, spec, Case(spec, base / "model.json", None, ("of LightGBM JSON, more than the 0 MiB",
                                                                "AUDITOR_MAX_JSON_MODEL_MB")))


# --- 4. scores that are not finite numbers: refused at load for trees -----------------------------------------

def _lightgbm_leaves(tmp: Path, value: str, trees: tuple[int, ...] = (0, 1)) -> Path:
    lines = (tmp / "model.txt").read_text(encoding="utf-8").split("\n")
    tree = -1
    for i, line in enumerate(lines):
        tree = int(line[5:]) if line.startswith("Tree=") else tree
        if tree in trees and line.startswith("leaf_value="):
            lines[i] = "leaf_value=" + " ".join([value] * len(line[11:].split()))
    path = tmp / "inf.txt"
    path.write_text("\n".join(line for line in lines if not line.startswith("tree_sizes=")), encoding="utf-8")
    return path


def _xgboost_leaves(tmp: Path) -> Path:
    model = json.loads(json.dumps(XGB))
    for tree in model["learner"]["gradient_booster"]["model"]["trees"][:2]:
        for key in ("split_conditions", "base_weights"):
            tree[key] = [1e308 if left == -1 else v for left, v in zip(tree["left_children"], tree[key], strict=True)]
    path = tmp / "inf.json"
    path.write_text(json.dumps(model), encoding="utf-8")
    return path


def _catboost_leaves(tmp: Path) -> Path:
    model = json.loads(json.dumps(CB))
    for tree in model["oblivious_trees"][:2]:
        tree["leaf_values"] = [1e308] * len(tree["leaf_values"])
    path = tmp / "inf.json"
    path.write_text(json.dumps(model), encoding="utf-8")
    return path


def _line_of(path: Path, prefix: str, nth: int) -> str:
    lines = path.read_text(encoding="utf-8").split("\n")
    return str([i for i, line in enumerate(lines, 1) if line.startswith(prefix)][nth])


@pytest.mark.parametrize(("make", "kind", "where", "needle"), [
    (lambda tmp: _lightgbm_leaves(tmp, "1e308"), "lightgbm", lambda p: _line_of(p, "leaf_value=", 0),
     "tree 0: a score can reach 1e+308"),
    (lambda tmp: _lightgbm_leaves(tmp, "6e29"), "lightgbm", lambda p: _line_of(p, "leaf_value=", 1),
     "tree 1: a score can reach 1.2e+30"),  # each leaf finite, their sum beyond the bound
    (_xgboost_leaves, "xgboost", lambda p: "trees.0", "a score can reach 1e+308 (base_score plus"),
    (_catboost_leaves, "catboost", lambda p: "oblivious_trees.0", "a score can reach 1e+308 (the bias plus"),
], ids=["lightgbm-1e308", "lightgbm-sum", "xgboost-1e308", "catboost-1e308"])
def test_tree_models_whose_scores_can_be_infinite_are_refused(base: Path, make: Any, kind: str, where: Any,
                                                              needle: str) -> None:
    """Audited silently before, some with a positive opinion: the sum of each tree's largest |leaf| bounds every
    score, so the check is at load, with the tree."""
    path = make(base)
    spec = write_base_spec(base, model={"path": path.name, "kind": kind})
    _refused(base, spec, Case(spec, path, where(path), (needle, "beyond ±1e+30", "retrain the model")))


def test_sklearn_trees_whose_scores_can_be_infinite_are_refused(tmp_path: Path) -> None:
    from sklearn.tree import DecisionTreeRegressor

    from auditor.models.sklearn import check_trees

    tree = DecisionTreeRegressor(max_depth=2).fit(np.arange(20.0).reshape(-1, 2), np.arange(10.0))
    tree.tree_.value[:] = 1e31
    with pytest.raises(InputError, match="a score can reach 1e\\+31"):
        check_trees(tree, tmp_path / "m.skops")


# --- 5. ONNX and callable scores: the wrong count, NaN, inf ----------------------------------------------------

def _short() -> bytes:
    """Drops the score of every 2026 row (the probe rows keep theirs)."""
    from onnx import helper

    nodes = [*_row_sum("s"), helper.make_node("Gather", ["features", "year_col"], ["year"], axis=1),
             helper.make_node("Equal", ["year", "y2026"], ["hit"]), helper.make_node("Not", ["hit"], ["keep"]),
             helper.make_node("Compress", ["s", "keep"], ["score"], axis=0)]
    return _onnx(nodes, [*AXES, *YEAR_INITS])


def _nan_on_real_data() -> bytes:
    from onnx import helper

    nodes = [*_row_sum("s"), helper.make_node("Gather", ["features", "year_col"], ["year"], axis=1),
             helper.make_node("Equal", ["year", "y2026"], ["hit"]),
             helper.make_node("Where", ["hit", "nan", "s"], ["score"])]
    return _onnx(nodes, [*AXES, *YEAR_INITS, _tensor(np.nan, "nan")])


def _infinite() -> bytes:
    from onnx import helper

    return _onnx([*_row_sum("s"), helper.make_node("Div", ["one", "zero"], ["inf"]),
                  helper.make_node("Add", ["s", "inf"], ["score"])], [*AXES, _tensor(1.0, "one"), _tensor(0.0, "zero")])


@pytest.mark.parametrize(("make", "needles"), [
    (_short, ("the model returned", "scores for", "one score per input row")),
    (_nan_on_real_data, ("the model returned nan for", "rows (first: row", "finite score")),
    (_infinite, ("the model returned inf for", "rows (first: row 0)", "finite score")),
], ids=["short", "nan", "inf"])
def test_onnx_scores_of_the_wrong_count_or_not_finite_are_bad_input(base: Path, make: Any,
                                                                    needles: tuple[str, ...]) -> None:
    """Exit 3 "internal error" before; now the model file, the problem and the fix."""
    (base / "model.onnx").write_bytes(make())
    spec = write_base_spec(base, model={"path": "model.onnx"})
    _refused(base, spec, Case(spec, base / "model.onnx", None, needles))


@pytest.mark.parametrize(("body", "needle"), [("return X[:-1, 0]", "returned 63 scores for 64 rows"),
                                              ("return X[:, 0] * float('inf')", "returned inf for")],
                         ids=["short", "inf"])
def test_callable_scores_of_the_wrong_count_or_not_finite_are_bad_input(base: Path, body: str, needle: str) -> None:
    name = f"hardening_{abs(hash(body)) % 10**8}"
    (base / f"{name}.py").write_text(f"def score(X):\n    {body}\n", encoding="utf-8")
    spec = write_base_spec(base, model={"path": DROP, "kind": "callable", "entry": f"{name}:score", "trust": True})
    _refused(base, spec, Case(spec, base / f"{name}.py", "score", (needle,)))
