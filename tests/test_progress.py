"""Progress a person can follow: plain lines on stderr when it is not a terminal, none under --quiet, an ETA."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from auditor.run.progress import LineProgress, duration
from tests.conftest import LIGHT_LOCAL, LIGHT_PAIRWISE, LIGHT_SURROGATE


def _cli(spec: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command with stderr a pipe (as under CI or nohup)."""
    return subprocess.run([sys.executable, "-m", "auditor", "report", str(spec), *args], capture_output=True,
                          text=True, timeout=300, check=False)


def _light_spec(folder: Path, evidence: list) -> Path:
    spec = yaml.safe_load((folder / "audit.yaml").read_text())
    spec["evidence"] = evidence
    spec["output"] = {"dir": "reports", "formats": ["html"]}
    path = folder / "light.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.mark.slow
def test_lines_without_a_terminal_in_order(bookstore: Path) -> None:
    """None at all with --quiet: tests/test_run_folder.py's whole audit in a real process (its stderr is empty)."""
    spec = _light_spec(bookstore, [{"ranking_quality": {}}, LIGHT_LOCAL, LIGHT_PAIRWISE, LIGHT_SURROGATE,
                                   {"disclosure_consistency": {"declared": ["genre_match", "price_in_range"]}},
                                   {"parameter_influence": {"sensitive": ["sponsored"]}},
                                   {"exposure": {"group": ["own_brand"]}}])
    run = _cli(spec)
    assert run.returncode in (0, 1), run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("[")]
    text = "\n".join(lines)
    assert "\x1b[" not in run.stderr  # no terminal codes in a log file
    assert " 0/0" not in text  # no ticker of nothing
    # each long item: a first line with its total, then a last line with everything done, in spec order
    marks = []
    for item, what, total in (("local_explanations", "Local explanations", 8), ("pairwise", "Pairwise", 4)):
        first = next(i for i, line in enumerate(lines) if f"{item}: {what}" in line and f" 0/{total} " in line)
        last = next(i for i, line in enumerate(lines) if f"{item}: {what}" in line and f"{total}/{total} (100%) done"
                    in line)
        assert first < last
        marks += [first, last]
    assert marks == sorted(marks)
    surrogate = [line for line in lines if line.split("] ", 1)[1].startswith("surrogate: ")]
    assert surrogate and surrogate[-1].endswith(tuple("0123456789s")) and "done in" in surrogate[-1]
    for item, what in (("disclosure_consistency", "Stability of the measured order (200 samples of queries) 200/200"),
                       ("parameter_influence", "Parameter influence (80 queries) 1/1"),
                       ("exposure", "Exposure by group value (80 queries) 2/2")):
        assert any(f"{item}: {what} (100%) done" in line for line in lines), item
    assert "Evidence items 7/7 (100%) done" in lines[-1]
    assert all(re.match(r"\[(\d+h)?(\d+m)?\d+s\] ", line) for line in lines)


def test_line_progress_paces_lines_and_blends_the_estimate_into_the_eta(monkeypatch) -> None:
    now = [1000.0]
    monkeypatch.setattr("auditor.run.progress.time.monotonic", lambda: now[0])
    out = io.StringIO()
    progress = LineProgress(out)
    progress.item("pairwise", 100.0)
    ticker = progress.task("Pairs", 100)
    assert "0/100 (0%)" in out.getvalue() and "ETA 1m40s" in out.getvalue()  # the cost model's estimate
    for _ in range(5):  # 5 units in 1 s: no new line (under 10 % and under 10 s)
        now[0] += 0.2
        ticker.advance()
    assert out.getvalue().count("\n") == 1
    for _ in range(20):  # then a unit every 0.5 s: a line at each tenth (10 at 3.5 s, 20 at 8.5 s), not between
        now[0] += 0.5
        ticker.advance()
    lines = out.getvalue().splitlines()
    assert [re.search(r" (\d+)/100 ", line).group(1) for line in lines] == ["0", "10", "20"]
    # pace says 0.44 s a unit → 33 s left; the estimate says 89 s left; 25 % done → 0.25 · 33 + 0.75 · 89 ≈ 75 s
    from auditor.run.progress import _Clock, _Unit

    clock = _Clock()
    clock.item_estimate, clock.item_started = 100.0, now[0] - 11.0
    unit = _Unit(clock, "x", 100, overall=False)
    unit.started, unit.done = now[0] - 11.0, 25
    assert abs(unit.eta(now[0]) - (0.25 * 33.0 + 0.75 * 89.0)) < 0.5
    ticker.close()
    assert out.getvalue().splitlines()[-1].endswith("Pairs 100/100 (100%) done in 11s")
    assert progress.task("Nothing", 0) is not None and out.getvalue().count("Nothing") == 0
    assert duration(3725) == "1h02m" and duration(65) == "1m05s" and duration(None) == "?"
