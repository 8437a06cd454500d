"""Inputs that several test modules build on (not a test module): the bad-input baseline (spec, files, the
one-error-line check) shared by test_bad_input and the test_hardening_* modules, and the example rankers' files
and ONNX graphs shared by test_ranker_checks, test_hardening_models and test_bad_input."""

from __future__ import annotations

import copy
import csv
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from typer.testing import CliRunner

from auditor.cli import app

# --- the bad-input baseline: the bookstore's model and data, a small spec, and what a refusal must look like ------

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "bookstore"
FEATURES = ["genre_match", "price", "price_in_range", "n_reviews", "avg_review", "is_ebook", "publishing_year",
            "target_age", "sales_rank_log", "author_popularity", "sponsored", "own_brand"]
N = len(FEATURES)  # the bookstore model's features
DROP = object()  # an override value that removes the key

BASE_SPEC: dict[str, Any] = {
    "audit": {"title": "Bad input test", "organisation": "Test Org"},
    "model": {"path": "model.txt"},
    "dataset": {"path": "test.csv", "query_column": "qid", "label_column": "label", "doc_id_column": "doc_id"},
    "evidence": [{"ranking_quality": {"cutoffs": [1, 3, 10]}}],
    "policies": ["starter"],
    "seed": 7,
    "output": {"dir": "reports"},
}


def _merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if value is DROP:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def spec_text(**overrides: Any) -> str:
    """The baseline spec as block YAML, with top-level keys (or nested keys, via dicts) overridden or DROPped."""
    return yaml.safe_dump(_merge(BASE_SPEC, overrides), sort_keys=False, default_flow_style=False)


def write_base_spec(tmp: Path, text: str | None = None, name: str = "audit.yaml", **overrides: Any) -> Path:
    """Write a spec next to the baseline files: the given text, or the baseline with overrides (conftest's
    `write_spec` edits a copy of the bookstore's own spec instead)."""
    path = tmp / name
    path.write_text(spec_text(**overrides) if text is None else text, encoding="utf-8")
    return path


def pos(text: str, needle: str, nth: int = 1, shift: int = 0) -> str:
    """1-based `line:col` of the nth occurrence of `needle` in `text` (plus `shift` columns)."""
    index = -1
    for _ in range(nth):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1 + shift
    return f"{line}:{column}"


