"""Ranking data: one array form for every input format, with the checks an audit needs before it starts.

Readers: SVMlight/LETOR (`qid:`, `#docid` comments, sparse or dense, `.gz`), CSV and Parquet. Every reader ends
in `RankingData`, whose documents of a query are contiguous and keep the file's order.
"""

from __future__ import annotations

import io
import os
import re
import stat
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

import numpy as np
import pandas as pd

from auditor.core.errors import InputError
from auditor.core.files import (
    MAX_DATA_BYTES,
    MAX_DOCS_PER_QUERY,
    MAX_SMALL_BYTES,
    MiB,
    check_regular,
    kind_of,
    open_inflated,
    read_inflated,
)

if TYPE_CHECKING:
    from auditor.inputs.sampling import QuerySample

NanPolicy = Literal["reject", "missing"]
DataFormat = Literal["svmlight", "csv", "parquet"]

_SUFFIX_FORMATS: dict[str, DataFormat] = {
    ".txt": "svmlight", ".svm": "svmlight", ".svmlight": "svmlight", ".letor": "svmlight", ".libsvm": "svmlight",
    ".train": "svmlight", ".test": "svmlight", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".pq": "parquet",
}
_DOCID_IN_COMMENT = re.compile(rb"#[^\n]*?docid\s*=\s*(\S+)")

MAX_COLUMNS = 20_000  # CSV/Parquet columns (the widest LTR sets: Yahoo 700, Istella 220)
MAX_FEATURE_VALUE = 1e30  # |feature value| beyond this is refused: means and variances over such values overflow
# (1e308 + 1e308 = inf, inf - inf = NaN), and float32 models (XGBoost, ONNX) read anything beyond 3.4e38 as infinite
_OTHER_COMPRESSIONS = ((b"PK\x03\x04", "zip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"),
                       (b"\x28\xb5\x2f\xfd", "zstd"))
_MAX_BYTES_FIX = ("if this machine has the memory, raise `dataset.max_bytes`; else audit a smaller file (Parquet "
                  "with `dataset.sample_queries` reads one row group at a time)")
_LINE_BYTES, _PAIR_BYTES, _FIELD_BYTES = 64, 12, 24  # parser memory per SVMlight line and pair, per CSV field


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
    query_file: Path | None = None  # the group-size file read beside an SVMlight file (named or by convention)
    # columns read beside the features and never given to the model (`dataset.attribute_columns`: e.g. sex and
    # race/ethnicity for a bias audit): per column, each document's value as text, None where the cell is empty
    attributes: dict[str, np.ndarray] = field(default_factory=dict)

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
            highest = np.maximum.reduceat(self.y, self.query_ptr[:-1])
            all_zero = highest <= 0
            out["dataset.all_zero_label_queries"] = float(all_zero.sum())
            out["dataset.all_zero_label_queries_share"] = float(all_zero.mean())
            # queries of several documents that all carry one grade: every order of them is ideal (nDCG 1)
            multi = sizes > 1
            one_grade = (highest == np.minimum.reduceat(self.y, self.query_ptr[:-1])) & multi
            out["dataset.single_label_queries"] = float(one_grade.sum())
            out["dataset.single_label_queries_share"] = float(one_grade.sum() / max(int(multi.sum()), 1))
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


