"""Validation of regression targets, shared by the estimators with vector targets.

:func:`check_targets` is used by :class:`~sprokr.models.SketchedKernelMachine` (and the
joint quantile regressor), :class:`~sprokr.models.RFFKernelMachine`, the kernel ridge
regressors and (through the re-export) model selection; it lives in its own module so
that the estimators need not import the kernel machine.  Its public home stays
:mod:`sprokr.models.kernel_machine`, which re-exports it (other packages import it there).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["check_targets"]

#: ``log10`` of the largest sum of squared targets accepted (float64 overflows at ~1.8e308;
#: a margin of 1e8 for the sums of residuals, gradients and duality gaps built from them)
_MAX_LOG10_SQUARES = 300.0


def check_targets(y: ArrayLike, n: int, owner: str = "this estimator") -> tuple[np.ndarray, bool]:
    """Targets as a float64 (n, d) copy and whether they were 1-D."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None")
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
    big = float(np.max(np.abs(Y))) if Y.size else 0.0
    # the losses, their duality gaps and the R^2 / D^2 scores sum squared residuals over
    # the samples: refuse targets whose squares overflow float64 (a fit would only produce
    # inf or NaN, slowly)
    if big > 0 and 2 * np.log10(big) + np.log10(Y.size) > _MAX_LOG10_SQUARES:
        raise ValueError(f"y holds values up to {big:.3g}: {owner}'s losses and scores sum squared "
                         f"residuals, which overflow float64 at this scale (|y| must stay below "
                         f"{10 ** ((_MAX_LOG10_SQUARES - np.log10(Y.size)) / 2):.3g} for {Y.size} targets); "
                         f"rescale y (e.g. divide it by a constant)")
    scalar = Y.ndim == 1
    return (Y[:, None] if scalar else Y), scalar
