"""Per-estimator adapters of a lam path: the one pass that builds an estimator's ridge system,
its validation block, and a fitted copy for a solution."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from ..numerics import (
    TargetRows,
    DEFAULT_RCOND,
    KernelRows,
    LocalExecutor,
    SketchedFeatures,
    default_chunk_size,
    matmul,
    plain_system,
    whitened_system,
)
from ..utils import iter_chunks, num_samples, take, take_slice, unique_inverse
from ._cache import CachedKernel
from ._scorers import as_2d
from ._systems import RidgeSystem, Validation, symmetric

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..numerics import Executor, RowPartitions
    from ..sketches.base import SketchMatrix

__all__: list[str] = []

#: solvers of the sketched estimators whose lam path is the plain normal equations
PLAIN_SOLVERS = ("cholesky", "eigh")


@dataclass(frozen=True)
class _SketchedData:
    """The training data of a sketched estimator's pass: the partitions (prepared inputs in
    column ``"inputs"``), the input kernel and sketch, and the targets -- ``targets(rows of
    column)`` (rows, width), or None for ``T = I_n``."""

    kernel: Kernel
    R: SketchMatrix
    parts: RowPartitions
    executor: Executor
    chunk: int
    targets: Callable[[Any], np.ndarray] | None
    width: int
    column: str

    def support(self):
        """The prepared inputs at the sketch's support."""
        return self.executor.take_rows(self.parts, self.R.indices, which="inputs")

    def support_targets(self):
        """The targets at the sketch's support (their mean is the targets' shift)."""
        return self.targets(self.executor.take_rows(self.parts, self.R.indices, which=self.column))


def _sketched_pass(data, *, dtype, rcond):
    """``(A^T A, A^T T, R K R^T, support)`` of ``A = K R^T``: the pass of
    :func:`sprokr.numerics.sketched_ridge`'s plain routes (same shifts, same task) without
    the solve (:func:`sprokr.numerics.plain_system`)."""
    support = data.support()
    ref = None if data.targets is None else data.support_targets()
    G0, AtT, Kt = plain_system(data.kernel, data.R, support, data.parts, data.targets, data.width, rcond,
                               data.chunk, data.executor, dtype=dtype, ref_targets=ref,
                               which=data.column)
    if not np.isfinite(Kt).all():
        raise ValueError("the input kernel returned non-finite values (NaN, inf or overflow) on the training data")
    return G0, AtT, Kt, support


def _exact_gram(kernel, parts, Xp, chunk, executor):
    """The n x n Gram of the prepared inputs ``Xp`` (column ``"inputs"`` of ``parts``), float64."""
    n = parts.n
    K = np.empty((n, n))
    executor.map_rows(parts, KernelRows(kernel, Xp, np.float64), chunk, out=K, name="Gram rows", which="inputs")
    if not np.isfinite(K).all():
        raise ValueError("the input kernel returned non-finite values (NaN, inf or overflow) on the training data")
    return K


def _fitted_targets(base, Y):
    """``(T_u, ids)``: the targets ``psi~`` of the distinct training outputs that the fit of an
    output-sketched model computed (its default candidate index holds them, in the order of
    :func:`~sprokr.utils.unique_inverse`) and the distinct id of each output; None when the
    index is not that (no output sketch, or embeddings held by an executor)."""
    index = getattr(base, "default_index_", None)
    if base.output_features_ is None or index is None or index.embeddings is None:
        return None
    first, inverse = unique_inverse(Y)
    E = index.embeddings
    if E.shape != (first.size, base.output_features_.rank):
        return None
    return np.asarray(E, dtype=np.float64), inverse


def _gram_memo(kernel, Xp):
    """The memo of the training Gram's eigendecomposition: kept by a selection's cache (the
    Gram depends on the input side only), else computed."""
    if isinstance(kernel, CachedKernel):
        return lambda compute: kernel.memo("gram eigendecomposition", Xp, compute)
    return None


def _rows_block(fn, Xq, width):
    """``fn(chunk)`` stacked over row chunks of ``Xq``, float64 (n_q, width)."""
    n = num_samples(Xq)
    out = np.empty((n, width))
    for sl in iter_chunks(n, default_chunk_size(width, np.float64)):
        out[sl] = np.asarray(fn(take_slice(Xq, sl)), dtype=np.float64)
    return out


