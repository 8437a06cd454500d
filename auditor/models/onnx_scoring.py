"""Where an ONNX model's scores are computed: a long-lived child process (`_onnx_serve.py`) with a time limit on
every call and a memory cap, in batches whose size the rehearsal's memory probe chose.

Why a process and not ONNX Runtime in this one: an ONNX graph's cost can depend on the values it is given, which
eight probe rows cannot bound. A `Where` on a feature value can grow a tensor, and one node (a convolution, a
matrix product) runs to its end once started: ONNX Runtime's `RunOptions.terminate` is read between nodes only,
and no limit on memory can be set for one call inside a process. A child can be killed at its deadline and has
its own address-space cap, so a graph that hangs or swells on the real data ends as one `InputError` line, and
the audit's process never holds ONNX Runtime's memory. The cost is one copy of the rows through a pipe per call
(docs/security.md has the measurement on the bookstore ranker).

Batches: `plan_batches` reads the memory probe of the rehearsal (the peak memory of batches of 256, 512, ... rows)
and extrapolates, by the power of the rows the growth between its last two batches shows (1 to 3), the memory a
batch of any size needs; the largest power of two up to `MAX_BATCH` that fits `memory_budget()` is the batch. An
X·Xᵀ graph, free on 8 rows and 17 GB at 65,536, gets smaller batches; one whose smallest batch does not fit is
refused with the numbers.
"""

from __future__ import annotations

import math
import os
import select
import struct
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from auditor.core.errors import InputError
from auditor.models.rehearsal import ONE_THREAD, MiB, signal_name

SERVE = Path(__file__).with_name("_onnx_serve.py")
MEMORY_ENV = "AUDITOR_ONNX_MEMORY_MB"
BATCH_MEMORY = 1024 * MiB  # the working memory one call may take, unless MEMORY_ENV says otherwise
MAX_BATCH = 65_536  # rows per call: large enough to amortise the call, as before batches were measured
MIN_BATCH = 256  # the memory probe's first batch; below it the pipe, not the model, is the cost of a call
UNMEASURED_BATCH = 4_096  # where the memory probe cannot run (no /proc/self/clear_refs)
FLOOR = 1 * MiB  # growth below this is too close to the noise to read an exponent from
CALL_SECONDS = 60.0  # every call may take this, plus SLOWER times the probe's seconds for as many rows
SLOWER = 20.0
START_SECONDS = 60.0  # creating the session in the child, plus a second per MiB of model
SMALL = 1 << 16  # requests below this many bytes go in one write
HEADER = struct.Struct("<Q")
FRAME = struct.Struct("<BQ")
_MEMORY_WORDS = ("bad_alloc", "MemoryError", "Failed to allocate", "ENOMEM")
_DATA_FIX = ("the graph's cost depends on the values it is given (the rehearsal's rows scored in time and memory): "
             "export a scoring graph whose work does not depend on feature values")


@dataclass(frozen=True)
class BatchPlan:
    """Rows per call, the memory estimated for them, and the probe's seconds per row (one thread)."""

    rows: int
    need: int
    seconds_per_row: float

    def limit(self, rows: int) -> float:
        """Seconds a call of `rows` rows may take."""
        return CALL_SECONDS + SLOWER * self.seconds_per_row * rows


def memory_budget() -> int:
    """Bytes one call may use: `AUDITOR_ONNX_MEMORY_MB`, else BATCH_MEMORY."""
    text = os.environ.get(MEMORY_ENV, "").strip()
    if not text:
        return BATCH_MEMORY
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"{MEMORY_ENV}={text[:20]} is not a whole number of MiB", where=MEMORY_ENV,
                         fix=f"set it to the MiB one ONNX call may use (default {BATCH_MEMORY // MiB}) or unset it")
    return int(text) * MiB


