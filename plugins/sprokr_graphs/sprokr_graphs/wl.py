"""Weisfeiler-Lehman subtree kernel and its core variant, as explicit sparse features.

The WL subtree kernel with ``n_iter = h`` relabelling rounds (GraKeL's
``WeisfeilerLehman(n_iter=h)``) is ``k(G, G') = sum_{t=0..h} <c_t(G), c_t(G')>`` where
``c_t(G)`` counts the node labels after ``t`` relabelling rounds (round 0: the original
labels; round t+1: the label of v and the sorted multiset of its neighbours' labels).
With edge labels (``edge_label``) the multiset holds the pairs (label of the edge to the
neighbour, label of the neighbour), so a single and a double bond relabel differently.

Labelling of molecule graphs (:func:`sprokr_chem.mol_to_graph`).  By default
(``node_label="auto"``, ``edge_label="auto"``) a batch whose nodes all carry the atom
attributes ``label``, ``aromatic`` and ``num_hs`` gets the atom labels (element + formal
charge, aromaticity, total hydrogen count) and a batch whose edges all carry
``bond_order`` gets bond orders (1, 2, 3, aromatic 1.5) as edge labels; other graphs keep
the plain behaviour (node attribute ``label``, unlabelled edges).  The old kernel (equal to
GraKeL's) is ``node_label="label", edge_label=None``.  The labelling a batch was prepared
with is recorded in its :class:`WLFeatures` (``labelling``), and ``pairwise`` refuses to
compare batches prepared with different labellings.  A batch without any edge (only single
atoms, or plain edgeless graphs) decides nothing about the edges: its features are the same
with and without edge labels, its labelling says ``edges=?`` and it compares with batches of
either edge labelling (likewise ``nodes=?`` for a batch of empty graphs).
The core variant (GraKeL's ``CoreFramework``, Nikolentzos et al. 2018) sums the WL kernel
over the i-cores of both graphs, ``i = max core .. min_core + 1``.  With ``min_core >= 0`` a
graph may have no core above ``min_core`` (a tree has only its 0- and 1-cores): the sum is
then empty, its vector zero, ``k = 0`` with every graph, itself included.

Both are inner products of explicit count vectors, so ``prepare`` computes every graph's
vector ONCE (a per-graph loop, ``O(h |E|)``) and ``pairwise`` is a sparse matrix product.  A
label is identified by a stable 64-bit hash (blake2b) of (core level, round, label), so
no vocabulary has to be fitted: graphs prepared at different times share one feature
space, the same in every process.  ``normalize=True`` (the default) divides by the norms,
``k(G, G') / sqrt(k(G, G) k(G', G'))``, as GraKeL's ``normalize=True``; a zero vector stays
zero (``k = 0``, as the cosine kernel's, and ``diag`` says 0).  A graph without nodes has no
WL label but gets one reserved feature, so that ``k(E, E) = 1`` for two empty graphs.

Self-loops are dropped: a node is not its own neighbour, and the core variant takes the
cores of the graph without its loops.  (GraKeL counts a node with a loop among its own
neighbours, so on graphs with loops the values differ from GraKeL's.)

The values equal GraKeL's (tests compare them on molecules) up to 64-bit hash collisions,
on graphs without self-loops.  :class:`sprokr_graphs.grakel_kernel.GrakelKernel` wraps any GraKeL kernel for graphs the
explicit features do not cover (it evaluates GraKeL per block, much slower).
"""
from __future__ import annotations

import hashlib
import struct
from typing import TYPE_CHECKING, Any, Sequence

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike
import scipy.sparse as sp

from sprokr.kernels.base import Kernel
from sprokr.utils import check_bool, check_integer

from .checks import check_graph, check_graph_sequence

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from sprokr.types import Samples

__all__ = ["WLFeatures", "wl_features", "wl_features_from_arrays", "node_label_key", "edge_label_key",
           "resolve_labels", "labelling_name", "WLKernel", "CoreWLKernel",
           "CHEM_NODE_LABELS", "CHEM_EDGE_LABEL", "UNDETERMINED"]

