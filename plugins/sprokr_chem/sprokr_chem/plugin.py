"""Entry point of sprokr-chem: registers the molecule kernels on both sides, the
``MoleculeRetriever`` estimator (for the command line and the safe model format), the
``.smi`` / ``.sdf`` file readers, the ``smiles`` / ``molecule`` column types of the command
line, the ``molecule`` depiction of figures and the molecule section of ``sprokr demo``.

Factories are lazy, so building the registry does not import RDKit.
"""
import sprokr
from sprokr.registry import lazy_factory

_KERNELS = {
    "morgan_tanimoto": "MorganTanimotoKernel",
    "morgan_count_tanimoto": "MorganCountTanimotoKernel",
    "morgan_gaussian_tanimoto": "MorganGaussianTanimotoKernel",
    "morgan_minmax": "MorganMinMaxKernel",
    "morgan_cosine": "MorganCosineKernel",
    "smiles_spectrum": "SmilesSpectrumKernel",
}


def _factories():
    return {name: lazy_factory(f"sprokr_chem.kernels:{cls}") for name, cls in _KERNELS.items()}


@sprokr.hookimpl
def sprokr_input_kernels():
    return _factories()


@sprokr.hookimpl
def sprokr_output_kernels():
    return _factories()


@sprokr.hookimpl
def sprokr_estimators():
    return {"MoleculeRetriever": lazy_factory("sprokr_chem.retriever:MoleculeRetriever")}


@sprokr.hookimpl
def sprokr_readers():
    return {"smi": lazy_factory("sprokr_chem.readers:SmilesFileReader"),
            "sdf": lazy_factory("sprokr_chem.readers:SDFReader")}


@sprokr.hookimpl
def sprokr_column_types():
    return {"smiles": lazy_factory("sprokr_chem.columns:SmilesColumn"),
            "molecule": lazy_factory("sprokr_chem.columns:MoleculeColumn")}


@sprokr.hookimpl
def sprokr_depictions():
    return {"molecule": lazy_factory("sprokr_chem.plotting:MoleculeDepiction")}


@sprokr.hookimpl
def sprokr_demos():
    return {"molecules": lazy_factory("sprokr_chem.demo:MoleculeDemo")}
