"""Hostile and careless inputs, third round: families not covered by docs/security.md or issue 33 before.

Each test failed on the code before its fix: a silent misread (query ids merged, document ids rewritten, columns fed
to the wrong model feature, document ids dropped, an evidence item dropped), a crash (exit 3), a message that named
the wrong place or cause, or degenerate data certified. Tests named "still read" pin what must keep working.
"""

from __future__ import annotations

import csv
import gzip
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.core.errors import InputError
from auditor.inputs import feature_dictionary
from auditor.inputs.data import MAX_FEATURE_VALUE, load_ranking_data, read_feature_names
from auditor.inputs.spec import load_spec
from auditor.run import engine
from tests.inputs import EXAMPLE, FEATURES

SPEC = {"audit": {"title": "Round three", "organisation": "Test Org"}, "model": {"path": "model.txt"},
        "dataset": {"path": "test.csv", "doc_id_column": "doc_id"},
        "evidence": [{"ranking_quality": {"cutoffs": [1, 3, 10]}}], "policies": ["starter"], "seed": 7,
        "output": {"dir": "reports"}}


def rows() -> tuple[list[str], list[list[str]]]:
    with (EXAMPLE / "test.csv").open(newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    return table[0], table[1:]


def write_csv(path: Path, header: list[str], body: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *body])
    return path


def read(path: Path, **options: object):
    options = {"query_column": "qid", "label_column": "label", "doc_id_column": "doc_id", **options}
    return load_ranking_data(path, n_features=len(FEATURES), model_feature_names=FEATURES, **options)


def refused(path: Path, **options: object) -> InputError:
    with pytest.raises(InputError) as caught:
        read(path, **options)
    return caught.value


# --- CSV identifiers are text -------------------------------------------------------------------------------------

def test_query_ids_007_and_7_are_two_queries(tmp_path: Path) -> None:
    """pandas read both as the integer 7: two queries became one, silently (80 queries read as 79)."""
    header, body = rows()
    first, second = body[0][0], next(r[0] for r in body if r[0] != body[0][0])
    for row in body:
        row[0] = {first: "007", second: "7"}.get(row[0], row[0])
    data = read(write_csv(tmp_path / "test.csv", header, body))
    assert data.n_queries == 80
    assert data.query_ids[:2] == ["007", "7"]


def test_document_ids_are_kept_as_written(tmp_path: Path) -> None:
    """Numeric-looking ids were parsed as numbers: `1e3` and `1000` were one document (refused as listed twice),
    `0042` became `42` and every id was shown as `1011.0`."""
    header, body = rows()
    for index, row in enumerate(body):
        row[1] = str(1000 + index)
    body[1][1], body[5][1] = "1e3", "0042"
    data = read(write_csv(tmp_path / "test.csv", header, body))
    assert data.doc_ids[:6] == ["1000", "1e3", "1002", "1003", "1004", "0042"]


# --- values that overflow every statistic -------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["1e308", "-1.7e308", "3e38"])
def test_feature_values_beyond_the_bound_are_refused(tmp_path: Path, value: str) -> None:
    """1e308 is finite, so it passed; the background mean overflowed to inf + -inf = NaN and masking silently
    replaced `price` by "missing" instead of its mean (3e38 is inf to a float32 model)."""
    header, body = rows()
    body[6][header.index("price")] = value
    error = refused(write_csv(tmp_path / "test.csv", header, body), nan_policy="missing")
    assert error.where == "8" and "'price'" in error.problem and f"{MAX_FEATURE_VALUE:.0e}" in error.problem
    assert "rescale" in error.fix


def test_values_within_the_bound_still_read(tmp_path: Path) -> None:
    header, body = rows()
    body[0][header.index("price")], body[1][header.index("price")] = "1e29", "-0.0"
    body[2][header.index("price")] = "4.9e-324"
    data = read(write_csv(tmp_path / "test.csv", header, body))
    assert data.X[0, 1] == 1e29 and data.X[2, 1] == 5e-324


# --- columns matched to the model's features ------------------------------------------------------------------

def test_a_renamed_and_moved_column_is_not_fed_to_the_wrong_feature(tmp_path: Path) -> None:
    """`price` renamed `Price` and swapped with `n_reviews`: the model's names no longer all matched, so the
    columns were taken in file order and the model read n_reviews as price (nDCG@10 0.818 -> 0.778, no word)."""
    header, body = rows()
    header = ["Price" if c == "price" else c for c in header]
    a, b = header.index("Price"), header.index("n_reviews")
    order = list(range(len(header)))
    order[a], order[b] = order[b], order[a]
    path = write_csv(tmp_path / "test.csv", [header[i] for i in order], [[r[i] for i in order] for r in body])
    error = refused(path)
    assert "'n_reviews'" in error.problem and "feature 4" in error.problem and "feature 2" in error.problem
    assert "`dataset.feature_columns`" in error.fix


