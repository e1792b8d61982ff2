"""The plugin host: a pluggy ``PluginManager`` holding built-in and third-party components.

>>> from sprokr.registry import get_registry
>>> reg = get_registry()
>>> k = reg.create("input_kernel", "gaussian", {"sigma2": 1.0})

The host knows no component: sprokr's built-ins are registered by ``"module:Name"``
(:mod:`sprokr._builtins`), and each component package resolves what an estimator is given
against its own base class (``sprokr.kernels.resolve_kernel``,
``sprokr.sketches.resolve_sketch``, ``sprokr.numerics.resolve_executor``; layers:
``docs/architecture.md``).

Third-party plugins are loaded from the entry-point group ``sprokr``.  The host never goes
down because of a plugin: a plugin that fails to import, whose hook has a wrong signature
or raises, that cannot even be inspected (its ``__dir__`` or attribute access raises), or
that registers a factory that is not callable produces a :class:`PluginWarning` naming the
plugin (and the component) and is skipped; a hook name that is not one of
:mod:`sprokr.hookspecs` (a typo) is reported too.  "Raises" means any exception, ``sys.exit``
included: only the user's ``KeyboardInterrupt`` gets through (:func:`is_plugin_failure`).

Names.  Every component is reachable by its qualified name ``"plugin:name"``
(``"sprokr:gaussian"``, ``"chem:morgan_tanimoto"``).  The bare name (``"gaussian"``) means:
the built-in component when sprokr provides one (built-ins always win, so a plugin can
never disable a default), else the one plugin that provides it; when several third-party
plugins provide the same bare name, it is ambiguous and looking it up raises
:class:`PluginConflictError` listing the qualified names to use instead.
"""
from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import inspect
import numbers
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import pluggy

from . import hookspecs
from .deprecation import accepted_parameters
from .extras import builtin_extra_hint
from .hookspecs import lazy_factory

__all__ = [
    "Component",
    "Registry",
    "PluginWarning",
    "PluginConflictError",
    "PluginComponentError",
    "is_plugin_failure",
    "get_registry",
    "reset_registry",
    "list_components",
    "lazy_factory",
    "lazy_exports",
    "get_readers",
    "get_column_type",
    "get_depictions",
    "get_saveable_classes",
    "get_demos",
]

ENTRY_POINT_GROUP = "sprokr"
BUILTIN = "sprokr"

_PLURALS = {"input_kernel": "input kernels", "output_kernel": "output kernels", "sketch": "sketches",
            "decoder": "decoders", "regressor": "regressors", "loss": "losses", "executor": "executors",
            "estimator": "estimators", "reader": "file readers", "column_type": "column types",
            "depiction": "depictions", "saveable_class": "saveable classes", "demo": "demos"}


class PluginWarning(UserWarning):
    """A plugin, one of its hooks or one of its components was skipped (the message says why)."""


class PluginConflictError(ValueError):
    """A bare component name is provided by several third-party plugins (use ``plugin:name``)."""


class PluginComponentError(TypeError):
    """A plugin's component could not be built (its factory failed or returned the wrong type)."""


@dataclass(frozen=True)
class Component:
    """A registered component: its ``name``, ``kind``, ``factory`` and providing ``plugin``."""

    name: str
    kind: str
    factory: Callable[..., Any]
    plugin: str

    @property
    def qualified_name(self) -> str:
        """``"plugin:name"``: always unambiguous."""
        return f"{self.plugin}:{self.name}"


def is_plugin_failure(exc: BaseException) -> bool:
    """Whether an exception that escaped a plugin's code is the plugin's failure (to report,
    naming the plugin, and skip) rather than something that must stop the program.

    Every exception is, ``SystemExit`` included (a plugin calling ``sys.exit`` must not end
    the host, let alone with the plugin's exit code) and so is ``GeneratorExit``: Python
    throws it into a generator at a ``yield``, and the host does not yield while it runs a
    plugin's code, so one raised there comes from the plugin itself.  The exception is
    ``KeyboardInterrupt`` (alone or in an exception group): the user asked to stop.

    Use as ``except BaseException as exc: if not is_plugin_failure(exc): raise``.
    """
    if isinstance(exc, KeyboardInterrupt):
        return False
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(KeyboardInterrupt) is None
    return True


