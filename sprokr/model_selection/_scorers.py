"""Validation scores of a fitted model: the kernel-induced loss, retrieval ranks, scorer names."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import scipy.sparse as sp

from ..numerics import ChunkTask, LocalExecutor, default_chunk_size
from ..utils import check_integer, concat_samples, iter_chunks, num_samples, row_offset, take_slice

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import Samples

__all__ = ["kernel_loss_scorer", "retrieval_scorer", "surrogate_error"]


def check_scored_pairs(X: Samples, Y: Samples, x_name: str = "X", y_name: str = "Y") -> int:
    """Number of pairs ``n >= 1`` of ``(X, Y)`` a scorer compares (errors name X and Y)."""
    n, ny = num_samples(X, x_name), num_samples(Y, y_name)
    if n != ny:
        raise ValueError(f"{x_name} and {y_name} have different numbers of samples: {n} and {ny}")
    if n < 1:
        raise ValueError(f"cannot score on 0 samples: {x_name} is empty; expected at least one sample")
    return n


def kernel_loss_scorer(estimator: Any, X: Samples, Y: Samples) -> float:
    """Minus the kernel-induced loss on ``(X, Y)``: a scikit-learn scorer (greater is better).

    For models with an output kernel (IOKR family, DSOKR): ``-mean |h(x) - psi(y)|^2_H``
    (:func:`surrogate_error`, no decoding).  For vector regressors:
    ``-mean_i |f(x_i) - y_i|^2`` (squared error summed over outputs).  A fitted
    :class:`LambdaSearchCV` is scored through its ``best_estimator_``.

    Parameters
    ----------
    estimator : fitted estimator
        A fitted model (or a fitted :class:`LambdaSearchCV`).
    X : samples
        The inputs.
    Y : samples
        Their true outputs (as many as ``X``, at least one).

    Returns
    -------
    float
        Minus the mean loss (greater is better).
    """
    est = getattr(estimator, "best_estimator_", estimator)
    check_scored_pairs(X, Y)  # before predicting (numpy's broadcast error; a NaN mean for none)
    if hasattr(est, "output_kernel_"):
        return -surrogate_error(est, X, Y)
    P = as_2d(est.predict(X))
    T = as_2d(Y)
    if P.shape != T.shape:
        raise ValueError(f"predictions of shape {P.shape} do not match the targets' shape {T.shape}")
    return -float(np.mean(np.einsum("ij,ij->i", P - T, P - T)))


def retrieval_scorer(metric: str = "mrr", k: int = 1, extra_candidates: Samples | None = None,
                     query_batch: int = 1024) -> Callable[[Any, Any, Any], float]:
    """A scorer that ranks the validation outputs themselves for each validation input.

    The candidate set is ``Y_val`` (plus ``extra_candidates``), so the true output of query
    ``i`` is candidate ``i``: outputs the model has not seen, and no equality test between
    outputs is needed (graphs, molecules).  Scores come from ``predict_scores`` (ties broken at
    random in expectation, :func:`sprokr.metrics.ranks_from_scores`).

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
    from ..metrics import ranks_from_scores

    if metric not in ("mrr", "top_k"):
        raise ValueError(f"metric must be 'mrr' or 'top_k', got {metric!r}")
    check_integer(k, "k")
    check_integer(query_batch, "query_batch")

    def scorer(estimator, X, Y):
        est = getattr(estimator, "best_estimator_", estimator)
        n = check_scored_pairs(X, Y)  # the truth of query i is candidate i: one output per input
        pool = Y if extra_candidates is None else concat_samples([Y, extra_candidates])
        index = est.make_candidate_index(pool)
        ranks = np.empty(n)
        for sl in iter_chunks(n, query_batch):
            with row_offset(sl.start):  # an invalid query is named by its row of X
                S = est.predict_scores(take_slice(X, sl), candidates=index)
            ranks[sl] = ranks_from_scores(S, np.arange(sl.start, sl.stop))
        return retrieval_value(ranks, scorer.retrieval)

    scorer.__name__ = f"retrieval_{metric}" + (f"@{k}" if metric == "top_k" else "")
    # what the scorer computes, so that a lam path can score every lam from one
    # factorisation instead of one fitted copy per lam (LambdaPath.scores)
    scorer.retrieval = {"metric": metric, "k": int(k), "extra_candidates": extra_candidates,  # type: ignore[attr-defined]
                        "query_batch": int(query_batch)}
    return scorer