class _Columns(TypedDict):
    """Which columns of a CSV or Parquet file hold what (the dataset entry's keys)."""

    query_column: str
    label_column: str | None
    doc_id_column: str | None
    feature_columns: list[str] | None
    model_feature_names: list[str] | None
    attribute_columns: list[str]


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
    max_bytes: int = MAX_DATA_BYTES,
    max_docs_per_query: int | None = MAX_DOCS_PER_QUERY,
    attribute_columns: list[str] | None = None,
) -> RankingData:
    """Read a ranking dataset and check it. `n_features` (the model's) pads sparse files and catches mismatches.
    `sample_queries`: keep a stratified sample of that many queries (auditor/inputs/sampling.py), drawn with
    `sample_rng`; Parquet files are then read one row group at a time, keeping only the sampled queries' rows.
    `max_bytes` bounds the memory reading takes and `max_docs_per_query` the audited queries' length, so that a
    hostile file is one error line, not an exhausted machine (docs/security.md). `attribute_columns` (CSV and
    Parquet): columns kept beside the data as text (`RankingData.attributes`), never features."""
    path = Path(path)
    check_regular(path, what="data file")
    fmt = format or infer_format(path)
    sample, group_file, lines_are_rows, row_lines = None, None, False, np.zeros(0, dtype=np.int64)
    attributes: dict[str, np.ndarray] = {}
    if fmt == "svmlight" and attribute_columns:
        raise InputError("an SVMlight/LETOR file has no named columns to keep beside the features", file=path,
                         fix="write the data as CSV or Parquet with the attribute columns, or drop "
                             "`dataset.attribute_columns`")
    if fmt == "svmlight":
        X, y, qids, doc_ids, group_file, row_lines = _read_svmlight(path, n_features=n_features,
                                                                    zero_based=zero_based, query_file=query_file,
                                                                    max_bytes=max_bytes)
        names = None
    else:
        columns = _Columns(query_column=query_column, label_column=label_column, doc_id_column=doc_id_column,
                           feature_columns=feature_columns, model_feature_names=model_feature_names,
                           attribute_columns=list(attribute_columns or []))
        if fmt == "parquet" and sample_queries is not None:
            frame, sample = _read_parquet_sample(path, query_column, label_column, sample_queries,
                                                 sample_rng or np.random.default_rng(0), max_bytes)
            X, y, qids, doc_ids, names, attributes = _split_frame(frame, path, **columns)
        elif fmt == "parquet":
            X, y, qids, doc_ids, names, attributes = _read_parquet_by_row_group(path, max_bytes=max_bytes, **columns)
        else:
            frame, lines_are_rows = _read_frame(path, fmt, max_bytes,
                                                (query_column, doc_id_column, *(attribute_columns or [])))
            X, y, qids, doc_ids, names, attributes = _split_frame(frame, path, lines_are_rows=lines_are_rows,
                                                                  **columns)
    if X.shape[0] == 0:
        raise InputError("the dataset has no documents", file=path, fix="point `dataset.path` at a non-empty file")
    if n_features is not None and X.shape[1] != n_features:
        raise InputError(f"the data has {X.shape[1]} features but the model expects {n_features}", file=path,
                         fix="use the dataset the model was trained for, or the model that matches this data")
    notes: list[str] = []
    names = _feature_names(feature_names, names, model_feature_names, X.shape[1], path)
    place = (lambda row: str(int(row_lines[row]))) if fmt == "svmlight" else _row_place(fmt, lines_are_rows)
    X = _apply_nan_policy(X, path, nan_policy, notes, names, place)
    _check_magnitude(X, path, names, place)
    if y is not None:
        _check_labels(y, path, max_label, place)
    if doc_ids is not None:
        _check_unique_documents(qids, doc_ids, path, place)
    X, y, qids, doc_ids, ptr, query_ids, attributes = _group_by_query(X, y, qids, doc_ids, notes, attributes)
    data = RankingData(X=X, y=y, query_ptr=ptr, query_ids=query_ids, doc_ids=doc_ids, feature_names=names,
                       source=str(path), notes=notes, sample=sample, query_file=group_file, attributes=attributes)
    if sample_queries is not None and sample is None:  # formats read whole: sample after reading
        data = sample_data(data, sample_queries, sample_rng or np.random.default_rng(0))
    if data.sample is not None:
        data.notes.append(data.sample.describe(data.n_docs))
    if max_docs_per_query is not None:
        _check_query_length(data, path, max_docs_per_query)
    return data


def sample_data(data: RankingData, count: int, rng: np.random.Generator) -> RankingData:
    """A stratified sample of `count` queries of data already in memory (the queries keep their order)."""
    from auditor.inputs.sampling import label_mix, stratified_sample

    sizes = data.query_sizes()
    query_of_row = np.repeat(np.arange(data.n_queries), sizes)
    mix = label_mix(data.y, query_of_row, data.n_queries) if data.y is not None else None
    sample = stratified_sample(sizes, mix, count, rng)
    rows = np.concatenate([np.arange(data.query_ptr[q], data.query_ptr[q + 1]) for q in sample.chosen])
    ptr = np.zeros(len(sample.chosen) + 1, dtype=np.int64)
    np.cumsum(sizes[sample.chosen], out=ptr[1:])
    return RankingData(X=data.X[rows], y=None if data.y is None else data.y[rows], query_ptr=ptr,
                       query_ids=[data.query_ids[q] for q in sample.chosen], doc_ids=[data.doc_ids[r] for r in rows],
                       feature_names=data.feature_names, source=data.source, notes=list(data.notes), sample=sample,
                       query_file=data.query_file,
                       attributes={name: values[rows] for name, values in data.attributes.items()})


