"""Evaluation metrics for structured prediction (multi-label, ranking, regression).

All functions take ``(y_true, y_pred)`` in scikit-learn order and return floats, so they
work with :func:`sklearn.metrics.make_scorer`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["f1_samples", "f1_samples_scorer"]


def f1_samples(Y_true: ArrayLike, Y_pred: ArrayLike) -> float:
    """Per-sample F1 of binary label vectors, averaged over samples.

    Parameters
    ----------
    Y_true, Y_pred : array-like of shape (n_samples, n_labels), values in {0, 1}

    Returns
    -------
    float in [0, 1].  A sample with no true and no predicted label counts as 1.
    """
    Yt = np.asarray(Y_true) != 0
    Yp = np.asarray(Y_pred) != 0
    if Yt.shape != Yp.shape:
        raise ValueError(f"Y_true and Y_pred must have the same shape, got {Yt.shape} and {Yp.shape}")
    tp = (Yt & Yp).sum(axis=1)
    denom = Yt.sum(axis=1) + Yp.sum(axis=1)
    f1 = np.where(denom > 0, 2.0 * tp / np.maximum(denom, 1), 1.0)
    return float(f1.mean())


def f1_samples_scorer() -> Callable[..., float]:
    """A scikit-learn scorer (for ``GridSearchCV(scoring=...)``) of :func:`f1_samples`."""
    from sklearn.metrics import make_scorer

    return make_scorer(f1_samples)
