"""Bad inputs of the public estimators, found by an audit of fit / predict / score.

The project's standard: a ``ValueError`` or ``TypeError`` naming the argument and what was
expected, raised before any state changes; nothing the user passed is modified; no deep
library message (scikit-learn's, torch's) and no silent wrong answer.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from sprokr import IOKR
from sprokr.models import LocalKernelRidgeRegressor, NeighbourKernelRidgeRegressor


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    Y = np.c_[X @ rng.normal(size=3), X[:, 0]]
    return X, Y


# inputs with no features: nothing to measure distances on -------------------------------
@pytest.mark.parametrize("make", [
    lambda: NeighbourKernelRidgeRegressor(n_neighbors=3),
    lambda: LocalKernelRidgeRegressor(n_regions=2, m_x=10, random_state=0),
], ids=["neighbour", "local"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_vector_ridges_refuse_inputs_without_features(data, make, sparse):
    _, Y = data
    X0 = np.zeros((Y.shape[0], 0))
    if sparse:
        X0 = sp.csr_matrix(X0)
    with pytest.raises(ValueError, match=r"^X has 0 feature\(s\).*n_features >= 1"):
        make().fit(X0, Y)


def test_kernel_error_on_inputs_without_features_is_grammatical(data):
    _, Y = data
    with pytest.raises(ValueError, match=r"^X has 0 feature\(s\)"):
        IOKR().fit(np.zeros((Y.shape[0], 0)), Y)
