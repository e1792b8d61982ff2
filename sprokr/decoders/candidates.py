"""Decoding over a candidate set: ``argmax_c  <h(x), psi(c)> - k(c, c)/2``.

Every model of the IOKR family predicts, for a query ``x``, coordinates ``H(x)`` of
``h(x)`` in some output basis, and embeds any candidate output ``c`` in the same basis as
``E(c)`` (the sketched feature map ``psi~(c)``, or the kernel column ``k_Y(Y_train, c)``
when the output is not sketched).  Scores are then one GEMM ``H E^T``:

* :class:`CandidateIndex` stores ``E`` for a candidate set once, so that every later query
  batch costs a matrix product and a top-k;
* the search is chunked over candidates so that the score block stays within a memory
  budget, keeping a running top-k.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .._linalg import matmul
from .._utils import iter_chunks, num_samples, take

__all__ = ["CandidateIndex", "Decoded", "topk_search", "grouped_topk_search"]

#: Result of a top-k decoding: ``indices`` and ``scores`` of shape (n_queries, k), best first.
Decoded = namedtuple("Decoded", ["indices", "scores"])

DEFAULT_MAX_MEMORY_MB = 256


def _topk_rows(S, k):
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
        loc = _topk_rows(S, k)
        s_loc = S[rows, loc]
        i_loc = loc + sl.start
        if best_i is None:
            best_i, best_s = i_loc, s_loc
        else:
            all_i = np.concatenate([best_i, i_loc], axis=1)
            all_s = np.concatenate([best_s, s_loc], axis=1)
            sel = _topk_rows(all_s, k)
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


class CandidateIndex:
    """A candidate set embedded once in a fitted model's output basis.

    Build it with ``model.make_candidate_index(candidates)``; pass it to
    ``model.predict(X, candidates=index)``.  Embedding is the only step that evaluates the
    output kernel; each later query batch costs ``O(n_queries n_candidates d)`` flops.

    Attributes
    ----------
    candidates : collection
        The raw candidates, as given (returned by ``predict``).
    embeddings : ndarray of shape (n_candidates, d)
    offsets : ndarray of shape (n_candidates,) or None
        ``-k(c, c)/2`` when the output kernel is not normalised.
    owner : object
        Identity token of the fitted output basis the index belongs to.
    """

    def __init__(self, candidates, embeddings, offsets=None, owner=None):
        n = num_samples(candidates, "candidates")
        if n == 0:
            raise ValueError("the candidate set is empty; expected at least one candidate")
        if embeddings.shape[0] != n:
            raise ValueError("one embedding row is needed per candidate")
        self.candidates = candidates
        self.embeddings = embeddings
        self.offsets = offsets
        self.owner = owner

    def __len__(self):
        return self.embeddings.shape[0]

    def search(self, H, k=1, max_memory_mb=DEFAULT_MAX_MEMORY_MB):
        """Top-k candidates for query coordinates ``H`` (n_queries, d): a :data:`Decoded`."""
        if H.shape[1] != self.embeddings.shape[1]:
            raise ValueError(
                f"query coordinates have dimension {H.shape[1]} but the index has "
                f"{self.embeddings.shape[1]}; was the index built by this model?"
            )
        return topk_search(H, self.embeddings, k, self.offsets, max_memory_mb)

    def take(self, idx):
        """The raw candidates at positions ``idx``."""
        return take(self.candidates, idx)
