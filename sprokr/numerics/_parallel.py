"""Row-block thread parallelism for the memory-bound passes BLAS does not cover.

BLAS already uses every core for products, but numpy's elementwise ufuncs (``exp``,
in-place shifts, row means) and scipy's CSR x dense kernel run on one core.  All of them
release the GIL on large arrays, so splitting the rows of a block over a small thread
pool uses the other cores (Bibtex kernel block: ``exp`` + clamp 47 ms -> 26 ms on two
cores).  Blocks too small to amortise the hand-off run inline.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

__all__ = ["n_workers", "for_row_blocks", "fold_thread", "in_fold_thread"]

_POOL = None
#: guards the pool's creation: threads making their first pass at once share one pool
_POOL_LOCK = threading.Lock()
#: below this many elements a pass runs in the calling thread
MIN_PARALLEL_SIZE = 1 << 18


def _forget_pool():
    # a forked child inherits the pool object but none of its threads: submitting to it
    # would wait forever, so the child starts its own pool on first use (and its own lock,
    # which a thread of the parent may have held)
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


def _pool(workers):
    """The shared row-block pool, created on first use (once, whichever threads ask)."""
    global _POOL
    pool = _POOL
    if pool is None:
        with _POOL_LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(workers, thread_name_prefix="sprokr")
            pool = _POOL
    return pool


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


_FOLD = threading.local()


class fold_thread:
    """Context marking the current thread as one of several folding chunks at once
    (:func:`sprokr.numerics.LocalExecutor.map_reduce` of a thread-safe task): products
    then prefer the BLAS entry points that release the GIL (numpy's), so the threads run
    together, where one thread alone keeps scipy's (slightly faster, GIL-holding) ones."""

    def __enter__(self):
        _FOLD.active = True
        return self

    def __exit__(self, *exc):
        _FOLD.active = False
        return False


def in_fold_thread() -> bool:
    """True inside :class:`fold_thread` in this thread."""
    return getattr(_FOLD, "active", False)


def n_workers() -> int:
    """Threads used for row-block passes: the usable cores, at most 4."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def for_row_blocks(fn: Callable[[slice], Any], n_rows: int, size: int | None = None) -> None:
    """Call ``fn(slice)`` on contiguous row blocks covering ``range(n_rows)``, in parallel.

    ``fn`` must only touch the rows of its slice (blocks run concurrently).  ``size`` is
    the number of elements the pass touches (default: assume it is large).

    Parameters
    ----------
    fn : callable
        Called as ``fn(slice)`` on each row block.
    n_rows : int
        Number of rows to cover.
    size : int, optional
        Number of elements the pass touches; below ``MIN_PARALLEL_SIZE`` it runs inline.
    """
    workers = n_workers()
    if workers == 1 or n_rows < 2 * workers or (size is not None and size < MIN_PARALLEL_SIZE):
        fn(slice(0, n_rows))
        return
    pool = _pool(workers)
    bounds = np.linspace(0, n_rows, workers + 1).astype(int)
    futures = [pool.submit(fn, slice(bounds[i], bounds[i + 1])) for i in range(workers)]
    for f in futures:
        f.result()
