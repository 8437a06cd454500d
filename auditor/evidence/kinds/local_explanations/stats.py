"""What `local_explanations` measures from its tallies: the metrics per method and k (validity and completeness with
their intervals, the share of the optimum, the effect of k, the validity under background rows), the facts its
report section needs beside them, the wall-clock cost table, and the detections a reader must see (explainers that
do not reproduce the rankings). No sentence of the report is written here (`present.py`)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from auditor.checks.ranking import bootstrap_interval
from auditor.core.metric_names import read, spelled
from auditor.core.numbers import figure, stored, with_interval
from auditor.evidence.base import AuditContext, EvidenceResult, Table
from auditor.evidence.kinds.local_explanations.options import LocalExplanationsOptions
from auditor.evidence.kinds.local_explanations.present import TOP_FEATURES, label
from auditor.evidence.kinds.local_explanations.tallies import Tally, used_explainers
from auditor.explain import registry


def count_fallbacks(result: EvidenceResult, methods: list[str], tallies: dict[tuple[str, int], Tally]) -> None:
    """Documents an attribution explainer left without explanation (`local.<name>.degenerate_docs`, when any) or
    fitted with its fallback solver (`local.<name>.fallback_docs`, whenever it ran)."""
    for name in used_explainers(methods):
        degenerate = tallies.pop((f"{name}:degenerate", 0), None)
        if degenerate is not None:
            result.metrics[f"local.{name}.degenerate_docs"] = float(degenerate.rows)
        fallback = tallies.pop((f"{name}:fallback", 0), None)
        if registry.EXPLAINERS[name].fallback:
            result.metrics[f"local.{name}.fallback_docs"] = float(fallback.rows if fallback is not None else 0)


def measure_results(result: EvidenceResult, ctx: AuditContext, options: LocalExplanationsOptions, methods: list[str],
                    sizes: list[int], tallies: dict[tuple[str, int], Tally], excluded: int, n_chosen: int) -> None:
    """The metrics per method at k and over the sizes of k, and as facts the per-query validity the box plot draws
    and the features the best explainer's sets name most often."""
    k = options.k
    rows_k = [m for m in [*methods, "optimum"] if (m, k) in tallies and tallies[(m, k)].validity]
    metrics = result.metrics
    metrics["local.queries"] = float(n_chosen - excluded)
    metrics["local.excluded_queries"] = float(excluded)
    metrics["local.k"] = float(k)
    rng = ctx.rng("local/intervals")
    optimum = tallies.get(("optimum", k))
    optimum_mean = np.mean(optimum.validity) if optimum is not None and optimum.validity else None
    for method in rows_k:
        tally = tallies[(method, k)]
        v, c = np.array(tally.validity), np.array(tally.completeness)
        v_low, v_high = bootstrap_interval(v, rng)
        c_low, c_high = bootstrap_interval(c, rng)
        name = f"local.{method}"
        metrics.update(spelled(f"{name}.validity.mean", v.mean(), v_low, v_high, always=True))
        metrics[f"{name}.validity.median"] = float(np.median(v))
        metrics.update(spelled(f"{name}.completeness.mean", c.mean(), c_low, c_high, always=True))
        metrics[f"{name}.completeness.median"] = float(np.median(c))
        metrics[f"{name}.set_size.mean"] = float(np.mean([len(s) for s in tally.sets]))
        if optimum_mean:
            metrics[f"local.{method}.share_of_optimum"] = float(v.mean() / optimum_mean)
        if options.background_rows is not None:
            _rows_stats(metrics, ctx, method, tally)
    for method in [*methods, "optimum"]:
        metrics[f"local.{method}.rows"] = float(sum(tallies[(method, s)].rows for s in sizes if (method, s) in tallies))
    result.tables.append(_cost_table(metrics, methods, sizes, tallies, n_chosen))
    if len(sizes) > 1:
        for m in [*methods, "optimum"]:
            for s in sizes:
                if (m, s) in tallies and tallies[(m, s)].validity:
                    value = float(np.mean(tallies[(m, s)].validity))
                    if np.isfinite(value):
                        metrics[f"local.{m}.validity.mean@k{s}"] = value
    result.facts["validity"] = {m: [float(v) for v in tallies[(m, k)].validity] for m in rows_k}
    detect(result, options, [m for m in rows_k if m != "optimum"])
    contenders = [m for m in rows_k if m != "optimum"]
    if contenders:
        best = max(contenders, key=lambda m: metrics[f"local.{m}.validity.mean"])
        counts = Counter(f for s in tallies[(best, k)].sets for f in s)
        result.facts["best_sets"] = {
            "method": best, "sets": len(tallies[(best, k)].sets),
            "features": [[ctx.data.feature_names[f], n] for f, n in
                         sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:TOP_FEATURES]]}


