"""The whitened basis of the sketched ridge: ``gamma = P_r L_11^-T w``.

The sketched ridge minimises ``|A gamma - T|^2 + n lam gamma^T K~ gamma`` with
``A = K R^T`` (n x m) and ``K~ = R K R^T`` (m x m).  The pivoted Cholesky factorisation
``P^T K~ P = L L^T`` (LAPACK ``pstrf``, stopped at the rounding level of ``K~``: rank
``r``) gives the function space ``gamma = P_r L_11^-T w`` on which the penalty is
``|w|^2``; directions of ``K~``'s numerical null space define the zero function.  In
that basis the problem is the ridge regression of ``T`` on ``Z = A P_r L_11^-T``
(n x r), whose matrix ``Z^T Z + n lam I`` has the condition number
``1 + |Z|_2^2 / (n lam) <= 1 + trace(K) / (n lam)`` -- never the square of ``A``'s.

``Z`` is formed row by row (a triangular solve of each chunk of ``A``'s rows: backward
stable per row, and the factor of a *pivoted* Cholesky solves far more accurately than
its condition number suggests), so no squared condition number appears anywhere; its
Gram ``Z^T Z`` then merges over chunks by addition like every other accumulator
(:class:`sprokr.numerics.ShiftedCrossProducts` with ``whiten=``).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
from scipy.linalg import get_blas_funcs, lapack

from ._linalg import factorisation_threads, matmul, triangular_gram

__all__ = ["Whitening", "pivot_tolerance", "solve_lower_rows", "triangular_basis"]


def pivot_tolerance(Kt: np.ndarray, rcond: float | None) -> float:
    """Absolute pivot tolerance of the pivoted Cholesky of ``K~ = R K R^T`` (m x m).

    ``rcond=None``: LAPACK's default, ``m eps max(diag K~)`` -- the rounding level of
    ``K~``: pivots below it carry no information.  Otherwise ``rcond max(diag K~)``.

    Parameters
    ----------
    Kt : ndarray of shape (m, m)
        ``K~ = R K R^T`` (its diagonal is read).
    rcond : float or None
        Relative pivot threshold; None: LAPACK's default.
    """
    dmax = float(np.max(np.diag(Kt), initial=0.0))
    rel = Kt.shape[0] * np.finfo(np.float64).eps if rcond is None else float(rcond)
    return rel * dmax


class Whitening:
    """``gamma = P_r L_11^-T w`` from the pivoted Cholesky factorisation of ``K~`` (m x m).

    Parameters
    ----------
    Kt : ndarray (m, m)
        ``K~ = R K R^T``, symmetric PSD (one triangle is read: the lower one of a
        Fortran-ordered array, the upper one of a C-ordered float64 array).
    rcond : float or None
        Relative pivot threshold (:func:`pivot_tolerance`).

    Attributes
    ----------
    m : int
        Columns of ``A`` (the sketch size).
    rank : int
        ``r``, the numerical rank of ``K~``.
    tol : float
        The absolute pivot tolerance the factorisation stopped at (:func:`pivot_tolerance`).
    sel : ndarray (r,) of int
        The pivot columns ``P_r`` (positions among the m columns of ``A``).
    L : ndarray (r, r), float64, Fortran order
        ``L_11`` in the lower triangle (the strict upper triangle is not meaningful: every
        use reads the lower one only).
    """

    def __init__(self, Kt: np.ndarray, rcond: float | None = None) -> None:
        # pstrf reads the lower triangle only: one Fortran copy, no symmetrised temporaries.
        # A C-ordered K~ is copied as its transpose (a straight copy of memory, 4-8x faster
        # than reordering 40 MB at m = 2250): K~ is symmetric, so pstrf then reads its upper
        # triangle -- the same values up to the rounding of a non-symmetric evaluation
        Kt = np.asarray(Kt)
        if Kt.ndim == 2 and Kt.dtype == np.float64 and Kt.flags.c_contiguous and not Kt.flags.f_contiguous:
            Ks = np.array(Kt.T, order="F")
        else:
            Ks = np.array(Kt, dtype=np.float64, order="F")
        self.m = Ks.shape[0]
        self.tol = pivot_tolerance(Ks, rcond)
        with factorisation_threads(self.m):
            c, piv, r, info = lapack.dpstrf(Ks, tol=self.tol, lower=1, overwrite_a=1)
        if info < 0:  # pragma: no cover - malformed arguments
            raise ValueError(f"LAPACK pstrf failed (info={info})")
        self.rank = int(r) if self.m else 0
        self.perm = np.asarray(piv - 1, dtype=np.intp)
        self.sel = self.perm[: self.rank]
        self._factor = c  # P^T K~ P = F F^T with F = c[:, :r] (lower trapezoid)
        self.L = np.asfortranarray(c[: self.rank, : self.rank])
        self._cast: dict[Any, np.ndarray] = {}

    def __getstate__(self):  # the cast factors are a cache, the full factor is not needed: never shipped
        state = dict(self.__dict__)
        state["_cast"], state["_factor"] = {}, None
        return state

    def _full_factor(self) -> np.ndarray:
        """``F`` with ``K~``'s entries above it (m x m), kept in the process that factorised."""
        if self._factor is None:
            raise ValueError("this whitening is a copy without its pivoted factor (never shipped): use the "
                             "whitening of the process that computed it")
        return self._factor

    def columns(self, A: np.ndarray) -> np.ndarray:
        """``A P_r``: the pivot columns of a block (rows x m), a fresh C-ordered array."""
        return np.take(np.asarray(A), self.sel, axis=1)

    def solve_rows(self, Ac: np.ndarray, overwrite: bool = False) -> np.ndarray:
        """``Ac L_11^-T`` (rows x r, C order) by a triangular solve in ``Ac``'s precision.

        ``Ac`` is C-ordered (rows x r): its transpose is the Fortran-ordered right-hand
        side of ``L_11 Z^T = Ac^T`` (BLAS ``trsm``, no copy); with ``overwrite`` it is
        solved in place.
        """
        Ac = np.asarray(Ac)
        dtype = Ac.dtype if Ac.dtype in (np.float32, np.float64) else np.dtype(np.float64)
        if Ac.shape[0] == 0 or self.rank == 0:
            return np.zeros((Ac.shape[0], self.rank), dtype=dtype)
        B = Ac if overwrite and Ac.flags.c_contiguous and Ac.dtype == dtype else np.array(Ac, dtype=dtype, order="C")
        L = self._cast.get(dtype)
        if L is None:
            L = self._cast[dtype] = np.asfortranarray(self.L, dtype=dtype)
        return solve_lower_rows(B, L)

    def apply_inverse(self, P: np.ndarray) -> np.ndarray:
        """``L_11^-1 P[sel]`` (r x k) for ``P`` (m x k) in float64: a shift in the whitened basis."""
        P = np.asarray(P, dtype=np.float64)
        if self.rank == 0:
            return np.zeros((0,) + P.shape[1:])
        return sla.solve_triangular(self.L, P[self.sel], lower=True, check_finite=False)

    def coefficients(self, w: np.ndarray) -> np.ndarray:
        """``gamma = P_r L_11^-T w`` (m x p) from whitened coefficients ``w`` (r x p)."""
        w = np.asarray(w, dtype=np.float64)
        gamma = np.zeros((self.m,) + w.shape[1:])
        if self.rank:
            gamma[self.sel] = sla.solve_triangular(self.L, w, lower=True, trans="T", check_finite=False)
        return gamma

    def basis(self) -> np.ndarray:
        """``B = P_r L_11^-T`` (m x r, float64), the whitening basis: ``B^T K~ B = I_r``
        (:func:`triangular_basis`)."""
        return triangular_basis(self.sel, self.L, self.m)

    def dropped(self) -> tuple[np.ndarray, np.ndarray]:
        """``(D, M)``: the m - r columns the factorisation dropped and ``M = F_D L_11^-1``
        ((m - r) x r), with ``K~[:, D] = K~[:, sel] M^T`` up to the pivot tolerance.

        A block's dropped columns are then ``A[:, D] - A[:, sel] M^T`` away from the function
        space solved in: what :func:`~sprokr.numerics.rounding_sensitivity` measures on a
        sample of rows.
        """
        D = self.perm[self.rank:]
        if D.size == 0 or self.rank == 0:
            return D, np.zeros((D.size, self.rank))
        F_D = self._full_factor()[self.rank:, : self.rank]
        M = sla.solve_triangular(self.L, np.array(F_D.T), lower=True, trans="T", check_finite=False).T
        return D, M

    def own_rows(self) -> np.ndarray:
        """``Z`` of the rows of ``K~`` itself (m x r, float64): ``K~ P_r L_11^-T = P F``.

        When ``A``'s rows at the support points are ``K~`` (sub-sampling), their whitened
        rows come with the factorisation, no triangular solve needed.
        """
        # straight from the factor into Z's permuted rows (no intermediate copy of F: every
        # fresh m x r array costs its first touch), then the strict upper triangle of F --
        # which holds K~'s own entries -- zeroed on Z's rows
        Z = np.empty((self.m, self.rank))
        Z[self.perm] = self._full_factor()[:, : self.rank]
        for i in range(self.rank - 1):  # F's row i: a contiguous slice of Z's row perm[i]
            Z[self.perm[i], i + 1:] = 0.0
        return Z

    def own_gram(self) -> np.ndarray:
        """``Z^T Z`` of the rows of ``K~`` itself (r x r, float64, Fortran order, lower
        triangle; the strict upper one is zero): ``F^T F = L_11^T L_11 + L_21^T L_21``.

        :func:`~sprokr.numerics.triangular_gram` (LAPACK ``lauum``) forms ``L_11^T L_11`` in
        ``r^3 / 6`` multiply-adds, a third of the ``syrk`` of the m x r rows of
        :meth:`own_rows` (which it never forms).
        """
        r = self.rank
        G = triangular_gram(self.L, lower=True)
        for j in range(1, r):  # L's strict upper triangle held K~'s entries
            G[:j, j] = 0.0
        if r < self.m:  # the rows beyond the rank: L_21 (m - r) x r
            syrk = get_blas_funcs("syrk", dtype=np.float64)
            res = syrk(1.0, self._full_factor()[r:, :r], trans=1, beta=1.0, c=G, lower=1, overwrite_c=1)
            if not np.shares_memory(res, G):  # pragma: no cover - f2py made a copy
                G = np.tril(res)
        return G

    def own_products(self, X: np.ndarray) -> np.ndarray:
        """``Z^T X`` for the rows of ``K~`` itself (r x k, float64) and ``X`` (m x k):
        ``F^T X[perm]``, a triangular product with ``L_11`` and a GEMM with ``L_21``."""
        X = np.asarray(X, dtype=np.float64)
        r = self.rank
        if r == 0:
            return np.zeros((0,) + X.shape[1:])
        Xp = X[self.perm]
        trmm = get_blas_funcs("trmm", dtype=np.float64)  # overwrites its Fortran copy of Xp's top rows
        out = trmm(1.0, self.L, np.asfortranarray(Xp[:r]), side=0, lower=1, trans_a=1, overwrite_b=1)
        if r < self.m:
            out += matmul(self._full_factor()[r:, :r].T, Xp[r:])
        return out

    def rows(self, A: np.ndarray) -> np.ndarray:
        """``Z = A P_r L_11^-T`` of a block (rows x m) in float64 (small blocks: tests, checks)."""
        return self.solve_rows(np.asarray(self.columns(A), dtype=np.float64), overwrite=True)


