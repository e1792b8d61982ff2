"""Reading training / query / candidate files and writing predictions (the command line's I/O).

A file is read into a :class:`Table`: named columns of equal length, each row remembering
its line (or record) in the file so that errors can point at it.  :func:`read_table` picks
the reader by the file's suffix among the registered file readers (hook
``sprokr_readers``, :mod:`sprokr.hookspecs`); sprokr's own, registered through the same
hook (:mod:`sprokr.readers`):

* ``.csv`` (``.tsv``): a header line, one sample per line (standard :mod:`csv`);
* ``.npz``: arrays by name, rows = first axis (read with ``allow_pickle=False``);
* ``.arff`` (numeric, dense or sparse): one column per attribute.

Plugins add others (sprokr-chem: ``.smi`` / ``.smiles`` and ``.sdf`` / ``.sdf.zip``);
``sprokr plugins`` lists the readers.

Columns are then turned into model inputs and outputs by :class:`ColumnSpec`, through the
registered column types (hook ``sprokr_column_types``; built-ins ``"numeric"``, ``"text"``,
``"labels"`` in :mod:`sprokr.column_types`, sprokr-chem adds ``"smiles"`` and
``"molecule"``).  Every problem raises :class:`DataFileError` naming the file, the column
and, where it applies, the line.

Output paths are checked before any work by :func:`check_output_path` (and
:func:`check_output_dir` for a directory to fill), so a command never fails after a long
fit because of where it writes; :func:`write_csv` and :func:`write_text` write beside the
target and move the file into place (a failed write leaves no partial file), and an
operating-system error while writing is an :class:`OutputPathError` naming the path.
"""
from __future__ import annotations

import csv
import os
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from .utils import error_text

__all__ = ["DataFileError", "OutputPathError", "Table", "read_table", "find_reader", "ColumnSpec", "write_csv",
           "write_text", "is_standard_output", "check_output_path", "check_output_dir", "describe_error"]


class DataFileError(ValueError):
    """A data file cannot be read or lacks what the model needs (names file, column, line)."""


class OutputPathError(ValueError):
    """An output path cannot be written (names the path and the reason)."""


@dataclass
class Table:
    """Named columns of equal length read from ``path``.

    ``lines[i]`` is the line (CSV, SMILES) or record (SDF, 1-based) of row ``i`` in the
    file; ``unit`` says which (``"line"`` or ``"record"``), for error messages.
    """

    path: str
    columns: Dict[str, Any]
    lines: List[int] = field(default_factory=list)
    unit: str = "line"

    def __len__(self) -> int:
        return len(self.lines)

    def column(self, name: str) -> Any:
        """The column ``name``; a :class:`DataFileError` listing the available ones if absent
        (or if it is a single value, e.g. a 0-d array of an ``.npz`` file, not one per row)."""
        if name not in self.columns:
            names = list(self.columns)  # the first 20 (a label file can have hundreds)
            raise DataFileError(f"{self.path}: no column {name!r}; available columns: "
                                f"{', '.join(map(repr, names[:20])) or '(none)'}"
                                + (f" and {len(names) - 20} more" if len(names) > 20 else ""))
        col = self.columns[name]
        if getattr(col, "ndim", 1) == 0:
            raise DataFileError(f"{self.path}: column {name!r} is a single value (a 0-d array), not one value per row")
        return col

    def where(self, i: int) -> str:
        """``"<file> line <k>"`` (or ``record``) of row ``i`` (for error messages)."""
        return f"{self.path} {self.unit} {self.lines[i]}"


def _missing_provider(kind: str, name: str) -> str:
    """``"; <name> is provided by the chem plugin: pip install ..."`` for the name of a
    first-party plugin's component, else ``""`` (the packaging table is the command line's)."""
    from .extras import provider_hint

    hint = provider_hint(kind, name)
    return f"; {hint}" if hint else ""


def find_reader(path: Any) -> Any:
    """The registered file reader that :func:`read_table` uses for ``path``.

    The reader whose suffix is the longest match of the file name (among several of equal
    length: the first whose ``guess_can_open`` accepts the file, built-ins first); when no
    reader claims the suffix, the first reader whose ``guess_can_open`` accepts the existing
    file.  Raises :class:`DataFileError` listing the known suffixes (and, for a suffix of a
    first-party plugin that is not installed, how to install it) when none fits.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    object
        The reader (``suffixes``, ``description``, ``guess_can_open``, ``read``).

    A plugin's reader that fails while being asked (its ``suffixes`` or ``guess_can_open``
    raising, even by ``sys.exit``) is skipped with a
    :class:`sprokr.registry.PluginWarning` naming its plugin: the other readers, sprokr's
    built-ins included, keep working.
    """
    return _find_reader(path)[1]


