"""Sketched kernel machines with Lipschitz losses, scalar and multi-output (p-sparsified paper).

With a sketch ``R = W S`` (m x n) the substitution ``A = R^T Gamma`` turns the decomposable
kernel machine ``f(x) = sum_j k(x, x_j) M alpha_j`` into

    min_Gamma (1/n) sum_i l([K R^T Gamma M]_i, y_i) + lam/2 Tr(R K R^T Gamma M Gamma^T)   (P)

solved on the equivalent linear problem of :mod:`sprokr.numerics` (``ridge_by_eigengroups``,
``newton_solve``, ``lbfgs_solve``, ``adam_solve``; :mod:`sprokr.models.feature_problem`) with the sketched
feature map ``z(x) = D^-1/2 U^T R k^x`` (:class:`SketchedFeatures`, eigenpairs of
``R K R^T``).  Only the kernel columns of the ``m'`` non-null columns of ``R`` are computed
(decomposition trick), and the learned function is stored as coefficients on those
samples: ``f(x) = k(x, X[indices]) beta`` with ``beta = W^T U D^-1/2 C`` (m' x d).

Without a sketch the machine is exact (the baseline of every benchmark): square loss by
Cholesky of ``e K + n lam I``; other losses on the features ``L`` of ``K = L L^T`` (or
``U D^1/2`` from the eigenpairs above ``rcond`` when ``K`` is numerically singular).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Self

import logging
import time

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
import scipy.linalg as sla
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..numerics import (
    DEFAULT_RCOND,
    ClientClosedError,
    KernelExpansion,
    KernelRows,
    LocalExecutor,
    SketchedFeatures,
    check_gram_block,
    check_kernel_sample,
    default_chunk_size,
    psd_eigh,
    ridge_by_eigengroups,
    sketched_ridge,
    whitened_system,
)
from ..kernels.base import fit_on_training_inputs
from ..progress import log_estimator
from ..utils import (
    atomic_fit,
    consistent_read,
    check_chunk_size,
    copy_with_coef,
    NamedPrepare,
    check_positive,
    check_random_state,
    num_samples,
    resolve_dtype,
)
from ..deprecation import RenamedParametersMixin
from ..persistence import SaveMixin
from ..losses import Loss, PinballLoss, check_quantile_levels
from ..registry import get_registry
from ..kernels import resolve_kernel
from ..numerics import resolve_executor
from ..sketches import resolve_sketch
from .output_matrix import check_output_matrix, joint_quantile_matrix
from .feature_problem import (
    FeatureProblem,
    FeatureProblemMixin,
    check_solver_params,
    float32_is_accurate,
    float32_prediction_estimate,
    spread_rows,
    upcast_samples,
)
from .base import check_n_features, set_n_features

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..sketches.base import Sketch
    from ..types import RandomStateLike

__all__ = ["SketchedKernelMachine", "JointQuantileRegressor", "FeatureProblemMixin", "check_targets", "check_solver_params"]


#: ``log10`` of the largest sum of squared targets accepted (float64 overflows at ~1.8e308;
#: a margin of 1e8 for the sums of residuals, gradients and duality gaps built from them)
_MAX_LOG10_SQUARES = 300.0


def check_targets(y: ArrayLike, n: int, owner: str = "this estimator") -> tuple[np.ndarray, bool]:
    """Targets as a float64 (n, d) copy and whether they were 1-D."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None")
    try:
        y = np.asarray(y)
    except (TypeError, ValueError):  # rows of different lengths
        raise ValueError("y must be numbers of shape (n,) or (n, d); its rows have different lengths "
                         "(a ragged collection)") from None
    if y.dtype.kind == "c":
        raise ValueError("Complex data not supported: y must hold real numbers")
    try:
        Y = np.array(y, dtype=np.float64)  # a copy: the caller's array is never touched
    except (TypeError, ValueError):
        what = "rows of different lengths (a ragged collection)" if y.dtype == object and any(
            isinstance(v, (list, tuple, np.ndarray)) for v in y.ravel()) else f"values of dtype {y.dtype}"
        raise ValueError(f"y must be numbers of shape (n,) or (n, d), got {what}") from None
    if Y.ndim not in (1, 2):
        raise ValueError(f"y must be 1-D (n,) or 2-D (n, d), got {Y.ndim}-D")
    if Y.shape[0] != n:
        raise ValueError(f"X and y have different numbers of samples: {n} and {Y.shape[0]}")
    if not np.all(np.isfinite(Y)):
        raise ValueError("y contains NaN or infinite values")
    big = float(np.max(np.abs(Y))) if Y.size else 0.0
    # the losses, their duality gaps and the R^2 / D^2 scores sum squared residuals over
    # the samples: refuse targets whose squares overflow float64 (a fit would only produce
    # inf or NaN, slowly)
    if big > 0 and 2 * np.log10(big) + np.log10(Y.size) > _MAX_LOG10_SQUARES:
        raise ValueError(f"y holds values up to {big:.3g}: {owner}'s losses and scores sum squared "
                         f"residuals, which overflow float64 at this scale (|y| must stay below "
                         f"{10 ** ((_MAX_LOG10_SQUARES - np.log10(Y.size)) / 2):.3g} for {Y.size} targets); "
                         f"rescale y (e.g. divide it by a constant)")
    scalar = Y.ndim == 1
    return (Y[:, None] if scalar else Y), scalar


