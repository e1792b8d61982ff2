"""Approximate ridge leverage scores of a Gram matrix (for leverage-score sketches)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from ..numerics import DEFAULT_RCOND, ChunkTask, SketchedFeatures, default_chunk_size, psd_eigh
from ..kernels import resolve_kernel
from ..numerics import resolve_executor
from ..utils import check_positive, check_random_state

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..types import RandomStateLike, Samples

__all__ = ["approximate_leverage_scores"]


def approximate_leverage_scores(Z: Samples, kernel: str | Kernel, lam: float, m: int | None = None,
                                kernel_params: Mapping[str, Any] | None = None, random_state: RandomStateLike = None,
                                chunk_size: int | None = None, rcond: float | None = None,
                                executor: Any = None) -> np.ndarray:
    """Approximate ridge leverage scores ``l_i(lam) = [K (K + n lam I)^-1]_ii`` of a Gram matrix.

    ``K`` is replaced by its uniform Nystrom approximation on ``m`` points,
    ``K ~ B B^T`` with ``B = K_{:,S} U D^-1/2`` (n x r), so
    ``l_i ~ b_i^T (B^T B + n lam I)^-1 b_i``.  Two chunked passes: O(n m) kernel
    evaluations, O(n m^2) flops, O(m^2 + chunk x m) memory.  With ``m = n`` the scores are
    exact.  Works for input Grams (``kernel`` an input kernel) and output Grams alike.

    Parameters
    ----------
    Z : samples
        The ``n`` samples of the Gram, as accepted by the kernel.
    kernel : str or Kernel
        Registered kernel name or kernel instance.
    lam : float > 0
        The ridge parameter.
    m : int, optional
        Nystrom size (default ``min(n, 500)``).
    kernel_params : dict, optional
        Parameters of a kernel given by name.
    random_state : None, int or Generator
        Draws the ``m`` Nystrom points (uniformly, without replacement).
    chunk_size : int, optional
        Samples per chunk of the two passes (default: a ``chunk x m`` float64 block of about
        64 MB, 128 to 8192 rows).
    rcond : float, optional
        Relative eigenvalue threshold of the Nystrom basis (default 1e-10).
    executor : str, Executor or dask Client, optional
        Where the chunked passes run (a registered name such as ``"local"`` or ``"dask"``,
        an instance, or a ``dask.distributed.Client``; default: local).

    Returns
    -------
    scores : ndarray of shape (n,)
        In (0, 1); their sum approximates the effective dimension ``d_eff(lam)``.  Use
        ``SubSample(m, probabilities=scores)`` for leverage-score sampling.
    """
    from ..sketches import SubSample

    lam = check_positive(lam, "lam")
    k = resolve_kernel(kernel, kernel_params, "input", np.dtype(np.float64), "kernel")
    ex = resolve_executor(executor)
    parts = ex.partition(Z, prepare=(k.prepare,))
    n = parts.n
    m = min(n, 500) if m is None else int(m)
    R = SubSample(m=m).draw(n, check_random_state(random_state))
    feats = SketchedFeatures(k, R, ex.take_rows(parts, R.indices), np.float64,
                             rcond if rcond is not None else DEFAULT_RCOND).fit_basis()
    chunk = chunk_size or default_chunk_size(R.indices.size, np.float64)
    BtB = ex.map_reduce(parts, _FeatureGram(feats), chunk)  # B^T B, B = the Nystrom features
    U, d = psd_eigh(BtB, rcond=0.0) if feats.rank else (np.zeros((0, 0)), np.zeros(0))
    return ex.map_rows(parts, _LeverageRows(feats, U, np.sqrt(1.0 / (d + n * lam))), chunk,
                       name="leverage scores")


class _FeatureGram(ChunkTask):
    """``B^T B`` of the Nystrom features ``B``, summed over chunks."""

    name = "Nystrom feature Gram"

    def __init__(self, features):
        self.features = features

    def start(self):
        return np.zeros((self.features.rank, self.features.rank))

    def add(self, acc, rows, Z):
        B = self.features.transform(Z, dedupe=False).astype(np.float64)
        acc += B.T @ B
        return acc

    def merge(self, a, b):
        return a + b


class _LeverageRows:
    def __init__(self, features, U, scale):
        self.features, self.U, self.scale = features, U, scale

    def __call__(self, Z):
        C = (self.features.transform(Z, dedupe=False) @ self.U) * self.scale
        return np.einsum("ij,ij->i", C, C)