#: node attributes of the chemistry-aware atom labels (set by sprokr_chem.mol_to_graph):
#: element + formal charge, aromaticity, total hydrogen count
CHEM_NODE_LABELS = ("label", "aromatic", "num_hs")
#: edge attribute of the chemistry-aware bond labels (1, 2, 3, aromatic 1.5)
CHEM_EDGE_LABEL = "bond_order"
#: labelling of features saved before labellings were recorded (plain WL)
LEGACY_LABELLING = "nodes=label;edges=-"
#: recorded for the edges (nodes) of a batch without any edge (node): its features are the
#: same under every edge (node) labelling, so it is comparable with any
UNDETERMINED = "?"


def _h(data: bytes) -> int:
    return struct.unpack("<q", hashlib.blake2b(data, digest_size=8).digest())[0]


class WLFeatures:
    """Prepared graphs: one sparse row of (hashed label id, value) per graph.

    Supports ``len`` and ``take`` (so the estimators can index it) and ``to_csr(columns)``.
    ``labelling`` names the node/edge labels the features were computed with (a string such
    as ``"nodes=label,aromatic,num_hs;edges=bond_order"``; ``edges=?`` for a batch without
    edges, ``nodes=?`` for one without nodes: such features are the same under every
    labelling of that kind and compare, or concatenate, with either).

    Parameters
    ----------
    indptr : array-like of int, shape (n_graphs + 1,)
        Row pointers: graph ``i``'s entries are ``indptr[i]:indptr[i + 1]``.
    ids : array-like of int
        Hashed label id of each entry.
    values : array-like of float
        Value of each entry.
    labelling : str, default "nodes=label;edges=-"
        The node/edge labels the features were computed with (default: the plain WL labelling).
    """

    def __init__(self, indptr: ArrayLike, ids: ArrayLike, values: ArrayLike, labelling: str = LEGACY_LABELLING) -> None:
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.ids = np.asarray(ids, dtype=np.int64)
        self.values = np.asarray(values, dtype=np.float64)
        self.labelling = str(labelling)

    def get_labelling(self) -> str:
        """The labelling string (features saved by older versions: the plain WL labelling)."""
        return getattr(self, "labelling", LEGACY_LABELLING)

    def compares_with(self, other: Any) -> bool:
        """Whether these features and ``other``'s live in one feature space: the same
        labelling, or one whose undetermined part (``edges=?``, ``nodes=?``: a batch without
        edges, or without nodes) the other's determines -- as ``pairwise`` accepts them."""
        get = getattr(other, "get_labelling", None)
        return get is not None and _merge_labellings(self.get_labelling(), get()) is not None

    def __len__(self):
        return self.indptr.size - 1

    def take(self, idx: ArrayLike) -> WLFeatures:
        idx = np.asarray(idx, dtype=np.intp).ravel()
        starts, stops = self.indptr[idx], self.indptr[idx + 1]
        lens = stops - starts
        indptr = np.concatenate([[0], np.cumsum(lens)])
        pos = np.repeat(starts - indptr[:-1], lens) + np.arange(indptr[-1])
        return WLFeatures(indptr, self.ids[pos], self.values[pos], self.get_labelling())

    def to_csr(self, columns: np.ndarray) -> sp.csr_matrix:
        """CSR matrix whose column j is the label id ``columns[j]`` (sorted ids)."""
        cols = np.searchsorted(columns, self.ids)
        return sp.csr_matrix((self.values, cols, self.indptr), shape=(len(self), columns.size))

    @staticmethod
    def concat(parts: Sequence[WLFeatures]) -> WLFeatures:
        parts = list(parts)
        labellings = {p.get_labelling() for p in parts}
        labelling: str | None = None
        for la in sorted(labellings):
            labelling = la if labelling is None else _merge_labellings(labelling, la)
            if labelling is None:
                raise ValueError(f"cannot concatenate WL features with different labellings: {sorted(labellings)}")
        indptr, ids, vals, off = [np.zeros(1, np.int64)], [], [], 0
        for p in parts:
            indptr.append(p.indptr[1:] + off)
            off += p.indptr[-1]
            ids.append(p.ids)
            vals.append(p.values)
        return WLFeatures(np.concatenate(indptr), np.concatenate(ids), np.concatenate(vals),
                          LEGACY_LABELLING if labelling is None else labelling)