def solve_lower_rows(B: np.ndarray, L: np.ndarray) -> np.ndarray:
    """``B L^-T`` (rows x r, C order) for a C-ordered ``B`` (rows x r), solved in place.

    ``L`` (r x r, Fortran order, ``B``'s dtype) is read in its lower triangle.  ``B``'s
    transpose is the Fortran-ordered right-hand side of ``L Z^T = B^T`` (BLAS ``trsm``:
    no copy, r^2 flops per row -- half the GEMM with an explicit ``L^-T``, and backward
    stable where the product with an inverse is not).
    """
    trsm = get_blas_funcs("trsm", dtype=B.dtype)
    return trsm(1.0, L, B.T, side=0, lower=1, trans_a=0, overwrite_b=1).T


def triangular_basis(sel: np.ndarray, L: np.ndarray, m: int) -> np.ndarray:
    """``B = P_r L^-T`` (m x r, float64): rows ``sel`` hold ``L^-T``, the others are zero.

    ``L`` (r x r) is read in its lower triangle.  The triangular inverse (LAPACK
    ``trtri``, r^3/3 flops) is formed only for the users that need ``B`` as a matrix;
    the feature maps solve with ``L`` instead (:func:`solve_lower_rows`).
    """
    r = L.shape[0]
    B = np.zeros((m, r))
    if r:
        with factorisation_threads(r):
            Linv, info = lapack.dtrtri(np.array(L, dtype=np.float64, order="F"), lower=1, overwrite_c=1)
        if info != 0:  # pragma: no cover - a zero pivot (pstrf stops before one)
            raise np.linalg.LinAlgError(f"LAPACK trtri failed (info={info})")
        for j in range(1, r):  # the strict upper triangle is not the inverse's
            Linv[:j, j] = 0.0  # (contiguous column slices: faster than np.tril's masked copy)
        B[sel] = Linv.T
    return B
