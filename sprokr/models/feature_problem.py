"""The kernel machines' linear problem on features: optimizer choice, its parameters, its run.

Shared by :class:`~sprokr.models.SketchedKernelMachine` (and the joint quantile regressor)
and :class:`~sprokr.models.RFFKernelMachine`: they differ in how they build the features
``Z`` (sketched kernel features, Cholesky factor of the Gram, random Fourier features);
the problem (E1) of :mod:`sprokr.numerics` and its solvers are the same.

* :func:`check_solver_params` -- validates ``optimizer`` and the optimisation parameters,
  resolves ``"auto"`` (closed form for the square loss, else Newton when the loss has an
  entry-wise curvature, else L-BFGS -- finished by Newton where it cannot certify) and warns when Adam's parameters are given to another optimizer;
  :func:`check_optimizer_params` -- its checks that need neither loss nor data (the
  estimators' ``check_params``);
* :class:`FeatureProblemMixin` -- runs the chosen solver, times its phases in
  ``fit_times_`` and records the certificate (``converged_``, ``objective_gap_``);
* :func:`float32_prediction_estimate` -- the measured error estimate of a float32 model
  (the check behind the estimators' float64 fallback).
"""
from __future__ import annotations

import inspect
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla

from ..losses import Loss
from ..numerics import (
    BLOCK_NEWTON_MAX,
    FLOAT32_TOL,
    KernelExpansion,
    NotPositiveDefiniteError,
    SolverResult,
    adam_solve,
    curvature_kind,
    float64_kernel,
    lbfgs_solve,
    matmul,
    newton_applies,
    newton_solve,
    ridge_by_eigengroups,
    small_work_threads,
    upcast_samples,
)
from ..progress import warn_accuracy
from ..utils import check_bool, check_integer, check_positive, take

__all__ = ["check_solver_params", "check_optimizer_params", "FeatureProblem", "FeatureProblemMixin", "SOLVERS", "ADAM_PARAMS", "float32_prediction_estimate", "float32_is_accurate",
           "ExactFloat32Check", "checked_exact_factor", "exact_ridge_float32_estimate", "float32_fallback_message", "spread_rows"]

#: accepted values of ``optimizer``
SOLVERS = ("auto", "closed_form", "newton", "lbfgs", "adam")
#: the parameters only Adam uses
ADAM_PARAMS = ("learning_rate", "batch_size", "max_epochs", "n_iter_no_change")
#: training rows the float32 check replays in float64, and its safety factor: over a sweep
#: of exact machines (2 sizes x 4 kernel widths x 4 ridges, tests/test_kernel_machine.py)
#: the measured change was within 0.26x to 3.2x of the true change of test predictions on
#: the first development machine, 0.25x to 3.2x on an AMD EPYC (another BLAS kernel, other
#: float32 roundings): 5 keeps the estimate above the true change with a 25 % margin on both
CHECK_ROWS, CHECK_SAFETY = 256, 5.0


def check_solver_params(est: Any, loss: Loss, d: int = 1) -> str:
    """Validate the optimisation parameters shared by the kernel machines; returns the
    resolved ``optimizer`` (the training algorithm).

    ``"auto"`` resolves to ``"closed_form"`` for the square loss, ``"newton"`` when the loss's
    curvature is entry-wise (:func:`sprokr.numerics.curvature_kind`: every built-in loss for
    scalar targets, pinball and hinge for any ``d``), else ``"lbfgs"`` -- which
    :class:`FeatureProblemMixin` finishes with Newton when it cannot certify its gap and the
    loss has Hessian blocks (Huber, epsilon-insensitive on vector targets), up to
    ``r d = sprokr.numerics.BLOCK_NEWTON_MAX``.  Adam's parameters (``learning_rate``,
    ``batch_size``, ``max_epochs``, ``n_iter_no_change``) set to other values than their
    defaults with another optimizer trigger a ``UserWarning``: they would be ignored.
    """
    check_optimizer_params(est)
    solver = est.optimizer
    if solver == "auto":
        solver = ("closed_form" if loss.closed_form else "newton" if curvature_kind(loss, d) == "entries"
                  else "lbfgs")
    if solver == "closed_form" and not loss.closed_form:
        raise ValueError(f"optimizer='closed_form' needs the square loss, got {type(loss).__name__}")
    if solver == "newton" and not newton_applies(loss, d):
        raise ValueError(f"optimizer='newton' needs a loss with a curvature (Loss.curvature); {type(loss).__name__} "
                         f"with {d} outputs has none (use optimizer='lbfgs')")
    if solver != "adam":
        defaults = inspect.signature(type(est).__init__).parameters
        given = [name for name in ADAM_PARAMS
                 if name in defaults and getattr(est, name) != defaults[name].default]
        if given:
            warnings.warn(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} used by optimizer='adam' only "
                          f"and ignored by optimizer={solver!r} (optimizer={est.optimizer!r})", UserWarning, stacklevel=3)
    return solver


