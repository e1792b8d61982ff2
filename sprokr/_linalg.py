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
from scipy.linalg import get_blas_funcs, lapack

from ._parallel import for_row_blocks

__all__ = ["matmul", "psd_eigh", "psd_solve", "cholesky_solve", "cholesky_solver",
           "cholesky_factor_inplace", "cholesky_factor_solve", "ShiftedCrossProducts", "DEFAULT_RCOND"]

#: default relative threshold on eigenvalues (relative to the largest one)
DEFAULT_RCOND = 1e-10


def _as_blas_operand(X):
    """``(F-ordered array, trans)`` with ``op(array) = X`` for BLAS, copying only if needed."""
    if X.flags.f_contiguous:
        return X, 0
    if X.flags.c_contiguous:
        return X.T, 1
    return np.asfortranarray(X), 0


def matmul(A, B):
    """``A @ B`` (C-ordered) through scipy's BLAS, for the large products of the solvers.

    numpy and scipy each bundle their own OpenBLAS with its own thread pool, and an
    OpenBLAS pool keeps spinning for a while after each call: a numpy product followed
    by a scipy LAPACK call (Cholesky, eigh) makes the two pools fight for the cores
    (a 200 x 200 eigh after a large numpy product: 80 ms instead of 9 ms).  The hot
    paths therefore use scipy's BLAS only (``syrk``, ``gemm``, ``potrf``, ``syevd``).
    """
    dtype = np.result_type(A.dtype, B.dtype)
    if dtype not in (np.float32, np.float64):
        return A @ B
    A, B = np.asarray(A, dtype=dtype), np.asarray(B, dtype=dtype)
    if A.ndim != 2 or B.ndim != 2 or 0 in A.shape or 0 in B.shape:
        return A @ B
    gemm = get_blas_funcs("gemm", dtype=dtype)
    # C^T = B^T A^T is what BLAS writes in Fortran order, i.e. C in C order
    a, ta = _as_blas_operand(B.T)
    b, tb = _as_blas_operand(A.T)
    return gemm(1.0, a, b, trans_a=ta, trans_b=tb).T


def psd_eigh(K, rcond=DEFAULT_RCOND, lower_only=False):
    """Eigenpairs ``(U, d)`` of a symmetric PSD matrix, keeping ``d > rcond * max(d)``.

    Parameters
    ----------
    K : ndarray of shape (m, m)
    rcond : float
        Relative threshold; eigenvalues below ``rcond * d_max`` are treated as zero.
    lower_only : bool
        Only the lower triangle of ``K`` is meaningful (otherwise ``K`` is symmetrised,
        since accumulated sums drift).

    Returns
    -------
    U : ndarray of shape (m, r)
        Orthonormal eigenvectors, by decreasing eigenvalue.
    d : ndarray of shape (r,)
        The kept eigenvalues, decreasing, all > 0.  ``r`` is the numerical rank.
    """
    K = np.asarray(K)
    Ks = K if lower_only else (K + K.T) * 0.5
    # divide and conquer: faster than the default MRRR driver at every size measured
    # (100 x 100: 2 ms vs 5 ms; large matrices: several times)
    d, U = sla.eigh(Ks, lower=True, driver="evd", check_finite=False)
    d, U = d[::-1], U[:, ::-1]
    dmax = d[0] if d.size else 0.0
    if not dmax > 0:
        return U[:, :0], d[:0]
    keep = d > rcond * dmax
    return np.ascontiguousarray(U[:, keep]), d[keep]


def cholesky_factor_inplace(A):
    """Lower Cholesky factor of a symmetric positive definite ``A``, computed in place.

    LAPACK ``potrf`` in ``A``'s precision (float32 or float64) on its lower triangle in
    Fortran order; a C-ordered ``A`` is read as its transpose, which is only right because
    ``A`` is symmetric.  ``A`` is overwritten (no m x m copy, unlike ``scipy.linalg.
    cho_factor``).  Returns the factor (a view of ``A``'s memory); raises
    ``numpy.linalg.LinAlgError`` if ``A`` is numerically indefinite.
    """
    potrf = lapack.get_lapack_funcs("potrf", (A,))
    L, info = potrf(A.T if A.flags.c_contiguous else A, lower=1, overwrite_a=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"matrix not positive definite (leading minor {info})")
    return L


