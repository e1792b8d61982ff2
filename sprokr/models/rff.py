"""Random Fourier features (Rahimi & Recht, 2007) for the Gaussian kernel: a baseline.

``k(a, b) = exp(-gamma |a - b|^2) = E_w[cos(w^T (a - b))]`` with ``w ~ N(0, 2 gamma I)``, so
``z(x) = sqrt(2/s) cos(W^T x + b)`` (``b ~ U[0, 2 pi]``, s features) gives
``z(a)^T z(b) ~ k(a, b)``.  The kernel machine on these features solves the same linear
problem as the sketched machines (:mod:`sprokr.models.feature_problem`), with the same losses,
output matrices and solvers, so the two are compared on equal terms.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Self

import time

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..utils import (
    NamedPrepare, atomic_fit, consistent_read, check_feature_names, check_integer, check_positive, check_random_state,
    check_random_state_param, num_samples, resolve_dtype, set_feature_names,
)
from ..kernels import resolve_kernel
from ..kernels.vector import GaussianKernel
from ..numerics import LocalExecutor, default_chunk_size, matmul, upcast_samples
from ..losses import Loss
from ..deprecation import IntoDict, RenamedParametersMixin
from ..persistence import SaveMixin
from ..registry import get_registry
from .base import check_n_features
from .feature_problem import (
    CHECK_SAFETY, FeatureProblem, FeatureProblemMixin, check_optimizer_params, check_solver_params,
    float32_is_accurate, spread_rows,
)
from ._targets import R2ScoreMixin, check_targets
from .output_matrix import check_output_matrix

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..types import RandomStateLike

__all__ = ["RFFKernelMachine"]


class RFFKernelMachine(RenamedParametersMixin, SaveMixin, FeatureProblemMixin, R2ScoreMixin, RegressorMixin,
                       BaseEstimator):
    """Gaussian-kernel machine on ``n_components`` random Fourier features.

    Parameters
    ----------
    kernel : "gaussian" or GaussianKernel
        The kernel the features approximate: random Fourier features are drawn for the
        Gaussian kernel only (any other kernel is refused).
    kernel_params : dict, optional
        ``{"gamma": g}`` (``exp(-g |a-b|^2)``) or ``{"sigma2": s}`` (``g = 1/(2 s)``), as
        for :class:`~sprokr.kernels.GaussianKernel`; default ``gamma = 1 / n_features``.
        (Formerly the parameters ``gamma`` and ``sigma2``.)
    n_components : int, default 100
        Number ``s`` of random features.
    loss : str or Loss, default "square"
        As :class:`sprokr.models.SketchedKernelMachine`: ``square``, ``huber``,
        ``epsilon_insensitive``, ``pinball``, ``hinge`` or a plugin's.
    loss_params : dict, optional
        Parameters of a loss given by name, e.g. ``{"tau": 0.9}``.
    lam : float > 0, default 1e-4
        Regularisation: objective ``(1/n) sum l(f(x_i), y_i) + lam/2 |f|^2``.
    output_matrix : None, "identity" or array (d, d)
        ``M`` of the decomposable kernel (symmetric PSD), as for :class:`sprokr.models.SketchedKernelMachine`.
    optimizer : {"auto", "closed_form", "newton", "lbfgs", "adam"}, default "auto"
        The training algorithm, as for :class:`sprokr.models.SketchedKernelMachine` (formerly ``solver``).
    learning_rate : float, default 1e-2
        Adam's step size (``optimizer="adam"`` only).
    batch_size : int, default 256
        Adam's mini-batch size (``optimizer="adam"`` only).
    max_epochs : int, default 100
        Adam's epoch budget (``optimizer="adam"`` only).
    max_iter : int, default 3000
        Iterations in total of the Newton solver (steps and active-set iterations) or of L-BFGS.
    tol : float, default 1e-4
        Relative duality gap at which the solution is accepted (``converged_``, ``objective_gap_``).
    n_iter_no_change : int, default 5
        Adam's step-halving rule (``optimizer="adam"`` only).
    init : {"ridge", "zeros"}, default "ridge"
        The iterative solvers' starting point: the square-loss solution or zero.
    dtype : {"float64", "float32"}
        Precision of the random features (the solves are float64).  float32 is checked
        on 256 training rows against float64 features with the same weights; above 1e-4
        (``solver_error_estimate_``) the model is refitted in float64 (``dtype_``; a ``scipy.linalg.LinAlgWarning``).
    normalize_y : bool, default False
        Centre and scale the targets with their training mean and standard deviation before
        fitting (predictions are mapped back).
    random_state : None, int, numpy.random.Generator or RandomState
        Seeds the random features, then Adam's mini-batch order.
    verbose : bool, default False
        Log the time of each training phase (logger ``sprokr.<class name>``) and show it on standard error.

    Attributes
    ----------
    weights_ : ndarray (n_features, s)
    offsets_ : ndarray (s,)
    coef_ : ndarray (s, d)
    optimizer_, converged_, objective_gap_, n_epochs_, n_iter_, objective_, fit_time_, fit_times_,
    solver_error_estimate_, y_mean_, y_scale_, dtype_
        As in :class:`~sprokr.SketchedKernelMachine` (phases ``features``, ``init``,
        ``solve``, ``float32_check``, ``float64_refit``).
    """

    #: fitted attributes, for the type checker
    weights_: np.ndarray
    coef_: np.ndarray

    #: deprecated parameter names (sprokr.deprecation): old -> new
    renamed_parameters = {"gamma": IntoDict("kernel_params", "gamma"), "sigma2": IntoDict("kernel_params", "sigma2"),
                          "solver": "optimizer"}

    def __init__(self, kernel: str | Kernel = "gaussian", kernel_params: Mapping[str, Any] | None = None,
                 n_components: int = 100,
                 loss: str | Loss = "square", loss_params: Mapping[str, Any] | None = None, lam: float = 1e-4,
                 output_matrix: ArrayLike | str | None = None, optimizer: str = "auto", learning_rate: float = 1e-2,
                 batch_size: int = 256, max_epochs: int = 100, max_iter: int = 3000, tol: float = 1e-4,
                 n_iter_no_change: int = 5, init: str = "ridge", dtype: DTypeLike = "float64",
                 normalize_y: bool = False, random_state: RandomStateLike = None, verbose: bool | int = False) -> None:
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.loss = loss
        self.loss_params = loss_params
        self.lam = lam
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
        self.normalize_y = normalize_y
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # X @ weights works on scipy sparse inputs
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    def _checked_params(self) -> tuple[np.dtype, Any, Loss, float]:
        """The checks of :meth:`check_params` (nothing of ``self`` or of its parameters is
        changed): ``(dtype, kernel, loss, lam)`` the parameters resolve to."""
        dtype = resolve_dtype(self.dtype)
        kernel = _gaussian_kernel(self.kernel, self.kernel_params, dtype)
        loss = get_registry().create("loss", self.loss, self.loss_params, base=Loss)
        self._check_normalize_y()
        lam = check_positive(self.lam, "lam")
        check_optimizer_params(self)
        check_integer(self.n_components, "n_components")
        check_random_state_param(self.random_state)
        return dtype, kernel, loss, lam

    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them).

        Checks ``dtype`` (float32 or float64), the kernel (the Gaussian kernel, by name or
        instance, with ``kernel_params``), the loss (registered name and ``loss_params``),
        ``normalize_y``, ``lam`` (> 0), the optimisation parameters (``optimizer``,
        ``max_iter``, ``learning_rate``, ``batch_size``, ``max_epochs``,
        ``n_iter_no_change``, ``tol``, ``init``), ``n_components`` (an integer >= 1) and
        ``random_state`` (its type; nothing is drawn).  ``fit`` runs the same checks first,
        with the same messages; the checks that need the data stay in ``fit``: the targets
        against the loss and ``output_matrix`` (their number of columns),
        ``normalize_y=True`` with a loss on class labels and whether ``optimizer`` suits
        the loss with that many outputs.  Nothing of the estimator or of its parameters is
        changed.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            A parameter value is invalid (the message names it).
        """
        self._checked_params()
        return self

    @atomic_fit
    def fit(self, X: Any, y: Any) -> Self:
        """Fit on ``X`` (n, p) (dense or sparse) and ``y`` (n,) or (n, d).  Returns self.

        The parameters are checked first (:meth:`check_params`), before the data."""
        t0 = time.perf_counter()
        dtype, kernel, loss, lam = self._checked_params()
        set_feature_names(self, X)  # scikit-learn's feature_names_in_ (dataframe inputs)
        Xp = NamedPrepare(kernel.prepare, "X")(X)
        n, p = Xp.shape
        if n < 1:
            raise ValueError("cannot fit on 0 samples: X is empty")
        Y, scalar = check_targets(y, n, type(self).__name__)
        loss.validate(Y.shape[1], Y)  # on the targets as given (hinge: labels +-1)
        Y, y_mean, y_scale = self._normalised_targets(Y, loss)
        M, V, e = check_output_matrix(self.output_matrix, Y.shape[1])
        solver = check_solver_params(self, loss, Y.shape[1])
        s = self.n_components
        g = 1.0 / p if kernel.gamma is None and kernel.sigma2 is None else (
            float(kernel.gamma) if kernel.gamma is not None else 1.0 / (2.0 * float(kernel.sigma2)))
        rng = check_random_state(self.random_state)

        # ---- validated: learned state starts here; any failure restores the previous state
        previous = dict(self.__dict__)
        try:
            self.weights_ = (rng.standard_normal((p, s)) * np.sqrt(2.0 * g)).astype(dtype)
            self.offsets_ = rng.uniform(0.0, 2.0 * np.pi, s).astype(dtype)
            self.output_matrix_, self._scalar, self.dtype_ = M, scalar, dtype
            self.y_mean_, self.y_scale_ = y_mean, y_scale
            self.n_features_in_ = p
            self.fit_times_: dict[str, float] = {}
            self.solver_error_estimate_: float | None = None
            P = FeatureProblem(Y, lam, V, e, solver, loss, rng)
            self._fit_features(Xp, P)
            if dtype == np.float32:
                self._check_float32(Xp, P)
            self.loss_ = loss
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(previous)
            raise
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _fit_features(self, Xp, P):
        t = time.perf_counter()
        Z = self._features(Xp)
        self.fit_times_["features"] = time.perf_counter() - t
        self.coef_ = np.asarray(self._solve_on_features(Z, P), dtype=np.float64)

    def _check_float32(self, Xp, P):
        """Measured change of the predictions at sample training rows when the features are
        computed in float64 (same weights); above ``FLOAT32_TOL`` the model is refitted in float64."""
        t = time.perf_counter()
        idx = spread_rows(Xp.shape[0])
        Xs = Xp[idx]
        Z32 = self._features(Xs)
        Z64 = _CosineFeatures(self.weights_.astype(np.float64), self.offsets_.astype(np.float64))(upcast_samples(Xs))
        g64 = Z64 @ self.coef_
        g32 = np.asarray(Z32, dtype=np.float64) @ self.coef_
        scale, diff = float(np.abs(g64).max(initial=0.0)), float(np.abs(g32 - g64).max(initial=0.0))
        est = 0.0 if scale == 0 and diff == 0 else CHECK_SAFETY * diff / max(scale, 1e-300)
        if float32_is_accurate(self, est, "features", t):
            return
        t = time.perf_counter()
        self.weights_, self.offsets_ = self.weights_.astype(np.float64), self.offsets_.astype(np.float64)
        self.dtype_ = np.dtype(np.float64)
        self._fit_features(upcast_samples(Xp), P)
        self.fit_times_["float64_refit"] = time.perf_counter() - t


    @consistent_read
    def random_features(self, X: Any) -> np.ndarray:
        """Random Fourier features ``z(x)``, shape (n, n_components), chunked over n."""
        check_is_fitted(self, "weights_")
        num_samples(X, "X")  # None or a scalar: a wrong type, not "a 0-D array"
        check_feature_names(self, X)
        kernel = GaussianKernel(dtype=self.weights_.dtype.name)
        Xp = NamedPrepare(kernel.prepare, "X")(X)
        check_n_features(self, Xp)
        return self._features(Xp)

    def _features(self, Xp):
        s = self.weights_.shape[1]
        ex = LocalExecutor()
        Z = ex.map_rows(ex.partition(Xp), _CosineFeatures(self.weights_, self.offsets_),
                        default_chunk_size(s, self.weights_.dtype), name="random features")
        bad = np.flatnonzero(~np.isfinite(Z).all(axis=1))
        if bad.size:  # (the other kernel models refuse such inputs through their kernel values)
            raise ValueError(f"X: the random Fourier features of {bad.size} row(s) are not finite (rows "
                             f"{bad[:5].tolist()}{' ...' if bad.size > 5 else ''}): x^T w overflows "
                             f"{Z.dtype.name} (inputs too large in magnitude); rescale the inputs")
        return Z

    @consistent_read
    def predict(self, X: Any) -> np.ndarray:
        """Predictions, shape (n_q,) for 1-D training targets, else (n_q, d)."""
        check_is_fitted(self, "coef_")
        Z = self.random_features(X)
        return self._finish_predict(matmul(np.asarray(Z, dtype=np.float64), self.coef_))


