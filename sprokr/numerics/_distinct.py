"""Distinct samples of a partitioned collection (a chunked pass with an exact merge)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..utils import concat_samples, take, unique_inverse
from ._executor import ChunkTask

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import Samples
    from ._executor import Executor, RowPartitions

__all__ = ["DistinctTask", "distinct_samples"]


class DistinctTask(ChunkTask):
    """Distinct samples and the global index of their first occurrence.

    The partial result is ``(first, samples)``: global row of the first occurrence of each
    distinct sample seen, and those samples.  Merging keeps the smaller first occurrence,
    so the result is the same in any order.  The collection is chunk number ``which``.

    Parameters
    ----------
    which : int, default=0
        Position of the collection among the chunks of a pass.
    """

    name = "distinct samples"

    def __init__(self, which: int = 0) -> None:
        self.which = which

    def start(self) -> Any:
        return None

    def add(self, partial: Any, rows: slice, *chunks: Any) -> Any:
        Y = chunks[self.which]
        first, _ = unique_inverse(Y)
        part = (first + rows.start, take(Y, first))
        return part if partial is None else self.merge(partial, part)

    def merge(self, a: Any, b: Any) -> Any:
        if a is None or b is None:
            return b if a is None else a
        rows = concat_samples([a[1], b[1]])
        first = np.concatenate([a[0], b[0]])
        u, inverse = unique_inverse(rows)
        best = np.full(u.size, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(best, inverse, first)
        return best, take(rows, u)

    def finish(self, partial: Any) -> tuple[np.ndarray, Samples]:
        first, rows = partial
        order = np.argsort(first, kind="stable")
        return first[order], take(rows, order)


def distinct_samples(executor: Executor, parts: RowPartitions, which: str | int,
                     chunk_size: int) -> tuple[np.ndarray, Samples]:
    """``(first, samples)`` of column ``which`` (name or position) of ``parts``, in order of first occurrence.

    Parameters
    ----------
    executor : Executor
        The executor running the pass.
    parts : RowPartitions
        The partitioned collections.
    which : str or int
        The column whose distinct samples are taken: its name or its position.
    chunk_size : int
        Rows per chunk of the pass.
    """
    which = parts.column(which)
    if parts.n_partitions == 1 and isinstance(parts.blocks[0], tuple):
        Y = parts.blocks[0][which]  # one local partition: one vectorised pass
        first, _ = unique_inverse(Y)
        return first, take(Y, first)
    return executor.map_reduce(parts, DistinctTask(which), chunk_size)
