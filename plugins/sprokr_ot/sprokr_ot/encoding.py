"""Labelled graphs as FGW pairs and the fused Gromov-Wasserstein distance (POT).

A labelled graph becomes a pair ``(F, C)``: ``F`` the one-hot node labels over an
alphabet (``n x |A|``), ``C`` the structure matrix holding the edge weights (bond orders for
molecule graphs of sprokr-chem; 1 for unlabelled edges).  The FGW distance mixes the
feature cost ``|F_i - F'_j|^2`` and the structure cost ``|C_ik - C'_jl|^2`` with weight
``alpha`` on the structure (POT's convention).  Node labels are compared by value, as in
the WL kernels' tuple labelling: ``1``, ``1.0`` and ``np.int64(1)`` are one label, ``"1"``
another; graphs decoded over :func:`label_alphabet` of the training graphs carry the
training graphs' label values and types.  The graphs are undirected: a directed graph is
refused, as by the WL kernels (its direction would be lost silently).

The checks here (``check_fgw_graph``, ``check_alpha``, ...) are shared with the barycenter
decoder of :mod:`sprokr_ot.fgw`.
"""
from __future__ import annotations

import collections.abc
import numbers
from typing import Any, Sequence

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike

from sprokr.utils import is_real

__all__ = ["graph_to_fgw", "fgw_to_graph", "fgw_distance", "label_alphabet", "alphabet_index", "to_fgw",
           "check_alpha", "check_fgw_graph"]


def _label_key(value: Any) -> tuple[int, Any]:
    """What identifies a node label: its value, as in the WL kernels' tuple labelling.

    Numbers by value (``1``, ``1.0`` and ``np.int64(1)`` are one label), strings as they
    are (``"1"`` is another label than ``1``), booleans apart from numbers, anything else
    by its ``repr``.  The first item orders the kinds, so that keys of mixed labels sort.
    """
    if isinstance(value, (bool, np.bool_)):
        return (1, bool(value))
    if isinstance(value, (numbers.Real, np.integer, np.floating)):
        v = float(value)
        if np.isnan(v):  # NaN equals nothing: as a label it would match no other node
            raise ValueError("a node label is NaN; labels are compared by value and NaN equals nothing")
        return (0, v)
    if isinstance(value, str):
        return (2, str(value))
    return (3, repr(value))


def check_fgw_graph(G: Any, what: str, node_label: str, edge_label: str | None = None,
                 alphabet: tuple[list[Any], dict[tuple[int, Any], int]] | None = None) -> None:
    """Clear errors for a graph the FGW tools cannot take; ``what`` names it ("G1", "graphs[2]").
    ``alphabet``: ``(labels, positions)`` of :func:`alphabet_index`, holding every node label."""
    if not isinstance(G, nx.Graph):
        raise TypeError(f"{what} must be a networkx graph, got {type(G).__name__}")
    if G.is_directed():
        # as the WL kernels: the structure matrix is symmetric, a direction would be lost silently
        raise ValueError(f"{what} is directed: the FGW tools take undirected graphs "
                         f"(convert it with G.to_undirected())")
    for v, d in G.nodes(data=True):
        if node_label not in d:
            raise ValueError(f"{what}: node {v!r} has no {node_label!r} attribute "
                             f"(set node_label=... to the attribute holding the labels)")
        try:
            key = _label_key(d[node_label])
        except ValueError as exc:
            raise ValueError(f"{what}: node {v!r}: {exc}") from None
        if alphabet is not None and key not in alphabet[1]:
            raise ValueError(f"{what}: node {v!r} has the label {d[node_label]!r}, which is not in the alphabet "
                             f"{alphabet[0]}")
    if edge_label:
        for u, v, d in G.edges(data=True):
            if edge_label in d:
                _edge_weight(d[edge_label], what, u, v, edge_label)


def _edge_weight(value: Any, what: str, u: Any, v: Any, edge_label: str) -> float:
    """An edge label as the finite number the structure matrix holds."""
    try:
        w = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: edge ({u!r}, {v!r}) has {edge_label}={value!r}; the FGW structure "
                         f"matrix takes numeric edge labels (bond orders, weights), or set "
                         f"edge_label=None for unlabelled edges") from None
    if not np.isfinite(w):
        raise ValueError(f"{what}: edge ({u!r}, {v!r}) has {edge_label}={value!r}; edge weights must be finite")
    return w


