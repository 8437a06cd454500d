"""Issue 33, policy packs and spec values: every parser of pack text is linear or bounded, thresholds are finite,
`extends:` stays in the pack's folder, messages quote no file that is not a pack, and misleading messages are
gone (a pack listed twice, a day that does not exist).

Each test failed on the code before the fix (a hang is a failure here: `within` interrupts it).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from auditor.core.errors import InputError
from auditor.core.files import MAX_YAML_BYTES
from auditor.core.yaml_io import parse_yaml
from auditor.inputs.spec import load_spec
from auditor.judging import policy
from auditor.judging.policy import Condition, load_pack, load_packs
from auditor.report.render import check_templates, render_template
from tests.conftest import ROOT, within
from tests.inputs import (
    Case,
    assert_one_error_line,
    invoke,
    snapshot,
    spec_text,
    write_base_spec,
)

SECRET = "root:$6$SECRET-HASH-DO-NOT-ECHO:19000:0:99999:7:::"




def pack_text(fail_if: str = "'< 0.5'", *, head: str = "", rule_id: str = "C-1") -> str:
    """A custom pack with one rule; `fail_if` is written as given (YAML)."""
    return ("pack: custom\ntitle: Custom pack\nversion: \"1\"\n" + head
            + f"rules:\n  - id: {rule_id}\n    title: Good enough\n    evidence: ranking_quality\n"
              "    metric: ranking_quality.ndcg@10.mean\n"
              f"    fail_if: {fail_if}\n    severity: critical\n    citation: Internal\n    rationale: Because\n")


def line_col(text: str, needle: str) -> str:
    index = text.index(needle)
    return f"{text.count(chr(10), 0, index) + 1}:{index - (text.rfind(chr(10), 0, index) + 1) + 1}"


def refusal(action: object) -> str:
    with pytest.raises(InputError) as info:
        action()  # type: ignore[operator]
    message = info.value.one_line()
    assert "\n" not in message
    return message


# --- 1. the condition grammar is linear, and conditions are short -------------------------------------------------

def hostile(digits: int, tail: str = "x") -> str:
    return f"between {'1' * digits} and {'1' * digits}{tail}"


@pytest.mark.parametrize("pattern", ["_CONDITION", "_BETWEEN"])
def test_condition_patterns_are_linear(pattern: str) -> None:
    """Before: `\\d+\\.?\\d*` split a run of digits every possible way (800 digits took 20 s, 1 MiB never ends)."""
    regex = getattr(policy, pattern)
    for text in (hostile(MAX_YAML_BYTES // 2 - 20), "< " + "1" * MAX_YAML_BYTES + "x",
                 "between " + "1." * (MAX_YAML_BYTES // 4) + " and 1x"):
        start = time.perf_counter()
        with within(5):
            assert regex.match(text) is None
        assert time.perf_counter() - start < 0.5


@st.composite
def condition_texts(draw: st.DrawFn) -> str:
    """Condition-like text up to the pack file cap: operators, runs of number characters, separators."""
    head = draw(st.sampled_from(["between ", "outside ", "BETWEEN ", "< ", ">= ", "== ", "  between  ", ""]))
    runs = draw(st.lists(st.tuples(st.sampled_from(["1", "1.", ".1", "1e1", " ", " and ", "e", "+", "-", "."]),
                                   st.integers(1, MAX_YAML_BYTES // 4)), min_size=1, max_size=4))
    tail = draw(st.sampled_from(["", "x", " and", ".", "e", " and 1x", "\n"]))
    return (head + "".join(chars * count for chars, count in runs) + tail)[:MAX_YAML_BYTES]


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(text=condition_texts())
@example(text=hostile(MAX_YAML_BYTES // 2 - 20))
@example(text=hostile(3000))
def test_conditions_up_to_the_pack_cap_are_judged_quickly(text: str) -> None:
    """Any condition text up to 1 MiB is a Condition or a one-line refusal, in well under a second; the grammar
    alone (no length cap) is linear too."""
    start = time.perf_counter()
    with within(5):
        try:
            Condition.model_validate(text)
        except ValidationError as exc:
            assert len(str(exc)) < 1000  # the refusal never echoes a megabyte
        for regex in (policy._CONDITION, policy._BETWEEN):
            regex.match(text)
    assert time.perf_counter() - start < 0.5


def test_a_long_condition_is_refused_with_its_length() -> None:
    with pytest.raises(ValidationError, match="at most 200 characters"):
        Condition.model_validate("< 0." + "1" * 300)
    assert Condition.model_validate("between 0.2 and 0.8").high == 0.8  # short ones still read
    assert Condition.model_validate("<= 1e-3").value == 0.001


def test_a_one_megabyte_condition_is_one_error_line(base: Path) -> None:
    """End to end: `validate` on a pack of ~1 MiB whose condition is the hostile text (before: never returned)."""
    text = pack_text(f"'{hostile(MAX_YAML_BYTES // 2 - 300)}'")
    pack = base / "custom-pack.yaml"
    pack.write_text(text, encoding="utf-8")
    spec = write_base_spec(base, policies=["./custom-pack.yaml"])
    start = time.perf_counter()
    with within(30):
        result = invoke("validate", str(spec))
    assert_one_error_line(result, Case(spec, pack, line_col(text, "'between"), ("rules.0.fail_if",
                                                                                "at most 200 characters")))
    assert time.perf_counter() - start < 10  # YAML parsing of the megabyte itself takes ~1 s


def test_yaml_numbers_are_bounded(tmp_path: Path) -> None:
    """PyYAML reads `1:1:1...` as a base-60 integer, one big multiplication a digit: 1 MiB took minutes."""
    text = "pack: custom\nversion: " + "1" + ":1" * (MAX_YAML_BYTES // 2 - 20) + "\n"
    start = time.perf_counter()
    with within(10):
        message = refusal(lambda: parse_yaml(text, tmp_path / "p.yaml"))
    assert time.perf_counter() - start < 2
    assert message.startswith(f"{tmp_path / 'p.yaml'}:2:10: ") and "at most 100 characters" in message
    assert len(message) < 300


def test_the_fast_yaml_loader_reads_what_the_pure_python_one_reads() -> None:
    """libyaml's parser reads every shipped spec and pack as the same data with the same places; a document it
    refuses is reported in the pure-Python loader's words (tests/test_bad_input.py has the messages)."""
    from auditor.core import yaml_io

    if len(yaml_io._LOADERS) < 2:
        pytest.skip("PyYAML without libyaml: only the pure-Python loader")
    files = sorted((ROOT / "policies").rglob("*.yaml")) + sorted((ROOT / "examples").rglob("audit.yaml"))
    assert len(files) > 5
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert yaml_io._parse(text, path, yaml_io._LOADERS[0]) == yaml_io._parse(text, path, yaml_io._BoundedLoader)
    lone = 'pack: custom\nversion: "\\udc80"\n'  # libyaml refuses the escape itself, with another place
    message = refusal(lambda: parse_yaml(lone, Path("p.yaml")))
    assert message.startswith("p.yaml:2:10: ") and "a lone surrogate" in message, message


