"""A compiled SVMlight/LETOR parser: one pass over the bytes, linear in the file size.

scikit-learn's `load_svmlight_file` appends each `qid` with `np.append`, so its time grows with the square of the
rows (benchmarks/read_letor.py measures both side by side). This parser (numba) reads label, `qid:`, `index:value`
pairs and the span of the `#` comment of every line. Numbers: a decimal with at most 15 significant digits and a
power-of-ten exponent within ±22 is converted exactly (an integer mantissa divided or multiplied by an exact power
of ten is correctly rounded); anything else (more digits, nan, inf, hex) is re-read with Python's `float()` for that
line, so the values are always those `float()` gives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

_POW10 = np.array([10.0**i for i in range(23)])

# error codes returned by the parser (line numbers are 1-based file lines)
OK, BAD_LABEL, BAD_PAIR, BAD_INDEX, BAD_VALUE, BAD_QID, BIG_INDEX, BIG_QID = 0, 1, 2, 3, 4, 5, 6, 7
# Integers are read exactly up to these bounds and refused beyond them: indices are stored as int32 and qids as
# int64, where 2^32 + 3 would become feature 3 and 2^64 + 241 query 241.
MAX_INDEX = 2**31 - 1
MAX_QID = 10**18 - 1


@dataclass(frozen=True)
class Parsed:
    labels: np.ndarray  # (n,)
    qids: np.ndarray  # (n,) int64; all -1 when the file has no qid
    has_qid: bool
    indptr: np.ndarray  # (n+1,) CSR row pointers
    indices: np.ndarray  # raw indices as written (0- or 1-based)
    values: np.ndarray
    lines: np.ndarray  # (n,) 1-based file line of each document
    line_start: np.ndarray  # (n,) byte offset where each document's line starts
    comment_start: np.ndarray  # byte offsets of each document's comment (start == end: none)
    comment_end: np.ndarray


@njit(cache=True)
def _is_space(c: int) -> bool:
    return c == 32 or c == 9 or c == 13


@njit(cache=True)
def _number(buf: np.ndarray, i: int, end: int, pow10: np.ndarray) -> tuple[float, int, bool]:
    """Parse a decimal number at buf[i:end]; returns (value, next index, exact). Not exact: caller re-reads."""
    sign = 1.0
    if i < end and (buf[i] == 45 or buf[i] == 43):  # - +
        if buf[i] == 45:
            sign = -1.0
        i += 1
    mantissa = 0
    significant = 0
    exponent = 0
    seen = False
    while i < end and 48 <= buf[i] <= 57:
        d = buf[i] - 48
        seen = True
        i += 1
        if significant == 0 and d == 0:
            continue  # leading zero
        if significant < 18:
            mantissa = mantissa * 10 + d
        else:
            exponent += 1  # dropped digit (the value is then re-read by Python anyway)
        significant += 1
    if i < end and buf[i] == 46:  # .
        i += 1
        while i < end and 48 <= buf[i] <= 57:
            d = buf[i] - 48
            seen = True
            i += 1
            if significant == 0 and d == 0:
                exponent -= 1  # 0.000x: zeros after the point only move the exponent
                continue
            if significant < 18:
                mantissa = mantissa * 10 + d
                exponent -= 1
            significant += 1
    if not seen:
        return 0.0, i, False
    if i < end and (buf[i] == 101 or buf[i] == 69):  # e E
        i += 1
        esign = 1
        if i < end and (buf[i] == 45 or buf[i] == 43):
            if buf[i] == 45:
                esign = -1
            i += 1
        e = 0
        eseen = False
        while i < end and 48 <= buf[i] <= 57:
            e = e * 10 + (buf[i] - 48)
            if e > 100000:
                e = 100000
            eseen = True
            i += 1
        if not eseen:
            return 0.0, i, False
        exponent += esign * e
    exact = significant <= 15 and -22 <= exponent <= 22
    if not exact:
        return 0.0, i, False
    if exponent >= 0:
        return sign * (float(mantissa) * pow10[exponent]), i, True
    return sign * (float(mantissa) / pow10[-exponent]), i, True


@njit(cache=True)
def _integer(buf: np.ndarray, j: int, end: int, most: int) -> tuple[int, int, int]:
    """Digits at buf[j:end] as an integer: (value, next index, number of digits). A value above `most` is
    returned as `most + 1` (it never wraps), so the caller can refuse it."""
    value = 0
    digits = 0
    while j < end and 48 <= buf[j] <= 57:
        d = buf[j] - 48
        value = most + 1 if value > (most - d) // 10 else value * 10 + d
        digits += 1
        j += 1
    return value, j, digits


@njit(cache=True)
def _parse(buf: np.ndarray, n_lines: int, n_pairs: int, pow10: np.ndarray):
    labels = np.empty(n_lines)
    qids = np.full(n_lines, -1, dtype=np.int64)
    indptr = np.zeros(n_lines + 1, dtype=np.int64)
    indices = np.empty(n_pairs, dtype=np.int32)
    values = np.empty(n_pairs)
    lines = np.empty(n_lines, dtype=np.int64)
    lstart = np.empty(n_lines, dtype=np.int64)
    cstart = np.zeros(n_lines, dtype=np.int64)
    cend = np.zeros(n_lines, dtype=np.int64)
    inexact = np.zeros(n_lines, dtype=np.bool_)
    n = buf.shape[0]
    i = 0
    row = 0
    pair = 0
    line_no = 0
    has_qid = False
    while i < n:
        line_no += 1
        start = i
        while i < n and buf[i] != 10:
            i += 1
        stop = i  # buf[start:stop] is the line
        i += 1
        body_end = start
        while body_end < stop and buf[body_end] != 35:
            body_end += 1
        j = start
        while j < body_end and _is_space(buf[j]):
            j += 1
        if j >= body_end:
            continue  # blank or comment-only line
        if body_end < stop:
            cstart[row] = body_end + 1
            cend[row] = stop
        lines[row] = line_no
        lstart[row] = start
        value, j, exact = _number(buf, j, body_end, pow10)
        if j < body_end and not _is_space(buf[j]):
            return (labels, qids, has_qid, indptr, indices, values, lines, lstart, cstart, cend, inexact, row, line_no,
                    BAD_LABEL)
        if not exact:
            inexact[row] = True
        labels[row] = value
        while True:
            while j < body_end and _is_space(buf[j]):
                j += 1
            if j >= body_end:
                break
            if body_end - j > 4 and buf[j] == 113 and buf[j + 1] == 105 and buf[j + 2] == 100 and buf[j + 3] == 58:
                q, j, digits = _integer(buf, j + 4, body_end, MAX_QID)  # after "qid:"
                if digits == 0 or (j < body_end and not _is_space(buf[j])):
                    return (labels, qids, has_qid, indptr, indices, values, lines, lstart, cstart, cend, inexact, row,
                            line_no, BAD_QID)
                if q > MAX_QID:
                    return (labels, qids, has_qid, indptr, indices, values, lines, lstart, cstart, cend, inexact, row,
                            line_no, BIG_QID)
                qids[row] = q
                has_qid = True
                continue
            index, j, digits = _integer(buf, j, body_end, MAX_INDEX)
            if digits == 0 or j >= body_end or buf[j] != 58:
                code = BAD_INDEX if digits == 0 and j < body_end and buf[j] != 58 else BAD_PAIR
                return (labels, qids, has_qid, indptr, indices, values, lines, lstart, cstart, cend, inexact, row,
                        line_no, code)
            if index > MAX_INDEX:
                return (labels, qids, has_qid, indptr, indices, values, lines, lstart, cstart, cend, inexact, row,
                        line_no, BIG_INDEX)
            j += 1
            value, j, exact = _number(buf, j, body_end, pow10)
            if j < body_end and not _is_space(buf[j]):
                if exact:
                    return (labels, qids, has_qid, indptr, indices, values, lines, lstart, cstart, cend, inexact, row,
                            line_no, BAD_VALUE)
                while j < body_end and not _is_space(buf[j]):
                    j += 1  # e.g. "nan", "inf": re-read by Python
            if not exact:
                inexact[row] = True
            indices[pair] = index
            values[pair] = value
            pair += 1
        row += 1
        indptr[row] = pair
    return labels, qids, has_qid, indptr, indices, values, lines, lstart, cstart, cend, inexact, row, line_no, OK


@njit(cache=True)
def fill_dense(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, shift: int, X: np.ndarray) -> None:
    """X[row, index - shift] = value for every pair (no temporary index arrays: 1M LETOR rows would need ~700 MB)."""
    for row in range(indptr.shape[0] - 1):
        for pair in range(indptr[row], indptr[row + 1]):
            X[row, indices[pair] - shift] = values[pair]


class SvmlightError(ValueError):
    def __init__(self, line: int, code: int) -> None:
        self.line = line
        self.code = code
        super().__init__(f"line {line}: code {code}")


def parse(raw: bytes, counts: tuple[int, int] | None = None) -> Parsed:
    """Parse SVMlight/LETOR bytes. Raises SvmlightError(line, code) on the first malformed line. `counts`: the
    newlines and colons of `raw` when the reader counted them already (while it streamed the file)."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    # Upper bounds for the arrays (every line a document, every ':' a pair): C-speed counts, no extra pass.
    newlines, colons = counts if counts is not None else (raw.count(b"\n"), raw.count(b":"))
    n_lines, n_pairs = newlines + 1, colons
    (labels, qids, has_qid, indptr, indices, values, lines, lstart, cstart, cend, inexact, rows, line_no,
     code) = _parse(buf, n_lines, n_pairs, _POW10)
    if code != OK:
        raise SvmlightError(int(line_no), int(code))
    pairs = int(indptr[rows])
    labels, qids, indptr, lines = labels[:rows], qids[:rows], indptr[: rows + 1], lines[:rows]
    indices, values = indices[:pairs], values[:pairs]
    for row in np.flatnonzero(inexact[:rows]):  # rare: re-read with Python's float()
        _reparse_line(raw, int(lstart[row]), int(lines[row]), int(row), labels, indptr, values)
    return Parsed(labels=labels, qids=qids, has_qid=bool(has_qid), indptr=indptr, indices=indices, values=values,
                  lines=lines, line_start=lstart[:rows], comment_start=cstart[:rows], comment_end=cend[:rows])


def _reparse_line(raw: bytes, start: int, line_no: int, row: int, labels: np.ndarray, indptr: np.ndarray,
                  values: np.ndarray) -> None:
    stop = raw.find(b"\n", start)
    line = raw[start: stop if stop >= 0 else len(raw)]
    tokens = line.split(b"#", 1)[0].split()
    try:
        labels[row] = float(tokens[0])
        pairs = [t for t in tokens[1:] if not t.startswith(b"qid:")]
        for offset, token in enumerate(pairs):
            values[indptr[row] + offset] = float(token.partition(b":")[2])
    except ValueError:
        raise SvmlightError(line_no, BAD_VALUE) from None
