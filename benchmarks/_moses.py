"""Pieces of the MOSES benchmark (``benchmarks/moses.py``): ranks, neighbours, validation.

* :class:`RankTask` -- the rank of each query's true candidate among *all* candidates, in
  one chunked pass over a (memory-mapped, float32) candidate index: float32 GEMM blocks,
  scores within the float32 rounding bound of the truth's float64 score rescored in float64.
* :class:`NeighbourTask` -- the ``k`` training inputs of largest input-kernel value for
  each query, in one chunked pass over the training inputs (the baselines).
* :func:`validation_mrr` -- MRR of validation queries ranking their own molecules among
  validation + distractor molecules (all from the training file).
"""
from __future__ import annotations

import numpy as np

from sprokr.numerics import ChunkTask, LocalExecutor, RescoredTopKTask, TopKTask, matmul
from sprokr.utils import iter_chunks, take_slice


class RankTask(ChunkTask):
    """``1 + #{c : score(c) > score(truth)}`` per query over chunks of candidates.

    ``H`` (n_q, d) float64 query coordinates, ``truth_scores`` (n_q,) their true
    candidate's float64 score.  Chunks ``(E,)`` or ``(E, offsets)``.  A float32 score
    within ``tol`` (the rounding bound ``d * eps32 * |h| * max |e|``) of the truth's is
    recomputed in float64 before it is compared, so the ranks are those of the float64
    scores (ties count half, as an expected rank under a random tie-break).
    """

    name = "rank of the truth"

    def __init__(self, H, truth_scores, e_norm_max):
        self.H = np.asarray(H, dtype=np.float64)
        self.s = np.asarray(truth_scores, dtype=np.float64)
        d = self.H.shape[1]
        self.tol = 4.0 * d * np.finfo(np.float32).eps * np.linalg.norm(self.H, axis=1) * float(e_norm_max) + 1e-12

    def start(self):
        n = self.H.shape[0]
        return np.zeros(n), np.zeros(n)

    def add(self, state, rows, E, offsets=None):
        E = np.asarray(E)
        S = matmul(self.H.astype(E.dtype, copy=False), E.T)
        if offsets is not None:
            S += np.asarray(offsets, dtype=S.dtype)[None, :]
        return self.count(state, E, offsets, S)

    def count(self, state, E, offsets, S, q=slice(None)):
        """Fold the score block ``S`` of the chunk ``E`` (queries ``q``: a slice or indices)
        into the counts."""
        greater, ties = state
        s = self.s[q].astype(S.dtype)[:, None]
        tol = self.tol[q].astype(S.dtype)[:, None]
        greater[q] += np.count_nonzero(S > s + tol, axis=1)
        D = S - s
        np.abs(D, out=D)
        # a flat nonzero of the byte mask: ~6x faster than a 2-D nonzero on these blocks
        r, c = np.divmod(np.flatnonzero(D <= tol), S.shape[1])
        if r.size:  # close calls: exact float64 scores
            self.exact(state, np.arange(self.H.shape[0])[q][r], c, E, offsets)
        return greater, ties

    def exact(self, state, r, c, E, offsets):
        """Count the pairs ``(query r[i], chunk row c[i])`` by their float64 scores."""
        greater, ties = state
        v = np.einsum("ij,ij->i", self.H[r], np.asarray(E[c], dtype=np.float64))
        if offsets is not None:
            v += np.asarray(offsets, dtype=np.float64)[c]
        np.add.at(greater, r, v > self.s[r])
        np.add.at(ties, r, v == self.s[r])

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1]

    def finish(self, state):
        greater, ties = state
        return 1.0 + greater + np.maximum(ties - 1, 0) / 2.0  # the truth ties with itself


class ScreenedRankTask(RankTask):
    """:class:`RankTask` through the index's bounded screen (``sprokr.numerics.Screen``).

    Chunks ``(E, P)`` or ``(E, P, offsets)``, ``P`` the screen's projections.  A candidate
    whose float32 bound is below the truth's score less the bound's rounding margin cannot
    score above or equal to the truth and is skipped; the rest are scored exactly in
    float64.  A query for which more than ``dense_fraction`` of the chunk passes (a truth
    ranked far down) is counted from its float32 GEMM row as in :class:`RankTask`.  Same
    ranks as :class:`RankTask`; for well-ranked truths, a GEMM of width ``d1 + 1``.
    """

    name = "rank of the truth (screened)"
    dense_fraction = 0.01
    query_block = 512

    def __init__(self, H, truth_scores, e_norm_max, screen):
        super().__init__(H, truth_scores, e_norm_max)
        self.Hs, self.margin = screen.query_bounds(self.H)

    def add(self, state, rows, E, P, offsets=None):
        E = np.asarray(E)
        off32 = None if offsets is None else np.asarray(offsets, dtype=np.float32)[None, :]
        for q0 in range(0, self.H.shape[0], self.query_block):
            q = np.arange(q0, min(q0 + self.query_block, self.H.shape[0]))
            U = matmul(self.Hs[q], np.asarray(P).T)
            if off32 is not None:
                U += off32
            thr = np.nextafter((self.s[q] - self.margin[q]).astype(np.float32), np.float32(-np.inf))
            mask = U >= thr[:, None]
            passing = np.count_nonzero(mask, axis=1)
            dense = passing > self.dense_fraction * U.shape[1]
            if dense.any():  # these truths are ranked far down: their full score rows
                qd = q[dense]
                S = matmul(self.H[qd].astype(E.dtype, copy=False), E.T)
                if off32 is not None:
                    S += np.asarray(offsets, dtype=S.dtype)[None, :]
                self.count(state, E, offsets, S, qd)
            sparse = ~dense & (passing > 0)
            if sparse.any():
                r, c = np.divmod(np.flatnonzero(mask[sparse]), U.shape[1])
                self.exact(state, q[sparse][r], c, E, offsets)
        return state


