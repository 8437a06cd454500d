"""Ranking data: one array form for every input format, with the checks an audit needs before it starts.

Readers: SVMlight/LETOR (`qid:`, `#docid` comments, sparse or dense, `.gz`), CSV and Parquet. Every reader ends
in `RankingData`, whose documents of a query are contiguous and keep the file's order.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from auditor.errors import InputError
from auditor.files import check_regular

if TYPE_CHECKING:
    from auditor.sampling import QuerySample

NanPolicy = Literal["reject", "missing"]
DataFormat = Literal["svmlight", "csv", "parquet"]

_SUFFIX_FORMATS: dict[str, DataFormat] = {
    ".txt": "svmlight", ".svm": "svmlight", ".svmlight": "svmlight", ".letor": "svmlight", ".libsvm": "svmlight",
    ".train": "svmlight", ".test": "svmlight", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".pq": "parquet",
}
_DOCID_IN_COMMENT = re.compile(rb"#[^\n]*?docid\s*=\s*(\S+)")


@dataclass(frozen=True)
class RankingData:
    """Documents grouped by query. `X[query_ptr[i]:query_ptr[i+1]]` are the documents of query i."""

    X: np.ndarray
    y: np.ndarray | None
    query_ptr: np.ndarray
    query_ids: list[str]
    doc_ids: list[str]
    feature_names: list[str]
    source: str = ""
    notes: list[str] = field(default_factory=list)
    sample: QuerySample | None = None  # set when these queries are a stratified sample of the file's

    @property
    def n_docs(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_queries(self) -> int:
        return len(self.query_ptr) - 1

    def query_slice(self, i: int) -> slice:
        return slice(int(self.query_ptr[i]), int(self.query_ptr[i + 1]))

    def query_sizes(self) -> np.ndarray:
        return np.diff(self.query_ptr)

    def summary(self) -> dict[str, float]:
        """Counts a reviewer needs to judge the data (and that policy rules can address as `dataset.*`)."""
        sizes = self.query_sizes()
        out: dict[str, float] = {
            "dataset.n_queries": float(self.n_queries),
            "dataset.n_docs": float(self.n_docs),
            "dataset.n_features": float(self.n_features),
            "dataset.docs_per_query.min": float(sizes.min()),
            "dataset.docs_per_query.mean": float(sizes.mean()),
            "dataset.docs_per_query.max": float(sizes.max()),
            "dataset.single_doc_queries": float(np.sum(sizes == 1)),
            "dataset.single_doc_queries_share": float(np.mean(sizes == 1)),
            "dataset.missing_values": float(np.isnan(self.X).sum()),
        }
        if self.y is not None:
            all_zero = np.maximum.reduceat(self.y, self.query_ptr[:-1]) <= 0
            out["dataset.all_zero_label_queries"] = float(all_zero.sum())
            out["dataset.all_zero_label_queries_share"] = float(all_zero.mean())
        if self.sample is not None:
            out["dataset.population.n_queries"] = float(self.sample.population_queries)
            out["dataset.population.n_docs"] = float(self.sample.population_docs)
            out["dataset.sample_share"] = float(self.n_queries / max(self.sample.population_queries, 1))
        return out


def infer_format(path: Path) -> DataFormat:
    """Format from the file name (`.gz` looked through); a clear error when it cannot be told."""
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    if suffixes and suffixes[-1] in _SUFFIX_FORMATS:
        return _SUFFIX_FORMATS[suffixes[-1]]
    raise InputError(f"cannot tell the data format from the name '{path.name}'", file=path,
                     fix="set `format: svmlight`, `format: csv` or `format: parquet` in the dataset entry")


def load_ranking_data(
    path: Path,
    *,
    format: DataFormat | None = None,
    n_features: int | None = None,
    feature_names: list[str] | None = None,
    model_feature_names: list[str] | None = None,
    query_column: str = "qid",
    label_column: str | None = "label",
    doc_id_column: str | None = None,
    feature_columns: list[str] | None = None,
    query_file: Path | None = None,
    zero_based: bool | Literal["auto"] = "auto",
    nan_policy: NanPolicy = "reject",
    max_label: int = 31,
    sample_queries: int | None = None,
    sample_rng: np.random.Generator | None = None,
) -> RankingData:
    """Read a ranking dataset and check it. `n_features` (the model's) pads sparse files and catches mismatches.
    `sample_queries`: keep a stratified sample of that many queries (auditor/sampling.py), drawn with
    `sample_rng`; Parquet files are then read one row group at a time, keeping only the sampled queries' rows."""
    path = Path(path)
    check_regular(path, what="data file")
    fmt = format or infer_format(path)
    sample = None
    if fmt == "svmlight":
        X, y, qids, doc_ids = _read_svmlight(path, n_features=n_features, zero_based=zero_based,
                                             query_file=query_file)
        names = None
    else:
        columns = dict(query_column=query_column, label_column=label_column, doc_id_column=doc_id_column,
                       feature_columns=feature_columns, model_feature_names=model_feature_names)
        if fmt == "parquet" and sample_queries is not None:
            frame, sample = _read_parquet_sample(path, query_column, label_column, sample_queries,
                                                 sample_rng or np.random.default_rng(0))
            X, y, qids, doc_ids, names = _split_frame(frame, path, **columns)
        elif fmt == "parquet":
            X, y, qids, doc_ids, names = _read_parquet_by_row_group(path, **columns)
        else:
            X, y, qids, doc_ids, names = _split_frame(_read_frame(path, fmt), path, **columns)
    if X.shape[0] == 0:
        raise InputError("the dataset has no documents", file=path, fix="point `dataset.path` at a non-empty file")
    if n_features is not None and X.shape[1] != n_features:
        raise InputError(f"the data has {X.shape[1]} features but the model expects {n_features}", file=path,
                         fix="use the dataset the model was trained for, or the model that matches this data")
    notes: list[str] = []
    names = _feature_names(feature_names, names, model_feature_names, X.shape[1], path)
    place = _row_place(fmt)
    X = _apply_nan_policy(X, path, nan_policy, notes, names, place)
    if y is not None:
        _check_labels(y, path, max_label, place)
    if doc_ids is not None:
        _check_unique_documents(qids, doc_ids, path, place)
    X, y, qids, doc_ids, ptr, query_ids = _group_by_query(X, y, qids, doc_ids, notes)
    data = RankingData(X=X, y=y, query_ptr=ptr, query_ids=query_ids, doc_ids=doc_ids, feature_names=names,
                       source=str(path), notes=notes, sample=sample)
    if sample_queries is not None and sample is None:  # formats read whole: sample after reading
        data = sample_data(data, sample_queries, sample_rng or np.random.default_rng(0))
    if data.sample is not None:
        data.notes.append(data.sample.describe(data.n_docs))
    return data


def sample_data(data: RankingData, count: int, rng: np.random.Generator) -> RankingData:
    """A stratified sample of `count` queries of data already in memory (the queries keep their order)."""
    from auditor.sampling import label_mix, stratified_sample

    sizes = data.query_sizes()
    query_of_row = np.repeat(np.arange(data.n_queries), sizes)
    mix = label_mix(data.y, query_of_row, data.n_queries) if data.y is not None else None
    sample = stratified_sample(sizes, mix, count, rng)
    rows = np.concatenate([np.arange(data.query_ptr[q], data.query_ptr[q + 1]) for q in sample.chosen])
    ptr = np.zeros(len(sample.chosen) + 1, dtype=np.int64)
    np.cumsum(sizes[sample.chosen], out=ptr[1:])
    return RankingData(X=data.X[rows], y=None if data.y is None else data.y[rows], query_ptr=ptr,
                       query_ids=[data.query_ids[q] for q in sample.chosen], doc_ids=[data.doc_ids[r] for r in rows],
                       feature_names=data.feature_names, source=data.source, notes=list(data.notes), sample=sample)


def _read_parquet_sample(path: Path, query_column: str, label_column: str | None, count: int,
                         rng: np.random.Generator) -> tuple[pd.DataFrame, QuerySample]:
    """Sample queries from the query (and label) columns alone, then read the file one row group at a time and
    keep only the sampled queries' rows: memory ≈ those two columns + one row group + the sample."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from auditor.sampling import label_mix, stratified_sample

    try:
        file = pq.ParquetFile(path)
        columns = file.schema_arrow.names
        wanted = [c for c in (query_column, label_column) if c is not None and c in columns]
        keys = file.read(columns=wanted) if query_column in columns else None
    except Exception as exc:  # pyarrow raises its own types for corrupt files
        raise InputError(f"cannot read this parquet file ({type(exc).__name__}: {str(exc)[:120]})", file=path,
                         fix="check that it is a valid parquet file") from None
    if keys is None:
        _need_column(query_column, columns, "query_column", path)
    qids = keys.column(query_column).cast(pa.string()).to_numpy(zero_copy_only=False)
    missing = pd.isna(qids) | (qids == "nan")  # null, or a float NaN written as a query id
    if missing.any():
        raise InputError(f"the query id in column '{query_column}' is missing", file=path,
                         where=f"row {int(np.argmax(missing)) + 1}", fix="give every row a query id")
    if len(qids) == 0:
        raise InputError("the dataset has no documents", file=path, fix="point `dataset.path` at a non-empty file")
    codes, first_seen = _codes_by_first_appearance(qids)
    n_queries = len(first_seen)
    mix = None
    if label_column is not None and label_column in wanted:
        labels = pd.to_numeric(pd.Series(keys.column(label_column).to_numpy(zero_copy_only=False)),
                               errors="coerce").to_numpy(dtype=np.float64)
        mix = label_mix(np.nan_to_num(labels), codes, n_queries)
    del keys
    sample = stratified_sample(np.bincount(codes, minlength=n_queries), mix, count, rng)
    keep = pa.array(first_seen[sample.chosen].astype(str))
    parts = []
    for group in range(file.num_row_groups):
        table = file.read_row_group(group)
        mask = pc.is_in(table.column(query_column).cast(pa.string()), value_set=keep)
        parts.append(table.filter(mask))
    return pa.concat_tables(parts).to_pandas(), sample


def read_feature_names(path: Path) -> list[str]:
    """One feature name a line; blank lines and `#` comments skipped. LETOR's `1:name` prefix is accepted."""
    names = []
    for line in _read_text(path).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        names.append(re.sub(r"^\d+\s*[:\t ]\s*", "", line) if re.match(r"^\d+\s*[:\t ]\s*\S", line) else line)
    if not names:
        raise InputError("the feature-names file has no names", file=path, fix="write one feature name a line")
    return names


# --- SVMlight / LETOR -------------------------------------------------------------------------------------------

def _read_svmlight(path: Path, *, n_features: int | None, zero_based: bool | Literal["auto"],
                   query_file: Path | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str] | None]:
    from auditor.svmlight import SvmlightError, parse

    raw = _read_bytes(path)
    if not raw.strip():
        raise InputError("the dataset has no documents", file=path, fix="point `dataset.path` at a non-empty file")
    try:
        parsed = parse(raw)
    except SvmlightError as exc:
        line = raw.split(b"\n", exc.line)[exc.line - 1] if exc.line > 0 else b""
        raise InputError(f"not valid SVMlight/LETOR ({_why_bad(line) or 'malformed line'})", file=path,
                         where=str(exc.line),
                         fix="each line must be `label qid:N index:value ... [# comment]`") from None
    if parsed.labels.size == 0:
        raise InputError("the dataset has no documents", file=path, fix="point `dataset.path` at a non-empty file")
    doc_ids = _svmlight_doc_ids(raw, parsed.labels.size) if b"#" in raw else None
    del raw  # the file's bytes are the largest object here: free them before the dense matrix exists
    X = _dense(parsed, path, n_features=n_features, zero_based=zero_based)
    if query_file is not None or not parsed.has_qid:
        side = query_file or _side_query_file(path)
        if side is None:
            raise InputError("the file has no `qid:` fields and no query side file", file=path,
                             fix="add `qid:` to each line, or set `dataset.query_file` to a file of group sizes")
        qid = _qids_from_group_sizes(side, X.shape[0])
    else:
        qid = parsed.qids
    return X, parsed.labels, qid.astype(str), doc_ids


