"""Graph edit distance between predicted and true labelled graphs (unit costs).

:func:`exact_graph_edit_distance` solves GED exactly as a 0/1 linear program (the "F2"
formulation of Lerouge et al., 2017) with HiGHS (``scipy.optimize.milp``): node-map
variables ``x_ik`` and edge-map variables ``y_ef``; an edge ``e = ij`` may be mapped to an
edge ``f = kl`` only if its end points are mapped onto ``k`` and ``l``.  On QM9-sized
molecules (<= 9 heavy atoms) a pair takes milliseconds, so no pair needs a cap; the
solver still has a ``time_limit`` and then returns its best edit path (an upper bound)
with ``exact=False``.  :func:`graph_edit_distance` keeps networkx's search available
(``method="networkx"``, bounded by ``timeout``).  A missing prediction (``None``) costs
the size of the true graph (delete all of it): ``|V| + |E|``.

Costs (networkx's defaults): substituting a node (edge) costs 1 when the labels differ
and 0 otherwise, inserting or deleting a node or an edge costs 1; edge labels are
ignored when ``edge_labels=False`` and node labels when ``node_label=None``.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:  # imported for the annotations only
    import networkx as nx

__all__ = ["graph_edit_distance", "mean_graph_edit_distance", "exact_graph_edit_distance"]


def _matchers(node_label, edge_label, edge_labels):
    node_match = (lambda a, b: a.get(node_label) == b.get(node_label)) if node_label else None
    edge_match = (lambda a, b: a.get(edge_label) == b.get(edge_label)) if edge_labels else None
    return node_match, edge_match


def _size(G):
    return 0 if G is None else G.number_of_nodes() + G.number_of_edges()


def exact_graph_edit_distance(G1: nx.Graph | None, G2: nx.Graph | None, edge_labels: bool = True,
                              node_label: str | None = "label", edge_label: str | None = "label",
                              time_limit: float = 60.0) -> tuple[float, bool]:
    """Exact GED with unit costs, as a 0/1 linear program solved by HiGHS.

    Parameters
    ----------
    G1, G2 : networkx.Graph or None
        Undirected graphs without self-loops (refused: the program does not model them);
        None stands for the empty graph.
    edge_labels : bool
        Whether an edge substitution costs 1 when the edge labels differ.
    node_label, edge_label : str or None
        Attribute names of the labels (``node_label=None``: nodes always match).
    time_limit : float
        Seconds given to the solver (s); beyond it the best edit path found is returned.

    Returns
    -------
    distance : float
        The edit distance (an integer-valued float).
    exact : bool
        True when the solver proved optimality (the distance is the exact GED), False when
        it stopped at ``time_limit`` (the distance is then an upper bound).
    """
    import scipy.sparse as sp
    from scipy.optimize import Bounds, LinearConstraint, milp

    if time_limit is None or not time_limit > 0:
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    import networkx as nx

    for G, name in ((G1, "G1"), (G2, "G2")):
        loops = 0 if G is None else nx.number_of_selfloops(G)
        if loops:  # the linear program maps edges between two nodes only
            raise ValueError(f"{name} has {loops} self-loop(s), which the exact edit distance does not model: "
                             "remove them (networkx.selfloop_edges) or use graph_edit_distance(..., "
                             "method='networkx')")
    if G1 is None or G2 is None or G1.number_of_nodes() == 0 or G2.number_of_nodes() == 0:
        return float(_size(G1) + _size(G2)), True
    for G, name in ((G1, "G1"), (G2, "G2")):
        if G.is_directed() or G.is_multigraph():
            raise ValueError(f"{name} must be a simple undirected networkx graph")
    n1, n2 = list(G1.nodes), list(G2.nodes)
    a, b = len(n1), len(n2)
    p1 = {v: i for i, v in enumerate(n1)}
    p2 = {v: i for i, v in enumerate(n2)}
    E1 = [(p1[u], p1[v], d.get(edge_label)) for u, v, d in G1.edges(data=True)]
    E2 = [(p2[u], p2[v], d.get(edge_label)) for u, v, d in G2.edges(data=True)]
    m1, m2 = len(E1), len(E2)
    if node_label:
        l1 = [G1.nodes[v].get(node_label) for v in n1]
        l2 = [G2.nodes[v].get(node_label) for v in n2]
        cx = np.array([[float(x != y) for y in l2] for x in l1]).ravel()
    else:
        cx = np.zeros(a * b)
    if edge_labels:
        cy = np.array([[float(e[2] != f[2]) for f in E2] for e in E1]).reshape(-1)
    else:
        cy = np.zeros(m1 * m2)
    # cost = (a + b + m1 + m2) + sum (c - 2) over the mapped nodes and edges: mapping a pair
    # replaces one deletion and one insertion by one substitution
    c = np.concatenate([cx - 2.0, cy - 2.0])
    nxv = a * b
    rows, cols = [], []
    xi = np.arange(nxv).reshape(a, b)
    r = 0
    for i in range(a):  # each node of G1 mapped at most once
        rows += [r] * b; cols += list(xi[i]); r += 1
    for k in range(b):  # each node of G2 hit at most once
        rows += [r] * a; cols += list(xi[:, k]); r += 1
    yi = nxv + np.arange(m1 * m2).reshape(m1, m2)
    for e in range(m1):
        rows += [r] * m2; cols += list(yi[e]); r += 1
    for f in range(m2):
        rows += [r] * m1; cols += list(yi[:, f]); r += 1
    vals = [1.0] * len(rows)
    n_le1 = r
    # edge e = ij, node k of G2: sum over the edges f incident to k of y_ef <= x_ik + x_jk
    inc: list[list[int]] = [[] for _ in range(b)]
    for f, (k, l_, _) in enumerate(E2):
        inc[k].append(f)
        inc[l_].append(f)
    for e, (i, j, _) in enumerate(E1):
        for k in range(b):
            if not inc[k]:
                continue
            for f in inc[k]:
                rows.append(r); cols.append(int(yi[e, f])); vals.append(1.0)
            rows += [r, r]; cols += [int(xi[i, k]), int(xi[j, k])]; vals += [-1.0, -1.0]
            r += 1
    # the same seen from G2 (redundant for integers, tightens the relaxation): edge f = kl,
    # node i of G1: sum over the edges e incident to i of y_ef <= x_ik + x_il
    inc1: list[list[int]] = [[] for _ in range(a)]
    for e, (i, j, _) in enumerate(E1):
        inc1[i].append(e)
        inc1[j].append(e)
    for f, (k, l_, _) in enumerate(E2):
        for i in range(a):
            if not inc1[i]:
                continue
            for e in inc1[i]:
                rows.append(r); cols.append(int(yi[e, f])); vals.append(1.0)
            rows += [r, r]; cols += [int(xi[i, k]), int(xi[i, l_])]; vals += [-1.0, -1.0]
            r += 1
    A = sp.csr_matrix((vals, (rows, cols)), shape=(r, c.size))
    ub = np.concatenate([np.ones(n_le1), np.zeros(r - n_le1)])
    res = milp(c, constraints=LinearConstraint(A, -np.inf, ub), integrality=np.ones(c.size),
               bounds=Bounds(0, 1), options={"time_limit": float(time_limit), "mip_rel_gap": 0.0})
    const = a + b + m1 + m2
    if res.x is None:  # no incumbent at all (not even the empty map): trivial upper bound
        return float(const), False
    d = float(round(res.fun + const))
    exact = res.status == 0
    bound = getattr(res, "mip_dual_bound", None)
    if not exact and bound is not None and np.isfinite(bound):
        exact = np.ceil(bound + const - 1e-6) >= d  # the bounds meet
    return d, bool(exact)


def graph_edit_distance(G1: nx.Graph | None, G2: nx.Graph | None, edge_labels: bool = True,
                        node_label: str | None = "label", edge_label: str | None = "label", timeout: float = 5.0,
                        method: str = "exact") -> tuple[float, bool]:
    """GED with unit costs; node labels must match, and edge labels too if ``edge_labels``.

    ``method="exact"``: :func:`exact_graph_edit_distance` with ``time_limit=timeout``;
    ``method="networkx"``: networkx's search, stopped after ``timeout`` seconds.

    Parameters
    ----------
    G1, G2 : networkx.Graph or None
        The graphs; None (a missing prediction) costs the size of the other graph.
    edge_labels : bool, default=True
        Whether an edge substitution costs 1 when the edge labels differ.
    node_label : str or None, default="label"
        Attribute name of the node labels (None: nodes always match).
    edge_label : str or None, default="label"
        Attribute name of the edge labels.
    timeout : float, default=5.0
        Seconds per pair: the exact solver's ``time_limit``, or the networkx search's
        ``timeout``; beyond it the best edit path found so far is returned.
    method : {"exact", "networkx"}, default="exact"
        :func:`exact_graph_edit_distance`, or networkx's ``graph_edit_distance`` search.

    Returns
    -------
    distance : float
        The edit distance.
    timed_out : bool
        True when the distance is only an upper bound (not proved optimal).
    """
    import networkx as nx

    if method not in ("exact", "networkx"):
        raise ValueError(f"method must be 'exact' or 'networkx', got {method!r}")
    # (checked here: the exact solver's message names its time_limit, networkx's is its own)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer, np.floating)) \
            or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if G1 is None or G2 is None:
        G = G2 if G1 is None else G1
        return float(_size(G)), False
    if method == "exact":
        d, exact = exact_graph_edit_distance(G1, G2, edge_labels, node_label, edge_label,
                                             time_limit=timeout)
        return d, not exact
    nm, em = _matchers(node_label, edge_label, edge_labels)
    t0 = time.perf_counter()
    d = nx.graph_edit_distance(G1, G2, node_match=nm, edge_match=em, timeout=timeout)
    timed_out = time.perf_counter() - t0 >= timeout
    if d is None:  # timeout before any complete path: fall back to the trivial bound
        d = _size(G1) + _size(G2)
        timed_out = True
    return float(d), timed_out


def mean_graph_edit_distance(y_true: Sequence[nx.Graph | None], y_pred: Sequence[nx.Graph | None],
                             edge_labels: bool = True, node_label: str | None = "label",
                             edge_label: str | None = "label", timeout: float = 5.0,
                             method: str = "exact") -> dict[str, Any]:
    """Mean GED over pairs (see :func:`graph_edit_distance`).

    Parameters
    ----------
    y_true : sequence of networkx.Graph or None
        The true graphs.
    y_pred : sequence of networkx.Graph or None
        The predicted graphs, as many (None: a missing prediction, which costs the size of
        the true graph).
    edge_labels : bool, default=True
        Whether an edge substitution costs 1 when the edge labels differ.
    node_label : str or None, default="label"
        Attribute name of the node labels (None: nodes always match).
    edge_label : str or None, default="label"
        Attribute name of the edge labels.
    timeout : float, default=5.0
        Seconds per pair: the exact solver's ``time_limit``, or the networkx search's
        ``timeout``; beyond it the best edit path found so far is returned.
    method : {"exact", "networkx"}, default="exact"
        :func:`exact_graph_edit_distance`, or networkx's ``graph_edit_distance`` search.

    Returns
    -------
    dict
        ``{"mean", "n", "n_exact", "n_timeouts", "distances"}``: ``n_exact`` counts the
        pairs whose distance is proved exact, ``n_timeouts`` the others (their distance is
        an upper bound, so ``mean`` is then an upper bound too).  Empty input is refused
        (a mean over no pair is undefined; as scikit-learn's metrics).
    """
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true and y_pred have different lengths: {len(y_true)} and {len(y_pred)}")
    if not y_true:  # a mean over no pair is undefined (it was NaN)
        raise ValueError("no samples: y_true and y_pred are empty; mean_graph_edit_distance needs at least one pair")
    out = [graph_edit_distance(t, p, edge_labels, node_label, edge_label, timeout, method)
           for t, p in zip(y_true, y_pred)]
    d = np.array([o[0] for o in out])
    n_to = int(sum(o[1] for o in out))
    return {"mean": float(d.mean()), "n": int(d.size),
            "n_exact": int(d.size) - n_to, "n_timeouts": n_to, "distances": d}
