"""Weisfeiler-Lehman subtree kernel and its core variant, as explicit sparse features.

The WL subtree kernel with ``n_iter = h`` relabelling rounds (GraKeL's
``WeisfeilerLehman(n_iter=h)``) is ``k(G, G') = sum_{t=0..h} <c_t(G), c_t(G')>`` where
``c_t(G)`` counts the node labels after ``t`` relabelling rounds (round 0: the original
labels; round t+1: the label of v and the sorted multiset of its neighbours' labels).
The core variant (GraKeL's ``CoreFramework``, Nikolentzos et al. 2018) sums the WL kernel
over the i-cores of both graphs, ``i = max core .. min_core + 1``.

Both are inner products of explicit count vectors, so ``prepare`` computes every graph's
vector ONCE (a per-graph loop, ``O(h |E|)``) and ``pairwise`` is a sparse matrix product.  A
label is identified by a stable 64-bit hash (blake2b) of (core level, round, label), so
no vocabulary has to be fitted: graphs prepared at different times share one feature
space, the same in every process.  ``normalize=True`` (the default) divides by the norms,
``k(G, G') / sqrt(k(G, G) k(G', G'))``, as GraKeL's ``normalize=True``.

The values equal GraKeL's (tests compare them on molecules) up to 64-bit hash
collisions.  :class:`GrakelKernel` wraps any GraKeL kernel for graphs the explicit
features do not cover (it evaluates GraKeL per block, much slower).
"""
from __future__ import annotations

import hashlib
import struct

import networkx as nx
import numpy as np
import scipy.sparse as sp

from sprokr.kernels.base import Kernel

__all__ = ["WLFeatures", "wl_features", "WLKernel", "CoreWLKernel", "GrakelKernel"]


def _h(data: bytes) -> int:
    return struct.unpack("<q", hashlib.blake2b(data, digest_size=8).digest())[0]


class WLFeatures:
    """Prepared graphs: one sparse row of (hashed label id, value) per graph.

    Supports ``len`` and ``take`` (so the estimators can index it) and ``to_csr(columns)``.
    """

    def __init__(self, indptr, ids, values):
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.ids = np.asarray(ids, dtype=np.int64)
        self.values = np.asarray(values, dtype=np.float64)

    def __len__(self):
        return self.indptr.size - 1

    def take(self, idx):
        idx = np.asarray(idx, dtype=np.intp).ravel()
        starts, stops = self.indptr[idx], self.indptr[idx + 1]
        lens = stops - starts
        indptr = np.concatenate([[0], np.cumsum(lens)])
        pos = np.repeat(starts - indptr[:-1], lens) + np.arange(indptr[-1])
        return WLFeatures(indptr, self.ids[pos], self.values[pos])

    def to_csr(self, columns):
        """CSR matrix whose column j is the label id ``columns[j]`` (sorted ids)."""
        cols = np.searchsorted(columns, self.ids)
        return sp.csr_matrix((self.values, cols, self.indptr), shape=(len(self), columns.size))

    @staticmethod
    def concat(parts):
        indptr, ids, vals, off = [np.zeros(1, np.int64)], [], [], 0
        for p in parts:
            indptr.append(p.indptr[1:] + off)
            off += p.indptr[-1]
            ids.append(p.ids)
            vals.append(p.values)
        return WLFeatures(np.concatenate(indptr), np.concatenate(ids), np.concatenate(vals))


