"""FGW-barycenter decoding (POT).

Graphs are encoded as FGW pairs ``(F, C)`` by :mod:`sprokr_ot.encoding` (which also holds
the FGW distance and the input checks): node labels compared by value, undirected graphs.

:class:`FGWBarycenterDecoder` predicts a NEW graph for each query: it takes the training
graphs with the K largest weights ``alpha_i(x)`` and computes their FGW barycenter
(Brogat-Motte et al., ICML 2022) with POT's ``fgw_barycenters``, as POT's maintainers
advise (PythonOT/POT#547, #578): started from a real graph (the heaviest neighbour of the
chosen size, not POT's zero features), transport plans warm-started between iterations,
and stopped on the relative variation of the loss.  The node count is the weighted median
of the neighbours' sizes.  Decoding uses the transport plans, not only the averaged
structure: ``P_k[i, j] = sum_s w_s (T_s A_k^s T_s^T)_ij / (p_i p_j)`` is the weight with
which barycenter nodes ``i, j`` are joined by an order-``k`` edge in the neighbours;
edges are added by decreasing ``P`` (a maximum spanning tree first, so the graph is
connected, then every edge above 1/2) within each atom's valence, and each edge takes
its most probable order that the valences allow.  Molecule graphs (labels that are
element symbols, sprokr-chem installed) are then checked by RDKit sanitisation; a graph
that fails is repaired (bonds dropped from atoms over their valence, largest fragment
kept), and if that fails too the decoder returns the best neighbour instead.  Each graph
says which happened in ``G.graph["fgw_status"]`` (``"barycenter"``, ``"repaired"``,
``"neighbor"``) and the decoder counts them in ``counts_``.

With ``select="score"`` the proposals (barycenters from several starts) and the neighbours
compete by the model's own score, and for molecules a model-guided search
(:mod:`sprokr_ot.search`) then climbs from them by chemically valid single edits: the
barycenters are starting points, the model's score decides (``search_steps``,
``search_beam``, ``train_margin``).
"""
from __future__ import annotations

import collections.abc
import numbers
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike

from sprokr.utils import check_bool, check_integer, check_random_state, is_real, num_samples, take
from sprokr.decoders import Decoder

from .encoding import alphabet_index, check_alpha, check_fgw_graph, label_alphabet, to_fgw
from .search import ModelScore, model_guided_search

if TYPE_CHECKING:  # imported for the annotations only
    from sprokr.decoders.candidates import CandidateIndex
    from sprokr.types import RandomStateLike

__all__ = ["FGWBarycenterDecoder", "edge_order_weights", "decode_edges", "repair_molecule"]


def _max_valence(label):
    """Largest usual valence of an atom label like ``"C"``, ``"N+"``, ``"O-"`` (RDKit's
    default valence of the isoelectronic neutral element), or None when ``label`` is not an
    element symbol."""
    import re

    from rdkit import Chem

    m = re.match(r"^([A-Z][a-z]?)(\d*[+-]+|[+-]\d*)?$", str(label))
    if not m:
        return None
    pt = Chem.GetPeriodicTable()
    try:
        z = pt.GetAtomicNumber(m.group(1))
    except Exception:  # RDKit raises RuntimeError for unknown symbols
        return None
    ch = m.group(2) or ""
    if ch:
        digits = ch.replace("+", "").replace("-", "")
        z -= (1 if "+" in ch else -1) * (int(digits) if digits else 1)
    if z <= 0:
        return 0
    vals = [v for v in pt.GetValenceList(z) if v >= 0]
    return max(vals) if vals else 0


def _weighted_median(values, weights):
    """Smallest value whose cumulative weight reaches half the total."""
    values, weights = np.asarray(values), np.asarray(weights, dtype=float)
    o = np.argsort(values, kind="stable")
    c = np.cumsum(weights[o])
    return values[o][int(np.searchsorted(c, 0.5 * c[-1] - 1e-12))]


