"""Any GraKeL kernel on networkx graphs, as a sprokr kernel (``grakel``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from sprokr.kernels.base import Kernel
from sprokr.utils import check_bool

from .checks import check_graph, check_graph_sequence

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from sprokr.types import Samples

__all__ = ["SET_INDEPENDENT", "GrakelKernel"]

#: GraKeL kernels whose value k(a, b) does not depend on the other graphs of the fitted set,
#: and whose ``diagonal()`` after ``fit(B).transform(A)`` gives the self-similarities of A and
#: B: checked numerically against the Gram of the union (GraKeL 0.1.11; tests/test_graphs.py).
#: ``GrakelKernel(normalize=True)`` computes a block between two sets directly for these only.
SET_INDEPENDENT = frozenset({
    "VertexHistogram", "WeisfeilerLehman", "WeisfeilerLehmanOptimalAssignment", "ShortestPath",
    "ShortestPathAttr", "RandomWalk", "RandomWalkLabeled", "SubgraphMatching"})


def _set_independent(cls: Any, params: Mapping[str, Any]) -> bool:
    """Whether GraKeL class ``cls`` built with ``params`` is in :data:`SET_INDEPENDENT`: exactly
    that class of ``grakel.kernels`` (not a subclass, which may change anything), and a
    ``base_graph_kernel`` (the kernel WeisfeilerLehman sums over its rounds) in it too."""
    import grakel.kernels as gk

    name = getattr(cls, "__name__", None)
    if name not in SET_INDEPENDENT or getattr(gk, name, None) is not cls:
        return False
    base = params.get("base_graph_kernel")
    if base is None:  # WeisfeilerLehman's default base, VertexHistogram
        return True
    if isinstance(base, type):
        return _set_independent(base, {})
    try:
        base_cls, base_params = base
    except (TypeError, ValueError):  # malformed: GraKeL names the error (union path)
        return False
    return isinstance(base_params, Mapping) and _set_independent(base_cls, base_params)


class GrakelKernel(Kernel):
    """Any GraKeL kernel on networkx graphs (evaluated by GraKeL block by block).

    Use it for kernels without an explicit feature map here; it costs one GraKeL
    ``fit``/``transform`` per Gram block.

    Parameters
    ----------
    kernel : str, default "WeisfeilerLehman"
        A class name of ``grakel.kernels`` (e.g. ``"ShortestPath"``, ``"OddSth"``).
    params : mapping or None
        Its constructor arguments (GraKeL's own ``normalize`` is always False: see
        ``normalize``).
    node_label : str, default "label"
        Node attribute given to GraKeL as the node labels (every node must carry it).
    edge_label : str or None, default "label"
        Edge attribute given to GraKeL as the edge labels when every edge of the batch
        carries it; None: no edge labels.
    normalize : bool, default True
        ``k(G, G') / sqrt(k(G, G) k(G', G'))`` (``k(G, G) = 1``); see Notes.

    Notes
    -----
    Some GraKeL kernels depend on the fitted set: ``k(G, G')`` read from one Gram matrix
    differs from the same pair in another (``OddSth``, ``Propagation``, ``HadamardCode``,
    ``NeighborhoodHash``, ``GraphletSampling``, ...; ``PyramidMatch`` is not even
    reproducible on graphs of more than ``d + 1`` nodes, ARPACK's random start).  So with
    ``normalize=True`` the three values of ``k(G, G') / sqrt(k(G, G) k(G', G'))`` are
    taken from ONE GraKeL Gram matrix: a block between two different sets is read from
    the Gram matrix of their union (one ``fit_transform``: ``(|A| + |B|)^2`` evaluations
    and memory for a block of ``|A| |B|``), so that ``k(G, G) = 1`` holds for every kernel.

    Only the GraKeL classes of :data:`SET_INDEPENDENT` (exactly these classes, with a
    ``base_graph_kernel`` from the same list if any), whose values were checked not to
    depend on the set (a block of ``fit(B).transform(A)`` and GraKeL's ``diagonal()`` equal
    the union's Gram and diagonal, 0 difference on random labelled graphs with labels
    unseen by the other set), take the direct path: the raw block ``fit(B).transform(A)``
    divided by the self-similarities GraKeL computes in the same fit (``diagonal()``),
    ``|A| |B| + |A| + |B|`` evaluations and memory for the block only.  The values are the
    same; the time saved is that of the pair evaluations for the kernels evaluated pair by
    pair (``RandomWalkLabeled``, ``WeisfeilerLehmanOptimalAssignment``, ``SubgraphMatching``,
    ``ShortestPathAttr``), less for the feature-map kernels (``VertexHistogram``,
    ``WeisfeilerLehman``, ``ShortestPath``: per-graph features, then one product).  Every
    other name, and any other kernel object (a subclass too), takes the union.
    ``EdgeHistogram`` is set-independent too but stays on the union: GraKeL refuses to fit
    it on a set of graphs without edges, which the union with the other set can avoid;
    ``CoreFramework``'s ``diagonal()`` fails in GraKeL 0.1.11.

    A graph without any feature (self-similarity 0, e.g. ``ShortestPath`` on a graph
    without edges: no path) gets, as the empty graph of the WL kernels, one reserved
    feature: similarity 1 to such graphs, 0 to the others; so does a graph without nodes
    (which GraKeL refuses: it is not passed to GraKeL, its raw values are 0).  Non-finite
    values, or a negative self-similarity, are an error naming the kernel.
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

    def check_params(self) -> Self:
        """``normalize`` (True or False: ``normalize="no"`` was true); returns self."""
        check_bool(self.normalize, "normalize")
        return self

    def prepare(self, X: Samples) -> Any:
        import grakel

        check_graph_sequence(X)
        X = list(X)
        for i, G in enumerate(X):
            check_graph(G, i, self.node_label)
        has_edges = all(self.edge_label in d for G in X for _, _, d in G.edges(data=True))
        # a graph without nodes, which GraKeL refuses, is None: it has no feature (see Notes)
        full = [G for G in X if G.number_of_nodes()]
        prepared = iter(grakel.graph_from_networkx(
            full, node_labels_tag=self.node_label,
            edge_labels_tag=self.edge_label if has_edges else None)) if full else iter(())
        return [next(prepared) if G.number_of_nodes() else None for G in X]

    def _make(self):
        import grakel.kernels as gk

        try:
            cls = getattr(gk, self.kernel)
        except AttributeError:
            raise ValueError(f"GraKeL has no kernel {self.kernel!r}") from None
        return cls(normalize=False, **(self.params or {}))

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        # graphs without nodes (None) have no feature: a raw value 0 with every graph, then
        # the reserved feature of the normalisation (GraKeL is given the others only)
        same = A is B
        full_a = np.array([g is not None for g in A], dtype=bool)
        full_b = full_a if same else np.array([g is not None for g in B], dtype=bool)
        A1 = [g for g in A if g is not None]
        B1 = A1 if same else [g for g in B if g is not None]
        K = np.zeros((len(A), len(B)))
        dA, dB = np.zeros(len(A)), np.zeros(len(B))
        if A1 and B1:
            K1, dA1, dB1 = self._raw_block(A1, B1, same)
            K[np.ix_(full_a, full_b)] = K1
            if self.normalize:
                dA[full_a], dB[full_b] = dA1, dB1
        elif self.normalize:  # only one side has graphs with nodes: their own diagonal
            for X1, d, full in ((A1, dA, full_a), (B1, dB, full_b)):
                if X1:
                    d[full] = np.diag(self._finite(self._make().fit_transform(X1)))
        if not self.normalize:
            return K
        K = self._normalised(K, dA, dA if same else dB)
        if same:
            np.fill_diagonal(K, 1.0)
        return K

    def _raw_block(self, A, B, same):
        """GraKeL's raw block between two non-empty lists of graphs with nodes, and (with
        ``normalize``) the raw self-similarities of their graphs: ``(K, dA, dB)``."""
        k = self._make()
        if not self.normalize:
            k.fit(B)
            return self._finite(k.transform(A)), None, None
        if same:
            K = self._finite(k.fit_transform(A))
            d = np.diag(K)
            return K, d, d
        if _set_independent(type(k), self.params or {}):
            # k(a, b) does not depend on the set: the raw block and the self-similarities GraKeL
            # computes in the same fit (|A| |B| + |A| + |B| evaluations) are the union's values
            K = self._finite(k.fit(B).transform(A))
            dB, dA = k.diagonal()  # (fitted, transformed); ShortestPath's first is a column
            return K, self._finite(dA).ravel(), self._finite(dB).ravel()
        # Any other kernel: one Gram matrix and its own diagonal.  A block of fit(B).transform(A)
        # divided by diagonals of other fits had k(x, x) != 1 for set-dependent kernels (e.g.
        # OddSth), so a block between two sets is read from the Gram of their union
        K = self._finite(k.fit_transform(list(A) + list(B)))
        d, n = np.diag(K), len(A)
        return K[:n, n:], d[:n], d[n:]

    def _normalised(self, K, dA, dB):
        """``K / sqrt(dA dB')`` (the one normalisation of every path): ``dA``, ``dB`` the raw
        self-similarities of the rows' and columns' graphs, checked >= 0; a graph without any
        feature (0) gets one reserved feature, as the WL kernels' empty graph."""
        d = dA if dA is dB else np.concatenate([dA, dB])
        if (d < 0).any():
            raise ValueError(f"the GraKeL kernel {self.kernel!r} gives a negative self-similarity k(G, G) for "
                             f"{int((d < 0).sum())} graph(s): it is not positive semi-definite on them "
                             f"(random walk kernels: lower the decay factor), so it cannot be normalised")
        noneA, noneB = dA == 0, dB == 0
        K = K / np.sqrt(np.outer(np.where(noneA, 1.0, dA), np.where(noneB, 1.0, dB)))
        K[np.ix_(noneA, noneB)] = 1.0
        return K

    def _finite(self, K):
        K = np.asarray(K, dtype=np.float64)
        if not np.isfinite(K).all():
            raise ValueError(f"the GraKeL kernel {self.kernel!r} returned non-finite values (NaN or inf) on "
                             f"these graphs; check its params, or use normalize=False / another kernel")
        return K

    def _raw_diag(self, A):
        return self._finite([0.0 if g is None else self._make().fit_transform([g])[0, 0] for g in A])

    def diag(self, A: Any) -> np.ndarray:
        if self.normalize:
            return np.ones(len(A))
        return self._raw_diag(A)
