"""Where the benchmarks' inputs come from, and their smoke mode (`--smoke`).

Every script in `benchmarks/` takes `--smoke`: its own code path on tiny, deterministic inputs made here, written
into a temporary folder, so that it runs in seconds without ../shared/data or network and
`tests/test_benchmarks_smoke.py` catches a refactor that breaks it. The figures a smoke run prints mean nothing.

- `mq2008(tmp)`: MQ2008 Fold1 and the LambdaMART of examples/mq2008 (trained by its `train.py` when missing), or,
  in smoke mode, a look-alike of a few queries written into `tmp` (the same files and 46 features, models of a few
  trees);
- `wide(tmp)`: `wide_data.prepare` at a tiny size (16 features, a few short queries, 10 trees);
- `few(evidence)`: the evidence a smoke run's audit keeps;
- `letor`, `lambdamart`, `xgboost_lambdamart`, `write_svmlight`: the tiny queries, models and LETOR files.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib.util
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "mq2008"
MQ2008_FEATURES = 46
SIGNAL = 12  # features that carry values in the tiny data; the rest are 0, so searches skip them as inert
TINY_SPLITS = (("train.txt.gz", 40), ("vali.txt", 10), ("test.txt", 8))  # the look-alike fold: file, queries
AUDIT_ITEMS = 1  # evidence items of a smoke run's audit (one in its own process costs seconds whatever its size)
SMOKE_HELP = "a few seconds on tiny synthetic inputs in a temporary folder: a check that the script runs"


def add_flag(parser: argparse.ArgumentParser) -> None:
    """`--smoke`, with the same help in every script."""
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)


@contextlib.contextmanager
def workdir(smoke: bool) -> Iterator[Path | None]:
    """A temporary folder, removed afterwards, in smoke mode (everything a smoke run writes goes there); else None."""
    if not smoke:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="auditor-smoke-") as name:
        yield Path(name)


def skipped(part: str, package: str, extra: str = "bench") -> str:
    """The line printed when a peer library is absent: that part is skipped, the run goes on."""
    return f"skipped {part}: {package} is not installed (`.venv/bin/pip install -e \".[{extra}]\"`)"


def few(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A spec's first evidence item(s): enough for a smoke run to go through a script's audit and read its results
    (each item's figures take a second or more: matplotlib's layout)."""
    return evidence[:AUDIT_ITEMS]


def letor(n_queries: int, n_features: int = MQ2008_FEATURES, *, seed: int = 0, docs: tuple[int, int] = (5, 15)
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, labels, query sizes): MQ2008-like queries of a few documents, values in [0, 1] with six decimals, labels
    0-2 from the first `SIGNAL` features (so that a model learns something), the later features all 0."""
    rng = np.random.default_rng([seed, n_features, 39])
    sizes = rng.integers(docs[0], docs[1] + 1, size=n_queries)
    n, signal = int(sizes.sum()), min(SIGNAL, n_features)
    X = np.zeros((n, n_features))
    X[:, :signal] = np.round(rng.random((n, signal)), 6)
    relevance = X[:, :signal] @ (1.0 / (1.0 + np.arange(signal))) + 0.3 * rng.standard_normal(n)
    labels = np.digitize(relevance, np.quantile(relevance, [0.7, 0.9]))
    return X, labels.astype(np.int32), sizes


def lambdamart(X: np.ndarray, labels: np.ndarray, sizes: np.ndarray, *, trees: int = 10, leaves: int = 7):
    """A small deterministic LightGBM LambdaMART on one thread."""
    import lightgbm as lgb

    params = {"objective": "lambdarank", "num_leaves": leaves, "learning_rate": 0.2, "min_data_in_leaf": 5,
              "verbosity": -1, "seed": 0, "deterministic": True, "force_row_wise": True, "num_threads": 1}
    return lgb.train(params, lgb.Dataset(X, labels, group=sizes), num_boost_round=trees)


def write_svmlight(path: Path, X: np.ndarray, labels: np.ndarray, sizes: np.ndarray, *, first_query: int = 1) -> None:
    """A dense LETOR file as MQ2008's (`label qid:Q 1:v ... #docid = GX...`); gzip-compressed when named `.gz`."""
    qids = np.repeat(np.arange(first_query, first_query + len(sizes)), sizes)
    lines = [f"{label} qid:{qid} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row))
             + f" #docid = GX{first_query:03d}-{i // 1000:02d}-{i:07d}\n"
             for i, (row, label, qid) in enumerate(zip(X, labels, qids, strict=True))]
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt") as out:
        out.writelines(lines)


