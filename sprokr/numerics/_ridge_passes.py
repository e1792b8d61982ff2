"""The passes of the sketched ridge over row chunks: the tasks an executor folds.

:class:`CrossProductTask` accumulates ``A^T A`` and ``A^T T`` of ``A = K R^T`` (plain or
whitened, :class:`ShiftedCrossProducts`), :class:`QRTask` the tall-skinny QR of the stable
route; :class:`TargetRows` gathers a pass's targets by distinct output.  Used by the routes
of :mod:`sprokr.numerics._ridge_job`.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, DTypeLike

from ._crossprod import ShiftedCrossProducts
from ._executor import ChunkTask
from ._features import SketchedFeatures
from ._qr import TallSkinnyQR
from ..utils import take

__all__ = ["TargetRows", "CrossProductTask", "QRTask"]


class TargetRows:
    """``ids -> table[ids]``: a pass's targets gathered by the distinct id of each sample
    (outputs repeat: their targets are computed once per distinct output).  A read-only
    gather, so a pass may fold its chunks in several threads (``thread_safe``).

    Parameters
    ----------
    table : ndarray of shape (n_distinct, width)
        The targets of each distinct id, one row per id.
    """

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

    Parameters
    ----------
    features : SketchedFeatures
        The sketched features giving ``A = K R^T`` from ``X_chunk``.
    targets : callable or None
        ``targets(chunks[which])`` gives the chunk's rows of ``T`` (None with
        ``identity_targets``).
    width : int
        Columns of ``T`` (``n`` with ``identity_targets``).
    c : ndarray of shape (m,)
        Column shift of the blocks (:func:`column_shift`).
    d : ndarray of shape (width,) or None
        Target shift (None: 0); ignored with ``identity_targets``.
    identity_targets : bool
        ``T = I_n``.
    gather : array-like of int, optional
        Sorted row numbers whose rows of ``A`` are collected (e.g. the sketch's support);
        not combined with ``skip``.
    which : int, default=1
        Position of the targets' column in the chunks.
    whiten : Whitening, optional
        Sum the whitened ``Z = A P_r L_11^-T`` instead of ``A``.
    dtype : dtype, optional
        Precision of the products (default: the features' dtype).
    skip : array-like of int, optional
        Sorted row numbers left out of the sums.
    keep : KeptBlocks, optional
        Where the float64 rows of ``A`` and ``T`` are kept (in this process only; never
        shipped).
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
        # A sub-sampling's column j of A is the kernel with support point j: the whitened
        # sums need the pivot columns A P_r only, computed as such against the pivot support
        # points (no column gather of each block, no kernel value of a dropped column)
        self.pivot_support = None
        if whiten is not None and keep is None and gather is None and features.R.scale is not None:
            self.pivot_support = features.kernel.prepare_support(take(features.Z_sel, whiten.sel))

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
        if self.pivot_support is not None:
            A = self.features.kernel_block(chunks[0], self.pivot_support)
            if self.features.R.scale != 1:
                A *= self.features.R.scale
            T = None if self.identity_targets else self.targets(chunks[self.which])
            acc.add(rows, A, T, overwrite=True, pivoted=True)
            return acc, got
        A = self.features.block(chunks[0])
        if got is not None:  # before A is centred in place
            lo, hi = np.searchsorted(self.gather, [rows.start, rows.stop])
            got[lo:hi] = A[self.gather[lo:hi] - rows.start]
        T = None if self.identity_targets else self.targets(chunks[self.which])
        if self.keep is not None:  # before A is centred in place
            self.keep.put(rows, A, T)
        acc.add(rows, A, T, overwrite=True)
        return acc, got

    def finish(self, partial: Any) -> Any:
        acc, got = partial
        # partials folded in other processes carry a copy of the whitening without its
        # factor (never shipped): the merged accumulator gets the driver's own back, so
        # that the support rows' sums can come from the factor (add_own_rows)
        if self.whiten is not None:
            acc.whiten = self.whiten
        return acc, got

    @property
    def thread_safe(self) -> bool:  # type: ignore[override]
        """Chunks may be folded in parallel threads when the kernel blocks and the targets
        can be computed concurrently (the kept blocks are written by disjoint rows) -- not
        for the whitened pass, whose per-chunk triangular solve holds the GIL (scipy's
        BLAS wrappers): its threads would wait on each other with one BLAS thread each
        (Bibtex SISOKR's pass: 0.35 s -> 0.46 s)."""
        if self.whiten is not None or sp.issparse(self.features.Z_sel):
            # (sparse inputs: scikit-learn's sparse x sparse product of the kernel blocks holds
            # the GIL too -- Bibtex's plain pass: 0.42 s in one thread, 0.52-0.56 s in two)
            return False
        t = self.targets
        targets_ok = t is None or t is np.asarray or bool(getattr(t, "thread_safe", False)) or \
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

    Parameters
    ----------
    features : SketchedFeatures
        The sketched features giving ``A = K R^T`` from ``X_chunk``.
    targets : callable or None
        ``targets(chunks[which])`` gives the chunk's rows of ``T`` (None with
        ``identity_targets``).
    width : int
        Columns of ``T`` (``n`` with ``identity_targets``).
    identity_targets : bool
        ``T = I_n``.
    gather : array-like of int, optional
        Sorted row numbers whose rows of ``A`` are collected (e.g. the sketch's support).
    which : int, default=1
        Position of the targets' column in the chunks.
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
