"""Gram products ``alpha A B^T + L R^T`` for dense and CSR operands.

Every vector kernel starts from the inner products ``A B^T``; distance-based kernels also
need ``|a|^2`` and ``|b|^2`` broadcast over the block.  Both are done in one product by
appending a few dense columns ``L`` (n_a x k) and ``R`` (n_b x k): e.g. the Gaussian
exponent ``2g a.b - g|a|^2 - g|b|^2`` is ``2g A B^T + [-g|a|^2, 1] [1, -g|b|^2]^T``, so no
elementwise pass over the block is needed for it.

Sparse inputs.  Real sparse features are rarely uniformly sparse: a few columns are
non-zero in most rows (Bibtex: one word in 98 % of the documents, 74 columns in more than
~15 %).  A sparse x sparse product costs ``sum_f nnz_A(f) nnz_B(f)`` scattered updates,
dominated by those columns, while a dense product costs ``n_a n_b`` fused multiply-adds
per column at BLAS speed (~100x cheaper per update).  So the columns with
``density_A(f) density_B(f) > DENSE_COLUMN_THRESHOLD`` go to the dense part (with ``L``,
``R``) and the rest to scikit-learn's compiled sparse x sparse -> dense product
(Bibtex 4880 x 2250 block: 0.17 s -> 0.07 s).

Support operands.  A model's support points are the right operand of every prediction's
block.  :func:`support_operand` gives a CSR support a memo of its side of the work (its
column densities, its split by dense columns, its transpose, its row norms), so that a
prediction does only the queries' side (Bibtex SISOKR decode: ~3 ms of ~70 ms).  Like
the fitted model's other state, the support is not modified after fitting.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import get_blas_funcs

from ..numerics import for_row_blocks, in_fold_thread

__all__ = ["gram", "sq_norms", "add_outer", "support_operand"]

#: a column is multiplied densely when ``density_A * density_B`` exceeds this
DENSE_COLUMN_THRESHOLD = 0.02


#: attribute of a support operand's memo (see :func:`support_operand`)
_MEMO = "_sprokr_gram_memo"


def support_operand(B):
    """``B`` as the right operand of many :func:`gram` calls (a model's support points).

    A CSR matrix comes back as a new CSR object sharing ``B``'s arrays and carrying a memo
    of its side of :func:`gram`'s work, filled by the first calls; a support operand or
    anything else comes back unchanged.  The memo assumes that the arrays are not modified afterwards."""
    if not sp.issparse(B) or getattr(B, _MEMO, None) is not None:  # not CSR, or one already
        return B
    B = sp.csr_matrix(B)
    setattr(B, _MEMO, {})
    return B


def _memo(B, key, compute):
    """``compute()``, kept on a support operand ``B`` under ``key`` (else computed)."""
    memo = getattr(B, _MEMO, None)
    if memo is None:
        return compute()
    value = memo.get(key)  # one lookup: threads folding chunks in parallel share the memo
    if value is None:
        value = compute()
        if len(memo) >= 16:  # many different query column patterns: start again
            memo.clear()
        memo[key] = value
    return value


def sq_norms(A):
    """Squared Euclidean norms of the rows of a dense or CSR matrix, in its dtype."""
    if sp.issparse(A):
        return _memo(A, "sq_norms", lambda: _csr_sq_norms(sp.csr_matrix(A)))
    return np.einsum("ij,ij->i", A, A)


def _csr_sq_norms(A):
    """Squared row norms of a CSR matrix: one ``reduceat`` over the squared values of the
    non-empty rows (no squared copy of the matrix)."""
    if not A.has_canonical_format:  # repeated entries are summed before squaring
        return np.asarray(A.multiply(A).sum(axis=1)).ravel().astype(A.dtype)
    out = np.zeros(A.shape[0], dtype=A.dtype)
    full = np.flatnonzero(np.diff(A.indptr))
    if full.size:
        d = A.data
        out[full] = np.add.reduceat(d * d, A.indptr[full])
    return out


def add_outer(out, L, R, beta=1.0, alpha=1.0):
    """``out = alpha L R^T + beta out`` in place for a C-ordered ``out`` (one BLAS GEMM;
    with ``beta=0`` the previous contents of ``out`` are never read)."""
    if out.size == 0:  # a block with no rows or columns (e.g. zero queries): BLAS refuses it
        return out
    if L.shape[1] == 0:  # an empty inner dimension: the product is 0
        if beta == 0:
            out[...] = 0
        else:
            out *= beta
        return out
    L = np.ascontiguousarray(L, dtype=out.dtype)
    R = np.ascontiguousarray(R, dtype=out.dtype)
    if beta == 0 and alpha == 1 and in_fold_thread():
        # in a fold thread (one BLAS thread) numpy's product, which releases the GIL where
        # scipy's BLAS wrappers hold it: the kernel blocks of chunks folded in parallel are
        # computed in parallel (R^T is a view: a transposed operand for BLAS, no copy)
        return np.matmul(L, R.T, out=out)
    gemm = get_blas_funcs("gemm", (out,))
    # out^T (F-ordered) = R L^T; R^T and L^T are F-ordered views: no copies
    res = gemm(alpha, R.T, L.T, trans_a=1, beta=beta, c=out.T, overwrite_c=1)
    if not np.shares_memory(res, out):  # pragma: no cover - f2py made a copy
        out[...] = res.T
    return out


def _dense_columns(B, work):
    """Columns multiplied densely, from ``work = density_A * density_B`` per column.

    Those above :data:`DENSE_COLUMN_THRESHOLD`; but near it either way costs about the
    same, so a split already kept on a support operand ``B`` is reused when it holds every
    column above twice the threshold and none below half of it (query batches with
    slightly different densities then share one split of the support instead of each
    computing its own).
    """
    memo = getattr(B, _MEMO, None)
    if memo:
        must, never = work > 2 * DENSE_COLUMN_THRESHOLD, work < 0.5 * DENSE_COLUMN_THRESHOLD
        for key in list(memo):  # a snapshot: other threads may add splits meanwhile
            if isinstance(key, tuple) and key[0] == "split":
                J = np.frombuffer(key[1], dtype=np.intp)
                inside = np.zeros(work.size, dtype=bool)
                inside[J] = True
                if not (must & ~inside).any() and not (never & inside).any():
                    return J
    return np.flatnonzero(work > DENSE_COLUMN_THRESHOLD)


def _split_dense_columns(A, J):
    """``(A without the columns J, A[:, J] dense)`` for a CSR ``A``."""
    dense = A[:, J].toarray()
    drop = np.zeros(A.shape[1], dtype=bool)
    drop[J] = True
    rest = A.copy()
    rest.data[drop[rest.indices]] = 0
    rest.eliminate_zeros()
    return rest, dense


def _right_operand(B, J):
    """``(B without the columns J, transposed to CSR;  B[:, J] dense)`` (read-only: they may
    be kept in a support operand's memo)."""
    B_J = None
    if J.size:
        B, B_J = _split_dense_columns(B, J)
    Bt = B.T.tocsr()
    for a in (Bt.data, Bt.indices, Bt.indptr) + (() if B_J is None else (B_J,)):
        a.flags.writeable = False
    return Bt, B_J


def _sparse_sparse(A, Bt, out):
    """Dense ``A Bt`` of two CSR matrices (``Bt``: the right operand transposed) written
    into ``out`` (overwritten)."""
    try:
        from sklearn.utils.sparsefuncs import sparse_matmul_to_dense
    except ImportError:  # scikit-learn < 1.7
        out[...] = (A @ Bt).toarray()
        return out
    return sparse_matmul_to_dense(A, Bt, out=out)


def _sparse_dense(A, B, out):
    """``A B^T`` for CSR ``A`` and dense ``B`` into ``out``; row blocks of ``A`` in
    parallel (scipy's CSR x dense kernel is single-threaded but releases the GIL)."""
    Bt = np.ascontiguousarray(B.T)

    def work(sl):
        out[sl] = A[sl] @ Bt

    for_row_blocks(work, A.shape[0], size=A.nnz * Bt.shape[1])
    return out


def gram(A, B, alpha=1.0, L=None, R=None):
    """``alpha A B^T (+ L R^T)`` as a C-ordered ndarray of shape (n_a, n_b).

    Parameters
    ----------
    A, B : ndarray or CSR matrix of shapes (n_a, d) and (n_b, d), same float dtype
    alpha : float
    L, R : ndarray of shapes (n_a, k) and (n_b, k), optional
        Dense low-rank term added to the product (see the module docstring).
    """
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(f"the two sample sets must have the same number of features: got shapes "
                         f"{A.shape} and {B.shape} (expected (n_a, d) and (n_b, d))")
    dtype = np.result_type(A.dtype, B.dtype)
    n_a, n_b = A.shape[0], B.shape[0]
    has_lr = L is not None
    if not has_lr:
        L, R = np.zeros((n_a, 0), dtype), np.zeros((n_b, 0), dtype)
    if not sp.issparse(A) and not sp.issparse(B):
        # one GEMM on [alpha A, L] [B, R]^T
        if has_lr:
            LA = np.hstack([np.multiply(A, alpha, dtype=dtype), L.astype(dtype)])
            return add_outer(np.empty((n_a, n_b), dtype=dtype), LA, np.hstack([B, R.astype(dtype)]), beta=0.0)
        return add_outer(np.empty((n_a, n_b), dtype=dtype), A, B, beta=0.0, alpha=alpha)
    out = np.empty((n_a, n_b), dtype=dtype)
    if sp.issparse(A) and sp.issparse(B):
        if B.dtype != dtype or B.format != "csr":  # a converted copy: its memo does not apply
            B = sp.csr_matrix(B, dtype=dtype)
        A = sp.csr_matrix(A, dtype=dtype)
        dens_a = np.bincount(A.indices, minlength=A.shape[1]) / max(n_a, 1)
        dens_b = _memo(B, "density", lambda: np.bincount(B.indices, minlength=B.shape[1]) / max(n_b, 1))
        J = _dense_columns(B, dens_a * dens_b)
        # only B loses its dense columns: A's entries in them then meet empty columns of B
        # in the sparse product (a few skipped lookups), which saves A's copy
        Bt, B_J = _memo(B, ("split", J.tobytes()), lambda: _right_operand(B, J))
        if J.size:
            L = np.hstack([np.multiply(A[:, J].toarray(), alpha, dtype=dtype), L])
            R = np.hstack([B_J, R])
        _sparse_sparse(A.multiply(alpha).tocsr() if alpha != 1 else A, Bt, out)
    elif sp.issparse(A):
        _sparse_dense(sp.csr_matrix(A * alpha, dtype=dtype), np.asarray(B, dtype=dtype), out)
    else:
        out_t = np.empty((n_b, n_a), dtype=dtype)
        _sparse_dense(sp.csr_matrix(B * alpha, dtype=dtype), np.asarray(A, dtype=dtype), out_t)
        out[...] = out_t.T
    if L.shape[1]:
        add_outer(out, L, R)
    return out