def _failure_text(exc: BaseException) -> str:
    """``"RuntimeError: boom"``, or ``"exited (SystemExit: 3)"`` for a plugin calling ``sys.exit``."""
    if isinstance(exc, SystemExit):
        return f"exited (SystemExit: {exc.code!r})"
    return f"{type(exc).__name__}: {exc}"


def _lacks(obj: Any, methods: tuple[str, ...]) -> list[str]:
    """The names of ``methods`` that are not callable attributes of ``obj`` (a plugin's object:
    reading an attribute runs its code, which may fail like any of it)."""
    missing = []
    for m in methods:
        try:
            ok = callable(getattr(obj, m, None))
        except BaseException as exc:
            if not is_plugin_failure(exc):
                raise
            ok = False
        if not ok:
            missing.append(m)
    return missing


def _suggest(word, choices):
    # compared without case: "GAUSSIAN" or "SubSample" is the known lower-case name
    by_lower: dict[str, str] = {}
    for c in choices:
        by_lower.setdefault(str(c).lower(), c)
    close = [by_lower[c] for c in difflib.get_close_matches(str(word).lower(), list(by_lower), n=3, cutoff=0.6)]
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


class Registry:
    """Components of every kind, collected through the hooks of :mod:`sprokr.hookspecs`.

    Parameters
    ----------
    entry_points : bool, default True
        Also load third-party plugins from the ``sprokr`` entry-point group.
    """

    def __init__(self, entry_points: bool = True) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        #: kind -> bare name -> components providing it, in registration order
        self._components: dict[str, dict[str, list[Component]]] = {k: {} for k in hookspecs.KINDS.values()}
        #: what was skipped while building, as (plugin, kind, name, message) -- kind and name
        #: None when a whole plugin (or one hook's components) was skipped; an unknown name
        #: is explained with them (the PluginWarnings may have gone unseen)
        self.skipped: list[tuple[str, str | None, str | None, str]] = []
        from . import _builtins

        self.register(_builtins, name=BUILTIN)
        if entry_points:
            self._load_entry_points()

    # -- registration -----------------------------------------------------------------
    def _load_entry_points(self):
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if self.pm.has_plugin(ep.name) or ep.name == BUILTIN:
                continue
            try:
                plugin = ep.load()
            except BaseException as exc:  # a broken plugin must not take the host down
                if not is_plugin_failure(exc):
                    raise
                what = _failure_text(exc) if isinstance(exc, SystemExit) else f"failed to load: {_failure_text(exc)}"
                self._warn(f"sprokr plugin {ep.name!r} ({ep.value}) {what}; it was skipped", (ep.name, None, None))
                continue
            self._register(plugin, ep.name)

    def register(self, plugin: object, name: str | None = None) -> str | None:
        """Register a plugin object (module or instance with ``@hookimpl`` functions).

        Returns the plugin name, or None when the plugin was refused (a
        :class:`PluginWarning` says why).  A component whose bare name another plugin
        already provides stays reachable as ``"plugin:name"`` (see the module docstring).
        """
        return self._register(plugin, name)

    def _warn(self, msg, skipped=None):
        """Emit a :class:`PluginWarning`; ``skipped`` = (plugin, kind, name) records what it skipped."""
        if skipped is not None:
            self.skipped.append((*skipped, msg))
        warnings.warn(msg, PluginWarning, stacklevel=4)

    def _register(self, plugin, name):
        try:
            label = name or getattr(plugin, "__name__", type(plugin).__name__)
        except BaseException as exc:  # the plugin's __getattribute__ raising: named by its class
            if not is_plugin_failure(exc):
                raise
            label = type(plugin).__name__
        taken = self.pm.get_plugin(name) if name is not None else None
        if taken is not None or any(p is plugin for _, p in self.pm.list_name_plugin()):
            # pluggy's own message lists every registered plugin, over several lines
            owner = "sprokr's built-ins" if name == BUILTIN else "another plugin"
            why = f"the name {name!r} is already taken by {owner}" if taken is not None else \
                "this object is already registered (under another name)"
            self._warn(f"sprokr plugin {label!r} was skipped: {why}", (label, None, None))
            return None
        try:
            # both read the plugin's attributes (dir(), getattr): its own code, which may fail
            self._check_hook_names(plugin, label)
            name = self.pm.register(plugin, name=name)
        except BaseException as exc:  # pluggy.PluginValidationError (a hook with a wrong signature), ...
            if not is_plugin_failure(exc):
                raise
            self._forget(plugin)
            self._warn(f"sprokr plugin {label!r} was skipped: {_failure_text(exc)}", (label, None, None))
            return None
        for hook_name, kind in hookspecs.KINDS.items():
            caller = getattr(self.pm.hook, hook_name)
            for impl in caller.get_hookimpls():
                if impl.plugin_name != name:
                    continue
                try:
                    provided = impl.function() or {}
                    items = _saveable_items(provided) if kind == "saveable_class" else list(dict(provided).items())
                    # a str subclass's __str__ is the plugin's code too; other names are refused in _add
                    items = [(str(cname) if isinstance(cname, str) else cname, factory) for cname, factory in items]
                except BaseException as exc:
                    if not is_plugin_failure(exc):
                        raise
                    what = _failure_text(exc) if isinstance(exc, SystemExit) else f"raised {_failure_text(exc)}"
                    self._warn(f"sprokr plugin {name!r}: hook {hook_name} {what}; its {_PLURALS[kind]} were skipped",
                               (name, kind, None))
                    continue
                for cname, factory in items:
                    self._add(Component(cname, kind, factory, name))
        return name

    def _forget(self, plugin):
        """Undo what a failed ``pm.register`` left: pluggy records the plugin's name (and the
        hooks checked so far) before it finds the wrong one, so the name would stay taken."""
        for registered, p in self.pm.list_name_plugin():
            if p is plugin:
                try:
                    self.pm.unregister(name=registered)
                except BaseException as exc:  # comparing the plugin to the others runs its __eq__
                    if not is_plugin_failure(exc):
                        raise

    def _check_hook_names(self, plugin, label):
        """Report functions marked ``@hookimpl`` whose name is not a known hook (a typo)."""
        marker = f"{hookspecs.PROJECT}_impl"
        for attr in dir(plugin):
            if not isinstance(attr, str) or attr.startswith("__") or attr in hookspecs.KINDS:
                continue
            try:
                obj = getattr(plugin, attr)
                marked = callable(obj) and hasattr(obj, marker)
            except BaseException as exc:  # an attribute that cannot be read is no hook
                if not is_plugin_failure(exc):
                    raise
                continue
            if marked:
                self._warn(f"sprokr plugin {label!r}: {attr!r} is not a sprokr hook and is ignored"
                           f"{_suggest(attr, hookspecs.KINDS)} (hooks: {', '.join(hookspecs.KINDS)})")

    def _add(self, comp):
        if not isinstance(comp.name, str) or not comp.name.strip():
            # a name is what users type (``kernel="wl"``) and what saved models record
            shown = repr(comp.name) if isinstance(comp.name, str) else f"{type(comp.name).__name__}"
            self._warn(f"sprokr plugin {comp.plugin!r}: one of its {_PLURALS[comp.kind]} was skipped: its name "
                       f"must be a non-empty string, got {shown}", (comp.plugin, comp.kind, None))
            return
        if not callable(comp.factory):
            self._warn(f"sprokr plugin {comp.plugin!r}: the {comp.kind} {comp.name!r} was skipped: its "
                       f"factory is not callable (got {type(comp.factory).__name__})",
                       (comp.plugin, comp.kind, comp.name))
            return
        if ":" in comp.name:
            self._warn(f"sprokr plugin {comp.plugin!r}: the {comp.kind} {comp.name!r} was skipped: a "
                       f"component name cannot contain ':'", (comp.plugin, comp.kind, comp.name))
            return
        same = self._components[comp.kind].setdefault(comp.name, [])
        same[:] = [c for c in same if c.plugin != comp.plugin]  # a re-registration replaces
        if same:
            owners = ", ".join(repr(c.plugin) for c in same)
            rule = "the built-in keeps the name" if any(c.plugin == BUILTIN for c in same) or comp.plugin == BUILTIN \
                else "the bare name is now ambiguous"
            self._warn(f"{comp.kind} {comp.name!r} is registered by plugin {comp.plugin!r} and by {owners}: "
                       f"{rule}; use the qualified names ({', '.join(repr(c.qualified_name) for c in same + [comp])})")
        same.append(comp)

    # -- lookup ------------------------------------------------------------------------
    def names(self, kind: str) -> list[str]:
        """Sorted bare component names of one kind."""
        self._check_kind(kind)
        return sorted(n for n, comps in self._components[kind].items() if comps)

    def get(self, kind: str, name: str) -> Component:
        """The :class:`Component` called ``name`` (bare or ``"plugin:name"``); clear errors
        for unknown or ambiguous names."""
        self._check_kind(kind)
        if not isinstance(name, str):
            raise TypeError(f"a {kind} name must be a string, got {type(name).__name__}")
        plugin, _, bare = name.rpartition(":")
        comps = self._components[kind].get(bare, [])
        asks_builtin = plugin == BUILTIN or (not plugin and not comps)
        if asks_builtin and not any(c.plugin == BUILTIN for c in comps):
            # one of sprokr's own, registered only with its extra's library ("unknown" would
            # read as a typo): say which library is missing
            missing = builtin_extra_hint(kind, bare)
            if missing is not None:
                known = self.names(kind)
                raise ValueError(f"the {kind} {name!r} {missing}; available {_PLURALS[kind]}: "
                                 f"{', '.join(known) or '(none)'}")
        if plugin:
            match = [c for c in comps if c.plugin == plugin]
            if match:
                return match[0]
            others = ", ".join(c.qualified_name for c in comps) or "none"
            raise ValueError(f"unknown {kind} {name!r}: plugin {plugin!r} provides no {kind} {bare!r} "
                             f"(qualified names of {bare!r}: {others}){self._skipped_note(kind, bare, plugin)}")
        if not comps:
            known = self.names(kind)
            raise ValueError(f"unknown {kind} {name!r}{_suggest(name, known)}; known {_PLURALS[kind]}: "
                             f"{', '.join(known) or '(none)'}{self._skipped_note(kind, bare)}")
        builtin = [c for c in comps if c.plugin == BUILTIN]
        if builtin:
            return builtin[0]
        if len(comps) > 1:
            raise PluginConflictError(
                f"{kind} {name!r} is registered by several plugins "
                f"({', '.join(repr(c.plugin) for c in comps)}); use a qualified name: "
                f"{', '.join(repr(c.qualified_name) for c in comps)}"
            )
        return comps[0]

    def _skipped_note(self, kind, name, plugin=None):
        """Why an unknown name may be missing: the component itself was skipped, else the
        plugins (or hooks of this kind) skipped while building the registry."""
        mine = [m for p, k, n, m in self.skipped if (k, n) == (kind, name) and plugin in (None, p)]
        if mine:
            return "; it was skipped when the plugins were loaded: " + "; ".join(mine)
        whole = [m for p, k, n, m in self.skipped if n is None and k in (None, kind) and plugin in (None, p)]
        if whole:
            return "; it may come from a plugin that was skipped when loading: " + "; ".join(whole)
        return ""

    def factory_parameters(self, comp: Component) -> set[str] | None:
        """Names of the keyword parameters a component's factory accepts (None: any).

        For a lazy factory the target is imported (it is about to be used anyway).
        """
        target = comp.factory
        if hasattr(target, "target"):
            target = _import_target(comp)
        try:
            sig = inspect.signature(target)
        except (TypeError, ValueError):
            return None
        if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
            return None
        names = {n for n, p in sig.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        # deprecated names a class still takes (with a FutureWarning: sprokr.deprecation)
        return accepted_parameters(target, names)

    def create(self, kind: str, spec: Any, params: Mapping[str, Any] | None = None, base: type | None = None,
               methods: tuple[str, ...] = ()) -> Any:
        """Instantiate a component given by name (with ``params``) or return an instance.

        Parameters
        ----------
        kind : str
            One of ``input_kernel``, ``output_kernel``, ``sketch``, ``decoder``,
            ``regressor``, ``loss``, ``executor``, ``estimator``.
        spec : str or object
            A registered name (bare or ``"plugin:name"``), or an already-built component
            (returned unchanged).
        params : dict, optional
            Keyword arguments for the factory (only with a name).
        base : type, optional
            If given, the created object must be an instance of it.
        methods : tuple of str, optional
            Methods the created object must have, for kinds without a base class (a
            scikit-learn estimator or regressor: ``("fit", "predict")``).

        Raises
        ------
        PluginComponentError
            The factory returned an object that is not a ``base`` or lacks ``methods``, or it
            ended by another exception than an ``Exception`` (``sys.exit``): the plugin is
            broken, and named.
        """
        if params is not None and not isinstance(params, Mapping):
            # by the estimators' convention the parameter is named after the kind (decoder_params, ...)
            raise TypeError(f"{kind}_params must be a dict of parameters (name -> value) or None, "
                            f"got {type(params).__name__} {params!r}")
        if isinstance(spec, str):
            comp = self.get(kind, spec)
            params = dict(params or {})
            where = f"{kind} {spec!r} (plugin {comp.plugin!r})"
            accepted = self.factory_parameters(comp)
            if accepted is not None and set(params) - accepted:
                bad = sorted(set(params) - accepted)
                raise TypeError(f"invalid parameters {params!r} for {where}: unknown {', '.join(bad)}"
                                f"{_suggest(bad[0], accepted)}; accepted: {', '.join(sorted(accepted)) or '(none)'}")
            try:
                obj = comp.factory(**params)
            except ImportError as exc:
                raise ImportError(f"{where} cannot be imported: {exc}") from exc
            except (TypeError, ValueError) as exc:
                raise _renamed(exc, f"{where}: {exc}")
            except BaseException as exc:
                # an Exception is the component's own error and reaches the user as it was raised
                # (module docstring); sys.exit in a factory must not end the host
                if isinstance(exc, Exception) or not is_plugin_failure(exc):
                    raise
                raise PluginComponentError(f"{where}: its factory {_failure_text(exc)}; the plugin is broken "
                                           f"(report it to its authors)") from exc
            if base is not None and not isinstance(obj, base):
                raise PluginComponentError(
                    f"{where}: its factory returned an object of type {type(obj).__name__}, not an instance of "
                    f"{base.__name__}; "
                    f"the plugin is broken (report it to its authors)")
            missing = _lacks(obj, methods)
            if missing:
                raise PluginComponentError(
                    f"{where}: its factory returned an object of type {type(obj).__name__} without "
                    f"{', '.join(missing)} (every {kind} has {', '.join(methods)}); the plugin is broken "
                    f"(report it to its authors)")
            return obj
        if params:
            raise ValueError(
                f"{kind} parameters {params!r} were given with a {kind} instance; "
                f"set them on the instance, or give the {kind} by name"
            )
        if base is not None and not isinstance(spec, base):
            raise TypeError(
                f"{kind} must be a registered name ({', '.join(self.names(kind))}) or a "
                f"{base.__name__} instance; got {type(spec).__name__}"
            )
        return spec

    def list_components(self) -> list[dict[str, str]]:
        """All components as dicts ``{"name", "kind", "plugin", "qualified_name"}``.

        ``name`` is what to type: the bare name when it resolves to this component, else
        the qualified name.
        """
        rows = []
        for kind in hookspecs.KINDS.values():
            for bare in sorted(self._components[kind]):
                comps = self._components[kind][bare]
                try:
                    winner = self.get(kind, bare)
                except PluginConflictError:
                    winner = None
                for c in comps:
                    rows.append({"name": bare if c is winner else c.qualified_name, "kind": kind,
                                 "plugin": c.plugin, "qualified_name": c.qualified_name})
        return rows

    def _check_kind(self, kind):
        if kind not in self._components:
            raise ValueError(f"unknown component kind {kind!r}{_suggest(str(kind), self._components)}; "
                             f"kinds: {', '.join(self._components)}")


def _renamed(exc, msg):
    """``exc`` itself carrying the message ``msg`` (never a new instance of its type)."""
    from .utils import reword_error

    return reword_error(exc, msg)


def _import_target(comp):
    """The object a lazy factory names, imported; errors name the plugin and component."""
    target = comp.factory.target
    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"{comp.kind} {comp.name!r} of plugin {comp.plugin!r}: cannot import {target} "
                          f"({type(exc).__name__}: {exc}); is the plugin's library installed?") from exc
    except BaseException as exc:  # a module calling sys.exit on import must not end the host
        if isinstance(exc, Exception) or not is_plugin_failure(exc):
            raise
        raise PluginComponentError(f"{comp.kind} {comp.name!r} of plugin {comp.plugin!r}: importing {target} "
                                   f"{_failure_text(exc)}; the plugin is broken (report it to its authors)") from exc


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
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


