"""Generate the synthetic "bookstore" ranking scenario used by the auditor examples.

The story
---------
An online bookshop lets a shopper search its catalogue with two filters: a genre
(say "crime") and a price range (say 10-20 EUR).  Each search session is one
*query*; the shop's retrieval step returns 12-30 candidate books for it, and a
LightGBM LambdaMART ranker decides the order in which they are shown.

Retrieval is imperfect on purpose: most candidates are from the requested genre
but some are not, and some are outside the price range.  A few candidates are
*sponsored* (a publisher paid for the placement, about 10% of rows).

How relevant a book really was to the shopper (the label, a grade 0-4 derived
from what the shopper did: ignored, clicked, looked inside, added to basket,
bought) comes from a hidden relevance function:

* genre match and price within range matter most;
* then reader reviews (average rating, weighted by how many reviews there are),
  sales volume and how recent the book is, then the author's popularity;
* sponsorship has only a *small* direct effect, so that later "influence of
  remuneration" audits have something subtle to find;
* whether the book is one of the shop's own imprint ("own brand", about 15% of
  the catalogue) has *no* effect: shoppers do not care who published it;
* plus noise.  About 5% of sessions are window shopping (every label 0), and one
  session per split returned exactly one book: both are edge cases the auditor
  must handle.

Self-preferencing (planted on purpose, for the `exposure` evidence): the shop trains its ranker
on what shoppers did *plus a margin bonus for its own imprint* -- the training target of an own-brand
book a shopper engaged with (grade >= 1) is its grade + 1 (``OWN_BRAND_BONUS``; ``--own-brand-bonus 0``
trains the fair twin).  The files
keep the grades shoppers gave; only the model learns the bonus, so the audit finds own-brand books
ranked above what their relevance earns.  The flag is drawn per catalogue book from a random stream of
its own (``numpy.random.default_rng([seed, OWN_BRAND_STREAM])``), so every other column is the same as
without it, byte for byte.

Outputs (in the script's folder unless ``--out`` is given): ``train.csv``
(240 queries), ``test.csv`` (80 queries, disjoint query ids) and ``model.txt``
(the LightGBM ranker trained on ``train.csv``).  Everything is derived from one
``numpy.random.default_rng(seed)`` and floats are written with a fixed format, so
two runs with the same seed write byte-identical files.

Regenerate with ``.venv/bin/python examples/bookstore/generate.py``.

Planted variants (for the transparency and governance tests; the defaults write the files above unchanged):
``--sponsored-boost B`` sets the direct effect of sponsorship on the hidden relevance (default 0.2; e.g. 1.5 is
a paid boost the ranker learns), ``--null-feature`` adds a ``gift_wrap`` flag (about 10% of rows, drawn from
its own stream) that plays no part in relevance, and ``--shift S`` moves the catalogue (prices × (1 + S), the
e-book share + S/2), so a model retrained on it is "the next quarter's model on shifted data";
``--own-brand-bonus 0`` trains the ranker on the grades alone (no self-preferencing).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd

DEFAULT_SEED = 20261122
HERE = Path(__file__).resolve().parent

N_TRAIN_QUERIES = 240
N_TEST_QUERIES = 80
N_CATALOGUE = 4000
MIN_DOCS, MAX_DOCS = 12, 30
CURRENT_YEAR = 2026
WINDOW_SHOPPING_RATE = 0.05
SPONSORED_RATE = 0.10
OWN_BRAND_RATE = 0.15  # share of the catalogue published by the shop's own imprint
OWN_BRAND_BONUS = 1  # grades added to an own-brand book's training target: the ranker's margin bonus
OWN_BRAND_STREAM = 25  # the own-brand flag's random stream: default_rng([seed, OWN_BRAND_STREAM])
NUM_BOOST_ROUND = 80

GENRES = (
    "crime",
    "romance",
    "fantasy",
    "science-fiction",
    "literary-fiction",
    "history",
    "biography",
    "cookery",
    "children",
    "young-adult",
)

FEATURES = [
    "genre_match",
    "price",
    "price_in_range",
    "n_reviews",
    "avg_review",
    "is_ebook",
    "publishing_year",
    "target_age",
    "sales_rank_log",
    "author_popularity",
    "sponsored",
    "own_brand",
]
COLUMNS = ["qid", "doc_id", "label", *FEATURES]

# Decimals kept per float column: rounding first, then a fixed printf format,
# keeps the CSV text independent of the platform's last-bit float differences.
DECIMALS = {
    "genre_match": 0,
    "price": 2,
    "price_in_range": 0,
    "n_reviews": 0,
    "avg_review": 1,
    "is_ebook": 0,
    "publishing_year": 0,
    "target_age": 0,
    "sales_rank_log": 4,
    "author_popularity": 4,
    "sponsored": 0,
    "own_brand": 0,
}
FLOAT_FORMAT = "%.10g"

# Latent-score cut points for grades 0|1|2|3|4, tuned for "many 0/1, few 4".
GRADE_CUTS = np.array([2.75, 3.85, 4.65, 5.45])


@dataclass(frozen=True)
class Catalogue:
    """Book attributes that do not depend on the search (one entry per book)."""

    isbn: np.ndarray
    genre: np.ndarray
    price: np.ndarray
    n_reviews: np.ndarray
    avg_review: np.ndarray
    is_ebook: np.ndarray
    publishing_year: np.ndarray
    target_age: np.ndarray
    sales_rank_log: np.ndarray
    author_popularity: np.ndarray
    own_brand: np.ndarray


def isbn13(rng: np.random.Generator, n: int) -> np.ndarray:
    """Draw n distinct ISBN-13s with valid check digits, so ids look like real books."""
    bodies = 978_000_000_000 + rng.choice(1_000_000_000, size=n, replace=False)
    ids = []
    for body in bodies:
        digits = [int(c) for c in str(body)]
        total = sum(d * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits))
        ids.append(f"isbn-{body}{(10 - total % 10) % 10}")
    return np.array(ids, dtype=object)


@dataclass(frozen=True)
class Variant:
    """Planted changes (all off by default, so the default files stay byte-identical)."""

    sponsored_boost: float = 0.2
    null_feature: bool = False
    shift: float = 0.0
    own_brand_bonus: float = OWN_BRAND_BONUS

    def features(self) -> list[str]:
        return [*FEATURES, "gift_wrap"] if self.null_feature else list(FEATURES)


def make_catalogue(rng: np.random.Generator, own_rng: np.random.Generator, n: int = N_CATALOGUE,
                   shift: float = 0.0) -> Catalogue:
    """Build the shop's catalogue; candidates are sampled from it, so books recur across queries. `own_rng` draws
    the own-brand flag only, so the other attributes do not depend on it."""
    genre = rng.integers(0, len(GENRES), size=n)
    is_ebook = (rng.random(n) < 0.3 + shift / 2).astype(float)
    # Prices cluster around 10-20 EUR with a long tail; shops price at x.99.
    raw_price = np.exp(rng.normal(np.log(14.0), 0.5, size=n)) * np.where(is_ebook == 1, 0.6, 1.0) * (1 + shift)
    price = np.clip(np.round(raw_price), 5, 60) - 0.01
    # Most books are recent; a few are classics going back to 1950.
    age = np.floor(rng.exponential(10.0, size=n))
    publishing_year = np.clip(CURRENT_YEAR - age, 1950, CURRENT_YEAR)
    author_popularity = rng.beta(1.5, 4.0, size=n)
    # Review counts are heavy-tailed and follow author fame; every listed book has at least one review.
    n_reviews = np.minimum(
        1 + np.floor(np.exp(rng.normal(2.2 + 2.5 * author_popularity, 1.4, size=n))), 250_000
    )
    quality = rng.normal(3.9, 0.45, size=n)
    avg_review = np.round(np.clip(quality + rng.normal(0, 1, size=n) / np.sqrt(n_reviews), 1, 5), 1)
    # log10 of copies sold: driven by the same fame/visibility as reviews, plus quality.
    sales_rank_log = (
        1.0 + 0.7 * np.log10(n_reviews) + 1.0 * author_popularity + 0.3 * (quality - 3.9)
    ) + rng.normal(0, 0.3, size=n)
    sales_rank_log = np.clip(sales_rank_log, 0.0, None)
    # Reader age follows the genre: children's books 6/12, young adult 12/16, the rest mostly adult (18).
    children = genre == GENRES.index("children")
    young_adult = genre == GENRES.index("young-adult")
    u = rng.random(n)
    target_age = np.where(u < 0.1, 16.0, 18.0)
    target_age = np.where(children, np.where(u < 0.6, 6.0, 12.0), target_age)
    target_age = np.where(young_adult, np.where(u < 0.4, 12.0, 16.0), target_age)
    return Catalogue(
        isbn=isbn13(rng, n),
        genre=genre,
        price=price,
        n_reviews=n_reviews,
        avg_review=avg_review,
        is_ebook=is_ebook,
        publishing_year=publishing_year,
        target_age=target_age,
        sales_rank_log=sales_rank_log,
        author_popularity=author_popularity,
        own_brand=(own_rng.random(n) < OWN_BRAND_RATE).astype(float),
    )


def hidden_relevance(df: pd.DataFrame, rng: np.random.Generator, query_effect: np.ndarray,
                     sponsored_boost: float = 0.2) -> np.ndarray:
    """Latent "how much the shopper wanted this book" score; the ranker never sees it directly."""
    reviews = (df["avg_review"] - 3.5) * np.log10(1 + df["n_reviews"])
    recency = np.exp(-(CURRENT_YEAR - df["publishing_year"]) / 12.0)
    score = (
        2.0 * df["genre_match"]
        + 1.5 * df["price_in_range"]
        + 0.45 * reviews
        + 0.35 * (df["sales_rank_log"] - 2.5)
        + 0.6 * recency
        + 0.4 * df["author_popularity"]
        + sponsored_boost * df["sponsored"]  # 0.2 by default: paid placement barely changes what shoppers want
        + query_effect
        + rng.normal(0, 0.8, size=len(df))
    )
    return score.to_numpy()


def make_queries(rng: np.random.Generator, cat: Catalogue, qids: range, single_doc_qid: int,
                 variant: Variant = Variant()) -> pd.DataFrame:
    """Simulate search sessions: pick filters, retrieve candidates, then grade them."""
    n_queries = len(qids)
    sizes = rng.integers(MIN_DOCS, MAX_DOCS + 1, size=n_queries)
    sizes[qids.index(single_doc_qid)] = 1
    window_shopper = rng.random(n_queries) < WINDOW_SHOPPING_RATE
    by_genre = [np.flatnonzero(cat.genre == g) for g in range(len(GENRES))]

    frames = []
    for i, qid in enumerate(qids):
        genre = int(rng.integers(0, len(GENRES)))
        low = float(rng.choice([0.0, 5.0, 10.0, 15.0, 20.0]))
        high = low + float(rng.choice([10.0, 15.0, 20.0, 40.0]))
        n = int(sizes[i])
        # Retrieval: roughly 80% from the filtered genre, the rest "related" books from other genres.
        n_match = int(rng.binomial(n, 0.8)) if n > 1 else 1
        others = np.flatnonzero(cat.genre != genre)
        books = np.concatenate(
            [
                rng.choice(by_genre[genre], size=n_match, replace=False),
                rng.choice(others, size=n - n_match, replace=False),
            ]
        )
        books = books[rng.permutation(n)]  # retrieval order carries no information
        price = cat.price[books]
        frames.append(
            pd.DataFrame(
                {
                    "qid": qid,
                    "doc_id": cat.isbn[books],
                    "genre_match": (cat.genre[books] == genre).astype(float),
                    "price": price,
                    "price_in_range": ((price >= low) & (price <= high)).astype(float),
                    "n_reviews": cat.n_reviews[books],
                    "avg_review": cat.avg_review[books],
                    "is_ebook": cat.is_ebook[books],
                    "publishing_year": cat.publishing_year[books],
                    "target_age": cat.target_age[books],
                    "sales_rank_log": cat.sales_rank_log[books],
                    "author_popularity": cat.author_popularity[books],
                    "sponsored": (rng.random(n) < SPONSORED_RATE).astype(float),
                    "own_brand": cat.own_brand[books],  # no draw from `rng`: the other columns stay as they were
                }
            )
        )
    df = pd.concat(frames, ignore_index=True)

    query_effect = rng.normal(0, 0.35, size=n_queries)
    row_query = df["qid"].to_numpy() - qids.start
    latent = hidden_relevance(df, rng, query_effect[row_query], variant.sponsored_boost)
    label = np.digitize(latent, GRADE_CUTS)
    # Window shoppers look but never engage: every candidate is graded 0.
    label[window_shopper[row_query]] = 0
    df["label"] = label.astype(int)

    for col, dec in DECIMALS.items():
        df[col] = df[col].astype(float).round(dec)
    if variant.null_feature:  # its own stream: the other columns do not change
        df["gift_wrap"] = (np.random.default_rng([qids.start, 77]).random(len(df)) < 0.1).astype(float)
    return df[["qid", "doc_id", "label", *variant.features()]]


def write_csv(df: pd.DataFrame, path: Path) -> None:
    """Write with a fixed float format and '\\n' line ends so the bytes are platform-independent."""
    df.to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")


def group_sizes(df: pd.DataFrame) -> np.ndarray:
    """Rows per query in file order, as LightGBM's ``group`` expects (queries are contiguous)."""
    return df.groupby("qid", sort=False).size().to_numpy()


