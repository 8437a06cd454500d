"""The options models of the explainers that take options (the spec's `kernelshap:`, `lime:`, `greedy:`,
`search:`, `rankingshap:`, `rankshap:` sections of local_explanations, confidence and decision_path_accuracy).
Pure pydantic: importing this module loads no explainer and no ML library, so the spec can be validated without
them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from auditor.explain.listwise import ListwiseShap


class ExplainerOptions(BaseModel):
    """Base of an explainer's options: unknown keys are errors, values are frozen, types are strict."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


class KernelShapOptions(ExplainerOptions):
    nsamples: Annotated[int, Field(ge=10)] | Literal["auto"] = Field(
        "auto", description="Coalitions per document. auto: 2M + 2048 (shap's rule; M = the document's features that "
                            "differ from the background), or all 2^M − 2 (exact) when fewer; a number fixes it "
                            "(paper 000: 200, no better than random sets at 136 features).")
    agreement_floor: float = Field(
        0.6, ge=0, le=1, description="Convergence check: when two runs with fresh coalitions would choose explanation "
                                     "sets sharing less than this share of their features on average (jackknife "
                                     "estimate), the estimate is reported as still noisy.")
    background: Literal["masking", "sample"] = Field(
        "masking", description="`masking`: the masking replacement (one mean row by default); `sample`: rows "
                               "drawn from the background data.")
    background_size: int = Field(100, ge=1, description="Rows for background `sample`.")


class LimeOptions(ExplainerOptions):
    samples: int = Field(2000, ge=50, description="Perturbed samples per document (papers: 2000).")
    shared_samples: bool = Field(
        True, description="The top documents of a query share one set of draws (each still gets `samples` "
                          "samples from the same distribution): 5x fewer model rows. false: draws per document.")
    penalty: Literal["ridge", "lasso"] = Field("ridge", description="LIRME surrogate penalty.")
    exs_label: Literal["score", "topk", "rank"] = Field("score", description="EXS label mode.")
    exs_top_k: int = Field(5, ge=1, description="k of the EXS top-k and rank label modes.")
    exs_loss: Literal["auto", "epsilon_insensitive", "squared_epsilon_insensitive"] = Field(
        "auto", description="EXS SVR loss. auto: the paper's epsilon-insensitive loss for label `score`; squared "
                            "for `topk`/`rank`, where the L1 fit to mostly-zero labels is a constant (no explanation).")


CANDIDATES_DESCRIPTION = ("Features the search tries per query, on data with more features than this: the N with "
                          "the largest within-query TreeSHAP spread (tree models; not exact, measured to keep the "
                          "unscreened sets on 136 features up to k = 5). null: every feature. Features whose value "
                          "routes like the masking value for every document are free either way.")
CANDIDATES = 60  # on MQ2008 (46 features) any screen below 46 changed sets, so it never narrows below 60 features


class GreedyOptions(ExplainerOptions):
    pairs: int = Field(50, ge=1, description="Concordant pairs sampled per query (paper: 50 on MQ2008).")
    seeds: int = Field(3, ge=1, description="First features to restart from (paper: 3).")
    candidates: int | None = Field(CANDIDATES, ge=1, description=CANDIDATES_DESCRIPTION)


class SearchOptions(ExplainerOptions):
    beam: int = Field(5, ge=1, description="Sets kept per size in the beam search.")
    max_rows: int = Field(500_000, ge=1000, description="Model rows per query and k, at most.")
    candidates: int | None = Field(CANDIDATES, ge=1, description=CANDIDATES_DESCRIPTION)


class ListwiseShapOptions(ExplainerOptions):
    """Spec options of `rankingshap` / `rankshap` (listwise Shapley values, auditor/explain/listwise.py)."""

    estimator: Literal["auto", "exact", "kernel", "permutation"] = Field(
        "auto", description="auto: exact when at most `max_exact` features play, else kernel; exact; kernel "
                            "(KernelSHAP); permutation (antithetic pairs).")
    nsamples: Annotated[int, Field(ge=10)] | Literal["auto"] = Field(
        "auto", description="Coalitions for kernel/permutation. auto: 2M + 2048 (shap's rule).")
    max_exact: int = Field(12, ge=0, le=20, description="Exact Shapley values up to this many playing features.")
    cutoff: int | None = Field(10, ge=1, description="RankSHAP's nDCG cut-off (null: the whole list).")

    def build(self, objective: Literal["kendall", "ndcg"]) -> ListwiseShap:
        from auditor.explain.listwise import ListwiseShap

        return ListwiseShap(objective, estimator=self.estimator, nsamples=self.nsamples, max_exact=self.max_exact,
                            cutoff=self.cutoff)
