"""Fused Gromov-Wasserstein (FGW) distance and FGW-barycenter decoding (POT).

A labelled graph becomes a pair ``(F, C)``: ``F`` the one-hot node labels over an
alphabet (``n x |A|``), ``C`` the structure matrix holding the edge weights (bond orders for
molecule graphs of sprokr-chem; 1 for unlabelled edges).  The FGW distance mixes the
feature cost ``|F_i - F'_j|^2`` and the structure cost ``|C_ik - C'_jl|^2`` with weight
``alpha`` on the structure (POT's convention).

:class:`FGWBarycenterDecoder` predicts a NEW graph for each query: it takes the training
graphs with the K largest weights ``alpha_i(x)`` and returns their FGW barycenter (Brogat-
Motte et al., ICML 2022), decoded into a graph (node label = argmax of the barycenter
features, bond order = the structure value rounded to the nearest order, no edge below
0.5), with ``G.graph["smiles"]`` set when sprokr-chem is installed and the graph sanitises.
"""
from __future__ import annotations

import numbers

import networkx as nx
import numpy as np

from sprokr.utils import check_random_state, num_samples, take
from sprokr.decoders import Decoder

__all__ = ["graph_to_fgw", "fgw_to_graph", "fgw_distance", "FGWBarycenterDecoder", "label_alphabet"]


def label_alphabet(graphs, node_label="label"):
    """Sorted list of the node labels occurring in ``graphs``."""
    labels = {str(d[node_label]) for G in graphs for _, d in G.nodes(data=True)}
    return sorted(labels)


def graph_to_fgw(G, alphabet, node_label="label", edge_label="label"):
    """``(F, C)``: one-hot node features over ``alphabet`` and the edge-weight matrix."""
    pos = {a: i for i, a in enumerate(alphabet)}
    nodes = list(G.nodes)
    idx = {v: i for i, v in enumerate(nodes)}
    F = np.zeros((len(nodes), len(alphabet)))
    for i, v in enumerate(nodes):
        lab = str(G.nodes[v][node_label])
        if lab not in pos:
            raise ValueError(f"node label {lab!r} is not in the alphabet {alphabet}")
        F[i, pos[lab]] = 1.0
    C = np.zeros((len(nodes), len(nodes)))
    for u, v, d in G.edges(data=True):
        w = float(d.get(edge_label, 1.0)) if edge_label else 1.0
        C[idx[u], idx[v]] = C[idx[v], idx[u]] = w
    return F, C


def fgw_to_graph(F, C, alphabet, node_label="label", edge_label="label",
                 orders=(1.0, 1.5, 2.0, 3.0), threshold=0.5):
    """Graph from barycenter features and structure: argmax labels, nearest bond orders."""
    G = nx.Graph()
    lab = np.asarray(F).argmax(axis=1)
    for i, a in enumerate(lab):
        G.add_node(i, **{node_label: alphabet[a]})
    C = (np.asarray(C) + np.asarray(C).T) / 2
    orders = np.asarray(orders, dtype=float)
    iu, ju = np.triu_indices(C.shape[0], k=1)
    w = C[iu, ju]
    keep = w >= threshold
    near = orders[np.abs(w[keep, None] - orders[None, :]).argmin(axis=1)]
    for u, v, o in zip(iu[keep], ju[keep], near):
        G.add_edge(int(u), int(v), **{edge_label: int(o) if float(o).is_integer() else float(o)})
    return G


def fgw_distance(G1, G2, alpha=0.5, alphabet=None, node_label="label", edge_label="label"):
    """FGW distance between two labelled graphs (uniform node weights)."""
    import ot

    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    alphabet = alphabet or label_alphabet([G1, G2], node_label)
    F1, C1 = graph_to_fgw(G1, alphabet, node_label, edge_label)
    F2, C2 = graph_to_fgw(G2, alphabet, node_label, edge_label)
    if F1.shape[0] == 0 or F2.shape[0] == 0:
        raise ValueError("FGW distance needs non-empty graphs")
    M = ot.dist(F1, F2)
    p, q = ot.unif(F1.shape[0]), ot.unif(F2.shape[0])
    return float(ot.gromov.fused_gromov_wasserstein2(M, C1, C2, p, q, loss_fun="square_loss",
                                                     alpha=alpha))


