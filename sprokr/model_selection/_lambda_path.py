"""The lam path: the solutions of one estimator for a grid of ``lam`` from one fit and one pass."""
from __future__ import annotations

import logging
import numbers
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import clone

from ..numerics import matmul
from ..utils import check_positive, concat_samples, frame_as_array, iter_chunks
from ._adapters import adapter_for, float64_twin
from ._scorers import check_scored_pairs, kernel_loss_scorer, resolve_scoring, retrieval_value
from ._systems import path_losses

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import Samples

__all__ = ["LambdaPath", "lambda_path", "check_lams", "DEFAULT_LAMS"]

logger = logging.getLogger("sprokr.model_selection")

#: default grid: 1e-9 ... 1e-1, two values per decade
DEFAULT_LAMS = tuple(float(v) for v in np.logspace(-9, -1, 17))


def check_lams(lams: ArrayLike, name: str = "lams") -> np.ndarray:
    """A grid of ridge parameters as a float64 array (order kept).

    Parameters
    ----------
    lams : array-like of float
        The ridge parameters: a non-empty sequence (or array, flattened) of distinct finite
        real numbers > 0.
    name : str, default="lams"
        The argument's name in the error messages.

    Returns
    -------
    ndarray of float64
        ``lams`` in the order given.

    Raises
    ------
    ValueError
        For an empty grid, non-numbers, non-finite or non-positive values and duplicates.
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


# --------------------------------------------------------------------------- the path
class LambdaPath:
    """The solutions of one estimator for a grid of ``lam``, from one fit and one pass.

    Build it with :func:`lambda_path`.

    Parameters
    ----------
    estimator : unfitted estimator with a ``lam`` parameter (cloned, never modified)
        Fast routes for the IOKR family (IOKR, SIOKR, ISOKR, SISOKR),
        :class:`~sprokr.models.KernelRidgeRegressor` and square-loss
        :class:`~sprokr.SketchedKernelMachine`; any other estimator is refitted per ``lam``.
    X, Y : samples
        The training inputs and outputs (dataframes are converted to arrays).
    lams : array-like of float
        The grid of ridge parameters, distinct and > 0 (see :func:`check_lams`).
    method : {"auto", "eigh", "cholesky", "refit"}, default="auto"
        The route: one eigendecomposition for the whole grid (``"eigh"``), one Cholesky
        factorisation per ``lam`` (``"cholesky"``), or a refit per ``lam`` (``"refit"``, the
        only route of an estimator without a fast route); ``"auto"`` picks the cheaper fast
        route when the path is first scored.

    Attributes
    ----------
    lams : ndarray
        The grid (in the order given).
    state_ : estimator
        The model's state (kernels, sketches, output basis, decoder, input support) from the
        estimator's ``fit_state`` on the fast routes -- no ridge solve: the path solves for
        every ``lam`` from its own pass, so a solve at one ``lam`` would be thrown away
        (a path makes one factorisation) --; every :meth:`estimator_at` is a copy of it
        with a solution (``with_coef``).  The ordinary fit at ``max(lams)`` on the refit route.
    estimator_ : fitted estimator
        The fitted estimator at ``max(lams)`` (:meth:`estimator_at`; made on first access).
    method : {"eigh", "cholesky", "refit"}
        The route (``"auto"`` is resolved when the path is first scored).
    times_ : dict
        Seconds spent in ``fit`` (the state: ``fit_state``, or the fit at ``max(lams)`` on
        the refit route), ``pass`` (the cross products), ``factorize``, ``score`` and, once
        a fitted copy needed it, ``default_index`` (the candidates of ``predict(X)``).
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
        # dataframes: arrays, as the searches' splits (the path gathers and concatenates rows)
        X, Y = frame_as_array(X), frame_as_array(Y)
        self.estimator, self.X, self.Y = estimator, X, Y
        adapter = adapter_for(estimator)
        self.method = "refit" if adapter is None else method
        self.times_ = {}
        t0 = time.perf_counter()
        lam_ref = float(self.lams.max())  # the best-conditioned fit
        base = estimator
        twin = None if self.method == "refit" else float64_twin(estimator)
        if twin is not None:  # see float64_twin: float32 models of a path would go unchecked
            logger.info("lam path of %s: computed, and its models predict, with float64 kernel values (its "
                        "models are not checked one by one, as a float32 fit is)", type(estimator).__name__)
            base = twin
        model = clone(base).set_params(lam=lam_ref)
        self._estimator = None
        if self.method == "refit":
            self.state_ = self._estimator = model.fit(X, Y)
        else:  # the state alone: the path's own factorisation solves every lam
            self.state_ = model.fit_state(X, Y)
        self.times_["fit"] = time.perf_counter() - t0
        self.adapter = None
        if self.method != "refit":
            t0 = time.perf_counter()
            self.adapter = adapter(self.state_, X, Y)
            self.times_["pass"] = time.perf_counter() - t0
        self.system = None if self.adapter is None else self.adapter.system

    @property
    def estimator_(self) -> Any:
        """The fitted estimator at ``max(lams)`` (on the fast routes a copy of ``state_`` with
        the path's solution, made on first access)."""
        if self._estimator is None:
            self._estimator = self.estimator_at(float(self.lams.max()))
        return self._estimator

    def _with_default_index(self) -> Any:
        """``state_`` with its default candidate index (``predict(X)`` without candidates).

        Built here, on the first fitted copy, rather than by the state's fit: the path's
        own scores never use it (the kernel loss needs no candidates, the retrieval scorer
        ranks the validation outputs), so a path that is only scored -- a selection's many
        paths -- never pays for it.  Built once on the state, every later copy shares it.
        """
        state = self.state_
        if getattr(state, "default_index", False) and state.default_index_ is None:
            t0 = time.perf_counter()
            state.build_default_index(self.Y)
            self.times_["default_index"] = time.perf_counter() - t0
        return state

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
        """The fitted estimator at ``lam`` (a lightweight copy, or a refit on the refit route).

        A copy's ``solver_`` names the path's route (``"lam path (eigh)"`` or ``"lam path
        (cholesky)"``): its coefficients come from the path's system, not from a fit."""
        lam = check_positive(lam, "lam")
        if self.method != "refit":  # not cached: a copy is cheap, and may hold an m x n coef_
            self._with_default_index()
            model = self.adapter.fitted(self.coef(lam), lam)
            # the solve is the path's (its state solved nothing): say which route, as a fit would
            model.solver_ = f"lam path ({self.method})"
            return model
        if lam == self.state_.lam:
            return self.state_
        return clone(self.estimator).set_params(lam=lam).fit(self.X, self.Y)

    def _check_validation(self, X_val: Samples, Y_val: Samples) -> None:
        """The validation pairs, named: as many ``X_val`` as ``Y_val``, at least one, and numeric
        targets with the training targets' columns (the fast routes met them as numpy's
        broadcast errors, or returned NaN losses for no pair, where a refit's scorer names them)."""
        check_scored_pairs(X_val, Y_val, "X_val", "Y_val")
        Y = self.Y

        def numeric(A):
            return hasattr(A, "shape") and hasattr(A, "dtype") and np.dtype(A.dtype).kind in "biuf"

        if numeric(Y) and numeric(Y_val) and tuple(Y.shape[1:]) != tuple(Y_val.shape[1:]):
            raise ValueError(f"Y_val has shape {tuple(Y_val.shape)}, the training Y {tuple(Y.shape)}: expected "
                             f"shape (n_val{''.join(f', {k}' for k in Y.shape[1:])})")

    def losses(self, X_val: Samples, Y_val: Samples) -> np.ndarray:
        """Mean validation kernel-induced loss of every ``lam`` (see :func:`kernel_loss_scorer`)."""
        self._check_validation(X_val, Y_val)
        t0 = time.perf_counter()
        if self.method == "refit":
            out = np.array([-kernel_loss_scorer(self.estimator_at(lam), X_val, Y_val) for lam in self.lams])
        else:
            val = self.adapter.validation(X_val, Y_val)
            self._resolve(val.n, val.quad is not None)
            out = path_losses(self.system, val, self.lams, self.method)
        self.times_["score"] = time.perf_counter() - t0
        return out

    def scores(self, X_val: Samples, Y_val: Samples, scoring: str | Callable[..., float] | None = None) -> np.ndarray:
        """Validation score of every ``lam`` (greater is better).

        ``scoring``: None or ``"kernel_loss"`` (minus :meth:`losses`), a scikit-learn scorer
        name or a callable ``scorer(estimator, X, Y)`` applied to :meth:`estimator_at`.
        """
        scorer, name = resolve_scoring(scoring)
        X_val, Y_val = frame_as_array(X_val), frame_as_array(Y_val)
        what = type(self.estimator).__name__
        if scorer is None:  # (losses checks the validation pairs)
            out = -self.losses(X_val, Y_val)
            for lam, s in zip(self.lams, out):
                logger.info("[%s] lam=%.3g: %s %.6g", what, lam, name, s)
            return out
        self._check_validation(X_val, Y_val)
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
        from ..metrics import ranks_from_scores

        t0 = time.perf_counter()
        pool = Y_val if spec["extra_candidates"] is None else concat_samples([Y_val, spec["extra_candidates"]])
        index = self.state_.make_candidate_index(pool)  # the output side only: no solution needed
        E = np.asarray(index.gather_embeddings(), dtype=np.float64)  # (n_c, p)
        offsets = None if index.offsets is None else np.asarray(index.offsets, dtype=np.float64)
        Q = self.adapter.query_block(X_val)
        n_val = Q.shape[0]
        self._resolve(n_val)
        system = self.system
        B = system.B  # (m, p), or None for the identity (exact outputs: never formed)
        m, p, n_c = system.m, system.p, E.shape[0]
        # per lam, either (Q W phi) (W^T B E^T) [n_val m n_c flops] or the coordinates
        # H = Q gamma(lam) first, then H E^T [n_val m p + n_val p n_c]: a sketched output
        # basis (p = 128) against a large input sketch (m = 2000) favours the second
        via_coordinates = B is not None and n_val * m * p + n_val * p * n_c < n_val * m * n_c
        BE = None if via_coordinates else (E.T if B is None else matmul(B, E.T))  # (m, n_c): B E^T
        WQ: Any = None
        WBE: Any = None
        QBE: Any = None
        if self.method == "eigh" and len(system.groups) == 1 and system.eig is not None:
            W = system.eig[0]
            WQ = self.adapter.eigen_queries(X_val, Q, W)
            WBE = matmul(W.T, B) if BE is None else matmul(W.T, BE)
            if not system.complete:  # G(lam)^-1 = W phi W^T + c (I - W W^T): Q (I - W W^T) B E^T
                QBE = (matmul(Q, B) if BE is None else matmul(Q, BE)) - matmul(WQ, WBE)
        truth = np.arange(n_val)
        out = np.empty(len(self.lams))
        what = type(self.estimator).__name__
        for i, lam in enumerate(self.lams):
            left: np.ndarray
            right: np.ndarray
            c = 0.0
            if WQ is not None and system.covers(lam):
                c = system.rest(lam)
                left, right = WQ * system.phi(lam)[None, :], WBE
            elif via_coordinates:
                left, right = Q, system.coef(lam)
            else:
                left, right = Q, matmul(system.coef(lam), E.T)  # gamma(lam) E^T
            if via_coordinates:  # H = Q gamma(lam), scored against E
                left, right = matmul(left, right), E.T
                if c:  # (QBE is Q B here)
                    left += c * QBE
                    c = 0.0
            ranks = np.empty(n_val)
            for sl in iter_chunks(n_val, spec["query_batch"]):
                S = matmul(left[sl], right)
                if c:
                    S += c * QBE[sl]
                if offsets is not None:
                    S += offsets[None, :]
                ranks[sl] = ranks_from_scores(S, truth[sl])
            out[i] = retrieval_value(ranks, spec)
            logger.info("[%s] lam=%.3g: %s %.6g (%.1f s)", what, lam, name, out[i], time.perf_counter() - t0)
        self.times_["score"] = time.perf_counter() - t0
        return out