def _find_reader(path: Any) -> Any:
    """``(component, reader)`` of :func:`find_reader` (the component names the reader's plugin)."""
    from .registry import BUILTIN, get_readers

    p = Path(path)
    name = p.name.lower()
    readers = [(comp, reader, sfx) for comp, reader in get_readers()
               if (sfx := _suffixes(comp, reader)) is not None]
    claims = sorted(((-len(s), 0 if comp.plugin == BUILTIN else 1, i, (comp, reader))
                     for i, (comp, reader, sfx) in enumerate(readers) for s in sfx if name.endswith(s)),
                    key=lambda t: t[:3])
    if claims:
        best = [c[3] for c in claims if c[0] == claims[0][0]]
        return next((r for r in best if _guess(*r, p)), best[0])
    if p.is_file():
        for comp, reader, _ in readers:
            if _guess(comp, reader, p):
                return comp, reader
    suffix = p.suffix.lower()
    # a double suffix (".sdf.zip") may be what a first-party plugin reads
    hint = next((h for s in ("".join(p.suffixes[-2:]).lower(), suffix) if s and (h := _missing_provider("reader", s))),
                "")
    known = sorted({s for _, _, sfx in readers for s in sfx})
    raise DataFileError(f"{p}: unknown file format {suffix or '(no suffix)'!r}; the installed file readers take "
                        f"{', '.join(known)}{hint}")


def _skip_reader(comp: Any, what: str, exc: BaseException) -> None:
    """Warn that a plugin's reader failed while being asked ``what`` (it is skipped)."""
    import warnings

    from .registry import PluginWarning

    warnings.warn(f"sprokr plugin {comp.plugin!r}: the reader {comp.name!r} was skipped: {what} raised "
                  f"{describe_error(exc)}", PluginWarning, stacklevel=4)


def _suffixes(comp: Any, reader: Any) -> Optional[List[str]]:
    """A reader's suffixes, lower-cased (none for a malformed ``suffixes``); None, with a
    warning naming its plugin, when reading them fails (the reader is then skipped)."""
    from .registry import is_plugin_failure

    try:
        suffixes = getattr(reader, "suffixes", ())
    except BaseException as exc:  # a property: the plugin's code (getattr's default covers AttributeError only)
        if not is_plugin_failure(exc):
            raise
        _skip_reader(comp, "its suffixes", exc)
        return None
    if isinstance(suffixes, str) or not isinstance(suffixes, (tuple, list)):
        return []
    return [s.lower() for s in suffixes if isinstance(s, str) and s]


def _guess(comp: Any, reader: Any, p: Path) -> bool:
    """The reader's ``guess_can_open(p)``; False, with a warning naming its plugin, when it fails
    (it should not raise: a reader that cannot tell does not claim the file)."""
    from .registry import is_plugin_failure

    try:
        return bool(reader.guess_can_open(p))
    except BaseException as exc:
        if not is_plugin_failure(exc):
            raise
        _skip_reader(comp, f"guess_can_open({p.name!r})", exc)
        return False


def read_table(path: Any) -> Table:
    """Read ``path`` into a :class:`Table` with the reader :func:`find_reader` picks.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    Table

    Raises
    ------
    DataFileError
        Unknown format (the known suffixes are listed), missing file, or a file the reader
        cannot read (naming the file and, where it applies, the line or record).
    """
    from .registry import BUILTIN, is_plugin_failure

    p = Path(path)
    comp, reader = _find_reader(p)
    if p.is_dir():
        raise DataFileError(f"{p}: is a directory, not a data file")
    if not p.is_file():
        raise DataFileError(f"{p}: no such file")
    # a plugin's reader is named in the errors that may be its own (sprokr's are the file's)
    by = "" if comp.plugin == BUILTIN else f" (reader {comp.name!r} of plugin {comp.plugin!r})"
    try:
        table = reader.read(p)
    except DataFileError:
        raise
    except BaseException as exc:  # noqa: BLE001 - any reader failure (OSError, BadZipFile, MemoryError, a
        # plugin reader's own exception, even sys.exit ...) is a file that cannot be read: named, one line
        if not is_plugin_failure(exc):
            raise
        raise DataFileError(f"{p}: cannot be read as {_description(reader, comp)}: {describe_error(exc)}{by}") from exc
    if not isinstance(table, Table):
        raise DataFileError(f"{p}: the reader {comp.name!r} of plugin {comp.plugin!r} returned a "
                            f"{type(table).__name__}, not a sprokr.io.Table (a broken plugin)")
    ragged = {k: _length(v) for k, v in table.columns.items() if getattr(v, "ndim", 1) != 0}
    if any(n != len(table) for n in ragged.values()):
        raise DataFileError(f"{p}: the reader {comp.name!r} of plugin {comp.plugin!r} returned columns of "
                            f"{ragged} values for {len(table)} rows (a broken plugin)")
    return table


