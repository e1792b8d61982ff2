"""The plain normal equations' pass (``solver="cholesky"`` / ``"eigh"``, ``"auto"``'s first try,
the lam paths of those routes): the support rows of ``A = K R^T`` are computed once, for
``K~ = R K R^T``, and the pass over the data skips them -- with the same sums as the dense
products, and as the pass that gathers them when their targets are not known."""
from __future__ import annotations

import numpy as np
import pytest

from sprokr.kernels import GaussianKernel
from sprokr.numerics import LocalExecutor, TargetRows, plain_system
from sprokr.sketches import PSR, Accumulation, SubSample


class CountingGaussian(GaussianKernel):
    """A Gaussian kernel that counts the kernel values it computes (one thread: no race)."""

    thread_safe = False

    def pairwise(self, A, B):
        K = super().pairwise(A, B)
        self.__dict__["evaluated"] = self.__dict__.get("evaluated", 0) + np.asarray(K).size
        return K


@pytest.mark.parametrize("sketch", [PSR(m=12, p=0.05), Accumulation(m=12, m_acc=3), SubSample(m=20)],
                         ids=["psr", "accumulation", "subsample"])
@pytest.mark.parametrize("known", [True, False], ids=["targets-known", "targets-unknown"])
def test_plain_sums_equal_dense_products_and_compute_each_kernel_value_once(sketch, known):
    rng = np.random.default_rng(0)
    n, p = 150, 3
    X = rng.normal(size=(n, 4))
    T = rng.normal(size=(n, p))
    R = sketch.draw(n, random_state=1)
    support = X[R.indices]
    kernel = CountingGaussian(gamma=0.3)
    ex = LocalExecutor()
    parts = ex.partition(X, np.arange(n), names=("inputs", "ids"))
    G, AtT, Kt = plain_system(kernel, R, support, parts, TargetRows(T), p, None, 40, ex,
                              ref_targets=T[R.indices] if known else None, which="ids")
    K = GaussianKernel(gamma=0.3)(X)
    Rd = R.toarray()
    A = K @ Rd.T
    np.testing.assert_allclose(Kt, Rd @ K @ Rd.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(G, A.T @ A, rtol=1e-10, atol=1e-10 * np.abs(A.T @ A).max())
    np.testing.assert_allclose(AtT, A.T @ T, rtol=1e-10, atol=1e-10 * np.abs(A.T @ T).max())
    m1 = R.indices.size
    if known:  # the support block once, the other rows once: n m' values
        assert kernel.evaluated == n * m1
    else:  # the pass gathers the support rows; the centring shift's support rows once more
        assert kernel.evaluated == n * m1 + min(m1, 256) * m1
