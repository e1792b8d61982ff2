"""Validation of regression targets, shared by the estimators with vector targets.

:func:`check_score_data` and :class:`R2ScoreMixin` check ``score(X, y)`` the same way (the
regressors' ``score`` would otherwise be scikit-learn's, with scikit-learn's messages).
:func:`check_targets` is used by :class:`~sprokr.models.SketchedKernelMachine` (and the
joint quantile regressor), :class:`~sprokr.models.RFFKernelMachine`, the kernel ridge
regressors and (through the re-export) model selection; it lives in its own module so
that the estimators need not import the kernel machine.  Its public home stays
:mod:`sprokr.models.kernel_machine`, which re-exports it (other packages import it there).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.validation import check_is_fitted

from ..utils import check_dense, check_numeric_array, num_samples

__all__ = ["check_targets", "check_target_scale", "check_score_data", "R2ScoreMixin"]

#: ``log10`` of the largest sum of squared targets accepted (float64 overflows at ~1.8e308;
#: a margin of 1e8 for the sums of residuals, gradients and duality gaps built from them)
_MAX_LOG10_SQUARES = 300.0


def check_targets(y: ArrayLike, n: int, owner: str = "this estimator") -> tuple[np.ndarray, bool]:
    """Targets as a float64 (n, d) copy and whether they were 1-D."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None")
    check_dense(y, "y")  # a sparse y: named, not "values of dtype object"
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
    check_target_scale(float(np.max(np.abs(Y))) if Y.size else 0.0, Y.size, owner)
    scalar = Y.ndim == 1
    return (Y[:, None] if scalar else Y), scalar


def check_target_scale(big: float, size: int, owner: str = "this estimator") -> None:
    """Refuse finite targets too large for the sums of their squares.

    The losses, their duality gaps and the R^2 / D^2 scores sum squared residuals over the
    samples: targets whose squares overflow float64 are refused (a fit would only produce
    inf or NaN, slowly, or a fitted model that ``score`` then refuses).

    Parameters
    ----------
    big : float
        The largest absolute target value.
    size : int
        The number of target values (samples times columns).
    owner : str, default="this estimator"
        The estimator named in the message.

    Raises
    ------
    ValueError
        The targets are too large (the message names y and says how to rescale it).
    """
    if big > 0 and 2 * np.log10(big) + np.log10(size) > _MAX_LOG10_SQUARES:
        raise ValueError(f"y holds values up to {big:.3g}: {owner}'s losses and scores sum squared "
                         f"residuals, which overflow float64 at this scale (|y| must stay below "
                         f"{10 ** ((_MAX_LOG10_SQUARES - np.log10(size)) / 2):.3g} for {size} targets); "
                         f"rescale y (e.g. divide it by a constant)")


def check_score_data(X: Any, y: Any, owner: str, n_outputs: int,
                     sample_weight: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``(Y, w)`` of a regressor's ``score(X, y, sample_weight)``, checked before it predicts.

    ``X``: a collection of ``n >= 1`` samples (its contents are the fitted kernel's to
    check, when predicting); ``y``: finite numbers of shape (n,) or (n, ``n_outputs``)
    ((n,) or (n, 1) for one output), as a float64 (n, ``n_outputs``) copy ``Y``;
    ``sample_weight``: None or n finite numbers.  Errors name X, y or sample_weight.
    """
    n = num_samples(X, "X")
    if n < 1:
        raise ValueError("cannot score on 0 samples: X is empty; expected at least one sample")
    Y, _ = check_targets(y, n, owner)
    if Y.shape[1] != n_outputs:
        expected = "(n_samples,) or (n_samples, 1)" if n_outputs == 1 else f"(n_samples, {n_outputs})"
        raise ValueError(f"y must have shape {expected}: {owner} was fitted on {n_outputs} target "
                         f"column(s); got shape {np.shape(y)}")
    w = None
    if sample_weight is not None:
        w = check_numeric_array(sample_weight, "sample_weight", ndim=1)
        if w.shape[0] != n:
            raise ValueError(f"X and sample_weight have different numbers of samples: {n} and {w.shape[0]}")
    return Y, w


class R2ScoreMixin:
    """``score``: scikit-learn's coefficient of determination R^2 of ``predict(X)``
    (:meth:`sklearn.base.RegressorMixin.score`), with ``X``, ``y`` and ``sample_weight``
    checked by :func:`check_score_data` first.  Placed before ``RegressorMixin`` in the
    bases; the estimator has ``n_outputs_`` (the columns it predicts) once fitted."""

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """R^2 of the predictions of ``X`` against ``y`` (n,) or (n, n_outputs) (1 is best;
        outputs averaged uniformly), as :meth:`sklearn.base.RegressorMixin.score`."""
        from sklearn.metrics import r2_score

        check_is_fitted(self)
        n_outputs = int(self.n_outputs_)  # type: ignore[attr-defined]
        _, w = check_score_data(X, y, type(self).__name__, n_outputs, sample_weight)
        # y as given (not its float64 copy): the same value as scikit-learn's score
        return float(r2_score(y, self.predict(X), sample_weight=w))  # type: ignore[attr-defined]
