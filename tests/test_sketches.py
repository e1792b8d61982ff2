import numpy as np
import pytest

from sprokr.kernels import GaussianKernel
from sprokr.numerics import SketchedFeatures
from sprokr.sketches import (
    PSG,
    PSR,
    Accumulation,
    CountSketch,
    GaussianSketch,
    IdentitySketch,
    SubSample,
)

N = 24
SKETCHES = [
    SubSample(6),
    SubSample(6, probabilities=np.arange(1, N + 1)),
    GaussianSketch(6),
    PSR(6, p=0.3),
    PSG(6, p=0.3),
    Accumulation(6, m_acc=3),
    CountSketch(6),
    IdentitySketch(),
]


@pytest.mark.parametrize("sketch", SKETCHES, ids=lambda s: repr(s))
def test_expected_gram_of_sketch_is_identity(sketch):
    rng = np.random.default_rng(0)
    draws = 4000
    acc = np.zeros((N, N))
    for _ in range(draws):
        R = sketch.draw(N, rng).toarray()
        acc += R.T @ R
    acc /= draws
    # Monte Carlo error ~ 1/sqrt(draws) per entry
    assert np.abs(acc - np.eye(N)).max() < 0.12


@pytest.mark.parametrize("sketch", SKETCHES, ids=lambda s: repr(s))
def test_decomposition_trick_equals_dense_product(sketch, rng):
    X = rng.standard_normal((N, 3))
    k = GaussianKernel(gamma=0.5)
    R = sketch.draw(N, np.random.default_rng(3))
    K = k(X)
    feats = SketchedFeatures(k, R, X[R.indices], np.float64, 1e-12)
    np.testing.assert_allclose(feats.block(X[:7]), K[:7] @ R.toarray().T, atol=1e-12)
    # R K R^T from the gathered rows equals the dense sandwich
    rows = feats.block(X[R.indices])
    np.testing.assert_allclose(R.sandwich_from_rows(rows), R.toarray() @ K @ R.toarray().T, atol=1e-10)


def test_psparsified_only_keeps_non_null_columns():
    R = PSR(20, p=0.01).draw(1000, 0)
    dense = R.toarray()
    nonnull = np.flatnonzero(np.abs(dense).sum(0))
    np.testing.assert_array_equal(nonnull, R.indices)
    # E[m'] = n (1 - (1 - p)^m) ~ 182: far fewer kernel columns than n
    assert 100 < R.indices.size < 280


def test_same_seed_same_sketch_and_bad_parameters():
    a = PSG(10, p=0.2).draw(50, 7).toarray()
    b = PSG(10, p=0.2).draw(50, 7).toarray()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, PSG(10, p=0.2).draw(50, 8).toarray())
    with pytest.raises(ValueError, match="larger than the number of samples"):
        SubSample(60).draw(50)
    with pytest.raises(ValueError, match=">= 1"):
        GaussianSketch(0).draw(50)
    for p in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"\(0, 1\]"):
            PSR(5, p=p).draw(50)
    with pytest.raises(ValueError, match="probabilities"):
        SubSample(5, probabilities=np.ones(3)).draw(50)
