"""Reading training / query / candidate files and writing predictions (the command line's I/O).

A file is read into a :class:`Table`: named columns of equal length, each row remembering
its line (record) in the file so that errors can point at it.  Formats, by suffix:

* ``.csv`` (``.tsv``): a header line, one sample per line (standard :mod:`csv`);
* ``.npz``: arrays by name, rows = first axis (read with ``allow_pickle=False``);
* ``.smi`` / ``.smiles``: ``SMILES [name]`` per line; columns ``smiles`` and ``name``;
* ``.sdf`` (or ``.sdf.zip``; needs ``sprokr[chem]``): one record per molecule; columns
  ``smiles`` (canonical) and every SD property;
* ``.arff`` (numeric, dense or sparse): one column per attribute.

Columns are then turned into model inputs and outputs by :class:`ColumnSpec` (``type`` =
``"numeric"``, ``"text"``, ``"smiles"``, ``"molecule"`` (SMILES -> molecule graph) or
``"labels"`` (0/1 label columns -> a multilabel matrix)).  Every problem raises
:class:`DataFileError` naming the file, the column and, where it applies, the line.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["DataFileError", "Table", "read_table", "ColumnSpec", "FORMATS", "write_csv"]

#: suffixes read by :func:`read_table`
FORMATS = (".csv", ".tsv", ".npz", ".smi", ".smiles", ".sdf", ".zip", ".arff")


class DataFileError(ValueError):
    """A data file cannot be read or lacks what the model needs (names file, column, line)."""


@dataclass
class Table:
    """Named columns of equal length read from ``path``.

    ``lines[i]`` is the line (CSV, SMILES) or record (SDF, 1-based) of row ``i`` in the file.
    """

    path: str
    columns: Dict[str, Any]
    lines: List[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.lines)

    def column(self, name: str) -> Any:
        """The column ``name``; a :class:`DataFileError` listing the available ones if absent."""
        if name not in self.columns:
            raise DataFileError(f"{self.path}: no column {name!r}; available columns: "
                                f"{', '.join(map(repr, self.columns)) or '(none)'}")
        return self.columns[name]

    def where(self, i: int) -> str:
        """``"<file> line <k>"`` of row ``i`` (for error messages)."""
        kind = "record" if self.path.lower().endswith((".sdf", ".zip")) else "line"
        return f"{self.path} {kind} {self.lines[i]}"


def _suffix(path: Path) -> str:
    name = path.name.lower()
    return ".sdf" if name.endswith(".sdf.zip") else path.suffix.lower()


def read_table(path: Any) -> Table:
    """Read ``path`` (format by suffix, see the module doc) into a :class:`Table`."""
    p = Path(path)
    suffix = _suffix(p)
    if suffix not in FORMATS:
        raise DataFileError(f"{p}: unknown file format {suffix or '(no suffix)'!r}; expected one of "
                            f"{', '.join(FORMATS)}")
    if not p.is_file():
        raise DataFileError(f"{p}: no such file")
    try:
        if suffix in (".csv", ".tsv"):
            return _read_csv(p, "\t" if suffix == ".tsv" else ",")
        if suffix == ".npz":
            return _read_npz(p)
        if suffix in (".smi", ".smiles"):
            return _read_smi(p)
        if suffix in (".sdf", ".zip"):
            return _read_sdf(p)
        return _read_arff(p)
    except DataFileError:
        raise
    except (OSError, UnicodeDecodeError, ValueError, csv.Error) as exc:
        raise DataFileError(f"{p}: cannot be read as {suffix}: {exc}") from exc


def _read_csv(p: Path, delimiter: str) -> Table:
    with open(p, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        header = next(reader, None)
        if not header:
            raise DataFileError(f"{p}: empty file (expected a header line)")
        header = [h.strip() for h in header]
        rows, lines = [], []
        for row in reader:
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise DataFileError(f"{p} line {reader.line_num}: {len(row)} fields, the header has "
                                    f"{len(header)}")
            rows.append(row)
            lines.append(reader.line_num)
    return Table(str(p), {h: [r[j] for r in rows] for j, h in enumerate(header)}, lines)


def _read_npz(p: Path) -> Table:
    with np.load(p, allow_pickle=False) as z:
        cols = {k: z[k] for k in z.files}
    sizes = {k: (v.shape[0] if v.ndim else None) for k, v in cols.items()}
    n = {s for s in sizes.values() if s is not None}
    if len(n) > 1:
        raise DataFileError(f"{p}: arrays with different numbers of rows: {sizes}")
    return Table(str(p), cols, list(range(1, (n.pop() if n else 0) + 1)))


def _read_smi(p: Path) -> Table:
    smiles, names, lines = [], [], []
    with open(p, encoding="utf-8") as fh:
        for k, line in enumerate(fh, 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            smiles.append(parts[0])
            names.append(" ".join(parts[1:]))
            lines.append(k)
    return Table(str(p), {"smiles": smiles, "name": names}, lines)


def _read_sdf(p: Path) -> Table:
    try:
        from rdkit import Chem
        from sprokr_chem.io import read_sdf
    except ImportError as exc:
        from .cli import install_hint

        raise DataFileError(f"{p}: reading SDF files needs the chem plugin: {install_hint('chem')}") from exc
    mols, props, _ = read_sdf(p, on_error="raise", properties=True)
    keys: List[str] = []
    for d in props:
        keys.extend(k for k in d if k not in keys)
    cols: Dict[str, Any] = {"smiles": [Chem.MolToSmiles(m) for m in mols]}
    for k in keys:
        cols.setdefault(k, [str(d.get(k, "")) for d in props])
    return Table(str(p), cols, list(range(1, len(mols) + 1)))


def _read_arff(p: Path) -> Table:
    from scipy import sparse

    from .datasets import read_arff

    M, names = read_arff(p)
    M = M.toarray() if sparse.issparse(M) else M
    return Table(str(p), {name: M[:, j] for j, name in enumerate(names)}, list(range(1, M.shape[0] + 1)))


@dataclass
class ColumnSpec:
    """How the columns of a table become model inputs or outputs.

    Parameters
    ----------
    columns : list of str
        Column names (one for ``text``, ``smiles``, ``molecule``; any number for
        ``numeric`` (stacked as features) and ``labels`` (one 0/1 column per label)).
    type : {"numeric", "text", "smiles", "molecule", "labels"}
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

    TYPES = ("numeric", "text", "smiles", "molecule", "labels")

    @classmethod
    def from_config(cls, cfg: Any, what: str) -> "ColumnSpec":
        """From a config table ``{"columns": [...] or "column": "...", "type": ...}``."""
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
        if typ not in cls.TYPES:
            raise ValueError(f"[{what}] type must be one of {', '.join(cls.TYPES)}, got {typ!r}")
        if typ in ("text", "smiles", "molecule") and len(cols) != 1:
            raise ValueError(f"[{what}] type {typ!r} takes one column, got {cols}")
        std = cfg.get("standardize", False)
        if not isinstance(std, bool):
            raise ValueError(f"[{what}] standardize must be true or false, got {std!r}")
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
        d: Dict[str, Any] = {"columns": list(self.columns), "type": self.type}
        if self.standardize:
            d["standardize"] = True
            if self.center is not None and self.scale is not None:
                d.update(center=list(self.center), scale=list(self.scale))
        return d

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
            raise ValueError(f"[input] the stored scaling has {c.size} columns, the data {X.shape[1]}")
        return (X - c) / s

    def read(self, table: Table) -> Any:
        """The model-ready collection of ``table``'s rows."""
        if self.type == "numeric":
            return self.standardized(_numeric(table, self.columns))
        if self.type == "labels":
            Y = _numeric(table, self.columns)
            bad = ~np.isin(Y, (0.0, 1.0))
            if bad.any():
                i, j = np.argwhere(bad)[0]
                raise DataFileError(f"{table.where(int(i))}: label column {self.columns[j]!r} holds "
                                    f"{Y[i, j]!r}; expected 0 or 1")
            return Y
        values = [str(v) for v in table.column(self.columns[0])]
        if self.type == "text":
            return values
        mols = _parse_smiles(table, values)
        if self.type == "smiles":
            return values
        from sprokr_chem import mol_to_graph

        return [mol_to_graph(m) for m in mols]

    def write(self, value: Any) -> str:
        """One output as text: molecules as SMILES, label sets as ``;``-joined label names."""
        if self.type == "molecule":
            if isinstance(value, str):  # estimators that predict SMILES (MoleculeRetriever)
                return value
            from sprokr_chem import graph_to_smiles

            return graph_to_smiles(value) or ""
        if self.type == "labels":
            row = np.asarray(value).ravel()
            return ";".join(c for c, v in zip(self.columns, row) if v > 0.5)
        if self.type == "numeric":
            return " ".join(f"{float(v):.8g}" for v in np.atleast_1d(np.asarray(value, dtype=float)))
        return str(value)


