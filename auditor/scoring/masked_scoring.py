"""Scores of masked documents read straight off the trees, without building the masked rows.

Most of an audit's model time goes to masked rows: a document x with every feature outside a keep-mask replaced by
one fill vector (`masking.Masker`: mean, median, zero). Building C masks × n documents rows for a predictor
walks every tree from the root for every row, deciding again and again splits no mask can change: a split sends x's
own value one way and the fill value one way, and where the two agree the mask does not matter.

So each document gets a jump table: from a node, follow the directions x and the fill agree on down to the first
leaf or split the mask decides. A mask then visits only those splits (2.6 nodes a tree instead of 8 on the wide
benchmark model). Directions are `trees._leaf`'s rule, one step at a time (`_child`), on the values as the
library reads them (float32 for scikit-learn, XGBoost and CatBoost; LightGBM's zero filter; NaN read as 0 unless the
split routes it; missing types Zero and NaN to the default side), and leaves are summed as `_score` sums them (tree
order, float64 from the bias, or XGBoost's float32 sum): scores are bit-identical to `TreeEnsemble.predict` of the
rows `np.where(keep, x, fill)`, and so to LightGBM's predict.

The table is built top-down, tree by tree, into a compact link table (`_masked`): only splits some mask can reach
are decided (2 in 5 on that model), and a walk reads two small arrays. The same table built bottom-up over
node-sized arrays is 2x slower, and walking every path with precomputed directions 5x
(benchmarks/masked_scoring.py). Documents run in parallel and masks inside, so a document's table serves all its
masks; each parallel task reuses four node-sized arrays.

Two things make a search's calls cheaper still (benchmarks/masked_scoring.py; the 136-feature audit's local
explanations 21 → 13 s):
- a document's tables are built once per model, documents and fill, and kept between calls (`document_tables`): a
  query's searches make dozens of calls on the same documents;
- a search step's masks are one chosen set plus one more feature each (beam, greedy and swap steps). Grouped into
  such families (`mask_families`), each tree is walked once for the family's base, and a mask leaves the base's path
  only where its added feature decides a split on it; the sums stay in tree order, so scores stay bit-identical.

`masked_scores_rows` scores rows that each take their fill from one of many reference rows (pairwise
explanations): rows are grouped by (document, fill row) pair and each pair's table, built with the fill's directions
worked out at the splits met, serves that pair's rows; pairs with too few rows for a table to pay walk the trees.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import get_num_threads, njit, prange

from auditor.scoring.trees import K_ZERO, MISSING_NAN, MISSING_ZERO, TreeEnsemble, UnsupportedModel


def masked_ensemble(model: Any) -> TreeEnsemble | None:
    """The array form `masked_scores` can use for `model` (a TreeEnsemble, or a ranker, counted or not, with
    `tree_ensemble()`), or None: not a tree model, or a part the array form does not cover (categorical splits,
    linear trees, multi-output). Any TreeEnsemble can be used. A ranker's `tree_ensemble()` may rebuild the
    arrays on every call (LightGBM dumps its model): keep the result."""
    if isinstance(model, TreeEnsemble):
        return model
    model = getattr(model, "inner", model)  # CountingRanker
    build = getattr(model, "tree_ensemble", None)
    if build is None:
        return None
    try:
        ensemble = build()
    except UnsupportedModel:
        return None
    return ensemble if isinstance(ensemble, TreeEnsemble) else None


def masked_scores(ensemble: TreeEnsemble, X: np.ndarray, fill: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """(C × n) scores of documents X (n × F) under keep-masks (C × F, True = the document's own value), every other
    feature set to `fill` (F values): `ensemble.predict(np.where(keep[:, None], X[None], fill))`, bit for bit.
    One fill row: a `background` Masker's several rows are one call each."""
    X = ensemble.rows(np.atleast_2d(X))
    fill = ensemble.rows(np.reshape(fill, (1, -1)))[0]
    keep = np.ascontiguousarray(np.atleast_2d(keep), dtype=np.bool_)
    if X.shape[1] < ensemble.n_features or fill.shape[0] != X.shape[1] or keep.ndim != 2 or keep.shape[1] != X.shape[1]:
        raise ValueError(f"X {X.shape}, fill {fill.shape} and keep {keep.shape} need the same columns, at least "
                         f"{ensemble.n_features}")
    out = np.empty((keep.shape[0], X.shape[0]))
    if not (X.shape[0] and keep.shape[0]):
        return out
    e = ensemble
    tables = document_tables(e, X, fill)
    tasks = min(X.shape[0], 4 * get_num_threads())  # a few per thread: one slowed by other work holds up less
    families = mask_families(keep) if keep.shape[0] >= _FAMILY_MIN_MASKS else None
    if families is not None and families[1].shape[0] >= _FAMILY_MIN_ROWS * families[0].shape[0]:
        bases, order, starts, extra, inverse = families
        by_family = np.empty((order.shape[0], X.shape[0]))
        _masked_families(*tables.arrays, bases, starts, extra, e.value, e.weight, float(e.bias), e.float32_sum,
                         tasks, by_family)
        distinct = np.empty_like(by_family)
        distinct[order] = by_family
        return distinct[inverse]
    _masked(*tables.arrays, keep, e.value, e.weight, float(e.bias), e.float32_sum, tasks, out)
    return out


@dataclass(frozen=True)
class DocumentTables:
    """Every document's link table (see `_masked`) for one model and one fill, concatenated: document d's is
    link[link_start[d]:link_start[d + 1]] and feat[feat_start[d]:feat_start[d + 1]]."""

    ensemble: TreeEnsemble
    key: bytes
    link: np.ndarray
    feat: np.ndarray
    link_start: np.ndarray
    feat_start: np.ndarray

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        return self.link, self.feat, self.link_start, self.feat_start, self.ensemble.roots.shape[0]

    @property
    def nbytes(self) -> int:
        return self.link.nbytes + self.feat.nbytes


# A search asks for the masked scores of the same documents under the same fill dozens of times (each beam, greedy
# and swap step is a call): their tables are kept, the most recent first, up to this many bytes, and found again by
# the model and a digest of the documents and the fill. Building them took half the kernel time of a wide audit's
# local explanations (2,184 calls over 43 queries).
_TABLE_CACHE_BYTES = 64 << 20
# Documents whose tables, with room for every split of the model, fit in this many bytes are built in one pass (a
# small query's calls are many and short: a second pass to count was 0.3 ms a call on the bookstore).
_ONE_PASS_BYTES = 16 << 20
_table_cache: list[DocumentTables] = []
_table_lock = threading.Lock()


def document_tables(ensemble: TreeEnsemble, X: np.ndarray, fill: np.ndarray) -> DocumentTables:
    """The link tables of documents X (as `ensemble.rows` reads them) under one fill row: kept from an earlier call
    on the same model, documents and fill, or built (and kept, when they fit)."""
    X, fill = np.ascontiguousarray(X), np.ascontiguousarray(fill)
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.asarray(X.shape, dtype=np.int64).tobytes())
    digest.update(X.data)
    digest.update(fill.data)
    key = digest.digest()
    with _table_lock:
        for place, entry in enumerate(_table_cache):
            if entry.ensemble is ensemble and entry.key == key:
                _table_cache.insert(0, _table_cache.pop(place))
                return entry
    e = ensemble
    by_fill = _fill_children(fill, e.feature, e.threshold, e.left, e.right, e.default_left, e.missing, e.zero_filter)
    args = (X, by_fill, e.feature, e.threshold, e.left, e.right, e.default_left, e.missing, e.roots, e.zero_filter)
    tasks = min(X.shape[0], 4 * get_num_threads())
    n_docs, n_trees, n_splits = X.shape[0], e.roots.shape[0], int(np.count_nonzero(e.feature >= 0))
    splits = np.zeros(n_docs, dtype=np.int64)
    if n_docs * (n_trees + 3 * n_splits) * 4 <= _ONE_PASS_BYTES:  # room for every split of every document: one pass
        feat_start = np.arange(n_docs + 1, dtype=np.int64) * n_splits
        link_start = np.arange(n_docs + 1, dtype=np.int64) * (n_trees + 2 * n_splits)
    else:  # count each document's splits first, then build into exactly that room
        _count_splits(*args, tasks, splits)
        feat_start = np.concatenate([[0], np.cumsum(splits)]).astype(np.int64)
        link_start = feat_start * 2 + np.arange(n_docs + 1, dtype=np.int64) * n_trees
    link = np.empty(int(link_start[-1]), dtype=np.int32)
    feat = np.empty(int(feat_start[-1]), dtype=np.int32)
    _build_tables(*args, tasks, link_start, feat_start, link, feat, splits)
    tables = DocumentTables(e, key, link, feat, link_start, feat_start)
    if tables.nbytes <= _TABLE_CACHE_BYTES:
        with _table_lock:
            _table_cache.insert(0, tables)
            total = 0
            for place, entry in enumerate(_table_cache):
                total += entry.nbytes
                if total > _TABLE_CACHE_BYTES:
                    del _table_cache[place:]
                    break
    return tables


