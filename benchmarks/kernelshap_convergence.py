"""Is KernelSHAP's convergence check calibrated? Its predicted agreement of two runs' explanation sets (the jackknife
pseudo-replicates of `auditor/explain/kernelshap.py`) against the agreement of two real runs with different seeds.

    .venv/bin/python benchmarks/kernelshap_convergence.py                        # wide data, 136 features
    .venv/bin/python benchmarks/kernelshap_convergence.py --spec /path/to/mq2008.yaml --nsamples 50 100 200 auto

Per query (every query, or every n-th so that about --queries are used): KernelSHAP on the top 5 documents with the
spec's masking, twice (streams [query, 0] and [query, 1]); sets of k = 5 features for SHAP-1 (top document) and
SHAP-5 (Σ|φ| over the top 5). "real" = |S_run1 ∩ S_run2| / k; "predicted" = the check's mean over pairs of
replicates of the first run. Also the share of documents the check calls underdetermined (fewer coalitions than
twice their features), where it reports noise whatever the replicates say.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.explain.base import QueryView, set_from_attributions  # noqa: E402
from auditor.explain.kernelshap import KernelShap  # noqa: E402
from auditor.models.base import CountingRanker  # noqa: E402
from auditor.models.masking import Masker  # noqa: E402
from auditor.run.engine import prepare  # noqa: E402
from benchmarks import smoke  # noqa: E402
from benchmarks.wide_data import prepare as prepare_wide  # noqa: E402


def agreement(sets: list[set[int]], k: int) -> float:
    return float(np.mean([len(a & b) / k for i, a in enumerate(sets) for b in sets[i + 1:]]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", type=Path)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--nsamples", nargs="+", default=["200", "500", "1000", "auto"])
    parser.add_argument("--queries", type=int, default=43)
    parser.add_argument("--k", type=int, default=5)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.nsamples, args.queries = ["50", "auto"], 2
    with smoke.workdir(args.smoke) as tmp:
        spec = args.spec or (smoke.wide(tmp) if tmp else
                             prepare_wide(Path("/tmp/auditor-wide") / str(args.features), args.features))
        convergence(spec, args.nsamples, args.queries, args.k)
    return 0


def convergence(spec: Path, nsamples: list[str], queries: int, k: int) -> None:
    """The check's predicted agreement against two real runs' (module docstring), per `nsamples` setting."""
    prepared = prepare(spec)
    model, data = CountingRanker(prepared.model), prepared.data
    reference = prepared.background if prepared.background is not None else data
    masker = Masker.from_background(reference.X, prepared.spec.masking.strategy)
    step = max(1, data.n_queries // queries)
    print(f"{spec}: {data.n_features} features, every {step}th query, k = {k}")
    print("| nsamples | SHAP-1 predicted | SHAP-1 real | SHAP-5 predicted | SHAP-5 real | underdetermined docs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for text in nsamples:
        explainer = KernelShap(nsamples="auto" if text == "auto" else int(text))
        found: dict[int, tuple[list[float], list[float]]] = {1: ([], []), 5: ([], [])}
        under = []
        for qi in range(0, data.n_queries, step):
            X = data.X[data.query_slice(qi)]
            query = QueryView(X=X, scores=model.predict(X), query_id=str(qi), background=reference.X)
            docs = query.top_docs(5)
            runs = [explainer.explain(model, query, docs, masker, np.random.default_rng([qi, s])) for s in (0, 1)]
            under.extend(runs[0].underdetermined.tolist())
            for n_docs, (predicted, real) in found.items():
                predicted.append(agreement([set(set_from_attributions(r, k, docs=n_docs))
                                            for r in runs[0].replicates], k))
                real.append(agreement([set(set_from_attributions(r.values, k, docs=n_docs)) for r in runs], k))
        print(f"| {text} | {np.mean(found[1][0]):.2f} | {np.mean(found[1][1]):.2f} | {np.mean(found[5][0]):.2f} | "
              f"{np.mean(found[5][1]):.2f} | {np.mean(under):.0%} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
