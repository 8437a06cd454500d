"""Where per-query work runs: in this process, in local worker processes (`--jobs N`), or on a Dask cluster.

What every task needs and no task changes (the model, the masker, the background rows, the seed) is a
`WorkerState`, shipped to each worker once per audit; a task carries only its own queries' rows. Results come back
in task order, and every query draws from its own named random stream, so evidence.json does not depend on the
executor or the number of workers (tests/test_executor.py runs one spec under all three and compares).

A task is a module-level function `task(ctx, job, payload) -> value` (picklable by reference). It runs with a
fresh `AuditContext` per task whose model counts its own rows; the executor returns those rows and the task's memo
entries to the audit's context, so row counts and the work shared between evidence items (`ctx.memo`) are the same
as if everything had run here.
"""

from __future__ import annotations

import os
import pickle
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from auditor.core.threads import (  # the budgets live in a module of their own: models and explainers read them
    THREADS_ENV,
    blas_limit,
    cpu_count,
    thread_budget,
)

if TYPE_CHECKING:
    from auditor.evidence.base import AuditContext

Kind = Literal["auto", "serial", "processes", "dask"]
AUTO_MIN_QUERIES = 64  # `auto` starts worker processes only for at least this many queries of work...
AUTO_MIN_SECONDS = 30.0  # ...or for items the cost model estimates at this long together (auditor/run/cost.py)...
AUTO_RUNNING_SECONDS = 3.0  # ...or at this long once the workers run or some item of the audit will start them
# (their start is paid then: at 10 s, confidence on 136 features, estimated at 6 s, ran here in 10 s; on the
# workers it takes 7 s; the bookstore's items, all under 3 s, stay here)
DASK_SCHEMES = ("tcp", "tls")  # a scheduler's address: tcp://host:port, tls://host:port, or host:port (tcp)
DASK_CONNECT_SECONDS = 20  # to reach the scheduler, and then for its first worker
_here = threading.local()  # the serial executor's progress tick, for tasks running in this thread
# Imported once by the forkserver and shared by its workers: what every per-query task needs, nothing more
# (plots, scipy.stats and scikit-learn are imported where used, so a worker stays small).
_PRELOAD = ["numpy", "lightgbm", "auditor.evidence.executor", "auditor.evidence.kinds.local_explanations.measure",
            "auditor.evidence.kinds.pairwise.measure", "auditor.explain.perturb"]


@dataclass(frozen=True)
class WorkerState:
    """What every task reads: shipped once to each worker. `token` names this audit's state on the workers."""

    model: Any  # the inner Ranker (not the counting wrapper)
    seed: int
    masking: str
    masking_samples: int
    masker: Any
    background: np.ndarray
    token: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass(frozen=True)
class Outcome:
    """One task's value, with the model rows it evaluated and the memo entries it computed."""

    value: Any
    rows: int
    memo: dict[Any, Any]


_INSTALLED: dict[str, WorkerState] = {}


def _install(pickled: bytes, threads: int) -> None:
    """Pool worker start-up: keep the state for the tasks to come and cap the threads each task uses."""
    state: WorkerState = pickle.loads(pickled)
    os.environ[THREADS_ENV] = str(threads)
    _INSTALLED.clear()
    _INSTALLED[state.token] = state


