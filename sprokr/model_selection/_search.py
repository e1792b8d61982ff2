"""Choosing ``lam``, kernel parameters and sketch sizes on a validation split:
:class:`LambdaSearchCV` and :func:`select_model`."""
from __future__ import annotations

import logging
import time
import warnings
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..deprecation import renamed_keywords
from ..persistence import SaveMixin
from ..progress import user_stacklevel
from ..utils import atomic_fit, check_bool, check_finite, check_positive, check_random_state, concat_samples, \
    consistent_read, frame_as_array, num_samples, reword_error
from ._cache import SampleView, SelectionCache
from ._lambda_path import DEFAULT_LAMS, check_lams, lambda_path
from ._scorers import kernel_loss_scorer, resolve_scoring
from ._sketch_size import check_sizes, grow_until_plateau, perfect_h_curve

from ..sketches import Sketch

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from ..decoders.candidates import CandidateIndex
    from ..numerics import Decoded
    from ..types import RandomStateLike, Samples

__all__ = ["LambdaSearchCV", "select_model"]

logger = logging.getLogger("sprokr.model_selection")


def _best_finite(scores):
    """Index of the first best finite score, in the grid's order (as GridSearchCV); NaN and
    infinite scores are never chosen.  None when no score is finite."""
    scores = np.asarray(scores, dtype=float)
    finite = np.isfinite(scores)
    return int(np.argmax(np.where(finite, scores, -np.inf))) if finite.any() else None


def _first_best(scores, what="every lam"):
    """:func:`_best_finite`, or a ValueError when no score is finite (``what`` names the candidates)."""
    best = _best_finite(scores)
    if best is None:
        raise ValueError(f"{what} scored NaN or an infinite value on the validation data")
    return best


def _seeded(estimator, rng):
    """A clone whose unset ``random_state`` is drawn from ``rng`` (reproducible sketches)."""
    est = clone(estimator)
    params = est.get_params(deep=False)
    if "random_state" in params and params["random_state"] is None:
        est.set_params(random_state=int(rng.integers(2**31 - 1)))
    return est


def _check_target_shapes(Y, Y_val):
    """Numeric targets of validation_data must have the training targets' columns: a
    kernel loss broadcast a (n_val, 1) Y_val against 2 training columns without an error.
    (Structured targets -- strings, graphs -- are compared by their kernels.)"""
    def numeric(A):
        return hasattr(A, "shape") and hasattr(A, "dtype") and np.dtype(A.dtype).kind in "biuf"

    check_finite(Y_val, "Y_val")  # (the output kernel said "the samples")
    if numeric(Y) and numeric(Y_val) and tuple(Y.shape[1:]) != tuple(Y_val.shape[1:]):
        raise ValueError(f"validation_data: Y_val has shape {tuple(Y_val.shape)}, the training Y "
                         f"{tuple(Y.shape)}: expected shape (n_val{''.join(f', {k}' for k in Y.shape[1:])})")


def _check_input_shapes(X, X_val):
    """Numeric inputs of validation_data, named: finite, with the training inputs' columns
    (the kernels said "the samples" and "the two sample sets", naming neither X_val nor
    validation_data).  Structured inputs (strings, graphs) are their kernels' to check."""
    check_finite(X_val, "X_val")
    if getattr(X, "ndim", None) == 2 and getattr(X_val, "ndim", None) == 2 and X.shape[1] != X_val.shape[1]:
        raise ValueError(f"validation_data: X_val has shape {tuple(X_val.shape)}, the training X "
                         f"{tuple(X.shape)}: expected shape (n_val, {X.shape[1]})")


def _split(X, Y, validation_data, validation_fraction, rng):
    from ..models.dsokr import check_validation_fraction, validation_split
    from ..utils import check_paired

    # dataframes: arrays (the searches gather, iterate and concatenate rows; a refit on all
    # the data takes them as given, and records their feature names)
    X, Y = frame_as_array(X), frame_as_array(Y)
    check_paired(X, Y)
    vf = check_validation_fraction(validation_fraction)  # named even when validation_data makes it unused
    if validation_data is not None:
        if len(validation_data) != 2:
            raise ValueError("validation_data must be a pair (X_val, Y_val)")
        validation_data = (frame_as_array(validation_data[0]), frame_as_array(validation_data[1]))
        check_paired(validation_data[0], validation_data[1], "X_val", "Y_val")
        _check_input_shapes(X, validation_data[0])
        _check_target_shapes(Y, validation_data[1])
        return (X, Y), tuple(validation_data)
    if vf is None:
        raise ValueError("give validation_fraction in (0, 1) or validation_data=(X_val, Y_val)")
    return validation_split(X, Y, vf, rng)


