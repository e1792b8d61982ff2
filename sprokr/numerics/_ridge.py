"""Kernel ridge solves shared by every estimator (IOKR family, DSOKR's kernel surrogate, machines).

Objective ``1/n sum_i |g(x_i) - t_i|^2 + lam |g|^2`` for vector targets ``T`` (n x p):

* exact: ``g(x) = k_x^T (K + n lam I)^-1 T`` -- Cholesky, never an explicit inverse;
* sketched (``alpha = R^T gamma``, ``A = K R^T``):
  ``gamma = (A^T A + n lam R K R^T)^+ A^T T`` and ``g(x) = k_x^T R^T gamma``, with ``A^T A``
  and ``A^T T`` accumulated over row chunks by the executor (memory O(m^2 + chunk x m'),
  never n x n) and ``R K R^T`` from the support points alone.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
import scipy.linalg as sla
from scipy.linalg import lapack

from ._crossprod import ShiftedCrossProducts, column_shift
from ._executor import ChunkTask
from ._features import KernelRows, SketchedFeatures
from ._linalg import (
    DEFAULT_RCOND,
    cholesky_factor_inplace,
    cholesky_factor_solve,
    cholesky_rcond,
    psd_solve,
    sym_norm1,
)
from ._qr import TallSkinnyQR, stacked_qr_apply_t, stacked_qr
from ..utils import take

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..sketches.base import SketchMatrix
    from ._executor import Executor, RowPartitions

__all__ = ["WORK_DTYPE", "exact_ridge_factor", "sketched_ridge", "CrossProductTask", "QRTask", "RidgeSolution",
           "stable_ridge_solve", "normal_equations_error", "pivot_tolerance", "NORMAL_EQUATIONS_TOL", "SOLVERS"]

logger = logging.getLogger("sprokr.numerics")

#: Precision of the solves and of the returned coefficients.  Kernels are often nearly flat
#: (a Gaussian with sigma^2 = 1e4 is ~0.8 everywhere) and with a small ridge the solution
#: depends on directions ~1e-10 below the largest one: a plain float32 ``A^T A`` costs
#: accuracy (Bibtex SISOKR F1 0.438 instead of 0.441).  The cross products may still run in
#: float32 because ``ShiftedCrossProducts`` double-centres the blocks first; the sums and
#: the m x m solve are float64.
WORK_DTYPE = np.dtype(np.float64)

#: support rows whose column means give the centring shift of the cross products
_SHIFT_ROWS = 256


def exact_ridge_factor(kernel: Kernel, parts: RowPartitions, Xp: Any, lam: float, chunk: int,
                       executor: Executor) -> tuple[np.ndarray, bool]:
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

    #: attribute types for the type checker (set in __init__ / fit)
    targets: Any  # None with identity targets
    gather: Any

    name = "kernel cross products"

    def __init__(self, features: SketchedFeatures, targets: Callable[[Any], np.ndarray] | None, width: int,
                 c: np.ndarray, d: np.ndarray | None, identity_targets: bool, gather: ArrayLike | None = None,
                 which: int = 1) -> None:
        self.features, self.targets, self.width = features, targets, width
        self.c, self.d, self.identity_targets = c, d, identity_targets
        self.gather = None if gather is None else np.asarray(gather, dtype=np.int64)
        self.which = which

    def start(self) -> Any:
        acc = ShiftedCrossProducts(self.features.m, self.width, self.features.dtype, self.c, self.d,
                                   self.identity_targets)
        rows = None if self.gather is None else np.zeros((self.gather.size, self.features.m), self.features.dtype)
        return acc, rows

    def add(self, partial: Any, rows: slice, *chunks: Any) -> Any:
        acc, got = partial
        A = self.features.block(chunks[0])
        if got is not None:  # before A is centred in place
            lo, hi = np.searchsorted(self.gather, [rows.start, rows.stop])
            got[lo:hi] = A[self.gather[lo:hi] - rows.start]
        T = None if self.identity_targets else self.targets(chunks[self.which])
        acc.add(rows, A, T, overwrite=True)
        return acc, got

    def merge(self, a: Any, b: Any) -> Any:
        return a[0].merge(b[0]), None if a[1] is None else np.add(a[1], b[1], out=a[1])


class QRTask(ChunkTask):
    """The pass of the stable sketched ridge: tall-skinny QR of ``A = K R^T`` per chunk.

    Same chunks, targets and gathered support rows as :class:`CrossProductTask`; the
    partial result is ``(TallSkinnyQR, gathered rows or None)``, merged by re-factorising
    the two triangles (:class:`sprokr.numerics.TallSkinnyQR`).  All in float64.
    """

    #: attribute types for the type checker (set in __init__ / fit)
    targets: Any  # None with identity targets
    gather: Any

    name = "kernel QR"

    def __init__(self, features: SketchedFeatures, targets: Callable[[Any], np.ndarray] | None, width: int,
                 identity_targets: bool, gather: ArrayLike | None = None, which: int = 1) -> None:
        self.features, self.targets, self.width = features, targets, width
        self.identity_targets = identity_targets
        self.gather = None if gather is None else np.asarray(gather, dtype=np.int64)
        self.which = which

    def start(self) -> Any:
        acc = TallSkinnyQR(self.features.m, self.width, self.identity_targets)
        rows = None if self.gather is None else np.zeros((self.gather.size, self.features.m))
        return acc, rows

    def add(self, partial: Any, rows: slice, *chunks: Any) -> Any:
        acc, got = partial
        A = self.features.block(chunks[0])
        if not np.isfinite(A).all():
            raise ValueError("the input kernel returned non-finite values (NaN, inf or overflow)")
        if got is not None:
            lo, hi = np.searchsorted(self.gather, [rows.start, rows.stop])
            got[lo:hi] = A[self.gather[lo:hi] - rows.start]
        T = None if self.identity_targets else self.targets(chunks[self.which])
        acc.add(rows, A, T)
        return acc, got

    def merge(self, a: Any, b: Any) -> Any:
        return a[0].merge(b[0]), None if a[1] is None else np.add(a[1], b[1], out=a[1])


class RidgeSolution:
    """Result of :func:`sketched_ridge`.

    Attributes
    ----------
    coef : ndarray (m', width)
        Coefficients on ``support``: ``g(x) = k(x, support) coef``.
    support, features : the support samples and the :class:`SketchedFeatures`
    times : dict of phase -> seconds
    method : {"cholesky", "eigh", "qr"}
        The route that produced ``coef``.
    error_estimate : float or None
        The normal equations' error estimate of :func:`normal_equations_error` (None when
        they were not formed).
    rank : int or None
        Numerical rank of ``R K R^T`` found by the stable route (None otherwise).
    """

    def __init__(self, coef: np.ndarray, support: Any, features: Any, times: dict[str, float], method: str,
                 error_estimate: float | None = None, rank: int | None = None) -> None:
        self.coef, self.support, self.features, self.times = coef, support, features, times
        self.method, self.error_estimate, self.rank = method, error_estimate, rank


#: the normal equations are trusted when :func:`normal_equations_error` is below this
#: (measured: see ``docs/architecture.md``, "Solvers")
NORMAL_EQUATIONS_TOL = 1e-6

SOLVERS = ("auto", "cholesky", "qr", "eigh")


def normal_equations_error(acc: ShiftedCrossProducts, G_norm: float, rc: float) -> float:
    """Error estimate of a Cholesky solve of the normal equations ``G gamma = A^T T``.

    ``eps_w |A_c|_F^2 + eps_64 |G|_1`` estimates the rounding error of the formed ``G``
    (``A_c`` the double-centred blocks whose products run in the accumulator's dtype
    ``w``, plus the float64 sums, corrections and factorisation); divided by the
    smallest eigenvalue of ``G`` -- ``rc |G|_1`` with ``rc`` LAPACK's estimate of
    ``1 / cond_1(G)`` from the Cholesky factor -- it is the relative perturbation that
    rounding causes in the worst direction of the solve.  O(m) given ``rc``.
    """
    if not rc > 0:
        return np.inf
    centred = float(np.trace(acc.AtA))  # |A_c|_F^2: the float32/64 syrk sums
    err = np.finfo(acc.dtype).eps * centred + np.finfo(np.float64).eps * G_norm
    return err / (rc * G_norm)


def pivot_tolerance(Kt: np.ndarray, rcond: float | None) -> float:
    """Absolute pivot tolerance of the pivoted Cholesky of ``K~ = R K R^T`` (m x m).

    ``rcond=None``: LAPACK's default, ``m eps max(diag K~)`` -- the rounding level of
    ``K~``: pivots below it carry no information.  Otherwise ``rcond max(diag K~)``.
    """
    dmax = float(np.max(np.diag(Kt), initial=0.0))
    rel = Kt.shape[0] * np.finfo(np.float64).eps if rcond is None else float(rcond)
    return rel * dmax


def stable_ridge_solve(RA: np.ndarray, rhs: np.ndarray, Kt: np.ndarray, nlam: float, rcond: float | None = None,
                       semi_normal: bool = False) -> tuple[np.ndarray, int]:
    """``gamma`` minimising ``|A gamma - T|^2 + nlam gamma^T K~ gamma``, never forming ``A^T A``.

    Parameters
    ----------
    RA : ndarray (m, m)
        Upper triangular factor of ``A = Q R_A`` (:class:`TallSkinnyQR`).
    rhs : ndarray (m, p)
        ``Q^T T``; with ``semi_normal=True``, ``A^T T`` (targets ``I_n``).
    Kt : ndarray (m, m)
        ``K~ = R K R^T`` (symmetric PSD).
    nlam : float
        ``n lam``.
    rcond : float or None
        Relative pivot threshold for the range of ``K~`` (:func:`pivot_tolerance`).

    Returns
    -------
    gamma : ndarray (m, p)
    rank : int
        Numerical rank of ``K~`` (the dimension of the function space solved in).

    Notes
    -----
    Pivoted Cholesky ``P^T K~ P = L L^T`` (LAPACK ``pstrf``, stopped at the pivot
    tolerance) gives the function space ``gamma = P_r L_11^-T w`` on which the penalty is
    ``|w|^2`` (directions of ``K~``'s null space define the zero function).  Then
    ``|A gamma - T|^2 + nlam |w|^2`` is the least-squares problem
    ``[Z; sqrt(nlam) I] w ~ [Q^T T; 0]`` with ``Z = R_A P_r L_11^-T`` (m x r), solved by
    QR (``tpqrt``).  Its condition number is ``sqrt(1 + |Z|^2 / nlam)``, not the square of
    ``A``'s.  With ``semi_normal`` the right-hand side is ``L_11^-1 P_r^T A^T T`` and the
    triangle of that QR is applied twice (the semi-normal equations: ``Q^T T`` for
    ``T = I_n`` would cost O(m n^2)).
    """
    m = Kt.shape[0]
    Ks = np.array(0.5 * (Kt + Kt.T), order="F")
    c, piv, r, info = lapack.dpstrf(Ks, tol=pivot_tolerance(Ks, rcond), lower=1, overwrite_a=1)
    if info < 0:  # pragma: no cover - malformed arguments
        raise ValueError(f"LAPACK pstrf failed (info={info})")
    p = rhs.shape[1]
    if r == 0:
        return np.zeros((m, p)), 0
    sel = piv[:r] - 1
    L11 = np.tril(c[:r, :r])
    # Z^T = L11^-1 (R_A P_r)^T   (r x m)
    Zt = sla.solve_triangular(L11, RA[:, sel].T, lower=True, check_finite=False)
    top = np.asfortranarray(np.sqrt(nlam) * np.eye(r))
    Rs, V, Tq = stacked_qr(top, np.asfortranarray(Zt.T), 0)
    Rs = np.triu(Rs)
    if semi_normal:
        y = sla.solve_triangular(L11, rhs[sel], lower=True, check_finite=False)  # B^T A^T T
        y = sla.solve_triangular(Rs, y, trans="T", check_finite=False)
    else:
        y = stacked_qr_apply_t(0, V, Tq, np.zeros((r, p), order="F"), np.array(rhs, dtype=np.float64, order="F"))
    w = sla.solve_triangular(Rs, y, check_finite=False)
    gamma = np.zeros((m, p))
    gamma[sel] = sla.solve_triangular(L11, w, lower=True, trans="T", check_finite=False)
    return gamma, int(r)


def sketched_ridge(kernel: Kernel, R: SketchMatrix, support: Any, parts: RowPartitions, lam: float,
                   targets: Callable[[Any], np.ndarray] | None, width: int, rcond: float | None, chunk: int,
                   executor: Executor, solver: str = "cholesky", dtype: DTypeLike = WORK_DTYPE,
                   ref_targets: np.ndarray | None = None, which: int = 1) -> RidgeSolution:
    """Coefficients ``W^T gamma`` on the support points of the sketched ridge.

    ``gamma`` minimises ``|A gamma - T|^2 + n lam gamma^T K~ gamma`` with ``A = K R^T``,
    ``K~ = R K R^T``.  Three routes:

    * normal equations (``"cholesky"``): ``G = A^T A + n lam K~`` and ``A^T T`` summed over
      row chunks in ``dtype`` on double-centred blocks (:class:`ShiftedCrossProducts`, one
      ``syrk`` per chunk), then Cholesky of ``G`` -- nothing added to ``G``.  Fast, but
      ``G`` has the square of ``A``'s condition number: on a flat kernel with a small
      ridge it is not accurate.  If ``G`` is numerically indefinite, the eigendecomposition
      pseudo-inverse of ``G`` with threshold ``rcond`` is used (logged);
    * ``"eigh"``: the same normal equations, solved by that pseudo-inverse directly;
    * stable (``"qr"``): tall-skinny QR of ``A`` over row chunks (:class:`QRTask`, float64)
      and the least-squares solve of :func:`stable_ridge_solve`;
    * ``"auto"`` (default): the normal equations, accepted when Cholesky succeeds and the
      cheap error estimate :func:`normal_equations_error` (from LAPACK's condition
      estimate of the factor, O(m^2)) is at most :data:`NORMAL_EQUATIONS_TOL`; otherwise a
      second pass takes the stable route (logged).

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
    rcond : float or None
        Relative threshold of the pseudo-inverse of ``G`` (``"eigh"`` and the indefinite
        fallback; None: :data:`DEFAULT_RCOND`) and of the pivots of ``K~`` in the stable
        route (None: the rounding level, :func:`pivot_tolerance`).
    chunk : rows per chunk
    executor : Executor
    solver : {"auto", "cholesky", "qr", "eigh"}
    dtype : dtype of the O(n m^2) cross products of the normal equations (on
        double-centred blocks); the stable route is float64
    ref_targets : ndarray (m', width), optional
        Targets at the support points; their column means centre ``T``.

    Returns
    -------
    RidgeSolution
        ``coef`` (m', width) float64 with ``g(x) = k(x, support) coef``, the support, the
        features, the time of each phase and the route taken.
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    t0 = time.perf_counter()
    # a uniform sub-sampling scale cancels in the solution: skip the pass that applies it
    feats = SketchedFeatures(kernel, R.unscaled(), support, dtype, DEFAULT_RCOND if rcond is None else rcond)
    identity = targets is None
    times = {}
    est = None
    if solver != "qr":
        # the centring shift, fixed before the pass: column means of A at (up to 256) support rows
        ref = np.linspace(0, R.indices.size - 1, min(R.indices.size, _SHIFT_ROWS)).astype(np.intp)
        c = column_shift(feats.block(take(support, ref)), dtype)
        d = None
        if not identity and ref_targets is not None:
            d = np.asarray(ref_targets, dtype=np.float64)[ref].mean(axis=0)
        task: ChunkTask = CrossProductTask(feats, targets, width, c, d, identity, gather=R.indices, which=which)
        t1 = time.perf_counter()
        acc, A_sel = executor.map_reduce(parts, task, chunk)
        t2 = time.perf_counter()
        times.update({"support": t1 - t0, "pass": t2 - t1})
        Kt = _sandwich(feats, A_sel)
        ridge = parts.n * lam * 0.5 * (Kt + Kt.T)
        G, AtT = acc.result(lower_only=True, plus=ridge)
        _check_finite(G, AtT)
        gamma = None
        if solver == "eigh":
            gamma = psd_solve(G, AtT, DEFAULT_RCOND if rcond is None else rcond, method="eigh", lower_only=True)
        else:
            G_norm = sym_norm1(G, lower_only=True)
            if solver == "cholesky":
                # the fast route's explicit jitter: rcond * mean(diag G) on the diagonal (a
                # relative ridge of 1e-10 by default) keeps the factorisation of a
                # numerically singular G (flat kernels, tiny lam) instead of failing; "auto"
                # factorises G as it is, for its error check
                G.flat[:: G.shape[0] + 1] += (DEFAULT_RCOND if rcond is None else rcond) * float(np.mean(G.diagonal()))
            try:
                L = cholesky_factor_inplace(G)  # G is overwritten
            except np.linalg.LinAlgError:
                L = None
            if L is not None:
                est = normal_equations_error(acc, G_norm, cholesky_rcond(L, G_norm))
                if solver == "cholesky" or est <= NORMAL_EQUATIONS_TOL:
                    gamma = cholesky_factor_solve(L, AtT)
                else:
                    logger.info("sketched ridge: normal equations too ill-conditioned (error estimate %.2g "
                                "> %.0e): stable QR pass", est, NORMAL_EQUATIONS_TOL)
            elif solver == "cholesky":
                logger.warning("sketched ridge: A^T A + n lam R K R^T is numerically indefinite; solved "
                               "by its eigendecomposition pseudo-inverse (use solver='auto' or 'qr')")
                G = acc.result(lower_only=True, plus=ridge)[0]
                gamma = psd_solve(G, AtT, DEFAULT_RCOND if rcond is None else rcond, method="eigh",
                                  lower_only=True)
            else:
                logger.info("sketched ridge: normal equations numerically indefinite: stable QR pass")
        times["solve"] = time.perf_counter() - t2
        if gamma is not None:
            coef = feats.R.apply_left_transpose(gamma)
            method = "cholesky" if solver == "auto" else solver
            return RidgeSolution(coef, support, feats, times, method, est)
        del G, AtT, acc
    # ---- the stable route: tall-skinny QR over row chunks, float64
    t2 = time.perf_counter()
    qfeats = SketchedFeatures(kernel, R.unscaled(), support, np.float64, feats.rcond)
    task = QRTask(qfeats, targets, width, identity, gather=R.indices, which=which)
    acc, A_sel = executor.map_reduce(parts, task, chunk)
    t3 = time.perf_counter()
    Kt = _sandwich(qfeats, A_sel)
    rhs = acc.AtT if identity else acc.QtT
    _check_finite(acc.R, rhs)
    gamma, rank = stable_ridge_solve(acc.R, rhs, Kt, parts.n * lam, rcond, semi_normal=identity)
    times.update({"qr_pass": t3 - t2, "qr_solve": time.perf_counter() - t3})
    coef = qfeats.R.apply_left_transpose(gamma)
    return RidgeSolution(coef, support, qfeats, times, "qr", est, rank)


def _sandwich(feats, A_sel):
    """``R K R^T`` from the gathered support rows, checked to be PSD on its diagonal."""
    Kt = feats.R.sandwich_from_rows(np.asarray(A_sel, dtype=np.float64))  # R K R^T = W (K R^T)_S
    if np.min(Kt.diagonal(), initial=0.0) < -1e-8 * max(np.max(np.abs(Kt.diagonal()), initial=0.0), 1e-300):
        raise ValueError("the input kernel is not positive semi-definite (negative values on the "
                         "diagonal of R K R^T)")
    return Kt


def _check_finite(G, AtT):
    if not (np.isfinite(G.diagonal()).all() and np.isfinite(AtT).all()):
        raise ValueError("the input kernel returned non-finite values (NaN, inf or overflow) on the "
                         "training data")

