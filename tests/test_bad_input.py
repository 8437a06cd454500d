"""Bad-input corpus: every case runs the real CLI and must end with exit code 2 and ONE line on stderr.

The product rule: bad input gets exit code 2 and one line on stderr, starting `error: `, that names the file, the
place (line:col, row or key where it applies) and a fix; never a traceback; nothing written to the output folder
(no run folder, no leftover `.run-*` temporary folder).

Each case builds its files in `tmp_path` from the bookstore example (model.txt, test.csv) and a spec written by
`write_base_spec` with overrides (tests/inputs.py, shared with the hardening modules). Data rows are named by their
file line (`FILE:LINE:`), compiler-style.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.inputs import (
    DROP,
    EXAMPLE,
    FEATURES,
    NATIVE_LOG,
    RANKERS,
    Case,
    N,
    assert_one_error_line,
    edit_csv,
    invoke,
    onnx_cases,
    pos,
    read_rows,
    snapshot,
    spec_text,
    svmlight_lines,
    write_base_spec,
    write_csv,
)


@pytest.fixture(scope="session")
def tree_pickle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A joblib pickle of a DecisionTreeRegressor fitted on the bookstore features."""
    import joblib
    import pandas as pd
    from sklearn.tree import DecisionTreeRegressor

    frame = pd.read_csv(EXAMPLE / "test.csv")
    model = DecisionTreeRegressor(max_depth=4, random_state=0).fit(frame[FEATURES], frame["label"])
    path = tmp_path_factory.mktemp("pickle") / "model.pkl"
    joblib.dump(model, path)
    return path


# --- the cases --------------------------------------------------------------------------------------------------

def c_yaml_bad_indentation(tmp: Path) -> Case:
    text = spec_text().replace("\n  organisation: Test Org", "\n    organisation: Test Org")
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, "organisation:", shift=len("organisation")),
                ("invalid YAML", "mapping values are not allowed", "indentation"))


def c_unknown_top_key(tmp: Path) -> Case:
    text = spec_text().replace("\ndataset:", "\ndatset:")
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, "datset:"), ("unknown key 'datset'", "did you mean 'dataset'?"))


def c_unknown_evidence_option(tmp: Path) -> Case:
    text = spec_text(evidence=[{"ranking_quality": {"cutof": [1, 3]}}])
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, "cutof:"), ("unknown key 'cutof'", "did you mean 'cutoffs'?"))


def c_unknown_evidence_kind(tmp: Path) -> Case:
    text = spec_text(evidence=[{"ranking_qualty": {"cutoffs": [1, 3]}}])
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, (pos(text, "ranking_qualty:"), pos(text, "- ranking_qualty:")),
                ("unknown evidence kind 'ranking_qualty'", "did you mean 'ranking_quality'?"))


def c_wrong_type(tmp: Path) -> Case:
    text = spec_text(evidence=[{"ranking_quality": {"cutoffs": "ten"}}])
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, (pos(text, "cutoffs:"), pos(text, "cutoffs: ten", shift=len("cutoffs: "))),
                ("cutoffs", "'ten'", "expected type"))


def c_missing_required(tmp: Path) -> Case:
    text = spec_text(audit={"title": DROP})
    spec = write_base_spec(tmp, text)
    # the `audit:` key, or the start of its block (where `title:` goes)
    return Case(spec, spec, (pos(text, "audit:"), pos(text, "organisation:")),
                ("missing required key 'audit.title'", "add `title:` under audit"))


def c_missing_model_file(tmp: Path) -> Case:
    text = spec_text(model={"path": "missing-model.txt"})
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, (pos(text, "path: missing-model.txt"), pos(text, "missing-model.txt")),
                ("model.path", "no such file", "missing-model.txt", "check the path"))


def c_folder_for_file(tmp: Path) -> Case:
    (tmp / "datadir").mkdir()
    text = spec_text(dataset={"path": "datadir"})
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, (pos(text, "path: datadir"), pos(text, "datadir")),
                ("dataset.path", "is a folder", "file is expected"))


