"""The executor seam: serial, worker processes and a Dask LocalCluster give the same evidence.json."""

from __future__ import annotations

import json
import os
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.evidence.base import Figure
from auditor.evidence.executor import (
    THREADS_ENV,
    AutoExecutor,
    ProcessExecutor,
    SerialExecutor,
    WorkerState,
    core_limit,
    cpu_count,
    make_executor,
    pool_plan,
    split,
    thread_budget,
)
from auditor.inputs.spec import ExecutorSpec
from auditor.report import plots
from auditor.report.plots import _drawing_key, drawings, forget_drawings
from auditor.run.engine import _draw_aside, _keep_drawn, run_audit

# Per-query evidence that goes through the executor, plus one that reads its memo (confidence), kept small.
PER_QUERY = [
    {"local_explanations": {"methods": ["random", "treeshap5", "lirme5", "greedy_cover_eps", "validity_search"],
                            "k": 3, "k_curve": [2, 3], "queries": 12, "lime": {"samples": 300}}},
    {"pairwise": {"queries": 6, "top": 3, "background_size": 100}},
    {"confidence": {"methods": ["treeshap5", "lirme5", "greedy_cover_eps"], "k": 3, "queries": 5}},
    {"ranking_quality": {}},  # measured here: the workers draw the figures of the items before it meanwhile
]


def _evidence(run_dir: Path) -> dict:
    document = json.loads((run_dir / "evidence.json").read_text())
    return {key: value for key, value in document.items() if key != "run"}  # `run`: timestamps, host, executor


@pytest.fixture
def per_query_spec(bookstore: Path) -> Path:
    spec = yaml.safe_load((bookstore / "audit.yaml").read_text())
    spec["evidence"] = PER_QUERY
    spec["policies"] = []
    spec["output"] = {"dir": "runs", "formats": ["html"]}
    path = bookstore / "audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.mark.slow
