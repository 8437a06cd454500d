"""Listwise attributions side by side with the published algorithm (issue 26; docs/reproductions/listwise.md).

    .venv/bin/python benchmarks/listwise_mq2008.py [--queries 20] [--part mq2008|bookstore|all] [--seed 0]

MQ2008 Fold1 (../shared/data or $AUDITOR_DATA; the LightGBM LambdaMART of examples/mq2008, trained first when
missing), on a seeded sample of test queries:
1. ground truth: Shapley values of each query's game under mean masking (training mean), by antithetic
   permutation sampling with `--gt-permutations` orders (~40 players per query: 2^40 coalitions are not affordable);
2. our RankingSHAP (KernelSHAP design, permutation sampling) and RankSHAP against it, and the *straightforward*
   implementation of the published algorithm: `shap.KernelExplainer` (l1_reg=False) explaining the all-ones
   coalition vector against an all-zeros background, its model function looping over the coalitions shap hands
   it and, per coalition, masking every document and scoring them (Algorithm 1 of the RankingSHAP paper, written
   here from the text) — same game, same coalition budget: footrule@3/10/all, L1, seconds, model rows;
3. top-k sets (k = 5, 10) of every method measured under both maskings: one mean row (validity) and the peers'
   (each removed feature replaced by each of 100 *evaluation* background rows, tau averaged; the explainers that
   use background rows draw a different 100, as the paper does). The search under background rows runs with beam 2
   and a 2M-row budget per query and k here (cost: 100 rows per set).
Bookstore (examples/bookstore, 12 features): exact values on every query, the exact estimator against an
independent computation (the validity measure's own masking code, the Shapley formula over all 2^M coalitions),
and the sampling estimators' error with their 95% intervals.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from auditor.checks.listwise_reference import agreement, reference_shapley  # noqa: E402
from auditor.checks.validity import has_order, kendall_tau_b  # noqa: E402
from auditor.explain.base import QueryView  # noqa: E402
from auditor.explain.greedy import Greedy  # noqa: E402
from auditor.explain.listwise import (  # noqa: E402
    BackgroundMasking,
    BackgroundValiditySearch,
    ListwiseShap,
    RankGame,
    expected_validity,
)
from auditor.explain.search import ValiditySearch  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from auditor.models.masking import Masker  # noqa: E402
from benchmarks import smoke  # noqa: E402

# RankingSHAP (SIGIR 2025) Fig. 4 and §6.3, MQ2008, explanation size 10, 100 background rows for evaluation:
# preservation ≈ 0.7 (Kendall's tau, features outside the top 10 masked), deletion < 0.2 (top 10 masked).
PAPER_MQ2008 = {"preservation@10": 0.7, "deletion@10": 0.2}


def straightforward_rankingshap(model: CountingRanker, query: QueryView, masker: Masker, nsamples: int,
                                seed: int) -> np.ndarray:
    """The published algorithm as its text describes it: shap's KernelExplainer on a coalition vector, the value of
    a coalition z being tau(π, ranking of the documents masked by z), one model call per coalition."""
    import shap

    n_features = query.n_features
    fill = masker.fill[0]

    def value(Z: np.ndarray) -> np.ndarray:
        out = np.empty(Z.shape[0])
        for row, z in enumerate(Z):
            masked = np.where(z[None, :] > 0.5, query.X, fill[None, :])
            out[row] = kendall_tau_b(query.scores, model.predict(masked)[None, :])[0]
        return out

    np.random.seed(seed)  # shap samples coalitions from numpy's global stream
    explainer = shap.KernelExplainer(value, np.zeros((1, n_features)))
    phi = explainer.shap_values(np.ones((1, n_features)), nsamples=nsamples, l1_reg=False, silent=True)
    return np.asarray(phi, dtype=np.float64).reshape(-1)


def mq2008_sample(queries: int, seed: int, tmp: Path | None = None, rows: int = 100):
    """MQ2008 Fold1's context, its training rows, the `rows` rows explainers use ([seed, 1]), as many other rows to
    judge on ([seed, 2]), the queries with an order and a seeded sample of them ([seed, 0]) — shared with
    background_search.py, so both measure the same queries under the same rows. `tmp`: smoke mode's folder."""
    from reproduce_valid_explanations import context

    ctx, _ = context(None, seed, tmp)
    data, scores = ctx.data, ctx.scores()
    train_rows = ctx.reference().X
    explain_rows = BackgroundMasking(rows=rows).draw(train_rows, np.random.default_rng([seed, 1]))
    eval_rows = BackgroundMasking(rows=rows).draw(train_rows, np.random.default_rng([seed, 2]))
    eligible = [qi for qi in range(data.n_queries) if has_order(scores[data.query_slice(qi)])]
    chosen = sorted(np.random.default_rng([seed, 0]).choice(eligible, size=min(queries, len(eligible)),
                                                            replace=False).tolist())
    return ctx, train_rows, explain_rows, eval_rows, eligible, chosen