def _dense(parsed, path: Path, *, n_features: int | None, zero_based: bool | Literal["auto"]) -> np.ndarray:
    """CSR pairs → dense rows. `auto`: one-based unless some index is 0 (the convention of SVMlight tools)."""
    from auditor.svmlight import fill_dense

    indices = parsed.indices
    low, high = (int(indices.min()), int(indices.max())) if indices.size else (1, 0)
    if zero_based == "auto":
        zero_based = low == 0
    shift = 0 if zero_based else 1
    if low - shift < 0:
        raise InputError("feature index 0 in a file read as one-based", file=path,
                         fix="set `dataset.zero_based: true` if indices start at 0")
    width = high - shift + 1
    if n_features is not None:
        if width > n_features:
            raise InputError(f"the data has feature indices beyond the model's {n_features} features", file=path,
                             fix="use the dataset the model was trained for")
        width = n_features
    X = np.zeros((parsed.labels.shape[0], width))
    fill_dense(parsed.indptr, indices, parsed.values, shift, X)
    return X


def _svmlight_doc_ids(raw: bytes, n_docs: int) -> list[str] | None:
    """LETOR's `#docid = GX...` comments, one regex pass; None unless every document has exactly one."""
    ids = _DOCID_IN_COMMENT.findall(raw)
    if len(ids) != n_docs:
        return None
    return [i.decode("utf-8", "replace") for i in ids]


