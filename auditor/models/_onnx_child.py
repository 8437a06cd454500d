"""Rehearse loading an ONNX model in a throw-away process (run as a script).

`python -I _onnx_child.py MEMORY_LIMIT INPUT_NAME N_FEATURES DTYPE MAX_ROWS < model.onnx` imports onnxruntime (no
auditor code), creates an InferenceSession from the bytes on the CPU provider with one thread and no custom
operator library, and scores probe rows through the input the parent checked. It prints one JSON line, {"ok":
true, "rows": ..., "batches": [[rows, bytes, seconds], ...], "failed": rows or null} or {"ok": false, "stage":
..., "error": ...}; the score output must hold one number per row. ONNX Runtime's own messages go to /dev/null.
See auditor/models/rehearsal.py.

`batches` is the memory probe (`memory_probe`): batches of 256, 512, ... probe rows, each with the peak resident
memory above what the process held before the first (Linux's VmHWM, reset through /proc/self/clear_refs) and its
seconds, until the growth is well above the noise, the batch is the audit's largest, or the next batch would
not fit in time or memory. The parent extrapolates the memory a batch of any size needs from the last two.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

PROBES = [0.0, float("nan"), 1e30, -1e30, 0.5, 1.0, -1.0, 3.0]
FIRST_BATCH = 256
SIGNAL = 16 << 20  # growth measured beyond this is far above the noise of resident memory (~0.1 MiB)
PROBE_SECONDS = 2.0  # the memory probe stops before it has scored this long


def _status(key: str) -> int:
    """A byte count from /proc/self/status (VmRSS, VmHWM)."""
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise OSError(key)


def _reset_peak() -> int | None:
    """The resident bytes now, with the peak reset to them (Linux >= 4.0); None where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        return _status("VmRSS:")
    except OSError:
        return None


def memory_probe(session, name: str, rows, max_rows: int, memory: int) -> tuple[list, dict | None]:
    """[[rows, peak bytes above the start, seconds], ...] for doubling batches of the probe rows, and the batch
    ONNX Runtime failed at with its error (out of memory under the cap, say), if any (module docstring)."""
    import numpy as np

    start = _reset_peak()
    if start is None:
        return [], None
    batches: list = []
    n = FIRST_BATCH
    while n <= max_rows:
        began = time.perf_counter()
        try:
            session.run(None, {name: np.resize(rows, (n, rows.shape[1]))})
        except Exception as exc:  # MemoryError, or ONNX Runtime's own (a failed allocation, a shape it refuses)
            return batches, {"rows": n, "error": f"{type(exc).__name__}: {exc}"[:300]}
        batches.append([n, max(_status("VmHWM:") - start, 0), time.perf_counter() - began])
        if batches[-1][1] >= SIGNAL or not _next_fits(batches, start, memory):
            break
        n *= 2
    return batches, None


def _next_fits(batches: list, start: int, memory: int) -> bool:
    """Whether twice the last batch is likely to fit in the probe's time and under half the memory cap (address
    space counts more than what is resident)."""
    _, used, seconds = batches[-1]
    growth = 2.0
    if len(batches) > 1 and batches[-2][1] > 0:
        growth = min(max(used / batches[-2][1], 2.0), 8.0)  # memory grows at least with the rows, at most cubed
    spent = sum(b[2] for b in batches)
    return spent + growth * seconds <= PROBE_SECONDS and start + growth * max(used, 1 << 20) <= memory / 2


def main() -> int:
    memory, name, n_features, dtype = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    max_rows = int(sys.argv[5]) if len(sys.argv) > 5 else 0
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
    batches, failed = memory_probe(session, name, rows, max_rows, memory)
    report.write(json.dumps({"ok": True, "rows": int(rows.shape[0]), "batches": batches, "failed": failed}) + "\n")
    report.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
