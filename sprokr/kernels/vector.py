"""Kernels on real vectors (dense arrays or scipy sparse matrices).

Every kernel is one Gram product ``A B^T`` (:func:`sprokr.kernels._gram.gram`: BLAS-3,
sparse-aware, never densifying the data) followed by in-place elementwise work, in the
kernel's ``dtype`` (float32 halves the time and memory of the product).  Distances use
``|a|^2 + |b|^2 - 2 a.b``, clipped at 0.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from ..numerics import for_row_blocks
from ..utils import check_integer, is_real
from ._gram import gram, sq_norms
from .base import VectorKernel

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from ..types import Samples

__all__ = [
    "LinearKernel",
    "PolynomialKernel",
    "GaussianKernel",
    "LaplacianKernel",
    "CosineKernel",
    "TanimotoKernel",
    "MinMaxKernel",
]


def _unit_rows(A):
    """Rows scaled to unit Euclidean norm (zero rows stay zero); a copy, dense or CSR."""
    from sklearn.preprocessing import normalize

    if A.shape[0] == 0:  # scikit-learn refuses 0 samples (e.g. zero queries)
        return A.copy()
    return normalize(A, norm="l2", copy=True)


def _row_sums(A):
    return np.asarray(A.sum(axis=1)).ravel().astype(A.dtype)


def _l1_distances(A, B, dtype, finish=None):
    """L1 distances ``|a - b|_1`` of shape (len(A), len(B)) in ``dtype``, then ``finish``
    applied in place; row blocks run in parallel (scipy's ``cdist`` releases the GIL)."""
    if A.shape[1] != B.shape[1]:  # (scipy's cdist: "XA and XB must have the same number of columns")
        raise ValueError(f"the two sample sets must have the same number of features: got shapes "
                         f"{A.shape} and {B.shape} (expected (n_a, d) and (n_b, d))")
    A = A.toarray() if sp.issparse(A) else A
    B = B.toarray() if sp.issparse(B) else B
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    out = np.empty((A.shape[0], B.shape[0]), dtype=dtype)

    def work(sl):
        D = cdist(A[sl], B, metric="cityblock")
        if finish is not None:
            finish(D)
        out[sl] = D

    for_row_blocks(work, A.shape[0], A.shape[0] * B.shape[0] * max(A.shape[1], 1))
    return out


def _check_scale(name, value, optional=True):
    if value is None and optional:
        return
    if not is_real(value) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _resolve_gamma(gamma, sigma2, A):
    if gamma is not None and sigma2 is not None:
        raise ValueError("give either gamma or sigma2, not both")
    if sigma2 is not None:
        if not sigma2 > 0:
            raise ValueError(f"sigma2 must be > 0, got {sigma2!r}")
        return 1.0 / (2.0 * sigma2)
    if gamma is None:
        return 1.0 / A.shape[1]
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma!r}")
    return float(gamma)


class LinearKernel(VectorKernel):
    """``k(a, b) = a^T b``.

    Parameters
    ----------
    dtype : {"float64", "float32"}, default="float64"
        Precision of the prepared samples and of the kernel values (float32 halves the
        time and memory of the Gram product).
    """

    name = "linear"
    thread_safe = True  # stateless: chunks may be folded in parallel threads

    def __init__(self, dtype: DTypeLike = "float64") -> None:
        self.dtype = dtype

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        return gram(A, B)

    def diag(self, A: Any) -> np.ndarray:
        return sq_norms(A)


