"""Every local explainer in one table: its name, label, kind, options, factory and capabilities.

`local_explanations`, `confidence` and `decision_path_accuracy` derive from it the choices their spec options
accept, the report labels, the explainer objects and the memo keys of shared work, so a new explainer is one module
in `auditor/explain/` plus one `Explainer` entry below (docs/architecture.md, "A new explainer").

Kinds:
- `attribution`: `attribute(model, query, docs, masker, rng) -> Attributions` (docs × F; `attribute_many` too when
  it `batches`). Each entry gives methods `<method><n>` for its `docs` counts: the explanation set is the top-k
  features by |attribution| of the top document (n = 1) or summed over the top n documents (paper 000).
  A listwise explainer (`per_document=False`: RankingSHAP, RankSHAP) returns one row for the whole query whatever
  the documents asked; its one method is its name and its set the top-k features of that row. It is left out of
  `decision_path_accuracy`, whose ground truth is per document.
- `selection`: `select(model, query, k, masker, rng) -> tuple[int, ...]`, the set itself; the method is its name.

Importing this module loads no explainer (factories import their module when called) and no ML library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from auditor.explain import costs
from auditor.explain.options import (
    ExplainerOptions,
    GreedyOptions,
    KernelShapOptions,
    LimeOptions,
    ListwiseShapOptions,
    SearchOptions,
)

if TYPE_CHECKING:
    from auditor.explain.base import LocalExplainer
    from auditor.explain.greedy import Variant
    from auditor.explain.listwise import Objective

Kind = Literal["attribution", "selection"]
OptionsT = TypeVar("OptionsT", bound=ExplainerOptions | None)  # an explainer's options model; None: it has none


def _always(options: object) -> bool:
    return True


@dataclass(frozen=True)
class Explainer(Generic[OptionsT]):
    """One explainer. `factory(options, scale)` builds it from its options section (None when it has none);
    `scale` < 1 asks for a shorter run with that share of the samples (confidence's stability rerun)."""

    name: str  # the registry key; attribution explainers: the name decision_path_accuracy's `explainers` takes
    label: str  # for the report ("KernelSHAP"); methods of an attribution explainer use `method_label`
    kind: Kind
    factory: Callable[[OptionsT, float], LocalExplainer]  # an AttributionExplainer or a SetExplainer, as `kind` says
    options: type[OptionsT] | None = None
    section: str | None = None  # the spec key its options live under (explainers may share one: `lime`)
    docs: tuple[int, ...] = ()  # attribution: top-document counts, one method each (shap1, shap5)
    method: str = ""  # attribution: the method prefix (default: name)
    method_label: str = ""  # attribution: label of a method, `{docs}` = its document count
    batches: bool = False  # has `attribute_many` (the samples of many queries scored in one model call)
    reusable: Callable[[OptionsT], bool] = _always  # with these options, attributions of the top n documents are the
    # first n rows of those of more top documents (its result for a document ignores the documents after it)
    deterministic: bool = False  # a second run with another seed gives the same result
    needs_trees: bool = False  # needs a tree model (exact TreeSHAP)
    baseline: bool = False  # a reference point (RANDOM), not an explanation anyone would rely on
    surrogate: bool = False  # a linear surrogate: coefficients per background std (contributions: coef·(x−μ)/σ)
    base_value: Literal["", "tree", "masking"] = ""  # additive: φ sums to score − φ0 (TreeSHAP's expected value;
    # the mean score of the masking rows)
    degenerate: str = ""  # what it means when a document gets no explanation ("" = never happens)
    degenerate_fix: str = ""
    fallback: str = ""  # the fallback some documents' fits may take ("" = none)
    per_document: bool = True  # attribution: one row per document asked; False: one row for the whole query
    # (listwise), one method named as the explainer, no decision-path comparison (its ground truth is per document)
    background_rows: bool = False  # selection: plays validity under an item's background rows (value-averaged
    # masking, `local_explanations.background_rows`) instead of the audit's masking
    by_default: bool = True  # among the methods an item runs when the spec lists none (costly newcomers: opt-in)
    steps: bool = False  # selection: its rows come in search steps (a set plus each candidate feature), which score
    # as families off the trees, faster than other masked rows (`Shape.search_rows_per_second`)
    # model rows for one query, and seconds of its own fit per document (auditor/explain/costs.py): required, so no
    # explainer goes uncosted; the cost model reads these and never an explainer's name
    cost: Callable[[Any, Any, int, float, list[int]], float] = field(kw_only=True)
    fit: Callable[[Any, int], float] | None = field(default=None, kw_only=True)

    def build(self, settings: object, *, scale: float = 1.0) -> LocalExplainer:
        """The explainer configured by `settings` (an evidence item's options, which hold every section)."""
        return self.factory(self.settings(settings), scale)

    def settings(self, settings: object) -> OptionsT:
        """This explainer's options section of an evidence item's options, or None. (The item's options model has
        a field per registry section, added by `evidence.explainers.with_sections`: hence the cast.)"""
        return cast(OptionsT, getattr(settings, self.section) if self.section is not None else None)

    def config(self, settings: object) -> str:
        """What its output depends on besides query, documents and stream, as a memo key part."""
        section = self.settings(settings)
        return section.model_dump_json() if section is not None else ""


@dataclass(frozen=True)
class Method:
    """A choice in the spec's `methods:` lists: a selection explainer, or an attribution explainer with the number
    of top documents whose attributions make the set."""

    name: str
    label: str
    explainer: Explainer[Any]
    docs: int = 0  # attribution: top documents summed; 0 for a selection explainer

    @property
    def attribution(self) -> bool:
        return self.explainer.kind == "attribution"


# --- factories: each imports its explainer module only when called -------------------------------------------

def _scaled(count: int, scale: float, least: int) -> int:
    return count if scale >= 1 else max(least, int(count * scale))


def _kernelshap(o: KernelShapOptions, scale: float) -> LocalExplainer:
    from auditor.explain.kernelshap import KernelShap

    nsamples = o.nsamples if o.nsamples == "auto" else _scaled(o.nsamples, scale, 10)
    return KernelShap(nsamples=nsamples, background=o.background, background_size=o.background_size,
                      scale=scale if o.nsamples == "auto" else 1.0)


def _treeshap(o: None, scale: float) -> LocalExplainer:
    from auditor.explain.treeshap import TreeShap

    return TreeShap()


def _lirme(o: LimeOptions, scale: float) -> LocalExplainer:
    from auditor.explain.lirme import Lirme

    return Lirme(n_samples=_scaled(o.samples, scale, 50), penalty=o.penalty, shared_samples=o.shared_samples)


def _exs(o: LimeOptions, scale: float) -> LocalExplainer:
    from auditor.explain.exs import Exs

    loss = o.exs_loss if o.exs_loss != "auto" else \
        "epsilon_insensitive" if o.exs_label == "score" else "squared_epsilon_insensitive"
    return Exs(n_samples=_scaled(o.samples, scale, 50), label=o.exs_label, top_k=o.exs_top_k, loss=loss,
               shared_samples=o.shared_samples)


def _background_search(o: SearchOptions, scale: float) -> LocalExplainer:
    from auditor.explain.listwise import BackgroundValiditySearch

    return BackgroundValiditySearch(beam=o.beam, max_rows=o.max_rows)


def _listwise(objective: Objective) -> Callable[[ListwiseShapOptions, float], LocalExplainer]:
    def make(o: ListwiseShapOptions, scale: float) -> LocalExplainer:
        from auditor.explain.listwise import ListwiseShap

        nsamples = o.nsamples if o.nsamples == "auto" else _scaled(o.nsamples, scale, 10)
        return ListwiseShap(objective, estimator=o.estimator, nsamples=nsamples, max_exact=o.max_exact,
                            cutoff=o.cutoff)
    return make


def _random(o: None, scale: float) -> LocalExplainer:
    from auditor.explain.search import RandomSet

    return RandomSet()


def _greedy(variant: Variant) -> Callable[[GreedyOptions, float], LocalExplainer]:
    def make(o: GreedyOptions, scale: float) -> LocalExplainer:
        from auditor.explain.greedy import Greedy

        return Greedy(variant, n_pairs=_scaled(o.pairs, scale, 1), seeds=o.seeds, candidates=o.candidates)
    return make


def _validity_search(o: SearchOptions, scale: float) -> LocalExplainer:
    from auditor.explain.search import ValiditySearch

    return ValiditySearch(beam=o.beam, max_rows=o.max_rows, candidates=o.candidates)


# --- the registry, in the order of paper 000's Table 2, then the rest, then ours -----------------------------------

# Each entry is typed by its options model (the factory and `reusable` take that model); the table holds them all.
EXPLAINERS: dict[str, Explainer[Any]] = {e.name: e for e in (
    Explainer("random", "RANDOM", "selection", _random, baseline=True, cost=costs.no_rows),
    Explainer("kernelshap", "KernelSHAP", "attribution", _kernelshap, KernelShapOptions, "kernelshap", docs=(1, 5),
              method="shap", method_label="SHAP-{docs} (KernelSHAP)", base_value="masking", cost=costs.kernelshap,
              fit=costs.kernelshap_fit),
    Explainer("treeshap", "TreeSHAP", "attribution", _treeshap, docs=(1, 5), method_label="TreeSHAP-{docs}",
              deterministic=True, needs_trees=True, base_value="tree", cost=costs.treeshap),
    Explainer("lirme", "LIRME", "attribution", _lirme, LimeOptions, "lime", docs=(1, 5), method_label="LIRME-{docs}",
              batches=True, surrogate=True, cost=costs.lime, fit=costs.lirme_fit),
    # EXS with per-document draws labels each document on a shift taken from all drawn scores: not reusable
    Explainer("exs", "EXS", "attribution", _exs, LimeOptions, "lime", docs=(1, 5), method_label="EXS-{docs}",
              batches=True, reusable=lambda o: o.shared_samples, surrogate=True,
              degenerate="a constant surrogate", degenerate_fix="A squared loss (`lime.exs_loss`) avoids this.",
              fallback="liblinear, when the exact L1 solution could not be certified",
              cost=costs.lime, fit=costs.exs_fit),
    Explainer("greedy", "GREEDY", "selection", _greedy("greedy"), GreedyOptions, "greedy", steps=True,
              cost=costs.greedy),
    Explainer("greedy_cover", "GREEDY-COVER", "selection", _greedy("greedy_cover"), GreedyOptions, "greedy",
              steps=True, cost=costs.greedy),
    Explainer("greedy_cover_eps", "GREEDY-COVER-ε", "selection", _greedy("greedy_cover_eps"), GreedyOptions,
              "greedy", steps=True, cost=costs.greedy),
    Explainer("validity_search", "Validity search", "selection", _validity_search, SearchOptions, "search",
              deterministic=True, steps=True, cost=costs.validity_search),
    Explainer("background_search", "Validity search, background rows", "selection", _background_search,
              SearchOptions, "search", deterministic=True, background_rows=True, by_default=False,
              cost=costs.background_search),
    # listwise Shapley values of the query's ranking (issue 26): one row a query, opt-in (2^M coalitions a query)
    Explainer("rankingshap", "RankingSHAP (listwise)", "attribution", _listwise("kendall"), ListwiseShapOptions,
              "rankingshap", docs=(1,), per_document=False, by_default=False, cost=costs.listwise("rankingshap")),
    Explainer("rankshap", "RankSHAP (listwise)", "attribution", _listwise("ndcg"), ListwiseShapOptions, "rankshap",
              docs=(1,), per_document=False, by_default=False, cost=costs.listwise("rankshap")),
)}


def methods() -> dict[str, Method]:
    """Every method the spec's `methods:` lists accept, by name, in registry order."""
    out: dict[str, Method] = {}
    for e in EXPLAINERS.values():
        if e.kind == "attribution" and not e.per_document:
            out[e.name] = Method(e.name, e.label, e, 1)
        elif e.kind == "attribution":
            for n in e.docs:
                name = f"{e.method or e.name}{n}"
                out[name] = Method(name, (e.method_label or f"{e.label}-{{docs}}").format(docs=n), e, n)
        else:
            out[e.name] = Method(e.name, e.label, e)
    return out


def default_methods() -> list[str]:
    """The methods an item runs when its spec lists none: every method but the opt-in ones."""
    return [name for name, m in methods().items() if m.explainer.by_default]


def method(name: str) -> Method:
    return methods()[name]


def attribution_explainers() -> list[Explainer[Any]]:
    return [e for e in EXPLAINERS.values() if e.kind == "attribution"]


def sections(kinds: Iterable[Kind] = ("attribution", "selection")) -> dict[str, type[ExplainerOptions]]:
    """The options sections of the explainers of these kinds, `{spec key: options model}`, in registry order."""
    kinds = set(kinds)
    return {e.section: e.options for e in EXPLAINERS.values()
            if e.kind in kinds and e.section is not None and e.options is not None}


def label(name: str) -> str:
    """The report label of a method or an explainer."""
    found = methods().get(name)
    return found.label if found is not None else EXPLAINERS[name].label


def check_names(values: list[str], allowed: list[str], what: str) -> list[str]:
    """The names unique, in the given order; an unknown one is a ValueError naming the nearest (spec message form:
    `problem; fix`)."""
    import difflib

    for value in values:
        if value not in allowed:
            near = difflib.get_close_matches(value, allowed, n=1)
            raise ValueError(f"unknown {what} '{value}'; " + (f"did you mean '{near[0]}'?" if near else
                                                              f"one of {', '.join(allowed)}"))
    return list(dict.fromkeys(values))
