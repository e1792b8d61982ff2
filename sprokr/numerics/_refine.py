"""Iterative refinement of the sketched ridge: cheap normal equations made exact.

The sketched ridge ``min |A gamma - T|^2 + n lam gamma^T K~ gamma`` (``A = K R^T``, n x m)
is solved fast by normal equations formed with float32 products (or float32 kernel
values), which carry rounding errors of the formed matrix.  Iterative refinement removes
them: with ``M`` the cheap matrix's factorisation (the *preconditioner*),

    r_k     = A^T (T - A gamma_k) - n lam K~ gamma_k         (float64, O(n m p))
    gamma_{k+1} = gamma_k + M^-1 r_k

The residual is the gradient of the *un-squared* problem, computed from float64 kernel
values: no ``A^T A`` is formed, so its rounding is that of the stable route (``eps |A||gamma|``
per row), not the square of ``A``'s condition number.  The error contracts by
``rho = |I - M^-1 G|`` per step (``G`` the exact matrix); for the whitened matrix with
float32 products ``rho`` is about :func:`~sprokr.numerics.whitened_error_bound` in float32
(Bibtex: measured 5e-6), so two steps take 1e-6 to far below 1e-12.

The error is *measured*: the correction ``delta_k`` of a step is the error of
``gamma_k`` up to ``rho``; on 256 sample rows (float64 kernel values) ``d_k = max |A_s delta_k|
/ max |A_s gamma_{k+1}|`` is its size in the predictions, the contraction is estimated by
``rho^ = max(rho_bound, RATIO_SAFETY d_k / d_{k-1})`` (so at least two steps), and the
remaining error by the geometric series ``rho^ / (1 - rho^) d_k``.

One residual costs ``2 n m p`` float64 multiply-adds and, unless the float64 kernel blocks
were kept from the pass (:class:`KeptBlocks`, when they fit in memory), a float64 kernel
pass: with ``p`` targets much fewer than ``m`` columns it is a fraction of the
``n m^2`` pass it refines.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ._executor import ChunkTask
from ._linalg import matmul

__all__ = ["KeptBlocks", "ResidualTask", "refine", "sample_ratio", "prediction_rounding", "prediction_error",
           "MAX_REFINEMENT_STEPS", "RATIO_SAFETY", "RHO_MAX", "KEEP_BLOCKS_MB"]

#: at most this many refinement steps (each one residual pass)
MAX_REFINEMENT_STEPS = 3
# One step is never accepted: the first correction is the first solve's error, only a
# lower bound of the contraction (the error lies in the directions the cheap matrix
# resolves worst).  Measured ratios of the contraction to the first correction: 6.5 on
# Bibtex SISOKR, 800 on a flat Gaussian (gamma 0.01, lam 1e-4), 36000 on another (gamma
# 0.01, lam 1e-2, n 200: contraction 0.43 after a 1.2e-5 correction).
#: after two or more steps, RATIO_SAFETY x the ratio of successive corrections
RATIO_SAFETY = 2.0
#: a contraction estimate above this stops the refinement (the preconditioner is too poor)
RHO_MAX = 0.5
#: float64 kernel blocks are kept from the pass for the residuals when n x m x 8 bytes fit
KEEP_BLOCKS_MB = 256.0


class KeptBlocks:
    """The float64 rows of ``A`` and ``T`` (n x m, n x p), filled by the pass in this process.

    The refinement's residuals then need no kernel pass (Bibtex: 4880 x 2250, 88 MB).

    Parameters
    ----------
    n : int
        Rows of ``A`` and ``T``.
    m : int
        Columns of ``A``.
    width : int
        Columns of ``T`` (``p``).
    """

    def __init__(self, n: int, m: int, width: int) -> None:
        self.A = np.empty((n, m))
        self.T = np.empty((n, width))

    @staticmethod
    def fits(n: int, m: int, width: int, budget_mb: float = KEEP_BLOCKS_MB) -> bool:
        return n * (m + width) * 8 <= budget_mb * 2**20

    def put(self, rows: Any, A: np.ndarray, T: np.ndarray) -> None:
        self.A[rows] = A
        self.T[rows] = T

    def residual(self, gamma: np.ndarray) -> np.ndarray:
        """``A^T (T - A gamma)`` (m x p) in float64, two GEMMs."""
        U = self.T - matmul(self.A, gamma)
        return matmul(self.A.T, U)


class ResidualTask(ChunkTask):
    """``A^T (T - A gamma)`` summed over row chunks, float64 kernel values (a pass).

    Parameters
    ----------
    features : SketchedFeatures
        Float64 sketched features (``block(X) = K R^T`` rows).
    targets : callable or None
        ``targets(chunk)`` gives ``T``'s rows from collection ``which`` (None: ``probes``
        are given).
    gamma : ndarray of shape (m, p)
        The coefficients whose residual is summed.
    which : int, default=1
        Position of the targets' collection among the chunks of the pass.
    probes : ndarray of shape (n, k), optional
        If given, the targets instead (identity targets ``T = I_n`` probed by
        ``T omega = omega``).
    """

    name = "ridge residual"

    def __init__(self, features: Any, targets: Callable[[Any], np.ndarray] | None, gamma: np.ndarray,
                 which: int = 1, probes: np.ndarray | None = None) -> None:
        if targets is None and probes is None:
            raise ValueError("ResidualTask needs targets or probes")
        self.features, self.targets, self.which = features, targets, which
        self.gamma = np.asarray(gamma, dtype=np.float64)
        self.probes = probes

    def start(self) -> Any:
        return np.zeros(self.gamma.shape)

    def add(self, partial: Any, rows: slice, *chunks: Any) -> Any:
        A = np.asarray(self.features.block(chunks[0]), dtype=np.float64)
        if self.probes is not None:
            T = self.probes[rows]
        else:
            targets = self.targets
            assert targets is not None  # targets or probes (checked in __init__)
            T = np.asarray(targets(chunks[self.which]), dtype=np.float64)
        U = T - matmul(A, self.gamma)
        partial += matmul(A.T, U)
        return partial

    def merge(self, a: Any, b: Any) -> Any:
        a += b
        return a


def sample_ratio(S: np.ndarray, delta: np.ndarray, gamma: np.ndarray) -> float:
    """``max |S delta| / max |S gamma|``: a correction's size in the predictions at sample rows."""
    h = float(np.abs(matmul(S, gamma)).max(initial=0.0))
    d = float(np.abs(matmul(S, delta)).max(initial=0.0))
    if not np.isfinite(d):
        return np.inf
    return d / h if h > 0 else (0.0 if d == 0 else np.inf)


