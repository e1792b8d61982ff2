"""Dense linear algebra used by every estimator: PSD factorizations and solves.

One place for the numerics the papers share:

* ``psd_eigh``: eigenpairs of a PSD matrix above a *relative* threshold -- the
  pseudo-inverse / rank-revealing step of SISOKR (``K~_Y^+``), DSOKR and the sketched
  kernel machines (``z(x) = D^-1/2 U^T R k^x``).
* ``psd_solve``: ``G^+ B`` for a PSD ``G``.  A Cholesky factorization (cost m^3/3, no
  shift: nothing is added to ``G``) is tried first; if ``G`` is numerically indefinite,
  the eigendecomposition pseudo-inverse with the relative threshold ``rcond`` is used.
  The two routes agree whenever ``G`` is numerically positive definite *and* well
  conditioned; when it is not, neither is accurate (see :func:`sprokr.numerics.sketched_ridge`,
  which detects that case and solves a least-squares problem instead).
* ``cholesky_rcond``: LAPACK's O(m^2) estimate of the reciprocal condition number of a
  matrix from its Cholesky factor -- the cheap check that decides whether a
  normal-equation solve can be trusted.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager, nullcontext
from typing import Any, Callable, Iterator

import numpy as np
import scipy.linalg as sla
from scipy.linalg import get_blas_funcs, lapack

from ._parallel import in_fold_thread


__all__ = ["matmul", "psd_eigh", "psd_solve", "cholesky_solve", "cholesky_solver",
           "cholesky_factor_inplace", "cholesky_factor_solve", "cholesky_rcond", "sym_norm1", "triangular_gram",
           "DEFAULT_RCOND", "factorisation_threads", "single_blas_thread", "SINGLE_THREAD_MAX_ORDER",
           "small_work_threads", "SINGLE_THREAD_MAX_WORK"]

#: default relative threshold on eigenvalues (relative to the largest one)
DEFAULT_RCOND = 1e-10

#: dense factorisations (potrf, pstrf, syevd) up to this order run on one BLAS thread.
#: OpenBLAS's threaded factorisations busy-wait on a loaded machine: measured at load 15 on
#: the 2-core machine, a 2250 x 2250 potrf took 4.0-4.7 s threaded against 0.22-0.28 s on
#: one thread (the threaded one saves ~20 % at this size on a quiet machine)
SINGLE_THREAD_MAX_ORDER = 3000
_CONTROLLER: Any = None
#: the BLAS limit is process-wide, so the threads inside :func:`single_blas_thread` share
#: one: the first to enter applies it, the last to leave restores the original limits
#: (each restoring what it found on entering would leave BLAS on one thread for good
#: when two such regions overlap, or unlimit one still running)
_LIMIT_LOCK = threading.Lock()
_LIMIT_HOLDERS = 0
_LIMIT: Any = None


def factorisation_threads(order: int) -> Any:
    """Context limiting BLAS to one thread for a factorisation of ``order`` up to
    :data:`SINGLE_THREAD_MAX_ORDER` (threadpoolctl; a no-op above it or without it)."""
    if order > SINGLE_THREAD_MAX_ORDER:
        return nullcontext()
    return single_blas_thread()


#: a sketched ridge whose BLAS work is at most this many multiply-adds runs on one BLAS
#: thread (:func:`small_work_threads`)
SINGLE_THREAD_MAX_WORK = 2e9


def small_work_threads(work: float) -> Any:
    """Context limiting BLAS to one thread for a computation of ``work`` multiply-adds up
    to :data:`SINGLE_THREAD_MAX_WORK` (a no-op above it).

    Such a computation is a sequence of short BLAS calls between elementwise passes that
    run on the cores in the library's own threads (kernel values, sparse sketch products):
    threaded BLAS gains little there, and its idle threads -- numpy and scipy each bring
    their own OpenBLAS -- compete with those passes.  rf1's sketched fit (n = 4108,
    m = 100; ~5e8 multiply-adds) took 56-72 ms (medians of 15 fits, alternating processes)
    with two BLAS threads and 43-45 ms with one; Bibtex SISOKR's (2.5e10) needs both
    threads (0.87 s vs 1.14 s).

    Parameters
    ----------
    work : float
        Number of multiply-adds of the computation.
    """
    return single_blas_thread() if work <= SINGLE_THREAD_MAX_WORK else nullcontext()


def single_blas_thread() -> Any:
    """Context limiting BLAS to one thread (threadpoolctl; a no-op without it): for work
    that runs several BLAS calls at once in its own threads.  Threads inside it at once
    share the limit: the original limits come back when the last of them leaves."""
    global _CONTROLLER
    if _CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a dependency of scikit-learn
            _CONTROLLER = False
        else:
            _CONTROLLER = ThreadpoolController()
    return nullcontext() if _CONTROLLER is False else _shared_blas_limit(_CONTROLLER)


@contextmanager
def _shared_blas_limit(controller: Any) -> Iterator[None]:
    """One BLAS thread while any thread is inside; the original limits restored by the last out."""
    global _LIMIT_HOLDERS, _LIMIT
    with _LIMIT_LOCK:
        if _LIMIT_HOLDERS == 0:
            _LIMIT = controller.limit(limits=1, user_api="blas")
        _LIMIT_HOLDERS += 1
    try:
        yield
    finally:
        with _LIMIT_LOCK:
            _LIMIT_HOLDERS -= 1
            if _LIMIT_HOLDERS == 0:
                limit, _LIMIT = _LIMIT, None
                limit.restore_original_limits()


def _as_blas_operand(X):
    """``(F-ordered array, trans)`` with ``op(array) = X`` for BLAS, copying only if needed."""
    if X.flags.f_contiguous:
        return X, 0
    if X.flags.c_contiguous:
        return X.T, 1
    return np.asfortranarray(X), 0


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` (C-ordered; a matrix and a vector too) through scipy's BLAS, for the
    products of the solvers.

    numpy and scipy each bundle their own OpenBLAS with its own thread pool, and an
    OpenBLAS pool keeps spinning for a while after each call: a numpy product followed
    by a scipy LAPACK call (Cholesky, eigh) makes the two pools fight for the cores
    (a 200 x 200 eigh after a large numpy product: 80 ms instead of 9 ms).  The hot
    paths therefore use scipy's BLAS only (``syrk``, ``gemm``, ``potrf``, ``syevd``).

    Parameters
    ----------
    A : ndarray of shape (m, k) or (k,)
        Left operand.
    B : ndarray of shape (k, n) or (k,)
        Right operand.
    """
    dtype = np.result_type(A.dtype, B.dtype)
    if dtype not in (np.float32, np.float64) or in_fold_thread():
        # (in a fold thread BLAS has one thread, and numpy's product releases the GIL
        # where scipy's wrappers hold it: the threads multiply at once)
        return A @ B
    A, B = np.asarray(A, dtype=dtype), np.asarray(B, dtype=dtype)
    if A.ndim == 1 and B.ndim == 2:  # a vector times a matrix, as numpy: (k,) @ (k, n) -> (n,)
        return matmul(A[None, :], B)[0]
    if A.ndim == 2 and B.ndim == 1:  # (m, k) @ (k,) -> (m,): even a short gemv in numpy would wake its pool
        return matmul(A, B[:, None])[:, 0]
    if A.ndim != 2 or B.ndim != 2 or 0 in A.shape or 0 in B.shape:
        return A @ B
    gemm = get_blas_funcs("gemm", dtype=dtype)
    # C^T = B^T A^T is what BLAS writes in Fortran order, i.e. C in C order
    a, ta = _as_blas_operand(B.T)
    b, tb = _as_blas_operand(A.T)
    return gemm(1.0, a, b, trans_a=ta, trans_b=tb).T


