"""The search of DSOKREnsemble's ``max`` aggregation.

``argmax_c max_t g_t(x)^T psi~_t(c) - k(c,c)/2``: unlike the ``mean`` aggregation (one
product with the members' concatenated embeddings, decoded like any other model), the
maximum over the members' scores is not a single inner product, so the ensemble scores
and searches its candidate index here: :func:`max_scores` (every candidate) and
:func:`max_topk` (one executor pass of :class:`MaxTopKTask` per query chunk).  Apart from
:mod:`sprokr.models.dsokr` so that the estimator module holds the estimators.
"""
from __future__ import annotations

import numpy as np

from ..numerics import Decoded, LocalExecutor, TopKTask, score_block_size
from ..utils import iter_chunks, num_samples, row_offset, take_slice

__all__ = ["MaxTopKTask", "max_scores", "max_topk"]


def max_topk(estimators, splits, index, X, top_k, max_memory_mb):
    """Top-``top_k`` candidates of ``index`` for the queries ``X`` by the members' maximum score
    (``top_k`` None: the best candidates themselves); ``splits`` divide the index's
    embeddings between the members."""
    n_q = num_samples(X, "X")
    kk = min(top_k or 1, len(index))
    ex = LocalExecutor()
    E = index.gather_embeddings()
    parts = ex.partition(E) if index.offsets is None else ex.partition(E, index.offsets)
    block = score_block_size(min(n_q, 2048), kk, 16, max_memory_mb)
    idx, scores = np.empty((n_q, kk), dtype=np.int64), np.empty((n_q, kk))
    for sl in iter_chunks(n_q, 2048):
        Xq = take_slice(X, sl)
        with row_offset(sl.start):  # an invalid query is named by its row of X
            task = MaxTopKTask([e.predict_coordinates(Xq) for e in estimators], splits, kk)
        idx[sl], scores[sl] = ex.map_reduce(parts, task, block)
    return index.take(idx[:, 0]) if top_k is None else Decoded(idx, scores)


def max_scores(estimators, splits, index, X):
    """Scores of every candidate of ``index``, the maximum over the members, shape (n_q, n_c)."""
    Es = np.split(index.gather_embeddings(), splits, axis=1)
    S = None
    for e, E in zip(estimators, Es):
        s = e.predict_coordinates(X) @ E.T
        S = s if S is None else np.maximum(S, s)
    return S if index.offsets is None else S + index.offsets


class MaxTopKTask(TopKTask):
    """Top-k of ``max_t H_t E_t^T + offsets`` over chunks of the members' embeddings."""

    name = "ensemble top-k search"

    def __init__(self, Hs, splits, k):
        super().__init__(Hs[0], k)
        self.Hs, self.splits = Hs, splits

    def add(self, state, rows, E, offsets=None):
        Es = np.split(np.asarray(E, dtype=np.float64), self.splits, axis=1)
        S = self.Hs[0] @ Es[0].T
        for H, Et in zip(self.Hs[1:], Es[1:]):
            np.maximum(S, H @ Et.T, out=S)
        if offsets is not None:
            S += offsets[None, :]
        return self.fold_scores(state, S, rows.start)
