"""Hostile and careless inputs, fourth round (issue 55): the Python API, the `--junit` file, the LL144 tables and the
transparency statement's claims.

Each test but the last failed on the code before its fix: a traceback (exit 3), a silently wrong number or verdict,
a claim judged on the wrong metric or not read at all, a file replaced that was not ours, or minutes and gigabytes
spent on a mistaken column. The last pins inputs that were handled well already.
"""

from __future__ import annotations

import copy
import os
import time
import tracemalloc
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from auditor.api import Audit
from auditor.checks.claims import Claim, judge, parse_claims, read_statement
from auditor.checks.selection import Table, rates
from auditor.cli import app
from auditor.core.errors import InputError
from auditor.core.feature_names import metric_segments
from auditor.disclosure.draft import draft
from auditor.evidence.base import AuditContext
from auditor.evidence.document import read_document
from auditor.evidence.kinds.selection_rates.options import SelectionRatesOptions
from auditor.inputs.data import RankingData
from auditor.models.base import CountingRanker
from tests.conftest import within
from tests.helpers import FirstColumn, document_of

CLAIM = '<!-- claim: {"weight": "a", "is": "most"} -->'


# --- the statement's claims -------------------------------------------------------------------------------------------

def test_a_claim_holding_a_number_of_thousands_of_digits_is_one_error_line() -> None:
    """Python refuses to read an integer of over 4,300 digits with a ValueError that is no JSONDecodeError: the marker
    ended `disclosure_consistency` (and `auditor report`) in a traceback."""
    for claim in ('{"weight": "a", "is": 1' + "0" * 5000 + "}", '{"order": ["a", -' + "9" * 5000 + "]}"):
        with pytest.raises(InputError, match=r"s\.md:2: .*a number of 5,00\d digits"):
            parse_claims(f"text\n<!-- claim: {claim} -->", file="s.md")


def test_a_claim_naming_a_key_twice_is_refused() -> None:
    """`{"weight": "a", "is": "little", "is": "most"}`: Python kept the last "is" and judged "most", while a person
    (and other JSON readers) read the first."""
    for claim in ('{"weight": "a", "is": "little", "is": "most"}', '{"weight": "a", "weight": "b", "is": "most"}'):
        with pytest.raises(InputError, match="twice"):
            parse_claims(f"<!-- claim: {claim} -->", file="s.md")


@pytest.mark.parametrize("marker", ['<!-- Claim: {"weight": "a", "is": "most"} -->',
                                    '<!-- claim {"weight": "a", "is": "most"} -->',
                                    '<!--CLAIMS: {"weight": "a", "is": "most"}-->'])
def test_a_comment_that_looks_like_a_claim_marker_is_refused(marker: str) -> None:
    """A marker retyped as `Claim:` or without its colon was skipped as a plain comment: the sentence's claim was
    never checked, and a statement of such markers counted as consistent."""
    with pytest.raises(InputError, match="looks like a claim marker"):
        parse_claims(f"# Statement\n\nGenre matters most. {marker}\n", file="statement.md")
    assert parse_claims("<!-- a claim about nothing -->", file="statement.md") == []  # a plain comment stays one


@pytest.mark.parametrize("text", [f"Example:\n\n```\n{CLAIM}\n```\n", f"Write `{CLAIM}` beside it.\n",
                                  f"~~~~md\n{CLAIM}\n~~~~\n", f"``code with ` and {CLAIM}``\n"])
def test_a_claim_marker_inside_markdown_code_is_refused(text: str) -> None:
    """In Markdown a comment inside a code block or span is text a reader sees, not a claim of the statement; it
    was judged as one (and counted as a claim that holds)."""
    with pytest.raises(InputError, match="inside a code block or code span"):
        parse_claims(text, file="statement.md")
    assert len(parse_claims(text, file="statement.html")) == 1  # in HTML a comment in <pre> is still a comment
    assert len(parse_claims(rf"Escaped \`ticks\` then {CLAIM}", file="statement.md")) == 1