def _check_graph(G, i, node_label):
    if not isinstance(G, nx.Graph):
        raise TypeError(f"graph {i}: expected a networkx graph, got {type(G).__name__}")
    if G.is_directed():
        raise ValueError(f"graph {i}: the WL kernels here take undirected graphs")
    for v, d in G.nodes(data=True):
        if node_label not in d:
            raise ValueError(f"graph {i}: node {v!r} has no {node_label!r} attribute "
                             f"(set node_label=... to the attribute holding the labels)")


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

    def __init__(self, graphs, node_label):
        label_hash = {}
        gid, lab, src, dst = [], [], [], []
        off = 0
        self.sizes = []
        for i, G in enumerate(graphs):
            _check_graph(G, i, node_label)
            pos = {v: off + k for k, v in enumerate(G.nodes)}
            for v, d in G.nodes(data=True):
                key = str(d[node_label])
                h = label_hash.get(key)
                if h is None:
                    h = label_hash[key] = _h(b"L" + key.encode()) & 0xFFFFFFFFFFFFFFFF
                lab.append(h)
            for u, v in G.edges():
                if u != v:
                    src += (pos[u], pos[v])
                    dst += (pos[v], pos[u])
            gid.extend([i] * len(pos))
            self.sizes.append(len(pos))
            off += len(pos)
        self.n_graphs = len(self.sizes)
        self.gid = np.asarray(gid, dtype=np.int64)
        self.labels = np.asarray(lab, dtype=np.uint64)
        self.src = np.asarray(src, dtype=np.int64)
        self.dst = np.asarray(dst, dtype=np.int64)
        self.graphs = graphs


def _wl_entries(gid, labels, src, dst, n_iter, salt):
    """(graph id, feature id) of every node at every round: the WL label multisets.

    Round t+1 relabels v by a hash of its label and the *sum* of the mixed labels of its
    neighbours (a commutative multiset hash: no sort, one vectorised pass per round).
    """
    n = labels.size
    out_g, out_f = [], []
    cur = labels
    order = np.argsort(src, kind="stable")
    s_sorted, d_sorted = src[order], dst[order]
    starts = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]]) if src.size else None
    for t in range(n_iter + 1):
        tag = _mix(np.asarray([salt * 1_000_003 + t], dtype=np.uint64))[0]
        out_g.append(gid)
        out_f.append(_mix(cur ^ tag))
        if t < n_iter:
            acc = np.zeros(n, dtype=np.uint64)
            if src.size:
                with np.errstate(over="ignore"):
                    acc[s_sorted[starts]] = np.add.reduceat(_mix(cur)[d_sorted], starts)
            with np.errstate(over="ignore"):
                cur = _mix(cur * np.uint64(31) + _mix(acc ^ np.uint64(0x5851F42D4C957F2D)))
    return np.concatenate(out_g), np.concatenate(out_f)


def wl_features(graphs, n_iter=3, node_label="label", core=False, min_core=-1, normalize=True):
    """Explicit WL (or core-WL) count vectors of a sequence of networkx graphs: :class:`WLFeatures`."""
    if isinstance(graphs, nx.Graph):
        raise TypeError("expected a sequence of graphs, not a single graph")
    if not isinstance(n_iter, (int, np.integer)) or n_iter < 0:
        raise ValueError(f"n_iter must be a non-negative int, got {n_iter!r}")
    b = _Batch(list(graphs), node_label)
    if b.n_graphs == 0:
        return WLFeatures([0], [], [])
    if not core:
        g, f = _wl_entries(b.gid, b.labels, b.src, b.dst, n_iter, 0)
    else:
        cn = np.concatenate([np.fromiter((c[v] for v in G.nodes), dtype=np.int64, count=len(G))
                             for G, c in ((G, nx.core_number(G)) for G in b.graphs)])
        parts_g, parts_f = [], []
        for level in range(int(cn.max(initial=-1)), min_core, -1):
            keep = cn >= level
            newpos = np.cumsum(keep) - 1
            ek = keep[b.src] & keep[b.dst]
            g, f = _wl_entries(b.gid[keep], b.labels[keep], newpos[b.src[ek]], newpos[b.dst[ek]],
                               n_iter, level + 1)
            parts_g.append(g)
            parts_f.append(f)
        g, f = np.concatenate(parts_g), np.concatenate(parts_f)
    # count (graph, feature) pairs: sort by graph then feature id, run lengths
    fi = f.view(np.int64)
    order = np.lexsort((fi, g))
    g, fi = g[order], fi[order]
    starts = np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (fi[1:] != fi[:-1])])
    counts = np.diff(np.r_[starts, g.size]).astype(np.float64)
    rg, rid = g[starts], fi[starts]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rg, minlength=b.n_graphs))])
    if normalize:
        nrm = np.sqrt(np.bincount(rg, weights=counts ** 2, minlength=b.n_graphs))
        nrm[nrm == 0] = 1.0
        counts = counts / nrm[rg]
    return WLFeatures(indptr, rid, counts)


