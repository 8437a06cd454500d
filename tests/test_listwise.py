"""Listwise attributions (RankingSHAP, RankSHAP), their ground-truth reference and background masking."""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np
import pytest

from auditor.checks.listwise_reference import (
    agreement,
    exact_shapley,
    footrule_at,
    l1_normalised,
    reference_shapley,
)
from auditor.checks.validity import kendall_tau_b, measure_sets
from auditor.explain.base import QueryView
from auditor.explain.listwise import (
    BackgroundMasking,
    BackgroundValiditySearch,
    ListwiseShap,
    RankGame,
    RowMasker,
    expected_validity,
    tie_aware_ndcg,
)
from auditor.models.base import CountingRanker
from auditor.models.callable import CallableRanker
from auditor.models.lightgbm import LightGBMRanker
from auditor.models.masking import Masker, keep_masks
from auditor.report.plots import draw


@pytest.fixture(scope="module")
def real_query(lambdamart) -> tuple[CountingRanker, QueryView, Masker]:
    """The conftest LambdaMART (6 features) on its largest training query, masked by the training mean."""
    booster, X, _, sizes = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    q = int(np.argmax(sizes))
    docs = X[ptr[q]:ptr[q + 1]]
    query = QueryView(X=docs, scores=model.predict(docs), query_id="q", background=X)
    return model, query, Masker.from_background(X, "mean")


def brute_force(model: CountingRanker, query: QueryView, masker: Masker, value) -> np.ndarray:
    """Shapley values by the permutation definition, every coalition through the validity measure's own masking."""
    f = query.n_features
    cache: dict[frozenset[int], float] = {}

    def v(coalition: frozenset[int]) -> float:
        if coalition not in cache:
            masked = masker.masked_scores(model, query.X, keep_masks([tuple(coalition)], f))
            cache[coalition] = float(value(query.scores, masked)[0])
        return cache[coalition]

    phi = np.zeros(f)
    for order in itertools.permutations(range(f)):
        before: frozenset[int] = frozenset()
        for player in order:
            phi[player] += v(before | {player}) - v(before)
            before = before | {player}
    return phi / factorial(f)


@pytest.mark.parametrize("objective", ["kendall", "ndcg"])
def test_exact_matches_brute_force_on_real_lightgbm(real_query, objective) -> None:
    model, query, masker = real_query
    explainer = ListwiseShap(objective, estimator="exact")  # type: ignore[arg-type]
    result = explainer.explain(model, query, masker, np.random.default_rng(0))
    value = kendall_tau_b if objective == "kendall" else (lambda ref, c: tie_aware_ndcg(ref, c, 10))
    expected = brute_force(model, query, masker, value)
    np.testing.assert_allclose(result.values, expected, atol=1e-6)
    assert abs(result.values.sum() - (result.full_value - result.empty_value)) < 1e-9  # efficiency
    assert result.full_value == pytest.approx(1.0)
    # v(∅) is computed: every document masked to the mean row ties, which tau-b counts as 0 (validity's rule)
    assert result.empty_value == pytest.approx(
        float(value(query.scores, masker.masked_scores(model, query.X, np.zeros((1, 6), dtype=bool)))[0]))


def test_rankingshap_values_are_validity_differences(real_query) -> None:
    """The game is the validity measure: v(S) equals measure_sets' validity of S for every S."""
    model, query, masker = real_query
    game = RankGame(model, query.X, query.scores, masker, players=np.arange(6))
    sets = [s for size in range(7) for s in itertools.combinations(range(6), size)]
    validity, _ = measure_sets(model, query.X, query.scores, masker, sets)
    np.testing.assert_allclose(game(keep_masks(sets, 6)), validity, atol=1e-12)


