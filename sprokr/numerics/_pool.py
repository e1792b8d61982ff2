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

import contextlib
import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Callable, Iterator, Sequence

from ..utils import RowError, row_offset

__all__ = ["process_map", "usable_cores", "check_processes", "START_METHODS", "ChunkError", "ChunkValueError",
           "ChunkTypeError", "chunk_error", "chunk_rows", "task_error", "check_task_rows"]

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


class ChunkValueError(ChunkError, ValueError):
    """A :class:`ChunkError` caused by a ``ValueError`` (bad input met in a chunk, e.g. a
    precomputed query block with the wrong columns): caught as either, so that bad input is
    a ``ValueError`` whether or not it was found inside a pass."""


class ChunkTypeError(ChunkError, TypeError):
    """A :class:`ChunkError` caused by a ``TypeError``: caught as either."""


def chunk_error(message: str, cause: BaseException) -> ChunkError:
    """The :class:`ChunkError` of ``message`` for an error ``cause``, of the subclass that is
    also ``cause``'s kind (``ValueError``, ``TypeError``) when it is one."""
    if isinstance(cause, ValueError):
        return ChunkValueError(message)
    if isinstance(cause, TypeError):
        return ChunkTypeError(message)
    return ChunkError(message)


@contextlib.contextmanager
def chunk_rows(what: str, start: int, stop: int) -> Iterator[None]:
    """Context of ``what`` (a pass's name) run on the global rows ``start:stop``.

    An error that names a row of its chunk (:class:`sprokr.utils.RowError`, e.g. an invalid
    molecule) is renumbered for the whole input and propagates itself, its type kept; a
    :class:`ChunkError` (already naming its rows) passes; any other error becomes a
    ``ChunkError`` "<what> failed on rows start-stop: <type>: <message>" caused by it.
    """
    try:
        with row_offset(start):
            yield
    except (ChunkError, RowError):
        raise
    except Exception as exc:
        raise chunk_error(f"{what} failed on rows {start}-{stop}: {type(exc).__name__}: {exc}", exc) from exc


def task_error(name: str, i: int, exc: BaseException,
               rows: Sequence[tuple[int, int]] | None = None) -> BaseException:
    """What a task map raises when task ``i`` raised ``exc``.

    ``rows[i]`` (optional) are the global rows ``(start, stop)`` task ``i`` holds: a
    :class:`sprokr.utils.RowError` is then renumbered for the whole input and returned itself
    (the caller re-raises it, its type kept), and other errors name the rows; without
    ``rows`` the error is a :class:`ChunkError` naming the task.
    """
    if isinstance(exc, ChunkError):
        return exc
    if rows is None:
        return chunk_error(f"{name} failed on task {i}: {type(exc).__name__}: {exc}", exc)
    start, stop = (int(r) for r in rows[i])
    if isinstance(exc, RowError):
        return exc.add_row_offset(start)
    return chunk_error(f"{name} failed on rows {start}-{stop} (task {i}): {type(exc).__name__}: {exc}", exc)


def check_task_rows(rows: Sequence[Sequence[int]] | None, n_tasks: int) -> list[tuple[int, int]] | None:
    """``rows`` of a task map: None, or one ``(start, stop)`` pair of integers per task."""
    if rows is None:
        return None
    out = [tuple(int(v) for v in r) for r in rows]
    if len(out) != n_tasks or any(len(r) != 2 or not 0 <= r[0] <= r[1] for r in out):
        raise ValueError(f"rows: one (start, stop) pair with 0 <= start <= stop per task expected, got "
                         f"{len(out)} pair(s) for {n_tasks} task(s)")
    return out  # type: ignore[return-value]


def process_map(fn: Callable[..., Any], tasks: Sequence[Sequence[Any]], processes: int | None = None,
                start_method: str = "spawn", max_pending: int | None = None, name: str = "tasks",
                on_done: Callable[[int], None] | None = None,
                rows: Sequence[Sequence[int]] | None = None) -> Iterator[tuple[int, Any]]:
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
    rows : sequence of (start, stop), optional
        The global rows each task holds (a chunk of a larger input): errors then name
        rows of the whole input instead of the task (see :func:`task_error`).

    Raises
    ------
    ChunkError
        A task raised (the message names the task -- its rows with ``rows`` -- and the
        original error), or a worker process died (e.g. killed by the out-of-memory
        killer).  Pending tasks are cancelled and the pool is shut down; results already
        yielded stay valid.
    sprokr.utils.RowError
        With ``rows``: a task's error naming a row of its chunk (e.g. an invalid molecule),
        itself, renumbered for the whole input.
    """
    procs = check_processes(processes)
    if start_method not in START_METHODS:
        raise ValueError(f"start_method must be one of {START_METHODS}, got {start_method!r}")
    tasks = list(tasks)
    rows = check_task_rows(rows, len(tasks))
    if procs == 1 or len(tasks) <= 1:
        for i, args in enumerate(tasks):
            try:
                res = fn(*args)
            except Exception as exc:
                failure = task_error(name, i, exc, rows)
                if failure is exc:  # a ChunkError, or a row error renumbered: itself
                    raise
                raise failure from exc
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
                    out = task_error(name, i, err, rows)
                    if out is err:  # a ChunkError, or a row error renumbered: itself
                        raise err
                    raise out from err
                if on_done is not None:
                    on_done(i)
                yield i, fut.result()
    finally:
        for fut in running:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
