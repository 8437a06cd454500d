"""Set searches for validity under background rows, judged on rows they never saw (issue 38, goal 5).

    .venv/bin/python benchmarks/background_search.py [--queries 40] [--seed 0] [--k 5] [--skip-peer]

MQ2008 Fold1 test (../shared/data or $AUDITOR_DATA; the LambdaMART of examples/mq2008), the seeded query sample of
`listwise_mq2008.py` (same seed, same draws): the searches may use 100 *search* rows drawn from training ([seed, 1]);
every set is then judged on 100 other *evaluation* rows ([seed, 2]) by the peers' own validity function, written
here from the RankingSHAP repository (`evaluation/evaluate_explanations.py`: each removed feature replaced by each
row, the masked scores turned into ranks by `argsort()[::-1]` — ties broken by position —, scipy's Kendall tau
against the model's ranks, averaged over rows). Model rows are what each search scored (our `CountingRanker`); for
the peer's greedy search, the rows its code scores (every candidate: the query once, then the documents under each
of the 100 rows twice, for validity and completeness), though here only validity is computed (same choice).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from auditor.explain.base import QueryView  # noqa: E402
from auditor.explain.greedy import Greedy  # noqa: E402
from auditor.explain.listwise import (  # noqa: E402
    BackgroundValiditySearch,
    expected_validity,
)
from auditor.explain.search import ValiditySearch  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from benchmarks import smoke  # noqa: E402


def rank_list(vector: np.ndarray) -> np.ndarray:
    """The peers' ranks: 1 for the highest score, ties broken by `argsort` (their `utils/helper_functions.py`)."""
    temp = vector.argsort()[::-1]
    ranks = np.empty_like(temp)
    ranks[temp] = np.arange(1, len(vector) + 1)
    return ranks


def peer_validity(predict, X: np.ndarray, kept: tuple[int, ...], rows: np.ndarray) -> float:
    """Validity as the peers compute it: mean over `rows` of tau(ranks with only `kept` kept, the model's ranks)."""
    mask = np.zeros(X.shape[1], dtype=bool)
    mask[list(kept)] = True
    reference = rank_list(predict(X))
    masked = np.where(mask, X[None, :, :], rows[:, None, :])  # rows × documents × features
    scores = predict(masked.reshape(-1, X.shape[1])).reshape(rows.shape[0], X.shape[0])
    return float(np.mean([kendalltau(rank_list(s), reference)[0] for s in scores]))


def peer_greedy(predict, X: np.ndarray, k: int, rows: np.ndarray) -> tuple[tuple[int, ...], int]:
    """The RankingSHAP repository's GreedyListwise (`approaches/greedy_listwise.py`): k forward steps, each adding
    the feature whose set has the highest peer validity under `rows` (strictly greater wins: ties to the lower
    index). Returns the set and the rows the peer's code scores for it."""
    chosen: list[int] = []
    remaining = list(range(X.shape[1]))
    rows_scored = 0
    for _ in range(k):
        best, best_value = remaining[0], -np.inf
        for f in remaining:
            value = peer_validity(predict, X, (f, *chosen), rows)
            rows_scored += X.shape[0] * (1 + 2 * rows.shape[0])
            if value > best_value:
                best, best_value = f, value
        chosen.append(best)
        remaining.remove(best)
    return tuple(chosen), rows_scored


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--skip-peer", action="store_true", help="leave out the peer's greedy search (slow)")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    from listwise_mq2008 import mq2008_sample

    with smoke.workdir(args.smoke) as tmp:
        ctx, train_rows, search_rows, held_out, _, chosen = mq2008_sample(
            1 if args.smoke else args.queries, args.seed, tmp, 10 if args.smoke else 100)
    data, masker, scores = ctx.data, ctx.masker(), ctx.scores()
    eval_rows = held_out.fill
    model = ctx.model
    predict = model.inner.predict  # uncounted: the judging is not part of any search's cost
    methods = {
        "Validity search (mean row)": lambda q: ValiditySearch().select(model, q, args.k, masker,
                                                                        np.random.default_rng(0)),
        "GREEDY-COVER-ε (mean row)": lambda q: Greedy("greedy_cover_eps").select(
            model, q, args.k, masker, np.random.default_rng([args.seed, 6])),
        "Background search, every set on every row (first 100, swaps over all features), beam 2":
            lambda q: BackgroundValiditySearch(beam=2, max_rows=2_000_000, first=100, focus=10**6).select(
                model, q, args.k, search_rows, np.random.default_rng(0)),
        "**Background search, raced (ours, beam 1)**": lambda q: BackgroundValiditySearch(
            beam=1, max_rows=2_000_000).select(model, q, args.k, search_rows, np.random.default_rng(0)),
        "Background search, raced, beam 2": lambda q: BackgroundValiditySearch(
            beam=2, max_rows=2_000_000).select(model, q, args.k, search_rows, np.random.default_rng(0)),
        "Background search, raced, beam 5 (the spec's default)": lambda q: BackgroundValiditySearch(
            beam=5, max_rows=2_000_000).select(model, q, args.k, search_rows, np.random.default_rng(0)),
    }
    judge = CountingRanker(model.inner)  # our measure (tau-b: ties count as ties) on the evaluation rows, uncounted

    def judged(X: np.ndarray, query: QueryView, found: tuple[int, ...], spent: int, seconds: float) -> tuple:
        ours = expected_validity(judge, X, query.scores, held_out, [found])[0][0]
        return (peer_validity(predict, X, found, eval_rows), float(ours),
                peer_validity(predict, X, found, search_rows.fill), spent, seconds)

    results: dict[str, list[tuple]] = {name: [] for name in methods}
    if not args.skip_peer:
        results["RankingSHAP repository's greedy listwise (peer)"] = []
    for n, qi in enumerate(chosen):
        s = data.query_slice(qi)
        X = np.asarray(data.X[s], dtype=np.float64)
        query = QueryView(X=X, scores=scores[s], query_id=data.query_ids[qi], background=train_rows)
        for name, method in methods.items():
            rows, start = model.rows_evaluated, time.perf_counter()
            found = method(query)
            seconds, spent = time.perf_counter() - start, model.rows_evaluated - rows
            results[name].append(judged(X, query, found, spent, seconds))
        if not args.skip_peer:
            start = time.perf_counter()
            found, spent = peer_greedy(predict, X, args.k, search_rows.fill)
            results["RankingSHAP repository's greedy listwise (peer)"].append(
                judged(X, query, found, spent, time.perf_counter() - start))
        print(f"  query {n + 1}/{len(chosen)} ({query.n_docs} documents)", file=sys.stderr, flush=True)
    print(f"MQ2008 Fold1 test, {len(chosen)} queries (seed {args.seed}), k = {args.k}; validity by the peers' "
          "function on 100 held-out evaluation rows and on the 100 search rows\n")
    print("| search | validity, held-out rows | same, tau-b (ties as ties) | validity, search rows | model rows | "
          "seconds |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, values in results.items():
        held, ours, seen, spent, seconds = (np.array(v) for v in zip(*values, strict=True))
        print(f"| {name} | {held.mean():.3f} | {ours.mean():.3f} | {seen.mean():.3f} | {spent.sum():,.0f} | "
              f"{seconds.sum():.1f} |")


if __name__ == "__main__":
    main()
