"""Issue 33, data files: column handling is linear, integers are checked before arithmetic, SVMlight indices and
qids never wrap, and what a data file can make the audit hold is capped (decompressed text, parsed arrays, the dense
matrix, documents² per query, side files).

Each test failed on the code before the fix (a hang is a failure here: `within` interrupts it; the group sizes of
2^62 killed the process with SIGSEGV).
"""

from __future__ import annotations

import gzip
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

from auditor.core import files
from auditor.core.errors import InputError
from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions
from auditor.evidence.kinds.parameter_influence.measure import ParameterInfluenceOptions
from auditor.inputs import data as data_module
from auditor.inputs.data import load_ranking_data
from auditor.inputs.svmlight import MAX_INDEX, MAX_QID, SvmlightError, parse
from auditor.run.cost import Shape, estimate_item
from tests.conftest import within
from tests.inputs import (
    Case,
    assert_one_error_line,
    invoke,
    read_rows,
    snapshot,
    svmlight_lines,
    write_base_spec,
    write_csv,
)


def refused(base: Path, spec: Path, file: Path, where: str | None, *needles: str) -> str:
    """`report` ends with exit 2, one error line naming `file[:where]`, nothing written."""
    before = snapshot(base)
    result = invoke("report", str(spec), "--out", str(base / "out"), "--quiet")
    line = assert_one_error_line(result, Case(spec, file, where, needles))
    assert list((base / "out").iterdir()) == [] and snapshot(base) == before
    return line


def svmlight_spec(base: Path, name: str, **dataset: object) -> Path:
    return write_base_spec(base, dataset={"path": name, "doc_id_column": None, **dataset})


def no_qid(lines: list[str]) -> list[str]:
    return [re.sub(r" qid:\S+", "", line) for line in lines]


def write_wide_csv(path: Path, columns: int, rows: int = 10) -> None:
    """qid, label and `columns` feature columns c0.. (none of them the model's names: the general path)."""
    header = "qid,label," + ",".join(f"c{i}" for i in range(columns))
    body = ",".join("1" for _ in range(columns))
    path.write_text(header + "\n" + "".join(f"{r // 5},{r % 3},{body}\n" for r in range(rows)), encoding="utf-8")


# --- 1. columns: linear, and capped ------------------------------------------------------------------------------

def test_a_100k_column_csv_is_one_error_line_within_seconds(base: Path) -> None:
    """The issue's file: 100,000 columns hung in `_split_frame` (a list scan per column). Now the header is
    counted before pandas builds any column."""
    write_wide_csv(base / "wide.csv", 100_000)
    spec = write_base_spec(base, dataset={"path": "wide.csv", "doc_id_column": None})
    start = time.perf_counter()
    with within(60):
        refused(base, spec, base / "wide.csv", None, "100,002 columns", "more than the 20,000 allowed",
                "the model's feature columns only")
    assert time.perf_counter() - start < 5


def test_a_wide_csv_below_the_cap_reads_in_linear_time(tmp_path: Path) -> None:
    """19,000 columns: ~18 s before (three quadratic scans), ~1.5 s now (pandas itself)."""
    write_wide_csv(tmp_path / "wide.csv", 19_000)
    start = time.perf_counter()
    with within(30):
        loaded = load_ranking_data(tmp_path / "wide.csv")
    assert loaded.n_features == 19_000 and loaded.feature_names[-1] == "c18999"
    assert time.perf_counter() - start < 8


def test_a_parquet_file_with_too_many_columns_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cap holds for Parquet too, from the file's metadata (the real cap, 20,000, with a small file here)."""
    import pandas as pd

    monkeypatch.setattr(data_module, "MAX_COLUMNS", 40, raising=False)
    frame = pd.DataFrame({"qid": [1, 1, 2, 2], "label": [0, 1, 0, 1],
                          **{f"c{i}": [0.5, 0.1, 0.2, 0.3] for i in range(50)}})
    frame.to_parquet(tmp_path / "wide.parquet")
    for sample in (None, 1):
        with pytest.raises(InputError, match="52 columns, more than the 40 allowed"):
            load_ranking_data(tmp_path / "wide.parquet", sample_queries=sample)


