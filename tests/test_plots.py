"""Figures: the waterfall and pair charts add up, rank positions re-rank, yes/no features get bars, every figure is
labelled, untrusted names stay text, numbers follow one convention, same data gives the same bytes."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from auditor.checks.ranking import rank_order
from auditor.core.errors import InputError
from auditor.evidence import figures
from auditor.evidence.base import AuditContext, EvidenceResult, Figure, representative_query
from auditor.evidence.figures import axis_label, decode, value_text
from auditor.evidence.kinds.global_importance import measure as global_importance
from auditor.evidence.kinds.pairwise import measure as pairwise
from auditor.evidence.kinds.surrogate import measure as surrogate
from auditor.explain.waterfall import positions_worth, waterfall
from auditor.report import plots
from tests.conftest import LIGHT_PAIRWISE, LIGHT_SURROGATE, make_bookstore_context

UNITS = {"genre_match": "yes/no", "price": "EUR", "price_in_range": "yes/no", "sponsored": "yes/no",
         "avg_review": "stars (1-5)"}


@pytest.fixture(scope="module")
def context() -> AuditContext:
    return make_bookstore_context(feature_units=UNITS)


def presented(module: Any, context: AuditContext, options: Any) -> EvidenceResult:
    """A kind's result as the engine keeps it: measured, then presented from its stored form (issue 52: its figures
    are made by its `present`)."""
    from auditor.evidence import REGISTRY

    result: EvidenceResult = REGISTRY[module.__name__.split(".")[-2]].run(context, options)
    return result


def arguments(figure: Figure, chart: str) -> dict[str, Any]:
    """What the report's chart `chart` draws of this figure: its stored data, decoded as `plots.draw` does."""
    assert figure.chart == chart, figure.chart
    return {name: decode(value) for name, value in figure.data.items()}


def rerank_shift(scores: np.ndarray, doc: int, new_score: float) -> int:
    """Positions `doc` loses when its score becomes `new_score`, by sorting the whole query again (stable: ties
    keep file order, as the audit's ranks do)."""
    changed = scores.copy()
    changed[doc] = new_score
    return int(np.flatnonzero(rank_order(changed) == doc)[0] - np.flatnonzero(rank_order(scores) == doc)[0])


def test_waterfall_adds_up_and_its_positions_rerank(context: AuditContext):
    result = presented(global_importance, context, global_importance.GlobalImportanceOptions(top=11))
    data = context.data
    query = representative_query(data.query_sizes())
    part = data.query_slice(query)
    scores = context.scores()[part]
    assert data.query_sizes()[query] >= 10 and not (data.query_sizes()[:query] >= 10).any()
    kwargs = arguments(next(f for f in result.figures if "(waterfall)" in f.title), "waterfall")
    labels, contributions = kwargs["labels"], kwargs["contributions"]
    best = int(rank_order(scores)[0])
    assert kwargs["score"] == scores[best] and kwargs["base"] == pytest.approx(scores.mean(), abs=0)
    assert abs(sum(contributions) - (kwargs["score"] - kwargs["base"])) <= 1e-9  # the bars add up exactly
    assert len(labels) == 9 and labels[-1] == f"{data.n_features - 8} other features"
    assert any(label in ("genre_match = yes", "genre_match = no") for label in labels)  # yes/no in words
    # Rank positions, recomputed by masking each row's features and sorting the query again.
    phi = context.model.contributions(data.X[part])[:, :-1]
    fall = waterfall(phi[best] - phi.mean(axis=0), base=scores.mean(), score=scores[best])
    assert [labels[i].split(" = ")[0] for i in range(8)] == [data.feature_names[f] for f in fall.features]
    fill = context.masker().fill[0]
    expected = []
    for chosen in fall.sets:
        row = data.X[part][best].copy()
        row[chosen] = fill[chosen]
        expected.append(rerank_shift(scores, best, float(context.model.predict(row[None, :])[0])))
    np.testing.assert_array_equal(kwargs["positions"], expected)
    assert min(expected) >= 0 and max(expected) > 0  # the first document can only lose places
    figure = next(f for f in result.figures if "(waterfall)" in f.title)
    assert figure.description.startswith(f"Waterfall of document {data.doc_ids[part.start + best]}, ranked 1 ")
    decision = next(f for f in result.figures if "(decision plot)" in f.title)
    svg = plots.draw(decision)
    assert svg.count("#5 ") == 1 and "#6 " not in svg  # thinned to the top 5


