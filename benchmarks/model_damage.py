"""How damaged model files end, with and without the auditor's defences: the measurements in docs/security.md.

    .venv/bin/python benchmarks/model_damage.py [--kinds xgboost-json xgboost-ubj catboost-cbm catboost-json onnx]
                                                [--step 997] [--flips 60]

For each example model of examples/rankers (and XGBoost's UBJSON of the same model), every `--step`-th cut and
`--flips` random byte changes (1-4 bytes, seeded) are loaded twice, each in its own process so a crash is counted,
not suffered: `raw` — the library's own loader, then a prediction and TreeSHAP of probe rows (what the audit does
next); `auditor` — the auditor's loader (checks, rehearsal), then the same. Outcomes: loaded, refused (a Python
exception: for `auditor` always an InputError), or killed by a signal (SIGSEGV, SIGABRT), or hung (> 60 s).
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import collections
import random
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RANKERS = ROOT / "examples" / "rankers"
sys.path.insert(0, str(ROOT))

from benchmarks import smoke  # noqa: E402

KINDS = ["xgboost-json", "xgboost-ubj", "catboost-cbm", "catboost-json", "onnx"]

_RAW = r'''
import sys, numpy as np
kind, path = sys.argv[1], sys.argv[2]
rows = np.array([[v] * 11 for v in (0.0, float("nan"), 1e30, -1e30, 0.5, 1.0, 3.0, 2020.0)])
try:
    if kind.startswith("xgboost"):
        import xgboost as xgb
        b = xgb.Booster(); b.load_model(path)
        n = b.num_features(); d = xgb.DMatrix(np.tile(rows[:, :1], (1, n)), feature_names=b.feature_names)
        b.predict(d, output_margin=True); b.predict(d, pred_contribs=True)
    elif kind.startswith("catboost"):
        import catboost as cb
        m = cb.CatBoost(); m.load_model(path, format="json" if path.endswith(".json") else "cbm")
        m.predict(rows, prediction_type="RawFormulaVal"); m.get_feature_importance(cb.Pool(rows), type="ShapValues")
    else:
        import onnxruntime as ort
        s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        s.run(None, {s.get_inputs()[0].name: rows.astype(np.float32)})
except Exception as exc:
    print("refused", type(exc).__name__); sys.exit(0)
print("loaded")
'''

_AUDITOR = r'''
import sys, numpy as np
sys.path.insert(0, sys.argv[3])
from pathlib import Path
from auditor.core.errors import InputError
from auditor.models import KINDS
kind, path = sys.argv[1], Path(sys.argv[2])
rows = np.array([[v] * 11 for v in (0.0, float("nan"), 1e30, -1e30, 0.5, 1.0, 3.0, 2020.0)])
try:
    ranker = KINDS[kind.split("-")[0]].load(path, False)
except InputError:
    print("refused"); sys.exit(0)
n = ranker.n_features or 11
ranker.predict(np.tile(rows[:, :1], (1, n))); ranker.contributions(np.tile(rows[:, :1], (1, n)))
print("loaded")
'''


def source(kind: str, folder: Path) -> Path:
    if kind == "xgboost-json":
        return RANKERS / "xgboost.json"
    if kind == "xgboost-ubj":
        import xgboost as xgb

        booster = xgb.Booster()
        booster.load_model(str(RANKERS / "xgboost.json"))
        booster.save_model(str(folder / "model.ubj"))
        return folder / "model.ubj"
    if kind == "catboost-cbm":
        return RANKERS / "catboost.cbm"
    if kind == "catboost-json":
        import catboost as cb

        model = cb.CatBoost()
        model.load_model(str(RANKERS / "catboost.cbm"))
        model.save_model(str(folder / "model.json"), format="json")
        return folder / "model.json"
    return RANKERS / "mlp.onnx"


def damaged(data: bytes, step: int, flips: int, seed: int = 0) -> list[bytes]:
    cases = [data[:cut] for cut in range(0, len(data), step)]
    rng = random.Random(seed)
    for _ in range(flips):
        blob = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            blob[rng.randrange(len(blob))] = rng.randrange(256)
        cases.append(bytes(blob))
    return cases


def outcome(script: str, kind: str, path: Path) -> str:
    try:
        done = subprocess.run([sys.executable, "-c", script, kind, str(path), str(ROOT)], capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "hung"
    if done.returncode < 0:
        return signal.Signals(-done.returncode).name
    if done.returncode != 0:
        return "error: " + (done.stderr.strip().splitlines() or ["?"])[-1][:80]
    return done.stdout.split()[0] if done.stdout.split() else "?"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", default=KINDS, choices=KINDS)
    parser.add_argument("--step", type=int, default=997, help="cut the file every this many bytes")
    parser.add_argument("--cuts", type=int, default=40, help="at least this many cuts (a smaller step if need be)")
    parser.add_argument("--flips", type=int, default=60, help="random byte changes")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:  # the quickest kind to load unless told, two cases (the empty file, a byte changed), both ways
        args.kinds = ["onnx"] if args.kinds == KINDS else args.kinds
        args.step, args.cuts, args.flips = 1 << 62, 1, 1
    print("| file | cases | loader | loaded | refused | killed or hung |\n| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for kind in args.kinds:
            original = source(kind, folder)
            cases = damaged(original.read_bytes(), max(1, min(args.step, original.stat().st_size // args.cuts)),
                            args.flips)
            target = folder / f"damaged{original.suffix}"
            for label, script in (("raw", _RAW), ("auditor", _AUDITOR)):
                counts: collections.Counter[str] = collections.Counter()
                for blob in cases:
                    target.write_bytes(blob)
                    counts[outcome(script, kind, target)] += 1
                bad = {k: v for k, v in counts.items() if k not in ("loaded", "refused")}
                print(f"| {original.name} ({kind}) | {len(cases)} | {label} | {counts['loaded']} | "
                      f"{counts['refused']} | {', '.join(f'{v} {k}' for k, v in sorted(bad.items())) or '0'} |",
                      flush=True)


if __name__ == "__main__":
    main()
