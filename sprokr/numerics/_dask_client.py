"""The Dask executor's client: connecting to the scheduler and knowing its workers.

:class:`DaskClient` is the lowest layer of :class:`~sprokr.numerics.DaskExecutor` (a base
class of it, holding no state of its own): it finds the ``distributed.Client`` passes run
on (given, connected to by address, or the default one), turns a closed client or an
unreachable scheduler into a :class:`ClientClosedError` that says what to do, and records
every worker it has seen (so a lost one can be named).  The waits, retries and data
transfers built on it are in ``_dask_cluster``; the executor itself in ``_dask``.
"""
from __future__ import annotations

import time
from typing import Any

from ._faults import ClientClosedError, DistributedTimeoutError

__all__ = ["DaskClient", "dask_available", "require_distributed", "POLL"]


def dask_available() -> bool:
    """True when ``dask.distributed`` can be imported (the ``dask`` extra)."""
    import importlib.util

    return importlib.util.find_spec("distributed") is not None


def require_distributed():
    if not dask_available():
        raise ImportError("the 'dask' executor needs dask.distributed: pip install 'sprokr[dask]'")
    import distributed

    return distributed


POLL = 0.25  # s between looks at a pass's futures (a finished future wakes the wait at once)
#: s a pass waits for a worker to join a cluster that has none (workers still starting, a
#: nanny restarting the only one) before saying so; at most the executor's ``timeout``
_WORKERS_WAIT_S = 10.0


class DaskClient:
    """The client half of :class:`~sprokr.numerics.DaskExecutor` (its base class).

    Uses the executor's ``client``, ``address`` and ``timeout`` parameters and keeps its
    state on the executor (``_own_client``, ``_seen_workers``, ``_scheduler_address``: set
    by ``DaskExecutor.__init__``, cleared by its ``__getstate__``).
    """

    client: Any
    address: str | None
    timeout: float | None
    _own_client: Any
    _seen_workers: set[str]
    _scheduler_address: str | None

    # ------------------------------------------------------------------ client
    def get_client(self) -> Any:
        """The client passes run on; a clear error when it is closed or missing."""
        distributed = require_distributed()
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
                time.sleep(POLL)
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
        """Addresses of the workers now (an RPC to the scheduler); a client closed meanwhile
        (by another thread, or with its cluster): ClientClosedError."""
        if getattr(client, "status", "running") != "running":
            self._check_client(client)
        try:
            workers = set(client.nthreads())
        except (OSError, TimeoutError, AttributeError) as exc:
            # a client closed between the look at its status and the call has no scheduler
            # left: 'NoneType' object has no attribute 'ncores'
            self._check_client(client)
            if isinstance(exc, AttributeError):  # a running client: a bug, raised as it is
                raise
            raise ClientClosedError(f"the Dask scheduler does not answer ({type(exc).__name__}: {exc})") from None
        self._seen_workers |= workers
        return workers

    def _require_workers(self, client):
        """Addresses of the workers now, at least one: a cluster without workers is given
        ``min(_WORKERS_WAIT_S, timeout)`` s for one to join, then a DistributedTimeoutError
        saying it has none (nothing could run there: a scatter would wait for a worker
        forever, or time out without saying why)."""
        workers = self._workers(client)
        limit = min(_WORKERS_WAIT_S, self.timeout or _WORKERS_WAIT_S)
        deadline = time.monotonic() + limit
        while not workers and time.monotonic() < deadline:
            time.sleep(POLL)
            workers = self._workers(client)
        if not workers:
            where = f" (scheduler {self._scheduler_address})" if self._scheduler_address else ""
            raise DistributedTimeoutError(
                f"the Dask cluster{where} has no workers (none joined within {limit:g} s): start some "
                f"(LocalCluster(n_workers=2) here, 'dask worker tcp://host:8786' for a cluster; an adaptive "
                f"cluster needs minimum=1 or more), or use executor='local'")
        return workers
