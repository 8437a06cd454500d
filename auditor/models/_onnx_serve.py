"""Score rows with an ONNX model in a long-lived child process (run as a script).

`python -I _onnx_serve.py MEMORY_LIMIT THREADS INPUT_NAME OUTPUT_NAME N_FEATURES DTYPE` imports onnxruntime (no
auditor code), reads the model's bytes from stdin (8-byte length, then the bytes), creates an InferenceSession on
the CPU provider with THREADS intra-op threads and no custom operator library, and answers `ready`. Then, per
request — 8-byte row count, then the rows as C-ordered DTYPE values — it runs the model and answers with the
output as float64 values. An empty read (the parent closed the pipe) ends it.

Every answer is one frame: 1 byte (0 done, 1 error), an 8-byte length, then the payload (float64 scores, or the
error as UTF-8 text). The parent (`auditor/models/onnx_scoring.py`) decides what the scores mean, and how long it
waits: this process may be killed at any time. Address space capped, no core file, stdout and stderr on
/dev/null (frames go to a duplicate of stdout made first).
"""

from __future__ import annotations

import os
import resource
import struct
import sys
from collections.abc import Callable
from typing import Any

HEADER = struct.Struct("<Q")
FRAME = struct.Struct("<BQ")


def main() -> int:
    memory, threads = int(sys.argv[1]), int(sys.argv[2])
    name, output, n_features, dtype = sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    answers = os.fdopen(os.dup(1), "wb")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    requests = sys.stdin.buffer

    def answer(kind: int, payload: bytes) -> None:
        answers.write(FRAME.pack(kind, len(payload)) + payload)
        answers.flush()

    def exact(size: int) -> bytes | None:
        data = requests.read(size)
        return data if len(data) == size else None

    head = exact(HEADER.size)
    data = exact(HEADER.unpack(head)[0]) if head else None
    if data is None:
        return 1
    session, np = _session(data, threads, answer)
    if session is None:
        return 1
    del data
    width = n_features * np.dtype(dtype).itemsize
    while (head := exact(HEADER.size)) is not None:
        rows = HEADER.unpack(head)[0]
        body = exact(rows * width)
        if body is None:
            return 1
        try:
            scores = session.run([output], {name: np.frombuffer(body, dtype=dtype).reshape(rows, n_features)})[0]
            answer(0, np.asarray(scores, dtype=np.float64).reshape(-1).tobytes())
        except Exception as exc:  # ONNX Runtime's refusal of these rows, or MemoryError under the cap
            answer(1, f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:500])
    return 0


def _session(data: bytes, threads: int, answer: Callable[[int, bytes], None]) -> tuple[Any, Any]:
    """The InferenceSession (and numpy), or None after answering the error."""
    try:
        import numpy as np
        import onnxruntime as ort

        ort.set_default_logger_severity(4)
        options = ort.SessionOptions()
        options.log_severity_level = 4
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        session = ort.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        answer(1, f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:500])
        return None, None
    answer(0, b"")
    return session, np


if __name__ == "__main__":
    sys.exit(main())
