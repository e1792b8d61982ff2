"""The Dask executor: row partitions live on ``dask.distributed`` workers.

Data is split into row partitions held by the workers (a dask array keeps its own row
chunks; arrays, sparse matrices and sequences given here are scattered once).  A pass
ships its :class:`ChunkTask` (kernel parameters, support points, sketch weights, shifts)
to the workers once, each worker folds the chunks of its partitions next to the data, and
only the partial results (``m x m`` / ``m x p`` sums, top-k lists) travel, merged by a
tree reduction in a fixed pattern.  Works unchanged on a ``LocalCluster`` and on any
cluster a ``Client`` points at (``dask scheduler`` / ``dask worker``; see
``docs/scaling.md``).
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..utils import concat_samples, num_samples, take, take_slice
from ._executor import ChunkError, Executor, RowPartitions, check_progress, fold_chunks, map_chunks

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import Samples
    from ._executor import ChunkTask

__all__ = ["DaskExecutor", "dask_available"]


def dask_available() -> bool:
    """True when ``dask.distributed`` can be imported (the ``dask`` extra)."""
    import importlib.util

    return importlib.util.find_spec("distributed") is not None


def _require_distributed():
    if not dask_available():
        raise ImportError("the 'dask' executor needs dask.distributed: pip install 'sprokr[dask]'")
    import distributed

    return distributed


def _prepare_block(prepare, start, stop, *collections):
    try:
        return tuple(c if f is None else f(c) for c, f in zip(collections, prepare))
    except Exception as exc:
        raise ChunkError(f"preparing rows {start}-{stop} failed: {type(exc).__name__}: {exc}") from exc


def _fold(task, start, block, chunk_size):
    return fold_chunks(task, start, block, chunk_size)


def _merge(task, a, b):
    return task.merge(a, b)


def _map(fn, start, block, chunk_size, name, which):
    return map_chunks(fn, start, block, chunk_size, name, None, which)


def _take_local(block, which, idx):
    return take(block[which], idx)


def _as_block(x):
    return (x,)


class DaskExecutor(Executor):
    """Chunked passes on ``dask.distributed`` workers.

    Parameters
    ----------
    client : distributed.Client, optional
        The client to use (default: the current default client; ``address`` otherwise).
    address : str, optional
        Scheduler address to connect to when no client is given (``"tcp://host:8786"``).
    n_partitions : int, optional
        Row partitions for data given as local arrays or sequences (default: twice the
        number of worker threads).  A dask array keeps its own row chunks.
    progress : bool or None
        Progress bars over the rows of each pass (a partition counts when it is done);
        None (default) follows ``$SPROKR_PROGRESS``, then whether standard error is a
        terminal.

    Raises
    ------
    ImportError
        ``dask.distributed`` is not installed (``pip install "sprokr[dask]"``).
    ValueError
        No client is running and no address was given.
    """

    name = "dask"

    def __init__(self, client: Any | None = None, address: str | None = None, n_partitions: int | None = None,
                 progress: bool | None = None) -> None:
        self.client = client
        self.address = address
        self.n_partitions = n_partitions
        self.progress = progress
        self._own_client = None

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"client": self.client, "address": self.address, "n_partitions": self.n_partitions,
                "progress": self.progress}

    def _track(self, parts, futures, name):
        """Progress over the rows of a pass: a partition's rows count when its future is done."""
        distributed = _require_distributed()
        sizes = {f.key: int(sl.stop - sl.start) for f, sl in zip(futures, parts.slices())}
        with self.progress_bar(parts, name) as bar:
            for f in distributed.as_completed(futures):
                bar.update(sizes[f.key])

    def __repr__(self):
        return f"DaskExecutor(client={self.client!r}, n_partitions={self.n_partitions!r})"

    def __getstate__(self):  # a client is not shipped anywhere; it is found again
        state = dict(self.__dict__)
        state["client"] = state["_own_client"] = None
        return state

    # ------------------------------------------------------------------ client
    def get_client(self) -> Any:
        distributed = _require_distributed()
        if self.client is not None:
            return self.client
        if self._own_client is not None:
            return self._own_client
        if self.address is not None:
            self._own_client = distributed.Client(self.address)
            return self._own_client
        try:
            return distributed.default_client()
        except ValueError:
            raise ValueError(
                "executor='dask' needs a running dask.distributed Client: create one first "
                "(Client(LocalCluster(n_workers=2)) on this machine, Client('tcp://scheduler:8786') "
                "for a cluster), or pass executor=DaskExecutor(address=...) or the Client itself"
            ) from None

    def close(self) -> None:
        if self._own_client is not None:
            self._own_client.close()
            self._own_client = None

    def _n_parts(self, client, n):
        p = self.n_partitions
        if p is None:
            threads = sum(client.nthreads().values()) or 1
            p = 2 * threads
        if isinstance(p, bool) or not isinstance(p, (numbers.Integral, np.integer)) or p < 1:
            raise ValueError(f"n_partitions must be an integer >= 1, got {p!r}")
        return max(1, min(int(p), n))

    # ------------------------------------------------------------------ data
    def partition(self, *collections: Samples,
                  prepare: Sequence[Callable[[Any], Any] | None] | None = None) -> RowPartitions:
        check_progress(self.progress)
        client = self.get_client()
        if not collections:
            raise ValueError("partition needs at least one collection")
        prepare = tuple(prepare) if prepare is not None else (None,) * len(collections)
        if len(prepare) != len(collections):
            raise ValueError("prepare needs one function (or None) per collection")
        dask_bounds = [_dask_row_bounds(c) for c in collections]
        known = [b for b in dask_bounds if b is not None]
        n = num_samples(collections[0], "collection 0") if not known else int(known[0][-1])
        sizes = [num_samples(c, f"collection {i}") if b is None else int(b[-1])
                 for i, (c, b) in enumerate(zip(collections, dask_bounds))]
        if len(set(sizes)) > 1:
            raise ValueError(f"collections to partition have different numbers of rows: {sizes}")
        bounds = known[0] if known else np.linspace(0, n, self._n_parts(client, n) + 1).astype(np.int64)
        pieces = []  # per collection: one future per partition
        for c, b in zip(collections, dask_bounds):
            if b is not None:
                pieces.append(_dask_row_futures(client, c, bounds))
            else:
                parts = [take_slice(c, slice(int(a), int(z))) for a, z in zip(bounds[:-1], bounds[1:])]
                pieces.append(client.scatter(parts))
        blocks = [client.submit(_prepare_block, prepare, int(bounds[j]), int(bounds[j + 1]),
                                *(p[j] for p in pieces), pure=False)
                  for j in range(len(bounds) - 1)]
        return RowPartitions(n, bounds, blocks, self)

    # ------------------------------------------------------------------ passes
    def map_reduce(self, parts: RowPartitions, task: ChunkTask, chunk_size: int) -> Any:
        self._check_parts(parts)
        client = self.get_client()
        [task_f] = client.scatter([task], broadcast=True)
        keep = []  # hold every future until the result is in (no early release)
        partials = [client.submit(_fold, task_f, int(sl.start), block, chunk_size, pure=False)
                    for sl, block in zip(parts.slices(), parts.blocks)]
        keep.extend(partials)
        self._track(parts, partials, task.name)
        while len(partials) > 1:  # fixed pairing: reproducible for a fixed partitioning
            nxt = [client.submit(_merge, task_f, partials[i], partials[i + 1], pure=False)
                   for i in range(0, len(partials) - 1, 2)]
            if len(partials) % 2:
                nxt.append(partials[-1])
            keep.extend(nxt)
            partials = nxt
        result = partials[0].result()
        del keep
        return task.finish(result)

    def map_rows(self, parts: RowPartitions, fn: Callable[..., Any], chunk_size: int, keep: bool = False,
                 name: str = "pass", out: np.ndarray | None = None, which: int = 0) -> Any:
        self._check_parts(parts)
        client = self.get_client()
        [fn_f] = client.scatter([fn], broadcast=True)
        outs = [client.submit(_map, fn_f, int(sl.start), block, chunk_size, name, which, pure=False)
                for sl, block in zip(parts.slices(), parts.blocks)]
        self._track(parts, outs, name)
        if keep:
            blocks = [client.submit(_as_block, o, pure=False) for o in outs]
            return RowPartitions(parts.n, parts.bounds, blocks, self)
        if out is None:
            return np.concatenate(client.gather(outs), axis=0)
        for sl, o in zip(parts.slices(), outs):  # one partition at a time: no second copy
            out[sl] = o.result()
        return out

    def map_tasks(self, fn: Callable[..., Any], tasks: Sequence[Sequence[Any]], name: str = "tasks",
                  weights: Sequence[int] | None = None, processes: int | None = None) -> Iterator[tuple[int, Any]]:
        """``(i, fn(*tasks[i]))`` yielded as the tasks finish on the workers (any order).

        ``fn`` is shipped once (broadcast), one future per task; ``processes`` is ignored
        (the cluster's workers run the tasks).  See :meth:`Executor.map_tasks`.
        """
        return _dask_map_tasks(self, fn, tasks, name, weights)

    def partition_from(self, loader: Callable[[int, int], tuple[Any, ...]], n: int,
                       n_partitions: int | None = None) -> RowPartitions:
        """Partitions made on the workers by ``loader(start, stop)`` (nothing is scattered:
        e.g. each worker memory-maps its rows of a file on a shared disk)."""
        check_progress(self.progress)
        client = self.get_client()
        n = int(n)
        p = self._n_parts(client, max(n, 1)) if n_partitions is None else max(1, min(int(n_partitions), max(n, 1)))
        bounds = np.linspace(0, n, p + 1).astype(np.int64)
        [loader_f] = client.scatter([loader], broadcast=True)
        blocks = [client.submit(_load_block, loader_f, int(a), int(b), pure=False)
                  for a, b in zip(bounds[:-1], bounds[1:])]
        return RowPartitions(n, bounds, blocks, self)

    def take_rows(self, parts: RowPartitions, indices: ArrayLike, which: int = 0) -> Samples:
        self._check_parts(parts)
        client = self.get_client()
        idx = np.asarray(indices, dtype=np.intp)
        owner = np.searchsorted(parts.bounds, idx, side="right") - 1
        order = np.argsort(owner, kind="stable")
        sels, futs = [], []
        for j in np.unique(owner):
            sel = order[owner[order] == j]
            sels.append(sel)
            futs.append(client.submit(_take_local, parts.blocks[j], which, idx[sel] - parts.bounds[j],
                                      pure=False))
        got = concat_samples(client.gather(futs))
        pos = np.concatenate(sels)
        inv = np.empty_like(pos)
        inv[pos] = np.arange(pos.size)
        return take(got, inv)


