"""Exposure fairness and self-preferencing (evidence `exposure`, auditor/checks/exposure.py).

The measures against hand-computed cases and independent restatements: Singh & Joachims' disparate treatment ratio
on their own motivating example, Diaz et al.'s target exposure as the average over the ideal policy's rankings and
the EE-L = EE-D − 2·EE-R + ‖ε*‖² decomposition, AWRF as the TREC Fair Ranking 2021 scripts compute it (scipy's
Jensen–Shannon distance). No maintained library computes these measures (fairlearn has none for rankings, ir_measures
and lenskit neither); FairRankTune (last release 2023) has Singh & Joachims' exposure-utility ratio, which the
hand-computed case below equals. Then the planted scenario of issue 25: score = merit + 2 × own_brand against the
fair twin score = merit, judged by the DMA and DSA packs.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from auditor.checks.exposure import (
    Attention,
    awrf,
    bootstrap_of_means,
    expected_exposure,
    exposure,
    group_exposure,
    js_divergence,
    ratio,
    target_exposure,
)
from auditor.core.errors import InputError
from auditor.evidence import REGISTRY
from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.exposure import measure as exposure_evidence
from auditor.inputs.data import RankingData
from auditor.judging.policy import evaluate, load_packs
from auditor.models.base import CountingRanker
from auditor.report.plots import draw
from tests.helpers import wide_exposure_item

LOG = [1.0, 1 / math.log2(3), 0.5, 1 / math.log2(5)]


def test_attention_models_by_hand() -> None:
    assert Attention("log").weights(np.zeros(4)) == pytest.approx(LOG)
    assert Attention("log", cutoff=2).weights(np.zeros(4)) == pytest.approx([1.0, LOG[1], 0.0, 0.0])
    assert Attention("geometric", patience=0.5).weights(np.zeros(4)) == pytest.approx([1, 0.5, 0.25, 0.125])
    # cascade (Diaz et al. 2020 after ERR): the stop probability of grade r is (2^r − 1) / 2^max; grades 2, 0, 1 of 2
    # stop with 3/4, 0, 1/4, so the user reaches position 2 with 0.5·(1 − 3/4) and position 3 with that · 0.5 · 1
    assert Attention("cascade", patience=0.5, max_grade=2).weights(np.array([2.0, 0.0, 1.0])) == \
        pytest.approx([1.0, 0.125, 0.0625])
    assert Attention("custom", vector=(0.5, 0.2)).weights(np.zeros(3)) == pytest.approx([0.5, 0.2, 0.0])


def test_exposure_and_target_exposure_by_hand() -> None:
    relevance = np.array([1.0, 2.0, 1.0, 0.0])
    scores = np.array([4.0, 3.0, 2.0, 1.0])  # the model puts document 0 first, the most relevant second
    assert exposure(scores, relevance, Attention("log")) == pytest.approx(LOG)
    tied = np.array([1.0, 1.0, 0.0, 0.0])  # ties keep file order
    assert exposure(tied, relevance, Attention("log")) == pytest.approx(LOG)
    # the ideal policy: document 1 first, documents 0 and 2 share positions 2 and 3, document 3 last
    middle = (LOG[1] + LOG[2]) / 2
    assert target_exposure(relevance, Attention("log")) == pytest.approx([middle, 1.0, middle, LOG[3]])


@pytest.mark.parametrize("attention", [Attention("log"), Attention("geometric", patience=0.7),
                                       Attention("cascade", patience=0.8, max_grade=3), Attention("log", cutoff=3)])
def test_target_exposure_is_the_mean_over_the_ideal_policys_rankings(attention: Attention) -> None:
    """Diaz et al. 2020: the ideal stochastic ranking orders by relevance and shuffles equal grades uniformly; its
    expected exposure is the target. Enumerated over every ranking it can draw."""
    relevance = np.array([2.0, 0.0, 3.0, 2.0, 0.0, 2.0])
    ideal = []
    for order in itertools.permutations(range(6)):
        if np.all(np.diff(relevance[list(order)]) <= 0):
            scores = np.empty(6)
            scores[list(order)] = np.arange(6, 0, -1)
            ideal.append(exposure(scores, relevance, attention))
    assert len(ideal) == 2 * 6  # 3! orders of the grade-2 tier × 2! of the grade-0 tier
    target = target_exposure(relevance, attention)
    assert np.mean(ideal, axis=0) == pytest.approx(target)
    loss, disparity, _ = expected_exposure(np.mean(ideal, axis=0), target)
    assert loss == pytest.approx(0.0, abs=1e-12)  # the ideal policy meets the target exactly
    # a deterministic ranking has the largest disparity of the policies with these positions (Diaz et al. 2020)
    assert all(expected_exposure(e, target)[1] >= disparity - 1e-12 for e in ideal)


def test_expected_exposure_decomposition_by_hand() -> None:
    eps = np.array(LOG)
    middle = (LOG[1] + LOG[2]) / 2
    target = np.array([middle, 1.0, middle, LOG[3]])
    loss, disparity, relevance = expected_exposure(eps, target)
    assert loss == pytest.approx((1 - middle) ** 2 + (LOG[1] - 1) ** 2 + (0.5 - middle) ** 2)
    assert disparity == pytest.approx(sum(w * w for w in LOG))
    assert relevance == pytest.approx(middle + LOG[1] + 0.5 * middle + LOG[3] ** 2)
    assert loss == pytest.approx(disparity - 2 * relevance + target @ target)


def test_disparate_treatment_on_singh_and_joachims_example() -> None:
    """Singh & Joachims 2018, Sec. 1: six jobs, relevance 0.82 … 0.77, the top three of one group. Sorting by
    relevance gives group A 82% more exposure per document although its relevance is 4% higher: the disparate
    treatment ratio is (Exp(A)/U(A)) / (Exp(B)/U(B)) = 1.748 (FairRankTune's EXPU gives the same group values)."""
    relevance = np.array([0.82, 0.81, 0.80, 0.79, 0.78, 0.77])
    codes = np.array([0, 0, 0, 1, 1, 1])
    weights = [1 / math.log2(1 + i) for i in range(1, 7)]
    exp_a, exp_b = sum(weights[:3]) / 3, sum(weights[3:]) / 3
    expected = (exp_a / 0.81) / (exp_b / 0.78)
    groups = group_exposure(relevance.copy(), relevance, codes, np.array([0, 6]), Attention("log"), n_values=2,
                            merit="relevance")
    means = np.array([groups.mean_exposure[0, 0], groups.mean_relevance[0, 0], groups.rest_exposure[0, 0],
                      groups.rest_relevance[0, 0]])
    assert means == pytest.approx([exp_a, 0.81, exp_b, 0.78])
    from auditor.checks.exposure import ratio_of_ratios

    assert float(ratio_of_ratios(means[None, :])[0]) == pytest.approx(expected)
    assert expected == pytest.approx(1.7482683189, abs=1e-9)  # FairRankTune 0.0.7: EXPU(…, "MaxMinRatio")
    # the exposure share and the relevance share (merit `relevance`): 64% of the attention for 51% of the relevance
    assert groups.exposure_share[0, 0] == pytest.approx(sum(weights[:3]) / sum(weights))
    assert groups.merit_share[0, 0] == pytest.approx(2.43 / 4.77)


def test_disparate_treatment_matches_fairranktune_when_installed() -> None:
    """FairRankTune's EXPU (Singh & Joachims' exposure per unit of utility, 1/log2(1 + rank)) on random rankings of
    two groups, relevance in [0, 1]: its max/min ratio is our disparate treatment ratio (or its reciprocal). Not a
    dependency of the project (unmaintained since 2023): skipped unless installed."""
    pd = pytest.importorskip("pandas")
    metrics = pytest.importorskip("FairRankTune.Metrics.EXP")
    from auditor.checks.exposure import ratio_of_ratios

    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(4, 12))
        relevance, codes = rng.random(n), rng.permutation(np.arange(n) % 2)
        scores = rng.random(n)
        order = np.argsort(-scores, kind="stable")
        members = {f"d{i}": int(codes[i]) for i in range(n)}
        theirs, _ = metrics.EXPU(pd.DataFrame({"r": [f"d{i}" for i in order]}), members,
                                 pd.DataFrame({"r": relevance[order]}), "MaxMinRatio")
        groups = group_exposure(scores, relevance, codes, np.array([0, n]), Attention("log"), n_values=2)
        ours = float(ratio_of_ratios(np.array([[groups.mean_exposure[0, 0], groups.mean_relevance[0, 0],
                                                groups.rest_exposure[0, 0], groups.rest_relevance[0, 0]]]))[0])
        assert max(ours, 1 / ours) == pytest.approx(theirs, rel=1e-12)


