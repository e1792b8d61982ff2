"""The sketched output basis of DSOKR and its training targets, streamed over row chunks.

With an output sketch ``R`` and the eigenpairs ``(U, D)`` of ``R K_y R^T``,
:func:`sketched_output_basis` gives the feature map ``psi~`` (a
:class:`~sprokr.numerics.SketchedFeatures`) and :func:`sketched_output_targets` also the
training targets ``psi~(y_i)`` and the residuals ``k(y_i, y_i) - |psi~(y_i)|^2`` DSOKR
regresses on (the mathematics: :mod:`sprokr.models.dsokr`).  Model selection (projected
targets) and the chemistry plugin use the same basis without fitting a DSOKR.

They are apart from :mod:`sprokr.models.dsokr`, which re-exports both functions, so that
the estimator module holds the estimators.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import DTypeLike

from ..numerics import (
    DEFAULT_RCOND,
    LocalExecutor,
    SketchedFeatures,
    check_kernel_sample,
    default_chunk_size,
)
from ..utils import NamedPrepare, iter_chunks, resolve_dtype, take
from .base import OUTPUT_DTYPE

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..numerics import Executor
    from ..sketches.base import SketchMatrix
    from ..types import Samples

__all__ = ["sketched_output_basis", "sketched_output_targets"]


def sketched_output_targets(kernel: Kernel, R: SketchMatrix, Y: Samples, rcond: float = DEFAULT_RCOND,
                            chunk_size: int | None = None, executor: Executor | None = None,
                            prepared: bool = False,
                            dtype: DTypeLike = OUTPUT_DTYPE) -> tuple[SketchedFeatures, np.ndarray, np.ndarray]:
    """Output basis and training targets of an output sketch, streamed over row chunks.

    Parameters
    ----------
    kernel : Kernel
    R : SketchMatrix (m, n)
    Y : the n training outputs (raw, or prepared with ``prepared=True``)
    rcond : relative eigenvalue threshold of the basis
    chunk_size : int, optional
    executor : Executor, optional (default: local)
    dtype : dtype of ``Psi`` (default float64)
        float32 halves the n x p targets for a regressor that trains in float32
        (:attr:`sprokr.models.regressors.MLPSurrogate.target_dtype`); the coordinates are
        computed in float64 and rounded once.

    Support points that are equal outputs share one kernel column (exact), and every chunk
    computes its kernel block once per distinct output in it.

    Returns
    -------
    features : SketchedFeatures
        With ``basis_`` (m, p) set: ``features.transform(C)`` is ``psi~(C)`` (n_c, p).
    Psi : ndarray of shape (n, p), ``dtype``
        ``psi~(y_i)`` = ``K_y R^T U D^-1/2``.
    offsets : ndarray of shape (n,), float64
        ``r_i = k(y_i, y_i) - |psi~(y_i)|^2`` (clipped at 0): the squared norm of the part
        of ``psi(y_i)`` outside the sketched subspace.

    Memory: ``Psi`` is the only n x p array; every pass writes its rows in place (no
    stacked copy).
    """
    from ..numerics import LocalExecutor

    dtype = resolve_dtype(dtype)
    ex = executor if executor is not None else LocalExecutor()
    parts = ex.partition(Y, prepare=(None if prepared else NamedPrepare(kernel.prepare_outputs, "Y"),),
                         names=("outputs",))
    feats = _output_basis(kernel, R, Y, rcond, ex, parts, prepared)
    chunk = chunk_size or default_chunk_size(feats.R.indices.size, OUTPUT_DTYPE)
    Psi = np.empty((parts.n, feats.rank), dtype=dtype)
    # two passes, each written in place: the coordinates, then the residuals from the kernel's
    # diagonal (cheap) -- rather than one pass of stacked [Psi, r] rows and a copy of Psi
    ex.map_rows(parts, _Targets(feats, dtype), chunk, name="output targets", which="outputs", out=Psi)
    r = np.empty(parts.n)
    ex.map_rows(parts, _Diagonal(kernel), chunk, name="output norms", which="outputs", out=r)
    for sl in iter_chunks(parts.n, chunk):  # r -= |psi~|^2 in float64, a block at a time
        r[sl] -= np.einsum("ij,ij->i", Psi[sl], Psi[sl], dtype=np.float64)
    np.maximum(r, 0.0, out=r)
    return feats, Psi, r


def sketched_output_basis(kernel: Kernel, R: SketchMatrix, Y: Samples, rcond: float = DEFAULT_RCOND,
                          executor: Executor | None = None, prepared: bool = False) -> SketchedFeatures:
    """The output basis of :func:`sketched_output_targets` alone (no pass over the n outputs):
    the feature map ``psi~`` DSOKR fitted with sketch ``R`` on ``Y`` uses
    (``features.transform``; ``features.inner`` for products of two sets' features)."""
    ex = executor if executor is not None else LocalExecutor()
    parts = ex.partition(Y, prepare=(None if prepared else NamedPrepare(kernel.prepare_outputs, "Y"),),
                         names=("outputs",))
    return _output_basis(kernel, R, Y, rcond, ex, parts, prepared)


def _output_basis(kernel, R, Y, rcond, ex, parts, prepared):
    # the kernel on a few training outputs: finite, symmetric, PSD (clear errors early); the
    # sketch's own support points, whose kernel columns the basis computes anyway
    check_kernel_sample(kernel, ex.take_rows(parts, R.indices[:64], which="outputs"), "output kernel")
    raw_sel = ex.take_rows(parts, R.indices, which="outputs")
    if prepared:
        return SketchedFeatures(kernel, R, raw_sel, OUTPUT_DTYPE, rcond).fit_basis()
    return SketchedFeatures.from_support(kernel, R, take(Y, R.indices), OUTPUT_DTYPE, rcond,
                                         prepared=raw_sel)[0].fit_basis()


class _Targets:
    """``psi~(y)`` rows (in ``dtype``) for a chunk of prepared outputs."""

    def __init__(self, features, dtype):
        self.features, self.dtype = features, dtype

    def __call__(self, Yp):
        return self.features.transform(Yp).astype(self.dtype, copy=False)


class _Diagonal:
    """``k(y, y)`` (float64) for a chunk of prepared outputs."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, Yp):
        return np.asarray(self.kernel.diag(Yp), dtype=np.float64)