def _merge_labellings(a: str, b: str) -> str | None:
    """The labelling of features prepared with ``a`` and ``b`` together (an undetermined
    part takes the other's), or None when they are not comparable."""
    if a == b:
        return a
    pa, pb = (dict(part.partition("=")[::2] for part in x.split(";")) for x in (a, b))
    if pa.keys() != pb.keys():
        return None
    merged = []
    for key, x in pa.items():
        y = pb[key]
        if x != y and UNDETERMINED not in (x, y):
            return None
        merged.append(f"{key}={y if x == UNDETERMINED else x}")
    return ";".join(merged)


def _check_edges(G, i, edge_label):
    for u, v, d in G.edges(data=True):
        if edge_label not in d and u != v:  # a self-loop is dropped: its label is never read
            raise ValueError(f"graph {i}: edge ({u!r}, {v!r}) has no {edge_label!r} attribute "
                             f"(set edge_label=None for unlabelled edges)")


def _label_text(value):
    """Text of a label value; numbers by value (bond order 1 and 1.0 are one label)."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, float, np.integer, np.floating)):
        return repr(float(value))
    return str(value)


def _every(items, pred):
    """``pred`` holds for every item and there is at least one (no vacuous truth)."""
    seen = False
    for x in items:
        if not pred(x):
            return False
        seen = True
    return seen


def resolve_labels(graphs: Sequence[nx.Graph], node_label: str | Sequence[str] = "auto",
                   edge_label: str | None = "auto") -> tuple[Any, str | None]:
    """The node attribute(s) and edge attribute (or None) ``"auto"`` stands for on ``graphs``.

    ``node_label="auto"``: :data:`CHEM_NODE_LABELS` if the graphs have nodes and every node
    carries them, else ``"label"``.  ``edge_label="auto"``: :data:`CHEM_EDGE_LABEL` if the
    graphs have edges and every edge carries it, else ``None`` (unlabelled edges; self-loops
    do not count, the WL kernels drop them).  Graphs
    without any edge (node) give no evidence: their WL features do not depend on the edge
    (node) labels, and :func:`wl_features` records that dimension as undetermined (``?``),
    comparable with any.  Returns ``(node_label, edge_label)``; a tuple of one name comes
    back as that name (the same labelling, read the same way).

    Parameters
    ----------
    graphs : sequence of networkx.Graph
        The graphs the labels are read on.
    node_label : "auto" (default), str or sequence of str
        Node attribute(s), or ``"auto"``.
    edge_label : "auto" (default), str or None
        Edge attribute, None (unlabelled edges) or ``"auto"``.
    """
    if isinstance(node_label, str) and node_label == "auto":
        ok = _every((d for G in graphs if isinstance(G, nx.Graph) for _, d in G.nodes(data=True)),
                    lambda d: all(a in d for a in CHEM_NODE_LABELS))
        node_label = CHEM_NODE_LABELS if ok else "label"
    elif not isinstance(node_label, str):
        node_label = tuple(node_label)
        if not node_label or not all(isinstance(a, str) for a in node_label):
            raise ValueError(f"node_label must be 'auto', an attribute name or a tuple of names, "
                             f"got {node_label!r}")
        if len(node_label) == 1:
            # ("x",) and "x" record one labelling, so they must hash alike: both are read as
            # the name alone always was (str(value)), which keeps saved plain features valid
            node_label = node_label[0]
    if edge_label == "auto":
        ok = _every((d for G in graphs if isinstance(G, nx.Graph) for u, v, d in G.edges(data=True)
                     if u != v), lambda d: CHEM_EDGE_LABEL in d)  # self-loops are dropped
        edge_label = CHEM_EDGE_LABEL if ok else None
    elif edge_label is not None and not isinstance(edge_label, str):
        raise ValueError(f"edge_label must be 'auto', None or an edge attribute name, got {edge_label!r}")
    return node_label, edge_label


def labelling_name(node_label: str | Sequence[str], edge_label: str | None) -> str:
    """The labelling string recorded in :class:`WLFeatures` for resolved labels
    (:data:`UNDETERMINED` for a dimension the features do not depend on)."""
    nodes = node_label if isinstance(node_label, str) else ",".join(node_label)
    return f"nodes={nodes};edges={'-' if edge_label is None else edge_label}"


_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


def _mix(x):
    """splitmix64 finaliser, elementwise on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + _GOLD
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
        return x ^ (x >> np.uint64(31))


