"""The executor an estimator is given: by registered name, as an instance, or a Dask client."""
from __future__ import annotations

from typing import Any, Mapping

from ..registry import get_registry
from ._dask import DaskExecutor
from ._executor import Executor

__all__ = ["resolve_executor", "is_dask_client"]


def is_dask_client(obj: Any) -> bool:
    """True when ``obj`` is a ``dask.distributed.Client`` (told without importing dask).

    A client is a connection to a cluster, not a value: estimators share it with their
    clones and save it as ``"dask"`` (see :func:`resolve_executor`).

    Parameters
    ----------
    obj : object
        Any object.
    """
    cls = type(obj)
    return cls.__name__ == "Client" and cls.__module__.startswith("distributed")


def resolve_executor(spec: Any, params: Mapping[str, Any] | None = None) -> Executor:
    """Executor from a registered name (``"local"``, ``"dask"``), an instance, or a
    ``dask.distributed.Client`` (wrapped in the Dask executor).  ``None`` means ``"local"``.

    Parameters
    ----------
    spec : str, Executor, dask.distributed.Client or None
        Registered executor name (``"local"``, ``"dask"``), an executor instance, or a
        Dask client; None means ``"local"``.
    params : mapping, optional
        Keyword arguments of the executor created from a name (not allowed with a client).
    """
    if spec is None:
        spec = "local"
    if not isinstance(spec, (str, Executor)) and is_dask_client(spec):
        if params:
            raise ValueError("executor_params cannot be combined with a dask Client; give "
                             "executor=DaskExecutor(client=..., **params)")
        return DaskExecutor(client=spec)
    return get_registry().create("executor", spec, params, base=Executor)
