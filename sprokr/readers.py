"""sprokr's own file readers: CSV, TSV (plain or gzip-compressed), NPZ and ARFF (hook ``sprokr_readers``).

They are registered through :mod:`sprokr._builtins` exactly as a plugin registers its
readers, and :func:`sprokr.io.read_table` finds them by suffix like any other.  A reader
has ``suffixes``, ``description``, ``guess_can_open(path)`` and ``read(path)`` returning a
:class:`sprokr.io.Table` (see :func:`sprokr.hookspecs.sprokr_readers`).
"""
from __future__ import annotations

import csv
import gzip
import math
import zipfile
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

    @staticmethod
    def open_text(path: Any, encoding: str = "utf-8", newline: str | None = None) -> Any:
        """The file opened for reading text, decompressed on the fly when its name ends with
        ``.gz`` (gzip: MOSES ships ``train.csv.gz``), for a reader whose ``suffixes`` also
        name the compressed form (``".csv.gz"``).

        Parameters
        ----------
        path : str or path-like
        encoding : str, default "utf-8"
        newline : str, optional
            As for :func:`open` (``""`` for the :mod:`csv` module).

        Returns
        -------
        file object
            A text stream (a context manager).
        """
        p = Path(path)
        if p.name.lower().endswith(".gz"):
            return gzip.open(p, "rt", encoding=encoding, newline=newline)
        return open(p, encoding=encoding, newline=newline)


class CSVReader(SuffixReader):
    """Comma-separated values: a header line, then one sample per line (blank lines skipped)."""

    suffixes: Tuple[str, ...] = (".csv", ".csv.gz")
    description = "CSV (or gzip-compressed CSV): a header line, one sample per line"
    delimiter = ","

    def read(self, path: Any) -> Table:
        """Columns named by the header; ``lines`` are the file's lines where the rows start."""
        p = Path(path)
        # utf-8-sig: a byte-order mark (spreadsheet exports) is not part of the first column's name
        with self.open_text(p, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter=self.delimiter)
            try:
                header = next(reader, None)
                while header is not None and all(not c.strip() for c in header):  # blank lines, as between rows
                    header = next(reader, None)
            except csv.Error as exc:
                raise DataFileError(f"{p} line {reader.line_num}: {exc}") from None
            if not header:
                raise DataFileError(f"{p}: empty file (expected a header line)" if reader.line_num == 0 else
                                    f"{p}: only blank lines (expected a header line)")
            header = [h.strip() for h in header]
            twice = sorted({h for h in header if header.count(h) > 1})
            if twice:  # one would silently hide the other
                raise DataFileError(f"{p} line {reader.line_num}: the header names column(s) {', '.join(map(repr, twice))} more "
                                    "than once")
            rows, lines = [], []
            end = last_end = reader.line_num
            while True:
                first = end + 1  # a record spans several lines when a quoted field holds line breaks
                try:
                    row = next(reader, None)
                except csv.Error as exc:  # e.g. a field larger than the csv module's limit
                    raise DataFileError(f"{p} line {first}: {exc}{self._quote_hint(p, first, reader.line_num)}") \
                        from None
                if row is None:
                    break
                end = reader.line_num
                if not row or all(not c.strip() for c in row):
                    continue
                if len(row) != len(header):
                    raise DataFileError(f"{p} line {first}: {len(row)} fields, the header has {len(header)}"
                                        f"{self._quote_hint(p, first, end)}")
                rows.append(row)
                lines.append(first)
                last_end = end
            if lines and last_end > lines[-1] and last_end == end and self._open_quote_at_end(p, lines[-1]):
                # the last record runs to the end of the file inside quotes: its fields are the rest of the file
                raise DataFileError(f"{p} line {lines[-1]}: a quoted field opened on this line is never closed "
                                    f"(an unterminated quote: the field runs to the end of the file, line {end})")
        return Table(str(p), {h: [r[j] for r in rows] for j, h in enumerate(header)}, lines)

    def _quote_hint(self, p: Path, first: int, end: int) -> str:
        """What to add to the message of a bad record running from line ``first`` to ``end``:
        a record spanning lines is a quoted field holding line breaks, often a quote left open."""
        if end <= first:
            return ""
        if self._open_quote_at_end(p, first):
            return (f" (the record runs from line {first} to the end of the file, line {end}: a quoted field "
                    f"opened on line {first} is never closed)")
        return (f" (the record runs from line {first} to line {end} inside a quoted field: an unterminated "
                f"quote on line {first} is likely)")

    def _open_quote_at_end(self, p: Path, first: int) -> bool:
        """Whether the file, read from line ``first``, ends inside a quoted field (read again
        strictly, which the lenient reading does not say: it closes the field at the end)."""
        with self.open_text(p, encoding="utf-8-sig", newline="") as fh:
            for _ in range(first - 1):
                fh.readline()
            try:
                for _ in csv.reader(fh, delimiter=self.delimiter, strict=True):
                    pass
            except csv.Error as exc:
                return "unexpected end of data" in str(exc)
        return False