def check_optimizer_params(est: Any) -> None:
    """The checks of :func:`check_solver_params` that need neither the loss nor the data:
    ``optimizer`` (one of :data:`SOLVERS`), ``max_iter``, ``batch_size``, ``max_epochs``
    and ``n_iter_no_change`` (integers >= 1), ``learning_rate`` (> 0), ``tol`` (>= 0) and
    ``init`` ('ridge' or 'zeros'); a ``ValueError`` naming the parameter otherwise."""
    if est.optimizer not in SOLVERS:
        raise ValueError(f"optimizer must be one of {', '.join(map(repr, SOLVERS))}, got {est.optimizer!r}")
    check_integer(getattr(est, "max_iter", 1), "max_iter")
    check_positive(est.learning_rate, "learning_rate")
    for name in ("batch_size", "max_epochs", "n_iter_no_change"):
        check_integer(getattr(est, name), name)
    check_positive(est.tol, "tol", strict=False)
    if est.init not in ("ridge", "zeros"):
        raise ValueError(f"init must be 'ridge' or 'zeros', got {est.init!r}")


@dataclass(frozen=True)
class FeatureProblem:
    """The validated problem (E1) a kernel machine's fit solves, passed by name between its
    phases (features, closed form, iterative solve, float64 refit).

    Attributes
    ----------
    Y : ndarray (n, d)
        The targets as the solvers see them (centred and scaled with ``normalize_y``).
    lam : float
        Ridge penalty (> 0).
    V, e : ndarray (d, d), (d,)
        Eigenvectors and eigenvalues of the output matrix ``M = V diag(e) V^T``.
    optimizer : str
        The resolved optimiser ("closed_form", "newton", "lbfgs" or "adam").
    loss : Loss
    rng : numpy.random.Generator
        Adam's mini-batches.
    """

    Y: np.ndarray
    lam: float
    V: np.ndarray
    e: np.ndarray
    optimizer: str
    loss: Loss
    rng: np.random.Generator

    @property
    def n(self) -> int:
        """Number of training samples."""
        return int(self.Y.shape[0])