def test_one_model_call_per_batch(real_query) -> None:
    model, query, masker = real_query
    calls = []

    class Spy(CountingRanker):
        def predict(self, X: np.ndarray) -> np.ndarray:
            calls.append(X.shape[0])
            return super().predict(X)

        def count(self, rows: int) -> None:  # masked rows read off the trees: one kernel call
            calls.append(rows)
            super().count(rows)

    spy = Spy(model.inner)
    result = ListwiseShap(estimator="exact").explain(spy, query, masker, np.random.default_rng(0))
    m = len(result.players)
    assert calls == [2 ** m * query.n_docs]
    assert result.n_model_rows == 2 ** m * query.n_docs


def linear_query() -> tuple[CountingRanker, QueryView, Masker]:
    """f = x0 + x1 + 0.5·x2 (feature 3 ignored, features 0 and 1 interchangeable: column 1 copies column 0)."""
    model = CountingRanker(CallableRanker(lambda X: X[:, 0] + X[:, 1] + 0.5 * X[:, 2] + 0 * X[:, 3], "test:lin", 4))
    rng = np.random.default_rng(5)
    X = rng.random((12, 4))
    X[:, 1] = X[:, 0]
    background = rng.random((50, 4))
    background[:, 1] = background[:, 0]
    query = QueryView(X=X, scores=model.predict(X), query_id="q", background=background)
    return model, query, Masker.from_background(background, "mean")


@pytest.mark.parametrize("estimator", ["exact", "kernel", "permutation"])
@pytest.mark.parametrize("objective", ["kendall", "ndcg"])
def test_missingness_symmetry_efficiency(estimator, objective) -> None:
    model, query, masker = linear_query()
    result = ListwiseShap(objective, estimator=estimator, nsamples=60).explain(  # type: ignore[arg-type]
        model, query, masker, np.random.default_rng(1))
    assert result.values[3] == 0.0  # ignored feature: a null player
    assert abs(result.values.sum() - (result.full_value - result.empty_value)) < 1e-9
    if estimator == "exact":
        assert result.values[0] == pytest.approx(result.values[1], abs=1e-12)
    assert result.values[0] > result.values[2] > 0


def wider_query(n_features: int = 9):
    """An interacting callable model on 9 features: exact reference still cheap (512 coalitions)."""
    weights = np.linspace(1.0, 0.1, n_features)

    def score(X: np.ndarray) -> np.ndarray:
        return X @ weights + 0.8 * X[:, 0] * X[:, 4] - 0.6 * np.maximum(X[:, 2] - 0.5, 0) * X[:, 7]

    model = CountingRanker(CallableRanker(score, "test:wide", n_features))
    rng = np.random.default_rng(9)
    X = rng.random((30, n_features))
    background = rng.random((80, n_features))
    return model, QueryView(X=X, scores=model.predict(X), query_id="q", background=background), background


@pytest.mark.parametrize("estimator", ["kernel", "permutation"])
def test_sampling_estimators_converge_within_their_interval(estimator) -> None:
    model, query, background = wider_query()
    masker = Masker.from_background(background, "mean")
    exact = ListwiseShap(estimator="exact").explain(model, query, masker, np.random.default_rng(0)).values
    errors, covered = [], []
    for nsamples in (60, 480):
        result = ListwiseShap(estimator=estimator, nsamples=nsamples).explain(  # type: ignore[arg-type]
            model, query, masker, np.random.default_rng(7))
        errors.append(np.abs(result.values - exact).max())
        covered.append(np.mean(np.abs(result.values - exact) <= result.half_width + 1e-12))
    assert errors[1] < errors[0]
    assert min(covered) >= 0.75  # 95% intervals: most of the 9 features covered at each budget


def test_background_masking_one_mean_row_equals_mean_masking(real_query) -> None:
    model, query, masker = real_query
    rows = RowMasker(masker.fill.copy())
    a = ListwiseShap(estimator="exact").explain(model, query, masker, np.random.default_rng(0))
    b = ListwiseShap(estimator="exact").explain(model, query, rows, np.random.default_rng(0))
    np.testing.assert_array_equal(a.values, b.values)
    sets = [(0,), (0, 1), (2, 3, 4)]
    np.testing.assert_allclose(expected_validity(model, query.X, query.scores, rows, sets)[0],
                               measure_sets(model, query.X, query.scores, masker, sets)[0], atol=1e-12)


