"""Solvers of the equivalent linear problem of a (sketched) decomposable kernel machine.

p-sparsified paper, Proposition 1 and Appendix E.  With features ``Z`` (n x r) -- the
sketched feature map ``z(x) = D^-1/2 U^T R k^x``, random Fourier features, or the
Cholesky factor of ``K`` for the exact machine -- and ``M = V diag(e) V^T`` (d x d), the
problem

    min_Omega  (1/n) sum_i l(z_i^T Omega M^1/2, y_i) + lam/2 |Omega|_F^2          (E1)

is the sketched problem ``(1/n) sum l([K R^T Gamma M]_i, y_i) + lam/2 Tr(R K R^T Gamma M
Gamma^T)`` with ``Omega = D^1/2 U^T Gamma M^1/2``: the feature map ``z (x) M^1/2`` of the
paper without ever forming its (nd x rd) matrix.  Predictions are ``Z C`` with the
*output coefficients* ``C = Omega M^1/2`` (r x d) that every solver returns.

Square loss (``l = 1/2 |p - y|^2``): rotating the outputs by ``V`` decouples (E1) into one
ridge problem per eigenvalue ``e_j`` of ``M``:

    C V = [ e_j (e_j G + n lam I)^-1 (H V)_j ]_j ,   G = Z^T Z,  H = Z^T Y          (E2)

solved by Cholesky, one factorisation per distinct eigenvalue (one for ``M = I``).  With
``G = K`` and ``H = Y`` the same formula is exact kernel ridge regression
``alpha = (e K + n lam I)^-1 y~`` (the exact machine's closed form).

Other losses: Adam (Kingma & Ba, 2015) on mini-batch sub-gradients of (E1), see
:func:`adam_solve` for the stopping rule.
"""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..utils import iter_chunks
from ._linalg import cholesky_factor_inplace, cholesky_factor_solve

__all__ = ["ridge_by_eigengroups", "adam_solve", "AdamResult"]


def ridge_by_eigengroups(G, H, n, lam, V, e, overwrite_g=False):
    """Output coefficients (E2): ``C`` of shape (r, d) with predictions ``Z C``.

    Parameters
    ----------
    G : ndarray (r, r), symmetric PSD (``Z^T Z``, or ``K`` for the exact machine), float32/64
    H : ndarray (r, d) (``Z^T Y``, or ``Y``)
    n : int, number of training samples
    lam : float > 0
    V, e : eigenvectors (d, d) and eigenvalues (d,) of the output matrix ``M``
    """
    G = np.asarray(G)
    if G.dtype not in (np.float32, np.float64):
        G = G.astype(np.float64)
    # the solve runs in G's precision (float32 halves the exact machine's n^3/3 Cholesky)
    Ht = (np.asarray(H, dtype=np.float64) @ V).astype(G.dtype)  # outputs in M's eigenbasis
    Ct = np.zeros_like(Ht)
    groups = {}
    for j, ej in enumerate(e):  # equal eigenvalues share one Cholesky factorisation
        if ej > 0:
            key = next((k for k in groups if abs(k - ej) <= 1e-12 * max(k, ej)), ej)
            groups.setdefault(key, []).append(j)
    r = G.shape[0]
    eig = None
    for ej, cols in groups.items():
        if eig is None:
            try:
                inplace = overwrite_g and len(groups) == 1
                A = (G if inplace else G.copy()) if ej == 1.0 else np.multiply(G, ej, out=G if inplace else None)
                A.flat[:: r + 1] += n * lam
                L = cholesky_factor_inplace(A)
                Ct[:, cols] = ej * cholesky_factor_solve(L, Ht[:, cols])
                continue
            except np.linalg.LinAlgError:
                # G = Z^T Z is PSD in exact arithmetic; rounding (float32 features) can make
                # e G + n lam I indefinite: solve through the eigenpairs of G, clipped at 0
                if overwrite_g and len(groups) == 1:
                    raise  # G was overwritten: nothing left to fall back on
                g, U = np.linalg.eigh(0.5 * (G + G.T).astype(np.float64))
                eig = (np.maximum(g, 0.0), U)
        g, U = eig
        Ct[:, cols] = ej * (U @ ((U.T @ Ht[:, cols]) / (ej * g + n * lam)[:, None]))
    return Ct.astype(np.float64) @ V.T


class AdamResult:
    """Outcome of :func:`adam_solve`: ``coef`` (r, d), ``converged``, ``n_epochs``, ``objective``."""

    def __init__(self, coef, converged, n_epochs, objective):
        self.coef = coef
        self.converged = converged
        self.n_epochs = n_epochs
        self.objective = objective