#: (kernel parameter, its parameters' parameter, side) of the estimators a cache serves
_KERNEL_PARAMS = (("input_kernel", "input_kernel_params", "input"), ("output_kernel", "output_kernel_params", "output"),
                  ("kernel", "kernel_params", "input"))


def _check_splittable(estimator):
    """A validation split of the pairs takes rows of ``X`` and ``Y``: the rows of a
    precomputed training Gram are blocks against ALL the samples, not a square Gram of the
    training part and a block against it.  Such a kernel of ``estimator`` is refused, named
    (it failed inside the path's first kernel block, "it is a (48, 60) block")."""
    params = estimator.get_params(deep=False)
    for name, _, side in _KERNEL_PARAMS:
        spec = params.get(name)
        if spec is not None and (spec if isinstance(spec, str) else getattr(spec, "name", None)) == "precomputed":
            data, val = ("X", "X_val") if side == "input" else ("Y", "Y_val")
            scoring = "" if side == "input" else (" (and a scoring of the predictions: the kernel-induced loss needs "
                                                  "kernel values between validation outputs)")
            raise ValueError(
                f"validation_fraction: a validation split cannot be taken from a precomputed Gram (the "
                f"estimator's {name} is 'precomputed': its rows held out would be blocks against all the samples, "
                f"not against the training part); give validation_data=(X_val, Y_val) instead, with {data} the "
                f"training Gram and {val} the kernel values between the validation and the training "
                f"samples{scoring}")


def _views(cache, train, val):
    """``(train, val)`` as views of one registered collection (as given when they are views
    of ``cache`` already)."""
    if isinstance(train, SampleView) and isinstance(val, SampleView) and train.master is val.master \
            and train.master.cache is cache:
        return train, val
    both = cache.samples(concat_samples([train, val]))
    n = num_samples(train)
    return both.take(np.arange(n)), both.take(np.arange(n, len(both)))


def _cached_kernels(est, cache, X_train):
    """``est`` with its kernels (given by name or instance) served by ``cache``: float64 kernels
    only (a float32 model's checks need float64 copies of its kernel), not ``precomputed``."""
    from ..kernels import resolve_kernel
    from ..models.base import OUTPUT_DTYPE
    from ..utils import resolve_dtype

    params = est.get_params(deep=False)
    new = {}
    for name, pname, side in _KERNEL_PARAMS:
        if params.get(name) is None:
            continue
        dtype = OUTPUT_DTYPE if side == "output" else resolve_dtype(params.get("dtype", "float64"))
        kernel = resolve_kernel(params[name], params.get(pname), side, dtype, name)
        if np.dtype(getattr(kernel, "dtype", "float64")) != np.float64 or kernel.name == "precomputed":
            continue
        if side == "input":
            kernel = cache.fitted_kernel(kernel, X_train)
        new[name], new[pname] = cache.kernel(kernel), None
    return est.set_params(**new)


def _grid_values(pgrid, name):
    """The values of parameter ``name`` in the dicts of ``pgrid`` (a ParameterGrid), as text
    for an error message ("" when no dict has it)."""
    given = [v.tolist() if isinstance(v, np.ndarray) else list(v) for g in pgrid.param_grid
             for k, v in g.items() if k == name]
    return ", ".join(map(repr, given))


def _largest(sizes, extended, n_train):
    """The largest size of a grid of sizes the selection may try: its last one, or, when
    ``extend_grids`` extends it, the training part's size (where the doubling stops)."""
    return max(sizes[-1], n_train) if extended else sizes[-1]


