"""Kernel ridge solves shared by every estimator (IOKR family, DSOKR's kernel surrogate, machines).

Objective ``1/n sum_i |g(x_i) - t_i|^2 + lam |g|^2`` for vector targets ``T`` (n x p):

* exact: ``g(x) = k_x^T (K + n lam I)^-1 T`` -- Cholesky, never an explicit inverse;
* sketched (``alpha = R^T gamma``, ``A = K R^T``):
  ``gamma = (A^T A + n lam R K R^T)^+ A^T T`` and ``g(x) = k_x^T R^T gamma``, with ``A^T A``
  and ``A^T T`` accumulated over row chunks by the executor (memory O(m^2 + chunk x m'),
  never n x n) and ``R K R^T`` from the support points alone.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.linalg as sla

from ._crossprod import ShiftedCrossProducts, column_shift
from ._executor import ChunkTask
from ._features import KernelRows, SketchedFeatures
from ._linalg import cholesky_solve, psd_solve
from ..utils import take

__all__ = ["WORK_DTYPE", "exact_ridge_factor", "sketched_ridge", "CrossProductTask", "RidgeSolution"]

#: Precision of the solves and of the returned coefficients.  Kernels are often nearly flat
#: (a Gaussian with sigma^2 = 1e4 is ~0.8 everywhere) and with a small ridge the solution
#: depends on directions ~1e-10 below the largest one: a plain float32 ``A^T A`` costs
#: accuracy (Bibtex SISOKR F1 0.438 instead of 0.441).  The cross products may still run in
#: float32 because ``ShiftedCrossProducts`` double-centres the blocks first; the sums and
#: the m x m solve are float64.
WORK_DTYPE = np.dtype(np.float64)

#: support rows whose column means give the centring shift of the cross products
_SHIFT_ROWS = 256


def exact_ridge_factor(kernel, parts, Xp, lam, chunk, executor):
    """Cholesky factor of ``K + n lam I`` (n x n), for ``scipy.linalg.cho_solve``.

    ``parts``: row partitions of the prepared inputs (the Gram rows are computed by the
    executor); ``Xp``: all prepared inputs (the columns).
    """
    n = parts.n
    K = np.empty((n, n), dtype=WORK_DTYPE)
    executor.map_rows(parts, KernelRows(kernel, Xp, WORK_DTYPE), chunk, out=K, name="Gram rows")
    if not np.isfinite(K.diagonal()).all():
        raise ValueError("the input kernel returned non-finite values (NaN or inf) on the training data")
    K.flat[:: n + 1] += n * lam
    try:
        return sla.cho_factor(K, lower=True, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"K + n lam I is not numerically positive definite (n lam = {n * lam:.3g}): the "
            f"kernel is too flat for this ridge, or not positive semi-definite; increase lam or "
            f"use a sketched model"
        ) from None


class CrossProductTask(ChunkTask):
    """The pass of a sketched ridge: ``A^T A`` and ``A^T T`` of ``A = K R^T`` per chunk.

    Chunks are ``(X_chunk, ...)``: ``A = K R^T`` from ``X_chunk`` and
    ``T = targets(chunks[which])`` (``T = I_n`` when ``identity_targets``).
    With ``gather`` (sorted row numbers, e.g. the sketch's support) the rows of ``A`` at
    those positions are collected as well -- ``(K R^T)[indices]`` gives ``R K R^T`` without
    computing a kernel value twice.  The partial result is ``(ShiftedCrossProducts,
    gathered rows or None)``; gathered rows of disjoint chunks are disjoint, so they merge
    by addition too.
    """

    name = "kernel cross products"

    def __init__(self, features, targets, width, c, d, identity_targets, gather=None, which=1):
        self.features, self.targets, self.width = features, targets, width
        self.c, self.d, self.identity_targets = c, d, identity_targets
        self.gather = None if gather is None else np.asarray(gather, dtype=np.int64)
        self.which = which

    def start(self):
        acc = ShiftedCrossProducts(self.features.m, self.width, self.features.dtype, self.c, self.d,
                                   self.identity_targets)
        rows = None if self.gather is None else np.zeros((self.gather.size, self.features.m), self.features.dtype)
        return acc, rows

    def add(self, partial, rows, *chunks):
        acc, got = partial
        A = self.features.block(chunks[0])
        if got is not None:  # before A is centred in place
            lo, hi = np.searchsorted(self.gather, [rows.start, rows.stop])
            got[lo:hi] = A[self.gather[lo:hi] - rows.start]
        T = None if self.identity_targets else self.targets(chunks[self.which])
        acc.add(rows, A, T, overwrite=True)
        return acc, got

    def merge(self, a, b):
        return a[0].merge(b[0]), None if a[1] is None else np.add(a[1], b[1], out=a[1])


class RidgeSolution:
    """Result of :func:`sketched_ridge`: ``coef`` (m', width) on ``support`` and timings."""

    def __init__(self, coef, support, features, times):
        self.coef, self.support, self.features, self.times = coef, support, features, times


def sketched_ridge(kernel, R, support, parts, lam, targets, width, rcond, chunk, executor,
                   solver="cholesky", dtype=WORK_DTYPE, ref_targets=None, which=1):
    """Coefficients ``W^T gamma`` on the support points of the sketched ridge.

    Parameters
    ----------
    kernel : Kernel
    R : SketchMatrix (m, n)
    support : prepared support samples ``X[R.indices]``
    parts : RowPartitions of ``(X, ...)``
    lam : float
    targets : callable ``chunk -> T_chunk`` (rows, width) applied to collection ``which`` of
        ``parts``, or None for ``T = I_n``
    width : int
        Number of target columns (``n`` for ``T = I_n``).
    rcond : relative threshold of the m x m solve
    chunk : rows per chunk
    executor : Executor
    solver : {"cholesky", "eigh"}
    dtype : dtype of the O(n m^2) cross products (on double-centred blocks)
    ref_targets : ndarray (m', width), optional
        Targets at the support points; their column means centre ``T``.

    Returns
    -------
    RidgeSolution
        ``coef`` (m', width) float64 with ``g(x) = k(x, support) coef``, the support, the
        features and the time of each phase.
    """
    t0 = time.perf_counter()
    # a uniform sub-sampling scale cancels in the solution: skip the pass that applies it
    feats = SketchedFeatures(kernel, R.unscaled(), support, dtype, rcond)
    # the centring shift, fixed before the pass: column means of A at (up to 256) support rows
    ref = np.linspace(0, R.indices.size - 1, min(R.indices.size, _SHIFT_ROWS)).astype(np.intp)
    c = column_shift(feats.block(take(support, ref)), dtype)
    identity = targets is None
    d = None
    if not identity and ref_targets is not None:
        d = np.asarray(ref_targets, dtype=np.float64)[ref].mean(axis=0)
    task = CrossProductTask(feats, targets, width, c, d, identity, gather=R.indices, which=which)
    t1 = time.perf_counter()
    acc, A_sel = executor.map_reduce(parts, task, chunk)
    t2 = time.perf_counter()
    Kt = feats.R.sandwich_from_rows(np.asarray(A_sel, dtype=np.float64))  # R K R^T = W (K R^T)_S
    ridge = parts.n * lam * 0.5 * (Kt + Kt.T)
    G, AtT = acc.result(lower_only=True, plus=ridge)
    if not (np.isfinite(G.diagonal()).all() and np.isfinite(AtT).all()):
        raise ValueError("the input kernel returned non-finite values (NaN, inf or overflow) on the "
                         "training data")
    if np.min(Kt.diagonal(), initial=0.0) < -1e-8 * max(np.max(np.abs(Kt.diagonal()), initial=0.0), 1e-300):
        raise ValueError("the input kernel is not positive semi-definite (negative values on the "
                         "diagonal of R K R^T)")
    gamma = None
    if solver == "cholesky":
        try:
            gamma = cholesky_solve(G, AtT, rcond, overwrite=True)
        except np.linalg.LinAlgError:  # numerically indefinite: G was overwritten, rebuild it
            G = acc.result(lower_only=True, plus=ridge)[0]
    if gamma is None:
        gamma = psd_solve(G, AtT, rcond, method="eigh", lower_only=True)
    t3 = time.perf_counter()
    coef = feats.R.apply_left_transpose(gamma)
    return RidgeSolution(coef, support, feats, {"support": t1 - t0, "pass": t2 - t1, "solve": t3 - t2})
