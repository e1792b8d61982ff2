"""The ridge systems ``(G0 + n lam Kt) gamma = B`` a lam path solves for many ``lam``, and their
validation losses (see :mod:`sprokr.model_selection` for the two routes)."""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ..numerics import (DEFAULT_RCOND, Whitening, cholesky_factor_inplace, cholesky_solver, matmul, psd_eigh,
                        triangular_gram)

__all__ = ["EIGH_COST", "LOW_RANK_FRACTION", "gram_eigh"]

#: time of an m x m symmetric eigendecomposition (LAPACK ``syevd``) in units of a Cholesky
#: factorisation (``potrf``) of the same matrix, for ``method="auto"``.  Measured 8-30 on the
#: shared 2-core development machine (m = 300 ... 2250, depending on size and load); 12
#: reproduces the measured parity of the two routes on Bibtex SISOKR (m = 2250, 13 lams).
EIGH_COST = 12.0


#: a Gram whose numerical rank is at most this fraction of its order is diagonalised through
#: its rank (:func:`gram_eigh`): at 8000 QM9 SMILES the 4-gram spectrum kernel has rank 3117,
#: and the route takes ~10 s where ``syevd`` takes 42 s (its tridiagonal reduction is bound
#: by memory bandwidth, the rank route is BLAS-3)
LOW_RANK_FRACTION = 0.5