def edge_order_weights(T: Sequence[np.ndarray], p: np.ndarray, structures: Sequence[np.ndarray], lambdas: np.ndarray,
                       orders: Sequence[float]) -> np.ndarray:
    """``P[k, i, j]``: weight with which barycenter nodes ``i, j`` are joined by an edge of
    order ``orders[k]`` in the graphs, through the transport plans.

    Parameters
    ----------
    T : list of ndarray (N, n_s)
        Transport plans from the barycenter to each graph.
    p : ndarray (N,)
        Barycenter node masses.
    structures : list of ndarray (n_s, n_s)
        The graphs' edge-weight matrices.
    lambdas : ndarray (S,)
        Graph weights (sum 1).
    orders : sequence of float

    Returns
    -------
    ndarray (len(orders), N, N), entries in [0, 1], zero diagonal.
    """
    N = len(p)
    P = np.zeros((len(orders), N, N))
    norm = np.outer(p, p)
    for Ts, Cs, ws in zip(T, structures, lambdas):
        Ts = np.asarray(Ts)
        for k, o in enumerate(orders):
            A = (np.abs(Cs - o) < 1e-9).astype(float)
            P[k] += ws * (Ts @ A @ Ts.T)
    P /= np.maximum(norm, 1e-300)
    np.clip(P, 0.0, 1.0, out=P)
    for Pk in P:
        np.fill_diagonal(Pk, 0.0)
    return P


def decode_edges(P: np.ndarray, orders: Sequence[float], caps: ArrayLike | None = None, threshold: float = 0.5,
                 connect: bool = True) -> dict[tuple[int, int], float]:
    """Edges ``{(i, j): order}`` from edge-order weights ``P`` (see :func:`edge_order_weights`).

    Edges are taken by decreasing total weight ``sum_k P[k]``: first those joining two
    components (a maximum spanning forest, when ``connect``), then every other edge of
    weight >= ``threshold``, each only if both end points have a free valence (``caps``,
    None: unbounded).  Then each edge is raised to its most probable order, most confident
    first, as far as the valences allow.

    Parameters
    ----------
    P : ndarray of shape (len(orders), N, N)
        Edge-order weights of the ``N`` nodes (:func:`edge_order_weights`).
    orders : sequence of float
        The edge orders, ``P``'s first axis; the smallest is the order an edge is added with.
    caps : array-like of shape (N,), optional
        Largest total edge order (valence) of each node (None: unbounded).
    threshold : float, default 0.5
        Smallest total weight of an edge beyond the spanning forest.
    connect : bool, default True
        First join the components by a maximum spanning forest.
    """
    K, N, _ = P.shape
    caps = np.full(N, np.inf) if caps is None else np.asarray(caps, dtype=float)
    Pe = P.sum(axis=0)
    iu, ju = np.triu_indices(N, k=1)
    order = np.argsort(-Pe[iu, ju], kind="stable")
    used = np.zeros(N)
    parent = list(range(N))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    edges = {}
    base = min(orders)
    passes = ((True, 0.0), (False, threshold)) if connect else ((False, threshold),)
    for join_only, thr in passes:
        for e in order:
            i, j = int(iu[e]), int(ju[e])
            if Pe[i, j] <= 0 or Pe[i, j] < thr:
                break
            if (i, j) in edges:
                continue
            ri, rj = find(i), find(j)
            if join_only and ri == rj:
                continue
            if used[i] + base <= caps[i] and used[j] + base <= caps[j]:
                edges[(i, j)] = base
                used[i] += base
                used[j] += base
                parent[ri] = rj
    ups = []
    for (i, j) in edges:
        k = int(np.argmax(P[:, i, j]))
        if orders[k] > base:
            ups.append((P[k, i, j] / max(Pe[i, j], 1e-300), i, j, orders[k]))
    for _, i, j, o in sorted(ups, key=lambda u: -u[0]):
        # the highest order <= o that both valences allow
        for cand in sorted((x for x in orders if base < x <= o), reverse=True):
            add = cand - edges[(i, j)]
            if used[i] + add <= caps[i] and used[j] + add <= caps[j]:
                edges[(i, j)] = cand
                used[i] += add
                used[j] += add
                break
    return edges


