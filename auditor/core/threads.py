"""Thread budgets: how many threads one piece of work may use (LightGBM predict, numba, thread pools, BLAS). Depends
on nothing of auditor's, so models, explainers and the executor all read the same budget without importing each
other. The executor sets `AUDITOR_THREADS` in its workers (and `core_limit` in the audit's process), and caps BLAS
(`blas_limit`): per-query tasks run it on one thread wherever they run (two workers each running a two-thread BLAS
on two cores made pairwise 4x slower, and a threaded BLAS splits some sums differently)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

THREADS_ENV = "AUDITOR_THREADS"  # threads one task may use (LightGBM predict, numba, thread pools); set in workers


def cpu_count() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


_here = threading.local()


@contextmanager
def threads_here(count: int) -> Iterator[None]:
    """A budget for the calling thread only: each thread of a pool that already fills the cores says 1, so the
    LightGBM calls it makes run on one thread while other threads keep their own budget."""
    before = getattr(_here, "threads", None)
    _here.threads = max(1, count)
    try:
        yield
    finally:
        _here.threads = before


def thread_budget_here() -> int | None:
    """The calling thread's own budget (`threads_here`), None when it has none."""
    return getattr(_here, "threads", None)


def thread_budget(default: int | None = None) -> int:
    """Threads one piece of work may use: the calling thread's own budget (`threads_here`), else 1 inside an
    executor's worker (the workers already fill the cores), else `default` (all CPUs when None)."""
    here = thread_budget_here()
    if here is not None:
        return here
    value = os.environ.get(THREADS_ENV)
    if value:
        return max(1, int(value))
    return cpu_count() if default is None else default


def blas_limit(count: int) -> AbstractContextManager:
    """BLAS (numpy's, scipy's: every one loaded by now, looked up afresh, ~5 ms) limited to `count` threads for the
    whole process while the block runs."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=max(1, count), user_api="blas")