class SketchedKernelMachine(RenamedParametersMixin, SaveMixin, FeatureProblemMixin, RegressorMixin, BaseEstimator):
    """Kernel machine with a generic loss, optional sketching and a decomposable kernel ``k M``.

    Parameters
    ----------
    kernel : str or Kernel, default "gaussian"
        Input kernel (registered name or instance).
    kernel_params : dict, optional
        Parameters of a kernel given by name, e.g. ``{"sigma2": 10.0}``.
    loss : str or Loss, default "square"
        ``square``, ``huber``, ``epsilon_insensitive``, ``pinball``, ``hinge`` or a plugin's.
    loss_params : dict, optional
        e.g. ``{"kappa": 1.0}``, ``{"epsilon": 0.1}``, ``{"tau": 0.9}``.
    lam : float > 0
        Regularisation: objective ``(1/n) sum l(f(x_i), y_i) + lam/2 |f|^2``.
    input_sketch : str, Sketch or None
        ``None``: exact machine.  Names: ``subsample``/``nystrom``, ``gaussian``, ``psr``,
        ``psg``, ``psparsified``, ``accumulation``, ``countsketch``, ``identity``.
        (Formerly ``sketch``.)
    m_x : int, optional
        Sketch size when the sketch is given by name (formerly ``m``).
    input_sketch_params : dict, optional
        e.g. ``{"p": 20 / n}`` for p-SR / p-SG, ``{"m_acc": 20}`` for accumulation
        (formerly ``sketch_params``).
    output_matrix : None, "identity" or array (d, d)
        ``M`` of the decomposable kernel (symmetric PSD); see
        :func:`sprokr.models.graph_laplacian_matrix` and :func:`joint_quantile_matrix`.
    optimizer : {"auto", "closed_form", "newton", "lbfgs", "adam"}
        The training algorithm (formerly ``solver``).  ``auto``: closed form for the square loss; Newton
        (:func:`sprokr.numerics.newton_solve`: Moreau envelopes of decreasing width and an
        active-set finish for non-smooth losses) when the loss is a sum of functions of
        single prediction entries (pinball, hinge; every built-in loss for scalar targets);
        L-BFGS otherwise (:func:`sprokr.numerics.lbfgs_solve`; Huber / epsilon-insensitive
        on vector targets).  ``adam``: seeded mini-batch Adam (:func:`sprokr.numerics.adam_solve`).
    tol : float
        Relative duality gap at which the solution is accepted: ``converged_`` is True only
        when the gap of the returned solution is certified below ``tol``
        (``objective_gap_``; the loss's conjugate gives the certificate).  The default 1e-4
        puts the returned objective within 0.01 % of the optimum.
    max_iter : int
        Iterations in total of the Newton solver (steps and active-set iterations: tens
        usually) or of L-BFGS (a smoothing stage gets at most a third; sketched problems
        need tens to hundreds, the exact machine up to a few thousand).  Default 3000.
    learning_rate, batch_size, max_epochs, n_iter_no_change :
        Adam's step size, mini-batch size, epoch budget and step-halving rule
        (:func:`sprokr.numerics.adam_solve`), used by ``optimizer="adam"`` only (set with
        another solver, a ``UserWarning`` says they are ignored).
    init : {"ridge", "zeros"}
        The iterative solvers' starting point: the square-loss solution (one r x r
        Cholesky) or zero.
    dtype : {"float64", "float32"}
        Precision of kernel blocks and features (the r x r systems are solved in float64).
        float32 is checked: the sketched closed form by the sketched ridge's check, the
        other routes by replaying the fitted model on 256 training rows with float64 kernel
        values; when the measured estimate (``solver_error_estimate_``) exceeds 1e-4 the
        model is refitted with float64 kernel values (``dtype_`` then says float64, and a
        warning goes through the ``sprokr.<class name>`` logger).
    rcond : float, optional
        Relative eigenvalue threshold of the iterative solvers' feature map (default 1e-10
        in float64, 1e-6 in float32); the sketched closed form's relative pivot threshold of
        ``R K R^T`` (default: its rounding level; :func:`sprokr.numerics.sketched_ridge`).
    chunk_size : int, optional
        Training rows per kernel block (default from a 64 MB budget).
    normalize_y : bool, default False
        Centre and scale each target column with its training mean and standard deviation
        before fitting (predictions are mapped back).  Recommended for targets far from
        zero or not of unit scale; ``False`` solves the paper's problem on the raw targets.
    executor, executor_params : runs the chunked passes (``"local"`` default, ``"dask"``).
    random_state : None, int, numpy.random.Generator or RandomState
        Seeds the sketch, then Adam's mini-batch order.
    verbose : bool

    Attributes
    ----------
    kernel_, loss_ : the resolved components
    sketch_matrix_ : SketchMatrix or None
    output_matrix_ : ndarray (d, d)
    coef_ : ndarray (m' or n, d)
        Coefficients on ``X_support_``: ``f(x) = k(x, X_support_) coef_``.
    X_support_ : prepared samples (the ``m'`` selected training points, or all of them)
    rank_ : int, dimension ``r`` of the feature map (n for the exact machine)
    dtype_ : numpy dtype, the precision the model predicts in
    y_mean_, y_scale_ : ndarray (d,), the target normalisation (0 and 1 without ``normalize_y``)
    optimizer_ : str
        The optimizer that ran: ``"closed_form"``, ``"newton"``, ``"lbfgs"`` or ``"adam"``.
    converged_ : bool
        True when the relative duality gap is certified below ``tol`` (always for the closed form).
    objective_gap_ : float or None
        The certified relative duality gap of the solution (None when the loss has no conjugate).
    n_epochs_ : int
        Newton steps plus active-set iterations, L-BFGS iterations or Adam epochs (0 for
        the closed form).
    n_iter_ : int
        The same, at least 1 (scikit-learn's convention; 1 for the closed form).
    objective_ : list of float
        The objective after each solver stage (Newton, L-BFGS; the last one is the returned
        solution's) or epoch (Adam).
    solver_error_estimate_ : float or None
        With ``dtype="float32"``: the measured relative error estimate of the float32 route
        (of the sketched ridge for the sketched closed form); kept after a float64 refit,
        which ``dtype_`` shows.  None in float64 (the sketched closed form: its route's estimate).
    n_train_ : int
    fit_time_ : float
        Training time (s).
    fit_times_ : dict of phase -> seconds
        ``gram``, ``features``, ``init``, ``solve``, ``closed_form`` (or the sketched ridge's
        ``ridge_*`` phases), ``float32_check``, ``float64_refit``: those that ran.

    Memory: the sketched closed form is the numerics' sketched ridge (whitened normal
    equations summed over row chunks: O(m^2 + chunk x m'); with an output matrix of several
    eigenvalues, its float64 whitened system solved per eigengroup); the iterative solvers
    keep the n x r features.  The exact machine holds the n x n Gram.

    The former names ``sketch``, ``m``, ``sketch_params`` and ``solver`` still work until
    sprokr 0.3, with a ``FutureWarning`` (``docs/parameters.md``).
    """

    #: deprecated parameter names (sprokr.deprecation): old -> new
    renamed_parameters = {"sketch": "input_sketch", "m": "m_x", "sketch_params": "input_sketch_params",
                          "solver": "optimizer"}

    def __init__(self, kernel: str | Kernel = "gaussian", kernel_params: Mapping[str, Any] | None = None,
                 loss: str | Loss = "square", loss_params: Mapping[str, Any] | None = None, lam: float = 1e-4,
                 input_sketch: str | Sketch | None = None, m_x: int | None = None,
                 input_sketch_params: Mapping[str, Any] | None = None, output_matrix: ArrayLike | str | None = None,
                 optimizer: str = "auto", learning_rate: float = 1e-2, batch_size: int = 256, max_epochs: int = 100,
                 max_iter: int = 3000, tol: float = 1e-4, n_iter_no_change: int = 5, init: str = "ridge",
                 dtype: DTypeLike = "float64", rcond: float | None = None, chunk_size: int | None = None,
                 normalize_y: bool = False, executor: Any = "local", executor_params: Mapping[str, Any] | None = None,
                 random_state: RandomStateLike = None, verbose: bool | int = False) -> None:
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.loss = loss
        self.loss_params = loss_params
        self.lam = lam
        self.input_sketch = input_sketch
        self.m_x = m_x
        self.input_sketch_params = input_sketch_params
        self.output_matrix = output_matrix
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.init = init
        self.dtype = dtype
        self.rcond = rcond
        self.chunk_size = chunk_size
        self.normalize_y = normalize_y
        self.executor = executor
        self.executor_params = executor_params
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # vector kernels take scipy sparse matrices
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    # ------------------------------------------------------------------ hooks
    def _loss_and_targets(self, y, n):
        """(loss, Y (n, d), scalar?, output matrix spec) -- overridden by the quantile regressor."""
        Y, scalar = check_targets(y, n, type(self).__name__)
        loss = get_registry().create("loss", self.loss, self.loss_params, base=Loss)
        return loss, Y, scalar, self.output_matrix

    # ------------------------------------------------------------------ fit
    @atomic_fit
    def fit(self, X: Any, y: Any) -> Self:
        """Fit on ``n`` samples.  ``X``: what the kernel accepts; ``y``: (n,) or (n, d).  Returns self."""
        t0 = time.perf_counter()
        n = num_samples(X, "X")
        if n < 1:
            raise ValueError("cannot fit on 0 samples: X is empty")
        loss, Y, scalar, M_spec = self._loss_and_targets(y, n)
        loss.validate(Y.shape[1], Y)  # on the targets as given (hinge: labels +-1)
        Y, y_mean, y_scale = self._normalised_targets(Y, loss)
        d = Y.shape[1]
        M, V, e = check_output_matrix(M_spec, d)
        lam = check_positive(self.lam, "lam")
        dtype = resolve_dtype(self.dtype)
        solver = check_solver_params(self, loss, d)
        chunk = check_chunk_size(self.chunk_size)
        rcond = self.rcond
        if rcond is not None:
            rcond = check_positive(rcond, "rcond", strict=False)
        kernel = resolve_kernel(self.kernel, self.kernel_params, "input", dtype)
        kernel = fit_on_training_inputs(kernel, X)  # data-dependent kernels: a fitted copy
        sketch = resolve_sketch(self.input_sketch, self.m_x, self.input_sketch_params, n, "input")
        executor = resolve_executor(self.executor, self.executor_params)
        rng = check_random_state(self.random_state)
        R = sketch.draw(n, rng) if sketch is not None else None
        parts = executor.partition(X, Y, prepare=(NamedPrepare(kernel.prepare, "X"), None), names=("inputs", "targets"))
        sample = np.arange(min(n, 64)) if R is None else R.indices[:64]
        check_kernel_sample(kernel, executor.take_rows(parts, sample, which="inputs"), "kernel")

        # ---- validated: learned state starts here; any failure restores the previous state
        previous = dict(self.__dict__)
        try:
            self.kernel_, self.loss_, self.sketch_matrix_, self.executor_ = kernel, loss, R, executor
            self.output_matrix_, self.n_train_, self._scalar = M, n, scalar
            self.y_mean_, self.y_scale_, self.dtype_ = y_mean, y_scale, dtype
            # float32 kernel blocks resolve eigenvalues of R K R^T down to ~1e-7 of the largest
            if rcond is None:
                rcond = DEFAULT_RCOND if dtype == np.float64 else 1e-6
            self.fit_times_: dict[str, float] = {}
            self.solver_error_estimate_: float | None = None
            P = FeatureProblem(Y, lam, V, e, solver, loss, rng)
            rcond64 = DEFAULT_RCOND if self.rcond is None else rcond
            if R is None:
                self._fit_exact(parts, P, rcond, chunk)
                refit = lambda: self._fit_exact(parts, P, rcond64, chunk, upcast=True)  # noqa: E731
            else:
                self._fit_sketched(parts, P, R, rcond, chunk)
                refit = lambda: self._fit_sketched_iterative(parts, P, R, rcond64, chunk, upcast=True)  # noqa: E731
            # float32 asked for: the sketched closed form checked itself (sketched_ridge);
            # the exact machine and the iterative solvers are checked here
            if self.dtype_ == np.float32 and not (R is not None and solver == "closed_form"):
                self._check_float32(parts, refit)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(previous)
            raise
        self.fit_time_ = time.perf_counter() - t0
        log_estimator(self, f"fit in {self.fit_time_:.3f} s, rank {self.rank_} ("
                      + ", ".join(f"{k} {v:.3f} s" for k, v in self.fit_times_.items()) + ")")
        return self

    def _check_float32(self, parts, refit):
        """The measured error estimate of the float32 model (``solver_error_estimate_``); above
        ``FLOAT32_TOL`` the model is refitted with float64 kernel values (and a warning)."""
        t = time.perf_counter()
        sample = self.executor_.take_rows(parts, spread_rows(self.n_train_), which="inputs")
        kernel64 = _float64_twin(self.kernel_)
        est = float32_prediction_estimate(self.kernel_, kernel64, self.X_support_, self.coef_, sample)
        if float32_is_accurate(self, est, "kernel values", t):
            return
        t = time.perf_counter()
        self.kernel_, self.dtype_ = kernel64, np.dtype(np.float64)
        refit()
        self.fit_times_["float64_refit"] = time.perf_counter() - t

    def _fit_sketched(self, parts, P, R, rcond, chunk):
        if P.optimizer == "closed_form":
            support = self.executor_.take_rows(parts, R.indices, which="inputs")
            chunk = chunk or default_chunk_size(R.indices.size, self.dtype_)
            t = time.perf_counter()
            self._fit_sketched_closed_form(parts, P, R, support, chunk)
            if not self.fit_times_:  # (the sketched ridge reports its own phases)
                self.fit_times_["closed_form"] = time.perf_counter() - t
            return
        self._fit_sketched_iterative(parts, P, R, rcond, chunk)

    def _fit_sketched_iterative(self, parts, P, R, rcond, chunk, upcast=False):
        dtype, ex = self.dtype_, self.executor_
        t = time.perf_counter()
        support = ex.take_rows(parts, R.indices, which="inputs")
        if upcast:
            support = upcast_samples(support)
        chunk = chunk or default_chunk_size(R.indices.size, dtype)
        feats = SketchedFeatures(self.kernel_, R, support, dtype, rcond)
        feats.fit_basis()  # B: U D^-1/2 or P_r L^-T, z = B^T R k^x
        # the iterative solvers revisit every row: the n x r features are kept
        Z = ex.map_rows(parts, _FeatureRows(feats, upcast), chunk, name="sketched features", which="inputs")
        self.fit_times_["features"] = time.perf_counter() - t
        C = self._solve_on_features(Z, P)
        self.rank_ = feats.rank
        self.X_support_ = feats.Z_sel
        self._set_coef(R.apply_left_transpose(feats.basis_times(C)))

    def _fit_sketched_closed_form(self, parts, P, R, support, chunk):
        """(E2) on the sketched features by the numerics' sketched ridge (whitened normal
        equations: no squared condition number; float32 checked, float64 fallback).

        One eigenvalue ``e0`` of ``M`` (``M = e0 I``, the default): ``C = (Z^T Z + n lam / e0
        I)^-1 Z^T Y`` is the sketched ridge with ``lam / e0``.  Several: the whitened system
        (float64) solved per eigengroup.
        """
        ex, dtype = self.executor_, self.dtype_
        Y, n, lam, V, e = P.Y, P.n, P.lam, P.V, P.e
        pos = e[e > 0]
        rcond = None if self.rcond is None else float(self.rcond)
        ref = Y[R.indices]
        if pos.size == e.size and np.ptp(pos) <= 1e-12 * pos.max():
            sol = sketched_ridge(self.kernel_, R, support, parts, lam / float(pos.max()), np.asarray, Y.shape[1],
                                 rcond, chunk, ex, dtype=dtype, ref_targets=ref)
            coef, feats, rank, precision = sol.coef, sol.features, sol.rank, sol.precision
            self.solver_error_estimate_ = sol.error_estimate
            self.fit_times_.update({f"ridge_{k}": v for k, v in sol.times.items()})
            fallback = sol.fallback_message(dtype)
            if fallback:
                log_estimator(self, fallback, logging.WARNING)
        else:
            system = whitened_system(self.kernel_, R, support, parts, np.asarray, Y.shape[1], rcond, chunk, ex,
                                     ref_targets=ref)
            coef = system.coef(ridge_by_eigengroups(system.G, system.B, n, lam, V, e))
            feats, rank, precision = system.features, system.whitening.rank, np.dtype(np.float64)
            if precision != dtype:
                log_estimator(self, f"dtype={np.dtype(dtype).name!r}: with several output-matrix eigenvalues the "
                              "closed form is solved with float64 kernel values; predicting in float64")
        if precision != dtype:  # float64 kernel values from here on
            self.kernel_, self.dtype_ = feats.kernel, np.dtype(precision)
        self.rank_ = int(feats.m if rank is None else rank)
        self.X_support_ = feats.Z_sel
        self._closed_form_done()
        self._set_coef(coef)

    def _fit_exact(self, parts, P, rcond, chunk, upcast=False):
        """Exact machine: n x n Gram (float64); (E2) with G = K, or the iterative solver on
        features ``Z`` with ``Z Z^T = K`` (Cholesky; the eigenpairs above ``rcond`` when ``K``
        is numerically singular)."""
        from ._sisokr_rows import all_rows

        Y, n, lam, V, e, solver = P.Y, P.n, P.lam, P.V, P.e, P.optimizer
        t = time.perf_counter()
        Xp = all_rows(self.executor_, parts, "inputs")
        if upcast:
            Xp = upcast_samples(Xp)
        K = self._gram(parts, Xp, n, chunk, upcast)
        self.fit_times_["gram"] = time.perf_counter() - t
        self.X_support_, self.rank_ = Xp, n
        t = time.perf_counter()
        if solver == "closed_form" or self.init == "ridge":
            # ridge_by_eigengroups with G = K, H = Y: alpha~_j = e_j (e_j K + n lam I)^-1 y~_j
            try:
                beta0 = ridge_by_eigengroups(K, Y, n, lam, V, e, overwrite_g=solver == "closed_form")
            except np.linalg.LinAlgError:
                # e K + n lam I numerically indefinite (tiny lam, flat kernel) and K was
                # factorised in place: recompute it and solve through its eigenpairs
                K = self._gram(parts, Xp, n, chunk, upcast)
                beta0 = ridge_by_eigengroups(K, Y, n, lam, V, e, overwrite_g=False)
        self.fit_times_["closed_form" if solver == "closed_form" else "init"] = time.perf_counter() - t
        if solver == "closed_form":
            self._closed_form_done()
            self._set_coef(beta0)
            return
        t = time.perf_counter()
        # K = L L^T: the rows of L are exact features (z(x) = L^-1 k^x), |f|^2 = |Omega|^2
        K.flat[:: n + 1] += 1e-10 * float(np.mean(np.diag(K)))
        try:
            L = sla.cholesky(K, lower=True, overwrite_a=True, check_finite=False)
            Z, to_features, to_coef = L, (lambda B: L.T @ B), (
                lambda C: sla.solve_triangular(L, C, lower=True, trans="T", check_finite=False))
        except np.linalg.LinAlgError:
            # numerically singular K (flat kernel): Z = U D^1/2 on the eigenpairs above
            # rcond, z(x) = D^-1/2 U^T k^x; the rank drops below n
            U, w = psd_eigh(self._gram(parts, Xp, n, chunk, upcast), rcond)
            sw = np.sqrt(w)
            Z, to_features, to_coef = U * sw, (lambda B: sw[:, None] * (U.T @ B)), (lambda C: U @ (C / sw[:, None]))
            self.rank_ = w.size
        self.fit_times_["features"] = time.perf_counter() - t
        C0 = to_features(beta0) if self.init == "ridge" else None
        C = self._solve_on_features(Z, P, C0=C0)
        self._set_coef(to_coef(C))

    def _gram(self, parts, Xp, n, chunk, upcast=False):
        """The n x n Gram in float64 (kernel blocks in the model's dtype, solves in float64)."""
        K = np.empty((n, n))
        rows = KernelRows(self.kernel_, Xp, np.float64)
        self.executor_.map_rows(parts, _Upcast(rows) if upcast else rows,
                                chunk or default_chunk_size(n, self.dtype_), out=K, name="Gram rows", which="inputs")
        check_gram_block(K[:1], (1, n), "kernel")
        if not np.isfinite(K).all():
            raise ValueError("the kernel returned non-finite values (NaN, inf or overflow) on the training data")
        return K

    def _set_coef(self, beta):
        set_n_features(self, self.X_support_)
        self.coef_ = np.asarray(beta, dtype=np.float64)
        self._expansion = KernelExpansion(self.kernel_, self.X_support_, self.coef_, self.dtype_)

    # ------------------------------------------------------------------ predict
    @consistent_read
    def predict(self, X: Any) -> np.ndarray:
        """Predictions, shape (n_q,) for 1-D training targets, else (n_q, d)."""
        check_is_fitted(self, "coef_")
        chunk = self.chunk_size or default_chunk_size(num_samples(self.X_support_), self.dtype_)
        ex = self.executor_
        try:
            parts = ex.partition(X, prepare=(_CheckedPrepare(self),))
            return self._finish_predict(ex.map_rows(parts, self._expansion, chunk, name="predictions"))
        except ClientClosedError as exc:  # the model is here: predict here
            log_estimator(self, f"{exc}; predicting in this process", logging.WARNING)
        ex = LocalExecutor()
        parts = ex.partition(X, prepare=(_CheckedPrepare(self),))
        return self._finish_predict(ex.map_rows(parts, self._expansion, chunk, name="predictions"))

    @consistent_read
    def with_coef(self, coef: ArrayLike, lam: float | None = None) -> Self:
        """A fitted copy with other coefficients on ``X_support_`` (kernel, sketch, target
        normalisation shared).  For model selection: the solutions of a ``lam`` path are
        scored as models.  ``coef``: shape of ``coef_``; ``lam`` is recorded as the copy's
        parameter."""
        check_is_fitted(self, "coef_")
        new, coef = copy_with_coef(self, coef, self.coef_.shape, lam)
        new._set_coef(coef)
        return new