def test_a_comment_opened_inside_code_hides_no_later_claim() -> None:
    """`<!--` shown in a code block opened a "comment" that ran to the next `-->`, swallowing the real claim after
    it: the statement seemed to make no claim at all."""
    text = f"Comments look like this:\n\n```html\n<!-- \n```\n\nGenre matters most. {CLAIM}\n"
    assert [c.features for c in parse_claims(text, file="statement.md")] == [("a",)]


def test_a_paid_claim_is_never_judged_on_another_feature_s_metric() -> None:
    """Features `sponsored boost` and `sponsored-boost` share the metric spelling `sponsored_boost`: a claim that
    paying through `sponsored-boost` has no effect was judged — and held — on `sponsored boost`'s influence."""
    names = ["sponsored boost", "sponsored-boost", "price"]
    metrics = {"influence.sponsored_boost.rank_shift.mean": 0.01, "influence.sponsored_boost.rank_shift.ci95_low": 0.0,
               "influence.sponsored_boost.rank_shift.ci95_high": 0.02}
    verdict = judge(Claim("paid", ("sponsored-boost",), "none"), metrics, metric_segments(names))
    assert verdict.status == "unchecked"


def _document() -> dict[str, Any]:
    """The least evidence.json a statement is drafted from: three features, two main parameters."""
    share = "global_importance.within_share"
    return document_of(**{"inputs": {"dataset": {"feature_names": ["a", "b", "c"]}},
            "evidence": {"dataset": {"status": "ok", "metrics": {"dataset.n_queries": 10}},
                         "global_importance": {"status": "ok", "metrics": {
                             "global_importance.main_parameters": 2, f"{share}.a": 0.5, f"{share}.a.ci95_low": 0.4,
                             f"{share}.a.ci95_high": 0.6, f"{share}.b": 0.3, f"{share}.b.ci95_low": 0.2,
                             f"{share}.b.ci95_high": 0.4},
                             "records": [{"feature": f, "rank": i + 1} for i, f in enumerate("abc")]},
                         "parameter_influence": {"status": "ok", "metrics": {
                             "influence.c.rank_shift.mean": 0.5, "influence.c.rank_shift.ci95_low": 0.2,
                             "influence.c.rank_shift.ci95_high": 0.8}}},
            "spec": {"content": {"evidence": [{"global_importance": {}}, {"parameter_influence": {
                "sensitive": ["c"]}}]}}}).to_json()


def _metric(kind: str, name: str, value: Any) -> Any:
    def edit(document: dict[str, Any]) -> None:
        document["evidence"][kind]["metrics"][name] = value
    return edit


@pytest.mark.parametrize(("edit", "words"), [
    (_metric("global_importance", "global_importance.within_share.a", float("inf")), "'inf', not a finite number"),
    (_metric("global_importance", "global_importance.within_share.a", float("nan")), "not a finite number"),
    (_metric("parameter_influence", "influence.c.rank_shift.mean", float("-inf")), "not a finite number"),
    (_metric("global_importance", "global_importance.within_share.a", "0.5"), "Input should be a valid number"),
    (_metric("global_importance", "global_importance.within_share.a", 10 ** 400), "Input should be a valid number"),
    (_metric("dataset", "dataset.n_queries", 1e309), "not a finite number"),
    (_metric("global_importance", "global_importance.main_parameters", 1e18), "main parameters among 3 features"),
    (lambda d: d.pop("inputs"), "inputs: Field required"),
    (lambda d: d["inputs"].pop("dataset"), "feature_names is not a list"),
    (lambda d: d["evidence"]["global_importance"]["records"].append({"feature": "d"}), "records are not each"),
    (lambda d: d["spec"]["content"]["evidence"][1]["parameter_influence"].update(top_k="ten"), "top_k is 'ten'"),
    (lambda d: d["spec"]["content"]["evidence"][1]["parameter_influence"].update(sensitive=[["c"]]), "sensitive")])
