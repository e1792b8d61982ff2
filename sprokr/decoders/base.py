"""The ``Decoder`` protocol and the built-in candidate-set decoder."""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator

from .._utils import iter_chunks, num_samples, take_slice
from .candidates import DEFAULT_MAX_MEMORY_MB, CandidateIndex, Decoded

__all__ = ["Decoder", "CandidateDecoder", "check_top_k"]


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
    ``make_candidate_index(candidates)``, ``default_index_``, ``_index_token``.
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

    def __init__(self, query_chunk=2048, max_memory_mb=DEFAULT_MAX_MEMORY_MB):
        self.query_chunk = query_chunk
        self.max_memory_mb = max_memory_mb

    def resolve_index(self, model, candidates):
        """A :class:`CandidateIndex` from None (training outputs), an index or a collection."""
        if candidates is None:
            return model.default_index_
        if isinstance(candidates, CandidateIndex):
            if candidates.owner is not model._index_token:
                raise ValueError(
                    "this CandidateIndex was built by another model (or before the last fit); "
                    "rebuild it with model.make_candidate_index(candidates)"
                )
            return candidates
        return model.make_candidate_index(candidates)

    def decode(self, model, X, candidates=None, top_k=None):
        k = check_top_k(top_k)
        index = self.resolve_index(model, candidates)
        Xp = model.prepare_inputs(X)
        n_q = num_samples(Xp, "X")
        budget = getattr(model, "max_memory_mb", None) or self.max_memory_mb
        idx = np.empty((n_q, k or 1), dtype=np.intp)
        scores = np.empty((n_q, k or 1))
        for sl in iter_chunks(n_q, self.query_chunk):
            H = model.predict_coordinates(take_slice(Xp, sl), prepared=True)
            res = index.search(H, k or 1, budget)
            kk = res.indices.shape[1]
            idx[sl, :kk], scores[sl, :kk] = res.indices, res.scores
        kk = min(k or 1, len(index))
        idx, scores = idx[:, :kk], scores[:, :kk]
        if k is None:
            return index.take(idx[:, 0])
        return Decoded(idx, scores)