def _description(reader: Any, comp: Any) -> str:
    """The reader's ``description`` for a message (its component name if it has none, or fails)."""
    from .registry import is_plugin_failure

    try:
        what = getattr(reader, "description", None)
    except BaseException as exc:
        if not is_plugin_failure(exc):
            raise
        what = None
    return what if isinstance(what, str) and what else f"a {comp.name!r} file"


def _length(column: Any) -> Optional[int]:
    """``len(column)``, None when it has none (a reader returned something else than a column)."""
    try:
        return len(column)
    except TypeError:
        return None


@dataclass
class ColumnSpec:
    """How the columns of a table become model inputs or outputs.

    Parameters
    ----------
    columns : list of str
        Column names (as many as the column type takes: one for ``text``, ``smiles``,
        ``molecule``; any number for ``numeric`` (stacked as features) and ``labels`` (one
        0/1 column per label)).
    type : str
        A registered column type (hook ``sprokr_column_types``): the built-ins
        ``"numeric"``, ``"text"``, ``"labels"``, or a plugin's (sprokr-chem: ``"smiles"``,
        ``"molecule"``).
    standardize : bool
        ``numeric`` inputs only: centre and scale each column with the training file's mean
        and standard deviation (:meth:`fit_scaling`; a constant column keeps scale 1).
    center, scale : list of float, optional
        Those statistics, learned by ``sprokr fit`` and stored with the model's
        configuration, so that ``predict`` and ``evaluate`` apply the same ones.
    """

    columns: List[str]
    type: str = "numeric"
    standardize: bool = False
    center: Optional[List[float]] = None
    scale: Optional[List[float]] = None

    @classmethod
    def from_config(cls, cfg: Any, what: str) -> "ColumnSpec":
        """From a config table ``{"columns": [...] or "column": "...", "type": ...}``.

        ``what`` is the table's name, ``"input"`` or ``"output"`` (in the messages;
        ``standardize`` is refused in ``[output]``).  The type is checked against the
        registered column types (an unknown one is named with the known ones, and for a
        first-party plugin's type, how to install it).
        """
        if not isinstance(cfg, dict):
            raise ValueError(f"[{what}] must be a table with 'column(s)' and 'type'")
        unknown = set(cfg) - {"column", "columns", "type", "standardize", "center", "scale"}
        if unknown:
            raise ValueError(f"[{what}]: unknown keys {sorted(unknown)}; expected 'column(s)', 'type' and, for "
                             f"numeric inputs, 'standardize'")
        cols = cfg.get("columns", cfg.get("column"))
        cols = [cols] if isinstance(cols, str) else cols
        if not cols or not all(isinstance(c, str) for c in cols):
            raise ValueError(f"[{what}] needs 'column' (a name) or 'columns' (a list of names)")
        typ = cfg.get("type", "numeric")
        n_columns = _column_type(typ, what).n_columns
        if n_columns is not None and len(cols) != n_columns:
            raise ValueError(f"[{what}] type {typ!r} takes {n_columns} column{'s' * (n_columns != 1)}, got {cols}")
        std = cfg.get("standardize", False)
        if not isinstance(std, bool):
            raise ValueError(f"[{what}] standardize must be true or false, got {std!r}")
        if std and what == "output":  # predictions would need the inverse scaling, which nothing applies
            raise ValueError("[output] standardize applies to inputs only: put standardize = true in [input] "
                             "(numeric input columns), the outputs are never scaled")
        if std and typ != "numeric":
            raise ValueError(f"[{what}] standardize applies to numeric columns, not to type {typ!r}")
        center, scale = cfg.get("center"), cfg.get("scale")
        for k, v in (("center", center), ("scale", scale)):
            if v is not None and (not isinstance(v, list) or not all(isinstance(u, (int, float)) for u in v)):
                raise ValueError(f"[{what}] {k} must be a list of numbers, got {v!r}")
        if center is not None or scale is not None:  # written by `sprokr fit`: both, with standardize
            if not std or center is None or scale is None or len(center) != len(scale):
                raise ValueError(f"[{what}] center and scale go together, with standardize = true and one "
                                 f"value per column (they are written by `sprokr fit`)")
            if not all(u > 0 for u in scale):
                raise ValueError(f"[{what}] scale must hold positive deviations, got {scale!r}")
        return cls(list(cols), typ, std, center, scale)

    def to_dict(self) -> Dict[str, Any]:
        """The config table this spec was read from (``from_config`` of it gives it back)."""
        d: Dict[str, Any] = {"columns": list(self.columns), "type": self.type}
        if self.standardize:
            d["standardize"] = True
            if self.center is not None and self.scale is not None:
                d.update(center=list(self.center), scale=list(self.scale))
        return d

    def column_type(self) -> Any:
        """The registered column type object (``n_columns``, ``parse``, ``format``, ...)."""
        return _column_type(self.type, "column")

    def fit_scaling(self, X: np.ndarray) -> "ColumnSpec":
        """A copy holding ``X``'s column means and standard deviations (``standardize``)."""
        X = np.asarray(X, dtype=np.float64)
        sd = X.std(axis=0)
        return ColumnSpec(list(self.columns), self.type, True, X.mean(axis=0).tolist(),
                          np.where(sd > 0, sd, 1.0).tolist())

    def standardized(self, X: np.ndarray) -> np.ndarray:
        """``X`` centred and scaled with the stored statistics (unchanged without ``standardize``)."""
        if not self.standardize:
            return X
        if self.center is None or self.scale is None:
            raise ValueError("[input] standardize = true but no training statistics: fit the model with "
                             "`sprokr fit` (it stores the columns' means and deviations with the model)")
        c, s = np.asarray(self.center, dtype=np.float64), np.asarray(self.scale, dtype=np.float64)
        if c.shape != (X.shape[1],) or s.shape != (X.shape[1],):
            raise ValueError(f"[input] standardize = true: the model's stored scaling (its training file's means and "
                             f"deviations) has {c.size} columns, the data {X.shape[1]}")
        return (X - c) / s

    def read(self, table: Table) -> Any:
        """The model-ready collection of ``table``'s rows (the column type's ``parse``),
        standardised with the stored statistics (``standardize``).

        A column type (a plugin's) failing with another exception than
        :class:`DataFileError` is reported as one, naming the file, the columns and the
        type's plugin, and so is data the stored statistics do not fit (another number of
        columns); a ``parse`` that returns another number of values than the table has rows
        raises :class:`sprokr.registry.PluginComponentError` naming the plugin.
        """
        from .registry import PluginComponentError, is_plugin_failure

        values = {name: table.column(name) for name in self.columns}
        ctype = self.column_type()
        try:
            parsed = ctype.parse(values, table)
        except DataFileError:
            raise
        except BaseException as exc:  # noqa: BLE001 - any failure of a column type is the file's columns' problem
            if not is_plugin_failure(exc):
                raise
            raise DataFileError(f"{table.path}: column(s) {', '.join(map(repr, self.columns))} cannot be read as "
                                f"{self.type!r}: {describe_error(exc)}{self._by()}") from exc
        n = _length(parsed)
        if n != len(table):  # else the mismatch surfaces later, as a model's "different numbers of samples"
            got = f"{n} values" if n is not None else \
                f"an object of type {type(parsed).__name__} (not one value per row)"
            raise PluginComponentError(f"column type {self.type!r} of plugin {self._plugin()!r} is broken: its parse "
                                       f"returned {got} for the {len(table)} rows of {table.path} (report it to its "
                                       "authors)")
        try:
            return self.standardized(parsed)
        except ValueError as exc:  # e.g. an array column of another width than in training: name the file
            raise DataFileError(f"{table.path}: column(s) {', '.join(map(repr, self.columns))}: {exc}") from None

    def write(self, value: Any) -> str:
        """One output as text (the column type's ``format``: molecules as SMILES, label sets
        as ``;``-joined label names, numbers with 8 significant digits).  A ``format`` that
        fails raises :class:`sprokr.registry.PluginComponentError` naming the type's plugin."""
        from .registry import PluginComponentError, is_plugin_failure

        ctype = self.column_type()
        try:
            return str(ctype.format(value, list(self.columns)))
        except BaseException as exc:  # the model's own prediction: a failure is the column type's
            if not is_plugin_failure(exc):
                raise
            raise PluginComponentError(f"column type {self.type!r} of plugin {self._plugin()!r} could not write a "
                                       f"prediction ({type(value).__name__}): {describe_error(exc)}") from exc

    def _plugin(self) -> str:
        """The plugin that provides this spec's column type."""
        from .registry import get_registry

        return get_registry().get("column_type", self.type).plugin

    def _by(self) -> str:
        """``" (column type of plugin 'chem')"`` for a plugin's type, ``""`` for sprokr's own."""
        from .registry import BUILTIN

        plugin = self._plugin()
        return "" if plugin == BUILTIN else f" (column type of plugin {plugin!r})"


