"""The compiled SVMlight/LETOR parser: values bit-identical to float(), scikit-learn as an oracle, errors by line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from auditor.core.errors import InputError
from auditor.inputs.data import load_ranking_data
from auditor.inputs.svmlight import SvmlightError, parse


def test_values_are_what_float_gives() -> None:
    rng = np.random.default_rng(0)
    values = rng.random(5000) * 10.0 ** rng.integers(-12, 12, 5000) * rng.choice([-1, 1], 5000)
    formats = [repr, lambda v: f"{v:.6f}", lambda v: f"{v:.10e}", lambda v: f"{v:g}", lambda v: f"{v:.3E}"]
    text = "\n".join("0 qid:1 " + " ".join(f"{j + 1}:{fmt(float(v))}" for j, fmt in enumerate(formats))
                     for v in values).encode()
    parsed = parse(text)
    expected = np.array([[float(fmt(float(v))) for fmt in formats] for v in values])
    assert np.array_equal(parsed.values.reshape(-1, len(formats)), expected)


def test_same_as_scikit_learn_on_sparse_data(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    lines = []
    for row in range(300):
        cols = np.sort(rng.choice(40, size=rng.integers(1, 12), replace=False)) + 1
        pairs = " ".join(f"{c}:{rng.normal():.5g}" for c in cols)
        lines.append(f"{rng.integers(0, 5)} qid:{row // 7} {pairs} # docid = d{row}")
    path = tmp_path / "sparse.txt"
    path.write_text("\n".join(lines) + "\n")
    X_ref, y_ref, q_ref = load_svmlight_file(str(path), n_features=40, query_id=True)
    data = load_ranking_data(path, n_features=40)
    np.testing.assert_array_equal(data.X, X_ref.toarray())
    np.testing.assert_array_equal(data.y, y_ref)
    assert data.query_ids == [str(q) for q in dict.fromkeys(q_ref.tolist())]
    assert data.doc_ids[:2] == ["d0", "d1"]


def test_blank_comment_and_crlf_lines() -> None:
    parsed = parse(b"# header\n\n1 qid:3 2:0.5\r\n   \n0 qid:3 1:nan 3:inf # docid = x\n")
    assert parsed.labels.tolist() == [1.0, 0.0]
    assert parsed.lines.tolist() == [3, 5]
    assert parsed.qids.tolist() == [3, 3]
    assert np.isnan(parsed.values[1]) and np.isinf(parsed.values[2])


@pytest.mark.parametrize(("line", "reason"), [
    (b"x qid:1 1:1", "label 'x' is not a number"),
    (b"1 qid:1 1:x", "value 'x' is not a number"),
    (b"1 qid:a 1:1", "qid 'a' is not an integer"),
    (b"1 qid:1 7", "'7' is not `index:value`"),
    (b"1 qid:1 a:1", "feature index 'a' is not an integer"),
])
def test_malformed_lines_are_named(tmp_path: Path, line: bytes, reason: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"1 qid:1 1:0.5\n\n" + line + b"\n")
    with pytest.raises(SvmlightError) as raw_error:
        parse(path.read_bytes())
    assert raw_error.value.line == 3
    with pytest.raises(InputError) as error:
        load_ranking_data(path)
    assert f"bad.txt:3: not valid SVMlight/LETOR ({reason})" in str(error.value)


def test_zero_based_detection(tmp_path: Path) -> None:
    path = tmp_path / "z.txt"
    path.write_text("1 qid:1 0:1 2:3\n0 qid:1 1:2\n")
    assert load_ranking_data(path).X.tolist() == [[1, 0, 3], [0, 2, 0]]
    path.write_text("1 qid:1 1:1 3:3\n0 qid:1 2:2\n")
    assert load_ranking_data(path).X.tolist() == [[1, 0, 3], [0, 2, 0]]
    path.write_text("1 qid:1 0:1\n")
    with pytest.raises(InputError, match="index 0"):
        load_ranking_data(path, zero_based=False)
