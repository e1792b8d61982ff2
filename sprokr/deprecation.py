"""Renamed parameters: old keyword names keep working for one release, with a FutureWarning.

sprokr uses one name per concept across its estimators (``docs/parameters.md``).  A class
that renamed some of its parameters lists them in ``renamed_parameters`` and inherits
:class:`RenamedParametersMixin`::

    class SketchedKernelMachine(RenamedParametersMixin, BaseEstimator):
        renamed_parameters = {"m": "m_x", "solver": "optimizer"}

Then, until sprokr :data:`REMOVED_IN`,

* ``SketchedKernelMachine(m=50)`` builds the estimator with ``m_x=50`` and issues a
  :class:`RenamedParameterWarning` (a ``FutureWarning``): "`m` is deprecated (removed in
  sprokr 0.3): use `m_x`";
* ``set_params(m=50)`` does the same (GridSearchCV grids with old names keep working);
* ``get_params()`` / ``clone()`` know only the new names, and ``__init__`` still stores
  its arguments untouched (the wrapper only renames keywords before calling it), so
  scikit-learn's estimator checks see a plain estimator;
* a saved or pickled model written before the rename is read under the new names
  (:func:`upgrade_state`; the safe model format warns once per file, see
  :func:`collect_renames`).

A rename is a new name (``"m": "m_x"``), or :class:`IntoDict` when the old parameter
became a key of a dict parameter (``"gamma": IntoDict("kernel_params", "gamma")``).
Functions rename their keywords with the :func:`renamed_keywords` decorator.

A bottom-layer module: it imports nothing from sprokr.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import warnings
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterator, Mapping, Sequence, TypeVar

__all__ = [
    "REMOVED_IN",
    "RenamedParameterWarning",
    "IntoDict",
    "RenamedParametersMixin",
    "renamed_keywords",
    "translate_renamed",
    "upgrade_state",
    "collect_renames",
    "accepted_parameters",
    "renamed_message",
]

#: the sprokr release that removes the old names
REMOVED_IN = "0.3"

F = TypeVar("F", bound=Callable[..., Any])


class RenamedParameterWarning(FutureWarning):
    """An old parameter name was used; the message names the new one."""


@dataclass(frozen=True)
class IntoDict:
    """The old parameter is now the key ``key`` of the dict parameter ``param``."""

    param: str
    key: str

    def __str__(self) -> str:
        return f"{self.param}={{{self.key!r}: ...}}"



def renamed_message(old: str, new: str | IntoDict, where: str | None = None) -> str:
    """``"`m` is deprecated (removed in sprokr 0.3): use `m_x`"`` (``where``: a prefix)."""
    text = f"`{old}` is deprecated (removed in sprokr {REMOVED_IN}): use `{new}`"
    return f"{where}: {text}" if where else text


# While a saved model is read, renames are collected (one warning per file) instead of
# warned one by one: a context variable, so that threads loading models do not mix.
_collector: contextvars.ContextVar[list | None] = contextvars.ContextVar("sprokr_renames", default=None)


@contextlib.contextmanager
def collect_renames() -> Iterator[list[tuple[str, str, str]]]:
    """Within the block, renames are recorded as ``(class name, old, new)`` in the yielded
    list instead of warned (the safe model format then warns once for the whole file)."""
    found: list[tuple[str, str, str]] = []
    token = _collector.set(found)
    try:
        yield found
    finally:
        _collector.reset(token)


def _report(owner: str, old: str, new: str | IntoDict, where: str | None, stacklevel: int) -> None:
    found = _collector.get()
    if found is not None:
        found.append((owner, old, str(new)))
        return
    warnings.warn(renamed_message(old, new, where), RenamedParameterWarning, stacklevel=stacklevel + 1)


def translate_renamed(renames: Mapping[str, Any], params: Mapping[str, Any], owner: str,
                      current: Mapping[str, Any] | None = None, where: str | None = None,
                      stacklevel: int = 2, positional: Sequence[str] = ()) -> dict[str, Any]:
    """``params`` with every old name replaced by its new one (a warning per old name).

    ``current``: the present values of the dict parameters of :class:`IntoDict` renames
    (``set_params`` on a built estimator; the old key is merged into a copy).
    ``positional``: names also given by position.  Giving an old name together with its
    new one is a ``TypeError``.
    """
    old_given = [k for k in params if k in renames]
    if not old_given:
        return dict(params)
    out = {k: v for k, v in params.items() if k not in renames}
    for old in old_given:
        new = renames[old]
        _report(owner, old, new, where, stacklevel + 1)
        value = params[old]
        if isinstance(new, IntoDict):
            base = out.get(new.param, (current or {}).get(new.param))
            if base is not None and not isinstance(base, Mapping):
                raise TypeError(f"{owner}: {new.param} must be a dict to take `{old}`, got {base!r}")
            merged = dict(base or {})  # a copy: the caller's dict is never modified
            if value is None:  # the old default: the key unset
                if new.key in merged:
                    del merged[new.key]
                    out[new.param] = merged
                continue
            if new.key in merged and new.param in params and merged[new.key] != value:
                raise TypeError(f"{owner}: `{old}` and {new.param}[{new.key!r}] were both given; "
                                f"give {new.param}={{{new.key!r}: ...}} only")
            merged[new.key] = value
            out[new.param] = merged
            continue
        if new in params or new in positional:
            raise TypeError(f"{owner}: `{old}` and `{new}` were both given; `{old}` is the deprecated "
                            f"name of `{new}`: give `{new}` only")
        out[new] = value
    return out


def upgrade_state(obj: Any, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """Rename, in place, the attributes of a model saved before its parameters were renamed.

    ``state``: the attribute dict (default ``obj.__dict__``).  Old names found there are
    moved to their new names (an :class:`IntoDict` rename merges a non-None value into the
    dict parameter); each is reported like a keyword (a warning, or recorded by
    :func:`collect_renames`).  Returns ``state``.
    """
    state = obj.__dict__ if state is None else state
    renames = getattr(type(obj), "renamed_parameters", None) or {}
    owner = type(obj).__name__
    for old, new in renames.items():
        if old not in state:
            continue
        target = new.param if isinstance(new, IntoDict) else new
        if target in state and not isinstance(new, IntoDict):
            continue  # a new-style attribute that only shares the old name: keep both
        value = state.pop(old)
        _report(owner, old, new, f"{owner} was saved with sprokr < 0.2", 3)
        if isinstance(new, IntoDict):
            if value is not None:
                merged = dict(state.get(new.param) or {})
                merged.setdefault(new.key, value)
                state[new.param] = merged
            else:
                state.setdefault(new.param, None)
        else:
            state[new] = value
    # a parameter that replaced old ones without being one of their new names (e.g. the
    # ``kernel`` of a model that took ``gamma``), or one added since the file was written
    # (e.g. ``default_index``): its default, as the old model implied
    # (estimators only: their __init__ parameters are their attributes)
    params = _init_parameters(type(obj)) if callable(getattr(obj, "get_params", None)) else {}
    for name, p in params.items():
        if name not in state and p.default is not p.empty:
            state[name] = p.default
    return state


def _init_parameters(cls: type) -> dict[str, inspect.Parameter]:
    try:
        sig = inspect.signature(getattr(cls, "__init__"))
    except (TypeError, ValueError):
        return {}
    return {n: p for n, p in sig.parameters.items()
            if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def accepted_parameters(cls: Any, names: set[str] | None) -> set[str] | None:
    """A factory's keyword names plus its deprecated ones (None stays None: any name)."""
    if names is None:
        return None
    return set(names) | set(getattr(cls, "renamed_parameters", None) or {})