@contextmanager
def core_limit(cores: int | None) -> Iterator[None]:
    """Cap this process's threads (LightGBM predict, numba, thread pools) at `cores` while the block runs, so
    `--jobs N` means "use N cores" for the whole audit, `--jobs 1` one core; None: no cap."""
    if cores is None:
        yield
        return
    cores = max(1, min(cores, cpu_count()))
    before = os.environ.get(THREADS_ENV)
    os.environ[THREADS_ENV] = str(cores)
    import numba

    numba_before = numba.get_num_threads()
    numba.set_num_threads(min(cores, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(numba_before)
        if before is None:
            os.environ.pop(THREADS_ENV, None)
        else:
            os.environ[THREADS_ENV] = before


def _set_threads(count: int) -> None:
    os.environ[THREADS_ENV] = str(count)


def _limit_numba_threads() -> None:
    """numba's thread count is per calling thread: set it where the task runs."""
    if THREADS_ENV in os.environ:
        import numba

        numba.set_num_threads(min(thread_budget(), numba.config.NUMBA_NUM_THREADS))


class _Forward:
    """The ticker of a task run in this process: forwards `ctx.tick()` to the evidence item's progress."""

    def __init__(self, tick: Callable[[int], None]) -> None:
        self.advance = tick

    def close(self) -> None:
        pass


def ticking(tick: Callable[[int], None], outcomes: Iterable[Outcome]) -> Iterator[Outcome]:
    """Outcomes of `Executor.map`, with `tick` receiving the `ctx.tick()` calls of the tasks that run in this
    thread while each outcome is made (the serial executor); tasks in workers tick nothing (their block counts when
    it comes back)."""
    outcomes = iter(outcomes)
    while True:
        before = getattr(_here, "tick", None)
        _here.tick = tick
        try:
            outcome = next(outcomes)
        except StopIteration:
            return
        finally:
            _here.tick = before
        yield outcome


def run_task(state: WorkerState | str, task: Callable[[AuditContext, Any, Any], Any], job: Any,
             payload: Any) -> Outcome:
    """Run one task against the state: by token in pool workers (installed at start-up), else the state itself
    (this process; on Dask the scattered copy the worker holds)."""
    from auditor.evidence.base import AuditContext
    from auditor.models.base import CountingRanker

    if isinstance(state, str):
        state = _INSTALLED[state]
    _limit_numba_threads()
    ctx = AuditContext(data=None, model=CountingRanker(state.model), seed=state.seed,  # type: ignore[arg-type]
                       masking=state.masking, masking_samples=state.masking_samples)
    ctx._masker = state.masker
    ctx.worker_background = state.background
    tick = getattr(_here, "tick", None)
    if tick is not None:
        ctx.ticker = _Forward(tick)  # type: ignore[assignment]
    with blas_limit(1):  # the same floats on every executor (a threaded BLAS splits some sums), and two workers
        value = task(ctx, job, payload)  # never run two BLAS threads each on two cores (pairwise was 4x slower)
    return Outcome(value=value, rows=ctx.model.rows_evaluated, memo=ctx._memo)


def pool_plan(work: list[tuple[float, int]]) -> list[bool]:
    """Which of an audit's pooled items, each (seconds in this process, queries) in run order, `auto` runs on
    worker processes. The workers start for an item of AUTO_MIN_QUERIES queries, or when the items of two queries
    or more come to AUTO_MIN_SECONDS together; then every item of AUTO_RUNNING_SECONDS uses them, those that run
    before too: the start is paid once an audit (and early, `warm`), so a 26 s item need not run here while a 33 s
    one after it pools, nor two of 20 s (the wide audit's local explanations and pairwise, at 136 features)."""
    multi = [seconds for seconds, queries in work if queries >= 2]
    starts = any(queries >= AUTO_MIN_QUERIES for _, queries in work) or sum(multi) >= AUTO_MIN_SECONDS
    floor = AUTO_RUNNING_SECONDS if starts else AUTO_MIN_SECONDS
    return [queries >= AUTO_MIN_QUERIES or (seconds >= floor and queries >= 2) for seconds, queries in work]


def _ready() -> None:
    """A task that does nothing: submitted by `warm` so the workers start (and install the state) ahead of use."""


class Executor(Protocol):
    kind: str
    workers: int

    def map(self, state: WorkerState, task: Callable[..., Any], job: Any, payloads: Iterable[Any],
            *, size: int) -> Iterator[Outcome]:
        """`run_task` for each payload, outcomes in payload order; `size` = number of queries of work."""
        ...

    def close(self) -> None: ...


class SerialExecutor:
    """Everything in this process, one task after the other (the reference the others must match)."""

    kind = "serial"
    workers = 1

    def map(self, state: WorkerState, task: Callable[..., Any], job: Any, payloads: Iterable[Any],
            *, size: int) -> Iterator[Outcome]:
        for payload in payloads:
            yield run_task(state, task, job, payload)

    def close(self) -> None:
        pass


def _windowed(submit: Callable[[Any], Any], result: Callable[[Any], Outcome], payloads: Iterable[Any],
              window: int) -> Iterator[Outcome]:
    """Submit at most `window` tasks ahead and yield results in order: bounded memory, workers never idle."""
    pending: deque[Any] = deque()
    for payload in payloads:
        pending.append(submit(payload))
        if len(pending) >= window:
            yield result(pending.popleft())
    while pending:
        yield result(pending.popleft())


class ProcessExecutor:
    """Local worker processes (forkserver: safe with OpenMP and numba threads, no fork of a threaded parent).
    The pool starts on first use, gets the state once through its initializer, and serves every evidence item."""

    kind = "processes"

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._pool: Any = None
        self._token: str | None = None
        self._lock = threading.Lock()  # the pool is made by `warm`'s thread or by the first `map`, once
        self._warming: threading.Thread | None = None

    def _pool_for(self, state: WorkerState) -> Any:
        with self._lock:
            if self._pool is None or self._token != state.token:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                self._shutdown()
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(_PRELOAD)
                self._pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_install,
                                                 initargs=(pickle.dumps(state, protocol=5), 1))
                self._token = state.token
            return self._pool

    def map(self, state: WorkerState, task: Callable[..., Any], job: Any, payloads: Iterable[Any],
            *, size: int) -> Iterator[Outcome]:
        pool = self._pool_for(state)
        yield from _windowed(lambda p: pool.submit(run_task, state.token, task, job, p), lambda f: f.result(),
                             payloads, 2 * self.workers)

    @property
    def running(self) -> bool:
        return self._pool is not None

    def submit(self, function: Callable[..., Any], *args: Any) -> Any:
        """`function(*args)` on a worker, queued behind the tasks already submitted, when the workers run (a
        concurrent Future), else None: side work for the cores an item in this process leaves idle. None too while
        `warm` still starts them: a submission then would wait for the start."""
        if self._warming is not None and self._warming.is_alive():
            return None
        return None if self._pool is None else self._pool.submit(function, *args)

    def warm(self, state: WorkerState) -> None:
        """Start the workers now, in a thread of its own, without waiting for them: the forkserver imports its
        modules and the workers install `state` on the other cores while this process runs the audit's first
        items (1.7 s on the wide benchmark that this process no longer waits for). A start that fails here is
        tried again, and reported, by the first `map`."""

        def start() -> None:
            try:
                pool = self._pool_for(state)
                for _ in range(self.workers):
                    pool.submit(_ready)
            except Exception:  # a half-made pool is dropped: `map` starts one again, and reports what fails
                with self._lock:
                    self._shutdown()

        self._warming = threading.Thread(target=start, name="auditor-warm-workers", daemon=True)
        self._warming.start()

    def close(self) -> None:
        if self._warming is not None:
            self._warming.join()
            self._warming = None
        with self._lock:
            self._shutdown()

    def _shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class AutoExecutor:
    """The default: this process for small work (starting workers costs seconds), worker processes for more."""

    kind = "auto"

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._serial = SerialExecutor()
        self._processes = ProcessExecutor(self.workers) if self.workers > 1 else None
        self._checked: dict[str, bool] = {}
        self.seconds = 0.0  # the engine sets it per evidence item: the cost model's estimate in this process
        self.expected = False  # the engine sets it: some item of this audit will start the workers (`pool_plan`)

    def map(self, state: WorkerState, task: Callable[..., Any], job: Any, payloads: Iterable[Any],
            *, size: int) -> Iterator[Outcome]:
        worth = self.seconds >= (AUTO_RUNNING_SECONDS if self.running or self.expected else AUTO_MIN_SECONDS)
        use = self._processes is not None and (size >= AUTO_MIN_QUERIES or (worth and size >= 2)) \
            and self._shippable(state)
        chosen = self._processes if use else self._serial
        yield from chosen.map(state, task, job, payloads, size=size)  # type: ignore[union-attr]

    @property
    def running(self) -> bool:
        """Whether the workers are started (their start-up is paid)."""
        return self._processes is not None and self._processes.running

    def submit(self, function: Callable[..., Any], *args: Any) -> Any:
        """`ProcessExecutor.submit` when the workers run, else None (they are not started for side work)."""
        return self._processes.submit(function, *args) if self._processes is not None and self.running else None

    def warm(self, state: WorkerState) -> None:
        """Start the workers ahead of the first item that uses them (`ProcessExecutor.warm`), when they can take
        the model."""
        if self._processes is not None and self._shippable(state):
            self._processes.warm(state)

    def _shippable(self, state: WorkerState) -> bool:
        """A model that cannot be pickled (e.g. a Python function from a trusted file) stays in this process."""
        if state.token not in self._checked:
            try:
                pickle.dumps(state.model)
                self._checked[state.token] = True
            except (pickle.PicklingError, AttributeError, TypeError):
                self._checked[state.token] = False
        return self._checked[state.token]

    def close(self) -> None:
        if self._processes is not None:
            self._processes.close()


class DaskExecutor:
    """A Dask distributed cluster: `address` (tcp://scheduler:8786), or a LocalCluster of `workers` processes
    with one thread each. The state is scattered to every worker once (broadcast); tasks name it by future."""

    kind = "dask"

    def __init__(self, address: str | None, workers: int) -> None:
        if address is not None:
            check_address(address)
        from distributed import Client, LocalCluster

        self._cluster = None
        if address is None:
            self._cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                                         dashboard_address=None, silence_logs=40)
            self._client = Client(self._cluster)
        else:
            _handshake(address)
            self._client = Client(address, timeout=DASK_CONNECT_SECONDS)
            _first_worker(self._client, address)
        self.workers = max(1, sum(self._client.nthreads().values()))
        self._client.run(_set_threads, 1)
        self._scattered: tuple[str, Any] | None = None

    def _state_future(self, state: WorkerState) -> Any:
        if self._scattered is None or self._scattered[0] != state.token:
            self._scattered = (state.token, self._client.scatter(state, broadcast=True, hash=False))
        return self._scattered[1]

    def map(self, state: WorkerState, task: Callable[..., Any], job: Any, payloads: Iterable[Any],
            *, size: int) -> Iterator[Outcome]:
        shipped = self._state_future(state)
        yield from _windowed(lambda p: self._client.submit(run_task, shipped, task, job, p, pure=False),
                             lambda f: f.result(), payloads, 2 * self.workers)

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def check_address(address: str) -> None:
    """A Dask scheduler is reached over tcp:// or tls:// (host:port alone is tcp): any other scheme (inproc, ucx,
    ws, a file path) is refused with one line, before distributed is asked."""
    from auditor.core.errors import InputError
    from auditor.core.urls import shown

    scheme, found, rest = address.strip().partition("://")
    if (found and scheme.lower() not in DASK_SCHEMES) or not (rest if found else address).strip() or \
            (not found and "/" in address):
        raise InputError(f"the Dask scheduler's address {shown(address)!r} is not tcp:// or tls://",
                         where="executor.address (--scheduler)",
                         fix="give tcp://host:8786 or tls://host:8786 (or leave it out for a local cluster)")


