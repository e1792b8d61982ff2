"""sprokr-chem: RDKit molecules for sprokr.

Registered through the ``sprokr`` entry-point group (module :mod:`sprokr_chem.plugin`):
input and output kernels ``morgan_tanimoto``, ``morgan_gaussian_tanimoto``,
``morgan_count_tanimoto``, ``morgan_minmax``, ``morgan_cosine`` and ``smiles_spectrum`` (SMILES
strings, RDKit molecules or molecule graphs).  Also: SMILES / SDF readers that name invalid records, Morgan
fingerprints, molecule <-> labelled graph conversion, and :class:`MoleculeRetriever`
(SMILES or text in, molecules out, settings chosen by validation; registered through the
``sprokr_estimators`` hook).  For the command line and figures: ``.smi`` / ``.sdf`` file
readers, the ``smiles`` and ``molecule`` column types, the ``molecule`` depiction
(:func:`plot_molecules`) and the molecule section of ``sprokr demo``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING


# Submodules are imported on first attribute access (PEP 562), so that loading the
# plugin's entry point while the registry is built does not import the domain library.
from sprokr.registry import lazy_exports

if TYPE_CHECKING:  # imported for the annotations only
    from rdkit.Chem import Mol

_EXPORTS = {
    "GraphConversionError": ".graphs",
    "graph_to_mol": ".graphs",
    "graph_to_smiles": ".graphs",
    "mol_to_graph": ".graphs",
    "smiles_to_graph": ".graphs",
    "MoleculeReadError": ".io",
    "ReadReport": ".io",
    "mol_from_smiles": ".io",
    "read_sdf": ".io",
    "read_smiles": ".io",
    "to_mol": ".io",
    "canonical_smiles": ".molecules",
    "read_molecules": ".molecules",
    "MoleculeRetriever": ".retriever",
    "RetrievedMolecules": ".retriever",
    "MorganCosineKernel": ".kernels",
    "MorganCountTanimotoKernel": ".kernels",
    "unary_counts": ".kernels",
    "MorganGaussianTanimotoKernel": ".kernels",
    "MorganMinMaxKernel": ".kernels",
    "MorganTanimotoKernel": ".kernels",
    "SmilesSpectrumKernel": ".kernels",
    "clear_fingerprint_cache": ".kernels",
    "morgan_fingerprints": ".kernels",
    "plot_molecules": ".plotting",
    "MoleculeDepiction": ".plotting",
    "MoleculeFeaturizer": ".featurize",
    "featurize_molecules": ".featurize",
    "DESCRIPTOR_NAMES": ".featurize",
    "load_moses": ".datasets",
}

__all__ = sorted(_EXPORTS) + ["molecular_formula"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


def molecular_formula(mol: str | Mol) -> str:
    """Molecular formula (Hill order, e.g. ``"C7H10O2"``) of a SMILES string or molecule.

    Parameters
    ----------
    mol : str or rdkit.Chem.Mol
        The molecule, or its SMILES string.
    """
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula

    from .io import to_mol

    return CalcMolFormula(to_mol(mol))
