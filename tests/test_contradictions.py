"""Issue 36 item 3, "no contradictions": sentences of the report a reader could quote back at us — a statistic that
differs from the table beside it, a point estimate at the edge of its own interval, a caption the figure disproves,
a count over more queries than the measure used, an interval written two ways."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from auditor.checks.confidence import Verdict, flag_gap
from auditor.core.numbers import figure, points, positions, signed
from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.figures import decode
from auditor.evidence.kinds.confidence import measure as confidence
from auditor.evidence.kinds.confidence import present as confidence_present
from auditor.evidence.kinds.exposure import present as exposure_present
from auditor.evidence.kinds.global_importance import measure as global_importance
from auditor.evidence.kinds.local_explanations import measure as local_explanations
from auditor.evidence.kinds.local_explanations import stats as local_report
from auditor.evidence.kinds.parameter_influence import measure as parameter_influence
from tests.conftest import make_bookstore_context

INTERVAL = re.compile(r"\[[^\]]*,[^\]]*\]|\d\s*[–—]\s*[−-]?\d")  # `[a, b]` or `a–b`: not the report's style


@pytest.fixture(scope="module")
def bookstore_context() -> AuditContext:
    return make_bookstore_context(feature_units={"sponsored": "yes/no", "own_brand": "yes/no", "genre_match": "yes/no",
                                                 "price_in_range": "yes/no"})


def _skewed_units(n_queries: int = 80, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The bookstore's pattern: two explainers with a third of their explanations flagged and no real difference,
    and one explainer with a single, very poor, flagged explanation. Unit weights made that one explanation weigh
    as much as a whole explainer: the gap sat at the top of its bootstrap interval (0.130 in -0.036 to 0.143)."""
    rng = np.random.default_rng(seed)
    cluster = np.tile(np.arange(n_queries), 3)
    strata = np.repeat(np.array(["a", "b", "c"]), n_queries)
    flagged = np.zeros(3 * n_queries, dtype=bool)
    flagged[:2 * n_queries] = rng.random(2 * n_queries) < 0.3
    values = 0.78 + 0.1 * rng.standard_normal(3 * n_queries)
    flagged[2 * n_queries + 5] = True
    values[2 * n_queries + 5] = 0.3
    return values, flagged, cluster, strata


def test_the_gap_is_the_difference_of_the_means_shown_and_sits_inside_its_interval():
    values, flagged, cluster, strata = _skewed_units()
    found = flag_gap(values, flagged, cluster, np.random.default_rng(1), strata=strata)
    assert found.gap == pytest.approx(found.unflagged_mean - found.flagged_mean, abs=1e-12)
    assert found.flagged_mean == pytest.approx(values[flagged].mean())  # flagged units weigh one each
    assert found.low <= found.gap <= found.high
    where = (found.gap - found.low) / (found.high - found.low)
    assert 0.2 < where < 0.8, where  # not at the edge of its own interval
    pooled = flag_gap(values, flagged, cluster, np.random.default_rng(1))
    assert pooled.flagged_mean == pytest.approx(values[flagged].mean())
    assert pooled.unflagged_mean == pytest.approx(values[~flagged].mean())


def _units(values: np.ndarray, flagged: np.ndarray, cluster: np.ndarray, strata: np.ndarray) -> list[dict]:
    return [{"qi": int(q), "query": str(q), "method": str(m), "measures": {}, "heldout_validity": float(v),
             "verdict": Verdict(bool(f), ["agreement"] if f else [], ["agreement"] if f else [])}
            for v, f, q, m in zip(values, flagged, cluster, strata, strict=True)]


def test_the_confidence_detection_quotes_the_row_of_its_table_in_plain_words():
    values, flagged, cluster, strata = _skewed_units()
    result = EvidenceResult(name="confidence")
    ctx = SimpleNamespace(rng=lambda stream: np.random.default_rng(7))
    confidence._validation(result, ctx, _units(values, flagged, cluster, strata))
    table = next(t for t in confidence_present._validation_table(result.facts["validation"])  # as presented
                 if t.title == "Do the flags earn their keep?")
    row = next(r for r in table.rows if r[1] == "within explainer")
    _, _, n_flagged, n_unflagged, mean_flagged, mean_unflagged, gap, interval = row
    assert gap == pytest.approx(mean_unflagged - mean_flagged, abs=2e-6)  # the table's gap is its means' difference
    for other in table.rows:  # every row, pooled included
        assert other[6] == pytest.approx(other[5] - other[4], abs=2e-6)
    assert " to " in interval and "–" not in interval
    detection = next(d for d in result.detections if d.kind == "flags-not-validated")
    text = detection.message
    assert "below unflagged" not in text and "+" not in text  # never "+0.056 below"
    direction = "lower" if gap > 0 else "higher"
    assert f"score {figure(abs(gap))} {direction} in validity" in text
    assert f"{figure(mean_flagged)} against {figure(mean_unflagged)}" in text  # the table's two means
    low, high = (float(x) for x in interval.split(" to "))
    assert f"is {interval}," in text and low <= float(figure(gap)) <= high
    assert n_flagged == int(flagged.sum()) and n_unflagged == int((~flagged).sum())


