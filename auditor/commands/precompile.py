"""`auditor precompile`: compile the numba kernels an audit uses before its first run, on every core at once.

Why: numba compiles a kernel on its first call and caches the machine code (`cache=True`: next to the package's
modules, or in $NUMBA_CACHE_DIR). A new install's first audit would pay about 12 s of compiling, one kernel after
another (numba compiles under one lock per process), while its explainers already keep both cores busy. Done at
install (`make install` runs this), the kernels compile in parallel processes with nothing else to wait for, and
the first audit starts warm.

A kernel is compiled for the types it is called with, so the kernels are compiled by running the audit itself:
every evidence kind that calls kernels, on a small generated ranking set read from both file formats (CSV and
LETOR/SVMlight), split into parts that run as separate processes. What is run is thrown away.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

# Each part is one process: the evidence kinds it runs, and the data file it reads. The parts share as few kernels
# as they can (each would compile a shared one) and hold about the same compiling work, ~8 s each: local
# explanations (EXS's exact SVR, the sampler, LIRME's scaling, masked scoring); confidence and pairwise (masked rows,
# decision paths, reading the trees' leaves, the LETOR reader). The other explainers and kinds call the same
# kernels with the same types (an audit after this compiles none: docs/benchmarks.md).
PARTS: tuple[tuple[str, tuple[object, ...]], ...] = (
    ("test.csv", ({"local_explanations": {"k": 3, "methods": ["lirme5", "exs5", "rankingshap"]}},
                  {"decision_path_accuracy": {"top_k": 3, "docs_per_query": 2}})),
    ("test.letor", ({"confidence": {"k": 3, "methods": ["treeshap5", "greedy_cover_eps"]}}, {"pairwise": {"top": 2}})),
)
N_FEATURES = 6


def precompile(jobs: int | None = None) -> float:
    """Compile the kernels in `jobs` processes at once (default: as many as there are parts and cores). Returns
    the seconds it took. Raises RuntimeError with a part's output when one fails."""
    started = time.perf_counter()
    jobs = max(1, min(len(PARTS), jobs or os.cpu_count() or 1))
    with tempfile.TemporaryDirectory(prefix="auditor-precompile-") as name:
        folder = Path(name)
        write_inputs(folder)
        pending = list(range(len(PARTS)))
        while pending:
            batch, pending = pending[:jobs], pending[jobs:]
            running = [(part, subprocess.Popen([sys.executable, "-m", "auditor.commands.precompile", str(folder),
                                                str(part)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                               text=True)) for part in batch]
            for part, process in running:
                output, _ = process.communicate()
                if process.returncode != 0:
                    raise RuntimeError(f"precompiling part {part} failed:\n{output[-2000:]}")
    return time.perf_counter() - started


def write_inputs(folder: Path) -> None:
    """A small LambdaMART model and its data: 12 queries of 12 to 24 documents and one of a single document, features
    with negative values and a binary one, as CSV and as LETOR."""
    import lightgbm as lgb
    import pandas as pd

    rng = np.random.default_rng(0)
    sizes = [1, *rng.integers(12, 25, size=11)]  # the compiled tau takes over at about 12 documents
    qid = np.repeat(np.arange(1, len(sizes) + 1), sizes)
    X = rng.normal(size=(qid.size, N_FEATURES))
    X[:, N_FEATURES - 1] = rng.integers(0, 2, size=qid.size)  # a yes/no feature (the exposure group)
    label = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=qid.size) + 1), 0, 3).astype(int)
    names = [f"f{i + 1}" for i in range(N_FEATURES)]
    params = {"objective": "lambdarank", "num_leaves": 7, "min_data_in_leaf": 2, "learning_rate": 0.2,
              "verbose": -1, "deterministic": True, "num_threads": 1}
    model = lgb.train(params, lgb.Dataset(X, label, group=sizes, feature_name=names), num_boost_round=20)
    model.save_model(str(folder / "model.txt"))
    frame = pd.DataFrame(X, columns=names)
    frame.insert(0, "label", label)
    frame.insert(0, "qid", qid)
    frame.insert(0, "doc_id", [f"d{i}" for i in range(qid.size)])
    frame.to_csv(folder / "test.csv", index=False)
    frame.to_csv(folder / "train.csv", index=False)
    with open(folder / "test.letor", "w", encoding="utf-8") as out:
        for row, q, y in zip(X, qid, label, strict=True):
            values = " ".join(f"{i + 1}:{v:.6g}" for i, v in enumerate(row))
            out.write(f"{y} qid:{q} {values}\n")


def part_spec(folder: Path, part: int) -> Path:
    """The spec of one part, written into `folder` (which holds `write_inputs`' files)."""
    data, evidence = PARTS[part]
    dataset: dict[str, object] = {"path": data, "query_column": "qid", "label_column": "label"}
    if data.endswith(".csv"):
        dataset["doc_id_column"] = "doc_id"
    spec = {"audit": {"title": "Precompiling the kernels", "organisation": "auditor", "data_origin": "synthetic"},
            "model": {"path": "model.txt"}, "dataset": dataset,
            "background": {"path": "train.csv", "doc_id_column": "doc_id"}, "evidence": list(evidence),
            "policies": [], "seed": 0, "register": "off", "output": {"dir": f"out-{part}", "formats": []}}
    path = folder / f"part-{part}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _run_part(folder: Path, part: int) -> None:
    """One part's evidence, in this process (`python -m auditor.commands.precompile FOLDER PART`)."""
    from auditor.run.engine import run_audit

    run_audit(part_spec(folder, part))
    if part == 0:  # taken only at a size the small set does not reach (`validity.COMPILED_MIN_ELEMENTS`)
        from auditor.checks.tau_kernel import tau_b_rows

        tau_b_rows(np.arange(3, dtype=np.float64), np.ones((2, 3)))
    if part == 1:
        _masked_scoring_paths(folder)


def _masked_scoring_paths(folder: Path) -> None:
    """The family kernel and the counted table build, which only wide data's calls reach (a search step of 16 masks
    or more; documents whose tables would not fit at once): called directly, with those sizes made small."""
    import lightgbm as lgb

    from auditor.scoring import masked_scoring
    from auditor.scoring.trees import TreeEnsemble

    trees = TreeEnsemble.from_lightgbm(lgb.Booster(model_file=str(folder / "model.txt")).dump_model())
    X = np.random.default_rng(0).normal(size=(4, N_FEATURES))
    step = np.eye(N_FEATURES, dtype=bool)[1:] | np.eye(N_FEATURES, dtype=bool)[0]  # one set, each other feature added
    masked_scoring._FAMILY_MIN_MASKS, masked_scoring._ONE_PASS_BYTES = 0, 0  # this throwaway process only
    masked_scoring.masked_scores(trees, X, X.mean(axis=0), step)


if __name__ == "__main__":
    _run_part(Path(sys.argv[1]), int(sys.argv[2]))
