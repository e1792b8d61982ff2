"""Kernel ridge solvers shared by every estimator (IOKR family, DSOKR's kernel surrogate).

Objective ``1/n sum_i |g(x_i) - t_i|^2 + lam |g|^2`` for vector targets ``T`` (n x p):

* exact: ``g(x) = k_x^T (K + n lam I)^-1 T`` -- Cholesky, never an explicit inverse;
* sketched (``alpha = R^T gamma``, ``A = K R^T``):
  ``gamma = (A^T A + n lam R K R^T)^+ A^T T`` and ``g(x) = k_x^T R^T gamma``, with ``A^T A``
  and ``A^T T`` accumulated over row chunks (memory O(m^2 + chunk x m'), never n x n).
"""
from __future__ import annotations

import time

import numpy as np
import scipy.linalg as sla

from ..utils import iter_chunks, take_slice
from ._crossprod import ShiftedCrossProducts
from ._features import RowGatherer, SketchedFeatures
from ._linalg import cholesky_solve, psd_solve

__all__ = ["WORK_DTYPE", "exact_ridge_factor", "sketched_ridge_coef"]

#: Precision of the solves and of the returned coefficients.  Kernels are often nearly flat
#: (a Gaussian with sigma^2 = 1e4 is ~0.8 everywhere) and with a small ridge the solution
#: depends on directions ~1e-10 below the largest one: a plain float32 ``A^T A`` costs
#: accuracy (Bibtex SISOKR F1 0.438 instead of 0.441).  The cross products may still run in
#: float32 (``product_dtype``) because ``ShiftedCrossProducts`` double-centres the blocks
#: first; the m x m solve is float64.
WORK_DTYPE = np.dtype(np.float64)


def exact_ridge_factor(kernel, Xp, n, lam, chunk):
    """Cholesky factor of ``K + n lam I`` (n x n), for ``scipy.linalg.cho_solve``."""
    K = np.empty((n, n), dtype=WORK_DTYPE)
    for sl in iter_chunks(n, chunk):
        K[sl] = kernel.pairwise(take_slice(Xp, sl), Xp)
    K.flat[:: n + 1] += n * lam
    try:
        return sla.cho_factor(K, lower=True, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"K + n lam I is not numerically positive definite (n lam = {n * lam:.3g}): the "
            f"kernel is too flat for this ridge; increase lam or use a sketched model"
        ) from None


def sketched_ridge_coef(kernel, R, Xp, n, lam, targets, width, rcond, chunk, solver="cholesky", log=None,
                        product_dtype=WORK_DTYPE):
    """Coefficients ``W^T gamma`` on the support ``Xp[R.indices]`` of the sketched ridge.

    Parameters
    ----------
    kernel : Kernel
    R : SketchMatrix (m, n)
    Xp : prepared training inputs
    n : int
    lam : float
    targets : callable ``slice -> ndarray (rows, width)`` or None
        Rows of ``T`` for a chunk of samples; None means ``T = I_n`` (``width = n``).
    width : int
        Number of target columns.
    rcond : relative threshold / Cholesky shift of the m x m solve
    chunk : rows per chunk
    solver : {"cholesky", "eigh"}
    log : callable, optional
        Receives one progress line per chunk and phase.
    product_dtype : dtype of the O(n m^2) cross products (on double-centred blocks)

    Returns
    -------
    coef : ndarray (m', width), float64 -- ``g(x) = k(x, X[R.indices]) coef``
    support : prepared ``Xp[R.indices]``
    """
    if R.scale is not None:
        # uniform sub-sampling R = s S: A scales by s, G by s^2, gamma by 1/s, and the
        # coefficients W^T gamma = s gamma not at all -- skip the pass that scales A
        R = R.unscaled()
    feats = SketchedFeatures(kernel, R, Xp, product_dtype, rcond)
    acc = ShiftedCrossProducts(R.m, width, product_dtype)
    rows = RowGatherer(R.indices, R.m, product_dtype)  # (K R^T)[indices]: gives R K R^T
    t0 = time.perf_counter()
    for sl in iter_chunks(n, chunk):
        A = feats.block(take_slice(Xp, sl))
        t1 = time.perf_counter()
        rows.add(sl, A)
        acc.add(sl, A, None if targets is None else targets(sl), overwrite=True)
        if log:
            log(f"rows {sl.start}-{sl.stop} of {n}: kernel {t1 - t0:.3f} s, products "
                f"{time.perf_counter() - t1:.3f} s")
        t0 = time.perf_counter()
    rows.rows *= n * lam  # (K R^T)[indices], ours to scale in place

    def system():
        """``G = A^T A + n lam R K R^T`` (Fortran-ordered float64, lower triangle)."""
        # R K R^T = W (K R^T)_S, symmetric up to rounding: add its Fortran-ordered view
        ridge = rows.rows if R.scale == 1 else R.sandwich_from_rows(rows.rows)
        return acc.result(lower_only=True, plus=ridge.T)

    G, AtT = system()
    gamma = None
    if solver == "cholesky":
        try:
            gamma = cholesky_solve(G, AtT, rcond, overwrite=True)
        except np.linalg.LinAlgError:  # numerically indefinite: rebuild G, use eigh
            G, AtT = system()
    if gamma is None:
        gamma = psd_solve(G, AtT, rcond, method=solver, lower_only=True)
    if log:
        log(f"{R.m} x {R.m} solve: {time.perf_counter() - t0:.3f} s")
    return R.apply_left_transpose(gamma), feats.Z_sel