def test_background_validity_is_the_mean_tau_over_rows(real_query) -> None:
    model, query, _ = real_query
    rows = BackgroundMasking(rows=5).draw(query.background, np.random.default_rng(2))
    calls = []

    class Spy(CountingRanker):
        def predict(self, X: np.ndarray) -> np.ndarray:
            calls.append(X.shape[0])
            return super().predict(X)

        def count(self, rows: int) -> None:  # masked rows read off the trees: one kernel call
            calls.append(rows)
            super().count(rows)

    sets = [(0, 1), (3,)]
    validity, completeness = expected_validity(Spy(model.inner), query.X, query.scores, rows, sets)
    assert calls == [2 * len(sets) * query.n_docs * 5]  # sets and complements × docs × rows, one call
    for s, v, c in zip(sets, validity, completeness, strict=True):
        taus = [measure_sets(model, query.X, query.scores, Masker("mean", row[None, :]), [s]) for row in rows.fill]
        assert v == pytest.approx(np.mean([t[0][0] for t in taus]), abs=1e-12)
        assert c == pytest.approx(np.mean([t[1][0] for t in taus]), abs=1e-12)


def test_background_search_optimises_expected_validity(real_query) -> None:
    model, query, _ = real_query
    rows = BackgroundMasking(rows=4).draw(query.background, np.random.default_rng(2))
    chosen = BackgroundValiditySearch().select(model, query, 2, rows, np.random.default_rng(0))
    every = list(itertools.combinations(range(6), 2))
    values = expected_validity(model, query.X, query.scores, rows, every)[0]
    assert expected_validity(model, query.X, query.scores, rows, [chosen])[0][0] == pytest.approx(values.max())


def test_background_search_races_sets_over_the_rows(real_query) -> None:
    """A race scores every set on the first rows, doubles the rows while more sets remain than wanted, drops a set
    that trails the leader row by row, and ranks the rest on the rows they share; the search on many rows scores
    fewer rows than scoring every set on every row, for a set as valid under them."""
    from auditor.explain.listwise import _Race

    model, query, _ = real_query
    rows = BackgroundMasking(rows=48).draw(query.background, np.random.default_rng(3))
    sets = [(f,) for f in range(6)] + [(0, 1, 2, 3, 4, 5)]
    race = _Race(model, query, rows, np.zeros(6, dtype=bool), first=6, z=2.0)
    ranked = race.run(sets, 1)
    full = RankGame(model, query.X, query.scores, rows, players=np.arange(6)).row_values(keep_masks(sets, 6))
    scored = {s: len(race.values[s]) for s in sets}
    # every feature kept: tau 1 on every row, a clear leader, so the race ends before the rows do
    assert ranked == [(0, 1, 2, 3, 4, 5)] and min(scored.values()) == 6 and scored[ranked[0]] < 48
    for s in sets:  # the values of the rows scored are those of the whole game, prefix by prefix
        assert race.values[s] == pytest.approx(full[sets.index(s), :scored[s]], abs=1e-12)
    # rows a document shares with a fill row on the features kept or not (distinct_rows.py) are scored once
    assert 0 < race.rows == race.distinct.rows < sum(scored.values()) * query.n_docs
    kept = race.run(sets[:6], 6)  # as many wanted as sets: none dropped, raced until the leader is clear
    assert sorted(kept) == sets[:6]
    lead = race.values[kept[0]]
    for s in kept[1:]:
        shared = min(len(lead), len(race.values[s]))
        assert lead[:shared].mean() >= race.values[s][:shared].mean()
    whole = _Race(model, query, rows, np.zeros(6, dtype=bool), first=48, z=2.0).run(sets[:6], 6)
    means = full[:6].mean(axis=1)  # every row at once: ranked by the mean over all rows
    assert [means[sets.index(s)] for s in whole] == sorted(means, reverse=True)

    every_row = CountingRanker(model.inner)
    chosen_all = BackgroundValiditySearch(beam=2, first=48, focus=6).select(every_row, query, 3, rows,
                                                                            np.random.default_rng(0))
    raced = CountingRanker(model.inner)
    chosen = BackgroundValiditySearch(beam=2).select(raced, query, 3, rows, np.random.default_rng(0))
    assert raced.rows_evaluated < every_row.rows_evaluated
    value, value_all = expected_validity(model, query.X, query.scores, rows, [chosen, chosen_all])[0]
    assert value >= value_all - 0.02


