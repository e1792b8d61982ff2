"""The local exact top-k search, with a certified float32 screen for float64 embeddings.

A float64 score block ``H E^T`` costs twice a float32 one.  Scored in float32 as they are,
the scores of a flat output kernel are useless for ranking: the embeddings share a large
common part, so the candidates' scores differ by ~1e-5 of their size (Bibtex), about the
float32 rounding of the product.  The common parts do not rank anything, so they are
taken out first, in float64:

    H E^T + o = (H - h) (E - e)^T  +  [h . (E - e)^T + o]  +  [H e^T]

with ``h``, ``e`` the mean query and the mean candidate.  The first term is the float32
*screen* (its rounding is bounded by ``(d + 8) u |h_q - h| max_c |e_c - e|``, ``u`` the
float32 unit roundoff: Higham's bound for a dot product of length ``d``, Cauchy-Schwarz,
and the conversions), the second a per-candidate float64 offset and the third a
per-query constant that does not change the order.  Every candidate whose screen score
is within twice the bound of the k-th best screen score is rescored exactly (one float64
dot product with the stored ``E`` row), and the top k of those exact scores is the
result: the same top-k as the float64 GEMM, ties broken by the smaller index, without
trusting any float32 score.  On Bibtex (2515 queries, 2058 candidates, d = 164) the
centred rows are 20-100x shorter than the raw ones and one candidate per query survives.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._executor import ChunkTask, LocalExecutor
from ._linalg import matmul
from ._topk import DEFAULT_MAX_MEMORY_MB, Decoded, TopKTask, merge_topk, rank_flat, score_block_size, topk_task

__all__ = ["CentredTopKTask", "centred_screen_pays", "centred_topk_task", "topk_search"]

_U32 = float(np.finfo(np.float32).eps) / 2
_U64 = float(np.finfo(np.float64).eps) / 2
#: queries from which a batch is screened in float32 (fewer: the float64 product is a
#: matrix-vector product bound by memory, which the screen does not make cheaper)
CENTRED_MIN_QUERIES = 32
#: longest embeddings screened: the rounding bound grows with ``d`` (Bibtex IOKR's kernel
#: rows, d = 4880, rarely separate) while the centring passes cost more of the search
CENTRED_MAX_DIM = 2048
#: queries of the probe that decides whether the screen pays (:func:`centred_topk_task`)
PROBE_QUERIES = 32
#: candidates of that probe, whose mean also centres the screen
PROBE_CANDIDATES = 2048


def centred_screen_pays(H: np.ndarray, E: np.ndarray) -> bool:
    """True when a search of ``H`` against ``E`` is screened in float32 (:class:`CentredTopKTask`):
    float64 queries and embeddings, enough queries, more than a few dimensions and at most
    :data:`CENTRED_MAX_DIM`."""
    return (H.dtype == np.float64 and E.dtype == np.float64 and H.shape[0] >= CENTRED_MIN_QUERIES
            and 8 <= E.shape[1] <= CENTRED_MAX_DIM)


class CentredTopKTask(ChunkTask):
    """Top-k of float64 ``H E^T + offsets`` through the certified float32 screen (module doc).

    Partial results are ``(screen indices, screen scores, pool, exact)``: the running top-k
    of the screen (its k-th score bounds the final threshold from below), the pool of
    survivors ``(query, candidate, screen score, exact score)``, pruned as the threshold
    rises, and the top-k of the chunks scored in float64 because the screen did not
    separate their candidates (more than ``k + SURVIVORS`` survivors per query: long
    embeddings with no common part, where the rounding bound is wide).  After such a chunk
    the task scores the rest in float64 too (:attr:`plain`).  Partial results merge
    exactly, so the index may be split across chunks in any order.

    Parameters
    ----------
    H : ndarray of shape (n_queries, d), float64
        Query embeddings.
    k : int
        Number of candidates kept per query.
    e_mean : ndarray of shape (d,)
        Mean candidate row (any fixed vector is correct; the mean makes the screen tight).
    e_radius : float
        ``max_c |E_c - e_mean|`` over every candidate of the pass.
    e_norm : float
        ``max_c |E_c|``.
    off_max : float
        ``max_c |offsets_c|`` (0 without offsets).
    """

    name = "top-k search (float32 screen)"
    #: survivors per query (beyond k) above which a chunk is scored in float64
    SURVIVORS = 8
    #: entries of ``E`` gathered at once to rescore survivors (bounds the memory)
    GATHER = 1 << 22

    def __init__(self, H: np.ndarray, k: int, e_mean: np.ndarray, e_radius: float, e_norm: float,
                 off_max: float) -> None:
        self.H = np.asarray(H, dtype=np.float64)
        self.k = int(k)
        self.e_mean = np.asarray(e_mean, dtype=np.float64)
        self.h_mean = self.H.mean(axis=0)
        # one pass: centred and rounded to float32 (the subtraction is done in float64)
        self.Hc32 = np.subtract(self.H, self.h_mean, out=np.empty(self.H.shape, np.float32), casting="same_kind")
        d = self.H.shape[1]
        h2 = np.einsum("ij,ij->i", self.H, self.H)
        hm = float(self.h_mean @ self.h_mean)
        # |h - h_mean|^2 expanded (no n x d temporary); its cancellation is covered by the
        # last term, a few float64 ulps of |h|^2
        hc = np.sqrt(np.maximum(h2 - 2 * matmul(self.H, self.h_mean) + hm, 0.0) + 8 * d * _U64 * (h2 + hm))
        a_max = np.sqrt(hm) * e_radius + off_max
        # float32: the product (d terms, inputs rounded), the offset's rounding and the
        # sum; float64: the centred terms of the exact score (a few ulps of their size)
        self.bound = (1.1 * (d + 8) * _U32 * hc * e_radius + 4 * _U32 * a_max
                      + 16 * d * _U64 * ((np.sqrt(h2) + np.sqrt(hm)) * e_norm + off_max))
        self._exact = TopKTask(self.H, self.k)
        #: True once a chunk was scored in float64 (the screen did not pay)
        self.plain = False

    def start(self) -> tuple[Any, ...]:
        idx, sc = self._exact.start()
        return idx, sc, _empty_pool(), self._exact.start()

    def add(self, state: tuple[Any, ...], rows: slice, E: np.ndarray,
            offsets: np.ndarray | None = None) -> tuple[Any, ...]:
        idx, sc, pool, exact = state
        E = np.asarray(E, dtype=np.float64)
        if not self.plain:
            Ec32 = np.subtract(E, self.e_mean, out=np.empty(E.shape, np.float32), casting="same_kind")
            a = matmul(E, self.h_mean) - self.e_mean @ self.h_mean  # per-candidate term, float64
            if offsets is not None:
                a += np.asarray(offsets, dtype=np.float64)
            S = matmul(self.Hc32, Ec32.T)
            (idx2, sc2), (r, c, v) = self._exact.fold_with_survivors(
                (idx, sc), S, rows.start, shift=a.astype(np.float32),
                threshold=lambda kth, q: _floor32(kth - 2 * self.bound[q]))
            if r.size <= S.shape[0] * (self.k + self.SURVIVORS):
                new = (r, c + rows.start, v.astype(np.float64), self._rescore(r, c, E, offsets))
                pool = tuple(np.concatenate([p, q]) for p, q in zip(pool, new))
                return idx2, sc2, self._prune(pool, sc2), exact
            self.plain = True
        S = matmul(self.H, E.T)
        if offsets is not None:
            S += np.asarray(offsets, dtype=np.float64)[None, :]
        return idx, sc, pool, self._exact.fold_scores(exact, S, rows.start)

    def _rescore(self, r, c, E, offsets):
        """Exact float64 scores of the pairs ``(r, c)`` (rows of this chunk's ``E``)."""
        out = np.empty(r.size)
        step = max(1, self.GATHER // max(E.shape[1], 1))
        for s in range(0, r.size, step):
            out[s:s + step] = np.einsum("ij,ij->i", self.H[r[s:s + step]], E[c[s:s + step]])
        if offsets is not None:
            out += np.asarray(offsets, dtype=np.float64)[c]
        return out

    def _prune(self, pool, sc):
        r, _, v, _ = pool
        keep = v >= sc[r, -1] - 2 * self.bound[r]
        return tuple(p[keep] for p in pool)

    def merge(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        idx, sc = self._exact.merge(a[:2], b[:2])
        pool = self._prune(tuple(np.concatenate([p, q]) for p, q in zip(a[2], b[2])), sc)
        return idx, sc, pool, self._exact.merge(a[3], b[3])

    def finish(self, state: tuple[Any, ...]) -> Decoded:
        r, c, _, exact = self._prune(state[2], state[1])
        screened = rank_flat(r, c, exact, self.H.shape[0], self.k)
        return Decoded(*merge_topk(screened, state[3], self.k))


def _floor32(x):
    """``x`` rounded down to float32 (a threshold that never excludes what float64 keeps)."""
    y = x.astype(np.float32)
    return np.where(y > x, np.nextafter(y, np.float32(-np.inf)), y)


def _empty_pool():
    return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0))


def centred_topk_task(H: np.ndarray, E: np.ndarray, k: int, offsets: np.ndarray | None,
                      chunk: int) -> CentredTopKTask | None:
    """:class:`CentredTopKTask` with the statistics of ``E`` (one chunked pass over it), or
    None when the screen does not separate the candidates of a probe (then nothing else
    is computed).

    The centre is the mean of ``n / 16`` (at least 64, at most :data:`PROBE_CANDIDATES`)
    evenly spaced rows (any centre is correct, one near the mean keeps the screen tight).  The probe scores
    :data:`PROBE_QUERIES` evenly spaced queries against those rows: a search whose screen
    would fail pays a small fraction of a float32 product instead of a whole one.
    """
    n, d = E.shape
    sample = np.unique(np.linspace(0, n - 1, min(n, PROBE_CANDIDATES, max(64, n // 16))).astype(np.intp))
    Es = np.asarray(E[sample], dtype=np.float64)
    mean = Es.mean(axis=0)
    off_max = 0.0 if offsets is None else float(np.abs(offsets).max())
    if H.shape[0] > 2 * PROBE_QUERIES and n > k:
        # the probe's statistics are the sample's: it only decides whether to try
        probe = CentredTopKTask(H[np.linspace(0, H.shape[0] - 1, PROBE_QUERIES).astype(np.intp)],
                                min(k, sample.size), mean, *_row_stats(Es, mean, sample.size), off_max)
        probe.add(probe.start(), slice(0, sample.size), Es, None if offsets is None else offsets[sample])
        if probe.plain:
            return None
    return CentredTopKTask(H, k, mean, *_row_stats(E, mean, chunk), off_max)


def _row_stats(E: Any, mean: np.ndarray, chunk: int) -> tuple[float, float]:
    """``(1.01 max |E_c - mean|, max |E_c|)`` over the rows of ``E``, ``chunk`` rows at a time
    (the 1 %: the rounding of the radius itself)."""
    d = E.shape[1]
    mm = float(mean @ mean)
    e_norm = radius = 0.0
    for s in range(0, E.shape[0], chunk):
        B = np.asarray(E[s:s + chunk], dtype=np.float64)
        b2 = np.einsum("ij,ij->i", B, B)
        # |e - mean|^2 expanded (no temporary); its cancellation is covered by a few ulps of |e|^2
        c2 = np.maximum(b2 - 2 * matmul(B, mean) + mm, 0.0) + 8 * d * _U64 * (b2 + mm)
        e_norm, radius = max(e_norm, float(np.sqrt(b2.max()))), max(radius, float(np.sqrt(c2.max())))
    return 1.01 * radius, e_norm


def topk_search(H: np.ndarray, E: np.ndarray, k: int = 1, offsets: np.ndarray | None = None,
                max_memory_mb: float = DEFAULT_MAX_MEMORY_MB) -> Decoded:
    """Top-k of ``H E^T + offsets`` per row, chunked over the candidates (in this process).

    Float64 queries and embeddings are screened in float32 and rescored exactly
    (:class:`CentredTopKTask`): the same result as the float64 product, to its rounding.

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
        ``indices`` (int, shape (n_queries, min(k, n_candidates))) and ``scores``, best
        first; ties are broken by the smaller candidate index.
    """
    nq, nc = H.shape[0], E.shape[0]
    k = min(int(k), nc)
    ex = LocalExecutor()
    parts = ex.partition(E) if offsets is None else ex.partition(E, offsets)
    itemsize = np.result_type(H.dtype, E.dtype).itemsize
    block = score_block_size(nq, k, itemsize, max_memory_mb)
    task = centred_topk_task(H, E, k, offsets, block) if k >= 1 and centred_screen_pays(H, E) else None
    if task is not None:
        return ex.map_reduce(parts, task, block)
    return ex.map_reduce(parts, topk_task(H, k, E.dtype, nc), block)