def test_positions_worth_of_a_document_in_the_middle(context: AuditContext):
    data = context.data
    part = data.query_slice(0)
    scores = context.scores()[part].copy()
    middle = int(rank_order(scores)[len(scores) // 2])
    sets = [[f] for f in range(data.n_features)] + [list(range(data.n_features))]
    rank, worth = positions_worth(context.model, context.masker(), data.X[part], scores, middle, sets)
    assert rank == len(scores) // 2
    masker = context.masker()
    for chosen, value in zip(sets, worth, strict=True):
        keep = np.ones(data.n_features, dtype=bool)
        keep[chosen] = False
        masked = masker.masked_scores(context.model, data.X[part][middle:middle + 1], keep[None, :])[0, 0]
        assert value == rerank_shift(scores, middle, masked)


def test_representative_query_is_the_first_with_ten_documents_else_the_largest():
    assert representative_query(np.array([3, 12, 40, 10])) == 1
    assert representative_query(np.array([3, 12, 40, 10]), among=[2, 3]) == 2
    assert representative_query(np.array([3, 8, 1, 8])) == 1  # the largest, the first of equal size
    assert representative_query(np.array([1, 1])) is None


def test_explain_query_must_be_a_query_with_a_ranking(context: AuditContext):
    with pytest.raises(InputError, match="did you mean '241'"):
        global_importance.check(global_importance.GlobalImportanceOptions(explain_query="2411"), context.data)
    with pytest.raises(InputError, match="not a query"):
        pairwise.check(pairwise.PairwiseOptions(plot_query="nope"), context.data)
    global_importance.check(global_importance.GlobalImportanceOptions(explain_query="241"), context.data)


def test_pair_chart_values_add_up_to_the_margin(context: AuditContext):
    options = pairwise.PairwiseOptions(**LIGHT_PAIRWISE["pairwise"], top=3, plot_features=4)
    result = presented(pairwise, context, options)
    kwargs = arguments(result.figures[0], "pair_bars")
    panels = kwargs["panels"]
    assert len(panels) == 2 and kwargs["up_label"] == "pushes A above B"
    figure = result.figures[0]
    query = re.search(r"query (\S+) is above", figure.title).group(1)
    records = [r for r in result.records if r["query"] == query]
    assert len(records) == 2
    for (title, labels, values), record in zip(panels, records, strict=True):
        assert len(values) == 5 and labels[-1].endswith("other features")
        assert abs(sum(values) - (record["value"] - record["base"])) <= 1e-9
        assert title.startswith(f"#{record['rank_a']} {record['doc_a']} above #{record['rank_b']} {record['doc_b']}")
        assert " vs " in labels[0]
    named = presented(pairwise, context, options.model_copy(update={"plot_query": context.data.query_ids[-1]}))
    assert "explained for this figure only" in named.figures[0].caption  # not in the seeded sample of 4


def test_yes_no_features_get_bars_and_every_effect_is_drawn(context: AuditContext):
    light = {k: v for k, v in LIGHT_SURROGATE["surrogate"].items() if k not in ("top_effects", "top_pairs")}
    result = presented(surrogate, context, surrogate.SurrogateOptions(**light))
    charts = {figure.chart: figure for figure in result.figures}
    frontier = arguments(charts["frontier_chart"], "frontier_chart")  # first: how much the drawn effects hold
    assert len(frontier["kendall"]) == result.metrics["surrogate.n_main_effects"] + result.metrics[
        "surrogate.n_interactions"] and "<svg" in plots.draw(charts["frontier_chart"])
    kwargs = arguments(charts["step_curves"], "step_curves")
    panels = kwargs["panels"]
    kinds = {panel.title: type(panel).__name__ for panel in panels}
    assert len(panels) == result.metrics["surrogate.n_main_effects"]  # every main effect the summary counts
    for name in ("genre_match", "price_in_range", "sponsored"):
        assert kinds.get(name, "LevelPanel") == "LevelPanel"
    assert kinds["avg_review, stars (1-5)"] == "StepPanel"
    bars = next(panel for panel in panels if panel.title == "genre_match")
    assert list(bars.levels) == ["no", "yes"] and sum(bars.shares) == pytest.approx(1.0)
    assert kwargs["ylabel"].startswith("contribution to the surrogate's score")
    pairs = arguments(charts["pair_heatmaps"], "pair_heatmaps")["panels"]
    assert len(pairs) == result.metrics["surrogate.n_interactions"]
    svg = plots.draw(result.figures[-1])
    assert "bin edges" not in svg


def test_every_figure_is_labelled_and_untrusted_names_stay_text():
    evil = ["<script>alert(1)</script>", "$\\frac$", "a_b$", "$x$"]
    svgs = [
        plots.bar_chart(evil, [0.4, 0.3, 0.2, 0.1], xlabel="share", percent=True),
        plots.waterfall(evil, [0.5, -0.2, 0.1, 0.05], base=-1.0, score=-0.55, base_label="$base$",
                        score_label="score of <b>", xlabel="score", positions=[2, 0, -1, 0], positions_label="p"),
        plots.pair_bars([("A $x$ above B", evil, [0.3, -0.1, 0.05, 0.0])], xlabel="x", up_label="$up$",
                        down_label="down"),
        plots.step_curves([figures.LevelPanel(evil[0], ["no", "yes"], [-0.1, 0.2], [0.6, 0.4]),
                           figures.StepPanel.of(evil[1], np.array([1.0, 2.0]), np.array([0.0, 0.1, 0.2]),
                                           np.array([0.5, 1.5, 2.5, 30.0]))], ylabel="effect"),
        plots.listwise_bars(evil, {"RankingSHAP <i>": ([0.3, -0.1, 0.05, 0.0], [0.02, 0.0, 0.01, 0.0])},
                            xlabel="$value$"),
    ]
    for svg in svgs:
        labelled = plots.label_svg(svg, "Why <script> $x$", "One sentence & more.")
        head = labelled[: labelled.index(">") + 1]
        assert 'role="img"' in head and 'aria-label="Why &lt;script&gt; $x$"' in head
        assert "<title>Why &lt;script&gt; $x$</title>" in labelled and "One sentence &amp; more.</desc>" in labelled
        assert "<script" not in labelled and "&lt;script&gt;alert(1)&lt;/script&gt;" in labelled
        assert "$\\frac$" in labelled and "mathdefault" not in labelled  # drawn as written: no mathtext
        assert plots.label_svg(labelled, "Why <script> $x$", "x") == labelled  # labelled once
    again = plots.waterfall(evil, [0.5, -0.2, 0.1, 0.05], base=-1.0, score=-0.55, base_label="$base$",
                            score_label="score of <b>", xlabel="score", positions=[2, 0, -1, 0], positions_label="p")
    assert again == svgs[1]  # same data, same bytes


def test_number_conventions():
    assert [plots.fmt(x) for x in (0.0, 1.23456, -0.0004567, 99.96, 2019.0, 1e-7)] == [
        "0", "1.23", "−0.000457", "100", "2020", "1.00e−07"]
    assert plots.fmt_signed(0.5) == "+0.500" and plots.fmt_value(2019.0) == "2019" and plots.fmt_value(12.345) == "12.3"
    assert plots.fmt_share(0.2766) == "27.7%" and plots.fmt_share(-1e-9) == "0.0%"
    assert plots.fmt_positions(3) == "+3.0" and plots.fmt_positions(-0.04) == "0.0"
    assert plots.fmt_positions(-2) == "−2.0"
    assert axis_label("price", "EUR") == "price (EUR)" and axis_label("sponsored", "yes/no") == "sponsored"
    assert value_text("sponsored", 1.0, "Yes / No") == "sponsored = yes"


def test_a_chart_of_sixteen_lines_repeats_no_colour() -> None:
    """The k-curve draws 16 explainers: with ten colours, two lines looked alike."""
    from auditor.report.plots import line_style

    styles = [line_style(i) for i in range(40)]
    assert len({tuple(c) for c, _, _ in styles[:20]}) == 20
    assert len({(tuple(c), m, d) for c, m, d in styles}) == 40


def test_the_main_parameters_chart_carries_its_cut(context: AuditContext) -> None:
    """Issue 56, charts that carry their cut: the bars of the main parameters (the fewest carrying 80%) above a
    dashed line that says so, the others grey."""
    result = presented(global_importance, context, global_importance.GlobalImportanceOptions(top=11))
    figure = next(f for f in result.figures if f.title == "Main ranking parameters")
    kwargs = arguments(figure, "bar_chart")
    main = int(result.metrics["global_importance.main_parameters"])
    assert kwargs["cut"] == main and 0 < main < len(kwargs["labels"])
    assert "above the dashed line are the main parameters" in figure.caption
    svg = plots.draw(figure)
    assert "above the line: the main parameters (80% of the importance)" in svg
    assert svg.count("#999999") >= len(kwargs["labels"]) - main  # the others grey


def test_a_figure_drawn_again_is_the_same_drawing_and_other_data_is_drawn_afresh() -> None:
    """`draw` keeps what it drew, keyed by the chart and its data: the same figure (another title) is not fitted
    again, a figure whose data differ by one value is, and `forget_drawings` starts afresh."""
    plots.forget_drawings()
    first = Figure("Shares", "bar_chart", {"labels": ["a", "b"], "values": [0.6, 0.4], "xlabel": "share"})
    svg = plots.draw(first)
    fitted = 0
    real_fit = plots.fit

    def counted(*args: Any, **kwargs: Any) -> str:
        nonlocal fitted
        fitted += 1
        return real_fit(*args, **kwargs)

    plots.fit = counted  # type: ignore[assignment]
    try:
        again = plots.draw(Figure("Shares again", "bar_chart", {"labels": ["a", "b"], "values": [0.6, 0.4],
                                                               "xlabel": "share"}))
        body = svg[svg.index("</desc>"):]
        assert fitted == 0 and again[again.index("</desc>"):] == body  # its own label, the same drawing
        other = plots.draw(Figure("Shares", "bar_chart", {"labels": ["a", "b"], "values": [0.6, 0.41],
                                                         "xlabel": "share"}))
        assert fitted == 1 and other != svg and "41" in other
        plots.forget_drawings()
        assert plots.draw(first) == svg and fitted == 2
    finally:
        plots.fit = real_fit  # type: ignore[assignment]


def test_the_exposure_chart_s_legend_has_each_colour_its_rows_use() -> None:
    """A reader found blue dots under a legend that showed only red: each colour drawn has its entry, and each row's
    label says which share is which."""
    both = plots.share_dots(["own = yes", "own = no"], [0.2, 0.8], [0.3, 0.7], [(0.25, 0.35), (0.65, 0.75)])
    assert "exposure above merit (95% interval)" in both and "exposure below merit (95% interval)" in both
    assert "exposure 30%, merit 20%" in both or "exposure 30.0%, merit 20.0%" in both
    above = plots.share_dots(["a"], [0.2], [0.3], [(0.25, 0.35)])
    assert "exposure below merit" not in above


def test_the_exposure_chart_greys_groups_met_in_too_few_queries() -> None:
    """Reader review W12: f1_count = 10 (3 queries, left out of the judged ratios) was drawn like the others."""
    svg = plots.share_dots(["a", "b"], [0.2, 0.14], [0.3, 0.03], [(0.25, 0.35), (0.0, 0.09)], few=[False, True])
    assert "met in too few queries (left out)" in svg and "#c4c4c4" in svg
    assert "exposure below merit" not in svg  # the grey row's colour is not blue
    assert "met in too few" not in plots.share_dots(["a"], [0.2], [0.3], [(0.25, 0.35)])


class _Sized:
    """A figure's size alone (inches), for `plots._Steps`."""

    def __init__(self, width: float, height: float) -> None:
        self.size = (width, height)

    def get_size_inches(self) -> np.ndarray:
        return np.array(self.size)

    def set_size_inches(self, width: float, height: float) -> None:
        self.size = (width, height)


@pytest.mark.parametrize("slope", [0.35, 0.66, 0.81, 1.0])
def test_a_figure_is_fitted_in_three_draws_whatever_its_slope(slope: float) -> None:
    """The drawing's box shrinks `slope` pt per pt of figure (labels keep their size): the secant lands inside within
    three draws, where taking the overshoot off took up to six (`plots.fit`), and at most a third of the first
    overshoot inside (a box that shrinks as fast as the figure, which `FIRST_SLOPE` underestimates)."""
    box, width = 500.0, 460.0  # pt: the drawing at the figure's size, and the box it prints in
    fig = _Sized(width / 72, 2.0)
    steps = plots._Steps(width, 144.0)
    draws = []
    while len(draws) < 6:
        draws.append(box - slope * (width - 72 * fig.get_size_inches()[0]) - width)  # the overshoot measured
        if draws[-1] <= 0.5:
            break
        assert steps.shrink(fig, draws[-1], -1.0)
    assert len(draws) <= 3 and -(box - width) / 3 <= draws[-1] <= 0.5, draws
    assert fig.get_size_inches()[1] == 2.0  # a dimension that fits keeps its size
