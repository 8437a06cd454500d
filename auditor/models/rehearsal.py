"""Load a model file in a throw-away process first: a native library that crashes on a damaged file kills that
process, not the audit.

Every model kind a native library parses (LightGBM, XGBoost, CatBoost, ONNX Runtime) has a child script in this
folder (`_<kind>_child.py`) that reads the file's bytes on stdin, loads them with the very library this process
uses, scores a few probe rows, and writes one JSON line on stdout — `{"ok": true, ...}` or `{"ok": false,
"stage": ..., "error": ...}` — optionally followed by a payload (XGBoost and CatBoost: the model as the library
itself saves it in JSON, which the parent then checks). The child runs with its address space capped, no core
file, its own stdout and stderr on /dev/null (native log lines never reach the terminal) and one thread, under a
timeout. `rehearse` turns anything but success into one `InputError` line: the library's refusal, running out
of memory or time, or the signal that killed it. docs/security.md has the measured costs.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from auditor.core.errors import InputError

MiB = 1 << 20
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
JSON_CAP_ENV = "AUDITOR_MAX_JSON_MODEL_MB"
TOO_LARGE = (f"audit a model with fewer or shallower trees, or set {JSON_CAP_ENV} (MiB) on a machine with the memory "
             "(docs/security.md, \"Model files\")")


def rehearse(child: Path, args: list[str], data: bytes, *, file: Path, library: str, fix: str, memory: int,
             timeout: float, site_packages: bool = True, payload_limit: int | None = None) -> tuple[dict, bytes]:
    """Run `python [-S] -I child *args < data`; return its report and payload, or raise InputError.

    `site_packages=False` starts the interpreter without site-packages (`-S`): for children that open a shared
    library through ctypes and import nothing else. `memory` caps the child's address space (bytes). The child's
    output is read as it comes: past `payload_limit` bytes the child is stopped and the model refused, so a payload
    (the model as the library saves it in JSON) never costs this process more."""
    flags = ["-I"] if site_packages else ["-I", "-S"]
    env = {**os.environ, **ONE_THREAD}
    try:
        process = subprocess.Popen([sys.executable, *flags, str(child), str(memory), *args], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    except OSError as exc:  # pragma: no cover - no interpreter to start
        raise InputError(f"cannot start a process to check the model ({exc.strerror})", file=file,
                         fix="check the Python installation") from None
    state, output = _collect(process, data, timeout, payload_limit)
    if state == "late":
        raise InputError(f"{library} did not finish loading this model in {timeout:.0f} s", file=file, fix=fix)
    if state == "large":
        raise InputError(f"{library} saves this model as more than {(payload_limit or 0) / MiB:,.0f} MiB of JSON "
                         "(the form this tool checks), more than it reads", file=file, fix=TOO_LARGE)
    head, _, payload = output.partition(b"\n")
    code = int(process.returncode)
    try:
        outcome = json.loads(head.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        outcome = None
    if code == 0 and isinstance(outcome, dict) and outcome.get("ok"):
        return outcome, payload
    if isinstance(outcome, dict) and "error" in outcome:
        message = str(outcome["error"]).splitlines()[0] if outcome["error"] else "unknown error"
        if "bad_alloc" in message or "MemoryError" in message or "ENOMEM" in message:
            message = f"out of memory under the {memory / MiB:.0f} MiB allowed"
        raise InputError(f"{library} cannot load this model ({outcome.get('stage')}: {message[:200]})", file=file,
                         fix=fix)
    raise InputError(f"{library} crashed loading this model ({signal_name(code)})", file=file, fix=fix)


def _collect(process: subprocess.Popen, data: bytes, timeout: float, limit: int | None) -> tuple[str, bytes]:
    """Feed `data` to the child (from a thread: it may stop reading) and read its output until it ends: ("done",
    output), or ("late" | "large", b"") when it was killed for its time or for writing more than `limit` bytes."""
    feeder = threading.Thread(target=_feed, args=(process, data), daemon=True)
    feeder.start()
    deadline = time.monotonic() + timeout
    fd = process.stdout.fileno()  # type: ignore[union-attr]
    output, state = bytearray(), "done"
    while state == "done":
        left = deadline - time.monotonic()
        if left <= 0:
            state = "late"
        elif select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 1 << 20)
            if not chunk:  # the child closed its output: it has ended, or is ending
                break
            output += chunk
            if limit is not None and len(output) > limit + 4096:  # + the report line
                state = "large"
    try:
        process.wait(timeout=max(deadline - time.monotonic(), 1.0) if state == "done" else 0)
    except subprocess.TimeoutExpired:
        state = "late" if state == "done" else state
    if state != "done":
        process.kill()
        process.wait()
    process.stdout.close()  # type: ignore[union-attr]
    feeder.join(timeout=5)
    return state, (bytes(output) if state == "done" else b"")


def _feed(process: subprocess.Popen, data: bytes) -> None:
    """Write the model's bytes to the child's stdin and close it; a child that died or stopped reading is fine."""
    stdin = process.stdin
    assert stdin is not None
    with contextlib.suppress(OSError, ValueError):  # BrokenPipeError is an OSError
        stdin.write(data)
    with contextlib.suppress(OSError):  # closes the pipe even when flushing fails
        stdin.close()


def signal_name(code: int) -> str:
    """`SIGSEGV` for a process killed by signal 11 (negative return code), else `exit code N`."""
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"