class TSVReader(CSVReader):
    """Tab-separated values: a header line, then one sample per line."""

    suffixes = (".tsv", ".tsv.gz")
    description = "TSV (or gzip-compressed TSV): a header line, one sample per line"
    delimiter = "\t"


class NPZReader(SuffixReader):
    """NumPy ``.npz`` archives: arrays by name, rows = first axis, read without pickle.

    Every entry's ``.npy`` header is checked against the entry's size before the array is
    allocated: a corrupt or crafted header claiming more elements than the file holds (a
    2^40-element array of a few bytes) is refused, never allocated.
    """

    suffixes = (".npz",)
    description = "NPZ: arrays by name, rows = first axis"

    #: deflate expands at most ~1032:1; an entry declaring more is corrupt
    MAX_DEFLATE_RATIO = 1100

    def read(self, path: Any) -> Table:
        """One column per array; every array must have the same number of rows."""
        p = Path(path)
        cols = {}
        with zipfile.ZipFile(p) as zf:  # one handle: the checked entries are the read ones
            for info in zf.infolist():
                if info.is_dir():
                    continue
                if not info.filename.endswith(".npy"):
                    raise DataFileError(f"{p}: entry {info.filename!r} is not a .npy array (an NPZ archive "
                                        "holds arrays only)")
                key = info.filename[:-len(".npy")]
                self._check_entry(p, zf, info, key)
                with zf.open(info) as fh:
                    cols[key] = np.lib.format.read_array(fh, allow_pickle=False)
        sizes = {k: (v.shape[0] if v.ndim else None) for k, v in cols.items()}
        n = {s for s in sizes.values() if s is not None}
        if len(n) > 1:  # grouped by row count (a file of a few hundred label arrays gave one huge dict)
            groups = {rows: [k for k, s in sizes.items() if s == rows] for rows in sorted(n, reverse=True)}
            raise DataFileError(f"{p}: arrays with different numbers of rows (every array needs one row per "
                                f"sample): " + "; ".join(
                                    f"{rows} rows: {', '.join(map(repr, keys[:5]))}"
                                    + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
                                    for rows, keys in groups.items()))
        return Table(str(p), dict(cols), list(range(1, (n.pop() if n else 0) + 1)))

    def _check_entry(self, p: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo, key: str) -> None:
        """Refuse an entry whose sizes or ``.npy`` header cannot be true (before any allocation)."""
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise DataFileError(f"{p}: array {key!r}: the archive's sizes of this entry disagree "
                                f"({info.file_size} vs {info.compress_size} bytes); the file is corrupt")
        if info.compress_type == zipfile.ZIP_DEFLATED and \
                info.file_size > self.MAX_DEFLATE_RATIO * info.compress_size + 4096:
            raise DataFileError(f"{p}: array {key!r}: the archive declares {info.file_size} bytes compressed "
                                f"into {info.compress_size}, more than deflate can; the file is corrupt")
        with zf.open(info) as fh:
            version = np.lib.format.read_magic(fh)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0
            shape, _, dtype = read_header(fh)
            header_bytes = fh.tell()
        if dtype.hasobject:
            raise DataFileError(f"{p}: array {key!r} holds Python objects (dtype {dtype}); they would need "
                                "pickle, which sprokr never loads: save numbers or strings")
        need = math.prod(shape) * dtype.itemsize
        have = info.file_size - header_bytes
        if need > have:
            raise DataFileError(f"{p}: array {key!r}: its header says shape {shape} of {dtype} ({need} bytes) but "
                                f"the entry holds {have} bytes of data; the file is corrupt or truncated")


class ARFFReader(SuffixReader):
    """Numeric ARFF files (dense or sparse, :func:`sprokr.datasets.read_arff`): one column per attribute."""

    suffixes = (".arff",)
    description = "ARFF (numeric): one column per attribute"

    def read(self, path: Any) -> Table:
        """One float column per attribute; ``lines`` are the file's lines of the data rows."""
        from scipy import sparse

        from .datasets import read_arff

        p = Path(path)
        M, names, lines = read_arff(p, return_lines=True)
        M = M.toarray() if sparse.issparse(M) else M
        return Table(str(p), {name: M[:, j] for j, name in enumerate(names)}, lines)