def retrieval_value(ranks, spec):
    """MRR or top-k accuracy of the ranks, as :func:`retrieval_scorer` computes them."""
    return float(np.mean(1.0 / ranks)) if spec["metric"] == "mrr" else float(np.mean(ranks <= spec["k"]))


def resolve_scoring(scoring):
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


def as_2d(Y):
    """Vector targets or predictions as a dense float64 (n, p) array."""
    Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=np.float64)
    return Y[:, None] if Y.ndim == 1 else Y


def surrogate_error(model: Any, X: Samples, Y: Samples, chunk_size: int | None = None) -> float:
    """Mean surrogate error ``|h(x) - psi(y)|^2_H`` of a fitted SISOKR-family model or DSOKR.

    With an output sketch: ``|H(x) - psi~(y)|^2 + k(y,y) - |psi~(y)|^2``.  Without (IOKR,
    SIOKR): ``h(x) = sum_i alpha_i(x) psi(y_i)``, so the error is ``alpha^T K_y alpha - 2
    alpha^T k_y^y + k(y, y)``, accumulated over chunks of training outputs (O(n^2) output
    kernel evaluations, O(chunk x n) memory).

    Parameters
    ----------
    model : fitted estimator
        A fitted model with an output kernel (``output_kernel_``, ``predict_coordinates``).
    X : samples
        The inputs.
    Y : samples
        Their true outputs (as many as ``X``, at least one).
    chunk_size : int, optional
        Training outputs per chunk, without an output sketch (default: a ``chunk x n``
        float64 block of about 64 MB, 128 to 8192 rows).

    Returns
    -------
    float
        The mean surrogate error.
    """
    check_scored_pairs(X, Y)
    ky = model.output_kernel_
    H = np.asarray(model.predict_coordinates(X), dtype=np.float64)
    Yp = ky.prepare_outputs(Y)
    kyy = ky.diag(Yp).astype(np.float64)
    feats = getattr(model, "output_features_", None)
    if feats is not None:
        T = feats.transform(Yp).astype(np.float64)
        return float(np.mean(np.einsum("ij,ij->i", H - T, H - T) + np.maximum(kyy - np.einsum("ij,ij->i", T, T), 0)))
    Ytr = model.Y_train_
    ex = LocalExecutor()
    parts = ex.partition(Ytr)
    quad, cross = ex.map_reduce(parts, _ExactOutputError(ky, Ytr, Yp, H),
                                chunk_size or default_chunk_size(parts.n, np.float64))
    return float(np.mean(quad - 2 * cross + kyy))


class _ExactOutputError(ChunkTask):
    """``alpha^T K_y alpha`` and ``alpha^T k_y^y`` per query, over chunks of training outputs."""

    name = "surrogate error"

    def __init__(self, kernel, Ytr, Yq, H):
        self.kernel, self.Ytr, self.Yq, self.H = kernel, Ytr, Yq, H

    def start(self):
        return np.zeros(self.H.shape[0]), np.zeros(self.H.shape[0])

    def add(self, acc, rows, Yc):
        Kc = np.asarray(self.kernel.pairwise(Yc, self.Ytr), dtype=np.float64)  # (chunk, n)
        Hc = self.H[:, rows]
        quad = acc[0] + np.einsum("qi,qi->q", Hc, self.H @ Kc.T)
        cross = acc[1] + np.einsum("qi,iq->q", Hc, self.kernel.pairwise(Yc, self.Yq))
        return quad, cross

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1]
