"""The training routes of :class:`~sprokr.models.SketchedKernelMachine`: how its fit builds
the features and solves problem (P) once the parameters are validated.

Kept apart from the estimator module (:mod:`sprokr.models.kernel_machine`: the
scikit-learn API, parameter validation and prediction) so that each stays one concern;
the solvers on the features themselves are :class:`~sprokr.models.feature_problem.FeatureProblemMixin`'s.

With a sketch ``R = W S`` (m x n) the problem is solved with the sketched feature map
``z(x) = D^-1/2 U^T R k^x`` (:class:`~sprokr.numerics.SketchedFeatures`, eigenpairs of
``R K R^T``).  Only the kernel columns of the ``m'`` non-null columns of ``R`` are computed
(decomposition trick), and the learned function is stored as coefficients on those
samples: ``f(x) = k(x, X[indices]) beta`` with ``beta = W^T U D^-1/2 C`` (m' x d).

Without a sketch the machine is exact (the baseline of every benchmark): square loss by
Cholesky of ``e K + n lam I``; other losses on the features ``Z = P F`` of ``K`` itself,
``K = P F F^T P^T`` to its rounding level (pivoted Cholesky, :class:`~sprokr.numerics.Whitening`:
nothing added to ``K``, so the duality gap certified on ``Z`` is the model's).

* :class:`KernelMachineRoutesMixin` -- the exact and sketched routes (closed form or
  iterative), the n x n Gram, the float32 check with its float64 refit, and the fitted
  coefficients' prediction expansion;
* ``_FeatureRows``, ``_Upcast`` -- the chunk functions those routes use (the float64
  kernel of a refit is :func:`sprokr.numerics.float64_kernel`).
"""
from __future__ import annotations

import time

import numpy as np

from ..numerics import (
    DEFAULT_RCOND,
    KernelExpansion,
    KernelRows,
    SketchedFeatures,
    check_gram_block,
    default_chunk_size,
    float64_kernel,
    Whitening,
    ridge_by_eigengroups,
    sketched_ridge,
    upcast_samples,
    whitened_system,
)
from ..progress import log_estimator, warn_accuracy
from .base import set_n_features
from .feature_problem import (
    float32_is_accurate,
    float32_prediction_estimate,
    spread_rows,
)

__all__ = ["KernelMachineRoutesMixin"]


class KernelMachineRoutesMixin:
    """The fit routes of the sketched kernel machine (exact / sketched, closed form / iterative).

    Used with :class:`~sprokr.models.feature_problem.FeatureProblemMixin` (the solvers on
    features); the estimator's ``fit`` sets ``kernel_``, ``executor_``, ``dtype_``,
    ``n_train_`` and the ``fit_times_`` dict before calling a route.  The routes set
    ``X_support_``, ``rank_``, ``coef_`` (and its prediction expansion) and, through the
    solvers, the convergence attributes.
    """

    def _fit_route(self, parts, P, R, rcond, chunk):
        """Fit the validated problem ``P``: the exact machine when ``R`` is None, else the
        sketched one; then the float32 check (with its float64 refit) when it applies.
        ``rcond``: the resolved threshold (the float64 refit uses the float64 default
        unless ``rcond`` was given)."""
        rcond64 = DEFAULT_RCOND if self.rcond is None else rcond
        if R is None:
            self._fit_exact(parts, P, rcond, chunk)
            refit = lambda: self._fit_exact(parts, P, rcond64, chunk, upcast=True)  # noqa: E731
        else:
            self._fit_sketched(parts, P, R, rcond, chunk)
            refit = lambda: self._fit_sketched_iterative(parts, P, R, rcond64, chunk, upcast=True)  # noqa: E731
        # float32 asked for: the sketched closed form checked itself (sketched_ridge);
        # the exact machine and the iterative solvers are checked here
        if self.dtype_ == np.float32 and not (R is not None and P.optimizer == "closed_form"):
            self._check_float32(parts, refit)

    def _check_float32(self, parts, refit):
        """The measured error estimate of the float32 model (``solver_error_estimate_``); above
        ``FLOAT32_TOL`` the model is refitted with float64 kernel values (and a ``LinAlgWarning``)."""
        t = time.perf_counter()
        sample = self.executor_.take_rows(parts, spread_rows(self.n_train_), which="inputs")
        kernel64 = float64_kernel(self.kernel_)
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
                warn_accuracy(fallback, self)
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
        features ``Z`` with ``Z Z^T = K`` to its rounding level (:class:`Whitening`: pivoted
        Cholesky, nothing added; the rank drops below n when ``K`` is numerically singular)."""
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
        # K = P F F^T P^T to its rounding level (pivoted Cholesky, nothing added to K): the
        # rows of Z = P F are exact features of K itself (z(x) = L_11^-1 k^x_sel), so the
        # duality gap certified on them is K's.  (A jitter on K's diagonal, or eigenpairs
        # cut at rcond, certified a nearby problem: with n lam below ~1e-6 the model's true
        # gap was ~100x the reported one.)  Directions below the rounding level are dropped:
        # the rank may fall below n
        wh = Whitening(K)
        del K
        Z = wh.own_rows()
        to_features, to_coef = (lambda B: Z.T @ B), wh.coefficients
        self.rank_ = wh.rank
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
