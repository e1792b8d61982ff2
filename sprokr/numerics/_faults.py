"""What can go wrong on a cluster, said plainly: the errors of distributed passes, and
the check that the workers can import what a pass ships to them.

A distributed pass can lose a worker (killed, out of memory, restarted), lose its client
or scheduler (closed), wait on a worker that does not answer, or ship an object whose
class lives in a module the workers do not have (a kernel defined in a file on the
client only: the worker then fails to unpickle the task, and the task is lost with no
word about why).  Each of these is a :class:`DistributedError` naming what was lost and
what to do; the Dask executor (``_dask``) raises them.
"""
from __future__ import annotations

import importlib.util
import types
from typing import Any

__all__ = ["DistributedError", "WorkerLostError", "ClientClosedError", "DistributedTimeoutError",
           "WorkerImportError", "modules_needed", "find_missing_modules"]


class DistributedError(RuntimeError):
    """A distributed pass failed for a reason outside the data (workers, client, cluster)."""


class WorkerLostError(DistributedError):
    """Workers holding a pass's data or tasks left the cluster, and the retries failed too."""


class ClientClosedError(DistributedError):
    """The ``dask.distributed`` client (or its scheduler) is closed or unreachable."""


class DistributedTimeoutError(DistributedError, TimeoutError):
    """A pass made no progress for the executor's ``timeout`` seconds."""


class WorkerImportError(DistributedError, ModuleNotFoundError):
    """The workers cannot import a module that an object shipped to them needs.

    ``name`` is the (first) missing module, as for :class:`ModuleNotFoundError`.
    """


class _Discard:
    """A file that forgets what is written to it and counts the bytes."""

    def __init__(self):
        self.size = 0

    def write(self, data):
        n = memoryview(data).nbytes
        self.size += n
        return n


_IMPORTABLE_HERE: dict[str, bool] = {}


def _importable_here(name):
    """Whether ``name`` is importable in this process (cached): objects of other modules are
    pickled by value (cloudpickle) and need nothing on the workers."""
    ok = _IMPORTABLE_HERE.get(name)
    if ok is None:
        try:
            ok = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            ok = False
        _IMPORTABLE_HERE[name] = ok
    return ok


def modules_needed(obj: Any) -> tuple[dict[str, str], int]:
    """Modules a worker must import to unpickle ``obj``, and its pickled size in bytes.

    Returns ``({module: an object that needs it}, size)``.  The object is pickled (with
    cloudpickle, as Dask does for what plain pickle cannot take) into nothing; every
    class, function and module met on the way by reference is recorded.
    """
    import cloudpickle

    found: dict[str, str] = {}

    class Recorder(cloudpickle.Pickler):
        def reducer_override(self, o):
            if isinstance(o, types.ModuleType):
                name, what = o.__name__, o.__name__
            elif isinstance(o, (type, types.FunctionType, types.BuiltinFunctionType)):
                name = getattr(o, "__module__", None)
                what = f"{name}.{getattr(o, '__qualname__', getattr(o, '__name__', '?'))}"
            else:
                name, what = None, None
            if isinstance(name, str) and name != "__main__" and name not in found and _importable_here(name):
                found[name] = what
            return super().reducer_override(o)

    sink = _Discard()
    Recorder(sink, protocol=5).dump(obj)
    return found, sink.size


def find_missing_modules(names: list[str]) -> list[str]:
    """The names among ``names`` that this process cannot import (run on each worker)."""
    missing = []
    for name in names:
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):  # a parent package is missing
            missing.append(name)
    return missing


def missing_modules_error(missing: dict[str, list[str]], needed: dict[str, str], what: str) -> WorkerImportError:
    """The error naming the modules the workers lack, who needs them and what to do."""
    names = sorted({m for ms in missing.values() for m in ms})
    workers = sorted(missing)
    top = names[0].split(".")[0]
    users = ", ".join(f"{needed[m]}" for m in names[:3] if m in needed)
    exc = WorkerImportError(
        f"{what} cannot run on the Dask workers: module{'s' if len(names) > 1 else ''} "
        f"{', '.join(repr(n) for n in names)} cannot be imported on worker{'s' if len(workers) > 1 else ''} "
        f"{', '.join(workers[:4])}{' ...' if len(workers) > 4 else ''} (needed by {users}). The workers "
        f"need every module the model's components come from: install {top!r} on every worker (or put it "
        f"on their PYTHONPATH; for a single file, client.upload_file(path)), or use executor='local'")
    exc.name = names[0]
    return exc
