"""Top-k of ``H E^T + offsets`` over candidates: chunked, mergeable, deterministic ties.

The score block of a chunk of candidates is one GEMM; selecting from it must cost less
than the GEMM.  A running top-k per query keeps the k-th best score as a threshold: after
the first chunk almost no score beats it, so each later chunk costs one comparison pass
and the handful of survivors are merged (no per-chunk partial sort).  Partial top-k lists
of disjoint candidate sets merge exactly (:func:`merge_topk`) -- the same result in any
order, ties broken by the smaller candidate index -- so a candidate index can be split
across workers (:class:`TopKTask` runs through any executor).
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike

from ._executor import ChunkTask
from ._linalg import matmul
from ._parallel import for_row_blocks

__all__ = ["Decoded", "DEFAULT_MAX_MEMORY_MB", "topk_rows", "select_topk", "merge_topk",
           "TopKTask", "RescoredTopKTask", "topk_task", "RESCORE_EXTRA", "grouped_topk_search",
           "score_block_size"]

#: Result of a top-k decoding: ``indices`` and ``scores`` of shape (n_queries, k), best first.
Decoded = namedtuple("Decoded", ["indices", "scores"])
Decoded.__doc__ = """Result of a top-k decoding: ``indices`` and ``scores`` of shape (n_queries, k), best first.

Parameters
----------
indices : ndarray of shape (n_queries, k)
    Indices of the decoded candidates, best first.
scores : ndarray of shape (n_queries, k)
    Their scores.
"""

DEFAULT_MAX_MEMORY_MB = 256
_EMPTY = np.iinfo(np.int64).max  # sorts after every real index


def topk_rows(S: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the k largest entries of each row of S (unordered, ties arbitrary).

    Parameters
    ----------
    S : ndarray of shape (n_rows, n_cols)
        Score block.
    k : int
        Number of entries per row (all columns when ``k >= n_cols``).
    """
    if k >= S.shape[1]:
        return np.broadcast_to(np.arange(S.shape[1]), S.shape).copy()
    if k == 1:
        return np.argmax(S, axis=1)[:, None]
    return np.argpartition(-S, k - 1, axis=1)[:, :k]


def _rank(idx, scores, k):
    """Per row: the k best (score desc, index asc) of ``(idx, scores)`` (n, w) arrays."""
    key = np.where(idx < 0, _EMPTY, idx)
    order = np.lexsort((key, -scores), axis=1)[:, :k]
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(scores, order, axis=1)


def merge_topk(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray],
               k: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge two top-k lists ``(indices, scores)`` of disjoint candidates (exact, any order).

    Parameters
    ----------
    a, b : tuple of ndarray
        Top-k lists ``(indices, scores)``, each of shape (n_queries, width); index ``-1``
        marks an empty slot.
    k : int
        Length of the merged lists.
    """
    return _rank(np.concatenate([a[0], b[0]], axis=1), np.concatenate([a[1], b[1]], axis=1), k)


def select_topk(S: np.ndarray, k: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of each row of a score block, best first, ties by the smaller column.

    Returns ``(indices + offset, scores)`` of shape (n_rows, min(k, n_cols)).

    Parameters
    ----------
    S : ndarray of shape (n_rows, n_cols)
        Score block.
    k : int
        Number of entries per row.
    offset : int, default=0
        Added to the column indices (global index of the block's first column).
    """
    n, c = S.shape
    k = min(int(k), c)
    if k == c:
        cols = np.broadcast_to(np.arange(c), S.shape)
        return _rank(cols + offset, S, k)
    if k == 1:
        j = np.argmax(S, axis=1)  # the first maximum: the smallest column among ties
        return (j + offset)[:, None], S[np.arange(n), j][:, None]
    kth = np.partition(S, c - k, axis=1)[:, c - k]  # the k-th largest score per row
    r, cc = np.nonzero(S >= kth[:, None])  # k per row, more only with ties at the k-th
    return rank_flat(r, cc + offset, S[r, cc], n, k)


def rank_flat(r, idx, s, n, k):
    """Top-k per row from flat survivors ``(row, index, score)``."""
    order = np.lexsort((idx, -s, r))
    r, idx, s = r[order], idx[order], s[order]
    starts = np.searchsorted(r, np.arange(n))
    pos = np.arange(r.size) - starts[r]
    keep = pos < k
    out_i = np.full((n, k), -1, dtype=np.int64)
    out_s = np.full((n, k), -np.inf, dtype=s.dtype if s.size else np.float64)
    out_i[r[keep], pos[keep]] = idx[keep]
    out_s[r[keep], pos[keep]] = s[keep]
    return out_i, out_s