def test_a_run_folder_with_hostile_numbers_is_one_error_line_when_drafting(edit: Any, words: str) -> None:
    """`auditor disclose --run` reads a run folder, which anyone may have written: a metric of 1e309 (read as inf)
    or NaN ended the draft in StopIteration (no band holds inf), a string or a 400-digit integer in ValueError or
    OverflowError, a missing block in KeyError, a `top_k` of "ten" in ValueError — each exit 3."""
    assert draft(read_document(_document()), run="r").claims  # the document itself drafts
    document = copy.deepcopy(_document())
    edit(document)
    with pytest.raises(InputError, match="not as `auditor report` writes it") as caught:  # read, or drafted
        draft(read_document(document, file="r"), run="r")
    assert words in caught.value.one_line() and caught.value.one_line().startswith("r: ")


def test_blocks_a_draft_reads_only_for_words_are_absent_when_malformed() -> None:
    """A run folder whose `feature_dictionary` entries are not what the writer puts there ended the draft in an
    AttributeError; what they give is words, so a malformed one reads as absent. A `run` or `tool` block that is not
    a mapping is refused when the document is read (one line naming it)."""
    document = _document()
    document.update(feature_dictionary={"a": "not a mapping", "b": {"meaning": ["x"], "unit": 1}})
    statement = draft(read_document(document), run="r")
    assert [p.name for p in statement.parameters] == ["a", "['x']"] and statement.evaluated_on == ""
    for block, value in (("run", ["x"]), ("tool", 5)):
        with pytest.raises(InputError, match=f"{block}: Input should be a valid dictionary"):
            read_document({**document, block: value}, file="r")


# --- LL144 tables -----------------------------------------------------------------------------------------------------


def _people(attributes: dict[str, list[Any]]) -> RankingData:
    n = len(next(iter(attributes.values())))
    return RankingData(X=np.random.default_rng(0).random((n, 1)), y=None, query_ptr=np.linspace(0, n, 11).astype(int),
                       query_ids=[f"q{i}" for i in range(10)], doc_ids=[str(i) for i in range(n)],
                       feature_names=["score"],
                       attributes={k: np.array(v, dtype=object) for k, v in attributes.items()})


def _rates(data: RankingData, **options: Any) -> Any:
    from auditor.evidence.kinds.selection_rates.measure import check, run

    chosen = SelectionRatesOptions(resamples=100, **options)
    check(chosen, data)
    return run(AuditContext(data=data, model=CountingRanker(FirstColumn()), seed=0), chosen)


def _categories(result: Any) -> dict[tuple[str, str], int]:
    return {(r["table"], r["category"]): r["individuals"] for r in result.records if r["kind"] == "category"}


def test_intersectional_categories_are_their_values_not_their_labels() -> None:
    """sex `F × A` with race `B`, and sex `F` with race `A × B`, both read `F × A × B` joined: the two categories
    were counted as one of 100 individuals, with one rate and one impact ratio."""
    result = _rates(_people({"sex": ["F × A", "F"] * 50, "race": ["B", "A × B"] * 50}))
    found = _categories(result)
    assert found[("sex × race", "F × A × B")] == 50 and found[("sex × race", "F × A × B [2]")] == 50
    assert sum(n for (table, _), n in found.items() if table == "sex × race") == 100


def test_a_missing_cell_and_the_value_missing_are_two_categories() -> None:
    """With `unknown_values: [unknown]` an empty cell is a category of its own; it was shown as "missing" and
    merged with the candidates whose cell says "missing"."""
    found = _categories(_rates(_people({"sex": [None, "missing"] * 50}), unknown_values=["unknown"]))
    assert found == {("sex", "missing"): 50, ("sex", "missing [2]"): 50}


def test_a_column_named_with_x_is_counted_as_a_column_not_an_intersection() -> None:
    """A column `race_x_ethnicity` (or "Race x Ethnicity") was taken for an intersection by the spelling of its
    metric name: `selection.columns` 1 (LL144-4 failed) and `selection.intersections` 1 with none reported (LL144-5
    passed)."""
    metrics = _rates(_people({"sex": ["F", "M"] * 50, "Race x Ethnicity": ["A", "B", "B", "A"] * 25}),
                     intersections=False).metrics
    assert metrics["selection.columns"] == 2 and metrics["selection.intersections"] == 0