def _check_points(estimator, points, lam, m_y, m_x, fixed_output):
    """Check, without data, the parameters the selection's fits will set, before any fit.

    For every point of ``points``, a clone of ``estimator`` with the point, ``lam`` (any value
    of ``lams``: the paths set their own) and ``m_y`` (the largest size the perfect-h curve
    may choose, if any) is checked by its ``check_params`` (nothing is fitted; an estimator
    without one is not checked); with ``m_x`` (the largest size of the ``m_x`` growth, if
    any), again at that size.  ``fixed_output``: the fits take the curve's output sketch at
    ``m_y`` (an output sketch instance is checked resized, as the curve draws it).  The
    estimator's error is re-raised with the point and the sizes appended.
    """
    if not callable(getattr(estimator, "check_params", None)):
        return
    for point in points:
        sized = {} if m_y is None else {"m_y": m_y}
        for sizes in [sized] + ([] if m_x is None else [{**sized, "m_x": m_x}]):
            est = clone(estimator).set_params(**point, **sizes, lam=lam)
            sketch = est.get_params(deep=False).get("output_sketch")
            if fixed_output and isinstance(sketch, Sketch) and "m" in sketch.get_params(deep=False):
                est.set_params(output_sketch=clone(sketch).set_params(m=m_y))
            try:
                est.check_params()
            except (ValueError, TypeError) as exc:
                where = [f"the param_grid point {point}"] if point else []
                where += [f"{k}={v} (the largest size {k}_grid may reach)" for k, v in sizes.items()]
                if where:
                    raise reword_error(exc, f"{exc} (select_model: checked at {', with '.join(where)})")
                raise


def _check_extend(extend):
    if isinstance(extend, (bool, np.bool_)):
        return {"m_x", "m_y"} if extend else set()
    names = set(extend) if isinstance(extend, (list, tuple, set, frozenset)) else None
    if names is None or not names <= {"m_x", "m_y"}:
        raise ValueError(f"extend_grids must be True, False or a sequence of 'm_x' / 'm_y', got {extend!r}")
    return names


# --------------------------------------------------------------------------- meta-estimator
def _best_has(attr):
    def check(self):
        est = getattr(self, "best_estimator_", None)
        return hasattr(self.estimator if est is None else est, attr)

    return check


