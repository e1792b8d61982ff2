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