def c_csv_feature_dropped(tmp: Path) -> Case:
    header, rows = read_rows(tmp)
    drop = header.index("sponsored")
    data = tmp / "fewer.csv"
    write_csv(data, [h for i, h in enumerate(header) if i != drop], [[v for i, v in enumerate(r) if i != drop]
                                                                     for r in rows])
    spec = write_base_spec(tmp, dataset={"path": "fewer.csv",
                                         "feature_columns": [f for f in FEATURES if f != "sponsored"]})
    return Case(spec, data, None, (f"{N - 1} features", f"model expects {N}",
                                   "use the dataset the model was trained for"))


def c_svmlight_more_features(tmp: Path) -> Case:
    data = tmp / "wide.txt"
    data.write_text("\n".join(svmlight_lines(tmp, extra_features=1)) + "\n", encoding="utf-8")
    spec = write_base_spec(tmp, dataset={"path": "wide.txt", "doc_id_column": DROP})
    return Case(spec, data, None, (f"beyond the model's {N} features", "use the dataset the model was trained for"))


def c_csv_header_only(tmp: Path) -> Case:
    header, _ = read_rows(tmp)
    data = tmp / "empty.csv"
    write_csv(data, header, [])
    spec = write_base_spec(tmp, dataset={"path": "empty.csv"})
    return Case(spec, data, None, ("no documents", "non-empty file"))


def c_txt_empty(tmp: Path) -> Case:
    data = tmp / "empty.txt"
    data.write_text("", encoding="utf-8")
    spec = write_base_spec(tmp, dataset={"path": "empty.txt", "doc_id_column": DROP})
    return Case(spec, data, None, ("no documents", "non-empty file"))


def c_nan_rejected(tmp: Path) -> Case:
    data = edit_csv(tmp, "nan.csv", 3, "price", "")  # file line 5
    spec = write_base_spec(tmp, dataset={"path": "nan.csv"})
    return Case(spec, data, None, ("missing or infinite feature values", "nan_policy: missing"), row=5)


def c_label_40(tmp: Path) -> Case:
    data = edit_csv(tmp, "label40.csv", 5, "label", "40")  # file line 7
    spec = write_base_spec(tmp, dataset={"path": "label40.csv"})
    return Case(spec, data, None, ("label 40", "out of range", "max_label"), row=7)


def c_label_negative(tmp: Path) -> Case:
    lines = svmlight_lines(tmp)
    lines[2] = "-1" + lines[2][lines[2].index(" "):]  # line 3
    data = tmp / "negative.txt"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = write_base_spec(tmp, dataset={"path": "negative.txt", "doc_id_column": DROP})
    return Case(spec, data, None, ("label -1", "out of range", "integer grades from 0"), row=3)


def c_label_fraction(tmp: Path) -> Case:
    data = edit_csv(tmp, "fraction.csv", 0, "label", "1.5")  # file line 2
    spec = write_base_spec(tmp, dataset={"path": "fraction.csv"})
    return Case(spec, data, None, ("label 1.5", "out of range", "integer grades"), row=2)


def c_pickle_untrusted(tmp: Path, tree_pickle: Path) -> Case:
    model = tmp / "model.pkl"
    shutil.copy(tree_pickle, model)
    spec = write_base_spec(tmp, model={"path": "model.pkl"})
    return Case(spec, model, None, ("pickle", "arbitrary code", "model.trust: true"))


def c_yaml_python_tag(tmp: Path) -> Case:
    marker = tmp / "MARKER"
    text = spec_text().replace("title: Bad input test",
                               f"title: !!python/object/apply:os.system [\"echo hi > {marker}\"]")
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, "!!python"), ("python/object/apply:os.system", "not allowed", "remove the tag"),
                absent=(marker,))


def c_yaml_duplicate_key(tmp: Path) -> Case:
    text = spec_text().replace("\nseed: 7\n", "\nseed: 7\nseed: 8\n")
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, "seed:", nth=2), ("key 'seed' appears twice", "keep one of them"))


def c_unknown_pack(tmp: Path) -> Case:
    spec = write_base_spec(tmp, policies=["startr"])
    return Case(spec, spec, "policies", ("no built-in policy pack 'startr'", "did you mean 'starter'?"))


def c_waiver_unknown_rule(tmp: Path) -> Case:
    spec = write_base_spec(tmp, waivers=[{"rule": "BASE-3x", "justification": "known gap", "approver": "Risk",
                                     "expires": "2099-12-31"}])
    return Case(spec, spec, "waivers.0", ("waiver for unknown rule 'BASE-3x'", "did you mean 'BASE-3'?"))