def _why_bad(line: bytes) -> str:
    """Say what is wrong with one malformed SVMlight line (only runs after the parser found it)."""
    body = line.split(b"#", 1)[0].split()
    if not body:
        return ""
    try:
        float(body[0])
    except ValueError:
        return f"label '{body[0].decode(errors='replace')[:30]}' is not a number"
    for token in body[1:]:
        key, colon, value = token.partition(b":")
        if not colon:
            return f"'{token.decode(errors='replace')[:30]}' is not `index:value`"
        if key == b"qid":
            if not value.isdigit():
                return f"qid '{value.decode(errors='replace')[:30]}' is not an integer"
            continue
        if not key.isdigit():
            return f"feature index '{key.decode(errors='replace')[:30]}' is not an integer"
        try:
            float(value)
        except ValueError:
            return f"value '{value.decode(errors='replace')[:30]}' is not a number"
    return ""


def _side_query_file(path: Path) -> Path | None:
    """LightGBM's convention: `X.query` (or `X.group`) next to `X` holds the group sizes."""
    stem = path.with_suffix("") if path.suffix == ".gz" else path
    for candidate in (Path(f"{stem}.query"), Path(f"{stem}.group")):
        if candidate.is_file():
            return candidate
    return None


def _qids_from_group_sizes(side: Path, n_rows: int) -> np.ndarray:
    try:
        sizes = np.array([int(v) for v in _read_text(side).split()], dtype=np.int64)
    except ValueError:
        raise InputError("the query file must hold one integer group size a line", file=side,
                         fix="write the number of documents of each query, in row order") from None
    if sizes.sum() != n_rows or np.any(sizes <= 0):
        raise InputError(f"group sizes add up to {int(sizes.sum())} but the data has {n_rows} rows", file=side,
                         fix="use the query file that belongs to this data file")
    return np.repeat(np.arange(len(sizes)), sizes)