def _wrap_init(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)  # inspect.signature follows __wrapped__: get_params sees the new names
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        renames = type(self).renamed_parameters
        if renames and any(k in renames for k in kwargs):
            kwargs = translate_renamed(renames, kwargs, type(self).__name__, stacklevel=2,
                                       positional=list(_init_parameters(type(self)))[:len(args)])
        init(self, *args, **kwargs)

    __init__._sprokr_renames = True  # type: ignore[attr-defined]
    return __init__


class RenamedParametersMixin:
    """Old parameter names (``renamed_parameters``) accepted by ``__init__`` and
    ``set_params`` with a :class:`RenamedParameterWarning`, and mapped when a model saved
    or pickled with them is read.  Put it before ``BaseEstimator`` in the bases."""

    #: old name -> new name (or :class:`IntoDict`)
    renamed_parameters: ClassVar[Mapping[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and cls.renamed_parameters and not getattr(init, "_sprokr_renames", False):
            cls.__init__ = _wrap_init(init)  # type: ignore[method-assign]

    def set_params(self, **params: Any) -> Any:
        renames = type(self).renamed_parameters
        if renames and any(k.partition("__")[0] in renames for k in params):
            nested = {k: v for k, v in params.items()
                      if "__" in k and isinstance(renames.get(k.partition("__")[0]), str)}
            params = translate_renamed(renames, {k: v for k, v in params.items() if k not in nested},
                                       type(self).__name__, current=vars(self), where="set_params", stacklevel=2)
            for key, value in nested.items():  # ``estimators__lam``: the former name of a nested estimator
                old, _, rest = key.partition("__")
                _report(type(self).__name__, old, renames[old], "set_params", 2)
                params[f"{renames[old]}__{rest}"] = value
        return super().set_params(**params)  # type: ignore[misc]

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = upgrade_state(self, dict(state))
        parent = getattr(super(), "__setstate__", None)
        if parent is not None:
            parent(state)
        else:
            self.__dict__.update(state)


def renamed_keywords(renames: Mapping[str, str]) -> Callable[[F], F]:
    """Decorator: a function's old keyword names keep working (with a warning)."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if any(k in renames for k in kwargs):
                kwargs = translate_renamed(renames, kwargs, func.__name__, stacklevel=2)
            return func(*args, **kwargs)

        wrapper.renamed_parameters = dict(renames)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