def _column_type(name: Any, what: str) -> Any:
    """The registered column type ``name``; a ``ValueError`` naming the known ones if unknown."""
    from .registry import get_column_type, get_registry

    if not isinstance(name, str):
        raise ValueError(f"[{what}] type must be a column type name (a string), got {name!r}")

    try:
        return get_column_type(name)
    except ValueError as exc:
        if not str(exc).startswith("unknown"):
            raise ValueError(f"[{what}] type: {exc}") from None
        known = get_registry().names("column_type")
        raise ValueError(f"[{what}] unknown column type {name!r}; known column types: {', '.join(known)}"
                         f"{_missing_provider('column_type', name)}") from None


def describe_error(exc: BaseException) -> str:
    """One line for an exception: ``"<file>: <reason>"`` for an ``OSError`` that names its
    file, ``"out of memory ..."`` for a ``MemoryError``, the message of a ``ValueError``,
    else ``"<type>: <message>"``."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        if exc.filename2 is not None:
            where = f"{exc.filename} -> {exc.filename2}: "
        return f"{where}{exc.strerror}"
    if isinstance(exc, MemoryError):
        return f"out of memory ({exc})" if str(exc) else "out of memory"
    text = error_text(exc)  # the message and its PEP 678 notes (context added on the way up)
    if isinstance(exc, ValueError) and text:  # sprokr's and the readers' own messages say what is wrong
        return text
    # another type (a plugin's own exception, a KeyError ...): its name is part of the message
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def check_output_path(path: Any, option: str = "-o/--output", inputs: Iterable[Any] = (),
                      suffixes: Optional[Iterable[str]] = None, special_files: bool = False,
                      outputs: Iterable[Tuple[str, Any]] = ()) -> Path:
    """Check, before any work, that a file can be written at ``path``.

    The path must not be a directory nor one of ``inputs`` (the command's input files: a
    model written over its training file would destroy it); its directory must exist and
    accept a new file (tried by creating and removing an empty temporary file there, which
    is what writing needs: permissions, read-only file systems, quotas of inodes).

    Parameters
    ----------
    path : str or path-like
        The output file.
    option : str
        The command-line option that gave it, for the messages.
    inputs : iterable of path-like
        Files the command reads; writing over one of them is refused.
    suffixes : iterable of str, optional
        Accepted (lower-case) suffixes, e.g. the figure formats.
    special_files : bool, default False
        Accept an existing device or pipe (``/dev/stdout``), written in place (what
        :func:`write_csv` does); a writer that moves a finished file into place (model
        files) would replace the device node, so it is refused by default.
    outputs : iterable of (str, path-like)
        The command's other output files, with their options: the same file for two of
        them is refused (the second written would replace the first), whether or not it
        exists yet.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    OutputPathError
        Naming the option, the path and what is wrong.
    """
    p = Path(path)
    if str(path) == "":
        raise OutputPathError(f"{option}: an empty path")
    if p.is_dir():
        raise OutputPathError(f"{option} {p}: is a directory; give a file path (e.g. {p / 'out'})")
    if suffixes is not None:
        accepted = sorted(suffixes)
        if p.suffix.lower() not in accepted:
            raise OutputPathError(f"{option} {p}: unsupported file type {p.suffix or '(no suffix)'!r}; "
                                  f"expected one of {', '.join(accepted)}")
    for other in inputs:
        if other is not None and Path(other).exists() and p.exists() and os.path.samefile(p, other):
            raise OutputPathError(f"{option} {p}: is also an input of this command ({other}); "
                                  "writing there would overwrite it")
    for other_option, other in outputs:
        if other is not None and str(other) != "" and _same_file(p, Path(other)):
            raise OutputPathError(f"{option} {p}: is also the {other_option} file of this command ({other}); "
                                  "give each output its own path")
    if p.exists() and not p.is_file():  # a device or a pipe (resolving symbolic links)
        if not special_files:
            raise OutputPathError(f"{option} {p}: is not a regular file (a device or a pipe); give a file path")
        if not os.access(p, os.W_OK):
            raise OutputPathError(f"{option} {p}: is not writable (permission denied)")
        return p
    parent = Path(os.path.realpath(p)).parent  # where the file is created (a symbolic link's target)
    if not parent.exists():
        raise OutputPathError(f"{option} {p}: directory {parent} does not exist")
    if not parent.is_dir():
        raise OutputPathError(f"{option} {p}: {parent} is not a directory")
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputPathError(f"{option} {p}: the existing file is not writable (permission denied)")
    _probe_writable(parent, f"{option} {p}")
    return p


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same existing file, or the same path once
    symbolic links and ``..`` are resolved (for files not written yet)."""
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def check_output_dir(path: Any, option: str = "--export") -> Path:
    """Check, before any work, that ``path`` is (or can be created as) a writable directory.

    Raises :class:`OutputPathError` when ``path`` is an existing file, or when its nearest
    existing ancestor is not a directory or does not accept new files.
    """
    p = Path(path)
    if str(path) == "":
        raise OutputPathError(f"{option}: an empty path")
    if p.exists() and not p.is_dir():
        raise OutputPathError(f"{option} {p}: exists and is not a directory; give a directory (it is created "
                              "if missing)")
    existing = p
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"{option} {p}: {existing} is not a directory")
    _probe_writable(existing, f"{option} {p}")
    return p


