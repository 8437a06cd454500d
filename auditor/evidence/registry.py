"""Every evidence kind in one table: a frozen `EvidenceKind` entry carries everything about a kind — its options
model, the metric names it can emit, the module that runs it, its cost estimator, which kinds it uses, and the facts
the cost model and the budget plan with (it audits a sample of queries, runs them in worker processes, scores mostly
masked rows, what a budget may leave out) — so the spec, the cost model, the budget and the policy engine read the
registry and never branch on a kind's name (docs/architecture.md, "A new evidence kind").

A new kind is one module (its options model, `run(ctx, options)` and optionally `check(options, data)`) plus one
entry: a line in `_builtins()` below, or `register(EvidenceKind(...))` from anywhere (a test registers a toy kind).
Importing this module loads no plugin, no numpy and no pandas (the spec imports it): an entry names its module and
its estimator, imported on first use.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from auditor.evidence.options import EvidenceOptions

if TYPE_CHECKING:
    from auditor.evidence.document import EvidenceItem

# (options, cost.Shape, the items estimated before it in this audit with their options) -> (queries, model rows,
# seconds beside the model, what drives them); "module:function" strings are imported when first called
Estimator = Callable[[Any, Any, Mapping[str, Any]], tuple[int, int, float, str]]

ALWAYS_PRESENT = ("dataset", "governance")  # the items every audit has, before the requested ones


def resolve(target: Callable[..., Any] | str) -> Callable[..., Any]:
    """A callable, or the "module:function" string naming one (imported now)."""
    if callable(target):
        return target
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class KeyFigure:
    """A figure a kind offers the executive summary: its `metric` (value and interval read by `metric_names.read`)
    under `label`, with what the `scale` means; `order` places it among the other kinds' (most telling first)."""

    order: int
    label: str
    metric: str
    scale: str
    share: bool = False


