"""The ``Decoder`` protocol and the built-in candidate-set decoder."""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from ..utils import iter_chunks, num_samples, take, take_slice
from ..numerics import DEFAULT_MAX_MEMORY_MB, Decoded, grouped_topk_search, topk_rows
from .candidates import CandidateIndex

__all__ = ["Decoder", "CandidateDecoder", "CandidateSets", "check_top_k"]


class CandidateSets:
    """One candidate set per query, for ``predict(X, candidates=CandidateSets(...))``.

    Two forms:

    * ``CandidateSets([set_0, set_1, ...])``: one collection of raw candidates per query
      (lists of SMILES, lists of graphs, arrays, ...); the sets are concatenated into one
      pool, embedded in ONE ``embed_candidates`` call;
    * ``CandidateSets.from_pool(pool, [idx_0, idx_1, ...])``: each set is given by indices
      into a shared ``pool`` (a raw collection, or a :class:`CandidateIndex` of the same
      fitted model), so a candidate shared by many queries is embedded once.  Use it when
      the sets overlap (e.g. every molecule with the query's molecular formula).

    Decoding scores each query only against its own set, in query batches with one
    vectorised pass per batch (:func:`sprokr.decoders.grouped_topk_search`): no Python
    loop over (query, candidate) pairs.  ``predict`` returns the best candidate of each
    set (a list); with ``top_k`` a :data:`Decoded` whose indices are positions *within
    each query's own set* (``-1``, score ``-inf`` where a set has fewer than k members).
    """

    def __init__(self, sets):
        sets = list(sets)
        if not sets:
            raise ValueError("CandidateSets needs at least one candidate set")
        sizes = [num_samples(s, f"candidate set {q}") for q, s in enumerate(sets)]
        empty = [q for q, n in enumerate(sizes) if n == 0]
        if empty:
            raise ValueError(f"candidate set(s) of query {empty[:10]} are empty; every query needs "
                             f"at least one candidate")
        self._sets = sets
        self.sizes = np.asarray(sizes, dtype=np.intp)
        self.pool = None
        self.indices = None

    @classmethod
    def from_pool(cls, pool, indices):
        """Sets as index arrays into a shared ``pool`` of candidates (or a CandidateIndex)."""
        n_pool = len(pool) if isinstance(pool, CandidateIndex) else num_samples(pool, "pool")
        idx = [np.asarray(i, dtype=np.intp).ravel() for i in indices]
        if not idx:
            raise ValueError("CandidateSets needs at least one candidate set")
        for q, i in enumerate(idx):
            if i.size == 0:
                raise ValueError(f"the candidate set of query {q} is empty; every query needs "
                                 f"at least one candidate")
            if i.min() < 0 or i.max() >= n_pool:
                raise ValueError(f"the candidate set of query {q} has indices outside the pool "
                                 f"of {n_pool} candidates")
        self = cls.__new__(cls)
        self._sets = None
        self.sizes = np.asarray([i.size for i in idx], dtype=np.intp)
        self.pool = pool
        self.indices = np.concatenate(idx)
        return self

    def __len__(self):
        return self.sizes.size

    def candidate_set(self, q):
        """The raw candidates of query ``q``."""
        if self._sets is not None:
            return self._sets[q]
        start = int(self.sizes[:q].sum())
        sel = self.indices[start:start + self.sizes[q]]
        pool = self.pool.candidates if isinstance(self.pool, CandidateIndex) else self.pool
        return take(pool, sel)

    def _flat_pool(self):
        """(pool collection or CandidateIndex, flat pool index of every (query, candidate) pair)."""
        if self.pool is not None:
            return self.pool, self.indices
        first = self._sets[0]
        if isinstance(first, np.ndarray) and all(isinstance(s, np.ndarray) for s in self._sets):
            pool = np.concatenate(self._sets, axis=0)
        elif all(sp.issparse(s) for s in self._sets):
            pool = sp.vstack(self._sets, format="csr")
        else:
            pool = [c for s in self._sets for c in (s if not isinstance(s, np.ndarray) else list(s))]
        return pool, np.arange(int(self.sizes.sum()), dtype=np.intp)


