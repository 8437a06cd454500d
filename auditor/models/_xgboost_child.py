"""Rehearse loading an XGBoost model in a throw-away process (run as a script, standard library only).

`python -I -S _xgboost_child.py MEMORY_LIMIT LIB < model.json|model.ubj` opens LIB (the `libxgboost.so` the
auditor's process uses) through ctypes, with no site-packages and no auditor code, loads the bytes as
`Booster.load_model(bytearray)` does (XGBoost tells JSON from UBJSON itself), scores probe rows (margins and
TreeSHAP contributions, the two calls the audit makes), and saves the model again as JSON. It prints one JSON line,
{"ok": true, "n_features": ...} or {"ok": false, "stage": ..., "error": ...}, then on success the model JSON as
XGBoost wrote it: the parent checks that text (`xgboost_check`), so a UBJSON file is checked as XGBoost read it.
XGBoost's own messages go to /dev/null. See auditor/models/rehearsal.py.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys

PREDICT_MARGIN, PREDICT_CONTRIBS = 1, 2
PROBES = [0.0, float("nan"), 1e30, -1e30, 0.5, 1.0, -1.0, 3.0]


def main() -> int:
    memory, library = int(sys.argv[1]), sys.argv[2]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file behind
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    report = os.fdopen(os.dup(1), "wb")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # XGBoost's log goes to stderr, OpenMP's to either
    os.dup2(quiet, 2)
    data = sys.stdin.buffer.read()

    def fail(stage: str, error: str) -> int:
        report.write((json.dumps({"ok": False, "stage": stage, "error": error[:300]}) + "\n").encode("utf-8"))
        report.flush()
        return 1

    lib = ctypes.CDLL(library)
    lib.XGBGetLastError.restype = ctypes.c_char_p

    def call(name: str, *args: object) -> str | None:
        if getattr(lib, name)(*args) != 0:
            return (lib.XGBGetLastError() or b"").decode("utf-8", "replace")
        return None

    call("XGBSetGlobalConfig", ctypes.c_char_p(b'{"verbosity": 0}'))
    handle = ctypes.c_void_p()
    error = call("XGBoosterCreate", None, ctypes.c_uint64(0), ctypes.byref(handle))
    if error is None:
        error = call("XGBoosterLoadModelFromBuffer", handle, ctypes.c_char_p(data), ctypes.c_uint64(len(data)))
    if error is not None:
        return fail("load", error)
    n_features = ctypes.c_uint64(0)
    error = call("XGBoosterGetNumFeature", handle, ctypes.byref(n_features))
    if error is not None:
        return fail("load", error)
    columns = max(int(n_features.value), 1)
    rows = len(PROBES)
    values = (ctypes.c_double * (rows * columns))()
    for row, value in enumerate(PROBES):
        values[row * columns:(row + 1) * columns] = [value] * columns
    interface = json.dumps({"data": [ctypes.addressof(values), True], "shape": [rows, columns], "strides": None,
                            "typestr": "<f8", "version": 3}).encode("utf-8")
    matrix = ctypes.c_void_p()
    error = call("XGDMatrixCreateFromDense", ctypes.c_char_p(interface),
                 ctypes.c_char_p(b'{"missing": NaN, "nthread": 1}'), ctypes.byref(matrix))
    if error is not None:
        return fail("predict", error)
    for kind in (PREDICT_MARGIN, PREDICT_CONTRIBS):
        config = (f'{{"type": {kind}, "training": false, "iteration_begin": 0, "iteration_end": 0, '
                  '"strict_shape": false}').encode()
        shape, dims, result = ctypes.POINTER(ctypes.c_uint64)(), ctypes.c_uint64(0), ctypes.POINTER(ctypes.c_float)()
        error = call("XGBoosterPredictFromDMatrix", handle, matrix, ctypes.c_char_p(config), ctypes.byref(shape),
                     ctypes.byref(dims), ctypes.byref(result))
        if error is not None:
            return fail("predict" if kind == PREDICT_MARGIN else "contributions", error)
    call("XGDMatrixFree", matrix)
    length, text = ctypes.c_uint64(0), ctypes.c_char_p()
    error = call("XGBoosterSaveModelToBuffer", handle, ctypes.c_char_p(b'{"format": "json"}'), ctypes.byref(length),
                 ctypes.byref(text))
    if error is not None:
        return fail("save", error)
    saved = ctypes.string_at(text, length.value)
    report.write((json.dumps({"ok": True, "n_features": int(n_features.value)}) + "\n").encode("utf-8"))
    report.write(saved)
    report.flush()
    call("XGBoosterFree", handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
