"""sprokr's own file readers: CSV, TSV, NPZ and ARFF (hook ``sprokr_readers``).

They are registered through :mod:`sprokr._builtins` exactly as a plugin registers its
readers, and :func:`sprokr.io.read_table` finds them by suffix like any other.  A reader
has ``suffixes``, ``description``, ``guess_can_open(path)`` and ``read(path)`` returning a
:class:`sprokr.io.Table` (see :func:`sprokr.hookspecs.sprokr_readers`).
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Tuple

import numpy as np

from .io import DataFileError, Table

__all__ = ["SuffixReader", "CSVReader", "TSVReader", "NPZReader", "ARFFReader"]


class SuffixReader:
    """Base of readers that recognise a file by its name alone (``guess_can_open``)."""

    suffixes: Tuple[str, ...] = ()
    description = ""

    def guess_can_open(self, path: Any) -> bool:
        """Whether the file name ends with one of :attr:`suffixes` (case-insensitive)."""
        return Path(path).name.lower().endswith(self.suffixes)

    def read(self, path: Any) -> Table:  # pragma: no cover - abstract
        """The file's columns as a :class:`sprokr.io.Table`."""
        raise NotImplementedError


class CSVReader(SuffixReader):
    """Comma-separated values: a header line, then one sample per line (blank lines skipped)."""

    suffixes: Tuple[str, ...] = (".csv",)
    description = "CSV: a header line, one sample per line"
    delimiter = ","

    def read(self, path: Any) -> Table:
        """Columns named by the header; ``lines`` are the file's line numbers."""
        p = Path(path)
        with open(p, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh, delimiter=self.delimiter)
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


class TSVReader(CSVReader):
    """Tab-separated values: a header line, then one sample per line."""

    suffixes = (".tsv",)
    description = "TSV: a header line, one sample per line"
    delimiter = "\t"


class NPZReader(SuffixReader):
    """NumPy ``.npz`` archives: arrays by name, rows = first axis, read without pickle."""

    suffixes = (".npz",)
    description = "NPZ: arrays by name, rows = first axis"

    def read(self, path: Any) -> Table:
        """One column per array; every array must have the same number of rows."""
        p = Path(path)
        with np.load(p, allow_pickle=False) as z:
            cols = {k: z[k] for k in z.files}
        sizes = {k: (v.shape[0] if v.ndim else None) for k, v in cols.items()}
        n = {s for s in sizes.values() if s is not None}
        if len(n) > 1:
            raise DataFileError(f"{p}: arrays with different numbers of rows: {sizes}")
        return Table(str(p), dict(cols), list(range(1, (n.pop() if n else 0) + 1)))


class ARFFReader(SuffixReader):
    """Numeric ARFF files (dense or sparse, :func:`sprokr.datasets.read_arff`): one column per attribute."""

    suffixes = (".arff",)
    description = "ARFF (numeric): one column per attribute"

    def read(self, path: Any) -> Table:
        """One float column per attribute; ``lines`` are the data rows, 1-based."""
        from scipy import sparse

        from .datasets import read_arff

        p = Path(path)
        M, names = read_arff(p)
        M = M.toarray() if sparse.issparse(M) else M
        return Table(str(p), {name: M[:, j] for j, name in enumerate(names)}, list(range(1, M.shape[0] + 1)))