def reset_registry() -> None:
    """Forget the process-wide registry; the next :func:`get_registry` rebuilds it."""
    global _REGISTRY
    _REGISTRY = None


def list_components() -> list[dict[str, str]]:
    """Every registered component with its kind and providing plugin (list of dicts)."""
    return get_registry().list_components()


# -- domain hooks: file readers, column types, depictions, saveable classes, demos --------
def _saveable_items(provided: Any) -> list[tuple[str, Callable[..., Any]]]:
    """``(name, factory)`` of what a ``sprokr_saveable_classes`` hook returned.

    Each entry is a class or a ``"module:Name"`` string (wrapped in a :func:`lazy_factory`,
    so nothing is imported); its component name is the dotted path ``module.Name``.
    """
    if not provided:  # None or an empty list (the host passes ``{}`` for None)
        return []
    if isinstance(provided, (str, type, Mapping)):
        raise TypeError(f"sprokr_saveable_classes must return a list of classes or 'module:Name' strings, "
                        f"got {type(provided).__name__}")
    items = []
    for entry in provided:
        if isinstance(entry, str):
            items.append((entry.replace(":", "."), lazy_factory(entry)))
        elif isinstance(entry, type):
            items.append((f"{entry.__module__}.{entry.__qualname__}", entry))
        else:
            raise TypeError(f"sprokr_saveable_classes must return classes or 'module:Name' strings, got "
                            f"{entry!r} ({type(entry).__name__})")
    return items