def psd_eigh(K: np.ndarray, rcond: float = DEFAULT_RCOND, lower_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs ``(U, d)`` of a symmetric PSD matrix, keeping ``d > rcond * max(d)``.

    Parameters
    ----------
    K : ndarray of shape (m, m)
    rcond : float
        Relative threshold; eigenvalues below ``rcond * d_max`` are treated as zero.
    lower_only : bool
        Only the lower triangle of ``K`` is meaningful (otherwise ``K`` is symmetrised,
        since accumulated sums drift).

    Returns
    -------
    U : ndarray of shape (m, r)
        Orthonormal eigenvectors, by decreasing eigenvalue.
    d : ndarray of shape (r,)
        The kept eigenvalues, decreasing, all > 0.  ``r`` is the numerical rank.
    """
    K = np.asarray(K)
    Ks = K if lower_only else (K + K.T) * 0.5
    # divide and conquer: faster than the default MRRR driver at every size measured
    # (100 x 100: 2 ms vs 5 ms; large matrices: several times)
    with factorisation_threads(Ks.shape[0]):
        d, U = sla.eigh(Ks, lower=True, driver="evd", check_finite=False)
    d, U = d[::-1], U[:, ::-1]
    dmax = d[0] if d.size else 0.0
    if not dmax > 0:
        return U[:, :0], d[:0]
    keep = d > rcond * dmax
    return np.ascontiguousarray(U[:, keep]), d[keep]


def cholesky_factor_inplace(A: np.ndarray, lower: bool = True) -> np.ndarray:
    """Lower Cholesky factor of a symmetric positive definite ``A``, computed in place.

    LAPACK ``potrf`` in ``A``'s precision (float32 or float64) on its lower triangle in
    Fortran order; a C-ordered ``A`` is read as its transpose, which is only right because
    ``A`` is symmetric.  ``A`` is overwritten (no m x m copy, unlike ``scipy.linalg.
    cho_factor``).  Returns the factor (a view of ``A``'s memory); raises
    ``numpy.linalg.LinAlgError`` if ``A`` is numerically indefinite.  ``lower=False``: a
    Fortran-ordered ``A``'s upper triangle is read and ``U`` with ``A = U^T U`` returned
    (for ``scipy.linalg.cho_solve((U, False), B)``).

    Parameters
    ----------
    A : ndarray of shape (m, m), float32 or float64
        Symmetric positive definite matrix, overwritten by its factor.
    lower : bool, default=True
        Return the lower factor ``L`` (``A = L L^T``); ``False``: the upper factor ``U`` of
        a Fortran-ordered ``A``.
    """
    potrf = lapack.get_lapack_funcs("potrf", (A,))
    if not lower:
        if not A.flags.f_contiguous:
            raise ValueError("lower=False needs a Fortran-ordered matrix")
        with factorisation_threads(A.shape[0]):
            U, info = potrf(A, lower=0, overwrite_a=1, clean=0)
        if info != 0:
            raise np.linalg.LinAlgError(f"matrix not positive definite (leading minor {info})")
        return U
    with factorisation_threads(A.shape[0]):
        L, info = potrf(A.T if A.flags.c_contiguous else A, lower=1, overwrite_a=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"matrix not positive definite (leading minor {info})")
    return L


def triangular_gram(T: np.ndarray, lower: bool = True) -> np.ndarray:
    """``L^T L`` of a lower triangular ``L``, or ``U U^T`` of an upper triangular ``U``.

    LAPACK ``lauum``: ``r^3 / 3`` flops against a GEMM's ``2 r^3``, which ignores the
    zeros (5436 x 5436: 1.2 s against 3.1 s).  Only ``T``'s triangle is read; the product
    comes back in the same triangle of a new Fortran-ordered float64 array (the other
    strict triangle holds ``T``'s entries there: not meaningful).  One thread up to
    :data:`SINGLE_THREAD_MAX_ORDER`, like the factorisations (its threaded OpenBLAS version
    busy-waits on a loaded machine: 2250 x 2250, 0.5-4.7 s against 0.23-0.29 s on one
    thread with six busy processes beside it).

    Parameters
    ----------
    T : ndarray of shape (r, r)
        Triangular factor (only its ``lower`` / upper triangle is read).
    lower : bool, default=True
        ``T`` is lower triangular (``L^T L``); False: upper (``U U^T``).
    """
    G = np.array(T, dtype=np.float64, order="F")
    if G.shape[0]:
        with factorisation_threads(G.shape[0]):
            G, info = lapack.dlauum(G, lower=int(lower), overwrite_c=1)
        if info != 0:  # pragma: no cover - malformed arguments
            raise ValueError(f"LAPACK lauum failed (info={info})")
    return G


def cholesky_factor_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``(L L^T)^-1 B`` for a lower factor from :func:`cholesky_factor_inplace`.

    Parameters
    ----------
    L : ndarray of shape (m, m)
        Lower Cholesky factor (Fortran-ordered, as :func:`cholesky_factor_inplace` returns it).
    B : ndarray of shape (m, k) or (m,)
        Right-hand sides.
    """
    X, info = lapack.get_lapack_funcs("potrs", (L,))(L, B, lower=1)
    if info != 0:  # pragma: no cover - only for malformed arguments
        raise ValueError(f"LAPACK potrs failed (info={info})")
    return X


def sym_norm1(G: np.ndarray, lower_only: bool = False, work: np.ndarray | None = None) -> float:
    """1-norm (max column sum of ``|G|``) of a symmetric matrix, from its lower triangle
    when ``lower_only`` (O(m^2), no copy of the triangle's complement is trusted).

    Parameters
    ----------
    G : ndarray of shape (m, m)
        Symmetric matrix.
    lower_only : bool, default=False
        Read only the lower triangle of ``G``.
    work : ndarray of shape (m, m), optional
        A C-ordered float array of G's shape to use as scratch (overwritten); used only
        with ``lower_only``, and ignored unless its shape, order and dtype match ``G``.
    """
    G = np.asarray(G)
    if not lower_only:
        return float(np.abs(G).sum(axis=0).max(initial=0.0))
    # |G|'s lower triangle as the upper one of its transpose (C-ordered for a Fortran G:
    # one pass of abs, one masked store, no triangular copies)
    ok = work is not None and work.shape == G.shape and work.flags.c_contiguous and work.dtype == G.dtype
    U = np.abs(G.T, out=work if ok else None)
    U[np.tri(U.shape[0], U.shape[1], -1, dtype=bool)] = 0.0
    return float((U.sum(axis=0) + U.sum(axis=1) - np.diag(U)).max(initial=0.0))


def cholesky_rcond(L: np.ndarray, anorm: float) -> float:
    """Estimate of ``1 / (|G|_1 |G^-1|_1)`` from the lower Cholesky factor ``L`` of ``G``.

    LAPACK ``pocon`` (Higham's 1-norm estimator, O(m^2), usually within a factor 3 of the
    truth); ``anorm`` is ``|G|_1`` (:func:`sym_norm1`) of the matrix *before* factorising.

    Parameters
    ----------
    L : ndarray of shape (m, m)
        Lower Cholesky factor of ``G`` (:func:`cholesky_factor_inplace`).
    anorm : float
        ``|G|_1`` of the matrix before factorising (:func:`sym_norm1`).
    """
    if L.shape[0] == 0:
        return 1.0
    pocon = lapack.get_lapack_funcs("pocon", (L,))
    rc, info = pocon(L.T if L.flags.c_contiguous else L, anorm, uplo="U" if L.flags.c_contiguous else "L")
    if info != 0:  # pragma: no cover - only for malformed arguments
        raise ValueError(f"LAPACK pocon failed (info={info})")
    return float(rc)


def cholesky_solve(G: np.ndarray, B: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """``G^-1 B`` by Cholesky, reading the lower triangle of ``G`` only.

    Nothing is added to ``G`` (no regularising shift).  ``overwrite=True`` lets a
    Fortran-ordered float64 ``G`` be factorised in place (saves an m x m copy).  Raises
    ``numpy.linalg.LinAlgError`` if ``G`` is numerically indefinite.

    Parameters
    ----------
    G : ndarray of shape (m, m)
        Symmetric positive definite matrix (lower triangle read).
    B : ndarray of shape (m, k) or (m,)
        Right-hand sides.
    overwrite : bool, default=False
        Let a Fortran-ordered float64 ``G`` be overwritten by its factor.
    """
    # LAPACK's layout, factorised in place; OpenBLAS potrf/potrs directly (scipy's
    # cho_factor copies C-ordered input once more and checks both triangles for nothing)
    Gs = G if overwrite and G.flags.f_contiguous and G.dtype == np.float64 else np.array(G, np.float64, order="F")
    return cholesky_factor_solve(cholesky_factor_inplace(Gs), B)


def cholesky_solver(G: np.ndarray, rcond: float = DEFAULT_RCOND,
                    lower_only: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    """Return a function ``B -> G^+ B`` for a PSD ``G``.

    Cholesky of ``G`` as it is (no shift); if ``G`` is numerically indefinite, the
    eigendecomposition pseudo-inverse with relative threshold ``rcond``.  ``G`` is not
    modified; with ``lower_only=True`` only its lower triangle is read.

    Parameters
    ----------
    G : ndarray of shape (m, m)
        Symmetric PSD matrix.
    rcond : float, default=DEFAULT_RCOND
        Relative eigenvalue threshold of the pseudo-inverse fallback.
    lower_only : bool, default=False
        Only the lower triangle of ``G`` is meaningful (in the fallback).
    """
    G = np.asarray(G, dtype=np.float64)
    Gs = np.array(G, order="F")
    try:
        L = cholesky_factor_inplace(Gs)
    except np.linalg.LinAlgError:
        U, d = psd_eigh(G, rcond, lower_only=lower_only)
        return lambda B: matmul(U, matmul(U.T, B) / d[:, None].astype(U.dtype))
    return lambda B: cholesky_factor_solve(L, B)


def psd_solve(G: np.ndarray, B: np.ndarray, rcond: float = DEFAULT_RCOND, method: str = "cholesky",
              lower_only: bool = False) -> np.ndarray:
    """``G^+ B`` for symmetric PSD ``G`` of shape (m, m) and ``B`` of shape (m, k).

    ``method="cholesky"`` (default) uses :func:`cholesky_solver`; ``method="eigh"`` uses the
    eigendecomposition pseudo-inverse with relative threshold ``rcond``.  With
    ``lower_only=True`` only the lower triangle of ``G`` is read.

    Parameters
    ----------
    G : ndarray of shape (m, m)
        Symmetric PSD matrix.
    B : ndarray of shape (m, k)
        Right-hand sides.
    rcond : float, default=DEFAULT_RCOND
        Relative eigenvalue threshold of the pseudo-inverse.
    method : {"cholesky", "eigh"}, default="cholesky"
        Cholesky with an eigendecomposition fallback, or the eigendecomposition only.
    lower_only : bool, default=False
        Only the lower triangle of ``G`` is meaningful.
    """
    if method == "eigh":
        U, d = psd_eigh(G, rcond, lower_only=lower_only)
        return matmul(U, matmul(U.T, B) / d[:, None].astype(U.dtype))
    if method == "cholesky":
        return cholesky_solver(G, rcond, lower_only=lower_only)(B)
    raise ValueError(f"method must be 'cholesky' or 'eigh', got {method!r}")
