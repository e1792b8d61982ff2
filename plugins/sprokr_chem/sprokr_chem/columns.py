"""Molecule column types of the command line (hook ``sprokr_column_types``).

* ``smiles``: one column of SMILES strings, validated with RDKit (an invalid one names the
  file, line and column), given to the model as strings (e.g. for ``smiles_spectrum`` or
  ``morgan_tanimoto``); predictions are written as they are;
* ``molecule``: the same SMILES turned into labelled molecule graphs
  (:func:`sprokr_chem.mol_to_graph`) for graph output kernels (``wl``); predictions are
  written back as canonical SMILES, with the stereochemistry and isotopes of the molecule a
  graph was made from (the graph kernels do not see them; the written molecule keeps them).

Both are evaluated by ranking a candidate pool (``sprokr evaluate --candidates``), the true
molecule found by its canonical SMILES, and read a pool's ``smiles`` column (``.smi``,
``.sdf``) when it lacks the configured output column.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence

if TYPE_CHECKING:  # imported for the annotations only
    import networkx as nx
    from rdkit.Chem import Mol
    from sprokr.io import Table

__all__ = ["SmilesColumn", "MoleculeColumn", "parse_smiles_column"]


def parse_smiles_column(values: Mapping[str, Any], table: Table) -> tuple[List[str], List[Mol]]:
    """The strings of a one-column ``values`` and their RDKit molecules.

    Raises
    ------
    sprokr.io.DataFileError
        At the first invalid SMILES, naming the file, line and column.
    """
    from sprokr.column_types import column_strings
    from sprokr.io import DataFileError

    from .io import MoleculeReadError, mol_from_smiles

    ((name, column),) = values.items()
    strings = column_strings(column, name, table)
    mols = []
    for i, s in enumerate(strings):
        try:
            mols.append(mol_from_smiles(s, i))
        except MoleculeReadError as exc:
            raise DataFileError(f"{table.where(i)}: invalid SMILES {s!r} in column {name!r} ({exc.reason})") \
                from None
    return strings, mols


class SmilesColumn:
    """``smiles``: one column of SMILES strings, validated, kept as strings."""

    n_columns: Optional[int] = 1
    #: a candidate pool without the output column: its ``smiles`` column (``.smi``, ``.sdf``)
    default_column = "smiles"

    def parse(self, values: Mapping[str, Any], table: Table) -> List[str]:
        """The SMILES strings (every one checked by RDKit)."""
        return parse_smiles_column(values, table)[0]

    def format(self, value: Any, columns: List[str]) -> str:
        """The predicted SMILES (a candidate of the pool) as it is."""
        return str(value)

    def canonical(self, values: Sequence[Any]) -> List[str]:
        """RDKit canonical SMILES (SMILES strings, molecules or graphs): the identity of a molecule."""
        from .molecules import canonical_smiles

        return canonical_smiles(values)


class MoleculeColumn(SmilesColumn):
    """``molecule``: SMILES turned into labelled molecule graphs, predictions written as SMILES."""

    def parse(self, values: Mapping[str, Any], table: Table) -> List[nx.Graph]:
        """One :func:`sprokr_chem.mol_to_graph` graph per SMILES (every one checked by RDKit)."""
        from .graphs import mol_to_graph

        return [mol_to_graph(m) for m in parse_smiles_column(values, table)[1]]

    def format(self, value: Any, columns: List[str]) -> str:
        """Canonical SMILES of a predicted graph, with the stereochemistry and isotopes of
        the molecule it was made from (:func:`sprokr_chem.graphs.molecule_from_graph`: a
        candidate of the pool is written as the pool gives it, not without its stereo); a
        string prediction, e.g. of ``MoleculeRetriever``, as it is; ``""`` for a graph that
        is not a valid molecule."""
        if isinstance(value, str):
            return value
        from .io import MoleculeReadError
        from .molecules import canonical_smiles

        try:
            return canonical_smiles([value])[0]
        except MoleculeReadError:
            return ""