def _call(fn, args):
    return fn(*args)


def _load_block(loader, start, stop):
    try:
        return tuple(loader(start, stop))
    except Exception as exc:
        raise ChunkError(f"loading rows {start}-{stop} failed: {type(exc).__name__}: {exc}") from exc


def _dask_map_tasks(executor, fn, tasks, name, weights):
    """``DaskExecutor.map_tasks``: one future per task, results as they complete."""
    from ._executor import task_progress, task_weights

    distributed = _require_distributed()
    check_progress(executor.progress)
    client = executor.get_client()
    tasks = list(tasks)
    w = task_weights(tasks, weights)
    if not tasks:
        return
    [fn_f] = client.scatter([fn], broadcast=True)
    futures = [client.submit(_call, fn_f, tuple(t), pure=False) for t in tasks]
    index = {f.key: i for i, f in enumerate(futures)}
    try:
        with task_progress(executor, w, name) as bar:
            for f in distributed.as_completed(futures):
                i = index[f.key]
                try:
                    res = f.result()
                except Exception as exc:
                    if isinstance(exc, ChunkError):
                        raise
                    raise ChunkError(f"{name} failed on task {i}: {type(exc).__name__}: {exc}") from exc
                bar.update(w[i])
                yield i, res
                f.release()
    finally:
        client.cancel([f for f in futures if not f.done()])


def _dask_row_bounds(c):
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


def _dask_row_futures(client, c, bounds):
    """One future per row partition of a dask array (columns gathered into one block)."""
    own = _dask_row_bounds(c)
    if own.shape != bounds.shape or not np.array_equal(own, bounds):
        c = c.rechunk({0: tuple(np.diff(bounds).tolist())})
    if c.ndim == 2 and len(c.chunks[1]) > 1:
        c = c.rechunk({1: -1})
    delayed = c.to_delayed().ravel().tolist()
    return client.compute(delayed)