def test_feature_columns_listed_out_of_the_models_order_are_refused(tmp_path: Path) -> None:
    path = shutil.copy(EXAMPLE / "test.csv", tmp_path / "test.csv")
    columns = [FEATURES[1], FEATURES[0], *FEATURES[2:]]
    error = refused(Path(path), feature_columns=columns)
    assert "'price'" in error.problem and "model's order" in error.fix


def test_renamed_columns_in_the_models_places_still_read(tmp_path: Path) -> None:
    """A column renamed in place is matched by position, as before (only a name in another place is refused)."""
    header, body = rows()
    header = ["cost" if c == "price" else c for c in header]
    data = read(write_csv(tmp_path / "test.csv", header, body))
    assert data.feature_names[1] == "cost"


def test_a_model_naming_a_feature_twice_is_refused(tmp_path: Path) -> None:
    """model.txt with `price` in place of `n_reviews`: the model's names were all columns, so price was fed to both
    slots (nDCG@10 0.818 -> 0.794, no word)."""
    from auditor.inputs.spec import ModelSpec
    from auditor.models import load_model

    text = (EXAMPLE / "model.txt").read_text()
    line = next(x for x in text.splitlines() if x.startswith("feature_names="))
    (tmp_path / "model.txt").write_text(text.replace(line, line.replace(" n_reviews ", " price ")))
    spec = ModelSpec.model_validate({"path": str(tmp_path / "model.txt")}, context={"base_dir": tmp_path})
    with pytest.raises(InputError) as caught:
        load_model(spec, base_dir=tmp_path)
    assert caught.value.file == str(tmp_path / "model.txt")
    assert "'price'" in caught.value.problem and "2 and 4" in caught.value.problem