def train_ranker(train: pd.DataFrame, test: pd.DataFrame, seed: int, features: list[str] = FEATURES,
                 own_brand_bonus: float = OWN_BRAND_BONUS) -> tuple[lgb.Booster, list[float]]:
    """Fit the LambdaMART ranker and record LightGBM's own test nDCG@10 per iteration (against the grades shoppers
    gave). The training target is the grade plus `own_brand_bonus` for the shop's own imprint when the shopper
    engaged with the book (grade >= 1): the self-preferencing the audit is meant to find."""
    params = {
        "objective": "lambdarank",
        "metric": "ndcg",
        "eval_at": [10],
        "num_leaves": 15,
        "learning_rate": 0.1,
        "min_data_in_leaf": 20,
        "deterministic": True,
        "force_row_wise": True,  # the automatic row/col-wise choice is timing-based, hence not reproducible
        "num_threads": 1,
        "seed": seed,
        "verbosity": -1,
    }
    # A shopper's engagement with an own-brand book (grade >= 1) counts `own_brand_bonus` grades more.
    target = train["label"] + own_brand_bonus * train["own_brand"] * (train["label"] >= 1)
    dtrain = lgb.Dataset(
        train[features], label=target, group=group_sizes(train), feature_name=features
    )
    dtest = lgb.Dataset(
        test[features], label=test["label"], group=group_sizes(test), feature_name=features, reference=dtrain
    )
    record: dict = {}
    booster = lgb.train(
        params,
        dtrain,
        num_boost_round=NUM_BOOST_ROUND,
        valid_sets=[dtest],
        valid_names=["test"],
        callbacks=[lgb.record_evaluation(record)],
    )
    return booster, record["test"]["ndcg@10"]


