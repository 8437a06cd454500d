"""Evidence `surrogate`: an ILMART twin of the audited ranker (paper 002), its effects and how faithful it is.

ILMART (auditor/surrogate/ilmart.py) is fitted to the audited model's scores on the reference (training) data,
queries held out for early stopping, then decomposed exactly into main effects (one feature each) and a few pair
effects (auditor/surrogate/decompose.py). Fidelity is measured on the audited data, per query
(auditor/surrogate/fidelity.py). Effects are centred on the audited documents (their mean moves into the bias),
so a curve above 0 pushes a document up; an effect's importance is its mean |value| over the audited documents.

Target: `regression` (the default) fits per-query standardised scores, `lambdarank` per-query rank grades. On
the bookstore (10 pairs, 15 leaves) lambdarank was a little closer to the model (mean Kendall tau 0.865 vs
0.858), but with 3 pairs and 7 leaves its pair phase made fidelity worse (0.833 with pairs vs 0.855 without:
its early stopping watches nDCG of the grades, not agreement), while regression's did not; so regression stays
the default. MQ2008 figures for both: benchmarks/reproduce_ilmart.py.

Defaults measured on MQ2008 Fold1 (LambdaMART of examples/mq2008, 10 pairs; docs/reproductions/ilmart.md):
8 leaves. In the reproduction's grid ILMARTi's vali Kendall tau falls with the leaves (0.787 / 0.781 / 0.777 /
0.763 for 8 / 16 / 32 / 64 at learning rate 0.1); run as this evidence (train as background, vali audited, three
seeds) 8 leaves gave mean tau 0.795, and on test 0.799 against 0.780 with 15. Synthetic documents
(`synthetic_per_document`, auditor/surrogate/train.py) are off by default: they won in the reproduction
(early stopping on vali: chosen setting test tau 0.813) but lost here (three seeds on vali: 0.781 with 6 per
document against 0.795 without). Early stopping on Kendall tau instead of l2 was no better when the stopping
queries are held out, and ties are not a limit (surrogate ties: 0.01-0.03 % of the pairs the model orders).
On the bookstore (5 pairs): tau 0.858 with 15 leaves, 0.863 with 8 (0.870 with 6 synthetic per document).

Measured only: the metrics, the effects as records (their tables, importance, share and leaves), and as facts the
fidelity of both surrogates, the training's counts and what the figures draw (each main effect's panel and each
drawn pair's cells, with the range of the documents' pushes); `present.py` says what they mean.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from auditor.checks.estimate import estimate
from auditor.core.feature_names import metric_segments
from auditor.core.metric_names import read, spelled
from auditor.core.numbers import data_value, stored, with_interval
from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.importance import summarize
from auditor.evidence.kinds.surrogate.options import SurrogateOptions

if TYPE_CHECKING:
    from auditor.surrogate.decompose import Decomposition
    from auditor.surrogate.ilmart import IlmartFit


def _threads(cells: int) -> int:
    """LightGBM threads for the surrogate: the audit's cores on a large training set (136 features × 35,643
    documents: 4.4 s on one, 2.3 on two), one on a small one, where threads save little and lose much when the
    cores are busy (the bookstore on four threads of two cores: 0.8 s against 0.14). Deterministic row-wise
    histograms make the same trees at any count (tests/test_surrogate.py), so the evidence does not change."""
    from auditor.core.threads import thread_budget
    from auditor.evidence.kinds.surrogate.options import THREADED_CELLS

    return thread_budget() if cells >= THREADED_CELLS else 1


def run(ctx: AuditContext, options: SurrogateOptions) -> EvidenceResult:
    from auditor.scoring.trees import TreeEnsemble
    from auditor.surrogate.decompose import decompose, effect_record
    from auditor.surrogate.fidelity import fidelity
    from auditor.surrogate.ilmart import IlmartConfig
    from auditor.surrogate.train import fit_surrogate

    result = EvidenceResult(name="surrogate")
    data, reference = ctx.data, ctx.reference()
    names = data.feature_names
    blackbox = ctx.scores()
    blackbox_ref = blackbox if reference is data else ctx.model.predict(reference.X)
    config = IlmartConfig(n_interactions=options.interactions, max_features=options.max_features,
                          selection=options.selection, learning_rate=options.learning_rate,
                          num_leaves=options.num_leaves, min_data_in_leaf=options.min_data_in_leaf,
                          max_rounds=options.max_rounds, patience=options.patience, seed=ctx.seed,
                          num_threads=_threads(reference.X.size))
    # progress: boosting rounds, at most two boosted phases and the pair probe (early stopping ends them sooner)
    with ctx.progress.task("Surrogate boosting rounds (at most)", 2 * options.max_rounds + config.probe_rounds) \
            as ticker:
        fitted = fit_surrogate(reference.X, blackbox_ref, reference.query_ptr, ctx.rng("surrogate"),
                               target=options.target, levels=options.grade_levels,
                               validation_share=options.validation_share, config=config, score=ctx.model.predict,
                               synthetic_per_document=options.synthetic_per_document, on_round=ticker.advance)
    fit = fitted.fit
    surrogate = fit.booster.predict(data.X, raw_score=True)
    parts = decompose(TreeEnsemble.from_lightgbm(fit.booster.dump_model()))
    contrib = parts.contributions(data.X)
    exactness = float(np.max(np.abs(parts.bias + contrib.sum(axis=1) - surrogate))) if data.n_docs else 0.0
    centred = contrib - contrib.mean(axis=0)
    importance = np.abs(centred).mean(axis=0)
    order = np.argsort(-importance, kind="stable")
    per_feature = np.zeros(data.n_features)
    for e, effect in enumerate(parts.effects):
        per_feature[list(effect.features)] += importance[e] / len(effect.features)
    result.shared["feature_importance"] = per_feature  # read by disclosure_consistency, which uses this item

    main_fid = fidelity(fit.main_booster.predict(data.X, raw_score=True), blackbox, data.query_ptr)
    full_fid = fidelity(surrogate, blackbox, data.query_ptr)
    taus = np.asarray(full_fid["kendall"], dtype=np.float64)
    # For a model without exact TreeSHAP, disclosure_consistency measures the main parameters on these.
    result.shared["importance_by_query"] = (summarize(_per_feature(contrib, parts, data.n_features), data.query_ptr),
                                            float(np.nanmean(taus)) if np.isfinite(taus).any() else float("nan"))
    m = result.metrics
    for label, fid in (("", full_fid), ("main_effects.", main_fid)):
        for measure in ("kendall", "ndcg@10"):
            values = np.asarray(fid[measure], dtype=np.float64)
            kept = values[np.isfinite(values)]
            if label:
                m[f"surrogate.fidelity.{label}{measure}.mean"] = float(kept.mean()) if kept.size else float("nan")
            else:
                m.update(estimate(kept, ctx.rng(f"surrogate/fidelity/{measure}")).metrics(
                    f"surrogate.fidelity.{measure}"))
                m[f"surrogate.fidelity.{measure}.min"] = float(kept.min()) if kept.size else float("nan")
                m[f"surrogate.fidelity.{measure}.p10"] = float(np.percentile(kept, 10)) if kept.size else float("nan")
        m[f"surrogate.fidelity.{label}explained_share"] = float(fid["explained"])
    m["surrogate.fidelity.queries"] = float(np.isfinite(np.asarray(full_fid["kendall"])).sum())
    if data.y is not None:
        from auditor.checks.ranking import per_query_ndcg

        # over the queries ranking_quality judges (two or more documents), so the model's figure is its figure
        rankable = np.diff(data.query_ptr) >= 2
        m["surrogate.labels.ndcg@10.surrogate"] = float(per_query_ndcg(surrogate, data.y, data.query_ptr,
                                                                       [10])[rankable, 0].mean())
        m["surrogate.labels.ndcg@10.model"] = float(per_query_ndcg(blackbox, data.y, data.query_ptr,
                                                                   [10])[rankable, 0].mean())
    frontier, drawn_tau = size_frontier(contrib, order, [parts.effects[e].is_pair for e in order], blackbox,
                                        data.query_ptr, drawn_effects(parts, order, options))
    m["surrogate.fidelity.drawn.kendall.mean"] = drawn_tau
    m["surrogate.fidelity.drawn.effects"] = float(frontier["drawn"])
    m["surrogate.fidelity.effects_for_95pct"] = float(frontier["effects_for_95pct"])
    m["surrogate.n_main_effects"] = float(len(parts.main_effects))
    m["surrogate.n_interactions"] = float(len(parts.pair_effects))
    m["surrogate.n_trees"] = float(fit.booster.num_trees())
    m["surrogate.decomposition.max_abs_error"] = exactness

    m["surrogate.training.synthetic_documents"] = float(fitted.n_synthetic)
    m.update(direction_metrics(data.X, contrib, parts, names, data.query_ptr, ctx.rng("surrogate/direction")))
    total = importance.sum() or 1.0
    result.records = [effect_record(parts.effects[e], names, rank=r + 1, importance=stored(importance[e]),
                                    share=stored(importance[e] / total), leaves=parts.effects[e].n_leaves,
                                    offset=stored(contrib[:, e].mean()))
                      for r, e in enumerate(order)]
    result.facts.update(documents=data.n_docs, in_sample=reference is data,
                        fidelity=_fidelity(full_fid, main_fid, fit), frontier=frontier,
                        **_drawn(ctx, parts, contrib, order, options))
    kendall = read(m, "surrogate.fidelity.kendall.mean")
    assert kendall is not None  # written above
    tau, low, high = kendall.value, kendall.low, kendall.high
    if high is not None and np.isfinite(high) and high < options.fidelity_floor:
        result.detect(
            "surrogate-low-fidelity", "The interpretable surrogate does not rank like the model",
            f"Mean Kendall tau between the surrogate's and the model's rankings is {with_interval(tau, low, high)}, "
            f"below the floor of {options.fidelity_floor:g}: its effect curves do not "
            "describe the audited model well enough to be read as its behaviour.", severity="minor",
            citation="Reg. (EU) 2019/1150 Art. 5(5) — adequate understanding of the ranking mechanism",
            judged_by=("surrogate.fidelity.kendall.mean",), value=tau, interval=(low, high))
    return result


def direction_metrics(X: np.ndarray, contrib: np.ndarray, parts: Decomposition, names: list[str],
                      query_ptr: np.ndarray, rng: np.random.Generator) -> dict[str, float]:
    """`surrogate.direction.<feature>` with its 95% interval, for each feature with a main effect: inside each
    query, Pearson's correlation between the feature's value and the surrogate's effects on it (its main effect and
    the pairs it is in), then the mean over queries where both vary (bootstrap over queries). Near 1: a higher value
    moves a document up; near −1: down; near 0: up or down depending on the value or on the other feature of a pair.
    A feature whose metric segment another feature shares gets none (`metric_segments`)."""
    from auditor.checks.ranking import within_query_correlation

    segments = metric_segments(names)
    out: dict[str, float] = {}
    for f in sorted({effect.features[0] for effect in parts.main_effects}):
        segment = segments.get(names[f])
        if segment is None:
            continue
        own = [e for e, effect in enumerate(parts.effects) if f in effect.features]
        found = estimate(within_query_correlation(X[:, f], contrib[:, own].sum(axis=1), query_ptr), rng)
        if np.isfinite(found.mean):
            out.update(spelled(f"surrogate.direction.{segment}", found.mean, found.low, found.high))
    return out


def drawn_effects(parts: Decomposition, order: np.ndarray, options: SurrogateOptions) -> np.ndarray:
    """The effects the report draws: the `top_effects` largest main effects and the `top_pairs` largest pairs."""
    mains = [e for e in order if not parts.effects[e].is_pair][: options.top_effects]
    pairs = [e for e in order if parts.effects[e].is_pair][: options.top_pairs]
    return np.asarray(mains + pairs, dtype=np.int64)


def size_frontier(contrib: np.ndarray, order: np.ndarray, is_pair: list[bool], blackbox: np.ndarray,
                  query_ptr: np.ndarray, drawn: np.ndarray) -> tuple[dict[str, Any], float]:
    """Fidelity against size: the surrogate cut to its k largest effects (the rest held at their mean, which moves
    no document within its query), for k = 1 … all, as mean Kendall tau with the model over the queries; the same
    for the effects the report draws; and the fewest effects that keep 95% of the whole surrogate's tau. Why: a
    reader reads the drawn curves as the model, and this says how much of its ordering they hold. Returns the facts
    (as stored) and the drawn effects' tau."""
    from auditor.checks.validity import has_order, kendall_tau_b

    n_effects = len(order)
    taus, drawn_taus = [], []
    for a, b in itertools.pairwise(query_ptr):
        reference = blackbox[a:b]
        if not has_order(reference):
            continue
        cut = np.cumsum(contrib[a:b][:, order], axis=1).T  # row k-1: the k largest effects' sum, per document
        taus.append(kendall_tau_b(reference, cut) if n_effects else np.zeros(0))
        drawn_taus.append(kendall_tau_b(reference, contrib[a:b][:, drawn].sum(axis=1)[None, :])[0])
    kendall = np.mean(taus, axis=0) if taus else np.full(n_effects, np.nan)
    whole = float(kendall[-1]) if n_effects else float("nan")
    enough = np.flatnonzero(kendall >= 0.95 * whole) if np.isfinite(whole) and whole > 0 else np.zeros(0, int)
    drawn_tau = float(np.mean(drawn_taus)) if drawn_taus else math.nan
    return {"kendall": [stored(float(t)) for t in kendall], "pair": [bool(p) for p in is_pair],
            "drawn": int(drawn.size), "drawn_kendall": stored(drawn_tau),
            "effects_for_95pct": int(enough[0]) + 1 if enough.size else n_effects}, drawn_tau