def gram_eigh(G: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(s, W, complete)``: eigenpairs of a symmetric PSD Gram ``G`` (m x m), ``G = W diag(s) W^T``.

    A pivoted Cholesky factorisation (LAPACK ``pstrf`` stopped at ``G``'s rounding level,
    ``m eps max(diag G)``, the size of ``syevd``'s own eigenvalue errors) gives the numerical
    rank ``r``.  When ``r <= LOW_RANK_FRACTION m``: ``G = Z Z^T`` (``Z`` m x r), ``Z = Q R``
    (QR), ``R R^T = V diag(s) V^T`` and ``W = Q V`` (m x r, orthonormal columns):
    ``complete`` is False and the orthogonal complement of ``W`` is ``G``'s null space
    (eigenvalue 0, never formed).  Otherwise the full ``syevd`` (``complete`` True).  The
    factorisation is skipped when an evenly spaced principal submatrix of order
    ``k = LOW_RANK_FRACTION m + 1`` has full rank (then ``G``'s rank is at least ``k``):
    a ``k^3 / 3`` test, 1/8 of the factorisation it spares a full-rank Gram.

    Parameters
    ----------
    G : ndarray of shape (m, m)
        A symmetric positive semi-definite Gram matrix.

    Returns
    -------
    s : ndarray of shape (r,)
        The eigenvalues, ascending.
    W : ndarray of shape (m, r)
        The eigenvectors (orthonormal columns).
    complete : bool
        Whether ``W`` is square (``r = m``); when False the orthogonal complement of ``W``
        is ``G``'s null space.
    """
    m = G.shape[0]
    k = int(LOW_RANK_FRACTION * m) + 1
    if m >= 64 and k < m:  # (small Grams: the full eigh costs less than the rank test)
        probe = np.linspace(0, m - 1, k).astype(np.intp)
        if Whitening(G[np.ix_(probe, probe)]).rank < k:
            w = Whitening(G)
            if 0 < w.rank <= LOW_RANK_FRACTION * m:
                Qz, Rz = sla.qr(w.own_rows(), mode="economic", overwrite_a=True, check_finite=False)
                s, V = sla.eigh(triangular_gram(Rz, lower=False), lower=False, driver="evd", check_finite=False)
                return s, matmul(Qz, V), False
    s, U = sla.eigh(G, driver="evd", check_finite=False)
    return s, U, True


def symmetric(M, overwrite=False):
    """``(M + M^T) / 2`` in float64; ``overwrite``: in ``M`` itself when it is a square float64
    array (block pairs averaged in turn: no second m x m array, 512 MB at m = 8000)."""
    if overwrite and isinstance(M, np.ndarray) and M.dtype == np.float64 and M.ndim == 2 \
            and M.shape[0] == M.shape[1]:
        b = 512
        for i in range(0, M.shape[0], b):
            D = M[i:i + b, i:i + b]
            D += D.T.copy()
            D *= 0.5
            for j in range(i + b, M.shape[0], b):
                A = M[i:i + b, j:j + b]
                A += M[j:j + b, i:i + b].T
                A *= 0.5
                M[j:j + b, i:i + b] = A.T
        return M
    M = np.asarray(M, dtype=np.float64)
    S = M + M.T  # one new m x m array (an n x n Gram for exact inputs), scaled in place
    S *= 0.5
    return S


class RidgeSystem:
    """``(G0 + n lam Kt) gamma = B`` for many ``lam`` (``Kt`` None: the identity).

    ``groups``: ``[(e, columns)]`` -- columns of ``B`` solved with ``lam / e`` (kernel
    machines with an output matrix; the other columns are 0).  ``B`` None: the identity.
    ``memo``: ``memo(compute) -> compute()`` or a kept result, for the eigendecomposition of
    ``G0`` (``Kt = I``), which depends on the input side only (a selection shares it between
    output kernels, see :class:`~sprokr.model_selection.SelectionCache`).
    ``overwrite_G0``: ``G0`` is the caller's own temporary, symmetrised in place.
    """

    def __init__(self, n, G0, B, Kt=None, groups=None, rcond=DEFAULT_RCOND, shift=False, memo=None,
                 overwrite_G0=False):
        self.n, self.G0 = int(n), symmetric(G0, overwrite_G0)
        self.Kt = None if Kt is None else symmetric(Kt)
        self.B = None if B is None else np.asarray(B, dtype=np.float64)
        self.m = self.G0.shape[0]
        self.p = self.m if self.B is None else self.B.shape[1]
        self.groups = groups if groups is not None else [(1.0, np.arange(self.p))]
        if self.Kt is not None and len(self.groups) > 1:
            raise ValueError("column groups are only supported with Kt = I")
        self.rcond, self.shift = rcond, shift
        self.eig = None  # (W, alpha, beta, lam0): G(lam)^-1 = W diag(1/(alpha + n (lam - lam0) beta)) W^T
        # (+ (I - W W^T) / (n lam) when W spans G0's range only: see rest)
        self.complete = True
        self.memo = memo if memo is not None else (lambda compute: compute())

    def targets(self, cols=None):
        B = np.eye(self.m) if self.B is None else self.B
        return B if cols is None else B[:, cols]

    def matrix(self, lam):
        if self.Kt is None:
            G = self.G0.copy()
            G.flat[:: self.m + 1] += self.n * lam
            return G
        G = np.multiply(self.Kt, self.n * lam)
        G += self.G0
        return G

    # ---- the eigen route
    def factorize(self, lams):
        """One factorisation for the grid (see the module docstring).

        With a sketch, ``G(lam0)`` is factorised at the smallest ``lam0`` of ``lams`` whose
        Cholesky factorisation succeeds; smaller values (where a refit falls back to a
        pseudo-inverse too) are solved directly (:meth:`covers`).
        """
        if self.Kt is None:
            s, U, self.complete = self.memo(lambda: gram_eigh(self.G0))
            self.eig = (U, np.maximum(s, 0.0), 1.0, 0.0)
            return self
        for lam0 in np.sort(np.asarray(lams, dtype=np.float64)):
            G = self.matrix(lam0)
            shift = self.rcond * float(np.mean(np.diag(G))) if self.shift and self.m else 0.0
            G.flat[:: self.m + 1] += shift  # the explicit jitter of the refits' Cholesky route
            try:
                L = np.tril(cholesky_factor_inplace(np.asfortranarray(G)))
            except np.linalg.LinAlgError:
                continue
            M = sla.solve_triangular(L, sla.solve_triangular(L, self.Kt, lower=True, check_finite=False).T,
                                     lower=True, check_finite=False)  # L^-1 Kt L^-T
            kappa, E = sla.eigh(symmetric(M), driver="evd", check_finite=False)
            W = sla.solve_triangular(L, E, lower=True, trans="T", check_finite=False)
            self.eig = (np.ascontiguousarray(W), 1.0, np.maximum(kappa, 0.0), float(lam0))
            return self
        return self  # no lam factorises: every value is solved directly

    def covers(self, lam):
        """True when ``lam`` is served by the factorisation."""
        return self.eig is not None and lam >= self.eig[3]

    def solver(self, lam):
        """``B -> G(lam)^-1 B``: the direct solve of a refit on the normal equations (Cholesky,
        :func:`~sprokr.numerics.cholesky_solver`; pseudo-inverse fallback)."""
        G = self.matrix(lam)
        if self.shift:  # the explicit jitter of the refits' Cholesky route
            G.flat[:: self.m + 1] += self.rcond * float(np.mean(np.diag(G))) if self.m else 0.0
            return cholesky_solver(G, self.rcond)
        try:  # G is this call's own copy: factorised in place (no second m x m array; G is
            # symmetric, so its transpose is the Fortran-ordered array LAPACK works on)
            cho = sla.cho_factor(G.T, lower=True, overwrite_a=True, check_finite=False)
        except np.linalg.LinAlgError:
            U, d = psd_eigh(self.matrix(lam), self.rcond)  # G was overwritten by the failed attempt
            return lambda B: matmul(U, matmul(U.T, B) / d[:, None])
        return lambda B: sla.cho_solve(cho, B, check_finite=False)

    def phi(self, lam):
        W, alpha, beta, lam0 = self.eig
        return 1.0 / (alpha + (self.n * (lam - lam0)) * beta)

    def rest(self, lam):
        """``c``: ``G(lam)^-1 = W diag(phi(lam)) W^T + c (I - W W^T)`` (0 when ``W`` is complete;
        else ``1 / (n lam)``, the inverse on ``G0``'s null space).  Every use applies ``c`` to
        a block projected on the null space once (``X - (X W) W^T``): expanding the
        product instead would cancel terms of size ``c |X|`` (1e5 at lam = 1e-7)."""
        return 0.0 if self.complete else 1.0 / (self.n * lam)

    # ---- solutions
    def coef(self, lam):
        """``gamma(lam)`` (m, p)."""
        out = np.zeros((self.m, self.p))
        for e, cols in self.groups:
            if self.covers(lam / e):
                W, T, c = self.eig[0], self.targets(cols), self.rest(lam / e)
                WT = matmul(W.T, T)
                out[:, cols] = matmul(W, self.phi(lam / e)[:, None] * WT)
                if c:
                    out[:, cols] += c * (T - matmul(W, WT))
            else:
                out[:, cols] = self.solver(lam / e)(self.targets(cols))
        return out

    def cost(self, method, n_lams, n_val, quad):
        """Flop estimate of scoring ``n_lams`` values on ``n_val`` validation samples."""
        m, p, L = float(self.m), float(self.p), n_lams * len(self.groups)
        if method == "cholesky":
            per = m**3 / 3 + (4 * m * m * n_val if quad else 2 * m * m * p + 2 * n_val * m * p)
            return L * per
        once = EIGH_COST * m**3 / 3 + (2 * m**3 if self.Kt is not None else 0.0)  # + Cholesky, 3 trsm
        once += 2 * m * m * (m if quad else p) + 2 * n_val * m * m
        return once + L * (2 * n_val * m * m if quad else 2 * n_val * m * p)


class Validation:
    """What scoring a path needs on the validation pairs, in the system's coordinates.

    ``Q`` (n_val, m): validation rows of the system (kernel block against the support).
    Direct: ``loss(H)`` per sample from the coordinates ``H = Q gamma`` (n_val, p).
    Quadratic (outputs without sketch, ``p = n``): ``Syy = B^T K_y B`` (m, m), ``Cv = B^T
    k_y(Y, y_val)`` (m, n_val) and ``kyy``: ``loss = h^T Syy h - 2 h^T c + k(y, y)``.
    """

    def __init__(self, Q, loss=None, quad=None):
        self.Q, self.loss, self.quad = Q, loss, quad

    @property
    def n(self):
        return self.Q.shape[0]


def path_losses(system, val, lams, method):
    """Mean validation loss of every ``lam`` (the route's factorisation reused)."""
    out = np.empty(len(lams))
    Q = val.Q
    eig = method == "eigh" and system.eig is not None
    if eig:
        W = system.eig[0]
        P = matmul(Q, W)  # the validation block in the eigenbasis, once
        if val.quad is not None:
            Syy, Cv, kyy = val.quad
            S = matmul(W.T, matmul(Syy, W))
            Cw = matmul(W.T, Cv)
            if not system.complete:  # h = U W^T + c Qn, Qn = Q (I - W W^T): its terms, once
                Qn = Q - matmul(P, W.T)
                QS = matmul(Qn, Syy)
                A, q2, qc = matmul(QS, W), np.einsum("ij,ij->i", QS, Qn), np.einsum("ij,ji->i", Qn, Cv)
        else:
            Z = [(e, cols, matmul(W.T, system.targets(cols))) for e, cols in system.groups]
            if not system.complete:  # Q (I - W W^T) T, once
                QT = [matmul(Q, system.targets(cols)) - matmul(P, Zc) for _, cols, Zc in Z]
    for i, lam in enumerate(lams):
        if val.quad is not None:
            Syy, Cv, kyy = val.quad
            if eig and system.covers(lam):
                c = system.rest(lam)
                U = P * system.phi(lam)
                per = np.einsum("ij,ij->i", matmul(U, S), U) - 2 * np.einsum("ij,ji->i", U, Cw) + kyy
                if c:
                    per += 2 * c * np.einsum("ij,ij->i", U, A) + c * c * q2 - 2 * c * qc
            else:
                b = system.solver(lam)(np.ascontiguousarray(Q.T))  # (m, n_val)
                per = np.einsum("ij,ij->j", b, matmul(Syy, b)) - 2 * np.einsum("ij,ij->j", b, Cv) + kyy
        elif eig and all(system.covers(lam / e) for e, _ in system.groups):
            H = np.zeros((val.n, system.p))
            for g, (e, cols, Zc) in enumerate(Z):
                c = system.rest(lam / e)
                H[:, cols] = matmul(P * system.phi(lam / e), Zc)
                if c:
                    H[:, cols] += c * QT[g]
            per = val.loss(H)
        else:
            per = val.loss(matmul(Q, system.coef(lam)))
        out[i] = float(np.mean(per))
    return out
