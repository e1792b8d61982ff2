"""Hook specifications of the sprokr plugin host.

A plugin is any module or object with functions decorated by :data:`hookimpl` whose names
are the hooks below.  sprokr registers its own built-ins through exactly these hooks
(:mod:`sprokr._builtins`); third parties are discovered through the entry-point group
``sprokr``::

    # pyproject.toml of a third-party distribution
    [project.entry-points.sprokr]
    mykernels = "mykernels.plugin"        # a module holding @hookimpl functions

Every hook takes no argument and returns a mapping ``{name: factory}`` (except
:func:`sprokr_saveable_classes`, which returns a list of classes).  A *factory* is a class
or a callable; ``factory(**params)`` must return a component of the hook's kind.
:func:`lazy_factory` names a class by ``"module:Name"`` without importing it (sprokr's
own built-ins are all registered that way, so the host imports no component module).
Names are unique per kind across all plugins: two plugins that register the same name for
the same kind make any lookup of that name fail with an error naming both plugins.

The hooks are called once, when the registry is first built (``sprokr.get_registry()``,
or the first estimator ``fit`` that looks up a component by name), and again after
``sprokr.registry.reset_registry()``.  A hook that raises (any exception, ``sys.exit``
included: only ``KeyboardInterrupt`` gets through) is reported with a
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
    ``predict(X)`` of shape (n_queries, p).  Optional: ``fit`` keywords ``sample_offsets``
    (the residuals ``r_i``, shape (n,)) and ``eval_set`` (``(X_val, T_val, r_val)``), passed
    when the signature names them; a class attribute ``target_dtype`` (``numpy.float32`` or
    ``numpy.float64``, the default), the precision DSOKR computes ``T`` in -- float32 halves
    the n x p targets for a regressor that trains in float32.
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
    model format saves and rebuilds them by registered name like every component.  One
    that ranks candidates (``predict_topk``) may return a result with ``outputs``: each
    query's ranked candidates as its ``predict`` gives them, which ``sprokr predict
    --top-k`` writes (else the pool's candidates at the result's ``indices``).
    """


@hookspec
def sprokr_readers():
    """File readers by file type, ``{name: factory}``: what :func:`sprokr.io.read_table`
    (and so every ``sprokr fit | predict | evaluate | select`` file argument) can open.

    Called when the registry is built; the factories are called (with no argument) when a
    file is read.  ``factory()`` returns a reader with

    * ``suffixes``: tuple of lower-case file-name endings it reads, e.g. ``(".sdf",
      ".sdf.zip")``;
    * ``description``: one line for help and error messages (``"SD file: one record per
      molecule"``);
    * ``guess_can_open(path) -> bool``: whether it can read ``path`` (a
      :class:`pathlib.Path`; should not raise: a reader whose ``guess_can_open`` or
      ``suffixes`` raises is skipped with a warning naming its plugin); asked when several
      readers claim the file's suffix, and, for an existing file whose suffix no reader
      claims, of every reader (it may then look at the file's content);
    * ``read(path) -> sprokr.io.Table``: the file's named columns of equal length with the
      line (or record) of each row; a problem raises :class:`sprokr.io.DataFileError`
      naming the file and the line or record.

    The reader whose suffix is the longest match of the file name is used (``.sdf.zip``
    before ``.zip``); on a tie, the first (built-ins first, then in registration order)
    whose ``guess_can_open`` accepts the file.  sprokr's own readers (``.csv``, ``.tsv``,
    ``.npz``, ``.arff``) are registered through this hook.
    """


@hookspec
def sprokr_column_types():
    """Column types of the command line's model files, ``{name: factory}``: the ``type`` of
    an ``[input]`` / ``[output]`` table (``type = "smiles"``).

    Called when the registry is built; a factory is called (with no argument) when a model
    file naming the type is checked or its data read.  ``factory()`` returns a column type
    with

    * ``n_columns``: the number of columns it takes, a positive integer (``1``), or None
      for any number;
    * ``parse(values, table)``: the model inputs (or outputs) of a file's rows.  ``values``
      is a dict ``{column name: column}`` (the configured columns, in order; a column is a
      list of strings, or an array for ``.npz`` files), ``table`` the
      :class:`sprokr.io.Table` they come from (``table.where(i)`` names the file and line of
      row ``i``); one value per row.  A bad value raises :class:`sprokr.io.DataFileError`
      naming the file, line and column;
    * ``format(value, columns) -> str``: one prediction as text (the CSV ``sprokr predict``
      writes); ``columns`` are the configured column names (e.g. the label names);
    * optionally ``canonical(values) -> list``: a hashable canonical form of each parsed
      or raw output (e.g. canonical SMILES).  Types that have it are evaluated by ranking a
      candidate pool (``sprokr evaluate --candidates``: top-k, MRR), the true output being
      found in the pool by its canonical form;
    * optionally ``default_column``: the column to use in a candidate file that lacks the
      configured output column (``"smiles"`` for a ``.smi`` pool).

    The built-ins are ``numeric``, ``text`` and ``labels``.
    """


@hookspec
def sprokr_depictions():
    """Depictions of outputs in figures, ``{name: factory}``.

    Called when the registry is built; the factories are called (with no argument) when a
    figure is drawn.  ``factory()`` returns a depiction with ``can_draw(obj) -> bool``
    (cheap; never raises) and ``draw(obj, ax, **kwargs)`` (draws one output into the
    matplotlib ``Axes`` ``ax``; a malformed ``obj`` raises ``ValueError``), and optionally
    ``same(a, b) -> bool`` (two outputs are the same object, e.g. the same canonical SMILES;
    frames correct predictions).  :func:`sprokr.plotting.plot_outputs` draws each output
    with the first depiction that can draw it: plugins' depictions in registration order,
    then the built-in ``text`` (any value, written as text).
    """


@hookspec
def sprokr_saveable_classes():
    """Classes a plugin declares safe to save in the model format, a list of classes or
    ``"module:Name"`` strings (a string imports nothing until a model holding one is loaded).

    Called when the registry is built.  Instances of these classes (plain data classes a
    plugin's component keeps in its fitted state, e.g. a learned vocabulary) are saved as
    their attributes and rebuilt with ``cls.__new__`` (their ``__init__`` is not called),
    so only declare plain data classes.  The allow-list of the safe format is sprokr's own
    classes plus every registered plugin's; loading a model that holds the class of a
    plugin that is not installed raises :class:`sprokr.persistence.MissingPluginError`
    naming the plugin.  ``sprokr plugins`` lists them as ``module.Name``.
    """


@hookspec
def sprokr_demos():
    """Sections of ``sprokr demo``, ``{name: factory}``.

    Called when the registry is built; the factories are called when ``sprokr demo`` runs,
    sections in registration order (sprokr's own ``multilabel`` first).  ``factory()``
    returns a callable ``demo(out=print) -> dict``: it prints its lines through ``out``
    and returns its results as plain JSON data, reported under ``name`` by ``sprokr demo
    --json``.  A demo runs in seconds on data shipped with its package.  A demo that fails
    is reported naming its plugin, and the other sections still run.
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
    "sprokr_readers": "reader",
    "sprokr_column_types": "column_type",
    "sprokr_depictions": "depiction",
    "sprokr_saveable_classes": "saveable_class",
    "sprokr_demos": "demo",
}

#: the kinds whose components are parts of a model: saved and rebuilt by registered name
#: (the other kinds serve the command line, figures and the safe format itself)
MODEL_KINDS = ("input_kernel", "output_kernel", "sketch", "decoder", "regressor", "loss", "executor", "estimator")