def _handshake(address: str) -> None:
    """One connection to the scheduler, handshake included, within DASK_CONNECT_SECONDS; OSError otherwise.
    distributed's `Client(timeout=)` bounds the connection but then waits for the handshake without any: a port that
    accepts and stays silent would hold the audit for ever. In a thread of its own (a caller's running event loop,
    Jupyter's, is left alone)."""
    import asyncio

    from distributed.comm import connect
    from distributed.security import Security

    failure: list[BaseException] = []

    async def probe() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=DASK_CONNECT_SECONDS,
                                              **Security().get_connection_args("client")), DASK_CONNECT_SECONDS)
        await comm.close()

    def run() -> None:
        try:
            asyncio.run(probe())
        except TimeoutError:
            failure.append(OSError(f"no handshake within {DASK_CONNECT_SECONDS} s"))
        except Exception as exc:
            failure.append(exc if isinstance(exc, OSError) else OSError(str(exc) or type(exc).__name__))

    worker = threading.Thread(target=run, daemon=True, name="auditor-dask-handshake")
    worker.start()
    worker.join(DASK_CONNECT_SECONDS + 5)
    if worker.is_alive():
        raise OSError(f"no handshake within {DASK_CONNECT_SECONDS} s")
    if failure:
        raise failure[0]