# --- CSV / Parquet ----------------------------------------------------------------------------------------------

def _read_frame(path: Path, fmt: DataFormat) -> pd.DataFrame:
    try:
        if fmt == "csv":
            sep = "\t" if path.name.lower().removesuffix(".gz").endswith(".tsv") else ","
            return pd.read_csv(path, sep=sep)
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pandas()
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        if isinstance(exc, pd.errors.EmptyDataError):
            raise InputError("the dataset has no documents", file=path,
                             fix="point `dataset.path` at a non-empty file") from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read this {fmt} file ({first})", file=path,
                         fix=f"check that it is a valid {fmt} file") from None
    except Exception as exc:  # pyarrow raises its own types for corrupt files
        raise InputError(f"cannot read this {fmt} file ({type(exc).__name__}: {str(exc)[:120]})", file=path,
                         fix=f"check that it is a valid {fmt} file") from None


def _read_parquet_by_row_group(path: Path, **columns):
    """A whole Parquet file, one row group at a time into one preallocated float64 matrix: the peak is the matrix
    plus one row group, not the matrix plus an Arrow table plus a pandas frame of the whole file."""
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
        n_rows = file.metadata.num_rows
    except Exception as exc:  # pyarrow raises its own types for corrupt files
        raise InputError(f"cannot read this parquet file ({type(exc).__name__}: {str(exc)[:120]})", file=path,
                         fix="check that it is a valid parquet file") from None
    X = None
    labels, qids, doc_ids, names, start = [], [], [], None, 0
    for group in range(file.num_row_groups):
        try:
            frame = file.read_row_group(group).to_pandas()
        except Exception as exc:
            raise InputError(f"cannot read row group {group} of this parquet file ({type(exc).__name__}: "
                             f"{str(exc)[:120]})", file=path, fix="check that it is a valid parquet file") from None
        if len(frame) == 0:
            continue
        part_X, part_y, part_q, part_d, names = _split_frame(frame, path, row_offset=start, **columns)
        if X is None:
            X = np.empty((n_rows, part_X.shape[1]), dtype=np.float64)
        X[start:start + len(part_X)] = part_X
        start += len(part_X)
        labels.append(part_y)
        qids.append(part_q)
        doc_ids.append(part_d)
    if X is None:
        raise InputError("the dataset has no documents", file=path, fix="point `dataset.path` at a non-empty file")
    y = None if any(part is None for part in labels) else np.concatenate(labels)
    ids = None if any(part is None for part in doc_ids) else [d for part in doc_ids for d in part]
    return X[:start], y, np.concatenate(qids), ids, names


