"""Molecule collections as users pass them: canonical SMILES of mixed collections and files.

A collection may mix SMILES strings, RDKit molecules and molecule graphs
(:func:`sprokr_chem.mol_to_graph`); a file is any table :func:`sprokr.io.read_table`
reads.  Above :mod:`sprokr_chem.io` (parsing) and :mod:`sprokr_chem.graphs` (graph
conversion), which know nothing of each other's callers.
"""
from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any

from rdkit import Chem

from .io import MoleculeReadError, is_molecule_graph, mol_from_smiles, read_smiles, to_mol

__all__ = ["canonical_smiles", "molecule_smiles", "read_molecules", "check_one_dimensional", "check_ordered"]


def check_ordered(values: Any, name: str) -> None:
    """A TypeError naming ``name`` when ``values`` is a set: its order -- which pairs inputs
    with outputs, orders the predictions, breaks ties between candidates and which indices
    refer to -- changes from one run to the next (string hashing is salted per process).

    Parameters
    ----------
    values : object
        The collection to check.
    name : str
        The argument's name, in the error.
    """
    if isinstance(values, AbstractSet):
        raise TypeError(f"{name} is a {type(values).__name__}, whose order changes from run to run (and with it the "
                        f"pairs, the order of the predictions and the ties); pass a list, e.g. sorted({name})")


def check_one_dimensional(values: Any, name: str, what: str = "molecules") -> None:
    """A TypeError naming ``name`` when ``values`` is a table (a DataFrame: iterating it gives
    its column names, read as if they were the samples), an array of more than one dimension
    or a set (:func:`check_ordered`).

    Parameters
    ----------
    values : object
        The collection to check.
    name : str
        The argument's name, in the error.
    what : str, default "molecules"
        What the sequence holds, in the error.
    """
    check_ordered(values, name)
    columns = getattr(values, "columns", None)
    if columns is not None and hasattr(values, "iloc"):
        cols = list(columns)
        hint = f"; pass one column, e.g. {name}[{cols[0]!r}]" if cols else ""
        raise TypeError(f"{name} must be a one-dimensional sequence of {what}, got a {type(values).__name__} with "
                        f"columns {cols[:5]}{hint}")
    shape = getattr(values, "shape", None)
    if isinstance(shape, tuple) and len(shape) != 1:
        raise TypeError(f"{name} must be a one-dimensional sequence of {what}, got an array of shape {shape}")


def canonical_smiles(molecules: Any, name: str = "molecules") -> list[str]:
    """RDKit canonical SMILES of SMILES strings, RDKit molecules or molecule graphs.

    A molecule is written as its SMILES string would be: an RDKit molecule with explicit
    hydrogens (``Chem.AddHs``, an SDF read with ``removeHs=False``) or kekulised without
    aromatic flags gives the same string as its plain SMILES.

    Parameters
    ----------
    molecules : sequence of str, rdkit.Chem.Mol or networkx.Graph (n,)
        Graphs as :func:`sprokr_chem.mol_to_graph` makes them (node ``label``, bond-order
        edge ``label``).
    name : str
        What the molecules are (named in the error, e.g. ``"y"`` or ``"candidates"``).

    Returns
    -------
    list of str (n,)

    Raises
    ------
    MoleculeReadError
        Naming ``name``, the position and text of the first invalid molecule and how many
        others are invalid (every record is checked before raising).
    TypeError
        ``molecules`` is a single molecule, a table (DataFrame) or an array of more than one
        dimension.
    """
    if isinstance(molecules, (str, Chem.Mol)):
        raise TypeError(f"{name} must be a sequence of molecules, not a single {type(molecules).__name__}")
    check_one_dimensional(molecules, name)
    out, skipped = [], []
    for i, m in enumerate(molecules):
        try:
            out.append(molecule_smiles(m, i))
        except MoleculeReadError as exc:
            skipped.append(exc.skipped_entry())
    if skipped:
        raise MoleculeReadError.from_skipped(skipped, name)
    return out


def molecule_smiles(molecule: Any, index: int = 0) -> str:
    """RDKit canonical SMILES of one SMILES string, RDKit molecule or molecule graph.

    A molecule object is written as its SMILES string would be: read back from its SMILES
    (explicit hydrogens removed, aromaticity perceived), so that an RDKit molecule with
    explicit hydrogens (``Chem.AddHs``) or kekulised without aromatic flags is the molecule
    of its plain SMILES -- for :func:`canonical_smiles` and for the molecule kernels.

    Parameters
    ----------
    molecule : str, rdkit.Chem.Mol or networkx.Graph
        The molecule (a graph as :func:`sprokr_chem.mol_to_graph` makes it).
    index : int, default 0
        Its position, named by the error.

    Returns
    -------
    str

    Raises
    ------
    MoleculeReadError
        Naming ``index``, when ``molecule`` is not a valid molecule.
    """
    m = molecule
    if is_molecule_graph(m):
        from .graphs import molecule_from_graph  # (networkx only when a graph is given)

        m = molecule_from_graph(m, index)
    s = Chem.MolToSmiles(to_mol(m, index))
    if not isinstance(m, str):  # a molecule object: read back as its SMILES would be
        s = Chem.MolToSmiles(mol_from_smiles(s, index))
    return s


def read_molecules(source: Any, name: str = "candidates", column: str = "smiles") -> list[str]:
    """Canonical SMILES of a molecule collection or of a molecule file.

    Parameters
    ----------
    source : sequence (see :func:`canonical_smiles`) or str / path-like
        A file is read by :func:`sprokr.io.read_table`: ``.smi`` (first token of each line),
        ``.sdf`` / ``.sdf.zip`` (one record per molecule), ``.csv`` / ``.tsv`` (the column
        ``column``, matched case-insensitively).
    name : str
        Named in errors (``"candidates"``).
    column : str
        Column of a CSV/TSV file holding the SMILES.

    Returns
    -------
    list of str
        Canonical SMILES, in the order of the collection or file.

    Raises
    ------
    MoleculeReadError
        An invalid molecule, naming the file and line (or ``name`` and the position).
    sprokr.io.DataFileError
        A file that does not exist, has an unknown format or no SMILES column.
    """
    import os

    if not isinstance(source, (str, os.PathLike)):
        return canonical_smiles(source, name)
    from sprokr.column_types import column_strings
    from sprokr.io import DataFileError, read_table

    try:
        table = read_table(source)
    except DataFileError as err:  # name the argument the file was given as
        raise DataFileError(f"{name}: {err}") from None
    cols = {c.lower(): c for c in table.columns}
    if column.lower() not in cols:
        raise DataFileError(f"{source}: no {column!r} column holding the {name}; available columns: "
                            f"{', '.join(map(repr, table.columns)) or '(none)'}")
    values = column_strings(table.column(cols[column.lower()]), cols[column.lower()], table)
    mols, report = read_smiles(values, on_error="skip")
    if report.skipped:
        first = report.skipped[0][0]
        raise MoleculeReadError.from_skipped(report.skipped, f"{name} ({table.where(first)})")
    return [Chem.MolToSmiles(m) for m in mols]