def _all_components(kind: str) -> list[Component]:
    """Every component of ``kind``, in registration order (sprokr's built-ins first)."""
    reg = get_registry()
    reg.names(kind)  # checks the kind
    return [c for comps in reg._components[kind].values() for c in comps]


#: what the host calls on each domain component it builds (hooks of sprokr.hookspecs)
_DOMAIN_METHODS = {"reader": ("guess_can_open", "read"), "column_type": ("parse", "format"),
                   "depiction": ("can_draw", "draw")}


def _build(comp: Component) -> Any:
    """``comp.factory()``, or None with a :class:`PluginWarning` naming the plugin when it fails
    or builds something without the kind's methods (a broken plugin's reader or depiction
    must not break reading a CSV file or a figure)."""
    try:
        obj = comp.factory()
    except BaseException as exc:
        if not is_plugin_failure(exc):
            raise
        problem = f"could not be built: {_failure_text(exc)}"
    else:
        missing = _lacks(obj, _DOMAIN_METHODS[comp.kind])
        if not missing:
            return obj
        problem = f"is broken: its factory returned an object of type {type(obj).__name__} without " \
                  f"{', '.join(missing)}"
    warnings.warn(f"sprokr plugin {comp.plugin!r}: the {comp.kind} {comp.name!r} {problem}; it was skipped",
                  PluginWarning, stacklevel=3)
    return None