class _Whitened:
    """Sketched adapters on the default route: the whitened system ``(Z^T Z + n lam I) w = Z^T T``."""

    def _whitened(self, data, *, rcond):
        ref = None if data.targets is None else data.support_targets()
        ws = whitened_system(data.kernel, data.R, data.support(), data.parts, data.targets, data.width, rcond,
                             data.chunk, data.executor, ref_targets=ref, which=data.column)
        self.system = RidgeSystem(data.parts.n, ws.G, ws.B, None, rcond=DEFAULT_RCOND)
        self._block = lambda Xq: ws.whitening.rows(ws.features.block(Xq))  # validation rows of Z
        self._to_support = ws.coef


class _IOKRFamily(_Whitened):
    """SISOKR and its variants (IOKR, SIOKR, ISOKR)."""

    def __init__(self, base, X, Y):
        from ..models.base import OUTPUT_DTYPE
        from ..models.sisokr import all_rows

        self.base = base
        self._train = None  # exact inputs served by a selection's cache: the training view
        ex, kx, ky = base.executor_, base.input_kernel_, base.output_kernel_
        Rx, fy, n = base.input_sketch_matrix_, base.output_features_, base.n_train_
        dtype, rcond = base.dtype_, base.rcond_
        self.Y = Y
        targets, column, ids = (None if fy is None else fy.transform), "outputs", ()
        fitted = _fitted_targets(base, Y)
        if fitted is not None:  # the fit's targets psi~ of the distinct outputs, gathered by id
            targets, column, ids = TargetRows(fitted[0]), "output_ids", (fitted[1],)
        parts = ex.partition(X, Y, *ids, prepare=(kx.prepare, ky.prepare) + (None,) * len(ids),
                             names=("inputs", "outputs") + ("output_ids",) * len(ids))
        width = n if fy is None else fy.rank
        if Rx is not None:
            R = Rx.unscaled()  # the scale of uniform sub-sampling cancels (as in the fit)
            data = _SketchedData(kernel=kx, R=R, parts=parts, executor=ex,
                                 chunk=base.chunk_size or default_chunk_size(R.indices.size, dtype),
                                 targets=targets, width=width, column=column)
            if base.solver in PLAIN_SOLVERS:  # the refits' plain normal equations
                G0, AtT, Kt, support = _sketched_pass(data, dtype=dtype, rcond=rcond)
                self.system = RidgeSystem(n, G0, AtT, Kt, rcond=rcond, shift=True)
                feats = SketchedFeatures(kx, R, support, np.float64, rcond)
                self._block, self._to_support = feats.block, R.apply_left_transpose
            else:
                self._whitened(data, rcond=base.rcond)
        else:
            chunk = base.chunk_size or default_chunk_size(n, dtype)
            Xp = all_rows(ex, parts, "inputs")
            K = _exact_gram(kx, parts, Xp, chunk, ex)
            T = None if targets is None else ex.map_rows(parts, targets, chunk, name="output targets",
                                                         which=column)
            self.system = RidgeSystem(n, K, T, None, rcond=rcond, memo=_gram_memo(kx, Xp), overwrite_G0=True)
            self._train = Xp if isinstance(kx, CachedKernel) and hasattr(Xp, "idx") else None
            support = base.X_support_
            self._block = lambda Xq: kx.pairwise(Xq, support)
            self._to_support = lambda g: g
        self._out_dtype = OUTPUT_DTYPE

    def query_block(self, X_val):
        """``Q`` (n_val, m): the predicted coordinates at ``lam`` are ``Q gamma(lam)``."""
        return _rows_block(self._block, self.base.input_kernel_.prepare(X_val), self.system.m)

    def eigen_queries(self, X_val, Q, W):
        """``Q W``: the validation rows in the eigenbasis of the system.  With exact inputs
        both depend on the input side only: kept by a selection's cache for the other
        output kernels."""
        kx = self.base.input_kernel_
        if self._train is None or not isinstance(kx, CachedKernel):
            return matmul(Q, W)
        return kx.memo("validation rows in the Gram eigenbasis", kx.prepare(X_val), lambda: matmul(Q, W),
                       key=(self._train.idx,))

    def validation(self, X_val, Y_val):
        base = self.base
        ky, fy = base.output_kernel_, base.output_features_
        Q = self.query_block(X_val)
        Yvp = ky.prepare(Y_val)
        kyy = np.asarray(ky.diag(Yvp), dtype=np.float64)
        if fy is not None:
            Tv = np.asarray(fy.transform(Yvp), dtype=np.float64)
            resid = np.maximum(kyy - np.einsum("ij,ij->i", Tv, Tv), 0.0)
            return Validation(Q, loss=lambda H: np.einsum("ij,ij->i", H - Tv, H - Tv) + resid)
        return Validation(Q, quad=self._output_products(Yvp, kyy))

    def _output_products(self, Yvp, kyy):
        """``B^T K_y B`` and ``B^T k_y(Y, y_val)`` over the DISTINCT training outputs."""
        ky, B = self.base.output_kernel_, self.system.B
        first, inv = unique_inverse(self.Y)
        Yu = ky.prepare(take(self.Y, first))
        n, nu = inv.size, first.size
        chunk = default_chunk_size(nu, np.float64)
        Kuv = np.empty((nu, num_samples(Yvp)))
        for sl in iter_chunks(nu, chunk):
            Kuv[sl] = ky.pairwise(take_slice(Yu, sl), Yvp)
        if B is None:  # exact input and output (IOKR): B = I, B^T K_y B = K_y
            Ku = np.empty((nu, nu))
            for sl in iter_chunks(nu, chunk):
                Ku[sl] = ky.pairwise(take_slice(Yu, sl), Yu)
            return Ku[np.ix_(inv, inv)], Kuv[inv], kyy
        P = sp.csr_matrix((np.ones(n), (np.arange(n), inv)), shape=(n, nu))
        Bg = np.asarray((P.T @ B.T).T)  # (m, n_u): columns of equal outputs summed
        Syy = np.zeros((B.shape[0], B.shape[0]))
        for sl in iter_chunks(nu, chunk):
            Kc = np.asarray(ky.pairwise(take_slice(Yu, sl), Yu), dtype=np.float64)  # (c, n_u)
            Syy += matmul(Bg[:, sl], matmul(Kc, Bg.T))
        return symmetric(Syy), matmul(Bg, Kuv), kyy

    def fitted(self, gamma, lam):
        return self.base.with_coef(self._to_support(gamma), lam=lam)