def _fidelity(full: dict[str, Any], main: dict[str, Any], fit: IlmartFit) -> dict[str, Any]:
    """How faithful both surrogates are (main effects only, then with pairs), as the fidelity table shows them, and
    what the training selected."""
    rows = []
    for fid, trees in ((main, fit.main_trees), (full, fit.main_trees + fit.interaction_trees)):
        tau, ndcg = np.asarray(fid["kendall"]), np.asarray(fid["ndcg@10"])
        rows.append({"kendall_mean": float(np.nanmean(tau)), "kendall_p10": float(np.nanpercentile(tau, 10)),
                     "ndcg_mean": float(np.nanmean(ndcg)), "explained": float(fid["explained"]), "trees": trees})
    return {"main": rows[0], "full": rows[1], "pairs": len(fit.pairs), "main_features": len(fit.main_features)}


def _drawn(ctx: AuditContext, parts: Decomposition, contrib: np.ndarray, order: np.ndarray,
           options: SurrogateOptions) -> dict[str, Any]:
    """What the figures draw, not every document: the `top_effects` largest main effects as panels (a yes/no
    feature's two bars, else a step curve over a histogram of the documents' values) and the `top_pairs` largest
    pairs as heatmap cells, each with the range of its pushes on the audited documents (centred on them). Panels as
    figures encode them (`figures.encode`: exact)."""
    from auditor.evidence.figures import HeatAxis, LevelPanel, StepPanel, axis_label, encode, pair_cells
    from auditor.inputs.feature_dictionary import is_yes_no
    from auditor.surrogate.decompose import effect_name

    data, names, units = ctx.data, ctx.data.feature_names, ctx.feature_units
    offsets = contrib.mean(axis=0)
    mains: list[dict[str, Any]] = []
    drawn = drawn_effects(parts, order, options)  # what size_frontier judges is what is drawn
    for e in [e for e in drawn if not parts.effects[e].is_pair]:
        effect = parts.effects[e]
        feature = effect.features[0]
        name, unit = names[feature], units.get(names[feature])
        column, own = data.X[:, feature], contrib[:, e] - offsets[e]
        levels = np.unique(column[np.isfinite(column)])
        if len(levels) == 2:  # a yes/no feature: two bars, not a curve through values no document has
            at = [column == v for v in levels]
            words = {0.0: "no", 1.0: "yes"} if is_yes_no(unit) and set(levels) <= {0.0, 1.0} else {}
            panel: StepPanel | LevelPanel = LevelPanel(
                axis_label(name, unit), [words.get(float(v), data_value(v)) for v in levels],
                [float(own[m].mean()) for m in at], [float(m.sum() / np.isfinite(column).sum()) for m in at])
        else:
            panel = StepPanel.of(axis_label(name, unit), effect.cuts[0], effect.values[:-1] - offsets[e], column)
        mains.append({"feature": name, "panel": encode(panel), "low": float(own.min()), "high": float(own.max())})
    panels = []
    for e in [e for e in drawn if parts.effects[e].is_pair]:
        axes = [HeatAxis(axis_label(names[f], units.get(names[f])), data.X[:, f], is_yes_no(units.get(names[f])))
                for f in parts.effects[e].features]
        panels.append((effect_name(parts.effects[e], names), axes[0], axes[1], contrib[:, e] - offsets[e]))
    cells = pair_cells(panels)  # what the heatmaps draw: the mean effect per cell, not every document
    return {"main_effects": mains,
            "pair_effects": [{"panel": encode(cell), "low": float(np.min(push)), "high": float(np.max(push))}
                             for cell, (_, _, _, push) in zip(cells, panels, strict=True)]}


def _per_feature(contrib: np.ndarray, parts: Decomposition, n_features: int) -> np.ndarray:
    """Per-document contributions per feature (documents × features): each effect's contribution, a pair's split
    evenly between its two features."""
    out = np.zeros((contrib.shape[0], n_features))
    for e, effect in enumerate(parts.effects):
        for f in effect.features:
            out[:, f] += contrib[:, e] / len(effect.features)
    return out