def get_readers() -> list[tuple[Component, Any]]:
    """Every registered file reader (hook ``sprokr_readers``) as ``(component, reader)``.

    In registration order, sprokr's built-ins first; a reader whose factory fails (or
    returns an object without ``guess_can_open`` and ``read``) is skipped with a
    :class:`PluginWarning` naming its plugin.
    """
    out = []
    for comp in _all_components("reader"):
        reader = _build(comp)
        if reader is not None:
            out.append((comp, reader))
    return out


def get_column_type(name: str) -> Any:
    """The column type registered as ``name`` (bare or ``"plugin:name"``; hook
    ``sprokr_column_types``), built.  Unknown names raise ``ValueError`` listing the known ones.

    The built object is checked against the hook's contract (``parse`` and ``format``
    callable, ``n_columns`` None or an integer >= 1): a factory that fails or builds
    something else raises :class:`PluginComponentError` naming the plugin and what is wrong.
    """
    comp = get_registry().get("column_type", name)
    where = f"column type {name!r} of plugin {comp.plugin!r}"
    try:
        ctype = comp.factory()
    except BaseException as exc:
        if not is_plugin_failure(exc):
            raise
        raise PluginComponentError(f"{where} could not be built: {_failure_text(exc)}") from exc
    missing = _lacks(ctype, _DOMAIN_METHODS["column_type"])
    if missing:
        raise PluginComponentError(f"{where} is broken: its factory returned an object of type "
                                   f"{type(ctype).__name__} without {', '.join(missing)} (report it to its authors)")
    try:
        n_columns = ctype.n_columns
    except BaseException as exc:  # a property: the plugin's code
        if not is_plugin_failure(exc):
            raise
        raise PluginComponentError(f"{where} is broken: reading its n_columns raised {_failure_text(exc)} "
                                   f"(report it to its authors)") from exc
    if n_columns is not None and (isinstance(n_columns, bool) or not isinstance(n_columns, numbers.Integral)
                                  or n_columns < 1):
        raise PluginComponentError(f"{where} is broken: n_columns must be a positive integer (or None for any "
                                   f"number of columns), got {n_columns!r} (report it to its authors)")
    return ctype


