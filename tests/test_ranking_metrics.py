"""nDCG and AP: oracle-checked against LightGBM's own metric, plus hand-computed cases for each convention."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from auditor.checks.ranking import average_precision, bootstrap_interval, ndcg_at, per_query_ndcg
from tests.helpers import lightgbm_ndcg


@pytest.mark.parametrize("k", [1, 3, 10])
def test_ndcg_matches_lightgbm_on_random_queries(k: int) -> None:
    rng = np.random.default_rng(k)
    sizes = rng.integers(1, 30, size=300)
    labels = rng.integers(0, 5, size=sizes.sum()).astype(float)
    labels[: sizes[0]] = 0  # at least one all-zero query
    # LightGBM's booster adds its own (constant) first-tree output to init_score; a constant changes no order
    scores = rng.standard_normal(sizes.sum())
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    ours = per_query_ndcg(scores, labels, ptr, [k], all_zero="one")[:, 0].mean()
    assert ours == pytest.approx(lightgbm_ndcg(scores, labels, sizes, k), abs=1e-6)


def test_ndcg_hand_computed() -> None:
    labels = np.array([0.0, 2.0, 1.0])
    scores = np.array([3.0, 2.0, 1.0])  # order: 0, 2, 1
    dcg = 0 / np.log2(2) + 3 / np.log2(3) + 1 / np.log2(4)
    ideal = 3 / np.log2(2) + 1 / np.log2(3)
    assert ndcg_at(scores, labels, [3])[0] == pytest.approx(dcg / ideal)
    linear = ndcg_at(scores, labels, [3], gain="linear")[0]
    assert linear == pytest.approx((2 / np.log2(3) + 1 / np.log2(4)) / (2 + 1 / np.log2(3)))


def test_ties_are_averaged_over_their_orders_so_file_order_decides_nothing() -> None:
    labels = np.array([0.0, 1.0])
    assert ndcg_at(np.array([1.0, 1.0]), labels, [1])[0] == 0.5  # either document first, equally likely
    assert ndcg_at(np.array([1.0, 1.0]), labels[::-1].copy(), [1])[0] == 0.5
    assert average_precision(np.array([1.0, 1.0]), labels) == pytest.approx(0.75)  # (1 + 1/2) / 2


def test_tie_aware_metrics_equal_the_mean_over_every_order_of_the_tied_documents() -> None:
    """Oracle: enumerate every tie-break of small queries with many ties and average nDCG and AP."""
    rng = np.random.default_rng(3)
    for _ in range(60):
        n = int(rng.integers(1, 7))
        labels = rng.integers(0, 3, n).astype(float)
        scores = rng.integers(0, 3, n).astype(float)
        ndcgs, aps = [], []
        for tie_break in itertools.permutations(range(n)):
            strict = np.empty(n)
            strict[np.lexsort((np.array(tie_break), -scores))] = np.arange(n, 0, -1)
            ndcgs.append(ndcg_at(strict, labels, [1, 3, 10]))
            aps.append(average_precision(strict, labels))
        assert ndcg_at(scores, labels, [1, 3, 10]) == pytest.approx(np.mean(ndcgs, axis=0))
        ap = average_precision(scores, labels)
        assert (np.isnan(ap) and np.isnan(aps).all()) or ap == pytest.approx(np.mean(aps))


@pytest.mark.parametrize(("convention", "expected"), [("one", 1.0), ("zero", 0.0)])
def test_all_zero_query_conventions(convention: str, expected: float) -> None:
    assert ndcg_at(np.array([0.3, 0.1]), np.zeros(2), [1, 5], all_zero=convention).tolist() == [expected] * 2


def test_all_zero_skip_is_nan() -> None:
    assert np.isnan(ndcg_at(np.array([0.3, 0.1]), np.zeros(2), [5], all_zero="skip")[0])


def test_average_precision() -> None:
    # ranked labels: 1, 0, 1 -> precisions at the hits 1/1 and 2/3
    assert average_precision(np.array([3.0, 2.0, 1.0]), np.array([1.0, 0.0, 2.0])) == pytest.approx((1 + 2 / 3) / 2)
    assert np.isnan(average_precision(np.array([1.0, 2.0]), np.zeros(2)))
    # relevant_from=2 counts only grade-2 documents
    assert average_precision(np.array([3.0, 2.0, 1.0]), np.array([1.0, 0.0, 2.0]), relevant_from=2) == \
        pytest.approx(1 / 3)


def test_bootstrap_interval_covers_mean_and_is_seeded() -> None:
    values = np.random.default_rng(0).random(200)
    low, high = bootstrap_interval(values, np.random.default_rng(1))
    assert low < values.mean() < high
    assert (low, high) == bootstrap_interval(values, np.random.default_rng(1))
    assert all(np.isnan(bootstrap_interval(np.array([0.5]), np.random.default_rng(1))))