def _numeric(table: Table, names: Sequence[str]) -> np.ndarray:
    cols = []
    for name in names:
        col = table.column(name)
        if isinstance(col, np.ndarray) and col.dtype.kind in "biuf":
            a = col.astype(np.float64)
            cols.append(a.reshape(a.shape[0], -1))
            continue
        out = np.empty(len(col))
        for i, v in enumerate(col):
            try:
                out[i] = float(v)
            except (TypeError, ValueError):
                raise DataFileError(f"{table.where(i)}: column {name!r} holds {v!r}; expected a number") from None
        cols.append(out[:, None])
    return np.hstack(cols) if cols else np.empty((len(table), 0))


def _parse_smiles(table: Table, values: Sequence[str]) -> list:
    try:
        from sprokr_chem.io import MoleculeReadError, mol_from_smiles
    except ImportError as exc:
        from .cli import install_hint

        raise DataFileError(f"{table.path}: molecules need the chem plugin: {install_hint('chem')}") from exc
    mols = []
    for i, s in enumerate(values):
        try:
            mols.append(mol_from_smiles(s, i))
        except MoleculeReadError as exc:
            raise DataFileError(f"{table.where(i)}: invalid SMILES {s!r} ({exc.reason})") from None
    return mols


def write_csv(path: Any, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Write ``rows`` under ``header`` to ``path`` (``-``: standard output)."""
    import sys

    fh = sys.stdout if str(path) == "-" else open(path, "w", newline="", encoding="utf-8")
    try:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    finally:
        if fh is not sys.stdout:
            fh.close()

