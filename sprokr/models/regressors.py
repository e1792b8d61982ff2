"""Surrogate regressors for DSOKR: ``g_W: X -> R^p`` trained on targets ``psi~(y_i)``.

DSOKR reduces structured prediction to a vector regression onto the ``p`` coordinates of
the output-sketch basis.  Any scikit-learn style regressor (``fit(X, T)``,
``predict(X) -> (n_q, p)``) works; the built-ins below additionally accept

``fit(X, T, sample_offsets=None, eval_set=None)``

* ``sample_offsets`` ``r_i = k(y_i, y_i) - |psi~(y_i)|^2 >= 0``: the part of ``psi(y_i)``
  outside the sketched subspace, so that the *kernel-induced* loss of a prediction is
  ``|g(x_i) - psi~(y_i)|^2 + r_i = |h(x_i) - psi(y_i)|^2_H``;
* ``eval_set = (X_val, T_val, r_val)``: validation data for early stopping on that loss.

Built-ins (registered through the ``sprokr_regressors`` hook, see :mod:`sprokr._builtins`):

* :class:`KernelRidgeRegressor` (``"kernel_ridge"``): kernel ridge with a sprokr kernel and
  an optional input sketch.  DSOKR with it is exactly ISOKR (or SISOKR) on the same output
  sketch.
* :class:`MLPSurrogate` (``"mlp"``): scikit-learn's ``MLPRegressor`` trained epoch by epoch
  with validation-based early stopping on the kernel-induced loss (square loss only).
* the torch regressors (:mod:`sprokr.models.torch_regressors`, only when ``torch`` is
  installed: the ``torch`` extra): :class:`TorchRegressor` (``"torch_mlp"``, an MLP or a
  residual MLP on vectors, robust losses ``c(|h(x) - psi(y)|^2)``), and the sequence
  encoders ``"torch_smiles"`` / ``"torch_text"`` that take raw SMILES / texts.

The training loop helpers (early stopping, learning-rate drops, the ``ConvergenceWarning``)
are in :mod:`sprokr.models.training`.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Mapping, Self

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
import scipy.linalg as sla
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..numerics import (
    KernelExpansion,
    LocalExecutor,
    default_chunk_size,
    exact_ridge_factor,
    float64_kernel,
    SOLVERS,
    sketched_ridge,
)
from ..deprecation import RenamedParametersMixin
from ..persistence import SaveMixin
from ..progress import warn_accuracy
from ..kernels import model_dtype, resolve_kernel
from ..sketches import check_sketch_for, drawing_state, make_sketch
from .base import check_n_features, set_n_features
from ._targets import R2ScoreMixin, check_targets
from .feature_problem import checked_exact_factor
from .torch_regressors import ROBUST_LOSSES, TorchRegressor, token_cnn, torch_available
from .training import EarlyStopping, as_targets, check_early_stopping, check_eval_set, check_fit_targets, \
    check_lr_schedule, check_mlp_architecture, check_monitor, check_optimiser_params, check_sample_offsets, kernel_induced_loss, self_retrieval_mrr, \
    standardise, target_moments, warn_not_converged, TARGET_BLOCK_ROWS
from ..utils import (
    atomic_fit,
    consistent_read,
    check_chunk_size,
    copy_with_coef,
    NamedPrepare,
    check_finite,
    check_numeric_array,
    check_paired,
    check_positive,
    check_feature_names,
    check_random_state,
    check_random_state_param,
    num_samples,
    resolve_dtype,
    set_feature_names,
    take,
)

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..sketches.base import Sketch
    from ..types import RandomStateLike

__all__ = [
    "KernelRidgeRegressor",
    "MLPSurrogate",
    "TorchRegressor",
    "token_cnn",
    "kernel_induced_loss",
    "torch_available",
    "ROBUST_LOSSES",
]


# --------------------------------------------------------------------------- kernel ridge
class KernelRidgeRegressor(SaveMixin, R2ScoreMixin, RegressorMixin, BaseEstimator):
    """Kernel ridge regression of vector targets with a sprokr kernel (optionally sketched).

    Minimises ``1/n sum_i |g(x_i) - t_i|^2 + lam |g|^2``.  Exact: ``g(x) = k_x^T (K + n lam
    I)^-1 T`` (Cholesky).  With an input sketch ``R`` (m x n) and ``A = K R^T``:
    ``g(x) = k_x^T R^T (A^T A + n lam R K R^T)^+ A^T T`` accumulated over row chunks.

    Parameters
    ----------
    kernel : str or Kernel
    kernel_params : dict, optional
    lam : float
    input_sketch : str, Sketch or None
    m_x : int, optional
    input_sketch_params : dict, optional
    dtype : {"float64", "float32"}
        Precision of the kernel blocks and cross products (solves and coefficients are
        float64).  With a sketch, a float32 solution that fails the solver's accuracy check
        (:func:`sprokr.numerics.sketched_ridge`) is redone with float64 kernel values and the
        model then predicts in float64 (``dtype_``; an explicit ``solver="cholesky"`` /
        ``"eigh"`` is redone by the same route, which warns if its estimate still exceeds
        1e-4).  Exact: the fitted model is replayed on
        256 training rows with float64 kernel values, and refitted with them (a
        ``scipy.linalg.LinAlgWarning``, also logged) when its predictions change by more than 1e-4.
        An input kernel computing in float32 (``dtype="float32"`` in its parameters or
        instance) makes the model a float32 one, checked the same way
        (:func:`sprokr.kernels.model_dtype`).
    rcond : float, optional
        Relative pivot threshold of ``R K R^T`` in the sketched ridge (default: its
        rounding level, :func:`sprokr.numerics.sketched_ridge`).
    solver : {"auto", "whitened", "mixed", "cholesky", "qr", "eigh"}
        Route of the sketched ridge (:func:`sprokr.numerics.sketched_ridge`; ignored
        without sketch).
    chunk_size : int, optional
    random_state : None, int or numpy.random.Generator

    Attributes
    ----------
    kernel_ : Kernel
    coef_ : ndarray of shape (n_support, p)
    X_support_ : prepared support inputs
    sketch_matrix_ : SketchMatrix or None
    dtype_ : numpy dtype
        The precision the model predicts in.
    solver_ : str
        The route taken (``"cholesky"`` for the exact ridge).
    solver_error_estimate_ : float or None
        Its relative error estimate (None for the exact ridge in float64; for the exact ridge
        in float32, the float32 check's, kept after a float64 refit).  The whitened and QR
        routes with float64 kernel values include :func:`sprokr.numerics.rounding_sensitivity`, how far the formula
        itself moves with the float64 rounding of ``R K R^T`` (a ``LinAlgWarning`` above the
        tolerance).
    fit_times_ : dict of phase -> seconds
    """

    def __init__(self, kernel: str | Kernel = "gaussian", kernel_params: Mapping[str, Any] | None = None,
                 lam: float = 1e-5, input_sketch: str | Sketch | None = None, m_x: int | None = None,
                 input_sketch_params: Mapping[str, Any] | None = None, dtype: DTypeLike = "float64",
                 rcond: float | None = None, chunk_size: int | None = None,
                 random_state: RandomStateLike = None, solver: str = "auto") -> None:
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.lam = lam
        self.input_sketch = input_sketch
        self.m_x = m_x
        self.input_sketch_params = input_sketch_params
        self.dtype = dtype
        self.rcond = rcond
        self.chunk_size = chunk_size
        self.random_state = random_state
        self.solver = solver

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    def _checked_params(self) -> tuple[float, np.dtype, int | None, Kernel, Sketch | None]:
        """The checks of :meth:`check_params` (nothing of ``self`` or of its parameters is
        changed): ``(lam, dtype, chunk_size, kernel, sketch)`` the parameters resolve to."""
        lam = check_positive(self.lam, "lam")
        dtype = resolve_dtype(self.dtype)
        if self.rcond is not None:
            check_positive(self.rcond, "rcond", strict=False)
        chunk = check_chunk_size(self.chunk_size)
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {', '.join(map(repr, SOLVERS))}, got {self.solver!r}")
        # checked with or without a sketch to draw: a bad seed is refused, not ignored
        check_random_state_param(self.random_state)
        k = resolve_kernel(self.kernel, self.kernel_params, "input", dtype, "kernel")
        dtype = model_dtype(k, dtype)  # a float32 kernel is a float32 request (checked)
        sk = make_sketch(self.input_sketch, self.m_x, self.input_sketch_params, "input")
        return lam, dtype, chunk, k, sk

    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them).

        Checks ``lam`` (> 0), ``dtype`` (float32 or float64), ``rcond`` (>= 0),
        ``chunk_size``, ``solver``, ``random_state`` (its type; nothing is drawn), the
        kernel (registered name, ``kernel_params``, its own ``check_params``) and the input
        sketch (registered name, ``input_sketch_params``, ``m_x`` an integer >= 1 given
        with a sketch).  ``fit`` runs the same checks first, with the same messages; the
        checks that need the data (``m_x`` larger than the number of samples, the sketch's
        ``validate(n)``) stay in ``fit``.  Nothing of the estimator or of its parameters is
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
        """Fit on inputs ``X`` (n samples) and targets ``y`` (n,) or (n, p).  Returns self.

        The parameters are checked first (:meth:`check_params`), before the data."""
        return self._fit(X, y, solve=True)

    @atomic_fit
    def fit_state(self, X: Any, y: Any) -> Self:
        """Fit the model's state on inputs ``X`` (n samples) and targets ``y``, without
        solving the ridge problem.

        Runs the validation of :meth:`fit` and what does not depend on ``lam``: the resolved
        kernel, the drawn sketch (same random stream as ``fit``) and the prepared support
        ``X_support_``; no factorisation or solve and no float32 accuracy check (that needs
        a solution).  A ``lam`` path (:func:`sprokr.model_selection.lambda_path`) solves
        for its whole grid from this state and makes each solution a model with
        :meth:`with_coef`.

        State left: ``kernel_``, ``sketch_matrix_``, ``X_support_``, ``dtype_`` (the
        requested precision), ``n_outputs_``, ``n_features_in_``, ``fit_times_``;
        ``solver_`` and ``solver_error_estimate_`` are None; no ``coef_`` (``predict``
        raises ``NotFittedError``; :meth:`with_coef` gives a fitted copy).

        Parameters
        ----------
        X : inputs the kernel accepts (n samples)
        y : array-like of shape (n,) or (n, p)

        Returns
        -------
        self

        Raises
        ------
        ValueError
            As :meth:`fit`, for invalid parameters or data (checked identically).
        """
        return self._fit(X, y, solve=False)

    def _fit(self, X: Any, y: Any, solve: bool) -> Self:
        lam, dtype, chunk, k, sk = self._checked_params()
        n = num_samples(X, "X")
        if n < 1:
            raise ValueError("cannot fit on 0 samples: X is empty")
        T64, scalar = check_targets(y, n, type(self).__name__)
        set_feature_names(self, X)  # scikit-learn's feature_names_in_ (dataframe inputs)
        # an estimator's random_state left to None: a sketch's own random_state draws it
        rng = drawing_state(self.random_state)
        t0 = time.perf_counter()
        sk = check_sketch_for(sk, self.input_sketch, self.m_x, n, "input")
        ex = LocalExecutor()
        parts = ex.partition(X, T64, prepare=(NamedPrepare(k.prepare, "X"), None), names=("inputs", "targets"))
        Xp = parts.blocks[0][parts.column("inputs")]  # one local partition
        coef: Any = None
        if not solve:  # fit_state: the support alone (the sketch drawn as fit draws it)
            R = None if sk is None else sk.draw(n, rng)
            support = Xp if R is None else k.prepare_support(take(Xp, R.indices))
            route, est = None, None
            times: dict[str, float] = {}
        elif sk is None:
            chunk = chunk or default_chunk_size(n, dtype)
            support, R, route, est, times = Xp, None, "cholesky", None, {}
            if dtype == np.float32 and float64_kernel(k) is not k:
                # float32 kernel values against n lam I: measured, float64 when they cost too much
                check = checked_exact_factor(k, Xp, lambda kk, X: exact_ridge_factor(kk, parts, X, lam, chunk, ex), T64)
                est, cho, support = check.estimate, check.factor, check.Xp
                times.update(check.times)
                if check.message is not None:
                    warn_accuracy(check.message, self)
                    k, dtype = check.kernel, np.dtype(np.float64)
            else:
                cho = exact_ridge_factor(k, parts, Xp, lam, chunk, ex)
            coef = sla.cho_solve(cho, T64, check_finite=False)
        else:
            R = sk.draw(n, rng)
            support = k.prepare_support(take(Xp, R.indices))  # the right operand of every block
            # the sketched ridge's threshold defaults to its own (None: see sketched_ridge), as in SISOKR
            sol = sketched_ridge(k, R, support, parts, lam, np.asarray, T64.shape[1], self.rcond,
                                 chunk or default_chunk_size(R.indices.size, dtype), ex,
                                 solver=self.solver, dtype=dtype, ref_targets=T64[R.indices], which="targets")
            coef, route, est, times = sol.coef, sol.method, sol.error_estimate, dict(sol.times)
            fallback = sol.fallback_message(dtype)
            if fallback:  # float32 failed the solver's check: float64 kernel values from here on
                warn_accuracy(fallback, self)
                k, dtype, support = sol.features.kernel, np.dtype(sol.precision), sol.support
        # ---- validated and solved: learned state
        self.kernel_, self.sketch_matrix_ = k, R
        self.X_support_ = k.prepare_support(support)
        set_n_features(self, Xp)
        if solve:
            self.coef_ = np.asarray(coef, dtype=np.float64)  # float64 whatever the dtype (one policy)
            self._expansion = KernelExpansion(k, self.X_support_, self.coef_, dtype)
        else:  # a state: no solution (and none of an earlier fit)
            self.__dict__.pop("coef_", None)
            self.__dict__.pop("_expansion", None)
        self.dtype_ = np.dtype(dtype)  # the precision the model predicts in (float64 after a fallback)
        self.solver_, self.solver_error_estimate_ = route, est
        self.fit_times_ = {**{k if k.startswith("float") else f"ridge_{k}": v for k, v in times.items()},
                           "total": time.perf_counter() - t0}
        self.n_outputs_, self._scalar = T64.shape[1], scalar
        return self

    @consistent_read
    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets, (n_q,) for 1-D training targets, else (n_q, p)."""
        check_is_fitted(self, "coef_")
        num_samples(X, "X")  # None or a scalar: named here, not as the executor's "collection 0"
        check_feature_names(self, X)
        ex = LocalExecutor()
        prepare = NamedPrepare(self.kernel_.prepare, "X")

        def checked(Xq):
            Xp = prepare(Xq)
            check_n_features(self, Xp)
            return Xp

        P = ex.map_rows(ex.partition(X, prepare=(checked,)), self._expansion,
                        default_chunk_size(num_samples(self.X_support_), np.float64), name="predictions")
        return P[:, 0] if getattr(self, "_scalar", False) else P

    @consistent_read
    def with_coef(self, coef: ArrayLike, lam: float | None = None) -> Self:
        """A fitted copy with other coefficients on ``X_support_`` (kernel and support shared).

        For model selection: the solutions of a ``lam`` path are scored as models.
        ``coef``: shape (n_support, ``n_outputs_``); ``lam`` is recorded as the copy's parameter.
        Works on a model fitted by :meth:`fit_state` too.
        """
        check_is_fitted(self, "X_support_")
        new, coef = copy_with_coef(self, coef, (num_samples(self.X_support_), self.n_outputs_), lam)
        new.coef_ = coef
        new._expansion = KernelExpansion(self.kernel_, self.X_support_, coef, getattr(self, "dtype_", resolve_dtype(self.dtype)))
        return new


# --------------------------------------------------------------------------- sklearn MLP
class MLPSurrogate(RenamedParametersMixin, SaveMixin, R2ScoreMixin, RegressorMixin, BaseEstimator):
    """scikit-learn ``MLPRegressor`` (Adam) with early stopping on the kernel-induced loss.

    Trained one epoch at a time (``partial_fit``); after each epoch the loss
    ``mean |g(x) - psi~(y)|^2 + r`` is evaluated on ``eval_set`` (or on the training set when
    none is given) and the best weights are kept.  Targets are centred and divided by one
    global scale (distances are preserved up to that factor).

    Parameters
    ----------
    hidden_layer_sizes : tuple of int
    activation : str
    lam : float
        L2 penalty on the weights (``MLPRegressor``'s ``alpha``; formerly ``alpha``).
    learning_rate : float
        Adam's initial step size (``MLPRegressor``'s ``learning_rate_init``; formerly
        ``learning_rate_init``).
    batch_size : int
    max_epochs : int
    n_iter_no_change : int
        Epochs without improvement (relative ``tol``) before stopping (formerly ``patience``).
    tol : float
    lr_drops : int
        Learning-rate reductions on a plateau: when ``n_iter_no_change`` runs out, training resumes
        from the best weights with the learning rate divided by ``lr_factor`` (a fresh Adam
        state), at most ``lr_drops`` times; then it stops.  0: stop at the first plateau.
    lr_factor : float > 1
    monitor : {"loss", "mrr"}
        What early stopping watches on ``eval_set``: the kernel-induced loss (default), or
        the MRR of the validation pairs ranking their own outputs
        (:func:`~sprokr.models.training.self_retrieval_mrr`) -- for retrieval tasks, where
        the epoch (or setting) with the lowest squared loss is often too smooth to rank
        near-identical candidates.  ``"mrr"`` needs an ``eval_set``.
    random_state : None, int or numpy.random.Generator
    verbose : int

    Attributes
    ----------
    model_ : MLPRegressor
    n_epochs_ : int
    best_epoch_ : int
        Epoch (0-based) of the kept weights.
    best_loss_ : float
        Monitored loss (validation kernel loss, or training loss without ``eval_set``) of
        the kept weights.
    best_score_ : float or None
        Validation MRR of the kept weights (``monitor="mrr"``).
    converged_ : bool
        True when training stopped on a plateau of the monitored loss; False when
        ``max_epochs`` ran out first (a ``ConvergenceWarning`` is then issued).
    history_ : list of (train_loss, val_loss)
    n_features_in_ : int
        Number of input features seen in ``fit``.

    The former names ``alpha``, ``learning_rate_init`` and ``patience`` still work until
    sprokr 0.3, with a ``FutureWarning`` (``docs/parameters.md``).
    """

    #: deprecated parameter names (sprokr.deprecation): old -> new
    renamed_parameters = {"alpha": "lam", "learning_rate_init": "learning_rate", "patience": "n_iter_no_change"}
    #: the precision it trains in: DSOKR computes its n x p training targets in it (float32:
    #: half the memory of float64; the targets are centred and scaled in float64 blocks first)
    target_dtype = np.float32

    def __init__(self, hidden_layer_sizes: tuple[int, ...] = (256,), activation: str = "relu", lam: float = 1e-4,
                 learning_rate: float = 1e-3, batch_size: int = 200, max_epochs: int = 200,
                 n_iter_no_change: int = 10, tol: float = 1e-4, lr_drops: int = 0, lr_factor: float = 10.0,
                 monitor: str = "loss", random_state: RandomStateLike = None, verbose: bool | int = 0) -> None:
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.lam = lam
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.lr_drops = lr_drops
        self.lr_factor = lr_factor
        self.monitor = monitor
        self.random_state = random_state
        self.verbose = verbose

    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them).

        Checks ``hidden_layer_sizes`` (integers >= 1), ``activation`` (one of
        scikit-learn's), ``lam`` (>= 0), ``learning_rate`` (> 0), ``batch_size``,
        ``max_epochs``, ``n_iter_no_change`` (integers >= 1), ``tol`` (>= 0), ``lr_drops`` (an
        integer >= 0), ``lr_factor`` (> 1), ``monitor`` and ``random_state`` (its type; nothing
        is drawn).  ``fit`` runs the same checks first, with the same messages;
        ``monitor="mrr"`` without validation data is refused by ``fit``.  Nothing of the estimator is changed.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            A parameter value is invalid (the message names it).
        """
        check_mlp_architecture(self.hidden_layer_sizes, self.activation)
        check_optimiser_params(self.lam, self.learning_rate, self.batch_size)
        check_lr_schedule(self.max_epochs, self.lr_drops, self.lr_factor)
        check_early_stopping(self.n_iter_no_change, self.tol)
        check_monitor(self.monitor)
        check_random_state_param(self.random_state)
        return self

    @atomic_fit
    def fit(self, X: Any, T: Any, sample_offsets: Any = None, eval_set: Any = None) -> Self:
        """Fit on ``X`` (n, d) and targets ``T`` (n, p).  Returns self.

        The parameters are checked first (:meth:`check_params`).  NaN or infinite inputs,
        targets, offsets (``>= 0``, one per sample) or ``eval_set`` targets and offsets are
        then refused with a ``ValueError`` naming them, before training.
        """
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPRegressor

        self.check_params()
        # named here, before training (scikit-learn's "Input y contains NaN." named neither
        # T nor an infinite value)
        T = check_fit_targets(T, "T")
        set_feature_names(self, X)  # scikit-learn's feature_names_in_ (dataframe inputs)
        X = _mlp_inputs(X)
        check_paired(X, T, "X", "T")  # also 0 samples (scikit-learn's MLP then named its batch_size)
        # not used by the square loss (a constant per sample), checked as every network checks them
        check_sample_offsets(sample_offsets, X.shape[0])
        ev = check_eval_set(eval_set, T.shape[1])
        mrr = self.monitor == "mrr"  # (checked: check_params)
        if mrr and ev is None:
            raise ValueError("monitor='mrr' needs validation data (eval_set, or DSOKR's validation_fraction)")
        seed = int(check_random_state(self.random_state).integers(2**31 - 1))
        rows = max(TARGET_BLOCK_ROWS, int(self.batch_size))  # rows per block of the targets' arithmetic
        mu, scale = target_moments(T, rows)
        model = MLPRegressor(
            hidden_layer_sizes=self.hidden_layer_sizes, activation=self.activation, alpha=self.lam,
            learning_rate_init=self.learning_rate, batch_size=min(self.batch_size, X.shape[0]),
            solver="adam", shuffle=True, random_state=seed,
        )
        self.mu_, self.scale_ = mu, scale
        self.model_ = model
        set_n_features(self, X)  # before the epochs: predict checks the eval_set against it
        stop = EarlyStopping(self.n_iter_no_change, self.tol, self.verbose, "MLPSurrogate", int(self.max_epochs),
                             int(self.lr_drops))
        get_state = lambda: ([c.copy() for c in model.coefs_], [b.copy() for b in model.intercepts_])  # noqa: E731
        lr = float(self.learning_rate)
        fresh_optimizer = False
        epochs = _Epochs(X, T, mu, scale, seed, rows)
        for epoch in range(int(self.max_epochs)):
            loss = 0.0
            for Xb, Tb in epochs.blocks():
                # one target as (n,): scikit-learn's MLP warns a DataConversionWarning for an
                # (n, 1) column, at every block; predict reshapes its (n,) output
                if Tb.shape[1] == 1:
                    Tb = Tb[:, 0]
                if fresh_optimizer:
                    # the first block after a learning-rate drop: fit() with warm_start keeps
                    # the weights and starts a new Adam with the smaller step (partial_fit would
                    # go on with the previous step and moments); max_iter=1: one pass, as partial_fit
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", ConvergenceWarning)  # "max_iter=1 reached"
                        model.fit(Xb, Tb)
                    fresh_optimizer = False
                else:
                    model.partial_fit(Xb, Tb)
                loss += float(model.loss_) * Xb.shape[0]
            # sklearn's loss is half the mean squared error of the standardised targets
            train_loss = loss / X.shape[0] * 2 * scale**2 * T.shape[1]
            val_loss = score = None
            if ev is not None:
                G = self.predict(ev[0])
                val_loss = kernel_induced_loss(G, ev[1], ev[2])
                score = self_retrieval_mrr(G, ev[1], ev[2]) if mrr else None
            if not stop.update(epoch, train_loss, val_loss, get_state, score):
                continue
            if stop.plateau():
                break
            # plateau: resume from the best weights with a smaller step and a fresh Adam state
            lr /= float(self.lr_factor)
            model.coefs_, model.intercepts_ = [c.copy() for c in stop.state[0]], [b.copy() for b in stop.state[1]]
            model.set_params(learning_rate_init=lr, warm_start=True, max_iter=1)
            fresh_optimizer = True
        model.coefs_, model.intercepts_ = stop.state
        self.n_epochs_, self.best_epoch_, self.history_ = epoch + 1, stop.best_epoch, stop.history
        kept: tuple[Any, Any] = stop.best_values() if mrr else (stop.best, None)
        self.best_loss_, self.best_score_ = kept
        self.converged_ = stop.converged
        self.n_outputs_ = T.shape[1]
        if not stop.converged:
            warn_not_converged("MLPSurrogate", stop)
        return self

    @consistent_read
    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets, (n_q, p)."""
        check_is_fitted(self, "model_")
        check_feature_names(self, X)
        X = _mlp_inputs(X)
        check_n_features(self, X)  # (named MLPSurrogate, not the MLPRegressor inside)
        if X.shape[0] == 0:  # scikit-learn's MLP refuses an empty batch
            return np.empty((0, self.n_outputs_))
        G = self.model_.predict(X)
        return as_targets(G) * self.scale_ + self.mu_


class _Epochs:
    """The blocks of rows an epoch of :class:`MLPSurrogate` trains on, with their targets
    standardised as each block is drawn: the fit never holds a standardised copy of all n x p
    targets (2 GB at a million rows and p = 512, beside the targets themselves).

    Up to ``rows`` rows (``TARGET_BLOCK_ROWS``, or the minibatch if larger), one block of
    every row (standardised once, kept; the network shuffles it).  Beyond, each epoch draws a
    fresh permutation (seeded) and cuts it into equal blocks of at most ``rows`` rows (indices
    sorted within a block, for the gathers; the network shuffles within the block), so every
    minibatch still mixes the whole data.
    """

    def __init__(self, X, T, mu, scale, seed: int, rows: int) -> None:
        self.X, self.T, self.mu, self.scale, self.rows = X, T, mu, scale, int(rows)
        self.rng = np.random.default_rng(seed)
        self.whole = standardise(T, mu, scale) if T.shape[0] <= self.rows else None

    def blocks(self):
        if self.whole is not None:
            yield self.X, self.whole
            return
        n = self.T.shape[0]
        perm = self.rng.permutation(n)
        for idx in np.array_split(perm, -(-n // self.rows)):  # equal blocks: none smaller than a minibatch
            idx = np.sort(idx)
            yield self.X[idx], standardise(self.T[idx], self.mu, self.scale)


def _mlp_inputs(X):
    """Inputs of the MLP as float32: a dense 2-D array, or a CSR matrix kept sparse."""
    import scipy.sparse as sp

    if sp.issparse(X):
        X = sp.csr_matrix(X)
        check_finite(X, "X")
        if X.nnz:
            check_numeric_array(X.data, "X", np.float32, "the MLP surrogate", ndim=1)
        return sp.csr_matrix(X, dtype=np.float32)
    X = check_numeric_array(X, "X", np.float32, "the MLP surrogate")
    if X.shape[1] == 0:
        raise ValueError(f"X has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    return X
