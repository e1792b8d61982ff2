"""Kernel block x coefficients and candidate offsets, with one float32 policy.

Policy (every estimator): kernel blocks and the large products may run in float32; sums,
solves and stored coefficients are float64.  A float32 product ``k^T beta`` is formed on
the centred row, ``k^T beta = (k - mu)^T beta + mu 1^T beta`` with ``mu`` the row mean of
``k``: the ridge coefficients of a flat kernel cancel (their entries are large with a small
sum), and removing the common offset of the row keeps the float32 product accurate
(~1e-6 relative on Bibtex instead of ~1e-3).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import DTypeLike

from ..utils import num_samples
from ._linalg import matmul

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import KernelLike as Kernel

__all__ = ["KernelExpansion", "candidate_offsets", "check_finite_product", "check_gram_block", "check_kernel_sample",
           "float64_kernel", "upcast_samples"]


def check_gram_block(K: Any, shape: tuple[int, int], what: str = "kernel", finite: bool = True) -> np.ndarray:
    """A Gram block as an ndarray, checked for shape and finiteness (clear errors).

    ``finite=False`` skips the finiteness pass, for a caller that checks a product of the
    block instead (:func:`check_finite_product`).

    Parameters
    ----------
    K : array-like
        The Gram block a kernel returned.
    shape : tuple of int
        Its expected shape ``(n_rows, n_cols)``.
    what : str, default="kernel"
        Name of the kernel in the error messages (e.g. ``"input kernel"``).
    finite : bool, default=True
        Check that its values are finite.
    """
    K = np.asarray(K)
    if K.shape != tuple(shape):
        raise ValueError(f"the {what} returned a Gram block of shape {K.shape}, expected {tuple(shape)}")
    if K.dtype.kind not in "fiub":
        raise TypeError(f"the {what} returned a Gram block of dtype {K.dtype}, expected real numbers")
    if finite and K.dtype.kind == "f" and not np.isfinite(K).all():
        check_finite_product(K, what)
    return K


def check_finite_product(P: np.ndarray, what: str = "kernel") -> np.ndarray:
    """Raise the error of a non-finite Gram block unless ``P`` is finite.

    ``P`` is the block or its product with coefficients: a NaN or infinite kernel value
    makes every entry of its row of the product non-finite (``inf * 0`` is NaN), so a
    product of ``n_q x p`` entries is checked instead of the ``n_q x m`` block (Bibtex
    SISOKR decode: 1.8 ms of ~70 ms saved).

    Parameters
    ----------
    P : ndarray
        The Gram block or its product with coefficients.
    what : str, default="kernel"
        Name of the kernel in the error message (an ``"output"`` one names the outputs).
    """
    if not np.isfinite(P).all():
        side = "outputs' (Y, candidates)" if "output" in what else "inputs' (X)"
        raise ValueError(f"the {what} returned non-finite values (NaN, inf or overflow); check the "
                         f"{side} scale and the kernel parameters")
    return P


def float64_kernel(kernel: Any) -> Any:
    """The same kernel computing in float64, or itself.

    Kernels given with a ``dtype`` parameter compute their values in it; the float32
    checks and fallbacks (:func:`sprokr.numerics.sketched_ridge`, the models' refits,
    :func:`check_kernel_sample`) need the float64 values: a copy of ``kernel`` -- keeping
    any state it learned from the data (a deep copy, not a clone) -- with
    ``dtype="float64"``; the kernel itself when it has no ``dtype`` parameter or already
    computes in float64.

    Parameters
    ----------
    kernel : Kernel
        The kernel, fitted or not.
    """
    try:
        params = kernel.get_params(deep=False)
    except AttributeError:  # pragma: no cover - kernels are estimators-like
        return kernel
    if "dtype" not in params or np.dtype(params["dtype"]) == np.float64:
        return kernel
    import copy

    return copy.deepcopy(kernel).set_params(dtype="float64")


def upcast_samples(Z: Any) -> Any:
    """float32 arrays or sparse matrices as float64 (other collections unchanged).

    Parameters
    ----------
    Z : samples
        A collection of samples (an ndarray, a sparse matrix or any other collection).
    """
    if (isinstance(Z, np.ndarray) or sp.issparse(Z)) and Z.dtype == np.float32:
        return Z.astype(np.float64)
    return Z


def check_kernel_sample(kernel: Kernel, sample: Any, what: str = "kernel") -> None:
    """Check a kernel on a few prepared samples: finite, symmetric, positive semi-definite.

    A cheap guard (at most 64 samples) run by the models before training, so that a
    kernel returning NaN, the wrong shape or an indefinite Gram (e.g. ``-K``) is reported
    as such instead of failing deep inside LAPACK or giving silent nonsense.  A float32
    Gram that fails is checked again in float64 (:func:`float64_kernel` on the upcast
    samples) before anything is reported: float32 rounding is not bounded by a few ulps of
    the values (a narrow Gaussian kernel rounds its exponent, ``|a|^2 / sigma^2`` of tens or
    hundreds, so ``k(a, b)`` and ``k(b, a)`` of two equal points can differ by 1e-5).

    Parameters
    ----------
    kernel : Kernel
        The kernel to check.
    sample : samples
        A few prepared samples (at most 64).
    what : str, default="kernel"
        Name of the kernel in the error messages (e.g. ``"input kernel"``).
    """
    n = num_samples(sample)
    if n == 0:
        return
    problem = _gram_problem(kernel.pairwise(sample, sample), n, what)
    if problem is not None and problem[1] == np.float32:
        problem = _gram_problem(float64_kernel(kernel).pairwise(*(upcast_samples(sample),) * 2), n, what)
    if problem is not None:
        raise ValueError(problem[0])


def _gram_problem(K: Any, n: int, what: str) -> tuple[str, np.dtype] | None:
    """``(message, dtype of K)`` if the Gram ``K`` (n x n) is not symmetric PSD up to the
    rounding of its dtype, else None (a wrong shape or non-finite values raise at once)."""
    K = check_gram_block(K, (n, n), what)
    dtype = K.dtype
    # rounding: a float32 kernel is symmetric / PSD only to a few float32 ulps
    eps = np.finfo(dtype).eps if dtype.kind == "f" else np.finfo(np.float64).eps
    K = K.astype(np.float64)
    scale = max(float(np.max(np.abs(K))), 1e-300)
    if np.max(np.abs(K - K.T)) > max(1e-6, 100 * eps) * scale:
        return f"the {what} is not symmetric: k(a, b) != k(b, a) on the training samples", dtype
    # scipy's LAPACK, as the solvers use (numpy's own OpenBLAS pool would be woken and
    # spin beside them: sprokr.numerics._linalg.matmul)
    d_min = float(sla.eigvalsh(0.5 * (K + K.T), subset_by_index=[0, 0], check_finite=False)[0])
    if d_min < -max(1e-6, 10 * n * eps) * scale:
        return (f"the {what} is not positive semi-definite: its Gram matrix on {n} training samples has "
                f"the eigenvalue {d_min:.3g} (largest entry {scale:.3g}); sprokr's models need a PSD kernel"), dtype
    return None


class KernelExpansion:
    """``g(x) = k(x, support) coef``: the prediction of every kernel model, chunk by chunk.

    Parameters
    ----------
    kernel : Kernel
    support : samples
        Prepared support samples (m rows).
    coef : ndarray of shape (m, p)
        Stored in float64.
    dtype : float32 or float64
        Precision of the kernel block and of the product (float32: centred, see module).
    """

    #: attribute types for the type checker (set in __init__ / fit)
    _coef32: Any  # None in float64

    def __init__(self, kernel: Kernel, support: Any, coef: np.ndarray, dtype: DTypeLike = np.float64) -> None:
        self.kernel, self.support = kernel, support
        self._operand = None
        self.coef = np.asarray(coef, dtype=np.float64)
        self.dtype = np.dtype(dtype)
        self._coef32 = self.coef.astype(np.float32) if self.dtype == np.float32 else None
        self._coef_sum = self.coef.sum(axis=0)

    def operand(self) -> Any:
        """The support as the right operand of the prediction blocks: ``kernel.prepare_support``
        of it, once (a model's support usually is already; a loaded model's is not, and
        preparing it again on each call could copy it)."""
        op = self.__dict__.get("_operand")  # absent in a loaded expansion (not saved)
        if op is None:
            op = self._operand = self.kernel.prepare_support(self.support)
        return op

    @property
    def n_outputs(self) -> int:
        return self.coef.shape[1]

    def __call__(self, Xq: Any) -> np.ndarray:
        """``k(Xq, support) coef`` as float64, shape (len(Xq), p)."""
        m = self.coef.shape[0]
        Kq = check_gram_block(self.kernel.pairwise(Xq, self.operand()), (num_samples(Xq), m), "input kernel",
                              finite=False)
        if self.dtype == np.float32:
            Kq = np.array(Kq, dtype=np.float32)  # a copy: centred in place
            mu = Kq.mean(axis=1, keepdims=True, dtype=np.float64)
            Kq -= mu.astype(np.float32)
            out = matmul(Kq, self._coef32).astype(np.float64) + mu * self._coef_sum
        else:
            out = matmul(np.asarray(Kq, dtype=np.float64), self.coef)
        # a non-finite kernel value makes its whole row of the product non-finite
        return check_finite_product(out, "input kernel")


def candidate_offsets(kernel: Kernel, Cp: Any) -> np.ndarray | None:
    """``-k(c, c)/2`` for prepared candidates (float64), or None for a normalised kernel.

    Parameters
    ----------
    kernel : Kernel
        The output kernel.
    Cp : samples
        The prepared candidates.
    """
    if kernel.normalized:
        return None
    diag = np.asarray(kernel.diag(Cp), dtype=np.float64)
    if not np.isfinite(diag).all():
        raise ValueError("the output kernel returned non-finite values k(c, c) for the candidates")
    return -0.5 * diag