def c_pack_bad_condition(tmp: Path) -> Case:
    pack_text = ("pack: custom\ntitle: Custom pack\nversion: \"1\"\nrules:\n  - id: C-1\n    title: Good enough\n"
                 "    evidence: ranking_quality\n    metric: ranking_quality.ndcg@10.mean\n"
                 "    fail_if: \"less than 3\"\n    severity: major\n    citation: Internal\n    rationale: Because\n")
    pack = tmp / "custom-pack.yaml"
    pack.write_text(pack_text, encoding="utf-8")
    spec = write_base_spec(tmp, policies=["./custom-pack.yaml"])
    return Case(spec, pack, (pos(pack_text, "fail_if:"), pos(pack_text, '"less than 3"')),
                ("rules.0.fail_if", "'less than 3' is not a condition", "'< 0.5'"))


def c_csv_non_numeric(tmp: Path) -> Case:
    data = edit_csv(tmp, "text.csv", 5, "price", "cheap")  # file line 7
    spec = write_base_spec(tmp, dataset={"path": "text.csv"})
    return Case(spec, data, None, ("feature column 'price'", "'cheap'", "must be numbers"), row=7)


def c_svmlight_bad_line(tmp: Path) -> Case:
    lines = svmlight_lines(tmp)
    lines[3] = re.sub(r" 2:\S+", " 2:abc", lines[3])  # line 4
    data = tmp / "broken.txt"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = write_base_spec(tmp, dataset={"path": "broken.txt", "doc_id_column": DROP})
    return Case(spec, data, "4", ("not valid SVMlight", "'abc' is not a number", "index:value"))


def c_callable_untrusted(tmp: Path) -> Case:
    marker = tmp / "IMPORTED"
    (tmp / "mymodel.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).touch()\n\n"
                                    "def score(X):\n    return X[:, 0]\n", encoding="utf-8")
    spec = write_base_spec(tmp, model={"path": DROP, "kind": "callable", "entry": "mymodel:score"})
    return Case(spec, spec, "model.entry", ("mymodel:score", "Python code", "model.trust: true"), absent=(marker,))


def c_unknown_data_suffix(tmp: Path) -> Case:
    data = tmp / "data.xyz"
    shutil.copy(tmp / "test.csv", data)
    spec = write_base_spec(tmp, dataset={"path": "data.xyz"})
    return Case(spec, data, None, ("cannot tell the data format", "data.xyz", "format: csv"))


def c_seed_negative(tmp: Path) -> Case:
    spec = write_base_spec(tmp)
    return Case(spec, None, None, ("--seed", "greater than or equal to 0", "--help"), args=("--seed", "-1"))


def _alias_bomb(levels: int = 7) -> str:
    """A few hundred bytes of YAML that expand to 10**levels values through nested aliases."""
    lines = ['bomb0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, levels):
        lines.append(f"bomb{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def c_yaml_alias_bomb(tmp: Path) -> Case:
    text = spec_text() + _alias_bomb()
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, "&a4"), ("expands to more than 100,000 values", "alias"))


def c_yaml_recursive_alias(tmp: Path) -> Case:
    text = spec_text() + "loop: &loop [*loop]\n"
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, "&loop"), ("alias refers to a value that contains it",))


def c_yaml_deep_nesting(tmp: Path) -> Case:
    text = spec_text() + "deep: " + "[" * 3000 + "]" * 3000 + "\n"
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, None, ("nested too deeply",))


def c_yaml_huge_spec(tmp: Path) -> Case:
    text = spec_text() + ("# padding\n" * 120_000)
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, None, ("MiB allowed", "never this large"))


def c_pack_alias_bomb(tmp: Path) -> Case:
    pack_text = ("pack: custom\ntitle: Custom pack\nversion: \"1\"\nrules:\n  - id: C-1\n    title: Good enough\n"
                 "    evidence: ranking_quality\n    metric: ranking_quality.ndcg@10.mean\n"
                 "    fail_if: \"< 0.5\"\n    severity: major\n    citation: Internal\n    rationale: Because\n"
                 + _alias_bomb())
    pack = tmp / "bomb-pack.yaml"
    pack.write_text(pack_text, encoding="utf-8")
    spec = write_base_spec(tmp, policies=["./bomb-pack.yaml"])
    return Case(spec, pack, pos(pack_text, "&a4"), ("expands to more than 100,000 values",))