def _read_parquet_sample(path: Path, query_column: str, label_column: str | None, count: int,
                         rng: np.random.Generator, max_bytes: int = MAX_DATA_BYTES
                         ) -> tuple[pd.DataFrame, QuerySample]:
    """Sample queries from the query (and label) columns alone, then read the file one row group at a time and
    keep only the sampled queries' rows: memory ≈ those two columns + one row group + the sample."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from auditor.inputs.sampling import label_mix, stratified_sample

    try:
        file = pq.ParquetFile(path)
        width = file.metadata.num_columns
    except Exception as exc:  # pyarrow raises its own types for corrupt files
        raise _parquet_error(exc, path) from None
    _check_columns(width, path)
    try:
        columns = file.schema_arrow.names
        wanted = [c for c in (query_column, label_column) if c is not None and c in columns]
        keys = file.read(columns=wanted) if query_column in columns else None
    except Exception as exc:
        raise _parquet_error(exc, path) from None
    if keys is None:
        _need_column(query_column, columns, "query_column", path)
    assert keys is not None  # _need_column raised: the query column is missing
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
    kept = pa.concat_tables(parts)
    _check_matrix(kept.num_rows, kept.num_columns, path, max_bytes)
    return kept.to_pandas(), sample


def _parquet_error(exc: Exception, path: Path) -> InputError:
    return InputError(f"cannot read this parquet file ({type(exc).__name__}: {str(exc)[:120]})", file=path,
                      fix="check that it is a valid parquet file")


def read_feature_names(path: Path) -> list[str]:
    """One feature name a line; blank lines and `#` comments skipped. LETOR's `1:name` prefix is accepted."""
    names: list[str] = []
    first: dict[str, int] = {}
    for number, line in enumerate(_read_text(path, "feature-names file").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name = re.sub(r"^\d+\s*[:\t ]\s*", "", line) if re.match(r"^\d+\s*[:\t ]\s*\S", line) else line
        if name in first:  # two features of one name: rules, the dictionary and metrics would mean either
            raise InputError(f"feature name '{name[:40]}' is given twice (first on line {first[name]})", file=path,
                             where=str(number), fix="give every feature its own name")
        first[name] = number
        names.append(name)
    if not names:
        raise InputError("the feature-names file has no names", file=path, fix="write one feature name a line")
    return names


# --- SVMlight / LETOR -------------------------------------------------------------------------------------------

def _read_svmlight(path: Path, *, n_features: int | None, zero_based: bool | Literal["auto"],
                   query_file: Path | None, max_bytes: int = MAX_DATA_BYTES
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str] | None, Path | None, np.ndarray]:
    """Arrays of an SVMlight/LETOR file, its query side file (if read) and each document's file line (blank and
    comment lines shift them: errors name the line, not the row)."""
    from auditor.inputs.svmlight import BIG_INDEX, BIG_QID, SvmlightError, parse

    tally = _Tally()
    raw = _read_data(path, max_bytes, tally.svmlight)
    if not raw.strip():
        raise InputError("the dataset has no documents", file=path, fix="point `dataset.path` at a non-empty file")
    try:
        parsed = parse(raw, (tally.newlines, tally.colons))
    except SvmlightError as exc:
        line = raw.split(b"\n", exc.line)[exc.line - 1] if exc.line > 0 else b""
        fix = ("the file was not written as SVMlight/LETOR by this data's tools: feature indices and qids are "
               "small integers" if exc.code in (BIG_INDEX, BIG_QID)
               else "each line must be `label qid:N index:value ... [# comment]`")
        raise InputError(f"not valid SVMlight/LETOR ({_why_bad(line) or 'malformed line'})", file=path,
                         where=str(exc.line), fix=fix) from None
    if parsed.labels.size == 0:
        raise InputError("the dataset has no documents", file=path, fix="point `dataset.path` at a non-empty file")
    doc_ids = _svmlight_doc_ids(raw, parsed, path) if b"#" in raw else None
    del raw  # the file's bytes are the largest object here: free them before the dense matrix exists
    X = _dense(parsed, path, n_features=n_features, zero_based=zero_based, max_bytes=max_bytes)
    if query_file is not None or not parsed.has_qid:
        side = query_file or _side_query_file(path)
        if side is None:
            raise InputError("the file has no `qid:` fields and no query side file", file=path,
                             fix="add `qid:` to each line, or set `dataset.query_file` to a file of group sizes")
        origin = "" if query_file is not None else f" (read by convention as the query file of {path.name})"
        qid = _qids_from_group_sizes(side, X.shape[0], origin)
    else:
        side, qid = None, parsed.qids
    return X, parsed.labels, qid.astype(str), doc_ids, side, parsed.lines


def _dense(parsed, path: Path, *, n_features: int | None, zero_based: bool | Literal["auto"],
           max_bytes: int = MAX_DATA_BYTES) -> np.ndarray:
    """CSR pairs → dense rows. `auto`: one-based unless some index is 0 (the convention of SVMlight tools)."""
    from auditor.inputs.svmlight import fill_dense

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
    _check_matrix(parsed.labels.shape[0], width, path, max_bytes)
    X = np.zeros((parsed.labels.shape[0], width))
    fill_dense(parsed.indptr, indices, parsed.values, shift, X)
    return X