class WLKernel(Kernel):
    """Weisfeiler-Lehman subtree kernel on labelled networkx graphs (explicit sparse features).

    Parameters
    ----------
    n_iter : int, default 3
        Number of relabelling rounds, as GraKeL's ``n_iter`` (histograms of rounds 0..n_iter
        are compared; ``n_iter=0`` is the vertex-label histogram kernel).
    node_label : str
        Node attribute holding the labels (molecule graphs of sprokr-chem use ``"label"``).
    normalize : bool, default True
    """

    name = "wl"
    _core = False

    def __init__(self, n_iter=3, node_label="label", normalize=True, min_core=-1):
        self.n_iter = n_iter
        self.node_label = node_label
        self.normalize = normalize
        self.min_core = min_core

    @property
    def normalized(self):
        return bool(self.normalize)

    def prepare(self, X):
        if isinstance(X, WLFeatures):
            return X
        return wl_features(list(X), self.n_iter, self.node_label, self._core, self.min_core,
                           self.normalize)

    def pairwise(self, A, B):
        if not isinstance(A, WLFeatures) or not isinstance(B, WLFeatures):
            raise TypeError("pairwise expects prepared graphs (WLKernel.prepare)")
        cols = np.unique(np.concatenate([A.ids, B.ids]))
        return np.asarray((A.to_csr(cols) @ B.to_csr(cols).T).toarray())

    def diag(self, A):
        if self.normalize:
            return np.ones(len(A))
        sq = A.values ** 2
        return np.add.reduceat(sq, A.indptr[:-1]) * (np.diff(A.indptr) > 0) if sq.size else np.zeros(len(A))


class CoreWLKernel(WLKernel):
    """Core variant of the WL kernel: WL summed over the i-cores, ``i > min_core``."""

    name = "core_wl"
    _core = True


class GrakelKernel(Kernel):
    """Any GraKeL kernel on networkx graphs (evaluated by GraKeL block by block).

    ``kernel`` is a GraKeL class name (e.g. ``"ShortestPath"``, ``"WeisfeilerLehman"``),
    ``params`` its constructor arguments.  Use it for kernels without an explicit feature
    map here; it costs one GraKeL ``fit``/``transform`` per Gram block.
    """

    name = "grakel"

    def __init__(self, kernel="WeisfeilerLehman", params=None, node_label="label",
                 edge_label="label", normalize=True):
        self.kernel = kernel
        self.params = params
        self.node_label = node_label
        self.edge_label = edge_label
        self.normalize = normalize

    @property
    def normalized(self):
        return bool(self.normalize)

    def prepare(self, X):
        import grakel

        X = list(X)
        for i, G in enumerate(X):
            _check_graph(G, i, self.node_label)
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

    def pairwise(self, A, B):
        k = self._make()
        k.fit(B)
        K = np.asarray(k.transform(A), dtype=np.float64)
        if self.normalize:
            da, db = self._raw_diag(A), self._raw_diag(B)
            K = K / np.sqrt(np.outer(np.maximum(da, 1e-300), np.maximum(db, 1e-300)))
        return K

    def _raw_diag(self, A):
        return np.array([self._make().fit_transform([g])[0, 0] for g in A], dtype=np.float64)

    def diag(self, A):
        if self.normalize:
            return np.ones(len(A))
        return self._raw_diag(A)
