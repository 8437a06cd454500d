"""Readers: SVMlight/LETOR, CSV and Parquet give the same RankingData; grouping, names and checks."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from auditor.core.errors import InputError
from auditor.inputs.data import infer_format, load_ranking_data, read_feature_names

LETOR = """2 qid:10 1:0.5 2:0.25 3:1 #docid = GX-A inc = 1 prob = 0.1
0 qid:10 1:0.1 3:0.5 #docid = GX-B inc = 1 prob = 0.2
1 qid:7 2:0.75 #docid = GX-C inc = 1 prob = 0.3
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_letor_dense_view_doc_ids_and_query_order(tmp_path: Path) -> None:
    data = load_ranking_data(write(tmp_path / "d.txt", LETOR))
    assert data.X.tolist() == [[0.5, 0.25, 1.0], [0.1, 0.0, 0.5], [0.0, 0.75, 0.0]]
    assert data.y.tolist() == [2, 0, 1]
    assert data.query_ids == ["10", "7"]  # order of first appearance, not sorted
    assert data.query_ptr.tolist() == [0, 2, 3]
    assert data.doc_ids == ["GX-A", "GX-B", "GX-C"]
    assert data.feature_names == ["f1", "f2", "f3"]


def test_gzip_and_padding_to_model_features(tmp_path: Path) -> None:
    path = tmp_path / "d.txt.gz"
    path.write_bytes(gzip.compress(LETOR.encode()))
    data = load_ranking_data(path, n_features=5)
    assert data.X.shape == (3, 5)
    assert data.X[:, 3:].sum() == 0


def test_more_features_than_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="beyond the model's 2 features"):
        load_ranking_data(write(tmp_path / "d.txt", LETOR), n_features=2)


def test_non_contiguous_queries_are_grouped_stably(tmp_path: Path) -> None:
    text = "1 qid:1 1:1\n0 qid:2 1:2\n2 qid:1 1:3\n0 qid:2 1:4\n"
    data = load_ranking_data(write(tmp_path / "d.txt", text))
    assert data.X[:, 0].tolist() == [1, 3, 2, 4]
    assert data.query_ids == ["1", "2"]
    assert any("not contiguous" in note for note in data.notes)


def test_query_side_file_when_no_qid(tmp_path: Path) -> None:
    write(tmp_path / "rank.test", "1 1:1\n0 1:2\n2 1:3\n")
    write(tmp_path / "rank.test.query", "2\n1\n")
    data = load_ranking_data(tmp_path / "rank.test")
    assert data.query_ptr.tolist() == [0, 2, 3]


def test_no_qid_and_no_side_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no `qid:`"):
        load_ranking_data(write(tmp_path / "d.txt", "1 1:1\n0 1:2\n"))


def test_malformed_line_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_ranking_data(write(tmp_path / "d.txt", "1 qid:1 1:1\n0 qid:1 1:x\n"))
    assert ":2:" in str(info.value) and "'x' is not a number" in str(info.value)


def frame() -> pd.DataFrame:
    return pd.DataFrame({"qid": ["q1", "q1", "q2"], "doc": ["a", "b", "c"], "label": [1, 0, 2],
                         "price": [1.5, 2.5, 3.5], "stars": [4, 5, 3]})


def test_csv_and_parquet_read_the_same(tmp_path: Path) -> None:
    frame().to_csv(tmp_path / "d.csv", index=False)
    frame().to_parquet(tmp_path / "d.parquet")
    a = load_ranking_data(tmp_path / "d.csv", doc_id_column="doc")
    b = load_ranking_data(tmp_path / "d.parquet", doc_id_column="doc")
    for data in (a, b):
        assert data.feature_names == ["price", "stars"]
        assert data.doc_ids == ["a", "b", "c"]
        assert data.query_ids == ["q1", "q2"]
    np.testing.assert_array_equal(a.X, b.X)


def test_csv_columns_follow_the_model_order(tmp_path: Path) -> None:
    frame().to_csv(tmp_path / "d.csv", index=False)
    data = load_ranking_data(tmp_path / "d.csv", doc_id_column="doc", model_feature_names=["stars", "price"])
    assert data.feature_names == ["stars", "price"]
    assert data.X[0].tolist() == [4, 1.5]


