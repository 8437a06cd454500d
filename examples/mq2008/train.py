"""Train the LambdaMART that `audit.yaml` audits, on MQ2008 Fold1 (LETOR 4.0) from the shared data folder, and
with `--xgboost` the XGBoost LambdaMART that docs/reproductions/xgboost.md sets beside it.

The data is research data that stays out of this repository: it is read from `$AUDITOR_DATA` or from
`../shared/data` beside the checkout. The model (`model.txt`) is written here and is not committed either.
The number of rounds is chosen by early stopping on Fold1 vali (ndcg@10, patience 50); the model is then trained
again for exactly that many rounds (training is deterministic, so the trees are the same) with the test split as
LightGBM's validation set, and LightGBM's own nDCG on test is saved in `lightgbm_metrics.json` so the audit's
figure can be compared with it (the foundation acceptance: within ±0.002).

The XGBoost LambdaMART (`xgboost.json`, not committed either) follows the same protocol: `rank:ndcg` with the
classic LambdaMART pairs (`lambdarank_pair_method: mean`), trees of depth ≤ 5 (≤ 32 leaves, as LightGBM's 31),
learning rate 0.05, 90% of the features per tree, rounds by early stopping on vali nDCG@10 with patience 50. XGBoost's
default `topk` pairs stopped after 3-7 rounds on vali; `mean` runs 66 rounds to a test nDCG@10 of 0.812 against
LightGBM's 0.811 (the auditor's convention: all-zero queries count 1).
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
XGBOOST_PARAMS = {"objective": "rank:ndcg", "lambdarank_pair_method": "mean", "eta": 0.05, "max_depth": 5,
                  "min_child_weight": 0.1, "colsample_bytree": 0.9, "tree_method": "hist", "eval_metric": "ndcg@10",
                  "seed": 7, "nthread": 2, "verbosity": 0}


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


def train_xgboost(folder: Path, out: Path) -> int:
    """The XGBoost LambdaMART (module docstring): rounds by early stopping on vali, saved as `xgboost.json` with
    exactly those rounds. Returns the number of rounds."""
    import xgboost as xgb

    def matrix(name: str) -> xgb.DMatrix:
        X, y, qid = load_svmlight_file(str(folder / name), n_features=46, query_id=True)
        return xgb.DMatrix(X.toarray(), y, qid=qid)

    train_set, vali_set = matrix("train.txt.gz"), matrix("vali.txt")
    stopper = xgb.train(XGBOOST_PARAMS, train_set, num_boost_round=MAX_ROUNDS, evals=[(vali_set, "vali")],
                        early_stopping_rounds=PATIENCE, verbose_eval=False)
    rounds = stopper.best_iteration + 1
    booster = xgb.train(XGBOOST_PARAMS, train_set, num_boost_round=rounds)  # deterministic: the same trees
    booster.save_model(str(out / "xgboost.json"))
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="where to write model.txt (default: here)")
    parser.add_argument("--xgboost", action="store_true", help="train the XGBoost LambdaMART (xgboost.json) instead")
    args = parser.parse_args()
    folder = data_dir()
    if not (folder / "test.txt").is_file():
        raise SystemExit(f"MQ2008 Fold1 not found in {folder}; set AUDITOR_DATA to the shared data folder")
    if args.xgboost:
        rounds = train_xgboost(folder, args.out)
        print(f"model: {args.out / 'xgboost.json'} ({rounds} rounds)")
        return
    metrics = train(folder, args.out)
    print(f"model: {args.out / 'model.txt'}")
    print("LightGBM on Fold1 test: " + ", ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items())))


if __name__ == "__main__":
    main()