def lambda_path(estimator: Any, X: Samples, Y: Samples, lams: ArrayLike = DEFAULT_LAMS,
                method: str = "auto") -> LambdaPath:
    """Fit ``estimator``'s state once and prepare the solutions for every ``lam`` of ``lams``.

    On the fast routes the state is the estimator's ``fit_state`` (a fit without its ridge
    solve) and the path makes one factorisation for the whole grid (``method="eigh"``; one
    Cholesky per ``lam`` with ``"cholesky"``); the refit route fits once per ``lam``.

    Parameters
    ----------
    estimator : unfitted estimator with a ``lam`` parameter (cloned, never modified)
        Fast routes for the IOKR family (IOKR, SIOKR, ISOKR, SISOKR),
        :class:`~sprokr.models.KernelRidgeRegressor` and square-loss
        :class:`~sprokr.SketchedKernelMachine`; any other estimator is refitted per ``lam``.
    X, Y : samples
        The training inputs and outputs.
    lams : sequence of float > 0, default=DEFAULT_LAMS
        The grid of ridge parameters (``1e-9 ... 1e-1``, two values per decade, by default).
    method : {"auto", "eigh", "cholesky", "refit"}, default="auto"
        The route (see :class:`LambdaPath`).

    Returns
    -------
    LambdaPath
    """
    return LambdaPath(estimator, X, Y, lams, method)
