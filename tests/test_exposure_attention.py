"""Exposure under each attention model (issue 36, part 5; auditor/evidence/kinds/exposure/attention.py).

The three models' shares on a ranking of two queries and four documents computed by hand, a ranking where the models
disagree in direction (so the sentence says the conclusion depends on the model, and a rule on the least favourable
model passes where the logarithmic one alone would fail), the sentences' branches, and the possible proxies listed
from a real surrogate run on the bookstore example, its result passed in as the engine passes it.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from auditor.evidence import REGISTRY
from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.exposure import attention as sensitivity
from auditor.evidence.kinds.exposure import measure as exposure_evidence
from auditor.evidence.kinds.exposure import present as exposure_present
from auditor.inputs.data import RankingData
from auditor.judging.policy import evaluate, load_packs
from auditor.models.base import CountingRanker
from tests.conftest import write_spec

L = [1.0, 1 / math.log2(3), 0.5, 1 / math.log2(5)]  # 1/log2(1 + i)
G = [1.0, 0.8, 0.64, 0.512]  # 0.8^(i − 1)
MODELS = ("log", "geometric", "cascade")


class Boosted:
    """score = quality + boost × brand (a callable model over the columns [quality, brand])."""

    kind = "callable"
    n_features = 2
    feature_names = None

    def __init__(self, boost: float) -> None:
        self.boost = boost

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X[:, 0] + self.boost * X[:, 1]

    def contributions(self, X: np.ndarray) -> None:
        return None

    def describe(self) -> dict:
        return {"kind": self.kind}


def _data(queries: list[list[tuple[float, int, int]]]) -> RankingData:
    """Queries of (quality, brand, label) documents."""
    rows = [doc for query in queries for doc in query]
    ptr = np.concatenate([[0], np.cumsum([len(q) for q in queries])])
    return RankingData(X=np.array([[q, b] for q, b, _ in rows], dtype=float),
                       y=np.array([lab for _, _, lab in rows], dtype=float), query_ptr=ptr,
                       query_ids=[f"q{i}" for i in range(len(queries))], doc_ids=[str(i) for i in range(len(rows))],
                       feature_names=["quality", "brand"])


def _run(data: RankingData, boost: float, surrogate: EvidenceResult | None = None, **options) -> EvidenceResult:
    ctx = AuditContext(data=data, model=CountingRanker(Boosted(boost)), seed=5)
    if surrogate is not None:
        ctx.inputs = {"surrogate": surrogate}  # as the engine passes a used item's result
    return _presented(ctx, exposure_evidence.ExposureOptions(group=["brand"], own={"brand": 1}, resamples=200,
                                                             **options))


def _presented(ctx: AuditContext, options: exposure_evidence.ExposureOptions) -> EvidenceResult:
    """Measured, then presented from its stored form, as the engine does."""
    result = exposure_evidence.run(ctx, options)
    result.options = options.model_dump(mode="json")
    result.present(REGISTRY["exposure"].presented(EvidenceItem.model_validate(result.to_json())))
    return result


# Two queries of four books. With score = quality + 2 × brand the model orders each query as listed; with the brand
# set alike for every book (0 or 1: the same order) it orders them by quality.
#   query A, the model's order: brand 1 label 0 | brand 0 label 2 | brand 1 label 1 | brand 0 label 0
#            by quality:        brand 0 label 2 | brand 1 label 0 | brand 1 label 1 | brand 0 label 0
#   query B, the model's order: brand 0 label 1 | brand 1 label 2 | brand 0 label 0 | brand 1 label 0
#            by quality:        brand 0 label 1 | brand 0 label 0 | brand 1 label 2 | brand 1 label 0
TINY = [[(1.5, 1, 0), (3.0, 0, 2), (0.5, 1, 1), (0.2, 0, 0)],
        [(3.0, 0, 1), (0.8, 1, 2), (1.0, 0, 0), (-1.5, 1, 0)]]


def _by_hand() -> dict[str, dict[str, float]]:
    """Brand 1's exposure share, merit share and counterfactual share per query, for each model, by hand.

    Merit: the ideal order of both queries is labels 2, 1, 0, 0; a book gets the mean attention of its label's
    positions, so the two label-0 books get (a₃ + a₄)/2 each. The cascade stops at a book of label r with
    φ(r) = (2^r − 1)/2^2 (r_max = 2): φ = 0, 1/4, 3/4 for labels 0, 1, 2, and a_i = Π_{j<i} (1 − φ(r_j))."""
    out = {}
    for name, a in (("log", L), ("geometric", G)):
        total = sum(a)
        zero = (a[2] + a[3]) / 2
        out[name] = {"es": [(a[0] + a[2]) / total, (a[1] + a[3]) / total],  # A: positions 1, 3; B: 2, 4
                     "ms": [(zero + a[1]) / total, (a[0] + zero) / total],  # A: labels 0, 1; B: labels 2, 0
                     "ces": [(a[1] + a[2]) / total, (a[2] + a[3]) / total]}  # A: positions 2, 3; B: 3, 4
    # cascade. Model's order, A: labels 0, 2, 1, 0 → a = 1, 1, 1/4, 3/16; B: 1, 2, 0, 0 → 1, 3/4, 3/16, 3/16.
    # Ideal: labels 2, 1, 0, 0 → a = 1, 1/4, 3/16, 3/16 (sum 26/16); label 0 gets 3/16.
    # By quality, A: labels 2, 0, 1, 0 → 1, 1/4, 1/4, 3/16; B: 1, 0, 2, 0 → 1, 3/4, 3/4, 3/16.
    out["cascade"] = {"es": [(1 + 1 / 4) / (39 / 16), (3 / 4 + 3 / 16) / (34 / 16)],
                      "ms": [(3 / 16 + 1 / 4) / (26 / 16), (1 + 3 / 16) / (26 / 16)],
                      "ces": [(1 / 4 + 1 / 4) / (27 / 16), (3 / 4 + 3 / 16) / (43 / 16)]}
    return out


def test_each_models_shares_by_hand() -> None:
    result = _run(_data(TINY), 2.0)
    m = result.metrics
    hand = _by_hand()
    assert hand["cascade"]["ms"] == pytest.approx([7 / 26, 19 / 26])  # the fractions above, once more
    ratios = {}
    for model in MODELS:
        h = hand[model]
        stem = f"exposure.brand.1.attention.{model}"
        es, ms = np.mean(h["es"]), np.mean(h["ms"])
        assert m[f"{stem}.exposure_share"] == pytest.approx(es, rel=1e-12), model
        assert m[f"{stem}.merit_share"] == pytest.approx(ms, rel=1e-12), model
        assert m[f"{stem}.ratio"] == pytest.approx(es / ms, rel=1e-12), model  # ratio of the means
        change = np.mean(np.subtract(h["es"], h["ces"]))
        assert m[f"{stem}.counterfactual.share_change"] == pytest.approx(change, rel=1e-12), model
        # brand 0 holds the rest of each query's attention and merit
        assert m[f"exposure.brand.0.attention.{model}.exposure_share"] == pytest.approx(1 - es, rel=1e-12)
        ratios[model] = es / ms
    # the cascade's merit shares 7/26 and 19/26 average 1/2: its ratio is the sum of the two exposure shares
    assert ratios["cascade"] == pytest.approx(1.25 / 2.4375 + 15 / 34, rel=1e-12)
    # the least and most favourable model
    assert m["exposure.brand.1.attention.min_ratio"] == pytest.approx(min(ratios.values()), rel=1e-12)
    assert m["exposure.brand.1.attention.max_ratio"] == pytest.approx(max(ratios.values()), rel=1e-12)
    # the log model is the section's own (the default attention): the same numbers and intervals, not recomputed
    for measure in ("exposure_share", "merit_share", "ratio", "counterfactual.share_change"):
        for name in (measure, f"{measure}.ci95_low", f"{measure}.ci95_high"):
            if f"exposure.brand.1.{name}" in m:
                assert m[f"exposure.brand.1.attention.log.{name}"] == m[f"exposure.brand.1.{name}"]
    # the own products under their fixed name
    own = {k.removeprefix("exposure.own."): v for k, v in m.items() if k.startswith("exposure.own.attention.")}
    assert own and own == {k.removeprefix("exposure.brand.1."): v for k, v in m.items()
                           if k.startswith("exposure.brand.1.attention.")}
    # every new name is declared (a pack may address it)
    assert all(REGISTRY["exposure"].emits(name) for name in m), [n for n in m if not REGISTRY["exposure"].emits(n)]


def test_the_spec_attention_model_is_reused_and_the_cutoff_applies_to_all_three() -> None:
    data = _data(TINY)
    geometric = _run(data, 2.0, attention="geometric", patience=0.8).metrics
    assert geometric["exposure.brand.1.attention.geometric.ratio"] == geometric["exposure.brand.1.ratio"]
    default = _run(data, 2.0).metrics
    for model in MODELS:  # the section's attention does not change the three models' values
        assert geometric[f"exposure.brand.1.attention.{model}.ratio"] == \
            pytest.approx(default[f"exposure.brand.1.attention.{model}.ratio"], rel=1e-12)
    # cut at 2: only the first two positions get attention, under every model
    cut = _run(data, 2.0, cutoff=2, counterfactual=False).metrics
    for model, a in (("log", L), ("geometric", G)):
        es = np.mean([a[0] / (a[0] + a[1]), a[1] / (a[0] + a[1])])  # A: brand 1 first; B: brand 1 second
        # merit, cut at 2: label 2 → a₁, label 1 → a₂, label 0 → 0; A's brand 1 has labels 0, 1; B's 2, 0
        ms = np.mean([a[1] / (a[0] + a[1]), a[0] / (a[0] + a[1])])
        assert cut[f"exposure.brand.1.attention.{model}.ratio"] == pytest.approx(es / ms, rel=1e-12), model
    assert "exposure.brand.1.attention.log.counterfactual.share_change" not in cut


@pytest.mark.parametrize("merit", ["ideal", "relevance"])
def test_group_shares_are_group_exposures_shares(merit: str) -> None:
    """The table's lean pass gives `group_exposure`'s shares (NaN in the same queries: one document, no merit) and
    its counterfactual share, for each model."""
    from auditor.checks.exposure import group_exposure

    rng = np.random.default_rng(4)
    sizes = np.concatenate([[1], rng.integers(2, 14, size=40)])
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    n = int(ptr[-1])
    scores, codes = rng.normal(size=n), rng.integers(0, 3, size=n)
    relevance = np.where(rng.random(n) < 0.5, 0.0, rng.integers(0, 4, size=n)).astype(float)
    relevance[ptr[5]:ptr[6]] = 0.0  # a query without merit
    cf = rng.normal(size=(2, n))
    for name, attention in sensitivity.models(5, float(relevance.max())).items():
        ours = sensitivity.group_shares(scores, relevance, codes, ptr, attention, cf, n_values=3, merit=merit)
        theirs = group_exposure(scores, relevance, codes, ptr, attention, n_values=3, merit=merit)
        counterfactual = np.mean([group_exposure(s, relevance, codes, ptr, attention, n_values=3, merit=merit)
                                  .exposure_share for s in cf], axis=0)
        np.testing.assert_allclose(ours["exposure"], theirs.exposure_share, rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(ours["merit"], theirs.merit_share, rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(ours["counterfactual"], counterfactual, rtol=1e-12, err_msg=name)
        assert np.isnan(ours["exposure"][0]).all()  # one document


# A query where the brand's books are first (label 0) and last (label 2), the others' two in between (0 and 2),
# repeated so every bootstrap draw is the same query (intervals shrink to the value). Merit share 1/2 under every
# model (one book of each label). Log: exposure (a₁ + a₄)/Σa = 0.559, ratio 1.12; geometric (1 + 0.512)/2.952,
# ratio 1.02; cascade (labels 0, 0, 2, 2: a = 1, 1, 1, 1/4) (1 + 1/4)/(13/4) = 5/13, ratio 10/13 = 0.769.
SPLIT = [[(4.0, 1, 0), (3.0, 0, 0), (2.0, 0, 2), (1.0, 1, 2)]] * 6


def test_models_that_disagree_in_direction() -> None:
    result = _run(_data(SPLIT), 0.0)
    m = result.metrics
    log, geometric, cascade = 2 * (L[0] + L[3]) / sum(L), 2 * (G[0] + G[3]) / sum(G), 10 / 13
    assert m["exposure.brand.1.attention.log.ratio"] == pytest.approx(log, rel=1e-12)
    assert m["exposure.brand.1.attention.geometric.ratio"] == pytest.approx(geometric, rel=1e-12)
    assert m["exposure.brand.1.attention.cascade.ratio"] == pytest.approx(cascade, rel=1e-12)
    assert m["exposure.brand.1.attention.cascade.ratio.ci95_high"] == pytest.approx(cascade, rel=1e-9)
    assert m["exposure.own.attention.min_ratio"] == pytest.approx(cascade, rel=1e-12)
    assert m["exposure.own.attention.max_ratio"] == pytest.approx(log, rel=1e-12)
    assert m["exposure.own.attention.min_ratio.ci95_low"] == pytest.approx(cascade, rel=1e-9)
    assert m["exposure.own.attention.max_ratio.ci95_high"] == pytest.approx(log, rel=1e-9)
    # brand 0 holds the other half of the merit, so its ratio is 2 − brand 1's: least favourable under log (0.883)
    assert m["exposure.brand.0.attention.min_ratio"] == pytest.approx(2 - log, rel=1e-12)
    assert m["exposure.max.attention.min_ratio"] == pytest.approx(2 - log, rel=1e-12)  # the larger of 0.883, 0.769
    assert m["exposure.min.attention.min_ratio"] == pytest.approx(cascade, rel=1e-12)
    sentence = ("For brand = 1 the conclusion depends on the attention model — ratio 1.12 (log, above merit), "
                "1.02 (geometric, above merit), 0.769 (cascade, below merit).")
    assert sentence in result.summary
    # the brand is not read by the model: no share change under any model
    assert ("The share of attention brand itself gives brand = 1 is within sampling noise of zero under all three "
            "models — 0.0 pp (log), 0.0 pp (geometric), 0.0 pp (cascade).") in result.summary
    table = next(t for t in result.tables if t.title == "Under each attention model")
    rows = {(r[0], r[1]): r for r in table.rows}
    assert rows[("brand = 1", "exposure ÷ merit share")][2:] == ["1.12 (1.12 to 1.12)", "1.02 (1.02 to 1.02)",
                                                                 "0.769 (0.769 to 0.769)", "depends on the model"]
    assert rows[("brand = 1", "change from the feature")][-1] == "holds 0 under all three"
    assert "Craswell et al. 2008" in table.note and "Moffat & Zobel 2008" in table.note


def test_a_rule_on_the_least_favourable_model(tmp_path: Path) -> None:
    """`min_ratio` judged on its interval: FAIL only when every model's interval lies above the threshold."""
    rule = {"id": "ROBUST-1", "title": "Own products over-exposed under every attention model", "evidence": "exposure",
            "metric": "exposure.own.attention.min_ratio", "fail_if": "> 1.05", "severity": "major",
            "citation": "c", "rationale": "r", "threshold_reason": "t"}
    single = {**rule, "id": "LOG-1", "metric": "exposure.own.attention.log.ratio"}
    (tmp_path / "robust.yaml").write_text(yaml.safe_dump({"pack": "robust", "title": "R", "version": "1",
                                                          "rules": [rule, single]}))
    packs = load_packs(["./robust.yaml"], base_dir=tmp_path)

    def statuses(result: EvidenceResult) -> dict[str, str]:
        found = evaluate(packs, {"exposure": result}, requested={"exposure"}, waivers=[], today=dt.date(2026, 11, 22))
        return {f.rule: f.status for f in found}

    assert statuses(_run(_data(SPLIT), 0.0)) == {"ROBUST-1": "PASS", "LOG-1": "FAIL"}  # cascade: 0.769
    # the brand's books on top in every query, whatever their label: over-exposed under all three models
    top = [[(4.0, 1, 0), (3.0, 1, 0), (2.0, 0, 2), (1.0, 0, 1)]] * 6
    result = _run(_data(top), 0.0)
    assert statuses(result) == {"ROBUST-1": "FAIL", "LOG-1": "FAIL"}
    assert "The exposure ratio of brand = 1 stays above 1 under all three attention models — " in result.summary
    rows = {(r[0], r[1]): r[-1] for r in result.tables[-1].rows}
    assert rows == {("brand = 0", "exposure ÷ merit share"): "below 1 under all three",
                    ("brand = 0", "change from the feature"): "holds 0 under all three",
                    ("brand = 1", "exposure ÷ merit share"): "above 1 under all three",
                    ("brand = 1", "change from the feature"): "holds 0 under all three"}