def repair_molecule(G: nx.Graph, to_smiles: Callable[[nx.Graph], str | None],
                    caps: np.ndarray | Mapping[Any, float] | None,
                    edge_label: str = "label") -> nx.Graph | None:
    """A copy of ``G`` that sanitises, or None: bonds lowered/dropped at atoms over their
    valence (weakest first), then the largest connected fragment kept.

    Parameters
    ----------
    G : networkx.Graph
        A molecule graph with bond-order edge labels (not modified).
    to_smiles : callable
        ``to_smiles(graph)``: its SMILES, or None when it does not sanitise.
    caps : ndarray, mapping or None
        Largest valence of each node, indexed by node (None: no valence repair).
    edge_label : str, default "label"
        Edge attribute holding the bond order (1 when missing).
    """
    H = G.copy()
    if caps is not None:
        for v in H.nodes:
            cap = caps[v]
            while sum(float(d.get(edge_label, 1)) for _, _, d in H.edges(v, data=True)) > cap:
                u, w, d = max(H.edges(v, data=True), key=lambda e: float(e[2].get(edge_label, 1)))
                o = float(d.get(edge_label, 1))
                if o > 1:
                    H.edges[u, w][edge_label] = int(o - 1) if float(o - 1).is_integer() else o - 1
                else:
                    H.remove_edge(u, w)
    if H.number_of_nodes() and not nx.is_connected(H):
        H = H.subgraph(max(nx.connected_components(H), key=len)).copy()
    return H if H.number_of_nodes() and to_smiles(H) is not None else None


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
    n_nodes : {"median", "heaviest"}
        Node count of the barycenter: the weighted median of the neighbours' sizes, or the
        size of the heaviest neighbour.
    max_iter : int
        Barycenter iterations (POT's ``fgw_barycenters``).
    tol : float
        Stop when the barycenter loss varies by less than ``tol`` (relative).
    threshold : float in (0, 1]
        Edges of weight >= ``threshold`` are kept (beyond the spanning tree).
    n_starts : int, default 3
        Proposals per query: barycenters started from each of the ``n_starts`` heaviest
        neighbours (with that neighbour's size), besides the weighted-median one.
    select : {"score", "median"}
        ``"score"``: return the proposal -- or neighbour -- with the best model score
        ``sum_i alpha_i k(y_i, G) - k(G, G)/2`` (the decoding criterion of IOKR, evaluated
        with the output kernel on the new graph; with ``weights="projection"`` the K
        neighbours' weights stand in for alpha), after the search below.  ``"median"``:
        the weighted-median barycenter only.
    search_steps : int, default 10
        Molecule graphs with ``select="score"``: rounds of the model-guided search
        (:func:`sprokr_ot.search.model_guided_search`) that starts from the barycenter
        proposals and the K neighbours and moves by chemically valid single edits while
        the model score improves; 0 turns it off (then the best proposal or neighbour is
        returned).  Other graphs are never searched.
    search_beam : int, default 3
        Molecules the search expands at each round.
    train_margin : float >= 0, default 0.2
        Subtracted from the score of training graphs (the neighbours, and training
        molecules the search meets) when they compete with new graphs: ``h(x)`` nearly
        interpolates the training outputs, so a training graph's score is inflated by its
        own weight ``alpha_j(x)``.  ``inf``: never return a training graph when a new one
        is found.  The defaults were chosen by validation on QM9 (docs/molecules.md).
    repair : bool
        For molecule graphs: repair graphs that do not sanitise, else return the best
        neighbour (``G.graph["fgw_status"]`` says which).
    node_label, edge_label : str
    to_smiles : bool
        Add ``G.graph["smiles"]`` (None when the graph does not sanitise); needs sprokr-chem.
    random_state : int, optional

    Attributes
    ----------
    counts_ : dict
        After ``decode``: how many graphs were returned as decoded barycenters
        (``"barycenter"``), repaired barycenters (``"repaired"``) or, repair having
        failed, as the best neighbour (``"neighbor"``); with ``select="score"`` also
        how often a training graph scored best and was returned (``"selected_neighbor"``)
        and, when the search runs, how often it returned a new molecule beyond the
        proposals (``"searched"``).

    ``decode`` returns a list of networkx graphs (one per query).  The barycenter of a
    single graph is that graph.
    """

    name = "fgw_barycenter"
    #: the model hands over alpha(x) with the default candidates (exact weights)
    needs_weights = True

    def __init__(self, n_neighbors: int = 5, alpha: float = 0.5, weights: str = "auto", n_nodes: str = "median",
                 max_iter: int = 50, tol: float = 1e-5, threshold: float = 0.5, n_starts: int = 3,
                 select: str = "score", search_steps: int = 10, search_beam: int = 3, train_margin: float = 0.2,
                 repair: bool = True, node_label: str = "label", edge_label: str = "label",
                 to_smiles: bool = True, random_state: RandomStateLike = 0) -> None:
        self.n_neighbors = n_neighbors
        self.alpha = alpha
        self.weights = weights
        self.n_nodes = n_nodes
        self.max_iter = max_iter
        self.tol = tol
        self.threshold = threshold
        self.n_starts = n_starts
        self.select = select
        self.search_steps = search_steps
        self.search_beam = search_beam
        self.train_margin = train_margin
        self.repair = repair
        self.node_label = node_label
        self.edge_label = edge_label
        self.to_smiles = to_smiles
        self.random_state = random_state

    def _check(self):
        ints = {"n_neighbors": 1, "max_iter": 1, "n_starts": 0, "search_steps": 0, "search_beam": 1}
        for name, low in ints.items():  # (a bool is refused: n_neighbors=True would mean 1)
            check_integer(getattr(self, name), name, low)
        check_alpha(self.alpha)
        if self.weights not in ("auto", "alpha", "projection"):
            raise ValueError(f"weights must be 'auto', 'alpha' or 'projection', got {self.weights!r}")
        if self.n_nodes not in ("median", "heaviest"):
            raise ValueError(f"n_nodes must be 'median' or 'heaviest', got {self.n_nodes!r}")
        if self.select not in ("score", "median"):
            raise ValueError(f"select must be 'score' or 'median', got {self.select!r}")
        if not is_real(self.tol) or not (np.isfinite(self.tol) and self.tol >= 0):
            raise ValueError(f"tol must be a finite number >= 0, got {self.tol!r}")
        if not is_real(self.train_margin) or not self.train_margin >= 0:
            raise ValueError(f"train_margin must be a number >= 0 (inf allowed), got {self.train_margin!r}")
        if not is_real(self.threshold) or not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must lie in (0, 1], got {self.threshold!r}")
        # flags, not truth values: repair="no" or to_smiles="no" was true
        check_bool(self.repair, "repair")
        check_bool(self.to_smiles, "to_smiles")

    def validate(self) -> FGWBarycenterDecoder:
        """Check the parameters (clear errors naming them); a model calls it at ``fit``."""
        self._check()
        return self

    def neighbor_weights(self, H: np.ndarray, index: CandidateIndex,
                         weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
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
            # the scores are <h, psi(c)> plus the offsets -k(c,c)/2 (none for a normalised
            # kernel: the scores are then the inner products already): back to inner products
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

    def _chem(self, alphabet):
        """``(to_smiles, caps)`` for molecule graphs, ``(None, None)`` otherwise."""
        try:
            from sprokr_chem import graph_to_smiles
        except ImportError:
            return None, None
        caps = [_max_valence(a) for a in alphabet]
        if any(c is None for c in caps):
            return None, None
        return graph_to_smiles, np.asarray(caps, dtype=float)

    def barycenter(self, graphs: Sequence[nx.Graph], weights: ArrayLike, alphabet: Sequence[Any],
                   rng: np.random.Generator | None = None, chem: tuple[Any, Any] | None = None,
                   start: int | None = None) -> nx.Graph:
        """FGW barycenter of ``graphs`` with ``weights``, decoded as a networkx graph.

        Parameters
        ----------
        graphs : sequence of networkx.Graph
            At least one undirected graph, every node labelled (``node_label``) with a label
            of ``alphabet``, edge labels (``edge_label``) finite numbers.  The same graph
            object given twice counts once, with the sum of its weights.  Graphs without
            nodes have no node to carry their mass: they are left out of the barycenter,
            unless the heaviest graph or the size rule picks one (then that empty graph is
            returned).
        weights : array-like (len(graphs),)
            Finite weights >= 0, not all zero (normalised to sum 1); graphs of weight 0 are
            left out (except ``start``).
        alphabet : sequence of labels
            Node labels of the one-hot features (list, tuple or 1-D array), compared by
            value; the decoded graph's node labels are its entries (so
            :func:`label_alphabet` of the training graphs gives them their type).
        rng : numpy.random.Generator, optional
            Seed source of POT's solver.
        chem : tuple, optional
            ``(to_smiles, caps)`` from the alphabet (computed when None).
        start : int, optional
            Position in ``graphs`` of the graph to start from, whose size the barycenter
            takes (default: the ``n_nodes`` rule, started from the heaviest graph of that
            size).

        Returns
        -------
        networkx.Graph
            For molecule graphs the result sanitises, or is the heaviest neighbour
            (``graph["fgw_status"]``).
        """
        import ot

        self._check()
        graphs, given = self._check_barycenter_inputs(graphs, weights, start)
        alphabet, pos = alphabet_index(alphabet)
        for i, g in enumerate(graphs):
            check_fgw_graph(g, f"graphs[{i}]", self.node_label, self.edge_label, (alphabet, pos))
        chem = self._chem(alphabet) if chem is None else chem
        to_smiles, caps = chem
        start_graph = None if start is None else graphs[start]
        merged: dict[Any, Any] = {}
        for g, wi in zip(graphs, given):  # same graph twice: add weights
            if wi > 0 or g is start_graph:
                merged[id(g)] = (g, merged.get(id(g), (g, 0.0))[1] + wi)
        graphs = [g for g, _ in merged.values()]
        w = np.array([wi for _, wi in merged.values()])
        w = w / w.sum()
        top = int(np.argmax(w))
        sizes = np.array([g.number_of_nodes() for g in graphs])
        if start_graph is not None:
            start = [id(g) for g in graphs].index(id(start_graph))
            N = int(sizes[start])
        else:
            N = int(sizes[top]) if self.n_nodes == "heaviest" else int(_weighted_median(sizes, w))
            same = np.flatnonzero(sizes == N)
            start = int(same[np.argmax(w[same])])  # POT#547: start from a real graph, not zeros
        if sizes[top] and N and (sizes == 0).any():
            # an empty graph has no node to carry its mass (POT fails on it): it leaves the problem
            keep = np.flatnonzero(sizes > 0)
            top, start = int(np.searchsorted(keep, top)), int(np.searchsorted(keep, start))
            graphs, w, sizes = [graphs[i] for i in keep], w[keep] / w[keep].sum(), sizes[keep]
        if len(graphs) == 1 or sizes[top] == 0 or N == 0:  # nothing to average
            G = graphs[start if sizes[top] and not N else top].copy()  # N == 0: the chosen empty graph
            G.graph["fgw_status"] = "barycenter"
            return G
        FC = [to_fgw(g, alphabet, pos, self.node_label, self.edge_label, "graphs") for g in graphs]
        seed = int(check_random_state(rng).integers(2**31 - 1)) if rng is not None else 0
        X, C, log = ot.gromov.fgw_barycenters(
            N, [f for f, _ in FC], [c for _, c in FC], ps=[ot.unif(n) for n in sizes],
            lambdas=list(w), alpha=self.alpha, max_iter=self.max_iter, tol=self.tol,
            stop_criterion="loss", warmstartT=True,  # POT#578 / #547
            init_C=FC[start][1].copy(), init_X=FC[start][0].copy(), random_state=seed, log=True)
        orders = sorted({float(o) for _, c in FC for o in np.unique(c) if o > 0}) or [1.0]
        P = edge_order_weights(log["T"], np.asarray(log["p"]), [c for _, c in FC], w, orders)
        lab = np.asarray(X).argmax(axis=1)
        edges = decode_edges(P, orders, None if caps is None else caps[lab], self.threshold)
        G = nx.Graph()
        for i, a in enumerate(lab):
            G.add_node(i, **{self.node_label: alphabet[a]})
        for (i, j), o in edges.items():
            G.add_edge(i, j, **{self.edge_label: int(o) if float(o).is_integer() else float(o)})
        G.graph["fgw_status"] = "barycenter"
        if to_smiles is not None and to_smiles(G) is None:
            H = repair_molecule(G, to_smiles, None if caps is None else caps[lab], self.edge_label) \
                if self.repair else None
            if H is None:
                H = graphs[top].copy()
                H.graph["fgw_status"] = "neighbor"
            else:
                H.graph["fgw_status"] = "repaired"
            G = H
        return _as_training_graph(G, graphs[top])

    @staticmethod
    def _check_barycenter_inputs(graphs, weights, start):
        """``(graphs, weights)`` as a list and a float array, checked (clear errors before POT runs)."""
        if isinstance(graphs, nx.Graph) or not isinstance(graphs, collections.abc.Iterable):
            raise TypeError(f"graphs must be a sequence of networkx graphs, got {type(graphs).__name__}")
        graphs = list(graphs)
        if not graphs:
            raise ValueError("graphs is empty: the barycenter needs at least one graph")
        try:
            w = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"weights must be numbers, one per graph; got {weights!r}") from None
        if w.ndim != 1 or w.size != len(graphs):
            raise ValueError(f"weights must hold one number per graph: {len(graphs)} graphs, "
                             f"weights of shape {w.shape}")
        if not np.isfinite(w).all() or (w < 0).any():
            raise ValueError(f"weights must be finite and >= 0, got {w.tolist()}")
        if not w.sum() > 0:
            raise ValueError("weights are all zero: the barycenter needs a positive weight")
        if start is not None and (isinstance(start, (bool, np.bool_)) or not isinstance(start, numbers.Integral)
                                  or not 0 <= start < len(graphs)):
            raise ValueError(f"start must be None or a position in graphs (0..{len(graphs) - 1}), got {start!r}")
        return graphs, w

    def decode(self, H: np.ndarray, index: CandidateIndex, top_k: int | None = None,
               weights: np.ndarray | None = None) -> Any:
        if top_k is not None:
            raise ValueError("the FGW barycenter decoder builds one graph per query; top_k is not "
                             "supported (use the 'candidates' decoder for rankings)")
        if np.shape(H)[0] == 0:  # zero queries: no graph to build
            self.counts_ = {"barycenter": 0, "repaired": 0, "neighbor": 0}
            return []
        idx, W = self.neighbor_weights(H, index, weights)
        pool = index.candidates
        n_q = idx.shape[0]
        used = [pool[int(i)] for i in np.unique(idx)]
        for i, g in zip(np.unique(idx), used):
            if not isinstance(g, nx.Graph):
                raise TypeError(f"the FGW barycenter decoder needs networkx graphs as outputs; "
                                f"got {type(g).__name__}")
            # named by their position among the candidates, before any barycenter is computed
            check_fgw_graph(g, f"candidate {int(i)}", self.node_label, self.edge_label)
        alphabet = label_alphabet(used, self.node_label)
        chem = self._chem(alphabet)
        rng = check_random_state(self.random_state)
        to_smiles = chem[0] if self.to_smiles else None
        if self.to_smiles and to_smiles is None:
            try:
                from sprokr_chem import graph_to_smiles as to_smiles  # type: ignore[no-redef]
            except ImportError:
                to_smiles = None
        out = []
        counts = {"barycenter": 0, "repaired": 0, "neighbor": 0}
        scorer = self._scorer(index, weights, idx, W) if self.select == "score" else None
        if scorer is not None:
            counts["selected_neighbor"] = 0
        search = self._search_context(used, index, chem) if scorer is not None and self.search_steps else None
        if search is not None:
            counts["searched"] = 0
        for q in range(n_q):  # one barycenter per query (an optimisation problem each)
            nbrs = [pool[int(i)] for i in idx[q]]
            G = self.barycenter(nbrs, W[q], alphabet, rng, chem)
            if scorer is not None:
                G = self._select(q, G, nbrs=nbrs, w=W[q], alphabet=alphabet, rng=rng, chem=chem, score=scorer,
                                 search=search)
            counts[G.graph["fgw_status"]] += 1
            if to_smiles is not None:
                G.graph["smiles"] = to_smiles(G) if G.number_of_nodes() else None
            out.append(G)
        if num_samples(out) != n_q:  # pragma: no cover - defensive
            raise RuntimeError("one graph per query expected")
        self.counts_ = counts
        return out

    def _scorer(self, index, weights, idx, W):
        """:class:`ModelScore` of new graphs for each query (None without an output kernel)."""
        ky = index.kernel
        if ky is None:
            return None
        pool = index.candidates
        half = 0.0 if index.offsets is None else 0.5  # offsets: the kernel is not normalised
        if weights is not None:
            A = np.asarray(weights, dtype=np.float64)
            rows = np.flatnonzero(np.abs(A).max(axis=0) > 0)
            coef = A[:, rows]
        else:  # projection weights over the K neighbours
            rows = np.unique(idx)
            coef = np.zeros((idx.shape[0], rows.size))
            np.put_along_axis(coef, np.searchsorted(rows, idx), W, axis=1)
        return ModelScore(ky, take(pool, rows), coef, half)

    def _search_context(self, used, index, chem):
        """What the model-guided search needs (molecule graphs only, else None): edit labels,
        bond orders, valences, a sanitiser and the canonical SMILES of the training graphs."""
        to_smiles, caps = chem
        if to_smiles is None:
            return None
        from rdkit import Chem
        from sprokr_chem import graph_to_mol, mol_to_graph

        labels = label_alphabet(used, self.node_label)
        orders = sorted({float(d.get(self.edge_label, 1)) for g in used for _, _, d in g.edges(data=True)}) or [1.0]

        def canonical(G):
            mol = graph_to_mol(G, self.node_label, self.edge_label) if G.number_of_nodes() else None
            key = None if mol is None else Chem.MolToSmiles(mol)
            return None if key is None or "." in key else (key, mol_to_graph(mol))

        # canonical SMILES of the candidate pool, kept with the index (a model decodes over its
        # training outputs at every predict call); the index's cache is never saved
        key = ("fgw_pool_smiles", self.node_label, self.edge_label)
        train = index.cache.get(key)
        if train is None:
            train = index.cache[key] = {k for k in map(to_smiles, index.candidates) if k is not None}
        return {"labels": labels, "orders": orders, "canonical": canonical, "train": train,
                "caps": {lab: _max_valence(lab) for lab in labels}}

    def _select(self, q, G, *, nbrs, w, alphabet, rng, chem, score, search):
        """Best of the median barycenter, barycenters from the heaviest neighbours, the
        neighbours themselves and (``search_steps > 0``) the molecules the model-guided
        search reaches from them, by the model's score; training graphs lose ``train_margin``."""
        props = [G]
        for s in np.argsort(-np.asarray(w), kind="stable")[: self.n_starts]:
            props.append(self.barycenter(nbrs, w, alphabet, rng, chem, start=int(s)))
        props = [p for p in props if p.graph["fgw_status"] != "neighbor" and p.number_of_nodes()]
        if search is not None:
            return self._search(q, props + list(nbrs), max(g.number_of_nodes() for g in nbrs), score, search)
        n_bary = len(props)
        sc = score(q, props + list(nbrs))
        sc[n_bary:] -= self.train_margin
        best = int(np.argmax(sc))
        if best >= n_bary:
            out = nbrs[best - n_bary].copy()
            out.graph["fgw_status"] = "selected_neighbor"
            return out
        return props[best]

    def _search(self, q, starts, max_nodes, score, ctx):
        """Model-guided search from ``starts`` (proposals, neighbours), molecules of at most
        ``max_nodes`` atoms (the largest neighbour)."""
        train, margin = ctx["train"], self.train_margin
        keys = {}
        for p in starts:  # a start that wins keeps its status (training graphs: see below)
            c = ctx["canonical"](p)
            if c is not None:
                keys.setdefault(c[0], p.graph.get("fgw_status", "selected_neighbor"))
        G, _, info = model_guided_search(
            starts, lambda gs: score(q, gs), ctx["labels"], ctx["canonical"],
            orders=ctx["orders"], max_nodes=max_nodes, caps=ctx["caps"],
            beam=self.search_beam, max_steps=self.search_steps,
            penalty=(lambda k: margin if k in train else 0.0) if margin else None)
        status = "selected_neighbor" if info["key"] in train else \
            keys.get(info["key"], "selected_neighbor" if info["start"] else "searched")
        G = G.copy()
        G.graph["fgw_status"] = status
        return G


def _as_training_graph(G, like):
    """``G`` with the attributes of the training graphs (``like``): molecule graphs made by
    ``sprokr_chem.mol_to_graph`` carry aromaticity, H counts and bond orders, which the
    chemistry-aware WL kernel reads; a decoded graph gets them by a round trip through RDKit."""
    if G is like or "num_hs" not in next(iter(like.nodes.values()), {}) or "num_hs" in next(iter(G.nodes.values()), {}):
        return G
    try:
        from sprokr_chem import graph_to_mol, mol_to_graph
    except ImportError:
        return G
    mol = graph_to_mol(G, errors="none")
    if mol is None:
        return G
    out = mol_to_graph(mol)
    out.graph.update(G.graph)
    return out
