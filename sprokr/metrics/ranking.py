"""Ranking metrics for candidate decoding: top-k accuracy, Hits@k, MRR.

Two input forms, both in scikit-learn order ``(y_true, y_pred)``:

* ``y_true`` : int array (n,) -- the position of the true output in each query's candidate
  list (``-1`` when the truth is not among the candidates: never a hit, reciprocal rank 0);
* ``y_pred`` : int array (n, k) -- ranked candidate positions, best first (as in
  ``model.predict_topk(X, k=k).indices``); ``-1`` entries are padding.

:func:`ranks_from_scores` turns a full score matrix into the rank of the truth (1 = best),
ties broken at random in expectation (see there).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..utils import check_integer

__all__ = ["true_ranks", "ranks_from_scores", "top_k_accuracy", "hits_at_k",
           "mean_reciprocal_rank"]


def _check(y_true, y_pred):
    t = np.asarray(y_true)
    p = np.asarray(y_pred)
    if p.ndim == 1:
        p = p[:, None]
    if t.ndim != 1 or p.ndim != 2 or t.shape[0] != p.shape[0]:
        raise ValueError(f"y_true must be (n,) and y_pred (n, k); got {t.shape} and {p.shape}")
    # (empty lists are float arrays: the callers say "no samples" for them, not a wrong type)
    if t.size and not (np.issubdtype(t.dtype, np.integer) and np.issubdtype(p.dtype, np.integer)):
        raise TypeError("y_true and y_pred must hold integer candidate positions")
    return t, p


def true_ranks(y_true: ArrayLike, y_pred: ArrayLike) -> np.ndarray:
    """1-based rank of the truth within each ranked list; ``inf`` if absent.

    Parameters
    ----------
    y_true : array-like of int, shape (n,)
        Position of each query's true output in its candidate list (``-1``: not among
        the candidates).
    y_pred : array-like of int, shape (n, k)
        Ranked candidate positions of each query, best first (``-1`` entries are padding).

    Returns
    -------
    ndarray of float, shape (n,)
    """
    t, p = _check(y_true, y_pred)
    if p.shape[1] == 0:  # empty ranked lists (argmax refuses an empty axis): never a hit
        return np.full(t.shape[0], np.inf)
    hit = (p == t[:, None]) & (t[:, None] >= 0)
    r = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1.0, np.inf)
    return r


#: score entries per block of :func:`ranks_from_scores` (float64: 512 KiB, a core's L2)
_RANK_BLOCK = 1 << 16


def ranks_from_scores(scores: ArrayLike, y_true: ArrayLike) -> np.ndarray:
    """Rank (1 = best) of the true candidate from a full score matrix.

    Parameters
    ----------
    scores : array-like of shape (n, n_candidates)
        Each query's score of every candidate (no NaN).
    y_true : array-like of int, shape (n,)
        The position of each query's truth among the candidates.

    Returns
    -------
    ranks : ndarray (n,) of float
        ``1 + higher + ties / 2``, with ``higher`` the candidates scoring strictly above the
        truth and ``ties`` the other candidates scoring exactly as it: the expected rank when
        ties are broken at random (the "realistic" rank of Berrendorf et al., 2020).  So
        scores that collapse to a constant (e.g. a kernel underflowing to 0 for every pair)
        rank the truth in the middle, not first, and an exact duplicate of the truth among
        the candidates costs half a rank.
    """
    S = np.asarray(scores)
    if S.dtype.kind != "f":  # float32 scores are compared as they are (no float64 copy)
        S = S.astype(np.float64)
    t = np.asarray(y_true)
    if S.ndim != 2 or t.shape != (S.shape[0],):
        raise ValueError(f"scores must be (n, n_candidates) and y_true (n,); got {S.shape}, {t.shape}")
    # (an empty list is a float array: no query, as 0 score rows)
    if t.size and not np.issubdtype(t.dtype, np.integer):
        raise TypeError(f"y_true must hold integer candidate positions, got dtype {t.dtype}")
    n, n_c = S.shape
    if t.size and (t.min() < 0 or t.max() >= n_c):
        raise ValueError("y_true holds positions outside the candidate set")
    ranks = np.empty(n)
    # blocks of rows small enough for the cache: the three comparisons read each block from
    # cache rather than S three times from memory.  A NaN score compares neither above,
    # equal to nor below the truth's, so the three counts miss it (checked per block).
    step = max(1, _RANK_BLOCK // max(n_c, 1))
    for lo in range(0, n, step):
        B = S[lo:lo + step]
        st = B[np.arange(B.shape[0]), t[lo:lo + step]][:, None]
        higher = np.count_nonzero(B > st, axis=1)
        equal = np.count_nonzero(B == st, axis=1)
        if (higher + equal + np.count_nonzero(B < st, axis=1) != n_c).any():
            raise ValueError("scores contain NaN: a NaN score cannot be ranked")
        ranks[lo:lo + step] = 1.0 + higher + 0.5 * (equal - 1)  # (the truth itself excluded)
    return ranks


def top_k_accuracy(y_true: ArrayLike, y_pred: ArrayLike, k: int = 1) -> float:
    """Fraction of queries whose true output is among the first ``k`` predictions.

    Empty input is refused (a mean over no query is undefined; as scikit-learn's metrics).

    Parameters
    ----------
    y_true : array-like of int, shape (n,)
        Position of each query's true output in its candidate list (``-1``: not among
        the candidates).
    y_pred : array-like of int, shape (n, k)
        Ranked candidate positions of each query, best first (``-1`` entries are padding).
    k : int, default=1
        The number of first predictions looked at, an integer >= 1 (a float such as 1.5 is
        refused, not read as ``k = 1``).

    Returns
    -------
    float
    """
    check_integer(k, "k")  # (a bool is refused: k=True would silently mean k=1)
    r = true_ranks(y_true, y_pred)
    if r.size == 0:
        raise ValueError("no samples: y_true and y_pred are empty; top_k_accuracy needs at least one query")
    return float(np.mean(r <= k))


def hits_at_k(y_true: ArrayLike, y_pred: ArrayLike, k: int = 10) -> float:
    """Hits@k (retrieval name of top-k accuracy with one relevant item per query).

    Parameters
    ----------
    y_true : array-like of int, shape (n,)
        Position of each query's true output in its candidate list (``-1``: not among
        the candidates).
    y_pred : array-like of int, shape (n, k)
        Ranked candidate positions of each query, best first (``-1`` entries are padding).
    k : int, default=10
        The number of first predictions looked at (an integer >= 1).

    Returns
    -------
    float
    """
    return top_k_accuracy(y_true, y_pred, k)


def mean_reciprocal_rank(y_true: Any, y_pred: Any = None,
                         ranks: ArrayLike | None = None) -> float:
    """MRR: mean of 1 / rank of the truth (0 when it is not in the ranked list).

    Give ``(y_true, y_pred)`` ranked lists, or ``ranks=`` (e.g. from
    :func:`ranks_from_scores`, which covers the whole candidate set): 1-based ranks, each
    >= 1 (1 = best; fractional ranks of ties are fine) or ``inf`` for a truth absent from
    the ranking.  NaN is refused, and so is empty input (a mean over no query is undefined;
    as scikit-learn's metrics), and ``y_pred`` given with ``ranks`` (which to score?).

    Parameters
    ----------
    y_true : array-like of int, shape (n,)
        Position of each query's true output in its candidate list (``-1``: not among
        the candidates); ignored with ``ranks``.
    y_pred : array-like of int, shape (n, k), optional
        Ranked candidate positions of each query, best first (``-1`` entries are padding).
    ranks : array-like of float, shape (n,), optional
        1-based ranks of the truth instead of ``(y_true, y_pred)``.

    Returns
    -------
    float
    """
    if ranks is not None and y_pred is not None:  # which one to score? (ranks= won silently)
        raise ValueError("mean_reciprocal_rank takes either (y_true, y_pred) ranked lists or ranks=, not both")
    if ranks is None:
        r = true_ranks(y_true, y_pred)
        if r.size == 0:
            raise ValueError("no samples: y_true and y_pred are empty; mean_reciprocal_rank needs at least one query")
        return float(np.mean(1.0 / r))
    r = np.asarray(ranks, dtype=np.float64)
    if r.size == 0:
        raise ValueError("no samples: ranks is empty; mean_reciprocal_rank needs at least one query")
    if np.isnan(r).any():
        raise ValueError("ranks contain NaN; expected 1-based ranks (>= 1, or inf for a truth absent "
                         "from the ranking)")
    if (r < 1).any():  # a 0-based rank of 0 gave 1/0 = inf: an MRR of inf
        raise ValueError(f"ranks must be >= 1 (1-based, 1 = best) or inf for a truth absent from the "
                         f"ranking; got {int((r < 1).sum())} rank(s) below 1, e.g. {float(r[r < 1].flat[0])!r}")
    return float(np.mean(1.0 / r))