class _KernelRidge(_Whitened):
    """:class:`~sprokr.models.KernelRidgeRegressor` (exact or sketched)."""

    def __init__(self, base, X, T):
        from ..models.sisokr import all_rows
        from ..utils import resolve_dtype

        self.base = base
        k, R = base.kernel_, base.sketch_matrix_
        dtype = resolve_dtype(base.dtype)
        rcond = base.rcond if base.rcond is not None else DEFAULT_RCOND
        T64 = as_2d(T)
        ex = LocalExecutor()
        parts = ex.partition(X, T64, prepare=(k.prepare, None), names=("inputs", "targets"))
        n = parts.n
        if R is not None:
            R = R.unscaled()
            self._whitened(_SketchedData(kernel=k, R=R, parts=parts, executor=ex,
                                         chunk=base.chunk_size or default_chunk_size(R.indices.size, dtype),
                                         targets=np.asarray, width=T64.shape[1], column="targets"),
                           rcond=base.rcond)
        else:
            Xp = all_rows(ex, parts, "inputs")
            K = _exact_gram(k, parts, Xp, base.chunk_size or default_chunk_size(n, dtype), ex)
            self.system = RidgeSystem(n, K, T64, None, rcond=rcond, memo=_gram_memo(k, Xp))
            support = base.X_support_
            self._block = lambda Xq: k.pairwise(Xq, support)
            self._to_support = lambda g: g

    def validation(self, X_val, T_val):
        Q = _rows_block(self._block, self.base.kernel_.prepare(X_val), self.system.m)
        Tv = as_2d(T_val)
        return Validation(Q, loss=lambda H: np.einsum("ij,ij->i", H - Tv, H - Tv))

    def fitted(self, gamma, lam):
        return self.base.with_coef(self._to_support(gamma), lam=lam)


