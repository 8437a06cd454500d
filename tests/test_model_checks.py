"""Damaged and edited model files: each ends in one InputError naming the file, the place and a fix — never a
crash, a hang or LightGBM's own output.

A crash inside LightGBM would kill pytest itself. The in-process tests rely on the defence they test: LightGBM in
this process only ever reads text that `check_model_text` passed and a throw-away process loaded. The tests of the
rehearsal alone (the checker switched off) run in a subprocess of their own, so that a missing rehearsal fails
the test instead of killing the run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from auditor.core.errors import InputError
from auditor.models import lightgbm_check
from auditor.models.lightgbm import load_lightgbm
from auditor.models.sklearn import _tree_problem, load_sklearn
from tests.conftest import BOOKSTORE

MODEL = (BOOKSTORE / "model.txt").read_text(encoding="utf-8")
ROOT = Path(__file__).resolve().parents[1]


def load_text(tmp_path: Path, text: str | bytes, name: str = "model.txt") -> InputError | None:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    try:
        load_lightgbm(path)
    except InputError as exc:
        assert "\n" not in exc.one_line()
        assert exc.file == str(path)
        return exc
    return None


def line_of(text: str, needle: str) -> int:
    return text.count("\n", 0, text.index(needle)) + 1


LINES = MODEL.split("\n")


def at(key: str, tree: int | None = None) -> int:
    """The index in LINES of `key=` (in tree `tree`, or in the header)."""
    start = LINES.index(f"Tree={tree}") if tree is not None else 0
    return next(i for i in range(start, len(LINES)) if LINES[i].startswith(key + "="))


def edited(index: int, new: str | None = None, *, insert: str | None = None) -> tuple[str, int]:
    """The model with line `index` replaced (or a line inserted after it); returns the text and the 1-based line
    the refusal must name."""
    lines = list(LINES)
    if insert is not None:
        lines.insert(index + 1, insert)
        return "\n".join(lines), index + 2
    lines[index] = new
    return "\n".join(lines), index + 1


N = int(LINES[at("max_feature_idx")].split("=", 1)[1]) + 1  # the bookstore model's features
TREE0 = int(LINES[at("tree_sizes")].split("=", 1)[1].split()[0])  # bytes of its first tree


def first_value(index: int, value: str) -> str:
    key, values = LINES[index].split("=", 1)
    return f"{key}={' '.join([value, *values.split()[1:]])}"


# --- truncation -----------------------------------------------------------------------------------------------

def _offsets() -> list[int]:
    """Cuts everywhere that matters: inside the header, at and inside tree blocks, before `end of trees`, inside the
    parameters, plus a spread over the whole file."""
    marks = [MODEL.index(s) for s in ("max_feature_idx", "feature_names", "tree_sizes", "Tree=0", "Tree=1",
                                      "end of trees", "parameters:", "[objective", "end of parameters")]
    spread = list(range(0, len(MODEL), len(MODEL) // 40))
    return sorted({m + d for m in marks for d in (-1, 0, 1, 7)} | set(spread) | {5, 40, 300})


@pytest.mark.parametrize("cut", _offsets())
def test_truncated_model_is_refused_or_whole(tmp_path: Path, cut: int, capfd: pytest.CaptureFixture[str]) -> None:
    text = MODEL[:cut]
    error = load_text(tmp_path, text)
    out, err = capfd.readouterr()
    assert "[LightGBM]" not in out + err, "LightGBM's own messages reached the terminal"
    if error is None:  # a cut after the trees (in the importances, or after the parameters) leaves them whole
        assert cut >= MODEL.index("end of trees") + len("end of trees"), cut
        return
    assert re.fullmatch(r"\d+", error.where or ""), error.one_line()
    if cut >= len("tree\n"):
        assert "cut short" in (error.fix or ""), error.one_line()  # said as a truncation, whatever line it hit


def test_truncation_names_the_tree_and_line(tmp_path: Path) -> None:
    cut = MODEL.index("leaf_value=", MODEL.index("Tree=3\n")) + 30
    error = load_text(tmp_path, MODEL[:cut])
    assert error is not None and error.problem == "the file ends inside tree 3"
    assert error.where == str(MODEL[:cut].count("\n") + 1) and "cut short" in error.fix


# --- edits ------------------------------------------------------------------------------------------------------

def _feature_beyond() -> tuple[str, int]:
    return edited(at("split_feature", 0), first_value(at("split_feature", 0), str(N)))


def _child_cycle() -> tuple[str, int]:
    return edited(at("left_child", 0), first_value(at("left_child", 0), "0"))


def _child_out_of_range() -> tuple[str, int]:
    return edited(at("right_child", 0), first_value(at("right_child", 0), "14"))


def _short_array() -> tuple[str, int]:
    return edited(at("threshold", 2), LINES[at("threshold", 2)].rsplit(" ", 1)[0])


def _not_a_number() -> tuple[str, int]:
    return edited(at("leaf_value", 1), first_value(at("leaf_value", 1), "abc"))


def _num_leaves() -> tuple[str, int]:
    text, _ = edited(at("num_leaves", 0), "num_leaves=16")
    return text, at("leaf_value", 0) + 1


def _tree_sizes() -> tuple[str, int]:
    return edited(at("tree_sizes"), first_value(at("tree_sizes"), str(TREE0 + 1)))


def _no_end_of_trees() -> tuple[str, int]:
    text = MODEL[:MODEL.index("end of trees")]
    return text, text.count("\n")


def _multiclass() -> tuple[str, int]:
    return edited(at("num_class"), "num_class=3")


def _max_feature_idx() -> tuple[str, int]:
    text, _ = edited(at("max_feature_idx"), "max_feature_idx=20")
    return text, at("feature_names") + 1


def _objective() -> tuple[str, int]:
    return edited(at("objective"), "objective=")


def _parameter_line() -> tuple[str, int]:
    return edited(LINES.index("[objective: lambdarank]"), "[objective lambdarank")


def _pandas_line() -> tuple[str, int]:
    return edited(LINES.index("pandas_categorical:[]"), "pandas_categorical:{")


def _leaf_nan() -> tuple[str, int]:
    return edited(at("leaf_value", 4), first_value(at("leaf_value", 4), "nan"))


def _duplicate_key() -> tuple[str, int]:
    return edited(at("leaf_count", 5), insert=LINES[at("leaf_count", 5)])


def _linear() -> tuple[str, int]:
    return edited(at("is_linear", 0), "is_linear=1")


def _decision_type() -> tuple[str, int]:
    return edited(at("decision_type", 0), first_value(at("decision_type", 0), "1"))


EDITS = [
    pytest.param(_feature_beyond, (f"tree 0 splits on feature {N}", f"beyond the model's {N} features",
                                   f"max_feature_idx={N - 1}"), id="split-feature-beyond-max-feature-idx"),
    pytest.param(_child_cycle, ("tree 0: node 0 is reached twice", "do not form a tree"), id="child-cycle"),
    pytest.param(_child_out_of_range, ("tree 0: right_child holds 14, out of range (-15 to 13)",),
                 id="child-out-of-range"),
    pytest.param(_short_array, ("tree 2: threshold has 13 values, num_leaves needs 14",), id="short-array"),
    pytest.param(_not_a_number, ("tree 1: leaf_value holds `abc`, not a number",), id="not-a-number"),
    pytest.param(_num_leaves, ("tree 0: leaf_value has 15 values, num_leaves needs 16",), id="num-leaves"),
    pytest.param(_tree_sizes, (f"tree_sizes gives tree 0 {TREE0 + 1} bytes, it has {TREE0}",), id="tree-sizes"),
    pytest.param(_no_end_of_trees, ("the file ends after 80 trees, without `end of trees`",), id="no-end-of-trees"),
    pytest.param(_multiclass, ("num_class=3", "multi-class"), id="multiclass"),
    pytest.param(_max_feature_idx, (f"feature_names has {N} entries, max_feature_idx=20 needs 21",),
                 id="max-feature-idx"),
    pytest.param(_objective, ("objective `` is not one LightGBM saves",), id="empty-objective"),
    pytest.param(_parameter_line, ("is not `[name: value]`",), id="parameter-line"),
    pytest.param(_pandas_line, ("pandas_categorical line is not a JSON list",), id="pandas-line"),
    pytest.param(_leaf_nan, ("tree 4: leaf_value holds `nan`, not a finite number",), id="leaf-nan"),
    pytest.param(_duplicate_key, ("tree 5: `leaf_count` appears twice",), id="duplicate-key"),
    pytest.param(_linear, ("tree 0 is a linear tree",), id="linear-tree"),
    pytest.param(_decision_type, ("tree 0 has categorical splits but num_cat=0",), id="categorical-without-sets"),
]


@pytest.mark.parametrize(("edit", "needles"), EDITS)
def test_edited_model_is_refused_with_its_line(tmp_path: Path, edit, needles: tuple[str, ...],
                                               capfd: pytest.CaptureFixture[str]) -> None:
    text, line = edit()
    error = load_text(tmp_path, text)
    assert error is not None, "the edited model loaded"
    for needle in needles:
        assert needle in error.problem, error.one_line()
    assert error.where == str(line), error.one_line()
    out, err = capfd.readouterr()
    assert "[LightGBM]" not in out + err


def test_bytes_lightgbm_would_misread(tmp_path: Path) -> None:
    nul = load_text(tmp_path, MODEL.replace("num_cat=0", "num_cat=0\0", 1))
    assert nul is not None and "NUL" in nul.problem and nul.where == str(line_of(MODEL, "num_cat=0"))
    latin = load_text(tmp_path, MODEL.encode("utf-8").replace(b"genre_match", b"genre_m\xe4tch", 1))
    assert latin is not None and "not UTF-8" in latin.problem and latin.where == str(line_of(MODEL, "feature_names"))
    cr = load_text(tmp_path, MODEL.replace("num_cat=0\n", "num_cat=0\rx\n", 1))
    assert cr is not None and "carriage return" in cr.problem
    assert load_text(tmp_path, MODEL.replace("\n", "\r\n")) is None  # Windows line ends are fine


def _chain_model(depth: int) -> str:
    """A one-tree model whose splits form a chain `depth` long (deeper than any real tree)."""
    n = depth + 1
    left = [i + 1 for i in range(depth - 1)] + [-1]
    right = [~(i + 1) for i in range(depth)]
    left[-1] = ~0
    arrays = {"split_feature": ["0"] * depth, "threshold": ["0.5"] * depth, "decision_type": ["2"] * depth,
              "left_child": [str(v) for v in left], "right_child": [str(v) for v in right]}
    tree = ["Tree=0", f"num_leaves={n}", "num_cat=0"] + [f"{k}={' '.join(v)}" for k, v in arrays.items()] + [
        "leaf_value=" + " ".join(["0.1"] * n), "is_linear=0", "shrinkage=1", "", ""]
    header = ["tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0", "max_feature_idx=0",
              "objective=regression", "feature_names=f", "feature_infos=none", ""]
    return "\n".join(header + tree) + "\nend of trees\n"


def test_depth_is_bounded(tmp_path: Path) -> None:
    assert load_text(tmp_path, _chain_model(100)) is None
    error = load_text(tmp_path, _chain_model(600))
    assert error is not None and "deeper than 512 levels" in error.problem


# --- JSON dumps ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dump() -> dict:
    import lightgbm as lgb

    return lgb.Booster(model_str=MODEL).dump_model()


def load_json(tmp_path: Path, dump: dict | str) -> InputError | None:
    return load_text(tmp_path, dump if isinstance(dump, str) else json.dumps(dump), "model.json")


def test_json_split_on_a_feature_the_data_does_not_have(tmp_path: Path, dump: dict) -> None:
    dump = json.loads(json.dumps(dump))
    dump["tree_info"][2]["tree_structure"]["left_child"]["split_feature"] = N
    error = load_json(tmp_path, dump)
    assert error is not None and error.where == "tree_info.2"
    assert f"splits on feature {N}, beyond the model's {N} features (max_feature_idx={N - 1})" in error.problem


@pytest.mark.parametrize(("change", "where", "needle"), [
    (lambda d: d.update(max_feature_idx=N + 1), "feature_names", f"feature_names has {N} names"),
    (lambda d: d.update(num_class=4), "num_class", "one score per document"),
    (lambda d: d["feature_names"].__setitem__(0, "genre match"), "feature_names", "holds a space"),
    (lambda d: d["tree_info"][0]["tree_structure"]["right_child"].update(split_index=0), "tree_info.0",
     "split_index 0 is repeated"),
    (lambda d: d["tree_info"][1].update(num_leaves=14), "tree_info.1", "split_index 13 is repeated or not 0 to 12"),
    (lambda d: d["tree_info"][0]["tree_structure"].update(decision_type="=="), "tree_info.0", "categorical"),
    (lambda d: d["tree_info"][0]["tree_structure"].update(threshold="0.5"), "tree_info.0", "not a number"),
    (lambda d: d["tree_info"][0]["tree_structure"].update(missing_type=["x"]), "tree_info.0", "missing_type"),
    (lambda d: d.update(tree_info=[]), "tree_info", "no trees"),
], ids=["names-count", "multiclass", "name-with-space", "split-index-twice", "num-leaves", "categorical",
        "threshold-text", "missing-type-list", "no-trees"])
def test_json_dump_damage(tmp_path: Path, dump: dict, change, where: str, needle: str) -> None:
    dump = json.loads(json.dumps(dump))
    change(dump)
    error = load_json(tmp_path, dump)
    assert error is not None and error.where == where and needle in error.problem, error and error.one_line()


def test_json_nested_too_deeply(tmp_path: Path) -> None:
    error = load_json(tmp_path, '{"a": ' * 100_000 + "1" + "}" * 100_000)
    assert error is not None and "nested too deeply" in error.problem


# --- the rehearsal ------------------------------------------------------------------------------------------------

_WITHOUT_CHECKER = """
import sys
from pathlib import Path
from auditor.core.errors import InputError
from auditor.models import lightgbm as module
module.check_model_text = lambda text, file: None  # the strict reader off: only the rehearsal stands
text = Path(sys.argv[1]).read_text()
for cut in (485, 873, 2000, 60000):
    path = Path(sys.argv[2]) / f"cut{cut}.txt"
    path.write_text(text[:cut])
    try:
        module.load_lightgbm(path)
        print("LOADED", cut)
    except InputError as exc:
        print("REFUSED", exc.one_line())