def cholesky_factor_solve(L, B):
    """``(L L^T)^-1 B`` for a lower factor from :func:`cholesky_factor_inplace`."""
    X, info = lapack.get_lapack_funcs("potrs", (L,))(L, B, lower=1)
    if info != 0:  # pragma: no cover - only for malformed arguments
        raise ValueError(f"LAPACK potrs failed (info={info})")
    return X


def cholesky_solve(G, B, rcond=DEFAULT_RCOND, overwrite=False):
    """``(G + shift I)^-1 B`` by Cholesky, reading the lower triangle of ``G`` only.

    The relative shift ``rcond * mean(diag(G))`` regularises numerically singular ``G``.
    ``overwrite=True`` lets a Fortran-ordered float64 ``G`` be factorised in place (saves
    an m x m copy).  Raises ``numpy.linalg.LinAlgError`` if ``G`` is numerically
    indefinite.
    """
    m = G.shape[0]
    shift = rcond * float(np.mean(np.diag(G))) if G.size else 0.0
    # LAPACK's layout, factorised in place; OpenBLAS potrf/potrs directly (scipy's
    # cho_factor copies C-ordered input once more and checks both triangles for nothing)
    Gs = G if overwrite and G.flags.f_contiguous and G.dtype == np.float64 else np.array(G, np.float64, order="F")
    Gs.flat[:: m + 1] += shift
    return cholesky_factor_solve(cholesky_factor_inplace(Gs), B)


def cholesky_solver(G, rcond=DEFAULT_RCOND, lower_only=False):
    """Return a function ``B -> G^+ B`` for a PSD ``G`` (Cholesky with a relative shift).

    The shift is ``rcond * mean(diag(G))``.  If Cholesky still fails (numerically
    indefinite ``G``), fall back to the eigendecomposition pseudo-inverse.  ``G`` is not
    modified; with ``lower_only=True`` only its lower triangle is read.
    """
    G = np.asarray(G, dtype=np.float64)
    m = G.shape[0]
    shift = rcond * float(np.mean(np.diag(G))) if G.size else 0.0
    Gs = np.array(G, order="F")
    Gs.flat[:: m + 1] += shift
    try:
        L = cholesky_factor_inplace(Gs)
    except np.linalg.LinAlgError:
        U, d = psd_eigh(G, rcond, lower_only=lower_only)
        return lambda B: matmul(U, matmul(U.T, B) / d[:, None].astype(U.dtype))
    return lambda B: cholesky_factor_solve(L, B)


def psd_solve(G, B, rcond=DEFAULT_RCOND, method="cholesky", lower_only=False):
    """``G^+ B`` for symmetric PSD ``G`` of shape (m, m) and ``B`` of shape (m, k).

    ``method="cholesky"`` (default) uses :func:`cholesky_solver`; ``method="eigh"`` uses the
    eigendecomposition pseudo-inverse with relative threshold ``rcond``.  With
    ``lower_only=True`` only the lower triangle of ``G`` is read.
    """
    if method == "eigh":
        U, d = psd_eigh(G, rcond, lower_only=lower_only)
        return matmul(U, matmul(U.T, B) / d[:, None].astype(U.dtype))
    if method == "cholesky":
        return cholesky_solver(G, rcond, lower_only=lower_only)(B)
    raise ValueError(f"method must be 'cholesky' or 'eigh', got {method!r}")