def mq2008(queries: int, seed: int, gt_permutations: int, budgets: list[int], tmp: Path | None = None) -> None:
    rows = 10 if tmp else 100  # smoke mode: fewer background rows
    ctx, train_rows, explain_rows, eval_rows, eligible, chosen = mq2008_sample(queries, seed, tmp, rows)
    data, masker, scores = ctx.data, ctx.masker(), ctx.scores()
    model = ctx.model
    print(f"MQ2008 Fold1 test: {len(chosen)} of {len(eligible)} queries with an order (seed {seed}); "
          f"model {model.inner.describe().get('trees', '?')} trees; {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}\n")

    agree: dict[str, list[dict[str, float]]] = {}
    cost: dict[str, list[tuple[float, int]]] = {}
    ours_vs_shap: dict[int, list[float]] = {b: [] for b in budgets}
    validity: dict[tuple[str, int, str], list[float]] = {}
    empties, players, gt_half = [], [], []
    sizes = (5, 10)

    def timed(name: str, fn, *args, **kwargs):
        rows, start = model.rows_evaluated, time.perf_counter()
        out = fn(*args, **kwargs)
        cost.setdefault(name, []).append((time.perf_counter() - start, model.rows_evaluated - rows))
        return out

    for n, qi in enumerate(chosen):
        s = data.query_slice(qi)
        query = QueryView(X=data.X[s], scores=scores[s], query_id=data.query_ids[qi], background=train_rows)
        truth = {}
        for objective in ("kendall", "ndcg"):
            game = RankGame(model, query.X, query.scores, masker, objective=objective)
            ref = timed(f"ground truth ({objective})", reference_shapley, game, game.m,
                        np.random.default_rng([seed, 3, qi]), max_exact=0, permutations=gt_permutations)
            full = np.zeros(query.n_features)
            full[game.players] = ref.values
            truth[objective] = full
            if objective == "kendall":
                empties.append(ref.empty_value)
                players.append(game.m)
                gt_half.append(float(np.max(ref.half_width)))
        results: dict[str, np.ndarray] = {}
        for budget in budgets:
            for estimator in ("kernel", "permutation"):
                for objective, label in (("kendall", "RankingSHAP"), ("ndcg", "RankSHAP")):
                    name = f"{label} ours, {estimator} {budget}"
                    explainer = ListwiseShap(objective, estimator=estimator, nsamples=budget)  # type: ignore[arg-type]
                    values = timed(name, explainer.explain, model, query, masker,
                                   np.random.default_rng([seed, 4, qi])).values
                    agree.setdefault(name, []).append(agreement(values, truth[objective]))
                    results[name] = values
            name = f"RankingSHAP shap.KernelExplainer, {budget}"
            values = timed(name, straightforward_rankingshap, model, query, masker, budget, seed + qi)
            agree.setdefault(name, []).append(agreement(values, truth["kendall"]))
            results[name] = values
            ours = results[f"RankingSHAP ours, kernel {budget}"]
            ours_vs_shap[budget].append(agreement(ours, values)["l1"])

        # top-k sets of every method, measured under mean masking and under 100 evaluation rows
        big = max(budgets)
        bg_values = timed("RankingSHAP ours, 100 background rows", ListwiseShap("kendall").explain, model, query,
                          explain_rows, np.random.default_rng([seed, 5, qi])).values
        ranked = {
            "RankingSHAP (ours, mean)": results[f"RankingSHAP ours, kernel {big}"],
            "RankingSHAP (ours, 100 bg rows)": bg_values,
            "RankingSHAP (shap.KernelExplainer, mean)": results[f"RankingSHAP shap.KernelExplainer, {big}"],
            "RankSHAP (ours, mean)": results[f"RankSHAP ours, kernel {big}"],
            "Ground truth RankingSHAP (mean)": truth["kendall"],
        }
        for k in sizes:
            sets = {}
            for name, values in ranked.items():
                sets[name + " by value"] = tuple(int(f) for f in np.lexsort((np.arange(len(values)), -values))[:k])
            sets["Validity search (mean)"] = timed(f"validity search k={k}", ValiditySearch().select,
                                                   model, query, k, masker, np.random.default_rng(0))
            sets["Validity search (100 bg rows)"] = timed(f"background validity search k={k}",
                                                          BackgroundValiditySearch(beam=2, max_rows=2_000_000).select,
                                                          model, query, k,
                                                          explain_rows, np.random.default_rng(0))
            sets["GREEDY-COVER-ε (mean)"] = timed(f"greedy_cover_eps k={k}", Greedy("greedy_cover_eps").select,
                                                  model, query, k, masker, np.random.default_rng([seed, 6, qi, k]))
            names = list(sets)
            mean_v, mean_c = expected_validity(model, query.X, query.scores, masker, [sets[m] for m in names])
            bg_v, bg_c = expected_validity(model, query.X, query.scores, eval_rows, [sets[m] for m in names])
            for i, name in enumerate(names):
                for measure, value in (("V mean", mean_v[i]), ("C mean", mean_c[i]), ("V bg", bg_v[i]),
                                       ("C bg", bg_c[i])):
                    validity.setdefault((name, k, measure), []).append(float(value))
        print(f"  query {n + 1}/{len(chosen)} ({query.n_docs} docs, {game.m} players) done", file=sys.stderr)

    print(f"Players per query (non-inert features under mean masking): median {np.median(players):.0f}, "
          f"range {min(players)}–{max(players)}. v(∅) under mean masking: {np.unique(np.round(empties, 6))} "
          "(every document becomes the mean row: all tied, tau-b 0).")
    print(f"Ground truth: {gt_permutations} antithetic orders per query; largest 95% half-width per query: "
          f"median {np.median(gt_half):.4f}, max {max(gt_half):.4f}.\n")
    print("| estimator (budget = coalitions) | footrule@3 | footrule@10 | footrule@all | L1 | seconds/query | "
          "model rows/query |")
    print("|---|---|---|---|---|---|---|")
    for name, rows in agree.items():
        secs = np.mean([c[0] for c in cost[name]])
        model_rows = np.mean([c[1] for c in cost[name]])
        means = {key: np.mean([r[key] for r in rows]) for key in rows[0]}
        print(f"| {name} | {means['footrule@3']:.2f} | {means['footrule@10']:.2f} | {means['footrule@all']:.1f} | "
              f"{means['l1']:.3f} | {secs:.3f} | {model_rows:,.0f} |")
    for name in ("ground truth (kendall)", "ground truth (ndcg)", "RankingSHAP ours, 100 background rows"):
        secs = np.mean([c[0] for c in cost[name]])
        print(f"| {name} (cost only) | | | | | {secs:.3f} | {np.mean([c[1] for c in cost[name]]):,.0f} |")
    print()
    for budget in budgets:
        ours = np.mean([c[0] for c in cost[f"RankingSHAP ours, kernel {budget}"]])
        theirs = np.mean([c[0] for c in cost[f"RankingSHAP shap.KernelExplainer, {budget}"]])
        print(f"Budget {budget}: ours {ours:.3f} s/query, shap.KernelExplainer {theirs:.3f} s/query: "
              f"{theirs / ours:.1f}× faster; L1 between the two estimates {np.mean(ours_vs_shap[budget]):.3f}")
    print()
    print("| method (top-k) | k | validity, mean row | completeness, mean row | validity, 100 bg rows | "
          "completeness, 100 bg rows |")
    print("|---|---|---|---|---|---|")
    methods = list(dict.fromkeys(name for name, _, _ in validity))
    for k in sizes:
        for name in methods:
            vals = [np.mean(validity[(name, k, m)]) for m in ("V mean", "C mean", "V bg", "C bg")]
            print(f"| {name} | {k} | {vals[0]:.3f} | {vals[1]:.3f} | {vals[2]:.3f} | {vals[3]:.3f} |")
    print()
    for name in ("validity search k=10", "background validity search k=10", "greedy_cover_eps k=10"):
        print(f"cost {name}: {np.mean([c[0] for c in cost[name]]):.2f} s/query, "
              f"{np.mean([c[1] for c in cost[name]]):,.0f} rows/query")
    print(f"Paper (RankingSHAP, MQ2008, size 10, 100 bg rows): preservation ≈ {PAPER_MQ2008['preservation@10']}, "
          f"deletion < {PAPER_MQ2008['deletion@10']} (deletion = −completeness).")