@pytest.mark.parametrize(("stats", "expected"), [
    ({"log": (1.3, 1.2, 1.4), "geometric": (1.25, 1.1, 1.4), "cascade": (1.4, 1.05, 1.8)},
     "The exposure ratio of X stays above 1 under all three attention models — 1.30 (log), 1.25 (geometric), "
     "1.40 (cascade); lowest 95% bound 1.05."),
    ({"log": (0.8, 0.7, 0.9), "geometric": (0.85, 0.75, 0.95), "cascade": (0.9, 0.8, 0.99)},
     "The exposure ratio of X stays below 1 under all three attention models — 0.800 (log), 0.850 (geometric), "
     "0.900 (cascade); highest 95% bound 0.990."),
    ({"log": (1.02, 0.9, 1.1), "geometric": (1.0, 0.95, 1.05), "cascade": (0.97, 0.8, 1.2)},
     "The exposure of X is not shown to differ from its merit under all three attention models (each 95% interval "
     "holds 1) — "
     "1.02 (log), 1 (geometric), 0.970 (cascade)."),
    ({"log": (1.31, 1.2, 1.4), "geometric": (1.12, 1.01, 1.3), "cascade": (0.98, 0.9, 1.07)},
     "For X the conclusion depends on the attention model — ratio 1.31 (log, above merit), 1.12 (geometric, above "
     "merit), 0.980 (cascade, not shown to differ from merit)."),
    ({"log": (1.31, 1.2, 1.4), "cascade": (1.2, 1.1, 1.3)},
     "The exposure ratio of X stays above 1 under both attention models — 1.31 (log), 1.20 (cascade); lowest 95% "
     "bound 1.10."),
])
def test_the_sentence_follows_the_intervals(stats: dict, expected: str) -> None:
    assert exposure_present.ratio_sentence("X", {f"{m}.ratio": s for m, s in stats.items()}) == expected