class FeatureProblemMixin:
    """The linear problem (E1) on features ``Z``: closed form, Newton, L-BFGS or Adam.

    Sets ``converged_``, ``n_iter_``, ``n_epochs_``, ``objective_``, ``objective_gap_`` and
    the phases ``"init"`` (the square-loss starting point) and ``"solve"`` of
    ``fit_times_`` (a dict the estimator creates).
    """

    def _solve_on_features(self, Z, P, C0=None):
        """Output coefficients ``C`` (r, d) of the linear problem ``P`` on features ``Z`` (n, r).

        ``C0``: a known square-loss solution (else computed from ``Z^T Z`` when needed).
        """
        Y, solver, loss, lam, V, e, rng = P.Y, P.optimizer, P.loss, P.lam, P.V, P.e, P.rng
        n = Z.shape[0]
        t = time.perf_counter()
        if C0 is None and (solver == "closed_form" or self.init == "ridge"):
            C0 = ridge_by_eigengroups(matmul(Z.T, Z), matmul(Z.T, Y.astype(Z.dtype)), n, lam, V, e)
            self.fit_times_["init"] = time.perf_counter() - t
        if solver == "closed_form":
            self._closed_form_done()
            return C0
        r, d = Z.shape[1], Y.shape[1]
        if not np.any(loss.value(np.zeros_like(Y, dtype=np.float64), Y)):
            # every target in the loss's flat zone at 0 (an epsilon tube wider than the
            # targets): F(0) = 0 is the minimum and f = 0 the unique minimiser.  A relative
            # duality gap cannot certify an objective of 0 (iterates reach 1e-33 over 1e-33)
            self.optimizer_, self.converged_, self.n_epochs_, self.objective_ = solver, True, 0, [0.0]
            self.objective_gap_, self.n_iter_ = 0.0, 1
            return np.zeros((r, d))
        t = time.perf_counter()
        # An iterative solver's step is a few short BLAS calls between elementwise passes; two
        # BLAS threads -- and numpy's and scipy's pools, each spinning beside the other's calls
        # -- made them 7-15x slower on benchmarks/robust_regression.py (n = 10000, r = 140,
        # epsilon-insensitive: Newton 0.45 -> 0.06 s, L-BFGS 2.3 -> 0.15 s on one thread).  One
        # BLAS thread unless a step's largest product (Newton: the Hessian, n r^2 d; L-BFGS: the
        # gradient, n r d) is large enough to gain from two.
        if solver == "newton":
            with small_work_threads(float(n) * r * r * d):
                res = newton_solve(Z, Y, loss, lam, V, e, coef0=C0, tol=self.tol, max_iter=self.max_iter,
                                   verbose=self.verbose)
        elif solver == "lbfgs":
            # auto on a loss with Hessian blocks (a residual norm, d > 1): L-BFGS's steps are
            # cheaper than Newton's r d x r d systems and certify most problems; in hard
            # regimes (small ridge, flat kernel, a narrow tube) it stalls uncertified, and
            # Newton finishes from its iterate
            finish = (self.optimizer == "auto" and r * d <= BLOCK_NEWTON_MAX
                      and curvature_kind(loss, d) == "blocks")
            with small_work_threads(float(n) * r * d), warnings.catch_warnings(record=finish) as caught:
                if finish:  # recorded whatever the caller's filters (re-issued below if Newton does not run)
                    warnings.simplefilter("always")
                res = lbfgs_solve(Z, Y, loss, lam, V, e, coef0=C0, tol=self.tol, max_iter=self.max_iter,
                                  verbose=self.verbose)
            if finish and not res.converged:
                with small_work_threads(float(n) * r * r * d):
                    fin = newton_solve(Z, Y, loss, lam, V, e, coef0=res.coef, tol=self.tol, max_iter=self.max_iter,
                                       verbose=self.verbose)  # (it warns if it cannot certify either)
                solver, best = "lbfgs+newton", fin if fin.converged or _gap_key(fin) <= _gap_key(res) else res
                res = SolverResult(best.coef, fin.converged, res.n_epochs + fin.n_epochs,
                                   list(res.objective) + list(fin.objective), best.gap)
            else:
                for w in caught or ():  # L-BFGS's own warnings, kept when Newton did not run
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        else:  # the former route, the baseline of the benchmarks: left as it was
            res = adam_solve(
                Z, Y, loss, lam, V, e, coef0=C0, learning_rate=self.learning_rate,
                batch_size=self.batch_size, max_epochs=self.max_epochs, tol=self.tol,
                n_iter_no_change=self.n_iter_no_change, rng=rng, verbose=self.verbose,
            )
        self.fit_times_["solve"] = time.perf_counter() - t
        self.optimizer_ = solver
        self.converged_, self.n_epochs_, self.objective_ = res.converged, res.n_epochs, res.objective
        self.objective_gap_ = res.gap
        self.n_iter_ = max(1, int(res.n_epochs))
        return res.coef

    def _closed_form_done(self):
        """Solver attributes of a direct solve (exact: gap 0, one 'iteration')."""
        self.converged_, self.n_epochs_, self.objective_, self.objective_gap_ = True, 0, [], 0.0
        self.n_iter_, self.optimizer_ = 1, "closed_form"

    def _check_normalize_y(self):
        """``normalize_y`` is a bool (checked without data: ``check_params``)."""
        check_bool(self.normalize_y, "normalize_y")

    def _normalised_targets(self, Y, loss):
        """``(Y', mean, scale)``: targets centred and scaled per column when ``normalize_y``.

        The machines have no intercept; centring lets the kernel model the variation
        around the mean, and unit scale makes ``learning_rate``, ``kappa`` and ``epsilon``
        independent of the target's units (they are then in standard deviations).
        """
        self._check_normalize_y()
        d = Y.shape[1]
        if not self.normalize_y:
            return Y, np.zeros(d), np.ones(d)
        if getattr(loss, "labels", False):
            raise ValueError(f"normalize_y=True would change the class labels the {type(loss).__name__} "
                             "needs; use normalize_y=False")
        mean, scale = Y.mean(axis=0), Y.std(axis=0)
        scale[scale == 0] = 1.0  # a constant target is only centred
        return (Y - mean) / scale, mean, scale

    @property
    def n_outputs_(self) -> int:
        """Number of columns ``d`` the fitted model predicts (read from the fitted state, so
        that models saved before it existed have it too)."""
        return int(np.shape(self.y_mean_)[0])  # type: ignore[attr-defined]

    def _finish_predict(self, P):
        P = P * self.y_scale_ + self.y_mean_  # back to the units of the training targets
        return P[:, 0] if self._scalar else P