def read_rows(tmp: Path) -> tuple[list[str], list[list[str]]]:
    with (tmp / "test.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def edit_csv(tmp: Path, name: str, data_index: int, column: str, value: str) -> Path:
    """A copy of test.csv with one cell changed; `data_index` 0 is the first row after the header (file line 2)."""
    header, rows = read_rows(tmp)
    rows[data_index][header.index(column)] = value
    path = tmp / name
    write_csv(path, header, rows)
    return path


def svmlight_lines(tmp: Path, n_rows: int = 30, extra_features: int = 0) -> list[str]:
    """Bookstore rows as SVMlight/LETOR lines (1-based indices), optionally with more feature indices."""
    header, rows = read_rows(tmp)
    lines = []
    for row in rows[:n_rows]:
        values = [row[header.index(f)] for f in FEATURES] + ["0.5"] * extra_features
        pairs = " ".join(f"{i}:{v}" for i, v in enumerate(values, start=1))
        lines.append(f"{row[header.index('label')]} qid:{row[header.index('qid')]} {pairs}")
    return lines


def snapshot(tmp: Path) -> set[str]:
    return {str(p.relative_to(tmp)) for p in tmp.rglob("*") if "__pycache__" not in p.parts}


runner = CliRunner()
# What each model library prints when it logs natively: none of it may reach the terminal.
NATIVE_LOG = ("[LightGBM]", "xgboost/src", "WARNING: ", "catboost/libs", "onnxruntime", "[W:onnx", "[E:onnx")


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


@dataclass
class Case:
    spec: Path
    file: Path | None  # the file the message must name (None: a command-line usage error names no file)
    where: str | tuple[str, ...] | None  # the place after the file name (`line:col`, `row N`, a key); a tuple: any
    needles: tuple[str, ...]  # substrings of the message: the problem and the fix
    row: int | None = None  # a data row: the message must start `FILE:ROW:` (its file line)
    args: tuple[str, ...] = ()
    absent: tuple[Path, ...] = field(default=())  # files that must not exist afterwards (code must not run)


def assert_one_error_line(result: Any, case: Case) -> str:
    """Exit 2, no traceback, nothing on stdout, one `error: FILE[:WHERE]: ...` line on stderr. Returns the line."""
    shown = f"exit {result.exit_code}\nstdout: {result.stdout!r}\nstderr: {result.stderr!r}"
    assert result.exit_code == 2, shown
    assert isinstance(result.exception, SystemExit), shown  # not an uncaught exception
    assert "Traceback" not in result.stdout + result.stderr, shown
    assert result.stdout == "", shown
    lines = result.stderr.strip("\n").splitlines()
    assert len(lines) == 1, shown
    line = lines[0]
    wheres = (case.where,) if case.where is None or isinstance(case.where, str) else case.where
    if case.row is not None:  # data rows are named compiler-style, by their file line
        wheres = (str(case.row),)
    if case.file is None:
        prefixes = ["error: "]
    else:
        prefixes = [f"error: {case.file}" + (f":{where}" if where else "") + ": " for where in wheres]
    assert any(line.startswith(p) for p in prefixes), f"expected the line to start with one of {prefixes}\n{shown}"
    for needle in case.needles:
        assert needle in line, f"{needle!r} missing\n{shown}"
    return line


# --- the example rankers and ONNX graphs ---------------------------------------------------------------------------

RANKERS = EXAMPLE.parent / "rankers"
XGB = json.loads((RANKERS / "xgboost.json").read_text())


@functools.cache
def catboost_json() -> dict[str, Any]:
    """The example CatBoost ranker as CatBoost's JSON (made once, on first use: it imports CatBoost)."""
    import catboost

    model = catboost.CatBoost()
    model.load_model(str(RANKERS / "catboost.cbm"))
    with __import__("tempfile").TemporaryDirectory() as folder:
        model.save_model(f"{folder}/m.json", format="json")
        return json.loads(Path(f"{folder}/m.json").read_text())


def onnx_graph(nodes: list, inits: list | None = None, inputs: list | None = None, outputs: list | None = None,
               opsets: list | None = None) -> bytes:
    """An ONNX model of `nodes` over an 11-feature input `features` (the example rankers' width) and one score."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes, "g", inputs or [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["rows", 11])],
        outputs or [helper.make_tensor_value_info("score", TensorProto.FLOAT, ["rows"])], inits or [])
    model = helper.make_model(graph, opset_imports=opsets or [helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def sum_nodes() -> list:
    from onnx import helper

    return [helper.make_node("ReduceSum", ["features", "axes"], ["score"], keepdims=0)]


def sum_axes() -> list:
    from onnx import numpy_helper

    return [numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")]


def onnx_cases() -> dict[str, tuple[bytes, str]]:
    """ONNX models the loader refuses, by name: (the model's bytes, a substring of the refusal)."""
    from onnx import TensorProto, helper, numpy_helper

    external = numpy_helper.from_array(np.ones((11, 1), dtype=np.float32), "w")
    external.ClearField("raw_data")
    external.data_location = TensorProto.EXTERNAL
    external.external_data.add(key="location", value="../secret.bin")
    body = loop_body()
    loop_inits = [numpy_helper.from_array(np.array(10**13, dtype=np.int64), "M"),
                  numpy_helper.from_array(np.array(True), "C"), *sum_axes()]
    loop = [helper.make_node("ReduceSum", ["features", "axes"], ["s"], keepdims=0),
            helper.make_node("Loop", ["M", "C", "s"], ["score"], body=body)]
    two = [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["rows", 11]),
           helper.make_tensor_value_info("extra", TensorProto.FLOAT, ["rows", 1])]
    return {
        "custom-op": (onnx_graph([helper.make_node("Score", ["features"], ["score"], domain="vendor.ops")],
                                 opsets=[helper.make_opsetid("", 17), helper.make_opsetid("vendor.ops", 1)]),
                      "operator domain 'vendor.ops', which is not standard ONNX"),
        "unknown-op": (onnx_graph([helper.make_node("NotAnOp", ["features"], ["score"])]), "not an ONNX operator"),
        "loop": (onnx_graph(loop, loop_inits), "is a Loop"),
        "external": (onnx_graph([helper.make_node("MatMul", ["features", "w"], ["score"])], [external]),
                     "kept in an external file"),
        "two-inputs": (onnx_graph(sum_nodes(), sum_axes(), inputs=two), "has 2 inputs"),
        "fixed-rows": (onnx_graph(sum_nodes(), sum_axes(), inputs=[
            helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 11])]), "takes exactly 1 row(s)"),
        "free-features": (onnx_graph(sum_nodes(), sum_axes(), inputs=[
            helper.make_tensor_value_info("features", TensorProto.FLOAT, ["rows", "f"])]), "does not fix its number"),
        "int-input": (onnx_graph(sum_nodes(), sum_axes(), inputs=[
            helper.make_tensor_value_info("features", TensorProto.INT64, ["rows", 11])]), "not a float or double"),
        "wide-output": (onnx_graph([helper.make_node("Identity", ["features"], ["score"])], outputs=[
            helper.make_tensor_value_info("score", TensorProto.FLOAT, ["rows", 11])]), "not one score per row"),
        "not-onnx": (b"\x08\x07garbage", "not an ONNX model"),
    }


def loop_body() -> Any:
    """The body of an ONNX Loop that passes its condition and value through (the hostile graphs' Loops)."""
    from onnx import TensorProto, helper

    return helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Identity", ["v"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None)])
