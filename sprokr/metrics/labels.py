"""Evaluation metrics for structured prediction (multi-label, ranking, regression).

All functions take ``(y_true, y_pred)`` in scikit-learn order and return floats, so they
work with :func:`sklearn.metrics.make_scorer`.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

__all__ = ["f1_samples", "f1_samples_scorer"]


def _binary_labels(Y: Any, name: str) -> Any:
    """``Y`` as a boolean (n, n_labels) array, or a sparse matrix for a sparse ``Y`` (never
    densified: label sets can be wide).  Only 0 / 1 values (or booleans) are taken: NaN and
    any other value (-1 / +1 label matrices, continuous scores) are refused, as ``!= 0``
    would count them as labels."""
    if sp.issparse(Y):
        A = sp.csr_matrix(Y)  # (shares a CSR Y's arrays: nothing here changes A in place)
        if A.dtype.kind in "fc" and np.isnan(A.data).any():
            raise ValueError(f"{name} contains NaN; label vectors hold 0 / 1")
        _check_zero_one(A.data, name)
        return A.astype(bool)
    A = np.asarray(Y)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_labels), got shape {A.shape}")
    if A.dtype.kind not in "biufc":  # strings ("0" != 0 would be a label everywhere), objects
        try:
            A = A.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must hold 0 / 1 label values (numbers or booleans), "
                            f"got values of dtype {A.dtype}") from None
    if A.dtype.kind in "fc" and np.isnan(A).any():
        raise ValueError(f"{name} contains NaN; label vectors hold 0 / 1")
    if A.dtype.kind != "b":
        _check_zero_one(A, name)
    return A != 0


def _check_zero_one(values: np.ndarray, name: str) -> None:
    """Refuse any value of ``values`` other than 0 and 1, naming ``name`` and one of them."""
    bad = (values != 0) & (values != 1)
    if bad.any():
        v = values[bad].flat[0].item()
        raise ValueError(f"{name} must hold 0 / 1 label values (a binary indicator matrix), got "
                         f"{int(np.count_nonzero(bad))} other value(s), e.g. {v!r}")


def f1_samples(Y_true: ArrayLike, Y_pred: ArrayLike) -> float:
    """Per-sample F1 of binary label vectors, averaged over samples.

    Parameters
    ----------
    Y_true, Y_pred : array-like or sparse matrix of shape (n_samples, n_labels)
        Binary indicator matrices: values in {0, 1} (any numeric dtype, e.g. decoded 0. / 1.
        floats) or booleans.  Any other value is refused (-1 / +1 label matrices, continuous
        scores: threshold them first), and so is NaN.

    Returns
    -------
    float in [0, 1].  A sample with no true and no predicted label counts as 1 (scikit-learn's
    ``f1_score(average="samples", zero_division=1)``).  Sparse matrices are accepted (e.g. a
    DSOKR's predictions for sparse training labels); NaN values are refused, and so is
    empty input (a mean over no sample is undefined; as scikit-learn's metrics).
    """
    Yt, Yp = _binary_labels(Y_true, "Y_true"), _binary_labels(Y_pred, "Y_pred")
    if Yt.shape != Yp.shape:
        raise ValueError(f"Y_true and Y_pred must have the same shape, got {Yt.shape} and {Yp.shape}")
    if Yt.shape[0] == 0:
        raise ValueError("no samples: Y_true and Y_pred are empty; f1_samples needs at least one sample")
    if sp.issparse(Yt) or sp.issparse(Yp):
        Yt, Yp = sp.csr_matrix(Yt, dtype=np.int64), sp.csr_matrix(Yp, dtype=np.int64)
        tp = np.asarray(Yt.multiply(Yp).sum(axis=1)).ravel()
        denom = np.asarray(Yt.sum(axis=1)).ravel() + np.asarray(Yp.sum(axis=1)).ravel()
    else:
        tp = (Yt & Yp).sum(axis=1)
        denom = Yt.sum(axis=1) + Yp.sum(axis=1)
    f1 = np.where(denom > 0, 2.0 * tp / np.maximum(denom, 1), 1.0)
    return float(f1.mean())


def f1_samples_scorer() -> Callable[..., float]:
    """A scikit-learn scorer (for ``GridSearchCV(scoring=...)``) of :func:`f1_samples`."""
    from sklearn.metrics import make_scorer

    return make_scorer(f1_samples)