@pytest.mark.parametrize(("columns", "words"), [(["race ethnicity", "race-ethnicity"], "share the metric name"),
                                                (["sex", "unknown"], "the kind's own figure")])
def test_columns_whose_metrics_would_collide_are_refused(columns: list[str], words: str) -> None:
    """`race ethnicity` and `race-ethnicity` both write `selection.race_ethnicity.*`: the second table's numbers
    silently replaced the first's. A column `unknown` writes beside `selection.unknown.<column>`."""
    from auditor.evidence.kinds.selection_rates.measure import check

    data = _people({columns[0]: ["A", "B"] * 50, columns[1]: ["A"] * 70 + ["B"] * 30})
    with pytest.raises(InputError, match=words) as caught:
        check(SelectionRatesOptions(), data)
    assert caught.value.where == "categories.1"


def test_thousands_of_categories_are_refused_before_any_scoring() -> None:
    """A candidate id named as a category column: 20,000 categories took 16 GB and a minute, 50,000 would not fit.
    Refused when the spec is checked, naming the column."""
    from auditor.evidence.kinds.selection_rates.measure import check

    data = _people({"sex": ["F", "M"] * 2500, "candidate_id": [f"c{i}" for i in range(5000)]})
    with within(5), pytest.raises(InputError, match=r"'candidate_id': 5,000\), more than 1,000") as caught:
        check(SelectionRatesOptions(categories=["sex", "candidate_id"]), data)
    assert "not an id" in (caught.value.fix or "")
    crossed = _people({"a": [f"a{i % 40}" for i in range(4000)], "b": [f"b{i % 37}" for i in range(4000)]})
    with pytest.raises(InputError, match="their intersection") as caught:
        check(SelectionRatesOptions(), crossed)
    assert "intersections: false" in (caught.value.fix or "")
    check(SelectionRatesOptions(intersections=False), crossed)  # 77 categories alone are fine


def test_counting_categories_holds_no_individuals_by_categories_matrix() -> None:
    """The counts were a one-hot matrix of individuals × categories (20,000 × 1,000: 160 MB, and 1.6 GB a draw
    chunk's product); now a bincount over the cells."""
    n, size = 20_000, 1_000
    codes = np.arange(n, dtype=np.int64) % size
    table = Table(codes=codes, reported=np.ones(size, dtype=bool))
    chosen = np.random.default_rng(1).random(n) > 0.5
    tracemalloc.start()
    try:
        figures = rates(table, chosen)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000, f"{peak / 1e6:.0f} MB"
    assert figures.n.sum() == n and figures.selected.sum() == chosen.sum()


def test_many_category_values_spelled_alike_get_their_metric_names_quickly() -> None:
    """1,000 values that all spell `a` as a metric segment (`a!`, `a!!`, ...): each name was found by trying
    `a_2`, `a_3`, ... against a list, 1.3 s for 1,000 (77 s for 4,000); now a set and a counter."""
    from auditor.evidence.kinds.selection_rates.measure import _breakdown

    data = _people({"sex": ["a" + "!" * i for i in range(1000)]})
    started = time.perf_counter()
    breakdown = _breakdown(["sex"], data, SelectionRatesOptions())
    assert time.perf_counter() - started < 0.5
    assert len(set(breakdown.names)) == 1000 and breakdown.names[:3] == ["a", "a_2", "a_3"]


# --- the --junit file -------------------------------------------------------------------------------------------------

