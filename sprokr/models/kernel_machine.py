"""Sketched kernel machines with Lipschitz losses, scalar and multi-output (p-sparsified paper).

With a sketch ``R = W S`` (m x n) the substitution ``A = R^T Gamma`` turns the decomposable
kernel machine ``f(x) = sum_j k(x, x_j) M alpha_j`` into

    min_Gamma (1/n) sum_i l([K R^T Gamma M]_i, y_i) + lam/2 Tr(R K R^T Gamma M Gamma^T)   (P)

solved on the equivalent linear problem of :mod:`sprokr.numerics` (``ridge_by_eigengroups``,
``newton_solve``, ``lbfgs_solve``, ``adam_solve``; :mod:`sprokr.models.feature_problem`) with the sketched
feature map ``z(x) = D^-1/2 U^T R k^x``; without a sketch the machine is exact.

This module holds the estimators, :class:`SketchedKernelMachine` and
:class:`JointQuantileRegressor`: parameters, validation, ``fit`` (validated inputs, then
one training route, the previous state restored on failure) and ``predict``.  The routes
(exact and sketched solves, Gram, float32 check and float64 refit) are in
``sprokr.models._kernel_machine_routes``, and :func:`check_targets` (re-exported here) in
``sprokr.models._targets``: one concern per module.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Self

import logging
import numbers
import time

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..numerics import DEFAULT_RCOND, ClientClosedError, LocalExecutor, check_kernel_sample, default_chunk_size
from ..kernels.base import fit_on_training_inputs
from ..progress import log_estimator
from ..utils import (
    atomic_fit,
    consistent_read,
    check_chunk_size,
    copy_with_coef,
    NamedPrepare,
    check_feature_names,
    check_positive,
    check_random_state,
    check_random_state_param,
    num_samples,
    resolve_dtype,
    set_feature_names,
)
from ..deprecation import RenamedParametersMixin
from ..persistence import SaveMixin
from ..losses import Loss, PinballLoss, check_quantile_levels
from ..registry import get_registry
from ..kernels import model_dtype, resolve_kernel
from ..numerics import resolve_executor
from ._sisokr_rows import all_rows
from ..sketches import check_sketch_for, drawing_state, make_sketch
from .output_matrix import check_output_matrix, joint_quantile_matrix
from .feature_problem import FeatureProblem, FeatureProblemMixin, check_optimizer_params, check_solver_params
from .base import ExecutorParamsMixin, check_n_features, set_n_features
from ._kernel_machine_routes import KernelMachineRoutesMixin
from ._targets import R2ScoreMixin, check_score_data, check_targets

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..sketches.base import Sketch
    from ..types import RandomStateLike

__all__ = ["SketchedKernelMachine", "JointQuantileRegressor", "FeatureProblemMixin", "check_targets", "check_solver_params"]


class SketchedKernelMachine(ExecutorParamsMixin, RenamedParametersMixin, SaveMixin, KernelMachineRoutesMixin,
                            FeatureProblemMixin, R2ScoreMixin, RegressorMixin, BaseEstimator):
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
        on vector targets, whose Newton systems couple the outputs), finished by Newton on
        the per-sample Hessian blocks when it stalls uncertified (``optimizer_ =
        "lbfgs+newton"``; up to ``r d = sprokr.numerics.BLOCK_NEWTON_MAX``).  ``newton``
        applies to every built-in loss.  ``adam``: seeded mini-batch Adam
        (:func:`sprokr.numerics.adam_solve`).
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
        model is refitted with float64 kernel values (``dtype_`` then says float64; a
        ``scipy.linalg.LinAlgWarning``, also logged on the ``sprokr.<class name>`` logger).
        An input kernel computing in float32 (``dtype="float32"`` in its parameters or
        instance) makes the model a float32 one, checked the same way
        (:func:`sprokr.kernels.model_dtype`).
    rcond : float, optional
        Relative eigenvalue threshold of the iterative solvers' sketched feature map (default
        1e-10 in float64, 1e-6 in float32; the exact machine's features stop at ``K``'s
        rounding level instead); the sketched closed form's relative pivot threshold of
        ``R K R^T`` (default: its rounding level; :func:`sprokr.numerics.sketched_ridge`).
    chunk_size : int, optional
        Training rows per kernel block (default from a 64 MB budget).
    normalize_y : bool, default False
        Centre and scale each target column with its training mean and standard deviation
        before fitting (predictions are mapped back).  Recommended for targets far from
        zero or not of unit scale; ``False`` solves the paper's problem on the raw targets.
    executor : str, Executor or dask.distributed.Client, default "local"
        Runs the chunked passes (``"local"`` default, ``"dask"``, a
        ``dask.distributed.Client``: shared, not copied, by ``sklearn.base.clone``).
    executor_params : dict, optional
        Parameters of an executor given by name.
    random_state : None, int, numpy.random.Generator or RandomState
        Seeds the sketch, then Adam's mini-batch order.  None: the sketch is drawn with its
        own ``random_state`` (of a sketch instance or in ``input_sketch_params``), if any.
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
        The optimizer that ran: ``"closed_form"``, ``"newton"``, ``"lbfgs"``, ``"adam"``, or
        ``"lbfgs+newton"`` (``auto``'s L-BFGS finished by Newton).
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
    def _loss_and_matrix(self):
        """(loss, output matrix spec), checked without data -- overridden by the quantile
        regressor."""
        loss = get_registry().create("loss", self.loss, self.loss_params, base=Loss)
        return loss, self.output_matrix

    def _targets(self, y, n, loss):
        """(Y (n, d), scalar?) for the checked ``loss`` -- overridden by the quantile regressor."""
        return check_targets(y, n, type(self).__name__)

    # ------------------------------------------------------------------ fit
    def _checked_params(self) -> dict[str, Any]:
        """The checks of :meth:`check_params` (nothing of ``self`` or of its parameters is
        changed): the components the parameters resolve to, by name."""
        loss, M_spec = self._loss_and_matrix()
        self._check_normalize_y()
        lam = check_positive(self.lam, "lam")
        dtype = resolve_dtype(self.dtype)
        check_optimizer_params(self)
        chunk = check_chunk_size(self.chunk_size)
        rcond = self.rcond
        if rcond is not None:
            rcond = check_positive(rcond, "rcond", strict=False)
        kernel = resolve_kernel(self.kernel, self.kernel_params, "input", dtype, "kernel")
        dtype = model_dtype(kernel, dtype)  # a float32 kernel is a float32 request (checked)
        sketch = make_sketch(self.input_sketch, self.m_x, self.input_sketch_params, "input")
        executor = resolve_executor(self.executor, self.executor_params)
        check_random_state_param(self.random_state)
        return dict(loss=loss, M_spec=M_spec, lam=lam, dtype=dtype, chunk=chunk, rcond=rcond, kernel=kernel,
                    sketch=sketch, executor=executor)

    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them).

        Checks the loss (registered name and ``loss_params``; the quantile regressor:
        ``taus``, ``gamma_tau``), ``normalize_y``, ``lam`` (> 0), ``dtype`` (float32 or
        float64), the optimisation parameters (``optimizer``, ``max_iter``,
        ``learning_rate``, ``batch_size``, ``max_epochs``, ``n_iter_no_change``, ``tol``,
        ``init``), ``chunk_size``, ``rcond`` (>= 0), the kernel (registered name,
        ``kernel_params``, its own ``check_params``), the input sketch (registered name,
        ``input_sketch_params``, ``m_x`` an integer >= 1 given with a sketch), the executor
        and ``random_state`` (its type; nothing is drawn).  ``fit`` runs the same checks
        first, with the same messages; the checks that need the data stay in ``fit``: the
        targets against the loss and ``output_matrix`` (their number of columns),
        ``normalize_y=True`` with a loss on class labels, whether ``optimizer`` suits the
        loss with that many outputs, ``m_x`` larger than the number of samples and the
        sketch's ``validate(n)``.  Nothing of the estimator or of its parameters is changed.

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
        """Fit on ``n`` samples.  ``X``: what the kernel accepts; ``y``: (n,) or (n, d).  Returns self.

        The parameters are checked first (:meth:`check_params`), before the data."""
        return self._fit(X, y, solve=True)

    @atomic_fit
    def fit_state(self, X: Any, y: Any) -> Self:
        """Fit the state of the square loss's closed form on ``n`` samples, without solving.

        Runs the validation of :meth:`fit` and what does not depend on ``lam``: the resolved
        kernel (fitted on ``X`` when data-dependent), the drawn sketch (same random stream
        as ``fit``), the output matrix, the target normalisation and the support
        ``X_support_`` (the sketch's support rows, or every training input); no Gram
        factorisation, no sketched ridge and no float32 accuracy check (that needs a
        solution).  A ``lam`` path (:func:`sprokr.model_selection.lambda_path`) solves for
        its whole grid from this state and makes each solution a model with
        :meth:`with_coef`.

        State left: ``kernel_``, ``loss_``, ``sketch_matrix_``, ``executor_``,
        ``output_matrix_``, ``y_mean_``, ``y_scale_``, ``dtype_`` (the requested precision),
        ``X_support_``, ``n_train_``, ``n_features_in_``, ``fit_times_`` and the closed
        form's solver attributes (``optimizer_`` ``"closed_form"``); ``rank_`` (known from
        the solve's whitening) and ``solver_error_estimate_`` are None; no ``coef_``
        (``predict`` raises ``NotFittedError``; :meth:`with_coef` gives a fitted copy).

        Parameters
        ----------
        X : samples the kernel accepts (n)
        y : array-like of shape (n,) or (n, d)

        Returns
        -------
        self

        Raises
        ------
        ValueError
            As :meth:`fit`, for invalid parameters or data; and when the model is not
            solved in closed form (a loss other than ``"square"``, or ``optimizer`` other
            than ``"auto"`` / ``"closed_form"``): its solution is no function of a
            ``lam``-independent state.
        """
        return self._fit(X, y, solve=False)

    def _fit(self, X: Any, y: Any, solve: bool) -> Self:
        t0 = time.perf_counter()
        ps = self._checked_params()
        loss, M_spec, lam, dtype, chunk, rcond, executor = (ps["loss"], ps["M_spec"], ps["lam"], ps["dtype"],
                                                             ps["chunk"], ps["rcond"], ps["executor"])
        n = num_samples(X, "X")
        if n < 1:
            raise ValueError("cannot fit on 0 samples: X is empty")
        set_feature_names(self, X)  # scikit-learn's feature_names_in_ (dataframe inputs)
        Y, scalar = self._targets(y, n, loss)
        loss.validate(Y.shape[1], Y)  # on the targets as given (hinge: labels +-1)
        Y, y_mean, y_scale = self._normalised_targets(Y, loss)
        d = Y.shape[1]
        M, V, e = check_output_matrix(M_spec, d)
        solver = check_solver_params(self, loss, d)
        if not solve and solver != "closed_form":
            raise ValueError(f"fit_state: the state of the square loss's closed form only; this "
                             f"{type(self).__name__} is solved by {solver!r} (loss {self.loss!r})")
        kernel = fit_on_training_inputs(ps["kernel"], X)  # data-dependent kernels: a fitted copy
        sketch = check_sketch_for(ps["sketch"], self.input_sketch, self.m_x, n, "input")
        rng = check_random_state(self.random_state)
        # an estimator's random_state left to None: a sketch's own random_state draws it
        R = sketch.draw(n, drawing_state(self.random_state, rng)) if sketch is not None else None
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
            if solve:
                self._fit_route(parts, FeatureProblem(Y, lam, V, e, solver, loss, rng), R, rcond, chunk)
            else:  # fit_state: the support alone (as the closed-form routes take it)
                self.X_support_ = (all_rows(executor, parts, "inputs") if R is None
                                   else executor.take_rows(parts, R.indices, which="inputs"))
                set_n_features(self, self.X_support_)
                self.rank_ = None
                self._closed_form_done()
                self.__dict__.pop("coef_", None)  # no solution (and none of an earlier fit)
                self.__dict__.pop("_expansion", None)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(previous)
            raise
        self.fit_time_ = time.perf_counter() - t0
        log_estimator(self, f"fit in {self.fit_time_:.3f} s, rank {self.rank_} ("
                      + ", ".join(f"{k} {v:.3f} s" for k, v in self.fit_times_.items()) + ")")
        return self

    # ------------------------------------------------------------------ predict
    @consistent_read
    def predict(self, X: Any) -> np.ndarray:
        """Predictions, shape (n_q,) for 1-D training targets, else (n_q, d)."""
        check_is_fitted(self, "coef_")
        num_samples(X, "X")  # None or a scalar: named here, not as the executor's "collection 0"
        check_feature_names(self, X)
        # checked again: set_params(chunk_size=...) after fit is read here
        chunk = check_chunk_size(self.chunk_size) or default_chunk_size(num_samples(self.X_support_), self.dtype_)
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
        scored as models.  ``coef``: shape (n_support, d) (``coef_``'s); ``lam`` is recorded
        as the copy's parameter.  Works on a model fitted by :meth:`fit_state` too."""
        check_is_fitted(self, "X_support_")
        d = np.asarray(self.output_matrix_).shape[0]
        new, coef = copy_with_coef(self, coef, (num_samples(self.X_support_), d), lam)
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


class JointQuantileRegressor(SketchedKernelMachine):
    """Joint quantile regression: pinball loss at levels ``taus`` with ``M_ij = exp(-gamma_tau (tau_i - tau_j)^2)``.

    ``fit(X, y)`` takes scalar targets (n,); ``predict(X)`` returns the (n_q, d) conditional
    quantiles, one column per level (Sangnier et al., 2016; p-sparsified paper, Example 1).
    Sharing information across levels through ``M`` limits quantile crossing; it is not
    forbidden (see :func:`sprokr.metrics.crossing_loss`).

    Other parameters: as :class:`SketchedKernelMachine` (the loss is fixed to pinball; the
    default optimizer is Newton with an active-set finish, to a certified duality gap).

    Parameters
    ----------
    taus : sequence of float in (0, 1), default (0.1, 0.3, 0.5, 0.7, 0.9)
        The quantile levels, one output column each.
    gamma_tau : float >= 0, default 10.0
        Coupling of the levels (0: all levels share one function up to the loss).
    kernel : str or Kernel, default "gaussian"
        Input kernel (registered name or instance).
    kernel_params : dict, optional
        Parameters of a kernel given by name, e.g. ``{"sigma2": 10.0}``.
    lam : float > 0, default 1e-4
        Regularisation: objective ``(1/n) sum l(f(x_i), y_i) + lam/2 |f|^2``.
    input_sketch : str, Sketch or None, default None
        ``None``: exact machine; else a registered sketch name or an instance.
    m_x : int, optional
        Sketch size when the sketch is given by name.
    input_sketch_params : dict, optional
        Parameters of a sketch given by name, e.g. ``{"p": 20 / n}`` for p-SR / p-SG.
    optimizer : {"auto", "closed_form", "newton", "lbfgs", "adam"}, default "auto"
        The training algorithm (``auto``: Newton with an active-set finish for the pinball loss).
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
    dtype : {"float64", "float32"}, default "float64"
        Precision of kernel blocks and features (float32 is checked, see :class:`SketchedKernelMachine`).
    rcond : float, optional
        Relative eigenvalue threshold of the iterative solvers' sketched feature map (default
        1e-10 in float64, 1e-6 in float32; the exact machine's features stop at ``K``'s
        rounding level instead).
    chunk_size : int, optional
        Training rows per kernel block (default from a 64 MB budget).
    normalize_y : bool, default False
        Centre and scale the targets with their training mean and standard deviation before
        fitting (predictions are mapped back).
    executor : str, Executor or dask.distributed.Client, default "local"
        Runs the chunked passes (``"local"``, ``"dask"`` or a client: shared, not copied, by
        ``sklearn.base.clone``).
    executor_params : dict, optional
        Parameters of an executor given by name.
    random_state : None, int, numpy.random.Generator or RandomState
        Seeds the sketch, then Adam's mini-batch order.
    verbose : bool, default False
        Log the time of each training phase (logger ``sprokr.<class name>``) and show it on standard error.
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
        return tags

    @atomic_fit
    def fit(self, X: Any, y: Any) -> Self:
        """Fit on ``X`` (n, p), dense or sparse, and scalar targets ``y`` (n,).  Returns self."""
        return super().fit(X, y)

    @consistent_read
    def predict(self, X: Any) -> np.ndarray:
        """Conditional quantiles, shape (n_q, len(taus)): one column per level."""
        return super().predict(X)

    @consistent_read
    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Mean over the levels of the D^2 pinball score (1 is best; 0 is the constant quantile).

        ``y`` (n,) scalar targets; see :func:`sklearn.metrics.d2_pinball_score`.
        """
        from sklearn.metrics import d2_pinball_score

        check_is_fitted(self, "coef_")
        Y, w = check_score_data(X, y, type(self).__name__, 1, sample_weight)  # scalar targets
        P = self.predict(X)
        taus = check_quantile_levels(self.loss_.tau)  # the fitted levels (taus may have been set since)
        return float(np.mean([d2_pinball_score(Y[:, 0], P[:, j], alpha=t, sample_weight=w)
                              for j, t in enumerate(taus)]))

    def _loss_and_matrix(self):
        # checked here, by their names: joint_quantile_matrix would call them "quantile
        # levels" and "gamma" (a kernel's parameter, for the user)
        taus = _check_taus(self.taus)
        gamma_tau = _check_gamma_tau(self.gamma_tau)
        return PinballLoss(tau=taus), joint_quantile_matrix(taus, gamma_tau)

    def _targets(self, y, n, loss):
        y1, scalar = check_targets(y, n, type(self).__name__)
        if y1.shape[1] != 1:
            raise ValueError(f"y must hold scalar targets, shape (n_samples,): JointQuantileRegressor "
                             f"predicts their joint quantiles; got shape {np.shape(y)}")
        if not scalar:  # a column vector (n, 1): used as (n,), with scikit-learn's warning
            warn_column_vector(self)
        # l_tau(f(x), y) = L_tau(f(x) - y 1_d): the target repeated once per level
        return np.repeat(y1, check_quantile_levels(loss.tau).size, axis=1), False


def warn_column_vector(estimator: Any) -> None:
    """scikit-learn's ``DataConversionWarning`` for a column-vector ``y`` (n, 1) given to a
    single-output estimator, which uses it as (n,) (``sklearn.utils.column_or_1d(y,
    warn=True)``), attributed to the caller of ``fit``."""
    import warnings

    from sklearn.exceptions import DataConversionWarning

    from ..progress import user_stacklevel

    warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape of y "
                  f"to (n_samples, ), for example using ravel(). ({type(estimator).__name__} takes scalar "
                  "targets)", DataConversionWarning, stacklevel=user_stacklevel())


def _check_taus(taus):
    """``taus`` as a 1-D float array of strictly increasing levels inside (0, 1), or an
    error naming ``taus``."""
    t = check_quantile_levels(taus, "taus")
    if np.any(np.diff(t) <= 0):
        raise ValueError(f"taus must be strictly increasing, got {t.tolist()}")
    return t


def _check_gamma_tau(gamma_tau):
    """``gamma_tau`` as a float >= 0, or an error naming it."""
    if isinstance(gamma_tau, (bool, np.bool_)) or not isinstance(gamma_tau, (numbers.Real, np.integer, np.floating)):
        raise TypeError(f"gamma_tau must be a finite real number >= 0, got {gamma_tau!r}")
    return check_positive(gamma_tau, "gamma_tau", strict=False)