def _first_worker(client: Any, address: str) -> None:
    """A scheduler without workers would leave every task waiting: wait DASK_CONNECT_SECONDS for one, then stop."""
    if client.nthreads():
        return
    try:
        client.wait_for_workers(1, timeout=DASK_CONNECT_SECONDS)
    except TimeoutError:
        from auditor.core.errors import InputError
        from auditor.core.urls import shown

        client.close()
        raise InputError(f"the Dask scheduler at {shown(address)} has no worker (none joined within "
                         f"{DASK_CONNECT_SECONDS} s)", where="executor.address (--scheduler)",
                         fix="start workers for it (dask worker ADDRESS), or leave the address out for a local "
                             "cluster") from None


def usable_jobs(jobs: int | None, address: str | None = None) -> int:
    """The cores an audit may use: `jobs` at most the CPUs of this machine (more workers than cores only slow the
    audit down, and tens of thousands of OpenMP threads abort libgomp); a remote Dask cluster takes `jobs` as it is.
    Without `jobs`: every CPU, or the thread budget this process was given (`AUDITOR_THREADS`: it is one of several
    processes that already fill the cores, as an executor's worker or a test suite's, and more processes would only
    compete with them: two workers cost the bookstore's audit 4 more CPU seconds than one)."""
    if jobs is None:
        return thread_budget()
    return jobs if address is not None else min(jobs, cpu_count())


