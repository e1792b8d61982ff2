"""Dense linear algebra used by every estimator: PSD factorizations and solves.

One place for the numerics the papers share:

* ``psd_eigh``: eigenpairs of a PSD matrix above a *relative* threshold -- the
  pseudo-inverse / rank-revealing step of SISOKR (``K~_Y^+``), DSOKR and the sketched
  kernel machines (``z(x) = D^-1/2 U^T R k^x``).
* ``psd_solve``: ``G^+ B`` for a PSD ``G``.  A Cholesky factorization with a relative
  diagonal shift (cost m^3/3) is tried first; if ``G`` is too ill-conditioned for it, the
  eigendecomposition route with the same relative threshold is used.  For the sketched
  ridge systems ``G = R K^2 R^T + n lam R K R^T`` the null space of ``G`` is the null space
  of ``R K R^T`` and every vector of it defines the zero function, so both routes give the
  same predictor up to the threshold; the Cholesky route is ~10x faster than ``eigh``.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

__all__ = ["psd_eigh", "psd_solve", "cholesky_solver", "ShiftedCrossProducts", "DEFAULT_RCOND"]

#: default relative threshold on eigenvalues (relative to the largest one)
DEFAULT_RCOND = 1e-10


def psd_eigh(K, rcond=DEFAULT_RCOND):
    """Eigenpairs ``(U, d)`` of a symmetric PSD matrix, keeping ``d > rcond * max(d)``.

    Parameters
    ----------
    K : ndarray of shape (m, m)
    rcond : float
        Relative threshold; eigenvalues below ``rcond * d_max`` are treated as zero.

    Returns
    -------
    U : ndarray of shape (m, r)
        Orthonormal eigenvectors, by decreasing eigenvalue.
    d : ndarray of shape (r,)
        The kept eigenvalues, decreasing, all > 0.  ``r`` is the numerical rank.
    """
    K = np.asarray(K)
    Ks = (K + K.T) * 0.5  # enforce exact symmetry (accumulated sums drift)
    if Ks.shape[0] > 500:  # divide and conquer, multi-threaded: much faster for large matrices
        d, U = sla.eigh(Ks, driver="evd", check_finite=False)
    else:
        # small matrices: right after a large BLAS call, OpenBLAS's threaded LAPACK spends
        # tens of milliseconds waking its threads, ten times the single-threaded solve
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1, user_api="blas"):
            d, U = sla.eigh(Ks, check_finite=False)
    d, U = d[::-1], U[:, ::-1]
    dmax = d[0] if d.size else 0.0
    if not dmax > 0:
        return U[:, :0], d[:0]
    keep = d > rcond * dmax
    return np.ascontiguousarray(U[:, keep]), d[keep]


def cholesky_solver(G, rcond=DEFAULT_RCOND):
    """Return a function ``B -> G^+ B`` for a PSD ``G`` (Cholesky with a relative shift).

    The shift is ``rcond * mean(diag(G))``.  If Cholesky still fails (numerically
    indefinite ``G``), fall back to the eigendecomposition pseudo-inverse.
    """
    G = np.asarray(G)
    shift = rcond * float(np.mean(np.diag(G))) if G.size else 0.0
    Gs = G.copy()
    Gs.flat[:: G.shape[0] + 1] += shift
    try:
        cf = sla.cho_factor(Gs, lower=True, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        U, d = psd_eigh(G, rcond)
        return lambda B: U @ ((U.T @ B) / d[:, None].astype(U.dtype))
    return lambda B: sla.cho_solve(cf, B, check_finite=False)


def psd_solve(G, B, rcond=DEFAULT_RCOND, method="cholesky"):
    """``G^+ B`` for symmetric PSD ``G`` of shape (m, m) and ``B`` of shape (m, k).

    ``method="cholesky"`` (default) uses :func:`cholesky_solver`; ``method="eigh"`` uses the
    eigendecomposition pseudo-inverse with relative threshold ``rcond``.
    """
    if method == "eigh":
        U, d = psd_eigh(G, rcond)
        return U @ ((U.T @ B) / d[:, None].astype(U.dtype))
    if method == "cholesky":
        return cholesky_solver(G, rcond)(B)
    raise ValueError(f"method must be 'cholesky' or 'eigh', got {method!r}")


class ShiftedCrossProducts:
    """Accumulate ``A^T A`` and ``A^T T`` over row chunks, accurately in float32.

    Kernel blocks are often far from centred (a Gaussian kernel with a wide bandwidth is
    ~constant, and rows differ by a scale factor), and the rounding error of a float32
    ``A^T A`` scales with ``|A|^2``.  Each chunk is double-centred in float64,
    ``A = A_c + 1 c^T + r 1^T = A_c + Q P^T`` with ``c`` the column means of the first
    chunk, ``r`` the row means of ``A - 1 c^T``, ``Q = [1, r]`` (n x 2), ``P = [c, 1]``
    (m x 2).  Then, exactly,

        A^T A = A_c^T A_c + S P^T + P S^T + P (Q^T Q) P^T,      S = A_c^T Q
        A^T T = A_c^T T_c + S_1 d^T + P (Q^T T),                T_c = T - 1 d^T

    The large products run in the working dtype (BLAS syrk / gemm) on blocks ~200x
    smaller than ``A`` (Bibtex: float32 error 1e-10 of the diagonal instead of 2e-9
    with column centring only, 4e-8 without); the thin corrections are float64.
    ``T=None`` means ``T = I_n`` (then ``A^T T = A^T``, stored as is).
    """

    def __init__(self, m, width, dtype, target_dtype=None):
        self.dtype = np.dtype(dtype)
        self.AtA = np.zeros((m, m), dtype=self.dtype)
        self.AtT = np.zeros((m, width), dtype=self.dtype)
        self.S = np.zeros((m, 2))  # A_c^T [1, r]
        self.QQ = np.zeros((2, 2))  # [1, r]^T [1, r]
        self.QT = None  # [1, r]^T T
        self.c = self.d = None
        self.identity_targets = False

    def add(self, sl, A, T=None, overwrite=False):
        """Add rows ``sl`` of A and T (``overwrite=True``: A may be centred in place)."""
        A = np.asarray(A)
        if self.c is None:
            # the shift is rounded to the block's dtype so that the identity uses exactly
            # the values that are subtracted
            self.c = A.mean(axis=0, dtype=np.float64).astype(A.dtype).astype(np.float64)
            if T is not None:
                self.d = T.mean(axis=0, dtype=np.float64)
                self.QT = np.zeros((2, T.shape[1]))
        if T is None:
            self.identity_targets = True
            self.AtT[:, sl] = A.T
        # centre in the block's own precision (a float32 block's rounding is already in A)
        Ac = np.subtract(A, self.c.astype(A.dtype), out=A if overwrite else None)
        r_w = Ac.mean(axis=1, dtype=np.float64).astype(A.dtype)
        r = r_w.astype(np.float64)
        Ac -= r_w[:, None]
        self.S[:, 0] += Ac.sum(axis=0, dtype=np.float64)
        self.S[:, 1] += Ac.T @ r_w
        self.QQ += [[r.size, r.sum()], [r.sum(), r @ r]]
        Aw = Ac.astype(self.dtype, copy=False)
        self.AtA += Aw.T @ Aw  # BLAS syrk
        if T is not None:
            T = np.asarray(T, dtype=np.float64)
            self.QT[0] += T.sum(axis=0)
            self.QT[1] += r @ T
            self.AtT += Aw.T @ (T - self.d).astype(self.dtype, copy=False)

    def result(self):
        """``(A^T A, A^T T)`` in float64."""
        P = np.stack([self.c, np.ones_like(self.c)], axis=1)  # (m, 2)
        AtA = self.AtA.astype(np.float64, copy=False)
        # S P^T + P S^T + P QQ P^T = W M W^T, W = [S, P], M = [[0, I], [I, QQ]]: one GEMM
        W = np.hstack([self.S, P])
        M = np.block([[np.zeros((2, 2)), np.eye(2)], [np.eye(2), self.QQ]])
        AtA += (W @ M) @ W.T
        if self.identity_targets:
            return AtA, self.AtT.astype(np.float64, copy=False)
        AtT = self.AtT.astype(np.float64, copy=False)
        AtT += self.S[:, :1] * self.d[None, :]
        AtT += P @ self.QT
        return AtA, AtT