def _need_column(column: str, columns: list[str], key: str, path: Path) -> None:
    """A spec key naming a column the file lacks: one line with the nearest column name, or the columns there are."""
    if column not in columns:
        import difflib

        near = difflib.get_close_matches(column, columns, n=1)
        hint = f"did you mean '{near[0]}'?" if near else f"columns are: {', '.join(columns[:12])}"
        raise InputError(f"no column '{column}' (from `dataset.{key}`)", file=path,
                         fix=f"{hint} Set `dataset.{key}` to the right column")


def _split_frame(frame: pd.DataFrame, path: Path, *, query_column: str, label_column: str | None,
                 doc_id_column: str | None, feature_columns: list[str] | None,
                 model_feature_names: list[str] | None, row_offset: int = 0):
    if len(frame) == 0:
        raise InputError("the dataset has no documents (only a header)", file=path,
                         fix="point `dataset.path` at a non-empty file")
    columns = [str(c) for c in frame.columns]
    frame.columns = columns

    def need(column: str, key: str) -> None:
        _need_column(column, columns, key, path)

    need(query_column, "query_column")
    if label_column is not None and label_column not in columns:
        if label_column != "label":
            need(label_column, "label_column")
        label_column = None
    if doc_id_column is not None:
        need(doc_id_column, "doc_id_column")
    reserved = {query_column, label_column, doc_id_column} - {None}
    if feature_columns is None:
        if model_feature_names and set(model_feature_names) <= set(columns):
            feature_columns = list(model_feature_names)  # the model's order, whatever the file's order
        else:
            feature_columns = [c for c in columns if c not in reserved and pd.api.types.is_numeric_dtype(frame[c])]
            skipped = [c for c in columns if c not in reserved and c not in feature_columns]
            if skipped:
                raise InputError(f"column '{skipped[0]}' is not numeric", file=path,
                                 fix="list the feature columns in `dataset.feature_columns`, or drop that column")
    for column in feature_columns:
        need(column, "feature_columns")
        if not pd.api.types.is_numeric_dtype(frame[column]):
            bad = pd.to_numeric(frame[column], errors="coerce").isna() & frame[column].notna()
            row = int(np.argmax(bad.to_numpy()))
            where = str(row + 2) if path.suffix != ".parquet" else f"row {row_offset + row + 1}"
            raise InputError(f"feature column '{column}' holds a non-number ('{str(frame[column].iloc[row])[:30]}')",
                             file=path, where=where,
                             fix="feature values must be numbers")
    if not feature_columns:
        raise InputError("no feature columns found", file=path, fix="list them in `dataset.feature_columns`")
    X = frame[feature_columns].to_numpy(dtype=np.float64, copy=True)
    y = None
    if label_column is not None:
        labels = pd.to_numeric(frame[label_column], errors="coerce")
        if labels.isna().any():
            row = int(np.argmax(labels.isna().to_numpy()))
            raise InputError(f"label '{frame[label_column].iloc[row]}' is not a number", file=path,
                             where=str(row + 2) if path.suffix != ".parquet" else f"row {row_offset + row + 1}",
                             fix="labels must be non-negative integer grades")
        y = labels.to_numpy(dtype=np.float64)
    for column, key in ((query_column, "query_column"), (doc_id_column, "doc_id_column")):
        missing = frame[column].isna().to_numpy().copy() if column is not None else None
        if missing is not None and pd.api.types.is_float_dtype(frame[column]):
            missing |= np.isinf(frame[column].to_numpy(dtype=np.float64))  # "inf" is no id either
        if missing is not None and missing.any():
            row = int(np.argmax(missing))
            raise InputError(f"the {'query' if key == 'query_column' else 'document'} id in column '{column}' is "
                             "missing", file=path,
                             where=str(row + 2) if path.suffix != ".parquet" else f"row {row_offset + row + 1}",
                             fix=f"give every row a {'query' if key == 'query_column' else 'document'} id")
    qids = frame[query_column].astype(str).to_numpy(dtype=object)
    doc_ids = frame[doc_id_column].astype(str).tolist() if doc_id_column else None
    return X, y, qids, doc_ids, list(feature_columns)


