"""``sprokr fit | predict | evaluate | select``: models from files, for users who do not code.

A model is described by a TOML file::

    estimator = "SISOKR"            # a class of sprokr.models, or a plugin's estimator by name
    random_state = 0

    [params]                         # the estimator's parameters (components by name)
    lam = 1e-4
    input_kernel = "smiles_spectrum"
    output_kernel = "wl"
    input_sketch = "subsample"
    m_x = 400

    [input]                          # which columns are the inputs, and what they hold
    column = "smiles"
    type = "smiles"                  # a column type: numeric | text | labels, or a plugin's

    [output]
    column = "target"
    type = "molecule"                # (sprokr-chem) SMILES -> molecule graphs, written back as SMILES

    [select]                         # optional, for `sprokr select`
    lams = [1e-6, 1e-5, 1e-4, 1e-3]
    m_x_grid = [100, 200, 400]

``fit`` stores the configuration inside the saved model (the safe format's metadata), so
``predict`` and ``evaluate`` read queries and write predictions with the same columns.

Every command checks, before reading data or fitting: the configuration's structure (each
key's type, named), its output paths (:func:`sprokr.io.check_output_path`), and option
combinations; every data file it reads must hold at least one sample.  The estimator's
parameters are checked then too (:func:`build_estimator`): their names, and their values
through the estimator's ``check_params()`` (types, ranges, choices, component names known
to the registry; a plugin's estimator without ``check_params`` has its values checked by
its ``fit`` only), so that ``lam = -1`` is a one-line error naming the configuration file
before a large training file is read.  Checks that need the data (a sketch size larger
than the number of samples) are left to ``fit``.
"""
from __future__ import annotations

import contextlib
import errno
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np

from ..io import (ColumnSpec, DataFileError, OutputPathError, Table, check_output_path, describe_error,
                  is_standard_output, read_table, write_csv, write_text)
from ..utils import error_text, take
from ._args import UsageError, open_fraction, positive_int

__all__ = ["ConfigError", "load_config", "check_config", "build_estimator", "add_task_commands", "CLIError"]


class ConfigError(ValueError):
    """The model configuration is unreadable or names something unknown."""


#: errors reported as one line on stderr with exit code 2 (no traceback)
CLIError = (ConfigError, DataFileError, OutputPathError, UsageError, FileNotFoundError)

#: K of ``sprokr evaluate``'s top-K accuracy when --top-k is not given
TOP_K = 10

_TOP_KEYS = {"estimator", "random_state", "params", "input", "output", "select"}
_TABLES = ("params", "input", "output", "select")
#: the [select] keys and the type each takes (what `sprokr select` passes to select_model)
_SELECT_KEYS = {"lams": "a list of numbers > 0", "param_grid": "a table of lists (or a list of such tables)",
                "m_x_grid": "a list of integers >= 1", "m_y_grid": "a list of integers >= 1",
                "scoring": "a scorer name (a string)", "m_x_budget_s": "a number of seconds > 0"}


def _kind(v: Any) -> str:
    """``"an integer (3)"``: what a TOML value is, for the messages."""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "a table"}
    return f"{names.get(type(v), type(v).__name__)} ({v!r})" if not isinstance(v, (dict, list)) else \
        names.get(type(v), type(v).__name__)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_select(sel: Any, where: str) -> None:
    """The [select] table: known keys, each of the type :func:`select_model` takes."""
    unknown = set(sel) - set(_SELECT_KEYS)
    if unknown:
        raise ConfigError(f"{where}: [select] has unknown keys {sorted(unknown)}; expected {sorted(_SELECT_KEYS)}")
    for key, v in sel.items():
        ok = {"lams": lambda: isinstance(v, list) and bool(v) and all(_is_number(u) and u > 0 for u in v),
              "m_x_grid": lambda: isinstance(v, list) and bool(v) and all(
                  isinstance(u, int) and not isinstance(u, bool) and u >= 1 for u in v),
              "param_grid": lambda: (isinstance(v, dict) and all(isinstance(u, list) for u in v.values())) or (
                  isinstance(v, list) and all(isinstance(g, dict) and all(isinstance(u, list) for u in g.values())
                                              for g in v)),
              "scoring": lambda: isinstance(v, str),
              "m_x_budget_s": lambda: _is_number(v) and v > 0}
        ok["m_y_grid"] = ok["m_x_grid"]
        if not ok[key]():
            raise ConfigError(f"{where}: [select] {key} must be {_SELECT_KEYS[key]}, got {_kind(v)}")


