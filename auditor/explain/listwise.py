"""Listwise Shapley attributions: one value per feature for the whole ranking of a query (issue 26).

**RankingSHAP** (Heuss, de Rijke, Anand, SIGIR 2025; paper 004). The game: the value of a coalition S of features is
Kendall's tau-b between the model's ranking of the query's documents and their ranking when every feature outside
S is masked in every document — exactly the validity measure (`auditor.checks.validity`: same masking object, same
tau-b, ties left as ties, an all-tied masked ranking orders nothing: τ = 0). So v(S) is the validity of S, and
Σφ = v(all) − v(∅) = 1 − v(∅). v(∅) is *computed* (the tau of the fully masked ranking), never assumed: under
masking by one row every document becomes that row and v(∅) = 0 by the tie rule; an implementation that ranks by
`argsort` breaks those ties by document order instead and gets −0.57 … +0.50 on MQ2008 queries.

**RankSHAP** (Chowdhury, Zick, Allan, ICLR 2025, arXiv 2405.01848). The same masking, with a relevance- and
position-sensitive value function: v(S) = nDCG@`cutoff` of the masked ranking, the gain of each document being
its relevance *in the model's own ranking* (the number of documents the model scores strictly below it: linear in
rank, ties share a gain), the discount 1/log2(1 + position), and tied masked scores given the expected discount of
their tied positions (McSherry & Najork's tie-aware DCG — the nDCG analogue of leaving ties as ties). v(all) = 1;
v(∅) = the nDCG of an all-tied list (> 0). Choices where the paper is silent: docs/explainers.md.

**Estimators** (both games; only the non-inert features play — a feature whose every document value routes like
every masking row's value is a null player, φ = 0 exactly, `auditor/explain/screen.py`):
- `exact`: all 2^M coalitions, exact Shapley values (`auditor.checks.listwise_reference.exact_shapley`);
- `kernel`: our batched KernelSHAP design and constrained least squares (`auditor.explain.kernelshap`:
  `coalition_design`, `solve_with_jackknife`), with the delete-a-group jackknife giving a 95% interval per feature;
- `permutation`: antithetic permutation sampling (each order and its reverse), interval from the spread over pairs;
- `auto`: exact when M ≤ `max_exact` (12), else kernel.
Every coalition of a batch is scored for all documents (and all masking rows) in one `model.predict`.

**Masking.** A `Masker` (`scoring.masking`: mean / median / zero one row, or `background` rows whose *scores* are
averaged) gives validity's own game. `BackgroundMasking` (`masking: {strategy: background, rows: N}`) is the peers'
measure: each removed feature replaced by each of N background rows in turn and the *value* (tau / nDCG) averaged
over the N rankings — `RowMasker`. With N = 1 both are the same game. `expected_validity` and
`BackgroundValiditySearch` measure and optimise validity under it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from auditor.checks.listwise_reference import coalition_masks, exact_shapley, permutation_shapley
from auditor.checks.validity import kendall_tau_b
from auditor.explain.base import Attributions, QueryView, set_from_attributions
from auditor.explain.distinct_rows import DistinctRows
from auditor.explain.kernelshap import coalition_design, solve_with_jackknife
from auditor.explain.options import ListwiseShapOptions
from auditor.explain.screen import inert_features
from auditor.explain.search import extend_beam
from auditor.models.base import CountingRanker, rows_per_call
from auditor.models.masking import Masker, fill_scores, keep_masks

Objective = Literal["kendall", "ndcg"]
Estimator = Literal["auto", "exact", "kernel", "permutation"]
T_975_JACKKNIFE = 2.262  # Student t, 9 degrees of freedom: the 10-group jackknife's 95% interval


# --------------------------------------------------------------------------------------------------- masking


class BackgroundMasking(BaseModel):
    """`masking: {strategy: background, rows: N}` as a validity measure: each removed feature is replaced by each of
    N background rows in turn (drawn once, seeded), and validity (tau) is averaged over the N masked rankings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    strategy: Literal["background"] = "background"
    rows: int = Field(100, ge=1, le=1000, description="Background rows; each masked ranking is measured against the "
                                                      "model's and the values averaged (peers: 100 on MQ2008).")

    def draw(self, background: np.ndarray, rng: np.random.Generator) -> RowMasker:
        """The N rows (without replacement, in background order) from `rng`."""
        background = np.asarray(background, dtype=np.float64)
        take = rng.choice(background.shape[0], size=min(self.rows, background.shape[0]), replace=False)
        return RowMasker(np.ascontiguousarray(background[np.sort(take)]))


