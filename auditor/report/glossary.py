"""The words and works a report relies on: a glossary for the non-specialist reader and the full references that
the evidence sections cite by author and year. Plain data, so the report, the docs and a test read the same list.
"""

from __future__ import annotations

import json

from auditor.evidence.document import EvidenceDocument

# (term, definition) in the order a reader meets them; terms are matched case-sensitively by the test that
# checks every explainer the registry offers has an entry.
GLOSSARY: list[tuple[str, str]] = [
    ("Query, document", "A query is one search or listing page; its documents are the items the model ranks for it "
                        "(products, offers, web pages). Every measure is computed per query first."),
    ("Feature, parameter", "An input the model reads about a document (price, rating, text match...). The law "
                           "calls the features that decide the order the main parameters."),
    ("Main parameters", "The fewest features that together carry 80% of what orders documents within queries "
                        "(within-query importance)."),
    ("Within-query importance", "How much a feature changes the order of documents inside a query: its "
                                "contribution minus the query's average contribution. A feature that moves every "
                                "document of a query equally changes no ranking."),
    ("nDCG@k", "Normalised discounted cumulative gain of the first k results: 1 means the most relevant documents "
               "are on top, in order; lower values mean relevant documents sit lower down."),
    ("MAP", "Mean average precision: the precision at each relevant document's rank, averaged."),
    ("95% interval", "The range that holds the true value with 95% confidence, from re-drawing the audited queries "
                     "(bootstrap). A rule passes only when its whole interval meets the requirement."),
    ("Inconclusive", "A rule whose 95% interval crosses its threshold: the audited sample cannot tell whether the "
                     "requirement is met. Reported as WARN."),
    ("Detection", "A problem the evidence found (an undeclared main parameter, an effect of paid placement, "
                  "explanations no better than chance...). Listed even when no rule of the applied packs judges it."),
    ("SHAP", "Shapley additive explanations: each feature's share of a document's score, from cooperative game "
             "theory; the shares add up to the score (Lundberg & Lee 2017)."),
    ("TreeSHAP", "The exact SHAP values of a tree model, read from its trees (Lundberg et al. 2020). TreeSHAP-1 "
                 "explains the top document, TreeSHAP-5 the top five."),
    ("KernelSHAP (SHAP-1, SHAP-5)", "SHAP values estimated for any model by scoring documents with features "
                                   "switched off; SHAP-1 explains the top document, SHAP-5 the top five "
                                   "(Lundberg & Lee 2017; as used by Singh et al. 2020)."),
    ("LIRME", "A local linear surrogate of the model's score around a document, fitted to perturbed copies of it "
              "(Verma & Ganguly 2019)."),
    ("EXS", "A local linear surrogate (support-vector regression) of a document's score or rank, fitted to "
            "perturbed copies of it (Singh & Anand 2019)."),
    ("GREEDY, GREEDY-COVER, GREEDY-COVER-ε", "Searches for the few features that keep the model's order of "
                                             "document pairs when the others are masked (Singh et al. 2020, "
                                             "Algorithms 1 and 2)."),
    ("Validity search", "This tool's search for the k features with the highest validity, with restarts; compared "
                        "with the exhaustive optimum where that is affordable."),
    ("RANDOM", "Randomly chosen feature sets: the floor any explainer must beat."),
    ("RankingSHAP, RankSHAP (listwise)", "One Shapley value per feature for the whole ranking of a query: how much "
                                         "the feature contributes to keeping the model's order, by Kendall's tau "
                                         "(Heuss et al. 2025), or its top positions, by an nDCG-like value "
                                         "(Chowdhury et al. 2025), when the other features are masked."),
    ("Background rows", "Masking by each of N rows of the reference data in turn instead of its mean, and averaging: "
                        "how the listwise papers measure validity. The best feature set depends on the masking."),
    ("Masking", "Replacing a feature's value by a neutral one (the reference data's mean by default) to see what "
                "the model does without it."),
    ("Validity", "How well the explanation's features alone reproduce the query's ranking: Kendall's tau between "
                 "the model's order and the order with every other feature masked (1 = the same order, 0 = no "
                 "relation) (Singh et al. 2020)."),
    ("Completeness", "How much of the ranking is lost when the explanation's features are masked: minus Kendall's "
                     "tau between the model's order and the order without them. High values mean the explanation "
                     "holds what matters; negative values mean the order without them still agrees with the "
                     "model's."),
    ("Kendall's tau", "Rank correlation: the share of document pairs in the same order minus the share in the "
                      "opposite order (tau-b corrects for ties). 1 = identical order, 0 = unrelated, -1 = reversed."),
    ("Decision-path ground truth", "For tree models, the importance of each feature read from the paths a document "
                                   "takes through the trees (value change along the path, or split counts), "
                                   "against which explainers are checked (Rahnama & Bütepage 2022)."),
    ("Spearman, Euclidean similarity, top-K AUC", "Agreement between an explainer's attributions and the ground "
                                                  "truth: rank correlation, closeness of the normalised vectors, and "
                                                  "how well the explainer finds the K most important features."),
    ("ASIPair, RAIPair", "Explanations of why one document is ranked above another: Shapley values of the score "
                         "margin (ASIPair), or a sampled recovery of them for many features (RAIPair) (Huai et al. "
                         "2020)."),
    ("ILMART, surrogate", "An interpretable ranking model made of per-feature effects and a few pairwise "
                          "interactions (Lucchese et al. 2022), trained here to imitate the audited model; its "
                          "fidelity says how well it does."),
    ("Fidelity", "How closely the surrogate ranks like the audited model (Kendall's tau within queries)."),
    ("Sensitive parameter, rank shift", "A feature such as paid placement whose influence must be described; the "
                                        "rank shift is how many positions a document gains or loses from it."),
    ("Exposure, merit share", "A group's share of the users' attention, which falls with the position (Singh & "
                              "Joachims 2018), and the share its relevance earns (Diaz et al. 2020); their ratio is 1 "
                              "when the group gets what its relevance earns."),
    ("Self-preferencing", "Ranking a platform's own products above what their relevance earns; the audit re-ranks "
                          "with the own-product flag set alike for every document to measure it (DMA Art. 6(5), "
                          "P2B Art. 7)."),
    ("Low-confidence explanation", "An explanation this audit flags as not to be relied on, with the reason "
                                   "(low validity, disagreement between explainers, instability, near-tied "
                                   "scores...)."),
    ("LambdaMART", "A gradient-boosted tree model trained to rank (Burges 2010); LightGBM's `lambdarank`."),
    ("Waiver", "An approved, dated exception that turns a rule's FAIL into WAIVED until it expires."),
    ("PSI", "Population stability index: how much a feature's distribution moved between two audits (below 0.1 "
            "stable, above 0.25 a major shift)."),
]