def test_background_masking_options() -> None:
    assert BackgroundMasking.model_validate({"strategy": "background", "rows": 7}).rows == 7
    with pytest.raises(ValueError):
        BackgroundMasking.model_validate({"strategy": "background", "samples": 7})
    with pytest.raises(ValueError):
        BackgroundMasking.model_validate({"strategy": "background", "rows": 0})


def test_reference_and_peer_metrics() -> None:
    # v(S) = Σ_{i∈S} a_i + b·[0,1 ⊆ S]: Shapley = a_i, plus b/2 to players 0 and 1
    a, b = np.array([0.3, -0.2, 0.5, 0.0]), 0.4

    def game(masks: np.ndarray) -> np.ndarray:
        return masks @ a + b * (masks[:, 0] & masks[:, 1])

    expected = a + np.array([b / 2, b / 2, 0, 0])
    ref = reference_shapley(game, 4, np.random.default_rng(0))
    assert ref.exact
    np.testing.assert_allclose(ref.values, expected, atol=1e-12)
    sampled = reference_shapley(game, 4, np.random.default_rng(0), max_exact=2, permutations=400)
    assert not sampled.exact
    assert np.all(np.abs(sampled.values - expected) <= sampled.half_width + 1e-12)
    assert sampled.values.sum() == pytest.approx(expected.sum())
    codes = np.arange(16)
    masks = ((codes[:, None] >> np.arange(4)) & 1).astype(bool)
    np.testing.assert_allclose(exact_shapley(game(masks), 4), expected, atol=1e-12)
    assert footrule_at(expected, expected) == 0 and l1_normalised(expected, 3 * expected) == pytest.approx(0)
    # estimate order [2, 0, 1, 3] vs reference order [0, 2, 1, 3]: features 0 and 2 swap places
    estimate = np.array([0.4, 0.1, 0.9, 0.0])
    assert footrule_at(estimate, expected, 1) == 1 and footrule_at(estimate, expected) == 2
    assert set(agreement(estimate, expected)) == {"footrule@3", "footrule@10", "footrule@all", "l1"}


def test_tie_aware_ndcg() -> None:
    reference = np.array([3.0, 2.0, 1.0, 0.0])
    assert tie_aware_ndcg(reference, reference[None, :])[0] == pytest.approx(1.0)
    all_tied = tie_aware_ndcg(reference, np.zeros((1, 4)))[0]
    gains = np.array([3, 2, 1, 0.0])
    discounts = 1 / np.log2(np.arange(2, 6))
    assert all_tied == pytest.approx(gains.mean() * discounts.sum() / (gains @ discounts))
    reversed_ = tie_aware_ndcg(reference, reference[None, ::-1].copy())[0]
    assert 0 < reversed_ < all_tied < 1


def test_top_k_sets() -> None:
    model, query, masker = linear_query()
    result = ListwiseShap(estimator="exact").explain(model, query, masker, np.random.default_rng(0))
    assert result.top_k(2) == (0, 1) and result.top_k(3, signed=True) == (0, 1, 2)
    result.values = np.array([0.1, -0.5, 0.3, 0.0])
    assert result.top_k(2) == (1, 2) and result.top_k(2, signed=True) == (2, 0)


