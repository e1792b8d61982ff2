"""The ridge systems ``(G0 + n lam Kt) gamma = B`` a lam path solves for many ``lam``, and their
validation losses (see :mod:`sprokr.model_selection` for the two routes)."""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ..numerics import DEFAULT_RCOND, cholesky_factor_inplace, cholesky_solver, matmul, psd_eigh

__all__ = ["EIGH_COST"]

#: time of an m x m symmetric eigendecomposition (LAPACK ``syevd``) in units of a Cholesky
#: factorisation (``potrf``) of the same matrix, for ``method="auto"``.  Measured 8-30 on the
#: shared 2-core development machine (m = 300 ... 2250, depending on size and load); 12
#: reproduces the measured parity of the two routes on Bibtex SISOKR (m = 2250, 13 lams).
EIGH_COST = 12.0


def symmetric(M):
    """``(M + M^T) / 2`` in float64."""
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
    """

    def __init__(self, n, G0, B, Kt=None, groups=None, rcond=DEFAULT_RCOND, shift=False, memo=None):
        self.n, self.G0 = int(n), symmetric(G0)
        self.Kt = None if Kt is None else symmetric(Kt)
        self.B = None if B is None else np.asarray(B, dtype=np.float64)
        self.m = self.G0.shape[0]
        self.p = self.m if self.B is None else self.B.shape[1]
        self.groups = groups if groups is not None else [(1.0, np.arange(self.p))]
        if self.Kt is not None and len(self.groups) > 1:
            raise ValueError("column groups are only supported with Kt = I")
        self.rcond, self.shift = rcond, shift
        self.eig = None  # (W, alpha, beta, lam0): G(lam)^-1 = W diag(1/(alpha + n (lam - lam0) beta)) W^T
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
            s, U = self.memo(lambda: sla.eigh(self.G0, driver="evd", check_finite=False))
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

    # ---- solutions
    def coef(self, lam):
        """``gamma(lam)`` (m, p)."""
        out = np.zeros((self.m, self.p))
        for e, cols in self.groups:
            if self.covers(lam / e):
                W = self.eig[0]
                out[:, cols] = matmul(W, self.phi(lam / e)[:, None] * matmul(W.T, self.targets(cols)))
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
        else:
            Z = [(e, cols, matmul(W.T, system.targets(cols))) for e, cols in system.groups]
    for i, lam in enumerate(lams):
        if val.quad is not None:
            Syy, Cv, kyy = val.quad
            if eig and system.covers(lam):
                U = P * system.phi(lam)
                per = np.einsum("ij,ij->i", matmul(U, S), U) - 2 * np.einsum("ij,ji->i", U, Cw) + kyy
            else:
                b = system.solver(lam)(np.ascontiguousarray(Q.T))  # (m, n_val)
                per = np.einsum("ij,ij->j", b, matmul(Syy, b)) - 2 * np.einsum("ij,ij->j", b, Cv) + kyy
        elif eig and all(system.covers(lam / e) for e, _ in system.groups):
            H = np.zeros((val.n, system.p))
            for e, cols, Zc in Z:
                H[:, cols] = matmul(P * system.phi(lam / e), Zc)
            per = val.loss(H)
        else:
            per = val.loss(matmul(Q, system.coef(lam)))
        out[i] = float(np.mean(per))
    return out