def test_the_waterfall_caption_says_what_the_rank_panel_measures(bookstore_context):
    from auditor.evidence.kinds.global_importance import ENTRY, present
    from auditor.explain.waterfall import opposed

    options = global_importance.GlobalImportanceOptions()
    result = ENTRY.run(bookstore_context, options)  # measured, then presented as the engine does
    figure = next(f for f in result.figures if "(waterfall)" in f.title)
    kwargs = {name: decode(value) for name, value in figure.data.items()}  # what the chart draws
    labels, contributions, worth = kwargs["labels"], kwargs["contributions"], np.asarray(kwargs["positions"])
    caption = figure.caption
    assert "pushes it down shows 0" not in caption  # the old claim, which the figure itself disproved
    assert "masked value" in caption and "replaced by its mean in the background data" in caption
    rows = opposed(np.asarray(contributions), worth)
    # in the bookstore example sales_rank_log pushes the top document down yet is worth a position
    assert any(labels[r].startswith("sales_rank_log") for r in rows)
    first = labels[rows[0]]
    assert f"here {first} pushes the score down ({signed(contributions[rows[0]])}) yet is worth " \
           f"{positions(worth[rows[0]])} positions" in caption
    assert opposed(np.array([0.5, -0.2, 0.1, -0.3]), np.array([0.0, 1.0, -1.0, 0.0])) == [1, 2]
    assert "features not named push" not in caption  # the bookstore's named bars carry most of its score
    # wide data (issue 56): the unnamed rest is the largest bar, and the caption says how much the named ones carry
    wide = present.waterfall_caption(["a", "b", "128 other features"], np.array([1.64, -0.4, 2.54]),
                                     np.zeros(3), "set to 0", "", n_other=128)
    assert ("The 128 features not named push +2.54 together, more than any feature named: the named bars carry "
            "44.5% of the pushes, so this document's score rests mostly on many small ones.") in wide


def test_influence_counts_the_queries_it_measured(bookstore_context):
    data = bookstore_context.data
    single = int(np.sum(data.query_sizes() < 2))
    assert single == 1  # the bookstore's test data: one query of a single document
    from auditor.evidence.kinds.parameter_influence import ENTRY

    options = parameter_influence.ParameterInfluenceOptions(sensitive=["sponsored"], resamples=200)
    result = ENTRY.run(bookstore_context, options)  # measured, then presented as the engine does
    measured = data.n_queries - single
    assert f"over {measured} queries (1 single-document query of the {data.n_queries} left out" in result.summary
    table = result.tables[0]
    assert table.note.startswith(f"{measured} queries (1 single-document query of the {data.n_queries} left out")
    for row in table.rows:
        assert not INTERVAL.search(row[3]) and " to " in row[3]
    assert result.detections  # sponsored moves documents: the sentence is checked, not skipped
    for detection in result.detections:
        assert not INTERVAL.search(detection.message) and "95% interval" in detection.message
        assert f"of the {measured} queries with an order to change" in detection.message


def test_intervals_read_a_to_b_in_exposure_cells_and_sentences():
    cell = exposure_present._cell((1.73, 1.55, 1.94), figure)
    assert cell == "1.73 (1.55 to 1.94)"
    assert exposure_present._cell((0.107, 0.09, 0.125), points) == \
        "+10.7 pp (+9.0 pp to +12.5 pp)"
    assert exposure_present.with_interval_of((1.73, 1.55, 1.94), figure) == "1.73 (95% interval 1.55 to 1.94)"
    assert exposure_present.with_interval_of((1.73, 1.55, 1.94), figure, words=False) == "1.73 (1.55 to 1.94)"
    assert exposure_present.with_interval_of((2.0, 1.55, 1.94), figure) == "2 (95% interval 1.55 to 2)"  # holds it
    assert not INTERVAL.search(exposure_present.with_interval_of((-0.107, -0.126, -0.09), points))


def test_explainer_detections_write_intervals_one_way():
    metrics = {"local.random.validity.mean": 0.434, "local.random.validity.ci95_low": 0.387,
               "local.random.validity.ci95_high": 0.482, "local.shap5.validity.mean": 0.459,
               "local.shap5.validity.ci95_low": 0.424, "local.shap5.validity.ci95_high": 0.494}
    result = EvidenceResult(name="local_explanations", metrics=metrics)
    local_report.detect(result, local_explanations.LocalExplanationsOptions(
        methods=["random", "shap5"], k=5), ["random", "shap5"])
    text = result.detections[0].message
    assert "mean validity 0.459 (95% interval 0.424 to 0.494)" in text and not INTERVAL.search(text)
