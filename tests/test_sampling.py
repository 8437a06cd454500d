"""Stratified query sampling, and Parquet read one row group at a time when the spec asks for a sample."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditor.inputs.data import load_ranking_data
from auditor.inputs.sampling import label_mix, stratified_sample


def _frame(seed: int = 3, n_queries: int = 120) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, size=n_queries)
    qid = np.repeat([f"q{i:03d}" for i in range(n_queries)], sizes)
    relevant = np.repeat(rng.random(n_queries), sizes)  # queries differ in how many relevant documents they have
    frame = pd.DataFrame(rng.random((len(qid), 4)), columns=["a", "b", "c", "d"])
    frame.insert(0, "qid", qid)
    frame.insert(1, "label", (rng.random(len(qid)) < relevant).astype(int) * rng.integers(1, 3, size=len(qid)))
    frame["doc"] = [f"d{i}" for i in range(len(qid))]
    return frame


def test_allocation_is_proportional_and_seeded() -> None:
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 200, size=1000)
    mix = rng.integers(0, 3, size=1000)
    sample = stratified_sample(sizes, mix, 100, np.random.default_rng(1))
    assert len(sample.chosen) == 100 == sum(s["sampled"] for s in sample.strata)
    assert len(np.unique(sample.chosen)) == 100 and np.all(np.diff(sample.chosen) > 0)
    assert sum(s["queries"] for s in sample.strata) == 1000 and sample.population_docs == sizes.sum()
    for stratum in sample.strata:  # largest remainders: within one of the exact proportional share
        assert abs(stratum["sampled"] - 100 * stratum["queries"] / 1000) < 1
    again = stratified_sample(sizes, mix, 100, np.random.default_rng(1))
    assert np.array_equal(sample.chosen, again.chosen)
    assert not np.array_equal(sample.chosen, stratified_sample(sizes, mix, 100, np.random.default_rng(2)).chosen)
    everything = stratified_sample(sizes, mix, 5000, np.random.default_rng(1))
    assert np.array_equal(everything.chosen, np.arange(1000))


def test_label_mix_classes() -> None:
    labels = np.array([0, 0, 1, 0, 0, 0, 2, 1])
    query = np.array([0, 0, 1, 1, 1, 1, 2, 2])
    assert label_mix(labels, query, 3).tolist() == [0, 1, 2]


def test_parquet_sample_reads_row_groups_and_matches_the_in_memory_sample(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _frame()
    parquet, csv = tmp_path / "data.parquet", tmp_path / "data.csv"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet, row_group_size=97)  # queries span groups
    frame.to_csv(csv, index=False)
    reads: list[object] = []
    original_read = pq.ParquetFile.read

    def spy(self, columns=None, **kwargs):
        reads.append(columns)
        return original_read(self, columns=columns, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", spy)
    streamed = load_ranking_data(parquet, doc_id_column="doc", sample_queries=25,
                                 sample_rng=np.random.default_rng(5))
    assert reads == [["qid", "label"]]  # the whole file is only ever read for the query and label columns
    in_memory = load_ranking_data(csv, doc_id_column="doc", sample_queries=25, sample_rng=np.random.default_rng(5))
    assert streamed.n_queries == 25 and streamed.query_ids == in_memory.query_ids
    assert np.array_equal(streamed.X, in_memory.X) and streamed.doc_ids == in_memory.doc_ids
    full = load_ranking_data(csv, doc_id_column="doc")
    for qi, query in enumerate(streamed.query_ids):  # every document of a sampled query, in file order
        original = full.query_ids.index(query)
        assert np.array_equal(streamed.X[streamed.query_slice(qi)], full.X[full.query_slice(original)])
    assert streamed.summary()["dataset.population.n_queries"] == 120
    assert any("stratified sample of 25 of 120 queries" in note for note in streamed.notes)


def test_audit_states_the_sample(bookstore: Path) -> None:
    import yaml

    from auditor.run.engine import run_audit

    spec = yaml.safe_load((bookstore / "audit.yaml").read_text())
    spec["dataset"]["sample_queries"] = 10
    spec["evidence"] = [{"ranking_quality": {"cutoffs": [5]}}]
    spec["policies"] = []
    spec["output"] = {"dir": "runs", "formats": ["html"]}
    (bookstore / "audit.yaml").write_text(yaml.safe_dump(spec))
    run = run_audit(bookstore / "audit.yaml")
    dataset = run.results["dataset"]
    assert dataset.metrics["dataset.n_queries"] == 10 and dataset.metrics["dataset.population.n_queries"] > 10
    assert dataset.tables[0].title.startswith("Query sample by stratum")
    assert sum(row[2] for row in dataset.tables[0].rows) == 10
    html = (run.run_dir / "report.html").read_text()
    assert "Query sample by stratum" in html and "stratified sample" in html


def test_whole_parquet_is_read_by_row_group_into_one_matrix(tmp_path: Path) -> None:
    from auditor.core.errors import InputError

    frame = _frame(n_queries=40)
    parquet, csv = tmp_path / "data.parquet", tmp_path / "data.csv"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet, row_group_size=50)
    frame.to_csv(csv, index=False)
    assert pq.ParquetFile(parquet).num_row_groups > 3
    from_parquet = load_ranking_data(parquet, doc_id_column="doc")
    from_csv = load_ranking_data(csv, doc_id_column="doc")
    assert np.array_equal(from_parquet.X, from_csv.X) and np.array_equal(from_parquet.y, from_csv.y)
    assert from_parquet.doc_ids == from_csv.doc_ids and from_parquet.query_ids == from_csv.query_ids
    frame.loc[123, "label"] = 99  # in the third row group: the error names the row of the file, not of the group
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet, row_group_size=50)
    with pytest.raises(InputError) as error:
        load_ranking_data(parquet, doc_id_column="doc")
    assert error.value.where == "row 124"