class LambdaSearchCV(SaveMixin, BaseEstimator):
    """Choose ``lam`` on a validation split with the lam path (scikit-learn meta-estimator).

    Like scikit-learn's ``RidgeCV``, for the ridge parameter of sprokr's kernel models:
    the estimator is fitted once on the training part of the data, every ``lam`` is scored
    on the validation part from one factorisation (see :mod:`sprokr.model_selection`),
    and the best one is refitted on all the data.

    Parameters
    ----------
    estimator : estimator with a ``lam`` parameter
        Cloned, never modified.  An unset ``random_state`` of it is drawn from
        ``random_state`` (so the search is reproducible).
    lams : sequence of float > 0, optional
        The grid (default :data:`DEFAULT_LAMS`, 1e-9 ... 1e-1).  Ties go to the first best
        value in the grid's order (as in ``GridSearchCV``); a NaN or infinite score is never
        the best (a ValueError when every ``lam`` has one).
    scoring : None, "kernel_loss", str or callable
        None: minus the validation kernel-induced loss (:func:`kernel_loss_scorer`, computed
        from the path).  A scikit-learn scorer name or ``scorer(estimator, X, Y)`` (greater
        is better), e.g. :func:`sprokr.metrics.f1_samples_scorer` or
        :func:`retrieval_scorer`, called on a lightweight fitted copy per ``lam``.
    validation_fraction : float in (0, 1)
        Fraction of the pairs held out (seeded) when ``fit`` gets no ``validation_data``.
        An estimator with a precomputed kernel cannot be split so (the held-out rows of a
        Gram are not blocks against the training part): ``fit`` refuses it, and takes
        ``validation_data`` (the training Gram and the validation block against it).
    refit : bool
        Refit the best ``lam`` on all the data given to ``fit`` (else ``best_estimator_`` is
        the copy fitted on the training part).
    method : {"auto", "eigh", "cholesky", "refit"}
        Route of the path (see :func:`lambda_path`).
    random_state : None, int or numpy.random.Generator
        Seeds the validation split and the estimator's unset ``random_state``.

    Attributes
    ----------
    best_lam_ : float
    best_index_ : int
    best_score_ : float
    scores_ : ndarray of shape (n_lams,)
        Validation score of each ``lam`` (greater is better).
    lams_ : ndarray of shape (n_lams,)
    best_estimator_ : fitted estimator
    method_ : str
        The route used.
    n_train_, n_val_ : int
        Sizes of the training and validation parts.
    times_ : dict
        Seconds of each phase (``fit``, ``pass``, ``factorize``, ``score``, ``refit``, ``total``;
        with ``refit=False``, ``default_index`` when the fitted copy at ``best_lam_`` built
        the candidates of ``predict(X)``: see :class:`LambdaPath`).
    """

    def __init__(self, estimator: Any, lams: ArrayLike | None = None, scoring: str | Callable[..., float] | None = None,
                 validation_fraction: float | None = 0.2, refit: bool = True, method: str = "auto",
                 random_state: RandomStateLike = None) -> None:
        self.estimator = estimator
        self.lams = lams
        self.scoring = scoring
        self.validation_fraction = validation_fraction
        self.refit = refit
        self.method = method
        self.random_state = random_state

    @atomic_fit
    def fit(self, X: Samples, Y: Samples, validation_data: tuple[Samples, Samples] | None = None) -> Self:
        """Search ``lam`` on a validation split of ``(X, Y)`` (or on ``validation_data``)."""
        t0 = time.perf_counter()
        lams = check_lams(DEFAULT_LAMS if self.lams is None else self.lams)
        resolve_scoring(self.scoring)
        check_bool(self.refit, "refit")
        if self.method not in ("auto", "eigh", "cholesky", "refit"):
            raise ValueError(f"method must be 'auto', 'eigh', 'cholesky' or 'refit', got {self.method!r}")
        if not hasattr(self.estimator, "get_params") or "lam" not in self.estimator.get_params(deep=False):
            raise ValueError(f"estimator must have a 'lam' parameter, got {type(self.estimator).__name__}")
        if validation_data is None:
            _check_splittable(self.estimator)
        rng = check_random_state(self.random_state)
        (Xtr, Ytr), (Xv, Yv) = _split(X, Y, validation_data, self.validation_fraction, rng)
        est = _seeded(self.estimator, rng)
        path = lambda_path(est, Xtr, Ytr, lams, self.method)
        scores = path.scores(Xv, Yv, self.scoring)
        best = _first_best(scores)
        self.lams_, self.scores_, self.best_index_ = lams, scores, best
        self.best_lam_, self.best_score_ = float(lams[best]), float(scores[best])
        self.method_, self.times_ = path.method, dict(path.times_)
        self.n_train_, self.n_val_ = num_samples(Ytr, "Y"), num_samples(Yv, "Y_val")
        logger.info("[LambdaSearchCV] best lam=%.3g (score %.6g, route %s)", self.best_lam_, self.best_score_,
                    self.method_)
        if self.refit:
            t1 = time.perf_counter()
            self.best_estimator_ = clone(est).set_params(lam=self.best_lam_).fit(X, Y)
            self.times_["refit"] = time.perf_counter() - t1
        else:
            self.best_estimator_ = path.estimator_at(self.best_lam_)
            self.times_ = dict(path.times_)  # with the fitted copy's default index, when it built one
        self.times_["total"] = time.perf_counter() - t0
        return self

    # ---- delegation to the best estimator
    @property
    def n_features_in_(self) -> int:
        """``best_estimator_.n_features_in_`` (an AttributeError before ``fit``, or when the
        estimator records none), as scikit-learn's searches."""
        return self._best_attribute("n_features_in_")

    @property
    def feature_names_in_(self) -> np.ndarray:
        """``best_estimator_.feature_names_in_``: the column names of a dataframe ``X`` (an
        AttributeError before ``fit``, or when ``X`` had none), as scikit-learn's searches."""
        return self._best_attribute("feature_names_in_")

    def _best_attribute(self, name: str) -> Any:
        best = self.__dict__.get("best_estimator_")
        if best is None:
            raise AttributeError(f"{type(self).__name__} is not fitted yet: it has no {name}")
        return getattr(best, name)

    @available_if(_best_has("predict"))
    @consistent_read
    def predict(self, X: Samples, *args: Any, **kwargs: Any) -> Any:
        """``best_estimator_.predict``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X, *args, **kwargs)

    @available_if(_best_has("predict_topk"))
    @consistent_read
    def predict_topk(self, X: Samples, *args: Any, **kwargs: Any) -> Decoded:
        """``best_estimator_.predict_topk``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_topk(X, *args, **kwargs)

    @available_if(_best_has("predict_scores"))
    @consistent_read
    def predict_scores(self, X: Samples, *args: Any, **kwargs: Any) -> np.ndarray:
        """``best_estimator_.predict_scores``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_scores(X, *args, **kwargs)

    @available_if(_best_has("predict_coordinates"))
    @consistent_read
    def predict_coordinates(self, X: Samples, *args: Any, **kwargs: Any) -> np.ndarray:
        """``best_estimator_.predict_coordinates``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_coordinates(X, *args, **kwargs)

    @available_if(_best_has("make_candidate_index"))
    def make_candidate_index(self, candidates: Samples, *args: Any, **kwargs: Any) -> CandidateIndex:
        """``best_estimator_.make_candidate_index``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.make_candidate_index(candidates, *args, **kwargs)

    @consistent_read
    def score(self, X: Samples, Y: Samples) -> float:
        """The search's own scoring on ``(X, Y)`` (the kernel-induced loss by default)."""
        check_is_fitted(self, "best_estimator_")
        scorer, _ = resolve_scoring(self.scoring)
        return float((scorer or kernel_loss_scorer)(self.best_estimator_, X, Y))


