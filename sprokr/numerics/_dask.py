"""The Dask executor: row partitions live on ``dask.distributed`` workers.

Data is split into row partitions held by the workers (a dask array keeps its own row
chunks; arrays, sparse matrices and sequences given here are scattered once).  A pass
ships its :class:`ChunkTask` (kernel parameters, support points, sketch weights, shifts)
to the workers once, each worker folds the chunks of its partitions next to the data, and
only the partial results (``m x m`` / ``m x p`` sums, top-k lists) travel, merged by a
tree reduction in a fixed pattern.  Works unchanged on a ``LocalCluster`` and on any
cluster a ``Client`` points at (``dask scheduler`` / ``dask worker``; see
``docs/scaling.md``).

Faults: every partition remembers its source (``_dask_tasks``), so a pass that lost
workers rebuilds the partitions they held and runs again (``retries``); every wait on
the cluster is bounded (``timeout`` without progress); a closed client, a worker crashed
by a task and a module the workers cannot import are errors that say so (``_faults``).

This module holds the executor itself: its parameters, how data becomes partitions and
the passes' task graphs.  Its base classes hold the rest, each layer importing only the
ones below it: ``_dask_cluster`` (:class:`DaskClusterOps`: sending objects, the bounded
waits, the retries and rebuilding lost partitions) on ``_dask_client``
(:class:`DaskClient`: the client and the workers it sees); ``_dask_tasks`` holds the
functions that run on the workers and the partitions' sources.
"""
from __future__ import annotations

import logging
import numbers
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..utils import check_integer, concat_samples, num_samples, take, take_slice
from ._dask_client import require_distributed
from ._dask_cluster import DaskClusterOps, Lost
from ._dask_tasks import (
    GivenRows, LoadedRows, MappedRows, call, dask_row_bounds, dask_row_pieces, fold, is_delayed, map_block, map_part,
    merge, take_local, whole_rows,
)
from ._executor import Executor, LocalExecutor, RowPartitions, check_progress, column_names
from ._faults import WorkerLostError, modules_needed
from ._pool import check_task_rows

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import Samples
    from ._executor import ChunkTask

__all__ = ["DaskExecutor", "DEFAULT_TIMEOUT"]

logger = logging.getLogger("sprokr.numerics")

#: seconds a wait on the cluster may go without progress (DaskExecutor(timeout=...))
DEFAULT_TIMEOUT = 120.0


class _Partitions(RowPartitions):
    """Row partitions on the workers, with the source each can be rebuilt from."""

    def __init__(self, n: int, bounds: ArrayLike, blocks: list[Any], executor: Executor, sources: list[Any],
                 names: Sequence[str] | None = None) -> None:
        super().__init__(n, bounds, blocks, executor, names)
        self.sources = sources


