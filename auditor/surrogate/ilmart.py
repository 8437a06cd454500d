"""ILMART (paper 002): a LambdaMART whose trees each use one feature or one selected pair, on stock LightGBM.

The authors' code needs their LightGBM fork (per-tree feature limits). Stock LightGBM has interaction constraints
per branch, which are enough (../shared/RESEARCH.md, "ILMART on stock LightGBM"):

1. **Main effects.** `interaction_constraints=[[f] for f in allowed]`: every tree splits on one feature only
   (a feature in no constraint set is never used). Early stopping on validation queries picks the number of trees.
   When more than `max_features` distinct features were used, the `max_features` with the largest total gain are
   kept and the phase is trained again on them alone (the cap; the paper has none: n_m is an outcome there).
2. **Interaction selection.** Continue from the main-effects model with 3-leaf trees (two splits, so at most two
   features a tree) constrained to the main-effect features (interaction heredity). Pairs are ranked by first
   appearance (the paper's rule: boosting picks the strongest first) or by their total split gain; the probe
   trees are thrown away.
3. **Interaction learning.** `interaction_constraints=[[i, j] for the top-k pairs]` with `init_model` = the
   main-effects model, early stopping on the validation queries. With overlapping pairs one tree may use
   {i, j} in one branch and {i, l} in another, but every root-to-leaf path stays inside one pair, which is what
   the decomposition (auditor/surrogate/decompose.py) relies on. If no interaction round beats the main-effects
   model on validation, the final model is the main-effects model (ILMARTi = ILMART).

Targets: integer grades with `objective="lambdarank"` (labels, or grades made from a black box's scores) or real
values with `objective="regression"` (e.g. per-query-standardised black-box scores); see surrogate/targets.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import lightgbm as lgb
import numpy as np

Objective = Literal["lambdarank", "regression"]
Selection = Literal["first", "gain"]
Stopping = Literal["metric", "kendall"]


@dataclass(frozen=True)
class IlmartConfig:
    """Training settings. The paper tunes leaves in {32, 64} and the learning rate in {0.05, 0.1}."""

    objective: Objective = "lambdarank"
    n_interactions: int = 10
    max_features: int | None = None
    selection: Selection = "first"
    learning_rate: float = 0.1
    num_leaves: int = 15
    min_data_in_leaf: int = 20
    max_rounds: int = 1000
    patience: int = 30
    probe_rounds: int = 1000
    eval_at: int = 10
    stopping: Stopping = "metric"  # "kendall": early stopping on mean Kendall tau_b against the validation targets
    seed: int = 0
    num_threads: int = 0  # 0: LightGBM's default (all cores)

    def __post_init__(self) -> None:
        if self.n_interactions < 0:
            raise ValueError(f"n_interactions must be >= 0; got {self.n_interactions}")
        if self.max_features is not None and self.max_features < 1:
            raise ValueError(f"max_features must be >= 1 or None; got {self.max_features}")
        if self.stopping not in ("metric", "kendall"):
            raise ValueError(f"stopping must be 'metric' or 'kendall'; got {self.stopping!r}")
        if self.num_leaves < 2 or self.max_rounds < 1 or self.patience < 1:
            raise ValueError("num_leaves must be >= 2, max_rounds and patience >= 1")

    def params(self, **overrides: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "objective": self.objective, "learning_rate": self.learning_rate, "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf, "seed": self.seed, "deterministic": True,
            "force_row_wise": True, "verbosity": -1, "num_threads": self.num_threads,
        }
        if self.stopping == "kendall":
            base.update(metric="None")  # the Kendall feval (ValidKendall) is the only validation measure
        elif self.objective == "lambdarank":
            base.update(metric="ndcg", eval_at=[self.eval_at])
        else:
            base.update(metric="l2")
        base.update(overrides)
        return base


@dataclass(frozen=True)
class RankSet:
    """Rows of whole queries: X, a target per row, and the group sizes in row order."""

    X: np.ndarray
    y: np.ndarray
    groups: np.ndarray

    @classmethod
    def from_ptr(cls, X: np.ndarray, y: np.ndarray, query_ptr: np.ndarray) -> RankSet:
        return cls(X, y, np.diff(query_ptr))


@dataclass
class IlmartFit:
    """What training produced: ILMARTi (`booster`), ILMART (`main_booster`), and how each phase went."""

    booster: lgb.Booster
    main_booster: lgb.Booster
    main_features: list[int]
    pairs: list[tuple[int, int]]
    main_trees: int
    interaction_trees: int
    probe_trees: int
    valid_score: dict[str, float] = field(default_factory=dict)  # phase -> best validation metric
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> wall time


def fit_ilmart(train: RankSet, valid: RankSet, *, config: IlmartConfig | None = None,
               feature_names: list[str] | None = None, on_round: Callable[[], None] | None = None) -> IlmartFit:
    """Train ILMART and ILMARTi (the three phases of the module docstring) with early stopping on `valid`.
    `on_round` is called after every boosting round of every phase (progress)."""
    rounds = [] if on_round is None else [lambda _env: on_round()]
    config = config or IlmartConfig()
    if config.objective == "lambdarank" and not np.all(np.equal(np.mod(train.y, 1), 0)):
        raise ValueError("objective 'lambdarank' needs integer grades; use objective 'regression' for real targets")
    n_features = train.X.shape[1]
    dtrain = lgb.Dataset(train.X, train.y, group=train.groups, free_raw_data=False,
                         feature_name=feature_names or "auto",
                         params={"verbosity": -1, "min_data_in_leaf": config.min_data_in_leaf})
    dvalid = lgb.Dataset(valid.X, valid.y, group=valid.groups, reference=dtrain, free_raw_data=False)
    seconds: dict[str, float] = {}
    scores: dict[str, float] = {}

    started = time.perf_counter()
    allowed = list(range(n_features))
    main, best = _boost(config, dtrain, dvalid, constraints=[[f] for f in allowed], rounds=rounds)
    used = _used_features(main)
    if config.max_features is not None and len(used) > config.max_features:
        gain = main.feature_importance("gain")
        keep = sorted(sorted(used, key=lambda f: (-gain[f], f))[: config.max_features])
        main, best = _boost(config, dtrain, dvalid, constraints=[[f] for f in keep], rounds=rounds)
        used = _used_features(main)
    seconds["main_effects"] = time.perf_counter() - started
    scores["main_effects"] = best
    main_trees = main.num_trees()

    pairs: list[tuple[int, int]] = []
    probe_trees = 0
    final, interaction_trees = main, 0
    if config.n_interactions > 0 and len(used) >= 2:
        started = time.perf_counter()
        pairs, probe_trees = _select_pairs(config, dtrain, main, used, rounds=rounds)
        seconds["interaction_selection"] = time.perf_counter() - started
        if pairs:
            started = time.perf_counter()
            candidate, best_i = _boost(config, dtrain, dvalid, constraints=[list(p) for p in pairs], init_model=main,
                                       main_best=best, rounds=rounds)
            seconds["interaction_learning"] = time.perf_counter() - started
            scores["interactions"] = best_i
            if candidate.num_trees() > main_trees:
                final, interaction_trees = candidate, candidate.num_trees() - main_trees
    return IlmartFit(booster=final, main_booster=main, main_features=used, pairs=pairs, main_trees=main_trees,
                     interaction_trees=interaction_trees, probe_trees=probe_trees, valid_score=scores,
                     seconds=seconds)


def _boost(config: IlmartConfig, dtrain: lgb.Dataset, dvalid: lgb.Dataset, *, constraints: list[list[int]],
           init_model: lgb.Booster | None = None, main_best: float | None = None,
           rounds: list[Callable[[Any], None]] | None = None) -> tuple[lgb.Booster, float]:
    """Boost under `constraints` with early stopping; returns the model cut at its best round (init trees kept)
    and the best validation score. With `init_model`, a model no better than `main_best` is returned uncut so the
    caller can keep the init model."""
    params = config.params(interaction_constraints=constraints)
    feval = ValidKendall(dvalid) if config.stopping == "kendall" else None
    booster = lgb.train(params, dtrain, num_boost_round=config.max_rounds, valid_sets=[dvalid], valid_names=["valid"],
                        init_model=init_model, keep_training_booster=True, feval=feval,
                        callbacks=[lgb.early_stopping(config.patience, verbose=False), *(rounds or [])])
    if feval is not None:
        metric = "kendall"
    else:
        metric = "ndcg@" + str(config.eval_at) if config.objective == "lambdarank" else "l2"
    best = float(booster.best_score["valid"][metric])
    if init_model is not None and main_best is not None:
        better = best < main_best if metric == "l2" else best > main_best
        if not better:
            return init_model, main_best
    kept = booster.best_iteration or booster.current_iteration()
    return lgb.Booster(model_str=booster.model_to_string(num_iteration=kept)), best


class ValidKendall:
    """LightGBM feval: mean Kendall tau_b, over the validation queries with an order, between the model's scores
    and the validation targets (for a surrogate: the black box's standardised scores or its rank grades).
    All within-query pairs are precomputed once, so one evaluation is a few vectorised operations."""

    def __init__(self, dvalid: lgb.Dataset) -> None:
        y = np.asarray(dvalid.get_label(), dtype=np.float64)
        sizes = np.asarray(dvalid.get_group(), dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        left, right, query = [], [], []
        for q, (start, n) in enumerate(zip(starts, sizes, strict=True)):
            i, j = np.triu_indices(int(n), k=1)
            left.append(start + i)
            right.append(start + j)
            query.append(np.full(len(i), q))
        self.i = np.concatenate(left) if left else np.zeros(0, dtype=np.int64)
        self.j = np.concatenate(right) if right else np.zeros(0, dtype=np.int64)
        self.query = np.concatenate(query) if query else np.zeros(0, dtype=np.int64)
        self.n_queries = len(sizes)
        self.ref = np.sign(y[self.i] - y[self.j])
        self.ref_untied = np.bincount(self.query, weights=np.abs(self.ref), minlength=self.n_queries)
        self.kept = self.ref_untied > 0

    def __call__(self, preds: np.ndarray, _data: lgb.Dataset) -> tuple[str, float, bool]:
        return "kendall", self.mean_tau(np.asarray(preds, dtype=np.float64)), True

    def mean_tau(self, scores: np.ndarray) -> float:
        if not self.kept.any():
            return 0.0
        signs = np.sign(scores[self.i] - scores[self.j])
        numerator = np.bincount(self.query, weights=signs * self.ref, minlength=self.n_queries)
        untied = np.bincount(self.query, weights=np.abs(signs), minlength=self.n_queries)
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = np.where(untied > 0, numerator / np.sqrt(self.ref_untied * untied), 0.0)
        return float(np.clip(tau[self.kept], -1.0, 1.0).mean())


def _select_pairs(config: IlmartConfig, dtrain: lgb.Dataset, main: lgb.Booster, features: list[int], *,
                  rounds: list[Callable[[Any], None]] | None = None) -> tuple[list[tuple[int, int]], int]:
    """Phase 2: 3-leaf trees continuing from `main`, on the main-effect features only. 'first': pairs in order of
    first appearance, stop at k; 'gain': run until 2k distinct pairs (or the round limit), keep the k of largest
    total split gain."""
    k = config.n_interactions
    possible = len(features) * (len(features) - 1) // 2  # stop once every pair has shown up
    wanted = min(k if config.selection == "first" else 2 * k, possible)
    seen: dict[tuple[int, int], float] = {}
    start = main.current_iteration()

    def watch(env: lgb.callback.CallbackEnv) -> None:
        assert isinstance(env.model, lgb.Booster)  # lgb.train's (lgb.cv's would be a CVBooster)
        tree = env.model.dump_model(start_iteration=env.iteration, num_iteration=1)["tree_info"][0]["tree_structure"]
        gains: dict[int, float] = {}
        _split_gains(tree, gains)
        if len(gains) == 2:
            first, second = sorted(gains)
            seen[first, second] = seen.get((first, second), 0.0) + sum(gains.values())
        if len(seen) >= wanted:
            raise lgb.callback.EarlyStopException(env.iteration, [])

    params = config.params(num_leaves=3, interaction_constraints=[list(features)], metric="None")
    probe = lgb.train(params, dtrain, num_boost_round=config.probe_rounds, init_model=main,
                      callbacks=[*(rounds or []), watch])
    probe_trees = probe.current_iteration() - start
    pairs = list(seen)  # insertion order = first appearance
    if config.selection == "gain":
        pairs = sorted(pairs, key=lambda p: -seen[p])
    return pairs[:k], probe_trees


def _split_gains(node: dict[str, Any], out: dict[int, float]) -> None:
    if "split_feature" in node:
        f = int(node["split_feature"])
        out[f] = out.get(f, 0.0) + float(node.get("split_gain", 0.0))
        _split_gains(node["left_child"], out)
        _split_gains(node["right_child"], out)


def _used_features(booster: lgb.Booster) -> list[int]:
    return [int(f) for f in np.flatnonzero(booster.feature_importance("split") > 0)]


def tree_feature_sets(booster: lgb.Booster, *, start: int = 0) -> list[list[frozenset[int]]]:
    """For each tree from `start` on, the feature set of every root-to-leaf path (what the tests check)."""
    out = []
    for info in booster.dump_model(start_iteration=start)["tree_info"]:
        paths: list[frozenset[int]] = []
        _paths(info["tree_structure"], frozenset(), paths)
        out.append(paths)
    return out


def _paths(node: dict[str, Any], prefix: frozenset[int], out: list[frozenset[int]]) -> None:
    if "split_feature" not in node:
        out.append(prefix)
        return
    here = prefix | {int(node["split_feature"])}
    _paths(node["left_child"], here, out)
    _paths(node["right_child"], here, out)