def alphabet_index(alphabet: Any) -> tuple[list[Any], dict[tuple[int, Any], int]]:
    """``(labels, position of each label key)`` of an alphabet given as any sequence."""
    if isinstance(alphabet, (str, bytes, collections.abc.Mapping)) \
            or not isinstance(alphabet, collections.abc.Iterable):
        raise TypeError(f"alphabet must be a sequence of node labels (a list, tuple or 1-D array), "
                        f"got {type(alphabet).__name__}")
    if isinstance(alphabet, np.ndarray):
        if alphabet.ndim != 1:
            raise ValueError(f"alphabet must be 1-D, got an array of shape {alphabet.shape}")
        labels = alphabet.tolist()  # numpy scalars as Python ones
    else:
        labels = list(alphabet)
    pos: dict[tuple[int, Any], int] = {}
    for i, a in enumerate(labels):
        try:
            key = _label_key(a)
        except ValueError as exc:
            raise ValueError(f"alphabet[{i}]: {exc}") from None
        if key in pos:
            raise ValueError(f"alphabet lists one label twice: {labels[pos[key]]!r} (position {pos[key]}) and "
                             f"{a!r} (position {i}); labels are compared by value")
        pos[key] = i
    return labels, pos


def label_alphabet(graphs: Sequence[nx.Graph], node_label: str = "label") -> list[Any]:
    """Sorted list of the distinct node labels occurring in ``graphs``.

    Labels are compared by value (``1`` and ``1.0`` are one label, ``"1"`` another) and
    kept as they occur (the first occurrence stands for equal ones), so graphs decoded over
    the alphabet carry labels of the training graphs' type.  Numbers sort first, then
    strings.

    Parameters
    ----------
    graphs : sequence of networkx.Graph
        The labelled graphs (not a single graph).
    node_label : str, default "label"
        Node attribute holding the label.
    """
    if isinstance(graphs, nx.Graph):
        raise TypeError("label_alphabet expects a sequence of graphs, not a single graph")
    found: dict[tuple[int, Any], Any] = {}
    for i, G in enumerate(graphs):
        check_fgw_graph(G, f"graph {i}", node_label)
        for _, d in G.nodes(data=True):
            found.setdefault(_label_key(d[node_label]), d[node_label])
    return [found[k] for k in sorted(found)]


