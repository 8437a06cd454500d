"""Writing the run folder under adverse conditions: OS errors, nesting, stale temporary folders, a quiet terminal.

A run folder is complete or absent; every OS error while writing it is bad input (exit 2) naming the path; a run
never lands inside another run; folders of killed runs are cleaned up; nothing but our own lines reaches stderr.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.run.engine import TEMP_PREFIX, remove_stale_temporaries
from tests.inputs import EXAMPLE, write_base_spec

runner = CliRunner()


@pytest.fixture
def base(tmp_path: Path) -> Path:
    for name in ("model.txt", "test.csv"):
        (tmp_path / name).write_bytes((EXAMPLE / name).read_bytes())
    return tmp_path


def _report(spec: Path, out: Path, *extra: str):
    return runner.invoke(app, ["report", str(spec), "--out", str(out), "--quiet", *extra])


def _one_error_line(result, *needles: str) -> str:
    shown = f"exit {result.exit_code}\nstdout: {result.stdout!r}\nstderr: {result.stderr!r}"
    assert result.exit_code == 2, shown
    assert "Traceback" not in result.stderr, shown
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), shown
    for needle in needles:
        assert needle in lines[0], f"{needle!r} missing\n{shown}"
    return lines[0]


@pytest.mark.parametrize("code, words", [(errno.ENOSPC, "free disk space"),
                                         (errno.EACCES, "may write to"),
                                         (errno.EROFS, "writable file system")])
def test_os_error_while_writing_is_bad_input(base: Path, monkeypatch: pytest.MonkeyPatch, code: int,
                                             words: str) -> None:
    spec = write_base_spec(base)
    out = base / "out"
    real = Path.write_text

    def failing(self: Path, *args, **kwargs):
        if self.name == "report.html":
            raise OSError(code, os.strerror(code), str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", failing)
    line = _one_error_line(_report(spec, out), "cannot write the run", os.strerror(code), words,
                           "nothing was written")
    assert "report.html" in line
    assert list(out.iterdir()) == [], "no run folder and no temporary folder may remain"


def test_output_under_a_file_is_bad_input(base: Path) -> None:
    spec = write_base_spec(base)
    (base / "plain.txt").write_text("not a folder", encoding="utf-8")
    _one_error_line(_report(spec, base / "plain.txt" / "reports"), "cannot write the run", "plain.txt")


def test_out_inside_a_run_folder_is_refused(base: Path) -> None:
    spec = write_base_spec(base)
    result = _report(spec, base / "out")
    assert result.exit_code in (0, 1), result.stderr
    run = Path(result.stdout.strip()).parent
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    for inside in (run, run / "nested", run / "a" / "b"):
        _one_error_line(_report(spec, inside), "inside the run folder", str(run), "outside any run folder")
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before, "the earlier run was changed"
    assert not (run / "nested").exists()


def test_stale_temporary_folders_are_removed_and_reported(base: Path) -> None:
    out = base / "out"
    out.mkdir()
    day_old = time.time() - 2 * 86_400
    dead = out / f"{TEMP_PREFIX}999999999-abc"  # no such process
    legacy = out / f"{TEMP_PREFIX}q1w2e3"  # a name from before pids were recorded
    alive = out / f"{TEMP_PREFIX}{os.getpid()}-def"  # this process: still running
    fresh = out / f"{TEMP_PREFIX}999999998-ghi"  # younger than a day: perhaps still being written
    for folder in (dead, legacy, alive, fresh):
        folder.mkdir()
        (folder / "evidence.json").write_text("{}", encoding="utf-8")
    for folder in (dead, legacy, alive):
        os.utime(folder, (day_old, day_old))
    result = runner.invoke(app, ["report", str(write_base_spec(base)), "--out", str(out)])
    assert result.exit_code in (0, 1), result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: removed")]
    assert sorted(notes) == sorted(f"note: removed {f}, the temporary folder of a run that was stopped more than "
                                   "a day ago" for f in (dead, legacy)), result.stderr
    assert not dead.exists() and not legacy.exists()
    assert alive.exists() and fresh.exists()
    assert remove_stale_temporaries(out) == []


def test_debug_is_listed_in_help() -> None:
    result = runner.invoke(app, ["report", "--help"])
    assert result.exit_code == 0
    assert "--debug" in result.stdout


def test_report_html_forbids_scripts_and_requests(base: Path) -> None:
    result = _report(write_base_spec(base), base / "out")
    html = Path(result.stdout.strip()).read_text(encoding="utf-8")
    head = html[:html.index("</head>")]
    assert head.index('http-equiv="Content-Security-Policy"') < head.index("<title>")
    assert "default-src 'none'" in head
    assert "<script" not in html.lower()


@pytest.mark.slow
def test_a_whole_audit_prints_nothing_but_its_own_lines(base: Path) -> None:
    """A real process (not CliRunner): library warnings, LightGBM's native log and worker output would show here;
    with --quiet, no progress line either (tests/test_progress.py reads the lines without it)."""
    spec = write_base_spec(base, evidence=[
        {"ranking_quality": {}}, {"global_importance": {}},
        {"local_explanations": {"queries": 4, "k_curve": [], "methods": ["random", "treeshap5", "shap5", "lirme5",
                                                                         "greedy"]}},
        {"decision_path_accuracy": {"queries": 3}}, {"pairwise": {"queries": 3}}, {"confidence": {"queries": 3}}])
    done = subprocess.run([sys.executable, "-m", "auditor", "report", str(spec), "--out", str(base / "out"),
                           "--quiet", "--jobs", "2", "--executor", "processes"],
                          capture_output=True, text=True, timeout=600, cwd=base)
    assert done.returncode in (0, 1), done.stderr
    assert done.stderr == "", done.stderr
    assert done.stdout.strip().endswith("report.html"), done.stdout
