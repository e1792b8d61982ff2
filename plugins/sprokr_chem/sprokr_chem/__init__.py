"""sprokr-chem: RDKit molecules for sprokr.

Registered through the ``sprokr`` entry-point group (module :mod:`sprokr_chem.plugin`):
input and output kernels ``morgan_tanimoto``, ``morgan_gaussian_tanimoto``,
``morgan_minmax``, ``morgan_cosine`` (SMILES or RDKit molecules) and ``smiles_spectrum``
(SMILES strings).  Also: SMILES / SDF readers that name invalid records, Morgan
fingerprints, and molecule <-> labelled graph conversion.
"""
from .graphs import GraphConversionError, graph_to_mol, graph_to_smiles, mol_to_graph, smiles_to_graph
from .io import MoleculeReadError, ReadReport, mol_from_smiles, read_sdf, read_smiles, to_mol
from .kernels import (
    MorganCosineKernel,
    MorganGaussianTanimotoKernel,
    MorganMinMaxKernel,
    MorganTanimotoKernel,
    SmilesSpectrumKernel,
    clear_fingerprint_cache,
    morgan_fingerprints,
)

__all__ = [
    "MoleculeReadError", "ReadReport", "read_smiles", "read_sdf", "mol_from_smiles", "to_mol",
    "mol_to_graph", "graph_to_mol", "smiles_to_graph", "graph_to_smiles", "GraphConversionError",
    "morgan_fingerprints", "clear_fingerprint_cache", "MorganTanimotoKernel",
    "MorganGaussianTanimotoKernel", "MorganMinMaxKernel", "MorganCosineKernel",
    "SmilesSpectrumKernel", "molecular_formula",
]


def molecular_formula(mol):
    """Molecular formula (Hill order, e.g. ``"C7H10O2"``) of a SMILES string or molecule."""
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula

    return CalcMolFormula(to_mol(mol))
