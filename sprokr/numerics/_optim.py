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

Other losses: Newton's method by default (:mod:`sprokr.numerics._newton`,
:func:`newton_solve`) for losses that are sums of functions of single entries; full-batch
L-BFGS (:func:`lbfgs_solve`; the problem after sketching is only r x d), on the loss
itself when it is smooth (Huber) and on its Moreau envelope with a decreasing smoothing
parameter when it is not (each stage aimed at the tolerance) (pinball,
epsilon-insensitive, hinge), stopped on a certified duality gap.  Adam (Kingma & Ba,
2015) on mini-batch sub-gradients remains available (:func:`adam_solve`) with the same
certificate.

Duality gap.  With ``l_i^*`` the conjugate of ``l(., y_i)``, the dual of (E1) is

    D(A) = -(1/n) sum_i l_i^*(a_i) - (1 / (2 lam n^2)) |Z^T A M^1/2|_F^2,

and ``P(Omega) - D(A) >= P(Omega) - P* >= 0`` for any ``A`` in the conjugates' domain.
The solvers take ``a_i`` = the gradient of the (smoothed) loss at the current predictions
(inside the domain by construction), so the reported gap bounds the distance of the
returned objective to the optimum: ``converged`` means it is below ``tol`` (relative).
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import scipy.linalg as sla
from sklearn.exceptions import ConvergenceWarning

from ..progress import log_message
from ..utils import iter_chunks
from ._linalg import cholesky_factor_inplace, cholesky_factor_solve

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import LossLike as Loss

__all__ = ["ridge_by_eigengroups", "adam_solve", "lbfgs_solve", "duality_gap", "refine_dual", "SolverResult",
           "output_matrix_sqrt", "feature_predict", "feature_t_dot", "feature_gram", "F64_COPY_BYTES"]


def ridge_by_eigengroups(G: np.ndarray, H: np.ndarray, n: int, lam: float, V: np.ndarray, e: np.ndarray,
                         overwrite_g: bool = False) -> np.ndarray:
    """Output coefficients (E2): ``C`` of shape (r, d) with predictions ``Z C``.

    Parameters
    ----------
    G : ndarray of shape (r, r)
        Symmetric PSD (``Z^T Z``, or ``K`` for the exact machine), float32 or float64.
    H : ndarray of shape (r, d)
        ``Z^T Y``, or ``Y``.
    n : int
        Number of training samples.
    lam : float
        Regularisation (> 0).
    V, e : ndarray of shape (d, d) and (d,)
        Eigenvectors and eigenvalues of the output matrix ``M``.
    overwrite_g : bool, default=False
        Let ``G`` be overwritten when one Cholesky factorisation serves every output
        (then no eigendecomposition fallback is left: the ``LinAlgError`` is raised).
    """
    G = np.asarray(G)
    if G.dtype not in (np.float32, np.float64):
        G = G.astype(np.float64)
    # the solve runs in G's precision (float32 halves the exact machine's n^3/3 Cholesky)
    Ht = (np.asarray(H, dtype=np.float64) @ V).astype(G.dtype)  # outputs in M's eigenbasis
    Ct = np.zeros_like(Ht)
    groups: dict[Any, Any] = {}
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


class SolverResult:
    """Outcome of a solver.

    Parameters
    ----------
    coef : ndarray of shape (r, d)
        The output coefficients.
    converged : bool
        Whether the solver's stopping criterion was met.
    n_epochs : int
        Passes or iterations.
    objective : sequence of float
        History of the objective.
    gap : float, optional
        Relative duality gap (None when the loss has no conjugate).
    """

    def __init__(self, coef: np.ndarray, converged: bool, n_epochs: int, objective: Sequence[float],
                 gap: float | None = None) -> None:
        self.coef = coef
        self.converged = converged
        self.n_epochs = n_epochs
        self.objective = objective
        self.gap = gap