def test_repeated_column_names_are_refused(tmp_path: Path) -> None:
    """Parquet can repeat a column name; the numeric check per name would then mix two columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table([pa.array([1, 1]), pa.array([0.1, 0.2]), pa.array([0.3, 0.4])], names=["qid", "f", "f"])
    pq.write_table(table, tmp_path / "twice.parquet")
    with pytest.raises(InputError, match="column 'f' appears more than once"):
        load_ranking_data(tmp_path / "twice.parquet", label_column=None)


# --- 2. group sizes: checked as Python integers, side files held to a named file's rules -------------------------

def test_group_sizes_that_wrap_int64_are_one_error_line(base: Path) -> None:
    """The issue's reproduction, reduced to 30 rows: 2^62, 2^62, 2^62, 2^62 + 30 add up in int64 to 30, passed
    both checks and np.repeat wrote past its array (SIGSEGV, exit 139, no message). The side file is picked up
    by convention; the error names it."""
    (base / "data.txt").write_text("\n".join(no_qid(svmlight_lines(base, 30))) + "\n", encoding="utf-8")
    side = base / "data.txt.query"
    side.write_text(f"{2**62}\n{2**62}\n{2**62}\n{2**62 + 30}\n", encoding="utf-8")
    line = refused(base, svmlight_spec(base, "data.txt"), side, "1", "group size 4611686018427387904",
                   "more than the data's 30 rows", "read by convention as the query file of data.txt")
    assert len(line) < 400


def test_a_negative_group_size_is_named_as_such(base: Path) -> None:
    """20, 15 and -5 add up to the 30 rows: the message said 'group sizes add up to 30 but the data has 30 rows'."""
    (base / "data.txt").write_text("\n".join(no_qid(svmlight_lines(base, 30))) + "\n", encoding="utf-8")
    (base / "groups.txt").write_text("20\n15\n-5\n", encoding="utf-8")
    spec = svmlight_spec(base, "data.txt", query_file="groups.txt")
    line = refused(base, spec, base / "groups.txt", "3", "group size -5 is not positive", "1 or more")
    assert "convention" not in line  # named in the spec, not picked up


def test_a_side_file_that_is_a_fifo_is_named(base: Path) -> None:
    """Before: `is_file()` skipped the FIFO and the error blamed the data file for having no query file."""
    (base / "data.txt").write_text("\n".join(no_qid(svmlight_lines(base, 30))) + "\n", encoding="utf-8")
    os.mkfifo(base / "data.txt.query")
    refused(base, svmlight_spec(base, "data.txt"), base / "data.txt.query", None,
            "query side file of data.txt is a FIFO (named pipe), not a regular file", "dataset.query_file")


def test_a_side_file_linking_out_of_the_folder_is_refused(base: Path, tmp_path_factory: pytest.TempPathFactory
                                                           ) -> None:
    """A file no spec names may not pull data from elsewhere: a link out of the data file's folder is refused."""
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "sizes"
    elsewhere.write_text("15\n15\n", encoding="utf-8")
    (base / "data.txt").write_text("\n".join(no_qid(svmlight_lines(base, 30))) + "\n", encoding="utf-8")
    (base / "data.txt.group").symlink_to(elsewhere)
    refused(base, svmlight_spec(base, "data.txt"), base / "data.txt.group", None,
            "links outside the data file's folder", "copy the group sizes next to the data file")


def test_a_side_file_inside_the_folder_still_works(base: Path) -> None:
    """The convention itself is kept (LightGBM's `X.query`), a link within the folder too."""
    (base / "data.txt").write_text("\n".join(no_qid(svmlight_lines(base, 30))) + "\n", encoding="utf-8")
    (base / "sizes").write_text("15\n15\n", encoding="utf-8")
    (base / "data.txt.query").symlink_to(base / "sizes")
    loaded = load_ranking_data(base / "data.txt")
    assert loaded.n_queries == 2 and loaded.query_sizes().tolist() == [15, 15]