def get_depictions() -> list[tuple[Component, Any]]:
    """Every registered depiction (hook ``sprokr_depictions``) as ``(component, depiction)``,
    in the order figures try them: plugins' depictions in registration order, then sprokr's
    built-ins (the fallbacks).  A depiction whose factory fails (or returns an object
    without ``can_draw`` and ``draw``) is skipped with a warning naming its plugin."""
    comps = _all_components("depiction")
    ordered = [c for c in comps if c.plugin != BUILTIN] + [c for c in comps if c.plugin == BUILTIN]
    out = []
    for comp in ordered:
        dep = _build(comp)
        if dep is not None:
            out.append((comp, dep))
    return out


def get_saveable_classes() -> dict[str, str]:
    """``{"module:Name": plugin}``: the classes plugins declare safe to save (hook
    ``sprokr_saveable_classes``); nothing is imported."""
    out: dict[str, str] = {}
    for comp in _all_components("saveable_class"):
        target = getattr(comp.factory, "target", None)
        key = target if isinstance(target, str) else f"{comp.factory.__module__}:{comp.factory.__qualname__}"
        out.setdefault(key, comp.plugin)
    return out


def get_demos() -> list[tuple[str, Callable[..., Any]]]:
    """The sections of ``sprokr demo`` (hook ``sprokr_demos``) as ``(name, factory)``, in
    registration order (sprokr's own first); ``factory()`` gives the ``demo(out=print)`` callable.
    The name is the qualified one when the bare name is ambiguous."""
    reg = get_registry()
    out = []
    for comp in _all_components("demo"):
        try:
            name = comp.name if reg.get("demo", comp.name) is comp else comp.qualified_name
        except PluginConflictError:
            name = comp.qualified_name
        out.append((name, comp.factory))
    return out