class _Batch:
    """Disjoint union of a sequence of graphs as flat arrays (one per-graph loop)."""

    def __init__(self, graphs, node_label, edge_label=None):
        label_hash, edge_hash = {}, {}
        gid, lab, src, dst, elab = [], [], [], [], []
        off = 0
        self.sizes = []
        single = isinstance(node_label, str)
        for i, G in enumerate(graphs):
            check_graph(G, i, node_label)
            if edge_label is not None:
                _check_edges(G, i, edge_label)
            pos = {v: off + k for k, v in enumerate(G.nodes)}
            for v, d in G.nodes(data=True):
                # one attribute: its text, as before (the plain WL features are unchanged)
                key = str(d[node_label]) if single else "\x1f".join(_label_text(d[a]) for a in node_label)
                h = label_hash.get(key)
                if h is None:
                    h = label_hash[key] = _h(b"L" + key.encode()) & 0xFFFFFFFFFFFFFFFF
                lab.append(h)
            for u, v, d in G.edges(data=True):
                if u != v:
                    src += (pos[u], pos[v])
                    dst += (pos[v], pos[u])
                    if edge_label is not None:
                        key = _label_text(d[edge_label])
                        h = edge_hash.get(key)
                        if h is None:
                            h = edge_hash[key] = _h(b"E" + key.encode()) & 0xFFFFFFFFFFFFFFFF
                        elab += (h, h)
            gid.extend([i] * len(pos))
            self.sizes.append(len(pos))
            off += len(pos)
        self.n_graphs = len(self.sizes)
        self.gid = np.asarray(gid, dtype=np.int64)
        self.labels = np.asarray(lab, dtype=np.uint64)
        self.src = np.asarray(src, dtype=np.int64)
        self.dst = np.asarray(dst, dtype=np.int64)
        self.elab = np.asarray(elab, dtype=np.uint64) if edge_label is not None else None
        self.graphs = graphs


class _ArrayBatch:
    """A batch given as flat arrays (:func:`wl_features_from_arrays`): same fields as _Batch."""

    def __init__(self, sizes, node_keys, src, dst, edge_keys):
        label_hash, edge_hash = {}, {}

        def hashed(keys, cache, tag):
            out = np.empty(len(keys), dtype=np.uint64)
            for j, key in enumerate(keys):
                h = cache.get(key)
                if h is None:
                    h = cache[key] = _h(tag + key.encode()) & 0xFFFFFFFFFFFFFFFF
                out[j] = h
            return out

        self.sizes = [int(x) for x in sizes]
        self.n_graphs = len(self.sizes)
        n_nodes = int(sum(self.sizes))
        if len(node_keys) != n_nodes:
            raise ValueError(f"node_keys: {len(node_keys)} labels for {n_nodes} nodes")
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        if src.shape != dst.shape or src.ndim != 1 or (src.size and (min(src.min(), dst.min()) < 0
                                                                     or max(src.max(), dst.max()) >= n_nodes)):
            raise ValueError("src and dst must be equal-length arrays of node indices of the batch")
        self.gid = np.repeat(np.arange(self.n_graphs, dtype=np.int64), self.sizes)
        if src.size and (self.gid[src] != self.gid[dst]).any():
            raise ValueError("an edge joins two different graphs of the batch")
        self.labels = hashed(node_keys, label_hash, b"L")
        keep = src != dst
        src, dst = src[keep], dst[keep]
        # each undirected edge in both directions, as _Batch does
        self.src = np.concatenate([src, dst]) if src.size else src
        self.dst = np.concatenate([dst, src]) if src.size else dst
        self.elab = None
        if edge_keys is not None:
            if len(edge_keys) != keep.size:
                raise ValueError(f"edge_keys: {len(edge_keys)} labels for {keep.size} edges")
            e = hashed([k for k, ok in zip(edge_keys, keep) if ok], edge_hash, b"E")
            self.elab = np.concatenate([e, e])
        self.graphs = None