def test_csv_missing_column_suggests_nearest(tmp_path: Path) -> None:
    frame().to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(InputError, match="did you mean 'doc'"):
        load_ranking_data(tmp_path / "d.csv", doc_id_column="docs")


def test_unlabelled_csv_is_allowed(tmp_path: Path) -> None:
    frame().drop(columns="label").to_csv(tmp_path / "d.csv", index=False)
    assert load_ranking_data(tmp_path / "d.csv", doc_id_column="doc").y is None


def test_nan_policy(tmp_path: Path) -> None:
    df = frame()
    df.loc[1, "price"] = np.nan
    df.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(InputError, match="nan_policy: missing"):
        load_ranking_data(tmp_path / "d.csv", doc_id_column="doc")
    data = load_ranking_data(tmp_path / "d.csv", doc_id_column="doc", nan_policy="missing")
    assert np.isnan(data.X[1, 0]) and data.summary()["dataset.missing_values"] == 1


@pytest.mark.parametrize("label", [-1, 1.5, 40])
def test_label_range(tmp_path: Path, label: float) -> None:
    df = frame().astype({"label": float})
    df.loc[2, "label"] = label
    df.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(InputError, match="out of range"):
        load_ranking_data(tmp_path / "d.csv", doc_id_column="doc")


def test_summary_counts_edge_queries(tmp_path: Path) -> None:
    text = "0 qid:1 1:1\n0 qid:1 1:2\n1 qid:2 1:3\n"
    summary = load_ranking_data(write(tmp_path / "d.txt", text)).summary()
    assert summary["dataset.single_doc_queries"] == 1
    assert summary["dataset.all_zero_label_queries"] == 1
    assert summary["dataset.all_zero_label_queries_share"] == 0.5


def test_feature_names_file_and_count_check(tmp_path: Path) -> None:
    names = read_feature_names(write(tmp_path / "names.txt", "# comment\n1:bm25\n2 pagerank\nurl_length\n"))
    assert names == ["bm25", "pagerank", "url_length"]
    data = load_ranking_data(write(tmp_path / "d.txt", LETOR), feature_names=names)
    assert data.feature_names == names
    with pytest.raises(InputError, match="gives 2 names for 3 features"):
        load_ranking_data(tmp_path / "d.txt", feature_names=names[:2])


def test_model_names_used_unless_generic(tmp_path: Path) -> None:
    path = write(tmp_path / "d.txt", LETOR)
    assert load_ranking_data(path, model_feature_names=["a", "b", "c"]).feature_names == ["a", "b", "c"]
    generic = ["Column_0", "Column_1", "Column_2"]
    assert load_ranking_data(path, model_feature_names=generic).feature_names == ["f1", "f2", "f3"]


def test_infer_format() -> None:
    assert infer_format(Path("x/train.txt.gz")) == "svmlight"
    assert infer_format(Path("a.parquet")) == "parquet"
    with pytest.raises(InputError, match="format"):
        infer_format(Path("a.xyz"))


@pytest.mark.realdata
def test_reads_mq2008_fold1() -> None:
    from tests.conftest import shared_data_dir

    folder = shared_data_dir() / "MQ2008" / "Fold1"
    if not (folder / "test.txt").is_file():
        pytest.skip(f"MQ2008 Fold1 not found in {folder} (set AUDITOR_DATA to the shared data folder)")
    parts = [load_ranking_data(folder / name, n_features=46) for name in ("train.txt.gz", "vali.txt", "test.txt")]
    assert [p.n_queries for p in parts] == [471, 157, 156]
    assert [p.n_docs for p in parts] == [9630, 2707, 2874]
    assert sum(p.n_queries for p in parts) == 784
    assert all(p.n_features == 46 for p in parts)
    test = parts[2]
    assert test.doc_ids[0].startswith("GX") and len(set(test.query_ids)) == 156
    assert np.bincount(test.y.astype(int)).tolist() == [2319, 378, 177]