def _probe_writable(directory: Path, what: str) -> None:
    """Create and remove an empty file in ``directory``; an ``OutputPathError`` if that fails."""
    try:
        fd, name = tempfile.mkstemp(prefix=".sprokr-write-test-", dir=directory)
    except OSError as exc:
        raise OutputPathError(f"{what}: cannot create files in {directory}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(name)


def is_standard_output(path: Any) -> bool:
    """Whether ``path`` names the file this process's standard output goes to (``/dev/stdout``,
    ``/dev/fd/1``, or the file it is redirected to); ``-`` is left to the caller."""
    import sys

    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):  # no such file; a standard output without a descriptor
        return False


def _write_replacing(path: Any, write: Callable[[Any], None]) -> None:
    """Write through ``write(fh)`` to a temporary file beside ``path``, then move it into
    place: a failure leaves no partial file.  ``OSError`` -> :class:`OutputPathError`.

    Standard output (``-o /dev/stdout``) is written through ``sys.stdout``: neither replaced
    (``>> log`` would lose the log, and what is printed after would go to the replaced file)
    nor reopened (truncated).
    """
    import sys

    if is_standard_output(path):
        write(sys.stdout)
        sys.stdout.flush()
        return
    # a device or a pipe, through symbolic links (stat follows them: /dev/stdout -> /proc/self/fd/1 ->
    # 'pipe:[...]', which realpath cannot name): written in place (never replaced)
    if Path(path).exists() and not Path(path).is_file():
        try:
            with open(path, "w", newline="", encoding="utf-8") as fh:
                write(fh)
        except OSError as exc:
            raise OutputPathError(f"{path}: cannot be written: {exc.strerror or exc}") from exc
        return
    p = Path(os.path.realpath(path))  # through a symbolic link: replace its target, not the link
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp")
    try:
        try:
            with open(tmp, "x", newline="", encoding="utf-8") as fh:
                write(fh)
            if p.exists():  # a replaced file keeps its permissions
                os.chmod(tmp, p.stat().st_mode & 0o7777)
            os.replace(tmp, p)
        finally:
            if tmp.exists():
                tmp.unlink()
    except OSError as exc:
        raise OutputPathError(f"{path}: cannot be written: {exc.strerror or exc}") from exc


def write_csv(path: Any, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Write ``rows`` under ``header`` to ``path`` (``-``: standard output).

    A file is written beside ``path`` and moved into place (no partial file on failure);
    an operating-system error raises :class:`OutputPathError` naming ``path``.
    """
    import sys

    def write(fh: Any) -> None:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)

    if str(path) == "-":
        write(sys.stdout)
    else:
        _write_replacing(path, write)


def write_text(path: Any, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` as :func:`write_csv` does (beside it, then moved)."""
    _write_replacing(path, lambda fh: fh.write(text))

