"""Error checks of the sketched ridge's routes, and the float64 twin of a float32 computation.

* :func:`whitened_error_bound` -- what forming the whitened normal equations adds to the
  stable route's error (a bound, known up to ``|Z|_F^2 <= trace(K)`` before the pass);
* :func:`float32_error_estimate` -- what float32 kernel values and products change in a
  whitened solution, measured on a sample of rows replayed in float64;
* :func:`normal_equations_error` -- the plain normal equations' estimate (``"cholesky"``);
* :func:`rounding_sensitivity` -- how far the formula itself moves when ``K~ = R K R^T`` moves
  by its float64 rounding: no float64 route computes it more closely (nearly singular
  ``K~``: flat kernels, outlying rows, a small ridge);
* ``Float64Features`` -- sketched features with float64 values (of
  :func:`~sprokr.numerics.float64_kernel`), for the checks and the fallback.

See :func:`sprokr.numerics.sketched_ridge` and ``docs/architecture.md`` ("Solvers").
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
from numpy.typing import DTypeLike
from scipy.linalg import get_blas_funcs

from ._crossprod import ShiftedCrossProducts
from ._features import SketchedFeatures
from ._linalg import cholesky_factor_solve, matmul
from ._products import upcast_samples
from ._refine import prediction_error

__all__ = ["NORMAL_EQUATIONS_TOL", "FLOAT32_TOL", "tolerance", "normal_equations_error", "whitened_error_bound",
           "float32_error_estimate", "float64_probe_estimate", "rounding_sensitivity", "SENSITIVITY_ROUNDING",
           "Float64Features"]

#: the whitened normal equations are accepted in float64 when their error estimate
#: (:func:`whitened_error_bound`) is below this (the issue's target against the formula)
NORMAL_EQUATIONS_TOL = 1e-6
#: ... and with float32 products when their (bound or measured) estimate is below this
FLOAT32_TOL = 1e-4

#: safety factor of the measured float32 estimate (it is an estimate, not a bound)
_SAFETY = 4.0
#: size of the perturbation of ``K~`` that :func:`rounding_sensitivity` propagates, relative
#: to ``K~``'s largest diagonal entry: the rounding of its float64 kernel values and the
#: backward error of its pivoted Cholesky factorisation
SENSITIVITY_ROUNDING = np.finfo(np.float64).eps


def tolerance(dtype: DTypeLike) -> float:
    """Error tolerance of the whitened route for products in ``dtype``.

    Parameters
    ----------
    dtype : dtype
        Precision of the products (float32: :data:`FLOAT32_TOL`, else
        :data:`NORMAL_EQUATIONS_TOL`).
    """
    return FLOAT32_TOL if np.dtype(dtype) == np.float32 else NORMAL_EQUATIONS_TOL


def normal_equations_error(acc: Any, G_norm: float, rc: float) -> float:
    """Error estimate of a Cholesky solve of the plain normal equations ``G gamma = A^T T``.

    ``eps_w |A_c|_F^2 + eps_64 |G|_1`` estimates the rounding error of the formed ``G``
    (``A_c`` the double-centred blocks whose products run in the accumulator's dtype
    ``w``, plus the float64 sums, corrections and factorisation); divided by the
    smallest eigenvalue of ``G`` -- ``rc |G|_1`` with ``rc`` LAPACK's estimate of
    ``1 / cond_1(G)`` from the Cholesky factor -- it is the relative perturbation that
    rounding causes in the worst direction of the solve.  O(m) given ``rc``.

    Parameters
    ----------
    acc : ShiftedCrossProducts
        The pass's accumulator (its centred sums ``AtA`` and its dtype).
    G_norm : float
        ``|G|_1``, the 1-norm of the formed matrix.
    rc : float
        LAPACK's estimate of ``1 / cond_1(G)`` from the Cholesky factor
        (:func:`~sprokr.numerics.cholesky_rcond`).
    """
    if not rc > 0:
        return np.inf
    centred = float(np.trace(acc.AtA))  # |A_c|_F^2: the float32/64 syrk sums
    err = np.finfo(acc.dtype).eps * centred + np.finfo(np.float64).eps * G_norm
    return err / (rc * G_norm)


def whitened_error_bound(zc2: float, z2: float, nlam: float, dtype: DTypeLike) -> float:
    """Relative error estimate of the whitened normal equations ``(Z^T Z + n lam I) w = Z^T T``.

    ``eps_w |Z_c|_F^2 / (n lam)`` for the per-chunk products in ``dtype`` (on the
    double-centred whitened blocks ``Z_c``) plus ``eps_64 (1 + |Z|_F^2 / (n lam))`` for
    the float64 sums and the Cholesky solve: rounding errors of the formed matrix
    divided by its smallest eigenvalue, which is at least ``n lam`` -- known exactly, no
    condition estimate needed -- and ``1 + |Z|_F^2 / (n lam)`` bounds its condition
    number (``|Z|_F^2 <= trace(K)``: the whitened features span a Nystrom approximation
    of ``K``).  Error terms the stable QR route shares (the kernel values, the
    whitening) are not counted: this is what forming the normal equations adds.

    Parameters
    ----------
    zc2 : float
        ``|Z_c|_F^2``, of the double-centred whitened blocks (0 when the products run in
        float64).
    z2 : float
        ``|Z|_F^2`` (or its bound ``trace(K)``).
    nlam : float
        ``n lam``.
    dtype : dtype
        Precision of the per-chunk products.
    """
    eps64 = np.finfo(np.float64).eps
    return (np.finfo(dtype).eps * zc2 + eps64 * z2) / nlam + eps64


def float32_error_estimate(acc: Any, A_rows: np.ndarray, A_rows64: np.ndarray, T_rows: np.ndarray, factor: np.ndarray,
                           w: np.ndarray, n: int, nlam: float, unit_targets: bool = False,
                           parts: bool = False) -> Any:
    """Measured estimate of what float32 kernel values and products change in a solution
    of the whitened (or, ``acc`` unwhitened, the plain) normal equations.

    ``ns`` sample rows -- spread over the training set: the support rows' float32 solves
    are accurate by construction and would hide the error -- are centred and whitened as
    the pass did (float32 kernel values ``A_rows``, float32 triangular solves: ``Z_32``)
    and in float64 (float64 kernel values ``A_rows64``: ``Z_64``).  Their contributions to
    ``Z^T Z`` and ``Z^T T`` differ by ``Z_32^T Z_32 - Z_64^T Z_64`` plus the rounding of the
    float32 products -- the *formed* Gram ``Z_c^T Z_c`` rounded in float32 (what the pass's
    ``syrk`` commits; a product ``Z^T (Z w)`` would not show it) and ``Z_c^T T``; scaled by
    ``sqrt(n / ns)`` (rounding errors of different rows are independent and add like a
    random walk), the difference is propagated to the solution, ``dw = (Z^T Z + n lam
    I)^-1 (d(Z^T T) - d(Z^T Z) w)``, and measured on the predictions at the sample rows,
    ``max |Z_64 dw|``, plus the error of the float32 prediction itself,
    ``eps_32 max_i (sum_j A_ij^2 gamma_j^2)^1/2`` (large when the coefficients cancel) plus the
    float32 kernel values' measured ``|(A_32 - A_64) gamma|``
    (:func:`~sprokr.numerics._refine.prediction_error`), over ``max |Z_64 w|``, times a
    safety factor 4.  Calibrated on a 648-case sweep
    (``tests/test_float32_policy.py``): every solution accepted at 1e-4 was within 0.82 x
    1e-4 of the float64 QR route.  Cost O(ns r^2) (the sample's Gram).

    Parameters
    ----------
    acc : ShiftedCrossProducts
        The accumulator of the pass (whitened or plain), for its shifts, whitening and dtype.
    A_rows, A_rows64 : ndarray of shape (ns, m)
        Sample rows of ``A`` as the pass computed them, and in float64.
    T_rows : ndarray of shape (ns, k)
        The sample's targets (or random probes of them).
    factor : ndarray of shape (r, r)
        Lower Cholesky factor of ``Z^T Z + n lam I``.
    w : ndarray of shape (r, k)
        The solution for ``T_rows``'s columns.
    n : int
        Number of training rows.
    nlam : float
        ``n lam``.
    unit_targets : bool, default=False
        ``T_rows`` are columns ``e_j`` of identity targets: ``Z^T e_j = z_j`` carries one
        row's error, not a sum over the n rows (whose contribution is scaled like the matrix).
    parts : bool, default=False
        Return ``(solution, predictions)``: the part propagated through the solve and the
        part of the predictions made from the solution (rounding and kernel values), each
        with the safety factor, instead of their sum.  The plain route scales only the first
        by its conditioning factor: ``G``'s conditioning does not amplify the second.
    """
    ns = A_rows.shape[0]
    if ns == 0:
        return (0.0, 0.0) if parts else 0.0
    twin = ShiftedCrossProducts(acc.c.size, 1, np.float64, acc.c, whiten=acc.whiten)
    Zc32, r32 = acc.centred(np.array(A_rows))
    Zc64, r64 = twin.centred(np.array(A_rows64, dtype=np.float64))
    P = acc.P  # Z = Z_c + [1, r] P^T (whitened: P[:, 0] = 0; plain: A = A_c + 1 c^T + r 1^T)
    Z32 = Zc32.astype(np.float64) + np.column_stack([np.ones_like(r32), r32]) @ P.T
    Z64 = Zc64 + np.column_stack([np.ones_like(r64), r64]) @ P.T
    T = np.asarray(T_rows, dtype=np.float64)
    Tc = T if unit_targets else T - T.mean(axis=0)
    # the float32 products' own rounding, from the same products in float32 and float64
    Zc = Zc32.astype(np.float64)
    # the formed Gram's rounding (what the pass's syrk commits), applied to w: forming
    # Z_c^T Z_c in float32 rounds each entry, which a product Z^T (Z w) would not show
    e_gram = matmul(matmul(Zc32.T, Zc32).astype(np.float64) - matmul(Zc.T, Zc), w)
    e_rhs = matmul(Zc32.T, Tc.astype(acc.dtype)).astype(np.float64) - matmul(Zc.T, Tc)
    dGw = matmul(Z32.T, matmul(Z32, w)) - matmul(Z64.T, matmul(Z64, w)) + e_gram
    db = matmul(Z32.T, T) - matmul(Z64.T, T) + e_rhs
    dw = cholesky_factor_solve(factor, db * (1.0 if unit_targets else np.sqrt(n / ns)) - dGw * np.sqrt(n / ns))
    H = float(np.abs(matmul(Z64, w)).max(initial=0.0))
    if not (H > 0 and np.isfinite(dw).all()):
        bad = 0.0 if H == 0 else np.inf
        return (bad, bad) if parts else bad
    # the model then predicts k(x, support) gamma with kernel values (and coefficients) in
    # the same precision: independent roundings of the terms A_ij gamma_j add up like a
    # random walk, eps_w (sum_j A_ij^2 gamma_j^2)^1/2 -- large when gamma's terms cancel
    # (a smooth kernel resolved down to tiny pivots), negligible otherwise -- and the
    # kernel values' own error, measured at the sample rows (prediction_error)
    g = w if acc.whiten is None else acc.whiten.coefficients(w)
    e_sol = _SAFETY * float(np.abs(matmul(Z64, dw)).max(initial=0.0)) / H
    e_pred = _SAFETY * prediction_error(A_rows64, g, acc.dtype, A_rows) / H
    return (e_sol, e_pred) if parts else e_sol + e_pred


def float64_probe_estimate(factor: np.ndarray, A_rows64: np.ndarray, w: np.ndarray, scale: float,
                           seed: int = 0) -> float:
    """Random-probe estimate of what float64 rounding of a formed system changes in its solution.

    The sums and the Cholesky factorisation of ``G`` (m x m) perturb it by ``dG`` of norm
    ~ ``scale`` (``eps_64`` times the norms summed); ``dw = -G^-1 dG w`` is probed with
    ``dG w`` a random vector of norm ``scale |w_j|`` per column and measured on the
    predictions at the sample rows ``A_rows64`` (ns x m): ``max |A dw| / max |A w|``, times
    4 (the checks' common safety factor).  Where ``G`` squares an ill-conditioned kernel (flat kernels, tiny ``lam``) the probe
    falls on its small eigen-directions and the estimate is large -- the plain normal
    equations are then rejected.

    Parameters
    ----------
    factor : ndarray of shape (m, m)
        The lower Cholesky factor of ``G``.
    A_rows64 : ndarray of shape (ns, m)
        The sample rows, in float64.
    w : ndarray of shape (m, k) or (m,)
        Solution columns.
    scale : float
        Norm of the perturbation ``dG`` (``eps_64`` times the norms summed).
    seed : int, default=0
        Seed of the random probes.
    """
    w = np.asarray(w, dtype=np.float64)
    if w.ndim == 1:
        w = w[:, None]
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(w.shape)
    v *= scale * np.linalg.norm(w, axis=0) / np.maximum(np.linalg.norm(v, axis=0), 1e-300)
    dw = cholesky_factor_solve(factor, v)
    H = float(np.abs(matmul(A_rows64, w)).max(initial=0.0))
    if not (H > 0 and np.isfinite(dw).all()):
        return 0.0 if H == 0 else np.inf
    return _SAFETY * float(np.abs(matmul(A_rows64, dw)).max(initial=0.0)) / H


def rounding_sensitivity(wh: Any, factor: np.ndarray, gamma: np.ndarray, nlam: float, probes: int = 4,
                         seed: int = 0, rows: tuple[np.ndarray, Any, int] | None = None) -> float:
    """Relative change of the fitted values when ``K~ = R K R^T`` moves by its float64 rounding.

    The sketched ridge's ``gamma`` solves ``(A^T A + n lam K~) gamma = A^T T``; a perturbation
    ``E`` of ``K~`` (its kernel values are rounded, its factorisation has a backward error)
    moves it by ``-(A^T A + n lam K~)^-1 n lam E gamma``.  In the whitened basis
    (``A^T A + n lam K~ = P L (Z^T Z + n lam I) L^T P^T`` with ``F F^T = Z^T Z + n lam I``)
    that is ``du = F^-T F^-1 L^-1 (n lam E gamma)`` and the fitted values move by ``Z du``.
    ``E gamma`` is probed as a random vector of the size a symmetric ``E`` with independent
    entries of :data:`SENSITIVITY_ROUNDING` ``max diag K~`` gives it, on ``probes``
    random combinations of the target columns.  Returns ``max_j |Z du_j| / |Z w_j|``
    (``|Z x|^2 = |F^T x|^2 - n lam |x|^2``: no pass over the rows).  O(r^2 probes).

    When ``K~`` is nearly singular (a flat kernel, rows far from the others, a small ridge)
    the formula in exact arithmetic depends on its smallest pivots, which float64 kernel
    values determine only roughly: no float64 route -- QR included -- evaluates it more
    closely than this.

    The directions the pivoted Cholesky factorisation dropped (rank below ``m``, pivots
    under ``wh.tol``) are in the formula too, with pivots that rounding decides.  With
    ``rows`` (sample rows of ``A`` and of the targets) each dropped column's part outside
    the function space, ``e_d = A[:, D_d] - A[:, sel] M_d^T`` (:meth:`Whitening.dropped`),
    could absorb the residual ``T - A gamma`` along it, ``|e_d^T r| / |e_d|``, times
    ``min(1, |e_d|^2 / (n lam tol))``: with a pivot ``pi <= tol`` the direction absorbs the
    fraction ``|e_d|^2 / (|e_d|^2 + n lam pi)`` of it, at least that much -- a lower
    estimate, as the pivot rounding decides may be far smaller than ``tol``.  Sums over the
    sample are scaled to the ``n`` rows (a sample estimate: 0.3-8x the full sums were
    measured with 256 of 4000 rows).  Without ``rows`` they are not counted.  Cost: the kept
    part O(r^2) per probe from the factors; the dropped part O(s m r) on the s sample rows.

    Parameters
    ----------
    wh : Whitening
        The pivoted Cholesky factorisation of ``K~`` (rank r).
    factor : ndarray of shape (r, r)
        ``F``, read in its lower triangle.
    gamma : ndarray of shape (m, p)
        The solution (zero off the pivot columns ``wh.sel``).
    nlam : float
        ``n lam``.
    probes : int, default=4
        Random combinations of the p target columns probed.
    seed : int, default=0
        Seed of the random probes (the estimate is reproducible).
    rows : tuple ``(A_rows, T_rows, n)``, optional
        Sample rows of ``A`` (s x m, float64) and of the targets (s x p, an array or a
        sparse matrix), and the number ``n`` of training rows they stand for: the dropped
        directions' part (only used when ``wh.rank < m``; ``wh`` must then be the
        whitening of this process, whose pivoted factor a pickled copy does not keep).
    """
    r = wh.rank
    gamma = np.asarray(gamma, dtype=np.float64)
    if r == 0 or gamma.size == 0:
        return 0.0
    rng = np.random.default_rng(seed)
    Om = rng.standard_normal((gamma.shape[1], probes))
    g_all = matmul(gamma, Om)  # m x k
    g = g_all[wh.sel]  # r x k, pivoted
    trmm = get_blas_funcs("trmm", dtype=np.float64)
    w = trmm(1.0, wh.L, np.asfortranarray(g), side=0, lower=1, trans_a=1)  # L^T g: whitened
    Eg = rng.standard_normal(g.shape) * (SENSITIVITY_ROUNDING * float(wh.L[0, 0]) ** 2 * np.linalg.norm(g, axis=0))
    y = sla.solve_triangular(factor, sla.solve_triangular(wh.L, nlam * Eg, lower=True, check_finite=False),
                             lower=True, check_finite=False)  # F^-1 L^-1 (n lam E g) = F^T du
    du = sla.solve_triangular(factor, y, lower=True, trans="T", check_finite=False)
    fw = trmm(1.0, factor, np.asfortranarray(w), side=0, lower=1, trans_a=1)  # F^T w
    num = np.maximum(np.sum(y * y, axis=0) - nlam * np.sum(du * du, axis=0), 0.0)
    den = np.sum(fw * fw, axis=0) - nlam * np.sum(w * w, axis=0)
    moved = np.sqrt(num)
    if rows is not None and r < wh.m:
        moved = moved + _dropped_part(wh, g_all, Om, nlam, *rows)
    if not np.isfinite(moved).all():
        return np.inf
    ok = den > 0
    return float((moved[ok] / np.sqrt(den[ok])).max(initial=0.0))


def _dropped_part(wh: Any, g_all: np.ndarray, Om: np.ndarray, nlam: float, A_rows: np.ndarray, T_rows: Any,
                  n: int) -> np.ndarray:
    """What the dropped directions could absorb of the residual, per probe (see
    :func:`rounding_sensitivity`), in the fitted values' 2-norm over the ``n`` rows."""
    D, M = wh.dropped()
    A_rows = np.asarray(A_rows, dtype=np.float64)
    E = A_rows[:, D] - matmul(A_rows[:, wh.sel], M.T)  # s x (m - r)
    res = np.asarray(T_rows @ Om, dtype=np.float64) - matmul(A_rows, g_all)  # s x k
    c = n / max(A_rows.shape[0], 1)  # sample sums -> sums over the n rows
    e2 = np.einsum("ij,ij->j", E, E)
    norm = np.sqrt(np.maximum(e2, np.finfo(np.float64).tiny))
    damp = np.minimum(1.0, c * e2 / (nlam * wh.tol)) if nlam * wh.tol > 0 else np.ones_like(e2)
    proj = np.sqrt(c) * np.abs(matmul(E.T, res)) / norm[:, None]  # (m - r) x k
    return (damp[:, None] * proj).sum(axis=0)


class Float64Features(SketchedFeatures):
    """Features whose kernel blocks are computed from float64 copies of float32 samples
    (vector kernels compute in their inputs' precision; the row norms of a float32 chunk
    alone would perturb a flat kernel by ~1e-11, which a tiny ridge amplifies to 1e-4)."""

    def kernel_block(self, Zq, support=None):
        return super().kernel_block(upcast_samples(Zq), support)