class PolynomialKernel(VectorKernel):
    """``k(a, b) = (gamma a^T b + coef0) ** degree`` (gamma defaults to 1 / n_features).

    Parameters
    ----------
    degree : int >= 1, default=3
        The power.
    gamma : float > 0, optional
        Scale of the inner product; default ``1 / n_features``.
    coef0 : float >= 0, default=1.0
        The constant term (>= 0: a PSD kernel).
    dtype : {"float64", "float32"}, default="float64"
        Precision of the prepared samples and of the kernel values (float32 halves the
        time and memory of the Gram product).
    """

    name = "polynomial"
    thread_safe = True  # stateless: chunks may be folded in parallel threads

    def __init__(self, degree: int = 3, gamma: float | None = None, coef0: float = 1.0,
                 dtype: DTypeLike = "float64") -> None:
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.dtype = dtype

    def check_params(self) -> Self:
        _check_scale("gamma", self.gamma)
        check_integer(self.degree, "degree")
        # (a bool is refused: coef0=True would silently be 1.0)
        if not is_real(self.coef0) or not np.isfinite(self.coef0) or self.coef0 < 0:
            raise ValueError(f"coef0 must be a finite number >= 0 (a PSD kernel), got {self.coef0!r}")
        return self

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        g = 1.0 / A.shape[1] if self.gamma is None else self.gamma
        # g a.b + coef0 in the product itself (coef0 as a rank-one term), then the power
        ones_a, ones_b = np.ones((A.shape[0], 1)), np.ones((B.shape[0], 1))
        K = gram(A, B, g, self.coef0 * ones_a, ones_b)

        def finish(sl):
            np.power(K[sl], self.degree, out=K[sl])

        for_row_blocks(finish, K.shape[0], K.size)
        return K

    def diag(self, A: Any) -> np.ndarray:
        g = 1.0 / A.shape[1] if self.gamma is None else self.gamma
        return (g * sq_norms(A) + self.coef0) ** self.degree


class GaussianKernel(VectorKernel):
    """``k(a, b) = exp(-gamma |a - b|^2)``, with ``gamma = 1 / (2 sigma2)`` if ``sigma2`` is given.

    Parameters
    ----------
    gamma : float, optional
        Inverse length scale; default ``1 / n_features`` (scikit-learn's default).
    sigma2 : float, optional
        Bandwidth sigma^2 as in the papers (``k = exp(-|a-b|^2 / (2 sigma^2))``).
    dtype : {"float64", "float32"}, default="float64"
        Precision of the prepared samples and of the kernel values (float32 halves the
        time and memory of the Gram product).
    """

    name = "gaussian"
    thread_safe = True  # stateless: chunks may be folded in parallel threads
    normalized = True

    def __init__(self, gamma: float | None = None, sigma2: float | None = None, dtype: DTypeLike = "float64") -> None:
        self.gamma = gamma
        self.sigma2 = sigma2
        self.dtype = dtype

    def check_params(self) -> Self:
        _check_scale("gamma", self.gamma)
        _check_scale("sigma2", self.sigma2)
        if self.gamma is not None and self.sigma2 is not None:
            raise ValueError("give either gamma or sigma2, not both")
        return self

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        g = _resolve_gamma(self.gamma, self.sigma2, A)
        # exp(2g a.b - g|a|^2 - g|b|^2): the norms ride along in the product as two extra
        # columns, then one fused clamp + exp pass over row blocks in parallel
        na, nb = sq_norms(A).astype(np.float64), sq_norms(B).astype(np.float64)
        L = np.stack([-g * na, np.ones_like(na)], axis=1)
        R = np.stack([np.ones_like(nb), -g * nb], axis=1)
        K = gram(A, B, 2.0 * g, L, R)

        def finish(sl):
            # |a-b|^2 >= 0 (rounding can make the exponent slightly positive)
            np.minimum(K[sl], 0.0, out=K[sl])
            np.exp(K[sl], out=K[sl])

        for_row_blocks(finish, K.shape[0], K.size)
        return K