def node_label_key(*values: Any) -> str:
    """The label text of a node with these attribute values, as the WL kernels read it
    (one attribute: its text, ``str(value)``; several attributes: joined by ``"\\x1f"``, the
    unit separator, numbers by value)."""
    if len(values) == 1:
        return str(values[0])
    return "\x1f".join(_label_text(v) for v in values)


def edge_label_key(value: Any) -> str:
    """The label text of an edge attribute value, as the WL kernels read it."""
    return _label_text(value)


def wl_features_from_arrays(sizes: Sequence[int], node_keys: Sequence[str], src: ArrayLike, dst: ArrayLike,
                            edge_keys: Sequence[str] | None = None, n_iter: int = 3, normalize: bool = True,
                            labelling: str = LEGACY_LABELLING) -> WLFeatures:
    """WL count vectors of a batch of graphs given as flat arrays (no networkx graphs).

    Equal to :func:`wl_features` on the same graphs (hash-identical features) when the
    label texts are made with :func:`node_label_key` / :func:`edge_label_key` from the
    attributes :func:`wl_features` would read, and ``labelling`` is theirs
    (:func:`labelling_name`).  For callers that can list a million graphs' nodes and edges
    faster than they can build networkx graphs (molecules read from RDKit).

    Parameters
    ----------
    sizes : sequence of int
        Nodes per graph; the batch's nodes are numbered graph after graph.
    node_keys : sequence of str
        Label text of every node of the batch.
    src, dst : array-like of int
        The undirected edges (node indices of the batch), each listed once.
    edge_keys : sequence of str, optional
        Label text of every edge (None: unlabelled edges).
    n_iter, normalize : as :func:`wl_features`.
    labelling : str
        Recorded in the result (features of different labellings are not comparable).
    """
    check_integer(n_iter, "n_iter", 0)
    b = _ArrayBatch(sizes, node_keys, src, dst, edge_keys)
    if b.n_graphs == 0:
        return WLFeatures([0], [], [], labelling)
    g, f = _wl_entries(b.gid, b.labels, b.src, b.dst, n_iter=n_iter, salt=0, elab=b.elab)
    return _count_features(g, f, b.sizes, normalize, labelling)


def _wl_entries(gid, labels, src, dst, *, n_iter, salt, elab=None):
    """(graph id, feature id) of every node at every round: the WL label multisets.

    Round t+1 relabels v by a hash of its label and the *sum* of the mixed labels of its
    neighbours (a commutative multiset hash: no sort, one vectorised pass per round).  With
    edge labels ``elab`` (one hash per directed edge) each neighbour contributes a hash of
    (edge label, neighbour label) instead.
    """
    n = labels.size
    out_g, out_f = [], []
    cur = labels
    order = np.argsort(src, kind="stable")
    s_sorted, d_sorted = src[order], dst[order]
    e_sorted = None if elab is None else elab[order]
    starts = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]]) if src.size else None
    for t in range(n_iter + 1):
        tag = _mix(np.asarray([salt * 1_000_003 + t], dtype=np.uint64))[0]
        out_g.append(gid)
        out_f.append(_mix(cur ^ tag))
        if t < n_iter:
            acc = np.zeros(n, dtype=np.uint64)
            if src.size:
                nb = _mix(cur)[d_sorted]
                if e_sorted is not None:
                    with np.errstate(over="ignore"):
                        nb = _mix(nb + e_sorted)
                with np.errstate(over="ignore"):
                    acc[s_sorted[starts]] = np.add.reduceat(nb, starts)
            with np.errstate(over="ignore"):
                cur = _mix(cur * np.uint64(31) + _mix(acc ^ np.uint64(0x5851F42D4C957F2D)))
    return np.concatenate(out_g), np.concatenate(out_f)


