"""Model selection by validation: ``lam`` paths, kernel-parameter grids and sketch sizes.

Every ridge-regularised sprokr estimator solves ``(G0 + n lam Kt) gamma = B`` for its
coefficients, where nothing but the solve depends on ``lam``:

* sketched input (SIOKR, SISOKR, :class:`~sprokr.models.KernelRidgeRegressor` with a
  sketch), on the fits' default route: the whitened system of
  :func:`sprokr.numerics.whitened_system`, ``G0 = Z^T Z``, ``B = Z^T T``, ``Kt = I`` with
  ``Z = K R^T P_r L^-T`` (``R K R^T = L L^T``, pivoted; one chunked pass in float64 --
  the small-``lam`` end of a grid is where float32 would drift), so that every ``lam``,
  down to a flat kernel's tiny ones, is solved as accurately as a refit.  With
  ``solver="cholesky"`` / ``"eigh"`` the estimator's refits solve the plain normal
  equations, and so does its path: ``G0 = A^T A``, ``B = A^T T`` with ``A = K R^T``,
  ``Kt = R K R^T`` (:class:`~sprokr.numerics.CrossProductTask`, the support rows gathered
  in the same pass);
* exact input (IOKR, ISOKR, exact kernel ridge): ``G0 = K``, ``Kt = I``, ``B = T``;
* square-loss kernel machines (:class:`~sprokr.SketchedKernelMachine`): ``G0 = Z^T Z`` of
  the sketched features, ``Kt = I``, one ``lam / e_j`` per eigenvalue of the output matrix.

A :class:`LambdaPath` computes these once (one fit for the model's state, one pass for
the cross products) and then, for the whole grid,

* ``method="eigh"``: one factorisation.  With ``Kt = I``, ``G0 = U diag(s) U^T`` and
  ``G(lam)^-1 = U diag(1 / (s + n lam)) U^T`` (the default route of the sketched models
  too: exact for the whole grid).  With the plain normal equations, ``G(lam_min) = L L^T``
  (Cholesky, the factorisation a refit at the smallest ``lam`` does) and
  ``L^-1 Kt L^-T = E diag(kappa) E^T``; then ``G(lam)^-1 = W diag(1 / (1 + n (lam -
  lam_min) kappa)) W^T`` with ``W = L^-T E``.  Whitening by ``G(lam_min)`` instead of by
  ``Kt`` keeps the accuracy of a direct solve: ``B^T (A^T A) B`` with ``B = U D^-1/2`` of
  ``Kt`` divides rounding errors by the smallest kept eigenvalue of ``Kt`` (flat kernels),
  whereas here every ``lam >= lam_min`` is at least as well conditioned as the factorised
  matrix.  Each ``lam`` then costs ``O(n_val r p)`` (one GEMM on the validation block);
* ``method="cholesky"``: one Cholesky factorisation of the ``m x m`` matrix per ``lam``
  (what a refit does, without its pass over the data).  An ``m x m`` eigendecomposition
  costs ~:data:`EIGH_COST` Cholesky factorisations, so ``"auto"`` (default) picks the
  cheaper route from a flop count;
* ``method="refit"``: one fit per ``lam`` (any estimator with a ``lam`` parameter; the
  reference the fast routes are tested against).

The validation kernel block against the support is computed once.  Scores:

* default (``scoring=None``): minus the kernel-induced loss on validation pairs -- the
  surrogate error ``|h(x) - psi(y)|^2_H`` of :func:`sprokr.selection.surrogate_error` for
  the IOKR family (without output sketch, through ``K_y``: ``alpha^T K_y alpha - 2 alpha^T
  k_y^y + k(y, y)`` with precomputed ``B^T K_y B``), the squared error of vector
  predictions for kernel ridge / kernel machines -- computed from the path, no decoding;
* any scikit-learn scorer ``scorer(estimator, X_val, Y_val)`` (e.g.
  :func:`sprokr.metrics.f1_samples_scorer`, :func:`retrieval_scorer`): each ``lam`` gets a
  lightweight fitted copy of the model (``with_coef``: same state, other coefficients) that
  decodes like the model itself.

:class:`LambdaSearchCV` wraps this as a scikit-learn meta-estimator (like ``RidgeCV``,
with a validation split), usable inside ``GridSearchCV``; :func:`select_model` adds the
output sketch size (perfect h), a kernel-parameter grid and a growing input sketch size,
all on a validation split of the training data, and returns the chosen settings and the
curves.  Progress lines go to the ``sprokr.model_selection`` logger.
"""
from __future__ import annotations

import logging
import numbers
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .numerics import (
    DEFAULT_RCOND,
    CrossProductTask,
    KernelRows,
    LocalExecutor,
    SketchedFeatures,
    cholesky_factor_inplace,
    cholesky_solver,
    column_shift,
    default_chunk_size,
    matmul,
    psd_eigh,
    whitened_system,
)
from .selection import grow_until_plateau, perfect_h_curve, surrogate_error
from .utils import (
    check_positive,
    check_random_state,
    concat_samples,
    iter_chunks,
    num_samples,
    take,
    take_slice,
    unique_inverse,
)

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from .decoders.candidates import CandidateIndex
    from .numerics import Decoded
    from .types import RandomStateLike, Samples

__all__ = [
    "LambdaSearchCV",
    "LambdaPath",
    "lambda_path",
    "select_model",
    "kernel_loss_scorer",
    "retrieval_scorer",
    "check_lams",
    "DEFAULT_LAMS",
    "EIGH_COST",
]

logger = logging.getLogger("sprokr.model_selection")

#: default grid: 1e-9 ... 1e-1, two values per decade
DEFAULT_LAMS = tuple(float(v) for v in np.logspace(-9, -1, 17))

#: time of an m x m symmetric eigendecomposition (LAPACK ``syevd``) in units of a Cholesky
#: factorisation (``potrf``) of the same matrix, for ``method="auto"``.  Measured 8-30 on the
#: shared 2-core development machine (m = 300 ... 2250, depending on size and load); 12
#: reproduces the measured parity of the two routes on Bibtex SISOKR (m = 2250, 13 lams).
EIGH_COST = 12.0

#: support rows whose kernel columns give the centring shift of the cross products
_SHIFT_ROWS = 256

#: solvers of the sketched estimators whose lam path is the plain normal equations
PLAIN_SOLVERS = ("cholesky", "eigh")