class DaskExecutor(DaskClusterOps, Executor):
    """Chunked passes on ``dask.distributed`` workers.

    Parameters
    ----------
    client : distributed.Client, optional
        The client to use (default: the current default client; ``address`` otherwise).
        A connection, not a value: ``sklearn.base.clone`` and ``copy.deepcopy`` of the
        executor (or of an estimator given it) share it.
    address : str, optional
        Scheduler address to connect to when no client is given (``"tcp://host:8786"``).
    n_partitions : int, optional
        Row partitions for data given as local arrays or sequences (default: twice the
        number of worker threads).  A dask array keeps its own row chunks.
    progress : bool or None
        Progress bars over the rows of each pass (a partition counts when it is done);
        None (default) follows ``$SPROKR_PROGRESS``, then whether standard error is a
        terminal.
    timeout : float or None, default 120
        Seconds any wait on the cluster may go without progress (no partition of the
        pass finishing while no worker is computing one of them, a scatter or a result
        not arriving) before the pass fails with
        :class:`~sprokr.numerics.DistributedTimeoutError`.  A partition that takes longer
        than that is waited for as long as its worker is computing (running, heard from,
        using CPU); a hung, paused or unreachable worker fails the pass.  None waits
        forever -- except for a worker to join a cluster that has none: that wait is at
        most 10 s (``timeout`` if shorter) whatever the value.
    retries : int, default 2
        Times a pass is retried after workers were lost: the partitions they held are
        rebuilt from their sources (rows given by this process are sent again, a
        distributed candidate index is recomputed from its candidates) and the pass
        rerun.  Every task is a pure function of its inputs, so a retry gives the same
        result.

    Raises
    ------
    ImportError
        ``dask.distributed`` is not installed (``pip install "sprokr[dask]"``).
    ValueError
        No client is running and no address was given.
    ClientClosedError
        The client (or its scheduler) is closed.
    WorkerLostError, DistributedTimeoutError, WorkerImportError
        Workers lost beyond the retries; no progress for ``timeout`` s, or a cluster with
        no workers; a module the shipped objects need is missing on the workers (see
        ``docs/scaling.md``).
    """

    name = "dask"

    def __init__(self, client: Any | None = None, address: str | None = None, n_partitions: int | None = None,
                 progress: bool | None = None, timeout: float | None = DEFAULT_TIMEOUT, retries: int = 2) -> None:
        self.client = client
        self.address = address
        self.n_partitions = n_partitions
        self.progress = progress
        self.timeout = timeout
        self.retries = retries
        self._own_client = None
        self._seen_workers: set[str] = set()
        self._scheduler_address: str | None = None

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"client": self.client, "address": self.address, "n_partitions": self.n_partitions,
                "progress": self.progress, "timeout": self.timeout, "retries": self.retries}

    def __repr__(self):
        return f"DaskExecutor(client={self.client!r}, n_partitions={self.n_partitions!r})"

    def __getstate__(self):  # a client is not shipped anywhere; it is found again
        state = dict(self.__dict__)
        state["client"] = state["_own_client"] = None
        state["_seen_workers"] = set()
        return state

    # A client is a connection (sockets, an event loop), not a value: copies of the
    # executor share it.  scikit-learn's clone would deep-copy it (and fail on its
    # sockets), and pickling's __getstate__ above would silently drop it.
    def __sklearn_clone__(self) -> DaskExecutor:
        """A new executor with the same parameters, sharing the same ``client``."""
        return type(self)(**self.get_params(deep=False))

    def __deepcopy__(self, memo: dict[int, Any]) -> DaskExecutor:
        """A copy with the same parameters and the same ``client`` (a connection is shared,
        not copied); a client this executor opened itself from ``address`` is not shared
        (each copy closes its own)."""
        new = self.__sklearn_clone__()
        new._seen_workers = set(self._seen_workers)
        new._scheduler_address = self._scheduler_address
        memo[id(self)] = new
        return new

    def __sprokr_save__(self) -> DaskExecutor:
        """What the safe model format writes in place of this executor: its settings
        without the client (``executor="dask"`` with these parameters: a loaded model
        refitted uses the default client of its own process)."""
        params = self.get_params(deep=False)
        params["client"] = None
        return type(self)(**params)

    def _validate(self):
        check_progress(self.progress)
        t = self.timeout
        if t is not None and (isinstance(t, bool) or not isinstance(t, numbers.Real) or not t > 0):
            raise ValueError(f"timeout must be None or a number of seconds > 0, got {t!r}")
        check_integer(self.retries, "retries", 0)

    def _n_parts(self, client, n):
        p = self.n_partitions
        if p is None:
            threads = sum(client.nthreads().values()) or 1
            p = 2 * threads
        return max(1, min(check_integer(p, "n_partitions"), n))

    # ------------------------------------------------------------------ partitions
    def local_partitions(self, parts: RowPartitions) -> RowPartitions:
        """The partitions rebuilt in this process, for a :class:`LocalExecutor` (when the
        client is closed: a distributed candidate index falls back to a local one).

        Partitions a loader made (:meth:`partition_from`) are loaded here as one partition:
        a memory-mapped index is mapped again from its file, not copied into memory.
        """
        self._check_parts(parts)
        ex = LocalExecutor()
        whole = whole_rows(getattr(parts, "sources", None))
        if whole is not None and (whole.start, whole.stop) == (0, parts.n):
            return RowPartitions(parts.n, [0, parts.n], [whole.local(self)], ex, parts.names)
        return RowPartitions(parts.n, parts.bounds, [self.local_block(parts, j) for j in range(parts.n_partitions)],
                             ex, parts.names)

    # ------------------------------------------------------------------ data
    def partition(self, *collections: Samples,
                  prepare: Sequence[Callable[[Any], Any] | None] | None = None,
                  names: Sequence[str] | None = None) -> RowPartitions:
        self._validate()
        client = self.get_client()
        if not collections:
            raise ValueError("partition needs at least one collection")
        self._require_workers(client)  # before counting their threads (n_partitions) and sending rows
        names = column_names(names, len(collections))
        prepare = tuple(prepare) if prepare is not None else (None,) * len(collections)
        if len(prepare) != len(collections):
            raise ValueError("prepare needs one function (or None) per collection")
        dask_bounds = [dask_row_bounds(c) for c in collections]
        known = [b for b in dask_bounds if b is not None]
        n = num_samples(collections[0], "collection 0") if not known else int(known[0][-1])
        sizes = [num_samples(c, f"collection {i}") if b is None else int(b[-1])
                 for i, (c, b) in enumerate(zip(collections, dask_bounds))]
        if len(set(sizes)) > 1:
            raise ValueError(f"collections to partition have different numbers of rows: {sizes}")
        bounds = known[0] if known else np.linspace(0, n, self._n_parts(client, n) + 1).astype(np.int64)
        pieces = []  # per collection: one piece (or dask delayed chunk) per partition
        for c, b in zip(collections, dask_bounds):
            if b is not None:
                pieces.append(dask_row_pieces(c, bounds))
            else:
                pieces.append([take_slice(c, slice(int(a), int(z))) for a, z in zip(bounds[:-1], bounds[1:])])
        sources = [GivenRows([p[j] for p in pieces], prepare, bounds[j], bounds[j + 1])
                   for j in range(len(bounds) - 1)]
        # what the workers unpickle: the prepare functions (kernels) and the samples' types
        sample = [take_slice(c, slice(0, min(n, 2))) for c, b in zip(collections, dask_bounds) if b is None]
        self._check_imports(client, modules_needed((prepare, sample))[0], "partitioning the data")

        def attempt(client):
            local = [p for s in sources for p in s.pieces if not is_delayed(p)]
            delayed = [p for s in sources for p in s.pieces if is_delayed(p)]
            scattered = iter(self.scatter(client, local) if local else [])
            computed = iter(client.compute(delayed) if delayed else [])
            blocks = []
            for s in sources:
                k = sum(not is_delayed(p) for p in s.pieces)
                blocks.append(s.submit(client, self, [next(scattered) for _ in range(k)],
                                       [next(computed) for _ in range(len(s.pieces) - k)]))
            return blocks

        return _Partitions(n, bounds, self._run("partition", attempt), self, sources, names)

    # ------------------------------------------------------------------ passes
    def map_reduce(self, parts: RowPartitions, task: ChunkTask, chunk_size: int) -> Any:
        self._check_parts(parts)
        sizes = [int(sl.stop - sl.start) for sl in parts.slices()]

        def attempt(client):
            task_f = self.ship(client, task, f"the {task.name} pass")
            partials = [client.submit(fold, task_f, int(sl.start), self.live_block(client, parts, j), chunk_size,
                                      pure=False) for j, sl in enumerate(parts.slices())]
            merges, level = [], partials
            while len(level) > 1:  # fixed pairing: reproducible for a fixed partitioning
                nxt = [client.submit(merge, task_f, level[i], level[i + 1], pure=False)
                       for i in range(0, len(level) - 1, 2)]
                merges.extend(nxt)
                if len(level) % 2:
                    nxt.append(level[-1])
                level = nxt
            with self.progress_bar(parts, task.name) as bar:
                self._wait(client, partials + merges, task.name,
                           lambda i: bar.update(sizes[i]) if i < len(sizes) else None)
            return self._result(level[0], task.name)

        return task.finish(self._run(task.name, attempt))

    def map_rows(self, parts: RowPartitions, fn: Callable[..., Any], chunk_size: int, keep: bool = False,
                 name: str = "pass", out: np.ndarray | None = None, which: str | int | None = 0) -> Any:
        self._check_parts(parts)
        which = None if which is None else parts.column(which)
        sizes = [int(sl.stop - sl.start) for sl in parts.slices()]

        def attempt(client):
            fn_f = self.ship(client, fn, f"the {name} pass")
            run = map_block if keep else map_part
            outs = [client.submit(run, fn_f, int(sl.start), self.live_block(client, parts, j), chunk_size, name,
                                  which, pure=False) for j, sl in enumerate(parts.slices())]
            with self.progress_bar(parts, name) as bar:
                self._wait(client, outs, name, lambda i: bar.update(sizes[i]))
            if keep:
                return outs
            if out is None:
                return np.concatenate([self._result(o, name) for o in outs], axis=0)
            for sl, o in zip(parts.slices(), outs):  # one partition at a time: no second copy
                out[sl] = self._result(o, name)
            return out

        res = self._run(name, attempt)
        if keep:  # the outputs stay on the workers, rebuilt from this pass if lost
            sources = [MappedRows(parts, j, fn, chunk_size, name, which) for j in range(parts.n_partitions)]
            return _Partitions(parts.n, parts.bounds, res, self, sources)
        return res

    def map_tasks(self, fn: Callable[..., Any], tasks: Sequence[Sequence[Any]], name: str = "tasks",
                  weights: Sequence[int] | None = None, processes: int | None = None,
                  rows: Sequence[Sequence[int]] | None = None) -> Iterator[tuple[int, Any]]:
        """``(i, fn(*tasks[i]))`` yielded as the tasks finish on the workers (any order).

        ``fn`` is shipped once (after the workers' imports are checked; small: in the graph,
        so a lost worker's copy is rebuilt), one future per task; ``processes`` is ignored
        (the cluster's workers run the tasks).  The tasks still unfinished when workers are
        lost are resubmitted up to ``retries`` times (those already yielded are not run
        again); a task's own error is a :class:`ChunkError` naming it (or its ``rows``; a
        :class:`~sprokr.utils.RowError` is renumbered by them and raised itself:
        :func:`task_error`); no task finishing for ``timeout`` s is a
        :class:`DistributedTimeoutError`.  See :meth:`Executor.map_tasks`.
        """
        from ._executor import task_progress, task_weights

        require_distributed()
        check_progress(self.progress)
        self._validate()
        tasks = list(tasks)
        w = task_weights(tasks, weights)
        rows = check_task_rows(rows, len(tasks))
        if not tasks:
            return
        todo = set(range(len(tasks)))
        causes: list[str] = []
        with task_progress(self, w, name) as bar:
            for attempt in range(int(self.retries) + 1):
                client = self.get_client()
                self._require_workers(client)
                futures: dict[int, Any] = {}
                try:
                    fn_f = self.ship(client, fn, f"the {name} tasks")
                    futures = {i: client.submit(call, fn_f, tuple(tasks[i]), pure=False) for i in sorted(todo)}
                    for i, f in self._as_finished(client, futures, name, tasks=len(tasks), rows=rows):
                        res = self._result(f, name)
                        f.release()
                        todo.discard(i)
                        bar.update(w[i])
                        yield i, res
                    return
                except Lost as exc:
                    causes.append(str(exc))
                    logger.warning("Dask worker(s) lost during the %s tasks (%s); resubmitting the %d unfinished "
                                   "task(s) (%d of %d)", name, exc, len(todo), attempt + 1, self.retries)
                finally:
                    if client.status == "running":  # a closed client cancelled them (and sends nothing)
                        client.cancel([f for f in futures.values() if not f.done()])
        raise WorkerLostError(f"the {name} tasks lost their workers {int(self.retries) + 1} times ({causes[-1]}); "
                              f"check the workers' logs and memory (DaskExecutor(retries=...) sets the retries; "
                              f"executor='local' avoids the cluster)")

    def partition_from(self, loader: Callable[[int, int], tuple[Any, ...]], n: int,
                       n_partitions: int | None = None) -> RowPartitions:
        """Partitions made on the workers by ``loader(start, stop)`` (nothing is scattered:
        e.g. each worker memory-maps its rows of a file on a shared disk)."""
        self._validate()
        client = self.get_client()
        self._require_workers(client)
        n = int(n)
        p = self._n_parts(client, max(n, 1)) if n_partitions is None else max(1, min(int(n_partitions), max(n, 1)))
        bounds = np.linspace(0, n, p + 1).astype(np.int64)
        # each block remembers its loader: rebuilt after a lost worker, or here when the
        # client is closed (a distributed candidate index falling back to a local one)
        sources = [LoadedRows(loader, a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        # shipped in the graph when small: the scheduler can rebuild a lost worker's blocks
        loader_f = self.ship(client, loader, "the partition loader")
        blocks = [s.submit(client, self, loader_f) for s in sources]
        return _Partitions(n, bounds, blocks, self, sources)

    def take_rows(self, parts: RowPartitions, indices: ArrayLike, which: str | int = 0) -> Samples:
        self._check_parts(parts)
        which = parts.column(which)
        idx = np.asarray(indices, dtype=np.intp)
        owner = np.searchsorted(parts.bounds, idx, side="right") - 1
        order = np.argsort(owner, kind="stable")
        groups = [(int(j), order[owner[order] == j]) for j in np.unique(owner)]

        def attempt(client):
            futs = [client.submit(take_local, self.live_block(client, parts, j), which, idx[sel] - parts.bounds[j],
                                  pure=False) for j, sel in groups]
            self._wait(client, futs, "row gathering")
            return [self._result(f, "row gathering") for f in futs]

        got = concat_samples(self._run("row gathering", attempt))
        pos = np.concatenate([sel for _, sel in groups])
        inv = np.empty_like(pos)
        inv[pos] = np.arange(pos.size)
        return take(got, inv)