#: feature id of "the graph has no nodes" (hashed WL labels never take it in practice)
EMPTY_GRAPH_FEATURE = np.iinfo(np.int64).min


def wl_features(graphs: Sequence[nx.Graph], n_iter: int = 3, node_label: str | Sequence[str] = "label",
                core: bool = False, min_core: int = -1, normalize: bool = True,
                edge_label: str | None = None) -> WLFeatures:
    """Explicit WL (or core-WL) count vectors of a sequence of networkx graphs: :class:`WLFeatures`.

    Parameters
    ----------
    graphs : sequence of undirected networkx graphs
    n_iter : int
        Relabelling rounds.
    node_label : str or tuple of str or "auto"
        Node attribute(s) whose values make the initial labels (see :func:`resolve_labels`).
    core : bool
        Core variant (WL summed over the i-cores, ``i > min_core``).
    min_core : int
        Core variant: the i-cores with ``i > min_core`` are summed (an integer >= -1; a
        graph without such a core gets a zero row).
    normalize : bool
        Unit-norm rows (zero rows stay zero).
    edge_label : str or None or "auto"
        Edge attribute labelling the edges; None: unlabelled edges (GraKeL's WL).
    """
    check_graph_sequence(graphs)
    check_integer(n_iter, "n_iter", 0)
    # (-1 sums every core, the 0-core being the whole graph; below it the levels would
    # repeat the whole graph, or overflow the level's hash salt)
    check_integer(min_core, "min_core", -1)
    graphs = list(graphs)
    node_label, edge_label = resolve_labels(graphs, node_label, edge_label)
    b = _Batch(graphs, node_label, edge_label)
    # a batch without edges (nodes) has the same features under every edge (node) labelling:
    # recorded as undetermined, so that it compares with batches of either labelling
    labelling = labelling_name(node_label if b.labels.size else UNDETERMINED,
                               edge_label if b.src.size else UNDETERMINED)
    if b.n_graphs == 0:
        return WLFeatures([0], [], [], labelling)
    if not core:
        g, f = _wl_entries(b.gid, b.labels, b.src, b.dst, n_iter=n_iter, salt=0, elab=b.elab)
    else:
        cn = np.concatenate([np.fromiter((c[v] for v in G.nodes), dtype=np.int64, count=len(G))
                             for G, c in ((G, _core_numbers(G)) for G in b.graphs)])
        parts_g, parts_f = [], []
        for level in range(int(cn.max(initial=-1)), min_core, -1):
            keep = cn >= level
            newpos = np.cumsum(keep) - 1
            ek = keep[b.src] & keep[b.dst]
            g, f = _wl_entries(b.gid[keep], b.labels[keep], newpos[b.src[ek]], newpos[b.dst[ek]],
                               n_iter=n_iter, salt=level + 1, elab=None if b.elab is None else b.elab[ek])
            parts_g.append(g)
            parts_f.append(f)
        if parts_g:
            g, f = np.concatenate(parts_g), np.concatenate(parts_f)
        else:  # no core above min_core in the whole batch (e.g. only empty graphs)
            g, f = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)
    return _count_features(g, f, b.sizes, normalize, labelling)


def _core_numbers(G):
    """Core number of every node of ``G``, self-loops left out (the WL features drop them;
    networkx's ``core_number`` refuses a graph with loops)."""
    if nx.number_of_selfloops(G):
        G = G.copy()
        G.remove_edges_from(list(nx.selfloop_edges(G)))
    return nx.core_number(G)