def _svmlight_doc_ids(raw: bytes, parsed, path: Path) -> list[str] | None:
    """LETOR's `#docid = GX...` comments, one regex pass; None when no comment names a document. A file where
    some do is refused at the first document without exactly one: dropping every id for it (as before) made each
    document a made-up `241:0` and switched off the check for repeated documents, without a word."""
    ids = _DOCID_IN_COMMENT.findall(raw)
    if not ids:
        return None
    fix = "give every document one `# docid = ...` comment, or remove them all"
    if len(ids) != parsed.labels.size or bool(np.any(parsed.comment_end <= parsed.comment_start)):
        for row, (start, end) in enumerate(zip(parsed.comment_start, parsed.comment_end, strict=True)):
            count = len(_DOCID_IN_COMMENT.findall(b"#" + raw[start:end])) if end > start else 0
            if count != 1:  # the first document that has not exactly one
                problem = f"{count} `docid =` comments" if count else "no `docid =` comment"
                raise InputError(f"this document has {problem}, where the file names documents by one each",
                                 file=path, where=str(int(parsed.lines[row])), fix=fix)
        raise InputError(f"{len(ids):,} `docid =` comments for {parsed.labels.size:,} documents: a line without "
                         "a document names one", file=path, fix=fix)
    return [i.decode("utf-8", "replace") for i in ids]


def _why_bad(line: bytes) -> str:
    """Say what is wrong with one malformed SVMlight line (only runs after the parser found it)."""
    from auditor.inputs.svmlight import MAX_INDEX, MAX_QID  # numba: imported only when SVMlight is read

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
            if _beyond(value, MAX_QID):
                return f"qid {_digits(value)} is out of range (query ids go up to {MAX_QID:,})"
            continue
        if not key.isdigit():
            return f"feature index '{key.decode(errors='replace')[:30]}' is not an integer"
        if _beyond(key, MAX_INDEX):
            return (f"feature index {_digits(key)} (in '{_digits(token)}') is out of range (indices go up to "
                    f"{MAX_INDEX:,})")
        try:
            float(value)
        except ValueError:
            return f"value '{value.decode(errors='replace')[:30]}' is not a number"
    return ""


def _beyond(digits: bytes, most: int) -> bool:
    """Whether ASCII digits say more than `most` (without int() of a 5,000-digit string, which Python refuses)."""
    digits = digits.lstrip(b"0") or b"0"
    return len(digits) > len(str(most)) or int(digits) > most


def _digits(token: bytes) -> str:
    """A token for an error line, at most 40 characters."""
    text = token.decode(errors="replace")
    return text if len(text) <= 40 else f"{text[:30]}…({len(text)} characters)"


def _side_query_file(path: Path) -> Path | None:
    """LightGBM's convention: `X.query` (or `X.group`) next to `X` holds the group sizes. The spec never names it,
    so it is held to more than a named file: a regular file, inside the data file's folder (links followed)."""
    stem = path.with_suffix("") if path.suffix == ".gz" else path
    for candidate in (Path(f"{stem}.query"), Path(f"{stem}.group")):
        try:
            info = os.stat(candidate)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputError(f"cannot read the query side file of {path.name} ({exc.strerror})", file=candidate,
                             fix="remove it, or name the query file in `dataset.query_file`") from None
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"the query side file of {path.name} is {kind_of(info.st_mode)}, not a regular file",
                             file=candidate, fix="remove it, or name the query file in `dataset.query_file`")
        if candidate.resolve().parent not in (path.parent.resolve(), path.resolve().parent):
            raise InputError(f"the query side file of {path.name} links outside the data file's folder",
                             file=candidate, fix="copy the group sizes next to the data file, or name the file "
                                                 "in `dataset.query_file`")
        return candidate
    return None


def _qids_from_group_sizes(side: Path, n_rows: int, origin: str = "") -> np.ndarray:
    """Query index per row from group sizes. Each size is checked as a Python int before any arithmetic: sizes of
    2^62 wrap in int64 to the row count, and `np.repeat` then writes past its array."""
    fix = "write the number of documents of each query (1 or more), in row order, one a line"
    sizes: list[int] = []
    for number, line in enumerate(_read_text(side, "query file").splitlines(), start=1):
        for token in line.split():
            try:
                size = int(token)
            except ValueError:
                raise InputError(f"'{token[:30]}' is not an integer group size{origin}", file=side,
                                 where=str(number), fix=fix) from None
            if not 1 <= size <= n_rows:
                problem = "is not positive" if size < 1 else f"is more than the data's {n_rows:,} rows"
                raise InputError(f"group size {_short_int(size)} {problem}{origin}", file=side, where=str(number),
                                 fix=fix)
            sizes.append(size)
    if sum(sizes) != n_rows:
        raise InputError(f"group sizes add up to {sum(sizes):,} but the data has {n_rows:,} rows{origin}",
                         file=side, fix="use the query file that belongs to this data file")
    return np.repeat(np.arange(len(sizes)), np.asarray(sizes, dtype=np.int64))


def _short_int(value: int) -> str:
    """An integer for an error line: whole when short, else its first digits and length."""
    text = str(value)
    return text if len(text) <= 24 else f"{text[:12]}…({len(text)} digits)"


# --- CSV / Parquet ----------------------------------------------------------------------------------------------