def to_fgw(G: nx.Graph, labels: Sequence[Any], pos: dict[tuple[int, Any], int], node_label: str,
           edge_label: str | None, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``(F, C)`` of a checked graph (see :func:`check_fgw_graph`) over an alphabet indexed
    by :func:`alphabet_index` (``labels``, ``pos``); ``what`` names the graph in errors."""
    nodes = list(G.nodes)
    idx = {v: i for i, v in enumerate(nodes)}
    F = np.zeros((len(nodes), len(labels)))
    for i, v in enumerate(nodes):
        lab = G.nodes[v][node_label]
        j = pos.get(_label_key(lab))
        if j is None:
            raise ValueError(f"{what}: node {v!r} has the label {lab!r}, which is not in the alphabet {labels}")
        F[i, j] = 1.0
    C = np.zeros((len(nodes), len(nodes)))
    for u, v, d in G.edges(data=True):
        w = _edge_weight(d[edge_label], what, u, v, edge_label) if edge_label and edge_label in d else 1.0
        C[idx[u], idx[v]] = C[idx[v], idx[u]] = w
    return F, C


def graph_to_fgw(G: nx.Graph, alphabet: Sequence[Any], node_label: str = "label",
                 edge_label: str | None = "label") -> tuple[np.ndarray, np.ndarray]:
    """``(F, C)``: one-hot node features over ``alphabet`` and the edge-weight matrix.

    ``alphabet``: any sequence of labels (list, tuple, 1-D array), compared by value (see
    :func:`label_alphabet`).  Edges without ``edge_label`` (or every edge, when
    ``edge_label`` is None) weigh 1; edge labels must be finite numbers.

    Parameters
    ----------
    G : networkx.Graph
        An undirected labelled graph.
    alphabet : sequence
        The node labels, in the order of ``F``'s columns.
    node_label : str, default "label"
        Node attribute holding the label.
    edge_label : str or None, default "label"
        Edge attribute holding the edge weight (None: every edge weighs 1).
    """
    labels, pos = alphabet_index(alphabet)
    check_fgw_graph(G, "G", node_label, edge_label, (labels, pos))
    return to_fgw(G, labels, pos, node_label, edge_label, "G")


def fgw_to_graph(F: np.ndarray, C: np.ndarray, alphabet: Sequence[Any], node_label: str = "label",
                 edge_label: str = "label", orders: ArrayLike = (1.0, 1.5, 2.0, 3.0),
                 threshold: float = 0.5) -> nx.Graph:
    """Graph from barycenter features and structure: argmax labels, nearest bond orders.

    Parameters
    ----------
    F : ndarray of shape (n, len(alphabet))
        Node features: each node takes the label of its largest entry.
    C : ndarray of shape (n, n)
        Structure matrix (symmetrised): an edge where it is at least ``threshold``.
    alphabet : sequence
        The node labels, in the order of ``F``'s columns.
    node_label : str, default "label"
        Node attribute set to the label.
    edge_label : str, default "label"
        Edge attribute set to the nearest of ``orders``.
    orders : array-like of float, default (1.0, 1.5, 2.0, 3.0)
        The edge weights (bond orders) an edge may take.
    threshold : float, default 0.5
        Smallest structure value making an edge.
    """
    labels, _ = alphabet_index(alphabet)
    G = nx.Graph()
    lab = np.asarray(F).argmax(axis=1)
    for i, a in enumerate(lab):
        G.add_node(i, **{node_label: labels[a]})
    C = (np.asarray(C) + np.asarray(C).T) / 2
    orders = np.asarray(orders, dtype=float)
    iu, ju = np.triu_indices(C.shape[0], k=1)
    w = C[iu, ju]
    keep = w >= threshold
    near = orders[np.abs(w[keep, None] - orders[None, :]).argmin(axis=1)]
    for u, v, o in zip(iu[keep], ju[keep], near):
        G.add_edge(int(u), int(v), **{edge_label: int(o) if float(o).is_integer() else float(o)})
    return G


def check_alpha(alpha: Any) -> None:
    """``alpha``: a real number in [0, 1] (a string or a bool is refused, not compared)."""
    if not is_real(alpha):
        raise TypeError(f"alpha must be a number in [0, 1], got {type(alpha).__name__} {alpha!r}")
    if not 0 <= alpha <= 1:  # NaN fails the comparison too
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")


def fgw_distance(G1: nx.Graph, G2: nx.Graph, alpha: float = 0.5, alphabet: Sequence[Any] | None = None,
                 node_label: str = "label", edge_label: str | None = "label") -> float:
    """FGW distance between two labelled graphs (uniform node weights).

    Parameters
    ----------
    G1, G2 : networkx.Graph
        Undirected graphs (a directed graph is refused, as by the WL kernels) with at least
        one node, every node carrying ``node_label``.
    alpha : float in [0, 1], default 0.5
        Weight of the structure term (POT's convention).
    alphabet : sequence of labels, optional
        The node labels the one-hot features range over (list, tuple or 1-D array);
        default: the labels of ``G1`` and ``G2``.  Labels are compared by value: ``1`` and
        ``1.0`` are one label, ``"1"`` another (see :func:`label_alphabet`).
    node_label : str
    edge_label : str or None
        Edge attribute holding finite numeric weights (bond orders); edges without it, or
        every edge when None, weigh 1.

    Returns
    -------
    float
    """
    import ot

    check_alpha(alpha)
    check_fgw_graph(G1, "G1", node_label, edge_label)
    check_fgw_graph(G2, "G2", node_label, edge_label)
    if G1.number_of_nodes() == 0 or G2.number_of_nodes() == 0:
        raise ValueError("FGW distance needs non-empty graphs")
    labels, pos = alphabet_index(label_alphabet([G1, G2], node_label) if alphabet is None else alphabet)
    F1, C1 = to_fgw(G1, labels, pos, node_label, edge_label, "G1")
    F2, C2 = to_fgw(G2, labels, pos, node_label, edge_label, "G2")
    M = ot.dist(F1, F2)
    p, q = ot.unif(F1.shape[0]), ot.unif(F2.shape[0])
    return float(ot.gromov.fused_gromov_wasserstein2(M, C1, C2, p, q, loss_fun="square_loss",
                                                     alpha=alpha))