def test_jensen_shannon_is_scipys_squared_distance() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        p, q = rng.random(4), rng.random(4)
        p[rng.integers(4)] = 0.0  # zero shares are allowed
        assert js_divergence(p, q) == pytest.approx(jensenshannon(p, q) ** 2, abs=1e-12)
    assert awrf([0.5, 0.5], [0.5, 0.5]) == pytest.approx(1.0)
    assert awrf([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1 - math.log(2))


def test_awrf_reproduces_the_trec_2021_task1_computation() -> None:
    """TREC Fair Ranking 2021, Task 1 evaluation script, restated: discount 1/log2(max(rank, 2)) over the whole
    ranking, the ranking's group distribution Σ discount·membership / Σ discount, the target the groups' shares of
    the relevant documents (before the script's mix with a world-population prior), AWRF = 1 − JS distance².
    Ours with that discount as a custom attention vector and `merit: relevance` on binary labels is the same."""
    rng = np.random.default_rng(8)
    sizes = rng.integers(5, 15, size=30)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    scores, relevance = rng.random(ptr[-1]), (rng.random(ptr[-1]) < 0.35).astype(float)
    codes = rng.integers(0, 3, size=ptr[-1])
    discount = tuple(1 / np.log2(np.maximum(np.arange(1, 16), 2)))
    ours = group_exposure(scores, relevance, codes, ptr, Attention("custom", vector=discount), n_values=3,
                          merit="relevance").awrf
    for q, (a, b) in enumerate(itertools.pairwise(ptr)):
        order = np.argsort(-scores[a:b], kind="stable")
        disc = np.array(discount[:b - a])
        align = np.array([np.sum(disc * (codes[a:b][order] == g)) for g in range(3)]) / disc.sum()
        relevant = relevance[a:b] > 0
        if not relevant.any():
            assert np.isnan(ours[q])  # no target: the query has no merit
            continue
        target = np.bincount(codes[a:b][relevant], minlength=3) / relevant.sum()
        assert ours[q] == pytest.approx(1 - jensenshannon(align, target) ** 2, abs=1e-9)


def test_bootstrap_of_means_gives_the_ratio_of_means_and_an_interval() -> None:
    rng = np.random.default_rng(1)
    values = np.column_stack([rng.random(40) * 0.4 + 0.3, rng.random(40) * 0.2 + 0.2])
    value, low, high = bootstrap_of_means(values, ratio, np.random.default_rng(2), n_resamples=500)
    assert value == pytest.approx(values[:, 0].mean() / values[:, 1].mean())
    assert low < value < high
    assert np.isnan(bootstrap_of_means(values[:1], ratio, rng)[1])  # one query: no interval


@pytest.mark.parametrize(("value", "name"), [(1.0, "1"), (0.0, "0"), (-2.0, "-2"), (0.5, "0.5"), (2.25, "2.25"),
                                             (float("nan"), "missing")])
def test_group_values_are_written_as_in_the_data(value: float, name: str) -> None:
    assert exposure_evidence.value_name(value) == name


# --- the planted scenario -----------------------------------------------------------------------------------

class Linear:
    """score = merit + boost × column `boosted` (a callable model)."""

    kind = "callable"
    n_features = 4
    feature_names = None

    def __init__(self, boost: float, boosted: int = 1) -> None:
        self.boost, self.boosted = boost, boosted

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X[:, 0] + self.boost * X[:, self.boosted]

    def contributions(self, X: np.ndarray) -> None:
        return None

    def describe(self) -> dict:
        return {"kind": self.kind}


@pytest.fixture(scope="module")
def marketplace() -> RankingData:
    """150 queries of 8–24 products; a quarter own-brand; relevance grades cut from a latent merit that ignores the
    brand; `proxy` is own_brand plus noise (a feature that stands in for the brand)."""
    rng = np.random.default_rng(25)
    sizes = rng.integers(8, 25, size=150)
    n = int(sizes.sum())
    merit = rng.normal(size=n)
    own = (rng.random(n) < 0.25).astype(float)
    proxy = own + 0.3 * rng.normal(size=n)
    X = np.column_stack([merit, own, proxy, rng.random(n)])
    y = np.digitize(merit, [-0.5, 0.5, 1.2]).astype(float)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    return RankingData(X=X, y=y, query_ptr=ptr, query_ids=[f"q{i}" for i in range(150)],
                       doc_ids=[str(i) for i in range(n)], feature_names=["merit", "own_brand", "proxy", "noise"])


def _run(data: RankingData, model: Linear, **options) -> tuple:
    ctx = AuditContext(data=data, model=CountingRanker(model), seed=3)
    result = _presented(ctx, exposure_evidence.ExposureOptions(group=["own_brand"], own={"own_brand": 1},
                                                               resamples=500, **options))
    return result, ctx


def _presented(ctx: AuditContext, options: exposure_evidence.ExposureOptions) -> EvidenceResult:
    """Measured, then presented from its stored form, as the engine does."""
    result = exposure_evidence.run(ctx, options)
    result.options = options.model_dump(mode="json")
    result.present(REGISTRY["exposure"].presented(EvidenceItem.model_validate(result.to_json())))
    return result


def _interval(metrics: dict, name: str) -> tuple[float, float]:
    stem = name.removesuffix(".mean")
    return metrics[f"{stem}.ci95_low"], metrics[f"{stem}.ci95_high"]


def _statuses(result, packs: list[str], tmp_path: Path) -> dict[str, str]:
    found = evaluate(load_packs(packs, base_dir=tmp_path), {"exposure": result}, requested={"exposure"},
                     waivers=[], today=dt.date(2026, 11, 22))
    return {f.rule: f.status for f in found}


def test_planted_self_preferencing_fails_and_the_fair_twin_passes(marketplace: RankingData, tmp_path: Path) -> None:
    planted, ctx = _run(marketplace, Linear(2.0))
    fair, _ = _run(marketplace, Linear(0.0))
    m, f = planted.metrics, fair.metrics
    assert _interval(m, "exposure.own_brand.1.ratio")[0] > 1.25  # the whole interval above 1, and above 1.25
    low, high = _interval(f, "exposure.own_brand.1.ratio")
    assert low < 1.0 < high  # the fair twin's interval holds 1
    assert m["exposure.own.ratio"] == m["exposure.own_brand.1.ratio"] == m["exposure.max.ratio"]
    assert m["exposure.min.ratio"] == m["exposure.own_brand.0.ratio"] < 0.8
    # the counterfactual attributes the difference to the model: with the flag set alike the planted ranker is
    # the fair one (score = merit), so its exposure is in line with merit again, and the flag moved the share
    low, high = _interval(m, "exposure.own.counterfactual.ratio")
    assert low < 1.0 < high
    assert m["exposure.own.counterfactual.exposure_share"] == pytest.approx(f["exposure.own.exposure_share"])
    assert _interval(m, "exposure.own.counterfactual.share_change")[0] > 0.1
    assert _interval(m, "exposure.own.counterfactual.rank_shift.mean")[0] > 2
    assert f["exposure.own.counterfactual.share_change"] == 0.0 == f["exposure.own.counterfactual.rank_shift.mean"]
    assert {d.kind for d in planted.detections} == {"group-over-exposed", "model-uses-group-feature"}
    assert not fair.detections
    # one batched predict for the actual scores and one for the counterfactual (2 values × every document)
    assert ctx.model.rows_evaluated == 3 * marketplace.n_docs
    planted_status = _statuses(planted, ["eu-dma-art6-5", "eu-dsa-art27-34"], tmp_path)
    fair_status = _statuses(fair, ["eu-dma-art6-5", "eu-dsa-art27-34"], tmp_path)
    rules = ("DMA-1", "DMA-2", "DMA-3", "DSA-11", "DSA-12")
    assert {r: planted_status[r] for r in rules} == dict.fromkeys(rules, "FAIL")
    assert {r: fair_status[r] for r in rules} == dict.fromkeys(rules, "PASS")
    assert _statuses(planted, ["eu-p2b-art5"], tmp_path)["P2B-11"] == "WARN"
    assert _statuses(fair, ["eu-p2b-art5"], tmp_path)["P2B-11"] == "PASS"


def test_counterfactual_tells_a_proxy_from_the_flag(marketplace: RankingData) -> None:
    """A ranker that favours a stand-in for the brand (not the flag itself) over-exposes own-brand products just as
    well, but setting the flag alike changes nothing: the evidence says the over-exposure comes from other
    features, and the ratio with the flag neutralised stays above 1."""
    result, _ = _run(marketplace, Linear(2.0, boosted=2))
    m = result.metrics
    assert _interval(m, "exposure.own.ratio")[0] > 1.25
    assert m["exposure.own.counterfactual.share_change"] == 0.0
    assert m["exposure.own.counterfactual.ratio"] == m["exposure.own.ratio"]
    assert [d.kind for d in result.detections] == ["group-over-exposed"]


def test_report_parts(marketplace: RankingData) -> None:
    result, _ = _run(marketplace, Linear(2.0), top_queries=4)
    assert [t.title for t in result.tables] == ["Exposure against merit, by group", "Under each attention model"]
    assert "Fair-ranking measures: " in result.tables[0].note  # AWRF, expected exposure: in the table's note
    worst = [r for r in result.records if r["kind"] == "over_exposed_query" and r["group"] == "own_brand"]
    assert len(worst) == 4 and {r["value"] for r in worst} == {"1"}
    excess = [r["excess"] for r in worst]
    assert excess == sorted(excess, reverse=True) and excess[0] > 0
    assert all(r["excess"] == pytest.approx(r["exposure_share"] - r["merit_share"], abs=2e-6) for r in worst)
    assert any(n.startswith("Largest over-exposure of own_brand = 1: query ") for n in result.notes)
    figure = result.figures[0]
    assert 'role="img"' in draw(figure) and "own_brand = 1 gets" in figure.description
    assert "Over-exposed beyond merit: own_brand = 1" in result.summary
    assert set(result.per_query) == {"exposure.own_brand.0.excess", "exposure.own_brand.1.excess"}
    for part in ("loss", "disparity", "relevance"):
        assert f"exposure.expected_exposure.{part}.mean" in result.metrics
        assert f"exposure.own_brand.expected_exposure.{part}.ci95_low" in result.metrics
    assert 0.307 < result.metrics["exposure.own_brand.awrf.mean"] < 1


def test_other_attention_models_and_merit(marketplace: RankingData) -> None:
    for options in ({"attention": "geometric", "patience": 0.8}, {"attention": "cascade", "cutoff": None},
                    {"attention": [0.4, 0.3, 0.2, 0.1]}, {"merit": "relevance"}):
        planted, _ = _run(marketplace, Linear(2.0), counterfactual=False, **options)
        assert _interval(planted.metrics, "exposure.own.ratio")[0] > 1, options
        assert "exposure.own.counterfactual.share_change" not in planted.metrics


@pytest.mark.parametrize(("options", "where", "problem"), [
    ({"group": ["own_brnd"]}, "group.0", "did you mean 'own_brand'"),
    ({"group": ["merit"]}, "group.0", "distinct values: it is not a group"),
    ({"own": {"own_brnd": 1}}, "own.0", "did you mean 'own_brand'"),
    ({"group": ["own_brand"], "own": {"own_brand": 2}}, "own", "never takes the value 2"),
    ({"group": ["own_brand"], "relevance": "merit"}, "relevance", "negative or missing"),
])
def test_bad_options_are_input_errors(marketplace: RankingData, options: dict, where: str, problem: str) -> None:
    with pytest.raises(InputError) as error:
        exposure_evidence.check(exposure_evidence.ExposureOptions(**options), marketplace)
    assert error.value.where == where and problem in f"{error.value.problem} {error.value.fix}"


def test_own_products_are_a_group_of_their_own(marketplace: RankingData) -> None:
    ctx = AuditContext(data=marketplace, model=CountingRanker(Linear(2.0)), seed=3)
    alone = _presented(ctx, exposure_evidence.ExposureOptions(own={"own_brand": 1}, resamples=200))
    both = _presented(ctx, exposure_evidence.ExposureOptions(group=["own_brand"], own={"own_brand": 1},
                                                             resamples=200))
    assert alone.metrics == both.metrics
    assert "Met in fewer than" not in alone.tables[0].note
    # groups too rare for the headline ratios are named in the table's note, not left out in silence (issue 56)
    rare = _presented(ctx, exposure_evidence.ExposureOptions(own={"own_brand": 1}, resamples=100,
                                                             min_queries=10_000))
    assert "exposure.max.ratio" not in rare.metrics
    assert ("Met in fewer than 10000 queries, and so left out of the largest and smallest ratios and of the "
            "detections: own_brand = ") in rare.tables[0].note


def test_spec_level_option_errors() -> None:
    with pytest.raises(ValueError, match="name one column"):
        exposure_evidence.ExposureOptions(group=["a", "b"], own={"a": 1, "b": 1})
    with pytest.raises(ValueError, match="non-negative"):
        exposure_evidence.ExposureOptions(group=["a"], attention=[0.0, -1.0])
    assert exposure_evidence.ExposureOptions().group == []  # requested without groups: skipped, with the reason


def test_the_key_figure_names_the_own_products_or_the_group_it_is_about() -> None:
    """Page 2's exposure figure says which documents are the own products (the spec's `own`, as the section labels
    the value), or which group has the largest ratio (issue 56: "own products" alone named nothing)."""
    from auditor.evidence.document import EvidenceItem
    from auditor.evidence.kinds.exposure.present import key_figures

    groups = [{"column": "own_brand", "values": [{"value": "0", "label": "own_brand = no"},
                                                  {"value": "1", "label": "own_brand = yes"}]}]
    own = EvidenceItem(status="ok", figures=[], how_to_read="", facts={"groups": groups},
                       options={"own": {"own_brand": 1.0}}, metrics={"exposure.own.ratio": 1.73})
    assert key_figures(own)[0].scale.startswith("own products: the documents with own_brand = yes; 1 = ")
    largest = EvidenceItem(status="ok", figures=[], how_to_read="", facts={"groups": groups}, options={"own": {}},
                           metrics={"exposure.max.ratio": 1.4, "exposure.own_brand.0.ratio": 0.9,
                                    "exposure.own_brand.1.ratio": 1.4})
    assert key_figures(largest)[0].scale.startswith("the group: own_brand = yes; 1 = ")
    unknown = EvidenceItem(status="ok", figures=[], how_to_read="", metrics={"exposure.max.ratio": 1.4})
    assert key_figures(unknown)[0].scale == "1 = attention in proportion to relevance"  # a run before facts


def test_the_largest_and_smallest_ratio_name_their_group_and_its_queries() -> None:
    """Reader review W3: "The most favoured group gets 1.40 times …" named no group, said nothing of its 10 queries,
    of the 4 groups left out, or that its interval (0 to 3.90) tells nothing."""
    from auditor.judging.policy import Finding
    from auditor.report.wording import fact, measured_sentence

    item = wide_exposure_item()
    judged = {"title": "t", "pack": "p", "status": "WARN", "severity": "major", "citation": "", "rationale": "",
              "message": "", "evidence": "exposure", "requirement": "FAIL if > 1.25; WARN if > 1.1"}
    largest = Finding(rule="DSA-11", metric="exposure.max.ratio", value=1.404, interval=(0.0, 3.896), **judged)
    assert fact(largest, item) == ("The most favoured group, f1_count = 7 (met in 10 of 43 queries), gets 1.40 times "
                                   "the attention its relevance earns; unreliable, as its 95% interval reaches 0; "
                                   "4 groups met in fewer than 10 queries left out")
    assert "gets 1.40 (95% interval 0 to 3.90) times" in measured_sentence(largest, item=item)
    smallest = Finding(rule="DSA-12", metric="exposure.min.ratio", value=0.648, interval=(0.458, 0.875), **judged)
    assert fact(smallest, item) == ("The least favoured group, f1_count = 4 (met in 43 of 43 queries), gets 0.648 "
                                    "times the attention its relevance earns; 4 groups met in fewer than 10 queries "
                                    "left out")
    assert fact(largest).startswith("The most favoured group gets 1.40 times")  # no stored result: the general words


def test_the_share_chart_says_its_shares_do_not_add_up_and_greys_the_rare_groups() -> None:
    """Reader review W12: the wide run's shares added to 136% and a group met in 3 queries was drawn like the others;
    the caption says why and which rows are grey."""
    from auditor.evidence.kinds.exposure.present import Value, _share_figure

    shares = {"exposure_share": 0.3, "merit_share": 0.2, "ratio": 1.5, "counterfactual.exposure_share": 0.25}
    values = [Value("g", v, f"g = {v}", {**{f"exposure.g.{v}.{m}": x for m, x in shares.items()},
                                        f"exposure.g.{v}.queries": n}) for v, n in (("0", 43.0), ("1", 3.0))]
    figure = _share_figure(values, exposure_evidence.ExposureOptions(group=["g"]))
    assert figure.data["few"] == [False, True]
    assert "over the queries it is met in, so they do not add to 100%" in figure.caption
    assert "Grey: met in fewer than 10 queries" in figure.caption
    assert "few" not in _share_figure(values[:1], exposure_evidence.ExposureOptions(group=["g"])).data