class _KernelMachine:
    """:class:`~sprokr.SketchedKernelMachine` with the square loss in closed form."""

    def __init__(self, base, X, y):
        from ..models.kernel_machine import check_targets
        from ..models.output_matrix import check_output_matrix
        from ..models.sisokr import all_rows

        self.base = base
        k, R, dtype, ex = base.kernel_, base.sketch_matrix_, base.dtype_, base.executor_
        n = num_samples(X, "X")
        Y, _ = check_targets(y, n)
        Yn = (Y - base.y_mean_) / base.y_scale_  # the fit's normalisation (zeros and ones without it)
        d = Yn.shape[1]
        _, V, e = check_output_matrix(base.output_matrix_, d)
        groups = {}
        for j, ej in enumerate(e):  # equal eigenvalues form one group, as in ridge_by_eigengroups
            if ej > 0:
                key = next((g for g in groups if abs(g - ej) <= 1e-12 * max(g, ej)), ej)
                groups.setdefault(key, []).append(j)
        groups = [(g, np.asarray(c)) for g, c in groups.items()]
        self.V = V
        parts = ex.partition(X, Yn, prepare=(k.prepare, None), names=("inputs", "targets"))
        if R is not None:  # the fit's closed form: the whitened system, solved per eigengroup
            chunk = base.chunk_size or default_chunk_size(R.indices.size, dtype)
            support = ex.take_rows(parts, R.indices, which="inputs")
            ws = whitened_system(k, R, support, parts, np.asarray, d, base.rcond, chunk, ex,
                                 ref_targets=Yn[R.indices], which="targets")
            self.system = RidgeSystem(n, ws.G, ws.B @ V, None, groups, DEFAULT_RCOND)
            self._block = lambda Xq: ws.whitening.rows(ws.features.block(Xq))
            self._to_support = lambda C: ws.coef(C @ V.T)
        else:
            chunk = base.chunk_size or default_chunk_size(n, dtype)
            Xp = all_rows(ex, parts, "inputs")
            K = _exact_gram(k, parts, Xp, chunk, ex)
            self.system = RidgeSystem(n, K, Yn @ V, None, groups, DEFAULT_RCOND, memo=_gram_memo(k, Xp))
            support = base.X_support_
            self._block = lambda Xq: k.pairwise(Xq, support)
            self._to_support = lambda C: C @ V.T

    def validation(self, X_val, y_val):
        base = self.base
        Q = _rows_block(self._block, base.kernel_.prepare(X_val), self.system.m)
        Yv = as_2d(y_val)
        V, mean, scale = self.V, base.y_mean_, base.y_scale_

        def loss(H):
            P = matmul(H, V.T) * scale + mean
            return np.einsum("ij,ij->i", P - Yv, P - Yv)

        return Validation(Q, loss=loss)

    def fitted(self, gamma, lam):
        return self.base.with_coef(self._to_support(gamma), lam=lam)


def float64_twin(estimator):
    """A float64 clone of an (unfitted) estimator whose ``lam`` path would make float32 models
    (``dtype="float32"``, or a float32 input kernel), else None.

    * Exact paths solve ``K + n lam I`` for every ``lam`` from one Gram: the rounding of
      float32 kernel values is relative to ``|K|`` and swamps the small ``lam``s, where a
      float32 refit is checked and falls back to float64 (a float32 Gram picked lam = 1e-6
      for 1e-8 on a flat kernel: tests/test_model_selection.py).
    * Sketched paths on the default routes are computed in float64 already
      (:func:`~sprokr.numerics.whitened_system`), but a fitted copy would predict with
      float32 kernel values, unchecked: a float32 fit checks the rounding of its
      predictions and falls back to float64 when it is above the tolerance (rf1,
      sigma2 = 1e4: copies 1e-3 off, the fits 1e-6).  Their explicit routes
      (``solver="cholesky"`` / ``"eigh"``) follow the refits' own precision (and warn with
      their estimates there).

    So such a path is computed, and its models predict, with float64 kernel values.
    """
    from ..kernels import model_dtype, resolve_kernel
    from ..utils import resolve_dtype

    p = estimator.get_params(deep=False)
    if "dtype" not in p or (p.get("input_sketch") is not None and p.get("solver") in PLAIN_SOLVERS):
        return None
    name = "input_kernel" if "input_kernel" in p else "kernel"
    pname = f"{name}_params"
    dtype = resolve_dtype(p["dtype"])
    if model_dtype(resolve_kernel(p[name], p.get(pname), "input", dtype, name), dtype) != np.float32:
        return None
    new: dict[str, Any] = {"dtype": "float64"}
    spec, params = p[name], p.get(pname)
    if isinstance(spec, str):
        if params and "dtype" in params:
            new[pname] = {**params, "dtype": "float64"}
    elif "dtype" in spec.get_params(deep=False):
        new[name] = clone(spec).set_params(dtype="float64")
    return clone(estimator).set_params(**new)


def adapter_for(estimator):
    """The fast-path adapter class for an (unfitted) estimator, or None (refit route)."""
    from ..models.kernel_machine import SketchedKernelMachine
    from ..models.regressors import KernelRidgeRegressor
    from ..models.sisokr import SISOKR

    if isinstance(estimator, SISOKR):
        return _IOKRFamily
    if isinstance(estimator, KernelRidgeRegressor):
        return _KernelRidge
    if type(estimator) is SketchedKernelMachine:  # JointQuantileRegressor: pinball loss
        p = estimator.get_params()
        if p["loss"] == "square" and p["optimizer"] in ("auto", "closed_form"):
            return _KernelMachine
    return None
