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

from ..numerics import DEFAULT_MAX_MEMORY_MB, Decoded, grouped_topk_search, topk_search
from ..persistence import SaveMixin
from ..utils import num_samples, take

__all__ = ["CandidateIndex", "Decoded", "topk_search", "grouped_topk_search"]

class CandidateIndex(SaveMixin):
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
    owner : str or None
        ``index_token_`` of the fitted model the index belongs to (a random hex string drawn
        at each fit, so it survives saving and loading).
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