def _read_frame(path: Path, fmt: DataFormat, max_bytes: int = MAX_DATA_BYTES,
                ids: tuple[str | None, ...] = ()) -> tuple[pd.DataFrame, bool]:
    """A CSV file as a frame, streamed to pandas through the memory cap (inflated when gzip); its columns are
    counted from the header before pandas builds any. The `ids` columns (query and document ids) are read as the
    text they are: as numbers, `007` and `7` were one query and `1e3` and `1000` one document. Also returns whether
    each data row is one line (else a line break inside quotes, or a blank line, shifts the lines: rows are then
    named `row N`)."""
    sep = "\t" if path.name.lower().removesuffix(".gz").endswith(".tsv") else ","
    tally = _CsvTally(sep.encode())
    with open_inflated(path, limit=max_bytes, what="data file", cost=tally.count, fix=_MAX_BYTES_FIX) as stream:
        try:
            head = stream.peek(1)
        except (OSError, EOFError, zlib.error) as exc:
            raise _unreadable(exc, fmt, path) from None
        _check_compression(head[:16], path)
        _check_text(head, sep, path)
        _check_columns(head.split(b"\n", 1)[0].count(sep.encode()) + 1, path)
        frame = _parse_csv(stream, sep, path, {column: str for column in ids if column is not None})
    return frame, tally.lines() == len(frame) + 1