def c_dataset_fifo(tmp: Path) -> Case:
    os.mkfifo(tmp / "pipe.csv")
    text = spec_text(dataset={"path": "pipe.csv"})
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, "pipe.csv"), ("dataset.path", "FIFO", "not a regular file"))


def c_dataset_device(tmp: Path) -> Case:
    (tmp / "random.csv").symlink_to("/dev/urandom")
    text = spec_text(dataset={"path": "random.csv"})
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, "random.csv"), ("dataset.path", "character device", "not a regular file"))


def c_feature_names_fifo(tmp: Path) -> Case:
    os.mkfifo(tmp / "names.txt")
    text = spec_text(dataset={"feature_names": "names.txt"})
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, "names.txt"), ("dataset.feature_names", "FIFO"))


def c_seed_quoted(tmp: Path) -> Case:
    text = spec_text().replace("\nseed: 7\n", '\nseed: "7"\n')
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, '"7"'), ("seed", "valid integer", "'7'"))


def c_cutoff_quoted(tmp: Path) -> Case:
    text = spec_text(evidence=[{"ranking_quality": {"cutoffs": [1, "3"]}}])
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, pos(text, "'3'"), ("cutoffs.1", "valid integer"))


def c_k_all_features(tmp: Path) -> Case:
    text = spec_text(evidence=[{"local_explanations": {"k": N, "methods": ["random"], "k_curve": []}}])
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, "evidence.0.local_explanations.k", (f"{N} of the data's {N} features", f"below {N}"))


def c_k_curve_all_features(tmp: Path) -> Case:
    text = spec_text(evidence=[{"local_explanations": {"methods": ["random"], "k_curve": [3, N + 1]}}])
    spec = write_base_spec(tmp, text)
    return Case(spec, spec, "evidence.0.local_explanations.k_curve.1", (f"{N + 1} of the data's {N} features",))


def c_confidence_k_all_features(tmp: Path) -> Case:
    spec = write_base_spec(tmp, evidence=[{"confidence": {"k": N}}])
    return Case(spec, spec, "evidence.0.confidence.k", ("leaves nothing out",))


def c_single_document_queries(tmp: Path) -> Case:
    header, rows = read_rows(tmp)
    for index, row in enumerate(rows):  # every document its own query
        row[header.index("qid")] = str(index)
    data = tmp / "singles.csv"
    write_csv(data, header, rows)
    spec = write_base_spec(tmp, dataset={"path": "singles.csv"})
    return Case(spec, data, None, ("only 0 of the 1627 queries have two or more documents", "no ranking to audit"))


def c_duplicate_documents(tmp: Path) -> Case:
    header, rows = read_rows(tmp)
    rows.insert(6, list(rows[4]))  # line 6 repeated as line 8
    data = tmp / "twice.csv"
    write_csv(data, header, rows)
    spec = write_base_spec(tmp, dataset={"path": "twice.csv"})
    doc, query = rows[4][header.index("doc_id")], rows[4][header.index("qid")]
    return Case(spec, data, None, (f"document '{doc}' of query '{query}' is listed 2 times", "first at 6, again at 8",
                                   "keep each (query, document) pair once"), row=6)


def c_template_runs_code(tmp: Path) -> Case:
    marker = tmp / "PWNED"
    folder = tmp / "brand" / "sections"
    folder.mkdir(parents=True)
    template = folder / "cover.html.j2"
    attack = "cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read()"
    template.write_text("<h1>{{ " + attack + " }}</h1>\n", encoding="utf-8")
    spec = write_base_spec(tmp, output={"dir": "reports", "templates": "brand"})
    return Case(spec, template, "1", ("'__", "Python internal", "report templates may not use"), absent=(marker,))


def c_template_runs_code_at_render(tmp: Path) -> Case:
    """The same attack spelt so that no `_` name is visible in the source: the sandbox refuses it at render."""
    marker = tmp / "PWNED"
    folder = tmp / "brand" / "sections"
    folder.mkdir(parents=True)
    template = folder / "cover.html.j2"
    u = '"_" ~ "_"'
    attack = f"((cycler|attr({u} ~ 'init' ~ {u}))|attr({u} ~ 'globals' ~ {u})).os.popen('touch {marker}').read()"
    template.write_text("<h1>\n{{ " + attack + " }}</h1>\n", encoding="utf-8")
    spec = write_base_spec(tmp, output={"dir": "reports", "templates": "brand"})
    return Case(spec, template, "2", ("may not do", "'__init__'", "unsafe"), absent=(marker,))


