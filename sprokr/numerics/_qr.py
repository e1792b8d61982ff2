"""Tall-skinny QR over row chunks: the R factor of ``A`` and ``Q^T T``, mergeable.

The stable route of the sketched ridge never forms ``A^T A`` (which squares the
condition number of the n x m kernel block ``A = K R^T``).  It needs only the m x m
triangular factor ``R_A`` of ``A = Q R_A`` and the projected targets ``Q^T T``, and both
can be accumulated over row chunks and merged exactly like the executor's other sums:

* a chunk ``A_c`` (rows x m) is folded in by the QR of ``[R_A; A_c]`` (LAPACK ``tpqrt``:
  the triangle on top is exploited, cost ~2 rows m^2), whose Householder reflectors are
  applied to ``[Q^T T; T_c]`` (``tpmqrt``);
* two partial results merge by the QR of ``[R_1; R_2]`` (two triangles, ``tpqrt`` with a
  triangular bottom block) and the same reflectors applied to ``[Q_1^T T; Q_2^T T]``.

``R_A^T R_A = A^T A`` and ``R_A^T Q^T T = A^T T`` whatever the chunk order or the merge
tree (the factor is unique up to the signs of its rows, which cancel in every use), so a
fixed partitioning gives bit-identical results and any partitioning gives the same
solution to rounding.  Everything is float64: QR is backward stable (errors ``eps |A|``),
which is the point of this route.

With ``T = I_n`` (SIOKR: one target column per training sample) ``Q^T I_n`` would cost
O(m n^2); the accumulator then keeps ``A^T`` itself (the chunk's columns, no arithmetic)
and the solve uses the semi-normal equations with ``R_A`` (see
:func:`sprokr.numerics.sketched_ridge`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.linalg import lapack

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self

__all__ = ["TallSkinnyQR", "stacked_qr", "stacked_qr_apply_t"]

#: block size of LAPACK's tpqrt (measured: 64 is the fastest of 16..128 for m ~ 1000)
_NB = 64


def stacked_qr(top: np.ndarray, bottom: np.ndarray, l: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """QR of ``[top; bottom]`` with ``top`` (k x k) upper triangular; returns (R, V, T).

    ``l`` is the number of rows of ``bottom`` that are upper trapezoidal (0: ``bottom`` is
    full; k: ``bottom`` is upper triangular).  ``top`` and ``bottom`` are overwritten.

    Parameters
    ----------
    top : ndarray of shape (k, k)
        Upper triangular block, overwritten.
    bottom : ndarray of shape (p, k)
        The rows stacked below it, overwritten.
    l : int
        Rows of ``bottom`` that are upper trapezoidal (0 to ``min(p, k)``).
    """
    k = top.shape[0]
    nb = max(1, min(_NB, k))
    R, V, T, info = lapack.dtpqrt(l, nb, top, bottom, overwrite_a=1, overwrite_b=1)
    if info != 0:  # pragma: no cover - only for malformed arguments
        raise ValueError(f"LAPACK tpqrt failed (info={info})")
    return R, V, T


def stacked_qr_apply_t(l: int, V: np.ndarray, T: np.ndarray, top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    """Apply ``Q^T`` of :func:`stacked_qr` to ``[top; bottom]`` (overwritten); returns ``top``.

    Parameters
    ----------
    l : int
        The ``l`` of the :func:`stacked_qr` call.
    V : ndarray of shape (p, k)
        Householder vectors returned by :func:`stacked_qr`.
    T : ndarray
        Block reflector factors returned by :func:`stacked_qr`.
    top : ndarray of shape (k, width)
        Rows matching the triangular block, overwritten.
    bottom : ndarray of shape (p, width)
        Rows matching ``bottom`` of the factorisation, overwritten.
    """
    if top.shape[1] == 0:
        return top
    top, bottom, info = lapack.dtpmqrt(l, V, T, top, bottom, side="L", trans="T",
                                       overwrite_a=1, overwrite_b=1)
    if info != 0:  # pragma: no cover
        raise ValueError(f"LAPACK tpmqrt failed (info={info})")
    return top


class TallSkinnyQR:
    """``R_A`` (m x m, upper) and ``Q^T T`` (m x width) of a tall ``A``, over row chunks.

    Parameters
    ----------
    m : int
        Columns of ``A``.
    width : int
        Columns of ``T`` (``n`` with ``identity_targets``).
    identity_targets : bool
        ``T = I_n``: ``AtT`` keeps ``A^T`` (the columns of each chunk's rows) instead of
        ``Q^T T``.

    Attributes
    ----------
    R : ndarray (m, m), Fortran order
        Upper triangular factor (zero before any row is added: ``[0; A]`` has the factor
        of ``A``).
    QtT : ndarray (m, width) or None
        ``Q^T T`` (targets given).
    AtT : ndarray (m, n) or None
        ``A^T`` (identity targets).
    """

    #: attribute types for the type checker (set in __init__ / fit)
    QtT: Any  # None with identity targets
    AtT: Any  # None without

    def __init__(self, m: int, width: int, identity_targets: bool = False) -> None:
        self.m, self.width = int(m), int(width)
        self.identity_targets = bool(identity_targets)
        self.R = np.zeros((self.m, self.m), order="F")
        self.QtT = None if identity_targets else np.zeros((self.m, self.width), order="F")
        self.AtT = np.zeros((self.m, self.width)) if identity_targets else None

    def add(self, rows: slice, A: np.ndarray, T: np.ndarray | None = None) -> Self:
        """Fold the rows ``rows`` (a slice of global row numbers) of ``A`` and ``T`` in."""
        A = np.asarray(A)
        if A.ndim != 2 or A.shape[1] != self.m:
            raise ValueError(f"block of shape {A.shape}, expected (rows, {self.m})")
        if self.identity_targets:
            self.AtT[:, rows] = A.T
        elif T is None:
            raise ValueError("targets T are needed (the accumulator was built with targets)")
        if A.shape[0] == 0:
            return self
        B = np.array(A, dtype=np.float64, order="F")  # overwritten by the reflectors
        self.R, V, Tq = stacked_qr(self.R, B, 0)
        if not self.identity_targets:
            Tc = np.array(T, dtype=np.float64, order="F")
            if Tc.shape != (A.shape[0], self.width):
                raise ValueError(f"targets of shape {Tc.shape}, expected {(A.shape[0], self.width)}")
            self.QtT = stacked_qr_apply_t(0, V, Tq, self.QtT, Tc)
        return self

    def merge(self, other: TallSkinnyQR) -> Self:
        """Fold in the factor of ``other`` (disjoint rows, same shape); returns self."""
        if (other.m, other.width, other.identity_targets) != (self.m, self.width, self.identity_targets):
            raise ValueError("cannot merge QR accumulators of different shapes")
        self.R, V, Tq = stacked_qr(self.R, np.array(other.R, order="F"), self.m)
        if self.identity_targets:
            self.AtT += other.AtT
        else:
            self.QtT = stacked_qr_apply_t(self.m, V, Tq, self.QtT, np.array(other.QtT, order="F"))
        return self
