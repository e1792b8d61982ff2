"""Sketched kernel features ``K R^T`` and the sketched feature map ``D^-1/2 U^T R k(., z)``.

Shared by the input side (SIOKR, sketched kernel machines) and the output side (ISOKR,
DSOKR): for a kernel ``k``, training samples ``Z`` and a sketch ``R = W S``,

* ``block(Zq)`` = ``k(Zq, Z) R^T = k(Zq, Z[indices]) W^T``  (q x m): only the kernel
  columns of the ``m'`` selected samples are computed (decomposition trick);
* ``set_basis(rows)`` takes the rows of ``K R^T`` at the selected samples (gathered while
  the training chunks stream by, so no kernel value is computed twice), forms
  ``K~ = R K R^T = W (K R^T)[indices]`` and its eigenpairs ``(U, D)`` of rank ``r``;
* ``transform(Zq)`` = ``block(Zq) U D^-1/2`` (q x r): the feature map ``psi~`` (output
  side) or ``z`` (input side) whose inner products are the Nystrom-type approximation
  ``k(a, b) ~ k_a^T R^T K~^+ R k_b``.
"""
from __future__ import annotations

import numpy as np

from ._linalg import matmul, psd_eigh
from ..utils import iter_chunks, num_samples, take, take_slice

__all__ = ["SketchedFeatures", "RowGatherer", "default_chunk_size"]


def default_chunk_size(width, dtype, budget_mb=64):
    """Rows per chunk so that a (chunk x width) block fits in ``budget_mb``."""
    return int(max(128, min(8192, budget_mb * 2**20 // (max(width, 1) * np.dtype(dtype).itemsize))))


class RowGatherer:
    """Collect the rows at given global positions from a stream of row chunks."""

    def __init__(self, positions, width, dtype):
        self.positions = np.asarray(positions, dtype=np.intp)
        self.rows = np.empty((self.positions.size, width), dtype=dtype)
        self._order = np.argsort(self.positions, kind="stable")
        self._sorted = self.positions[self._order]

    def add(self, sl, block):
        """Offer rows ``sl.start .. sl.stop`` (a slice) of the full matrix."""
        lo, hi = np.searchsorted(self._sorted, [sl.start, sl.stop])
        if hi > lo:
            dest = self._order[lo:hi]
            self.rows[dest] = block[self._sorted[lo:hi] - sl.start]


class SketchedFeatures:
    """``K R^T`` blocks and the rank-revealing sketched feature map for one kernel.

    Parameters
    ----------
    kernel : Kernel
    R : SketchMatrix
    Z : prepared collection of the n training samples
    dtype : numpy dtype of the computations
    rcond : relative eigenvalue threshold of the feature map
    """

    def __init__(self, kernel, R, Z, dtype, rcond):
        self.kernel = kernel
        self.R = R
        self.Z_sel = take(Z, R.indices)
        self.dtype = np.dtype(dtype)
        self.rcond = rcond
        self.basis_ = None
        self.eigenvalues_ = None

    @property
    def m(self):
        return self.R.m

    def block(self, Zq):
        """``k(Zq, Z) R^T`` of shape (len(Zq), m)."""
        KS = np.asarray(self.kernel.pairwise(Zq, self.Z_sel), dtype=self.dtype)
        return self.R.apply_right(KS, overwrite=True)

    def set_basis(self, KRt_sel):
        """Eigen-basis ``U D^-1/2`` of ``K~ = R K R^T`` from the rows ``(K R^T)[indices]``."""
        Kt = self.R.sandwich_from_rows(np.asarray(KRt_sel, dtype=np.float64))
        U, d = psd_eigh(Kt, self.rcond)
        self.eigenvalues_ = d
        self.basis_ = (U / np.sqrt(d)).astype(self.dtype)
        return self

    @property
    def rank(self):
        return self.basis_.shape[1]

    def transform_raw(self, Zq, chunk_size=None):
        """``k(Zq, Z) R^T`` for all of ``Zq`` in row chunks, shape (len(Zq), m)."""
        n = num_samples(Zq)
        chunk = chunk_size or default_chunk_size(self.R.indices.size, self.dtype)
        out = np.empty((n, self.m), dtype=self.dtype)
        for sl in iter_chunks(n, chunk):
            out[sl] = self.block(take_slice(Zq, sl))
        return out

    def transform(self, Zq, chunk_size=None):
        """Sketched feature map of prepared samples, shape (len(Zq), rank)."""
        n = num_samples(Zq)
        chunk = chunk_size or default_chunk_size(self.R.indices.size, self.dtype)
        out = np.empty((n, self.rank), dtype=self.dtype)
        for sl in iter_chunks(n, chunk):
            out[sl] = matmul(self.block(take_slice(Zq, sl)), self.basis_)
        return out

    def fit_basis(self, Z, chunk_size=None):
        """Compute the basis directly (when no training loop streams the rows by)."""
        return self.set_basis(self.block(self.Z_sel))