def prediction_rounding(S: np.ndarray, gamma: np.ndarray, dtype: Any, S_w: np.ndarray | None = None) -> float:
    """Relative rounding of predictions ``k(x, support) gamma`` made in ``dtype`` at sample rows
    ``S`` (float64): :func:`prediction_error` over ``max |S gamma|``, times 4."""
    h = float(np.abs(matmul(S, gamma)).max(initial=0.0))
    if h == 0:
        return 0.0
    return 4.0 * prediction_error(S, gamma, dtype, S_w) / h


def prediction_error(S: np.ndarray, gamma: np.ndarray, dtype: Any, S_w: np.ndarray | None = None) -> float:
    """Absolute error of predictions ``k(x, support) gamma`` made in ``dtype`` at sample rows ``S``
    (float64 kernel values): ``max_i |((S_w - S) gamma)_i| + eps_w (sum_j S_ij^2 gamma_j^2)^1/2``.

    The second term is the rounding of the terms ``S_ij gamma_j`` (independent roundings add
    like a random walk; large when ``gamma``'s terms cancel).  The first is the kernel values'
    own error, measured: ``S_w`` are the same rows computed in ``dtype``.  A kernel's float32
    values can be far less accurate than ``eps_32``: the Gaussian's ``exp(2g a.b - g|a|^2 -
    g|b|^2)`` loses ``eps_32 g |a|^2`` (1e-4 to 1e-3 on clustered data away from the origin
    with a narrow kernel, where the solution itself is accurate to 1e-6)."""
    S = np.asarray(S, dtype=np.float64)
    e = float(np.finfo(np.dtype(dtype)).eps) * np.sqrt(matmul(S ** 2, gamma ** 2))
    if S_w is not None and S_w is not S:
        e = e + np.abs(matmul(np.asarray(S_w, dtype=np.float64) - S, gamma))
    return float(e.max(initial=0.0))


def refine(gamma: np.ndarray, residual: Callable[[np.ndarray], np.ndarray],
           precond: Callable[[np.ndarray], np.ndarray], S: np.ndarray, tol: float,
           rho_bound: float | None = None, max_steps: int = MAX_REFINEMENT_STEPS,
           on_step: Callable[[int, float, float], None] | None = None,
           max_first: float = np.inf) -> tuple[np.ndarray, float, int]:
    """Refine ``gamma`` until its estimated relative error is at most ``tol``.

    Parameters
    ----------
    gamma : ndarray of shape (m, p)
        The cheap solution.
    residual : callable
        ``gamma -> A^T (T - A gamma) - n lam K~ gamma`` (float64).
    precond : callable
        ``r -> M^-1 r`` (the cheap matrix's solve).
    S : ndarray of shape (ns, m)
        Float64 sample rows of ``A`` (where errors are measured).
    tol : float
        Target relative error of the predictions.
    rho_bound : float, optional
        A bound of the contraction known from the formed matrix's rounding: a lower limit
        of the measured contraction (float32 products; it does not cover float32
        triangular solves or kernel values, hence the measurement).
    max_steps : int, default=MAX_REFINEMENT_STEPS
        Most refinement steps.
    on_step : callable, optional
        Called as ``on_step(step, d_k, estimate)`` after each step (logging).
    max_first : float, default=inf
        Give up after the first step when its relative correction exceeds this (the cheap
        solution is too poor for refinement to pay).

    Returns
    -------
    gamma : ndarray of shape (m, p)
        The refined solution (the last iterate).
    estimate : float
        Its estimated relative error in the predictions (inf when the contraction was
        estimated above :data:`RHO_MAX`: the preconditioner is too poor).
    steps : int
        Steps taken.
    """
    prev = None
    est = np.inf
    for k in range(1, max_steps + 1):
        delta = precond(residual(gamma))
        if not np.isfinite(delta).all():
            return gamma, np.inf, k
        gamma = gamma + delta
        d = sample_ratio(S, delta, gamma)
        if prev is None:  # one correction does not tell the contraction: a second step measures it
            rho = np.inf
        else:
            rho = RATIO_SAFETY * d / prev if prev > 0 else 0.0
            if rho_bound is not None:
                rho = max(rho, rho_bound)
        est = rho / (1.0 - rho) * d if rho < 1 else np.inf
        if on_step is not None:
            on_step(k, d, est)
        if est <= tol:
            return gamma, est, k
        if (k == 1 and not d <= max_first) or (rho >= RHO_MAX and k > 1):
            return gamma, np.inf, k
        prev = d
    return gamma, est, max_steps
