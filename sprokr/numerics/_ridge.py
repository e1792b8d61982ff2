"""Kernel ridge solves shared by every estimator (IOKR family, DSOKR's kernel surrogate, machines).

Objective ``1/n sum_i |g(x_i) - t_i|^2 + lam |g|^2`` for vector targets ``T`` (n x p):

* exact: ``g(x) = k_x^T (K + n lam I)^-1 T`` -- Cholesky, never an explicit inverse;
* sketched (``alpha = R^T gamma``, ``A = K R^T``):
  ``gamma = (A^T A + n lam R K R^T)^+ A^T T`` and ``g(x) = k_x^T R^T gamma``, solved by
  default in the whitened basis of ``R K R^T`` (:class:`Whitening`): ``Z^T Z`` and
  ``Z^T T`` of ``Z = K R^T P_r L_11^-T`` accumulated over row chunks by the executor
  (memory O(m^2 + chunk x m'), never n x n), ``R K R^T`` from the support points alone.
  See :func:`sketched_ridge` for the routes and the checks that choose between them.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
import scipy.linalg as sla
from scipy.linalg import get_blas_funcs

from ._crossprod import ShiftedCrossProducts, column_shift
from ._executor import ChunkTask
from ._features import KernelRows, SketchedFeatures
from ._linalg import (
    DEFAULT_RCOND,
    cholesky_factor_inplace,
    cholesky_factor_solve,
    matmul,
    psd_eigh,
    sym_norm1,
)
from ._checks import (
    float64_probe_estimate,
    Float64Features,
    float32_error_estimate,
    float64_kernel,
    tolerance,
    upcast,
    whitened_error_bound,
)
from ._qr import TallSkinnyQR, stacked_qr_apply_t, stacked_qr
from ._refine import KeptBlocks, ResidualTask, prediction_rounding, refine, sample_ratio
from ._whiten import Whitening
from ..utils import iter_chunks, take, take_slice

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import KernelLike as Kernel
    from ._sketch_matrix import SketchMatrix
    from ._executor import Executor, RowPartitions

__all__ = ["TargetRows", "WORK_DTYPE", "exact_ridge_factor", "sketched_ridge", "CrossProductTask", "QRTask", "RidgeSolution",
           "stable_ridge_solve", "WhitenedSystem", "whitened_system", "SOLVERS"]

logger = logging.getLogger("sprokr.numerics")

#: Precision of the solves and of the returned coefficients.  Kernels are often nearly flat
#: (a Gaussian with sigma^2 = 1e4 is ~0.8 everywhere) and with a small ridge the solution
#: depends on directions ~1e-10 below the largest one: a plain float32 ``A^T A`` costs
#: accuracy (Bibtex SISOKR F1 0.438 instead of 0.441).  The cross products may still run in
#: float32 because ``ShiftedCrossProducts`` double-centres the blocks first; the sums and
#: the m x m solve are float64.
WORK_DTYPE = np.dtype(np.float64)


def exact_ridge_factor(kernel: Kernel, parts: RowPartitions, Xp: Any, lam: float, chunk: int,
                       executor: Executor) -> tuple[np.ndarray, bool]:
    """Cholesky factor of ``K + n lam I`` (n x n), for ``scipy.linalg.cho_solve``.

    ``parts``: row partitions with the prepared inputs as column ``"inputs"`` (the Gram
    rows are computed by the executor); ``Xp``: all prepared inputs (the columns).
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
        raise ValueError(
            f"K + n lam I is not numerically positive definite (n lam = {n * lam:.3g}): the "
            f"kernel is too flat for this ridge, or not positive semi-definite; increase lam or "
            f"use a sketched model"
        ) from None


class TargetRows:
    """``ids -> table[ids]``: a pass's targets gathered by the distinct id of each sample
    (outputs repeat: their targets are computed once per distinct output).  A read-only
    gather, so a pass may fold its chunks in several threads (``thread_safe``)."""

    thread_safe = True

    def __init__(self, table: np.ndarray) -> None:
        self.table = table

    def __call__(self, ids: Any) -> np.ndarray:
        return self.table[np.asarray(ids, dtype=np.intp)]


