"""Kernel ridge solves shared by every estimator (IOKR family, DSOKR's kernel surrogate, machines).

Objective ``1/n sum_i |g(x_i) - t_i|^2 + lam |g|^2`` for vector targets ``T`` (n x p):

* exact: ``g(x) = k_x^T (K + n lam I)^-1 T`` -- Cholesky, never an explicit inverse;
* sketched (``alpha = R^T gamma``, ``A = K R^T``):
  ``gamma = (A^T A + n lam R K R^T)^+ A^T T`` and ``g(x) = k_x^T R^T gamma``, solved by
  default in the whitened basis of ``R K R^T`` (:class:`Whitening`): ``Z^T Z`` and
  ``Z^T T`` of ``Z = K R^T P_r L_11^-T`` accumulated over row chunks by the executor
  (memory O(m^2 + chunk x m'), never n x n), ``R K R^T`` from the support points alone.
  See :func:`sketched_ridge` for the routes and the checks that choose between them.

This module holds the entry points; the routes live one floor down: the passes over row
chunks (:mod:`._ridge_passes`), the shared result and stable solve (:mod:`._ridge_common`),
the plain normal equations (:mod:`._ridge_plain`) and the whitened, refined and stable
routes (:mod:`._ridge_job`).
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import scipy.sparse as sp
from numpy.typing import DTypeLike

from ._features import KernelRows, SketchedFeatures
from ._linalg import DEFAULT_RCOND, cholesky_factor_inplace, small_work_threads
from ._checks import Float64Features, tolerance
from ._products import float64_kernel, upcast_samples
from ._ridge_common import SOLVERS, RidgeSolution, check_finite_sums
from ._ridge_job import RidgeJob
from ..progress import warn_accuracy
from ..utils import iter_chunks, take_slice

_logger = logging.getLogger("sprokr.numerics")

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import KernelLike as Kernel
    from ._sketch_matrix import SketchMatrix
    from ._executor import Executor, RowPartitions

__all__ = ["WORK_DTYPE", "NotPositiveDefiniteError", "exact_ridge_factor", "sketched_ridge", "WhitenedSystem", "whitened_system", "plain_system"]


#: Precision of the solves and of the returned coefficients.  Kernels are often nearly flat
#: (a Gaussian with sigma^2 = 1e4 is ~0.8 everywhere) and with a small ridge the solution
#: depends on directions ~1e-10 below the largest one: a plain float32 ``A^T A`` costs
#: accuracy (Bibtex SISOKR F1 0.438 instead of 0.441).  The cross products may still run in
#: float32 because ``ShiftedCrossProducts`` double-centres the blocks first; the sums and
#: the m x m solve are float64.
WORK_DTYPE = np.dtype(np.float64)


class NotPositiveDefiniteError(ValueError):
    """``K + n lam I`` is not numerically positive definite (:func:`exact_ridge_factor`): the
    kernel is too flat for the ridge, or its values are not PSD -- or, with float32 kernel
    values, their rounding (relative to ``|K|``) exceeds ``n lam``, which the models' float32
    checks answer with float64 kernel values."""


def exact_ridge_factor(kernel: Kernel, parts: RowPartitions, Xp: Any, lam: float, chunk: int,
                       executor: Executor) -> tuple[np.ndarray, bool]:
    """Cholesky factor of ``K + n lam I`` (n x n), for ``scipy.linalg.cho_solve``;
    :class:`NotPositiveDefiniteError` (a ``ValueError``) when the factorisation fails.

    Parameters
    ----------
    kernel : Kernel
        The input kernel.
    parts : RowPartitions
        Row partitions with the prepared inputs as column ``"inputs"`` (the Gram rows are
        computed by the executor).
    Xp : samples
        All prepared inputs (the columns).
    lam : float
        Ridge parameter.
    chunk : int
        Rows per chunk.
    executor : Executor
        The executor computing the Gram rows.
    """
    n = parts.n
    K = np.zeros((n, n), dtype=WORK_DTYPE)  # the untouched triangle stays 0 (saved models are deterministic)
    if executor.in_process:
        # the lower triangle only (row block i against columns <= its last row): half the
        # kernel values; LAPACK reads that triangle as the upper one of the Fortran view
        for sl in iter_chunks(n, min(chunk, max(256, n // 8))):  # thin blocks: closer to half
            K[sl, : sl.stop] = KernelRows(kernel, take_slice(Xp, slice(0, sl.stop)), WORK_DTYPE)(take_slice(Xp, sl))
    else:
        executor.map_rows(parts, KernelRows(kernel, Xp, WORK_DTYPE), chunk, out=K, name="Gram rows", which="inputs")
    if not np.isfinite(K.diagonal()).all():
        raise ValueError("the input kernel returned non-finite values (NaN or inf) on the training data")
    K.flat[:: n + 1] += n * lam
    try:
        # in place (no copy): the Fortran view K^T holds K's lower triangle as its upper one
        U = cholesky_factor_inplace(K.T, lower=False)
        return U, False
    except np.linalg.LinAlgError:
        raise NotPositiveDefiniteError(
            f"K + n lam I is not numerically positive definite (n lam = {n * lam:.3g}): the "
            f"kernel is too flat for this ridge, or not positive semi-definite; increase lam or "
            f"use a sketched model"
        ) from None


def sketched_ridge(kernel: Kernel, R: SketchMatrix, support: Any, parts: RowPartitions, lam: float,
                   targets: Callable[[Any], np.ndarray] | None, width: int, rcond: float | None, chunk: int,
                   executor: Executor, solver: str = "auto", dtype: DTypeLike = WORK_DTYPE,
                   ref_targets: np.ndarray | None = None, which: str | int = "targets") -> RidgeSolution:
    """Coefficients ``W^T gamma`` on the support points of the sketched ridge.

    ``gamma`` minimises ``|A gamma - T|^2 + n lam gamma^T K~ gamma`` with ``A = K R^T``,
    ``K~ = R K R^T``.  Routes (``docs/architecture.md``, "Solvers"):

    * ``"auto"`` (default): the plain normal equations when ``K~``'s pivoted Cholesky has
      full rank with pivots spanning at most
      :data:`~sprokr.numerics._ridge_plain.PLAIN_FIRST_PIVOT_RATIO` and their measured estimate
      (:meth:`~sprokr.numerics._ridge_plain.PlainRoutes._measured_plain`, times
      :data:`~sprokr.numerics._ridge_plain.PLAIN_SAFETY`) is
      within :func:`tolerance` -- nothing added to the matrix; otherwise the whitened
      normal equations.  ``K~``'s pivoted Cholesky
      factorisation (:class:`Whitening`, from the support rows, before the pass) gives
      ``Z = A P_r L_11^-T``; one pass sums ``Z^T Z`` and ``Z^T T`` over row chunks
      (blocks centred by projection on the column shift, a ``trsm`` and a ``syrk`` per
      chunk in ``dtype``), then
      ``(Z^T Z + n lam I) w = Z^T T`` by Cholesky -- nothing added.  Accepted when the
      error estimate is within :func:`tolerance` (1e-6 for float64, 1e-4 for float32):
      the bound :func:`whitened_error_bound`, known up to ``|Z|_F^2 <= trace(K)`` before
      the pass; for float32 plus the measured :func:`float32_error_estimate` (which also
      covers the float32 kernel values and predictions).  A float32 solution that fails
      is redone with float64 kernel values and products (:func:`float64_kernel`;
      ``RidgeSolution.precision`` and ``.features`` say so) -- accepted at the float32
      request's tolerance -- a float64 one by the stable route (logged).
      With targets given and few (``16 width (n + m) <= n m``: two residuals then cost a fraction
      of the pass) the whitened pass runs its products in float32 and its solution is
      refined (:mod:`sprokr.numerics._refine`): float64 residuals of the un-squared
      problem, ``A^T (T - A gamma) - n lam K~ gamma``, solved by the whitened factor,
      until the measured estimate is within the tolerance (two or three steps; the float64
      rows of ``A`` are kept from the pass when they fit in ``_refine.KEEP_BLOCKS_MB``, else
      each step is a float64 kernel pass).  A float32 request keeps its float32 solution
      when its measured check passes; otherwise it is refined the same way instead of
      redone, and predicts in float32 only when the rounding of its predictions allows.
      A rejected plain solution is refined likewise before any whitened pass;
    * ``"whitened"``: the whitened normal equations in ``dtype`` as above, without the plain
      or refined routes first;
    * ``"mixed"``: the refined route (float32 products, float64 residuals) whenever targets
      are given (``"whitened"`` for ``T = I_n``);
    * ``"cholesky"``: the plain normal equations ``G = A^T A + n lam K~`` (one ``syrk``
      pass on double-centred blocks) with an explicit relative jitter
      ``rcond * mean(diag G)`` on the diagonal.  Fastest, but ``G`` has the square of
      ``A``'s condition number: not accurate on flat kernels with a small ridge (Bibtex
      SIOKR: 4e-3 relative).  If ``G`` is numerically indefinite, its eigendecomposition
      pseudo-inverse with threshold ``rcond`` is used (logged);
    * ``"eigh"``: the same plain normal equations, solved by that pseudo-inverse.  Both
      explicit routes report their measured estimate and warn above :func:`tolerance`; a
      float32 solution above it is redone by the same route with float64 kernel values and
      products (``RidgeSolution.precision`` says so), which warns above the float32 request's
      tolerance;
    * ``"qr"``: the stable route: tall-skinny QR of ``A`` over row chunks
      (:class:`QRTask`, float64) and the least-squares solve of :func:`stable_ridge_solve`.

    Parameters
    ----------
    kernel : Kernel
        The input kernel.
    R : SketchMatrix of shape (m, n)
        The sketch.
    support : samples
        Prepared support samples ``X[R.indices]``.
    parts : RowPartitions
        Row partitions with an ``"inputs"`` column (the prepared ``X``).
    lam : float
        Ridge parameter.
    targets : callable or None
        ``chunk -> T_chunk`` (rows, width) applied to column ``which`` of ``parts``, or None
        for ``T = I_n``.
    width : int
        Number of target columns (``n`` for ``T = I_n``).
    rcond : float or None
        Relative pivot threshold of ``K~`` (whitened and stable routes; None: the rounding
        level, :func:`pivot_tolerance`) and threshold of the pseudo-inverse of ``G``
        (``"eigh"``, the indefinite fallback and the jitter of ``"cholesky"``; None:
        :data:`DEFAULT_RCOND`).
    chunk : int
        Rows per chunk.
    executor : Executor
        The executor running the passes over ``parts``.
    solver : {"auto", "whitened", "mixed", "cholesky", "qr", "eigh"}, default="auto"
        The route (see above).
    dtype : dtype, default=WORK_DTYPE
        Dtype of the O(n m^2) products (on double-centred blocks); sums, solves and
        the stable route are float64.
    ref_targets : ndarray of shape (m', width), optional
        Targets at the support points; their column means centre ``T``.
    which : str or int, default="targets"
        The column of ``parts`` the targets are read from: its name or its position.

    Returns
    -------
    RidgeSolution
        ``coef`` (m', width) float64 with ``g(x) = k(x, support) coef``, the support, the
        features (whose kernel computed the solution), the time of each phase, the route
        taken, its error estimate and precision.
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    t0 = time.perf_counter()
    # a uniform sub-sampling scale cancels in the solution: skip the pass that applies it
    feats = SketchedFeatures(kernel, R.unscaled(), support, dtype, DEFAULT_RCOND if rcond is None else rcond)
    job = RidgeJob(feats, parts, parts.n * lam, targets, width, chunk, executor, which, t0, rcond,
                    try_plain=solver == "auto", mixed={"auto": None, "whitened": False, "mixed": True}.get(solver))
    with ridge_threads(parts.n, R, support):
        if solver in ("cholesky", "eigh"):
            return job.normal_equations(solver, ref_targets)
        sol = job.stable() if solver == "qr" else job.whitened(ref_targets)
    if sol.sensitivity is not None and sol.sensitivity > tolerance(dtype):
        warn_accuracy(f"sketched ridge: the formula's solution moves by about {sol.sensitivity:.2g} when "
                      "R K R^T moves by its float64 rounding (its smallest pivots are near that rounding: "
                      "a flat kernel, rows far from the others or a small lam); no float64 route evaluates "
                      "it more closely. A larger lam, a smaller sketch or a narrower kernel determines it.",
                      logger=_logger)
    return sol


def ridge_threads(n: int, R: SketchMatrix, support: Any) -> Any:
    """The BLAS threads of a sketched ridge's pass: :func:`small_work_threads` of its
    :func:`ridge_work`."""
    return small_work_threads(ridge_work(n, R, support))


def ridge_work(n: int, R: SketchMatrix, support: Any) -> float:
    """Multiply-adds of a sketched ridge's BLAS calls, roughly: ``n m^2`` for its sums and,
    for vector inputs (a 2-D array or sparse matrix of support points), ``n m' d`` for
    its kernel blocks (other samples: their kernel's cost is not known here)."""
    m, m1 = R.m, R.indices.size
    work = float(n) * m * m + float(m) ** 3
    shape = getattr(support, "shape", None)
    if shape is not None and len(shape) == 2:
        d = support.nnz / max(shape[0], 1) if sp.issparse(support) else shape[1]
        work += float(n) * m1 * d
    return work


class WhitenedSystem:
    """The ``lam``-independent part of the default sketched ridge, for a whole ``lam`` path.

    ``gamma(lam) = P_r L_11^-T w`` with ``(G + n lam I) w = B`` (:func:`sketched_ridge`,
    ``"auto"``); built by :func:`whitened_system` from one pass in float64 (kernel values
    and products: the path's small-``lam`` end is where float32 would drift).

    Parameters
    ----------
    G : ndarray of shape (r, r)
        ``Z^T Z`` (symmetric).
    B : ndarray of shape (r, width)
        ``Z^T T``.
    whitening : Whitening
        The whitening of ``K~``.
    features : SketchedFeatures
        The float64 features of the support.

    Attributes
    ----------
    G : ndarray (r, r)
        ``Z^T Z`` (symmetric).
    B : ndarray (r, width)
        ``Z^T T``.
    whitening : Whitening
    features : SketchedFeatures (float64) of the support
    """

    def __init__(self, G: np.ndarray, B: np.ndarray, whitening: Any, features: Any) -> None:
        self.G, self.B, self.whitening, self.features = G, B, whitening, features

    def coef(self, w: np.ndarray) -> np.ndarray:
        """Coefficients on the support samples (m', p) of whitened coefficients ``w`` (r, p)."""
        return self.features.R.apply_left_transpose(self.whitening.coefficients(w))


def whitened_system(kernel: Kernel, R: SketchMatrix, support: Any, parts: RowPartitions,
                    targets: Callable[[Any], np.ndarray] | None, width: int, rcond: float | None, chunk: int,
                    executor: Executor, ref_targets: np.ndarray | None = None,
                    which: str | int = "targets") -> "WhitenedSystem":
    """:class:`WhitenedSystem` of the sketched ridge (same arguments as :func:`sketched_ridge`).

    Always float64 kernel values: a kernel with ``dtype="float32"`` is used through its
    float64 copy, float32 samples are upcast (:class:`Float64Features`).

    Parameters
    ----------
    kernel : Kernel
        The input kernel.
    R : SketchMatrix of shape (m, n)
        The sketch.
    support : samples
        Prepared support samples ``X[R.indices]``.
    parts : RowPartitions
        Row partitions with an ``"inputs"`` column (the prepared ``X``).
    targets : callable or None
        ``chunk -> T_chunk`` (rows, width) applied to column ``which`` of ``parts``, or None
        for ``T = I_n``.
    width : int
        Number of target columns (``n`` for ``T = I_n``).
    rcond : float or None
        Relative pivot threshold of ``K~`` (whitened and stable routes; None: the rounding
        level, :func:`pivot_tolerance`) and threshold of the pseudo-inverse of ``G``
        (``"eigh"``, the indefinite fallback and the jitter of ``"cholesky"``; None:
        :data:`DEFAULT_RCOND`).
    chunk : int
        Rows per chunk.
    executor : Executor
        The executor running the passes over ``parts``.
    ref_targets : ndarray of shape (m', width), optional
        Targets at the support points; their column means centre ``T``.
    which : str or int, default="targets"
        The column of ``parts`` the targets are read from: its name or its position.
    """
    feats = Float64Features(float64_kernel(kernel), R.unscaled(), upcast_samples(support), np.float64,
                            DEFAULT_RCOND if rcond is None else rcond)
    job = RidgeJob(feats, parts, 0.0, targets, width, chunk, executor, which, time.perf_counter(), rcond)
    f = job.features64()
    with ridge_threads(parts.n, R, support):
        acc, wh, _ = job.sums(f, ref_targets)
    if acc is None:
        return WhitenedSystem(np.zeros((0, 0)), np.zeros((0, width)), wh, f)
    G, B = acc.result()
    check_finite_sums(G, B)
    return WhitenedSystem(G, B, wh, f)


def plain_system(kernel: Kernel, R: SketchMatrix, support: Any, parts: RowPartitions,
                 targets: Callable[[Any], np.ndarray] | None, width: int, rcond: float | None, chunk: int,
                 executor: Executor, dtype: DTypeLike = np.float64, ref_targets: np.ndarray | None = None,
                 which: str | int = "targets") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A^T A, A^T T, R K R^T)`` (float64; ``A^T A`` symmetric, its columns centred as in
    :func:`sketched_ridge`) of the plain normal equations, from the pass their explicit
    routes (``solver="cholesky"`` / ``"eigh"``) make: a ``lam`` path of those routes.

    Same arguments as :func:`sketched_ridge`; ``dtype``: of the kernel values and products.

    Parameters
    ----------
    kernel : Kernel
        The input kernel.
    R : SketchMatrix of shape (m, n)
        The sketch.
    support : samples
        Prepared support samples ``X[R.indices]``.
    parts : RowPartitions
        Row partitions with an ``"inputs"`` column (the prepared ``X``).
    targets : callable or None
        ``chunk -> T_chunk`` (rows, width) applied to column ``which`` of ``parts``, or None
        for ``T = I_n``.
    width : int
        Number of target columns (``n`` for ``T = I_n``).
    rcond : float or None
        Relative pivot threshold of ``K~`` (whitened and stable routes; None: the rounding
        level, :func:`pivot_tolerance`) and threshold of the pseudo-inverse of ``G``
        (``"eigh"``, the indefinite fallback and the jitter of ``"cholesky"``; None:
        :data:`DEFAULT_RCOND`).
    chunk : int
        Rows per chunk.
    executor : Executor
        The executor running the passes over ``parts``.
    dtype : dtype, default=numpy.float64
        Dtype of the kernel values and products.
    ref_targets : ndarray of shape (m', width), optional
        Targets at the support points; their column means centre ``T``.
    which : str or int, default="targets"
        The column of ``parts`` the targets are read from: its name or its position.
    """
    feats = SketchedFeatures(kernel, R, support, dtype, DEFAULT_RCOND if rcond is None else rcond)
    job = RidgeJob(feats, parts, 0.0, targets, width, chunk, executor, which, time.perf_counter(), rcond)
    with ridge_threads(parts.n, R, support):
        acc, Kt, _ = job.plain_sums(feats, ref_targets)
    G, AtT = acc.result()
    check_finite_sums(G, AtT)
    return G, AtT, Kt
