"""What every route of the sketched ridge shares: its result, its constants, the stable solve.

:class:`RidgeSolution` is what :func:`sprokr.numerics.sketched_ridge` returns, whichever
route (:mod:`sprokr.numerics._ridge_job`, :mod:`sprokr.numerics._ridge_plain`) computed
it; :func:`stable_ridge_solve` is the least-squares solve of the stable QR route; the
helpers check and sample what the routes' passes produce.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import DTypeLike
import scipy.linalg as sla

from ._checks import tolerance
from ._qr import stacked_qr, stacked_qr_apply_t
from ._whiten import Whitening

__all__ = ["RidgeSolution", "SOLVERS", "SAMPLE_ROWS", "PROBES", "EARLY_FLOAT32_MAX", "MIXED_MAX_FIRST_ERROR",
           "stable_ridge_solve", "spread", "sandwich", "check_finite_sums"]


class RidgeSolution:
    """Result of :func:`sprokr.numerics.sketched_ridge`.

    Parameters
    ----------
    coef : ndarray of shape (m', width)
        Coefficients on ``support``: ``g(x) = k(x, support) coef``.
    support : samples
        The support samples.
    features : SketchedFeatures
        The features whose kernel computed the solution.
    times : dict of str to float
        Seconds of each phase.
    method : {"whitened", "cholesky", "eigh", "qr"}
        The route that produced ``coef``.
    error_estimate : float, optional
        The relative error estimate of the solution (in the predictions; see the
        attribute).
    rank : int, optional
        Numerical rank of ``R K R^T`` (whitened and stable routes).
    precision : str or dtype, optional
        Precision of the kernel values and O(n m^2) products of the route taken (None:
        float64).
    checks : iterable of (str, float), default=()
        Every checked solve tried, ``(precision name, error estimate)``, in order.
    refinement_steps : int, default=0
        Iterative refinement steps applied to ``coef``.
    sensitivity : float, optional
        The formula's :func:`~sprokr.numerics.rounding_sensitivity` (whitened and stable
        routes), included in ``error_estimate``.

    Attributes
    ----------
    coef : ndarray (m', width)
        Coefficients on ``support``: ``g(x) = k(x, support) coef``.
    support, features : the support samples and the :class:`SketchedFeatures`
    times : dict of phase -> seconds
    method : {"whitened", "cholesky", "eigh", "qr"}
        The route that produced ``coef``.
    error_estimate : float or None
        The relative error estimate of the solution (in the predictions): after iterative
        refinement the measured estimate of :func:`sprokr.numerics.refine`; of the whitened
        normal equations :func:`whitened_error_bound` (plus the measured
        :func:`float32_error_estimate` for float32); of the plain ones under ``"auto"`` the
        measured :meth:`~sprokr.numerics._ridge_plain.PlainRoutes._measured_plain`; under an explicit ``"cholesky"`` /
        ``"eigh"`` the measured float64 residual probe (:meth:`~sprokr.numerics._ridge_plain.PlainRoutes.probe_estimate`,
        a ``LinAlgWarning``, also logged, when it exceeds the tolerance).  The whitened and
        ``"qr"`` routes from float64 kernel values add (the ``"qr"`` route: is) the formula's
        :func:`~sprokr.numerics.rounding_sensitivity` (``sensitivity``).
    rank : int or None
        Numerical rank of ``R K R^T`` (whitened and stable routes).
    precision : numpy dtype
        Precision of the kernel values and O(n m^2) products of the route taken.
    checks : list of (precision name, error estimate)
        Every checked solve tried (``"plain float64"``, ``"float32"``, ``"whitened refined"``,
        ...), in order (the rejected ones first).
    refinement_steps : int
        Iterative refinement steps applied to ``coef`` (float64 residuals; 0: none).
    sensitivity : float or None
        How far the formula itself moves when ``K~`` moves by its float64 rounding
        (:func:`~sprokr.numerics.rounding_sensitivity`; whitened and stable routes, else None):
        no float64 route evaluates it more closely.  It is part of ``error_estimate``.
    """

    def __init__(self, coef: np.ndarray, support: Any, features: Any, times: dict[str, float], method: str,
                 error_estimate: float | None = None, rank: int | None = None, precision: str | None = None,
                 checks: Any = (), refinement_steps: int = 0, sensitivity: float | None = None) -> None:
        self.coef, self.support, self.features, self.times = coef, support, features, times
        self.method, self.error_estimate, self.rank = method, error_estimate, rank
        self.precision = np.dtype(np.float64 if precision is None else precision)
        self.checks = list(checks)
        self.refinement_steps = int(refinement_steps)
        self.sensitivity = sensitivity

    def fallback_message(self, dtype: DTypeLike) -> str | None:
        """The warning an estimator logs when ``dtype`` was asked for but the solution needed
        float64 kernel values (None when it did not): the estimator then adopts
        ``features.kernel``, ``support`` and ``precision``."""
        dtype = np.dtype(dtype)
        if self.precision == dtype:
            return None
        est = dict(self.checks).get(dtype.name, np.nan)
        return (f"dtype={dtype.name!r} would change this solution by more than {tolerance(dtype):.0e} "
                f"(estimate {est:.2g}): fitted and predicting with float64 kernel values")


SOLVERS = ("auto", "whitened", "mixed", "cholesky", "qr", "eigh")

#: rows replayed by the measured checks (training rows spread over the data; support rows
#: whose column means centre the plain normal equations' blocks), and the target probes
SAMPLE_ROWS = 256
PROBES = 8
#: a float32 request whose kernel values perturb K~'s whitened basis by more than this
#: (measured on the support rows before any pass, :meth:`~sprokr.numerics._ridge_job.RidgeJob.early_float32`) is
#: solved with float64 kernel values from the start: its float32 pass would be rejected
#: and could not be refined
EARLY_FLOAT32_MAX = 1e-2
#: a refinement stops after its first step when that correction (the first solve's error,
#: a lower bound of the contraction) exceeds this: the float64 pass follows at once
MIXED_MAX_FIRST_ERROR = 1e-2


def stable_ridge_solve(RA: np.ndarray, rhs: np.ndarray, Kt: np.ndarray, nlam: float, rcond: float | None = None,
                       semi_normal: bool = False, return_factors: bool = False) -> tuple[Any, ...]:
    """``gamma`` minimising ``|A gamma - T|^2 + nlam gamma^T K~ gamma``, never forming ``A^T A``.

    Parameters
    ----------
    RA : ndarray (m, m)
        Upper triangular factor of ``A = Q R_A`` (:class:`TallSkinnyQR`).
    rhs : ndarray (m, p)
        ``Q^T T``; with ``semi_normal=True``, ``A^T T`` (targets ``I_n``).
    Kt : ndarray (m, m)
        ``K~ = R K R^T`` (symmetric PSD).
    nlam : float
        ``n lam``.
    rcond : float or None
        Relative pivot threshold for the range of ``K~`` (:func:`pivot_tolerance`).
    semi_normal : bool, default=False
        ``rhs`` is ``A^T T`` (targets ``I_n``): the semi-normal equations are solved.
    return_factors : bool, default=False
        Also return ``(whitening, F)``: the :class:`Whitening` of ``K~`` and the lower
        triangular ``F`` (r x r) with ``F F^T = Z^T Z + nlam I`` (None when the rank is 0),
        for :func:`~sprokr.numerics.rounding_sensitivity`.

    Returns
    -------
    gamma : ndarray (m, p)
    rank : int
        Numerical rank of ``K~`` (the dimension of the function space solved in).
    factors : tuple, only with ``return_factors``

    Notes
    -----
    In the whitened basis ``gamma = P_r L_11^-T w`` (:class:`Whitening`) the penalty is
    ``|w|^2`` and ``|A gamma - T|^2 + nlam |w|^2`` is the least-squares problem
    ``[Z; sqrt(nlam) I] w ~ [Q^T T; 0]`` with ``Z = R_A P_r L_11^-T`` (m x r), solved by
    QR (``tpqrt``).  Its condition number is ``sqrt(1 + |Z|^2 / nlam)``, not the square of
    ``A``'s.  With ``semi_normal`` the right-hand side is ``L_11^-1 P_r^T A^T T`` and the
    triangle of that QR is applied twice (the semi-normal equations: ``Q^T T`` for
    ``T = I_n`` would cost O(m n^2)).
    """
    wh = Whitening(Kt, rcond)
    r, p = wh.rank, rhs.shape[1]
    if r == 0:
        return (np.zeros((wh.m, p)), 0) + ((None,) if return_factors else ())
    Zt = wh.apply_inverse(RA.T)  # Z^T = L11^-1 (R_A P_r)^T   (r x m)
    top = np.asfortranarray(np.sqrt(nlam) * np.eye(r))
    Rs, V, Tq = stacked_qr(top, np.asfortranarray(Zt.T), 0)
    Rs = np.triu(Rs)
    if semi_normal:
        y = wh.apply_inverse(rhs)  # B^T A^T T
        y = sla.solve_triangular(Rs, y, trans="T", check_finite=False)
    else:
        y = stacked_qr_apply_t(0, V, Tq, np.zeros((r, p), order="F"), np.array(rhs, dtype=np.float64, order="F"))
    w = sla.solve_triangular(Rs, y, check_finite=False)
    out = (wh.coefficients(w), int(r))
    return out + ((wh, np.asfortranarray(Rs.T)),) if return_factors else out


def spread(size, k):
    """``min(size, k)`` distinct positions spread evenly over ``range(size)``."""
    return np.unique(np.linspace(0, size - 1, min(size, k)).astype(np.intp))


def sandwich(feats, A_sel):
    """``R K R^T`` from the gathered support rows, checked to be PSD on its diagonal."""
    Kt = feats.R.sandwich_from_rows(np.asarray(A_sel, dtype=np.float64))  # R K R^T = W (K R^T)_S
    if np.min(Kt.diagonal(), initial=0.0) < -1e-8 * max(np.max(np.abs(Kt.diagonal()), initial=0.0), 1e-300):
        raise ValueError("the input kernel is not positive semi-definite (negative values on the "
                         "diagonal of R K R^T)")
    return Kt


def check_finite_sums(G, AtT):
    """Non-finite sums of a pass (NaN, inf, overflow) are the kernel's values: a clear error."""
    if not (np.isfinite(G.diagonal()).all() and np.isfinite(AtT).all()):
        raise ValueError("the input kernel returned non-finite values (NaN, inf or overflow) on the "
                         "training data")