def output_matrix_sqrt(V: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(M^1/2, (M^1/2)^+)`` (d x d) from the eigenpairs ``V`` (d, d), ``e`` (d,) of ``M``."""
    sq = np.sqrt(np.maximum(e, 0.0))
    S = (V * sq) @ V.T
    S_pinv = (V * np.where(sq > 0, 1.0 / np.where(sq > 0, sq, 1.0), 0.0)) @ V.T
    return S, S_pinv


def feature_predict(Z: np.ndarray, C: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """``Z C`` (n, d) in float64 for features ``Z`` (n, r) and ``C`` (r, d) (row chunks keep
    the float64 copy of a float32 ``Z`` small)."""
    n = Z.shape[0]
    if Z.dtype == np.float64 or n <= chunk:
        return np.asarray(Z, dtype=np.float64) @ C
    out = np.empty((n, C.shape[1]))
    for sl in iter_chunks(n, chunk):
        out[sl] = np.asarray(Z[sl], dtype=np.float64) @ C
    return out


def feature_t_dot(Z: np.ndarray, G: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """``Z^T G`` (r, d) in float64 for features ``Z`` (n, r) and ``G`` (n, d)."""
    n = Z.shape[0]
    if Z.dtype == np.float64 or n <= chunk:
        return np.asarray(Z, dtype=np.float64).T @ G
    out = np.zeros((Z.shape[1], G.shape[1]))
    for sl in iter_chunks(n, chunk):
        out += np.asarray(Z[sl], dtype=np.float64).T @ G[sl]
    return out


def duality_gap(Z: np.ndarray, Y: np.ndarray, loss: Loss, lam: float, S: np.ndarray, Omega: np.ndarray,
                A: np.ndarray | None = None) -> tuple[float, float | None, float | None]:
    """``(P(Omega), D(A), gap)`` of (E1); ``A`` defaults to the loss gradient at ``Omega``.

    Returns None for the dual when the loss has no conjugate (or ``A`` leaves its domain).

    Parameters
    ----------
    Z : ndarray of shape (n, r)
        Features.
    Y : ndarray of shape (n, d)
        Targets.
    loss : sprokr.losses.Loss
        The loss.
    lam : float
        Regularisation (> 0).
    S : ndarray of shape (d, d)
        ``M^1/2``, the square root of the output matrix.
    Omega : ndarray of shape (r, d)
        The primal point (predictions ``Z Omega M^1/2``).
    A : ndarray of shape (n, d), optional
        The dual point (default: the loss gradient at ``Omega``).
    """
    n = Z.shape[0]
    P = feature_predict(Z, Omega @ S)
    primal = float(np.mean(loss.value(P, Y))) + 0.5 * lam * float(np.sum(Omega * Omega))
    if A is None:
        A = loss.gradient(P, Y)
    conj = loss.conjugate(A, Y)
    if conj is None or not np.all(np.isfinite(conj)):
        return primal, None, None
    W = feature_t_dot(Z, A) @ S  # Z^T A M^1/2
    dual = -float(np.mean(conj)) - float(np.sum(W * W)) / (2.0 * lam * n * n)
    return primal, dual, max(primal - dual, 0.0)


def refine_dual(Z, Y, loss, lam, S, Omega, A, max_free=20000):
    """A dual candidate closer to optimal for a given primal ``Omega`` (a tighter gap).

    At the optimum ``lam n Omega + Z^T A M^1/2 = 0`` and each ``a_i`` is a sub-gradient.
    Entries of ``A`` strictly inside the conjugate's box (the points at a kink of the loss,
    whose sub-gradient is not unique) are re-chosen within the box to satisfy that
    stationarity condition in the least-squares sense (a small bounded least squares);
    the others stay at the (unique) sub-gradient.  Returns ``A`` unchanged when the loss
    gives no box or there are too many free entries.
    """
    from scipy.optimize import lsq_linear

    box = loss.dual_box(A, Y)
    if box is None:
        return A
    lo, hi = (np.asarray(b, dtype=np.float64) for b in box)
    span = np.maximum(hi - lo, 1e-300)
    free = (A > lo + 1e-9 * span) & (A < hi - 1e-9 * span)
    fi, fj = np.nonzero(free)
    if fi.size == 0 or fi.size > max_free:
        return A
    n, (r, d) = Z.shape[0], Omega.shape
    A_fixed = np.where(free, 0.0, A)
    target = -(lam * n * Omega + feature_t_dot(Z, A_fixed) @ S)  # (r, d)
    Zf = np.asarray(Z[fi], dtype=np.float64)  # (f, r)
    F = (Zf[:, :, None] * S[fj][:, None, :]).reshape(fi.size, r * d).T  # column: vec(z_i s_j^T)
    sol = lsq_linear(F, target.ravel(), bounds=(lo[fi, fj], hi[fi, fj]), method="bvls", tol=1e-12,
                     max_iter=200)
    out = A_fixed.copy()
    out[fi, fj] = sol.x
    return out


#: largest float64 copy of float32 features the L-BFGS and Newton solvers make (bytes)
F64_COPY_BYTES = 512 * 2**20


def feature_gram(Z: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """``Z^T Z / n`` (r, r) in float64 (row chunks)."""
    n, r = Z.shape
    G = np.zeros((r, r))
    for sl in iter_chunks(n, chunk):
        Zc = np.asarray(Z[sl], dtype=np.float64)
        G += Zc.T @ Zc
    return G / n


def _curvature(f_loss, P, Y, scale):
    """Mean second derivative of the loss along its predictions (finite differences)."""
    h = 1e-6 * scale
    return max(float(np.mean((f_loss.gradient(P + h, Y) - f_loss.gradient(P, Y)) / h)), 0.0)


def _preconditioner(G, c, lam):
    """Lower Cholesky factor of ``c G + lam I``: the Hessian of (E1) when the loss has curvature ``c``."""
    r = G.shape[0]
    A = c * G
    A.flat[:: r + 1] += lam
    try:
        return sla.cholesky(A, lower=True, check_finite=False)
    except np.linalg.LinAlgError:  # rounding made it indefinite: precondition the diagonal only
        return np.diag(np.sqrt(np.maximum(np.diag(A), lam)))


def lbfgs_solve(Z: np.ndarray, Y: np.ndarray, loss: Loss, lam: float, V: np.ndarray, e: np.ndarray,
                coef0: np.ndarray | None = None, tol: float = 1e-4, max_iter: int = 3000,
                verbose: bool = False) -> SolverResult:
    """Minimise (E1) by full-batch L-BFGS, stopped on a certified duality gap.

    Smooth losses (``loss.smooth``) are minimised directly.  Non-smooth ones with a Moreau
    envelope (``loss.smoothed(mu)``) are minimised through it, ``mu`` decreasing by 10 from
    a tenth of the targets' scale, warm-started, until the duality gap of the ORIGINAL
    problem (with ``A`` = the envelope's gradients, which lie in the conjugate's domain) is
    below ``tol`` relative to the objective.  A loss with neither is minimised as if smooth
    and ``converged`` reflects L-BFGS's own gradient criterion (``gap`` is then None).

    Parameters
    ----------
    Z : ndarray of shape (n, r)
        Features.
    Y : ndarray of shape (n, d)
        Float64 targets.
    loss : sprokr.losses.Loss
        The loss.
    lam : float
        Regularisation (> 0).
    V, e : ndarray of shape (d, d) and (d,)
        Eigenpairs of the output matrix ``M``.
    coef0 : ndarray of shape (r, d), optional
        Initial output coefficients ``C = Omega M^1/2`` (default zeros).
    tol : float, default=1e-4
        Relative duality gap at which the solution is accepted.
    max_iter : int, default=3000
        L-BFGS iterations in total (over all smoothing stages).
    verbose : bool, default=False
        Log each smoothing stage.

    Returns
    -------
    SolverResult
    """
    from scipy.optimize import minimize

    n, r = Z.shape
    d = Y.shape[1]
    S, S_pinv = output_matrix_sqrt(V, e)
    Omega = np.zeros((r, d)) if coef0 is None else np.asarray(coef0, dtype=np.float64) @ S_pinv
    has_conj = loss.conjugate(np.zeros((1, d)), Y[:1]) is not None
    smooth = bool(getattr(loss, "smooth", False)) or loss.smoothed(1.0) is None
    scale = float(np.std(Y)) or 1.0
    mu = None if smooth else 0.1 * scale
    history, used, converged, gap = [], 0, False, None
    best = (np.inf, Omega)  # (relative gap, Omega): the best-certified iterate is returned
    # a smoothing stage that stalls (the envelope's curvature grows as mu shrinks) must not
    # eat the whole budget: each stage gets at most a third of it, the next warm-starts
    stage_cap = max(50, max_iter // 3)

    if Z.dtype != np.float64 and Z.size * 8 <= F64_COPY_BYTES:
        Z = Z.astype(np.float64)  # one copy instead of a conversion per iteration
    # Preconditioning.  Kernel features make (E1) badly conditioned (the Hessian of the
    # square loss, Z^T Z / n + lam I, has the kernel's spectrum over lam): L-BFGS then needs
    # hundreds of iterations even on Huber.  Each stage runs on W = L^T Omega with
    # L L^T = c Z^T Z / n + lam I (r x r), c the loss's mean curvature at the stage's start
    # (1 for the square loss, ~0 where Huber is linear, ~1/mu in a smoothed kink): the
    # Hessian is then close to the identity.
    G_feat = feature_gram(Z)

    def fg(w, f_loss):
        Om = sla.solve_triangular(L, w.reshape(r, d), lower=True, trans="T", check_finite=False)
        P = feature_predict(Z, Om @ S)
        G = f_loss.gradient(P, Y)
        val = float(np.mean(f_loss.value(P, Y))) + 0.5 * lam * float(np.sum(Om * Om))
        grad = feature_t_dot(Z, G) @ S / n + lam * Om
        return val, sla.solve_triangular(L, grad, lower=True, check_finite=False).ravel()

    while True:
        f_loss = loss if mu is None else loss.smoothed(mu)
        budget = max(1, min(max_iter - used, stage_cap if mu is not None else max_iter))
        L = _preconditioner(G_feat, _curvature(f_loss, feature_predict(Z, Omega @ S), Y, scale), lam)
        res = minimize(fg, (L.T @ Omega).ravel(), args=(f_loss,), jac=True, method="L-BFGS-B",
                       options={"maxiter": budget, "maxcor": 20, "ftol": 1e-15, "gtol": 1e-12 * max(scale, 1.0)})
        # a stage that stopped at once still counts: a stage that cannot move (its gradient
        # already below gtol) would otherwise be rerun for ever
        used += max(int(res.nit), 1)
        Omega = sla.solve_triangular(L, res.x.reshape(r, d), lower=True, trans="T", check_finite=False)
        if has_conj:
            A = None if mu is None else f_loss.gradient(feature_predict(Z, Omega @ S), Y)  # type: ignore[union-attr]
            primal, dual, gap_abs = duality_gap(Z, Y, loss, lam, S, Omega, A)
            if mu is not None and gap_abs is not None and gap_abs > tol * abs(primal):
                # the points at the kinks get the sub-gradients that certify Omega best
                gap_abs = min(gap_abs, duality_gap(Z, Y, loss, lam, S, Omega, refine_dual(Z, Y, loss, lam, S, Omega, A))[2])  # type: ignore[type-var]
            gap = None if gap_abs is None else gap_abs / max(abs(primal), 1e-300)
            if gap is not None and gap < best[0]:
                best = (gap, Omega)
        else:
            primal = fg(Omega.ravel(), loss)[0]
        history.append(primal)
        log_message(f"L-BFGS mu={mu}: {res.nit} iterations, objective {primal:.8g}, gap {gap}", verbose=verbose, logger="optim")
        if gap is not None and gap <= tol:
            converged = True
            break
        if gap is None and mu is None:  # no certificate: trust L-BFGS's own criterion
            converged = bool(res.success)
            break
        if used >= max_iter or (mu is None and res.nit == 0):  # no budget left, or no progress possible
            break
        if mu is not None:
            # the envelope's bias, hence the gap, shrinks about linearly with mu: aim the
            # next stage at half the tolerance (10x to 100x smaller); a stage cut short by
            # its cap has not reached its own optimum yet, so mu then shrinks gently
            if res.nit >= budget:
                shrink = 0.3
            else:
                shrink = 0.1 if gap is None or gap <= 0 else min(0.1, max(1e-2, 0.5 * tol / gap))
            mu *= shrink
            if mu < 1e-12 * scale:
                break
    if np.isfinite(best[0]):
        gap, Omega = best
    if not converged:
        why = (f"within max_iter={max_iter} iterations (relative gap {gap}); increase max_iter" if used >= max_iter
               else f"(relative gap {gap} after {used} iterations: no further progress in floating point)")
        warnings.warn(f"L-BFGS did not reach the duality gap tol={tol} {why}", ConvergenceWarning, stacklevel=3)
    return SolverResult(Omega @ S, converged, used, history, gap)


def _objective(Z, Y, Omega, S, loss, lam, chunk=4096):
    """(E1) evaluated over row chunks (no n x d temporary beyond one chunk)."""
    n = Z.shape[0]
    C = Omega @ S
    total = 0.0
    for sl in iter_chunks(n, chunk):
        P = np.asarray(Z[sl] @ C.astype(Z.dtype, copy=False), dtype=np.float64)
        total += float(np.sum(loss.value(P, Y[sl])))
    return total / n + 0.5 * lam * float(np.sum(Omega * Omega))


def adam_solve(Z: np.ndarray, Y: np.ndarray, loss: Loss, lam: float, V: np.ndarray, e: np.ndarray,
               coef0: np.ndarray | None = None, learning_rate: float = 1e-2, batch_size: int = 256,
               max_epochs: int = 100, tol: float = 1e-4, n_iter_no_change: int = 5,
               rng: np.random.Generator | None = None, verbose: bool = False) -> SolverResult:
    """Minimise (E1) with Adam on mini-batch sub-gradients.

    Stopping rule.  After every epoch the full objective ``F`` of (E1) is evaluated.  An
    epoch *improves* when ``F < F_best - tol * |F_best|``; otherwise the step size is
    halved (the sub-gradients of non-smooth losses do not vanish at the optimum, so a
    constant step would only oscillate).  The solver stops, ``converged = True``, after
    ``n_iter_no_change`` epochs in a row without improvement; after ``max_epochs`` it
    stops with ``converged = False`` and a ``ConvergenceWarning``.  The best iterate is
    returned.

    Parameters
    ----------
    Z : ndarray of shape (n, r)
        Features (float32 or float64).
    Y : ndarray of shape (n, d)
        Float64 targets.
    loss : sprokr.losses.Loss
        The loss.
    lam : float
        Regularisation (> 0).
    V, e : ndarray of shape (d, d) and (d,)
        Eigenpairs of the output matrix ``M`` (``M^1/2 = V diag(sqrt e) V^T``).
    coef0 : ndarray of shape (r, d), optional
        Initial output coefficients ``C = Omega M^1/2`` (default zeros).
    learning_rate : float, default=1e-2
        Adam step size (halved after each epoch without improvement).
    batch_size : int, default=256
        Mini-batch size.
    max_epochs : int, default=100
        Most epochs (stopping rule above).
    tol : float, default=1e-4
        Relative improvement of the objective that counts (stopping rule above).
    n_iter_no_change : int, default=5
        Epochs in a row without improvement after which the solver stops.
    rng : numpy.random.Generator
        Shuffles the mini-batches (the callers always give one).
    verbose : bool, default=False
        Log the objective after each epoch.

    Returns
    -------
    SolverResult
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
        order = rng.permutation(n)  # type: ignore[union-attr]  # given by the callers
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
        log_message(f"Adam epoch {epoch}: objective {F:.6g} (lr {lr:.2g})", verbose=verbose, logger="optim")
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
    # the stopping rule only says the step size ran out; what is claimed is the certificate
    _, _, gap_abs = duality_gap(Z, Y, loss, lam, S, best_Omega)
    gap = None if gap_abs is None else gap_abs / max(abs(best), 1e-300)
    if gap is not None:
        converged = gap <= tol
    if not converged:
        warnings.warn(
            f"Adam did not reach a certified optimum (tol={tol}, relative duality gap {gap}) within "
            f"max_epochs={max_epochs}; use the default optimizer ('auto') or increase max_epochs",
            ConvergenceWarning,
            stacklevel=3,
        )
    return SolverResult(best_Omega @ S, converged, epoch, history, gap)
