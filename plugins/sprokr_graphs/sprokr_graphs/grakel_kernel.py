"""Any GraKeL kernel on networkx graphs, as a sprokr kernel (``grakel``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from sprokr.kernels.base import Kernel

from .checks import check_graph, check_graph_sequence

if TYPE_CHECKING:  # imported for the annotations only
    from sprokr.types import Samples

__all__ = ["GrakelKernel"]


class GrakelKernel(Kernel):
    """Any GraKeL kernel on networkx graphs (evaluated by GraKeL block by block).

    ``kernel`` is a GraKeL class name (e.g. ``"ShortestPath"``, ``"WeisfeilerLehman"``),
    ``params`` its constructor arguments.  Use it for kernels without an explicit feature
    map here; it costs one GraKeL ``fit``/``transform`` per Gram block.

    ``normalize=True`` gives ``k(G, G') / sqrt(k(G, G) k(G', G'))`` with the three values
    taken from ONE GraKeL Gram matrix: a block between two different sets is read from the
    Gram matrix of their union (one ``fit_transform``, which also costs the sets' own
    blocks), so that ``k(G, G) = 1`` holds also for kernels whose values depend on the
    fitted set (``OddSth``, ``Propagation``, ``GraphletSampling``, ...).  A graph without
    any feature (self-similarity 0, e.g. ``ShortestPath`` on a graph without edges: no
    path) gets, as the empty graph of the WL kernels, one reserved feature: similarity 1
    to such graphs, 0 to the others.  Non-finite values, or a negative self-similarity,
    are an error naming the kernel.
    """

    name = "grakel"

    def __init__(self, kernel: str = "WeisfeilerLehman", params: Mapping[str, Any] | None = None,
                 node_label: str = "label", edge_label: str | None = "label", normalize: bool = True) -> None:
        self.kernel = kernel
        self.params = params
        self.node_label = node_label
        self.edge_label = edge_label
        self.normalize = normalize

    @property
    def normalized(self) -> bool:  # type: ignore[override]  # a class attribute in Kernel
        return bool(self.normalize)

    def prepare(self, X: Samples) -> Any:
        import grakel

        check_graph_sequence(X)
        X = list(X)
        for i, G in enumerate(X):
            check_graph(G, i, self.node_label)
        has_edges = all(self.edge_label in d for G in X for _, _, d in G.edges(data=True))
        return list(grakel.graph_from_networkx(
            X, node_labels_tag=self.node_label,
            edge_labels_tag=self.edge_label if has_edges else None))

    def _make(self):
        import grakel.kernels as gk

        try:
            cls = getattr(gk, self.kernel)
        except AttributeError:
            raise ValueError(f"GraKeL has no kernel {self.kernel!r}") from None
        return cls(normalize=False, **(self.params or {}))

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        if len(A) == 0 or len(B) == 0:  # GraKeL refuses an empty set
            return np.zeros((len(A), len(B)))
        if not self.normalize:
            k = self._make()
            k.fit(B)
            return self._finite(k.transform(A))
        # One Gram matrix and its own diagonal: a block of fit(B).transform(A) divided by
        # diagonals of other fits had k(x, x) != 1 for set-dependent kernels (e.g. OddSth)
        K = self._finite(self._make().fit_transform(A if A is B else list(A) + list(B)))
        d = np.diag(K).copy()
        if (d < 0).any():
            raise ValueError(f"the GraKeL kernel {self.kernel!r} gives a negative self-similarity k(G, G) for "
                             f"{int((d < 0).sum())} graph(s): it is not positive semi-definite on them "
                             f"(random walk kernels: lower the decay factor), so it cannot be normalised")
        none = d == 0  # no feature at all: one reserved feature, as the WL kernels' empty graph
        d[none] = 1.0
        K = K / np.sqrt(np.outer(d, d))
        K[np.ix_(none, none)] = 1.0
        if A is B:
            np.fill_diagonal(K, 1.0)
            return K
        return K[:len(A), len(A):]

    def _finite(self, K):
        K = np.asarray(K, dtype=np.float64)
        if not np.isfinite(K).all():
            raise ValueError(f"the GraKeL kernel {self.kernel!r} returned non-finite values (NaN or inf) on "
                             f"these graphs; check its params, or use normalize=False / another kernel")
        return K

    def _raw_diag(self, A):
        return self._finite([self._make().fit_transform([g])[0, 0] for g in A])

    def diag(self, A: Any) -> np.ndarray:
        if self.normalize:
            return np.ones(len(A))
        return self._raw_diag(A)