class FGWBarycenterDecoder(Decoder):
    """Decode a graph as the FGW barycenter of the training graphs with the largest weights.

    Parameters
    ----------
    n_neighbors : int, default 5
        K: how many training graphs enter each barycenter.
    alpha : float in [0, 1], default 0.5
        FGW trade-off (weight of the structure term).
    weights : {"auto", "alpha", "projection"}
        ``"alpha"``: the ridge weights ``alpha(x)`` over the training outputs; available when
        the output side is exact (IOKR, SIOKR), where the model's coordinates ARE alpha(x).
        ``"projection"``: for sketched outputs, the K best-scoring training outputs and the
        weights of the best approximation of ``h(x)`` in their span
        (``K_SS w = s``, clipped to >= 0).  ``"auto"``: alpha when available.
    max_iter : int
        Barycenter iterations (POT's ``fgw_barycenters``).
    node_label, edge_label : str
    to_smiles : bool
        Add ``G.graph["smiles"]`` (None when the graph does not sanitise); needs sprokr-chem.
    random_state : int, optional

    ``decode`` returns a list of networkx graphs (one per query).  The barycenter has as
    many nodes as the heaviest graph and is initialised from it, so the barycenter of a
    single graph is that graph.
    """

    name = "fgw_barycenter"
    #: the model hands over alpha(x) with the default candidates (exact weights)
    needs_weights = True

    def __init__(self, n_neighbors=5, alpha=0.5, weights="auto", max_iter=50,
                 node_label="label", edge_label="label", to_smiles=True, random_state=0):
        self.n_neighbors = n_neighbors
        self.alpha = alpha
        self.weights = weights
        self.max_iter = max_iter
        self.node_label = node_label
        self.edge_label = edge_label
        self.to_smiles = to_smiles
        self.random_state = random_state

    def _check(self):
        if not isinstance(self.n_neighbors, numbers.Integral) or self.n_neighbors < 1:
            raise ValueError(f"n_neighbors must be a positive int, got {self.n_neighbors!r}")
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha must lie in [0, 1], got {self.alpha!r}")
        if self.weights not in ("auto", "alpha", "projection"):
            raise ValueError(f"weights must be 'auto', 'alpha' or 'projection', got {self.weights!r}")

    def neighbor_weights(self, H, index, weights=None):
        """Per query: indices into ``index.candidates`` and weights summing to 1.

        Parameters
        ----------
        H : ndarray (n_q, d)
            Query coordinates in the model's output basis (those of ``index``).
        index : CandidateIndex
            The candidate graphs, embedded by the model (``index.kernel``: output kernel).
        weights : ndarray (n_q, n_candidates), optional
            ``alpha(x)`` over the candidates -- given by IOKR-family models when the
            candidates are their distinct training outputs.

        Returns
        -------
        idx : ndarray (n_q, K) of int, W : ndarray (n_q, K)
        """
        self._check()
        K = min(self.n_neighbors, len(index))
        mode = self.weights
        if mode == "auto":
            mode = "alpha" if weights is not None else "projection"
        if mode == "alpha":
            if weights is None:
                raise ValueError("weights='alpha' needs alpha(x) over the training outputs: available "
                                 "with the default candidates (the training outputs) of an IOKR-family "
                                 "model; use weights='projection'")
            A = np.asarray(weights, dtype=np.float64)
            idx = np.argpartition(-A, K - 1, axis=1)[:, :K] if K < A.shape[1] else \
                np.broadcast_to(np.arange(A.shape[1]), A.shape).copy()
            W = np.take_along_axis(A, idx, axis=1)
        else:
            res = index.search(H, K)
            idx, s = res.indices, res.scores
            ky = index.kernel
            uniq = np.unique(idx)
            sel = ky.prepare_outputs(take(index.candidates, uniq))
            Kuu = np.asarray(ky.pairwise(sel, sel), dtype=np.float64)
            loc = np.searchsorted(uniq, idx)
            # the scores are <h, psi(c)> - k(c,c)/2: back to inner products
            inner = s if index.offsets is None else s - index.offsets[idx]
            W = np.empty_like(inner)
            for q in range(idx.shape[0]):  # K x K solves, per query
                Kss = Kuu[np.ix_(loc[q], loc[q])] + 1e-8 * np.eye(K)
                try:
                    W[q] = np.linalg.solve(Kss, inner[q])
                except np.linalg.LinAlgError:
                    W[q] = inner[q]
        W = np.maximum(W, 0.0)
        tot = W.sum(axis=1, keepdims=True)
        none = tot[:, 0] <= 0
        W[none] = 0.0
        W[none, 0] = 1.0  # no positive weight: fall back to the best neighbour
        if none.any() and mode == "alpha":
            idx[none, 0] = np.asarray(weights)[none].argmax(axis=1)
        W = W / W.sum(axis=1, keepdims=True)
        return idx, W

    def barycenter(self, graphs, weights, alphabet, rng=None):
        """FGW barycenter of ``graphs`` with ``weights`` as a networkx graph."""
        import ot

        merged = {}
        for g, wi in zip(graphs, np.asarray(weights, dtype=float)):  # same graph twice: add weights
            if wi > 0:
                merged[id(g)] = (g, merged.get(id(g), (g, 0.0))[1] + wi)
        graphs = [g for g, _ in merged.values()]
        w = np.array([wi for _, wi in merged.values()])
        w = w / w.sum()
        FC = [graph_to_fgw(g, alphabet, self.node_label, self.edge_label) for g in graphs]
        top = int(np.argmax(w))
        N = FC[top][0].shape[0]
        if N == 0:
            return nx.Graph()
        if len(graphs) == 1:
            F, C = FC[0]
        else:
            seed = int(check_random_state(rng).integers(2**31 - 1)) if rng is not None else 0
            F, C = ot.gromov.fgw_barycenters(
                N, [f for f, _ in FC], [c for _, c in FC], ps=[ot.unif(f.shape[0]) for f, _ in FC],
                lambdas=list(w), alpha=self.alpha, max_iter=self.max_iter, tol=1e-7,
                init_C=FC[top][1].copy(), init_X=FC[top][0].copy(), random_state=seed)
        return fgw_to_graph(F, C, alphabet, self.node_label, self.edge_label)

    def decode(self, H, index, top_k=None, weights=None):
        if top_k is not None:
            raise ValueError("the FGW barycenter decoder builds one graph per query; top_k is not "
                             "supported (use the 'candidates' decoder for rankings)")
        idx, W = self.neighbor_weights(H, index, weights)
        pool = index.candidates
        n_q = idx.shape[0]
        used = [pool[int(i)] for i in np.unique(idx)]
        for g in used:
            if not isinstance(g, nx.Graph):
                raise TypeError(f"the FGW barycenter decoder needs networkx graphs as outputs; "
                                f"got {type(g).__name__}")
        alphabet = label_alphabet(used, self.node_label)
        rng = check_random_state(self.random_state)
        to_smiles = None
        if self.to_smiles:
            try:
                from sprokr_chem import graph_to_smiles as to_smiles
            except ImportError:
                to_smiles = None
        out = []
        for q in range(n_q):  # one barycenter per query (an optimisation problem each)
            G = self.barycenter([pool[int(i)] for i in idx[q]], W[q], alphabet, rng)
            if to_smiles is not None:
                G.graph["smiles"] = to_smiles(G) if G.number_of_nodes() else None
            out.append(G)
        if num_samples(out) != n_q:  # pragma: no cover - defensive
            raise RuntimeError("one graph per query expected")
        return out
