"""The Dask executor's work on the cluster, bounded in time and retried after lost workers.

:class:`DaskClusterOps` (a base class of :class:`~sprokr.numerics.DaskExecutor`, on top
of :class:`DaskClient`) is every operation a pass makes on the cluster besides building
its task graph: sending objects (``scatter``; ``ship``, after checking that the workers
can import what they need), waiting for futures (``_wait`` / ``_as_finished``: the one
wait, never longer than ``timeout`` without progress, where a busy worker is progress),
fetching results, and running a pass again when workers were lost (``_run``).  A lost
future raises :class:`Lost` here; ``_run`` (or ``map_tasks``) catches it, and the next
attempt rebuilds the lost partitions it needs from their sources (``live_block``; the
sources are ``_dask_tasks``').  The errors it raises are ``_faults``'.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import CancelledError
from typing import TYPE_CHECKING, Any

from ._dask_client import POLL, DaskClient
from ._dask_tasks import identity
from ._faults import (
    DistributedTimeoutError, WorkerLostError, find_missing_modules, missing_modules_error, modules_needed,
)
from ._pool import task_error

if TYPE_CHECKING:  # imported for the annotations only
    from ._executor import RowPartitions

__all__ = ["DaskClusterOps", "Lost"]

logger = logging.getLogger("sprokr.numerics")

#: a worker computing a pending task is progress (a partition may take longer than the
#: timeout): its process above this CPU percent, its last heartbeat at most _BUSY_SEEN_S old
#: (a stopped or unreachable worker's metrics are stale); looked at again every _BUSY_RECHECK_S.
#: A worker found idle is looked at once more _IDLE_CONFIRM_S later, before the wait fails: its
#: CPU figure is from its last heartbeat, which may predate the task's start (seen on a 2-core
#: machine under load: a task computing for 6 s judged idle at 2 s)
_BUSY_CPU = 25.0
_BUSY_SEEN_S = 10.0
_BUSY_RECHECK_S = 5.0
_IDLE_CONFIRM_S = 2.0
_SCATTER_ABOVE = 8 << 20  # bytes: larger task objects are scattered, smaller ones ride in the graph
_IMPORTS_OK: dict[str, set[str]] = {}  # worker address -> modules it was found to import


class Lost(Exception):
    """Internal: a future of the pass was cancelled -- its data or a dependency was lost."""


class DaskClusterOps(DaskClient):
    """The cluster operations of :class:`~sprokr.numerics.DaskExecutor` (its base class).

    Uses the executor's ``timeout`` and ``retries`` parameters and its ``_validate()``
    (run before every pass); the partitions it rebuilds carry their ``sources``.
    """

    def _validate(self):
        """Check the executor's parameters (defined by the executor; run before every pass)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ faults
    def _run(self, name, attempt):
        """``attempt(client)``, retried ``retries`` times when workers are lost (each attempt
        first rebuilds the lost partitions it needs from their sources)."""
        self._validate()
        causes = []
        for i in range(int(self.retries) + 1):
            client = self.get_client()
            self._require_workers(client)
            try:
                return attempt(client)
            except Lost as exc:
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
        no error (a task may run for longer than ``POLL``); none finishing for ``timeout``
        s (default: the executor's) is a DistributedTimeoutError.  A failed future raises the
        task's own error (a worker killed by the task: WorkerLostError); a cancelled one, or
        ``gone()`` turning true, raises ``Lost`` (the caller rebuilds and resubmits); a closed
        client, ClientClosedError.  ``tasks`` (their total count) marks ``map_tasks``' tasks,
        named by their index (or their ``rows``): a task's error other than those is
        :func:`task_error`'s (a ChunkError naming it, or a renumbered RowError).
        """
        import distributed

        timeout = self.timeout if timeout is None else timeout
        pending = dict(futures) if isinstance(futures, dict) else dict(enumerate(futures))
        total = len(pending) if tasks is None else tasks
        last = time.monotonic()
        idle_seen = False  # a look found no worker computing: confirmed by a second look
        while pending:
            try:
                distributed.wait(list(pending.values()), timeout=POLL, return_when="FIRST_COMPLETED")
            except Exception:  # the poll's own timeout, or cancelled futures: looked at below
                pass
            if client.status != "running":  # closed (its futures cancelled) or reconnecting
                self._check_client(client)
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
                    if client.status != "running":  # closing the client cancels its futures: no worker was lost
                        self._check_client(client)
                    which = f.key if tasks is None else i
                    raise Lost(f"task {which} was cancelled: its data or a dependency was lost")
            if moved:  # after the yields: the caller's time with the results is not the cluster's
                last, idle_seen = time.monotonic(), False
            elif timeout is not None and time.monotonic() - last > timeout:
                if self._computing(client, pending):
                    last, idle_seen = time.monotonic() - timeout + _BUSY_RECHECK_S, False  # look again soon
                elif idle_seen:
                    raise self._no_progress(client, name, timeout, pending, total, tasks is not None)
                else:  # a heartbeat from before the task started? look once more
                    last, idle_seen = time.monotonic() - timeout + _IDLE_CONFIRM_S, True
            if gone is not None and pending and gone():
                raise Lost("a worker the tasks were bound to left the cluster")

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

    def _result(self, future, name, timeout=None, gone=None):
        """A finished future's value; its data lost meanwhile: ``Lost``.

        Waits at most ``timeout`` s (default: the executor's).  With ``gone`` (for small
        results: the module check's answers) the value is fetched in tries of ``POLL`` s
        and ``gone()`` turning true between them raises ``Lost`` at once: a result bound to
        a worker that left is never recomputed, and would be waited for the whole
        ``timeout`` (forever with None).
        """
        timeout = self.timeout if timeout is None else timeout
        if gone is None:
            return self._fetch(future, name, timeout)
        end = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            try:
                return self._fetch(future, name, POLL)
            except DistributedTimeoutError:
                if gone():
                    raise Lost(f"the worker holding {future.key} left the cluster") from None
                if time.monotonic() >= end:
                    raise DistributedTimeoutError(f"the result of the {name} pass did not arrive within "
                                                  f"{timeout:g} s (DaskExecutor(timeout=...))") from None

    def _fetch(self, future, name, timeout):
        """``future.result(timeout=timeout)``; its data lost meanwhile: ``Lost``."""
        try:
            return future.result(timeout=timeout)
        except CancelledError:
            if future.client.status != "running":  # cancelled by the client's closing
                self._check_client(future.client)
            raise Lost(f"the result of {future.key} was lost") from None
        except TimeoutError:
            raise DistributedTimeoutError(f"the result of the {name} pass did not arrive within {timeout:g} s "
                                          f"(DaskExecutor(timeout=...))") from None
        except OSError as exc:
            raise Lost(f"fetching {future.key} failed: {exc}") from None

    def scatter(self, client: Any, objects: list[Any]) -> list[Any]:
        """Send objects from this process to the workers (waiting at most ``timeout`` s for a
        running worker to take them)."""
        # distributed's scatter timeout bounds its wait for a running (not paused) worker and
        # must be a number: None ("wait forever") is an infinite one
        limit = float("inf") if self.timeout is None else float(self.timeout)
        try:
            return client.scatter(list(objects), hash=False, timeout=limit)
        except TimeoutError:
            workers = self._workers(client)
            raise DistributedTimeoutError(
                f"no running Dask worker took the data within {limit:g} s (the cluster has {len(workers)} "
                f"worker(s): paused for memory, closing, or none at all?); DaskExecutor(timeout=...) sets this "
                f"limit") from None
        except OSError as exc:  # the worker chosen went away
            raise Lost(f"sending data failed: {exc}") from None
        except KeyError as exc:
            # the scheduler records the data's holder after the data arrived: a worker that
            # died in between is unknown to it by then (dask/distributed#3149, #5704)
            if "://" not in str(exc):
                raise
            raise Lost(f"sending data failed: worker {exc} left while receiving it") from None

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
        that cannot unpickle a task loses it silently).  Each worker is asked once per module;
        one that leaves before its answer arrives is asked next time, and the others'
        answers count."""
        if not needed:
            return
        todo = {}
        for w in sorted(self._workers(client)):
            names = sorted(set(needed) - _IMPORTS_OK.get(w, set()))
            if names:
                todo[w] = names
        if not todo:
            return
        # each check is bound to the worker it asks about: once its worker left, it can never
        # run or be recomputed elsewhere, so every wait for it also watches that worker
        futs = {w: client.submit(find_missing_modules, names, workers=[w], allow_other_workers=False, pure=False)
                for w, names in todo.items()}
        limit = min(30.0, self.timeout or 30.0)
        found = {}
        try:
            while futs:
                try:
                    for w, f in self._as_finished(client, futs, "module check", timeout=limit,
                                                  gone=lambda: not set(futs) <= self._workers(client)):
                        found[w] = self._result(f, "module check", timeout=limit,
                                                gone=lambda w=w: w not in self._workers(client))
                        del futs[w]
                except Lost:  # the workers that left are asked next time; the others still answer
                    left = set(futs) - self._workers(client)
                    if not left:  # a check cancelled for another reason: asked next time too
                        break
                    for w in left:
                        del futs[w]
        except DistributedTimeoutError:  # hung workers: the pass's own wait names them
            pass
        except WorkerLostError:  # the check itself kills the workers: they cannot load sprokr
            raise missing_modules_error({w: ["sprokr"] for w in todo}, {"sprokr": "sprokr"}, what) from None
        missing = {}
        for w, got in found.items():
            _IMPORTS_OK.setdefault(w, set()).update(set(todo[w]) - set(got))
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


def _holders(client, pending):
    """The addresses (sorted) of the workers the scheduler says are processing one of the
    ``pending`` futures; none when the scheduler cannot be asked."""
    keys = {f.key for f in pending.values()}
    try:
        processing = client.processing()
    except (OSError, TimeoutError):
        return []
    return sorted(w for w, running in processing.items() if keys & set(running))