def check_top_k(top_k):
    if top_k is None:
        return None
    if not isinstance(top_k, (numbers.Integral, np.integer)) or isinstance(top_k, bool) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
    return int(top_k)


class Decoder(BaseEstimator):
    """Turns a fitted model's prediction for ``X`` into outputs.

    ``decode(model, X, candidates=None, top_k=None)`` is called by ``model.predict``.
    Decoders registered through the ``sprokr_decoders`` hook subclass this.

    The model interface a decoder may rely on (SISOKR and DSOKR provide it):
    ``prepare_inputs(X)``, ``predict_coordinates(Xp, prepared=True)`` -> (n_q, d),
    ``make_candidate_index(candidates)``, ``default_index_``, ``index_token_``, and
    optionally ``search_index(Xp, index, k, max_memory_mb)`` -> ``Decoded`` (top-k of a
    :class:`CandidateIndex` for prepared queries; defaults to ``index.search`` on the
    predicted coordinates).
    """

    name = None

    def decode(self, model, X, candidates=None, top_k=None):  # pragma: no cover - abstract
        raise NotImplementedError


class CandidateDecoder(Decoder):
    """``argmax_c <h(x), psi(c)> - k(c,c)/2`` over a candidate set, chunked over queries.

    Parameters
    ----------
    query_chunk : int
        Queries decoded per batch (bounds the n_q x d coordinate block).
    max_memory_mb : float
        Budget of one score block (queries x candidates).
    """

    name = "candidates"

    def __init__(self, query_chunk=4096, max_memory_mb=DEFAULT_MAX_MEMORY_MB):
        self.query_chunk = query_chunk
        self.max_memory_mb = max_memory_mb

    def resolve_index(self, model, candidates):
        """A :class:`CandidateIndex` from None (training outputs), an index or a collection."""
        if candidates is None:
            return model.default_index_
        if isinstance(candidates, CandidateIndex):
            if candidates.owner != model.index_token_:
                raise ValueError(
                    "this CandidateIndex was built by another model (or before the last fit); "
                    "rebuild it with model.make_candidate_index(candidates)"
                )
            return candidates
        return model.make_candidate_index(candidates)

    def decode(self, model, X, candidates=None, top_k=None):
        k = check_top_k(top_k)
        if isinstance(candidates, CandidateSets):
            return self.decode_sets(model, X, candidates, k)
        index = self.resolve_index(model, candidates)
        Xp = model.prepare_inputs(X)
        n_q = num_samples(Xp, "X")
        budget = getattr(model, "max_memory_mb", None) or self.max_memory_mb
        idx = np.empty((n_q, k or 1), dtype=np.intp)
        scores = np.empty((n_q, k or 1))
        for sl in iter_chunks(n_q, self.query_chunk):
            search = getattr(model, "search_index", None)
            if search is not None:  # the model may score some indexes more cheaply
                res = search(take_slice(Xp, sl), index, k or 1, budget)
            else:
                res = index.search(model.predict_coordinates(take_slice(Xp, sl), prepared=True), k or 1, budget)
            kk = res.indices.shape[1]
            idx[sl, :kk], scores[sl, :kk] = res.indices, res.scores
        kk = min(k or 1, len(index))
        idx, scores = idx[:, :kk], scores[:, :kk]
        if k is None:
            return index.take(idx[:, 0])
        return Decoded(idx, scores)

    def decode_sets(self, model, X, sets, k=None):
        """Decode query ``q`` over its own candidate set ``sets`` (a :class:`CandidateSets`)."""
        Xp = model.prepare_inputs(X)
        n_q = num_samples(Xp, "X")
        if n_q != len(sets):
            raise ValueError(f"{n_q} queries but {len(sets)} candidate sets; give one set per query")
        pool, flat = sets._flat_pool()
        # embed every distinct pool candidate once, in one call
        if isinstance(pool, CandidateIndex):
            if pool.owner != model.index_token_:
                raise ValueError("the pool CandidateIndex was built by another model (or before the "
                                 "last fit); rebuild it with model.make_candidate_index(pool)")
            E, offsets, raw = pool.embeddings, pool.offsets, pool.candidates
        else:
            E, offsets = model.embed_candidates(pool)
            raw = pool
        budget = getattr(model, "max_memory_mb", None) or self.max_memory_mb
        kk = k or 1
        sizes = sets.sizes
        ends = np.cumsum(sizes)
        starts = ends - sizes
        idx = np.full((n_q, kk), -1, dtype=np.intp)
        scores = np.full((n_q, kk), -np.inf)
        groups = _shared_sets(flat, starts, ends)
        if groups is not None:
            self._decode_shared_sets(model, Xp, E, offsets, flat, starts, ends, groups, kk, idx, scores)
        else:
            self._decode_pairs(model, Xp, E, offsets, flat, starts, ends, sizes, kk, budget, idx, scores)
        if k is not None:
            return Decoded(idx, scores)
        best = flat[starts + idx[:, 0]]
        return take(raw, best)

    def _decode_shared_sets(self, model, Xp, E, offsets, flat, starts, ends, groups, kk, idx, scores):
        """Queries sharing one candidate set: one GEMM per (query batch, distinct set).

        Sets often repeat (every molecule with the query's formula): scoring a set against
        all its queries at once is a matrix product instead of one gathered row per pair.
        """
        n_q = num_samples(Xp)
        for sl in iter_chunks(n_q, self.query_chunk):
            H = model.predict_coordinates(take_slice(Xp, sl), prepared=True)
            for members in groups:
                qs = members[(members >= sl.start) & (members < sl.stop)]
                if qs.size == 0:
                    continue
                rows = flat[starts[qs[0]]:ends[qs[0]]]
                S = H[qs - sl.start] @ E[rows].T
                if offsets is not None:
                    S += offsets[rows]
                loc = topk_rows(S, kk)
                s_loc = np.take_along_axis(S, loc, axis=1)
                order = np.argsort(-s_loc, axis=1, kind="stable")
                kq = loc.shape[1]
                idx[qs, :kq] = np.take_along_axis(loc, order, axis=1)
                scores[qs, :kq] = np.take_along_axis(s_loc, order, axis=1)

    def _decode_pairs(self, model, Xp, E, offsets, flat, starts, ends, sizes, kk, budget, idx, scores):
        """Distinct sets: gather each (query, candidate) row and score in one vectorised pass."""
        n_q = num_samples(Xp)
        # query batches whose gathered (pairs x d) block fits the memory budget
        pairs_budget = max(1, int(budget * 2**20 // (8 * max(E.shape[1], 1))))
        q0 = 0
        while q0 < n_q:
            q1 = int(np.searchsorted(ends, starts[q0] + pairs_budget, side="right"))
            q1 = min(max(q1, q0 + 1), n_q, q0 + self.query_chunk)
            rows = flat[starts[q0]:ends[q1 - 1]]
            H = model.predict_coordinates(take_slice(Xp, slice(q0, q1)), prepared=True)
            res = grouped_topk_search(H, E[rows], sizes[q0:q1], kk,
                                      None if offsets is None else offsets[rows])
            idx[q0:q1], scores[q0:q1] = res.indices, res.scores
            q0 = q1


def _shared_sets(flat, starts, ends, max_ratio=0.25):
    """Group queries by identical candidate set; None when sets rarely repeat.

    Returns a list of query-index arrays (one per distinct set) if there are at most
    ``max_ratio * n_queries`` distinct sets, else None.
    """
    n_q = starts.size
    keys = {}
    for q in range(n_q):  # one hash per query (not per pair)
        keys.setdefault(flat[starts[q]:ends[q]].tobytes(), []).append(q)
        if len(keys) > max_ratio * n_q:
            return None
    return [np.asarray(v, dtype=np.intp) for v in keys.values()]