def _gaussian_kernel(spec, params, dtype):
    """The validated Gaussian kernel of ``kernel`` / ``kernel_params`` (a copy in ``dtype``)."""
    kernel = resolve_kernel(spec, params, "input", dtype, "kernel")
    if type(kernel) is not GaussianKernel:
        name = spec if isinstance(spec, str) else type(spec).__name__
        raise ValueError(f"kernel must be 'gaussian' (or a GaussianKernel): RFFKernelMachine draws random "
                         f"Fourier features of the Gaussian kernel only, got {name!r}")
    return GaussianKernel(gamma=kernel.gamma, sigma2=kernel.sigma2, dtype=dtype.name)


class _CosineFeatures:
    """``sqrt(2/s) cos(X W + b)`` for a chunk of inputs (dense or sparse)."""

    def __init__(self, weights, offsets):
        self.weights, self.offsets = weights, offsets

    def __call__(self, X):
        # finite but huge inputs overflow x^T w and cos(inf) is NaN: such rows come out NaN
        # and are named by the caller (finite_features), not by numpy's warnings
        with np.errstate(over="ignore", invalid="ignore"):
            B = np.asarray(X @ self.weights, dtype=self.weights.dtype)
            B += self.offsets
            np.cos(B, out=B)
        B *= np.sqrt(2.0 / self.weights.shape[1])
        return B
