"""Random Fourier features (Rahimi & Recht, 2007) for the Gaussian kernel: a baseline.

``k(a, b) = exp(-gamma |a - b|^2) = E_w[cos(w^T (a - b))]`` with ``w ~ N(0, 2 gamma I)``, so
``z(x) = sqrt(2/s) cos(W^T x + b)`` (``b ~ U[0, 2 pi]``, s features) gives
``z(a)^T z(b) ~ k(a, b)``.  The kernel machine on these features solves the same linear
problem as the sketched machines (:mod:`sprokr.models._solvers`), with the same losses,
output matrices and solvers, so the two are compared on equal terms.
"""
from __future__ import annotations

import numbers
import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..utils import check_positive, check_random_state, iter_chunks, resolve_dtype
from ..kernels.vector import GaussianKernel
from ..numerics import default_chunk_size
from ..losses import Loss
from ..registry import get_registry
from .kernel_machine import _LinearProblemMixin, check_solver_params, check_targets
from .output_matrix import check_output_matrix

__all__ = ["RFFKernelMachine"]


class RFFKernelMachine(_LinearProblemMixin, RegressorMixin, BaseEstimator):
    """Gaussian-kernel machine on ``n_components`` random Fourier features.

    Parameters
    ----------
    gamma, sigma2 : float
        Gaussian kernel ``exp(-gamma |a-b|^2)``; ``sigma2`` gives ``gamma = 1/(2 sigma2)``.
        Default ``gamma = 1 / n_features``.
    n_components : int
        Number ``s`` of random features.
    loss, loss_params, lam, output_matrix, solver, learning_rate, batch_size, max_epochs,
    tol, n_iter_no_change, init, dtype, normalize_y, random_state, verbose :
        As :class:`sprokr.models.SketchedKernelMachine`.

    Attributes
    ----------
    weights_ : ndarray (n_features, s)
    offsets_ : ndarray (s,)
    coef_ : ndarray (s, d)
    converged_, n_epochs_, objective_, fit_time_, y_mean_, y_scale_
        As in :class:`~sprokr.SketchedKernelMachine`.
    """

    def __init__(self, gamma=None, sigma2=None, n_components=100, loss="square", loss_params=None,
                 lam=1e-4, output_matrix=None, solver="auto", learning_rate=1e-2, batch_size=256,
                 max_epochs=100, tol=1e-4, n_iter_no_change=5, init="ridge", dtype="float64",
                 normalize_y=False, random_state=None, verbose=False):
        self.gamma = gamma
        self.sigma2 = sigma2
        self.n_components = n_components
        self.loss = loss
        self.loss_params = loss_params
        self.lam = lam
        self.output_matrix = output_matrix
        self.solver = solver
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.init = init
        self.dtype = dtype
        self.normalize_y = normalize_y
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y):
        """Fit on arrays ``X`` (n, p) and ``y`` (n,) or (n, d).  Returns self."""
        t0 = time.perf_counter()
        dtype = resolve_dtype(self.dtype)
        kernel = GaussianKernel(gamma=self.gamma, sigma2=self.sigma2, dtype=dtype.name)
        Xp = kernel.prepare(X)
        n, p = Xp.shape
        Y, scalar = check_targets(y, n)
        Y, y_mean, y_scale = self._normalised_targets(Y)
        loss = get_registry().create("loss", self.loss, self.loss_params, base=Loss)
        loss.validate(Y.shape[1])
        M, V, e = check_output_matrix(self.output_matrix, Y.shape[1])
        lam = check_positive(self.lam, "lam")
        solver = check_solver_params(self, loss)
        s = self.n_components
        if isinstance(s, bool) or not isinstance(s, (numbers.Integral, np.integer)) or s < 1:
            raise ValueError(f"n_components must be an integer >= 1, got {s!r}")
        if self.gamma is not None and self.sigma2 is not None:
            raise ValueError("give gamma or sigma2, not both")
        g = 1.0 / p if self.gamma is None and self.sigma2 is None else (
            check_positive(self.gamma, "gamma") if self.gamma is not None
            else 1.0 / (2.0 * check_positive(self.sigma2, "sigma2")))
        rng = check_random_state(self.random_state)

        # ---- validated: learned state starts here
        self.weights_ = (rng.standard_normal((p, s)) * np.sqrt(2.0 * g)).astype(dtype)
        self.offsets_ = rng.uniform(0.0, 2.0 * np.pi, s).astype(dtype)
        self.output_matrix_, self._scalar, self._dtype = M, scalar, dtype
        self.y_mean_, self.y_scale_ = y_mean, y_scale
        Z = self.transform(Xp)
        self.coef_ = self._solve_on_features(Z, Y, solver, loss, lam, V, e, rng).astype(dtype)
        self.loss_ = loss
        self.fit_time_ = time.perf_counter() - t0
        return self

    def transform(self, X):
        """Random Fourier features ``z(x)``, shape (n, n_components), chunked over n."""
        check_is_fitted(self, "weights_")
        X = np.asarray(X, dtype=self.weights_.dtype)
        if X.ndim == 1:
            X = X[:, None]
        s = self.weights_.shape[1]
        Z = np.empty((X.shape[0], s), dtype=self.weights_.dtype)
        for sl in iter_chunks(X.shape[0], default_chunk_size(s, Z.dtype)):
            B = X[sl] @ self.weights_
            B += self.offsets_
            np.cos(B, out=B)
            Z[sl] = B * np.sqrt(2.0 / s)
        return Z

    def predict(self, X):
        """Predictions, shape (n_q,) for 1-D training targets, else (n_q, d)."""
        check_is_fitted(self, "coef_")
        return self._finish_predict(np.asarray(self.transform(X) @ self.coef_, dtype=np.float64))