def _model_lines(tmp: Path) -> list[str]:
    return (tmp / "model.txt").read_text(encoding="utf-8").split("\n")


def _tree_field(lines: list[str], tree: int, key: str) -> int:
    start = lines.index(f"Tree={tree}")
    return next(i for i in range(start, len(lines)) if lines[i].startswith(key + "="))


def c_model_truncated(tmp: Path) -> Case:
    text = (tmp / "model.txt").read_text(encoding="utf-8")
    cut = text.index("leaf_value=", text.index("Tree=7\n")) + 25  # inside tree 7
    model = tmp / "cut.txt"
    model.write_text(text[:cut], encoding="utf-8")
    spec = write_base_spec(tmp, model={"path": "cut.txt"})
    return Case(spec, model, str(text[:cut].count("\n") + 1), ("the file ends inside tree 7", "cut short",
                                                                "Booster.save_model()"))


def c_model_truncated_in_header(tmp: Path) -> Case:
    text = (tmp / "model.txt").read_text(encoding="utf-8")
    model = tmp / "cut.txt"
    model.write_text(text[:text.index("tree_sizes=") + 40], encoding="utf-8")
    spec = write_base_spec(tmp, model={"path": "cut.txt"})
    return Case(spec, model, "10", ("the file ends before the first tree", "cut short"))


def c_model_split_feature_beyond(tmp: Path) -> Case:
    lines = _model_lines(tmp)
    index = _tree_field(lines, 3, "split_feature")
    values = lines[index].split("=", 1)[1].split()
    lines[index] = "split_feature=" + " ".join([str(N), *values[1:]])
    model = tmp / "beyond.txt"
    model.write_text("\n".join(lines), encoding="utf-8")
    spec = write_base_spec(tmp, model={"path": "beyond.txt"})
    return Case(spec, model, str(index + 1), (f"tree 3 splits on feature {N}", f"beyond the model's {N} features",
                                              f"max_feature_idx={N - 1}"))


def c_model_child_cycle(tmp: Path) -> Case:
    lines = _model_lines(tmp)
    index = _tree_field(lines, 0, "right_child")
    values = lines[index].split("=", 1)[1].split()
    lines[index] = "right_child=" + " ".join(["0", *values[1:]])
    model = tmp / "cycle.txt"
    model.write_text("\n".join(lines), encoding="utf-8")
    spec = write_base_spec(tmp, model={"path": "cycle.txt"})
    return Case(spec, model, str(index + 1), ("tree 0: node 0 is reached twice", "do not form a tree"))


def c_json_split_feature_beyond(tmp: Path) -> Case:
    import lightgbm as lgb

    dump = lgb.Booster(model_file=str(tmp / "model.txt")).dump_model()
    dump["tree_info"][5]["tree_structure"]["right_child"]["split_feature"] = N + 1
    model = tmp / "model.json"
    model.write_text(json.dumps(dump), encoding="utf-8")
    spec = write_base_spec(tmp, model={"path": "model.json"})
    return Case(spec, model, "tree_info.5", (f"splits on feature {N + 1}", f"beyond the model's {N} features",
                                             "dump_model()"))


def _xgboost_json(tmp: Path) -> dict[str, Any]:
    return json.loads((RANKERS / "xgboost.json").read_text(encoding="utf-8"))


def c_xgboost_split_feature_beyond(tmp: Path) -> Case:
    model = _xgboost_json(tmp)
    model["learner"]["gradient_booster"]["model"]["trees"][3]["split_indices"][0] = 50
    path = tmp / "xgboost.json"
    path.write_text(json.dumps(model), encoding="utf-8")
    spec = write_base_spec(tmp, model={"path": "xgboost.json", "kind": "xgboost"})
    return Case(spec, path, "trees.3", ("node 0 splits on feature 50", "beyond the model's 11 features",
                                        "booster.save_model('model.json')"))


