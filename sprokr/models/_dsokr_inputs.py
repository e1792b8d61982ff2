"""The inputs of DSOKR's regressor: checked as numbers when the regressor takes numbers.

DSOKR passes ``X`` to its regressor unchanged, since the regressor decides what an input is:
sprokr's kernel ridges prepare any input their kernel takes (strings, graphs), the neural
surrogates check their own inputs, and a scikit-learn ``Pipeline`` may start with
:class:`~sprokr.kernels.KernelFeatures` of strings.  A single scikit-learn regressor
(``Ridge``, ``regressor="ridge"``) takes numeric arrays, and reports other inputs with numpy's
or scipy's messages ("could not convert string to float", "array must not contain infs or
NaNs" after its products overflowed): those are checked here first, naming ``X``.  Apart
from :mod:`sprokr.models.dsokr`, which imports both functions, to keep it a few hundred lines.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..utils import check_numeric_array

__all__ = ["check_regressor_inputs", "takes_numeric_inputs"]

#: Margin (in powers of ten) under the dtype's largest value of the sum of squared inputs:
#: the regressors form sums of products of inputs (Gram matrices, distances, centred
#: squares); the same margin as the targets' check of the kernel machines
SQUARES_MARGIN = 8.0


def takes_numeric_inputs(regressor: Any) -> bool:
    """True for a single scikit-learn regressor that declares numeric 2-D inputs.

    Composites (``Pipeline``, ``MultiOutputRegressor``, a search: any parameter that is an
    estimator or a list of them) may transform any input first, and a Gaussian process
    whose kernel does not require vectors takes structured inputs: none of them is checked,
    nor is a regressor that takes NaN (trees, boosting: missing values), strings or
    categories, nor any regressor of another library (it may take anything).  scikit-learn
    before 1.6 has no public input tags: its regressors keep their own messages there.
    """
    if type(regressor).__module__.partition(".")[0] != "sklearn":
        return False
    try:
        from sklearn.utils import get_tags
    except ImportError:  # scikit-learn < 1.6
        return False
    params = regressor.get_params(deep=False) if hasattr(regressor, "get_params") else {}
    for value in params.values():
        items = value if isinstance(value, (list, tuple)) else [value]
        items = [v[-1] if isinstance(v, tuple) and v else v for v in items]  # (name, estimator) pairs
        if any(hasattr(v, "fit") or getattr(v, "requires_vector_input", True) is False for v in items):
            return False
    tags = get_tags(regressor).input_tags
    return bool(tags.two_d_array and not (tags.allow_nan or tags.string or tags.categorical or tags.dict))


def check_regressor_inputs(X: Any, regressor: Any, name: str = "X") -> Any:
    """``X`` checked for a regressor that takes numbers: a float array (float32 kept), or
    the sparse matrix itself with its stored values checked.  The caller's data is never
    modified; a numeric array of the right dtype is returned as is."""
    owner = type(regressor).__name__
    if sp.issparse(X):
        dtype = X.dtype if X.dtype.kind == "f" else np.dtype(np.float64)
        data = check_numeric_array(sp.csr_matrix(X).data, name, dtype, owner, ndim=1)
        out = X
    else:
        dtype = X.dtype if isinstance(X, np.ndarray) and X.dtype.kind == "f" else np.dtype(np.float64)
        out = data = check_numeric_array(X, name, dtype, owner)
    if out.shape[1] == 0:
        raise ValueError(f"{name} has 0 feature(s) (shape={out.shape}) while a minimum of 1 is required by {owner}")
    big = float(np.max(np.abs(data))) if data.size else 0.0
    limit = np.log10(np.finfo(dtype).max) - SQUARES_MARGIN
    if big > 0 and 2 * np.log10(big) + np.log10(data.size) > limit:
        raise ValueError(f"{name} holds values up to {big:.3g}: the regressor {owner} sums products of inputs, "
                         f"which overflow {dtype.name} at this scale (|{name}| must stay below "
                         f"{10 ** ((limit - np.log10(data.size)) / 2):.3g} for {data.size} values); "
                         f"rescale {name} (e.g. standardise it)")
    return out
