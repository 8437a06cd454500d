"""Rehearse loading a LightGBM model in a throw-away process (run as a script, standard library only).

`python -I -S _lightgbm_child.py MEMORY_LIMIT LIB < model.txt` loads LIB (LightGBM's shared library, the very file
the auditor's process uses) through ctypes, with no site-packages and no auditor code, and does with the model
text what `lightgbm.Booster(model_str=...)` does: parse it, read its parameters section and its pandas line as
JSON; then it scores a few rows. It prints one JSON line: {"ok": true, ...} or {"ok": false, "stage": ...,
"error": ...}. A crash (SIGSEGV, abort) or a hang stays in this process; the caller reports it as bad input.
LightGBM's own messages go to /dev/null.

Saving, dumping and TreeSHAP are not rehearsed: they work on the parsed arrays, whose shape `lightgbm_check`
checks in full, and on a large model they cost seconds (1,000 trees of 255 leaves: the dump 6.8 s, contributions
1.6 s, the parse 0.2 s). Cold start ~16 ms (an interpreter without site-packages, one dlopen); docs/security.md.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys

PREDICT_RAW = 1
DTYPE_FLOAT64 = 1


def main() -> int:
    memory, library = int(sys.argv[1]), sys.argv[2]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file behind
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # LightGBM prints its messages on stdout and stderr
    os.dup2(quiet, 2)
    text = sys.stdin.buffer.read()

    def fail(stage: str, error: str) -> int:
        report.write(json.dumps({"ok": False, "stage": stage, "error": error[:300]}) + "\n")
        report.flush()
        return 1

    lib = ctypes.CDLL(library)
    lib.LGBM_GetLastError.restype = ctypes.c_char_p

    def call(name: str, *args: object) -> str | None:
        if getattr(lib, name)(*args) != 0:
            return (lib.LGBM_GetLastError() or b"").decode("utf-8", "replace")
        return None

    handle, iterations = ctypes.c_void_p(), ctypes.c_int(0)
    error = call("LGBM_BoosterLoadModelFromString", ctypes.c_char_p(text), ctypes.byref(iterations),
                 ctypes.byref(handle))
    if error is not None:
        return fail("load", error)

    def string_out(name: str, *args: object) -> tuple[str | None, str]:
        """Two calls, as the Python package makes them: ask the length, then fill a buffer of that length."""
        size = 1 << 16
        for _ in range(2):
            length = ctypes.c_int64(0)
            buffer = ctypes.create_string_buffer(size)
            error = call(name, handle, *args, ctypes.c_int64(size), ctypes.byref(length), buffer)
            if error is not None:
                return error, ""
            if length.value <= size:
                return None, buffer.value.decode("utf-8")
            size = length.value
        return "the length changed between two calls", ""

    error, params = string_out("LGBM_BoosterGetLoadedParam")
    if error is not None:
        return fail("parameters", error)
    try:
        json.loads(params)
    except (ValueError, RecursionError) as exc:
        return fail("parameters", f"the parameters section does not read as JSON ({exc})")
    error = _pandas_categorical(text)
    if error is not None:
        return fail("pandas_categorical", error)

    n_features, n_classes = ctypes.c_int(0), ctypes.c_int(0)
    for name, out in (("LGBM_BoosterGetNumFeature", n_features), ("LGBM_BoosterGetNumClasses", n_classes)):
        error = call(name, handle, ctypes.byref(out))
        if error is not None:
            return fail("load", error)

    columns = max(n_features.value, 1)
    probes = [0.0, float("nan"), 1e30, -1e30, 0.5, 1.0, -1.0, 3.0]
    rows = len(probes)
    values = (ctypes.c_double * (rows * columns))()
    for row, value in enumerate(probes):
        values[row * columns:(row + 1) * columns] = [value] * columns
    out_len = ctypes.c_int64(0)
    scores = (ctypes.c_double * (rows * max(n_classes.value, 1)))()
    error = call("LGBM_BoosterPredictForMat", handle, values, ctypes.c_int(DTYPE_FLOAT64), ctypes.c_int32(rows),
                 ctypes.c_int32(columns), ctypes.c_int(1), ctypes.c_int(PREDICT_RAW), ctypes.c_int(0),
                 ctypes.c_int(-1), ctypes.c_char_p(b"num_threads=1 verbosity=-1"), ctypes.byref(out_len), scores)
    if error is not None:
        return fail("predict", error)
    call("LGBM_BoosterFree", handle)
    report.write(json.dumps({"ok": True, "n_features": n_features.value, "n_classes": n_classes.value}) + "\n")
    report.flush()
    return 0


def _pandas_categorical(text: bytes) -> str | None:
    """What `lightgbm.basic._load_pandas_categorical(model_str=...)` reads: the last line, as JSON."""
    key = "pandas_categorical:"
    model_str = text.decode("utf-8", "replace")
    index = model_str.rfind("\n", 0, -len(key))
    last_line = model_str[index:].strip()
    if not last_line.startswith(key):
        return None
    try:
        json.loads(last_line[len(key):])
    except (ValueError, RecursionError) as exc:
        return f"the pandas_categorical line does not read as JSON ({type(exc).__name__})"
    return None


if __name__ == "__main__":
    sys.exit(main())