def plan_batches(outcome: dict[str, Any], *, file: Path, budget: int | None = None) -> BatchPlan:
    """The batch for the rehearsal's memory probe (`outcome["batches"]`: [rows, bytes, seconds] rising), or
    InputError naming the model when its smallest batch does not fit the budget."""
    budget = memory_budget() if budget is None else budget
    batches = [(int(n), int(used), float(seconds)) for n, used, seconds in outcome.get("batches") or []]
    failed = outcome.get("failed")
    if not batches:
        if failed:
            raise InputError(f"ONNX Runtime cannot score a batch of {failed['rows']} rows of this model "
                             f"({str(failed['error'])[:160]})", file=file, fix=_DATA_FIX)
        return BatchPlan(UNMEASURED_BATCH, 0, 0.0)
    per_row = max(seconds / n for n, _, seconds in batches)
    below = failed["rows"] if failed else MAX_BATCH * 2
    sizes = [MIN_BATCH << k for k in range(int(math.log2(MAX_BATCH // MIN_BATCH)) + 1) if MIN_BATCH << k < below]
    fitting = [n for n in sizes if need(batches, n) <= budget]
    if not fitting:
        n, used, _ = batches[-1]
        raise InputError(f"scoring {MIN_BATCH} rows needs about {need(batches, MIN_BATCH) / MiB:,.1f} MiB (measured: "
                         f"{used / MiB:,.1f} MiB at {n:,} rows, growing as rows^{exponent(batches):.1f}), more than "
                         f"the {budget / MiB:,.0f} MiB one call may use", file=file,
                         fix="export a graph that scores each row from that row alone (its memory then grows with "
                             f"the rows, not faster), or set {MEMORY_ENV} if this machine has the memory")
    return BatchPlan(fitting[-1], need(batches, fitting[-1]), per_row)


def exponent(batches: list[tuple[int, int, float]]) -> float:
    """How memory grows with the rows, read from the last two batches: 1 (linear) to 3, 1 when unclear."""
    if len(batches) < 2:
        return 1.0
    (n1, used1, _), (n2, used2, _) = batches[-2], batches[-1]
    power = math.log(max(used2, FLOOR) / max(used1, FLOOR)) / math.log(n2 / n1)
    return min(max(power, 1.0), 3.0)


def need(batches: list[tuple[int, int, float]], rows: int) -> int:
    """Bytes a call of `rows` rows needs: measured for a batch at least that large, else extrapolated from the
    largest measured by `exponent`."""
    measured = [used for n, used, _ in batches if n >= rows]
    if measured:
        return min(measured)
    n, used, _ = batches[-1]
    return math.ceil(max(used, FLOOR) * (rows / n) ** exponent(batches))


class Scorer:
    """One child process holding the InferenceSession: `score(rows)` returns the output as float64 values, or
    raises InputError (time limit, crash, ONNX Runtime's refusal, out of memory)."""

    def __init__(self, data: bytes, graph: Any, *, file: Path, threads: int, memory: int, plan: BatchPlan) -> None:
        self.file, self.memory, self.plan = file, memory, plan
        self.owner = os.getpid()
        env = {**os.environ, **ONE_THREAD, "MALLOC_ARENA_MAX": "2"}  # fewer malloc arenas: less address space
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(SERVE), str(memory), str(threads), graph.input_name, graph.output_name,
             str(graph.n_features), graph.dtype], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=env, bufsize=0)
        self._finalizer = weakref.finalize(self, _stop, self.process, self.owner)
        self._call(HEADER.pack(len(data)), memoryview(data), START_SECONDS + len(data) / MiB, "loading this model")

    def score(self, rows: np.ndarray) -> np.ndarray:
        """The model's output for C-ordered `rows` of the graph's dtype, as float64 values."""
        doing = f"scoring {rows.shape[0]:,} rows"
        payload = self._call(HEADER.pack(rows.shape[0]), rows.data.cast("B"), self.plan.limit(rows.shape[0]),
                             doing, rows.shape[0])
        return np.frombuffer(payload, dtype=np.float64)

    def close(self, *, kill: bool = False) -> None:
        """End the child (at once with `kill`: it may be busy)."""
        if kill and os.getpid() == self.owner and self.process.poll() is None:
            self.process.kill()
        self._finalizer()

    def _call(self, head: bytes, body: memoryview, seconds: float, doing: str, rows: int = 0) -> bytes:
        """Send one request, wait for its frame until the deadline; the payload of a good answer."""
        deadline = time.monotonic() + seconds
        try:
            if len(body) < SMALL:  # one write, one wake-up of the child
                self._write(head + body.tobytes())
            else:
                self._write(head)
                self._write(body)
            reply = self._read(FRAME.size, deadline, seconds, doing, expect=FRAME.size + 8 * rows)
            kind, size = FRAME.unpack(reply[:FRAME.size])
            payload = reply[FRAME.size:] + self._read(size - (len(reply) - FRAME.size), deadline, seconds, doing)
        except BrokenPipeError:
            raise self._died(doing) from None
        if kind != 0:
            raise self._refused(payload.decode("utf-8", "replace"), doing)
        return payload

    def _write(self, data: bytes | memoryview) -> None:
        fd = self.process.stdin.fileno()  # type: ignore[union-attr]
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]

    def _read(self, size: int, deadline: float, seconds: float, doing: str, expect: int = 0) -> bytes:
        """At least `size` bytes (at most `expect`, when more are likely waiting), or InputError at the deadline."""
        fd = self.process.stdout.fileno()  # type: ignore[union-attr]
        out = bytearray()
        most = max(size, expect)
        while len(out) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.close(kill=True)
                shown = f"{seconds:,.0f}" if seconds >= 10 else f"{seconds:.1f}"
                raise InputError(f"ONNX Runtime did not finish {doing} in {shown} s", file=self.file, fix=_DATA_FIX)
            chunk = os.read(fd, min(most - len(out), 1 << 24))
            if not chunk:
                raise self._died(doing)
            out += chunk
        return bytes(out)

    def _died(self, doing: str) -> InputError:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - its pipe closed but it lives on
            code = 0
        self.close(kill=True)
        return InputError(f"ONNX Runtime crashed {doing} ({signal_name(code)})", file=self.file, fix=_DATA_FIX)

    def _refused(self, error: str, doing: str) -> InputError:
        first = error.splitlines()[0] if error else "unknown error"
        if any(word in error for word in _MEMORY_WORDS):
            return InputError(f"ONNX Runtime ran out of memory {doing} under the {self.memory / MiB:,.0f} MiB "
                              f"allowed (the rehearsal's rows needed {self.plan.need / MiB:,.0f} MiB a batch)",
                              file=self.file, fix=_DATA_FIX)
        return InputError(f"ONNX Runtime cannot {doing.replace('scoring', 'score').replace('loading', 'load')} "
                          f"({first[:200]})", file=self.file,
                          fix="check the data against what the model takes, or export the model again")


def _stop(process: subprocess.Popen, owner: int) -> None:
    """End the child: close its pipe (it exits), kill it if it does not. Only in the process that started it."""
    if os.getpid() != owner:
        return
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()
    try:
        process.wait(timeout=2)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
