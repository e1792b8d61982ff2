"""Hook specifications of the sprokr plugin host.

A plugin is any module or object with functions decorated by :data:`hookimpl` whose names
are the hooks below.  sprokr registers its own built-ins through exactly these hooks
(:mod:`sprokr._builtins`); third parties are discovered through the entry-point group
``sprokr``::

    # pyproject.toml of a third-party distribution
    [project.entry-points.sprokr]
    mykernels = "mykernels.plugin"        # a module holding @hookimpl functions

Every hook takes no argument and returns a mapping ``{name: factory}``.  A *factory* is a
class or a callable; ``factory(**params)`` must return a component of the hook's kind.
:func:`lazy_factory` names a class by ``"module:Name"`` without importing it (sprokr's
own built-ins are all registered that way, so the host imports no component module).
Names are unique per kind across all plugins: two plugins that register the same name for
the same kind make any lookup of that name fail with an error naming both plugins.

The hooks are called once, when the registry is first built (``sprokr.get_registry()``,
or the first estimator ``fit`` that looks up a component by name), and again after
``sprokr.registry.reset_registry()``.  A hook that raises is reported with a
:class:`sprokr.registry.PluginWarning` naming the plugin; its components are skipped and
the host keeps working.
"""
from __future__ import annotations

from typing import Any, Callable

import pluggy

PROJECT = "sprokr"

hookspec = pluggy.HookspecMarker(PROJECT)
#: Decorator for plugin hook implementations: ``@sprokr.hookimpl``.
hookimpl = pluggy.HookimplMarker(PROJECT)


def lazy_factory(target: str) -> Callable[..., Any]:
    """A factory that imports ``"package.module:Name"`` only when first called.

    Lets a plugin list its component names without importing its heavy library when the
    registry is built (``sprokr plugins`` stays fast); the import happens on first use.
    The target is kept as the factory's ``target`` attribute (the registry reads it to
    check parameters, the model format to know the class without building one).
    Also available as ``sprokr.registry.lazy_factory``.
    """
    module, _, attr = target.partition(":")
    if not module or not attr:
        raise ValueError(f"lazy_factory needs 'module:attribute', got {target!r}")

    def factory(**params):
        import importlib

        return getattr(importlib.import_module(module), attr)(**params)

    factory.target = target  # type: ignore[attr-defined]
    factory.__doc__ = f"Create {target} (imported on first use)."
    return factory


@hookspec
def sprokr_input_kernels():
    """Kernels usable on the **input** side, ``{name: factory}``.

    Called when the registry is built.  ``factory(**params)`` returns a
    :class:`sprokr.kernels.Kernel` (``prepare``/``pairwise``/``diag``) that accepts the
    plugin's input type (arrays, strings, graphs, ...).  Estimators resolve
    ``input_kernel="name"`` with ``input_kernel_params`` through this hook.
    """


@hookspec
def sprokr_output_kernels():
    """Kernels usable on the **output** side, ``{name: factory}``.

    Same contract as :func:`sprokr_input_kernels`.  Output kernels should set
    ``normalized = True`` when ``k(y, y) = 1``; otherwise decoders subtract ``k(y, y)/2``
    and call ``diag``.  A kernel may be registered by both hooks (all built-in vector
    kernels are).
    """


@hookspec
def sprokr_sketches():
    """Sketch distributions, ``{name: factory}``.

    ``factory(m=..., random_state=..., **params)`` returns a :class:`sprokr.sketches.Sketch`
    whose ``draw(n, random_state)`` gives a :class:`sprokr.sketches.SketchMatrix`
    ``R = W S`` (non-null column indices and their values).  Estimators resolve
    ``input_sketch="name"`` / ``output_sketch="name"`` through this hook.
    """


@hookspec
def sprokr_decoders():
    """Decoders, ``{name: factory}``.

    ``factory(**params)`` returns a :class:`sprokr.decoders.Decoder`.  Estimators resolve
    ``decoder="name"`` with ``decoder_params`` at fit time and call, per batch of queries,
    ``decode(H, index, top_k=None, weights=None)`` from ``predict`` / ``predict_topk``:
    ``H`` are the query coordinates in the model's output basis, ``index`` a
    :class:`sprokr.decoders.CandidateIndex` in the same basis (the model never reaches the
    decoder); see :class:`sprokr.decoders.Decoder` for the contract.  The built-in
    ``"candidates"`` decoder takes the argmax (or top-k) of the scores over the index.
    """


@hookspec
def sprokr_regressors():
    """Surrogate regressors for DSOKR, ``{name: factory}``.

    ``factory(**params)`` returns a scikit-learn style regressor: ``fit(X, T)`` with
    targets ``T`` of shape (n, p) (the sketched output features ``psi~(y_i)``), then
    ``predict(X)`` of shape (n_queries, p).
    """


@hookspec
def sprokr_losses():
    """Losses for the sketched kernel machines, ``{name: factory}``.

    ``factory(**params)`` returns a :class:`sprokr.losses.Loss` with ``value(pred, y)``
    and ``gradient(pred, y)`` (a sub-gradient for non-smooth losses).
    """


@hookspec
def sprokr_executors():
    """Executors of the chunked passes, ``{name: factory}``.

    Called when the registry is built.  ``factory(**params)`` returns a
    :class:`sprokr.numerics.Executor`: the object that runs every pass with an ``n``
    dimension (kernel blocks and their cross products at fit time, candidate embedding,
    top-k search) as a map over row chunks followed by a merge of the partial results.
    Estimators resolve ``executor="name"`` (with ``executor_params``) through this hook;
    the built-ins are ``"local"`` (threads in this process, the default) and ``"dask"``
    (``dask.distributed``; the ``dask`` extra).
    """


@hookspec
def sprokr_estimators():
    """Task-level estimators, ``{name: factory}`` (e.g. sprokr-chem's ``MoleculeRetriever``).

    ``factory(**params)`` returns an unfitted scikit-learn style estimator (``fit``,
    ``predict``, ``get_params``, ``save``).  The command line builds them by name
    (``estimator = "MoleculeRetriever"`` in a model file, ``docs/cli.md``), and the safe
    model format saves and rebuilds them by registered name like every component.
    """


#: hook name -> component kind, in the order ``sprokr plugins`` lists them
KINDS = {
    "sprokr_input_kernels": "input_kernel",
    "sprokr_output_kernels": "output_kernel",
    "sprokr_sketches": "sketch",
    "sprokr_decoders": "decoder",
    "sprokr_regressors": "regressor",
    "sprokr_losses": "loss",
    "sprokr_executors": "executor",
    "sprokr_estimators": "estimator",
}
