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

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from auditor.errors import InputError

MiB = 1 << 20
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def rehearse(child: Path, args: list[str], data: bytes, *, file: Path, library: str, fix: str, memory: int,
             timeout: float, site_packages: bool = True) -> tuple[dict, bytes]:
    """Run `python [-S] -I child *args < data`; return its report and payload, or raise InputError.

    `site_packages=False` starts the interpreter without site-packages (`-S`): for children that open a shared
    library through ctypes and import nothing else. `memory` caps the child's address space (bytes)."""
    flags = ["-I"] if site_packages else ["-I", "-S"]
    env = {**os.environ, **ONE_THREAD}
    try:
        done = subprocess.run([sys.executable, *flags, str(child), str(memory), *args], input=data,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise InputError(f"{library} did not finish loading this model in {timeout:.0f} s", file=file,
                         fix=fix) from None
    except OSError as exc:  # pragma: no cover - no interpreter to start
        raise InputError(f"cannot start a process to check the model ({exc.strerror})", file=file,
                         fix="check the Python installation") from None
    head, _, payload = done.stdout.partition(b"\n")
    try:
        outcome = json.loads(head.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        outcome = None
    if done.returncode == 0 and isinstance(outcome, dict) and outcome.get("ok"):
        return outcome, payload
    if isinstance(outcome, dict) and "error" in outcome:
        message = str(outcome["error"]).splitlines()[0] if outcome["error"] else "unknown error"
        if "bad_alloc" in message or "MemoryError" in message or "ENOMEM" in message:
            message = f"out of memory under the {memory / MiB:.0f} MiB allowed"
        raise InputError(f"{library} cannot load this model ({outcome.get('stage')}: {message[:200]})", file=file,
                         fix=fix)
    raise InputError(f"{library} crashed loading this model ({signal_name(done.returncode)})", file=file, fix=fix)


def signal_name(code: int) -> str:
    """`SIGSEGV` for a process killed by signal 11 (negative return code), else `exit code N`."""
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"