def test_options_build_the_explainers() -> None:
    from auditor.explain.listwise import ListwiseShapOptions, rankingshap, rankshap

    options = ListwiseShapOptions.model_validate({"estimator": "permutation", "nsamples": 100, "cutoff": 5})
    assert rankingshap(options).name == "rankingshap" and rankshap(options).name == "rankshap"
    assert rankshap(options).cutoff == 5 and rankingshap().estimator == "auto"
    with pytest.raises(ValueError):
        ListwiseShapOptions.model_validate({"estimator": "exact", "samples": 3})


# --- wiring: registry, spec, evidence (issue 26) -------------------------------------------------------------------

def test_listwise_explainers_are_registered_once_per_query_and_left_out_of_decision_paths() -> None:
    from auditor.evidence.explainers import attribution_names, judged_method_names
    from auditor.evidence.kinds.decision_path_accuracy.measure import DecisionPathOptions
    from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions
    from auditor.explain import registry

    methods = registry.methods()
    assert methods["rankingshap"].label == "RankingSHAP (listwise)" and methods["rankshap"].docs == 1
    assert not {"rankingshap1", "rankingshap5"} & set(methods)
    assert {"rankingshap", "rankshap"} <= set(judged_method_names())  # confidence may judge them
    assert not {"rankingshap", "rankshap"} & set(attribution_names())  # decision paths: per document only
    with pytest.raises(ValueError, match="unknown explainer 'rankingshap'"):
        DecisionPathOptions(explainers=["rankingshap"])
    assert "rankingshap" not in LocalExplanationsOptions().methods  # opt-in: 2^M coalitions a query
    options = LocalExplanationsOptions(methods=["rankingshap"], rankingshap={"estimator": "kernel"})
    assert options.rankingshap.estimator == "kernel" and options.rankshap.estimator == "auto"


def test_local_explanations_and_confidence_report_listwise_explainers() -> None:
    from auditor.evidence.kinds.confidence import ENTRY as CONFIDENCE
    from auditor.evidence.kinds.confidence import measure as confidence
    from auditor.evidence.kinds.local_explanations import ENTRY
    from auditor.evidence.kinds.local_explanations import measure as local_explanations
    from tests.conftest import make_bookstore_context

    ctx = make_bookstore_context(3)
    local = ENTRY.run(ctx, local_explanations.LocalExplanationsOptions(
        methods=["rankingshap", "rankshap", "validity_search", "background_search"], k=3, k_curve=[],
        optimum_max_subsets=0, background_rows=10, rankshap={"estimator": "permutation", "nsamples": 200}))
    assert local.status == "ok"
    labels = [row[0] for row in local.tables[0].rows]
    assert {"RankingSHAP (listwise)", "RankSHAP (listwise)", "Validity search, background rows"} <= set(labels)
    assert local.tables[0].columns[3] == "validity, 10 background rows"  # in place of the median
    assert all(row[3] is not None for row in local.tables[0].rows)
    for m in ("rankingshap", "rankshap", "validity_search", "background_search"):
        assert -1 <= local.metrics[f"local.{m}.validity_rows.mean"] <= 1
    # the search fitted to the rows is at least as valid under them as the one fitted to the mean row, per query
    rows_fit = [r["validity_rows"] for r in local.records if r["method"] == "background_search"]
    mean_fit = [r["validity_rows"] for r in local.records if r["method"] == "validity_search"]
    assert sum(rows_fit) >= sum(mean_fit) - 1e-9
    # exact on the bookstore (12 features): its own reference; the sampled RankSHAP is compared with exact values
    assert local.metrics["local.rankingshap.reference.l1.mean"] == 0
    assert 0 < local.metrics["local.rankshap.reference.l1.mean"] < 0.5
    reference = next(t for t in local.tables if t.title.startswith("Listwise attributions against exact"))
    assert reference.columns[3:] == ["footrule@3", "footrule@10", "footrule@all", "L1"]
    figure = next(f for f in local.figures if f.title.startswith("What orders this query's results"))
    svg = draw(figure)
    assert "<title>" in svg, svg[:600]
    assert "aria-label" in svg and "<desc" in svg
    assert "RankingSHAP (listwise)" in figure.description

    # with background rows, RankingSHAP plays the published game: tau averaged over the rows' masked rankings
    rows_masker = local_explanations.background_rows_masker(ctx, 10)
    played = {key[4]: value for key, value in ctx._memo.items() if key[:2] == ("attributions", "rankingshap")}
    assert played and all(key[3] == "background_rows:10" for key in ctx._memo if key[:2] == ("attributions",
                                                                                                "rankingshap"))
    differs = 0
    for qi, attrs in played.items():
        s = ctx.data.query_slice(qi)
        view = QueryView(X=ctx.data.X[s], scores=ctx.scores()[s], query_id=ctx.data.query_ids[qi],
                         background=ctx.reference_rows())
        exact = ListwiseShap("kendall", estimator="exact")
        tau_averaged = exact.explain(ctx.model, view, rows_masker, np.random.default_rng(0)).values
        np.testing.assert_allclose(attrs.values[0], tau_averaged, atol=1e-12)
        score_averaged = exact.explain(ctx.model, view, Masker(fill=rows_masker.fill, strategy="background"),
                                       np.random.default_rng(0)).values
        differs += not np.allclose(tau_averaged, score_averaged, atol=1e-6)
    assert differs  # the two games are not the same game
    assert "10 background rows in turn" in figure.caption

    options = confidence.ConfidenceOptions(methods=["rankingshap", "treeshap5"], k=3,
                                           criteria=["validity", "path_accuracy"])
    judged = CONFIDENCE.run(ctx, options)  # measured, then presented from its stored form
    assert "confidence.rankingshap.flagged_fraction" in judged.metrics
    assert "RankingSHAP (listwise)" in [row[0] for row in judged.tables[0].rows]