def ndcg_at_10_file_order(df: pd.DataFrame) -> float:
    """nDCG@10 of the (shuffled) retrieval order: the 'random ranker' baseline, scored like LightGBM."""
    scores = []
    for _, grp in df.groupby("qid", sort=False):
        labels = grp["label"].to_numpy()
        gains = 2.0**labels - 1
        disc = 1 / np.log2(np.arange(2, len(labels) + 2))
        ideal = np.sort(gains)[::-1][:10] @ disc[: min(10, len(labels))]
        scores.append(1.0 if ideal == 0 else (gains[:10] @ disc[: min(10, len(labels))]) / ideal)
    return float(np.mean(scores))


def describe(name: str, df: pd.DataFrame) -> None:
    """Print the figures a reader checks first: size, grade mix and the edge cases."""
    sizes = group_sizes(df)
    max_label = df.groupby("qid", sort=False)["label"].max()
    dist = df["label"].value_counts().sort_index()
    share = ", ".join(f"{g}: {c} ({c / len(df):.1%})" for g, c in dist.items())
    print(f"{name}: {len(df)} rows, {len(sizes)} queries (qid {df['qid'].min()}-{df['qid'].max()})")
    print(f"  labels {share}")
    print(
        f"  all-zero queries: {int((max_label == 0).sum())}, single-document queries: "
        f"{int((sizes == 1).sum())}, sponsored rows: {df['sponsored'].mean():.1%}, own-brand rows: "
        f"{df['own_brand'].mean():.1%}"
    )


