import numpy as np
import pytest

from sprokr._linalg import ShiftedCrossProducts, psd_eigh, psd_solve


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_shifted_cross_products_are_exact_identities(dtype):
    """Chunked, double-centred accumulation equals A^T A and A^T T computed at once."""
    rng = np.random.default_rng(0)
    # a nearly flat block with a row scale factor, like a wide-bandwidth Gaussian kernel
    A = (1.2 + 0.05 * rng.random((700, 40))) * (1 + 0.1 * rng.random((700, 1)))
    T = 0.9 + 1e-3 * rng.standard_normal((700, 7))
    acc = ShiftedCrossProducts(40, 7, dtype)
    for sl in (slice(0, 300), slice(300, 650), slice(650, 700)):
        acc.add(sl, A[sl].astype(dtype), T[sl], overwrite=False)
    AtA, AtT = acc.result()
    G = A.astype(dtype).astype(np.float64)
    err = np.abs(AtA - G.T @ G).max()
    if dtype == np.float64:
        assert err <= 1e-13 * np.diag(G.T @ G).mean()
        assert np.abs(AtT - G.T @ T).max() <= 1e-13 * np.abs(G.T @ T).max()
    else:  # the centring must beat a plain float32 product by far
        A32 = A.astype(np.float32)
        naive = np.abs((A32.T @ A32).astype(np.float64) - G.T @ G).max()
        assert err < naive / 100
        assert np.abs(AtT - G.T @ T).max() <= 1e-6 * np.abs(G.T @ T).max()
    ident = ShiftedCrossProducts(40, 700, dtype)
    ident.add(slice(0, 700), A.astype(dtype))
    np.testing.assert_allclose(ident.result()[1], G.T, rtol=1e-6)


def test_psd_eigh_threshold_and_solvers_agree():
    rng = np.random.default_rng(1)
    B = rng.standard_normal((30, 8))
    K = B @ B.T  # rank 8
    U, d = psd_eigh(K, rcond=1e-10)
    assert U.shape == (30, 8) and np.all(np.diff(d) <= 0)
    np.testing.assert_allclose(U @ np.diag(d) @ U.T, K, atol=1e-10)
    G = K @ K + 0.1 * K
    b = K @ rng.standard_normal((30, 3))  # in the range of G
    x1, x2 = psd_solve(G, b, method="cholesky"), psd_solve(G, b, method="eigh")
    np.testing.assert_allclose(K @ x1, K @ x2, atol=1e-6)  # same function, null space aside
    with pytest.raises(ValueError, match="cholesky"):
        psd_solve(G, b, method="lu")