def test_a_feature_names_file_naming_a_feature_twice_is_refused(tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_text("\n".join(["price" if n == "n_reviews" else n for n in FEATURES]) + "\n")
    with pytest.raises(InputError) as caught:
        read_feature_names(names)
    assert caught.value.where == "4" and "'price'" in caught.value.problem and "line 2" in caught.value.problem


def test_feature_columns_listed_twice_are_refused_in_the_spec(tmp_path: Path) -> None:
    for name in ("model.txt", "test.csv"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    spec = {**SPEC, "dataset": {**SPEC["dataset"], "feature_columns": [*FEATURES[:11], "price"]}}
    path = dump_spec(tmp_path, spec)
    with pytest.raises(InputError) as caught:
        load_spec(path)
    lines = path.read_text().splitlines()
    assert "'price'" in caught.value.problem and "more than once" in caught.value.problem
    line = int(caught.value.where.split(":")[0])
    assert lines[line - 1].strip() == "- price" and line > lines.index("  - price") + 1
    assert "dataset.feature_columns.1" in caught.value.problem


# --- SVMlight document ids -------------------------------------------------------------------------------------

def svmlight(tmp_path: Path, comments: list[str]) -> Path:
    header, body = rows()
    lines = []
    for row, comment in zip(body[:40], comments, strict=False):
        pairs = " ".join(f"{i}:{row[header.index(f)]}" for i, f in enumerate(FEATURES, start=1))
        lines.append(f"{row[2]} qid:{row[0]} {pairs} {comment}".rstrip())
    path = tmp_path / "test.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_svmlight_document_ids_are_never_dropped_silently(tmp_path: Path) -> None:
    """One line with two `# docid =` (or none) made every document's id a made-up `241:0`, without a word, and
    turned off the check for repeated documents."""
    comments = [f"# docid = D{i}" for i in range(40)]
    assert load_ranking_data(svmlight(tmp_path, comments), n_features=12).doc_ids[:2] == ["D0", "D1"]
    for line, comment, needle in ((6, "# docid = D5 # docid = other", "2 `docid =`"), (9, "", "no `docid =`")):
        edited = list(comments)
        edited[line - 1] = comment
        with pytest.raises(InputError) as caught:
            load_ranking_data(svmlight(tmp_path, edited), n_features=12)
        assert caught.value.where == str(line) and needle in caught.value.problem


# --- messages that named the wrong place or cause --------------------------------------------------------------

def test_csv_rows_are_named_by_row_when_lines_are_not_rows(tmp_path: Path) -> None:
    """A document id with a line break (quoted) or a blank line shifts every later line: the bad label on line 12
    was named as line 11. Now such a file names data rows (`row 10`); a plain file still names lines."""
    header, body = rows()
    body[9][2] = "bad"
    assert refused(write_csv(tmp_path / "plain.csv", header, body)).where == "11"
    body[1][1] = "isbn-\nbroken"
    assert refused(write_csv(tmp_path / "quoted.csv", header, body)).where == "row 10"
    body[1][1] = "isbn-1"
    text = (write_csv(tmp_path / "blank.csv", header, body)).read_text().replace("\n", "\n\n", 3)
    (tmp_path / "blank.csv").write_text(text)
    assert refused(tmp_path / "blank.csv").where == "row 10"


def test_svmlight_documents_are_named_by_their_line(tmp_path: Path) -> None:
    """A comment line at the top of a LETOR file shifted every line: label 40 on line 6 was named as line 5."""
    path = svmlight(tmp_path, [""] * 40)
    lines = path.read_text().splitlines()
    lines[4] = "40" + lines[4][1:]
    path.write_text("# LETOR 4.0, columns as in the feature list\n" + "\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        load_ranking_data(path, n_features=12)
    assert caught.value.where == "6" and "label 40" in caught.value.problem


def test_a_text_or_decimal_parquet_column_is_named_by_its_type(tmp_path: Path) -> None:
    """A Parquet column of decimals or of text holding numbers was refused as "holds a non-number ('4.99')"."""
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = pd.read_csv(EXAMPLE / "test.csv", dtype={"doc_id": str})
    table = pa.Table.from_pandas(frame, preserve_index=False)
    place = table.schema.get_field_index("price")
    for name, column, needle in (
            ("decimal", pa.array([decimal.Decimal(str(x)) for x in frame.price], pa.decimal128(10, 2)), "Decimal"),
            ("text", pa.array([str(x) for x in frame.price]), "text")):
        path = tmp_path / f"{name}.pq"
        pq.write_table(table.set_column(place, "price", column), path)
        error = refused(path)
        assert needle in error.problem and "non-number" not in error.problem and error.where == "row 1"


def test_utf16_and_semicolon_csv_files_are_named_for_what_they_are(tmp_path: Path) -> None:
    text = (EXAMPLE / "test.csv").read_text()
    (tmp_path / "utf16.csv").write_bytes(text.encode("utf-16"))
    assert "UTF-16" in refused(tmp_path / "utf16.csv").problem
    (tmp_path / "semicolon.csv").write_text(text.replace(",", ";"))
    error = refused(tmp_path / "semicolon.csv")
    assert "separated by `;`, not by `,`" in error.problem and error.where == "1"
    (tmp_path / "gz.csv.gz").write_bytes(gzip.compress(text.replace(",", ";").encode()))
    assert "`;`" in refused(tmp_path / "gz.csv.gz").problem
    (tmp_path / "commas.tsv").write_text(text)
    assert "separated by `,`, not by tabs" in refused(tmp_path / "commas.tsv").problem


def test_background_errors_name_the_background_keys(tmp_path: Path) -> None:
    """An empty background file said "point `dataset.path` at a non-empty file"."""
    for name in ("model.txt", "test.csv"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    (tmp_path / "train.csv").write_text((EXAMPLE / "train.csv").read_text().splitlines()[0] + "\n")
    spec = dump_spec(tmp_path, {**SPEC, "background": {"path": "train.csv", "doc_id_column": "doc_id"}})
    result = CliRunner().invoke(app, ["validate", str(spec), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "`background.path`" in result.stderr and "`dataset." not in result.stderr


# --- the spec ------------------------------------------------------------------------------------------------

def dump_spec(folder: Path, spec: dict) -> Path:
    """`spec` (a whole spec) as folder/audit.yaml."""
    path = folder / "audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def test_an_evidence_kind_listed_twice_is_refused(tmp_path: Path) -> None:
    """The later item replaced the earlier one without a word (`validate` said "20002 evidence item(s)" and ran
    two)."""
    shutil.copy(EXAMPLE / "model.txt", tmp_path / "model.txt")
    shutil.copy(EXAMPLE / "test.csv", tmp_path / "test.csv")
    spec = {**SPEC, "evidence": [{"ranking_quality": {"cutoffs": [10]}}, {"global_importance": {}},
                                 {"ranking_quality": {"cutoffs": [2]}}]}
    path = dump_spec(tmp_path, spec)
    with pytest.raises(InputError) as caught:
        load_spec(path)
    lines = path.read_text().splitlines()
    second = [n for n, text in enumerate(lines, start=1) if text.startswith("- ranking_quality")][1]
    assert caught.value.where.split(":")[0] == str(second)
    assert "evidence.0" in caught.value.problem and "merge" in caught.value.fix


# --- degenerate data is never certified --------------------------------------------------------------------

def test_labels_that_never_differ_within_a_query_are_never_certified(tmp_path: Path) -> None:
    """Every label 2: nDCG is 1.0 for any order, and the starter pack's opinion was "positive"."""
    import datetime as dt

    from auditor.evidence import ALWAYS, REGISTRY
    from auditor.evidence.base import AuditContext
    from auditor.evidence.kinds.dataset.measure import add_score_facts
    from auditor.judging.policy import evaluate, opinion, unjudged
    from auditor.models.base import CountingRanker

    def audit(folder: Path) -> tuple[str, set[str]]:
        prepared = engine.prepare(dump_spec(folder, SPEC))
        ctx = AuditContext(data=prepared.data, model=CountingRanker(prepared.model), seed=7)
        results = {name: plugin.run(ctx, options) for name, plugin, options in (
            ("dataset", ALWAYS["dataset"], engine.always_present_options(prepared.spec)["dataset"]),
            ("ranking_quality", REGISTRY["ranking_quality"], prepared.spec.evidence_items()[0][1]))}
        add_score_facts(results["dataset"], ctx)
        findings = evaluate(prepared.packs, results, requested=set(results), waivers=[], today=dt.date(2026, 1, 1))
        findings = [f for f in findings if f.status != "UNMEASURED"]  # the starter's rules on evidence not run here
        detections = [d for result in results.values() for d in result.detections]
        return opinion(findings, unjudged(detections, findings)), {d.kind for d in detections}

    shutil.copy(EXAMPLE / "model.txt", tmp_path / "model.txt")
    shutil.copy(EXAMPLE / "test.csv", tmp_path / "test.csv")
    assert audit(tmp_path) == ("positive", set())  # the example, as before
    header, body = rows()
    for row in body:
        row[2] = "2"
    write_csv(tmp_path / "test.csv", header, body)
    verdict, kinds = audit(tmp_path)
    assert verdict != "positive" and "labels-without-order" in kinds


# --- files around the run ------------------------------------------------------------------------------------

@pytest.mark.parametrize("link", ["dangling", "self"])
def test_template_links_that_lead_nowhere_are_one_line(tmp_path: Path, link: str) -> None:
    """A dangling link was FileNotFoundError and a link to itself RuntimeError: exit 3."""
    from auditor.report.render import check_templates

    folder = tmp_path / "templates"
    folder.mkdir()
    os.symlink("nothing" if link == "dangling" else link, folder / link)
    with pytest.raises(InputError) as caught:
        check_templates(folder)
    assert caught.value.file == str(folder / link) and "leads nowhere" in caught.value.problem


@pytest.mark.parametrize("target", ["/nonexistent/folder", "self"])
def test_an_output_folder_that_is_a_broken_link_is_refused_before_any_work(tmp_path: Path, target: str) -> None:
    """Refused only when the run folder was renamed into place, after all the evidence ran, as "File exists"."""
    out = tmp_path / "reports"
    os.symlink(target if target != "self" else "reports", out)
    with pytest.raises(InputError) as caught:
        engine.check_output_folder(out)
    assert "leads nowhere" in caught.value.problem
    with pytest.raises(InputError):
        engine.check_output_folder(out / "sub")


def test_a_broken_link_named_like_the_run_folder_is_skipped(tmp_path: Path) -> None:
    """The free name was tested with exists(), false for a broken link: the rename then failed with "Not a
    directory" and the audit's work was lost."""
    os.symlink("/nonexistent", tmp_path / "audit-20260101T000000Z")
    assert engine._free_name(tmp_path, "audit-20260101T000000Z").name == "audit-20260101T000000Z-2"


def test_a_feature_dictionary_naming_a_feature_twice_is_refused(tmp_path: Path) -> None:
    """A million rows repeating `price` were read whole (760 MB for 15 MB), the last meaning winning silently."""
    path = tmp_path / "dictionary.csv"
    path.write_text("name,meaning,unit\nprice,List price,EUR\nn_reviews,Reviews,count\nprice,Other,USD\n"
                    + "price,x,y\n" * 1_000)
    with pytest.raises(InputError) as caught:
        feature_dictionary.build({}, path, FEATURES, spec_file=tmp_path / "audit.yaml")
    assert caught.value.where == "4" and "line 2" in caught.value.problem