@pytest.mark.parametrize("which", ["side", "feature_names"])
def test_side_files_have_a_size_cap(base: Path, monkeypatch: pytest.MonkeyPatch, which: str) -> None:
    """Feature-name and query files were read whole without a cap (docs/security.md); now 16 MiB (64 bytes
    here), counted after inflation."""
    monkeypatch.setattr(data_module, "MAX_SMALL_BYTES", 64, raising=False)
    if which == "side":
        (base / "data.txt").write_text("\n".join(no_qid(svmlight_lines(base, 30))) + "\n", encoding="utf-8")
        target = base / "data.txt.query"
        target.write_bytes(gzip.compress(b"1\n" * 30 + b" " * 100))  # ~30 bytes, 160 inflated
        assert target.stat().st_size < 64
        spec = svmlight_spec(base, "data.txt")
    else:
        target = base / "names.txt"
        target.write_text("\n".join(f"feature_{i}" for i in range(12)) + "\n", encoding="utf-8")
        spec = write_base_spec(base, dataset={"feature_names": "names.txt"})
    refused(base, spec, target, None, "is larger than the 64 bytes allowed")


# --- 3. SVMlight integers never wrap -------------------------------------------------------------------------------

def test_a_feature_index_beyond_int32_is_refused_with_line_and_token(base: Path) -> None:
    """2^32 + 3 was stored in int32 as 3: the value silently replaced feature 3 (the audit ran)."""
    lines = svmlight_lines(base, 30)
    lines[2] += f" {2**32 + 3}:0.5"
    (base / "data.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    refused(base, svmlight_spec(base, "data.txt"), base / "data.txt", "3",
            f"feature index {2**32 + 3} (in '{2**32 + 3}:0.5') is out of range", "2,147,483,647")


def test_a_qid_beyond_int64_is_refused_with_line_and_token(base: Path) -> None:
    """2^64 + 241 wrapped to 241: its documents joined query 241 (the audit ran)."""
    lines = svmlight_lines(base, 30)
    lines[4] = re.sub(r"qid:\S+", f"qid:{2**64 + 241}", lines[4])
    (base / "data.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    refused(base, svmlight_spec(base, "data.txt"), base / "data.txt", "5",
            f"qid {2**64 + 241} is out of range", "small integers")


@pytest.mark.parametrize(("token", "ok"), [
    (f"qid:{MAX_QID} 1:1", True), (f"qid:{MAX_QID + 1} 1:1", False), (f"qid:{2**63} 1:1", False),
    (f"qid:{2**64 + 241} 1:1", False), ("qid:" + "9" * 5000 + " 1:1", False), ("qid:" + "0" * 40 + "7 1:1", True),
    (f"qid:1 {MAX_INDEX}:1", True), (f"qid:1 {MAX_INDEX + 1}:1", False), (f"qid:1 {2**32 + 3}:1", False),
    (f"qid:1 {2**64 + 3}:1", False),
])
def test_the_parser_reads_integers_exactly_or_refuses_them(token: str, ok: bool) -> None:
    text = f"0 qid:1 1:1\n1 {token}\n".encode()
    if ok:
        parsed = parse(text)
        assert parsed.qids[1] in (MAX_QID, 1, 7) and parsed.indices.max() in (1, MAX_INDEX)
    else:
        with pytest.raises(SvmlightError) as info:
            parse(text)
        assert info.value.line == 2


# --- 4. memory: inflation, parsed arrays, the dense matrix, documents² ---------------------------------------------

