"""Double-centred cross products ``A^T A`` and ``A^T T`` accumulated over row chunks."""
from __future__ import annotations

import numpy as np
from scipy.linalg import get_blas_funcs

from ._linalg import matmul
from ._parallel import for_row_blocks

__all__ = ["ShiftedCrossProducts"]


class ShiftedCrossProducts:
    """Accumulate ``A^T A`` and ``A^T T`` over row chunks, accurately in float32.

    Kernel blocks are often far from centred (a Gaussian kernel with a wide bandwidth is
    ~constant, and rows differ by a scale factor), and the rounding error of a float32
    ``A^T A`` scales with ``|A|^2``.  Each chunk is double-centred,
    ``A = A_c + 1 c^T + r 1^T = A_c + Q P^T`` with ``c`` the column means of the first
    chunk, ``r`` the row means of ``A - 1 c^T``, ``Q = [1, r]`` (n x 2), ``P = [c, 1]``
    (m x 2).  Then, exactly,

        A^T A = A_c^T A_c + S P^T + P S^T + P (Q^T Q) P^T,      S = A_c^T Q
        A^T T = A_c^T T_c + S_1 d^T + P (Q^T T),                T_c = T - 1 d^T

    The large products run in the working dtype on blocks ~200x smaller than ``A``
    (Bibtex: float32 error 1e-10 of the diagonal instead of 2e-9 with column centring
    only, 4e-8 without); the thin corrections are float64.  ``A_c^T A_c`` is one BLAS
    ``syrk`` per chunk into the lower triangle of a Fortran-ordered accumulator (half the
    flops of a GEMM, no temporaries); the centring passes run on row blocks in parallel.
    ``T=None`` means ``T = I_n`` (then ``A^T T = A^T``, stored as is).
    """

    def __init__(self, m, width, dtype, target_dtype=None):
        self.dtype = np.dtype(dtype)
        self.AtA = np.zeros((m, m), dtype=self.dtype, order="F")  # lower triangle only
        self.AtT = np.zeros((m, width), dtype=self.dtype)
        self.S = np.zeros((m, 2))  # A_c^T [1, r]
        self.QQ = np.zeros((2, 2))  # [1, r]^T [1, r]
        self.QT = None  # [1, r]^T T
        self.c = self.d = None
        self.identity_targets = False
        self._syrk = get_blas_funcs("syrk", dtype=self.dtype)

    def add(self, sl, A, T=None, overwrite=False):
        """Add rows ``sl`` of A and T (``overwrite=True``: A may be centred in place)."""
        A = np.asarray(A)
        if self.c is None:
            # the shift is rounded to the block's dtype so that the identity uses exactly
            # the values that are subtracted
            self.c = A.mean(axis=0, dtype=np.float64).astype(A.dtype).astype(np.float64)
            if T is not None:
                self.d = T.mean(axis=0, dtype=np.float64)
                self.QT = np.zeros((2, T.shape[1]))
        if T is None:
            self.identity_targets = True
            self.AtT[:, sl] = A.T
        # centre in the block's own precision (a float32 block's rounding is already in A)
        Ac = A if overwrite and A.flags.c_contiguous else np.array(A, order="C")
        c_w = self.c.astype(A.dtype)
        r_w = np.empty(A.shape[0], dtype=A.dtype)

        def centre(rows):
            block = Ac[rows]
            np.subtract(block, c_w, out=block)
            r_w[rows] = block.mean(axis=1, dtype=np.float64)
            block -= r_w[rows, None]

        for_row_blocks(centre, A.shape[0], A.size)
        r = r_w.astype(np.float64)
        Q = np.stack([np.ones_like(r_w), r_w], axis=1)
        self.S += matmul(Ac.T, Q).astype(np.float64)  # one pass: column sums and A_c^T r
        self.QQ += [[r.size, r.sum()], [r.sum(), r @ r]]
        Aw = Ac.astype(self.dtype, copy=False)
        # AtA += Aw^T Aw: Aw^T is the Fortran-ordered view, syrk writes the lower triangle
        res = self._syrk(1.0, Aw.T, beta=1.0, c=self.AtA, trans=0, lower=1, overwrite_c=1)
        if not np.shares_memory(res, self.AtA):  # pragma: no cover - f2py made a copy
            self.AtA = res
        if T is not None:
            T = np.asarray(T, dtype=np.float64)
            self.QT[0] += T.sum(axis=0)
            self.QT[1] += r @ T
            self.AtT += matmul(Aw.T, (T - self.d).astype(self.dtype, copy=False))

    def result(self, lower_only=False, plus=None):
        """``(A^T A + plus, A^T T)`` in float64 (a fresh array; ``plus`` optional, (m, m)).

        With ``lower_only=True`` ``A^T A`` is Fortran-ordered and only its lower triangle
        is meaningful (what a Cholesky factorization reads); otherwise it is symmetric.
        ``plus`` (e.g. the ridge term) is added in the same pass as the float64 cast.
        """
        P = np.stack([self.c, np.ones_like(self.c)], axis=1)  # (m, 2)
        AtA = np.empty(self.AtA.shape, dtype=np.float64, order="F")
        if plus is None:
            np.copyto(AtA, self.AtA)
        else:
            np.add(self.AtA, plus, out=AtA, dtype=np.float64)  # the float64 loop
        # S P^T + P S^T + P QQ P^T = W M W^T, W = [S, P], M = [[0, I], [I, QQ]]: one GEMM
        W = np.hstack([self.S, P])
        M = np.block([[np.zeros((2, 2)), np.eye(2)], [np.eye(2), self.QQ]])
        gemm = get_blas_funcs("gemm", dtype=np.float64)
        res = gemm(1.0, W @ M, W, trans_b=1, beta=1.0, c=AtA, overwrite_c=1)
        if not np.shares_memory(res, AtA):  # pragma: no cover
            AtA = res
        if not lower_only:
            AtA = np.tril(AtA) + np.tril(AtA, -1).T
        if self.identity_targets:
            return AtA, self.AtT.astype(np.float64, copy=False)
        AtT = self.AtT.astype(np.float64)  # a copy: result() may be called again
        AtT += self.S[:, :1] * self.d[None, :]
        AtT += P @ self.QT
        return AtA, AtT