# --- checks -------------------------------------------------------------------------------------------------

def _row_place(fmt: DataFormat):
    """How to name data row r in an error: the file line for text formats (CSV has a header line; SVMlight has
    one document a line), else `row N` (Parquet)."""
    if fmt == "csv":
        return lambda row: str(row + 2)
    if fmt == "svmlight":
        return lambda row: str(row + 1)
    return lambda row: f"row {row + 1}"


def _apply_nan_policy(X: np.ndarray, path: Path, policy: NanPolicy, notes: list[str], names: list[str],
                      place) -> np.ndarray:
    bad = ~np.isfinite(X)
    if not bad.any():
        return X
    row, col = (int(v) for v in np.argwhere(bad)[0])
    if policy == "reject":
        raise InputError(f"{int(bad.sum())} missing or infinite feature values (first: feature '{names[col]}')",
                         file=path, where=place(row),
                         fix="clean the data, or set `dataset.nan_policy: missing` to pass them on as missing")
    X[bad] = np.nan  # in place: every reader returns a matrix of its own (a copy would double the peak)
    notes.append(f"{int(bad.sum())} missing or infinite feature values were passed to the model as missing (NaN).")
    return X


def _check_labels(y: np.ndarray, path: Path, max_label: int, place) -> None:
    bad = ~np.isfinite(y) | (y < 0) | (y != np.round(y)) | (y > max_label)
    if bad.any():
        row = int(np.argmax(bad))
        raise InputError(f"label {y[row]:g} is out of range", file=path, where=place(row),
                         fix=f"labels must be integer grades from 0 to {max_label} (raise `dataset.max_label` "
                             "if higher grades are intended)")