def test_huge_keys_and_ids_are_bounded(tmp_path: Path) -> None:
    """A key of half a megabyte: the error names it shortened, and nearest-key matching is skipped (difflib)."""
    key = "titel" * 100_000
    (tmp_path / "p.yaml").write_text(f"pack: custom\nversion: '1'\n? {key}\n: x\n", encoding="utf-8")
    start = time.perf_counter()
    with within(10):
        message = refusal(lambda: load_pack("./p.yaml", base_dir=tmp_path))
    assert time.perf_counter() - start < 3
    assert "unknown key (not shown: not a name)" in message and "titel" not in message
    long_id = pack_text(rule_id="R" * 5000)
    (tmp_path / "q.yaml").write_text(long_id, encoding="utf-8")
    message = refusal(lambda: load_pack("./q.yaml", base_dir=tmp_path))
    assert "rules.0.id" in message and len(message) < 400


# --- 2. thresholds are finite --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("fail_if", "needle"), [
    ("{op: '<', value: .nan}", ".nan"),
    ("{op: '>', value: -.inf}", "-.inf"),
    ("{op: between, value: 0.1, high: .inf}", ".inf"),
    ("'< 1e999'", "'< 1e999'"),
    ("'between 0.1 and 1e400'", "'between"),
])
def test_thresholds_must_be_finite(tmp_path: Path, fail_if: str, needle: str) -> None:
    """A NaN threshold made a critical rule unable to fail (every comparison with NaN is false)."""
    text = pack_text(fail_if)
    (tmp_path / "p.yaml").write_text(text, encoding="utf-8")
    message = refusal(lambda: load_pack("./p.yaml", base_dir=tmp_path))
    assert message.startswith(f"{tmp_path / 'p.yaml'}:{line_col(text, needle)}: rules.0.fail_if")
    assert "finite" in message


