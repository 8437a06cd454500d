"""Deterministic MSLR-like wide ranking data (136 or 700 features) and a LambdaMART trained on it.

Shape after MSLR-WEB30K: queries of 60–180 documents, graded labels 0–4 (about half 0), features in families that
repeat across "streams" (body, anchor, title, url, whole document in MSLR) so that many are strongly correlated:

| family (feature index mod 8) | values | like MSLR's |
| --- | --- | --- |
| 0 count | integers ≥ 0, many zeros | covered query terms, term frequencies |
| 1 ratio | [0, 1] | covered query term ratio |
| 2 score | lognormal ≥ 0 | BM25, TF-IDF |
| 3 log-likelihood | **negative** (−700 … −10) | LMIR.ABS / DIR / JM |
| 4 query-level | one value per query | IDF, query length |
| 5 delta | **around 0**, exact zeros, some −0.0 | differences to a reference, click deltas |
| 6 length | integers > 0 | stream length |
| 7 sparse signal | 15 % missing (NaN) | quality score, PageRank (not always known) |

Every document has 8 latent "match" factors; each non-query feature is a noisy monotone transform of one loading
of them (so features of the same factor are correlated, as the streams of MSLR are). Relevance is a sum over the
factors with decaying weights, plus two interactions (a factor's effect depends on a query-level feature and on a
delta feature) and noise; labels are cut at fixed quantiles of the within-query centred relevance. Same arguments,
same arrays: everything comes from one seeded `numpy.random.Generator`.

    .venv/bin/python benchmarks/wide_data.py --features 136 --out /tmp/auditor-wide/136   # data, model, spec

The *diffuse* variant (`--factors 24 --decay 0.5`, in /tmp/auditor-wide/136-diffuse) spreads relevance over 24
factors with slowly decaying weights, so that no five features carry a ranking: there top-5 attributions reach a
validity of about 0.48 and the set searches about 0.55, as issue 37 measured on a real 136-feature model.

writes `train.parquet` (background, 300 queries), `test.parquet` (43 queries, as in issue 28), `model.txt`
(LambdaMART, 150 trees × 31 leaves) and `audit.yaml` (every evidence kind with defaults, the starter pack).
Nothing is rewritten when it exists.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import smoke  # noqa: E402

N_FACTORS = 8
FAMILIES = 8
LABEL_CUTS = (0.5, 0.8, 0.93, 0.98)  # quantiles of centred relevance: ~50 % grade 0, then 30 / 13 / 5 / 2 %


def wide_queries(n_queries: int, n_features: int = 136, *, seed: int = 0, min_docs: int = 60, max_docs: int = 180,
                 factors: int = N_FACTORS, decay: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, labels, query sizes) of `n_queries` MSLR-like queries with `n_features` features (module docstring).

    `factors` latent factors weigh 1/(1+i)**`decay` in relevance: more factors and a slower decay spread the
    ranking over more features (the diffuse variant)."""
    if n_features < FAMILIES:
        raise ValueError(f"n_features must be at least {FAMILIES}, got {n_features}")
    rng = np.random.default_rng([seed, n_features, 28])
    sizes = rng.integers(min_docs, max_docs + 1, size=n_queries)
    n = int(sizes.sum())
    query = np.repeat(np.arange(n_queries), sizes)
    # latent match factors: a query-level part (some queries are easy) plus a document part
    n_factors = factors
    factors = rng.normal(size=(n_queries, n_factors))[query] * 0.5 + rng.normal(size=(n, n_factors))
    query_level = rng.lognormal(sigma=0.7, size=(n_queries, n_features))
    family = np.arange(n_features) % FAMILIES
    factor_of = rng.integers(0, n_factors, size=n_features)
    factor_of[:n_factors * FAMILIES] = np.repeat(np.arange(n_factors), FAMILIES)[:min(n_features, n_factors * FAMILIES)]
    loading = rng.uniform(0.4, 1.0, size=n_features)
    X = np.empty((n, n_features))
    for f in range(n_features):
        z = loading[f] * factors[:, factor_of[f]] + np.sqrt(1 - loading[f] ** 2) * rng.normal(size=n)
        kind = family[f]
        if kind == 0:
            X[:, f] = rng.poisson(np.exp(0.8 * z - 0.3))
        elif kind == 1:
            X[:, f] = np.round(1 / (1 + np.exp(-1.5 * z)), 4)
        elif kind == 2:
            X[:, f] = np.round(np.exp(0.6 * z + 1.0), 4)
        elif kind == 3:
            X[:, f] = np.round(-np.exp(5.0 - 0.5 * z), 3)  # LMIR-like: always negative
        elif kind == 4:
            X[:, f] = np.round(query_level[query, f], 4)  # constant within a query
        elif kind == 5:
            delta = np.round(z * 2) / 2
            delta[rng.random(n) < 0.2] = 0.0
            delta[(delta == 0) & (rng.random(n) < 0.5)] = -0.0
            X[:, f] = delta  # straddles 0, exact zeros and −0.0
        elif kind == 6:
            X[:, f] = np.round(np.exp(rng.normal(6, 0.8, size=n) + 0.2 * z))
        else:
            signal = np.round(np.exp(0.5 * z), 4)
            signal[rng.random(n) < 0.15] = np.nan
            X[:, f] = signal
    weights = 1.0 / (1.0 + np.arange(n_factors)) ** decay
    relevance = factors @ weights
    relevance += 0.4 * factors[:, 0] * np.log(query_level[query, 4])  # factor 0 matters more for some queries
    relevance += 0.3 * factors[:, 1] * (X[:, 5] > 0)  # and factor 1 only with a positive delta
    relevance += 0.6 * rng.normal(size=n)
    centred = relevance - np.bincount(query, relevance)[query] / sizes[query]
    labels = np.digitize(centred, np.quantile(centred, LABEL_CUTS)).astype(np.int32)
    return X, labels, sizes