"""


def test_rehearsal_alone_contains_lightgbm_crashes(tmp_path: Path) -> None:
    """Cuts that make LightGBM abort (SIGABRT) or segfault in-process end as InputErrors with the checker off."""
    done = subprocess.run([sys.executable, "-c", _WITHOUT_CHECKER, str(BOOKSTORE / "model.txt"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, f"the process died: {done.returncode}\n{done.stdout}\n{done.stderr[-2000:]}"
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith("REFUSED") for line in lines), done.stdout
    assert any("LightGBM crashed loading this model (SIG" in line for line in lines), done.stdout
    assert "[LightGBM]" not in done.stdout + done.stderr
    assert not list(ROOT.glob("core*")) and not list(tmp_path.glob("core*"))


def test_rehearsal_that_hangs_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import time\ntime.sleep(30)\n")
    monkeypatch.setattr(lightgbm_check, "CHILD", sleeper)
    monkeypatch.setattr(lightgbm_check, "REHEARSAL_SECONDS", 0.5)
    with pytest.raises(InputError, match="did not finish loading this model in 1 s"):
        lightgbm_check.rehearse_load(MODEL, file=tmp_path / "model.txt")


# --- scikit-learn -------------------------------------------------------------------------------------------------

def fake_tree(left: list[int], right: list[int], feature: list[int], n_features: int = 3) -> SimpleNamespace:
    n = len(left)
    return SimpleNamespace(node_count=n, children_left=np.array(left), children_right=np.array(right),
                           feature=np.array(feature), value=np.zeros((n, 1, 1)), n_outputs=1, n_features=n_features)


@pytest.mark.parametrize(("tree", "needle"), [
    (fake_tree([1, -1, -1], [2, -1, -1], [0, -2, -2]), None),
    (fake_tree([1, -1, -1], [2, -1, -1], [3, -2, -2]), "node 0 splits on feature 3, beyond the model's 3 features"),
    (fake_tree([1, -1, -1], [3, -1, -1], [0, -2, -2]), "a child index is out of range"),
    (fake_tree([1, -1, -1], [1, -1, -1], [0, -2, -2]), "two parents"),
    (fake_tree([1, -1, -1], [-1, -1, -1], [0, -2, -2]), "one child"),
    # 0 -> (1, 2); 3 -> (4, 5); 4 -> (3, 6): every node has one parent, but 3 and 4 form a cycle off the root
    (fake_tree([1, -1, -1, 4, 3, -1, -1], [2, -1, -1, 5, 6, -1, -1], [0, -2, -2, 1, 2, -2, -2]), "cycle"),
], ids=["sound", "feature-beyond", "child-out-of-range", "two-parents", "one-child", "cycle"])
def test_sklearn_tree_shapes(tree: SimpleNamespace, needle: str | None) -> None:
    problem = _tree_problem(tree, 3)
    assert problem is None if needle is None else needle in problem


def test_skops_tree_splitting_beyond_the_features(tmp_path: Path) -> None:
    import skops.io as sio
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(0)
    X = rng.random((200, 4))
    model = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, X[:, 0])
    state = model.tree_.__getstate__()
    nodes = state["nodes"].copy()
    nodes["feature"][0] = 50  # what a hand-edited file can hold: scikit-learn would read past each row
    state["nodes"] = nodes
    model.tree_.__setstate__(state)
    sio.dump(model, tmp_path / "m.skops")
    with pytest.raises(InputError, match=r"m\.skops:tree_: node 0 splits on feature 50, beyond the model's 4"):
        load_sklearn(tmp_path / "m.skops", trust=False)


def test_values_lightgbm_writes_raw_into_its_dump_must_be_finite(tmp_path: Path) -> None:
    """internal_value is copied into `dump_model()` as written: `nan` there makes the dump unreadable JSON."""
    text, line = edited(at("internal_value", 2), first_value(at("internal_value", 2), "nan"))
    error = load_text(tmp_path, text)
    assert error is not None and error.where == str(line)
    assert "tree 2: internal_value holds `nan`, not a finite number" in error.problem
    text, _ = edited(at("threshold", 2), first_value(at("threshold", 2), "inf"))  # LightGBM clamps thresholds
    text = "\n".join(line for line in text.split("\n") if not line.startswith("tree_sizes="))
    assert load_text(tmp_path, text) is None