def test_spec_background_rows_masking(tmp_path) -> None:
    import yaml
    from typer.testing import CliRunner

    from auditor.cli import app
    from auditor.inputs.spec import MaskingSpec, load_spec
    from tests.conftest import BOOKSTORE

    rows = MaskingSpec.model_validate({"strategy": "background", "rows": 30})
    assert rows.rows == 30 and rows.samples == 30  # one masked score = the mean over the same rows
    assert MaskingSpec.model_validate({"strategy": "background", "samples": 30}).rows is None
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    for key in ("signing", "findings"):
        spec.pop(key)
    spec["dataset"]["path"] = str(BOOKSTORE / "test.csv")
    spec["background"]["path"] = str(BOOKSTORE / "train.csv")
    spec["model"]["path"] = str(BOOKSTORE / "model.txt")
    spec["evidence"] = [{"local_explanations": {"methods": ["rankingshap", "background_search"], "k": 3}}]

    def write(masking: dict, local: dict | None = None) -> str:
        spec["masking"] = masking
        if local is not None:
            spec["evidence"] = [{"local_explanations": local}]
        path = tmp_path / "audit.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        return str(path)

    loaded, _ = load_spec(write({"strategy": "background", "rows": 40}))
    [(_, options)] = loaded.evidence_items()
    assert options.background_rows == 40  # the spec's rows reach local explanations
    runner = CliRunner()
    assert runner.invoke(app, ["validate", write({"strategy": "background", "rows": 40})]).exit_code == 0
    for masking, local, message in (
            ({"strategy": "background", "rows": 0}, None, "rows"),
            ({"strategy": "mean", "rows": 10}, None, "strategy: background"),
            ({"strategy": "background", "rows": 10, "samples": 10}, None, "give one"),
            ({"strategy": "mean"}, {"methods": ["background_search"]}, "background_rows"),
            ({"strategy": "mean"}, {"methods": ["rankingshap"], "rankingshap": {"estimator": "exakt"}}, "estimator"),
            ({"strategy": "mean"}, {"methods": ["rankingshap"], "background_rows": 0}, "background_rows")):
        result = runner.invoke(app, ["validate", write(masking, local)])
        assert result.exit_code == 2, (masking, local, result.output)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
