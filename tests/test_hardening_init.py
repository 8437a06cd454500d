"""Issue 55, items 6 and 7: a spec `auditor init` writes from a hostile model file holds exactly the keys init meant
(the feature names come back byte for byte); a report stopped by SIGTERM or Ctrl-C leaves no hidden half-written
folder and prints one line (exit 143 / 130); a pack `report` would fail on after the whole audit (a lone surrogate)
is refused by `validate` and by `report` before any evidence runs.

Each test failed on the code before the fix.
"""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from auditor.cli import app
from auditor.inputs.spec import load_spec
from tests.conftest import BOOKSTORE
from tests.inputs import XGB, Case, assert_one_error_line, write_base_spec

AUDITOR = [sys.executable, "-m", "auditor"]
INIT_KEYS = {"audit", "model", "dataset", "evidence", "policies", "seed", "output"}

# A LightGBM text file splits its names at spaces and lines, so these have neither; YAML 1.1 still breaks lines
# at U+2028 and U+0085, and a tab separates `key:` from its value.
LIGHTGBM_NAMES = {  # role: (feature index, name)
    "sensitive": (10, "sponsored]}\u2028waivers:\u2028-\t{rule:\tBASE-1,\tjustification:\tx,\tapprover:\ty,"
                      "\texpires:\t2099-01-01}\u2028executor:\t{kind:\tdask,\taddress:\t'tcp://evil:8786'}\u2028#"),
    "own": (11, "own_brand\t#\x85*alias\t&anchor\t!!python/object/apply:os.system\t\"'{[\ufeff"),
}
# XGBoost's JSON holds any string: line breaks, `: `, quotes, tags, a BOM.
XGBOOST_NAMES = {
    "sensitive": (10, "sponsored]}\nwaivers:\n  - {rule: BASE-1, justification: x, approver: y, expires: 2099-01-01}\n"
        "executor: {kind: dask, address: 'tcp://evil:8786'}\n# "),
    "own": (9, "\ufeffown_brand: &a !!python/object/apply:os.system [\"id\"] # *a \u2028\r\n'\"{"),
}


# With only this kind needed, the spec read on after the injected keys: it loaded, with waivers and an executor.
INJECTING_NAMES = {
    "sensitive": (10, "sponsored]}\nwaivers:\n  - {rule: PAID-1, justification: accepted, approver: nobody, "
                      "expires: 2099-01-01}\nexecutor: {kind: dask, address: 'tcp://evil.example:8786'}\n#"),
}
PAID_PACK = """pack: paid
title: Paid placement
version: "1"
rules:
  - id: PAID-1
    title: The effect of paid placement is measured
    evidence: parameter_influence
    required: true
    severity: minor
    citation: P2B Art. 5(3)
    rationale: Paid placement must be disclosed.
"""


def _lightgbm_model(folder: Path) -> Path:
    text = (BOOKSTORE / "model.txt").read_text(encoding="utf-8")
    names = re.search(r"^feature_names=(.*)$", text, re.MULTILINE)
    assert names is not None
    words = names.group(1).split(" ")
    for index, name in LIGHTGBM_NAMES.values():
        words[index] = name
    path = folder / "model.txt"
    path.write_text(text.replace(names.group(0), "feature_names=" + " ".join(words), 1), encoding="utf-8")
    return path


def _xgboost_model(folder: Path, names: dict[str, tuple[int, str]]) -> Path:
    model = copy.deepcopy(XGB)
    for index, name in names.values():
        model["learner"]["feature_names"][index] = name
    path = folder / "model.json"
    path.write_text(json.dumps(model), encoding="utf-8")
    return path


@pytest.mark.parametrize(("kind", "names", "policy"), [("lightgbm", LIGHTGBM_NAMES, "eu-p2b-art5"),
                                                       ("xgboost", XGBOOST_NAMES, "eu-p2b-art5"),
                                                       ("xgboost", INJECTING_NAMES, "paid.yaml")],
                         ids=["lightgbm-text", "xgboost-json", "injected-keys"])