IMPORTANCE = ("global_importance.", "disclosure.", "surrogate.", "local.", "pairwise.", "decision_path.")
# term → metric-name prefixes of which one must be measured in the audit for the term to be in its glossary (issue 56:
# a report defines only what it uses); terms not named here are used by every report
NEEDS: dict[str, tuple[str, ...]] = {
    "Main parameters": ("global_importance.", "disclosure."),
    "Within-query importance": ("global_importance.", "disclosure.", "surrogate."),
    "nDCG@k": ("ranking_quality.", "surrogate.", "local.rankshap"),
    "MAP": ("ranking_quality.",),
    "SHAP": ("global_importance.", "local.", "decision_path.", "pairwise.", "confidence."),
    "TreeSHAP": ("global_importance.", "local.treeshap", "decision_path.treeshap", "confidence.treeshap"),
    "KernelSHAP (SHAP-1, SHAP-5)": ("local.shap", "local.kernelshap", "decision_path.kernelshap", "confidence.shap"),
    "LIRME": ("local.lirme", "decision_path.lirme", "confidence.lirme"),
    "EXS": ("local.exs", "decision_path.exs", "confidence.exs"),
    "GREEDY, GREEDY-COVER, GREEDY-COVER-ε": ("local.greedy", "confidence.greedy"),
    "Validity search": ("local.validity_search", "confidence.validity_search"),
    "RANDOM": ("local.random",),
    "RankingSHAP, RankSHAP (listwise)": ("local.rankingshap", "local.rankshap"),
    "Background rows": ("local.",),
    "Masking": ("local.", "influence.", "confidence.", "exposure.", "pairwise.", "global_importance."),
    "Validity": ("local.", "confidence."),
    "Completeness": ("local.",),
    "Decision-path ground truth": ("decision_path.",),
    "Spearman, Euclidean similarity, top-K AUC": ("decision_path.",),
    "ASIPair, RAIPair": ("pairwise.",),
    "ILMART, surrogate": ("surrogate.", "disclosure.measured_on_surrogate"),
    "Fidelity": ("surrogate.",),
    "Sensitive parameter, rank shift": ("influence.",),
    "Exposure, merit share": ("exposure.",),
    "Self-preferencing": ("exposure.",),
    "Low-confidence explanation": ("confidence.",),
    "Kendall's tau": ("local.", "confidence.", "surrogate.", "disclosure."),
}