class LaplacianKernel(VectorKernel):
    """``k(a, b) = exp(-gamma |a - b|_1)`` (gamma defaults to 1 / n_features).

    Parameters
    ----------
    gamma : float > 0, optional
        Scale of the L1 distance (inverse length scale); default ``1 / n_features``.
    dtype : {"float64", "float32"}, default="float64"
        Precision of the prepared samples and of the kernel values (float32 halves the
        time and memory of the Gram product).
    """

    name = "laplacian"
    thread_safe = True  # stateless: chunks may be folded in parallel threads
    normalized = True

    def __init__(self, gamma: float | None = None, dtype: DTypeLike = "float64") -> None:
        self.gamma = gamma
        self.dtype = dtype

    def check_params(self) -> Self:
        _check_scale("gamma", self.gamma)
        return self

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        g = 1.0 / A.shape[1] if self.gamma is None else self.gamma

        def finish(D):
            D *= -g
            np.exp(D, out=D)

        return _l1_distances(A, B, self._dtype(), finish)


class CosineKernel(VectorKernel):
    """``k(a, b) = a^T b / (|a| |b|)``; a zero vector has similarity 0 to every non-zero
    vector and 1 to a zero vector, so that ``k(x, x) = 1`` for every ``x`` (``normalized``,
    as ``diag`` says; like :class:`TanimotoKernel`'s two zero vectors).

    Parameters
    ----------
    dtype : {"float64", "float32"}, default="float64"
        Precision of the prepared samples and of the kernel values (float32 halves the
        time and memory of the Gram product).
    """

    name = "cosine"
    thread_safe = True  # stateless: chunks may be folded in parallel threads
    normalized = True

    def __init__(self, dtype: DTypeLike = "float64") -> None:
        self.dtype = dtype

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        # normalise the rows first: O((n_a + n_b) d) instead of two passes over the block
        K = gram(_unit_rows(A), _unit_rows(B))
        zero_a, zero_b = sq_norms(A) == 0, sq_norms(B) == 0
        if zero_a.any() and zero_b.any():  # k(0, 0) = 1 = diag (the product gave 0)
            K[np.ix_(zero_a, zero_b)] = 1.0
        return K


class TanimotoKernel(VectorKernel):
    """Generalised Tanimoto (Jaccard) ``a.b / (|a|^2 + |b|^2 - a.b)``; 1 for two zero vectors.

    On binary fingerprints this is the classical Tanimoto similarity; it is PSD on
    non-negative vectors.

    Parameters
    ----------
    dtype : {"float64", "float32"}, default="float64"
        Precision of the prepared samples and of the kernel values (float32 halves the
        time and memory of the Gram product).
    """

    name = "tanimoto"
    thread_safe = True  # stateless: chunks may be folded in parallel threads
    normalized = True

    def __init__(self, dtype: DTypeLike = "float64") -> None:
        self.dtype = dtype

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        K = gram(A, B)
        den = sq_norms(A)[:, None] + sq_norms(B)[None, :] - K
        both_zero = den <= 0
        den[both_zero] = 1.0
        K /= den
        K[both_zero] = 1.0
        return K


class MinMaxKernel(VectorKernel):
    """MinMax ``sum_i min(a_i, b_i) / sum_i max(a_i, b_i)`` on non-negative vectors (counts).

    Uses ``min + max = a + b`` and ``max - min = |a - b|``, so it costs one L1-distance
    block.  Equal to Tanimoto on binary vectors.

    Parameters
    ----------
    dtype : {"float64", "float32"}, default="float64"
        Precision of the prepared samples and of the kernel values (float32 halves the
        time and memory of the Gram product).
    """

    name = "minmax"
    thread_safe = True  # stateless: chunks may be folded in parallel threads
    normalized = True

    def __init__(self, dtype: DTypeLike = "float64") -> None:
        self.dtype = dtype

    def prepare(self, X: Samples) -> Any:
        X = super().prepare(X)
        data = X.data if sp.issparse(X) else X
        if data.size and data.min() < 0:
            raise ValueError("the minmax kernel needs non-negative features (e.g. counts)")
        return X

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        L1 = _l1_distances(A, B, np.float64)
        S = _row_sums(A)[:, None] + _row_sums(B)[None, :]
        den = S + L1
        both_zero = den <= 0
        den[both_zero] = 1.0
        K = (S - L1) / den
        K[both_zero] = 1.0
        return K.astype(self._dtype(), copy=False)