def _gap_key(res):
    """A solver result's certified relative gap, for comparison (inf when unknown)."""
    return np.inf if res.gap is None else res.gap


def spread_rows(n: int, k: int = CHECK_ROWS) -> np.ndarray:
    """Row indices spread evenly over ``n`` rows (``min(n, k)`` of them, sorted)."""
    return np.unique(np.linspace(0, n - 1, min(n, k)).round().astype(np.intp))


def float32_fallback_message(est: float, what: str) -> str | None:
    """The warning of a float32 check whose estimate ``est`` exceeds ``FLOAT32_TOL`` (None
    when float32 is kept); ``what``: what the model recomputes in float64."""
    if est <= FLOAT32_TOL:
        return None
    if not np.isfinite(est):
        return (f"dtype='float32': the float32 {what} are too coarse for this model (its system is not "
                f"numerically positive definite with them): refitted and predicting with float64 {what}")
    return (f"dtype='float32' would change this model's predictions by more than {FLOAT32_TOL:.0e} "
            f"(estimate {est:.2g}): refitted and predicting with float64 {what}")


def float32_is_accurate(model: Any, est: float, what: str, started: float) -> bool:
    """Record the float32 check of a fitted model and say whether float32 is kept.

    Stores ``solver_error_estimate_ = est`` and ``fit_times_["float32_check"]`` (since
    ``started``, a ``time.perf_counter()`` value); above ``FLOAT32_TOL`` it warns
    (:func:`~sprokr.progress.warn_accuracy`) naming ``what`` the model recomputes in float64
    (e.g. "kernel values") and returns False.
    """
    model.solver_error_estimate_ = est
    model.fit_times_["float32_check"] = time.perf_counter() - started
    message = float32_fallback_message(est, what)
    if message is None:
        return True
    warn_accuracy(message, model)
    return False