def measured(document: EvidenceDocument) -> set[str]:
    """Every metric name the audit measured (evidence items that produced results)."""
    return {name for item in document.evidence.values() if item.measured for name in item.metrics}


def uses(metrics: set[str], prefixes: tuple[str, ...]) -> bool:
    return any(name.startswith(prefixes) for name in metrics)


def glossary_for(document: EvidenceDocument) -> list[tuple[str, str]]:
    """The glossary of this report: the terms of the evidence that ran, and the words every report uses."""
    metrics = measured(document)
    used = {  # words of the report's other parts, there only when those parts are
        "Waiver": bool(document.waivers) or any(f.status == "WAIVED" for f in document.findings),
        "PSI": "psi" in json.dumps(document.since_last_review or {}, default=str).casefold(),
    }
    return [(term, meaning) for term, meaning in GLOSSARY
            if used.get(term, True) and (term not in NEEDS or uses(metrics, NEEDS[term]))]


# key → (in-text citation, full reference). Keys are what evidence text and docs cite.
REFERENCES: dict[str, tuple[str, str]] = {
    "singh2020": ("Singh et al. 2020", "Singh, J., Wang, Z., Khosla, M., Anand, A. (2020). Valid Explanations for "
                                       "Learning to Rank Models. arXiv:2004.13972."),
    "rahnama2022": ("Rahnama & Bütepage 2022", "Akhavan Rahnama, A. H., Bütepage, J. (2022). Evaluating Local "
                                               "Model-Agnostic Explanations of Learning to Rank Models with "
                                               "Decision Paths. arXiv:2203.02295."),
    "lucchese2022": ("Lucchese et al. 2022", "Lucchese, C., Nardini, F. M., Orlando, S., Perego, R., Veneri, A. "
                                             "(2022). ILMART: Interpretable Ranking with Constrained LambdaMART. "
                                             "Proc. SIGIR 2022, 2255–2259."),
    "huai2020": ("Huai et al. 2020", "Huai, M., Wang, D., Miao, C., Zhang, A. (2020). Towards Interpretation of "
                                     "Pairwise Learning. Proc. AAAI-20, 34(4), 4166–4173."),
    "lundberg2017": ("Lundberg & Lee 2017", "Lundberg, S. M., Lee, S.-I. (2017). A Unified Approach to "
                                            "Interpreting Model Predictions. Advances in Neural Information "
                                            "Processing Systems 30 (NIPS 2017)."),
    "lundberg2020": ("Lundberg et al. 2020", "Lundberg, S. M., Erion, G., Chen, H., et al. (2020). From local "
                                             "explanations to global understanding with explainable AI for trees. "
                                             "Nature Machine Intelligence 2, 56–67."),
    "heuss2025": ("Heuss et al. 2025", "Heuss, M., de Rijke, M., Anand, A. (2025). RankingSHAP – Faithful "
                                        "Listwise Feature Attribution Explanations for Ranking Models. Proc. SIGIR "
                                        "2025."),
    "chowdhury2025": ("Chowdhury et al. 2025", "Chowdhury, T., Zick, Y., Allan, J. (2025). RankSHAP: Shapley "
                                               "Value Based Feature Attributions for Learning to Rank. Proc. ICLR "
                                               "2025. arXiv:2405.01848."),
    "verma2019": ("Verma & Ganguly 2019", "Verma, M., Ganguly, D. (2019). LIRME: Locally Interpretable Ranking "
                                          "Model Explanation. Proc. SIGIR 2019, 1281–1284."),
    "singh2019": ("Singh & Anand 2019", "Singh, J., Anand, A. (2019). EXS: Explainable Search Using Local Model "
                                        "Agnostic Interpretability. Proc. WSDM 2019, 770–773."),
    "beutel2019": ("Beutel et al. 2019", "Beutel, A., Chen, J., Doshi, T., Qian, H., Wei, L., Wu, Y., Heldt, L., "
                                         "Zhao, Z., Hong, L., Chi, E. H., Goodrow, C. (2019). Fairness in "
                                         "Recommendation Ranking through Pairwise Comparisons. Proc. KDD 2019, "
                                         "2212–2220."),
    "burges2010": ("Burges 2010", "Burges, C. J. C. (2010). From RankNet to LambdaRank to LambdaMART: An "
                                  "Overview. Microsoft Research Technical Report MSR-TR-2010-82."),
    "jarvelin2002": ("Järvelin & Kekäläinen 2002", "Järvelin, K., Kekäläinen, J. (2002). Cumulated gain-based "
                                                    "evaluation of IR techniques. ACM Transactions on Information "
                                                    "Systems 20(4), 422–446."),
    "kendall1945": ("Kendall 1945", "Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika "
                                    "33(3), 239–251."),
    "efron1993": ("Efron & Tibshirani 1993", "Efron, B., Tibshirani, R. J. (1993). An Introduction to the "
                                             "Bootstrap. Chapman & Hall."),
    "singh2018": ("Singh & Joachims 2018", "Singh, A., Joachims, T. (2018). Fairness of Exposure in Rankings. "
                                           "Proc. KDD 2018, 2219–2228. doi:10.1145/3219819.3220088."),
    "diaz2020": ("Diaz et al. 2020", "Diaz, F., Mitra, B., Ekstrand, M. D., Biega, A. J., Carterette, B. (2020). "
                                     "Evaluating Stochastic Rankings with Expected Exposure. Proc. CIKM 2020, "
                                     "275–284. doi:10.1145/3340531.3411962."),
    "trecfair2021": ("TREC Fair Ranking 2021–22", "Ekstrand, M. D., McDonald, G., Raj, A., Johnson, I. (2022). "
                                               "Overview of the TREC 2021 Fair Ranking Track. Proc. TREC 2021, NIST "
                                               "Special Publication 500-335; and Overview of the TREC 2022 Fair "
                                               "Ranking Track (2023), Proc. TREC 2022, NIST SP 500-338."),
    "moffat2008": ("Moffat & Zobel 2008", "Moffat, A., Zobel, J. (2008). Rank-biased precision for measurement of "
                                          "retrieval effectiveness. ACM TOIS 27(1), 2:1–2:27."),
    "craswell2008": ("Craswell et al. 2008", "Craswell, N., Zoeter, O., Taylor, M., Ramsey, B. (2008). An "
                                             "experimental comparison of click position-bias models. Proc. WSDM "
                                             "2008, 87–94."),
    "chapelle2009": ("Chapelle et al. 2009", "Chapelle, O., Metzler, D., Zhang, Y., Grinspan, P. (2009). Expected "
                                             "reciprocal rank for graded relevance. Proc. CIKM 2009, 621–630."),
    "p2b": ("P2B Regulation", "Regulation (EU) 2019/1150 of 20 June 2019 on promoting fairness and transparency for "
                              "business users of online intermediation services, OJ L 186, 11.7.2019; and the "
                              "Commission's Guidelines on ranking transparency, 2020/C 424/01."),
    "dsa": ("Digital Services Act", "Regulation (EU) 2022/2065 of 19 October 2022 on a Single Market for Digital "
                                    "Services, OJ L 277, 27.10.2022."),
    "dma": ("Digital Markets Act", "Regulation (EU) 2022/1925 of 14 September 2022 on contestable and fair markets "
                                   "in the digital sector, OJ L 265, 12.10.2022."),
    "aiact": ("AI Act", "Regulation (EU) 2024/1689 of 13 June 2024 laying down harmonised rules on artificial "
                        "intelligence, OJ L, 2024/1689, 12.7.2024."),
    "ll144": ("NYC Local Law 144", "New York City Local Law 144 (2021), Administrative Code §§ 20-870 to 20-874, "
                                   "automated employment decision tools; and its rules, 6 RCNY §§ 5-300 to 5-304 "
                                   "(Department of Consumer and Worker Protection, in force 5.7.2023)."),
    "ugesp": ("Uniform Guidelines", "Uniform Guidelines on Employee Selection Procedures (1978), 29 CFR Part 1607; "
                                    "§ 1607.4(D): the four-fifths rule."),
}
# what else names a law in a report: its number, in a rule's citation ("Reg. (EU) 2019/1150 Art. 5(1)")
LAW_NUMBERS = {"p2b": "2019/1150", "dsa": "2022/2065", "dma": "2022/1925", "aiact": "2024/1689", "ll144": "RCNY",
               "ugesp": "1607"}


def cite(key: str) -> str:
    """The in-text citation of a reference ("Singh et al. 2020")."""
    return REFERENCES[key][0]
