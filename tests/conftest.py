import sys

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def multilabel_data():
    """A small, learnable multi-label problem: 240 samples, 6 features, 8 labels."""
    r = np.random.default_rng(1)
    X = r.standard_normal((240, 6))
    W = r.standard_normal((6, 8))
    Y = (X @ W > 0.7).astype(np.int8)
    return X[:180], Y[:180], X[180:], Y[180:]


@pytest.fixture
def without_torch(monkeypatch):
    """This process as if torch were not installed, whether it is or not: ``import torch``
    fails and ``importlib.util.find_spec("torch")`` finds nothing (``sys.modules["torch"] =
    None``, as ``tests/test_demo.py`` hides sprokr-chem), and the registry is rebuilt without
    the torch regressors; torch and the registry are restored afterwards."""
    from sprokr.registry import reset_registry

    with monkeypatch.context() as m:
        m.setitem(sys.modules, "torch", None)
        reset_registry()
        try:
            yield
        finally:
            m.undo()
            reset_registry()


@pytest.fixture(scope="session")
def qm9_smiles_graphs():
    """The shipped QM9 sample as (SMILES list, molecular graphs); needs sprokr-chem."""
    pytest.importorskip("sprokr_chem")
    from sprokr.datasets import sample_path
    from sprokr_chem import smiles_to_graph
    from sprokr_chem.datasets import load_qm9

    smiles, _, _ = load_qm9(sample_path("qm9_sample.csv"))
    return smiles, [smiles_to_graph(s) for s in smiles]