class ShiftedCrossProducts:
    """Accumulate ``A^T A`` and ``A^T T`` over row chunks, accurately in float32.

    Kernel blocks are often far from centred (a Gaussian kernel with a wide bandwidth is
    ~constant, and rows differ by a scale factor), and the rounding error of a float32
    ``A^T A`` scales with ``|A|^2``.  Each chunk is double-centred,
    ``A = A_c + 1 c^T + r 1^T = A_c + Q P^T`` with ``c`` the column means of the first
    chunk, ``r`` the row means of ``A - 1 c^T``, ``Q = [1, r]`` (n x 2), ``P = [c, 1]``
    (m x 2).  Then, exactly,

        A^T A = A_c^T A_c + S P^T + P S^T + P (Q^T Q) P^T,      S = A_c^T Q
        A^T T = A_c^T T_c + S_1 d^T + P (Q^T T),                T_c = T - 1 d^T

    The large products run in the working dtype on blocks ~200x smaller than ``A``
    (Bibtex: float32 error 1e-10 of the diagonal instead of 2e-9 with column centring
    only, 4e-8 without); the thin corrections are float64.  ``A_c^T A_c`` is one BLAS
    ``syrk`` per chunk into the lower triangle of a Fortran-ordered accumulator (half the
    flops of a GEMM, no temporaries); the centring passes run on row blocks in parallel.
    ``T=None`` means ``T = I_n`` (then ``A^T T = A^T``, stored as is).
    """

    def __init__(self, m, width, dtype, target_dtype=None):
        self.dtype = np.dtype(dtype)
        self.AtA = np.zeros((m, m), dtype=self.dtype, order="F")  # lower triangle only
        self.AtT = np.zeros((m, width), dtype=self.dtype)
        self.S = np.zeros((m, 2))  # A_c^T [1, r]
        self.QQ = np.zeros((2, 2))  # [1, r]^T [1, r]
        self.QT = None  # [1, r]^T T
        self.c = self.d = None
        self.identity_targets = False
        self._syrk = get_blas_funcs("syrk", dtype=self.dtype)

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
        Ac = A if overwrite and A.flags.c_contiguous else np.array(A, order="C")
        c_w = self.c.astype(A.dtype)
        r_w = np.empty(A.shape[0], dtype=A.dtype)

        def centre(rows):
            block = Ac[rows]
            np.subtract(block, c_w, out=block)
            r_w[rows] = block.mean(axis=1, dtype=np.float64)
            block -= r_w[rows, None]

        for_row_blocks(centre, A.shape[0], A.size)
        r = r_w.astype(np.float64)
        Q = np.stack([np.ones_like(r_w), r_w], axis=1)
        self.S += matmul(Ac.T, Q).astype(np.float64)  # one pass: column sums and A_c^T r
        self.QQ += [[r.size, r.sum()], [r.sum(), r @ r]]
        Aw = Ac.astype(self.dtype, copy=False)
        # AtA += Aw^T Aw: Aw^T is the Fortran-ordered view, syrk writes the lower triangle
        res = self._syrk(1.0, Aw.T, beta=1.0, c=self.AtA, trans=0, lower=1, overwrite_c=1)
        if not np.shares_memory(res, self.AtA):  # pragma: no cover - f2py made a copy
            self.AtA = res
        if T is not None:
            T = np.asarray(T, dtype=np.float64)
            self.QT[0] += T.sum(axis=0)
            self.QT[1] += r @ T
            self.AtT += matmul(Aw.T, (T - self.d).astype(self.dtype, copy=False))

    def result(self, lower_only=False, plus=None):
        """``(A^T A + plus, A^T T)`` in float64 (a fresh array; ``plus`` optional, (m, m)).

        With ``lower_only=True`` ``A^T A`` is Fortran-ordered and only its lower triangle
        is meaningful (what a Cholesky factorization reads); otherwise it is symmetric.
        ``plus`` (e.g. the ridge term) is added in the same pass as the float64 cast.
        """
        P = np.stack([self.c, np.ones_like(self.c)], axis=1)  # (m, 2)
        AtA = np.empty(self.AtA.shape, dtype=np.float64, order="F")
        if plus is None:
            np.copyto(AtA, self.AtA)
        else:
            np.add(self.AtA, plus, out=AtA, dtype=np.float64)  # the float64 loop
        # S P^T + P S^T + P QQ P^T = W M W^T, W = [S, P], M = [[0, I], [I, QQ]]: one GEMM
        W = np.hstack([self.S, P])
        M = np.block([[np.zeros((2, 2)), np.eye(2)], [np.eye(2), self.QQ]])
        gemm = get_blas_funcs("gemm", dtype=np.float64)
        res = gemm(1.0, W @ M, W, trans_b=1, beta=1.0, c=AtA, overwrite_c=1)
        if not np.shares_memory(res, AtA):  # pragma: no cover
            AtA = res
        if not lower_only:
            AtA = np.tril(AtA) + np.tril(AtA, -1).T
        if self.identity_targets:
            return AtA, self.AtT.astype(np.float64, copy=False)
        AtT = self.AtT.astype(np.float64)  # a copy: result() may be called again
        AtT += self.S[:, :1] * self.d[None, :]
        AtT += P @ self.QT
        return AtA, AtT