def test_the_envelope_is_taken_bound_by_bound() -> None:
    stats = [(1.3, 1.2, 1.4), (1.25, 1.1, 1.45), (1.4, 1.05, 1.8)]
    assert sensitivity._envelope(stats, min) == (1.25, 1.05, 1.4)
    assert sensitivity._envelope(stats, max) == (1.4, 1.2, 1.8)
    low = sensitivity._envelope([(1.3, 1.2, 1.4), (1.1, math.nan, math.nan)], min)
    assert low[0] == 1.1 and math.isnan(low[1])  # a model without an interval: none for the envelope


# --- possible proxies ------------------------------------------------------------------------------------------

def test_proxies_from_a_real_surrogate_run_on_the_bookstore(bookstore: Path) -> None:
    """The bookstore's ILMART surrogate (the example's 5 pairs) pairs own_brand with author_popularity; run as the
    engine runs it (the surrogate first, its result in `ctx.inputs`), the exposure section lists it."""
    from auditor.run import engine

    spec = write_spec(bookstore, policies=[], evidence=[{"exposure": {"group": ["own_brand"], "own": {"own_brand": 1},
                                                                      "resamples": 200}},
                                                        {"surrogate": {"interactions": 5}}])
    prepared = engine.prepare(spec)
    ctx = AuditContext(data=prepared.data, model=CountingRanker(prepared.model), seed=prepared.spec.seed,
                       background=prepared.background)
    options = dict(prepared.spec.evidence_items())
    surrogate = REGISTRY["surrogate"].run(ctx, options["surrogate"])
    pairs = [r["features"] for r in surrogate.records if len(r["features"]) == 2]
    assert ["author_popularity", "own_brand"] in pairs
    ctx.inputs = {"surrogate": surrogate}
    result = _presented(ctx, options["exposure"])
    proxies = [r for r in result.records if r["kind"] == "possible_proxy"]
    assert [(r["group"], r["feature"]) for r in proxies] == [("own_brand", "author_popularity")]
    assert 0 < proxies[0]["share"] < 1 and proxies[0]["effect"] == "author_popularity × own_brand"
    note = next(n for n in result.notes if n.startswith("Possible proxies of own_brand"))
    assert "own_brand interacts with author_popularity (pair effect ranked " in note
    assert "mean Kendall tau 0.8" in note and note.endswith("may also run through that feature.")
    # not passed in (not requested, or failed): nothing said, nothing else changes
    ctx.inputs = {}
    alone = _presented(ctx, options["exposure"])
    assert not [n for n in alone.notes if n.startswith("Possible proxies")]
    assert alone.metrics == result.metrics
    surrogate.status = "error"
    ctx.inputs = {"surrogate": surrogate}
    assert not [n for n in _presented(ctx, options["exposure"]).notes if "proxies" in n]


