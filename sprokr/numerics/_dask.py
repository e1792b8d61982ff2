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
"""
from __future__ import annotations

import logging
import numbers
import time
from concurrent.futures import CancelledError
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..utils import concat_samples, num_samples, take, take_slice
from ._dask_tasks import (
    GivenRows, MappedRows, fold, identity, is_delayed, map_block, map_part, merge, take_local,
)
from ._executor import ChunkError, Executor, LocalExecutor, RowPartitions, check_progress, column_names
from ._faults import (
    ClientClosedError, DistributedTimeoutError, WorkerLostError, find_missing_modules, missing_modules_error,
    modules_needed,
)
from ._pool import check_task_rows, task_error

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import Samples
    from ._executor import ChunkTask

__all__ = ["DaskExecutor", "dask_available", "DEFAULT_TIMEOUT"]

logger = logging.getLogger("sprokr.numerics")

#: seconds a wait on the cluster may go without progress (DaskExecutor(timeout=...))
DEFAULT_TIMEOUT = 120.0


def dask_available() -> bool:
    """True when ``dask.distributed`` can be imported (the ``dask`` extra)."""
    import importlib.util

    return importlib.util.find_spec("distributed") is not None


def _require_distributed():
    if not dask_available():
        raise ImportError("the 'dask' executor needs dask.distributed: pip install 'sprokr[dask]'")
    import distributed

    return distributed


_POLL = 0.25  # s between looks at a pass's futures (a finished future wakes the wait at once)
#: a worker computing a pending task is progress (a partition may take longer than the
#: timeout): its process above this CPU percent, its last heartbeat at most _BUSY_SEEN_S old
#: (a stopped or unreachable worker's metrics are stale); looked at again every _BUSY_RECHECK_S
_BUSY_CPU = 25.0
_BUSY_SEEN_S = 10.0
_BUSY_RECHECK_S = 5.0
_SCATTER_ABOVE = 8 << 20  # bytes: larger task objects are scattered, smaller ones ride in the graph
_IMPORTS_OK: dict[str, set[str]] = {}  # worker address -> modules it was found to import


class _Lost(Exception):
    """Internal: a future of the pass was cancelled -- its data or a dependency was lost."""


class _Partitions(RowPartitions):
    """Row partitions on the workers, with the source each can be rebuilt from."""

    def __init__(self, n: int, bounds: ArrayLike, blocks: list[Any], executor: Executor, sources: list[Any],
                 names: Sequence[str] | None = None) -> None:
        super().__init__(n, bounds, blocks, executor, names)
        self.sources = sources


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
    timeout : float or None, default 120
        Seconds any wait on the cluster may go without progress (no partition of the
        pass finishing while no worker is computing one of them, a scatter or a result
        not arriving) before the pass fails with
        :class:`~sprokr.numerics.DistributedTimeoutError`.  A partition that takes longer
        than that is waited for as long as its worker is computing (running, heard from,
        using CPU); a hung, paused or unreachable worker fails the pass.  None waits
        forever.
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
        Workers lost beyond the retries; no progress for ``timeout`` s; a module the
        shipped objects need is missing on the workers (see ``docs/scaling.md``).
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

    def _validate(self):
        check_progress(self.progress)
        t = self.timeout
        if t is not None and (isinstance(t, bool) or not isinstance(t, numbers.Real) or not t > 0):
            raise ValueError(f"timeout must be None or a number of seconds > 0, got {t!r}")
        r = self.retries
        if isinstance(r, bool) or not isinstance(r, (numbers.Integral, np.integer)) or r < 0:
            raise ValueError(f"retries must be an integer >= 0, got {r!r}")

    # ------------------------------------------------------------------ client
    def get_client(self) -> Any:
        """The client passes run on; a clear error when it is closed or missing."""
        distributed = _require_distributed()
        if self.client is not None:
            client = self.client
        elif self._own_client is not None:
            client = self._own_client
        elif self.address is not None:
            try:
                client = self._own_client = distributed.Client(self.address, timeout=self.timeout)
            except (OSError, TimeoutError) as exc:
                raise ClientClosedError(f"cannot connect to the Dask scheduler at {self.address!r} ({exc}); "
                                        f"start it (dask scheduler) or give the right address") from None
        else:
            try:
                client = distributed.default_client()
            except ValueError:
                raise ValueError(
                    "executor='dask' needs a running dask.distributed Client: create one first "
                    "(Client(LocalCluster(n_workers=2)) on this machine, Client('tcp://scheduler:8786') "
                    "for a cluster), or pass executor=DaskExecutor(address=...) or the Client itself"
                ) from None
        self._check_client(client)
        return client

    def _check_client(self, client):
        status = getattr(client, "status", "running")
        if status == "connecting":  # the scheduler went away: give a reconnection a moment
            deadline = time.monotonic() + min(10.0, self.timeout or 10.0)
            while client.status == "connecting" and time.monotonic() < deadline:
                time.sleep(_POLL)
            status = client.status
        if status == "running":
            scheduler = getattr(client, "scheduler", None)
            if scheduler is not None and getattr(scheduler, "address", None):
                self._scheduler_address = scheduler.address
            return
        address = self._scheduler_address
        if address is None:
            try:
                address = getattr(getattr(client, "cluster", None), "scheduler_address", None)
            except Exception:  # a closed cluster may not say
                address = None
        where = f" (scheduler {address})" if address else ""
        raise ClientClosedError(
            f"the dask.distributed Client{where} is {status}: its cluster, and the data the model kept "
            f"there, are gone. Start a new Client (Client(LocalCluster(...)) here, Client('tcp://host:8786') "
            f"for a cluster) and pass it as executor=, or use executor='local'")

    def close(self) -> None:
        if self._own_client is not None:
            self._own_client.close()
            self._own_client = None

    def _workers(self, client):
        """Addresses of the workers now (an RPC to the scheduler)."""
        try:
            workers = set(client.nthreads())
        except (OSError, TimeoutError) as exc:
            self._check_client(client)
            raise ClientClosedError(f"the Dask scheduler does not answer ({type(exc).__name__}: {exc})") from None
        self._seen_workers |= workers
        return workers

    def _n_parts(self, client, n):
        p = self.n_partitions
        if p is None:
            threads = sum(client.nthreads().values()) or 1
            p = 2 * threads
        if isinstance(p, bool) or not isinstance(p, (numbers.Integral, np.integer)) or p < 1:
            raise ValueError(f"n_partitions must be an integer >= 1, got {p!r}")
        return max(1, min(int(p), n))

    # ------------------------------------------------------------------ faults
    def _run(self, name, attempt):
        """``attempt(client)``, retried ``retries`` times when workers are lost (each attempt
        first rebuilds the lost partitions it needs from their sources)."""
        self._validate()
        causes = []
        for i in range(int(self.retries) + 1):
            client = self.get_client()
            self._workers(client)
            try:
                return attempt(client)
            except _Lost as exc:
                now = self._workers(client)
                gone = sorted(self._seen_workers - now)
                causes.append(str(exc))
                if i < self.retries:
                    logger.warning("Dask worker(s) %s lost during the %s pass (%s); rebuilding the lost partitions "
                                   "from this process and retrying (%d of %d)", ", ".join(gone) or "(unknown)",
                                   name, exc, i + 1, self.retries)
        raise WorkerLostError(
            f"the {name} pass lost its data on the Dask workers {int(self.retries) + 1} times: worker(s) "
            f"{', '.join(gone) or '(unknown)'} left the cluster (killed, out of memory, restarted -- or crashed "
            f"by the pass's own tasks: a kernel or plugin crashing in native code, chunks too large for their "
            f"memory) and the rebuilt partitions were lost again ({causes[-1]}). Check the workers' logs and "
            f"memory, then fit or predict again (DaskExecutor(retries=...) sets the retries; executor='local' "
            f"avoids the cluster)")

    def _wait(self, client, futures, name, on_done=None, timeout=None, gone=None):
        """Wait for every future of a pass (:meth:`_as_finished`); ``on_done(i)`` as each finishes."""
        for i, _ in self._as_finished(client, futures, name, timeout=timeout, gone=gone):
            if on_done is not None:
                on_done(i)

    def _as_finished(self, client, futures, name, timeout=None, gone=None, tasks=None, rows=None):
        """``(i, futures[i])`` yielded as the futures finish: the one wait on the cluster.

        ``futures`` is a list, or a dict ``{i: future}``.  A poll that sees nothing finish is
        no error (a task may run for longer than ``_POLL``); none finishing for ``timeout``
        s (default: the executor's) is a DistributedTimeoutError.  A failed future raises the
        task's own error (a worker killed by the task: WorkerLostError); a cancelled one, or
        ``gone()`` turning true, raises ``_Lost`` (the caller rebuilds and resubmits); a closed
        client, ClientClosedError.  ``tasks`` (their total count) marks ``map_tasks``' tasks,
        named by their index (or their ``rows``): a task's error other than those is
        :func:`task_error`'s (a ChunkError naming it, or a renumbered RowError).
        """
        import distributed

        timeout = self.timeout if timeout is None else timeout
        pending = dict(futures) if isinstance(futures, dict) else dict(enumerate(futures))
        total = len(pending) if tasks is None else tasks
        last = time.monotonic()
        while pending:
            try:
                distributed.wait(list(pending.values()), timeout=_POLL, return_when="FIRST_COMPLETED")
            except Exception:  # the poll's own timeout, or cancelled futures: looked at below
                pass
            moved = False
            for i, f in list(pending.items()):
                status = f.status
                if status == "finished":
                    del pending[i]
                    moved = True
                    yield i, f
                elif status == "error":
                    try:
                        self._raise_task_error(f, name)
                    except Exception as exc:  # a map_tasks task's own error is named by its index / rows
                        if tasks is None or isinstance(exc, WorkerLostError):
                            raise
                        err = task_error(name, i, exc, rows)
                        if err is exc:
                            raise
                        raise err from exc
                elif status == "cancelled":  # "lost" futures are being recomputed: still pending
                    which = f.key if tasks is None else i
                    raise _Lost(f"task {which} was cancelled: its data or a dependency was lost")
            if moved:  # after the yields: the caller's time with the results is not the cluster's
                last = time.monotonic()
            elif timeout is not None and time.monotonic() - last > timeout:
                if not self._computing(client, pending):
                    raise self._no_progress(client, name, timeout, pending, total, tasks is not None)
                last = time.monotonic() - timeout + _BUSY_RECHECK_S  # still working: look again soon
            if client.status != "running":
                self._check_client(client)
            if gone is not None and pending and gone():
                raise _Lost("a worker the tasks were bound to left the cluster")

    @staticmethod
    def _computing(client, pending):
        """True when a worker running one of the ``pending`` futures is computing: running,
        heard from within ``_BUSY_SEEN_S`` and above ``_BUSY_CPU`` percent CPU.  A hung,
        paused (SIGSTOP, memory) or unreachable worker is not."""
        holders = _holders(client, pending)
        try:
            workers = client.scheduler_info().get("workers", {}) if holders else {}
        except (OSError, TimeoutError):
            return False
        now = time.time()
        for address in holders:
            info = workers.get(address) or {}
            if info.get("status", "running") != "running":
                continue
            seen = float(info.get("last_seen") or 0.0)
            cpu = float((info.get("metrics") or {}).get("cpu") or 0.0)
            if now - seen <= _BUSY_SEEN_S and cpu >= _BUSY_CPU:
                return True
        return False

    def _no_progress(self, client, name, timeout, pending, total, tasks):
        """The DistributedTimeoutError of a wait that saw nothing finish for ``timeout`` s."""
        if tasks:
            return DistributedTimeoutError(
                f"the {name} tasks made no progress for {timeout:g} s ({len(pending)} of {total} pending, no "
                f"worker computing them): workers hung, paused or unreachable? DaskExecutor(timeout=...) sets "
                f"this limit")
        workers = self._workers(client)
        gone = sorted(self._seen_workers - workers)
        stuck = _holders(client, pending)
        return DistributedTimeoutError(
            f"the {name} pass made no progress for {timeout:g} s ({len(pending)} of {total} tasks "
            f"pending, no worker computing them{', on worker(s) ' + ', '.join(stuck) if stuck else ''}; the cluster has "
            f"{len(workers)} worker(s){'; lost: ' + ', '.join(gone) if gone else ''}): workers hung, paused "
            f"or unreachable? DaskExecutor(timeout=...) sets this limit (raise it for partitions that take "
            f"longer to process)")

    def _raise_task_error(self, future, name):
        from distributed.scheduler import KilledWorker

        exc = future.exception()
        if isinstance(exc, KilledWorker):
            raise WorkerLostError(
                f"a task of the {name} pass was running on worker processes that died each time ({exc}): it "
                f"crashes or exhausts them (out of memory? a crash in a kernel or a plugin's native code?); see "
                f"the workers' logs, use smaller chunks (chunk_size, max_memory_mb) or executor='local'") from exc
        future.result()  # the task's own error (ChunkError naming its rows, ...), with its traceback

    def _result(self, future, name):
        """A finished future's value; its data lost meanwhile: ``_Lost``."""
        try:
            return future.result(timeout=self.timeout)
        except CancelledError:
            raise _Lost(f"the result of {future.key} was lost") from None
        except TimeoutError:
            raise DistributedTimeoutError(f"the result of the {name} pass did not arrive within {self.timeout:g} s "
                                          f"(DaskExecutor(timeout=...))") from None
        except OSError as exc:
            raise _Lost(f"fetching {future.key} failed: {exc}") from None

    def scatter(self, client: Any, objects: list[Any]) -> list[Any]:
        """Send objects from this process to the workers (within ``timeout``)."""
        try:
            return client.scatter(list(objects), hash=False, timeout=self.timeout)
        except TimeoutError:
            raise DistributedTimeoutError(f"sending data to the Dask workers took more than {self.timeout:g} s "
                                          f"(DaskExecutor(timeout=...))") from None
        except OSError as exc:  # the worker chosen went away
            raise _Lost(f"sending data failed: {exc}") from None
        except KeyError as exc:
            # the scheduler records the data's holder after the data arrived: a worker that
            # died in between is unknown to it by then (dask/distributed#3149, #5704)
            if "://" not in str(exc):
                raise
            raise _Lost(f"sending data failed: worker {exc} left while receiving it") from None

    def ship(self, client: Any, obj: Any, what: str = "a pass") -> Any:
        """A future of ``obj`` on the cluster, after checking that the workers can import
        everything it needs.  Small objects ride in the graph (the scheduler rebuilds them
        if a worker is lost); large ones are scattered."""
        needed, size = modules_needed(obj)
        self._check_imports(client, needed, what)
        if size > _SCATTER_ABOVE:
            return self.scatter(client, [obj])[0]
        return client.submit(identity, obj, pure=False)

    def _check_imports(self, client, needed, what):
        """Fail at once, naming them, when workers cannot import modules ``needed`` (a worker
        that cannot unpickle a task loses it silently).  Each worker is asked once per module."""
        if not needed:
            return
        todo = {}
        for w in sorted(self._workers(client)):
            names = sorted(set(needed) - _IMPORTS_OK.get(w, set()))
            if names:
                todo[w] = names
        if not todo:
            return
        futs = [client.submit(find_missing_modules, names, workers=[w], allow_other_workers=False, pure=False)
                for w, names in todo.items()]
        targets = set(todo)
        try:  # a worker that left meanwhile (its check would wait forever) is asked next time
            self._wait(client, futs, "module check", timeout=min(30.0, self.timeout or 30.0),
                       gone=lambda: not targets <= self._workers(client))
            found = [self._result(f, "module check") for f in futs]
        except (_Lost, DistributedTimeoutError):  # a worker left meanwhile: asked again next time
            return
        except WorkerLostError:  # the check itself kills the workers: they cannot load sprokr
            raise missing_modules_error({w: ["sprokr"] for w in todo}, {"sprokr": "sprokr"}, what) from None
        missing = {}
        for (w, names), got in zip(todo.items(), found):
            _IMPORTS_OK.setdefault(w, set()).update(set(names) - set(got))
            if got:
                missing[w] = list(got)
        if missing:
            raise missing_modules_error(missing, needed, what)

    # ------------------------------------------------------------------ partitions
    def live_block(self, client: Any, parts: RowPartitions, j: int) -> Any:
        """Partition ``j`` on the cluster: rebuilt from its source if its data was lost."""
        block = parts.blocks[j]
        if getattr(block, "client", client) is client and block.status != "cancelled":
            return block
        sources = getattr(parts, "sources", None)
        if sources is None:
            raise WorkerLostError("a partition held by a lost Dask worker has no source to rebuild it from")
        block = parts.blocks[j] = sources[j].submit(client, self)
        return block

    def local_block(self, parts: RowPartitions, j: int) -> tuple:
        """Partition ``j`` built in this process from its source (the cluster is gone)."""
        return parts.sources[j].local(self)  # type: ignore[attr-defined]

    def local_partitions(self, parts: RowPartitions) -> RowPartitions:
        """The partitions rebuilt in this process, for a :class:`LocalExecutor` (when the
        client is closed: a distributed candidate index falls back to a local one)."""
        self._check_parts(parts)
        ex = LocalExecutor()
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
        names = column_names(names, len(collections))
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
        pieces = []  # per collection: one piece (or dask delayed chunk) per partition
        for c, b in zip(collections, dask_bounds):
            if b is not None:
                pieces.append(_dask_row_pieces(c, bounds))
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

        _require_distributed()
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
                self._workers(client)
                futures: dict[int, Any] = {}
                try:
                    fn_f = self.ship(client, fn, f"the {name} tasks")
                    futures = {i: client.submit(_call, fn_f, tuple(tasks[i]), pure=False) for i in sorted(todo)}
                    for i, f in self._as_finished(client, futures, name, tasks=len(tasks), rows=rows):
                        res = self._result(f, name)
                        f.release()
                        todo.discard(i)
                        bar.update(w[i])
                        yield i, res
                    return
                except _Lost as exc:
                    causes.append(str(exc))
                    logger.warning("Dask worker(s) lost during the %s tasks (%s); resubmitting the %d unfinished "
                                   "task(s) (%d of %d)", name, exc, len(todo), attempt + 1, self.retries)
                finally:
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
        n = int(n)
        p = self._n_parts(client, max(n, 1)) if n_partitions is None else max(1, min(int(n_partitions), max(n, 1)))
        bounds = np.linspace(0, n, p + 1).astype(np.int64)
        # shipped in the graph when small: the scheduler can rebuild a lost worker's blocks
        loader_f = self.ship(client, loader, "the partition loader")
        blocks = [client.submit(_load_block, loader_f, int(a), int(b), pure=False)
                  for a, b in zip(bounds[:-1], bounds[1:])]
        return RowPartitions(n, bounds, blocks, self)

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


def _holders(client, pending):
    """The addresses (sorted) of the workers the scheduler says are processing one of the
    ``pending`` futures; none when the scheduler cannot be asked."""
    keys = {f.key for f in pending.values()}
    try:
        processing = client.processing()
    except (OSError, TimeoutError):
        return []
    return sorted(w for w, running in processing.items() if keys & set(running))


def _call(fn, args):
    return fn(*args)


def _load_block(loader, start, stop):
    try:
        return tuple(loader(start, stop))
    except Exception as exc:
        raise ChunkError(f"loading rows {start}-{stop} failed: {type(exc).__name__}: {exc}") from exc


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


def _dask_row_pieces(c, bounds):
    """One dask delayed chunk per row partition of a dask array (columns in one block);
    computed on the cluster, and recomputed from the array's graph if lost."""
    own = _dask_row_bounds(c)
    if own.shape != bounds.shape or not np.array_equal(own, bounds):
        c = c.rechunk({0: tuple(np.diff(bounds).tolist())})
    if c.ndim == 2 and len(c.chunks[1]) > 1:
        c = c.rechunk({1: -1})
    return c.to_delayed().ravel().tolist()