def _check_unique_documents(qids: np.ndarray, doc_ids: list[str], path: Path, place) -> None:
    """A document listed twice in one query counts twice in every measure of that query: refuse it."""
    frame = pd.DataFrame({"q": np.asarray(qids).astype(str), "d": doc_ids})
    repeated = frame.duplicated(keep=False).to_numpy()
    if not repeated.any():
        return
    first = int(np.argmax(repeated))
    query, doc = frame.iloc[first]
    rows = np.flatnonzero(repeated & (frame["q"].to_numpy() == query) & (frame["d"].to_numpy() == doc))
    raise InputError(f"document '{doc[:40]}' of query '{query[:40]}' is listed {len(rows)} times (first at "
                     f"{place(int(rows[0]))}, again at {place(int(rows[1]))}; {int(frame.duplicated().sum())} "
                     "repeated (query, document) pair(s) in all)", file=path, where=place(first),
                     fix="keep each (query, document) pair once")


def _feature_names(given: list[str] | None, from_file: list[str] | None, from_model: list[str] | None,
                   n_features: int, path: Path) -> list[str]:
    """Names in order of trust: the spec's feature-names file, the data's columns, the model's, then f1..fn."""
    for names, origin in ((given, "the feature-names file"), (from_file, "the data columns")):
        if names is not None:
            if len(names) != n_features:
                raise InputError(f"{origin} gives {len(names)} names for {n_features} features", file=path,
                                 fix="give exactly one name per feature")
            return [str(n) for n in names]
    if from_model and len(from_model) == n_features and not _generic_names(from_model):
        return list(from_model)
    return [f"f{i + 1}" for i in range(n_features)]


def _generic_names(names: list[str]) -> bool:
    return all(re.fullmatch(r"Column_\d+", n) for n in names)


def _group_by_query(X: np.ndarray, y: np.ndarray | None, qids: np.ndarray, doc_ids: list[str] | None,
                    notes: list[str]):
    """Make each query's documents contiguous: queries in order of first appearance, documents in file order."""
    codes, first_seen = _codes_by_first_appearance(qids)
    n_queries = int(codes.max()) + 1
    contiguous = bool(np.all(np.diff(codes) >= 0))
    if not contiguous:
        order = np.argsort(codes, kind="stable")
        X, codes = X[order], codes[order]
        y = None if y is None else y[order]
        doc_ids = None if doc_ids is None else [doc_ids[i] for i in order]
        notes.append("Documents of some queries were not contiguous in the file; they were grouped by query "
                     "(queries in order of first appearance, documents in file order).")
    ptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=n_queries), out=ptr[1:])
    query_ids = [str(q) for q in first_seen]
    if doc_ids is None:
        doc_ids = [f"{query_ids[codes[i]]}:{i - ptr[codes[i]]}" for i in range(len(codes))]
    return X, y, codes, doc_ids, ptr, query_ids


def _codes_by_first_appearance(qids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniques, first_index, inverse = np.unique(qids, return_index=True, return_inverse=True)
    rank = np.empty(len(uniques), dtype=np.int64)
    rank[np.argsort(first_index, kind="stable")] = np.arange(len(uniques))
    return rank[inverse], uniques[np.argsort(first_index, kind="stable")]


# --- files ----------------------------------------------------------------------------------------------------

def _read_bytes(path: Path) -> bytes:
    check_regular(path, what="data file")
    try:
        with path.open("rb") as handle:
            head = handle.read(2)
        if head == b"\x1f\x8b":
            with gzip.open(path, "rb") as handle:
                return handle.read()
        return path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"cannot read the file ({exc.__class__.__name__}: {exc})", file=path,
                         fix="check the path and that the file is readable") from None


def _read_text(path: Path) -> str:
    return _read_bytes(path).decode("utf-8", errors="replace")