def _check_text(head: bytes, sep: str, path: Path) -> None:
    """UTF-16 text, and a header split by another separator, named for what they are (pandas says "cannot decode
    byte 0xff", and a `;` file reads as one column)."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError("this file is UTF-16 text; data files are read as UTF-8", file=path,
                         fix="save it as UTF-8 (e.g. `iconv -f UTF-16 -t UTF-8`)")
    header = head.split(b"\n", 1)[0]
    other = next((mark for mark in (",", ";", "\t", "|") if mark != sep and mark.encode() in header), None)
    if sep.encode() not in header and other is not None:
        shown, expected = ("tabs" if mark == "\t" else f"`{mark}`" for mark in (other, sep))
        raise InputError(f"the header is separated by {shown}, not by {expected}", file=path, where="1",
                         fix="save a `.csv` file separated by commas and a `.tsv` file by tabs")


def _parse_csv(stream: io.BufferedReader, sep: str, path: Path, dtype: dict[str, type]) -> pd.DataFrame:
    try:
        return pd.read_csv(stream, sep=sep, dtype=dtype)
    except InputError:
        raise  # a cap passed while pandas read
    except pd.errors.EmptyDataError:
        raise InputError("the dataset has no documents", file=path,
                         fix="point `dataset.path` at a non-empty file") from None
    except Exception as exc:  # pandas' parser errors, bad UTF-8, a cut .gz, and whatever else pandas raises
        raise _unreadable(exc, "csv", path) from None


def _unreadable(exc: Exception, fmt: str, path: Path) -> InputError:
    first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
    return InputError(f"cannot read this {fmt} file ({first})", file=path, fix=f"check that it is a valid {fmt} file")


def _check_columns(count: int, path: Path) -> None:
    """A CSV or Parquet file of more than MAX_COLUMNS columns is refused before its columns are built."""
    if count > MAX_COLUMNS:
        raise InputError(f"the file has {count:,} columns, more than the {MAX_COLUMNS:,} allowed", file=path,
                         fix="write a file with the query, label, document id and the model's feature columns only")


def _read_parquet_by_row_group(path: Path, max_bytes: int = MAX_DATA_BYTES, **columns):
    """A whole Parquet file, one row group at a time into one preallocated float64 matrix: the peak is the matrix
    plus one row group, not the matrix plus an Arrow table plus a pandas frame of the whole file."""
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
        n_rows = file.metadata.num_rows
    except Exception as exc:  # pyarrow raises its own types for corrupt files
        raise InputError(f"cannot read this parquet file ({type(exc).__name__}: {str(exc)[:120]})", file=path,
                         fix="check that it is a valid parquet file") from None
    _check_columns(file.metadata.num_columns, path)
    X = None
    labels, qids, doc_ids, names, start = [], [], [], None, 0
    attributes: dict[str, list[np.ndarray]] = {}
    for group in range(file.num_row_groups):
        try:
            frame = file.read_row_group(group).to_pandas()
        except Exception as exc:
            raise InputError(f"cannot read row group {group} of this parquet file ({type(exc).__name__}: "
                             f"{str(exc)[:120]})", file=path, fix="check that it is a valid parquet file") from None
        if len(frame) == 0:
            continue
        part_X, part_y, part_q, part_d, names, part_a = _split_frame(frame, path, row_offset=start, **columns)
        for column, values in part_a.items():
            attributes.setdefault(column, []).append(values)
        if X is None:
            _check_matrix(n_rows, part_X.shape[1], path, max_bytes)
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
    return X[:start], y, np.concatenate(qids), ids, names, {c: np.concatenate(v) for c, v in attributes.items()}


def _need_column(column: str, columns: list[str], key: str, path: Path, present: set[str] | None = None) -> None:
    """A spec key naming a column the file lacks: one line with the nearest column name, or the columns there are.
    `present`: the columns as a set, for callers that ask once per column (a list scan each time is quadratic)."""
    if column not in (present if present is not None else columns):
        import difflib

        near = difflib.get_close_matches(column, columns, n=1)
        hint = f"did you mean '{near[0]}'?" if near else \
            f"columns are: {', '.join(columns[:12])}{', ...' if len(columns) > 12 else ''}."
        raise InputError(f"no column '{column}' (from `dataset.{key}`)", file=path,
                         fix=f"{hint} Set `dataset.{key}` to the right column")


def _numeric_columns(frame: pd.DataFrame, columns: list[str]) -> set[str]:
    """Names of the numeric columns, one dtype test per distinct dtype (not one `frame[c]` per column)."""
    numeric = {dtype: pd.api.types.is_numeric_dtype(dtype) for dtype in set(frame.dtypes)}
    return {name for name, dtype in zip(columns, frame.dtypes, strict=True) if numeric[dtype]}


def _split_frame(frame: pd.DataFrame, path: Path, *, query_column: str, label_column: str | None,
                 doc_id_column: str | None, feature_columns: list[str] | None,
                 model_feature_names: list[str] | None, attribute_columns: list[str], row_offset: int = 0,
                 lines_are_rows: bool = False):
    """Arrays from a frame of a CSV or Parquet file. Data row r is named by its file line when `lines_are_rows`
    (a CSV file without line breaks in fields), else as `row N` (counted from `row_offset`)."""
    place = (lambda row: str(row + 2)) if lines_are_rows else (lambda row: f"row {row_offset + row + 1}")
    if len(frame) == 0:
        raise InputError("the dataset has no documents (only a header)", file=path,
                         fix="point `dataset.path` at a non-empty file")
    columns = [str(c) for c in frame.columns]
    frame.columns = columns
    present = set(columns)
    if len(present) < len(columns):
        repeated = next(c for c, n in Counter(columns).items() if n > 1)
        raise InputError(f"column '{repeated[:40]}' appears more than once", file=path,
                         fix="give every column its own name")

    def need(column: str, key: str) -> None:
        _need_column(column, columns, key, path, present)

    need(query_column, "query_column")
    if label_column is not None and label_column not in present:
        if label_column != "label":
            need(label_column, "label_column")
        label_column = None
    if doc_id_column is not None:
        need(doc_id_column, "doc_id_column")
    for column in attribute_columns:
        need(column, "attribute_columns")
    reserved = {query_column, label_column, doc_id_column, *attribute_columns} - {None}
    numeric = _numeric_columns(frame, columns)
    given = feature_columns is not None
    if feature_columns is None:
        if model_feature_names and set(model_feature_names) <= present:
            feature_columns = list(model_feature_names)  # the model's order, whatever the file's order
        else:
            candidates = [c for c in columns if c not in reserved]
            skipped = next((c for c in candidates if c not in numeric), None)
            if skipped is not None:
                raise InputError(f"column '{skipped}' is not numeric", file=path,
                                 fix="list the feature columns in `dataset.feature_columns`, or drop that column")
            feature_columns = candidates
    _check_model_order(feature_columns, model_feature_names, path, given=given)
    for column in feature_columns:
        need(column, "feature_columns")
        if column not in numeric:
            bad = (pd.to_numeric(frame[column], errors="coerce").isna() & frame[column].notna()).to_numpy()
            row = int(np.argmax(bad))
            value = frame[column].iloc[row]
            if not bad.any():  # every value reads as a number: the column's type is what is wrong
                kind = "text" if isinstance(value, str) else f"{type(value).__name__} values"
                raise InputError(f"feature column '{column}' holds {kind} ('{str(value)[:30]}'), not numbers",
                                 file=path, where=place(row), fix="store it as a float or integer column")
            raise InputError(f"feature column '{column}' holds a non-number ('{str(value)[:30]}')",
                             file=path, where=place(row), fix="feature values must be numbers")
    if not feature_columns:
        raise InputError("no feature columns found", file=path, fix="list them in `dataset.feature_columns`")
    X = frame[feature_columns].to_numpy(dtype=np.float64, copy=True)
    y = None
    if label_column is not None:
        labels = pd.to_numeric(frame[label_column], errors="coerce")
        if labels.isna().any():
            row = int(np.argmax(labels.isna().to_numpy()))
            raise InputError(f"label '{frame[label_column].iloc[row]}' is not a number", file=path,
                             where=place(row), fix="labels must be non-negative integer grades")
        y = labels.to_numpy(dtype=np.float64)
    for id_column, key in ((query_column, "query_column"), (doc_id_column, "doc_id_column")):
        missing = frame[id_column].isna().to_numpy().copy() if id_column is not None else None
        if missing is not None and pd.api.types.is_float_dtype(frame[id_column]):
            missing |= np.isinf(frame[id_column].to_numpy(dtype=np.float64))  # "inf" is no id either
        if missing is not None and missing.any():
            row = int(np.argmax(missing))
            raise InputError(f"the {'query' if key == 'query_column' else 'document'} id in column '{id_column}' is "
                             "missing", file=path, where=place(row),
                             fix=f"give every row a {'query' if key == 'query_column' else 'document'} id")
    qids = frame[query_column].astype(str).to_numpy(dtype=object)
    doc_ids = frame[doc_id_column].astype(str).tolist() if doc_id_column else None
    attributes = {column: _attribute_values(frame[column]) for column in attribute_columns}
    return X, y, qids, doc_ids, list(feature_columns), attributes


def _attribute_values(column: pd.Series) -> np.ndarray:
    """An attribute column as text, one value a document (None where empty): whole numbers without decimals (a
    Parquet float column of codes reads 1, not 1.0), as a person would write the category."""
    def text(value: object) -> str | None:
        if value is None or (isinstance(value, float) and not np.isfinite(value)) or value is pd.NA:
            return None
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return str(int(value))
        return str(value)

    return np.array([text(v) for v in column.tolist()], dtype=object)


# --- checks -------------------------------------------------------------------------------------------------

def _check_model_order(columns: list[str], model: list[str] | None, path: Path, *, given: bool) -> None:
    """Columns feed the model by position. When the model names its features and a column carries the name of the
    model's feature at another position, the model would read it as the wrong feature: a column renamed (`price`
    to `Price`) and moved made the model read n_reviews as price, without a word."""
    if not model or len(model) != len(columns) or _generic_names(model):  # another count: refused as such later
        return
    index = {name: i for i, name in enumerate(model)}
    for position, column in enumerate(columns):
        if index.get(column, position) != position:
            wanted = f"'{model[position][:40]}'"
            fix = ("list `dataset.feature_columns` in the model's order" if given else
                   "name the columns as the model does, or list the model's features in `dataset.feature_columns` "
                   "in the model's order")
            raise InputError(f"column '{column[:40]}' would be the model's feature {position + 1} ({wanted}), but the "
                             f"model has '{column[:40]}' as its feature {index[column] + 1}", file=path, fix=fix)


def _row_place(fmt: DataFormat, lines_are_rows: bool):
    """How to name data row r of a CSV or Parquet file in an error: the file line for CSV whose rows are lines
    (a header line, then one row a line), else `row N` (Parquet, and CSV with line breaks in fields or blank
    lines). SVMlight names the line each document was read from."""
    if fmt == "csv" and lines_are_rows:
        return lambda row: str(row + 2)
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


def _check_magnitude(X: np.ndarray, path: Path, names: list[str], place) -> None:
    """Finite values beyond ±MAX_FEATURE_VALUE are refused: the background mean of 1e308 and -1e308 is NaN (the sum
    overflows), so masking silently put "missing" where the spec says the mean. Reductions only (no copy of X)."""
    if X.size == 0 or not (np.fmax.reduce(X, axis=None) > MAX_FEATURE_VALUE
                           or np.fmin.reduce(X, axis=None) < -MAX_FEATURE_VALUE):  # fmax/fmin skip NaN
        return
    step = max(1, (1 << 20) // max(X.shape[1], 1))  # rows of about a million values at a time
    first, count = (0, 0), 0
    for start in range(0, X.shape[0], step):
        hits = np.argwhere(np.abs(X[start:start + step]) > MAX_FEATURE_VALUE)
        if hits.size and not count:
            first = (int(hits[0][0]) + start, int(hits[0][1]))
        count += len(hits)
    row, col = first
    raise InputError(f"feature '{names[col][:40]}' has the value {X[row, col]:.4g}, beyond ±{MAX_FEATURE_VALUE:.0e} "
                     f"({count:,} such value(s)): means and variances over it overflow", file=path,
                     where=place(row), fix="rescale the feature (e.g. its logarithm), or mark such values as missing")


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
                    notes: list[str], attributes: dict[str, np.ndarray] | None = None):
    """Make each query's documents contiguous: queries in order of first appearance, documents in file order."""
    codes, first_seen = _codes_by_first_appearance(qids)
    n_queries = int(codes.max()) + 1
    contiguous = bool(np.all(np.diff(codes) >= 0))
    if not contiguous:
        order = np.argsort(codes, kind="stable")
        X, codes = X[order], codes[order]
        y = None if y is None else y[order]
        doc_ids = None if doc_ids is None else [doc_ids[i] for i in order]
        attributes = {name: values[order] for name, values in (attributes or {}).items()}
        notes.append("Documents of some queries were not contiguous in the file; they were grouped by query "
                     "(queries in order of first appearance, documents in file order).")
    ptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=n_queries), out=ptr[1:])
    query_ids = [str(q) for q in first_seen]
    if doc_ids is None:
        doc_ids = [f"{query_ids[codes[i]]}:{i - ptr[codes[i]]}" for i in range(len(codes))]
    return X, y, codes, doc_ids, ptr, query_ids, attributes or {}


