"""Top-k selection over score blocks ``H E^T + offsets``, chunked over candidates."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..utils import iter_chunks
from ._linalg import matmul

__all__ = ["Decoded", "DEFAULT_MAX_MEMORY_MB", "topk_rows", "topk_search", "grouped_topk_search"]

#: Result of a top-k decoding: ``indices`` and ``scores`` of shape (n_queries, k), best first.
Decoded = namedtuple("Decoded", ["indices", "scores"])

DEFAULT_MAX_MEMORY_MB = 256


def topk_rows(S, k):
    """Column indices of the k largest entries of each row of S (unordered)."""
    if k >= S.shape[1]:
        return np.broadcast_to(np.arange(S.shape[1]), S.shape).copy()
    if k == 1:
        return np.argmax(S, axis=1)[:, None]
    return np.argpartition(-S, k - 1, axis=1)[:, :k]


def topk_search(H, E, k=1, offsets=None, max_memory_mb=DEFAULT_MAX_MEMORY_MB):
    """Top-k of ``H E^T + offsets`` per row, chunked over the candidates.

    Parameters
    ----------
    H : ndarray of shape (n_queries, d)
        Query coordinates.
    E : ndarray of shape (n_candidates, d)
        Candidate coordinates.
    k : int
    offsets : ndarray of shape (n_candidates,), optional
        Added to every score column (``-k(c, c)/2`` for non-normalised kernels).
    max_memory_mb : float
        Budget for one score block (n_queries x chunk of candidates).

    Returns
    -------
    Decoded
        ``indices`` (int, shape (n_queries, k)) and ``scores``, sorted best first.
    """
    nq, nc = H.shape[0], E.shape[0]
    k = min(int(k), nc)
    itemsize = np.result_type(H.dtype, E.dtype).itemsize
    block = max(k, int(max_memory_mb * 2**20 / (itemsize * max(nq, 1))))
    best_i = best_s = None
    rows = np.arange(nq)[:, None]
    for sl in iter_chunks(nc, block):
        S = matmul(H, E[sl].T)
        if offsets is not None:
            S += offsets[sl][None, :]
        loc = topk_rows(S, k)
        s_loc = S[rows, loc]
        i_loc = loc + sl.start
        if best_i is None:
            best_i, best_s = i_loc, s_loc
        else:
            all_i = np.concatenate([best_i, i_loc], axis=1)
            all_s = np.concatenate([best_s, s_loc], axis=1)
            sel = topk_rows(all_s, k)
            best_i, best_s = all_i[rows, sel], all_s[rows, sel]
    order = np.argsort(-best_s, axis=1, kind="stable")
    return Decoded(best_i[rows, order], best_s[rows, order])


def grouped_topk_search(H, E, group_sizes, k=1, offsets=None):
    """Top-k for queries that each have their own candidate set.

    Query ``q`` is scored against rows ``E[starts[q]:starts[q] + group_sizes[q]]``, where the
    groups are consecutive.  All scores are computed in one vectorised pass (a row-wise
    dot product of ``H`` repeated per candidate with ``E``); no Python loop over pairs.

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
    order = np.lexsort((-scores, owner))  # by query, then by decreasing score
    rank = np.arange(owner.size) - starts[owner[order]]
    keep = order[rank < k]
    out_i = np.full((nq, k), -1, dtype=np.intp)
    out_s = np.full((nq, k), -np.inf, dtype=scores.dtype)
    r = rank[rank < k]
    out_i[owner[keep], r] = local[keep]
    out_s[owner[keep], r] = scores[keep]
    return Decoded(out_i, out_s)