def test_nan_threshold_end_to_end(base: Path) -> None:
    text = pack_text("{op: '<', value: .nan}")
    pack = base / "nan-pack.yaml"
    pack.write_text(text, encoding="utf-8")
    spec = write_base_spec(base, policies=["./nan-pack.yaml"])
    assert_one_error_line(invoke("validate", str(spec)),
                          Case(spec, pack, line_col(text, ".nan"), ("rules.0.fail_if.value", "finite number")))


def test_per_query_thresholds_must_be_finite(tmp_path: Path) -> None:
    text = pack_text(head="").replace("    fail_if:", "    per_query: {op: '>=', value: .nan}\n    fail_if:")
    (tmp_path / "p.yaml").write_text(text, encoding="utf-8")
    message = refusal(lambda: load_pack("./p.yaml", base_dir=tmp_path))
    assert f"p.yaml:{line_col(text, '.nan')}: rules.0.per_query" in message


# --- 3. `extends:` stays inside the pack's folder; no message quotes a file that is not a pack --------------------

@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """tmp/packs (the untrusted pack's folder) and, beside it, a secret file and a valid pack outside it."""
    (tmp_path / "packs" / "sub").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    (tmp_path / "valid.yaml").write_text(pack_text(rule_id="V-1"), encoding="utf-8")
    (tmp_path / "packs" / "parent.yaml").write_text(pack_text(rule_id="P-1"), encoding="utf-8")
    (tmp_path / "packs" / "sub" / "deep.yaml").write_text(pack_text(rule_id="D-1"), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("target", ["{secret}", "../secret.txt", "../valid.yaml", "sub/../../valid.yaml",
                                    "./link.yaml", "linked/valid.yaml", "/etc/passwd", "../../../../etc/shadow"])
def test_extends_stays_in_the_packs_folder(outside: Path, target: str) -> None:
    """Absolute paths, `..` and links leading out are refused before anything is read (the pack names them)."""
    folder = outside / "packs"
    (folder / "link.yaml").symlink_to(outside / "valid.yaml")
    (folder / "linked").symlink_to(outside, target_is_directory=True)
    target = target.format(secret=outside / "secret.txt")
    text = pack_text(head=f"extends: ['{target}']\n")
    (folder / "child.yaml").write_text(text, encoding="utf-8")
    message = refusal(lambda: load_pack("./child.yaml", base_dir=folder))
    assert message.startswith(f"{folder / 'child.yaml'}:4:11: ")
    assert "outside this pack's folder" in message
    assert "SECRET" not in message and "root:" not in message


def test_extends_inside_the_folder_and_built_in_names_still_work(outside: Path) -> None:
    folder = outside / "packs"
    (folder / "child.yaml").write_text(
        pack_text(head="extends: [parent.yaml, ./sub/deep.yaml, starter]\n"), encoding="utf-8")
    loaded = load_packs([str(folder / "child.yaml")], base_dir=outside)  # the spec may name any path
    assert {p.pack.pack for p in loaded} >= {"starter", "custom"}
    assert sum(len(p.pack.rules) for p in loaded) > 3


def test_extends_outside_end_to_end(base: Path) -> None:
    (base / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    (base / "packs").mkdir()
    pack = base / "packs" / "custom-pack.yaml"
    pack.write_text(pack_text(head=f"extends: [{base / 'secret.txt'}]\n"), encoding="utf-8")
    spec = write_base_spec(base, policies=["./packs/custom-pack.yaml"])
    line = assert_one_error_line(invoke("validate", str(spec)),
                                 Case(spec, pack, "4:11", ("outside this pack's folder",)))
    assert "SECRET" not in line


@pytest.mark.parametrize("content", [SECRET + "\ndaemon:*:19000:0:99999:7:::\n",
                                     "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1SECRET\n",
                                     "password: *SECRET\n", "[SECRET\n", "- SECRET\n- SECRET2\n",
                                     "\"SECRET\\q\"\n", "key: !SECRET x\n", "password: SECRET\n"])
def test_a_file_that_is_not_a_pack_is_never_quoted(tmp_path: Path, content: str) -> None:
    """Even a pack the (trusted) spec names: when the file is not a pack, the message says so, without its text."""
    (tmp_path / "not-a-pack.yaml").write_text(content, encoding="utf-8")
    message = refusal(lambda: load_pack("./not-a-pack.yaml", base_dir=tmp_path))
    assert message.startswith(f"{tmp_path / 'not-a-pack.yaml'}:")
    assert "SECRET" not in message


def test_a_pack_that_is_not_utf8_is_refused_without_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_bytes(b"pack: \xff\xfeSECRET\n")
    message = refusal(lambda: load_pack("./p.yaml", base_dir=tmp_path))
    assert "not UTF-8" in message and "SECRET" not in message


def test_pack_names_that_are_not_paths_are_input_errors(tmp_path: Path) -> None:
    """A NUL or an overlong name made the path functions raise (exit 3)."""
    for ref in ("a\0b.yaml", "x" * 5000 + ".yaml", "starter\0"):
        refusal(lambda ref=ref: load_packs([ref], base_dir=tmp_path))


@pytest.mark.parametrize("include", ["../secret.txt", "/{tmp}/secret.txt", "sub/../../secret.txt"])
def test_template_includes_stay_in_the_templates_folders(tmp_path: Path, include: str) -> None:
    """Jinja2's FileSystemLoader refuses `..` and reads absolute names inside its folders: verified, not rewritten."""
    (tmp_path / "secret.txt").write_text(SECRET, encoding="utf-8")
    folder = tmp_path / "brand"
    (folder / "sub").mkdir(parents=True)
    (folder / "page.html.j2").write_text("{% include '" + include.format(tmp=tmp_path) + "' %}", encoding="utf-8")
    message = refusal(lambda: render_template("page.html.j2", {}, folder))
    assert message.startswith(f"{folder / 'page.html.j2'}:1: ") and "TemplateNotFound" in message
    assert "SECRET" not in message


def test_template_links_out_of_the_folder_are_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text(SECRET, encoding="utf-8")
    (tmp_path / "brand").mkdir()
    (tmp_path / "brand" / "custom.css").symlink_to(tmp_path / "secret.txt")
    message = refusal(lambda: check_templates(tmp_path / "brand"))
    assert "outside the templates folder" in message and "SECRET" not in message


def test_template_include_outside_end_to_end(base: Path) -> None:
    (base / "secret.txt").write_text(SECRET, encoding="utf-8")
    folder = base / "brand" / "sections"
    folder.mkdir(parents=True)
    template = folder / "cover.html.j2"
    template.write_text("<h1>{% include '../../secret.txt' %}</h1>\n", encoding="utf-8")
    spec = write_base_spec(base, output={"dir": "reports", "templates": "brand"})
    before = snapshot(base)
    result = invoke("report", str(spec), "--out", str(base / "out"), "--quiet")
    line = assert_one_error_line(result, Case(spec, template, "1", ("secret.txt",)))
    assert "SECRET" not in line
    assert list((base / "out").iterdir()) == [] and snapshot(base) == before


# --- 4. messages that said the wrong thing --------------------------------------------------------------------------

def test_a_pack_listed_many_times_is_named_quickly(base: Path) -> None:
    """Before: 43 s, then "rule id 'BASE-1' is in both 'starter' and 'starter'"."""
    spec = write_base_spec(base, policies=["starter"] * 1000)
    start = time.perf_counter()
    with within(30):
        result = invoke("validate", str(spec))
    assert_one_error_line(result, Case(spec, spec, "policies.1", ("'starter' is listed more than once",
                                                                 "list each pack once")))
    assert time.perf_counter() - start < 5


def test_the_same_file_by_two_spellings_is_listed_twice(outside: Path) -> None:
    folder = outside / "packs"
    message = refusal(lambda: load_packs(["parent.yaml", "./parent.yaml"], base_dir=folder))
    assert "'./parent.yaml' is listed more than once" in message and "policies.1" in message


def test_one_rule_id_in_two_unrelated_packs_is_still_refused(outside: Path) -> None:
    (outside / "packs" / "other.yaml").write_text(pack_text(rule_id="P-1").replace("pack: custom", "pack: other"),
                                                  encoding="utf-8")
    message = refusal(lambda: load_packs(["parent.yaml", "other.yaml"], base_dir=outside / "packs"))
    assert "rule id 'P-1' is in both 'custom' and 'other'" in message


def test_extends_diamonds_load_each_pack_once(tmp_path: Path) -> None:
    """Twenty levels of two packs that both extend the two of the next level: 2^20 loads before (never ended)."""
    levels = 20
    for level in range(levels):
        for side in "ab":
            head = f"extends: [l{level + 1}a.yaml, l{level + 1}b.yaml]\n" if level + 1 < levels else ""
            (tmp_path / f"l{level}{side}.yaml").write_text(
                pack_text(head=head, rule_id=f"R{level}{side}").replace("pack: custom", f"pack: l{level}{side}"),
                encoding="utf-8")
    start = time.perf_counter()
    with within(20):
        loaded = load_packs(["l0a.yaml", "l0b.yaml"], base_dir=tmp_path)
    assert len(loaded) == 2 * levels and time.perf_counter() - start < 3


def test_extends_chains_are_bounded(tmp_path: Path) -> None:
    """A chain of 1,200 packs each extending the next overflowed Python's stack (exit 3)."""
    for index in range(1200):
        head = f"extends: p{index + 1}.yaml\n" if index < 1199 else ""
        (tmp_path / f"p{index}.yaml").write_text(f"pack: p{index}\ntitle: P\nversion: '1'\n{head}rules: []\n"
                                                 if head else pack_text(), encoding="utf-8")
    with within(30):
        message = refusal(lambda: load_packs(["p0.yaml"], base_dir=tmp_path))
    assert "more than 32 levels" in message and "p32.yaml" in message


@pytest.mark.parametrize(("value", "needle"), [
    ("'2026-02-30'", "February 2026 has 28 days"),
    ("2026-02-30", "February 2026 has 28 days"),
    ("2028-02-30", "February 2028 has 29 days"),
    ("'2026-04-31'", "April 2026 has 30 days"),
    ("2026-13-01", "there is no month 13"),
    ("'2026-00-10'", "there is no month 0"),
    ("2026-06-31T10:00:00", "June 2026 has 30 days"),
])
def test_a_day_that_does_not_exist_is_named(base: Path, value: str, needle: str) -> None:
    text = spec_text(waivers=[{"rule": "BASE-3", "justification": "known gap", "approver": "Risk",
                               "expires": "EXPIRES"}]).replace("'EXPIRES'", value).replace("EXPIRES", value)
    spec = write_base_spec(base, text)
    message = refusal(lambda: load_spec(spec))
    assert message.startswith(f"{spec}:{line_col(text, value)}: ")
    assert needle in message and "does not exist" in message


def test_a_day_that_does_not_exist_end_to_end(base: Path) -> None:
    text = spec_text(findings=[{"rule": "BASE-3", "owner": "Search team", "due": "DUE"}]).replace("DUE", "2026-02-30")
    spec = write_base_spec(base, text)
    assert_one_error_line(invoke("report", str(spec), "--out", str(base / "out"), "--quiet"),
                          Case(spec, spec, line_col(text, "2026-02-30"),
                               ("2026-02-30 does not exist", "February 2026 has 28 days")))


def test_real_days_still_read(base: Path) -> None:
    spec = write_base_spec(base, waivers=[{"rule": "BASE-3", "justification": "j", "approver": "a",
                                      "expires": "2028-02-29"}])
    assert load_spec(spec)[0].waivers[0].expires.isoformat() == "2028-02-29"
    text = spec_text().replace("seed: 7", "seed: 7\nfindings:\n- {rule: BASE-3, owner: o, due: 2027-01-31}")
    assert load_spec(write_base_spec(base, text, name="b.yaml"))[0].findings[0].due.day == 31