def float32_prediction_estimate(kernel32: Any, kernel64: Any, support: Any, coef: np.ndarray, sample: Any,
                                products: Any = np.float32) -> float:
    """Measured relative change of a float32 kernel model when it computes in float64.

    ``g(x) = k(x, support) coef`` is evaluated at ``sample`` (prepared training rows) as
    the model predicts -- float32 kernel values, products in ``products`` (float32:
    :class:`KernelExpansion`'s centred products; float64 for a model that multiplies its
    float32 kernel values in float64, e.g. exact IOKR) -- and with float64 kernel values
    on the same (upcast) samples; the estimate is
    ``CHECK_SAFETY * max |g_32 - g_64| / max |g_64|``.  With a tiny ridge the coefficients
    cancel and this prediction error is what float32 costs; it also measures the size of
    the kernel's rounding error against the solution, which moves the solution by about as
    much (the calibration in ``CHECK_SAFETY``'s comment).
    """
    g32 = KernelExpansion(kernel32, support, coef, products)(sample)
    g64 = KernelExpansion(kernel64, upcast_samples(support), coef, np.float64)(upcast_samples(sample))
    scale = float(np.abs(g64).max(initial=0.0))
    diff = float(np.abs(g32 - g64).max(initial=0.0))
    if not np.isfinite(diff):
        return np.inf
    return 0.0 if scale == 0 and diff == 0 else CHECK_SAFETY * diff / max(scale, 1e-300)


def exact_ridge_float32_estimate(kernel32: Any, Xp: Any, factor: Any, T: np.ndarray,
                                 products: Any = np.float32) -> float:
    """:func:`float32_prediction_estimate` of an exact kernel ridge fitted with float32
    kernel values.

    ``factor``: the Cholesky factor of ``K_32 + n lam I`` (``scipy.linalg.cho_solve``'s
    pair, n x n) on the prepared training inputs ``Xp`` (n samples); ``T`` (n x k): the
    targets the model regresses, or a few probes of them (exact IOKR regresses ``I_n``:
    its scores of a few candidates).  The ridge of ``T`` is solved with the float32
    factor and replayed on :data:`CHECK_ROWS` training rows with float32 and float64
    kernel values: O(n k + CHECK_ROWS n) on top of the O(n^3) fit.
    """
    coef = sla.cho_solve(factor, np.asarray(T, dtype=np.float64), check_finite=False)
    sample = take(Xp, spread_rows(coef.shape[0]))
    return float32_prediction_estimate(kernel32, float64_kernel(kernel32), Xp, coef, sample, products)


@dataclass(frozen=True)
class ExactFloat32Check:
    """What :func:`checked_exact_factor` decided: the kernel, prepared inputs and factor the
    model keeps (float64 ones after a refit), the estimate, the warning (None when float32
    is kept) and the phases' seconds (``float32_check``, ``float64_refit``)."""

    kernel: Any
    Xp: Any
    factor: Any
    estimate: float
    message: str | None
    times: dict


def checked_exact_factor(kernel32: Any, Xp: Any, factorise: Any, T: np.ndarray,
                         products: Any = np.float32) -> ExactFloat32Check:
    """An exact ridge's factor with float32 kernel values, checked, and refitted with float64
    ones when float32 costs too much.

    ``factorise(kernel, Xp)`` gives the Cholesky factor of ``K + n lam I`` with ``kernel``'s
    values on the prepared inputs ``Xp``.  With ``kernel32`` its float32 check
    (:func:`exact_ridge_float32_estimate`) decides; above ``FLOAT32_TOL`` -- or when the
    float32 factorisation fails (:class:`~sprokr.numerics.NotPositiveDefiniteError`: float32
    rounding of a large ``|K|`` above ``n lam``; estimate ``inf``) -- the factor is
    recomputed with float64 kernel values on the upcast inputs (a failure there is the
    model's own and raises).  The one implementation of exact IOKR / ISOKR's and
    :class:`~sprokr.models.KernelRidgeRegressor`'s check; the caller logs the message."""
    try:
        factor = factorise(kernel32, Xp)
    except NotPositiveDefiniteError:
        factor = None
    t = time.perf_counter()
    est = np.inf if factor is None else exact_ridge_float32_estimate(kernel32, Xp, factor, T, products)
    times = {"float32_check": time.perf_counter() - t}
    message = float32_fallback_message(est, "kernel values")
    if message is None:
        return ExactFloat32Check(kernel32, Xp, factor, est, None, times)
    t = time.perf_counter()
    kernel64, Xp64 = float64_kernel(kernel32), upcast_samples(Xp)
    factor = factorise(kernel64, Xp64)
    times["float64_refit"] = time.perf_counter() - t
    return ExactFloat32Check(kernel64, Xp64, factor, est, message, times)