def feature_names(n_features: int) -> list[str]:
    kinds = ["count", "ratio", "score", "loglik", "query", "delta", "length", "signal"]
    return [f"f{f + 1}_{kinds[f % FAMILIES]}" for f in range(n_features)]


def write_parquet(path: Path, X: np.ndarray, labels: np.ndarray, sizes: np.ndarray, *, first_query: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    qid = np.repeat(np.arange(first_query, first_query + len(sizes)), sizes)
    columns = {"qid": pa.array(qid), "doc_id": pa.array([f"d{i}" for i in range(len(qid))]),
               "label": pa.array(labels)}
    columns.update({name: pa.array(X[:, j]) for j, name in enumerate(feature_names(X.shape[1]))})
    pq.write_table(pa.table(columns), path)


def train_lambdamart(X: np.ndarray, labels: np.ndarray, sizes: np.ndarray, *, trees: int = 150, leaves: int = 31,
                     threads: int = 2):
    """LambdaMART as MSLR baselines train it (150 trees, 31 leaves, learning rate 0.1), deterministic."""
    import lightgbm as lgb

    params = {"objective": "lambdarank", "num_leaves": leaves, "learning_rate": 0.1, "min_data_in_leaf": 50,
              "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "verbosity": -1, "seed": 0,
              "deterministic": True, "force_row_wise": True, "num_threads": threads}
    data = lgb.Dataset(X, labels, group=sizes, feature_name=feature_names(X.shape[1]))
    return lgb.train(params, data, num_boost_round=trees)


SPEC = """# Issue 28's shape: a {features}-feature LambdaMART audited with every evidence kind at its defaults.
audit:
  title: Wide synthetic ranker ({features} features)
  organisation: auditor benchmarks
  owner: Ranking benchmarks team (synthetic data)
  period: n/a
  purpose: cost and fidelity on wide data
  data_origin: synthetic
model: {{path: model.txt}}
dataset: {{path: test.parquet, query_column: qid, label_column: label, doc_id_column: doc_id, nan_policy: missing}}
background: {{path: train.parquet, query_column: qid, label_column: label, doc_id_column: doc_id, nan_policy: missing}}
evidence:
  - ranking_quality: {{}}
  - global_importance: {{}}
  - local_explanations: {{}}
  - decision_path_accuracy: {{}}
  - pairwise: {{}}
  - confidence: {{}}
  - surrogate: {{}}
  - disclosure_consistency: {{declared: [{declared}]}}
  - parameter_influence: {{sensitive: [{sensitive}]}}
policies: [starter]
seed: 7
output: {{dir: runs, formats: [html]}}
"""


def prepare(out: Path, n_features: int, *, train_queries: int = 300, test_queries: int = 43, trees: int = 150,
            leaves: int = 31, factors: int = N_FACTORS, decay: float = 1.0, docs: tuple[int, int] = (60, 180)) -> Path:
    """Write the data, the model and the spec into `out` (kept when present); returns the spec's path. `docs`:
    the fewest and most documents of a query."""
    out.mkdir(parents=True, exist_ok=True)
    shape = {"factors": factors, "decay": decay, "min_docs": docs[0], "max_docs": docs[1]}
    if not (out / "train.parquet").exists() or not (out / "model.txt").exists():
        X, y, sizes = wide_queries(train_queries, n_features, seed=1, **shape)
        write_parquet(out / "train.parquet", X, y, sizes)
        train_lambdamart(X, y, sizes, trees=trees, leaves=leaves).save_model(str(out / "model.txt"))
    if not (out / "test.parquet").exists():
        X, y, sizes = wide_queries(test_queries, n_features, seed=2, **shape)
        write_parquet(out / "test.parquet", X, y, sizes, first_query=100_000)
    spec = out / "audit.yaml"
    if not spec.exists():
        names = feature_names(n_features)
        spec.write_text(SPEC.format(features=n_features, declared=", ".join(names[:6]), sensitive=names[5]))
    return spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--out", type=Path, default=None, help="folder (default /tmp/auditor-wide/<features>)")
    parser.add_argument("--train-queries", type=int, default=300)
    parser.add_argument("--test-queries", type=int, default=43)
    parser.add_argument("--trees", type=int, default=150)
    parser.add_argument("--leaves", type=int, default=31)
    parser.add_argument("--factors", type=int, default=N_FACTORS, help="latent factors behind relevance")
    parser.add_argument("--decay", type=float, default=1.0, help="factor i weighs 1/(1+i)**decay")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        with smoke.workdir(True) as tmp:
            spec = smoke.wide(tmp, factors=args.factors, decay=args.decay)
            print(spec, *sorted(path.name for path in spec.parent.iterdir()))
        return 0
    out = args.out or Path("/tmp/auditor-wide") / str(args.features)
    spec = prepare(out, args.features, train_queries=args.train_queries, test_queries=args.test_queries,
                   trees=args.trees, leaves=args.leaves, factors=args.factors, decay=args.decay)
    print(spec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