def c_xgboost_ubjson_cut(tmp: Path) -> Case:
    import xgboost as xgb

    booster = xgb.Booster()
    booster.load_model(str(RANKERS / "xgboost.json"))
    data = booster.save_raw("ubj")
    path = tmp / "model.ubj"
    path.write_bytes(bytes(data[:len(data) // 2]))
    spec = write_base_spec(tmp, model={"path": "model.ubj"})
    return Case(spec, path, None, ("XGBoost cannot load this model", "save the model again"))


def c_xgboost_legacy_binary(tmp: Path) -> Case:
    path = tmp / "model.bst"
    path.write_bytes(b"binf" + bytes(range(256)) * 4)
    spec = write_base_spec(tmp, model={"path": "model.bst"})
    return Case(spec, path, None, ("legacy binary format is not read", "save it again with"))


def c_catboost_cut(tmp: Path) -> Case:
    data = (RANKERS / "catboost.cbm").read_bytes()
    path = tmp / "model.cbm"
    path.write_bytes(data[:len(data) // 2])
    spec = write_base_spec(tmp, model={"path": "model.cbm"})
    return Case(spec, path, None, ("CatBoost cannot load this model", "model.save_model('model.cbm')"))


def c_catboost_leaf_values(tmp: Path) -> Case:
    import catboost

    model = catboost.CatBoost()
    model.load_model(str(RANKERS / "catboost.cbm"))
    model.save_model(str(tmp / "export.json"), format="json")
    export = json.loads((tmp / "export.json").read_text(encoding="utf-8"))
    (tmp / "export.json").unlink()
    export["oblivious_trees"][4]["leaf_values"].pop()
    path = tmp / "catboost.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    spec = write_base_spec(tmp, model={"path": "catboost.json", "kind": "catboost"})
    return Case(spec, path, "oblivious_trees.4", ("4 splits need 16 leaf values", "save the model again"))


def c_catboost_categorical(tmp: Path) -> Case:
    import catboost
    import numpy as np

    rng = np.random.default_rng(0)
    rows = [[float(a), str(b)] for a, b in zip(rng.random(60), rng.integers(0, 3, 60), strict=True)]
    model = catboost.CatBoost({"loss_function": "YetiRank", "iterations": 3, "verbose": False, "thread_count": 1,
                               "allow_writing_files": False})
    model.fit(catboost.Pool(rows, rng.integers(0, 3, 60), group_id=np.repeat(np.arange(6), 10), cat_features=[1]))
    path = tmp / "cat.cbm"
    model.save_model(str(path))
    spec = write_base_spec(tmp, model={"path": "cat.cbm"})
    return Case(spec, path, "features_info.categorical_features",
                ("categorical, text and embedding features are not audited", "encode them as numbers"))


def _onnx_bytes(nodes: list, inits: list, opsets: list | None = None) -> bytes:
    from onnx import TensorProto, helper

    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["rows", 11])],
                              [helper.make_tensor_value_info("score", TensorProto.FLOAT, ["rows"])], inits)
    model = helper.make_model(graph, opset_imports=opsets or [helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def c_onnx_custom_op(tmp: Path) -> Case:
    from onnx import helper

    path = tmp / "model.onnx"
    path.write_bytes(_onnx_bytes([helper.make_node("Score", ["features"], ["score"], domain="vendor.ops")], [],
                                 [helper.make_opsetid("", 17), helper.make_opsetid("vendor.ops", 1)]))
    spec = write_base_spec(tmp, model={"path": "model.onnx"})
    return Case(spec, path, "opset_import", ("domain 'vendor.ops', which is not standard ONNX",
                                             "custom operators are not run"))


def c_onnx_loop(tmp: Path) -> Case:
    path = tmp / "model.onnx"
    path.write_bytes(onnx_cases()["loop"][0])
    spec = write_base_spec(tmp, model={"path": "model.onnx"})
    return Case(spec, path, "graph", ("is a Loop", "run time has no bound", "without Loop"))


def c_onnx_feature_count(tmp: Path) -> Case:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph([helper.make_node("ReduceSum", ["features", "axes"], ["score"], keepdims=0)], "g",
                              [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["rows", N + 1])],
                              [helper.make_tensor_value_info("score", TensorProto.FLOAT, ["rows"])],
                              [numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (tmp / "model.onnx").write_bytes(model.SerializeToString())
    spec = write_base_spec(tmp, model={"path": "model.onnx"})
    return Case(spec, tmp / "test.csv", None, (f"the data has {N} features but the model expects {N + 1}",))


CASES = [
    pytest.param(c_yaml_bad_indentation, id="yaml-bad-indentation"),
    pytest.param(c_unknown_top_key, id="unknown-top-key-datset"),
    pytest.param(c_unknown_evidence_option, id="unknown-evidence-option-cutof"),
    pytest.param(c_unknown_evidence_kind, id="unknown-evidence-kind"),
    pytest.param(c_wrong_type, id="wrong-type-cutoffs-ten"),
    pytest.param(c_missing_required, id="missing-audit-title"),
    pytest.param(c_missing_model_file, id="missing-model-file"),
    pytest.param(c_folder_for_file, id="folder-for-file"),
    pytest.param(c_csv_feature_dropped, id="csv-feature-dropped"),
    pytest.param(c_svmlight_more_features, id="svmlight-more-features"),
    pytest.param(c_csv_header_only, id="csv-header-only"),
    pytest.param(c_txt_empty, id="txt-empty"),
    pytest.param(c_nan_rejected, id="nan-rejected"),
    pytest.param(c_label_40, id="label-40"),
    pytest.param(c_label_negative, id="label-negative"),
    pytest.param(c_label_fraction, id="label-fraction"),
    pytest.param(c_pickle_untrusted, id="pickle-untrusted"),
    pytest.param(c_yaml_python_tag, id="yaml-python-tag"),
    pytest.param(c_yaml_duplicate_key, id="yaml-duplicate-key"),
    pytest.param(c_unknown_pack, id="unknown-policy-pack"),
    pytest.param(c_waiver_unknown_rule, id="waiver-unknown-rule"),
    pytest.param(c_pack_bad_condition, id="pack-bad-condition"),
    pytest.param(c_csv_non_numeric, id="csv-non-numeric"),
    pytest.param(c_svmlight_bad_line, id="svmlight-bad-line"),
    pytest.param(c_callable_untrusted, id="callable-untrusted"),
    pytest.param(c_unknown_data_suffix, id="unknown-data-suffix"),
    pytest.param(c_seed_negative, id="seed-negative"),
    pytest.param(c_yaml_alias_bomb, id="yaml-alias-bomb"),
    pytest.param(c_yaml_recursive_alias, id="yaml-recursive-alias"),
    pytest.param(c_yaml_deep_nesting, id="yaml-deep-nesting"),
    pytest.param(c_yaml_huge_spec, id="yaml-huge-spec"),
    pytest.param(c_pack_alias_bomb, id="pack-alias-bomb"),
    pytest.param(c_dataset_fifo, id="dataset-fifo"),
    pytest.param(c_dataset_device, id="dataset-dev-urandom"),
    pytest.param(c_feature_names_fifo, id="feature-names-fifo"),
    pytest.param(c_seed_quoted, id="seed-quoted"),
    pytest.param(c_cutoff_quoted, id="cutoff-quoted"),
    pytest.param(c_k_all_features, id="k-all-features"),
    pytest.param(c_k_curve_all_features, id="k-curve-all-features"),
    pytest.param(c_confidence_k_all_features, id="confidence-k-all-features"),
    pytest.param(c_single_document_queries, id="single-document-queries"),
    pytest.param(c_duplicate_documents, id="duplicate-documents"),
    pytest.param(c_template_runs_code, id="template-runs-code"),
    pytest.param(c_template_runs_code_at_render, id="template-runs-code-at-render"),
    pytest.param(c_model_truncated, id="model-truncated"),
    pytest.param(c_model_truncated_in_header, id="model-truncated-in-header"),
    pytest.param(c_model_split_feature_beyond, id="model-split-feature-beyond"),
    pytest.param(c_model_child_cycle, id="model-child-cycle"),
    pytest.param(c_json_split_feature_beyond, id="json-split-feature-beyond"),
    pytest.param(c_xgboost_split_feature_beyond, id="xgboost-split-feature-beyond"),
    pytest.param(c_xgboost_ubjson_cut, id="xgboost-ubjson-cut"),
    pytest.param(c_xgboost_legacy_binary, id="xgboost-legacy-binary"),
    pytest.param(c_catboost_cut, id="catboost-cbm-cut"),
    pytest.param(c_catboost_leaf_values, id="catboost-json-leaf-values"),
    pytest.param(c_catboost_categorical, id="catboost-categorical"),
    pytest.param(c_onnx_custom_op, id="onnx-custom-op"),
    pytest.param(c_onnx_loop, id="onnx-loop"),
    pytest.param(c_onnx_feature_count, id="onnx-feature-count"),
]


def build(make: Callable[..., Case], tmp: Path, tree_pickle: Path) -> Case:
    return make(tmp, tree_pickle) if make is c_pickle_untrusted else make(tmp)


@pytest.mark.parametrize("make", CASES)
def test_report_rejects_bad_input(make: Callable[..., Case], base: Path, tree_pickle: Path,
                                  capfd: pytest.CaptureFixture[str]) -> None:
    case = build(make, base, tree_pickle)
    before = snapshot(base)
    result = invoke("report", str(case.spec), "--out", str(base / "out"), "--quiet", *case.args)
    assert_one_error_line(result, case)
    native = "".join(capfd.readouterr())  # what libraries wrote to the file descriptors, past CliRunner
    for marker in NATIVE_LOG:
        assert marker not in native, native
    assert list((base / "out").iterdir()) == [], "the output folder must stay empty"
    assert snapshot(base) == before, "nothing may be written next to the inputs either"
    for path in case.absent:
        assert not path.exists(), f"{path.name} exists: code from the input ran"


# --- controls: the same inputs made acceptable must run ----------------------------------------------------------

def s_baseline(tmp: Path, tree_pickle: Path) -> Path:
    return write_base_spec(tmp)


def s_nan_missing(tmp: Path, tree_pickle: Path) -> Path:
    edit_csv(tmp, "nan.csv", 3, "price", "")
    return write_base_spec(tmp, dataset={"path": "nan.csv", "nan_policy": "missing"})


def s_pickle_trusted(tmp: Path, tree_pickle: Path) -> Path:
    shutil.copy(tree_pickle, tmp / "model.pkl")
    return write_base_spec(tmp, model={"path": "model.pkl", "trust": True})


@pytest.mark.parametrize("make", [pytest.param(s_baseline, id="baseline"),
                                  pytest.param(s_nan_missing, id="nan-policy-missing"),
                                  pytest.param(s_pickle_trusted, id="pickle-trusted")])
def test_report_accepts_fixed_input(make: Callable[[Path, Path], Path], base: Path, tree_pickle: Path) -> None:
    spec = make(base, tree_pickle)
    result = invoke("report", str(spec), "--out", str(base / "out"), "--quiet")
    shown = f"exit {result.exit_code}\nstdout: {result.stdout!r}\nstderr: {result.stderr!r}"
    assert result.exit_code in (0, 1), shown
    assert "Traceback" not in result.stdout + result.stderr, shown
    entries = [p for p in (base / "out").iterdir() if p.name != "register.sqlite"]  # the run, and the register
    assert len(entries) == 1 and not entries[0].name.startswith(".run-"), entries
    assert (entries[0] / "evidence.json").is_file()
    assert result.stdout.strip() == str(entries[0] / "report.html")


# --- validate ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [pytest.param(c_unknown_evidence_option, id="unknown-evidence-option-cutof"),
                                  pytest.param(c_pickle_untrusted, id="pickle-untrusted"),
                                  pytest.param(c_svmlight_bad_line, id="svmlight-bad-line"),
                                  pytest.param(c_model_truncated, id="model-truncated"),
                                  pytest.param(c_model_split_feature_beyond, id="model-split-feature-beyond"),
                                  pytest.param(c_json_split_feature_beyond, id="json-split-feature-beyond")])
def test_validate_rejects_bad_input(make: Callable[..., Case], base: Path, tree_pickle: Path,
                                    capfd: pytest.CaptureFixture[str]) -> None:
    case = build(make, base, tree_pickle)
    before = snapshot(base)
    assert_one_error_line(invoke("validate", str(case.spec)), case)
    assert snapshot(base) == before
    native = "".join(capfd.readouterr())
    assert "[LightGBM]" not in native, native


def test_validate_accepts_baseline(base: Path) -> None:
    spec = write_base_spec(base)
    before = snapshot(base)
    result = invoke("validate", str(spec))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"ok: {spec}"), result.stdout
    assert "1627 documents in 80 queries" in result.stdout
    assert result.stderr == ""
    assert snapshot(base) == before
