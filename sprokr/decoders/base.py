"""The ``Decoder`` protocol, the built-in candidate-set decoder and per-query candidate sets.

A decoder works on coordinates and an index, never on the model: the model computes the
coordinates ``H`` (n_q, d) of a batch of queries in its output basis and resolves the
candidates into a :class:`~sprokr.decoders.CandidateIndex` in the same basis, then calls
``decoder.decode(H, index, top_k)``.  Decoders that build outputs from the training
examples (FGW barycenters) declare ``needs_weights = True`` and receive the weights
``alpha(x)`` over the distinct training outputs as well.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from ..numerics import DEFAULT_MAX_MEMORY_MB, Decoded, grouped_topk_search, select_topk
from ..utils import check_integer, check_positive, num_samples, take
from .candidates import CandidateIndex

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from ..types import Samples

__all__ = ["Decoder", "CandidateDecoder", "CandidateSets", "check_top_k", "shared_sets"]


class CandidateSets:
    """One candidate set per query, for ``predict(X, candidates=CandidateSets(...))``.

    Two forms:

    * ``CandidateSets([set_0, set_1, ...])``: one collection of raw candidates per query
      (lists of SMILES, lists of graphs, arrays, ...); the sets are concatenated into one
      pool, embedded in ONE call;
    * ``CandidateSets.from_pool(pool, [idx_0, idx_1, ...])``: each set is given by indices
      into a shared ``pool`` (a raw collection, or a :class:`CandidateIndex` of the same
      fitted model), so a candidate shared by many queries is embedded once.  Use it when
      the sets overlap (e.g. every molecule with the query's molecular formula).

    Decoding scores each query only against its own set, with one vectorised pass per
    query batch (:func:`sprokr.numerics.grouped_topk_search`): no Python loop over
    (query, candidate) pairs.  ``predict`` returns the best candidate of each set (a
    list); ``predict_topk`` a :data:`Decoded` whose indices are positions *within each
    query's own set* (``-1``, score ``-inf`` where a set has fewer than k members).

    Parameters
    ----------
    sets : sequence of collections
        One non-empty collection of raw candidates per query (the first form above; the
        second is made by :meth:`from_pool`).
    """

    #: attribute types for the type checker (set in __init__ / fit)
    _sets: Any  # None for sets drawn from a pool
    pool: Any
    indices: Any

    def __init__(self, sets: Sequence[Samples]) -> None:
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
    def from_pool(cls, pool: Samples | CandidateIndex, indices: Sequence[ArrayLike]) -> Self:
        """Sets as index arrays into a shared ``pool`` of candidates (or a CandidateIndex)."""
        n_pool = len(pool) if isinstance(pool, CandidateIndex) else num_samples(pool, "pool")
        idx = [np.asarray(i).ravel() for i in indices]
        if not idx:
            raise ValueError("CandidateSets needs at least one candidate set")
        for q, i in enumerate(idx):
            if i.size == 0:
                raise ValueError(f"the candidate set of query {q} is empty; every query needs "
                                 f"at least one candidate")
            if i.dtype.kind not in "iu":
                raise TypeError(f"the candidate set of query {q} must hold integer indices into the "
                                f"pool, got dtype {i.dtype}")
            if i.min() < 0 or i.max() >= n_pool:
                raise ValueError(f"the candidate set of query {q} has indices outside the pool "
                                 f"of {n_pool} candidates")
        self = cls.__new__(cls)
        self._sets = None
        self.sizes = np.asarray([i.size for i in idx], dtype=np.intp)
        self.pool = pool
        self.indices = np.concatenate(idx).astype(np.intp)
        return self

    def __len__(self):
        return self.sizes.size

    def candidate_set(self, q: int) -> Samples:
        """The raw candidates of query ``q``."""
        if self._sets is not None:
            return self._sets[q]
        start = int(self.sizes[:q].sum())
        sel = self.indices[start:start + self.sizes[q]]
        pool = self.pool.candidates if isinstance(self.pool, CandidateIndex) else self.pool
        return take(pool, sel)

    def flat_pool(self) -> tuple[Any, np.ndarray]:
        """``(pool, flat)``: the pool (raw collection or CandidateIndex) and the pool index of
        every (query, candidate) pair, queries in order."""
        if self.pool is not None:
            return self.pool, self.indices
        first = self._sets[0]
        if isinstance(first, np.ndarray) and all(isinstance(s, np.ndarray) for s in self._sets):
            pool: Any = np.concatenate(self._sets, axis=0)
        elif all(sp.issparse(s) for s in self._sets):
            pool = sp.vstack(self._sets, format="csr")
        else:
            pool = [c for s in self._sets for c in (s if not isinstance(s, np.ndarray) else list(s))]
        return pool, np.arange(int(self.sizes.sum()), dtype=np.intp)


def check_top_k(top_k: int | None, name: str = "top_k") -> int | None:
    """``None`` or a positive int (clear error otherwise).

    Parameters
    ----------
    top_k : int or None
        The value to check: None, or an integer >= 1 (bools are refused).
    name : str, default="top_k"
        The argument's name in the error message.

    Returns
    -------
    int or None
        ``top_k`` as an int, or None.
    """
    return None if top_k is None else check_integer(top_k, name)


class Decoder(BaseEstimator):
    """Turns query coordinates and a candidate index into outputs.

    Decoders registered through the ``sprokr_decoders`` hook subclass this.  A model
    calls, per batch of queries,

    ``decode(H, index, top_k=None, weights=None)``
        ``H`` (n_q, d): the coordinates of the predictions in the model's output basis;
        ``index``: a :class:`CandidateIndex` in the same basis (``index.candidates`` holds
        the raw candidates, ``index.kernel`` the output kernel); ``top_k``: None to return
        the decoded outputs (a collection of n_q outputs), or an int to return a
        :data:`Decoded` ``(indices, scores)`` of shape (n_q, top_k) into the index;
        ``weights`` (n_q, n_distinct_training_outputs): ``alpha(x)`` over the model's
        distinct training outputs, given only to decoders with ``needs_weights = True``
        when the candidates are the training outputs (models that can compute them).
    ``decode_sets(H, index, sizes, flat, top_k=None)`` (optional)
        per-query candidate sets: query ``q`` is scored against the index rows
        ``flat[starts[q]:starts[q] + sizes[q]]``.

    ``max_memory_mb`` (budget of one score block) is the decoder's own parameter; a model's
    ``max_memory_mb``, when set, is handed to the decoder at fit time.
    """

    name: Optional[str] = None
    #: whether ``decode`` wants the weights ``alpha(x)`` over the training outputs
    needs_weights = False
    #: queries decoded per batch by the models
    query_batch_size = 4096

    def decode(self, H: np.ndarray, index: CandidateIndex, top_k: int | None = None,
               weights: np.ndarray | None = None) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def decode_sets(self, H: np.ndarray, index: CandidateIndex, sizes: np.ndarray, flat: np.ndarray,
                    top_k: int | None = None) -> Any:
        raise ValueError(f"the {type(self).__name__} decoder does not take per-query candidate sets")


class CandidateDecoder(Decoder):
    """``argmax_c <h(x), psi(c)> - k(c,c)/2`` over a candidate set (or its top-k).

    Parameters
    ----------
    query_chunk : int
        Queries decoded per batch (bounds the n_q x d coordinate block).
    max_memory_mb : float
        Budget of one score block (queries x candidates).
    """

    name = "candidates"

    def __init__(self, query_chunk: int = 4096, max_memory_mb: float = DEFAULT_MAX_MEMORY_MB) -> None:
        self.query_chunk = query_chunk
        self.max_memory_mb = max_memory_mb

    @property
    def query_batch_size(self) -> int:  # type: ignore[override]  # a class attribute in Decoder
        return self.query_chunk

    def validate(self) -> Self:
        """Check the parameters (clear errors); called by the models at fit time."""
        check_top_k(self.query_chunk, "query_chunk")
        check_positive(self.max_memory_mb, "max_memory_mb")
        return self

    def decode(self, H: np.ndarray, index: CandidateIndex, top_k: int | None = None,
               weights: np.ndarray | None = None) -> Any:
        res = index.search(H, top_k or 1, self.max_memory_mb)
        if top_k is None:
            return index.take(res.indices[:, 0])
        return res

    def decode_sets(self, H: np.ndarray, index: CandidateIndex, sizes: np.ndarray, flat: np.ndarray,
                    top_k: int | None = None) -> Any:
        """Decode query ``q`` over its own rows ``flat[...]`` of ``index``."""
        kk = top_k or 1
        n_q = H.shape[0]
        ends = np.cumsum(sizes)
        starts = ends - sizes
        E = index.gather_embeddings()
        offsets = index.offsets
        groups = shared_sets(flat, starts, ends)
        if groups is not None:  # sets repeat: one product per distinct set
            idx = np.full((n_q, kk), -1, dtype=np.int64)
            scores = np.full((n_q, kk), -np.inf)
            for members in groups:
                rows = flat[starts[members[0]]:ends[members[0]]]
                S = H[members] @ E[rows].T
                if offsets is not None:
                    S += offsets[rows]
                i, s = select_topk(S, kk)
                idx[members, :i.shape[1]], scores[members, :i.shape[1]] = i, s
        else:
            res = grouped_topk_search(H, E[flat], sizes, kk, None if offsets is None else offsets[flat])
            idx, scores = res.indices, res.scores
        if top_k is not None:
            return Decoded(idx, scores)
        return index.take(flat[starts + idx[:, 0]])


def shared_sets(flat: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                max_ratio: float = 0.25) -> list[np.ndarray] | None:
    """Group queries by identical candidate set; None when sets rarely repeat.

    Parameters
    ----------
    flat : ndarray of int
        The candidate rows of all the sets, concatenated.
    starts, ends : ndarray of int, shape (n_queries,)
        Query ``q``'s set is ``flat[starts[q]:ends[q]]``.
    max_ratio : float, default=0.25
        The largest number of distinct sets, as a fraction of the number of queries, for
        which the queries are grouped.

    Returns
    -------
    list of ndarray or None
        A list of query-index arrays (one per distinct set) if there are at most
        ``max_ratio * n_queries`` distinct sets, else None.
    """
    n_q = starts.size
    keys: dict[Any, list[int]] = {}
    for q in range(n_q):  # one hash per query (not per pair)
        keys.setdefault(flat[starts[q]:ends[q]].tobytes(), []).append(q)
        if len(keys) > max_ratio * n_q:
            return None
    return [np.asarray(v, dtype=np.intp) for v in keys.values()]
