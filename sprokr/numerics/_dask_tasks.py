"""The Dask executor's tasks and the sources its row partitions are rebuilt from.

Every task is a pure function of its inputs: it never modifies an input (a worker may
hold an input for several tasks, and the scheduler may run a task again after a worker
is lost), so rerunning any of them gives the same result.

A partition on the workers remembers its *source* -- how to build it again: rows given
by this process are scattered again from here, rows of a dask array are recomputed from
its graph, a pass's outputs kept on the workers (a distributed candidate index) are
recomputed from their parent partition, rows a loader made on the workers (a
memory-mapped candidate index) are loaded again.  When workers are lost, the executor rebuilds
the lost partitions from their sources and retries the pass; when the whole cluster is
gone, :meth:`Source.local` builds the partition in this process instead.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ._executor import fold_chunks, map_chunks
from ._pool import chunk_error
from ._pool import chunk_rows

__all__ = ["GivenRows", "MappedRows", "LoadedRows", "is_delayed", "dask_row_bounds", "dask_row_pieces", "identity", "prepare_block",
           "fold", "merge", "map_block", "map_part", "take_local", "call", "load_block"]


# ----------------------------------------------------------------------------- tasks
def identity(x):
    """An object shipped to the workers inside the graph (recomputable if lost)."""
    return x


def prepare_block(prepare, start, stop, *collections):
    # an invalid sample (a RowError) is named by its row of the whole input, not of the partition
    with chunk_rows("preparing", start, stop):
        return tuple(c if f is None else f(c) for c, f in zip(collections, prepare))


def fold(task, start, block, chunk_size):
    return fold_chunks(task, start, block, chunk_size)


def merge(task, a, b):
    # ``task.merge`` may add ``b`` into ``a`` in place; ``a`` is a result the worker keeps
    # (and may hand to a rerun of this task): merge into a copy
    return task.merge(copy.deepcopy(a), b)


def map_part(fn, start, block, chunk_size, name, which):
    return map_chunks(fn, start, block, chunk_size, name, None, which)


def map_block(fn, start, block, chunk_size, name, which):
    """A pass's outputs kept on the worker as a new partition (a one-collection block)."""
    return (map_chunks(fn, start, block, chunk_size, name, None, which),)


def take_local(block, which, idx):
    from ..utils import take

    return take(block[which], idx)


def call(fn, args):
    """One task of ``map_tasks``: ``fn(*args)``."""
    return fn(*args)


def load_block(loader, start, stop):
    """A partition made on its worker by ``loader(start, stop)`` (``partition_from``)."""
    try:
        return tuple(loader(start, stop))
    except Exception as exc:
        raise chunk_error(f"loading rows {start}-{stop} failed: {type(exc).__name__}: {exc}", exc) from exc


# ----------------------------------------------------------------------------- sources
def is_delayed(x):
    return hasattr(x, "__dask_graph__")


def dask_row_bounds(c):
    """Row bounds of a dask array's chunks (None for anything else)."""
    try:
        import dask.array as da
    except ImportError:  # pragma: no cover - dask missing
        return None
    if not isinstance(c, da.Array):
        return None
    if c.ndim not in (1, 2):
        raise ValueError(f"dask arrays must be 1-D or 2-D, got {c.ndim}-D")
    if any(np.isnan(s) for s in c.chunks[0]):
        raise ValueError("dask array with unknown chunk sizes: call .compute_chunk_sizes() first")
    return np.concatenate([[0], np.cumsum(c.chunks[0])]).astype(np.int64)


def dask_row_pieces(c, bounds):
    """One dask delayed chunk per row partition of a dask array (columns in one block);
    computed on the cluster, and recomputed from the array's graph if lost."""
    own = dask_row_bounds(c)
    if own.shape != bounds.shape or not np.array_equal(own, bounds):
        c = c.rechunk({0: tuple(np.diff(bounds).tolist())})
    if c.ndim == 2 and len(c.chunks[1]) > 1:
        c = c.rechunk({1: -1})
    return c.to_delayed().ravel().tolist()


class GivenRows:
    """Rows ``start:stop`` of collections given by this process (local pieces, or dask
    delayed chunks of a dask array), with the ``prepare`` functions applied on the worker."""

    def __init__(self, pieces: list[Any], prepare: tuple, start: int, stop: int) -> None:
        self.pieces, self.prepare, self.start, self.stop = pieces, prepare, int(start), int(stop)

    def submit(self, client, executor, scattered=None, computed=None):
        """A future of the prepared block.  ``scattered`` / ``computed``: futures of the local
        pieces / dask chunks when they were already sent (the first build sends every
        partition at once); otherwise they are sent again from here."""
        if scattered is None:
            local = [p for p in self.pieces if not is_delayed(p)]
            scattered = executor.scatter(client, local) if local else []
        if computed is None:
            delayed = [p for p in self.pieces if is_delayed(p)]
            computed = client.compute(delayed) if delayed else []
        scattered, computed = iter(scattered), iter(computed)
        args = [next(computed) if is_delayed(p) else next(scattered) for p in self.pieces]
        return client.submit(prepare_block, self.prepare, self.start, self.stop, *args, pure=False)

    def local(self, executor):
        import dask

        pieces = [dask.compute(p, scheduler="sync")[0] if is_delayed(p) else p for p in self.pieces]
        return prepare_block(self.prepare, self.start, self.stop, *pieces)


class MappedRows:
    """Partition ``j`` of the outputs of ``map_rows(parent, fn, keep=True)``."""

    def __init__(self, parent, j: int, fn, chunk_size: int, name: str, which) -> None:
        self.parent, self.j, self.fn, self.chunk_size, self.name, self.which = parent, j, fn, chunk_size, name, which

    def submit(self, client, executor):
        block = executor.live_block(client, self.parent, self.j)
        start = int(self.parent.bounds[self.j])
        return client.submit(map_block, executor.ship(client, self.fn), start, block, self.chunk_size, self.name,
                             self.which, pure=False)

    def local(self, executor):
        block = executor.local_block(self.parent, self.j)
        start = int(self.parent.bounds[self.j])
        return map_block(self.fn, start, block, self.chunk_size, self.name, self.which)


class LoadedRows:
    """Rows ``start:stop`` made where they live by ``loader(start, stop)`` (``partition_from``:
    e.g. memory-mapped from a file every worker sees)."""

    def __init__(self, loader, start: int, stop: int) -> None:
        self.loader, self.start, self.stop = loader, int(start), int(stop)

    def submit(self, client, executor, loader=None):
        """A future of the block; ``loader``: a future of the loader when it was already
        shipped (the first build ships it once for every partition)."""
        if loader is None:
            loader = executor.ship(client, self.loader, "the partition loader")
        return client.submit(load_block, loader, self.start, self.stop, pure=False)

    def local(self, executor):
        return load_block(self.loader, self.start, self.stop)


def whole_rows(sources):
    """One :class:`LoadedRows` for all the rows of ``sources`` when they are the consecutive
    rows of one loader (``partition_from``'s partitions), else None: built here in one block,
    a memory-mapped file is mapped again rather than copied piece by piece."""
    if not sources or not all(isinstance(s, LoadedRows) and s.loader is sources[0].loader for s in sources):
        return None
    if any(a.stop != b.start for a, b in zip(sources[:-1], sources[1:])):
        return None
    return LoadedRows(sources[0].loader, sources[0].start, sources[-1].stop)
