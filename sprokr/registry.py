"""The plugin host: a pluggy ``PluginManager`` holding built-in and third-party components.

>>> from sprokr.registry import get_registry
>>> reg = get_registry()
>>> k = reg.create("input_kernel", "gaussian", {"sigma2": 1.0})

Third-party plugins are loaded from the entry-point group ``sprokr``.  A plugin that fails
to import, or whose hook raises, produces a :class:`PluginWarning` naming it and the error;
the other components stay available.
"""
from __future__ import annotations

import importlib.metadata
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import pluggy

from . import hookspecs

__all__ = [
    "Component",
    "Registry",
    "PluginWarning",
    "PluginConflictError",
    "get_registry",
    "reset_registry",
    "list_components",
    "lazy_factory",
    "lazy_exports",
    "resolve_kernel",
    "resolve_sketch",
    "resolve_executor",
]

ENTRY_POINT_GROUP = "sprokr"


class PluginWarning(UserWarning):
    """A plugin could not be loaded or one of its hooks failed; it was skipped."""


class PluginConflictError(ValueError):
    """Two plugins registered the same component name for the same kind."""


@dataclass(frozen=True)
class Component:
    """A registered component: its ``name``, ``kind``, ``factory`` and providing ``plugin``."""

    name: str
    kind: str
    factory: Callable[..., Any]
    plugin: str


class Registry:
    """Components of every kind, collected through the hooks of :mod:`sprokr.hookspecs`.

    Parameters
    ----------
    entry_points : bool, default True
        Also load third-party plugins from the ``sprokr`` entry-point group.
    """

    def __init__(self, entry_points=True):
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self._components: dict[str, dict[str, Component]] = {k: {} for k in hookspecs.KINDS.values()}
        self._conflicts: dict[tuple[str, str], list[str]] = {}
        from . import _builtins

        self.register(_builtins, name="sprokr")
        if entry_points:
            self._load_entry_points()

    # -- registration -----------------------------------------------------------------
    def _load_entry_points(self):
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if self.pm.has_plugin(ep.name):
                continue
            try:
                plugin = ep.load()
            except Exception as exc:  # a broken plugin must not take the host down
                warnings.warn(
                    f"sprokr plugin {ep.name!r} ({ep.value}) failed to load and was skipped: "
                    f"{type(exc).__name__}: {exc}",
                    PluginWarning,
                    stacklevel=3,
                )
                continue
            self._register(plugin, ep.name, strict=False)

    def register(self, plugin, name=None):
        """Register a plugin object (module or instance with ``@hookimpl`` functions).

        Raises :class:`PluginConflictError` (and registers nothing) if one of its
        component names is already provided by another plugin for the same kind.
        """
        return self._register(plugin, name, strict=True)

    def _register(self, plugin, name, strict):
        name = self.pm.register(plugin, name=name)
        collected = []
        for hook_name, kind in hookspecs.KINDS.items():
            caller = getattr(self.pm.hook, hook_name)
            for impl in caller.get_hookimpls():
                if impl.plugin_name != name:
                    continue
                try:
                    provided = impl.function() or {}
                    items = dict(provided).items()
                except Exception as exc:
                    warnings.warn(
                        f"sprokr plugin {name!r}: hook {hook_name} raised "
                        f"{type(exc).__name__}: {exc}; its {kind} components were skipped",
                        PluginWarning,
                        stacklevel=4,
                    )
                    continue
                collected.extend(Component(str(n), kind, f, name) for n, f in items)
        clashes = [c for c in collected if c.name in self._components[c.kind]]
        if clashes and strict:
            self.pm.unregister(name=name)
            c = clashes[0]
            other = self._components[c.kind][c.name].plugin
            raise PluginConflictError(
                f"{c.kind} {c.name!r} is registered by both plugin {other!r} and plugin {name!r}"
            )
        for c in collected:
            if c.name in self._components[c.kind]:
                owners = self._conflicts.setdefault((c.kind, c.name), [self._components[c.kind][c.name].plugin])
                owners.append(name)
                warnings.warn(
                    f"{c.kind} {c.name!r} is registered by both plugin {owners[0]!r} and plugin "
                    f"{name!r}; looking it up will fail until one is removed",
                    PluginWarning,
                    stacklevel=4,
                )
                continue
            self._components[c.kind][c.name] = c
        return name

    # -- lookup ------------------------------------------------------------------------
    def names(self, kind):
        """Sorted component names of one kind."""
        self._check_kind(kind)
        return sorted(self._components[kind])

    def get(self, kind, name):
        """The :class:`Component` called ``name``; clear errors for unknown or clashing names."""
        self._check_kind(kind)
        if (kind, name) in self._conflicts:
            a, *rest = self._conflicts[(kind, name)]
            raise PluginConflictError(
                f"{kind} {name!r} is registered by both plugin {a!r} and plugin {rest[0]!r}"
            )
        try:
            return self._components[kind][name]
        except KeyError:
            known = ", ".join(self.names(kind)) or "(none)"
            raise ValueError(f"unknown {kind} {name!r}; known {kind}s: {known}") from None

    def create(self, kind, spec, params=None, base=None):
        """Instantiate a component given by name (with ``params``) or return an instance.

        Parameters
        ----------
        kind : str
            One of ``input_kernel``, ``output_kernel``, ``sketch``, ``decoder``,
            ``regressor``, ``loss``.
        spec : str or object
            A registered name, or an already-built component (returned unchanged).
        params : dict, optional
            Keyword arguments for the factory (only with a name).
        base : type, optional
            If given, the created object must be an instance of it.
        """
        if isinstance(spec, str):
            comp = self.get(kind, spec)
            try:
                obj = comp.factory(**(params or {}))
            except TypeError as exc:
                raise TypeError(f"invalid parameters {params!r} for {kind} {spec!r}: {exc}") from None
        else:
            if params:
                raise ValueError(
                    f"{kind} parameters {params!r} were given with a {kind} instance; "
                    f"set them on the instance, or give the {kind} by name"
                )
            obj = spec
        if base is not None and not isinstance(obj, base):
            raise TypeError(
                f"{kind} must be a registered name ({', '.join(self.names(kind))}) or a "
                f"{base.__name__} instance; got {type(obj).__name__}"
            )
        return obj

    def list_components(self):
        """All components as dicts ``{"name", "kind", "plugin"}`` sorted by kind and name."""
        rows = []
        for kind in hookspecs.KINDS.values():
            for name in sorted(self._components[kind]):
                rows.append({"name": name, "kind": kind, "plugin": self._components[kind][name].plugin})
        for (kind, name), owners in sorted(self._conflicts.items()):
            rows.append({"name": name, "kind": kind, "plugin": " + ".join(owners) + " (CONFLICT)"})
        return rows

    def _check_kind(self, kind):
        if kind not in self._components:
            raise ValueError(f"unknown component kind {kind!r}; kinds: {', '.join(self._components)}")