def load_config(path: Any) -> Dict[str, Any]:
    """Read and check a model configuration (TOML) file."""
    import tomllib

    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{p}: a directory, not a configuration file (a TOML file, e.g. model.toml)")
    if not p.is_file():
        raise ConfigError(f"{p}: no such configuration file")
    try:
        cfg = tomllib.loads(p.read_text(encoding="utf-8-sig"))  # a byte-order mark (Notepad) is not TOML
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from exc
    return check_config(cfg, str(p))


def check_config(cfg: Dict[str, Any], where: str = "config") -> Dict[str, Any]:
    """Check a configuration dict: its keys, the type of each (named when wrong), the column
    specs, the estimator's name, its parameters' names and, through its ``check_params()``
    when it has one, their values (:func:`build_estimator`); returns it."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"{where}: a configuration is a table of keys, got {_kind(cfg)}")
    unknown = set(cfg) - _TOP_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}; expected {sorted(_TOP_KEYS)}")
    for key in ("estimator", "input", "output"):
        if key not in cfg:
            raise ConfigError(f"{where}: missing {key!r}")
    if not isinstance(cfg["estimator"], str):
        raise ConfigError(f"{where}: 'estimator' must be an estimator name (a string), got {_kind(cfg['estimator'])}")
    rs = cfg.get("random_state", 0)
    if not isinstance(rs, int) or isinstance(rs, bool) or not 0 <= rs < 2 ** 32:
        raise ConfigError(f"{where}: 'random_state' must be an integer in [0, 2**32), got {_kind(rs)}")
    for key in _TABLES:
        if key in cfg and not isinstance(cfg[key], dict):
            raise ConfigError(f"{where}: {key!r} must be a table ([{key}] followed by its keys), got {_kind(cfg[key])}")
    for key, v in cfg.get("params", {}).items():  # the components' parameters: tables of keyword arguments
        if key.endswith("_params") and not isinstance(v, dict):
            raise ConfigError(f"{where}: [params] {key} must be a table of the component's parameters "
                              f"(e.g. {key} = {{sigma2 = 1.0}}), got {_kind(v)}")
    _check_select(cfg.get("select", {}), where)
    try:
        specs = ColumnSpec.from_config(cfg["input"], "input"), ColumnSpec.from_config(cfg["output"], "output")
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    for what, spec in zip(("input", "output"), specs):
        given = cfg[what]
        if "column" in given and "columns" in given and [given["column"]] != list(spec.columns):
            raise ConfigError(f"{where}: [{what}] has both 'column' ({given['column']!r}) and 'columns' "
                              f"({given['columns']!r}); give one of them")
        twice = sorted({c for c in spec.columns if spec.columns.count(c) > 1})
        if twice:
            raise ConfigError(f"{where}: [{what}] names the column(s) {twice} more than once")
    build_estimator(cfg, where)  # names and parameter values checked now, not after reading data
    return cfg


#: what the commands call on an estimator (``sprokr fit`` saves it): a class of sprokr.models
#: without them (a tokenizer: fit and transform) is no estimator, and a plugin's is broken
_ESTIMATOR_METHODS = ("fit", "predict", "get_params", "save")


def build_estimator(cfg: Dict[str, Any], where: str = "config") -> Any:
    """The unfitted estimator a configuration describes (unknown names/parameters named).

    Its parameter values are then checked without data by its ``check_params()`` when it
    has one (every estimator of :mod:`sprokr.models`, and a plugin's that offers it; one
    without it is not checked here, but by its ``fit``): a ``ValueError`` or ``TypeError``
    it raises becomes a :class:`ConfigError` naming the configuration file and the message.

    A plugin's estimator factory that returns something without ``fit``, ``predict``,
    ``get_params`` and ``save`` raises :class:`sprokr.registry.PluginComponentError` naming the plugin.
    """
    from .. import models

    name = cfg.get("estimator")
    classes = [n for n in models.__all__ if isinstance(getattr(models, n), type)
               and all(callable(getattr(getattr(models, n), m, None)) for m in _ESTIMATOR_METHODS)]
    if name in classes:
        cls = getattr(models, name)
    else:  # an estimator of a plugin (hook sprokr_estimators), e.g. sprokr-chem's MoleculeRetriever
        from ..registry import get_registry

        reg = get_registry()
        try:
            if not isinstance(name, str):
                raise TypeError(name)
            reg.get("estimator", name)
        except (TypeError, ValueError):
            known = sorted(classes) + reg.names("estimator")
            raise ConfigError(f"{where}: unknown estimator {name!r}; known: {', '.join(known)}") from None

        def cls(**kw: Any) -> Any:
            return reg.create("estimator", name, kw, methods=_ESTIMATOR_METHODS)
    if not isinstance(cfg.get("params", {}), dict):
        raise ConfigError(f"{where}: 'params' must be a table ([params] followed by its keys), "
                          f"got {_kind(cfg['params'])}")
    params = dict(cfg.get("params", {}))
    if "random_state" in cfg:
        params.setdefault("random_state", cfg["random_state"])
    from ..registry import PluginComponentError

    try:
        proto = cls()
    except PluginComponentError:  # a broken plugin is named as such (a TypeError too)
        raise
    except TypeError as exc:  # a required argument no configuration can give (DSOKREnsemble's estimator objects)
        raise ConfigError(f"{where}: {name} cannot be built from a configuration file ({error_text(exc)}); "
                          "use it from Python") from None
    valid = set(proto.get_params())
    # former parameter names still work (a FutureWarning names the new one: sprokr.deprecation)
    bad = sorted(set(params) - valid - set(getattr(type(proto), "renamed_parameters", None) or {}))
    if bad:
        raise ConfigError(f"{where}: {name} has no parameter(s) {bad}; its parameters: {', '.join(sorted(valid))}")
    est = cls(**params)
    check = getattr(est, "check_params", None)  # a plugin's estimator may have none: skipped
    if callable(check):
        try:
            check()  # the parameter values, without data (the estimator's own messages)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{where}: [params] of {name}: {error_text(exc)}") from None
    return est


def _current_names(est: Any, params: Dict[str, Any]) -> Dict[str, Any]:
    """A model file's parameters under their current names (former ones renamed, silently:
    :func:`build_estimator` has warned)."""
    from ..deprecation import collect_renames, translate_renamed

    renames = getattr(type(est), "renamed_parameters", None) or {}
    with collect_renames():
        return translate_renamed(renames, params, type(est).__name__)


def _specs(cfg: Dict[str, Any]) -> Tuple[ColumnSpec, ColumnSpec]:
    return ColumnSpec.from_config(cfg["input"], "input"), ColumnSpec.from_config(cfg["output"], "output")


def _training_data(args: Any) -> Tuple[Dict[str, Any], Any, Any, Any]:
    """``(config, table, X, Y)`` of ``--config`` and ``--train`` (fit and select).

    With ``[input] standardize = true`` the returned config holds the training file's
    column means and deviations (``center``, ``scale``), saved with the model by ``fit``.
    """
    cfg = load_config(args.config)
    spec_in, spec_out = _specs(cfg)
    table = _read(args.train, "--train")
    if not spec_in.standardize:
        return cfg, table, spec_in.read(table), spec_out.read(table)
    raw = ColumnSpec(spec_in.columns, spec_in.type).read(table)  # the numeric columns, read once
    spec_in = spec_in.fit_scaling(raw)
    cfg = {**cfg, "input": {**cfg["input"], **spec_in.to_dict()}}
    return cfg, table, spec_in.standardized(raw), spec_out.read(table)


def _read(path: Any, option: str) -> Table:
    """The table of a data file given as ``option``, which must hold at least one sample."""
    table = read_table(path)
    if len(table) == 0:
        raise DataFileError(f"{path}: holds no samples (0 data rows); {option} needs at least one")
    return table


class TaskError(ValueError):
    """A model step (fit, predict, evaluate, select) failed on a file: names the step and the file."""


@contextlib.contextmanager
def _step(what: str) -> Iterator[None]:
    """Name the step and its file in a ``ValueError`` / ``TypeError`` the model raises (a
    feature count that differs from training's, an output type a kernel cannot take ...)."""
    try:
        yield
    except CLIError:
        raise
    except (ValueError, TypeError) as exc:
        raise TaskError(f"{what}: {describe_error(exc)}") from exc


def _out(args: Any):
    """Human-readable lines: stdout, or stderr with --json (stdout then holds JSON only)."""
    stream = sys.stderr if getattr(args, "json", False) else sys.stdout
    return lambda msg: print(msg, file=stream)


def _model_and_config(path: str) -> Tuple[Any, Dict[str, Any]]:
    from ..persistence import load, read_manifest

    # errno and file name given, so that the one line is "<path>: <reason>" (describe_error), without the type
    if Path(path).is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a model file", str(path))
    if not Path(path).is_file():
        raise FileNotFoundError(errno.ENOENT, "no such model file", str(path))
    meta = read_manifest(path).get("metadata") or {}
    if not isinstance(meta, dict) or "config" not in meta:
        raise ConfigError(f"{path}: this model was not saved by `sprokr fit` (no configuration stored); "
                          "use it from Python")
    cfg = meta["config"]
    try:  # what predict / evaluate use of it: the columns
        if not isinstance(cfg, dict) or not {"input", "output"} <= set(cfg):
            raise ValueError("no [input] / [output] tables")
        _specs(cfg)
    except ValueError as exc:
        raise ConfigError(f"{path}: the configuration stored in this model is invalid: {exc}") from None
    model = load(path)
    if not callable(getattr(model, "predict", None)):  # a saved CandidateIndex, kernel ... given a configuration
        raise ConfigError(f"{path}: holds an object of type {type(model).__name__}, not a model (predict and evaluate "
                          "take a model written by `sprokr fit`)")
    return model, cfg


def _save_model(est: Any, path: Any, metadata: Dict[str, Any]) -> None:
    """``est.save(path)``; an operating-system error names ``path`` (not the temporary file)."""
    try:
        est.save(path, metadata=metadata)
    except OSError as exc:
        raise OutputPathError(f"{path}: cannot be written: {describe_error(exc)}") from exc


# ---------------------------------------------------------------------------- commands
def cmd_fit(args: Any) -> int:
    """``sprokr fit --config C --train T -o M``."""
    out = _out(args)
    if str(args.output) == "-":  # (a file named '-' was written, where predict's '-' is standard output)
        raise UsageError("-o -: `sprokr fit` writes a model file, not standard output; give -o a file path")
    check_output_path(args.output, "-o/--output", inputs=[args.config, args.train])
    cfg, table, X, Y = _training_data(args)
    est = build_estimator(cfg, args.config)
    t0 = time.perf_counter()
    with _step(f"fitting {cfg['estimator']} on {args.train}"):
        est.fit(X, Y)
    fit_s = time.perf_counter() - t0
    _save_model(est, args.output, {"config": cfg, "train_file": str(args.train), "n_train": len(table)})
    res = {"model": str(args.output), "estimator": cfg["estimator"], "n_train": len(table), "fit_s": fit_s}
    out(f"fitted {cfg['estimator']} on {len(table)} samples of {args.train} in {fit_s:.2f} s -> {args.output}")
    if args.json:
        print(json.dumps(res))
    return 0


def _candidates(args: Any, spec_out: ColumnSpec) -> Tuple[Any, Any, List[str]]:
    """(model-ready candidates or None, their canonical forms or None, their column).

    With a column type that has a canonical form (the column type's ``canonical``), a
    candidate given several times (in any spelling) is kept once, at its first occurrence:
    the pool is a set of distinct outputs (a repeat of the truth tied with it, so that
    evaluate's top-1 was 0 with every candidate of the pool written twice, and ``--top-k``
    listed one output at two ranks).
    """
    if not args.candidates:
        return None, None, spec_out.columns
    table = _read(args.candidates, "--candidates")
    cols = [args.candidate_column] if args.candidate_column else spec_out.columns
    column_type = spec_out.column_type()
    default = getattr(column_type, "default_column", None)  # e.g. "smiles" of .smi / .sdf pools
    if args.candidate_column is None and default and cols[0] not in table.columns and default in table.columns:
        cols = [default]
    spec = ColumnSpec(cols, spec_out.type)
    C = spec.read(table)
    canonical = getattr(column_type, "canonical", None)
    if canonical is None:
        return C, None, cols
    keys, first = _first_per_form(canonical([str(v) for v in table.column(cols[0])]))
    if first.size < len(table):
        C = take(C, first)
    return C, keys, cols


def _first_per_form(keys: List[str]) -> Tuple[List[str], np.ndarray]:
    """``(distinct keys in order of first appearance, index of each one's first occurrence)``
    of a list of canonical forms."""
    first: Dict[str, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    return list(first), np.fromiter(first.values(), dtype=np.intp, count=len(first))


def _distinct_default_pool(model: Any, spec_out: ColumnSpec) -> Any:
    """The model's default candidates (its distinct training outputs) kept once per canonical
    form, or None to use them as they are (no repeats, no canonical form, no default pool):
    training outputs written two ways (e.g. one molecule in two spellings) are distinct
    objects to the model, and ``--top-k`` listed both."""
    canonical = getattr(spec_out.column_type(), "canonical", None)
    index = getattr(model, "default_index_", None)
    pool = getattr(index, "candidates", None)
    if canonical is None or getattr(model, "candidates_", None) is not None or pool is None:
        return None
    _, first = _first_per_form(canonical(list(pool)))
    return None if first.size == len(pool) else take(pool, first)


def cmd_predict(args: Any) -> int:
    """``sprokr predict M --input Q [--candidates P] [--top-k K] -o out.csv``."""
    out = _out(args)
    if args.json and str(args.output) == "-":
        raise UsageError("--json prints a JSON summary on standard output, where the predictions would go "
                         "without -o: add -o FILE for the predictions")
    if args.json and is_standard_output(args.output):
        raise UsageError(f"--json prints a JSON summary on standard output, and -o {args.output} is standard "
                         "output too: give -o a file of its own for the predictions")
    _check_candidate_column(args)
    if str(args.output) != "-":
        check_output_path(args.output, "-o/--output", inputs=[args.model, args.input, args.candidates],
                          special_files=True)
    model, cfg = _model_and_config(args.model)
    _check_ranks(model, ("--candidates", args.candidates), ("--top-k", args.top_k))
    spec_in, spec_out = _specs(cfg)
    queries = _read(args.input, "--input")
    X = spec_in.read(queries)
    C, _, _ = _candidates(args, spec_out)
    t0 = time.perf_counter()
    structured = hasattr(model, "predict_topk")
    with _step(f"predicting {args.input} with {args.model}"):
        if args.top_k is not None:
            if C is None:  # the training outputs, each once (the first of several spellings)
                C = _distinct_default_pool(model, spec_out)
            D = model.predict_topk(X, k=args.top_k, candidates=C)
            # the ranked candidates as the model gives them, as `predict` does below: a decoded
            # result carrying its own (`outputs`, e.g. a MoleculeRetriever's canonical SMILES),
            # else the pool's by index
            ranked = getattr(D, "outputs", None)
            if ranked is None:
                pool = C if C is not None else getattr(model, "candidates_", None) or model.default_index_.candidates
                ranked = [[pool[int(j)] for j in row] for row in D.indices]
            rows = [[q, r + 1, spec_out.write(c), f"{s:.8g}"]
                    for q in range(len(queries)) for r, (c, s) in enumerate(zip(ranked[q], D.scores[q]))]
            header = ["query", "rank", "prediction", "score"]
        else:
            P = model.predict(X, candidates=C) if structured else model.predict(X)
            rows = [[q, spec_out.write(P[q])] for q in range(len(queries))]
            header = ["query", "prediction"]
    dt = time.perf_counter() - t0
    write_csv(args.output, header, rows)
    out(f"{len(queries)} queries of {args.input} predicted in {dt:.2f} s -> {args.output}")
    if args.json:
        print(json.dumps({"predictions": str(args.output), "n_queries": len(queries), "decode_s": dt}))
    return 0


def _check_candidate_column(args: Any) -> None:
    """``--candidate-column`` names a column of the ``--candidates`` file: refused without it."""
    if args.candidate_column is not None and args.candidates is None:
        raise UsageError(f"--candidate-column {args.candidate_column}: names the column of the candidate pool, "
                         "and no --candidates file is given")


def _check_ranks(model: Any, *options: Tuple[str, Any]) -> None:
    """Refuse each given option of ``(option, value)`` when ``model`` does not rank candidates."""
    for option, given in options:
        if given is not None and not hasattr(model, "predict_topk"):
            raise ConfigError(f"{option}: {type(model).__name__} predicts values, it does not rank candidates")


def cmd_evaluate(args: Any) -> int:
    """``sprokr evaluate M --test T [--candidates P] [--top-k K]``: the task's metrics.

    The options are checked against the model before any data is read: ``--candidates``
    is required for outputs ranked in a candidate pool (molecules), refused for numeric
    outputs (MSE, R^2) or a model that predicts values; ``--top-k`` is refused unless the
    outputs are ranked; ``--candidate-column`` needs ``--candidates``.
    """
    out = _out(args)
    _check_candidate_column(args)
    model, cfg = _model_and_config(args.model)
    spec_in, spec_out = _specs(cfg)
    canonical = getattr(spec_out.column_type(), "canonical", None)
    _check_ranks(model, ("--candidates", args.candidates))
    if args.candidates is not None and spec_out.type != "labels" and canonical is None:
        raise ConfigError(f"--candidates: {args.model} predicts {spec_out.type!r} outputs, evaluated by MSE and R^2 "
                          "without a candidate pool")
    if args.candidates is None and canonical is not None:
        raise ConfigError(f"--candidates: {spec_out.type} outputs are evaluated by ranking a candidate pool "
                          "(e.g. --candidates pool.smi holding the true molecules)")
    if args.top_k is not None and canonical is None:
        metrics = "f1_samples and exact_match" if spec_out.type == "labels" else "MSE and R^2"
        raise ConfigError(f"--top-k: top-k accuracy is reported for outputs ranked in a candidate pool (e.g. "
                          f"molecules); {args.model} predicts {spec_out.type!r} outputs, evaluated by {metrics}")
    test = _read(args.test, "--test")
    X, Y = spec_in.read(test), spec_out.read(test)
    res: Dict[str, Any] = {"n_test": len(test)}
    t0 = time.perf_counter()
    with _step(f"evaluating {args.model} on {args.test}"):
        res.update(_metrics(args, model, spec_out, canonical, test, X, Y))
    res["decode_s"] = time.perf_counter() - t0
    for k, v in res.items():
        out(f"{k:20s} {v:.4f}" if isinstance(v, float) else f"{k:20s} {'undefined' if v is None else v}")
    if args.json:
        print(json.dumps(res))
    return 0


def _metrics(args: Any, model: Any, spec_out: ColumnSpec, canonical: Any, test: Table, X: Any, Y: Any
             ) -> Dict[str, Any]:
    """The task's metrics of ``model`` on the test rows (see :func:`cmd_evaluate`)."""
    from ..metrics import f1_samples, mean_reciprocal_rank, ranks_from_scores

    res: Dict[str, Any] = {}
    if spec_out.type == "labels":
        if hasattr(model, "predict_topk"):  # decoded label vectors
            C, _, _ = _candidates(args, spec_out)
            P = np.asarray(model.predict(X, candidates=C), dtype=float)
        else:  # a model that predicts values: the labels above 0.5, as `sprokr predict` writes them
            P = (np.asarray(model.predict(X), dtype=float).reshape(np.shape(Y)) > 0.5).astype(float)
        res.update(f1_samples=f1_samples(Y, P), exact_match=float(np.mean(np.all(P == Y, axis=1))))
    elif canonical is not None:  # structured outputs (molecules ...): rank a candidate pool
        C, keys, _ = _candidates(args, spec_out)  # given: checked by cmd_evaluate; distinct
        pos = {s: i for i, s in enumerate(keys)}
        truth = np.array([pos.get(s, -1) for s in canonical([str(v) for v in test.column(spec_out.columns[0])])])
        found = truth >= 0
        res["truth_in_candidates"] = float(found.mean())
        # over every test molecule: one missing from the pool cannot be retrieved, so it
        # counts as a miss (rank inf: not in the top k, reciprocal rank 0), and top-1 is
        # the fraction of queries a user would get right with this pool
        ranks = np.full(len(truth), np.inf)
        if found.any():
            S = np.asarray(model.predict_scores(X[found] if isinstance(X, np.ndarray) else
                                                [x for x, f in zip(X, found) if f], candidates=C))
            ranks[found] = ranks_from_scores(S, truth[found])
        if not found.all():
            warnings.warn(f"--candidates: {int(np.count_nonzero(~found))} of the {len(truth)} test molecules are "
                          f"not in {args.candidates} (matched by canonical form); they count as misses in "
                          "top-1, top-k and MRR", UserWarning, stacklevel=2)
        k = args.top_k if args.top_k is not None else TOP_K
        res.update({"top1": float(np.mean(ranks <= 1)), f"top{k}": float(np.mean(ranks <= k)),
                    "mrr": mean_reciprocal_rank(None, ranks=ranks)})
    else:
        P = np.asarray(model.predict(X), dtype=float).reshape(len(test), -1)
        Yt = np.asarray(Y, dtype=float).reshape(len(test), -1)
        tot = float(np.sum((Yt - Yt.mean(0)) ** 2))
        # R^2 is undefined for constant test targets (one row, say): null, not 1 - x / 1e-300
        res.update(mse=float(np.mean((P - Yt) ** 2)),
                   r2=float(1 - np.sum((P - Yt) ** 2) / tot) if tot > 0 else None)
    return res


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise ConfigError(f"cannot write {v!r} ({type(v).__name__}) to TOML")


def dump_config(cfg: Dict[str, Any]) -> str:
    """TOML text of a configuration (scalars first, then the tables)."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in cfg.items() if not isinstance(v, dict)]
    for k, v in cfg.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def cmd_select(args: Any) -> int:
    """``sprokr select --config C --train T -o chosen.toml [--figure F]``."""
    from ..model_selection import select_model

    out = _out(args)
    if str(args.output) == "-":  # (a file named '-' was written, where predict's '-' is standard output)
        raise UsageError("-o -: give -o a file path for the chosen configuration (or -o /dev/stdout to print it)")
    if args.json and is_standard_output(args.output):
        raise UsageError(f"--json prints a JSON summary on standard output, and -o {args.output} is standard "
                         "output too: give -o a file of its own for the configuration")
    check_output_path(args.output, "-o/--output", inputs=[args.config, args.train], special_files=True)
    if args.figure:
        check_output_path(args.figure, "--figure", inputs=[args.config, args.train],
                          outputs=[("-o/--output", args.output)], suffixes=_figure_suffixes())
    est = build_estimator(load_config(args.config), args.config)
    if "lam" not in est.get_params():
        raise ConfigError(f"{args.config}: `sprokr select` searches the ridge parameter lam, and {type(est).__name__} "
                          "has no lam parameter (it may choose its settings itself in fit: use `sprokr fit`)")
    cfg, _, X, Y = _training_data(args)
    sel = dict(cfg.get("select", {}))
    with _step(f"selecting {cfg['estimator']} on {args.train}"):
        res = select_model(est, X, Y, validation_fraction=args.validation_fraction,
                           random_state=cfg.get("random_state", 0), **sel)
    chosen = dict(cfg)
    chosen["params"] = {**_current_names(est, cfg.get("params", {})), **res["best_params"]}
    # the scaling statistics belong to a fitted model, not to a configuration
    chosen["input"] = {k: v for k, v in cfg["input"].items() if k not in ("center", "scale")}
    write_text(args.output, dump_config(chosen))
    out(f"selected {res['best_params']} (validation {res['scoring']} {res['best_score']:.4g}) -> {args.output}")
    panels: List[str] = []
    if args.figure:
        from ..plotting import plot_model_selection

        fig = plot_model_selection(res, title=f"{cfg['estimator']} on {args.train} ({res['n_val']} validation "
                                              "samples)", path=args.figure)
        panels = [ax.get_title() for ax in fig.axes]
        out(f"figure ({', '.join(panels)}) -> {args.figure}")
    if args.json:
        summary = {"config": str(args.output), "best_params": res["best_params"], "best_score": res["best_score"],
                   "scoring": str(res["scoring"]), "time_s": res["time_s"]}
        if res["perfect_h"] is not None:
            summary["perfect_h"] = {k: res["perfect_h"][k] for k in ("m", "criterion", "plateau_m")}
            summary["perfect_h"]["curve"] = res["perfect_h"][res["perfect_h"]["criterion"]]
        if res["m_x"] is not None:
            summary["m_x"] = {k: res["m_x"][k] for k in ("param", "m", "best_scores", "fit_times", "selected_m")}
        if args.figure:
            summary.update(figure=str(args.figure), figure_panels=panels)
        print(json.dumps(summary, default=float))
    return 0


def _figure_suffixes() -> List[str]:
    """The file suffixes matplotlib can write (``--figure``); a missing matplotlib is named."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise UsageError('--figure needs matplotlib: pip install "sprokr[plot]" (or pip install matplotlib)') from None
    return [f".{ext}" for ext in FigureCanvasBase.get_supported_filetypes()]


def add_task_commands(sub: Any) -> None:
    """Register fit / predict / evaluate / select on an argparse sub-parser set."""
    import argparse

    raw = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("fit", help="fit a model described by a TOML file on a data file", formatter_class=raw,
                       epilog="examples:\n  sprokr fit --config model.toml --train train.csv -o model.sprokr\n"
                              "  sprokr fit --config mols.toml --train train.smi -o mols.sprokr --json")
    p.add_argument("--config", required=True, help="model configuration (TOML; see docs/cli.md)")
    p.add_argument("--train", required=True, help="training data (.csv .tsv .npz .arff, and the suffixes plugins "
                                                   "read, e.g. .smi .sdf: sprokr plugins lists the readers)")
    p.add_argument("-o", "--output", required=True, help="where to write the model (safe sprokr format)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("predict", help="predict with a fitted model", formatter_class=raw,
                       epilog="examples:\n  sprokr predict model.sprokr --input queries.csv -o predictions.csv\n"
                              "  sprokr predict mols.sprokr --input q.csv --candidates pool.smi --top-k 10 -o top.csv")
    p.add_argument("model", help="a model written by `sprokr fit`")
    p.add_argument("--input", required=True, help="queries (same input columns as the training file)")
    p.add_argument("--candidates", help="candidate pool (default: the distinct training outputs)")
    p.add_argument("--candidate-column", help="column of the candidates (needs --candidates; default: the output "
                                              "column, or the column type's default column, e.g. smiles)")
    p.add_argument("--top-k", type=positive_int, metavar="K",
                   help="write the K >= 1 best candidates per query with scores (models that decode candidates)")
    p.add_argument("-o", "--output", default="-", help="CSV of predictions (default: standard output); checked "
                                                        "before any work")
    p.add_argument("--json", action="store_true", help="print one JSON summary on stdout; needs -o FILE (the "
                                                       "predictions cannot share standard output with it)")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("evaluate", help="the task's metrics on a labelled test file", formatter_class=raw,
                       epilog="examples:\n  sprokr evaluate model.sprokr --test test.csv --json\n"
                              "  sprokr evaluate mols.sprokr --test test.csv --candidates pool.smi --top-k 10")
    p.add_argument("model")
    p.add_argument("--test", required=True, help="test data with inputs and true outputs")
    p.add_argument("--candidates", help="candidate pool (molecules: required; should hold the true molecules; "
                                        "label sets: default the distinct training outputs; numeric outputs: none)")
    p.add_argument("--candidate-column", help="column of the candidates (needs --candidates)")
    # default None, not TOP_K: an option given to a model whose outputs are not ranked is refused
    p.add_argument("--top-k", type=positive_int, metavar="K",
                   help=f"K >= 1 of the top-K accuracy, for outputs ranked in a candidate pool (default {TOP_K})")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("select", help="choose lam, kernel parameters and sketch sizes by validation",
                       formatter_class=raw,
                       epilog="examples:\n  sprokr select --config model.toml --train train.csv -o chosen.toml\n"
                              "  sprokr select --config model.toml --train train.csv -o chosen.toml --figure select.png\n\n"
                              "The [select] table of the configuration says what is searched: lams, param_grid,\n"
                              "m_y_grid (perfect-h curve of the output sketch size), m_x_grid (growing input\n"
                              "sketch size), scoring, m_x_budget_s.")
    p.add_argument("--config", required=True)
    p.add_argument("--train", required=True, help="training data; a validation split is drawn from it")
    p.add_argument("--validation-fraction", type=open_fraction, default=0.2,
                   help="fraction of the training file held out for validation, in (0, 1) (default 0.2)")
    p.add_argument("-o", "--output", required=True, help="where to write the chosen configuration (TOML)")
    p.add_argument("--figure", help="save the selection curves there (PNG, PDF, SVG ...): the lam path, and with "
                                    "m_y_grid / m_x_grid the perfect-h curve, the m_x growth and score vs fit time")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_select)