def main(argv: list[str] | None = None) -> None:
    """Generate the data, train the ranker and report what was written."""
    parser = argparse.ArgumentParser(description="Generate the synthetic bookstore ranking scenario.")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"RNG seed (default {DEFAULT_SEED})")
    parser.add_argument(
        "--out", type=Path, default=HERE, help="output folder (default: this script's folder)"
    )
    parser.add_argument("--sponsored-boost", type=float, default=0.2,
                        help="direct effect of sponsorship on the hidden relevance (default 0.2)")
    parser.add_argument("--null-feature", action="store_true", help="add a gift_wrap flag with no effect")
    parser.add_argument("--shift", type=float, default=0.0, help="catalogue shift: prices x (1 + S), e-books + S/2")
    parser.add_argument("--own-brand-bonus", type=float, default=OWN_BRAND_BONUS,
                        help=f"grades added to own-brand books' training target (default {OWN_BRAND_BONUS}; 0: fair)")
    args = parser.parse_args(argv)
    variant = Variant(sponsored_boost=args.sponsored_boost, null_feature=args.null_feature, shift=args.shift,
                      own_brand_bonus=args.own_brand_bonus)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    rng = np.random.default_rng(args.seed)
    cat = make_catalogue(rng, np.random.default_rng([args.seed, OWN_BRAND_STREAM]), shift=variant.shift)
    n_all = N_TRAIN_QUERIES + N_TEST_QUERIES
    train_qids = range(1, N_TRAIN_QUERIES + 1)
    test_qids = range(N_TRAIN_QUERIES + 1, n_all + 1)
    single_train = int(rng.integers(train_qids.start, train_qids.stop))
    single_test = int(rng.integers(test_qids.start, test_qids.stop))
    train = make_queries(rng, cat, train_qids, single_train, variant)
    test = make_queries(rng, cat, test_qids, single_test, variant)

    write_csv(train, out / "train.csv")
    write_csv(test, out / "test.csv")
    # Train on what was written, so the model matches the CSVs exactly.
    train = pd.read_csv(out / "train.csv")
    test = pd.read_csv(out / "test.csv")
    booster, ndcg = train_ranker(train, test, args.seed, variant.features(), variant.own_brand_bonus)
    booster.save_model(str(out / "model.txt"))

    describe("train", train)
    describe("test", test)
    print(f"columns: {', '.join(['qid', 'doc_id', 'label', *variant.features()])}")
    print(
        f"LightGBM test ndcg@10: {ndcg[-1]:.4f} after {len(ndcg)} trees "
        f"(first tree {ndcg[0]:.4f}; retrieval order {ndcg_at_10_file_order(test):.4f})"
    )
    for name in ("train.csv", "test.csv", "model.txt"):
        print(f"wrote {out / name} ({(out / name).stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