class _CheckedPrepare:
    """Query inputs prepared by the fitted kernel and checked against ``n_features_in_``."""

    def __init__(self, est):  # picklable: no reference to the estimator (its executor may hold a client)
        self.prepare = NamedPrepare(est.kernel_.prepare, "X")
        self.name, self.expected = type(est).__name__, getattr(est, "n_features_in_", None)

    def __call__(self, X):
        Xp = self.prepare(X)
        check_n_features(self.name, Xp, self.expected)
        return Xp


class _FeatureRows:
    """``X_chunk -> z(X_chunk)``: the sketched feature map on a partition's inputs."""

    def __init__(self, features, upcast=False):
        self.features, self.upcast = features, upcast

    def __call__(self, X):
        return self.features.transform(upcast_samples(X) if self.upcast else X, dedupe=False)


class _Upcast:
    """A chunk function applied to float64 copies of float32 samples (the float64 refit)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, X):
        return self.fn(upcast_samples(X))


def _float64_twin(kernel):
    """The fitted kernel computing in float64 (a copy keeps any state learned from the data)."""
    import copy

    params = kernel.get_params(deep=False)
    if "dtype" not in params or np.dtype(params["dtype"]) == np.float64:
        return kernel
    return copy.deepcopy(kernel).set_params(dtype="float64")


class JointQuantileRegressor(SketchedKernelMachine):
    """Joint quantile regression: pinball loss at levels ``taus`` with ``M_ij = exp(-gamma_tau (tau_i - tau_j)^2)``.

    ``fit(X, y)`` takes scalar targets (n,); ``predict(X)`` returns the (n_q, d) conditional
    quantiles, one column per level (Sangnier et al., 2016; p-sparsified paper, Example 1).
    Sharing information across levels through ``M`` limits quantile crossing; it is not
    forbidden (see :func:`sprokr.metrics.crossing_loss`).

    Parameters
    ----------
    taus : sequence of float in (0, 1), default (0.1, 0.3, 0.5, 0.7, 0.9)
    gamma_tau : float >= 0
        Coupling of the levels (0: all levels share one function up to the loss).
    Other parameters: as :class:`SketchedKernelMachine` (the loss is fixed to pinball; the
    default optimizer is Newton with an active-set finish, to a certified duality gap).
    """

    # fixed by the model (not a constructor parameter)
    loss = "pinball"

    def __init__(self, taus: ArrayLike = (0.1, 0.3, 0.5, 0.7, 0.9), gamma_tau: float = 10.0,
                 kernel: str | Kernel = "gaussian", kernel_params: Mapping[str, Any] | None = None, lam: float = 1e-4,
                 input_sketch: str | Sketch | None = None, m_x: int | None = None,
                 input_sketch_params: Mapping[str, Any] | None = None, optimizer: str = "auto",
                 learning_rate: float = 1e-2, batch_size: int = 256, max_epochs: int = 100, max_iter: int = 3000,
                 tol: float = 1e-4,
                 n_iter_no_change: int = 5, init: str = "ridge", dtype: DTypeLike = "float64",
                 rcond: float | None = None, chunk_size: int | None = None, normalize_y: bool = False,
                 executor: Any = "local", executor_params: Mapping[str, Any] | None = None,
                 random_state: RandomStateLike = None, verbose: bool | int = False) -> None:
        self.taus = taus
        self.gamma_tau = gamma_tau
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.lam = lam
        self.input_sketch = input_sketch
        self.m_x = m_x
        self.input_sketch_params = input_sketch_params
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.init = init
        self.dtype = dtype
        self.rcond = rcond
        self.chunk_size = chunk_size
        self.normalize_y = normalize_y
        self.executor = executor
        self.executor_params = executor_params
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        # predictions have one column per level, not the shape of y: not a plain regressor
        # (scikit-learn's regressor checks compare the two shapes); score is the D^2 pinball
        tags = super().__sklearn_tags__()
        tags.estimator_type = None
        tags.regressor_tags = None
        tags.target_tags.multi_output = False
        tags.target_tags.required = True
        tags.input_tags.sparse = False
        return tags

    @atomic_fit
    def fit(self, X: Any, y: Any) -> Self:
        """Fit on ``X`` (n, p) dense and scalar targets ``y`` (n,).  Returns self."""
        _refuse_sparse(X, type(self).__name__)
        return super().fit(X, y)

    @consistent_read
    def predict(self, X: Any) -> np.ndarray:
        """Conditional quantiles, shape (n_q, len(taus)): one column per level."""
        _refuse_sparse(X, type(self).__name__)
        return super().predict(X)

    @consistent_read
    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Mean over the levels of the D^2 pinball score (1 is best; 0 is the constant quantile).

        ``y`` (n,) scalar targets; see :func:`sklearn.metrics.d2_pinball_score`.
        """
        from sklearn.metrics import d2_pinball_score

        P = self.predict(X)
        taus = check_quantile_levels(self.taus)
        y = np.asarray(y, dtype=np.float64).ravel()
        return float(np.mean([d2_pinball_score(y, P[:, j], alpha=t, sample_weight=sample_weight)
                              for j, t in enumerate(taus)]))

    def _loss_and_targets(self, y, n):
        taus = check_quantile_levels(self.taus)
        if np.any(np.diff(taus) <= 0):
            raise ValueError(f"taus must be strictly increasing, got {taus.tolist()}")
        y1, _ = check_targets(y, n, type(self).__name__)
        if y1.shape[1] != 1:
            raise ValueError(f"JointQuantileRegressor takes scalar targets (n,), got shape {np.shape(y)}")
        M = joint_quantile_matrix(taus, self.gamma_tau)
        # l_tau(f(x), y) = L_tau(f(x) - y 1_d): the target repeated once per level
        return PinballLoss(tau=taus), np.repeat(y1, taus.size, axis=1), False, M


def _refuse_sparse(X, owner):
    import scipy.sparse as sp

    if sp.issparse(X):
        raise TypeError(f"sparse input is not supported by {owner}; pass a dense array (X.toarray())")
