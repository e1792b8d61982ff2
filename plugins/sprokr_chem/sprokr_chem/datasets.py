"""Loaders for the molecule benchmark data (QM9 CSV, ChEBI-20 SDF, MOSES CSV) and the shipped sample."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .io import read_sdf

if TYPE_CHECKING:  # imported for the annotations only
    from rdkit.Chem import Mol
    from sprokr.types import PathLike
    from sprokr_chem.io import ReadReport

__all__ = ["QM9_PROPERTIES", "load_qm9", "load_chebi20", "load_moses"]

#: the per-molecule quantum properties of QM9 used as inputs (no atomisation energies,
#: which are near-duplicates of u0/u298/h298/g298)
QM9_PROPERTIES = ["A", "B", "C", "mu", "alpha", "homo", "lumo", "gap", "r2", "zpve", "u0",
                  "u298", "h298", "g298", "cv"]


def load_qm9(path: PathLike | None = None,
             properties: Sequence[str] | None = None) -> tuple[list[str], np.ndarray, list[str]]:
    """SMILES and property matrix of a QM9 CSV (default ``<data>/qm9/qm9_dev.csv``).

    Returns ``smiles`` (list of str) and ``props`` (ndarray (n, p)) and the property names.
    Missing properties of the file (e.g. the shipped sample has fewer) are left out.
    """
    if path is None:
        from sprokr.datasets import default_data_dir

        path = default_data_dir() / "qm9" / "qm9_dev.csv"
    path = Path(path)
    if not path.exists():
        from sprokr.datasets import data_not_found

        raise data_not_found(path, "QM9 CSV")
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or "smiles" not in rows[0]:
        raise ValueError(f"{path}: expected a CSV with a 'smiles' column")
    names = [p for p in (properties or QM9_PROPERTIES) if p in rows[0]]
    smiles = [r["smiles"] for r in rows]
    props = np.array([[float(r[p]) for p in names] for r in rows]) if names else np.zeros((len(rows), 0))
    return smiles, props, names


def load_chebi20(path: PathLike | None = None, on_error: str = "raise") -> tuple[list[Mol], list[str], ReadReport]:
    """ChEBI-20 molecules and their text descriptions (``<data>/chebi20/val.sdf.zip``).

    Returns ``mols`` (RDKit molecules), ``texts`` (the ``Description`` field) and the
    read report.  A record without a description raises (or is skipped with ``on_error="skip"``).
    """
    if path is None:
        from sprokr.datasets import default_data_dir

        path = default_data_dir() / "chebi20" / "val.sdf.zip"
    if not Path(path).exists():
        from sprokr.datasets import data_not_found

        raise data_not_found(path, "ChEBI-20 SDF")
    mols, props, report = read_sdf(path, on_error=on_error)
    keep = [i for i, p in enumerate(props) if str(p.get("Description", "")).strip()]
    if len(keep) != len(mols):
        missing = [report.kept[i] for i in range(len(mols)) if i not in set(keep)]
        if on_error == "raise":
            raise ValueError(f"{len(missing)} SDF record(s) have no Description, e.g. record {missing[0]}")
        report.skipped += [(i, "", "no Description") for i in missing]
        report.kept = [report.kept[i] for i in keep]
    return [mols[i] for i in keep], [str(props[i]["Description"]) for i in keep], report


def load_moses(path: PathLike, split: str | None = None, n_rows: int | None = None) -> list[str]:
    """SMILES strings of a MOSES-format CSV file (``.csv`` or ``.csv.gz``), in file order.

    The MOSES benchmark (Polykovskiy et al. 2020, the ``molsets`` package) distributes its
    molecules as CSV files with a ``SMILES`` column (``train.csv.gz``: 1,584,663 molecules,
    ``test.csv.gz``: 176,074) or one file with a ``SPLIT`` column (``train`` / ``test`` /
    ``test_scaffolds``).  Strings are returned as written (MOSES writes RDKit canonical
    SMILES); they are not parsed here -- :func:`sprokr_chem.featurize.featurize_molecules`
    parses them (in parallel) and reports invalid ones by row.

    Parameters
    ----------
    path : path
        The CSV file; gzip-compressed when its name ends in ``.gz`` (or its first bytes say so).
    split : str, optional
        Keep only the rows whose ``SPLIT`` column equals this (the file must have one).
    n_rows : int, optional
        Read only the first ``n_rows`` data rows (of the split, if given).

    Returns
    -------
    list of str

    Raises
    ------
    FileNotFoundError
        The file does not exist (the message says where the data is expected).
    ValueError
        No ``SMILES`` column (the message names the columns found), an empty SMILES field
        (named by its line number), or ``split`` given for a file without ``SPLIT``.
    """
    import gzip
    import io

    path = Path(path)
    if not path.exists():
        from sprokr.datasets import data_not_found

        raise data_not_found(path, "MOSES CSV")
    if n_rows is not None and (isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows < 0):
        raise ValueError(f"n_rows must be None or an integer >= 0, got {n_rows!r}")
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    raw = gzip.open(path, "rb") if gz else open(path, "rb")
    with io.TextIOWrapper(raw, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path}: empty file; expected a CSV with a 'SMILES' column")
        cols = [h.strip() for h in header]
        low = [c.lower() for c in cols]
        if "smiles" not in low:
            raise ValueError(f"{path}: no 'SMILES' column (columns: {cols}); expected a MOSES-format CSV")
        j = low.index("smiles")
        k = low.index("split") if "split" in low else None
        if split is not None and k is None:
            raise ValueError(f"{path}: split={split!r} asked but the file has no 'SPLIT' column (columns: {cols})")
        out: list[str] = []
        for line, row in enumerate(reader, start=2):
            if n_rows is not None and len(out) >= n_rows:
                break
            if not row:
                continue
            if split is not None and (k is None or len(row) <= k or row[k].strip() != split):
                continue
            s = row[j].strip() if len(row) > j else ""
            if not s:
                raise ValueError(f"{path}: line {line} has an empty SMILES field")
            out.append(s)
    return out