def test_junit_never_replaces_a_file_that_is_not_a_junit_report(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`auditor report audit.yaml --junit audit.yaml` (a slip of the shell's completion) replaced the spec with XML
    after the audit; so would `--junit reports/register.sqlite` the register. Refused before the audit runs; a
    `.xml` file, an earlier JUnit file by any name (ours or pytest's) and an empty file are still replaced."""
    import auditor.run.engine
    from auditor.commands import junit

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the audit ran")

    monkeypatch.setattr(auditor.run.engine, "run_audit", never)
    spec = tmp_path / "audit.yaml"
    spec.write_text("audit: {title: T}\n")
    out = CliRunner().invoke(app, ["report", str(spec), "--junit", str(spec)])
    assert out.exit_code == 2 and "not a JUnit report" in out.output, out.output
    assert spec.read_text() == "audit: {title: T}\n"
    for name in ("register.sqlite", "test.csv", "model.txt"):
        (tmp_path / name).write_bytes(b"SQLite format 3\x00" if name.endswith("sqlite") else b"a,b\n1,2\n")
        with pytest.raises(InputError, match="not a JUnit report"):
            junit.check_target(tmp_path / name)
    (tmp_path / "results").write_text('<?xml version="1.0" encoding="utf-8"?>\n<!-- made by pytest -->\n'
                                      '<testsuites name="pytest tests"><testsuite name="pytest"/></testsuites>')
    (tmp_path / "empty").write_text("")
    (tmp_path / "old.xml").write_text("an older file")
    for name in ("results", "empty", "old.xml", "new.xml"):
        junit.check_target(tmp_path / name)
    comments = tmp_path / "comments"  # a head of many comments is matched in linear time
    comments.write_bytes(b"<!-- -->" * 500 + b"<x/>")
    with within(5), pytest.raises(InputError, match="not a JUnit report"):
        junit.check_target(comments)


# --- the Python API ---------------------------------------------------------------------------------------------------

def test_numpy_values_in_api_arguments_are_written_as_plain_yaml(frame: pd.DataFrame, booster: lgb.Booster) -> None:
    """A notebook's `seed=np.int64(7)` or `cutoffs=np.arange(...)`: yaml's RepresenterError, a traceback."""
    seed: Any = np.int64(3)  # what a notebook computes
    audit = Audit(model=booster, data=frame, doc_id="doc_id", seed=seed, title=np.str_("Notebook"),
                  evidence=[{"ranking_quality": {"cutoffs": np.array([1, 3])}}])
    spec = yaml.safe_load(audit.to_spec())
    assert spec["seed"] == 3 and spec["audit"]["title"] == "Notebook"
    assert spec["evidence"] == [{"ranking_quality": {"cutoffs": [1, 3]}}]
    with pytest.raises(InputError, match=r"cannot write a object into the spec \(at audit.owner\)"):
        Audit(model=booster, data=frame, doc_id="doc_id", audit={"owner": object()})


@pytest.mark.parametrize(("keywords", "words"), [({"audit": "My audit"}, "audit= takes a mapping"),
                                                 ({"dataset": "test.csv"}, "dataset= takes a mapping"),
                                                 ({"policies": "eu-p2b-art5"}, "policies= takes a list"),
                                                 ({"features": "price"}, "features= takes the feature dictionary")])
def test_api_keywords_of_the_wrong_shape_are_one_error_naming_the_keyword(frame: pd.DataFrame, booster: lgb.Booster,
                                                                          keywords: dict[str, Any],
                                                                          words: str) -> None:
    """`audit="My audit"` was a TypeError; `policies="eu-p2b-art5"` eleven one-letter packs, refused only when the
    audit ran, as "no built-in pack 'e'"."""
    with pytest.raises(InputError, match=words) as caught:
        Audit(model=booster, data=frame, doc_id="doc_id", **keywords)
    assert caught.value.where == f"Audit({next(iter(keywords))}=...)"


def test_data_frames_parquet_cannot_hold_are_one_error_naming_the_column(frame: pd.DataFrame,
                                                                       booster: lgb.Booster) -> None:
    """Two columns named alike (1 and "1" become one name) and an object column of text and numbers were pyarrow's
    ValueError and ArrowInvalid, tracebacks listing every column."""
    twice = frame.copy()
    twice[1] = 0
    twice["1"] = 0
    with pytest.raises(InputError, match="two columns are named '1'"):
        Audit(model=booster, data=twice, doc_id="doc_id")
    mixed = frame.copy()
    mixed["doc_id"] = mixed["doc_id"].astype(object)
    mixed.loc[0, "doc_id"] = 5
    with pytest.raises(InputError, match=r"Audit\(data=...\): cannot stage the data as Parquet: column 'doc_id'"):
        Audit(model=booster, data=mixed, doc_id="doc_id")


def test_run_with_jobs_below_one_is_one_error(frame: pd.DataFrame, booster: lgb.Booster) -> None:
    """`run(jobs=-1)` (scikit-learn's "every core") was pydantic's ValidationError, a traceback."""
    audit = Audit(model=booster, data=frame, doc_id="doc_id", evidence=["ranking_quality"])
    for jobs in (-1, 0):
        with pytest.raises(InputError, match=r"run\(jobs=...\): jobs=-?\d: the cores to use are 1 or more"):
            audit.run(jobs=jobs)


def test_save_checks_everything_before_writing_anything(frame: pd.DataFrame, booster: lgb.Booster,
                                                        tmp_path: Path) -> None:
    """`save("report.html")` was NotADirectoryError; `formats="pdf"` (the letters p, d, f) and `["docx"]` wrote no
    report and said nothing; `signing="keys.p12"` was refused with pydantic's URL line after `inputs/` was written."""
    result = Audit(model=booster, data=frame, doc_id="doc_id", evidence=["ranking_quality"]).run(jobs=1)
    (tmp_path / "report.html").write_text("x")
    with pytest.raises(InputError, match=r"save\(out_dir=...\): the output path exists and is not a folder"):
        result.save(tmp_path / "report.html")
    for formats, words in (("pdf", "takes a list"), (["docx"], "no report format 'docx'")):
        with pytest.raises(InputError, match=words):
            result.save(tmp_path / "out", formats=formats)
    with pytest.raises(InputError, match=r"save\(signing=...\): Input should be a valid dictionary") as caught:
        result.save(tmp_path / "out", signing="keys.p12")  # type: ignore[arg-type]
    assert "pydantic.dev" not in str(caught.value)
    assert not (tmp_path / "out").exists()
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "inputs").write_text("not a folder")
    with pytest.raises(InputError, match="inputs: is not a folder"):
        result.save(tmp_path / "held")
    import auditor.run.engine

    def full(*args: object, **kwargs: object) -> None:
        raise InputError("cannot write (No space left on device)", file=tmp_path / "out")

    with pytest.MonkeyPatch.context() as patch:  # a run folder that cannot be written leaves no inputs/ behind
        patch.setattr(auditor.run.engine, "write_run", full)
        with pytest.raises(InputError, match="No space left"):
            result.save(tmp_path / "out")
    assert not (tmp_path / "out").exists()
    run = result.save(tmp_path / "out", formats=["html"])
    assert (run / "report.html").is_file() and (tmp_path / "out" / "inputs" / "audit.yaml").is_file()


# --- held already -----------------------------------------------------------------------------------------------------

def test_statement_files_at_their_extremes_were_held_already(tmp_path: Path) -> None:
    """No change needed: a statement that is a FIFO or 50 MB, 501 markers, markers nested, and bidi or markup in a
    marker are one line each, quickly."""
    fifo = tmp_path / "statement.md"
    os.mkfifo(fifo)
    big = tmp_path / "big.md"
    big.write_bytes(b"a" * 50 * 2 ** 20)
    with within(10):
        for path, words in ((fifo, "FIFO"), (big, "more than the 1 MiB allowed")):
            with pytest.raises(InputError, match=words):
                read_statement(path)
        with pytest.raises(InputError, match="more than 500 claims"):
            parse_claims(CLAIM * 501, file="s.md")
        with pytest.raises(InputError, match="not a JSON object"):
            parse_claims(f"<!-- claim: {{\"weight\": \"a\", \"is\": \"most\"}} {CLAIM}", file="s.md")
    hostile = parse_claims('<!-- claim: {"weight": "a\\u202e<b>", "is": "most"} -->', file="s.md")
    assert hostile[0].features == ("a\u202e<b>",) and "\u202e" not in hostile[0].marker()
