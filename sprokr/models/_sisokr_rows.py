"""Row helpers of the IOKR family: whole columns of the training partitions, and the
callables the executor maps over chunks of candidate rows while SISOKR builds its default
candidate index.

They are apart from :mod:`sprokr.models.sisokr` so that the estimator module holds the
estimator and its training phases; :func:`all_rows` is shared with the kernel machines
(:mod:`sprokr.models.kernel_machine`) and, through its re-export in
:mod:`sprokr.models.sisokr`, with model selection.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..numerics import candidate_offsets
from ..utils import concat_samples, unique_inverse

if TYPE_CHECKING:  # imported for the annotations only
    from ..numerics import Executor, RowPartitions

__all__ = ["Embed", "Offsets", "all_rows", "groups_of"]


def all_rows(executor: Executor, parts: RowPartitions, which: str | int) -> Any:
    """The whole column ``which`` (name or position) of ``parts`` in this process (exact methods need it)."""
    if parts.n_partitions == 1 and isinstance(parts.blocks[0], tuple):
        return parts.blocks[0][parts.column(which)]
    return executor.take_rows(parts, np.arange(parts.n), which=which)


def groups_of(sel_raw, sel_idx, Yu, first):
    """Distinct-output group of each support sample (``sel_idx`` its training indices)."""
    n_u = first.size
    u, inverse = unique_inverse(concat_samples([Yu, sel_raw]))
    if u.size == n_u:  # every support output matched one distinct output (hashable samples)
        return inverse[n_u:]
    # unhashable samples (graphs) are all distinct: the groups are the training samples
    return np.searchsorted(first, sel_idx)


class Offsets:
    """``-k(c, c)/2`` of a chunk of prepared candidates (:func:`sprokr.numerics.candidate_offsets`)."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, Cp):
        return candidate_offsets(self.kernel, Cp)


class Embed:
    """``[psi~(c), -k(c,c)/2]`` rows of a distributed candidate index."""

    def __init__(self, features, kernel, dtype):
        self.features, self.kernel, self.dtype = features, kernel, dtype

    def __call__(self, Cp):
        E = self.features.transform(Cp).astype(self.dtype, copy=False)
        off = candidate_offsets(self.kernel, Cp)
        return E if off is None else np.hstack([E, off[:, None].astype(E.dtype)])
