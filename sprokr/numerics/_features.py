"""Sketched kernel features ``K R^T`` and the sketched feature map ``D^-1/2 U^T R k(., z)``.

Shared by the input side (SIOKR, sketched kernel machines) and the output side (ISOKR,
DSOKR): for a kernel ``k``, a sketch ``R = W S`` (m x n) and its support points
``Z_S = Z[indices]`` (the m' samples with a non-null column),

* ``block(Zq)`` = ``k(Zq, Z) R^T = k(Zq, Z_S) W^T`` (q x m): only the kernel columns of
  the support are computed (decomposition trick), so no pass ever needs the n samples;
* ``support_rows()`` = ``(K R^T)[indices] = k(Z_S, Z_S) W^T`` (m' x m), from the support
  alone; it gives ``K~ = R K R^T = W (K R^T)[indices]``;
* ``fit_basis()`` takes a whitening basis ``B`` (m x r, ``B^T K~ B = I_r``, ``r`` the
  numerical rank of ``K~``) and ``transform(Zq)`` = ``block(Zq) B`` (q x r) is the feature
  map ``psi~`` (output side) or ``z`` (input side) whose inner products are the
  Nystrom-type approximation ``k(a, b) ~ k_a^T R^T K~^+ R k_b``.  Up to
  :data:`EIGH_BASIS_MAX_M` rows ``B = U D^-1/2`` from the eigenpairs of ``K~`` (features
  ordered by variance); above, ``B = P_r L_11^-T`` from its pivoted Cholesky factorisation
  (:class:`~sprokr.numerics.Whitening`).  Any two such bases differ by an orthogonal
  rotation of the features, which leaves every inner product -- hence the ridges, the
  projections and the decoding -- unchanged; the factorisation is ~m^3/3 BLAS-3 flops where
  the eigendecomposition's tridiagonalisation is memory-bound (measured on the 2-core
  machine: m = 3200, 16 s against 2.3 s).

Support points that are equal samples (outputs repeat: Bibtex has 2058 distinct label
sets among 4880 documents) share one kernel column: :meth:`SketchedFeatures.from_support`
merges their columns of ``W`` (exact, since ``k(., z_i) = k(., z_j)`` when ``z_i = z_j``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike
import scipy.linalg as sla
import scipy.sparse as sp

from ..utils import iter_chunks, num_samples, take, take_slice, unique_inverse
from ._linalg import matmul, psd_eigh
from ._products import check_gram_block
from ._whiten import Whitening, solve_lower_rows, triangular_basis

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from ..types import KernelLike as Kernel, Samples
    from ._sketch_matrix import SketchMatrix

__all__ = ["SketchedFeatures", "KernelRows", "default_chunk_size", "EIGH_BASIS_MAX_M", "BASIS_ROUTES"]

#: ``basis="auto"``: eigenvectors up to this sketch size, pivoted Cholesky above (at this
#: size the eigendecomposition takes well under a second; above it, it dominates the fits)
EIGH_BASIS_MAX_M = 1000
#: the routes of :meth:`SketchedFeatures.fit_basis`
BASIS_ROUTES = ("auto", "eigh", "cholesky")


def default_chunk_size(width: int, dtype: DTypeLike, budget_mb: float = 64) -> int:
    """Rows per chunk so that a (chunk x width) block fits in ``budget_mb``.

    Parameters
    ----------
    width : int
        Columns of the block.
    dtype : dtype
        Dtype of the block.
    budget_mb : float, default=64
        Memory budget of one block, in MiB (the result is clipped to 128 .. 8192 rows).
    """
    return int(max(128, min(8192, budget_mb * 2**20 // (max(width, 1) * np.dtype(dtype).itemsize))))


class KernelRows:
    """``Zq -> k(Zq, Z)`` as an array of ``dtype``: the rows of a Gram block, for a chunked pass.

    Parameters
    ----------
    kernel : Kernel
        The kernel.
    Z : samples
        The samples of the block's columns.
    dtype : dtype, default=numpy.float64
        Dtype of the returned rows.
    """

    def __init__(self, kernel: Kernel, Z: Any, dtype: DTypeLike = np.float64) -> None:
        self.kernel, self.Z, self.dtype = kernel, Z, np.dtype(dtype)

    def __call__(self, Zq: Any) -> np.ndarray:
        return np.asarray(check_gram_block(self.kernel.pairwise(Zq, self.Z), (num_samples(Zq), num_samples(self.Z)),
                                           f"kernel {type(self.kernel).__name__}"), dtype=self.dtype)


class SketchedFeatures:
    """``K R^T`` blocks and the rank-revealing sketched feature map for one kernel.

    Parameters
    ----------
    kernel : Kernel
    R : SketchMatrix of shape (m, n)
        The sketch.
    support : samples
        Prepared collection of the m' support samples ``Z[R.indices]``.
    dtype : dtype
        Dtype of the kernel blocks and products.
    rcond : float
        Relative threshold of the feature map (on the eigenvalues of ``K~``, or on the
        pivots of its Cholesky factorisation, relative to the largest one / to ``max diag K~``).
    basis : {"auto", "eigh", "cholesky"}, default="auto"
        The whitening basis of ``K~`` (see the module doc; "auto": eigenvectors up to
        :data:`EIGH_BASIS_MAX_M` rows, pivoted Cholesky above).

    Attributes
    ----------
    basis_ : ndarray of shape (m, r) or None
        ``B`` with ``B^T K~ B = I_r`` after :meth:`fit_basis`: ``U D^-1/2`` or ``P_r L_11^-T``.
        On the Cholesky route with a sparse or scaled sketch it is formed on first access
        only: the feature map solves with ``L_11`` instead (half the flops of the product
        with ``L_11^-T``, and no triangular inverse); :meth:`basis_times` and
        :meth:`basis_transpose_times` apply ``B`` without forming it.
    eigenvalues_ : ndarray of shape (r,) or None
        The kept eigenvalues of ``K~`` (eigen route) or the pivots ``L_jj^2`` (Cholesky
        route), decreasing.
    """

    #: attribute types for the type checker (set in __init__ / fit)
    basis_: Any  # None before fit_basis
    eigenvalues_: Any
    _map: Any
    _chol: Any  # (sel, L_11) of the Cholesky route when the map solves with L_11, else None

    def __init__(self, kernel: Kernel, R: SketchMatrix, support: Any, dtype: DTypeLike, rcond: float,
                 basis: str = "auto") -> None:
        if basis not in BASIS_ROUTES:
            raise ValueError(f"basis must be one of {', '.join(map(repr, BASIS_ROUTES))}, got {basis!r}")
        if num_samples(support) != R.indices.size:
            raise ValueError(f"{num_samples(support)} support samples for a sketch with "
                             f"{R.indices.size} non-null columns")
        self.kernel = kernel
        self.R = R
        self.Z_sel = support
        self.dtype = np.dtype(dtype)
        self.rcond = rcond
        self.basis = basis
        self.basis_ = None
        self.eigenvalues_ = None
        self._map = self._chol = None

    def __getattr__(self, name: str) -> Any:
        # basis_ of the triangular route, formed on first access (see the class doc);
        # called only for attributes not found the normal way
        chol = self.__dict__.get("_chol") if name == "basis_" else None
        if chol is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        B = triangular_basis(chol[0], chol[1], self.R.m).astype(self.dtype)
        self.__dict__["basis_"] = B
        return B

    @classmethod
    def from_support(cls, kernel: Kernel, R: SketchMatrix, raw_support: Samples, dtype: DTypeLike, rcond: float,
                     merge_duplicates: bool = True, prepared: Any | None = None) -> tuple[Self, np.ndarray]:
        """Features from RAW support OUTPUTS ``Z[R.indices]`` (``kernel.prepare_outputs``),
        equal samples merged.

        ``prepared``, if given, is the same samples already prepared as training samples
        (a precomputed kernel knows its training rows only when prepared from the full Gram).

        Returns the features (whose ``R`` may have fewer non-null columns, same ``K R^T``)
        and the position, in ``raw_support``, of each kept support sample.
        """
        keep = np.arange(num_samples(raw_support))
        if merge_duplicates and keep.size > 1:
            first, inverse = unique_inverse(raw_support)
            if first.size < keep.size:
                R = R.merge_columns(inverse, first)
                keep = first
        sub = keep.size < num_samples(raw_support)
        if prepared is not None:
            support = take(prepared, keep) if sub else prepared
        else:
            support = kernel.prepare_outputs(take(raw_support, keep) if sub else raw_support)
        return cls(kernel, R, support, dtype, rcond), keep

    @property
    def m(self) -> int:
        return self.R.m

    @property
    def thread_safe(self) -> bool:
        """True when :meth:`block` and :meth:`transform` may run in several threads at once:
        a thread-safe kernel (:attr:`sprokr.kernels.Kernel.thread_safe`; a selection's
        caching kernel, whose memo is shared state, is not)."""
        return bool(getattr(self.kernel, "thread_safe", False))

    @property
    def rank(self) -> int:
        chol = getattr(self, "_chol", None)  # (features saved before the triangular route: none)
        return chol[1].shape[0] if chol is not None else self.basis_.shape[1]

    @property
    def fitted(self) -> bool:
        """True once :meth:`fit_basis` has run (or the features were loaded fitted)."""
        return getattr(self, "_chol", None) is not None or self.__dict__.get("basis_") is not None

    def basis_times(self, C: np.ndarray) -> np.ndarray:
        """``B C`` (m x k, float64) for ``C`` (r x k): coefficients on the sketch's m columns."""
        C = np.asarray(C, dtype=np.float64)
        chol = getattr(self, "_chol", None)
        if chol is None:
            return np.asarray(self.basis_, dtype=np.float64) @ C
        sel, L = chol
        out = np.zeros((self.R.m,) + C.shape[1:])
        if sel.size:
            out[sel] = sla.solve_triangular(np.asarray(L, dtype=np.float64), C, lower=True, trans="T",
                                            check_finite=False)
        return out

    def basis_transpose_times(self, P: np.ndarray) -> np.ndarray:
        """``B^T P`` (r x k, float64) for ``P`` (m x k)."""
        P = np.asarray(P, dtype=np.float64)
        chol = getattr(self, "_chol", None)
        if chol is None:
            return np.asarray(self.basis_, dtype=np.float64).T @ P
        sel, L = chol
        if not sel.size:
            return np.zeros((0,) + P.shape[1:])
        return sla.solve_triangular(np.asarray(L, dtype=np.float64), P[sel], lower=True, check_finite=False)

    def kernel_block(self, Zq: Any, support: Any = None) -> np.ndarray:
        """``k(Zq, Z_S)`` of shape (len(Zq), m'), checked for shape and finiteness; with
        ``support`` (prepared samples, e.g. some of the support points) ``k(Zq, support)``."""
        Z = self.Z_sel if support is None else support
        KS = check_gram_block(self.kernel.pairwise(Zq, Z), (num_samples(Zq), num_samples(Z)),
                              f"kernel {type(self.kernel).__name__}")
        return np.asarray(KS, dtype=self.dtype)

    def block(self, Zq: Any) -> np.ndarray:
        """``k(Zq, Z) R^T`` of shape (len(Zq), m)."""
        return self.R.apply_right(self.kernel_block(Zq), overwrite=True)

    def support_rows(self) -> np.ndarray:
        """``(K R^T)[indices]`` (m' x m): the rows of ``K R^T`` at the support points.

        Computed over row chunks of the support: a dense sketch (Gaussian, CountSketch)
        has all n samples as support, and one block would be the n x n Gram.
        """
        m1 = num_samples(self.Z_sel)
        chunk = default_chunk_size(m1, self.dtype)
        if m1 <= chunk:
            return self.block(self.Z_sel)
        out = np.empty((m1, self.m), dtype=self.dtype)
        for sl in iter_chunks(m1, chunk):
            out[sl] = self.block(take_slice(self.Z_sel, sl))
        return out

    def _memo(self, name, samples, compute):
        """``compute()`` through the kernel's memo (:meth:`sprokr.kernels.Kernel.memo`): a kernel
        serving a model selection keeps the basis and the features of the samples it knows,
        for the next fit with the same support, sketch and threshold."""
        memo = getattr(self.kernel, "memo", None)
        support = getattr(self.Z_sel, "idx", None)  # the support's positions, when it is a view
        if memo is None or not isinstance(support, np.ndarray):
            return compute()
        return memo(name, samples, compute, key=(self.R, float(self.rcond), self.dtype.str, support))

    @property
    def basis_route(self) -> str:
        """``"eigh"`` or ``"cholesky"``: the route :meth:`fit_basis` takes for this sketch size."""
        route = getattr(self, "basis", "auto")  # (features saved before the option: eigh)
        if route == "auto":
            return "eigh" if self.R.m <= EIGH_BASIS_MAX_M else "cholesky"
        return route

    def fit_basis(self, rows: np.ndarray | None = None) -> Self:
        """Whitening basis ``B`` of ``K~ = R K R^T`` (from :meth:`support_rows`), ``B^T K~ B = I_r``."""
        def compute():
            Kt = self.R.sandwich_from_rows(np.asarray(self.support_rows() if rows is None else rows,
                                                      dtype=np.float64))
            # psi~ = k(., Z_S) W^T B.  A dense W (Gaussian sketch) is folded into one
            # (m' x r) map W^T B; a sparse or scaled one (sub-sampling, p-sparsified) is
            # applied to each block instead (cheap), which keeps one m x r matrix, not two
            # (at m ~ n the memo of a selection holds these)
            fold = self.R.scale is None and not sp.issparse(self.R.weights)
            if self.basis_route == "eigh":
                U, d = psd_eigh(Kt, self.rcond)
                B = U / np.sqrt(d)
            else:
                w = Whitening(Kt, self.rcond)
                d = np.diag(w.L) ** 2
                if not fold:  # the map solves with L_11 (trsm): no inverse, half the flops
                    return d, None, None, (w.sel, np.asfortranarray(w.L, dtype=self.dtype))
                B = w.basis()
            Bd = B.astype(self.dtype)
            return d, Bd, (np.ascontiguousarray(self.R.apply_left_transpose(B), dtype=self.dtype) if fold else None), None

        # rows given by the caller are K R^T's support rows, which the samples determine
        self.eigenvalues_, B, self._map, self._chol = self._memo("sketched feature basis", self.Z_sel, compute)
        if B is None:
            self.__dict__.pop("basis_", None)  # formed on first access (__getattr__)
        else:
            self.basis_ = B
        return self

    def inner(self, Za: Any, Zb: Any) -> np.ndarray:
        """``transform(Za) transform(Zb)^T`` (n_a x n_b, float64) without the features of ``Za``.

        On the triangular route ``transform(Z) = A_S L_11^-T`` (``A_S``: the pivot columns
        of ``k(Z, Z_S) R^T``), so the product is ``A_S(Za) Y`` with ``Y = L_11^-T
        transform(Zb)^T`` (one ``r x r x n_b`` solve): for ``n_a`` rows it costs
        ``n_a r n_b`` flops instead of ``n_a r^2`` (forming the features) + ``n_a r n_b``.
        Other routes multiply the features.  Computed over row chunks of ``Za``.
        """
        Hb = np.asarray(self.transform(Zb), dtype=np.float64)  # (n_b, r)
        n_a = num_samples(Za)
        out = np.empty((n_a, Hb.shape[0]))
        chol = getattr(self, "_chol", None)
        if chol is not None:
            Y = sla.solve_triangular(np.asarray(chol[1], dtype=np.float64), Hb.T, lower=True, trans="T",
                                     check_finite=False)  # (r, n_b)
        for sl in iter_chunks(n_a, default_chunk_size(self.R.indices.size, self.dtype)):
            Zc = take_slice(Za, sl)
            if chol is None:
                out[sl] = matmul(np.asarray(self.transform(Zc), dtype=np.float64), Hb.T)
            else:
                out[sl] = matmul(self._pivot_columns(self.kernel_block(Zc), np.float64), Y)
        return out

    def _pivot_columns(self, KS, dtype):
        """``A_S``: the pivot columns of ``KS R^T`` (triangular route), in ``dtype``."""
        A = self.R.apply_right(KS, overwrite=True)
        return np.take(A, self._chol[0], axis=1).astype(dtype, copy=False)

    def transform(self, Zq: Any, dedupe: bool = True) -> np.ndarray:
        """Sketched feature map of prepared samples, shape (len(Zq), rank).

        ``dedupe``: for array samples with many repeated rows (label sets), the kernel
        block is computed once per distinct row of ``Zq``.
        """
        if not self.fitted:
            raise ValueError("the feature map has no basis yet: call fit_basis() first")
        n = num_samples(Zq)
        if dedupe and n >= 64 and (isinstance(Zq, np.ndarray) or sp.issparse(Zq)):
            first, inverse = unique_inverse(Zq)
            if first.size <= 0.75 * n:
                return self.transform(take(Zq, first), dedupe=False)[inverse]
        return self._memo("sketched features", Zq, lambda: self._features(Zq))

    def _features(self, Zq):
        KS = self.kernel_block(Zq)
        chol = getattr(self, "_chol", None)
        if chol is not None:  # (K_S W^T) P_r L_11^-T by a triangular solve of the pivot columns
            return solve_lower_rows(self._pivot_columns(KS, chol[1].dtype), chol[1])
        if self._map is None or (self.R.scale is None and self.R.indices.size > 1.5 * self.R.m
                                 and sp.issparse(self.R.weights)):
            # a sparse W (p-sparsified sketches) or a scaling (sub-sampling): (K_S W^T) B
            # costs 2 q (nnz + m r) flops, no more than 2 q m' r with a folded map
            return matmul(self.R.apply_right(KS, overwrite=True), self.basis_)
        return matmul(KS, self._map)

    __call__ = transform