def test_same_evidence_under_serial_processes_and_dask(per_query_spec: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    runs = {}
    for name, executor in [("serial", ExecutorSpec(kind="serial")),
                           ("processes", ExecutorSpec(kind="processes", jobs=2)),
                           ("dask", ExecutorSpec(kind="dask", jobs=2))]:
        run = run_audit(per_query_spec, out=tmp_path / name, executor=executor)
        runs[name] = run
        recorded = json.loads((run.run_dir / "evidence.json").read_text())["run"]["executor"]
        assert recorded["kind"] == name and recorded["workers"] == (1 if name == "serial" else 2)
    serial = _evidence(runs["serial"].run_dir)
    assert serial["evidence"]["local_explanations"]["metrics"]["local.queries"] > 0
    assert serial["evidence"]["pairwise"]["metrics"]["pairwise.pairs"] > 0
    for name in ("processes", "dask"):
        other = _evidence(runs[name].run_dir)
        for item, value in serial["evidence"].items():  # one item at a time, so a failure names it
            assert other["evidence"][item] == value, f"{item} differs under {name}"
        assert other == serial
        # the figures the workers drew while the audit went on are those drawn here
        assert _svgs(runs[name].run_dir) == _svgs(runs["serial"].run_dir) != []


def _svgs(run_dir: Path) -> list[str]:
    return re.findall(r"<svg.*?</svg>", (run_dir / "report.html").read_text(), flags=re.S)


def _double(ctx, job, payload):
    """A task: scores its rows (so rows are counted) and leaves a memo entry behind."""
    ctx.memo(("double", payload), lambda: payload * job)
    return float(ctx.model.predict(ctx.reference_rows()[:payload]).sum())


def test_outcomes_come_back_in_order_with_rows_and_memo(lambdamart) -> None:
    from auditor.models.lightgbm import LightGBMRanker

    booster, X, _, _ = lambdamart
    state = WorkerState(model=LightGBMRanker(booster), seed=0, masking="mean", masking_samples=1, masker=None,
                        background=X)
    expected = [float(booster.predict(X[:n], raw_score=True).sum()) for n in (5, 1, 9, 3)]
    figure = Figure("Shares", "bar_chart", {"labels": ["a", "b"], "values": [0.6, 0.4], "xlabel": "share"})
    for executor in (SerialExecutor(), ProcessExecutor(2)):
        try:
            if isinstance(executor, ProcessExecutor):
                executor.warm(state)  # started ahead of the first item, in a thread; the same workers serve it
            outcomes = list(executor.map(state, _double, 2, [5, 1, 9, 3], size=4))
            if isinstance(executor, ProcessExecutor):
                assert executor.running and executor._warming is not None
                executor._warming.join(60)  # side work waits until the start is over (no submission blocks)
            aside = _draw_aside(executor, [[figure]])  # side work: a measured item's figures, drawn by a worker
            assert len(aside) == (1 if isinstance(executor, ProcessExecutor) else 0)
            if aside:
                assert aside[0][1].result() == drawings([figure])  # the same SVG as drawn here
                forget_drawings()
                _keep_drawn(aside)
                assert _drawing_key(figure) in plots._DRAWN
        finally:
            executor.close()
        assert [o.value for o in outcomes] == pytest.approx(expected, abs=1e-12)
        assert [o.rows for o in outcomes] == [5, 1, 9, 3]
        assert [o.memo for o in outcomes] == [{("double", n): 2 * n} for n in (5, 1, 9, 3)]


def test_a_pool_started_by_any_item_serves_every_long_one() -> None:
    # (seconds here, queries) of the pooled items in run order
    assert pool_plan([(26.0, 43), (33.0, 43), (12.0, 43)]) == [True, True, True]  # the 33 s item starts them
    assert pool_plan([(16.0, 43), (9.0, 43)]) == [False, False]  # 25 s in all: all run here
    assert pool_plan([(20.0, 43), (12.0, 43), (2.0, 43)]) == [True, True, False]  # 32 s together start them
    assert pool_plan([(20.0, 43), (12.0, 1)]) == [False, False]  # a one-query item runs here and starts nothing
    assert pool_plan([(5.0, 80), (12.0, 40), (40.0, 1)]) == [True, True, False]  # 80 queries start them; 1 query stays
    assert pool_plan([]) == []


def test_split_shrinks_blocks_toward_the_end() -> None:
    items = list(range(100))
    assert split(items, 1, most=64) == [items[:25], items[25:50], items[50:75], items[75:]]
    blocks = split(items, 2, most=64)
    assert [len(b) for b in blocks] == [25, 19, 14, 11, 8, 6, 5, 3, 3, 2, 1, 1, 1, 1]
    assert [i for b in blocks for i in b] == items
    assert [len(b) for b in split(list(range(43)), 2, most=64)] == [11, 8, 6, 5, 4, 3, 2, 1, 1, 1, 1]
    assert [len(b) for b in split(list(range(10)), 2, most=64, least=3)] == [3, 3, 3, 1]
    assert all(len(b) <= 8 for b in split(list(range(1000)), 2, most=8))
    assert split([], 2, most=8) == []


def test_make_executor_kinds_and_thread_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_executor("serial").kind == "serial"
    assert make_executor("processes", 1).kind == "serial"  # one worker: no processes to start
    assert make_executor("processes", 3).workers == min(3, cpu_count())  # never more workers than cores
    assert isinstance(make_executor("auto", 2), AutoExecutor)
    monkeypatch.setenv(THREADS_ENV, "1")
    assert thread_budget() == 1
    monkeypatch.delenv(THREADS_ENV)
    assert thread_budget(default=5) == 5


def test_core_limit_caps_threads_for_the_block_and_restores(monkeypatch: pytest.MonkeyPatch) -> None:
    import numba

    from auditor.explain.perturb import workers
    from auditor.models.lightgbm import _threads

    monkeypatch.delenv(THREADS_ENV, raising=False)
    numba_before = numba.get_num_threads()
    with core_limit(1):  # --jobs 1: one core for everything this process runs
        assert thread_budget() == 1 and workers() == 1
        assert _threads() == {"num_threads": 1}
        assert numba.get_num_threads() == 1
    assert THREADS_ENV not in os.environ and numba.get_num_threads() == numba_before
    assert _threads() == {}  # LightGBM's own default again
    with core_limit(None):  # no --jobs: nothing capped
        assert THREADS_ENV not in os.environ


def test_auto_keeps_small_work_in_this_process(lambdamart) -> None:
    executor = AutoExecutor(2)
    state = WorkerState(model=None, seed=0, masking="mean", masking_samples=1, masker=None, background=np.zeros(1))
    assert [o.value for o in executor.map(state, _noop, None, [1, 2], size=2)] == [1, 2]
    assert executor._processes is not None and executor._processes._pool is None  # no pool was started


def _noop(ctx, job, payload):
    return payload


def test_address_without_dask_is_a_clear_spec_error(per_query_spec: Path) -> None:
    spec = yaml.safe_load(per_query_spec.read_text())
    spec["executor"] = {"kind": "processes", "address": "tcp://127.0.0.1:8786"}
    per_query_spec.write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(app, ["report", str(per_query_spec), "-q"])
    assert result.exit_code == 2
    assert "executor" in result.output and "kind: dask" in result.output


def test_command_line_overrides_the_spec_executor(per_query_spec: Path) -> None:
    from auditor.cli import ExecutorKind, _executor_override

    assert _executor_override(per_query_spec, None, None, None) is None
    assert _executor_override(per_query_spec, 1, None, None).kind == "serial"
    assert _executor_override(per_query_spec, 3, None, None).model_dump() == {"kind": "processes", "jobs": 3,
                                                                              "address": None}
    dask = _executor_override(per_query_spec, None, None, "tcp://10.0.0.5:8786")
    assert (dask.kind, dask.address) == ("dask", "tcp://10.0.0.5:8786")
    assert _executor_override(per_query_spec, 2, ExecutorKind.dask, None).model_dump() == {
        "kind": "dask", "jobs": 2, "address": None}


def test_auto_keeps_a_model_that_cannot_be_pickled_in_this_process() -> None:
    executor = AutoExecutor(2)
    state = WorkerState(model=lambda X: X.sum(axis=1), seed=0, masking="mean", masking_samples=1, masker=None,
                        background=np.zeros(1))
    assert [o.value for o in executor.map(state, _noop, None, list(range(100)), size=100)] == list(range(100))
    assert executor._processes is not None and executor._processes._pool is None


def test_a_start_that_fails_in_warm_is_reported_by_the_first_map() -> None:
    state = WorkerState(model=lambda x: x, seed=0, masking="mean", masking_samples=1, masker=None,
                        background=np.zeros((2, 2)))  # a lambda cannot be shipped
    executor = ProcessExecutor(2)
    try:
        executor.warm(state)
        assert executor._warming is not None
        executor._warming.join(60)
        assert not executor.running and executor.submit(_noop) is None  # nothing half-made is left
        with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
            list(executor.map(state, _noop, None, [1], size=1))
    finally:
        executor.close()