def lazy_factory(target):
    """A factory that imports ``"package.module:Name"`` only when first called.

    Lets a plugin list its component names without importing its heavy library when the
    registry is built (``sprokr plugins`` stays fast); the import happens on first use.
    """
    module, _, attr = target.partition(":")
    if not module or not attr:
        raise ValueError(f"lazy_factory needs 'module:attribute', got {target!r}")

    def factory(**params):
        import importlib

        return getattr(importlib.import_module(module), attr)(**params)

    factory.target = target
    factory.__doc__ = f"Create {target} (imported on first use)."
    return factory


def lazy_exports(package, exports):
    """``(__getattr__, __dir__)`` for a package whose names live in submodules imported on
    first access (PEP 562), so that loading a plugin's entry point stays cheap.

    ``exports`` maps each public name to its relative submodule, e.g. ``{"WLKernel": ".wl"}``::

        __getattr__, __dir__ = lazy_exports(__name__, {"WLKernel": ".wl"})
    """

    def __getattr__(name):
        if name in exports:
            import importlib

            return getattr(importlib.import_module(exports[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        import sys

        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__


_REGISTRY: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry (built on first use, entry points included)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = Registry()
    return _REGISTRY


def reset_registry():
    """Forget the process-wide registry; the next :func:`get_registry` rebuilds it."""
    global _REGISTRY
    _REGISTRY = None


def list_components():
    """Every registered component with its kind and providing plugin (list of dicts)."""
    return get_registry().list_components()


# -- component resolution for the estimators ---------------------------------------------
def resolve_kernel(spec, params, side, dtype):
    """Kernel instance for one side of a model from a registered name (+ params) or an instance.

    Parameters
    ----------
    spec : str or Kernel
        Registered name (``sprokr plugins``) or a kernel instance (returned unchanged).
    params : dict or None
        Factory parameters (only with a name).
    side : {"input", "output"}
    dtype : numpy dtype
        Passed as ``dtype=`` to kernels given by name that take one (unless in ``params``).
    """
    from .kernels.base import Kernel

    params = dict(params or {})
    if isinstance(spec, str):
        comp = get_registry().get(f"{side}_kernel", spec)
        if isinstance(comp.factory, type) and "dtype" in comp.factory().get_params():
            params.setdefault("dtype", dtype.name)
    kernel = get_registry().create(f"{side}_kernel", spec, params, base=Kernel)
    try:
        kernel.check_params()
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{side}_kernel {spec if isinstance(spec, str) else type(spec).__name__!r}: {exc}") from None
    return kernel


def resolve_sketch(spec, m, params, n, side):
    """Sketch instance validated for ``n`` samples, or None (no sketching).

    Parameters
    ----------
    spec : str, Sketch or None
    m : int or None
        Sketch size for a sketch given by name (``m_x`` / ``m_y`` of the estimators).
    params : dict or None
    n : int
        Number of samples the sketch will be drawn for.
    side : {"input", "output"}
        Names the estimator parameter in error messages.
    """
    from .sketches.base import Sketch

    letter = {"input": "x", "output": "y"}[side]
    if spec is None:
        if m is not None:
            raise ValueError(f"m_{letter}={m} was given but {side}_sketch is None")
        return None
    params = dict(params or {})
    if isinstance(spec, str):
        if spec != "identity":
            if m is None:
                raise ValueError(f"{side}_sketch={spec!r} needs a sketch size m_{letter}")
            params["m"] = m
        sketch = get_registry().create("sketch", spec, params, base=Sketch)
    else:
        sketch = get_registry().create("sketch", spec, params, base=Sketch)
        if m is not None and getattr(sketch, "m", m) != m:
            raise ValueError(f"m_{letter}={m} differs from the sketch instance's m={sketch.m}")
    try:
        sketch.validate(n)
    except ValueError as exc:
        raise ValueError(f"{side}_sketch: {exc}") from None
    return sketch


def resolve_executor(spec, params=None):
    """Executor from a registered name (``"local"``, ``"dask"``), an instance, or a
    ``dask.distributed.Client`` (wrapped in the Dask executor).  ``None`` means ``"local"``.
    """
    from .numerics import DaskExecutor, Executor

    if spec is None:
        spec = "local"
    if not isinstance(spec, (str, Executor)) and type(spec).__name__ == "Client" and \
            type(spec).__module__.startswith("distributed"):
        if params:
            raise ValueError("executor_params cannot be combined with a dask Client; give "
                             "executor=DaskExecutor(client=..., **params)")
        return DaskExecutor(client=spec)
    return get_registry().create("executor", spec, params, base=Executor)