@dataclass(frozen=True)
class RowMasker:
    """Fill rows for value-averaged masking: a masked ranking per row, the value (tau, nDCG) averaged over rows."""

    fill: np.ndarray
    strategy: str = "background_rows"

    @property
    def n_fill(self) -> int:
        return int(self.fill.shape[0])


AnyMasker = Masker | RowMasker


def _fill_and_average(masker: AnyMasker) -> tuple[np.ndarray, bool]:
    """The fill rows and whether the value (True) or the score (False) is averaged over them."""
    return np.asarray(masker.fill, dtype=np.float64), isinstance(masker, RowMasker)


# ------------------------------------------------------------------------------------------- value functions


def tie_aware_ndcg(reference: np.ndarray, candidates: np.ndarray, cutoff: int | None = 10) -> np.ndarray:
    """RankSHAP's value: nDCG@cutoff of each candidate score row (C × n) with gains from the model's ranking.

    gain(d) = #{documents the reference scores strictly below d}; discount(position p, 1-based) = 1/log2(p + 1)
    for p ≤ cutoff, else 0; documents with tied candidate scores share the mean discount of their positions.
    The ideal DCG is that of the reference order, so nDCG(reference) = 1.
    """
    candidates = np.atleast_2d(np.asarray(candidates, dtype=np.float64))
    n = reference.shape[0]
    out = np.zeros(candidates.shape[0])
    if n < 2:
        return out
    gains = (reference[None, :] < reference[:, None]).sum(axis=1).astype(np.float64)
    cut = n if cutoff is None else min(cutoff, n)
    discount = np.zeros(n)
    discount[:cut] = 1.0 / np.log2(np.arange(2, cut + 2))
    ideal = float(np.sort(gains)[::-1] @ discount)
    if ideal <= 0:
        return out
    c = candidates.shape[0]
    order = np.argsort(-candidates, axis=1, kind="stable")
    ordered = np.take_along_axis(candidates, order, axis=1)
    new = np.ones((c, n), dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    group = np.cumsum(new, axis=1) - 1 + (np.arange(c) * n)[:, None]
    sums = np.bincount(group.ravel(), weights=np.broadcast_to(discount, (c, n)).ravel(), minlength=c * n)
    counts = np.bincount(group.ravel(), minlength=c * n)
    mean_discount = (sums / np.maximum(counts, 1))[group]
    values: np.ndarray = (gains[order] * mean_discount).sum(axis=1) / ideal
    return values


class RankGame:
    """The listwise game of one query: keep-masks over the players (C × M) → values (C,), batched.

    `players` are the query's non-inert features (the others are null players). The model sees, per batch, every
    coalition × document × fill row in one `predict` (at most `max_rows` rows a call).
    """

    def __init__(self, model: CountingRanker, X: np.ndarray, scores: np.ndarray, masker: AnyMasker, *,
                 objective: Objective = "kendall", cutoff: int | None = 10, max_rows: int = 2_000_000,
                 players: np.ndarray | None = None) -> None:
        self.model = model
        self.X = np.asarray(X, dtype=np.float64)
        self.scores = np.asarray(scores, dtype=np.float64)
        self.fill, self.average_values = _fill_and_average(masker)
        self.objective, self.cutoff, self.max_rows = objective, cutoff, int(max_rows)
        if players is None:
            players = np.flatnonzero(~inert_features(model, self.X, masker))
        self.players = np.asarray(players, dtype=np.intp)
        self.coalitions = 0

    @property
    def m(self) -> int:
        return int(self.players.shape[0])

    def measure(self, masked: np.ndarray) -> np.ndarray:
        """The objective of each masked score row (C × n) against the model's scores."""
        if self.objective == "kendall":
            return kendall_tau_b(self.scores, masked)
        return tie_aware_ndcg(self.scores, masked, self.cutoff)

    def full_values(self, keep: np.ndarray) -> np.ndarray:
        """Values of full-width keep-masks (C × F)."""
        if self.average_values:
            means: np.ndarray = self.row_values(keep).mean(axis=1)
            return means
        return self._values(keep, per_row=False)

    def row_values(self, keep: np.ndarray) -> np.ndarray:
        """The value of each keep-mask under each fill row (C × N): what a `RowMasker`'s value averages."""
        return self._values(keep, per_row=True)

    def _values(self, keep: np.ndarray, *, per_row: bool) -> np.ndarray:
        keep = np.asarray(keep, dtype=bool).reshape(-1, self.X.shape[1])
        n, n_fill = self.X.shape[0], self.fill.shape[0]
        step = max(1, rows_per_call(self.X.shape[1], self.max_rows) // max(n * n_fill, 1))
        out = np.empty((keep.shape[0], n_fill) if per_row else keep.shape[0])
        for start in range(0, keep.shape[0], step):
            block = keep[start:start + step]
            scores = fill_scores(self.model, self.X, self.fill, block)
            if scores is None:
                rows = np.where(block[:, None, None, :], self.X[None, :, None, :], self.fill[None, None, :, :])
                scores = self.model.predict(rows.reshape(-1, self.X.shape[1])).reshape(len(block), n, n_fill)
            if per_row:
                out[start:start + len(block)] = self.measure(scores.transpose(0, 2, 1).reshape(-1, n)).reshape(
                    len(block), n_fill)
            else:
                out[start:start + len(block)] = self.measure(scores.mean(axis=2))
        self.coalitions += keep.shape[0]
        return out

    def __call__(self, keep_players: np.ndarray) -> np.ndarray:
        keep_players = np.asarray(keep_players, dtype=bool).reshape(-1, self.m)
        keep = np.zeros((keep_players.shape[0], self.X.shape[1]), dtype=bool)
        keep[:, self.players] = keep_players
        return self.full_values(keep)


# ---------------------------------------------------------------------------------------------- explainers


@dataclass
class ListwiseResult:
    """One query's listwise attributions: `values` (F,), 95% interval half-widths (F,; 0 where exact or a null
    player), v(∅), v(all), the estimator used, coalitions evaluated, model rows and seconds."""

    values: np.ndarray
    half_width: np.ndarray
    empty_value: float
    full_value: float
    estimator: str
    players: np.ndarray
    coalitions: int
    n_model_rows: int
    seconds: float

    def top_k(self, k: int, *, signed: bool = False) -> tuple[int, ...]:
        """The explanation set: top-k features by |φ|, ties to the lower index (as every attribution explainer);
        `signed`: by φ itself, as the papers' preservation checks take "the top-k features" (a feature with a large
        negative φ makes the masked ranking *less* like the model's, so it is left out)."""
        if not signed:
            return set_from_attributions(self.values[None, :], k, docs=1)
        order = np.lexsort((np.arange(self.values.shape[0]), -self.values))
        return tuple(int(f) for f in order[:k])


class ListwiseShap:
    """RankingSHAP (`objective="kendall"`) or RankSHAP (`objective="ndcg"`) for one query at a time.

    `nsamples`: coalitions for `kernel` ("auto": 2M + 2048, shap's rule), or model-evaluated coalitions for
    `permutation` (≈ nsamples / (M − 1) orders, rounded up to antithetic pairs).
    """

    def __init__(self, objective: Objective = "kendall", *, estimator: Estimator = "auto",
                 nsamples: int | Literal["auto"] = "auto", max_exact: int = 12, cutoff: int | None = 10,
                 max_rows: int = 2_000_000) -> None:
        if objective not in ("kendall", "ndcg"):
            raise ValueError(f"objective must be 'kendall' or 'ndcg', got {objective!r}")
        if estimator not in ("auto", "exact", "kernel", "permutation"):
            raise ValueError(f"unknown estimator {estimator!r}")
        if nsamples != "auto" and (isinstance(nsamples, bool) or not isinstance(nsamples, int) or nsamples < 2):
            raise ValueError(f"nsamples must be 'auto' or an integer of at least 2, got {nsamples!r}")
        self.objective, self.estimator, self.nsamples = objective, estimator, nsamples
        self.max_exact, self.cutoff, self.max_rows = int(max_exact), cutoff, int(max_rows)

    @property
    def name(self) -> str:
        return "rankingshap" if self.objective == "kendall" else "rankshap"

    def samples_for(self, m: int) -> int:
        return 2 * m + 2048 if self.nsamples == "auto" else int(self.nsamples)

    def game(self, model: CountingRanker, query: QueryView, masker: AnyMasker) -> RankGame:
        return RankGame(model, query.X, query.scores, masker, objective=self.objective, cutoff=self.cutoff,
                        max_rows=self.max_rows)

    def explain(self, model: CountingRanker, query: QueryView, masker: AnyMasker, rng: np.random.Generator
                ) -> ListwiseResult:
        start, rows_before = time.perf_counter(), model.rows_evaluated
        game = self.game(model, query, masker)
        m, n_features = game.m, query.n_features
        estimator = self.estimator
        if estimator == "auto":
            estimator = "exact" if m <= self.max_exact else "kernel"
        phi, half = np.zeros(n_features), np.zeros(n_features)
        if m == 0:
            ends = game(np.zeros((1, 0), dtype=bool))
            empty = full = float(ends[0])
        elif estimator == "exact":
            values = game(coalition_masks(m))
            phi[game.players] = exact_shapley(values, m)
            empty, full = float(values[0]), float(values[-1])
        elif estimator == "permutation":
            orders = max(2, -(-self.samples_for(m) // max(m - 1, 1)))
            p, h, empty, full, _ = permutation_shapley(game, m, orders, rng,
                                                       batch_coalitions=self._batch(query, masker))
            phi[game.players], half[game.players] = p, h
        else:
            p, h, empty, full = self._kernel(game, rng)
            phi[game.players], half[game.players] = p, h
        return ListwiseResult(values=phi, half_width=half, empty_value=empty, full_value=full, estimator=estimator,
                              players=game.players, coalitions=game.coalitions,
                              n_model_rows=model.rows_evaluated - rows_before, seconds=time.perf_counter() - start)

    def _batch(self, query: QueryView, masker: AnyMasker) -> int:
        return max(1, self.max_rows // max(query.n_docs * int(masker.fill.shape[0]), 1))

    def _kernel(self, game: RankGame, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float, float]:
        """KernelSHAP on the game: v(∅), v(all) and every designed coalition in one batch (or as few as fit)."""
        m = game.m
        design = coalition_design(m, self.samples_for(m), rng)
        ends = np.zeros((2, m), dtype=bool)
        ends[1] = True
        values = game(np.vstack([ends, design.masks]))
        empty, full = float(values[0]), float(values[1])
        if m == 1:
            return np.array([full - empty]), np.zeros(1), empty, full
        phi, replicates = solve_with_jackknife(design, values[2:] - empty, full - empty)
        se = replicates.std(axis=0)  # pseudo-replicates: their spread (ddof 0) is the jackknife standard error
        return phi, T_975_JACKKNIFE * se, empty, full

    # The AttributionExplainer shape, so the registry can treat it like the others: one row for the whole query
    # (`docs` ignored; the registry entry says `per_document=False`), the full result in the diagnostics.
    def attribute(self, model: CountingRanker, query: QueryView, docs: np.ndarray, masker: AnyMasker,
                  rng: np.random.Generator) -> Attributions:
        result = self.explain(model, query, masker, rng)
        return Attributions(values=result.values[None, :], diagnostics={"listwise": result})


def rankingshap(options: ListwiseShapOptions | None = None) -> ListwiseShap:
    return (options or ListwiseShapOptions()).build("kendall")


def rankshap(options: ListwiseShapOptions | None = None) -> ListwiseShap:
    return (options or ListwiseShapOptions()).build("ndcg")


# ------------------------------------------------------------------------------- validity under any masking


def expected_validity(model: CountingRanker, X: np.ndarray, scores: np.ndarray, masker: AnyMasker,
                      sets: list[tuple[int, ...]], *, max_rows: int = 2_000_000) -> tuple[np.ndarray, np.ndarray]:
    """Validity and completeness of each set under `masker`: with a `RowMasker`, tau averaged over its N rows (the
    peers' measure); with a `Masker`, exactly `measure_sets`. Sets and complements × documents × rows are scored in
    one model call (when they fit in `max_rows`)."""
    if not sets:
        return np.zeros(0), np.zeros(0)
    n_features = X.shape[1]
    game = RankGame(model, X, scores, masker, players=np.arange(n_features), max_rows=max_rows)
    masks = np.vstack([keep_masks(sets, n_features), keep_masks(sets, n_features, complement=True)])
    tau = game.full_values(masks)
    return tau[: len(sets)], -tau[len(sets):]


class BackgroundValiditySearch:
    """Our validity search maximising validity under any masking — with a `RowMasker`, the expected validity over its
    background rows, which is what the peers' measure rewards (a set fitted to one mean row need not reproduce the
    ranking under other rows). Forward (beam) selection, then swaps; each step's candidate sets are *raced* over the
    rows: scored on the first `first` rows, the rows doubled while more than the sets wanted remain, and a set
    dropped once its tau, row by row, trails the leader's by more than `z` standard errors of the paired
    difference (all sets of a race see the same rows, so the differences are far less noisy than the values); the
    race ends when the rows run out or no more sets remain than wanted and the leader is clear of every other. The
    sets still in are ranked on every row they were scored on; ties go to the lexicographically smaller set. Swaps
    try only the features that ended among the `focus` best of a forward step, for at most `rounds` rounds, never
    back to a set already held. Each distinct set of non-inert features is scored once on a row. With `first` rows
    or fewer, every set is scored on every row. Each distinct masked row is scored once (`DistinctRows`). MQ2008 (40
    queries, k = 5, 100 rows, beam 1): held-out validity 0.811 against 0.819 for every set on every row, with 11% of its
    rows (2.4 M against 21 M; docs/benchmarks.md)."""

    name = "validity_search"

    def __init__(self, *, beam: int = 5, swaps: bool = True, max_rows: int = 4_000_000, first: int = 6,
                 z: float = 2.0, focus: int = 6, rounds: int = 5) -> None:
        self.beam, self.swaps, self.max_rows = beam, swaps, int(max_rows)
        self.first, self.z, self.focus, self.rounds = first, z, focus, rounds

    def select(self, model: CountingRanker, query: QueryView, k: int, masker: AnyMasker,
               rng: np.random.Generator) -> tuple[int, ...]:
        n_features = query.n_features
        inert = inert_features(model, query.X, masker)
        race = _Race(model, query, masker, inert, self.first, self.z)
        pool = [f for f in range(n_features) if not inert[f]]
        pool += [f for f in range(n_features) if inert[f]][: max(0, k - len(pool))]
        k = min(k, len(pool))
        beam: list[tuple[int, ...]] = [()]
        promising: list[int] = []
        for _ in range(k):
            width, sets = self.beam, extend_beam(beam, pool)
            if race.rows + race.first_cost(sets) > self.max_rows:
                width, sets = 1, extend_beam(beam[:1], pool)  # over the budget: forward selection from the best set
            ranked = race.run(sets, width)
            beam = ranked[:width]
            promising += [f for chosen in ranked[: self.focus] for f in chosen if f not in promising]
        current = beam[0]
        seen = {race.active(current)}
        swap_pool = [f for f in pool if f in promising]
        for _ in range(self.rounds if self.swaps else 0):
            swaps = [tuple(b if x == a else x for x in current) for a in current for b in swap_pool
                     if b not in current]
            if not swaps or race.rows + race.first_cost(swaps) > self.max_rows:
                break
            best = race.run([current, *swaps], 1)[0]
            if best == current or race.active(best) in seen:  # a race ends on its own rows: never go round
                break
            current = best
            seen.add(race.active(current))
        return current


class _Race:
    """Per-row values of sets under a `RowMasker`'s rows, scored on demand in growing prefixes of the rows."""

    def __init__(self, model: CountingRanker, query: QueryView, masker: AnyMasker, inert: np.ndarray, first: int,
                 z: float) -> None:
        self.model, self.query, self.masker, self.inert, self.first, self.z = model, query, masker, inert, first, z
        self.fill, self.average = _fill_and_average(masker)
        self.values: dict[tuple[int, ...], np.ndarray] = {}  # active set -> its value on the first rows
        self.distinct = DistinctRows(model, query.X, self.fill) if self.average else None
        self.mean_rows = 0  # model rows scored under a one-row masking

    @property
    def rows(self) -> int:
        """Model rows scored."""
        return self.mean_rows + (self.distinct.rows if self.distinct is not None else 0)

    def active(self, chosen: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted(f for f in chosen if not self.inert[f]))

    def first_cost(self, sets: list[tuple[int, ...]]) -> int:
        """The rows a race of `sets` scores before it can drop any (its first rows, for sets not yet scored)."""
        upto = min(self.first, self.fill.shape[0]) if self.average else 1
        fills = 1 if self.average else self.fill.shape[0]
        return sum(max(0, upto - len(self.values.get(key, ()))) for key in {self.active(s) for s in sets}) \
            * self.query.n_docs * fills

    def _score(self, keys: list[tuple[int, ...]], upto: int) -> None:
        """Extend each set's values to the first `upto` rows (sets of one length scored in one call)."""
        by_length: dict[int, list[tuple[int, ...]]] = {}
        for key in dict.fromkeys(keys):
            have = len(self.values.get(key, ()))
            if have < upto:
                by_length.setdefault(have, []).append(key)
        for have, group in by_length.items():
            masks = keep_masks(group, self.query.n_features)
            if self.distinct is not None:  # each distinct masked row scored once (distinct_rows.py)
                scores = self.distinct.scores(masks, np.arange(have, upto))
                new = kendall_tau_b(self.query.scores, scores.reshape(-1, self.query.n_docs)).reshape(
                    len(group), upto - have)
            else:  # one game row (the masking's mean score): nothing to race
                game = RankGame(self.model, self.query.X, self.query.scores, self.masker,
                                players=np.arange(self.query.n_features))
                new = game.full_values(masks)[:, None]
                self.mean_rows += len(group) * self.query.n_docs * self.fill.shape[0]
            for key, values in zip(group, new, strict=True):
                self.values[key] = np.concatenate([self.values.get(key, np.zeros(0)), values])

    def run(self, sets: list[tuple[int, ...]], wanted: int) -> list[tuple[int, ...]]:
        """The sets still in when the race ends, best first (mean over the rows they share)."""
        alive = list(dict.fromkeys(sets))
        total = self.fill.shape[0] if self.average else 1
        upto = min(self.first, total)
        while True:
            keys = [self.active(s) for s in alive]
            self._score(keys, upto)
            table = np.array([self.values[key][:upto] for key in keys])
            means = table.mean(axis=1)
            order = sorted(range(len(alive)), key=lambda i: (-means[i], tuple(sorted(alive[i]))))
            if upto >= total or len(alive) == 1:
                return [alive[i] for i in order]
            behind = table[order[0]][None, :] - table
            spread = behind.std(axis=1, ddof=1) if upto > 1 else np.zeros(len(alive))
            out = behind.mean(axis=1) > self.z * spread / np.sqrt(upto) + 1e-12
            if len(alive) <= wanted and out.sum() == len(alive) - 1:  # the sets wanted, and a clear leader
                return [alive[i] for i in order]
            kept = [i for i in order if not out[i]]
            alive = [alive[i] for i in (kept if len(kept) >= wanted else order[:wanted])]
            upto = min(total, 2 * upto)