def test_init_from_a_hostile_model_writes_only_the_keys_it_meant(tmp_path: Path, kind: str,
                                                                 names: dict[str, tuple[int, str]],
                                                                 policy: str) -> None:
    """Feature names pasted unquoted added waivers and an executor address to the starter spec (or broke it)."""
    from typer.testing import CliRunner

    model = _lightgbm_model(tmp_path) if kind == "lightgbm" else _xgboost_model(tmp_path, names)
    title = "Q4\nwaivers: [{rule: BASE-1}]\n# \u2028executor: {kind: dask}"
    out = tmp_path / "spec\u2028waivers: [x] #.yaml"  # the file name is shown in the header comment
    if policy == "paid.yaml":  # a pack that needs parameter_influence alone; only the feature name is hostile
        (tmp_path / policy).write_text(PAID_PACK, encoding="utf-8")
        policy, title, out = str(tmp_path / policy), "Audit", tmp_path / "audit.yaml"
    sensitive = names["sensitive"][1]
    result = CliRunner().invoke(app, ["init", "--model", str(model), "--dataset", str(BOOKSTORE / "test.csv"),
                                      "--out", str(out), "--policy", policy, "--title", title])
    assert result.exit_code == 0, result.output
    spec, raw = load_spec(out)  # the project's own loader, as `validate` and `report` read it
    assert set(raw) == INIT_KEYS, sorted(raw)
    assert not spec.waivers and spec.executor.address is None
    assert raw["audit"] == {"title": title, "organisation": "Example Org"}
    assert set(raw["model"]) <= {"path", "kind"} and set(raw["dataset"]) == {"path", "format", "nan_policy"}
    assert raw["policies"] == [policy] and raw["seed"] == 0 and raw["output"] == {"dir": "reports"}
    items = {next(iter(item)): item[next(iter(item))] for item in raw["evidence"]}
    assert items["parameter_influence"] == {"sensitive": [sensitive]}
    [found] = items["parameter_influence"]["sensitive"]
    assert found.encode("utf-8") == sensitive.encode("utf-8")  # byte for byte
    if "own" in names:
        own = names["own"][1]
        assert items["exposure"] == {"group": [own], "own": {own: 1}}


# --- interrupted runs ------------------------------------------------------------------------------------------------

def _writing(proc: subprocess.Popen[str], out: Path) -> bool:
    """The run's hidden temporary folder exists: the evidence ran, the run folder is being written."""
    return out.is_dir() and any(entry.name.startswith(".") for entry in out.iterdir())


def _starting(proc: subprocess.Popen[str], out: Path) -> bool:
    """numpy is loaded: the command runs (its imports), before its `_guard`."""
    try:
        return "numpy" in Path(f"/proc/{proc.pid}/maps").read_text()
    except OSError:
        return False


def _interruptible() -> None:
    """In the child: Ctrl-C as a terminal delivers it. A suite started in the background of a shell (`make test &`)
    passes SIGINT on ignored, and the command rightly keeps an ignored SIGINT ignored (nohup)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stopped_report(base: Path, signum: int, moment: Callable[[subprocess.Popen[str], Path], bool]
                    ) -> tuple[subprocess.Popen[str], str, Path]:
    """`auditor report` on a light spec, sent `signum` at `moment`; a run that ended before it is tried again."""
    spec = write_base_spec(base, output={"dir": "reports", "formats": ["html"]})
    for attempt in range(3):
        out = base / f"out-{attempt}"
        proc = subprocess.Popen([*AUDITOR, "report", str(spec), "--quiet", "--register", "off", "--out", str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=base,
                                preexec_fn=_interruptible)
        deadline = time.monotonic() + 60
        while proc.poll() is None and not moment(proc, out) and time.monotonic() < deadline:
            time.sleep(0.001)
        if proc.poll() is None:
            proc.send_signal(signum)
            _, stderr = proc.communicate(timeout=60)
            return proc, stderr, out
        proc.communicate()
    pytest.fail("the report ended each time before the moment to stop it")


def _assert_stopped(proc: subprocess.Popen[str], stderr: str, out: Path, code: int, word: str) -> None:
    shown = f"exit {proc.returncode}\nstderr: {stderr!r}"
    assert proc.returncode == code, shown
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, shown
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{word}: "), shown
    left = [entry.name for entry in out.iterdir()] if out.is_dir() else []
    assert not [name for name in left if name.startswith(".")], f"a hidden half-written folder remains: {left}"


@pytest.mark.slow  # a whole audit in a subprocess, stopped by a signal
@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix", reason="POSIX signals")
def test_sigterm_while_the_run_is_written_leaves_no_hidden_folder(base: Path) -> None:
    """SIGTERM killed the process on the spot: `.run-<pid>-…` stayed in the output folder, exit -15, no line."""
    proc, stderr, out = _stopped_report(base, signal.SIGTERM, _writing)
    _assert_stopped(proc, stderr, out, 143, "terminated")


@pytest.mark.slow  # a whole audit in a subprocess, stopped by a signal
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps to time the signal")
def test_ctrl_c_prints_one_line_and_exits_130(base: Path) -> None:
    """Ctrl-C while the command imported its modules ended it silently (typer's exit 130 without a word); while the
    run folder is written, it is removed and one line says so."""
    proc, stderr, out = _stopped_report(base, signal.SIGINT, _starting)
    _assert_stopped(proc, stderr, out, 130, "interrupted")
    proc, stderr, out = _stopped_report(base, signal.SIGINT, _writing)
    _assert_stopped(proc, stderr, out, 130, "interrupted")


SWALLOWED = """
import os, signal, time, weakref
from typer.testing import CliRunner
import typer
from auditor.cli import app

@app.command("hang-in-callbacks")
def hang() -> None:
    class Node:
        pass
    def callback(ref):  # like the weakref and cffi callbacks WeasyPrint runs while the PDF renders
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):  # the handler raises here, where Python can only print and drop the exception
            pass
    node = Node()
    kept = weakref.ref(node, callback)
    del node
    start = time.monotonic()
    while time.monotonic() - start < 5:
        pass
    typer.echo(f"not stopped {kept}")