def _objective(Z, Y, Omega, S, loss, lam, chunk=4096):
    """(E1) evaluated over row chunks (no n x d temporary beyond one chunk)."""
    n = Z.shape[0]
    C = Omega @ S
    total = 0.0
    for sl in iter_chunks(n, chunk):
        P = np.asarray(Z[sl] @ C.astype(Z.dtype, copy=False), dtype=np.float64)
        total += float(np.sum(loss.value(P, Y[sl])))
    return total / n + 0.5 * lam * float(np.sum(Omega * Omega))


def adam_solve(Z, Y, loss, lam, V, e, coef0=None, learning_rate=1e-2, batch_size=256,
               max_epochs=100, tol=1e-4, n_iter_no_change=5, rng=None, verbose=False):
    """Minimise (E1) with Adam on mini-batch sub-gradients.

    Parameters
    ----------
    Z : ndarray (n, r), features (float32 or float64)
    Y : ndarray (n, d), float64 targets
    loss : sprokr.losses.Loss
    lam : float > 0
    V, e : eigenpairs of the output matrix M (``M^1/2 = V diag(sqrt e) V^T``)
    coef0 : ndarray (r, d), optional
        Initial output coefficients ``C = Omega M^1/2`` (default zeros).
    learning_rate, batch_size : Adam step size and mini-batch size
    max_epochs, tol, n_iter_no_change : stopping rule (below)
    rng : numpy.random.Generator (shuffles the mini-batches)

    Stopping rule.  After every epoch the full objective ``F`` of (E1) is evaluated.  An
    epoch *improves* when ``F < F_best - tol * |F_best|``; otherwise the step size is
    halved (the sub-gradients of non-smooth losses do not vanish at the optimum, so a
    constant step would only oscillate).  The solver stops, ``converged = True``, after
    ``n_iter_no_change`` epochs in a row without improvement; after ``max_epochs`` it
    stops with ``converged = False`` and a ``ConvergenceWarning``.  The best iterate is
    returned.

    Returns
    -------
    AdamResult
    """
    n, r = Z.shape
    d = Y.shape[1]
    sq = np.sqrt(e)
    S = (V * sq) @ V.T  # M^1/2
    S_pinv = (V * np.where(sq > 0, 1.0 / np.where(sq > 0, sq, 1.0), 0.0)) @ V.T
    Omega = np.zeros((r, d)) if coef0 is None else np.asarray(coef0, dtype=np.float64) @ S_pinv
    m1 = np.zeros_like(Omega)
    m2 = np.zeros_like(Omega)
    b1, b2, eps = 0.9, 0.999, 1e-8
    lr = float(learning_rate)
    batch = int(min(batch_size, n))
    best = _objective(Z, Y, Omega, S, loss, lam)
    best_Omega = Omega.copy()
    history = [best]
    stall, t, converged, epoch = 0, 0, False, 0
    for epoch in range(1, max_epochs + 1):
        order = rng.permutation(n)
        for start in range(0, n, batch):
            idx = np.sort(order[start:start + batch])  # sorted: contiguous-ish row gathers
            Zb = Z[idx]
            P = np.asarray(Zb @ (Omega @ S).astype(Z.dtype, copy=False), dtype=np.float64)
            Gp = loss.gradient(P, Y[idx])
            # d/dOmega of (E1) on the batch: Z_b^T dl/dP M^1/2 / b + lam Omega
            grad = (Zb.T @ Gp.astype(Z.dtype, copy=False)).astype(np.float64) @ S / idx.size
            grad += lam * Omega
            t += 1
            m1 = b1 * m1 + (1 - b1) * grad
            m2 = b2 * m2 + (1 - b2) * grad * grad
            step = (m1 / (1 - b1**t)) / (np.sqrt(m2 / (1 - b2**t)) + eps)
            Omega = Omega - lr * step
        F = _objective(Z, Y, Omega, S, loss, lam)
        history.append(F)
        if verbose:
            print(f"[adam] epoch {epoch}: objective {F:.6g} (lr {lr:.2g})", flush=True)
        if F < best - tol * abs(best):
            best, best_Omega, stall = F, Omega.copy(), 0
        else:
            if F < best:
                best, best_Omega = F, Omega.copy()
            stall += 1
            lr *= 0.5
            if stall >= n_iter_no_change:
                converged = True
                break
    if not converged:
        warnings.warn(
            f"Adam did not meet the stopping rule (tol={tol}, n_iter_no_change={n_iter_no_change}) "
            f"within max_epochs={max_epochs}; increase max_epochs or learning_rate",
            ConvergenceWarning,
            stacklevel=3,
        )
    return AdamResult(best_Omega @ S, converged, epoch, history)
