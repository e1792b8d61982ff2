"""Regression metrics: RRMSE / ARRMSE (multi-target), pinball and crossing losses (quantiles).

All take ``(y_true, y_pred)`` in scikit-learn order (arrays, lists, dataframes or sparse
matrices), and refuse empty input (a mean over no sample is undefined; as scikit-learn's
metrics) and NaN / inf values (named by argument and row, as scikit-learn's metrics do).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from ..utils import check_finite, check_quantile_levels

__all__ = ["rrmse", "arrmse", "pinball_loss", "crossing_loss"]


def _as_2d(a, name):
    """``a`` as a finite float (n, d) array (1-D: one column); a sparse matrix is densified
    (regression targets are a few columns wide).  Non-numbers, NaN and inf are refused with
    the argument named: a NaN would make the metric NaN without saying where it came from."""
    if sp.issparse(a):
        a = a.toarray()
    try:
        a = np.asarray(a, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers, got {type(a).__name__} ({exc})") from None
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D, got {a.ndim}-D")
    return check_finite(a, name)


def rrmse(y_true: ArrayLike, y_pred: ArrayLike, y_train_mean: ArrayLike | None = None) -> np.ndarray:
    """Relative RMSE per target: ``sqrt(sum (y - p)^2 / sum (y - ybar)^2)``, shape (d,).

    ``ybar`` is the mean of the *training* targets when ``y_train_mean`` is given (the
    convention of the multi-target regression literature and of the p-sparsified paper),
    else the mean of ``y_true``: one value per target, shape (d,) (a scalar is taken for
    every target).

    Parameters
    ----------
    y_true : array-like of shape (n,) or (n, d)
        True targets.
    y_pred : array-like of shape (n,) or (n, d)
        Predicted targets (the shape of ``y_true``).
    y_train_mean : float or array-like of shape (d,), optional
        Mean of the training targets, one per target (a scalar is taken for every target);
        None: the mean of ``y_true``.

    Returns
    -------
    ndarray of shape (d,)
        The RRMSE of each target.
    """
    Y, P = _as_2d(y_true, "y_true"), _as_2d(y_pred, "y_pred")
    if Y.shape != P.shape:
        raise ValueError(f"y_true and y_pred have different shapes: {Y.shape} and {P.shape}")
    if Y.shape[0] == 0:  # (the denominator would be 0: "a target is constant", with numpy's warning)
        raise ValueError("no samples: y_true and y_pred are empty; rrmse needs at least one sample")
    if y_train_mean is None:
        ybar = Y.mean(axis=0)
    else:
        try:
            ybar = np.asarray(y_train_mean, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"y_train_mean must be a number or an array of numbers (one mean per target), "
                             f"got {type(y_train_mean).__name__} ({exc})") from None
        check_finite(ybar, "y_train_mean")  # a NaN mean made that target's RRMSE NaN
        if ybar.ndim != 0 and ybar.shape != Y.shape[1:]:  # (not broadcast: a (1,) mean for d targets is a mistake)
            raise ValueError(f"y_train_mean must hold one mean per target: shape ({Y.shape[1]},) for the "
                             f"{Y.shape[1]} target(s) of y_true, got shape {ybar.shape}")
    den = np.sum((Y - ybar) ** 2, axis=0)
    if np.any(den == 0):
        raise ValueError("a target is constant: its RRMSE is undefined")
    return np.sqrt(np.sum((Y - P) ** 2, axis=0) / den)


def arrmse(y_true: ArrayLike, y_pred: ArrayLike, y_train_mean: ArrayLike | None = None) -> float:
    """Average relative RMSE over the targets (see :func:`rrmse`).

    Parameters
    ----------
    y_true : array-like of shape (n,) or (n, d)
        True targets.
    y_pred : array-like of shape (n,) or (n, d)
        Predicted targets (the shape of ``y_true``).
    y_train_mean : float or array-like of shape (d,), optional
        Mean of the training targets (see :func:`rrmse`); None: the mean of ``y_true``.

    Returns
    -------
    float
    """
    return float(np.mean(rrmse(y_true, y_pred, y_train_mean)))


def pinball_loss(y_true: ArrayLike, q_pred: ArrayLike, taus: ArrayLike) -> float:
    """Mean over samples of ``sum_j rho_{tau_j}(y - q_j)`` (Sangnier et al., 2016).

    Parameters
    ----------
    y_true : array-like of shape (n,) or (n, 1)
        Scalar targets.
    q_pred : array-like of shape (n, d)
        Predicted quantiles, one column per level.
    taus : array-like of shape (d,)
        Quantile levels in (0, 1).

    Returns
    -------
    float
    """
    t = check_quantile_levels(taus)
    y = _as_2d(y_true, "y_true")
    if y.shape[1] != 1:
        raise ValueError(f"y_true must hold one scalar target per sample (shape (n,) or (n, 1)), got shape {y.shape}")
    Q = _as_2d(q_pred, "q_pred")
    if Q.shape != (y.shape[0], t.size):
        raise ValueError(f"q_pred must have shape ({y.shape[0]}, {t.size}), got {Q.shape}")
    if y.shape[0] == 0:
        raise ValueError("no samples: y_true and q_pred are empty; pinball_loss needs at least one sample")
    U = y - Q
    return float(np.mean(np.sum(np.where(U >= 0, t * U, (t - 1.0) * U), axis=1)))


def crossing_loss(q_pred: ArrayLike, taus: ArrayLike | None = None) -> float:
    """Mean over samples of ``sum_j max(0, q_j - q_{j+1})`` for increasing levels.

    Zero when the predicted quantiles are non-decreasing in the level (no crossing).

    Parameters
    ----------
    q_pred : array-like of shape (n, d)
        Predicted quantiles, one column per level, by increasing level.
    taus : array-like of shape (d,), optional
        The levels: only checks that the columns are ordered by increasing level.

    Returns
    -------
    float
    """
    Q = _as_2d(q_pred, "q_pred")
    if taus is not None:
        t = check_quantile_levels(taus)
        if t.size != Q.shape[1] or np.any(np.diff(t) <= 0):
            raise ValueError("taus must be increasing with one level per column of q_pred")
    if Q.shape[0] == 0:
        raise ValueError("no samples: q_pred is empty; crossing_loss needs at least one sample")
    return float(np.mean(np.sum(np.maximum(0.0, Q[:, :-1] - Q[:, 1:]), axis=1)))
