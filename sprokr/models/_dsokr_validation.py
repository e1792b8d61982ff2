"""The held-out validation split of DSOKR and DSOKREnsemble (``validation_fraction``).

A seeded random split of the training pairs, for early stopping of the surrogate
regressors and for the validation loss; model selection and the chemistry plugin use these
functions too.  Apart from :mod:`sprokr.models.dsokr`, which re-exports both, so that the
estimator module holds the estimators.
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from ..utils import num_samples, take

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import Samples

__all__ = ["check_validation_fraction", "validation_split"]


def check_validation_fraction(vf: float | None) -> float | None:
    """None or a number in (0, 1)."""
    if vf is not None and (isinstance(vf, bool) or not isinstance(vf, numbers.Real) or not 0 < vf < 1):
        raise ValueError(f"validation_fraction must lie in (0, 1) or be None, got {vf!r}")
    return vf


def validation_split(X: Samples, Y: Samples, fraction: float,
                     rng: np.random.Generator) -> tuple[tuple[Samples, Samples], tuple[Samples, Samples]]:
    """``((X_train, Y_train), (X_val, Y_val))``: a seeded random split of the pairs."""
    n = num_samples(Y)
    perm = rng.permutation(n)
    n_val = max(1, int(round(fraction * n)))
    if n_val >= n:
        raise ValueError(f"validation_fraction={fraction} leaves no training pair out of {n}")
    val_idx, tr_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    return (take(X, tr_idx), take(Y, tr_idx)), (take(X, val_idx), take(Y, val_idx))
