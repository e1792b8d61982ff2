"""Double-centred cross products ``A^T A`` and ``A^T T``, accumulated and merged over row chunks.

The one product the sketched methods cannot avoid is ``A^T A`` of the n x m kernel block
``A = K R^T``.  It is formed chunk by chunk; partial sums from different chunks (or
different machines) merge by addition, so the result does not depend on the chunk order.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike
from scipy.linalg import get_blas_funcs

from ._linalg import matmul
from ._parallel import for_row_blocks, in_fold_thread

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self

__all__ = ["ShiftedCrossProducts", "column_shift"]


def column_shift(A_ref: np.ndarray | None, dtype: DTypeLike) -> np.ndarray:
    """Centring shift ``c`` (m,) from reference rows of ``A``, rounded to ``dtype``.

    The shift must be fixed before the pass (so that every chunk, in any order or on any
    machine, uses the same one); any value keeps the identities exact, a representative
    one (column means of the rows at the sketch's support points) keeps float32 accurate.
    It is rounded to the block's dtype so that the identity uses exactly the values that
    are subtracted.

    Parameters
    ----------
    A_ref : ndarray of shape (n_ref, m)
        Reference rows of ``A`` (no rows: a zero shift).
    dtype : float32 or float64
        Dtype of the blocks the shift is subtracted from.
    """
    A_ref = np.asarray(A_ref)
    if A_ref.shape[0] == 0:
        return np.zeros(A_ref.shape[1])
    return A_ref.mean(axis=0, dtype=np.float64).astype(dtype).astype(np.float64)


def _check_overflow(G, dtype):
    """The diagonal of a sum of squares is where an overflow shows first (O(m) check)."""
    if not np.isfinite(G.diagonal()).all():
        hint = "rescale the inputs" + (" or use dtype='float64'" if np.dtype(dtype) == np.float32 else "")
        raise ValueError(f"the kernel block's cross products overflow {np.dtype(dtype).name} (non-finite "
                         f"values): the kernel values are too large; {hint}")


def _subtract_outer(B: np.ndarray, u: np.ndarray, v: np.ndarray) -> None:
    """``B -= u v^T`` in place (a BLAS ``ger`` rank-1 update: no temporary of B's size)."""
    if B.size == 0:
        return
    if B.flags.c_contiguous and B.dtype in (np.float32, np.float64):
        ger = get_blas_funcs("ger", dtype=B.dtype)
        # B^T is the Fortran-ordered view: B^T -= v u^T
        res = ger(-1.0, np.asarray(v, dtype=B.dtype), np.asarray(u, dtype=B.dtype), a=B.T, overwrite_a=1)
        if np.shares_memory(res, B):
            return
        B[...] = res.T  # pragma: no cover - f2py made a copy
        return
    B -= np.outer(u, v).astype(B.dtype, copy=False)


class ShiftedCrossProducts:
    """``A^T A`` and ``A^T T`` over row chunks: accurate in float32, mergeable.

    Kernel blocks are often far from centred (a Gaussian kernel with a wide bandwidth is
    ~constant, and rows differ by a scale factor), and the rounding error of a float32
    ``A^T A`` scales with ``|A|^2``.  Each chunk is double-centred,
    ``A = A_c + 1 c^T + r 1^T = A_c + Q P^T`` with ``c`` a column shift fixed before the
    pass (:func:`column_shift`), ``r`` the row means of ``A - 1 c^T``, ``Q = [1, r]``
    (rows x 2), ``P = [c, 1]`` (m x 2).  Then, exactly,

        A^T A = A_c^T A_c + S P^T + P S^T + P (Q^T Q) P^T,      S = A_c^T Q
        A^T T = A_c^T T_c + S_1 d^T + P (Q^T T),                T_c = T - 1 d^T

    with ``d`` a fixed target shift.  The large products run in the block's dtype on
    blocks ~200x smaller than ``A`` (Bibtex: float32 error 1e-10 of the diagonal instead
    of 2e-9 with column centring only, 4e-8 without); each chunk's products are added to
    float64 sums, as are the thin corrections.  Every sum is additive: :meth:`merge` adds
    the sums of another accumulator built with the same shifts, so partial results of
    disjoint chunks combine in any order to the same result (to float64 rounding).
    ``A_c^T A_c`` is one BLAS ``syrk`` per chunk (lower triangle, half the flops of a
    GEMM); the centring passes run on row blocks in parallel.

    Whitened (``whiten``, a :class:`sprokr.numerics.Whitening` of ``K~``): the sums are
    those of ``Z = A P_r L_11^-T`` (rows x r) instead of ``A``.  Each chunk's pivot columns
    are centred by projection on the column shift, ``A = A_c + s c^T`` with
    ``s_i = a_i . c / |c|^2`` (the flat kernel's rows are ~ a scale times ``c``), then
    whitened by a triangular solve in the accumulator's dtype, ``Z_c = A_c P_r L_11^-T``;
    ``Z = Z_c + s (L_11^-1 c)^T`` exactly, so the identities above hold with
    ``Q = [1, s]`` and ``P = [0, L_11^-1 c]`` (float64, computed once).  (The row shift
    ``r 1^T`` of the plain sums does not carry over: ``L_11^-1 1`` is huge when ``1`` is
    not in the well-represented range of ``K~``, e.g. for a Gaussian sketch, whereas
    ``|L_11^-1 c|^2`` is at most the kernel's largest value: ``c`` is an average row of
    ``A``.)  The whitening is applied to the rows, never to a formed ``A^T A``.

    Parameters
    ----------
    m : int
        Columns of ``A``.
    width : int
        Columns of ``T`` (``n`` with ``identity_targets``).
    dtype : float32 or float64
        Precision of the per-chunk products.
    c : ndarray of shape (m,)
        Column shift (see :func:`column_shift`).
    d : ndarray of shape (width,), optional
        Target shift (default 0); ignored with ``identity_targets``.
    identity_targets : bool
        ``T = I_n``: then ``A^T T = A^T`` is stored as is (columns of the chunk's rows).
    whiten : Whitening, optional
        Accumulate the sums of ``Z = A P_r L_11^-T`` (r columns) instead of ``A``'s.
    """

    #: attribute types for the type checker (set in __init__ / fit)
    d: Any  # None with identity targets

    def __init__(self, m: int, width: int, dtype: DTypeLike, c: np.ndarray, d: np.ndarray | None = None,
                 identity_targets: bool = False, whiten: Any = None) -> None:
        self.dtype = np.dtype(dtype)
        self.c = np.asarray(c, dtype=np.float64)
        if self.c.shape != (m,):
            raise ValueError(f"column shift must have shape ({m},), got {self.c.shape}")
        if whiten is not None and whiten.m != m:
            raise ValueError(f"whitening of {whiten.m} columns for blocks of {m} columns")
        self.whiten = whiten
        self.identity_targets = bool(identity_targets)
        self.d = None if identity_targets else (np.zeros(width) if d is None else np.asarray(d, dtype=np.float64))
        if whiten is None:  # A = A_c + Q P^T, Q = [1, r]
            self.P = np.stack([self.c, np.ones_like(self.c)], axis=1)
        else:  # Z = Z_c + Q P^T, Q = [1, s]
            self.P = np.hstack([np.zeros((whiten.rank, 1)), whiten.apply_inverse(self.c[:, None])])
        k = self.P.shape[0]
        self.AtA = np.zeros((k, k), order="F")  # float64, lower triangle only
        self.AtT = np.zeros((k, width))
        self.S = np.zeros((k, 2))  # A_c^T [1, r]
        self.QQ = np.zeros((2, 2))  # [1, r]^T [1, r]
        self.QT = np.zeros((2, width))  # [1, r]^T T
        self._tmp = None  # per-chunk syrk buffer of a float32 accumulation

    def add(self, rows: Any, A: np.ndarray, T: np.ndarray | None = None, overwrite: bool = False,
            pivoted: bool = False) -> Self:
        """Add the rows ``rows`` (a slice or an array of global row numbers) of ``A`` and ``T``.

        ``overwrite=True``: ``A`` may be centred in place.  ``pivoted`` (whitened only): ``A``
        holds the pivot columns ``A P_r`` alone (r of them), computed as such.  (Rows of ``A``
        that are ``K~`` itself: :meth:`add_own_rows`.)
        """
        A = np.asarray(A)
        width = self.whiten.rank if pivoted and self.whiten is not None else self.c.size
        if A.shape[1] != width:
            raise ValueError(f"block has {A.shape[1]} columns, expected {width}")
        if self.identity_targets and self.whiten is None:
            self.AtT[:, rows] = A.T
        elif T is None and not self.identity_targets:
            raise ValueError("targets T are needed (the accumulator was built with targets)")
        Ac, r = self.centred(A, overwrite, pivoted)
        Q = np.stack([np.ones_like(r), r], axis=1)
        if self.whiten is not None and self.identity_targets:  # Z^T = Z_c^T + P Q^T
            Z = Ac.astype(np.float64)  # a fresh copy: the rank-1 shift is added in place
            _subtract_outer(Z, -r, self.P[:, 1])
            self.AtT[:, rows] = Z.T
        self.S += matmul(Ac.T, Q.astype(Ac.dtype)).astype(np.float64)  # column sums and A_c^T r
        self.QQ += [[r.size, r.sum()], [r.sum(), np.einsum("i,i->", r, r)]]  # (no BLAS call: see matmul)
        Aw = Ac.astype(self.dtype, copy=False)
        self._add_gram(Aw)
        if not self.identity_targets:
            T = np.asarray(T, dtype=np.float64)
            if T.shape != (A.shape[0], self.AtT.shape[1]):
                raise ValueError(f"targets of shape {T.shape}, expected {(A.shape[0], self.AtT.shape[1])}")
            self.QT[0] += T.sum(axis=0)
            self.QT[1] += matmul(r, T)
            self.AtT += matmul(Aw.T, (T - self.d).astype(self.dtype, copy=False))
        return self

    def add_own_rows(self, rows: Any, A: np.ndarray, T: np.ndarray | None = None) -> Self:
        """Add the rows ``rows`` of ``A`` at the sketch's support when they are ``K~`` itself
        (m x m; whitened, sub-sampling; targets ``T``, m x width, unless ``I_n``): :meth:`add`
        with their ``Z = P F``, whose products come from the whitening's factor in float64.

        ``Z_c = Z - s p^T`` (``p = L_11^-1 c``, ``s`` the row coefficients of :meth:`centred`),
        so ``Z_c^T Z_c = F^T F - u p^T - p u^T + |s|^2 p p^T`` with ``u = Z^T s``: the triangular
        ``F^T F`` (:meth:`Whitening.own_gram`, a third of the m x r ``syrk``) and rank-two
        corrections -- the sums :meth:`add` forms, in float64 whatever the dtype.  ``Z`` itself
        is formed only for targets ``I_n``, whose ``Z^T T`` is ``Z^T``.  The whitening must hold
        its factor (:class:`Whitening` as computed, not a shipped copy).
        """
        wh = self.whiten
        if wh is None:
            raise ValueError("add_own_rows needs a whitened accumulator")
        A = np.asarray(A)
        if A.shape != (wh.m, wh.m):
            raise ValueError(f"own rows of shape {A.shape}, expected {(wh.m, wh.m)}")
        s = self._row_coefficients(A)
        X = [np.ones(wh.m), s]
        Tw = None
        if self.identity_targets:
            self.AtT[:, rows] = wh.own_rows().T
        else:
            if T is None:
                raise ValueError("targets T are needed (the accumulator was built with targets)")
            Tw = np.asarray(T, dtype=np.float64)
            if Tw.shape != (wh.m, self.AtT.shape[1]):
                raise ValueError(f"targets of shape {Tw.shape}, expected {(wh.m, self.AtT.shape[1])}")
            X.append(Tw - self.d)
        ZtX = wh.own_products(np.column_stack(X))  # Z^T [1, s, T - d] in one pass over the factor
        u1, us = ZtX[:, 0], ZtX[:, 1]
        p = self.P[:, 1]
        ss, s1 = float(np.einsum("i,i->", s, s)), float(s.sum())  # (no BLAS call: see matmul)
        G = wh.own_gram()
        # G -= u p^T + p u^T - |s|^2 p p^T, i.e. (p, u - |s|^2 p / 2) as a symmetric rank-two update
        syr2 = get_blas_funcs("syr2", dtype=np.float64)
        res = syr2(-1.0, p, us - 0.5 * ss * p, a=G, lower=1, overwrite_a=1)
        if not np.shares_memory(res, G):  # pragma: no cover - f2py made a copy
            G = res
        np.add(self.AtA, G, out=self.AtA)
        _check_overflow(self.AtA, np.float64)
        self.S += np.column_stack([u1 - s1 * p, us - ss * p])
        self.QQ += [[s.size, s1], [s1, ss]]
        if Tw is not None:
            self.QT[0] += Tw.sum(axis=0)
            self.QT[1] += matmul(s, Tw)
            self.AtT += ZtX[:, 2:] - np.outer(p, matmul(s, Tw - self.d))
        return self

    def _row_coefficients(self, A):
        """The whitened centring's row coefficients ``s = (A P_r) c / |c|^2`` (float64) of
        full-width rows ``A`` (rows x m), as :meth:`centred` computes them."""
        wh = self.whiten
        dtype = np.promote_types(A.dtype, self.dtype)
        c_w, cc = self._pivot_shift(dtype)
        if not (cc > 0 and A.shape[0]):
            return np.zeros(A.shape[0])
        v = np.zeros(A.shape[1], dtype=dtype)  # c on the pivot columns, 0 elsewhere: A v = (A P_r) c_w
        v[wh.sel] = c_w
        return (matmul(np.asarray(A, dtype=dtype), v[:, None])[:, 0] / cc).astype(np.float64)

    def _pivot_shift(self, dtype):
        """``(c_w, |c_w|^2)``: the column shift on the pivot columns in ``dtype``, and its
        squared norm in float64 (the whitened centring projects each row on it)."""
        c_w = self.c[self.whiten.sel].astype(dtype)
        c64 = c_w.astype(np.float64)
        return c_w, float(np.einsum("i,i->", c64, c64))

    def centred(self, A: np.ndarray, overwrite: bool = False, pivoted: bool = False) -> Any:
        """``(A_c, r)``: a block's centred rows (whitened: ``Z_c``) and row coefficients.

        ``A = A_c + Q P^T`` (whitened: ``Z = Z_c + Q P^T``) with ``Q = [1, r]``; ``A_c`` in
        the accumulator's dtype (plain: the block's), ``r`` float64.  ``pivoted``: see
        :meth:`add`.
        """
        wh = self.whiten
        if wh is None:
            # centre in the block's own precision (a float32 block's rounding is already in A)
            Ac = A if overwrite and A.flags.c_contiguous else np.array(A, order="C")
            c_w = self.c.astype(A.dtype)
        else:  # the pivot columns, centred in the wider of the two precisions
            dtype = np.promote_types(A.dtype, self.dtype)
            if pivoted:
                Ac = A if overwrite and A.flags.c_contiguous and A.dtype == dtype else np.array(A, dtype, order="C")
            else:
                Ac = wh.columns(A).astype(dtype, copy=False)
            c_w, cc = self._pivot_shift(Ac.dtype)
        r_w = np.empty(Ac.shape[0], dtype=Ac.dtype)

        def centre(blk):  # the row coefficients r (plain) or s (whitened), then A_c
            block = Ac[blk]
            if wh is None:
                np.subtract(block, c_w, out=block)
                r_w[blk] = block.mean(axis=1, dtype=np.float64)
                block -= r_w[blk, None]
            else:
                r_w[blk] = matmul(block, c_w[:, None])[:, 0] / cc if cc > 0 else 0.0
                _subtract_outer(block, r_w[blk], c_w)

        for_row_blocks(centre, Ac.shape[0], Ac.size)
        r = r_w.astype(np.float64)
        if wh is not None:  # Z_c = A_c P_r L^-T, in the accumulator's precision
            Ac = wh.solve_rows(Ac.astype(self.dtype, copy=False), overwrite=True)
        return Ac, r

    def _add_gram(self, Aw):
        """``AtA += Aw^T Aw`` (lower triangle), the product in Aw's dtype, the sum in float64."""
        syrk = get_blas_funcs("syrk", dtype=Aw.dtype)
        if Aw.dtype == np.float64 and not in_fold_thread():  # straight into the float64 sum
            res = syrk(1.0, Aw.T, beta=1.0, c=self.AtA, trans=0, lower=1, overwrite_c=1)
            if not np.shares_memory(res, self.AtA):  # pragma: no cover - f2py made a copy
                self.AtA = res
            _check_overflow(res, Aw.dtype)
            return
        m = Aw.shape[1]
        if self._tmp is None or self._tmp.dtype != Aw.dtype:
            self._tmp = np.zeros((m, m), dtype=Aw.dtype, order="F")
        if in_fold_thread():
            # numpy's Aw^T Aw is BLAS syrk too, and releases the GIL (scipy's wrappers hold
            # it): the local executor's fold threads multiply at once (ChunkTask.thread_safe)
            res = np.matmul(Aw.T, Aw, out=self._tmp.T).T  # symmetric: either order is the product
        else:
            # Aw^T is the Fortran-ordered view of Aw; beta=0 overwrites the buffer's lower triangle
            res = syrk(1.0, Aw.T, beta=0.0, c=self._tmp, trans=0, lower=1, overwrite_c=1)
        _check_overflow(res, Aw.dtype)
        np.add(self.AtA, res, out=self.AtA)

    def merge(self, other: ShiftedCrossProducts) -> Self:
        """Add the sums of ``other`` (same shape and shifts, disjoint rows); returns self."""
        if other.AtA.shape != self.AtA.shape or other.AtT.shape != self.AtT.shape:
            raise ValueError("cannot merge accumulators of different shapes")
        if not np.array_equal(other.P, self.P) or (self.d is not None and not np.array_equal(other.d, self.d)):
            raise ValueError("cannot merge accumulators built with different shifts")
        self.AtA += other.AtA
        self.AtT += other.AtT
        self.S += other.S
        self.QQ += other.QQ
        self.QT += other.QT
        return self

    def __getstate__(self):  # the float32 buffer is scratch space: never shipped
        state = dict(self.__dict__)
        state["_tmp"] = None
        return state

    def result(self, lower_only: bool = False, plus: np.ndarray | None = None,
               plus_scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """``(A^T A + plus_scale plus, A^T T)`` in float64 (fresh arrays; ``plus`` optional,
        (m, m), added without a temporary when it is Fortran-ordered like the sum).

        With ``lower_only=True`` ``A^T A`` is Fortran-ordered and only its lower triangle
        is meaningful (what a Cholesky factorization reads); otherwise it is symmetric.
        Whitened: ``(Z^T Z + plus, Z^T T)``, (r, r) and (r, width).
        """
        P = self.P  # (m or r, 2)
        AtA = np.array(self.AtA, order="F")
        if plus is not None:
            if plus.flags.f_contiguous and plus.dtype == np.float64:  # one BLAS axpy, in place
                axpy = get_blas_funcs("axpy", dtype=np.float64)
                y = AtA.ravel(order="F")  # a view: AtA is Fortran-ordered
                res = axpy(plus.ravel(order="F"), y, a=plus_scale)
                if not np.shares_memory(res, AtA):  # pragma: no cover - f2py made a copy
                    y[...] = res
            else:
                AtA += plus_scale * plus
        # S P^T + P S^T + P QQ P^T = W M W^T, W = [S, P], M = [[0, I], [I, QQ]]: one GEMM
        W = np.hstack([self.S, P])
        M = np.block([[np.zeros((2, 2)), np.eye(2)], [np.eye(2), self.QQ]])
        gemm = get_blas_funcs("gemm", dtype=np.float64)
        res = gemm(1.0, matmul(W, M), W, trans_b=1, beta=1.0, c=AtA, overwrite_c=1)
        if not np.shares_memory(res, AtA):  # pragma: no cover
            AtA = res
        if not lower_only:
            AtA = np.tril(AtA) + np.tril(AtA, -1).T
        if self.identity_targets:
            return AtA, self.AtT.copy()
        AtT = self.AtT + self.S[:, :1] * self.d[None, :]
        AtT += matmul(P, self.QT)  # scipy's BLAS, as every product here (numpy's would wake its own pool)
        return AtA, AtT
