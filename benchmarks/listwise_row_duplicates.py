"""How many masked rows of a KernelSHAP design are distinct on MQ2008 (issue 26: would scoring each distinct row once
make the listwise estimator 5x faster than shap.KernelExplainer at its budget?). numpy only, no model call.
Run: .venv/bin/python benchmarks/listwise_row_duplicates.py [--smoke]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.explain.kernelshap import coalition_design  # noqa: E402
from auditor.inputs.data import load_ranking_data  # noqa: E402
from benchmarks import smoke  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    with smoke.workdir(args.smoke) as tmp:
        fold = smoke.mq2008(tmp, model=False).folder  # $AUDITOR_DATA or ../shared/data beside the repository
        data = load_ranking_data(fold / "test.txt", format="svmlight", n_features=46)
        fill = np.nanmean(load_ranking_data(fold / "vali.txt", format="svmlight", n_features=46).X, axis=0)
    rng = np.random.default_rng(0)
    total = distinct = 0
    for qi in range(0, min(60, data.n_queries), 6):
        design = coalition_design(46, 2 * 46 + 2048, rng).masks
        for x in data.X[data.query_slice(qi)]:
            # a masked row depends only on the kept/masked status of the features where x differs from the fill
            keys = np.packbits(design[:, x != fill], axis=1)
            total += design.shape[0]
            distinct += len(np.unique(keys, axis=0))
    print(f"rows {total}, distinct {distinct}, share distinct {distinct / total:.3f}")


if __name__ == "__main__":
    main()