def _count_features(g, f, sizes, normalize, labelling):
    """WLFeatures from the (graph id, feature id) of every node at every round (``sizes``:
    nodes per graph)."""
    n_graphs = len(sizes)
    # count (graph, feature) pairs: sort by graph then feature id, run lengths
    fi = f.view(np.int64)
    order = np.lexsort((fi, g))
    g, fi = g[order], fi[order]
    # (a batch without any node, e.g. only empty graphs, has no entry and no run)
    starts = np.flatnonzero(np.r_[g.size > 0, (g[1:] != g[:-1]) | (fi[1:] != fi[:-1])])
    counts = np.diff(np.r_[starts, g.size]).astype(np.float64)
    rg, rid = g[starts], fi[starts]
    # A graph without nodes has no WL label at all: it gets one reserved feature, so that
    # k(E, E) = 1 = diag while k(E, G) = 0 (a zero row would give k(E, E) = 0 != diag = 1).
    # Only a graph without nodes: a graph whose cores above min_core are all empty has
    # nodes but no feature (the core kernel's sum is empty), a zero row (k = 0 with every
    # graph, itself included); a shared reserved feature would make such graphs equal.
    empty = np.flatnonzero(np.asarray(sizes, dtype=np.int64) == 0)
    if empty.size:
        rg = np.r_[rg, empty]
        rid = np.r_[rid, np.full(empty.size, EMPTY_GRAPH_FEATURE, dtype=rid.dtype)]
        counts = np.r_[counts, np.ones(empty.size)]
        order = np.lexsort((rid, rg))
        rg, rid, counts = rg[order], rid[order], counts[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rg, minlength=n_graphs))])
    if normalize:
        nrm = np.sqrt(np.bincount(rg, weights=counts ** 2, minlength=n_graphs))
        nrm[nrm == 0] = 1.0  # a zero row stays zero
        counts = counts / nrm[rg]
    return WLFeatures(indptr, rid, counts, labelling)


class WLKernel(Kernel):
    """Weisfeiler-Lehman subtree kernel on labelled networkx graphs (explicit sparse features).

    Parameters
    ----------
    n_iter : int, default 3
        Number of relabelling rounds, as GraKeL's ``n_iter`` (histograms of rounds 0..n_iter
        are compared; ``n_iter=0`` is the vertex-label histogram kernel).
    node_label : "auto" (default), str or tuple of str
        Node attribute(s) making the initial labels.  ``"auto"``: the chemistry-aware atom
        labels :data:`CHEM_NODE_LABELS` (element + charge, aromaticity, total H count) when
        every node carries them (graphs of :func:`sprokr_chem.mol_to_graph`), else ``"label"``.
        One attribute (``"x"`` or ``("x",)``, the same labelling) is read by its text,
        ``str(value)`` (``1`` and ``1.0`` are two labels, as in earlier versions); several
        attributes are read by value (numbers: ``1`` and ``1.0`` are one label).
    edge_label : "auto" (default), str or None
        Edge attribute labelling the edges.  ``"auto"``: the bond order
        (:data:`CHEM_EDGE_LABEL`) when every edge carries it, else unlabelled edges.
        ``node_label="label", edge_label=None`` is the plain WL kernel of earlier versions
        (equal to GraKeL's ``WeisfeilerLehman``).
    normalize : bool, default True
        Divide by the norms (``k(G, G) = 1``; a zero vector, see :class:`CoreWLKernel`,
        stays zero).
    min_core : int, default -1
        Core variant only: the cores ``i > min_core`` are summed; an integer >= -1 (-1: all
        cores, the 0-core being the whole graph).  Above every core of a graph, that graph
        has no feature (see :class:`CoreWLKernel`).

    Notes
    -----
    Self-loops are dropped (molecule graphs have none): a node is never its own neighbour,
    and a loop's edge label is not read.  GraKeL's ``WeisfeilerLehman`` counts a node with a
    loop among its neighbours, so on graphs with loops the values differ from GraKeL's (use
    :class:`GrakelKernel` for its behaviour).  :class:`CoreWLKernel` takes the cores of the
    graph without its loops.
    """

    name = "wl"
    _core = False

    def __init__(self, n_iter: int = 3, node_label: str | Sequence[str] = "auto", normalize: bool = True,
                 min_core: int = -1, edge_label: str | None = "auto") -> None:
        self.n_iter = n_iter
        self.node_label = node_label
        self.normalize = normalize
        self.min_core = min_core
        self.edge_label = edge_label

    def __setstate__(self, state):
        # kernels pickled before edge labels existed keep their plain labelling
        state.setdefault("edge_label", None)
        self.__dict__.update(state)

    @property
    def normalized(self) -> bool:  # type: ignore[override]  # a class attribute in Kernel
        # k(G, G) = 1 for every G only when no graph can have a zero row: the core variant
        # with min_core >= 0 gives one to a graph without cores above min_core
        return bool(self.normalize) and not self._may_have_zero_rows()

    def _may_have_zero_rows(self) -> bool:
        mc = self.min_core
        return self._core and isinstance(mc, (int, np.integer)) and mc >= 0

    def check_params(self) -> Self:
        check_integer(self.n_iter, "n_iter", 0)
        check_integer(self.min_core, "min_core", -1)
        check_bool(self.normalize, "normalize")
        return self

    def prepare(self, X: Samples) -> Any:
        if isinstance(X, WLFeatures):
            return X
        self.check_params()
        check_graph_sequence(X)
        return wl_features(list(X), self.n_iter, self.node_label, self._core, self.min_core,
                           self.normalize, self.edge_label)

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        if not isinstance(A, WLFeatures) or not isinstance(B, WLFeatures):
            raise TypeError("pairwise expects prepared graphs (WLKernel.prepare)")
        la, lb = A.get_labelling(), B.get_labelling()
        if len(A) and len(B) and _merge_labellings(la, lb) is None:
            raise ValueError(
                f"the two sets of graphs were prepared with different labellings ({la!r} vs {lb!r}): "
                f"with node_label/edge_label='auto' a set gets the molecule labels (nodes "
                f"{', '.join(CHEM_NODE_LABELS)}; edges {CHEM_EDGE_LABEL}) only when all its nodes "
                f"(edges) carry them, so this happens when one set carries them and the other does "
                f"not; pass node_label=... and edge_label=... explicitly")
        cols = np.unique(np.concatenate([A.ids, B.ids]))
        return np.asarray((A.to_csr(cols) @ B.to_csr(cols).T).toarray())

    def diag(self, A: Any) -> np.ndarray:
        n = np.diff(A.indptr)
        if self.normalize:  # unit rows, and zero rows (no feature: k(G, G) = 0)
            return (n > 0).astype(np.float64)
        return np.bincount(np.repeat(np.arange(len(A)), n), weights=A.values ** 2, minlength=len(A))