def check_lams(lams: ArrayLike, name: str = "lams") -> np.ndarray:
    """A grid of ridge parameters as a float64 array (order kept).

    Raises ``ValueError`` for an empty grid, non-numbers, non-finite or non-positive values
    and duplicates.
    """
    if lams is None or isinstance(lams, (str, bytes)) or not np.iterable(lams):
        raise ValueError(f"{name} must be a non-empty sequence of positive numbers, got {lams!r}")
    vals = list(lams.ravel()) if isinstance(lams, np.ndarray) else list(lams)
    if not vals:
        raise ValueError(f"{name} is empty; give at least one positive ridge parameter")
    bad = [v for v in vals if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.number))]
    if bad:
        raise ValueError(f"{name} must hold real numbers, got {bad[0]!r}")
    arr = np.asarray(vals, dtype=np.float64)
    if not np.isfinite(arr).all() or (arr <= 0).any():
        raise ValueError(f"{name} must hold finite numbers > 0, got {arr[~(np.isfinite(arr) & (arr > 0))][0]!r}")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{name} contains duplicate values: {sorted(arr.tolist())}")
    return arr


# --------------------------------------------------------------------------- scorers
def kernel_loss_scorer(estimator: Any, X: Samples, Y: Samples) -> float:
    """Minus the kernel-induced loss on ``(X, Y)``: a scikit-learn scorer (greater is better).

    For models with an output kernel (IOKR family, DSOKR): ``-mean |h(x) - psi(y)|^2_H``
    (:func:`sprokr.selection.surrogate_error`, no decoding).  For vector regressors:
    ``-mean_i |f(x_i) - y_i|^2`` (squared error summed over outputs).  A fitted
    :class:`LambdaSearchCV` is scored through its ``best_estimator_``.
    """
    est = getattr(estimator, "best_estimator_", estimator)
    if hasattr(est, "output_kernel_"):
        return -surrogate_error(est, X, Y)
    P = _as_2d(est.predict(X))
    T = _as_2d(Y)
    if P.shape != T.shape:
        raise ValueError(f"predictions of shape {P.shape} do not match the targets' shape {T.shape}")
    return -float(np.mean(np.einsum("ij,ij->i", P - T, P - T)))