class CrossProductTask(ChunkTask):
    """The pass of a sketched ridge: ``A^T A`` and ``A^T T`` of ``A = K R^T`` per chunk.

    Chunks are ``(X_chunk, ...)``: ``A = K R^T`` from ``X_chunk`` and
    ``T = targets(chunks[which])`` (``T = I_n`` when ``identity_targets``; ``which``: the
    position of the targets' column, :meth:`RowPartitions.column`).
    With ``whiten`` (a :class:`Whitening` of ``K~``) the sums are those of the whitened
    ``Z = A P_r L_11^-T`` instead (:class:`ShiftedCrossProducts`).
    With ``skip`` (sorted row numbers) those rows are left out (their contribution is
    added from rows computed before the pass: the sketch's support, whose rows of ``A``
    give ``K~``).  With ``gather`` (sorted row numbers, e.g. the sketch's support) the rows of ``A`` at
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
                 which: int = 1, whiten: Any = None, dtype: DTypeLike | None = None, skip: ArrayLike | None = None,
                 keep: Any = None) -> None:
        if gather is not None and skip is not None:  # the gathered positions assume every row is kept
            raise ValueError("CrossProductTask: gather and skip cannot be combined")
        self.features, self.targets, self.width = features, targets, width
        self.c, self.d, self.identity_targets = c, d, identity_targets
        self.gather = None if gather is None else np.asarray(gather, dtype=np.int64)
        self.skip = None if skip is None else np.asarray(skip, dtype=np.int64)
        self.which, self.whiten = which, whiten
        self.dtype = features.dtype if dtype is None else np.dtype(dtype)  # of the products
        self.keep = keep  # KeptBlocks (in this process only): the float64 rows of A and T

    def start(self) -> Any:
        acc = ShiftedCrossProducts(self.features.m, self.width, self.dtype, self.c, self.d,
                                   self.identity_targets, whiten=self.whiten)
        rows = None if self.gather is None else np.zeros((self.gather.size, self.features.m), self.features.dtype)
        return acc, rows

    def add(self, partial: Any, rows: slice, *chunks: Any) -> Any:
        acc, got = partial
        if self.skip is not None:
            lo, hi = np.searchsorted(self.skip, [rows.start, rows.stop])
            if hi > lo:
                keep = np.ones(rows.stop - rows.start, dtype=bool)
                keep[self.skip[lo:hi] - rows.start] = False
                keep = np.flatnonzero(keep)
                if keep.size == 0:
                    return acc, got
                chunks = tuple(take(c, keep) for c in chunks)
                rows = keep + rows.start  # global row numbers
        A = self.features.block(chunks[0])
        if got is not None:  # before A is centred in place
            lo, hi = np.searchsorted(self.gather, [rows.start, rows.stop])
            got[lo:hi] = A[self.gather[lo:hi] - rows.start]
        T = None if self.identity_targets else self.targets(chunks[self.which])
        if self.keep is not None:  # before A is centred in place
            self.keep.put(rows, A, T)
        acc.add(rows, A, T, overwrite=True)
        return acc, got

    @property
    def thread_safe(self) -> bool:  # type: ignore[override]
        """Chunks may be folded in parallel threads when the kernel blocks and the targets
        can be computed concurrently (the kept blocks are written by disjoint rows) -- not
        for the whitened pass, whose per-chunk triangular solve holds the GIL (scipy's
        BLAS wrappers): its threads would wait on each other with one BLAS thread each
        (Bibtex SISOKR's pass: 0.35 s -> 0.46 s)."""
        if self.whiten is not None:
            return False
        t = self.targets
        targets_ok = t is None or bool(getattr(t, "thread_safe", False)) or \
            bool(getattr(getattr(t, "__self__", None), "thread_safe", False))
        return self.features.thread_safe and targets_ok

    def merge(self, a: Any, b: Any) -> Any:
        return a[0].merge(b[0]), None if a[1] is None else np.add(a[1], b[1], out=a[1])

    def __getstate__(self):  # the kept blocks live in this process: never shipped
        state = dict(self.__dict__)
        state["keep"] = None
        return state


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
    method : {"whitened", "cholesky", "eigh", "qr"}
        The route that produced ``coef``.
    error_estimate : float or None
        The relative error estimate of the solution (in the predictions): after iterative
        refinement the measured estimate of :func:`sprokr.numerics.refine`; of the whitened
        normal equations :func:`whitened_error_bound` (plus the measured
        :func:`float32_error_estimate` for float32); of the plain ones under ``"auto"`` the
        measured :meth:`_RidgeJob._measured_plain`; under an explicit ``"cholesky"`` /
        ``"eigh"`` the measured float64 residual probe (:meth:`_RidgeJob.probe_estimate`,
        a warning is logged when it exceeds the tolerance); None for a ``"qr"`` solve
        chosen directly.
    rank : int or None
        Numerical rank of ``R K R^T`` (whitened and stable routes).
    precision : numpy dtype
        Precision of the kernel values and O(n m^2) products of the route taken.
    checks : list of (precision name, error estimate)
        Every checked solve tried (``"plain float64"``, ``"float32"``, ``"whitened refined"``,
        ...), in order (the rejected ones first).
    refinement_steps : int
        Iterative refinement steps applied to ``coef`` (float64 residuals; 0: none).
    """

    def __init__(self, coef: np.ndarray, support: Any, features: Any, times: dict[str, float], method: str,
                 error_estimate: float | None = None, rank: int | None = None, precision: str | None = None,
                 checks: Any = (), refinement_steps: int = 0) -> None:
        self.coef, self.support, self.features, self.times = coef, support, features, times
        self.method, self.error_estimate, self.rank = method, error_estimate, rank
        self.precision = np.dtype(np.float64 if precision is None else precision)
        self.checks = list(checks)
        self.refinement_steps = int(refinement_steps)

    def fallback_message(self, dtype: DTypeLike) -> str | None:
        """The warning an estimator logs when ``dtype`` was asked for but the solution needed
        float64 kernel values (None when it did not): the estimator then adopts
        ``features.kernel``, ``support`` and ``precision``."""
        dtype = np.dtype(dtype)
        if self.precision == dtype:
            return None
        est = dict(self.checks).get(dtype.name, np.nan)
        return (f"dtype={dtype.name!r} would change this solution by more than {tolerance(dtype):.0e} "
                f"(estimate {est:.2g}): fitted and predicting with float64 kernel values")


SOLVERS = ("auto", "whitened", "mixed", "cholesky", "qr", "eigh")

#: rows replayed by the measured checks (training rows spread over the data; support rows
#: whose column means centre the plain normal equations' blocks), and the target probes
_SAMPLE_ROWS = 256
_PROBES = 8
#: "auto" tries the plain normal equations first when K~'s pivoted Cholesky has full rank and
#: its pivots span at most this squared ratio (a flatter K~ makes them fail their check)
PLAIN_FIRST_PIVOT_RATIO = 1e-8
#: a float32 request whose kernel values perturb K~'s whitened basis by more than this
#: (measured on the support rows before any pass, :meth:`_RidgeJob.early_float32`) is
#: solved with float64 kernel values from the start: its float32 pass would be rejected
#: and could not be refined
EARLY_FLOAT32_MAX = 1e-2
#: a refinement stops after its first step when that correction (the first solve's error,
#: a lower bound of the contraction) exceeds this: the float64 pass follows at once
MIXED_MAX_FIRST_ERROR = 1e-2
#: extra safety factor of the plain route's measured estimate: G's conditioning amplifies
#: what the 256-row sample does not see (calibrated on a 648-case sweep and the reference
#: matrix, tests/test_float32_policy.py: worst accepted error 0.3x the tolerance)
PLAIN_SAFETY = 3.75


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
    In the whitened basis ``gamma = P_r L_11^-T w`` (:class:`Whitening`) the penalty is
    ``|w|^2`` and ``|A gamma - T|^2 + nlam |w|^2`` is the least-squares problem
    ``[Z; sqrt(nlam) I] w ~ [Q^T T; 0]`` with ``Z = R_A P_r L_11^-T`` (m x r), solved by
    QR (``tpqrt``).  Its condition number is ``sqrt(1 + |Z|^2 / nlam)``, not the square of
    ``A``'s.  With ``semi_normal`` the right-hand side is ``L_11^-1 P_r^T A^T T`` and the
    triangle of that QR is applied twice (the semi-normal equations: ``Q^T T`` for
    ``T = I_n`` would cost O(m n^2)).
    """
    wh = Whitening(Kt, rcond)
    r, p = wh.rank, rhs.shape[1]
    if r == 0:
        return np.zeros((wh.m, p)), 0
    Zt = wh.apply_inverse(RA.T)  # Z^T = L11^-1 (R_A P_r)^T   (r x m)
    top = np.asfortranarray(np.sqrt(nlam) * np.eye(r))
    Rs, V, Tq = stacked_qr(top, np.asfortranarray(Zt.T), 0)
    Rs = np.triu(Rs)
    if semi_normal:
        y = wh.apply_inverse(rhs)  # B^T A^T T
        y = sla.solve_triangular(Rs, y, trans="T", check_finite=False)
    else:
        y = stacked_qr_apply_t(0, V, Tq, np.zeros((r, p), order="F"), np.array(rhs, dtype=np.float64, order="F"))
    w = sla.solve_triangular(Rs, y, check_finite=False)
    return wh.coefficients(w), int(r)


def sketched_ridge(kernel: Kernel, R: SketchMatrix, support: Any, parts: RowPartitions, lam: float,
                   targets: Callable[[Any], np.ndarray] | None, width: int, rcond: float | None, chunk: int,
                   executor: Executor, solver: str = "auto", dtype: DTypeLike = WORK_DTYPE,
                   ref_targets: np.ndarray | None = None, which: str | int = "targets") -> RidgeSolution:
    """Coefficients ``W^T gamma`` on the support points of the sketched ridge.

    ``gamma`` minimises ``|A gamma - T|^2 + n lam gamma^T K~ gamma`` with ``A = K R^T``,
    ``K~ = R K R^T``.  Routes (``docs/architecture.md``, "Solvers"):

    * ``"auto"`` (default): the plain normal equations when ``K~``'s pivoted Cholesky has
      full rank with pivots spanning at most :data:`PLAIN_FIRST_PIVOT_RATIO` and their
      measured estimate (:meth:`_RidgeJob._measured_plain`, times :data:`PLAIN_SAFETY`) is
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
      With targets given and few (``12 width <= m``: two residuals then cost a fraction
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
    * ``"eigh"``: the same plain normal equations, solved by that pseudo-inverse;
    * ``"qr"``: the stable route: tall-skinny QR of ``A`` over row chunks
      (:class:`QRTask`, float64) and the least-squares solve of :func:`stable_ridge_solve`.

    Parameters
    ----------
    kernel : Kernel
    R : SketchMatrix (m, n)
    support : prepared support samples ``X[R.indices]``
    parts : RowPartitions with an ``"inputs"`` column (the prepared ``X``)
    lam : float
    targets : callable ``chunk -> T_chunk`` (rows, width) applied to column ``which`` of
        ``parts`` (its name, default ``"targets"``), or None for ``T = I_n``
    width : int
        Number of target columns (``n`` for ``T = I_n``).
    rcond : float or None
        Relative pivot threshold of ``K~`` (whitened and stable routes; None: the rounding
        level, :func:`pivot_tolerance`) and threshold of the pseudo-inverse of ``G``
        (``"eigh"``, the indefinite fallback and the jitter of ``"cholesky"``; None:
        :data:`DEFAULT_RCOND`).
    chunk : rows per chunk
    executor : Executor
    solver : {"auto", "whitened", "mixed", "cholesky", "qr", "eigh"}
    dtype : dtype of the O(n m^2) products (on double-centred blocks); sums, solves and
        the stable route are float64
    ref_targets : ndarray (m', width), optional
        Targets at the support points; their column means centre ``T``.

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
    job = _RidgeJob(feats, parts, parts.n * lam, targets, width, chunk, executor, which, t0, rcond,
                    try_plain=solver == "auto", mixed={"auto": None, "whitened": False, "mixed": True}.get(solver))
    if solver in ("cholesky", "eigh"):
        return job.normal_equations(solver, ref_targets)
    if solver == "qr":
        return job.stable()
    return job.whitened(ref_targets)


class WhitenedSystem:
    """The ``lam``-independent part of the default sketched ridge, for a whole ``lam`` path.

    ``gamma(lam) = P_r L_11^-T w`` with ``(G + n lam I) w = B`` (:func:`sketched_ridge`,
    ``"auto"``); built by :func:`whitened_system` from one pass in float64 (kernel values
    and products: the path's small-``lam`` end is where float32 would drift).

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
    """
    feats = Float64Features(float64_kernel(kernel), R.unscaled(), upcast(support), np.float64,
                            DEFAULT_RCOND if rcond is None else rcond)
    job = _RidgeJob(feats, parts, 0.0, targets, width, chunk, executor, which, time.perf_counter(), rcond)
    f = job.features64()
    acc, wh, _ = job.sums(f, ref_targets)
    if acc is None:
        return WhitenedSystem(np.zeros((0, 0)), np.zeros((0, width)), wh, f)
    G, B = acc.result()
    _check_finite(G, B)
    return WhitenedSystem(G, B, wh, f)


class _WhitenedSolution:
    """``w = (F F^T)^-1 Z^T T`` kept as ``y = F^-1 Z^T T`` (one triangular solve), the
    coefficients ``gamma = P_r L_11^-T F^-T y`` and the refinement's preconditioner.

    ``F`` and ``L_11`` are lower triangular (read in their lower triangle).  Many columns
    (``T = I_n``: n of them) go through the product ``L_11 F`` (one ``trmm``, r^3 flops,
    formed once for both uses): 2 instead of 3 or 4 triangular solves of r x r by r x width.
    """

    def __init__(self, F, ZtT, wh):
        self.F, self.wh = F, wh
        self.y = sla.solve_triangular(F, ZtT, lower=True, check_finite=False)
        self._LF = None

    def w(self, cols):
        """``w`` for a few columns: indices, or a (width x k) matrix of target combinations."""
        y = matmul(self.y, cols) if isinstance(cols, np.ndarray) and cols.ndim == 2 else self.y[:, cols]
        return sla.solve_triangular(self.F, y, lower=True, trans="T", check_finite=False)

    def _product(self):
        """``L_11 F`` (lower triangular), formed on first use."""
        if self._LF is None:
            trmm = get_blas_funcs("trmm", dtype=np.float64)
            self._LF = trmm(1.0, self.wh.L, np.array(np.tril(self.F), order="F"), side=0, lower=1)
        return self._LF

    def _scatter(self, y):
        out = np.zeros((self.wh.m,) + y.shape[1:])
        out[self.wh.sel] = y
        return out

    def coefficients(self):
        wh, r = self.wh, self.wh.rank
        if 3 * self.y.shape[1] <= r:
            return wh.coefficients(sla.solve_triangular(self.F, self.y, lower=True, trans="T", check_finite=False))
        return self._scatter(sla.solve_triangular(self._product(), self.y, lower=True, trans="T", check_finite=False))

    def preconditioner(self, width):
        """``r -> M^-1 r`` (m x width) with ``M^-1 = P_r L^-T F^-T F^-1 L^-1 P_r^T``.

        Few targets (``4 width < r``: Bibtex SISOKR, 200 of 2250): four triangular solves
        per step (``4 r^2 width`` flops); many: two solves with ``L_11 F`` -- cheaper once a
        refinement's two or three steps cost more than forming that product.
        """
        wh, F = self.wh, self.F

        def solve(A, y, trans="N"):
            return sla.solve_triangular(A, y, lower=True, trans=trans, check_finite=False, overwrite_b=True)

        def rows(r):  # the pivoted rows: a new array (fancy indexing), solved in place
            return np.asarray(r, dtype=np.float64)[wh.sel]

        if 4 * width < wh.rank:
            return lambda r: self._scatter(solve(wh.L, solve(F, solve(F, solve(wh.L, rows(r))), "T"), "T"))
        LF = self._product()
        return lambda r: self._scatter(solve(LF, solve(LF, rows(r)), "T"))


class _RidgeJob:
    """One sketched ridge problem and the routes that solve it (see :func:`sketched_ridge`)."""

    def __init__(self, feats, parts, nlam, targets, width, chunk, executor, which, t0, rcond, try_plain=False,
                 mixed=None):
        self.feats, self.parts, self.nlam = feats, parts, nlam
        self.try_plain = try_plain
        self.mixed_choice = mixed  # None: when it pays (mixed_ok); True: whenever targets are given; False: never
        self.targets, self.width, self.identity = targets, width, targets is None
        self.chunk, self.executor = chunk, executor
        self.which = parts.column(which)  # the targets' column, as the tasks index the chunks
        self.t0, self.times, self.rcond = t0, {}, rcond
        self._f64 = self._rows = self._Kt64 = None
        self.checks = []
        self.steps = 0  # refinement steps of the solution returned

    def features64(self):
        """The features with float64 kernel values and products (cached).

        Vector kernels compute in their inputs' precision: the support is upcast, so every
        block against it is float64 whatever the chunks' dtype.
        """
        f = self.feats
        if self._f64 is None:
            if f.dtype == np.float64:
                self._f64 = f
            else:
                self._f64 = Float64Features(float64_kernel(f.kernel), f.R, upcast(f.Z_sel), np.float64, f.rcond)
        return self._f64

    def _solution(self, gamma, feats, method, est=None, rank=None):
        coef = feats.R.apply_left_transpose(gamma)
        return RidgeSolution(coef, feats.Z_sel, feats, self.times, method, est, rank, feats.dtype, self.checks,
                             self.steps)

    # ---- iterative refinement (float64 residuals of the un-squared problem, _refine.py)
    def mixed_ok(self):
        """Refinement pays off: targets given (not ``I_n``) and few next to the m columns.
        Two steps cost ``2 (2 n m p + 2 m^2 p)`` float64 multiply-adds against the ``n m^2 / 2``
        saved by float32 products: measured on Bibtex SISOKR (p = 200, m = 2250, p = m / 11)
        the refined route cost what the whitened float64 pass costs or more, hence ``12 p <= m``."""
        if self.identity or self.mixed_choice is False:
            return False
        return self.mixed_choice or 12 * self.width <= self.feats.m

    def refine_ok(self):
        """Refining a *rejected* solution pays off (``4 p <= m``): the alternative is one or
        two new ``n m^2`` passes, not the float32 products' saving."""
        if self.identity or self.mixed_choice is False:
            return False
        return self.mixed_choice or 4 * self.width <= self.feats.m

    def _keeper(self, f):
        """:class:`KeptBlocks` for the float64 rows of a pass when they fit (this process only)."""
        n, m = self.parts.n, f.m
        if f.dtype == np.float64 and self.executor.in_process and not self.identity and KeptBlocks.fits(n, m, self.width):
            return KeptBlocks(n, m, self.width)
        return None

    def Kt64(self):
        """``K~ = R K R^T`` from float64 kernel values (cached)."""
        if self._Kt64 is None:
            self._Kt64 = _sandwich(self.features64(), self.features64().support_rows())
        return self._Kt64

    def residual(self, keep=None, probes=None, combine=None):
        """``gamma -> A^T (T - A gamma) - n lam K~ gamma`` in float64 (kept blocks or a pass).

        ``probes`` (n x k): targets ``omega`` instead of ``T = I_n``; ``combine`` (width x k):
        targets ``T omega``."""
        Kt = self.Kt64()

        def res(gamma):
            t = time.perf_counter()
            if keep is not None:
                r = keep.residual(gamma)
            else:
                targets = self.targets if combine is None else _Combined(self.targets, combine)
                task = ResidualTask(self.features64(), targets, gamma, which=self.which, probes=probes)
                r = self.executor.map_reduce(self.parts, task, self.chunk)
            r -= self.nlam * matmul(Kt, gamma)
            self.times["refine"] = self.times.get("refine", 0.0) + time.perf_counter() - t
            return r
        return res

    def refined(self, gamma, precond, tol, rho_bound, keep, label):
        """:func:`refine` ``gamma`` (the solve of a cheap matrix, ``precond`` its solve)."""
        _, _, S = self._sample()

        def log(k, d, est):
            logger.info("sketched ridge: refinement step %d of the %s solution: correction %.2g, error "
                        "estimate %.2g", k, label, d, est)
        gamma, est, steps = refine(gamma, self.residual(keep), precond, S, tol, rho_bound, on_step=log,
                                   max_first=MIXED_MAX_FIRST_ERROR)
        self.steps = steps
        self.checks.append((f"{label} refined", est))
        return gamma, est

    def mixed(self, ref_targets, pre):
        """The whitened normal equations with float32 products, refined in float64.

        One pass in float32 (``trsm`` and ``syrk``; kernel values in the requested
        precision), then refinement steps with float64 residuals until the estimate is
        within the tolerance.  A float32 request keeps its solution when the measured
        float32 check passes (no refinement); otherwise the refined coefficients are
        float64-accurate, and the model predicts in float32 when the rounding of its
        predictions allows it (:func:`prediction_rounding`), else in float64.  None when
        the refinement does not converge (the caller falls back).
        """
        f = self.feats
        tol = tolerance(f.dtype)
        keep = self._keeper(f)
        t1 = time.perf_counter()
        acc, wh, _ = self.sums(f, ref_targets, pre, dtype=np.float32, keep=keep)
        if wh.rank == 0:
            return self._solution(np.zeros((wh.m, self.width)), f, "whitened", 0.0, 0)
        t3 = time.perf_counter()
        G, ZtT = acc.result(lower_only=True)
        _check_finite(G, ZtT)
        z2, zc2 = float(np.trace(G)), float(np.trace(acc.AtA))
        G.flat[:: wh.rank + 1] += self.nlam
        try:
            F = cholesky_factor_inplace(G)
        except np.linalg.LinAlgError:
            return None
        sol = _WhitenedSolution(F, ZtT, wh)
        gamma = sol.coefficients()
        self.times.update({"pass_mixed": t3 - t1, "solve_mixed": time.perf_counter() - t3})
        rho_b = None
        if f.dtype == np.float32:  # the measured float32 check (256 sample rows) first: no residual pass
            e32 = whitened_error_bound(0.0, z2, self.nlam, np.float64) + self._measured(acc, sol)
            self.checks.append(("float32", e32))
            if e32 <= tol:
                return self._solution(gamma, f, "whitened", e32, wh.rank)
        else:  # float64 kernel values: the formed matrix's float32 rounding bounds the contraction
            rho_b = whitened_error_bound(zc2, z2, self.nlam, np.float32)

        precond = sol.preconditioner(self.width)
        gamma, est = self.refined(gamma, precond, tol, rho_b, keep, "whitened")
        if not est <= tol:
            logger.info("sketched ridge: refinement of the whitened solution did not converge (estimate %.2g): "
                        "float64 pass", est)
            return None
        if f.dtype == np.float32:  # coefficients from float64 residuals: predict in float32 if it rounds little
            _, _, S = self._sample()
            e_pred = prediction_rounding(S, gamma, np.float32)
            self.checks.append(("float32 predictions", est + e_pred))
            if est + e_pred > tol:
                return self._solution(gamma, self.features64(), "whitened", est, wh.rank)
            est += e_pred
        return self._solution(gamma, f, "whitened", est, wh.rank)

    def _shift(self, A_ref, ref_targets, dtype):
        c = column_shift(A_ref, dtype)
        d = None
        if not self.identity and ref_targets is not None:
            d = np.asarray(ref_targets, dtype=np.float64).mean(axis=0)
        return c, d

    # ---- the whitened normal equations (default)
    def whitened(self, ref_targets):
        feats, n = self.feats, self.parts.n
        tol = tolerance(feats.dtype)
        # a-priori: |Z|_F^2 <= trace(K) ~ n mean k(x, x); skip a pass whose check must fail
        z2_max = n * float(np.mean(np.asarray(feats.kernel.diag(feats.Z_sel), dtype=np.float64)))
        if whitened_error_bound(0.0, z2_max, self.nlam, np.float64) > tol:
            logger.info("sketched ridge: lam too small for the whitened normal equations (bound %.2g > %.0e): "
                        "stable QR pass", whitened_error_bound(0.0, z2_max, self.nlam, np.float64), tol)
            return self.stable()
        est, pre = None, None
        if feats.dtype == np.float32:
            e = self.early_float32()
            self.checks.append(("float32", e))
            if e > EARLY_FLOAT32_MAX:
                logger.info("sketched ridge: float32 kernel values perturb the whitened basis of K~ by %.2g "
                            "(support rows): float64 kernel values from the start", e)
                feats = self.feats = self.features64()
                tol = tolerance(np.float32)  # the request's tolerance
        if self.try_plain:
            t1 = time.perf_counter()
            A_sup = feats.support_rows()
            Kt = _sandwich(feats, A_sup)
            if feats.dtype == np.float64:
                self._Kt64 = Kt
            wh = Whitening(Kt, self.rcond)
            pre = (A_sup, wh)
            self.times["whitening"] = time.perf_counter() - t1
            if _plain_promising(wh):
                sol = self.normal_equations("cholesky", ref_targets, measured=True)
                if sol is not None and sol.error_estimate <= tol:
                    return sol
                logger.info("sketched ridge: plain normal equations rejected (%s)",
                            "not positive definite" if sol is None else f"error estimate {sol.error_estimate:.2g}")
                if sol is not None and self.refine_ok():  # refine them instead of a new n m^2 pass
                    sol = self.refine_plain(sol, tol)
                    if sol is not None:
                        return sol
        passes = (feats, self.features64())
        # float32 requests: the float32 pass as before, but refined rather than redone when rejected
        if self.mixed_ok() or (feats.dtype == np.float32 and self.refine_ok()):
            sol = self.mixed(ref_targets, pre)
            if sol is not None:
                return sol
            passes = (self.features64(),)  # the requested precision's pass was made
        for f in dict.fromkeys(passes):
            t1 = time.perf_counter()
            acc, wh, A_sup = self.sums(f, ref_targets, pre if f is feats else None)
            if wh.rank == 0:  # K~ = 0: every function in the span is zero
                return self._solution(np.zeros((wh.m, self.width)), f, "whitened", 0.0, 0)
            t3 = time.perf_counter()
            G, ZtT = acc.result(lower_only=True)
            _check_finite(G, ZtT)
            z2 = float(np.trace(G))
            est = whitened_error_bound(float(np.trace(acc.AtA)), z2, self.nlam, f.dtype)
            G.flat[:: wh.rank + 1] += self.nlam
            try:
                F = cholesky_factor_inplace(G)  # Z^T Z + n lam I = F F^T
            except np.linalg.LinAlgError:  # only if rounding swamped n lam
                F, est = None, np.inf
            sol = None if F is None else _WhitenedSolution(F, ZtT, wh)
            if sol is not None and f.dtype == np.float32:
                # the bound covers the float32 products only, not the float32 kernel values
                # (on a flat kernel they alone lose the answer): measured on a sample
                est = whitened_error_bound(0.0, z2, self.nlam, np.float64) + self._measured(acc, sol)
            name = f.dtype.name
            self.checks.append((name, est))
            gamma = sol.coefficients() if est <= tol else None
            self.times.update({f"pass_{name}": t3 - t1, f"solve_{name}": time.perf_counter() - t3})
            if gamma is not None:
                return self._solution(gamma, f, "whitened", est, wh.rank)
            logger.info("sketched ridge: whitened normal equations with %s kernel values and products: error "
                        "estimate %.2g > %.0e", name, est, tol)
        return self.stable(est)

    def sums(self, f, ref_targets, pre=None, dtype=None, keep=None):
        """``(acc, whitening, A_sup)``: the whitened sums of features ``f`` in one pass.

        ``A_sup = (K R^T)[support]`` gives ``K~`` (whitening, before the pass), the column
        shift and the support rows' contributions (the pass skips those rows when their
        targets are known).  ``acc`` is None when ``K~ = 0``.  ``pre``: ``(A_sup, whitening)``
        already computed.  ``dtype``: of the products (default: ``f``'s); ``keep``: a
        :class:`KeptBlocks` filled with the float64 rows of ``A`` and ``T``.
        """
        if pre is None:
            A_sup = f.support_rows()
            Kt = _sandwich(f, A_sup)
            if f.dtype == np.float64 and f is self.features64():
                self._Kt64 = Kt
            wh = Whitening(Kt, self.rcond)
        else:
            A_sup, wh = pre
        if wh.rank == 0:
            return None, wh, A_sup
        dtype = f.dtype if dtype is None else np.dtype(dtype)
        c, d = self._shift(A_sup, ref_targets, dtype)
        known = self.identity or ref_targets is not None
        task = CrossProductTask(f, self.targets, self.width, c, d, self.identity, which=self.which, whiten=wh,
                                skip=f.R.indices if known else None, dtype=dtype, keep=keep)
        acc, _ = self.executor.map_reduce(self.parts, task, self.chunk)
        if keep is not None and known:  # the skipped support rows
            keep.put(f.R.indices, A_sup, np.asarray(ref_targets, dtype=np.float64))
        if known:  # sub-sampling: the support rows of A are K~, whitened by its own factor
            Z = wh.own_rows() if f.R.scale is not None else None
            acc.add(f.R.indices, A_sup, None if self.identity else np.asarray(ref_targets, dtype=np.float64), Z=Z,
                    overwrite_z=True)
        return acc, wh, A_sup

    def _sample(self):
        """``(idx, A_32, A_64)``: up to 256 training rows spread over the data and their rows
        of ``A`` in the requested precision and in float64 (computed once per job).

        Not the sketch's support: its rows lie in the span of ``K~``'s factor, so their
        float32 triangular solves are accurate, while a general row's components along
        ``K~``'s smallest pivots carry float32 noise that the solve amplifies -- the error
        the checks must see.
        """
        if self._rows is None:
            n = self.parts.n
            idx = _spread(n, _SAMPLE_ROWS)
            Xs = self.executor.take_rows(self.parts, idx, which="inputs")
            A32 = self.feats.block(Xs)
            f64 = self.features64()
            A64 = A32 if f64.kernel is self.feats.kernel and A32.dtype == np.float64 else f64.block(Xs)
            self._rows = (idx, A32, A64)
        return self._rows

    def _probe_columns(self, idx):
        """Target columns probed: a few sample rows' own columns (``T = I_n``) or the first few."""
        if self.identity:
            return idx[_spread(idx.size, _PROBES)]
        return np.arange(min(self.width, _PROBES))

    def _measured_plain(self, acc, L, gamma, G_norm):
        """Error estimate of a plain normal-equations solution ``G gamma = A^T T``: the measured
        float32 part (:meth:`_measured`, float32 products only) plus the float64 rounding of
        the formed ``G`` probed at random (:func:`float64_probe_estimate`, scale
        ``eps_64 (|A_c|_F^2 + |G|_1)``), times :data:`PLAIN_SAFETY`."""
        est = self._measured(acc, _PlainSolution(L, gamma)) if acc.dtype == np.float32 else 0.0
        idx, _, A64 = self._sample()
        scale = np.finfo(np.float64).eps * (float(np.trace(acc.AtA)) + G_norm)
        return PLAIN_SAFETY * (est + float64_probe_estimate(L, A64, gamma[:, self._probe_columns(idx)], scale))

    def _measured(self, acc, sol):
        """:func:`float32_error_estimate` on the sample rows (:meth:`_sample`) and a few target columns."""
        idx, A32, A64 = self._sample()
        n = self.parts.n
        if self.identity:  # T = I_n: the columns of a few sample rows, e_j (Z^T e_j = z_j: one row's error)
            probe = _spread(idx.size, _PROBES)
            T_rows = np.eye(idx.size)[:, probe]
            return float32_error_estimate(acc, A32, A64, T_rows, sol.F, sol.w(idx[probe]),
                                          n, self.nlam, unit_targets=True)
        T = np.asarray(self.targets(self.executor.take_rows(self.parts, idx, which=self.which)), dtype=np.float64)
        rng = np.random.default_rng(0)
        Om = np.eye(self.width) if self.width <= _PROBES else rng.standard_normal((self.width, _PROBES))
        return float32_error_estimate(acc, A32, A64, T @ Om, sol.F, sol.w(Om), n, self.nlam)

    # ---- the plain normal equations (opt-in)
    def normal_equations(self, solver, ref_targets, measured=False):
        """The plain normal equations (``"cholesky"`` / ``"eigh"``).  ``measured`` ("auto"
        trying them first): no jitter, a Cholesky failure returns None, and the error
        estimate is measured (:meth:`_measured_plain`) instead of bounded."""
        feats, R, dtype = self.feats, self.feats.R, self.feats.dtype
        # the centring shift, fixed before the pass: column means of A at (up to 256) support rows
        ref = _spread(R.indices.size, _SAMPLE_ROWS)
        c, d = self._shift(feats.block(take(feats.Z_sel, ref)), None if ref_targets is None
                           else np.asarray(ref_targets)[ref], dtype)
        keep = self._keeper(feats) if measured and self.refine_ok() else None
        task = CrossProductTask(feats, self.targets, self.width, c, d, self.identity, gather=R.indices,
                                which=self.which, keep=keep)
        t1 = time.perf_counter()
        acc, A_sel = self.executor.map_reduce(self.parts, task, self.chunk)
        t2 = time.perf_counter()
        # disjoint phases: the support time excludes a whitening already timed ("auto")
        self.times.update({"support": t1 - self.t0 - self.times.get("whitening", 0.0), "pass": t2 - t1})
        Kt = _sandwich(feats, A_sel)
        ridge = self.nlam * 0.5 * (Kt + Kt.T)
        G, AtT = acc.result(lower_only=True, plus=ridge)
        _check_finite(G, AtT)
        rc = DEFAULT_RCOND if self.rcond is None else self.rcond
        est = None
        if measured:
            G_norm = sym_norm1(G, lower_only=True)
            try:
                L = cholesky_factor_inplace(G)  # nothing added: a failure rejects the route
            except np.linalg.LinAlgError:
                return None
            gamma = cholesky_factor_solve(L, AtT)
            est = self._measured_plain(acc, L, gamma, G_norm)
            self.checks.append((f"plain {np.dtype(dtype).name}", est))
            self.times["solve"] = time.perf_counter() - t2
            self._plain = (L, gamma, keep)
            return self._solution(gamma, feats, "cholesky", est)
        if solver == "eigh":
            U, ev = psd_eigh(G, rc, lower_only=True)
            gamma = matmul(U, matmul(U.T, AtT) / ev[:, None])

            def precond(r):
                return matmul(U, matmul(U.T, r) / ev[:, None])
        else:
            # the explicit jitter: rcond * mean(diag G) on the diagonal (a relative ridge of
            # 1e-10 by default) keeps the factorisation of a numerically singular G
            G.flat[:: G.shape[0] + 1] += rc * float(np.mean(G.diagonal()))
            try:
                L = cholesky_factor_inplace(G)  # G is overwritten
            except np.linalg.LinAlgError:
                logger.warning("sketched ridge: A^T A + n lam R K R^T is numerically indefinite; solved "
                               "by its eigendecomposition pseudo-inverse (use solver='auto' or 'qr')")
                G = acc.result(lower_only=True, plus=ridge)[0]
                U, ev = psd_eigh(G, rc, lower_only=True)

                def precond(r):
                    return matmul(U, matmul(U.T, r) / ev[:, None])
                gamma = precond(AtT)
            else:
                def precond(r):
                    return cholesky_factor_solve(L, r)
                gamma = precond(AtT)
        t3 = time.perf_counter()
        self.times["solve"] = t3 - t2
        # measured: a float64 residual solved by the route's matrix (sees float32 kernel values
        # and products) and the float64 rounding of the formed G probed at random (sees what
        # that matrix cannot resolve: its own rounding, amplified by its conditioning)
        est = self.probe_estimate(gamma, precond)
        self.times["check"] = time.perf_counter() - t3
        self.checks.append((solver, est))
        tol = tolerance(dtype)
        if not est <= tol:
            logger.warning("sketched ridge: solver=%r changes this solution by about %.2g (measured estimate, "
                           "relative; more than %.0e): use solver='auto' for an accurate solution", solver, est, tol)
        return self._solution(gamma, feats, solver, est)

    def early_float32(self):
        """Before any pass: how much float32 kernel values perturb ``K~`` in its float64
        whitened basis, ``|L^-1 P^T (K~_32 - K~_64) P L^-T|_2`` probed by 8 random vectors
        (support rows only: O(m'^2) kernel values and O(8 m^2)).  The whitened problem's
        solution moves by about that much relatively; far above the float32 tolerance no
        float32 pass (nor its refinement) can succeed (rf1, sigma^2 = 1e4: 0.87; Bibtex
        3.6e-4; the scale data 4.5e-6)."""
        K64 = self.Kt64()
        K32 = _sandwich(self.feats, self.feats.support_rows())
        wh = Whitening(K64, self.rcond)
        if wh.rank == 0:
            return 0.0
        D = (K32 - K64)[np.ix_(wh.sel, wh.sel)]
        V = np.random.default_rng(0).standard_normal((wh.rank, _PROBES))
        W = sla.solve_triangular(wh.L, V, lower=True, trans="T", check_finite=False)
        W = sla.solve_triangular(wh.L, matmul(D, W), lower=True, check_finite=False)
        return float((np.linalg.norm(W, axis=0) / np.linalg.norm(V, axis=0)).max())

    def refine_plain(self, sol, tol):
        """Refine a rejected plain normal-equations solution (:meth:`normal_equations` with
        ``measured``) with float64 residuals; None when it does not converge."""
        L, gamma, keep = self._plain
        gamma, est = self.refined(gamma, lambda r: cholesky_factor_solve(L, r), tol, None, keep, "plain")
        if not est <= tol:
            logger.info("sketched ridge: refinement of the plain solution did not converge (estimate %.2g)", est)
            return None
        f = self.feats
        if f.dtype == np.float32:
            _, _, S = self._sample()
            e_pred = prediction_rounding(S, gamma, np.float32)
            self.checks.append(("float32 predictions", est + e_pred))
            if est + e_pred > tol:
                return self._solution(gamma, self.features64(), "cholesky", est)
            est += e_pred
        return self._solution(gamma, f, "cholesky", est)

    def probe_estimate(self, gamma, precond):
        """Measured relative error of an explicitly requested route's solution: one float64
        residual of the un-squared problem for a few target combinations ``omega`` (``T = I_n``:
        random ``n x 8`` probes; else the targets themselves when few, random combinations
        otherwise), solved by the route's own matrix (``precond``): ``max |A_s M^-1 r| /
        max |A_s gamma omega|`` on the sample rows, times 2.  One float64 kernel pass."""
        rng = np.random.default_rng(0)
        _, _, S = self._sample()
        if self.identity:
            probes = rng.standard_normal((self.parts.n, _PROBES))
            res, g = self.residual(probes=probes), matmul(gamma, probes)
        elif self.width <= _PROBES:
            res, g = self.residual(), gamma
        else:
            om = rng.standard_normal((self.width, _PROBES))
            res, g = self.residual(combine=om), matmul(gamma, om)
        r = res(g)
        # the residual bounds the prediction error of any solution: A (gamma* - gamma) =
        # Z (Z^T Z + n lam I)^-1 L^-1 P^T r with |Z (Z^T Z + n lam I)^-1| <= 1 / (2 sqrt(n lam))
        # (whitened basis of K~): what the route's own matrix cannot resolve (its jitter,
        # its dropped eigenvalues, its rounding) shows here; relative to |A gamma|_2 over the
        # n rows (estimated from the sample), times 4: the error is judged in the max norm on
        # any rows, where it exceeds this 2-norm ratio (rf1, 20/n-SR: up to 8.5x)
        wh = Whitening(self.Kt64(), self.rcond)
        hn = np.sqrt(self.parts.n / S.shape[0]) * np.linalg.norm(matmul(S, g), axis=0)
        en = 4.0 * np.linalg.norm(wh.apply_inverse(r), axis=0) / (2.0 * np.sqrt(self.nlam))
        bound = float(np.max(np.where(hn > 0, en / np.maximum(hn, 1e-300), 0.0), initial=0.0))
        return max(2.0 * sample_ratio(S, precond(r), g), bound)

    # ---- the stable route
    def stable(self, est=None):
        """Tall-skinny QR over row chunks (float64 kernel values) and :func:`stable_ridge_solve`."""
        t2 = time.perf_counter()
        f = self.features64()
        task = QRTask(f, self.targets, self.width, self.identity, gather=f.R.indices, which=self.which)
        acc, A_sel = self.executor.map_reduce(self.parts, task, self.chunk)
        t3 = time.perf_counter()
        rhs = acc.AtT if self.identity else acc.QtT
        _check_finite(acc.R, rhs)
        gamma, rank = stable_ridge_solve(acc.R, rhs, _sandwich(f, A_sel), self.nlam, self.rcond,
                                         semi_normal=self.identity)
        self.times.update({"qr_pass": t3 - t2, "qr_solve": time.perf_counter() - t3})
        return self._solution(gamma, f, "qr", est, rank)


class _Combined:
    """``chunk -> targets(chunk) omega``: a few combinations of many target columns."""

    def __init__(self, targets, omega):
        self.targets, self.omega = targets, omega

    def __call__(self, chunk):
        return matmul(np.asarray(self.targets(chunk), dtype=np.float64), self.omega)


def _spread(size, k):
    """``min(size, k)`` distinct positions spread evenly over ``range(size)``."""
    return np.unique(np.linspace(0, size - 1, min(size, k)).astype(np.intp))


class _PlainSolution:
    """A plain normal-equations solution as :meth:`_RidgeJob._measured` reads it: the
    Cholesky factor ``F`` of ``G`` and ``w(cols)`` (columns of ``gamma``, or ``gamma @ cols``)."""

    def __init__(self, F, gamma):
        self.F, self.gamma = F, gamma

    def w(self, cols):
        return matmul(self.gamma, cols) if isinstance(cols, np.ndarray) and cols.ndim == 2 else self.gamma[:, cols]


def _plain_promising(wh):
    """A-priori: ``K~`` of full numerical rank whose pivots span at most
    :data:`PLAIN_FIRST_PIVOT_RATIO` (squared) -- else the plain route would fail its check."""
    if wh.rank < wh.m or wh.rank == 0:
        return False
    d = np.abs(np.diagonal(wh.L))
    return float(d.min() / d.max()) ** 2 >= PLAIN_FIRST_PIVOT_RATIO


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
