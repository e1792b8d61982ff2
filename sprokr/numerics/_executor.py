"""Executors: every pass with an ``n`` dimension is a map over row chunks and a merge.

A pass is described by a :class:`ChunkTask` -- ``start()`` an empty partial result,
``add(partial, rows, *chunks)`` folds one chunk of rows into it, ``merge(a, b)`` combines
two partial results computed on disjoint rows -- and run by an :class:`Executor` on data
split into row partitions (:class:`RowPartitions`):

* :class:`LocalExecutor` (``"local"``, the default): one partition in this process; the
  chunks are folded one after the other (BLAS and :func:`for_row_blocks` use the cores).
  ``order="shuffled"`` folds them in a seeded random order and splits the data into
  ``n_partitions`` merged in a random order -- the test that results do not depend on
  the chunk order;
* :class:`sprokr.numerics.DaskExecutor` (``"dask"``): partitions live on ``dask.distributed``
  workers, each folds its own chunks, and the partial results are tree-reduced.

Partial results merge in any order to the same result (to float64 rounding): the
accumulators are sums with shifts fixed before the pass, and top-k lists break ties by
candidate index.  A fixed partitioning and order give bit-identical results.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..utils import check_integer, concat_samples, iter_chunks, num_samples, take, take_slice
from ._parallel import fold_thread, n_workers
from ._pool import ChunkError, chunk_rows  # defined beside the process pool, which reports them too

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import RandomStateLike, Samples

__all__ = ["ChunkTask", "RowPartitions", "Executor", "LocalExecutor", "ChunkError", "tree_reduce"]


class ChunkTask:
    """One chunked pass: ``start``, ``add`` (fold a chunk), ``merge`` and ``finish``.

    Subclasses must be picklable (the Dask executor ships them to the workers once per
    pass): they hold only what every chunk needs -- kernel parameters, support points,
    sketch weights, shifts -- never n-sized data.
    """

    #: short name used in progress bars and error messages
    name = "pass"
    #: True when :meth:`add` may run on disjoint chunks in several threads at once (each
    #: thread folding its own partial result): the local executor then folds contiguous
    #: groups of chunks in parallel threads, one BLAS thread each (a pass whose
    #: elementwise work does not scale with BLAS threads then uses every core)
    thread_safe = False

    def start(self) -> Any:
        """An empty partial result."""
        raise NotImplementedError

    def add(self, partial: Any, rows: slice, *chunks: Any) -> Any:
        """Fold the chunk of global rows ``rows`` (a slice) into ``partial``; return it.

        ``chunks`` are the aligned pieces (e.g. inputs and outputs) of those rows, in the
        order the collections were given to :meth:`Executor.partition` (a task that reads
        one of them is given its position by :meth:`RowPartitions.column`).  ``partial``
        may be updated in place.
        """
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:
        """Combine partial results of disjoint rows (may update ``a`` in place)."""
        raise NotImplementedError

    def finish(self, partial: Any) -> Any:
        """The result of the pass from the merged partial result (default: itself)."""
        return partial


class RowPartitions:
    """Aligned collections split into contiguous row partitions.

    The collections are the partitions' columns, named when they were partitioned
    (``executor.partition(X, Y, names=("inputs", "outputs"))``): passes and gathers name the
    column they read (``take_rows(parts, idx, which="outputs")``).

    Parameters
    ----------
    n : int
        Number of rows.
    bounds : array-like of int, shape (n_partitions + 1,)
        Partition ``j`` holds rows ``bounds[j]:bounds[j+1]``.
    blocks : list
        Per partition: a tuple of collections (local) or a handle the executor understands
        (Dask futures).
    executor : Executor
        The executor that made them (and must run passes over them).
    names : sequence of str, optional
        The column names, in the order of the collections (None: unnamed columns, addressed
        by position).

    Attributes
    ----------
    n : int
        Number of rows.
    bounds : ndarray of shape (n_partitions + 1,)
        Partition ``j`` holds rows ``bounds[j]:bounds[j+1]``.
    blocks : list
        Per partition: a tuple of collections (local) or a handle the executor understands
        (Dask futures).
    executor : Executor
        The executor that made them (and must run passes over them).
    names : tuple of str or None
        The column names, in the order of the collections (None: unnamed columns, addressed
        by position).
    """

    def __init__(self, n: int, bounds: ArrayLike, blocks: list[Any], executor: Executor,
                 names: Sequence[str] | None = None) -> None:
        self.n = int(n)
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.blocks = blocks
        self.executor = executor
        self.names = None if names is None else tuple(names)

    def column(self, which: str | int) -> int:
        """Position of column ``which``: its name (see :meth:`Executor.partition`) or its position."""
        if isinstance(which, str):
            if self.names is None or which not in self.names:
                raise ValueError(f"these partitions have no column named {which!r} (columns: {self.names})")
            return self.names.index(which)
        return int(which)

    @property
    def n_partitions(self) -> int:
        return len(self.blocks)

    def slices(self) -> list[slice]:
        """Global row slice of every partition."""
        return [slice(int(a), int(b)) for a, b in zip(self.bounds[:-1], self.bounds[1:])]


def tree_reduce(items: Sequence[Any], merge: Callable[[Any, Any], Any]) -> Any:
    """Merge a list pairwise, in a fixed pattern (so that a fixed list order is reproducible).

    Parameters
    ----------
    items : sequence
        The partial results to merge (at least one).
    merge : callable
        ``merge(a, b)`` returns the merge of two partial results.
    """
    items = list(items)
    if not items:
        raise ValueError("nothing to reduce")
    while len(items) > 1:
        nxt = [merge(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    return items[0]


def column_names(names: Sequence[str] | None, count: int) -> tuple[str, ...] | None:
    """``names`` of :meth:`Executor.partition` checked: ``count`` distinct non-empty strings, or None."""
    if names is None:
        return None
    out = (names,) if isinstance(names, str) else tuple(names)
    if len(out) != count or not all(isinstance(s, str) and s for s in out) or len(set(out)) != count:
        raise ValueError(f"names must be {count} distinct non-empty strings, one per collection, got {names!r}")
    return out


def fold_chunks(task, start, block, chunk_size, order=None, on_rows=None):
    """Fold the chunks of one partition (global rows from ``start``) into a partial result.

    ``order`` optionally permutes the chunks; ``on_rows(k)`` is called after each chunk of
    ``k`` rows (a progress bar's ``update``).  A failing chunk raises :class:`ChunkError`
    naming its rows, or its own :class:`~sprokr.utils.RowError` renumbered for the whole
    input (see :func:`chunk_rows`).
    """
    n = num_samples(block[0])
    partial = task.start()
    slices = list(iter_chunks(n, chunk_size))
    if order is not None:
        slices = [slices[i] for i in order(len(slices))]
    for sl in slices:
        rows = slice(start + sl.start, start + sl.stop)
        with chunk_rows(task.name, rows.start, rows.stop):
            partial = task.add(partial, rows, *(take_slice(c, sl) for c in block))
        if on_rows is not None:
            on_rows(sl.stop - sl.start)
    return partial


def fold_chunks_threaded(task, start, block, chunk_size, threads, on_rows=None):
    """:func:`fold_chunks` of a thread-safe task with its chunks in ``threads`` contiguous
    groups, folded in parallel threads with one BLAS thread each, the partials merged in
    group order (the same result for the same ``threads``, whatever the timing).

    Used by the local executor when :attr:`ChunkTask.thread_safe`: a pass that alternates
    BLAS products with elementwise work (kernel values, centring) keeps every core busy,
    where one chunk at a time with threaded BLAS leaves them waiting on each other.
    """
    from concurrent.futures import ThreadPoolExecutor

    from ._linalg import single_blas_thread

    n = num_samples(block[0])
    n_chunks = -(-n // max(int(chunk_size), 1))
    groups = min(int(threads), n_chunks)
    if groups <= 1:
        return fold_chunks(task, start, block, chunk_size, None, on_rows)
    per = -(-n_chunks // groups) * int(chunk_size)  # whole chunks per group
    bounds = list(range(0, n, per)) + [n]
    with single_blas_thread(), ThreadPoolExecutor(len(bounds) - 1, thread_name_prefix="sprokr-fold") as pool:
        futures = [pool.submit(_fold_in_thread, task, start + a, tuple(take_slice(c, slice(a, b)) for c in block),
                               chunk_size, on_rows) for a, b in zip(bounds[:-1], bounds[1:])]
        partials = [f.result() for f in futures]  # the first failing group's error, in row order
    return tree_reduce(partials, task.merge)


def _fold_in_thread(task, start, block, chunk_size, on_rows):
    with fold_thread():
        return fold_chunks(task, start, block, chunk_size, None, on_rows)


def map_chunks(fn, start, block, chunk_size, name="pass", out=None, which=0, on_rows=None):
    """``fn(chunk)`` on every chunk of collection ``which`` of one partition (``which=None``:
    ``fn(*chunks)`` of every collection), outputs stacked along rows.

    With ``out`` (an array for the partition's rows) the outputs are written into it;
    ``on_rows(k)`` is called after each chunk of ``k`` rows.  Errors as in :func:`fold_chunks`.
    """
    n = num_samples(block[0])
    outs = []
    # no rows: one call on the empty chunk gives the output's trailing shape (n_q = 0 queries
    # predict a (0, d) array, not a (0,) one)
    for sl in list(iter_chunks(n, chunk_size)) or ([] if out is not None else [slice(0, 0)]):
        with chunk_rows(name, start + sl.start, start + sl.stop):
            if which is None:
                res = np.asarray(fn(*(take_slice(c, sl) for c in block)))
            else:
                res = np.asarray(fn(take_slice(block[which], sl)))
            if res.shape[0] != sl.stop - sl.start:
                raise ValueError(f"the pass returned {res.shape[0]} rows for {sl.stop - sl.start}")
            if out is not None:
                out[sl] = res
            else:
                outs.append(res)
        if on_rows is not None:
            on_rows(sl.stop - sl.start)
    if out is not None:
        return out
    return outs[0] if len(outs) == 1 else np.concatenate(outs, axis=0)


def check_progress(value):
    """``progress`` must be None, True or False."""
    if value is not None and not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"progress must be True, False or None, got {value!r}")


class Executor:
    """Runs chunked passes over row partitions.  Subclasses: local threads, Dask.

    The interface every estimator uses:

    ``partition(*collections, prepare=None, names=None)``
        split aligned collections (``X``, ``Y``, ...) into :class:`RowPartitions`,
        applying ``prepare[i]`` (e.g. a kernel's ``prepare``) to collection ``i`` where
        the partition lives; ``names[i]`` names column ``i`` (``"inputs"``, ``"outputs"``,
        ...) for the passes that read one column;
    ``map_reduce(parts, task, chunk_size)``
        run a :class:`ChunkTask` over every chunk and merge the partial results;
    ``map_rows(parts, fn, chunk_size, keep=False, out=None, which=0)``
        ``fn(chunk) -> (rows, ...)`` array for every chunk of column ``which`` (a name, or
        a position: the first column by default; ``which=None``: ``fn(*chunks)`` of all
        columns); the row-stacked result
        (written into ``out`` when given), or with ``keep=True`` the outputs left where
        they were computed, as new :class:`RowPartitions` (a distributed candidate index);
    ``take_rows(parts, indices, which=0)``
        the rows ``indices`` of column ``which`` (name or position), gathered here
        (sketch support points).
    """

    name: Optional[str] = None
    #: True when the partitions live in this process (models may then use n-sized index
    #: vectors, e.g. the distinct output of every training sample)
    in_process = False

    #: progress bars on passes: True / False, or None to follow ``$SPROKR_PROGRESS`` and
    #: whether standard error is a terminal (see :mod:`sprokr.progress`)
    progress: bool | None = None

    def progress_bar(self, parts: RowPartitions, name: str) -> Any:
        """A bar over the rows of one pass.  Automatic bars (``progress=None``) appear only
        once a pass has lasted half a second; ``progress=True`` shows every pass."""
        from ..progress import progress

        return progress(total=parts.n, desc=name, unit="rows", enabled=self.progress,
                        delay=0.0 if self.progress else 0.5, unit_scale=True)

    def partition(self, *collections: Samples,  # pragma: no cover - abstract
                  prepare: Sequence[Callable[[Any], Any] | None] | None = None,
                  names: Sequence[str] | None = None) -> RowPartitions:
        raise NotImplementedError

    def map_reduce(self, parts: RowPartitions, task: ChunkTask, chunk_size: int) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def map_rows(self, parts: RowPartitions, fn: Callable[..., Any], chunk_size: int, keep: bool = False,
                 name: str = "pass", out: np.ndarray | None = None,
                 which: str | int | None = 0) -> Any:  # pragma: no cover
        raise NotImplementedError

    def take_rows(self, parts: RowPartitions, indices: ArrayLike,
                  which: str | int = 0) -> Samples:  # pragma: no cover - abstract
        raise NotImplementedError

    def map_tasks(self, fn: Callable[..., Any], tasks: Sequence[Sequence[Any]], name: str = "tasks",
                  weights: Sequence[int] | None = None, processes: int | None = None,
                  rows: Sequence[Sequence[int]] | None = None) -> Iterator[tuple[int, Any]]:  # pragma: no cover
        """``(i, fn(*tasks[i]))`` for independent tasks, yielded as they finish (any order).

        For work that holds the GIL (parsing molecules, hashing strings): the tasks run in
        worker processes -- a local process pool (:class:`LocalExecutor`) or the Dask
        workers (:class:`~sprokr.numerics.DaskExecutor`).  ``fn`` must be picklable (a
        module-level function or an instance of a module-level class); ``weights`` (e.g.
        rows per task) drive the progress bar; ``processes`` is the local pool's size
        (default: the usable cores; 1 runs the tasks in this process, in order).  A failing
        task raises :class:`ChunkError` naming it.  ``rows[i] = (start, stop)`` (optional)
        are the global rows of a larger input task ``i`` holds: errors then name those rows,
        and an error naming a row of the task's chunk (:class:`~sprokr.utils.RowError`, e.g.
        an invalid molecule) is raised itself, renumbered for the whole input.
        """
        raise NotImplementedError

    def partition_from(self, loader: Callable[[int, int], tuple[Any, ...]], n: int,
                       n_partitions: int | None = None) -> RowPartitions:  # pragma: no cover - abstract
        """Row partitions made *where they live* by ``loader(start, stop)``.

        ``loader`` (picklable) returns the tuple of aligned collections for rows
        ``start:stop``, e.g. memory-mapped slices of arrays saved on a shared disk, so no
        data is copied to the workers (a distributed candidate index loaded from a file).
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release resources this executor created (not those it was given)."""

    def _check_parts(self, parts):
        if not isinstance(parts, RowPartitions):
            raise TypeError(f"expected RowPartitions, got {type(parts).__name__}")
        if parts.executor is not self:
            raise ValueError("these partitions were made by another executor")


def _check_aligned(collections):
    if not collections:
        raise ValueError("partition needs at least one collection")
    sizes = [num_samples(c, f"collection {i}") for i, c in enumerate(collections)]
    if len(set(sizes)) > 1:
        raise ValueError(f"collections to partition have different numbers of rows: {sizes}")
    return sizes[0]


def _prepared(collections, prepare):
    if prepare is None:
        return tuple(collections)
    if len(prepare) != len(collections):
        raise ValueError("prepare needs one function (or None) per collection")
    return tuple(c if f is None else f(c) for c, f in zip(collections, prepare))


class LocalExecutor(Executor):
    """Chunked passes in this process (BLAS threads and row-block threads use the cores).

    Parameters
    ----------
    order : {"natural", "shuffled"}
        ``"shuffled"`` folds chunks in a random order and merges the partitions in a
        random order (seeded by ``random_state``): results equal the natural order's to
        rounding.  For tests of order independence.
    n_partitions : int, default 1
        Split the rows into this many partitions, folded separately and tree-merged (the
        pattern of a distributed run, in one process).
    random_state : None, int or numpy.random.Generator
    progress : bool or None
        Progress bars (tqdm, on standard error) on passes longer than half a second; None
        (default) follows ``$SPROKR_PROGRESS``, then whether standard error is a terminal.
    """

    name = "local"
    in_process = True

    def __init__(self, order: str = "natural", n_partitions: int = 1, random_state: RandomStateLike = None,
                 progress: bool | None = None) -> None:
        self.order = order
        self.n_partitions = n_partitions
        self.random_state = random_state
        self.progress = progress

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"order": self.order, "n_partitions": self.n_partitions, "random_state": self.random_state,
                "progress": self.progress}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"LocalExecutor({args})"

    def _validate(self):
        if self.order not in ("natural", "shuffled"):
            raise ValueError(f"order must be 'natural' or 'shuffled', got {self.order!r}")
        check_integer(self.n_partitions, "n_partitions")
        check_progress(self.progress)

    def _rng(self):
        from ..utils import check_random_state

        return check_random_state(self.random_state) if self.order == "shuffled" else None

    def partition(self, *collections: Samples,
                  prepare: Sequence[Callable[[Any], Any] | None] | None = None,
                  names: Sequence[str] | None = None) -> RowPartitions:
        self._validate()
        n = _check_aligned(collections)
        names = column_names(names, len(collections))
        prepared = _prepared(collections, prepare)
        p = max(1, min(int(self.n_partitions), n))
        if p == 1:
            return RowPartitions(n, [0, n], [prepared], self, names)
        bounds = np.linspace(0, n, p + 1).astype(np.int64)
        blocks = [tuple(take_slice(c, slice(int(a), int(b))) for c in prepared)
                  for a, b in zip(bounds[:-1], bounds[1:])]
        return RowPartitions(n, bounds, blocks, self, names)

    def map_reduce(self, parts: RowPartitions, task: ChunkTask, chunk_size: int) -> Any:
        self._check_parts(parts)
        rng = self._rng()
        order = None if rng is None else rng.permutation
        # chunks folded in threads: a thread-safe task, in the natural order (a shuffled
        # order draws from one generator, which threads must not share)
        threads = n_workers() if getattr(task, "thread_safe", False) and rng is None else 1
        with self.progress_bar(parts, task.name) as bar:
            partials = [fold_chunks_threaded(task, int(sl.start), block, chunk_size, threads, bar.update)
                        if threads > 1 else fold_chunks(task, int(sl.start), block, chunk_size, order, bar.update)
                        for sl, block in zip(parts.slices(), parts.blocks)]
        if rng is not None:
            partials = [partials[i] for i in rng.permutation(len(partials))]
        return task.finish(tree_reduce(partials, task.merge))

    def map_rows(self, parts: RowPartitions, fn: Callable[..., Any], chunk_size: int, keep: bool = False,
                 name: str = "pass", out: np.ndarray | None = None, which: str | int | None = 0) -> Any:
        self._check_parts(parts)
        which = None if which is None else parts.column(which)
        with self.progress_bar(parts, name) as bar:
            outs = [map_chunks(fn, int(sl.start), block, chunk_size, name, None if out is None else out[sl],
                               which, bar.update)
                    for sl, block in zip(parts.slices(), parts.blocks)]
        if out is not None:
            return out
        if keep:
            return RowPartitions(parts.n, parts.bounds, [(o,) for o in outs], self)
        return outs[0] if len(outs) == 1 else np.concatenate(outs, axis=0)

    def take_rows(self, parts: RowPartitions, indices: ArrayLike, which: str | int = 0) -> Samples:
        self._check_parts(parts)
        which = parts.column(which)
        idx = np.asarray(indices, dtype=np.intp)
        if parts.n_partitions == 1:
            return take(parts.blocks[0][which], idx)
        return _take_from_blocks([b[which] for b in parts.blocks], parts.bounds, idx)

    def map_tasks(self, fn: Callable[..., Any], tasks: Sequence[Sequence[Any]], name: str = "tasks",
                  weights: Sequence[int] | None = None, processes: int | None = None,
                  rows: Sequence[Sequence[int]] | None = None,
                  start_method: str = "spawn") -> Iterator[tuple[int, Any]]:
        """``(i, fn(*tasks[i]))`` yielded as the tasks finish, on a pool of worker processes.

        See :meth:`Executor.map_tasks` and :func:`sprokr.numerics.process_map` (``processes``
        defaults to the usable cores; ``start_method`` ``"spawn"`` needs the
        ``if __name__ == "__main__":`` guard in scripts).
        """
        from ._pool import process_map

        check_progress(self.progress)
        tasks = list(tasks)
        w = task_weights(tasks, weights)
        with task_progress(self, w, name) as bar:
            yield from process_map(fn, tasks, processes, start_method, name=name,
                                   on_done=lambda i: bar.update(w[i]), rows=rows)

    def partition_from(self, loader: Callable[[int, int], tuple[Any, ...]], n: int,
                       n_partitions: int | None = None) -> RowPartitions:
        """Partitions ``loader(start, stop)`` made here (``n_partitions``: default the executor's)."""
        self._validate()
        n = int(n)
        p = max(1, min(int(n_partitions or self.n_partitions), max(n, 1)))
        bounds = np.linspace(0, n, p + 1).astype(np.int64)
        blocks = [tuple(loader(int(a), int(b))) for a, b in zip(bounds[:-1], bounds[1:])]
        return RowPartitions(n, bounds, blocks, self)


def _take_from_blocks(blocks, bounds, idx):
    """Rows ``idx`` (global, any order) from row blocks; returned in the order of ``idx``."""
    owner = np.searchsorted(bounds, idx, side="right") - 1
    order = np.argsort(owner, kind="stable")
    pieces = []
    for j in np.unique(owner):
        sel = order[owner[order] == j]
        pieces.append((sel, take(blocks[j], idx[sel] - bounds[j])))
    got = concat_samples([p for _, p in pieces])
    pos = np.concatenate([s for s, _ in pieces])
    inv = np.empty_like(pos)
    inv[pos] = np.arange(pos.size)
    return take(got, inv)


def task_weights(tasks: Sequence[Any], weights: Sequence[int] | None) -> list[int]:
    """Progress weight of every task (1 each by default)."""
    if weights is None:
        return [1] * len(tasks)
    w = [int(x) for x in weights]
    if len(w) != len(tasks):
        raise ValueError(f"weights: one per task expected, got {len(w)} for {len(tasks)} tasks")
    return w


def task_progress(executor: Executor, weights: Sequence[int], name: str) -> Any:
    """A progress bar over the weights of a task map (rows when weighted)."""
    from ..progress import progress

    return progress(total=sum(weights), desc=name, unit="rows", enabled=executor.progress,
                    delay=0.0 if executor.progress else 0.5, unit_scale=True)