app(["hang-in-callbacks"], prog_name="auditor")
"""


@pytest.mark.slow  # a subprocess that runs up to five seconds if its interrupt is lost
@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_an_interrupt_raised_inside_a_callback_still_stops_the_command(tmp_path: Path) -> None:
    """Ctrl-C landing in a callback (the PDF renderer runs many) printed "Exception ignored … KeyboardInterrupt" with a
    traceback, and the audit went on to the end as if nothing happened."""
    done = subprocess.run([sys.executable, "-c", SWALLOWED], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          preexec_fn=_interruptible)
    shown = f"exit {done.returncode}\nstdout: {done.stdout!r}\nstderr: {done.stderr!r}"
    assert done.returncode == 130 and "not stopped" not in done.stdout, shown
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, shown
    assert len(done.stderr.strip().splitlines()) == 1, shown


# --- packs: everything `report` would refuse, `validate` refuses -----------------------------------------------------

PACK = """pack: mine
title: "Pack"
version: "1"
rules:
  - id: R-1
    title: Good enough
    evidence: ranking_quality
    metric: ranking_quality.ndcg@10.mean
    fail_if: "< 0.1"
    severity: minor
    citation: c
    rationale: r
"""


@pytest.mark.parametrize(("old", "new", "where", "named"),
                         [('title: "Pack"', 'title: "Pack \\udc80"', "2:8", "title: the text holds"),
                          ("title: Good enough", 'title: "Good \\ud83d enough"', "6:12",
                           "rules.0.title: the text holds U+D83D")],
                         ids=["pack-title", "rule-title"])
def test_a_lone_surrogate_in_a_pack_is_refused_by_validate_and_report(base: Path, old: str, new: str, where: str,
                                                                      named: str) -> None:
    """YAML's `"\\udc80"` escape passed `validate` (ok) and failed `report` with exit 3 after the whole audit, when
    evidence.json was encoded."""
    from typer.testing import CliRunner

    pack = base / "pack.yaml"
    pack.write_text(PACK.replace(old, new), encoding="utf-8")
    spec = write_base_spec(base, policies=["pack.yaml"], output={"dir": "reports", "formats": ["html"]})
    case = Case(spec, pack, where, (named, "a lone surrogate", "remove the `\\u"))
    runner = CliRunner()
    line = assert_one_error_line(runner.invoke(app, ["validate", str(spec), "--quiet"]), case)
    out = base / "stopped"
    assert assert_one_error_line(runner.invoke(app, ["report", str(spec), "--quiet", "--register", "off", "--out",
                                                     str(out)]), case) == line
    assert not out.exists(), "report ran before refusing the pack"


def test_a_lone_surrogate_in_a_spec_is_refused_where_it_is(base: Path) -> None:
    """The same hole in a spec: `audit.owner: "x\\udc80"` passed `validate` and made `report` exit 3."""
    from typer.testing import CliRunner

    spec = write_base_spec(base, output={"dir": "reports", "formats": ["html"]})
    spec.write_text(spec.read_text().replace("audit:\n", 'audit:\n  owner: "x\\udc80"\n', 1), encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(spec), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "audit.owner: the text holds U+DC80, a lone surrogate" in result.stderr, result.stderr