def _rows_stats(metrics: dict[str, float], ctx: AuditContext, method: str, tally: Tally) -> None:
    """Validity and completeness under the background rows (`local.<method>.validity_rows.*`)."""
    if not tally.validity_rows:
        return
    v, c = np.array(tally.validity_rows), np.array(tally.completeness_rows)
    low, high = bootstrap_interval(v, ctx.rng(f"local/intervals/rows/{method}"))
    metrics.update(spelled(f"local.{method}.validity_rows.mean", v.mean(), low, high, always=True))
    metrics[f"local.{method}.completeness_rows.mean"] = float(c.mean())


def _cost_table(metrics: dict[str, float], methods: list[str], sizes: list[int], tallies: dict[tuple[str, int], Tally],
                n_chosen: int) -> Table:
    """Model rows and wall-clock seconds per method: shown with `output.timings`, never stored."""
    return Table(
        title="Cost per method (all sizes of k)",
        columns=["method", "model rows", "rows per query", "seconds"],
        rows=[[label(m), int(metrics[f"local.{m}.rows"]), stored(metrics[f"local.{m}.rows"] / max(n_chosen, 1), 1),
               stored(sum(tallies[(m, s)].seconds for s in sizes if (m, s) in tallies), 3)]
              for m in [*methods, "optimum"] if metrics.get(f"local.{m}.rows")],
        note="-1 and -5 variants share one attribution run, so both show its cost. Seconds are wall time.",
        volatile=True)


def detect(result: EvidenceResult, options: LocalExplanationsOptions, methods: list[str]) -> None:
    """Explainers whose sets do not reproduce the rankings (whole interval below the floor), and explainers no
    better than RANDOM sets: a reader must not take their explanations at face value."""
    metrics = result.metrics
    citation = "EU AI Act (Reg. 2024/1689) Art. 13(1) — output interpretable; Reg. (EU) 2019/1150 Art. 5(1)"
    random = read(metrics, "local.random.validity.mean") if "random" in methods else None
    random_mean, random_high = (random.value, random.high) if random is not None else (None, None)
    for method in methods:
        if method == "random":
            continue
        found = read(metrics, f"local.{method}.validity.mean")
        assert found is not None and found.low is not None and found.high is not None  # written by `measure_results`
        mean, low, high = found.value, found.low, found.high
        shown = f"mean validity {with_interval(mean, low, high)}" if np.isfinite(low) and np.isfinite(high) else \
            f"mean validity {figure(mean)}"
        judged_by = (f"local.{method}.validity.mean", f"local.{method}.validity")
        if random_high is not None and np.isfinite(random_high) and mean <= random_high:
            result.detect(
                "explainer-no-better-than-random", f"{label(method)} explanations are no better than random "
                f"feature sets", f"At k = {options.k}, {label(method)} has {shown}; RANDOM sets reach "
                f"{figure(random_mean)} (up to {figure(random_high)}). Its explanations should not be shown to users "
                "or reviewers as the reasons for a ranking.", severity="major", citation=citation,
                judged_by=judged_by, value=mean, interval=(low, high), subject=method)
        elif np.isfinite(high) and high < options.validity_floor:
            result.detect(
                "explanations-below-validity-floor", f"{label(method)} explanations do not reproduce the rankings",
                f"At k = {options.k}, {label(method)} has {shown}, below the floor of {options.validity_floor:g}: "
                "the features it names keep too few document pairs in order to explain the ranking.",
                severity="minor", citation=citation, judged_by=judged_by, value=mean, interval=(low, high),
                subject=method)