class TopKRankTask(ChunkTask):
    """Top-k (float32 screen, float64 rescoring) and the rank of the truth in ONE pass:
    each score block is computed once and used for both."""

    name = "top-k and rank of the truth"

    def __init__(self, H, k, truth_scores, e_norm_max):
        self.top = RescoredTopKTask(H, k)
        self.rank = RankTask(H, truth_scores, e_norm_max)

    def start(self):
        return self.top.start(), self.rank.start()

    def add(self, state, rows, E, offsets=None):
        E = np.asarray(E)
        S = matmul(self.rank.H.astype(E.dtype, copy=False), E.T)
        if offsets is not None:
            S += np.asarray(offsets, dtype=S.dtype)[None, :]
        return self.top.fold_block(state[0], rows, E, offsets, S), self.rank.count(state[1], E, offsets, S)

    def merge(self, a, b):
        return self.top.merge(a[0], b[0]), self.rank.merge(a[1], b[1])

    def finish(self, state):
        return self.top.finish(state[0]), self.rank.finish(state[1])


def _e_norm_max(E):
    e_max = 0.0
    for sl in iter_chunks(E.shape[0], 1 << 18):
        e_max = max(e_max, float(np.sqrt(np.einsum("ij,ij->i", E[sl], E[sl]).max())))
    return e_max


def topk_and_ranks(H, index, truth, k=10, chunk=None):
    """``(Decoded top-k, ranks of the truth)`` over a local (memory-mapped) index, one pass."""
    E, off = index.embeddings, index.offsets
    ex = LocalExecutor()
    parts = ex.partition(E) if off is None else ex.partition(E, off)
    chunk = chunk or max(1024, int(2**28 / (4 * max(H.shape[0], 1))))
    return ex.map_reduce(parts, TopKRankTask(H, k, truth_scores(H, E, off, truth), _e_norm_max(E)), chunk)


def truth_scores(H, E, offsets, truth):
    """Float64 score of each query's true candidate."""
    v = np.einsum("ij,ij->i", np.asarray(H, dtype=np.float64), np.asarray(E[truth], dtype=np.float64))
    return v if offsets is None else v + np.asarray(offsets, dtype=np.float64)[truth]


def ranks_of_truth(H, index, truth, chunk=None):
    """Ranks (1 = best) of ``truth[i]`` among all candidates of a local index (through its
    bounded screen when it has one)."""
    E, off, screen = index.embeddings, index.offsets, getattr(index, "screen", None)
    ex = LocalExecutor()
    cols = (E,) if screen is None else (E, screen.projections)
    parts = ex.partition(*cols) if off is None else ex.partition(*cols, off)
    chunk = chunk or max(1024, int(2**28 / (4 * max(H.shape[0], 1))))
    s = truth_scores(H, E, off, truth)
    task = RankTask(H, s, _e_norm_max(E)) if screen is None else ScreenedRankTask(H, s, screen.norm_max, screen)
    return ex.map_reduce(parts, task, chunk)


def metrics_from(ranks, topk_indices, truth):
    """top-1, top-10, MRR and rank statistics of the truth."""
    hit = topk_indices == np.asarray(truth)[:, None]
    return {"top1": float(np.mean(hit[:, 0])), "top10": float(np.mean(hit[:, :10].any(axis=1))),
            "MRR": float(np.mean(1.0 / ranks)), "rank_median": float(np.median(ranks)),
            "rank_mean": float(np.mean(ranks)), "rank_p90": float(np.percentile(ranks, 90))}


class NeighbourTask(TopKTask):
    """Top-k training inputs by input-kernel value, chunks of prepared training inputs."""

    name = "nearest training inputs"

    def __init__(self, kernel, Q, k):
        super().__init__(np.zeros((Q.shape[0], 1)), k)
        self.kernel, self.Q = kernel, Q

    def add(self, state, rows, X):
        S = np.asarray(self.kernel.pairwise(self.Q, X))
        return self.fold_scores(state, S, rows.start)


def neighbours(kernel, Q, X, k, executor=None, chunk=None):
    """Indices (n_q, k) of the ``k`` training rows of ``X`` with the largest ``kernel(q, x)``."""
    ex = executor or LocalExecutor()
    parts = ex.partition(X)
    chunk = chunk or max(1024, int(2**27 / (4 * max(Q.shape[0], 1))))
    return ex.map_reduce(parts, NeighbourTask(kernel, Q, k), chunk).indices


def validation_mrr(H, E, offsets=None, batch=500):
    """MRR of queries ``i`` whose truth is candidate ``i`` (float64, all candidates scored)."""
    H = np.asarray(H, dtype=np.float64)
    E = np.asarray(E, dtype=np.float64)
    rr = []
    for sl in iter_chunks(H.shape[0], batch):
        S = H[sl] @ E.T
        if offsets is not None:
            S += offsets[None, :]
        t = S[np.arange(S.shape[0]), np.arange(sl.start, sl.stop)][:, None]
        r = 1.0 + (S > t).sum(axis=1) + ((S == t).sum(axis=1) - 1) / 2.0
        rr.append(1.0 / r)
    return float(np.mean(np.concatenate(rr)))


def row_block(X, rows):
    """Rows ``rows`` (a slice) of a collection."""
    return take_slice(X, rows)