def test_a_surrogate_without_a_pair_of_the_group() -> None:
    surrogate = EvidenceResult(name="surrogate", metrics={"surrogate.fidelity.kendall.mean": 0.9}, records=[
        {"effect": "quality", "features": ["quality"], "rank": 1, "importance": 0.5},
        {"effect": "quality × other", "features": ["quality", "other"], "rank": 2, "importance": 0.1}])
    result = _run(_data(TINY), 2.0, surrogate=surrogate)
    assert ("Possible proxies of brand: none in the interpretable surrogate (ILMART; it ranks like the model with "
            "mean Kendall tau 0.900), none of whose 1 feature pair holds brand.") in result.notes
    assert not [r for r in result.records if r["kind"] == "possible_proxy"]


@pytest.mark.parametrize(("cascade", "severity", "where"), [
    ((0.0044, 0.001, 0.010), "major", ""),
    ((0.0044, -0.002, 0.010), "minor", " (under the log and geometric attention models only)"),
])
def test_a_detection_is_major_only_when_it_holds_under_every_attention_model(cascade: tuple, severity: str,
                                                                            where: str) -> None:
    """Reader review W4: "The model lifts documents with f1_count = 2 because of f1_count" was major on +0.4 pp that
    the cascade model could not tell from zero. Held under every model: major; else minor, saying where it holds."""
    change = (0.0037, 0.0008, 0.0076)
    stats = {("f1_count", "2"): {"ratio": (1.2, 0.96, 1.5), "exposure_share": (0.178, 0.14, 0.22),
                                 "merit_share": (0.147, 0.12, 0.17), "counterfactual.share_change": change,
                                 "counterfactual.exposure_share": (0.174, 0.14, 0.21),
                                 "counterfactual.rank_shift.mean": (0.7, 0.55, 0.84)}}
    sens = {("f1_count", "2"): {"log.counterfactual.share_change": change,
                                "geometric.counterfactual.share_change": (0.0026, 0.0001, 0.005),
                                "cascade.counterfactual.share_change": cascade}}
    result = EvidenceResult(name="exposure", metrics={"exposure.f1_count.2.queries": 43.0})
    exposure_evidence._detect(result, stats, sens, {("f1_count", "2"): "f1_count = 2"},
                              exposure_evidence.ExposureOptions(group=["f1_count"]))
    [found] = result.detections
    assert found.severity == severity
    assert found.title == f"The model lifts documents with f1_count = 2 because of f1_count{where}"
    assert ("Under the other attention models it is not shown: cascade +0.4 pp (95% interval -0.2 pp to +1.0 pp)."
            in found.message) == bool(where)
