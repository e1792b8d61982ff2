"""Molecule files for :func:`sprokr.io.read_table` (hook ``sprokr_readers``).

* ``.smi`` / ``.smiles``: ``SMILES [name]`` per line (``#`` starts a comment line):
  columns ``smiles`` and ``name``; the SMILES are checked by the column types that use
  them (``smiles``, ``molecule``), which name the line of an invalid one;
* ``.sdf`` (or a ``.zip`` holding one, e.g. ``.sdf.zip``): one record per molecule:
  columns ``smiles`` (RDKit canonical) and every SD property; an invalid record raises
  :class:`sprokr.io.DataFileError` naming the file and the record.
"""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any, Dict, List

from sprokr.io import DataFileError, Table
from sprokr.readers import SuffixReader

__all__ = ["SmilesFileReader", "SDFReader"]


class SmilesFileReader(SuffixReader):
    """``.smi`` / ``.smiles``: one ``SMILES [name]`` per line (columns ``smiles``, ``name``)."""

    suffixes = (".smi", ".smiles", ".smi.gz", ".smiles.gz")
    description = "SMILES list (plain or gzip-compressed): 'SMILES [name]' per line"

    def read(self, path: Any) -> Table:
        """Columns ``smiles`` (first token) and ``name`` (the rest); blank and ``#`` lines skipped."""
        p = Path(path)
        smiles, names, lines = [], [], []
        with self.open_text(p) as fh:
            for k, line in enumerate(fh, 1):
                parts = line.split()
                if not parts or parts[0].startswith("#"):
                    continue
                smiles.append(parts[0])
                names.append(" ".join(parts[1:]))
                lines.append(k)
        return Table(str(p), {"smiles": smiles, "name": names}, lines)


class SDFReader(SuffixReader):
    """SD files, plain or zipped: one record per molecule (columns ``smiles`` and the SD properties)."""

    suffixes = (".sdf", ".sdf.zip")
    description = "SD file: one record per molecule"

    def guess_can_open(self, path: Any) -> bool:
        """An ``.sdf`` / ``.sdf.zip`` name, or an existing zip archive holding an ``.sdf`` file."""
        p = Path(path)
        if super().guess_can_open(p):
            return True
        if not p.is_file() or not zipfile.is_zipfile(p):
            return False
        with zipfile.ZipFile(p) as zf:
            return any(n.lower().endswith(".sdf") for n in zf.namelist())

    def read(self, path: Any) -> Table:
        """Column ``smiles`` (canonical) and one column per SD property (``""`` where a
        record lacks it); rows are numbered by record (1-based)."""
        from rdkit import Chem

        from .io import MoleculeReadError, read_sdf

        p = Path(path)
        try:
            mols, props, _ = read_sdf(p, on_error="raise", properties=True)
        except MoleculeReadError as exc:
            raise DataFileError(f"{p} record {exc.index + 1}: invalid molecule {exc.record!r} ({exc.reason})") \
                from None
        keys: List[str] = []
        for d in props:
            keys.extend(k for k in d if k not in keys)
        cols: Dict[str, Any] = {"smiles": [Chem.MolToSmiles(m) for m in mols]}
        for k in keys:
            cols.setdefault(k, [str(d.get(k, "")) for d in props])
        return Table(str(p), cols, list(range(1, len(mols) + 1)), unit="record")