def _codes_by_first_appearance(qids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniques, first_index, inverse = np.unique(qids, return_index=True, return_inverse=True)
    rank = np.empty(len(uniques), dtype=np.int64)
    rank[np.argsort(first_index, kind="stable")] = np.arange(len(uniques))
    return rank[inverse], uniques[np.argsort(first_index, kind="stable")]


# --- files ----------------------------------------------------------------------------------------------------

def _read_data(path: Path, max_bytes: int, cost) -> bytes:
    """A data file's bytes (inflated when gzip), refused as soon as the memory reading it will take passes
    `max_bytes` (the text plus `cost`, the parser's arrays per chunk) or a gzip file inflates like a bomb. Other
    compressions are named (pandas would inflate them by the file name, without a cap)."""
    raw = read_inflated(path, limit=max_bytes, what="data file", cost=cost, fix=_MAX_BYTES_FIX)
    _check_compression(raw[:16], path)
    return raw


def _check_compression(head: bytes, path: Path) -> None:
    for magic, kind in _OTHER_COMPRESSIONS:
        if head.startswith(magic) and (kind != "bzip2" or head[4:10] == b"1AY&SY"):
            raise InputError(f"this file is {kind}-compressed; data files are read plain or gzip-compressed",
                             file=path, fix="decompress it, or compress it with gzip")


@dataclass
class _Tally:
    """Newlines and colons counted while the file streams in: the memory the SVMlight parser will allocate (per
    line: label, qid, offsets; per `:`: a pair) and, counted once, its array bounds."""

    newlines: int = 0
    colons: int = 0

    def svmlight(self, chunk: bytes) -> int:
        newlines, colons = chunk.count(b"\n"), chunk.count(b":")
        self.newlines += newlines
        self.colons += colons
        return _LINE_BYTES * newlines + _PAIR_BYTES * colons


@dataclass
class _CsvTally:
    """CSV text as it streams in: the bytes pandas and the feature matrix will take (per field: a separator or a
    line end), and its lines (ignoring line ends at the end of the file), to tell whether each row is one line."""

    sep: bytes
    newlines: int = 0
    trailing: int = 0  # line ends after the last other byte so far
    empty: bool = True

    def count(self, chunk: bytes) -> int:
        newlines = chunk.count(b"\n")
        self.newlines += newlines
        body = chunk.rstrip(b"\r\n")
        if body:
            self.empty = False
            self.trailing = chunk[len(body):].count(b"\n")
        else:
            self.trailing += newlines
        return _FIELD_BYTES * (chunk.count(self.sep) + newlines)

    def lines(self) -> int:
        return 0 if self.empty else self.newlines - self.trailing + 1


def _read_text(path: Path, what: str) -> str:
    """A small side file (feature names, group sizes), inflated when gzip, at most MAX_SMALL_BYTES."""
    return read_inflated(path, limit=MAX_SMALL_BYTES, what=what).decode("utf-8", errors="replace")


def _check_matrix(rows: int, width: int, path: Path, max_bytes: int) -> None:
    """The dense float64 feature matrix must fit `max_bytes` (a sparse file or a model of 10^6 features would
    otherwise allocate rows × 10^6 × 8 bytes)."""
    need = rows * width * 8
    if need > max_bytes:
        raise InputError(f"the feature matrix ({rows:,} rows × {width:,} features) would take {need / MiB:,.0f} "
                         f"MiB, more than the {max_bytes / MiB:,.0f} MiB allowed", file=path,
                         fix="if this machine has the memory, raise `dataset.max_bytes`; else audit fewer rows")


def _check_query_length(data: RankingData, path: Path, most: int) -> None:
    """Evidence builds documents² arrays per query (Kendall's tau over pairs, ranks among the others): a query of
    20,000 documents asks for 3 GiB per array. Refuse it here, with the query and what to do."""
    sizes = data.query_sizes()
    if sizes.size == 0 or int(sizes.max()) <= most:
        return
    longest = int(np.argmax(sizes))
    n, over = int(sizes[longest]), int(np.sum(sizes > most))
    longer = f"{over:,} of the {len(sizes):,} queries {'is' if over == 1 else 'are'} longer"
    raise InputError(f"query '{data.query_ids[longest][:40]}' has {n:,} documents, more than the {most:,} a query "
                     f"may have ({longer}): the audit compares every pair of a query's documents "
                     f"({n * n * 8 / 2**30:,.1f} GiB per array for this one)", file=path,
                     fix="keep the top documents of each query (e.g. a first stage's top "
                         f"{most:,}), or raise `dataset.max_docs_per_query` if this machine has the memory and time")
