"""Every script in benchmarks/ runs in its smoke mode (`--smoke`: tiny inputs it makes itself, in a temporary
folder), so that a refactor that breaks a benchmark fails here instead of on the next person who measures (issue 39).

Each script's `main(["--smoke"])` runs in this process (the heavy libraries are imported once for all of them);
scripts that time or crash-test fresh processes start those themselves. A new script is found by the glob, so it
fails here until it has a smoke mode.
"""

from __future__ import annotations

import ast
import importlib
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
WATCHED = ("benchmarks", "docs", "examples")  # where a benchmark run by hand writes its results or models


def has_main(path: Path) -> bool:
    """A script (a top-level `main`), not a module the scripts import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body)


SCRIPTS = sorted(p.stem for p in BENCHMARKS.glob("*.py") if has_main(p))
LIBRARIES = sorted(p.stem for p in BENCHMARKS.glob("*.py") if not has_main(p))
# Other modes a script's smoke run does not go through, worth their seconds (wide_audit's --curve is local_wide's run
# at two sizes: local_wide's own smoke run covers it)
MODES = [["reproduce_confidence_flags", "--study"]]
RUNS = [[name] for name in SCRIPTS] + MODES


def repository_files() -> dict[Path, int]:
    """The files smoke runs must leave alone, with their modification times."""
    return {path: path.stat().st_mtime_ns for folder in WATCHED for path in (ROOT / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No shared data to fall back on, temporary folders under tmp_path, the working directory there, and one
    thread per model call (the other xdist worker keeps the second core busy)."""
    monkeypatch.setenv("AUDITOR_DATA", str(tmp_path / "no-shared-data"))
    monkeypatch.setenv("AUDITOR_THREADS", "1")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow  # several scripts run whole audits in their smoke mode (wide_audit, pdf_report, run_packs)
@pytest.mark.parametrize("run", RUNS, ids=" ".join)
def test_smoke_mode_runs(run: list[str], isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name, *mode = run
    module = importlib.import_module(f"benchmarks.{name}")
    before = repository_files()
    assert module.main(["--smoke", *mode]) in (None, 0)
    assert capsys.readouterr().out.strip(), f"{name} --smoke printed nothing"
    assert repository_files() == before, f"{name} --smoke wrote into the repository"


@pytest.mark.parametrize("name", LIBRARIES)
def test_modules_without_main_are_used_by_a_script(name: str) -> None:
    """A module without `main` has no smoke mode of its own: a script must import it, so it runs in theirs."""
    users = [script for script in SCRIPTS if name in _imported(BENCHMARKS / f"{script}.py")]
    assert users, f"benchmarks/{name}.py has no main (so no --smoke) and no script imports it"


def _imported(path: Path) -> set[str]:
    """The last part of every module name a file imports (`benchmarks.smoke` and `smoke` both give `smoke`)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.rsplit(".", 1)[-1] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.rsplit(".", 1)[-1])
            names |= {alias.name for alias in node.names}
    return names
