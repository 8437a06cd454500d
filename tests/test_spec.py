"""The spec boundary: positions and suggestions in errors, short evidence forms, paths, schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.core.errors import InputError
from auditor.inputs.spec import json_schema, load_spec

GOOD = """audit:
  title: T
  organisation: O
model:
  path: model.txt
dataset:
  path: test.csv
evidence:
  - ranking_quality: {cutoffs: [10, 5, 5]}
  - global_importance
  - surrogate:
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "model.txt").write_text("tree\n")
    (tmp_path / "test.csv").write_text("qid,label,a\n1,0,0.5\n")
    return tmp_path


def load(folder: Path, text: str):
    path = folder / "audit.yaml"
    path.write_text(text)
    return load_spec(path)


def test_good_spec_short_forms_and_paths(folder: Path) -> None:
    spec, raw = load(folder, GOOD)
    items = spec.evidence_items()
    assert [name for name, _ in items] == ["ranking_quality", "global_importance", "surrogate"]
    assert items[0][1].cutoffs == [5, 10]  # sorted, de-duplicated
    assert spec.model.kind == "lightgbm"  # inferred from .txt
    assert spec.dataset.path == (folder / "test.csv").resolve()
    assert raw["model"] == {"path": "model.txt"}  # the raw mapping keeps what was written


@pytest.mark.parametrize("written", ['"off"', "'None'", '" false "', "off", "false"])
def test_register_switched_off_in_words_is_no_register(folder: Path, written: str) -> None:
    """`register: "off"` (quoted, so YAML keeps the word) means none, as `--register off` does: it was a path, and
    the audit made an SQLite file named `off` beside the spec."""
    spec, _ = load(folder, GOOD + f"register: {written}\n")
    assert spec.register_location is False


def error_of(folder: Path, text: str) -> str:
    with pytest.raises(InputError) as info:
        load(folder, text)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unknown_key_names_line_and_suggests(folder: Path) -> None:
    message = error_of(folder, GOOD.replace("dataset:\n", "datset:\n"))
    assert "audit.yaml:6:1" in message and "did you mean 'dataset'" in message


def test_unknown_option_inside_evidence_item(folder: Path) -> None:
    message = error_of(folder, GOOD.replace("{cutoffs:", "{cutof:"))
    assert ":9:23" in message and "did you mean 'cutoffs'" in message


def test_unknown_evidence_kind(folder: Path) -> None:
    message = error_of(folder, GOOD.replace("  - global_importance\n", "  - global_importanse: {}\n"))
    assert ":10:5" in message and "did you mean 'global_importance'" in message


def test_wrong_type_names_key(folder: Path) -> None:
    message = error_of(folder, GOOD.replace("[10, 5, 5]", "ten"))
    assert "evidence.0.ranking_quality.cutoffs" in message and ":9:32" in message


def test_missing_key_and_missing_file(folder: Path) -> None:
    assert "missing required key 'audit.title'" in error_of(folder, GOOD.replace("  title: T\n", ""))
    message = error_of(folder, GOOD.replace("model.txt", "nope.txt"))
    assert "no such file" in message and ":5:9" in message


def test_folder_where_file_expected(folder: Path) -> None:
    (folder / "sub").mkdir()
    assert "is a folder" in error_of(folder, GOOD.replace("model.txt", "sub"))


def test_yaml_errors(folder: Path) -> None:
    assert "invalid YAML" in error_of(folder, "audit:\n  title: [unclosed\n")
    message = error_of(folder, "audit: !!python/object/apply:os.system ['touch x']\n")
    assert "not allowed" in message and not (folder / "x").exists()
    assert "appears twice" in error_of(folder, GOOD + "model:\n  path: model.txt\n")
    assert "must be a mapping" in error_of(folder, "- a\n- b\n")


def test_callable_needs_entry(folder: Path) -> None:
    assert "entry" in error_of(folder, GOOD.replace("  path: model.txt\n", "  kind: callable\n"))


def test_schema_is_json_and_lists_evidence() -> None:
    schema = json_schema()
    text = json.dumps(schema)
    assert "ranking_quality" in text and "global_importance" in text
    assert schema["additionalProperties"] is False


def test_published_schema_is_current() -> None:
    """docs/audit.schema.json is what editors load; regenerate with `auditor schema --out docs/audit.schema.json`."""
    published = Path(__file__).resolve().parents[1] / "docs" / "audit.schema.json"
    assert json.loads(published.read_text()) == json.loads(json.dumps(json_schema())), (
        "docs/audit.schema.json is stale: rm it and run `auditor schema --out docs/audit.schema.json`")