def make_executor(kind: Kind = "auto", jobs: int | None = None, address: str | None = None) -> Executor:
    """The executor a spec (`executor:`) and the command line (`--jobs`) ask for. jobs=None: every CPU."""
    workers = usable_jobs(jobs, address)
    if kind == "serial" or (kind in ("auto", "processes") and workers <= 1):
        return SerialExecutor()
    if kind == "processes":
        return ProcessExecutor(workers)
    if kind == "dask":
        return DaskExecutor(address, workers)
    return AutoExecutor(workers)


def split(items: list[Any], workers: int, *, most: int, least: int = 1) -> list[list[Any]]:
    """Consecutive blocks of `items` for tasks, at most `most` each. In this process, about four even blocks. For
    workers, blocks shrinking toward the end, each about a 2·workers-th of the items left: large blocks first (a
    block's queries share their samples and model calls), then ever smaller ones, so the workers finish within a
    small block of each other instead of one running the last large block alone (43 queries on 2 workers: 11, 8, 6,
    5, 4, 3, 2, 1, 1, 1, 1)."""
    if workers <= 1:
        size = max(least, min(most, -(-len(items) // 4)))
        return [items[i:i + size] for i in range(0, len(items), size)]
    blocks: list[list[Any]] = []
    start = 0
    while start < len(items):
        size = max(least, min(most, -(-(len(items) - start) // (2 * workers))))
        blocks.append(items[start:start + size])
        start += size
    return blocks
