"""Train the LambdaMART that `audit.yaml` audits, on MQ2008 Fold1 (LETOR 4.0) from the shared data folder.

The data is research data that stays out of this repository: it is read from `$AUDITOR_DATA` or from
`../shared/data` beside the checkout. The model (`model.txt`) is written here and is not committed either.
The number of rounds is chosen by early stopping on Fold1 vali (ndcg@10, patience 50); the model is then trained
again for exactly that many rounds (training is deterministic, so the trees are the same) with the test split as
LightGBM's validation set, and LightGBM's own nDCG on test is saved in `lightgbm_metrics.json` so the audit's
figure can be compared with it (the foundation acceptance: within ±0.002).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import lightgbm as lgb
import numpy as np
from sklearn.datasets import load_svmlight_file

HERE = Path(__file__).resolve().parent
PARAMS = {
    "objective": "lambdarank", "metric": "ndcg", "eval_at": [1, 3, 5, 10], "num_leaves": 31,
    "learning_rate": 0.05, "min_data_in_leaf": 50, "feature_fraction": 0.9, "seed": 7, "deterministic": True,
    "force_row_wise": True, "num_threads": 2, "verbosity": -1,
}
MAX_ROUNDS = 1000
PATIENCE = 50


def data_dir() -> Path:
    """`$AUDITOR_DATA/MQ2008/Fold1`, else `../shared/data/MQ2008/Fold1` beside the repository."""
    root = Path(os.environ["AUDITOR_DATA"]) if os.environ.get("AUDITOR_DATA") else HERE.parents[2] / "shared" / "data"
    return root / "MQ2008" / "Fold1"


def read_split(path: Path, n_features: int = 46) -> lgb.Dataset:
    """Read with scikit-learn, independently of auditor's own reader (so the comparison is an oracle)."""
    X, y, qid = load_svmlight_file(str(path), n_features=n_features, query_id=True)
    _, starts = np.unique(qid, return_index=True)
    sizes = np.diff(np.append(np.sort(starts), len(qid)))
    return lgb.Dataset(X.toarray(), y, group=sizes, free_raw_data=False)


def train(folder: Path, out: Path) -> dict[str, float]:
    train_set = read_split(folder / "train.txt.gz")
    vali_set = read_split(folder / "vali.txt")
    vali_set.reference = train_set
    stopper = lgb.train({**PARAMS, "metric": "ndcg", "eval_at": [10]}, train_set, num_boost_round=MAX_ROUNDS,
                        valid_sets=[vali_set], valid_names=["vali"],
                        callbacks=[lgb.early_stopping(PATIENCE, verbose=False)])
    rounds = stopper.best_iteration
    test_set = read_split(folder / "test.txt")
    test_set.reference = train_set
    record: dict[str, dict[str, list[float]]] = {}
    booster = lgb.train(PARAMS, train_set, num_boost_round=rounds, valid_sets=[test_set], valid_names=["test"],
                        callbacks=[lgb.record_evaluation(record)])
    booster.save_model(str(out / "model.txt"))
    metrics = {name: values[-1] for name, values in record["test"].items()}
    metrics["rounds"] = rounds
    (out / "lightgbm_metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="where to write model.txt (default: here)")
    args = parser.parse_args()
    folder = data_dir()
    if not (folder / "test.txt").is_file():
        raise SystemExit(f"MQ2008 Fold1 not found in {folder}; set AUDITOR_DATA to the shared data folder")
    metrics = train(folder, args.out)
    print(f"model: {args.out / 'model.txt'}")
    print("LightGBM on Fold1 test: " + ", ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items())))


if __name__ == "__main__":
    main()