def mq2008_example() -> ModuleType:
    """examples/mq2008/train.py, the one place that knows where the shared data is and how the model is trained."""
    spec = importlib.util.spec_from_file_location("mq2008_train", EXAMPLE / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Fold:
    """MQ2008 Fold1 (`train.txt.gz`, `vali.txt`, `test.txt` in `folder`) and the folder of its models (`model.txt`,
    and `xgboost.json` once `xgboost()` asked for it)."""

    folder: Path
    models: Path
    tiny: bool = False  # the smoke look-alike

    @property
    def model(self) -> Path:
        return self.models / "model.txt"

    @property
    def features(self) -> Path:
        return EXAMPLE / "features.txt"

    def feature_names(self) -> list[str]:
        return [n for n in self.features.read_text().split("\n") if n and not n.startswith("#")]

    def xgboost(self) -> Path:
        """The XGBoost LambdaMART of examples/mq2008, trained by its `train.py` when missing (the tiny fold's: a
        few trees)."""
        path = self.models / "xgboost.json"
        if self.tiny and not path.is_file():
            xgboost_lambdamart(*letor(TINY_SPLITS[0][1], seed=0)).save_model(str(path))
        elif not path.is_file():
            mq2008_example().train_xgboost(self.folder, self.models)
        return path


def mq2008(tmp: Path | None, *, model: bool = True) -> Fold:
    """The shared MQ2008 Fold1 ($AUDITOR_DATA or ../shared/data; SystemExit when absent) with the models of
    examples/mq2008, trained there by its `train.py` when missing (unless `model` is false: a caller that reads
    only the data); with `tmp` (smoke mode) a look-alike of a few queries written into `tmp`, its models a few
    trees trained on one thread (two OpenMP threads on two cores that other work keeps busy took 10 s for what
    one thread does in 0.1 s)."""
    example = mq2008_example()
    if tmp is None:
        fold = Fold(example.data_dir(), EXAMPLE)
        if not (fold.folder / "test.txt").is_file():
            raise SystemExit(f"MQ2008 Fold1 not found in {fold.folder}; set AUDITOR_DATA to the shared data folder")
        if model and not fold.model.is_file():
            example.train(fold.folder, fold.models)
        return fold
    fold = Fold(tmp / "MQ2008" / "Fold1", tmp, tiny=True)
    fold.folder.mkdir(parents=True, exist_ok=True)
    for seed, (name, queries) in enumerate(TINY_SPLITS):
        write_svmlight(fold.folder / name, *letor(queries, seed=seed), first_query=1000 * (seed + 1))
    lambdamart(*letor(TINY_SPLITS[0][1], seed=0)).save_model(str(fold.model))
    return fold


def xgboost_lambdamart(X: np.ndarray, labels: np.ndarray, sizes: np.ndarray, *, trees: int = 10):
    """A few trees with the settings of examples/mq2008's XGBoost LambdaMART, on one thread."""
    import xgboost as xgb

    params = {**mq2008_example().XGBOOST_PARAMS, "nthread": 1}
    return xgb.train(params, xgb.DMatrix(X, labels, qid=np.repeat(np.arange(len(sizes)), sizes)), trees)


def wide(tmp: Path, n_features: int = 16, **shape: float) -> Path:
    """`wide_data.prepare` at a tiny size in `tmp`: its spec."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.wide_data import prepare

    return prepare(tmp / "wide", n_features, train_queries=20, test_queries=4, trees=10, leaves=7, docs=(10, 20),
                   **shape)