@njit(cache=True, parallel=True)
def _count_splits(X, by_fill, feature, threshold, left, right, default_left, missing, roots, zero_filter, n_tasks,
                  splits):
    """splits[doc] = the number of mask-decided splits in document doc's link table."""
    n_docs, n_nodes, n_trees = X.shape[0], feature.shape[0], roots.shape[0]
    for task in prange(n_tasks):
        link = np.empty(n_trees + 2 * n_nodes, dtype=np.int32)
        feat = np.empty(n_nodes, dtype=np.int32)
        slots = np.empty(n_nodes, dtype=np.int32)
        starts = np.empty(n_nodes, dtype=np.int32)
        for doc in range(task * n_docs // n_tasks, (task + 1) * n_docs // n_tasks):
            splits[doc] = _table(X[doc], X[doc], by_fill, _fill_shared, feature, threshold, left, right,
                                 default_left, missing, roots, zero_filter, link, feat, slots, starts)


@njit(cache=True, parallel=True)
def _build_tables(X, by_fill, feature, threshold, left, right, default_left, missing, roots, zero_filter, n_tasks,
                  link_start, feat_start, link, feat, splits):
    """Each document's link table into its slice of `link` and `feat` (room for every split, or the room
    `_count_splits` counted), and its number of splits into `splits`."""
    n_docs, n_nodes = X.shape[0], feature.shape[0]
    for task in prange(n_tasks):
        slots = np.empty(n_nodes, dtype=np.int32)
        starts = np.empty(n_nodes, dtype=np.int32)
        for doc in range(task * n_docs // n_tasks, (task + 1) * n_docs // n_tasks):
            splits[doc] = _table(X[doc], X[doc], by_fill, _fill_shared, feature, threshold, left, right,
                                 default_left, missing, roots, zero_filter, link[link_start[doc]:link_start[doc + 1]],
                                 feat[feat_start[doc]:feat_start[doc + 1]], slots, starts)


# A (document, fill) pair with fewer rows than this walks the trees on each row instead of building its table: on the
# 136-feature benchmark model a table costs about two walks (1.6-2.3 rows a pair: tables for every pair 0.4-0.5x the
# walks' speed, from 3 rows on the same; 100 rows a pair: 2 to 6 alike).
_TABLE_MIN_ROWS = 3


def masked_scores_rows(ensemble: TreeEnsemble, X: np.ndarray, fills: np.ndarray, doc_of_row: np.ndarray,
                       fill_of_row: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """(M,) scores of rows `np.where(keep[m], X[doc_of_row[m]], fills[fill_of_row[m]])`, bit for bit as
    `ensemble.predict` of those rows: documents X (n × F), fill rows `fills` (R × F), keep-masks (M × F).

    Pairwise explanations fill each row from one of many reference rows, so `masked_scores`'s one shared fill does
    not fit; but a (document, fill row) pair recurs across many masks. Rows are grouped by pair, each pair's jump
    table is built once (the fill's directions worked out per pair, at the splits the build meets) and serves all
    the pair's rows. Pairs with fewer than `_TABLE_MIN_ROWS` rows, where a table does not pay, walk the trees on
    each row directly, reading x or the fill by the mask."""
    X = ensemble.rows(np.atleast_2d(X))
    fills = ensemble.rows(np.atleast_2d(fills))
    keep = np.ascontiguousarray(np.atleast_2d(keep), dtype=np.bool_)
    doc_of_row, fill_of_row = np.asarray(doc_of_row), np.asarray(fill_of_row)
    n, R, M = X.shape[0], fills.shape[0], keep.shape[0]
    if (X.ndim != 2 or fills.ndim != 2 or keep.ndim != 2 or X.shape[1] < ensemble.n_features
            or fills.shape[1] != X.shape[1] or keep.shape[1] != X.shape[1]):
        raise ValueError(f"X {X.shape}, fills {fills.shape} and keep {keep.shape} need the same columns, at least "
                         f"{ensemble.n_features}")
    for name, index, size in (("doc_of_row", doc_of_row, n), ("fill_of_row", fill_of_row, R)):
        if index.shape != (M,) or (index.size and index.dtype.kind not in "iu"):
            raise ValueError(f"{name} needs {M} integers, one per keep row: got {index.dtype} {index.shape}")
        if index.size and (index.min() < 0 or index.max() >= size):
            raise ValueError(f"{name} indexes outside [0, {size}): {index.min()}..{index.max()}")
    out = np.empty(M)
    if not M:
        return out
    key = doc_of_row.astype(np.int64) * R + fill_of_row.astype(np.int64)
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    pair_start = np.append(first, M).astype(np.int64)
    pair_doc, pair_fill = (key[first] // R).astype(np.int64), (key[first] % R).astype(np.int64)
    n_tasks = min(first.shape[0], 4 * get_num_threads())
    # task boundaries in pairs, even in rows: one pair with many rows does not leave the other threads idle
    bounds = np.searchsorted(first, np.arange(n_tasks + 1) * M // n_tasks).astype(np.int64)
    bounds[-1] = first.shape[0]
    e = ensemble
    _masked_rows(X, fills, keep, order.astype(np.int64), pair_start, pair_doc, pair_fill, bounds, _TABLE_MIN_ROWS,
                 e.feature, e.threshold, e.left, e.right, e.default_left, e.missing, e.value, e.roots, e.weight,
                 float(e.bias), e.zero_filter, e.float32_sum, out)
    return out


@njit(cache=True, inline="always")
def _child(value, node, threshold, left, right, default_left, missing, zero_filter):
    """The child `trees._leaf` sends `value` to from split `node` (the same rule, one step)."""
    if zero_filter and -K_ZERO <= value <= K_ZERO:
        value = 0.0
    kind = missing[node]
    if np.isnan(value) and kind != MISSING_NAN:
        value = 0.0
    if (kind == MISSING_ZERO and -K_ZERO <= value <= K_ZERO) or (kind == MISSING_NAN and np.isnan(value)):
        return left[node] if default_left[node] else right[node]
    if value <= threshold[node]:
        return left[node]
    return right[node]


@njit(cache=True)
def _fill_children(fill, feature, threshold, left, right, default_left, missing, zero_filter):
    """Where the fill value goes at every split (-1 at leaves): the same for every document."""
    out = np.full(feature.shape[0], -1, dtype=np.int32)
    for node in range(feature.shape[0]):
        if feature[node] >= 0:
            out[node] = _child(fill[feature[node]], node, threshold, left, right, default_left, missing, zero_filter)
    return out


@njit(cache=True, inline="always")
def _leaf_under(link, feat, kept, n_trees, tree):
    """The leaf tree `tree` gives the document under keep-mask `kept`, through its link table (see `_masked`)."""
    k = link[tree]
    while k >= 0:
        k = link[n_trees + 2 * k + (0 if kept[feat[k]] else 1)]
    return -k - 1


@njit(cache=True, parallel=True)
def _masked(links, feats, link_start, feat_start, n_trees, keep, value, weight, bias, float32_sum, n_tasks, out):
    """out[c, doc] = the score of document doc under mask c, through the documents' link tables.

    A document's jump table is built depth-first (`_table`), one tree at a time, as a link table over the
    mask-decided splits only, numbered k = 0, 1, ... as they are met: `link[t]` is where tree t starts,
    `link[n_trees + 2k]` and `link[n_trees + 2k + 1]` where split k leads when its feature `feat[k]` is kept and when
    it is filled; an entry is a split number k >= 0 or -(leaf + 1). Splits no mask can reach are never decided.
    Bounds: k < n_nodes, and the stack holds at most one entry more than the depth of a tree."""
    n_docs = link_start.shape[0] - 1
    for task in prange(n_tasks):
        for doc in range(task * n_docs // n_tasks, (task + 1) * n_docs // n_tasks):
            link = links[link_start[doc]:link_start[doc + 1]]
            feat = feats[feat_start[doc]:feat_start[doc + 1]]
            for c in range(keep.shape[0]):
                out[c, doc] = _total(link, feat, keep[c], n_trees, value, weight, bias, float32_sum)


@njit(cache=True, inline="always")
def _fill_shared(fill, by_fill, node, feature, threshold, left, right, default_left, missing, zero_filter):
    """Where the fill goes at split `node`: looked up, one fill for every document (`masked_scores`)."""
    return by_fill[node]


@njit(cache=True, inline="always")
def _fill_own(fill, by_fill, node, feature, threshold, left, right, default_left, missing, zero_filter):
    """Where the fill goes at split `node`: worked out from the fill row, one per (document, fill) pair."""
    return _child(fill[feature[node]], node, threshold, left, right, default_left, missing, zero_filter)


@njit(cache=True, inline="always")
def _table(x, fill, by_fill, fill_child, feature, threshold, left, right, default_left, missing, roots, zero_filter,
           link, feat, slots, starts):
    """Build document x's link table (see `_masked`) into `link` and `feat`, with `slots` and `starts` as the stack.
    `fill_child` (`_fill_shared` or `_fill_own`, compiled into each caller) gives the fill's direction at a split."""
    n_trees = roots.shape[0]
    k = 0
    for tree in range(n_trees):
        slots[0], starts[0], top = tree, roots[tree], 1
        while top > 0:
            top -= 1
            slot, node = slots[top], starts[top]
            own = node
            filled = node
            while feature[node] >= 0:  # follow the splits x and the fill agree on
                own = _child(x[feature[node]], node, threshold, left, right, default_left, missing, zero_filter)
                filled = fill_child(fill, by_fill, node, feature, threshold, left, right, default_left, missing,
                                    zero_filter)
                if own != filled:
                    break
                node = own
            if feature[node] < 0:
                link[slot] = -(node + 1)
                continue
            link[slot], feat[k] = k, feature[node]
            slots[top], starts[top] = n_trees + 2 * k, own
            slots[top + 1], starts[top + 1] = n_trees + 2 * k + 1, filled
            top += 2
            k += 1
    return k


@njit(cache=True, inline="always")
def _total(link, feat, kept, n_trees, value, weight, bias, float32_sum):
    """The score under keep-mask `kept` through a link table, summed as `auditor.scoring.trees._score` sums."""
    small = np.float32(bias)
    total = bias
    for tree in range(n_trees):
        leaf = _leaf_under(link, feat, kept, n_trees, tree)
        if float32_sum:
            small = np.float32(small + np.float32(weight[tree] * value[leaf]))
        else:
            total += weight[tree] * value[leaf]
    return np.float64(small) if float32_sum else total


@njit(cache=True, inline="always")
def _leaf_mixed(x, fill, kept, node, feature, threshold, left, right, default_left, missing, zero_filter):
    """The leaf from `node` of the row that reads x where `kept`, else the fill (`trees._leaf`'s rule)."""
    while feature[node] >= 0:
        f = feature[node]
        node = _child(x[f] if kept[f] else fill[f], node, threshold, left, right, default_left, missing, zero_filter)
    return node


@njit(cache=True, parallel=True)
def _masked_rows(X, fills, keep, order, pair_start, pair_doc, pair_fill, bounds, min_rows, feature, threshold, left,
                 right, default_left, missing, value, roots, weight, bias, zero_filter, float32_sum, out):
    """out[order[i]] for the rows i of each pair: document pair_doc[p], fill row pair_fill[p], rows
    pair_start[p]..pair_start[p + 1] of `order`; tasks take the pairs bounds[t]..bounds[t + 1]. A pair with at
    least `min_rows` rows gets a link table (`_masked`), the fill's directions computed from its fill row."""
    n_nodes, n_trees = feature.shape[0], roots.shape[0]
    no_table = np.empty(0, dtype=np.int32)
    for task in prange(bounds.shape[0] - 1):
        link = np.empty(n_trees + 2 * n_nodes, dtype=np.int32)
        feat = np.empty(n_nodes, dtype=np.int32)
        slots = np.empty(n_nodes, dtype=np.int32)
        starts = np.empty(n_nodes, dtype=np.int32)
        for pair in range(bounds[task], bounds[task + 1]):
            x, fill = X[pair_doc[pair]], fills[pair_fill[pair]]
            if pair_start[pair + 1] - pair_start[pair] >= min_rows:
                _table(x, fill, no_table, _fill_own, feature, threshold, left, right, default_left, missing, roots,
                       zero_filter, link, feat, slots, starts)
                for i in range(pair_start[pair], pair_start[pair + 1]):
                    out[order[i]] = _total(link, feat, keep[order[i]], n_trees, value, weight, bias, float32_sum)
                continue
            for i in range(pair_start[pair], pair_start[pair + 1]):  # summed as auditor.scoring.trees._score sums
                kept = keep[order[i]]
                small = np.float32(bias)
                total = bias
                for tree in range(n_trees):
                    leaf = _leaf_mixed(x, fill, kept, roots[tree], feature, threshold, left, right, default_left,
                                       missing, zero_filter)
                    if float32_sum:
                        small = np.float32(small + np.float32(weight[tree] * value[leaf]))
                    else:
                        total += weight[tree] * value[leaf]
                out[order[i]] = np.float64(small) if float32_sum else total


# Families pay from this many rows a base on average (`masked_scores`): one base's walk and its patches cost about a
# row's walk each. Calls with fewer masks are not grouped: their grouping costs about what it saves.
_FAMILY_MIN_ROWS = 3.0
_FAMILY_MIN_MASKS = 16


def mask_families(keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Group the distinct keep-masks of `keep` (C × F) into families: a base mask and rows that each keep the base
    and at most one more feature — the shape of a greedy or beam step (every candidate added to the same chosen
    set) and of a swap step (each member left out, every non-member added). Returns (bases B × F; order U: the
    distinct masks sorted by family; starts B + 1: family b is order[starts[b]:starts[b + 1]]; extra U: the
    feature the mask at each sorted place adds, -1 none; inverse C: each mask's distinct mask), or None.

    Each mask could come from itself (extra -1) or from any kept feature left out; it joins the base most masks
    could share (ties to the mask itself, then to the lowest feature). Masks and bases are matched by a 64-bit sum
    of per-feature random codes, then checked mask against mask: on a hash collision (None) the caller scores
    every mask on its own, so the grouping is always exact. None too when the masks' sizes differ by more than one."""
    F = keep.shape[1]
    sizes = np.count_nonzero(keep, axis=1)
    if np.ptp(sizes) > 1:  # a step adds one feature to sets of one size; masks of many sizes (all coalitions) do not
        return None        # group well, and grouping them costs what it saves
    code = _feature_codes(F)
    hashes = np.where(keep, code, np.uint64(0)).sum(axis=1, dtype=np.uint64)
    own, first_index, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    distinct = keep[first_index]
    if not np.array_equal(distinct[inverse.reshape(-1)], keep):
        return None
    U = distinct.shape[0]
    rows, feats = np.nonzero(distinct)
    cand_row = np.concatenate([np.arange(U), rows])
    cand_extra = np.concatenate([np.full(U, -1, dtype=np.int64), feats.astype(np.int64)])
    _, family, counts = np.unique(np.concatenate([own, own[rows] - code[feats]]), return_inverse=True,
                                  return_counts=True)
    family = family.reshape(-1)
    pick = np.lexsort((cand_extra, -counts[family], cand_row))  # per mask: most shared, then itself, then lowest
    chosen = pick[np.r_[True, cand_row[pick][1:] != cand_row[pick][:-1]]]  # one candidate per mask, in mask order
    extra, group = cand_extra[chosen], family[chosen]
    order = np.argsort(group, kind="stable")
    new_family = np.r_[True, group[order][1:] != group[order][:-1]]
    base = distinct[order]
    adds = np.flatnonzero(extra[order] >= 0)
    base[adds, extra[order][adds]] = False
    leader = np.flatnonzero(new_family)
    if not np.array_equal(base, base[leader][np.cumsum(new_family) - 1]):
        return None
    return (np.ascontiguousarray(base[leader]), order.astype(np.int64),
            np.append(leader, U).astype(np.int64), extra[order].astype(np.int64), inverse.reshape(-1).astype(np.int64))


@functools.lru_cache(maxsize=8)
def _feature_codes(n_features: int) -> np.ndarray:
    """A fixed random 64-bit code per feature: a mask's hash is the (wrapping) sum of its kept features' codes."""
    codes = np.random.default_rng(20261130).integers(1, 2**63, size=n_features, dtype=np.uint64)
    codes.flags.writeable = False
    return codes


@njit(cache=True, parallel=True)
def _masked_families(links, feats, link_start, feat_start, n_trees, bases, starts, extra, value, weight, bias,
                     float32_sum, n_tasks, out):
    """out[i, doc] = the score of document doc under base mask b plus feature extra[i] (-1: none), for the rows
    i = starts[b]..starts[b + 1] of each family b, bit for bit as `_masked` gives it.

    Per document and family, each tree is walked once under the base (through the document's link table); at each
    split on a filled feature that some row of the family adds, met first on the path, that row leaves the base's
    path, and its own leaf is walked from there. Every row then takes the base's leaf but for those few, and the
    family's scores are summed tree by tree, in tree order, as `_score` sums."""
    n_docs = link_start.shape[0] - 1
    n_rows, n_features = extra.shape[0], bases.shape[1]
    for task in prange(n_tasks):
        row_of = np.full(n_features, -1, dtype=np.int64)  # the family's row adding each feature
        seen = np.full(n_features, -1, dtype=np.int64)  # the tree (stamp) in which a feature's split was last met
        patch_row = np.empty(n_features, dtype=np.int64)
        patch_leaf = np.empty(n_features, dtype=np.int64)
        acc = np.empty(n_rows)
        acc32 = np.empty(n_rows, dtype=np.float32)
        held = np.empty(n_features)  # the patched rows' sums before the tree
        held32 = np.empty(n_features, dtype=np.float32)
        stamp = 0
        for doc in range(task * n_docs // n_tasks, (task + 1) * n_docs // n_tasks):
            link = links[link_start[doc]:link_start[doc + 1]]
            feat = feats[feat_start[doc]:feat_start[doc + 1]]
            for b in range(starts.shape[0] - 1):
                r0, r1 = starts[b], starts[b + 1]
                kept = bases[b]
                for r in range(r0, r1):
                    if extra[r] >= 0:
                        row_of[extra[r]] = r
                    acc[r] = bias
                    acc32[r] = np.float32(bias)
                for tree in range(n_trees):
                    stamp += 1
                    n_patch = 0
                    k = link[tree]
                    while k >= 0:
                        f = feat[k]
                        if kept[f]:
                            k = link[n_trees + 2 * k]
                            continue
                        r = row_of[f]
                        if r >= 0 and seen[f] != stamp:  # row r keeps f: it goes the kept way from here
                            seen[f] = stamp
                            j = link[n_trees + 2 * k]
                            while j >= 0:
                                g = feat[j]
                                j = link[n_trees + 2 * j + (0 if (kept[g] or g == f) else 1)]
                            patch_row[n_patch] = r
                            patch_leaf[n_patch] = -j - 1
                            n_patch += 1
                        k = link[n_trees + 2 * k + 1]
                    leaf = -k - 1
                    # every row adds the base's leaf, but the patched rows add their own to the sum they had
                    if float32_sum:
                        for p in range(n_patch):
                            held32[p] = acc32[patch_row[p]]
                        base32 = np.float32(weight[tree] * value[leaf])
                        for r in range(r0, r1):
                            acc32[r] = np.float32(acc32[r] + base32)
                        for p in range(n_patch):
                            own32 = np.float32(weight[tree] * value[patch_leaf[p]])
                            acc32[patch_row[p]] = np.float32(held32[p] + own32)
                    else:
                        for p in range(n_patch):
                            held[p] = acc[patch_row[p]]
                        base64 = weight[tree] * value[leaf]
                        for r in range(r0, r1):
                            acc[r] += base64
                        for p in range(n_patch):
                            acc[patch_row[p]] = held[p] + weight[tree] * value[patch_leaf[p]]
                for r in range(r0, r1):
                    if extra[r] >= 0:
                        row_of[extra[r]] = -1
                    out[r, doc] = np.float64(acc32[r]) if float32_sum else acc[r]