def retrieval_scorer(metric: str = "mrr", k: int = 1, extra_candidates: Samples | None = None,
                     query_batch: int = 1024) -> Callable[[Any, Any, Any], float]:
    """A scorer that ranks the validation outputs themselves for each validation input.

    The candidate set is ``Y_val`` (plus ``extra_candidates``), so the true output of query
    ``i`` is candidate ``i``: outputs the model has not seen, and no equality test between
    outputs is needed (graphs, molecules).  Scores come from ``predict_scores`` (ties count
    against the truth, :func:`sprokr.metrics.ranks_from_scores`).

    Parameters
    ----------
    metric : {"mrr", "top_k"}
        Mean reciprocal rank, or the fraction of queries whose truth ranks ``<= k``.
    k : int
    extra_candidates : collection, optional
        Distractors appended to the candidate set (e.g. other molecules of the pool).
    query_batch : int
        Queries scored at once (memory ``query_batch x n_candidates`` floats).

    Returns
    -------
    callable ``scorer(estimator, X_val, Y_val) -> float`` (greater is better).
    """
    from .metrics import ranks_from_scores

    if metric not in ("mrr", "top_k"):
        raise ValueError(f"metric must be 'mrr' or 'top_k', got {metric!r}")
    if isinstance(k, bool) or not isinstance(k, (numbers.Integral, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")

    def scorer(estimator, X, Y):
        est = getattr(estimator, "best_estimator_", estimator)
        n = num_samples(Y, "Y")
        pool = Y if extra_candidates is None else concat_samples([Y, extra_candidates])
        index = est.make_candidate_index(pool)
        ranks = np.empty(n)
        for sl in iter_chunks(n, query_batch):
            S = est.predict_scores(take_slice(X, sl), candidates=index)
            ranks[sl] = ranks_from_scores(S, np.arange(sl.start, sl.stop))
        return _retrieval_value(ranks, scorer.retrieval)

    scorer.__name__ = f"retrieval_{metric}" + (f"@{k}" if metric == "top_k" else "")
    # what the scorer computes, so that a lam path can score every lam from one
    # factorisation instead of one fitted copy per lam (LambdaPath.scores)
    scorer.retrieval = {"metric": metric, "k": int(k), "extra_candidates": extra_candidates,
                        "query_batch": int(query_batch)}
    return scorer


def _retrieval_value(ranks, spec):
    """MRR or top-k accuracy of the ranks, as :func:`retrieval_scorer` computes them."""
    return float(np.mean(1.0 / ranks)) if spec["metric"] == "mrr" else float(np.mean(ranks <= spec["k"]))


def _resolve_scoring(scoring):
    """``(scorer or None, name)``; None means the path's own kernel loss."""
    if scoring is None or (isinstance(scoring, str) and scoring == "kernel_loss"):
        return None, "kernel_loss"
    if isinstance(scoring, str):
        from sklearn.metrics import get_scorer

        try:
            return get_scorer(scoring), scoring
        except ValueError:
            raise ValueError(f"scoring={scoring!r} is not 'kernel_loss' nor a scikit-learn scorer name") from None
    if callable(scoring):
        name = getattr(scoring, "__name__", None)
        if name is None:  # a scikit-learn scorer object: make_scorer(f1_samples)
            name = repr(scoring) if "(" in repr(scoring) else type(scoring).__name__
        return scoring, name
    raise ValueError(f"scoring must be None, 'kernel_loss', a scorer name or a callable "
                     f"scorer(estimator, X, Y), got {scoring!r}")


def _as_2d(Y):
    Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=np.float64)
    return Y[:, None] if Y.ndim == 1 else Y


# --------------------------------------------------------------------------- ridge systems
def _sym(M):
    M = np.asarray(M, dtype=np.float64)
    return 0.5 * (M + M.T)


class _RidgeSystem:
    """``(G0 + n lam Kt) gamma = B`` for many ``lam`` (``Kt`` None: the identity).

    ``groups``: ``[(e, columns)]`` -- columns of ``B`` solved with ``lam / e`` (kernel
    machines with an output matrix; the other columns are 0).  ``B`` None: the identity.
    """

    def __init__(self, n, G0, B, Kt=None, groups=None, rcond=DEFAULT_RCOND, shift=False):
        self.n, self.G0 = int(n), _sym(G0)
        self.Kt = None if Kt is None else _sym(Kt)
        self.B = None if B is None else np.asarray(B, dtype=np.float64)
        self.m = self.G0.shape[0]
        self.p = self.m if self.B is None else self.B.shape[1]
        self.groups = groups if groups is not None else [(1.0, np.arange(self.p))]
        if self.Kt is not None and len(self.groups) > 1:
            raise ValueError("column groups are only supported with Kt = I")
        self.rcond, self.shift = rcond, shift
        self.eig = None  # (W, alpha, beta, lam0): G(lam)^-1 = W diag(1/(alpha + n (lam - lam0) beta)) W^T

    def targets(self, cols=None):
        B = np.eye(self.m) if self.B is None else self.B
        return B if cols is None else B[:, cols]

    def matrix(self, lam):
        if self.Kt is None:
            G = self.G0.copy()
            G.flat[:: self.m + 1] += self.n * lam
            return G
        G = np.multiply(self.Kt, self.n * lam)
        G += self.G0
        return G

    # ---- the eigen route
    def factorize(self, lams):
        """One factorisation for the grid (see the module docstring).

        With a sketch, ``G(lam0)`` is factorised at the smallest ``lam0`` of ``lams`` whose
        Cholesky factorisation succeeds; smaller values (where a refit falls back to a
        pseudo-inverse too) are solved directly (:meth:`covers`).
        """
        if self.Kt is None:
            s, U = sla.eigh(self.G0, driver="evd", check_finite=False)
            self.eig = (U, np.maximum(s, 0.0), 1.0, 0.0)
            return self
        for lam0 in np.sort(np.asarray(lams, dtype=np.float64)):
            G = self.matrix(lam0)
            shift = self.rcond * float(np.mean(np.diag(G))) if self.shift and self.m else 0.0
            G.flat[:: self.m + 1] += shift  # the explicit jitter of the refits' Cholesky route
            try:
                L = np.tril(cholesky_factor_inplace(np.asfortranarray(G)))
            except np.linalg.LinAlgError:
                continue
            M = sla.solve_triangular(L, sla.solve_triangular(L, self.Kt, lower=True, check_finite=False).T,
                                     lower=True, check_finite=False)  # L^-1 Kt L^-T
            kappa, E = sla.eigh(_sym(M), driver="evd", check_finite=False)
            W = sla.solve_triangular(L, E, lower=True, trans="T", check_finite=False)
            self.eig = (np.ascontiguousarray(W), 1.0, np.maximum(kappa, 0.0), float(lam0))
            return self
        return self  # no lam factorises: every value is solved directly

    def covers(self, lam):
        """True when ``lam`` is served by the factorisation."""
        return self.eig is not None and lam >= self.eig[3]

    def solver(self, lam):
        """``B -> G(lam)^-1 B``: the direct solve of a refit on the normal equations (Cholesky,
        :func:`~sprokr.numerics.cholesky_solver`; pseudo-inverse fallback)."""
        G = self.matrix(lam)
        if self.shift:  # the explicit jitter of the refits' Cholesky route
            G.flat[:: self.m + 1] += self.rcond * float(np.mean(np.diag(G))) if self.m else 0.0
            return cholesky_solver(G, self.rcond)
        try:
            cho = sla.cho_factor(G, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            U, d = psd_eigh(G, self.rcond)
            return lambda B: matmul(U, matmul(U.T, B) / d[:, None])
        return lambda B: sla.cho_solve(cho, B, check_finite=False)

    def phi(self, lam):
        W, alpha, beta, lam0 = self.eig
        return 1.0 / (alpha + (self.n * (lam - lam0)) * beta)

    # ---- solutions
    def coef(self, lam):
        """``gamma(lam)`` (m, p)."""
        out = np.zeros((self.m, self.p))
        for e, cols in self.groups:
            if self.covers(lam / e):
                W = self.eig[0]
                out[:, cols] = matmul(W, self.phi(lam / e)[:, None] * matmul(W.T, self.targets(cols)))
            else:
                out[:, cols] = self.solver(lam / e)(self.targets(cols))
        return out

    def cost(self, method, n_lams, n_val, quad):
        """Flop estimate of scoring ``n_lams`` values on ``n_val`` validation samples."""
        m, p, L = float(self.m), float(self.p), n_lams * len(self.groups)
        if method == "cholesky":
            per = m**3 / 3 + (4 * m * m * n_val if quad else 2 * m * m * p + 2 * n_val * m * p)
            return L * per
        once = EIGH_COST * m**3 / 3 + (2 * m**3 if self.Kt is not None else 0.0)  # + Cholesky, 3 trsm
        once += 2 * m * m * (m if quad else p) + 2 * n_val * m * m
        return once + L * (2 * n_val * m * m if quad else 2 * n_val * m * p)


class _Validation:
    """What scoring a path needs on the validation pairs, in the system's coordinates.

    ``Q`` (n_val, m): validation rows of the system (kernel block against the support).
    Direct: ``loss(H)`` per sample from the coordinates ``H = Q gamma`` (n_val, p).
    Quadratic (outputs without sketch, ``p = n``): ``Syy = B^T K_y B`` (m, m), ``Cv = B^T
    k_y(Y, y_val)`` (m, n_val) and ``kyy``: ``loss = h^T Syy h - 2 h^T c + k(y, y)``.
    """

    def __init__(self, Q, loss=None, quad=None):
        self.Q, self.loss, self.quad = Q, loss, quad

    @property
    def n(self):
        return self.Q.shape[0]


def _path_losses(system, val, lams, method):
    """Mean validation loss of every ``lam`` (the route's factorisation reused)."""
    out = np.empty(len(lams))
    Q = val.Q
    eig = method == "eigh" and system.eig is not None
    if eig:
        W = system.eig[0]
        P = matmul(Q, W)  # the validation block in the eigenbasis, once
        if val.quad is not None:
            Syy, Cv, kyy = val.quad
            S = matmul(W.T, matmul(Syy, W))
            Cw = matmul(W.T, Cv)
        else:
            Z = [(e, cols, matmul(W.T, system.targets(cols))) for e, cols in system.groups]
    for i, lam in enumerate(lams):
        if val.quad is not None:
            Syy, Cv, kyy = val.quad
            if eig and system.covers(lam):
                U = P * system.phi(lam)
                per = np.einsum("ij,ij->i", matmul(U, S), U) - 2 * np.einsum("ij,ji->i", U, Cw) + kyy
            else:
                b = system.solver(lam)(np.ascontiguousarray(Q.T))  # (m, n_val)
                per = np.einsum("ij,ij->j", b, matmul(Syy, b)) - 2 * np.einsum("ij,ij->j", b, Cv) + kyy
        elif eig and all(system.covers(lam / e) for e, _ in system.groups):
            H = np.zeros((val.n, system.p))
            for e, cols, Zc in Z:
                H[:, cols] = matmul(P * system.phi(lam / e), Zc)
            per = val.loss(H)
        else:
            per = val.loss(matmul(Q, system.coef(lam)))
        out[i] = float(np.mean(per))
    return out


# --------------------------------------------------------------------------- adapters
def _sketched_pass(kernel, R, parts, targets, width, ref_targets, dtype, rcond, chunk, executor):
    """``(A^T A, A^T T, R K R^T, support)`` of ``A = K R^T`` in one chunked pass.

    The pass of :func:`sprokr.numerics.sketched_ridge` (same shifts, same task) without the
    solve.  ``targets`` None: ``T = I_n``; ``ref_targets()`` gives the targets at the
    support points (their mean is the target shift).
    """
    support = executor.take_rows(parts, R.indices, which=0)
    feats = SketchedFeatures(kernel, R, support, dtype, rcond)
    ref = np.linspace(0, R.indices.size - 1, min(R.indices.size, _SHIFT_ROWS)).astype(np.intp)
    c = column_shift(feats.block(take(support, ref)), dtype)
    d = None if targets is None else np.asarray(ref_targets(), dtype=np.float64)[ref].mean(axis=0)
    task = CrossProductTask(feats, targets, width, c, d, targets is None, gather=R.indices, which=1)
    acc, A_sel = executor.map_reduce(parts, task, chunk)
    Kt = R.sandwich_from_rows(np.asarray(A_sel, dtype=np.float64))
    G0, AtT = acc.result()
    if not (np.isfinite(G0).all() and np.isfinite(AtT).all() and np.isfinite(Kt).all()):
        raise ValueError("the input kernel returned non-finite values (NaN, inf or overflow) on the training data")
    return G0, AtT, Kt, support


def _exact_gram(kernel, parts, Xp, chunk, executor):
    n = parts.n
    K = np.empty((n, n))
    executor.map_rows(parts, KernelRows(kernel, Xp, np.float64), chunk, out=K, name="Gram rows")
    if not np.isfinite(K).all():
        raise ValueError("the input kernel returned non-finite values (NaN, inf or overflow) on the training data")
    return K


def _rows_block(fn, Xq, width):
    """``fn(chunk)`` stacked over row chunks of ``Xq``, float64 (n_q, width)."""
    n = num_samples(Xq)
    out = np.empty((n, width))
    for sl in iter_chunks(n, default_chunk_size(width, np.float64)):
        out[sl] = np.asarray(fn(take_slice(Xq, sl)), dtype=np.float64)
    return out


class _Whitened:
    """Sketched adapters on the default route: the whitened system ``(Z^T Z + n lam I) w = Z^T T``."""

    def _whitened(self, kernel, R, parts, targets, width, ref_targets, rcond, chunk, executor, n):
        support = executor.take_rows(parts, R.indices, which=0)
        ws = whitened_system(kernel, R, support, parts, targets, width, rcond, chunk, executor,
                             ref_targets=ref_targets)
        self.system = _RidgeSystem(n, ws.G, ws.B, None, rcond=DEFAULT_RCOND)
        self._block = lambda Xq: ws.whitening.rows(ws.features.block(Xq))  # validation rows of Z
        self._to_support = ws.coef


class _IOKRFamily(_Whitened):
    """SISOKR and its variants (IOKR, SIOKR, ISOKR)."""

    def __init__(self, base, X, Y):
        from .models.base import OUTPUT_DTYPE
        from .models.sisokr import all_rows

        self.base = base
        ex, kx, ky = base.executor_, base.input_kernel_, base.output_kernel_
        Rx, fy, n = base.input_sketch_matrix_, base.output_features_, base.n_train_
        dtype, rcond = base.dtype_, base.rcond_
        self.Y = Y
        parts = ex.partition(X, Y, prepare=(kx.prepare, ky.prepare))
        targets = None if fy is None else fy.transform
        width = n if fy is None else fy.rank
        if Rx is not None:
            R = Rx.unscaled()  # the scale of uniform sub-sampling cancels (as in the fit)
            chunk = base.chunk_size or default_chunk_size(R.indices.size, dtype)
            ref = lambda: targets(ex.take_rows(parts, R.indices, which=1))  # noqa: E731
            if base.solver in PLAIN_SOLVERS:  # the refits' plain normal equations
                G0, AtT, Kt, support = _sketched_pass(kx, R, parts, targets, width, ref, dtype, rcond, chunk, ex)
                self.system = _RidgeSystem(n, G0, AtT, Kt, rcond=rcond, shift=True)
                feats = SketchedFeatures(kx, R, support, np.float64, rcond)
                self._block, self._to_support = feats.block, R.apply_left_transpose
            else:
                self._whitened(kx, R, parts, targets, width, None if targets is None else ref(), base.rcond, chunk,
                               ex, n)
        else:
            chunk = base.chunk_size or default_chunk_size(n, dtype)
            K = _exact_gram(kx, parts, all_rows(ex, parts, 0), chunk, ex)
            T = None if targets is None else ex.map_rows(parts, targets, chunk, name="output targets", which=1)
            self.system = _RidgeSystem(n, K, T, None, rcond=rcond)
            support = base.X_support_
            self._block = lambda Xq: kx.pairwise(Xq, support)
            self._to_support = lambda g: g
        self._out_dtype = OUTPUT_DTYPE

    def query_block(self, X_val):
        """``Q`` (n_val, m): the predicted coordinates at ``lam`` are ``Q gamma(lam)``."""
        return _rows_block(self._block, self.base.input_kernel_.prepare(X_val), self.system.m)

    def validation(self, X_val, Y_val):
        base = self.base
        ky, fy = base.output_kernel_, base.output_features_
        Q = self.query_block(X_val)
        Yvp = ky.prepare(Y_val)
        kyy = np.asarray(ky.diag(Yvp), dtype=np.float64)
        if fy is not None:
            Tv = np.asarray(fy.transform(Yvp), dtype=np.float64)
            resid = np.maximum(kyy - np.einsum("ij,ij->i", Tv, Tv), 0.0)
            return _Validation(Q, loss=lambda H: np.einsum("ij,ij->i", H - Tv, H - Tv) + resid)
        return _Validation(Q, quad=self._output_products(Yvp, kyy))

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
        return _sym(Syy), matmul(Bg, Kuv), kyy

    def fitted(self, gamma, lam):
        return self.base.with_coef(self._to_support(gamma), lam=lam)


class _KernelRidge(_Whitened):
    """:class:`~sprokr.models.KernelRidgeRegressor` (exact or sketched)."""

    def __init__(self, base, X, T):
        from .utils import resolve_dtype

        self.base = base
        k, R = base.kernel_, base.sketch_matrix_
        dtype = resolve_dtype(base.dtype)
        rcond = base.rcond if base.rcond is not None else DEFAULT_RCOND
        T64 = _as_2d(T)
        ex = LocalExecutor()
        parts = ex.partition(X, T64, prepare=(k.prepare, None))
        n = parts.n
        if R is not None:
            R = R.unscaled()
            chunk = base.chunk_size or default_chunk_size(R.indices.size, dtype)
            self._whitened(k, R, parts, np.asarray, T64.shape[1], T64[R.indices], base.rcond, chunk, ex, n)
        else:
            Xp = parts.blocks[0][0]
            K = _exact_gram(k, parts, Xp, base.chunk_size or default_chunk_size(n, dtype), ex)
            self.system = _RidgeSystem(n, K, T64, None, rcond=rcond)
            support = base.X_support_
            self._block = lambda Xq: k.pairwise(Xq, support)
            self._to_support = lambda g: g

    def validation(self, X_val, T_val):
        Q = _rows_block(self._block, self.base.kernel_.prepare(X_val), self.system.m)
        Tv = _as_2d(T_val)
        return _Validation(Q, loss=lambda H: np.einsum("ij,ij->i", H - Tv, H - Tv))

    def fitted(self, gamma, lam):
        return self.base.with_coef(self._to_support(gamma), lam=lam)


class _KernelMachine:
    """:class:`~sprokr.SketchedKernelMachine` with the square loss in closed form."""

    def __init__(self, base, X, y):
        from .models.kernel_machine import check_targets
        from .models.output_matrix import check_output_matrix
        from .models.sisokr import all_rows

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
        parts = ex.partition(X, Yn, prepare=(k.prepare, None))
        if R is not None:  # the fit's closed form: the whitened system, solved per eigengroup
            chunk = base.chunk_size or default_chunk_size(R.indices.size, dtype)
            support = ex.take_rows(parts, R.indices, which=0)
            ws = whitened_system(k, R, support, parts, np.asarray, d, base.rcond, chunk, ex,
                                 ref_targets=Yn[R.indices])
            self.system = _RidgeSystem(n, ws.G, ws.B @ V, None, groups, DEFAULT_RCOND)
            self._block = lambda Xq: ws.whitening.rows(ws.features.block(Xq))
            self._to_support = lambda C: ws.coef(C @ V.T)
        else:
            chunk = base.chunk_size or default_chunk_size(n, dtype)
            K = _exact_gram(k, parts, all_rows(ex, parts, 0), chunk, ex)
            self.system = _RidgeSystem(n, K, Yn @ V, None, groups, DEFAULT_RCOND)
            support = base.X_support_
            self._block = lambda Xq: k.pairwise(Xq, support)
            self._to_support = lambda C: C @ V.T

    def validation(self, X_val, y_val):
        base = self.base
        Q = _rows_block(self._block, base.kernel_.prepare(X_val), self.system.m)
        Yv = _as_2d(y_val)
        V, mean, scale = self.V, base.y_mean_, base.y_scale_

        def loss(H):
            P = matmul(H, V.T) * scale + mean
            return np.einsum("ij,ij->i", P - Yv, P - Yv)

        return _Validation(Q, loss=loss)

    def fitted(self, gamma, lam):
        return self.base.with_coef(self._to_support(gamma), lam=lam)


def _adapter_for(estimator):
    """The fast-path adapter class for an (unfitted) estimator, or None (refit route)."""
    from .models.kernel_machine import SketchedKernelMachine
    from .models.regressors import KernelRidgeRegressor
    from .models.sisokr import SISOKR

    if isinstance(estimator, SISOKR):
        return _IOKRFamily
    if isinstance(estimator, KernelRidgeRegressor):
        return _KernelRidge
    if type(estimator) is SketchedKernelMachine:  # JointQuantileRegressor: pinball loss
        p = estimator.get_params()
        if p["loss"] == "square" and p["solver"] in ("auto", "closed_form"):
            return _KernelMachine
    return None


# --------------------------------------------------------------------------- the path
class LambdaPath:
    """The solutions of one estimator for a grid of ``lam``, from one fit and one pass.

    Build it with :func:`lambda_path`.

    Attributes
    ----------
    lams : ndarray
        The grid (in the order given).
    estimator_ : fitted estimator
        The fit at ``max(lams)`` that provides the model's state (kernels, sketches, output
        basis, decoder); its coefficients are replaced in :meth:`estimator_at`.
    method : {"eigh", "cholesky", "refit"}
        The route (``"auto"`` is resolved when the path is first scored).
    times_ : dict
        Seconds spent in ``fit`` (the state), ``pass`` (the cross products), ``factorize``
        and ``score``.
    """

    #: attribute types for the type checker (set in __init__ / fit)
    adapter: Any  # None on the refit route
    system: Any

    def __init__(self, estimator: Any, X: Samples, Y: Samples, lams: ArrayLike, method: str = "auto") -> None:
        if method not in ("auto", "eigh", "cholesky", "refit"):
            raise ValueError(f"method must be 'auto', 'eigh', 'cholesky' or 'refit', got {method!r}")
        self.lams = check_lams(lams)
        if "lam" not in estimator.get_params(deep=False):
            raise ValueError(f"{type(estimator).__name__} has no 'lam' parameter: a lam path needs a "
                             f"ridge-regularised estimator")
        self.estimator, self.X, self.Y = estimator, X, Y
        adapter = _adapter_for(estimator)
        self.method = "refit" if adapter is None else method
        self.times_ = {}
        t0 = time.perf_counter()
        lam_ref = float(self.lams.max())  # the best-conditioned fit
        self.estimator_ = clone(estimator).set_params(lam=lam_ref).fit(X, Y)
        self.times_["fit"] = time.perf_counter() - t0
        self.adapter = None
        if self.method != "refit":
            t0 = time.perf_counter()
            self.adapter = adapter(self.estimator_, X, Y)
            self.times_["pass"] = time.perf_counter() - t0
        self.system = None if self.adapter is None else self.adapter.system

    def _resolve(self, n_val=0, quad=False):
        if self.method == "auto":
            c = {m: self.system.cost(m, len(self.lams), n_val, quad) for m in ("cholesky", "eigh")}
            self.method = min(c, key=c.get)
        if self.method == "eigh" and self.system.eig is None:
            t0 = time.perf_counter()
            self.system.factorize(self.lams)
            self.times_["factorize"] = time.perf_counter() - t0

    def coef(self, lam: float) -> np.ndarray:
        """The solution ``gamma(lam)`` in the system's coordinates (fast routes only)."""
        if self.method == "refit":
            raise ValueError("the refit route has no shared system; use estimator_at(lam)")
        self._resolve()
        return self.system.coef(check_positive(lam, "lam"))

    def estimator_at(self, lam: float) -> Any:
        """The fitted estimator at ``lam`` (a lightweight copy, or a refit on the refit route)."""
        lam = check_positive(lam, "lam")
        if self.method != "refit":  # not cached: a copy is cheap, and may hold an m x n coef_
            return self.adapter.fitted(self.coef(lam), lam)
        if lam == self.estimator_.lam:
            return self.estimator_
        return clone(self.estimator).set_params(lam=lam).fit(self.X, self.Y)

    def losses(self, X_val: Samples, Y_val: Samples) -> np.ndarray:
        """Mean validation kernel-induced loss of every ``lam`` (see :func:`kernel_loss_scorer`)."""
        t0 = time.perf_counter()
        if self.method == "refit":
            out = np.array([-kernel_loss_scorer(self.estimator_at(lam), X_val, Y_val) for lam in self.lams])
        else:
            val = self.adapter.validation(X_val, Y_val)
            self._resolve(val.n, val.quad is not None)
            out = _path_losses(self.system, val, self.lams, self.method)
        self.times_["score"] = time.perf_counter() - t0
        return out

    def scores(self, X_val: Samples, Y_val: Samples, scoring: str | Callable[..., float] | None = None) -> np.ndarray:
        """Validation score of every ``lam`` (greater is better).

        ``scoring``: None or ``"kernel_loss"`` (minus :meth:`losses`), a scikit-learn scorer
        name or a callable ``scorer(estimator, X, Y)`` applied to :meth:`estimator_at`.
        """
        scorer, name = _resolve_scoring(scoring)
        what = type(self.estimator).__name__
        if scorer is None:
            out = -self.losses(X_val, Y_val)
            for lam, s in zip(self.lams, out):
                logger.info("[%s] lam=%.3g: %s %.6g", what, lam, name, s)
            return out
        spec = getattr(scorer, "retrieval", None)
        if spec is not None and self.method != "refit" and hasattr(self.adapter, "query_block"):
            return self._retrieval_scores(X_val, Y_val, spec, name)
        t0 = time.perf_counter()
        out = np.empty(len(self.lams))
        for i, lam in enumerate(self.lams):
            out[i] = float(scorer(self.estimator_at(lam), X_val, Y_val))
            logger.info("[%s] lam=%.3g: %s %.6g (%.1f s)", what, lam, name, out[i], time.perf_counter() - t0)
        self.times_["score"] = time.perf_counter() - t0
        return out

    def _retrieval_scores(self, X_val: Samples, Y_val: Samples, spec: Mapping[str, Any], name: str) -> np.ndarray:
        """:func:`retrieval_scorer` for every ``lam`` without a fitted copy per ``lam``.

        The candidate index (the output basis does not depend on ``lam``) and the
        validation block ``Q`` are computed once; the scores at ``lam`` are
        ``Q gamma(lam) E^T + offsets``.  With the eigen route ``gamma(lam) = W diag(phi(lam))
        W^T B``, so ``(Q W) diag(phi) (W^T B E^T)`` costs one ``n_val x r x n_c`` product per
        ``lam`` (a fitted copy would form the ``m x p`` coefficients and decode through them:
        for IOKR, an ``n x n`` product per ``lam``).  Equal to the scorer applied to
        :meth:`estimator_at` (tested).
        """
        from .metrics import ranks_from_scores

        t0 = time.perf_counter()
        pool = Y_val if spec["extra_candidates"] is None else concat_samples([Y_val, spec["extra_candidates"]])
        index = self.estimator_.make_candidate_index(pool)
        E = np.asarray(index.gather_embeddings(), dtype=np.float64)  # (n_c, p)
        offsets = None if index.offsets is None else np.asarray(index.offsets, dtype=np.float64)
        Q = self.adapter.query_block(X_val)
        n_val = Q.shape[0]
        self._resolve(n_val)
        system = self.system
        B = system.targets()  # (m, p)
        m, p, n_c = B.shape[0], B.shape[1], E.shape[0]
        # per lam, either (Q W phi) (W^T B E^T) [n_val m n_c flops] or the coordinates
        # H = Q gamma(lam) first, then H E^T [n_val m p + n_val p n_c]: a sketched output
        # basis (p = 128) against a large input sketch (m = 2000) favours the second
        via_coordinates = n_val * m * p + n_val * p * n_c < n_val * m * n_c
        BE = None if via_coordinates else matmul(B, E.T)  # (m, n_c): B E^T
        WQ: Any = None
        WBE: Any = None
        if self.method == "eigh" and len(system.groups) == 1 and system.eig is not None:
            W = system.eig[0]
            WQ = matmul(Q, W)
            WBE = matmul(W.T, B) if BE is None else matmul(W.T, BE)
        truth = np.arange(n_val)
        out = np.empty(len(self.lams))
        what = type(self.estimator).__name__
        for i, lam in enumerate(self.lams):
            left: np.ndarray
            right: np.ndarray
            if WQ is not None and system.covers(lam):
                left, right = WQ * system.phi(lam)[None, :], WBE
            elif via_coordinates:
                left, right = Q, system.coef(lam)
            else:
                left, right = Q, matmul(system.coef(lam), E.T)  # gamma(lam) E^T
            if via_coordinates:  # H = Q gamma(lam), scored against E
                left, right = matmul(left, right), E.T
            ranks = np.empty(n_val)
            for sl in iter_chunks(n_val, spec["query_batch"]):
                S = matmul(left[sl], right)
                if offsets is not None:
                    S += offsets[None, :]
                ranks[sl] = ranks_from_scores(S, truth[sl])
            out[i] = _retrieval_value(ranks, spec)
            logger.info("[%s] lam=%.3g: %s %.6g (%.1f s)", what, lam, name, out[i], time.perf_counter() - t0)
        self.times_["score"] = time.perf_counter() - t0
        return out


def lambda_path(estimator: Any, X: Samples, Y: Samples, lams: ArrayLike = DEFAULT_LAMS,
                method: str = "auto") -> LambdaPath:
    """Fit ``estimator`` once and prepare the solutions for every ``lam`` of ``lams``.

    Parameters
    ----------
    estimator : unfitted estimator with a ``lam`` parameter (cloned, never modified)
        Fast routes for the IOKR family (IOKR, SIOKR, ISOKR, SISOKR),
        :class:`~sprokr.models.KernelRidgeRegressor` and square-loss
        :class:`~sprokr.SketchedKernelMachine`; any other estimator is refitted per ``lam``.
    X, Y : training data
    lams : sequence of float > 0
    method : {"auto", "eigh", "cholesky", "refit"}

    Returns
    -------
    LambdaPath
    """
    return LambdaPath(estimator, X, Y, lams, method)


def _first_best(scores):
    s = np.where(np.isnan(scores), -np.inf, scores)
    if not np.isfinite(s).any():
        raise ValueError("every lam scored NaN or -inf on the validation data")
    return int(np.argmax(s))  # the first best, in the grid's order (as GridSearchCV)


def _seeded(estimator, rng):
    """A clone whose unset ``random_state`` is drawn from ``rng`` (reproducible sketches)."""
    est = clone(estimator)
    params = est.get_params(deep=False)
    if "random_state" in params and params["random_state"] is None:
        est.set_params(random_state=int(rng.integers(2**31 - 1)))
    return est


def _split(X, Y, validation_data, validation_fraction, rng):
    from .models.dsokr import check_validation_fraction, validation_split
    from .utils import check_paired

    check_paired(X, Y)
    if validation_data is not None:
        if len(validation_data) != 2:
            raise ValueError("validation_data must be a pair (X_val, Y_val)")
        check_paired(validation_data[0], validation_data[1], "X_val", "Y_val")
        return (X, Y), tuple(validation_data)
    vf = check_validation_fraction(validation_fraction)
    if vf is None:
        raise ValueError("give validation_fraction in (0, 1) or validation_data=(X_val, Y_val)")
    return validation_split(X, Y, vf, rng)


# --------------------------------------------------------------------------- meta-estimator
def _best_has(attr):
    def check(self):
        est = getattr(self, "best_estimator_", None)
        return hasattr(self.estimator if est is None else est, attr)

    return check


class LambdaSearchCV(BaseEstimator):
    """Choose ``lam`` on a validation split with the lam path (scikit-learn meta-estimator).

    Like scikit-learn's ``RidgeCV``, for the ridge parameter of sprokr's kernel models:
    the estimator is fitted once on the training part of the data, every ``lam`` is scored
    on the validation part from one factorisation (see :mod:`sprokr.model_selection`),
    and the best one is refitted on all the data.

    Parameters
    ----------
    estimator : estimator with a ``lam`` parameter
        Cloned, never modified.  An unset ``random_state`` of it is drawn from
        ``random_state`` (so the search is reproducible).
    lams : sequence of float > 0, optional
        The grid (default :data:`DEFAULT_LAMS`, 1e-9 ... 1e-1).  Ties go to the first best
        value in the grid's order (as in ``GridSearchCV``).
    scoring : None, "kernel_loss", str or callable
        None: minus the validation kernel-induced loss (:func:`kernel_loss_scorer`, computed
        from the path).  A scikit-learn scorer name or ``scorer(estimator, X, Y)`` (greater
        is better), e.g. :func:`sprokr.metrics.f1_samples_scorer` or
        :func:`retrieval_scorer`, called on a lightweight fitted copy per ``lam``.
    validation_fraction : float in (0, 1)
        Fraction of the pairs held out (seeded) when ``fit`` gets no ``validation_data``.
    refit : bool
        Refit the best ``lam`` on all the data given to ``fit`` (else ``best_estimator_`` is
        the copy fitted on the training part).
    method : {"auto", "eigh", "cholesky", "refit"}
        Route of the path (see :func:`lambda_path`).
    random_state : None, int or numpy.random.Generator
        Seeds the validation split and the estimator's unset ``random_state``.

    Attributes
    ----------
    best_lam_ : float
    best_index_ : int
    best_score_ : float
    scores_ : ndarray of shape (n_lams,)
        Validation score of each ``lam`` (greater is better).
    lams_ : ndarray of shape (n_lams,)
    best_estimator_ : fitted estimator
    method_ : str
        The route used.
    n_train_, n_val_ : int
        Sizes of the training and validation parts.
    times_ : dict
        Seconds of each phase (``fit``, ``pass``, ``factorize``, ``score``, ``refit``, ``total``).
    """

    def __init__(self, estimator: Any, lams: ArrayLike | None = None, scoring: str | Callable[..., float] | None = None,
                 validation_fraction: float | None = 0.2, refit: bool = True, method: str = "auto",
                 random_state: RandomStateLike = None) -> None:
        self.estimator = estimator
        self.lams = lams
        self.scoring = scoring
        self.validation_fraction = validation_fraction
        self.refit = refit
        self.method = method
        self.random_state = random_state

    def fit(self, X: Samples, Y: Samples, validation_data: tuple[Samples, Samples] | None = None) -> Self:
        """Search ``lam`` on a validation split of ``(X, Y)`` (or on ``validation_data``)."""
        t0 = time.perf_counter()
        lams = check_lams(DEFAULT_LAMS if self.lams is None else self.lams)
        _resolve_scoring(self.scoring)
        if not isinstance(self.refit, (bool, np.bool_)):
            raise ValueError(f"refit must be True or False, got {self.refit!r}")
        if self.method not in ("auto", "eigh", "cholesky", "refit"):
            raise ValueError(f"method must be 'auto', 'eigh', 'cholesky' or 'refit', got {self.method!r}")
        if not hasattr(self.estimator, "get_params") or "lam" not in self.estimator.get_params(deep=False):
            raise ValueError(f"estimator must have a 'lam' parameter, got {type(self.estimator).__name__}")
        rng = check_random_state(self.random_state)
        (Xtr, Ytr), (Xv, Yv) = _split(X, Y, validation_data, self.validation_fraction, rng)
        est = _seeded(self.estimator, rng)
        path = lambda_path(est, Xtr, Ytr, lams, self.method)
        scores = path.scores(Xv, Yv, self.scoring)
        best = _first_best(scores)
        self.lams_, self.scores_, self.best_index_ = lams, scores, best
        self.best_lam_, self.best_score_ = float(lams[best]), float(scores[best])
        self.method_, self.times_ = path.method, dict(path.times_)
        self.n_train_, self.n_val_ = num_samples(Ytr, "Y"), num_samples(Yv, "Y_val")
        logger.info("[LambdaSearchCV] best lam=%.3g (score %.6g, route %s)", self.best_lam_, self.best_score_,
                    self.method_)
        if self.refit:
            t1 = time.perf_counter()
            self.best_estimator_ = clone(est).set_params(lam=self.best_lam_).fit(X, Y)
            self.times_["refit"] = time.perf_counter() - t1
        else:
            self.best_estimator_ = path.estimator_at(self.best_lam_)
        self.times_["total"] = time.perf_counter() - t0
        return self

    # ---- delegation to the best estimator
    @available_if(_best_has("predict"))
    def predict(self, X: Samples, *args: Any, **kwargs: Any) -> Any:
        """``best_estimator_.predict``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X, *args, **kwargs)

    @available_if(_best_has("predict_topk"))
    def predict_topk(self, X: Samples, *args: Any, **kwargs: Any) -> Decoded:
        """``best_estimator_.predict_topk``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_topk(X, *args, **kwargs)

    @available_if(_best_has("predict_scores"))
    def predict_scores(self, X: Samples, *args: Any, **kwargs: Any) -> np.ndarray:
        """``best_estimator_.predict_scores``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_scores(X, *args, **kwargs)

    @available_if(_best_has("predict_coordinates"))
    def predict_coordinates(self, X: Samples, *args: Any, **kwargs: Any) -> np.ndarray:
        """``best_estimator_.predict_coordinates``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_coordinates(X, *args, **kwargs)

    @available_if(_best_has("make_candidate_index"))
    def make_candidate_index(self, candidates: Samples, *args: Any, **kwargs: Any) -> CandidateIndex:
        """``best_estimator_.make_candidate_index``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.make_candidate_index(candidates, *args, **kwargs)

    def score(self, X: Samples, Y: Samples) -> float:
        """The search's own scoring on ``(X, Y)`` (the kernel-induced loss by default)."""
        check_is_fitted(self, "best_estimator_")
        scorer, _ = _resolve_scoring(self.scoring)
        return float((scorer or kernel_loss_scorer)(self.best_estimator_, X, Y))


# --------------------------------------------------------------------------- select_model
def _sketch_size_param(estimator):
    params = estimator.get_params(deep=False)
    for name in ("m_x", "m"):
        if name in params:
            return name
    raise ValueError(f"{type(estimator).__name__} has no input sketch size parameter (m_x or m)")


def select_model(estimator: Any, X: Samples, Y: Samples, lams: ArrayLike | None = None,
                 param_grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Sequence[Any]]] | None = None,
                 m_y_grid: Sequence[int] | None = None, m_x_grid: Sequence[int] | None = None,
                 scoring: str | Callable[..., float] | None = None, validation_fraction: float | None = 0.2,
                 validation_data: tuple[Samples, Samples] | None = None, m_x_budget_s: float | None = None,
                 rtol: float = 0.01, patience: int = 1, perfect_h_params: Mapping[str, Any] | None = None,
                 method: str = "auto", random_state: RandomStateLike = None) -> dict[str, Any]:
    """Choose ``lam``, kernel parameters and sketch sizes on a validation split of the training data.

    In order, on one seeded split of ``(X, Y)`` (or on ``validation_data``):

    1. ``m_y`` (``m_y_grid``; estimators with an output sketch): the perfect-h curve
       (:func:`sprokr.selection.perfect_h_curve`) of the validation outputs; the plateau
       gives ``m_y`` -- no regressor is trained;
    2. ``param_grid`` (a scikit-learn parameter grid, e.g. kernel bandwidths): one fit and
       one lam path per point;
    3. ``m_x`` (``m_x_grid``, increasing; the input sketch size ``m_x`` or ``m``): one fit and
       one lam path per size, the sizes growing until the best validation score stops
       improving by ``rtol`` (``patience`` times) or a fit takes longer than ``m_x_budget_s``
       (:func:`sprokr.selection.grow_until_plateau`); the smallest size within ``rtol`` of
       the best is kept.

    Parameters
    ----------
    estimator : unfitted estimator with a ``lam`` parameter (cloned, never modified)
    X, Y : training data (never the test split)
    lams : sequence of float > 0, optional (default :data:`DEFAULT_LAMS`)
    param_grid : dict or list of dicts, optional
        Estimator parameters to try (``sklearn.model_selection.ParameterGrid``).
    m_y_grid, m_x_grid : increasing sequences of int, optional
    scoring : as :class:`LambdaSearchCV`
    validation_fraction : float in (0, 1)
    validation_data : (X_val, Y_val), optional
    m_x_budget_s : float, optional
        Budget of one fit (s) while growing ``m_x``.
    rtol, patience : stopping rule of the ``m_x`` growth (relative score improvement)
    perfect_h_params : dict, optional
        Extra arguments of :func:`~sprokr.selection.perfect_h_curve` (``candidates``,
        ``metric``, ``greater_is_better``, ``rtol``, ...).
    method : route of the lam paths (see :func:`lambda_path`)
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    dict (plain data, for tables and figures)
        ``best_params``: the chosen settings, usable as ``estimator.set_params(**best_params)``
        (refit on all the training data afterwards); ``best_score``; ``scoring``;
        ``perfect_h`` (the :func:`perfect_h_curve` result, or None); ``grid``: one entry per
        parameter point with ``params``, ``lams``, ``scores``, ``best_lam``, ``best_score``,
        ``fit_s`` (one fit), ``path_s`` (pass, factorisation and scoring of the whole grid);
        ``m_x``: the growth (``m``, ``best_scores``, ``best_lams``, ``scores`` (per size, per
        lam), ``fit_times``, ``selected_m``, ``stopped``) or None; ``n_train``, ``n_val``,
        ``time_s``.
    """
    t_start = time.perf_counter()
    lams = check_lams(DEFAULT_LAMS if lams is None else lams)
    _, scoring_name = _resolve_scoring(scoring)
    if "lam" not in estimator.get_params(deep=False):
        raise ValueError(f"estimator must have a 'lam' parameter, got {type(estimator).__name__}")
    rng = check_random_state(random_state)
    (Xtr, Ytr), (Xv, Yv) = _split(X, Y, validation_data, validation_fraction, rng)
    base = _seeded(estimator, rng)
    chosen = {}

    ph = None
    if m_y_grid is not None:
        params = base.get_params(deep=False)
        if params.get("output_sketch") is None:
            raise ValueError("m_y_grid needs an estimator with an output sketch (output_sketch is None)")
        ph = perfect_h_curve(Ytr, Yv, params["output_kernel"], m_y_grid, sketch=params["output_sketch"],
                             sketch_params=params.get("output_sketch_params"),
                             output_kernel_params=params.get("output_kernel_params"),
                             random_state=int(rng.integers(2**31 - 1)), **(perfect_h_params or {}))
        chosen["m_y"] = int(ph["plateau_m"])
        logger.info("[select_model] perfect h: m_y=%d (%s)", chosen["m_y"], ph["criterion"])

    def run_path(params):
        est = clone(base).set_params(**params)
        path = lambda_path(est, Xtr, Ytr, lams, method)
        scores = path.scores(Xv, Yv, scoring)
        b = _first_best(scores)
        t = path.times_
        return {"params": dict(params), "lams": lams.tolist(), "scores": scores.tolist(),
                "best_lam": float(lams[b]), "best_score": float(scores[b]), "fit_s": t["fit"],
                "path_s": sum(v for k, v in t.items() if k != "fit"), "method": path.method}

    grid = []
    for params in ParameterGrid(param_grid if param_grid is not None else {}):
        res = run_path({**chosen, **params})
        grid.append(res)
        logger.info("[select_model] %s: best lam=%.3g, %s %.6g", params, res["best_lam"], scoring_name,
                    res["best_score"])
    best = grid[_first_best(np.array([g["best_score"] for g in grid]))]
    chosen.update(best["params"])
    chosen["lam"], best_score = best["best_lam"], best["best_score"]

    growth = None
    if m_x_grid is not None:
        name = _sketch_size_param(base)
        runs = {}

        def evaluate(m):
            runs[m] = run_path({**chosen, name: int(m)})
            return -runs[m]["best_score"], runs[m]["fit_s"]

        log = lambda msg: logger.info("[select_model] %s", msg)  # noqa: E731
        g = grow_until_plateau(m_x_grid, evaluate, m_x_budget_s, rtol, patience, name=name, log=log)
        sel = runs[g["selected_m"]]
        chosen[name], chosen["lam"], best_score = g["selected_m"], sel["best_lam"], sel["best_score"]
        growth = {"param": name, "m": g["m"], "best_scores": [runs[m]["best_score"] for m in g["m"]],
                  "best_lams": [runs[m]["best_lam"] for m in g["m"]],
                  "scores": [runs[m]["scores"] for m in g["m"]], "fit_times": g["fit_times"],
                  "selected_m": g["selected_m"], "stopped": g["stopped"]}

    return {"best_params": chosen, "best_score": best_score, "scoring": scoring_name, "perfect_h": ph,
            "grid": grid, "m_x": growth, "n_train": num_samples(Ytr, "Y"), "n_val": num_samples(Yv, "Y_val"),
            "time_s": time.perf_counter() - t_start}