#: columns of a score block scanned before the threshold is updated
_SLICE = 8192


def threshold_survivors(S: np.ndarray, thr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, cols, scores)`` of the entries with ``S[i, j] >= thr[i]``, in one cheap pass.

    After the first candidates almost no score beats the running k-th best, so locating the
    few survivors dominates.  One vectorised comparison into a byte mask and a flat
    ``flatnonzero`` of it run at memory speed (~4 ms for a 2048 x 8192 float32 block, 12x
    faster than a reduction over groups of columns, 6x faster than a 2-D ``nonzero``).
    """
    n, c = S.shape
    flat = np.flatnonzero(S >= thr[:, None])
    if flat.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, S.dtype)
    r, cc = np.divmod(flat, c)
    return r, cc, S[r, cc]


def score_block_size(n_queries: int, k: int, itemsize: int, max_memory_mb: float) -> int:
    """Candidates per score block so that one (n_queries x block) block fits the budget.

    Parameters
    ----------
    n_queries : int
        Number of queries (rows of the block).
    k : int
        Number of candidates returned per query (the block is at least ``k`` wide, and 64).
    itemsize : int
        Bytes per score.
    max_memory_mb : float
        Memory budget of one score block, in MiB.
    """
    return max(int(k), 64, int(max_memory_mb * 2**20 / (itemsize * max(n_queries, 1))))


class TopKTask(ChunkTask):
    """Running top-k of ``H E^T + offsets`` over chunks of candidates (one executor pass).

    Chunks are ``(E_chunk,)`` or ``(E_chunk, offsets_chunk)``; the partial result is a
    pair ``(indices, scores)`` of shape (n_queries, k) with ``-1`` / ``-inf`` for empty
    slots.  Scores are computed in the dtype of ``E`` (float32 candidates score in float32).

    Parameters
    ----------
    H : ndarray of shape (n_queries, d)
        Query embeddings.
    k : int
        Number of candidates kept per query.
    """

    name = "top-k search"

    def __init__(self, H: np.ndarray, k: int) -> None:
        self.H = np.asarray(H)
        self.k = int(k)

    def start(self) -> tuple[np.ndarray, np.ndarray]:
        nq = self.H.shape[0]
        return np.full((nq, self.k), -1, dtype=np.int64), np.full((nq, self.k), -np.inf)

    def add(self, state: tuple[np.ndarray, np.ndarray], rows: slice, E: np.ndarray,
            offsets: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        H = self.H.astype(E.dtype, copy=False) if E.dtype in (np.float32, np.float64) else self.H
        S = matmul(H, np.asarray(E).T)
        if offsets is not None:
            S += np.asarray(offsets, dtype=S.dtype)[None, :]
        return self.fold_scores(state, S, rows.start)

    def fold_scores(self, state: tuple[np.ndarray, np.ndarray], S: np.ndarray,
                    offset: int) -> tuple[np.ndarray, np.ndarray]:
        """Fold a score block ``S`` (n_queries, c) of candidates ``offset .. offset + c``.

        The rows are split over the row-block threads (the selection is memory-bound and
        single-threaded in numpy); each thread folds its own queries.
        """
        return self.fold_with_survivors(state, S, offset)[0]

    def fold_with_survivors(self, state: tuple[np.ndarray, np.ndarray], S: np.ndarray, offset: int,
                            shift: np.ndarray | None = None,
                            threshold: Callable[[np.ndarray, slice], np.ndarray] | None = None) -> tuple[Any, Any]:
        """:meth:`fold_scores` of ``S + shift`` (``shift``: one row, added to ``S`` in place),
        and with ``threshold`` also the entries at or above ``threshold(kth, rows)``
        (``kth``: the folded k-th scores of the queries ``rows``) as flat ``(rows, columns
        of S, scores)``: one pass over each row block, the blocks in parallel.
        """
        idx, sc = state
        out_i, out_s = idx.copy(), sc.copy()
        found = []

        def work(rows):
            if shift is not None:
                S[rows] += shift
            out_i[rows], out_s[rows] = self._fold_rows((idx[rows], sc[rows]), S[rows], offset)
            if threshold is not None:
                r, c, v = threshold_survivors(S[rows], threshold(out_s[rows, -1], rows))
                found.append((rows.start, r + rows.start, c, v))

        for_row_blocks(work, S.shape[0], S.size)
        if threshold is None:
            return (out_i, out_s), None
        found.sort(key=lambda f: f[0])  # the row blocks in order, whichever thread ended first
        return (out_i, out_s), tuple(np.concatenate(p) for p in list(zip(*found))[1:])

    def _fold_rows(self, state, S, offset):
        idx, sc = state
        k = self.k
        if S.shape[1] == 0:
            return idx, sc
        if k == 1:  # one argmax pass (an empty slot, index -1, takes any score)
            j = np.argmax(S, axis=1)
            s = S[np.arange(S.shape[0]), j]
            better = s > sc[:, 0]  # equal scores keep the smaller (earlier) index
            tie = (s == sc[:, 0]) & ((j + offset < idx[:, 0]) | (idx[:, 0] < 0))
            upd = better | tie
            idx, sc = idx.copy(), sc.copy()
            idx[upd, 0], sc[upd, 0] = j[upd] + offset, s[upd]
            return idx, sc
        thr = sc[:, k - 1]
        if not np.isfinite(thr).all():
            # a slot is still empty: full selection on a first slice of the block only
            # (cheap), then thresholds for the rest
            w0 = min(S.shape[1], max(4 * k, 1024))
            state = merge_topk(state, select_topk(S[:, :w0], k, offset), k)
            if w0 == S.shape[1]:
                return state
            S, offset = S[:, w0:], offset + w0
            idx, sc = state
            thr = sc[:, k - 1]
            if not np.isfinite(thr).all():  # fewer candidates than k so far (or -inf scores)
                return merge_topk(state, select_topk(S, k, offset), k)
        # column slices: the threshold tightens after each (few survivors once warmed up)
        rows = np.repeat(np.arange(S.shape[0]), k)
        for start in range(0, S.shape[1], _SLICE):
            r, c, v = threshold_survivors(S[:, start:start + _SLICE], thr.astype(S.dtype))
            if r.size == 0:
                continue
            idx, sc = rank_flat(np.concatenate([rows, r]), np.concatenate([idx.ravel(), c + offset + start]),
                                   np.concatenate([sc.ravel(), v.astype(sc.dtype)]), S.shape[0], k)
            thr = sc[:, k - 1]
        return idx, sc

    def merge(self, a: tuple[np.ndarray, np.ndarray],
              b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return merge_topk(a, b, self.k)

    def finish(self, state: tuple[np.ndarray, np.ndarray]) -> Decoded:
        return Decoded(*state)


#: extra candidates kept by the float32 screen of :class:`RescoredTopKTask`
RESCORE_EXTRA = 10


class RescoredTopKTask(TopKTask):
    """Top-k of float32 embeddings with float64 scores: a float32 screen, exact rescoring.

    The score blocks are float32 GEMMs (twice as fast as float64, half the memory
    traffic), which keep a running top ``k + extra`` per query; every candidate entering
    it is rescored in float64 (``H . E_c`` from the float64 ``H`` and the stored float32
    ``E_c``, plus the offset) from the rows of the chunk at hand, and the result is the
    top k by those float64 scores.  A float32 GEMM's rounding depends on the block shapes
    (BLAS kernels, threads): float32 scores of one candidate differ by ~1e-7 relative
    between two partitionings of the index, the float64 rescored ones do not (each is one
    dot product of the same two vectors), so a local and a distributed search agree to
    float64 rounding.  The result equals the float64 search of the float32 embeddings
    unless more than ``extra`` candidates score within float32 rounding of the k-th best.

    Partial results are ``(indices, screen scores, exact scores)`` of width ``k + extra``.

    Parameters
    ----------
    H : ndarray of shape (n_queries, d)
        Query embeddings (used in float64 for the rescoring, cast to the candidates'
        dtype for the screen).
    k : int
        Number of candidates returned per query.
    extra : int, default=RESCORE_EXTRA
        Candidates kept by the float32 screen beyond ``k``.
    """

    name = "top-k search (rescored)"

    def __init__(self, H: np.ndarray, k: int, extra: int = RESCORE_EXTRA) -> None:
        super().__init__(np.asarray(H, dtype=np.float64), int(k) + int(extra))
        self.k_out = int(k)

    def start(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[override]
        idx, sc = super().start()
        return idx, sc, sc.copy()

    def add(self, state: tuple[np.ndarray, np.ndarray, np.ndarray], rows: slice,  # type: ignore[override]
            E: np.ndarray, offsets: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        E = np.asarray(E)
        S = matmul(self.H.astype(E.dtype, copy=False), E.T)
        if offsets is not None:
            S += np.asarray(offsets, dtype=S.dtype)[None, :]
        return self.fold_block(state, rows, E, offsets, S)

    def fold_block(self, state: tuple[np.ndarray, np.ndarray, np.ndarray], rows: slice, E: np.ndarray,
                   offsets: np.ndarray | None, S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fold the screening scores ``S`` (n_queries, c) of the chunk ``E`` (rows ``rows``);
        for tasks that compute ``S`` once for several purposes."""
        idx0, sc0, ex0 = state
        idx, sc = self.fold_scores((idx0, sc0), S, rows.start)
        ex = ex0.copy()
        changed = np.flatnonzero((idx != idx0).any(axis=1))  # few rows once warmed up
        if changed.size:
            i1, i0, e0 = idx[changed], idx0[changed], ex0[changed]
            # exact scores: carried over for the entries already kept, computed for the new ones
            same = i1[:, :, None] == i0[:, None, :]
            exr = np.where(same.any(axis=2), np.where(same, e0[:, None, :], 0.0).sum(axis=2), -np.inf)
            r, c = np.nonzero((i1 >= rows.start) & (i1 < rows.stop))
            if r.size:
                local = i1[r, c] - rows.start
                v = np.einsum("ij,ij->i", self.H[changed[r]], np.asarray(E[local], dtype=np.float64))
                if offsets is not None:
                    v += np.asarray(offsets, dtype=np.float64)[local]
                exr[r, c] = v
            ex[changed] = exr
        return idx, sc, ex

    def merge(self, a: tuple[np.ndarray, np.ndarray, np.ndarray],  # type: ignore[override]
              b: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        idx = np.concatenate([a[0], b[0]], axis=1)
        sc = np.concatenate([a[1], b[1]], axis=1)
        ex = np.concatenate([a[2], b[2]], axis=1)
        key = np.where(idx < 0, _EMPTY, idx)
        order = np.lexsort((key, -sc), axis=1)[:, :self.k]
        return (np.take_along_axis(idx, order, axis=1), np.take_along_axis(sc, order, axis=1),
                np.take_along_axis(ex, order, axis=1))

    def finish(self, state: tuple[np.ndarray, np.ndarray, np.ndarray]) -> Decoded:  # type: ignore[override]
        idx, _, ex = state
        return Decoded(*_rank(idx, ex, min(self.k_out, idx.shape[1])))


def topk_task(H: np.ndarray, k: int, dtype: np.dtype, n_candidates: int) -> TopKTask:
    """The top-k task for embeddings of ``dtype``: float32 ones are screened in float32 and
    rescored in float64 (:class:`RescoredTopKTask`), others scored as they are.

    Parameters
    ----------
    H : ndarray of shape (n_queries, d)
        Query embeddings.
    k : int
        Number of candidates kept per query.
    dtype : dtype
        Dtype of the candidate embeddings.
    n_candidates : int
        Number of candidates (a float32 screen needs more than ``k``).
    """
    if np.dtype(dtype) == np.float32 and n_candidates > k:
        return RescoredTopKTask(H, k, min(RESCORE_EXTRA, n_candidates - k))
    return TopKTask(H, k)


def grouped_topk_search(H: np.ndarray, E: np.ndarray, group_sizes: ArrayLike, k: int = 1,
                        offsets: np.ndarray | None = None) -> Decoded:
    """Top-k for queries that each have their own candidate set.

    Query ``q`` is scored against rows ``E[starts[q]:starts[q] + group_sizes[q]]``, where the
    groups are consecutive.  All scores are computed in one vectorised pass (a row-wise
    dot product of ``H`` repeated per candidate with ``E``); no Python loop over pairs.

    Parameters
    ----------
    H : ndarray of shape (n_queries, d)
        Query embeddings.
    E : ndarray of shape (sum(group_sizes), d)
        Candidate embeddings, the groups consecutive in query order.
    group_sizes : array-like of int, shape (n_queries,)
        Number of candidates of each query.
    k : int, default=1
        Number of candidates kept per query.
    offsets : ndarray of shape (sum(group_sizes),), optional
        Added to the scores of the candidates.

    Returns
    -------
    Decoded
        ``indices`` (int, shape (n_queries, k)) are positions *within each query's own
        candidate set*, ``-1`` (score ``-inf``) where a set has fewer than k members.
    """
    sizes = np.asarray(group_sizes, dtype=np.intp)
    nq = sizes.size
    owner = np.repeat(np.arange(nq), sizes)
    scores = np.einsum("ij,ij->i", H[owner], E)
    if offsets is not None:
        scores = scores + offsets
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    local = np.arange(owner.size) - starts[owner]
    return Decoded(*rank_flat(owner, local, scores, nq, k))