# --------------------------------------------------------------------------- select_model
def _sketch_size_param(estimator):
    if "m_x" in estimator.get_params(deep=False):
        return "m_x"
    raise ValueError(f"m_x_grid needs an estimator with an input sketch size m_x; "
                     f"{type(estimator).__name__} has none")


def _sketches_training_inputs(estimator, points):
    """Whether ``m_x`` is the size of an input sketch drawn on all the training inputs (at most
    one column per sample) at some point of the grid: not without an input sketch, nor for
    a model fitted by regions (``n_regions``: ``m_x`` points per region, a region no larger
    fitted exactly, as :class:`~sprokr.models.LocalKernelRidgeRegressor`)."""
    params = estimator.get_params(deep=False)
    return "n_regions" not in params and any({**params, **p}.get("input_sketch") is not None for p in points)


class _FixedSketch(Sketch):
    """The output sketch of the grid's best fit, drawn again as is by the ``m_x`` growth's fits.

    An estimator that draws its input sketch first (SISOKR) would draw a different output
    sketch at every ``m_x``, and recompute its output basis and targets each time (at m_y
    ~ n the larger part of a fit); with one output sketch the sizes are compared on the
    same output side, which a selection's cache keeps.  Consumes no randomness.
    """

    name = "fixed"

    def __init__(self, matrix: Any = None) -> None:
        self.matrix = matrix
        self.random_state = None

    @property
    def m(self) -> int:
        return int(self.matrix.m)

    def validate(self, n: int) -> None:
        if self.matrix.n != n:
            raise ValueError(f"a fixed sketch of {self.matrix.n} samples cannot be drawn for {n}")

    def _draw(self, n, rng):
        return self.matrix


