"""ShaRP's rank attributions beside our listwise ones on the bookstore (issue 26; docs/reproductions/listwise.md).

    .venv/bin/pip install -e ".[bench]"    # xai-sharp (MIT): a benchmark peer only, not a dependency of the audit
    .venv/bin/python benchmarks/sharp_bookstore.py [--queries 4] [--docs 1] [--sample-size 10]

ShaRP (Pliatsika et al., PVLDB 2025; PyPI `xai-sharp`) explains one document's *rank* within a set: the Shapley
value of each feature for the rank QoI, features outside a coalition taken from other documents of the set
(`sample_size` of them). Ours explains the query's whole *ordering* (RankingSHAP: Kendall tau; exact, 12
features). Different questions about the same model and query, so the comparison is of which features each names:
per query, ShaRP's |values| averaged over the top `--docs` documents against |RankingSHAP| — the overlap of their
top-3 features and Spearman's rank correlation over all features — and the seconds each takes. RankingSHAP is run
under the audit's mean masking and under the query's own documents as background rows (value-averaged), the latter
being the replacement distribution ShaRP uses.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.checks.validity import has_order  # noqa: E402
from auditor.explain.base import QueryView  # noqa: E402
from auditor.explain.listwise import ListwiseShap, RowMasker  # noqa: E402
from auditor.inputs.data import load_ranking_data  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from auditor.models.lightgbm import load_lightgbm  # noqa: E402
from auditor.models.masking import Masker  # noqa: E402
from benchmarks import smoke  # noqa: E402


def top3(values: np.ndarray) -> set[int]:
    return {int(f) for f in np.lexsort((np.arange(values.size), -np.abs(values)))[:3]}


def sharp_values(inner, query: QueryView, docs: int, sample_size: int) -> tuple[np.ndarray, float] | None:
    """ShaRP's |values| averaged over the query's top `docs` documents, and its seconds; None without xai-sharp."""
    try:
        from sharp import ShaRP
    except ImportError:
        return None
    xai = ShaRP(qoi="rank", target_function=inner.predict, measure="shapley", sample_size=sample_size,
                random_state=0, n_jobs=1)
    xai.fit(query.X)
    start = time.perf_counter()
    values = np.mean([np.abs(xai.individual(int(d), query.X)) for d in query.top_docs(docs)], axis=0)
    return values, time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=4)
    parser.add_argument("--docs", type=int, default=1, help="top documents whose rank ShaRP explains, per query")
    parser.add_argument("--sample-size", type=int, default=10, help="ShaRP's sample_size (documents per coalition)")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:  # one query of the committed example
        args.queries, args.sample_size = 1, 3
    if importlib.util.find_spec("sharp") is None:
        print(smoke.skipped("ShaRP's columns", "xai-sharp") + "; ours alone follows\n")

    folder = ROOT / "examples" / "bookstore"
    inner = load_lightgbm(folder / "model.txt")
    model = CountingRanker(inner)
    test = load_ranking_data(folder / "test.csv", query_column="qid", label_column="label", doc_id_column="doc_id")
    train = load_ranking_data(folder / "train.csv", query_column="qid", label_column="label",
                              doc_id_column="doc_id")
    masker = Masker.from_background(train.X, "mean")
    scores = model.predict(test.X)
    chosen = [qi for qi in range(test.n_queries) if has_order(scores[test.query_slice(qi)])][: args.queries]
    names = test.feature_names
    print(f"Bookstore: {len(chosen)} queries, {test.n_features} features; ShaRP rank QoI (exact Shapley measure, "
          f"sample_size {args.sample_size}) on the top {args.docs} document(s) of each.\n")
    print("| query | docs | RankingSHAP top 3 (mean masking) | ShaRP top 3 | top-3 overlap, mean masking | "
          "Spearman, mean masking | top-3 overlap, query rows | Spearman, query rows | ShaRP s | ours s |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|")
    overlaps, rhos, overlaps_rows, rhos_rows = [], [], [], []
    for qi in chosen:
        s = test.query_slice(qi)
        X = test.X[s]
        query = QueryView(X=X, scores=scores[s], query_id=test.query_ids[qi], background=train.X)
        start = time.perf_counter()
        ours = ListwiseShap("kendall", estimator="exact").explain(model, query, masker, np.random.default_rng(0))
        rows = ListwiseShap("kendall", estimator="exact").explain(model, query, RowMasker(X),
                                                                 np.random.default_rng(0))
        ours_seconds = (time.perf_counter() - start) / 2
        ours_top = ", ".join(names[f] for f in sorted(top3(ours.values)))
        peer = sharp_values(inner, query, args.docs, args.sample_size)
        if peer is None:
            print(f"| {query.query_id} | {query.n_docs} | {ours_top} | — | — | — | — | — | — | {ours_seconds:.2f} |")
            continue
        theirs, sharp_seconds = peer
        overlap, rho = len(top3(ours.values) & top3(theirs)) / 3, spearmanr(np.abs(ours.values), theirs)[0]
        overlap_rows = len(top3(rows.values) & top3(theirs)) / 3
        rho_rows = spearmanr(np.abs(rows.values), theirs)[0]
        overlaps.append(overlap)
        rhos.append(rho)
        overlaps_rows.append(overlap_rows)
        rhos_rows.append(rho_rows)
        print(f"| {query.query_id} | {query.n_docs} | {ours_top} | "
              f"{', '.join(names[f] for f in sorted(top3(theirs)))} | {overlap:.2f} | {rho:.2f} | "
              f"{overlap_rows:.2f} | {rho_rows:.2f} | {sharp_seconds:.1f} | {ours_seconds:.2f} |")
    if overlaps:
        print(f"\nMean: top-3 overlap {np.mean(overlaps):.2f} (query rows {np.mean(overlaps_rows):.2f}), Spearman "
              f"{np.nanmean(rhos):.2f} (query rows {np.nanmean(rhos_rows):.2f}).")


if __name__ == "__main__":
    main()
