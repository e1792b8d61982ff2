"""Model selection by validation: ``lam`` paths, kernel-parameter grids and sketch sizes.

Every ridge-regularised sprokr estimator solves ``(G0 + n lam Kt) gamma = B`` for its
coefficients, where nothing but the solve depends on ``lam``:

* sketched input (SIOKR, SISOKR, :class:`~sprokr.models.KernelRidgeRegressor` with a
  sketch), on the fits' default route: the whitened system of
  :func:`sprokr.numerics.whitened_system`, ``G0 = Z^T Z``, ``B = Z^T T``, ``Kt = I`` with
  ``Z = K R^T P_r L^-T`` (``R K R^T = L L^T``, pivoted; one chunked pass in float64 --
  the small-``lam`` end of a grid is where float32 would drift), so that every ``lam``,
  down to a flat kernel's tiny ones, is solved as accurately as a refit.  With
  ``solver="cholesky"`` / ``"eigh"`` the estimator's refits solve the plain normal
  equations, and so does its path: ``G0 = A^T A``, ``B = A^T T`` with ``A = K R^T``,
  ``Kt = R K R^T`` (:class:`~sprokr.numerics.CrossProductTask`, the support rows gathered
  in the same pass);
* exact input (IOKR, ISOKR, exact kernel ridge): ``G0 = K``, ``Kt = I``, ``B = T``;
* square-loss kernel machines (:class:`~sprokr.SketchedKernelMachine`): ``G0 = Z^T Z`` of
  the sketched features, ``Kt = I``, one ``lam / e_j`` per eigenvalue of the output matrix.

A :class:`LambdaPath` computes these once (one ``fit_state`` for the model's state -- a fit
without its ridge solve --, one pass for the cross products) and then, for the whole grid,

* ``method="eigh"``: one factorisation.  With ``Kt = I``, ``G0 = U diag(s) U^T`` and
  ``G(lam)^-1 = U diag(1 / (s + n lam)) U^T`` (the default route of the sketched models
  too: exact for the whole grid).  With the plain normal equations, ``G(lam_min) = L L^T``
  (Cholesky, the factorisation a refit at the smallest ``lam`` does) and
  ``L^-1 Kt L^-T = E diag(kappa) E^T``; then ``G(lam)^-1 = W diag(1 / (1 + n (lam -
  lam_min) kappa)) W^T`` with ``W = L^-T E``.  Whitening by ``G(lam_min)`` instead of by
  ``Kt`` keeps the accuracy of a direct solve: ``B^T (A^T A) B`` with ``B = U D^-1/2`` of
  ``Kt`` divides rounding errors by the smallest kept eigenvalue of ``Kt`` (flat kernels),
  whereas here every ``lam >= lam_min`` is at least as well conditioned as the factorised
  matrix.  Each ``lam`` then costs ``O(n_val r p)`` (one GEMM on the validation block);
* ``method="cholesky"``: one Cholesky factorisation of the ``m x m`` matrix per ``lam``
  (what a refit does, without its pass over the data).  An ``m x m`` eigendecomposition
  costs ~:data:`EIGH_COST` Cholesky factorisations, so ``"auto"`` (default) picks the
  cheaper route from a flop count;
* ``method="refit"``: one fit per ``lam`` (any estimator with a ``lam`` parameter; the
  reference the fast routes are tested against).

The validation kernel block against the support is computed once.  Scores:

* default (``scoring=None``): minus the kernel-induced loss on validation pairs -- the
  surrogate error ``|h(x) - psi(y)|^2_H`` of :func:`surrogate_error` for
  the IOKR family (without output sketch, through ``K_y``: ``alpha^T K_y alpha - 2 alpha^T
  k_y^y + k(y, y)`` with precomputed ``B^T K_y B``), the squared error of vector
  predictions for kernel ridge / kernel machines -- computed from the path, no decoding;
* any scikit-learn scorer ``scorer(estimator, X_val, Y_val)`` (e.g.
  :func:`sprokr.metrics.f1_samples_scorer`, :func:`retrieval_scorer`): each ``lam`` gets a
  lightweight fitted copy of the model (``with_coef``: same state, other coefficients) that
  decodes like the model itself.

:class:`LambdaSearchCV` wraps this as a scikit-learn meta-estimator (like ``RidgeCV``,
with a validation split), usable inside ``GridSearchCV``; :func:`select_model` adds the
output sketch size (perfect h), a kernel-parameter grid and a growing input sketch size,
all on a validation split of the training data, and returns the chosen settings and the
curves.  Progress lines go to the ``sprokr.model_selection`` logger.

Sketch sizes on their own:

* :func:`perfect_h_curve` -- for growing ``m_y``, the "perfect" predictor
  ``h(x, y) = P~_Y psi(y)`` (the projection of the true output on the sketched output
  subspace) is decoded for validation outputs; the curve of its error / task metric shows
  how large the output sketch must be, without training any regressor.  Its plateau gives
  the smallest useful ``m_y`` (:func:`plateau_index`).  Usable for DSOKR and SISOKR alike.
* :func:`approximate_leverage_scores` -- ridge leverage scores of a Gram matrix (output or
  input) from a uniform Nystrom approximation, ``O(n m)`` kernel evaluations; pass them as
  ``SubSample(probabilities=...)``; :func:`sprokr.plotting.plot_leverage_scores` draws them.
* :class:`ProjectedTargets` -- the validation retrieval scores of DSOKR with a ridge for
  many input feature maps and penalties, each fit regressing ``n_val`` projected targets
  ``Psi E^T`` instead of the ``p`` coordinates (computed once per output basis).
* :func:`select_m_x` -- validation surrogate error of SIOKR for growing ``m_x`` until
  convergence or a training-time budget (the loop: :func:`grow_until_plateau`).
* :func:`check_sizes` -- a grid of sketch sizes checked as every function here checks it
  (increasing positive integers, at most the number of samples drawn on), for code with a
  grid of its own.

Their progress lines go to the ``sprokr.selection`` logger (shown on standard error with
``verbose=True``, see :mod:`sprokr.progress`).

A selection fits the same estimator many times on the same samples: with a
:class:`SelectionCache` (``select_model(..., cache=)``) the fits share the prepared samples
of each kernel configuration, the kernel columns (the exact Gram, a sketch's support
columns, the validation blocks) and the training Gram's eigendecomposition -- computed once
for every output kernel, ``lam``, sketch size and parameter point that needs them.

Whether exact IOKR fits a time and memory budget: :func:`exact_iokr_cost` (its memory and
flops, and the time at :data:`ASSUMED_FLOP_RATE`, or at the speed :func:`measured_flop_rate`
measures now).

The private submodules: ``_budget`` (:func:`exact_iokr_cost`), ``_cache`` (:class:`SelectionCache`), ``_scorers`` (validation scores), ``_systems`` (the ridge systems
and their two routes), ``_adapters`` (the pass that builds each estimator's system),
``_lambda_path``, ``_projected`` (:class:`ProjectedTargets`), ``_search`` (:class:`LambdaSearchCV`, :func:`select_model`),
``_sketch_size`` and ``_leverage``.
"""
from ._budget import ASSUMED_FLOP_RATE, EIGH_TIME_RATIO, ExactCost, exact_iokr_cost, measured_flop_rate
from ._cache import CachedKernel, SampleView, SelectionCache, default_cache_mb
from ._lambda_path import DEFAULT_LAMS, LambdaPath, check_lams, lambda_path
from ._projected import LINEAR_REGRESSORS, ProjectedTargets
from ._leverage import approximate_leverage_scores
from ._scorers import kernel_loss_scorer, retrieval_scorer, surrogate_error
from ._search import LambdaSearchCV, select_model
from ._sketch_size import check_sizes, grow_until_plateau, perfect_h_curve, plateau_index, select_m_x
from ._systems import EIGH_COST, LOW_RANK_FRACTION, gram_eigh

__all__ = [
    # lam paths and the search
    "LambdaSearchCV",
    "LambdaPath",
    "lambda_path",
    "select_model",
    "check_lams",
    "DEFAULT_LAMS",
    "EIGH_COST",
    "LOW_RANK_FRACTION",
    "gram_eigh",
    # exact or sketched: the cost of exact IOKR
    "ExactCost",
    "exact_iokr_cost",
    "measured_flop_rate",
    "EIGH_TIME_RATIO",
    "ASSUMED_FLOP_RATE",
    # what the fits of a selection share
    "SelectionCache",
    "default_cache_mb",
    "SampleView",
    "CachedKernel",
    # validation scores
    "kernel_loss_scorer",
    "retrieval_scorer",
    "surrogate_error",
    "ProjectedTargets",
    "LINEAR_REGRESSORS",
    # sketch sizes
    "perfect_h_curve",
    "plateau_index",
    "grow_until_plateau",
    "select_m_x",
    "check_sizes",
    "approximate_leverage_scores",
]