@renamed_keywords({"patience": "n_iter_no_change"})
def select_model(estimator: Any, X: Samples, Y: Samples, lams: ArrayLike | None = None,
                 param_grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Sequence[Any]]] | None = None,
                 m_y_grid: Sequence[int] | None = None, m_x_grid: Sequence[int] | None = None,
                 scoring: str | Callable[..., float] | None = None, validation_fraction: float | None = 0.2,
                 validation_data: tuple[Samples, Samples] | None = None, m_x_budget_s: float | None = None,
                 rtol: float = 0.01, n_iter_no_change: int = 1, perfect_h_params: Mapping[str, Any] | None = None,
                 method: str = "auto", random_state: RandomStateLike = None,
                 cache: SelectionCache | None = None,
                 extend_grids: bool | Sequence[str] = False) -> dict[str, Any]:
    """Choose ``lam``, kernel parameters and sketch sizes on a validation split of the training data.

    In order, on one seeded split of ``(X, Y)`` (or on ``validation_data``):

    1. ``m_y`` (``m_y_grid``; estimators with an output sketch): the perfect-h curve
       (:func:`~sprokr.model_selection.perfect_h_curve`) of the validation outputs; the plateau
       gives ``m_y`` -- no regressor is trained;
    2. ``param_grid`` (a scikit-learn parameter grid, e.g. kernel bandwidths): one fit and
       one lam path per point;
    3. ``m_x`` (``m_x_grid``, increasing; the input sketch size ``m_x``): one fit and
       one lam path per size, the sizes growing until the best validation score stops
       improving by ``rtol`` (``n_iter_no_change`` times) or a fit takes longer than ``m_x_budget_s``
       (:func:`~sprokr.model_selection.grow_until_plateau`); the smallest size within ``rtol`` of
       the best is kept.

    With ``extend_grids=True`` neither size stops at its grid's edge while the validation
    still improves: the last size is doubled, up to the number of training pairs, until the
    curve reaches its plateau (``perfect_h["extended"]``, ``m_x["extended"]``).

    Parameters
    ----------
    estimator : unfitted estimator with a ``lam`` parameter (cloned, never modified)
    X, Y : training data (never the test split)
    lams : sequence of float > 0, optional (default :data:`DEFAULT_LAMS`)
    param_grid : dict or list of dicts, optional
        Estimator parameters to try (``sklearn.model_selection.ParameterGrid``), other than
        ``lam``: every point is scored at every value of ``lams`` (a ``lam`` here is refused).
        Neither ``m_x`` with ``m_x_grid`` nor ``m_y`` with ``m_y_grid`` (refused: the grid
        chooses that size); without its grid, a size here is a parameter like the others.
    m_y_grid, m_x_grid : increasing sequences of int, optional
        Sketch sizes drawn on the training part, each at most its number of pairs (checked before any fit;
        the sizes ``extend_grids`` adds stop there).  Before any fit, the estimator's
        ``check_params`` (if it has one) also checks every point of ``param_grid`` at the
        largest ``m_y``, and with ``m_x_grid`` at the largest ``m_x`` too (no data, no fit).
    scoring : as :class:`LambdaSearchCV`
    validation_fraction : float in (0, 1)
    validation_data : (X_val, Y_val), optional
    m_x_budget_s : float, optional
        Budget of one fit (s) while growing ``m_x``.
    rtol, n_iter_no_change : stopping rule of the ``m_x`` growth (relative score improvement;
        ``n_iter_no_change`` formerly ``patience``)
    perfect_h_params : dict, optional
        Extra arguments of :func:`~sprokr.model_selection.perfect_h_curve` (``candidates``,
        ``metric``, ``greater_is_better``, ``rtol``, ...).
    method : route of the lam paths (see :func:`lambda_path`)
    random_state : None, int or numpy.random.Generator
    cache : SelectionCache, optional
        Shares prepared samples, kernel columns and the training Gram's eigendecomposition
        between the fits (the estimator's float64 kernels are served by it; see
        :class:`~sprokr.model_selection.SelectionCache`).  Pass the same cache to several
        calls on the same samples (e.g. one per output kernel, with the samples as views of
        the cache) to share between them too.  The choices are the same as without.
    extend_grids : bool or sequence of {"m_x", "m_y"}
        Extend ``m_y_grid`` and ``m_x_grid`` (True; or the grids named) beyond their last
        size while the curve still improves there (doubling, up to the training part's size).

    Returns
    -------
    dict (plain data, for tables and figures)
        ``best_params``: the chosen settings, usable as ``estimator.set_params(**best_params)``
        (refit on all the training data afterwards); ``best_score``; ``scoring``;
        ``perfect_h`` (the :func:`perfect_h_curve` result, or None); ``grid``: one entry per
        parameter point with ``params``, ``lams``, ``scores``, ``best_lam``, ``best_score``,
        ``fit_s`` (one fit), ``path_s`` (pass, factorisation and scoring of the whole grid) --
        a point without a finite score at any lam (e.g. a degenerate kernel setting) is
        skipped with a ``UserWarning`` and recorded with ``best_lam`` and ``best_score`` NaN
        (a ValueError when every point is);
        ``m_x``: the growth (``m``, ``best_scores``, ``best_lams``, ``scores`` (per size, per
        lam), ``fit_times``, ``selected_m``, ``stopped``, ``extended``) or None; ``n_train``,
        ``n_val``, ``time_s``.
    """
    t_start = time.perf_counter()
    lams = check_lams(DEFAULT_LAMS if lams is None else lams)
    _, scoring_name = resolve_scoring(scoring)
    if "lam" not in estimator.get_params(deep=False):
        raise ValueError(f"estimator must have a 'lam' parameter, got {type(estimator).__name__}")
    # the grids named before any fit (the m_x growth comes after the whole param_grid)
    m_y_grid = None if m_y_grid is None else check_sizes(m_y_grid, "m_y_grid")
    if m_y_grid is not None and estimator.get_params(deep=False).get("output_sketch") is None:
        raise ValueError("m_y_grid needs an estimator with an output sketch (output_sketch is None)")
    m_x_grid = None if m_x_grid is None else check_sizes(m_x_grid, "m_x_grid")
    if m_x_grid is not None:
        _sketch_size_param(estimator)  # (else refused once the whole param_grid was fitted)
    if m_x_budget_s is not None:
        check_positive(m_x_budget_s, "m_x_budget_s")
    pgrid = ParameterGrid(param_grid if param_grid is not None else {})
    given = _grid_values(pgrid, "lam")
    if given:  # (each point's lam path set lam from lams: these values were recorded, then overridden)
        raise ValueError(f"param_grid holds 'lam' ({given}), but every point is scored at each "
                         f"value of lams: pass the ridge values as lams=... instead")
    # one setting, two names: the m_x growth overrode a grid m_x, and a grid m_y overrode the
    # perfect-h curve's choice (without its grid, a size in param_grid is a parameter like any other)
    for size, sizes, side in (("m_x", m_x_grid, "input"), ("m_y", m_y_grid, "output")):
        given = _grid_values(pgrid, size)
        if sizes is not None and given:
            raise ValueError(f"param_grid holds {size!r} ({given}), but {size}_grid chooses the {side} sketch size: "
                             f"give the sizes as {size}_grid=... only")
    points = list(pgrid)
    if not points:  # (param_grid=[]: "every lam scored NaN" once the data were split and fitted)
        raise ValueError(f"param_grid holds no parameter point, got {param_grid!r}: give a dict, a non-empty "
                         f"list of dicts, or None (the estimator's own parameters)")
    if validation_data is None:  # (a precomputed Gram failed inside the first point's path)
        for point in points:
            _check_splittable(clone(estimator).set_params(**point))
    rng = check_random_state(random_state)
    (Xtr, Ytr), (Xv, Yv) = _split(X, Y, validation_data, validation_fraction, rng)
    n_train = num_samples(Ytr, "Y")
    # sizes larger than the training part, named before any fit (the m_x growth refused
    # one only when it reached it, after fitting the smaller sizes)
    part = "the training part of X, Y (validation_fraction holds out the rest)" if validation_data is None \
        else "the training data X, Y"
    if m_y_grid is not None:
        check_sizes(m_y_grid, "m_y_grid", n_train, part)
    if m_x_grid is not None and _sketches_training_inputs(estimator, points):
        check_sizes(m_x_grid, "m_x_grid", n_train, part)
    extend = _check_extend(extend_grids)
    # the fits take the perfect-h curve's output sketch unless the grid sets the output sketch
    fixed_output = m_y_grid is not None and not any(set(g) & {"output_sketch", "output_sketch_params"}
                                                    for g in pgrid.param_grid)
    # every point's parameters, at the largest sizes the selection may set, checked without
    # data before any fit (the m_x growth found, e.g., an m_x without an input sketch only
    # once the whole param_grid had been fitted)
    _check_points(estimator, points, float(lams[0]),
                  None if m_y_grid is None else _largest(m_y_grid, "m_y" in extend, n_train),
                  None if m_x_grid is None else _largest(m_x_grid, "m_x" in extend, n_train), fixed_output)
    if cache is not None:
        if not isinstance(cache, SelectionCache):
            raise TypeError(f"cache must be a SelectionCache or None, got {type(cache).__name__}")
        Xtr, Xv = _views(cache, Xtr, Xv)
        if "output_kernel" in estimator.get_params(deep=False):  # outputs under a kernel (else targets)
            Ytr, Yv = _views(cache, Ytr, Yv)
    base = _seeded(estimator, rng)
    chosen = {}

    def configured(params):
        est = clone(base).set_params(**params)
        return est if cache is None else _cached_kernels(est, cache, Xtr)

    ph, fixed_y = None, None
    if m_y_grid is not None:
        params = configured({}).get_params(deep=False)
        ph = perfect_h_curve(Ytr, Yv, params["output_kernel"], m_y_grid, sketch=params["output_sketch"],
                             sketch_params=params.get("output_sketch_params"),
                             output_kernel_params=params.get("output_kernel_params"),
                             random_state=int(rng.integers(2**31 - 1)),
                             **{"max_m": n_train if "m_y" in extend else None, **(perfect_h_params or {})})
        chosen["m_y"] = int(ph["plateau_m"])
        logger.info("[select_model] perfect h: m_y=%d (%s)", chosen["m_y"], ph["criterion"])
        # every fit of the selection takes the curve's sketch at the chosen size (see
        # _FixedSketch): its output basis is the curve's, already computed; an estimator
        # drawing its input sketch first (SISOKR) would otherwise draw, factorise and
        # project an output sketch of its own, at m_y ~ n the larger part of a fit
        plateau_sketch = ph.pop("plateau_sketch")
        if fixed_output:  # (an m_y in param_grid was refused with m_y_grid)
            fixed_y = plateau_sketch

    drawn = {}  # id of a grid record -> the output sketch matrix its fit drew

    def run_path(params, fixed=None):
        est = configured(params)
        fixed = fixed if fixed is not None else fixed_y
        if fixed is not None:
            est.set_params(output_sketch=_FixedSketch(fixed), output_sketch_params=None)
        path = lambda_path(est, Xtr, Ytr, lams, method)
        scores = path.scores(Xv, Yv, scoring)
        # no finite score at any lam (e.g. a degenerate kernel setting): recorded with a NaN best
        b = _best_finite(scores)
        t = path.times_
        res = {"params": dict(params), "lams": lams.tolist(), "scores": scores.tolist(),
               "best_lam": np.nan if b is None else float(lams[b]),
               "best_score": np.nan if b is None else float(scores[b]), "fit_s": t["fit"],
               "path_s": sum(v for k, v in t.items() if k != "fit"), "method": path.method}
        drawn[id(res)] = getattr(path.state_, "output_sketch_matrix_", None)
        return res

    grid = []
    for params in points:
        res = run_path({**chosen, **params})
        grid.append(res)
        logger.info("[select_model] %s: best lam=%.3g, %s %.6g", params, res["best_lam"], scoring_name,
                    res["best_score"])
        if np.isnan(res["best_score"]) and len(points) > 1:  # skipped, as GridSearchCV does
            warnings.warn(f"select_model: the param_grid point {params} scored NaN or an infinite value at every "
                          f"lam on the validation data; it is skipped (recorded in 'grid' with best_score nan)",
                          UserWarning, stacklevel=user_stacklevel())
    best = grid[_first_best([g["best_score"] for g in grid],
                            "every lam" if len(points) == 1 else "every point of param_grid, at every lam,")]
    chosen.update(best["params"])
    chosen["lam"], best_score = best["best_lam"], best["best_score"]

    growth = None
    if m_x_grid is not None:
        name = _sketch_size_param(base)
        runs = {}
        size0 = base.get_params(deep=False)[name]
        if size0 is not None and name not in best["params"]:
            runs[int(size0)] = best  # the grid's best point was fitted at this size: the same path

        # the growth's fits share the grid's best fit's output sketch (see _FixedSketch)
        fixed = drawn.get(id(best)) if name == "m_x" else None

        def evaluate(m):
            if m not in runs:
                runs[m] = run_path({**chosen, name: int(m)}, fixed)
                if np.isnan(runs[m]["best_score"]):  # (no error to compare with the other sizes')
                    raise ValueError(f"every lam scored NaN or an infinite value on the validation data at "
                                     f"{name}={m} (m_x_grid)")
            return -runs[m]["best_score"], runs[m]["fit_s"]

        log = lambda msg: logger.info("[select_model] %s", msg)  # noqa: E731
        g = grow_until_plateau(m_x_grid, evaluate, m_x_budget_s, rtol, n_iter_no_change, name=name, log=log,
                               max_size=n_train if "m_x" in extend else None)
        sel = runs[g["selected_m"]]
        chosen[name], chosen["lam"], best_score = g["selected_m"], sel["best_lam"], sel["best_score"]
        growth = {"param": name, "m": g["m"], "best_scores": [runs[m]["best_score"] for m in g["m"]],
                  "best_lams": [runs[m]["best_lam"] for m in g["m"]],
                  "scores": [runs[m]["scores"] for m in g["m"]], "fit_times": g["fit_times"],
                  "selected_m": g["selected_m"], "stopped": g["stopped"], "extended": g["extended"]}

    return {"best_params": chosen, "best_score": best_score, "scoring": scoring_name, "perfect_h": ph,
            "grid": grid, "m_x": growth, "n_train": num_samples(Ytr, "Y"), "n_val": num_samples(Yv, "Y_val"),
            "time_s": time.perf_counter() - t_start}
