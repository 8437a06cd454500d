"""Train the three rankers this folder's specs audit, on the bookstore data (examples/bookstore/train.csv):

- `xgboost.json`: an XGBoost LambdaMART (`rank:ndcg`), saved as XGBoost's JSON model;
- `catboost.cbm`: a CatBoost YetiRank ranker (oblivious trees), saved in CatBoost's binary format;
- `mlp.onnx`: a small neural ranker — a scikit-learn `MLPRegressor` (one hidden layer of 16 ReLU units) fitted to
  the relevance labels — written as an ONNX graph with `onnx.helper` (standardise, Gemm, Relu, Gemm, one score per
  row): no PyTorch, no converter package, nothing downloaded.

    python examples/rankers/train.py [--out FOLDER]

Deterministic (fixed seeds, one thread). Needs `pip install 'auditor[xgboost,catboost,onnx]'`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
BOOKSTORE = HERE.parent / "bookstore"
FEATURES = ["genre_match", "price", "price_in_range", "n_reviews", "avg_review", "is_ebook", "publishing_year",
            "target_age", "sales_rank_log", "author_popularity", "sponsored"]


def read(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    frame = pd.read_csv(BOOKSTORE / name)
    return frame[FEATURES].to_numpy(np.float64), frame["label"].to_numpy(np.float64), frame["qid"].to_numpy()


def train_xgboost(X: np.ndarray, y: np.ndarray, qid: np.ndarray, out: Path) -> Path:
    import xgboost as xgb

    data = xgb.DMatrix(X, y, qid=qid, feature_names=FEATURES)
    params = {"objective": "rank:ndcg", "eta": 0.1, "max_depth": 4, "min_child_weight": 1, "tree_method": "hist",
              "seed": 7, "nthread": 1, "verbosity": 0}
    booster = xgb.train(params, data, num_boost_round=80)
    path = out / "xgboost.json"
    booster.save_model(str(path))
    return path


def train_catboost(X: np.ndarray, y: np.ndarray, qid: np.ndarray, out: Path) -> Path:
    import catboost

    model = catboost.CatBoost({"loss_function": "YetiRank", "iterations": 80, "depth": 4, "learning_rate": 0.1,
                               "random_seed": 7, "thread_count": 1, "verbose": False, "allow_writing_files": False})
    model.fit(catboost.Pool(X, y, group_id=qid, feature_names=FEATURES))
    path = out / "catboost.cbm"
    model.save_model(str(path))
    return path


def train_mlp(X: np.ndarray, y: np.ndarray, out: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from sklearn.neural_network import MLPRegressor

    mean, std = X.mean(axis=0), X.std(axis=0)
    std[std == 0] = 1.0
    mlp = MLPRegressor(hidden_layer_sizes=(16,), alpha=1e-3, max_iter=500, random_state=7)
    mlp.fit((X - mean) / std, y)
    weights = {"mean": mean, "scale": 1.0 / std, "W1": mlp.coefs_[0], "b1": mlp.intercepts_[0],
               "W2": mlp.coefs_[1], "b2": mlp.intercepts_[1], "flat": np.array([-1])}
    initializers = [numpy_helper.from_array(value.astype(np.int64 if name == "flat" else np.float32), name)
                    for name, value in weights.items()]
    nodes = [helper.make_node("Sub", ["features", "mean"], ["centred"]),
             helper.make_node("Mul", ["centred", "scale"], ["standardised"]),
             helper.make_node("Gemm", ["standardised", "W1", "b1"], ["hidden"]),
             helper.make_node("Relu", ["hidden"], ["activated"]),
             helper.make_node("Gemm", ["activated", "W2", "b2"], ["column"]),
             helper.make_node("Reshape", ["column", "flat"], ["score"])]
    graph = helper.make_graph(nodes, "bookstore_mlp_ranker",
                              [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["rows", len(FEATURES)])],
                              [helper.make_tensor_value_info("score", TensorProto.FLOAT, ["rows"])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="examples/rankers")
    model.ir_version = 8  # readable by ONNX Runtime 1.14 and later
    helper.set_model_props(model, {"feature_names": ",".join(FEATURES)})
    onnx.checker.check_model(model, full_check=True)
    path = out / "mlp.onnx"
    onnx.save(model, str(path))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="where to write the models (default: here)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    X, y, qid = read("train.csv")
    for path in (train_xgboost(X, y, qid, args.out), train_catboost(X, y, qid, args.out), train_mlp(X, y, args.out)):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
