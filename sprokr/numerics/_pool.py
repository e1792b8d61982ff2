"""Independent tasks in worker processes: the executors' ``map_tasks``.

The chunked passes of :mod:`sprokr.numerics._executor` are BLAS-bound and run in this
process (BLAS and :func:`for_row_blocks` use the cores).  Some work holds the GIL for its
whole duration -- parsing a million SMILES with RDKit, hashing strings -- and threads do not
help it: it needs worker *processes*.  :func:`process_map` runs ``fn(*task)`` for a list of
independent tasks (typically one chunk of rows each) on a
:class:`concurrent.futures.ProcessPoolExecutor` and yields ``(i, result)`` as each finishes,
so the caller can store every result at once (a feature cache writes a chunk file per
result: an interrupted run keeps what was done).

At most ``max_pending`` tasks are in flight (default: twice the processes), so results
never pile up in memory faster than the caller consumes them.  The workers are started
with ``start_method`` (default ``"spawn"``: a fresh interpreter, safe whatever threads this
process runs -- BLAS pools, a Dask client; a script using it needs the usual
``if __name__ == "__main__":`` guard).
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Callable, Iterator, Sequence

__all__ = ["process_map", "usable_cores", "check_processes", "START_METHODS"]

#: process start methods accepted by :func:`process_map`
START_METHODS = ("spawn", "forkserver", "fork")


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def check_processes(processes: int | None) -> int:
    """``processes``: None (the usable cores) or an integer >= 1."""
    import numbers

    if processes is None:
        return usable_cores()
    if isinstance(processes, bool) or not isinstance(processes, numbers.Integral) or processes < 1:
        raise ValueError(f"processes must be None or an integer >= 1, got {processes!r}")
    return int(processes)


class ChunkError(RuntimeError):
    """A chunked pass failed on some rows; names the rows and the original error."""


def _task_error(name: str, i: int, exc: BaseException) -> Exception:
    if isinstance(exc, ChunkError):
        return exc
    return ChunkError(f"{name} failed on task {i}: {type(exc).__name__}: {exc}")


def process_map(fn: Callable[..., Any], tasks: Sequence[Sequence[Any]], processes: int | None = None,
                start_method: str = "spawn", max_pending: int | None = None, name: str = "tasks",
                on_done: Callable[[int], None] | None = None) -> Iterator[tuple[int, Any]]:
    """``(i, fn(*tasks[i]))`` for every task, yielded as the tasks finish (any order).

    Parameters
    ----------
    fn : picklable callable
        A module-level function or an instance of a module-level class (it is sent to the
        workers once per task).
    tasks : sequence of argument tuples
    processes : int, optional
        Worker processes (default: the usable cores).  ``1`` runs the tasks in this
        process, in order (no pickling; for debugging and tests).
    start_method : {"spawn", "forkserver", "fork"}
    max_pending : int, optional
        Tasks in flight at once (default ``2 * processes``).
    name : str
        Names the work in error messages.
    on_done : callable, optional
        ``on_done(i)`` after task ``i`` finished (before it is yielded), e.g. a progress bar.

    Raises
    ------
    ChunkError
        A task raised (the message names the task and the original error), or a worker
        process died (e.g. killed by the out-of-memory killer).  Pending tasks are
        cancelled and the pool is shut down; results already yielded stay valid.
    """
    procs = check_processes(processes)
    if start_method not in START_METHODS:
        raise ValueError(f"start_method must be one of {START_METHODS}, got {start_method!r}")
    tasks = list(tasks)
    if procs == 1 or len(tasks) <= 1:
        for i, args in enumerate(tasks):
            try:
                res = fn(*args)
            except Exception as exc:
                raise _task_error(name, i, exc) from exc
            if on_done is not None:
                on_done(i)
            yield i, res
        return
    pending_max = max(1, int(max_pending) if max_pending is not None else 2 * procs)
    ctx = multiprocessing.get_context(start_method)
    pool = ProcessPoolExecutor(max_workers=min(procs, len(tasks)), mp_context=ctx)
    running: dict[Future, int] = {}
    nxt = 0
    try:
        while nxt < len(tasks) or running:
            while nxt < len(tasks) and len(running) < pending_max:
                running[pool.submit(fn, *tasks[nxt])] = nxt
                nxt += 1
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=running.__getitem__):  # a fixed order among ties
                i = running.pop(fut)
                err = fut.exception()
                if err is not None:
                    raise _task_error(name, i, err) from err
                if on_done is not None:
                    on_done(i)
                yield i, fut.result()
    finally:
        for fut in running:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