class CoreWLKernel(WLKernel):
    """Core variant of the WL kernel: WL summed over the i-cores, ``i > min_core``.

    Same parameters (and the same chemistry-aware labelling by default) as :class:`WLKernel`.

    Parameters
    ----------
    n_iter : int, default 3
        Number of relabelling rounds, as GraKeL's ``n_iter``.
    node_label : "auto" (default), str or tuple of str
        Node attribute(s) making the initial labels (``"auto"``: :data:`CHEM_NODE_LABELS`
        when every node carries them, else ``"label"``).
    normalize : bool, default True
        Divide by the norms (a zero vector stays zero, see the notes).
    min_core : int, default -1
        The cores ``i > min_core`` are summed; an integer >= -1 (-1: all cores, the 0-core
        being the whole graph).
    edge_label : "auto" (default), str or None
        Edge attribute labelling the edges (``"auto"``: :data:`CHEM_EDGE_LABEL` when every
        edge carries it, else unlabelled edges).

    Notes
    -----
    With ``min_core >= 0`` a graph whose cores above ``min_core`` are all empty (a tree or
    a path with ``min_core=1``, an edgeless graph with ``min_core=0``) has an empty sum: its
    feature vector is zero and ``k = 0`` with every graph, itself included, also with
    ``normalize=True`` (a zero vector is not scaled; ``diag`` gives 0 for it).  Such a
    kernel does not declare ``normalized`` (``k(y, y) = 1`` fails for these graphs), so the
    decoders read ``diag``.  A graph without nodes is the exception: it gets the reserved
    empty-graph feature (``k(E, E) = 1``), with any ``min_core``.
    """

    name = "core_wl"
    _core = True

