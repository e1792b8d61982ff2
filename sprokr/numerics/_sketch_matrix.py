"""The factored sketch matrix ``R = W S`` (the decomposition trick).

Every sketch matrix ``R`` (m x n) is stored in the factored form of the decomposition
trick of the p-sparsified paper: ``R = W S`` where ``S`` sub-samples the ``m'`` non-null
columns of ``R`` (``indices``) and ``W`` (m x m') holds their values.  Then

    K R^T = K[:, indices] W^T

so only the kernel columns of the ``m'`` selected points are ever computed: ``O(n m')``
kernel evaluations instead of ``O(n^2)``.

A data structure of the numerics (the sketched ridge and the sketched features take one);
the sketch *distributions* that draw it live in :mod:`sprokr.sketches`, which re-exports it
as ``sprokr.sketches.SketchMatrix``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
import scipy.sparse as sp

from ._linalg import matmul
from ._parallel import for_row_blocks, in_fold_thread

__all__ = ["SketchMatrix"]

#: a sparse ``W`` with fewer than 1/SPARSE_PRODUCTS non-zeros is multiplied as a sparse matrix
SPARSE_PRODUCTS = 16


#: rows per dense x sparse product: scipy computes ``KS W^T`` as ``(W KS^T)^T`` through a
#: C-ordered copy of ``KS^T``, which stays in cache for this many rows of up to a few
#: thousand columns (rf1's 2527 x 1583 block times a p-sparsified W: 8.7 ms -> 4.9 ms)
DENSE_SPARSE_ROWS = 128


def _rows_in_parallel(product, n_rows, n_cols, dtype, work_per_row, block_rows=None):
    """``product(rows)`` for row blocks written into one (n_rows, n_cols) array, the blocks
    on the cores (:func:`for_row_blocks`): scipy's sparse x dense kernels run on one core
    but release the GIL (two cores: 2x on the p-sparsified output sketches of 10,000 QM9
    molecules, m_y = 8000).  ``block_rows``: each core's block computed in sub-blocks of at
    most that many rows.  Each row is computed as in one product: the same values."""
    out = np.empty((n_rows, n_cols), dtype=dtype)

    def work(sl):
        step = (sl.stop - sl.start) if block_rows is None else block_rows
        for start in range(sl.start, sl.stop, max(step, 1)):
            sub = slice(start, min(start + step, sl.stop))
            out[sub] = np.asarray(product(sub))

    if in_fold_thread():  # already one of several threads folding chunks
        work(slice(0, n_rows))
    else:
        for_row_blocks(work, n_rows, n_rows * work_per_row)
    return out


class SketchMatrix:
    """A drawn sketch ``R = W S`` of shape (m, n).

    Parameters
    ----------
    n : int
        Number of columns (training samples).
    indices : array-like of int, shape (m',)
        Sorted indices of the non-null columns of R.
    weights : ndarray or scipy.sparse matrix, shape (m, m')
        The non-null columns, ``R[:, indices]`` (one column per index).
    scale : float, optional
        If not None, ``weights == scale * I`` (uniform sub-sampling): products are scalings.

    Attributes
    ----------
    n : int
        Number of columns (training samples).
    indices : ndarray of int, shape (m',)
        Sorted indices of the non-null columns of R.
    weights : ndarray or scipy.sparse matrix, shape (m, m')
        The non-null columns, ``R[:, indices]``.
    """

    def __init__(self, n: int, indices: ArrayLike, weights: Any, scale: float | None = None) -> None:
        self.n = int(n)
        self.indices = np.asarray(indices, dtype=np.intp)
        self.weights = weights
        #: if not None, ``weights == scale * I`` (uniform sub-sampling): products are scalings
        self.scale = scale
        if weights.shape[1] != self.indices.size:
            raise ValueError("weights must have one column per selected index")

    @property
    def m(self) -> int:
        """Number of rows (sketch size)."""
        return self.weights.shape[0]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.m, self.n)

    def merge_columns(self, inverse: np.ndarray, first: np.ndarray) -> SketchMatrix:
        """The sketch with the columns of equal samples merged onto one representative.

        ``inverse`` (m',) gives each non-null column its group, ``first`` (groups,) the
        position (into ``indices``) of each group's representative.  The columns of a group
        are summed: ``K R^T`` is unchanged when the samples of a group are equal
        (``k(., z_i) = k(., z_j)``), but only one kernel column per group is computed.
        """
        inverse, first = np.asarray(inverse, dtype=np.intp), np.asarray(first, dtype=np.intp)
        g = first.size
        merge = sp.csr_matrix((np.ones(inverse.size), (np.arange(inverse.size), inverse)),
                              shape=(inverse.size, g))
        W: Any = self.weights @ merge
        W = W.tocsr() if sp.issparse(W) else np.asarray(W)
        new = self.indices[first]
        order = np.argsort(new, kind="stable")  # keep the indices sorted
        W = W[:, order]
        return SketchMatrix(self.n, new[order], W.tocsr() if sp.issparse(W) else np.ascontiguousarray(W))

    def unscaled(self) -> SketchMatrix:
        """The same sketch without the scale of uniform sub-sampling (``S`` instead of ``s S``).

        A uniform scale cancels in ridge solutions (``A`` scales by ``s``, ``A^T A`` by
        ``s^2``, ``gamma`` by ``1/s``), so solvers may skip the pass that applies it.
        """
        if self.scale is None:
            return self
        return SketchMatrix(self.n, self.indices, self.weights, scale=1.0)

    def toarray(self) -> np.ndarray:
        """The dense (m, n) sketch matrix (for tests and small problems)."""
        R = np.zeros((self.m, self.n))
        W = self.weights.toarray() if sp.issparse(self.weights) else self.weights
        R[:, self.indices] = W
        return R

    def apply_right(self, KS: np.ndarray, overwrite: bool = False) -> np.ndarray:
        """``K R^T`` from ``KS = K[:, indices]`` of shape (r, m'); returns (r, m).

        With ``overwrite=True`` a scaled sub-sampling sketch rescales ``KS`` in place.
        """
        if self.scale is not None:
            if self.scale == 1:
                return KS if overwrite else KS.copy()
            return np.multiply(KS, self.scale, out=KS if overwrite else None)
        if self._sparse_products():
            # sparse W (CountSketch, accumulation, p-sparsified with small p): dense @ CSR, the
            # fastest of scipy's forms on C-ordered blocks (2.4x (W KS^T)^T, which copies KS^T)
            Wt = self._sparse_transpose(KS.dtype)
            return _rows_in_parallel(lambda sl: KS[sl] @ Wt, KS.shape[0], self.m, KS.dtype, Wt.nnz,
                                     block_rows=DENSE_SPARSE_ROWS)
        return matmul(KS, self._dense_weights(KS.dtype).T)

    def _sparse_transpose(self, dtype):
        """``W^T`` as a CSR matrix of ``dtype`` (cached)."""
        cached = getattr(self, "_transpose_cache", None)
        if cached is None or cached.dtype != dtype:
            cached = self._transpose_cache = self.weights.T.tocsr().astype(dtype, copy=False)
        return cached

    def _sparse_products(self):
        """Whether products with ``W`` go through scipy's sparse routines: a sparse ``W`` with at
        most 1/16 non-zeros, or a large one.  Measured on the p-sparsified output sketches of
        QM9 (p = 20/n, 0.25-1.3 % non-zeros, m' x m = 1600 x 800 ... 8000 x 3200): 7-20x faster
        than the BLAS product with the densified ``W``."""
        W = self.weights
        size = W.shape[0] * W.shape[1]
        return sp.issparse(W) and (W.nnz * SPARSE_PRODUCTS < size or size > 2**24)

    def _dense_weights(self, dtype):
        """``W`` as a dense array of ``dtype`` (cached), for the BLAS products of a ``W`` with
        more than 1/16 non-zeros (scipy's sparse product also copies the dense operand)."""
        cached = getattr(self, "_dense_cache", None)
        if cached is None or cached.dtype != dtype:
            W = self.weights
            cached = np.asarray(W.toarray() if sp.issparse(W) else W, dtype=dtype)
            self._dense_cache = cached
        return cached

    def apply_left_transpose(self, G: np.ndarray) -> np.ndarray:
        """``W^T G`` for G of shape (m, k): the coefficients on the selected points."""
        if self.scale is not None:
            return G * self.scale if self.scale != 1 else G.copy()
        W = self.weights
        if sp.issparse(W):
            return np.asarray(W.T.astype(G.dtype, copy=False) @ G)
        return matmul(W.T.astype(G.dtype, copy=False), G)

    def sandwich_from_rows(self, KRt_sel: np.ndarray) -> np.ndarray:
        """``R K R^T`` from the selected rows ``(K R^T)[indices]`` of shape (m', m): ``W (K R^T)_S``.

        No kernel evaluation is repeated: the rows come from the ``K R^T`` block that
        training computes anyway.
        """
        # symmetric up to rounding; consumers (Cholesky: one triangle, psd_eigh) cope
        if self.scale is not None:
            return KRt_sel * self.scale if self.scale != 1 else KRt_sel.copy()
        if self._sparse_products():
            W = self.weights.astype(KRt_sel.dtype, copy=False)
            return _rows_in_parallel(lambda sl: W[sl] @ KRt_sel, self.m, KRt_sel.shape[1], KRt_sel.dtype,
                                     W.nnz * KRt_sel.shape[1] // max(self.m, 1))
        return matmul(self._dense_weights(KRt_sel.dtype), KRt_sel)

    @classmethod
    def from_coo(cls, n: int, m: int, rows: ArrayLike, cols: ArrayLike, vals: ArrayLike,
                 dense: bool | str = False) -> SketchMatrix:
        """The sketch with entries ``R[rows[k], cols[k]] = vals[k]`` (duplicates summed).

        Parameters
        ----------
        n, m : int
            Shape of ``R`` is (m, n).
        rows, cols, vals : array-like of shape (nnz,)
            Coordinates and values of the non-zero entries (COO format).
        dense : bool or "auto", default False
            Store ``W`` as a dense array (sketches whose non-null columns are dense)
            instead of a CSR matrix; ``"auto"``: dense when more than 1/16 of its entries
            are non-zero (its products are then BLAS products).
        """
        indices, inv = np.unique(np.asarray(cols), return_inverse=True)
        W = sp.csr_matrix((vals, (rows, inv)), shape=(m, indices.size))
        W.sum_duplicates()
        if dense == "auto":
            dense = W.nnz * SPARSE_PRODUCTS >= m * indices.size
        return cls(n, indices, W.toarray() if dense else W)