def bookstore(queries: int, seed: int) -> None:
    from auditor.inputs.data import load_ranking_data
    from auditor.models.lightgbm import load_lightgbm

    folder = ROOT / "examples" / "bookstore"
    model = CountingRanker(load_lightgbm(folder / "model.txt"))
    test = load_ranking_data(folder / "test.csv", query_column="qid", label_column="label", doc_id_column="doc_id")
    train = load_ranking_data(folder / "train.csv", query_column="qid", label_column="label",
                              doc_id_column="doc_id")
    masker = Masker.from_background(train.X, "mean")
    scores = model.predict(test.X)
    eligible = [qi for qi in range(test.n_queries) if has_order(scores[test.query_slice(qi)])]
    chosen = eligible[:queries]
    print(f"\nBookstore: {len(chosen)} queries, {test.n_features} features, mean masking.\n")
    exact_diff, sampled, shap_diff, shap_seconds, ours_seconds = [], {}, [], [], []
    example = None
    for qi in chosen:
        s = test.query_slice(qi)
        query = QueryView(X=test.X[s], scores=scores[s], query_id=test.query_ids[qi], background=train.X)
        for objective in ("kendall", "ndcg"):
            exact = ListwiseShap(objective, estimator="exact").explain(  # type: ignore[arg-type]
                model, query, masker, np.random.default_rng(0))

            def independent(keep: np.ndarray, query=query, exact=exact, objective=objective) -> np.ndarray:
                from auditor.explain.listwise import tie_aware_ndcg

                full = np.zeros((keep.shape[0], query.n_features), dtype=bool)
                full[:, exact.players] = keep
                masked = masker.masked_scores(model, query.X, full)
                return (kendall_tau_b(query.scores, masked) if objective == "kendall"
                        else tie_aware_ndcg(query.scores, masked, 10))

            ref = reference_shapley(independent, len(exact.players), np.random.default_rng(0), max_exact=12)
            exact_diff.append(float(np.max(np.abs(exact.values[exact.players] - ref.values))))
            if objective == "kendall":
                if example is None:
                    example = (query.query_id, exact)
                # the straightforward implementation enumerates every coalition when its budget allows: exact too
                start = time.perf_counter()
                theirs = straightforward_rankingshap(model, query, masker, 2 ** query.n_features, seed)
                shap_seconds.append(time.perf_counter() - start)
                shap_diff.append(float(np.max(np.abs(theirs - exact.values))))
                ours_seconds.append(exact.seconds)
            for estimator in ("kernel", "permutation"):
                for budget in (200, 1000):
                    result = ListwiseShap(objective, estimator=estimator, nsamples=budget).explain(  # type: ignore
                        model, query, masker, np.random.default_rng([seed, qi]))
                    err = np.abs(result.values - exact.values)
                    sampled.setdefault((objective, estimator, budget), []).append(
                        (float(err.mean()), float(err.max()), float(np.mean(err <= result.half_width + 1e-12)),
                         float(np.mean(result.half_width)), result.n_model_rows))
    print(f"Exact estimator vs independent exact Shapley (validity's masking code): max |Δ| = {max(exact_diff):.1e} "
          f"over {len(exact_diff)} query×game pairs.\n")
    theirs, ours = np.mean(shap_seconds), np.mean(ours_seconds)
    print(f"shap.KernelExplainer (straightforward implementation, all 2^12 − 2 coalitions) vs our exact estimator: "
          f"max |Δ| = {max(shap_diff):.1e} over {len(shap_diff)} queries ({theirs:.2f} s/query; our exact "
          f"estimator {ours:.3f} s/query, {theirs / ours:.0f}× faster).\n")
    names = test.feature_names
    qid, res = example
    order = np.argsort(-np.abs(res.values))
    print(f"Exact RankingSHAP, query {qid} (v(all) = {res.full_value:.3f}, v(∅) = {res.empty_value:.3f}, "
          f"{len(res.players)} players): " + ", ".join(f"{names[f]} {res.values[f]:+.3f}" for f in order[:6]) + "\n")
    print("| game | estimator | coalitions | mean |error| | max |error| | 95% interval covers | mean half-width | "
          "rows/query |")
    print("|---|---|---|---|---|---|---|---|")
    for (objective, estimator, budget), rows in sampled.items():
        a = np.array(rows)
        print(f"| {objective} | {estimator} | {budget} | {a[:, 0].mean():.4f} | {a[:, 1].max():.4f} | "
              f"{a[:, 2].mean():.0%} | {a[:, 3].mean():.4f} | {a[:, 4].mean():,.0f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part", choices=["mq2008", "bookstore", "all"], default="all")
    parser.add_argument("--gt-permutations", type=int, default=3000)
    parser.add_argument("--budgets", type=int, nargs="+", default=[500, 2128])
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:  # the bookstore part reads the committed example, a query of it
        args.queries, args.gt_permutations, args.budgets = 1, 20, [40]
    if args.part in ("mq2008", "all"):
        with smoke.workdir(args.smoke) as tmp:
            mq2008(args.queries, args.seed, args.gt_permutations, args.budgets, tmp)
    if args.part in ("bookstore", "all"):
        bookstore(args.queries, args.seed)


if __name__ == "__main__":
    main()