def test_a_gzip_bomb_is_refused_after_the_floor(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's 14 MB .txt.gz inflated to 3 GiB (swap death). Reduced: 1 MiB floor, ~100 KB to 8 MiB: refused
    as soon as the inflated bytes pass 100 times what was read, past the floor."""
    monkeypatch.setattr(files, "INFLATE_FLOOR", 1 << 20, raising=False)
    block = ("\n".join(svmlight_lines(base, 30)) + "\n").encode()
    data = base / "bomb.txt.gz"
    data.write_bytes(gzip.compress(block * (8 * (1 << 20) // len(block)), compresslevel=9))
    assert data.stat().st_size < (8 << 20) // 100
    refused(base, svmlight_spec(base, "bomb.txt.gz"), data, None, "inflates more than 100 times its size",
            "gunzip")


def test_gzip_text_below_the_ratio_still_reads(tmp_path: Path) -> None:
    """Real LETOR gzip files inflate ~5 times (MQ2008's train.txt.gz: 5.3): read as before."""
    rng = np.random.default_rng(0)
    lines = [f"{i % 3} qid:{i // 10} " + " ".join(f"{j}:{v:.6f}" for j, v in enumerate(rng.random(46), 1))
             for i in range(400)]
    (tmp_path / "t.txt.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    assert load_ranking_data(tmp_path / "t.txt.gz").n_docs == 400


@pytest.mark.parametrize("compress", ["bz2", "lzma"])
def test_other_compressions_are_named_not_inflated_without_a_cap(base: Path, compress: str) -> None:
    """With `format: csv`, pandas inflated `.bz2`/`.xz`/`.zip` by the file name, without any cap."""
    import bz2
    import lzma

    module = {"bz2": bz2, "lzma": lzma}[compress]
    data = base / f"test.csv.{'bz2' if compress == 'bz2' else 'xz'}"
    data.write_bytes(module.compress((base / "test.csv").read_bytes()))
    spec = write_base_spec(base, dataset={"path": data.name, "format": "csv"})
    refused(base, spec, data, None, f"this file is {'bzip2' if compress == 'bz2' else 'xz'}-compressed",
            "compress it with gzip")


def test_max_bytes_bounds_text_and_parsed_arrays(base: Path) -> None:
    """`dataset.max_bytes`: the text plus what parsing builds (per line, per pair) is estimated while reading."""
    lines = [re.sub(r"qid:\S+", f"qid:{i // 30}", line) for i, line in enumerate(svmlight_lines(base, 30) * 200)]
    (base / "big.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert (base / "big.txt").stat().st_size < (1 << 20)  # the text alone fits; with its arrays it does not
    refused(base, svmlight_spec(base, "big.txt", max_bytes=1 << 20), base / "big.txt", None,
            "reading the data file would take more than the 1 MiB allowed", "dataset.max_bytes")


def test_max_bytes_bounds_a_csv_and_the_dense_matrix(base: Path) -> None:
    header, rows = read_rows(base)
    write_csv(base / "big.csv", header, [[f"{r[0]}-{i}", f"{r[1]}-{i}", *r[2:]] for i in range(3) for r in rows])
    with pytest.raises(InputError, match="more than the 1 MiB allowed"):
        load_ranking_data(base / "big.csv", doc_id_column="doc_id", max_bytes=1 << 20)
    sparse = "".join(f"{i % 2} qid:{i // 5} 1:1 300000:1\n" for i in range(10))
    (base / "sparse.txt").write_text(sparse, encoding="utf-8")
    with pytest.raises(InputError, match=r"feature matrix \(10 rows × 300,000 features\) would take 23 MiB"):
        load_ranking_data(base / "sparse.txt", max_bytes=1 << 20)
    assert load_ranking_data(base / "sparse.txt").n_features == 300_000  # within the default


def test_a_query_of_20000_documents_is_refused_with_what_to_do(base: Path) -> None:
    """One query of 20,000 documents made the audit build documents² arrays (3.7 GB; 10 min at 8.5 GB while
    `validate` estimated 59 s). Refused when the data is read, naming the query and both ways out."""
    header, rows = read_rows(base)
    big = [["big", f"d{i}", *rows[i % len(rows)][2:]] for i in range(20_000)]
    write_csv(base / "big.csv", header, big + [["small", f"s{i}", *rows[i][2:]] for i in range(30)])
    spec = write_base_spec(base, dataset={"path": "big.csv"})
    refused(base, spec, base / "big.csv", None, "query 'big' has 20,000 documents, more than the 2,000",
            "3.0 GiB per array", "keep the top documents of each query", "raise `dataset.max_docs_per_query`")
    raised = load_ranking_data(base / "big.csv", doc_id_column="doc_id", max_docs_per_query=20_000)
    assert raised.query_sizes().tolist() == [20_000, 30]


def _shape(sizes: list[int]) -> Shape:
    return Shape(sizes=np.asarray(sizes), features=12, trees=80, background_docs=sum(sizes),
                 background_queries=len(sizes), rows_per_second=1e6, masked_rows_per_second=1e6,
                 feature_names=tuple(f"f{i}" for i in range(12)))


@pytest.mark.parametrize("kind", ["local_explanations", "parameter_influence"])
def test_the_cost_estimate_grows_with_documents_squared(kind: str) -> None:
    """Same queries and documents, one long query: the estimate used the mean length, so it did not change."""
    options = LocalExplanationsOptions() if kind == "local_explanations" else \
        ParameterInfluenceOptions(sensitive=["f1"])
    even = estimate_item(kind, options, _shape([1_009] * 10), set())
    skewed = estimate_item(kind, options, _shape([10_000] + [10] * 9), set())
    assert even.rows == skewed.rows
    assert skewed.seconds > 3 * even.seconds