@dataclass(frozen=True)
class EvidenceKind:
    """One evidence kind. `module` holds `run(ctx, options) -> EvidenceResult` and, optionally, `check(options,
    data)` (bad options for this data: InputError with `where`), imported on first use, so a worker process imports
    only the kinds whose tasks it runs."""

    name: str  # the spec key
    options: type[EvidenceOptions]
    module: str
    title: str
    description: str
    cost: Estimator | str  # model rows and seconds before the run (auditor/run/cost.py); no kind goes uncosted
    # the metric (and per-query) names it can emit, as patterns (`metric_pattern`): a policy rule naming another is
    # bad input when the packs load
    metrics: tuple[str, ...] = ()
    # kinds whose results it reads when they are requested too (`ctx.used(name)`): the engine runs them first
    uses: tuple[str, ...] = ()
    sampled: bool = False  # audits a seeded sample of queries (its `queries:` option), which a budget may shrink
    pooled: bool = False  # its queries run in the executor's worker processes when the item is long enough
    masked: bool = False  # its model rows are mostly masked rows (scored at the probe's masked speed)
    # option values a budget sets when a smaller sample of queries alone does not fit, and what they leave out
    reduced: tuple[tuple[str, Any], ...] = ()
    reduced_text: str = ""
    readme: str = ""  # what it measures, for the README's table of evidence kinds (`readme_table`; tested current)
    # a kind that audits a sample of queries: (the metric counting the audited queries, the one counting chosen
    # queries it left out or "", what it measured) — the report's scope says when the sample is not every query
    coverage: tuple[str, str, str] | None = None
    # (its result as evidence.json holds it) -> the figures it offers the executive summary, or "module:function"
    key_figures: Callable[[EvidenceItem], list[KeyFigure]] | str | None = None
    # (its metrics, the dataset's facts) -> what the report's Limitations must say about its figures, or
    # "module:function"
    limitations: Callable[[Mapping[str, float], Mapping[str, float]], list[str]] | str | None = None
    # its detections that find the audit's own tools wanting (an explainer no better than random, a surrogate that
    # does not rank like the model): Limitations lists them
    self_checks: tuple[str, ...] = ()
    # the column of its records holding each feature's share of importance (`feature` names it): the report lists
    # the features by it
    feature_shares: str | None = None

    def run(self, ctx: Any, options: Any) -> Any:
        return self._module().run(ctx, options)

    @property
    def check(self) -> Callable[[Any, Any], None] | None:
        return getattr(self._module(), "check", None)

    def estimator(self) -> Estimator:
        return resolve(self.cost)

    def limits(self, metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
        """What the report's Limitations says about its figures (nothing when it declares no `limitations`)."""
        return [] if self.limitations is None else list(resolve(self.limitations)(metrics, dataset))

    def figures(self, result: EvidenceItem) -> list[KeyFigure]:
        """The figures it offers the executive summary from `result` (none when it declares no `key_figures`)."""
        return [] if self.key_figures is None else list(resolve(self.key_figures)(result))

    def emits(self, metric: str) -> bool:
        """Whether this kind can emit `metric` (one of its `metrics` patterns matches it)."""
        return any(metric_pattern(pattern).fullmatch(metric) for pattern in self.metrics)

    def metric_examples(self) -> list[str]:
        """Its metric patterns with every alternative spelled out (placeholders kept): for nearest-name hints."""
        return [name for pattern in self.metrics for name in _expand(pattern)]

    def _module(self) -> Any:
        return importlib.import_module(self.module)


# the requestable kinds and the two every audit has; mutated in place by `register`, so a reference taken earlier
# (auditor.evidence.REGISTRY) sees a kind registered later
KINDS: dict[str, EvidenceKind] = {}
ALWAYS: dict[str, EvidenceKind] = {}
_changes = [0]


def register(kind: EvidenceKind, *, always: bool = False) -> EvidenceKind:
    """Add a kind (ValueError if its name is taken): the spec, the cost model, the budget and the packs' metric
    check see it from now on."""
    if kind.name in KINDS or kind.name in ALWAYS:
        raise ValueError(f"evidence kind {kind.name!r} is registered already")
    (ALWAYS if always else KINDS)[kind.name] = kind
    _changes[0] += 1
    return kind


def unregister(name: str) -> None:
    """Remove a kind registered with `register` (tests' toy kinds)."""
    KINDS.pop(name, None)
    _changes[0] += 1


def version() -> int:
    """Changes since import: the spec rebuilds its tagged union of items when this moves."""
    return _changes[0]


def readme_table() -> str:
    """The README's table of the evidence kinds a spec can request, from their entries (tests keep README.md equal)."""
    lines = ["| evidence | what it measures |", "| --- | --- |"]
    lines += [f"| `{kind.name}` | {kind.readme or kind.description} |" for kind in KINDS.values()]
    return "\n".join(lines) + "\n"


def metrics_table() -> str:
    """docs/metrics.md's table of kinds: each kind's metric prefixes and the metric names it declares (its `metrics`
    patterns, `{a|b}` one of the alternatives, `{name}` any one segment), every kind a spec has, the two always
    present first (tests keep the file equal)."""
    lines = ["| evidence kind | metric prefix | names it can emit |", "| --- | --- | --- |"]
    for kind in [*ALWAYS.values(), *KINDS.values()]:
        prefixes = dict.fromkeys(pattern.split(".", 1)[0] + "." for pattern in kind.metrics)
        name = f"`{kind.name}`" + (" (always present)" if kind.name in ALWAYS else "")
        names = "<br>".join(f"`{pattern}`".replace("|", "\\|") for pattern in kind.metrics)  # `|` splits cells
        lines.append(f"| {name} | {', '.join(f'`{p}`' for p in prefixes)} | {names} |")
    return "\n".join(lines) + "\n"


def _builtins() -> None:
    from auditor.evidence.options import (
        confidence,
        dataset,
        decision_path_accuracy,
        disclosure_consistency,
        exposure,
        global_importance,
        governance,
        local_explanations,
        pairwise,
        parameter_influence,
        ranking_quality,
        selection_rates,
        surrogate,
    )

    costs, key = "auditor.evidence.costs", "auditor.evidence.key_figures"
    register(EvidenceKind("dataset", dataset.DatasetOptions, "auditor.evidence.dataset", "Dataset",
                          "Data facts: documents, queries, features, degenerate queries, the query sample.",
                          f"{costs}:none", metrics=dataset.METRICS), always=True)
    register(EvidenceKind("governance", governance.GovernanceOptions, "auditor.evidence.governance", "Governance",
                          "Facts about the audit record: signed, retention, stated purpose, owner and oversight.",
                          f"{costs}:none", metrics=governance.METRICS), always=True)
    for kind in (
        EvidenceKind("ranking_quality", ranking_quality.RankingQualityOptions, "auditor.evidence.ranking_quality",
                     "Ranking quality", "nDCG@k and MAP per query against relevance labels.",
                     f"{costs}:scores_only", metrics=ranking_quality.METRICS,
                     key_figures=f"{key}:ranking_quality", limitations=f"{key}:quality_limitations",
                     readme=(
                     "nDCG@k and MAP per query against relevance labels, with intervals and the weakest queries")),
        EvidenceKind("global_importance", global_importance.GlobalImportanceOptions,
                     "auditor.evidence.global_importance", "Main ranking parameters",
                     "TreeSHAP importance per feature: global, per query, within query.",
                     f"{costs}:global_importance", metrics=global_importance.METRICS,
                     key_figures=f"{key}:global_importance", feature_shares="within_query.share",
                     readme=(
                     "exact TreeSHAP importance: global, per query, and within query (what actually orders "
                     "documents)")),
        EvidenceKind("local_explanations", local_explanations.LocalExplanationsOptions,
                     "auditor.evidence.local_explanations", "Local explanation quality",
                     "Explainers compared by validity and completeness (Singh et al. 2020).",
                     f"{costs}:local_explanations", metrics=local_explanations.METRICS,
                     key_figures=f"{key}:local_explanations", limitations=f"{key}:local_limitations",
                     self_checks=("explainer-no-better-than-random", "explanations-below-validity-floor",
                                  "explainer-estimate-noisy"), sampled=True, pooled=True,
                     masked=True, reduced=(("k_curve", []), ("optimum_max_subsets", 0)),
                     reduced_text="the effect-of-k curve and the exhaustive optimum (only k itself)",
                     coverage=("local.queries", "local.excluded_queries", "Local explanations"),
                     readme=(
                     "TreeSHAP, KernelSHAP, LIRME, EXS, GREEDY family and our validity search, compared by validity "
                     "and completeness (Singh et al. 2020, Table 2), with the exhaustive optimum where affordable; "
                     "opt-in listwise attributions `rankingshap` and `rankshap` (Heuss et al. 2025; Chowdhury et al."
                     " 2025) — which features order a query's results, and how much — checked against exact Shapley "
                     "values; validity under N background rows beside the mean masking (`background_rows`)")),
        EvidenceKind("decision_path_accuracy", decision_path_accuracy.DecisionPathOptions,
                     "auditor.evidence.decision_path_accuracy", "Decision-path accuracy",
                     "Explainers against decision-path ground truth (Rahnama & Bütepage 2022).",
                     f"{costs}:decision_path_accuracy", metrics=decision_path_accuracy.METRICS, sampled=True,
                     masked=True,
                     coverage=("decision_path.queries", "", "Decision-path accuracies"),
                     readme=(
                     "for tree models: how well each explainer agrees with ground truth read from the decision paths"
                     " (Rahnama & Bütepage 2022, Table 3)")),
        EvidenceKind("disclosure_consistency", disclosure_consistency.DisclosureConsistencyOptions,
                     "auditor.evidence.disclosure_consistency", "Declared vs actual main parameters",
                     "The declared main parameters and their order against the measured ones (P2B Art. 5).",
                     f"{costs}:disclosure_consistency", metrics=disclosure_consistency.METRICS,
                     # the surrogate measures a model without TreeSHAP; all four, the published statement's claims
                     uses=("surrogate", "global_importance", "parameter_influence", "exposure"),
                     key_figures=f"{key}:disclosure_consistency",
                     readme=(
                     "the main parameters the terms and conditions declare vs the measured ones (P2B Art. 5(1)): "
                     "undeclared influential parameters, order agreement, stability over query samples; with "
                     "`statement`, each claim of the published statement checked against the evidence")),
        EvidenceKind("parameter_influence", parameter_influence.ParameterInfluenceOptions,
                     "auditor.evidence.parameter_influence", "Influence of sensitive parameters",
                     "Rank shifts when paid or other sensitive parameters are masked or swept.",
                     f"{costs}:parameter_influence", metrics=parameter_influence.METRICS,
                     key_figures=f"{key}:parameter_influence",
                     coverage=("influence.queries", "", "Influence of sensitive parameters"),
                     readme=(
                     "what sensitive parameters (paid placement, commission) do to positions (P2B Art. 5(3)): rank "
                     "shift when masked, gain from lowest to highest value, top-k changes, with intervals")),
        EvidenceKind("pairwise", pairwise.PairwiseOptions, "auditor.evidence.pairwise", "Pairwise explanations",
                     "Why each top document is ranked above the next (Huai et al. 2020).", f"{costs}:pairwise",
                     metrics=pairwise.METRICS, sampled=True, pooled=True, masked=True,
                     coverage=("pairwise.queries", "", "Pairwise explanations"),
                     readme=(
                     "why each top document is ranked above the next: ASIPair Shapley values of the score margin "
                     "(exact for ≤ 10 features), or RAIPair (Huai et al. 2020)")),
        EvidenceKind("confidence", confidence.ConfidenceOptions, "auditor.evidence.confidence",
                     "Explanations not to rely on", "Low-confidence flags per query and explainer, with reasons.",
                     f"{costs}:confidence", metrics=confidence.METRICS,
                     key_figures=f"{key}:confidence", self_checks=("flags-not-validated",), sampled=True,
                     pooled=True, masked=True,
                     readme=(
                     "each explanation's estimated reliability (out of sample: will it reproduce the ranking under "
                     "masking it was not chosen on, and name the features the trees used?), flags below one half "
                     "with the signals that pull it down, the estimate's AUC and calibration, the explanation to use"
                     " where no attribution is reliable, attributions below the validity floor widened to the fewest"
                     " of their own top features that hold, rankings too close to call listed apart, and the check "
                     "that flagged ones are really worse")),
        EvidenceKind("exposure", exposure.ExposureOptions, "auditor.evidence.exposure",
                     "Exposure and self-preferencing", "Who gets the attention: exposure against merit per group, "
                     "and what the group feature itself is worth (DMA Art. 6(5)).", f"{costs}:exposure",
                     uses=("surrogate",), metrics=exposure.METRICS,
                     key_figures=f"{key}:exposure",
                     readme=(
                     "who gets the attention (DSA Art. 34(1)(b), DMA Art. 6(5), P2B Art. 7): each group's share of "
                     "the attention against the share its relevance earns, per group value (own-brand products, a "
                     "seller tier...), with what the group feature itself is worth when set alike for every "
                     "document; disparate treatment (Singh & Joachims 2018), expected exposure (Diaz et al. 2020) "
                     "and AWRF (TREC Fair Ranking 2021–22) beside it")),
        EvidenceKind("selection_rates", selection_rates.SelectionRatesOptions, "auditor.evidence.selection_rates",
                     "Scoring rates and impact ratios (bias audit)",
                     "Each category's share of individuals scoring above the median, and its impact ratio "
                     "(NYC Local Law 144).", f"{costs}:selection_rates", metrics=selection_rates.METRICS,
                     key_figures=f"{key}:selection_rates", limitations=f"{key}:selection_limitations",
                     readme=(
                     "the bias audit of a hiring ranker under NYC Local Law 144 (6 RCNY §5-301): per sex, "
                     "race/ethnicity and intersectional category (columns kept beside the data, never features), "
                     "the scoring rate (share above the sample's median score, or in a query's top k) and the impact "
                     "ratio to the highest category, with intervals, unknown counts and the categories under 2% "
                     "excluded with the reason; laid out as the published summary")),
        EvidenceKind("surrogate", surrogate.SurrogateOptions, "auditor.evidence.surrogate",
                     "Interpretable surrogate (ILMART)", "An ILMART twin of the model: effect curves and fidelity.",
                     f"{costs}:surrogate", metrics=surrogate.METRICS,
                     key_figures=f"{key}:surrogate", limitations=f"{key}:surrogate_limitations",
                     self_checks=("surrogate-low-fidelity",),
                     readme=(
                     "an interpretable ILMART twin of the model (Lucchese et al. 2022): main effects and pair "
                     "interactions plotted, how faithfully it ranks like the model, exact decomposition")),
    ):
        register(kind)


def metric_pattern(pattern: str) -> re.Pattern[str]:
    """A declared metric name as a regular expression: `{a|b.c}` is one of the alternatives (which may nest),
    `{name}` any one dotted segment (a k, a method, a feature, a group value), the rest literal. E.g.
    `local.{method}.{validity|completeness}.mean` or `ranking_quality.{ndcg@{k}|map}.mean`."""
    return re.compile(_regex(pattern))


def _regex(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] != "{":
            out.append(re.escape(pattern[i]))
            i += 1
            continue
        end = _closing(pattern, i)
        options = _split(pattern[i + 1:end])
        out.append("[^.]+" if len(options) == 1 and "{" not in options[0] else
                   "(?:" + "|".join(_regex(o) for o in options) + ")")
        i = end + 1
    return "".join(out)


def _expand(pattern: str) -> list[str]:
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    end = _closing(pattern, start)
    options = _split(pattern[start + 1:end])
    heads = [pattern[start:end + 1]] if len(options) == 1 and "{" not in options[0] else \
        [name for option in options for name in _expand(option)]
    return [pattern[:start] + head + tail for head in heads for tail in _expand(pattern[end + 1:])]


def _closing(pattern: str, start: int) -> int:
    depth = 0
    for i in range(start, len(pattern)):
        depth += {"{": 1, "}": -1}.get(pattern[i], 0)
        if depth == 0:
            return i
    raise ValueError(f"unbalanced braces in metric pattern {pattern!r}")


def _split(inner: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in inner:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "|" and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]



_builtins()
