"""Rehearse loading an ONNX model in a throw-away process (run as a script).

`python -I _onnx_child.py MEMORY_LIMIT INPUT_NAME N_FEATURES DTYPE < model.onnx` imports onnxruntime (no auditor
code), creates an InferenceSession from the bytes on the CPU provider with one thread and no custom operator
library, and scores probe rows through the input the parent checked. It prints one JSON line, {"ok": true,
"rows": ...} or {"ok": false, "stage": ..., "error": ...}; the score output must hold one number per row.
ONNX Runtime's own messages go to /dev/null. See auditor/models/rehearsal.py.
"""

from __future__ import annotations

import json
import os
import resource
import sys

PROBES = [0.0, float("nan"), 1e30, -1e30, 0.5, 1.0, -1.0, 3.0]


def main() -> int:
    memory, name, n_features, dtype = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file behind
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    data = sys.stdin.buffer.read()

    def fail(stage: str, error: str) -> int:
        report.write(json.dumps({"ok": False, "stage": stage, "error": error[:300]}) + "\n")
        report.flush()
        return 1

    import numpy as np
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        return fail("load", str(exc))
    rows = np.array([[value] * n_features for value in PROBES], dtype=dtype)
    try:
        outputs = session.run(None, {name: rows})
    except Exception as exc:
        return fail("predict", str(exc))
    if len(outputs) != 1 or np.asarray(outputs[0]).size != rows.shape[0]:
        shape = [list(np.shape(o)) for o in outputs]
        return fail("predict", f"the model returns {shape} for {rows.shape[0]} rows, not one score per row")
    report.write(json.dumps({"ok": True, "rows": int(rows.shape[0])}) + "\n")
    report.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
