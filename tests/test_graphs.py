
import numpy as np
import pytest

grakel = pytest.importorskip("grakel")
pytest.importorskip("sprokr_graphs")
pytest.importorskip("sprokr_chem")
import networkx as nx  # noqa: E402

from sprokr import SISOKR  # noqa: E402
from sprokr.metrics import exact_graph_edit_distance, graph_edit_distance, mean_graph_edit_distance  # noqa: E402
from sprokr.registry import get_registry  # noqa: E402
from sprokr_graphs import CoreWLKernel, WLKernel  # noqa: E402
from collections import Counter  # noqa: E402


@pytest.fixture(scope="module")
def graphs(qm9_smiles_graphs):
    return qm9_smiles_graphs


def test_wl_matches_grakel_and_is_psd(graphs):
    from grakel.kernels import CoreFramework, WeisfeilerLehman

    _, G = graphs
    sub = G[:60]
    plain = dict(node_label="label", edge_label=None)  # the earlier default, GraKeL's WL
    K = WLKernel(n_iter=3, **plain)(sub)
    ref = WeisfeilerLehman(n_iter=3, normalize=True).fit_transform(
        grakel.graph_from_networkx(sub, node_labels_tag="label"))
    assert np.allclose(K, ref, atol=1e-10)
    assert np.linalg.eigvalsh(K).min() > -1e-8
    Kc = CoreWLKernel(n_iter=2, **plain)(sub)
    ref = CoreFramework(normalize=True, base_graph_kernel=(WeisfeilerLehman, {"n_iter": 2})).fit_transform(
        grakel.graph_from_networkx(sub, node_labels_tag="label"))
    assert np.allclose(Kc, ref, atol=1e-10)
    assert np.linalg.eigvalsh(Kc).min() > -1e-8


def _random_labelled_graphs(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for s in range(n):
        G = nx.gnp_random_graph(6, 0.5, seed=seed + s)
        nx.set_node_attributes(G, {v: int(rng.integers(3)) for v in G}, "label")
        out.append(G)
    return out


def test_grakel_normalize_gives_unit_self_similarity():
    """normalize=True: k(G, G) = 1 also for a GraKeL kernel whose values depend on the fitted
    set (OddSth gave diagonals such as [1, 1.08, 0.61]), and a block between two sets is the
    block of their union's normalised Gram; set-independent kernels keep their values."""
    from sprokr_graphs import GrakelKernel

    A, B = _random_labelled_graphs(3), _random_labelled_graphs(3, seed=10)
    k = GrakelKernel(kernel="OddSth")
    K = k(A)
    assert k.normalized and np.allclose(np.diag(K), 1.0) and np.allclose(k.diag(k.prepare(A)), 1.0)
    assert np.abs(K).max() <= 1 + 1e-12 and np.linalg.eigvalsh(K).min() > -1e-10
    assert np.allclose(k(A, B), k(A + B)[:3, 3:])
    # ShortestPath does not depend on the set: k(a, b) / sqrt(k(a, a) k(b, b)) of the raw kernel
    raw = GrakelKernel(kernel="ShortestPath", normalize=False)
    Ka, Kb = raw.diag(raw.prepare(A)), raw.diag(raw.prepare(B))
    assert np.allclose(GrakelKernel(kernel="ShortestPath")(A, B), raw(A, B) / np.sqrt(np.outer(Ka, Kb)))
    assert GrakelKernel()([], B).shape == (0, 3)


def test_grakel_graphs_without_features_and_non_finite_values():
    """ShortestPath on graphs without edges (no path: k(G, G) = 0) gave an all-NaN Gram; such
    graphs get one reserved feature, as the WL kernels' empty graph.  Non-finite values from
    GraKeL are an error naming the kernel."""
    from sprokr_graphs import GrakelKernel

    single, pair = nx.Graph(), nx.Graph()
    single.add_node(0, label=1)
    pair.add_nodes_from([(0, {"label": 1}), (1, {"label": 2})])
    G = _random_labelled_graphs(2)
    k = GrakelKernel(kernel="ShortestPath")
    K = k([single, pair] + G)
    assert np.isfinite(K).all() and np.allclose(np.diag(K), 1.0)
    assert np.allclose(K[:2, :2], 1.0) and np.allclose(K[:2, 2:], 0.0) and K[2, 3] > 0
    assert np.allclose(k([single, pair], G), 0.0) and np.allclose(k([single], [pair]), 1.0)

    class NaNKernel:  # stands for a GraKeL kernel that overflows
        def fit(self, X):
            self.n = len(X)
            return self

        def transform(self, X):
            return np.full((len(X), self.n), np.nan)

        def fit_transform(self, X):
            return self.fit(X).transform(X)

    for normalize in (True, False):
        bad = GrakelKernel(kernel="ShortestPath", normalize=normalize)
        bad._make = NaNKernel
        with pytest.raises(ValueError, match="GraKeL kernel 'ShortestPath' returned non-finite values"):
            bad(G)


@pytest.mark.parametrize("kernel", ["WeisfeilerLehman", "ShortestPath", "VertexHistogram", "OddSth"])
@pytest.mark.parametrize("normalize", [True, False])
def test_grakel_graph_without_nodes(kernel, normalize):
    """A graph without nodes (a candidate, as for the WL kernels) failed in GraKeL ('Graph does
    not have any labels for vertices', 'cannot unpack non-iterable NoneType', ZeroDivisionError):
    it has no feature, so a raw value 0 with every graph and, normalised, the reserved feature
    (1 with itself and the featureless graphs, 0 with the others)."""
    from sprokr_graphs import GrakelKernel

    G = _random_labelled_graphs(3)
    E = nx.Graph()
    k = GrakelKernel(kernel=kernel, normalize=normalize)
    K = k([E] + G + [E])
    full = k(G)
    np.testing.assert_allclose(K[1:-1, 1:-1], full)
    d = k.diag(k.prepare([E] + G + [E]))  # (OddSth's raw diag is set-dependent: the ends only)
    np.testing.assert_allclose(np.diag(K)[[0, -1]], d[[0, -1]])
    np.testing.assert_allclose(K[[0, -1]][:, 1:-1], 0.0)
    np.testing.assert_allclose(K[[0, 0, -1, -1], [0, -1, 0, -1]], 1.0 if normalize else 0.0)
    np.testing.assert_allclose(k([E], G), K[:1, 1:-1])
    cross = k(G[:2], [E, G[2]])
    np.testing.assert_allclose(cross[:, 0], 0.0)
    if normalize or kernel != "OddSth":  # (OddSth's raw values depend on the fitted set)
        np.testing.assert_allclose(cross, K[1:3, [0, 3]])
    assert k([E], [E]).tolist() == [[1.0 if normalize else 0.0]]


def _graphs_labelled_from(n, seed, labels, vector=False):
    """n random graphs (5-8 nodes) whose node labels are drawn from ``labels`` (vectors of
    dimension 3 with ``vector``), with a 0/1 edge label."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        G = nx.gnp_random_graph(int(rng.integers(5, 9)), 0.45, seed=int(rng.integers(1 << 30)))
        labels_of = {v: (rng.normal(size=3) if vector else int(rng.choice(labels))) for v in G}
        nx.set_node_attributes(G, labels_of, "label")
        nx.set_edge_attributes(G, {e: int(rng.integers(2)) for e in G.edges}, "label")
        out.append(G)
    return out


def _unequal_sets(seed, vector=False):
    """4 and 9 graphs, each set with a node label the other lacks (3, 4 / 5)."""
    return (_graphs_labelled_from(4, seed, [0, 1, 2, 3, 4], vector),
            _graphs_labelled_from(9, 100 + seed, [0, 1, 2, 5], vector))


def _union_reference(k, A, B):
    """The normalised block read from GraKeL's Gram of the union, computed here from GraKeL."""
    n = len(A)
    K = np.asarray(k._make().fit_transform(k.prepare(A) + k.prepare(B)), dtype=np.float64)
    d = np.diag(K)
    return K[:n, n:] / np.sqrt(np.outer(d[:n], d[n:]))


def _direct_formula(k, A, B):
    """fit(B).transform(A) over per-graph self-similarities: right only for set-independent kernels."""
    a, b = k.prepare(A), k.prepare(B)
    K = np.asarray(k._make().fit(b).transform(a), dtype=np.float64)
    da = np.array([k._make().fit_transform([g])[0, 0] for g in a])
    db = np.array([k._make().fit_transform([g])[0, 0] for g in b])
    return K / np.sqrt(np.outer(da, db))


# every GraKeL class of sprokr_graphs.grakel_kernel.SET_INDEPENDENT (name, params, vector labels)
SET_INDEPENDENT_CASES = [
    ("VertexHistogram", {}, False), ("WeisfeilerLehman", {}, False),
    ("WeisfeilerLehman", {"n_iter": 2, "base_graph_kernel": grakel.ShortestPath}, False),
    ("WeisfeilerLehmanOptimalAssignment", {}, False), ("ShortestPath", {}, False),
    ("ShortestPath", {"with_labels": False}, False), ("ShortestPathAttr", {}, True),
    ("RandomWalk", {"lamda": 0.01}, False), ("RandomWalkLabeled", {"lamda": 0.01}, False),
    ("SubgraphMatching", {}, False)]


def test_grakel_every_set_independent_kernel_is_tested():
    from sprokr_graphs.grakel_kernel import SET_INDEPENDENT

    assert {name for name, _, _ in SET_INDEPENDENT_CASES} == SET_INDEPENDENT


@pytest.mark.parametrize("name, params, vector", SET_INDEPENDENT_CASES,
                         ids=[f"{n}{'-' + ','.join(p) if p else ''}" for n, p, _ in SET_INDEPENDENT_CASES])
def test_grakel_set_independent_block_is_the_union_gram_block(name, params, vector):
    """An allow-listed (set-independent) GraKeL kernel computes a block between two sets
    directly (raw block over GraKeL's diagonal) and gives the union Gram's normalised block,
    on sets of unequal sizes each with node labels the other lacks."""
    from sprokr_graphs import GrakelKernel

    k = GrakelKernel(kernel=name, params=params)
    for seed in (0, 1):
        A, B = _unequal_sets(seed, vector)
        K = k(A, B)
        assert K.shape == (4, 9)
        np.testing.assert_allclose(K, _union_reference(k, A, B), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(k(B, A), K.T, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, params", [
    ("OddSth", {}), ("Propagation", {"random_state": 0}), ("HadamardCode", {}),
    ("NeighborhoodHash", {"random_state": 0}), ("WeisfeilerLehman", {"base_graph_kernel": "OddSth"}),
    ("WeisfeilerLehman", {"base_graph_kernel": ("NeighborhoodHash", {"random_state": 0})})])
def test_grakel_set_dependent_block_stays_on_the_union_gram(name, params):
    """A set-dependent GraKeL kernel (or WL over a set-dependent base, given as a class or as
    GraKeL's (class, params) pair) is read from the union Gram: the direct formula differs on
    these sets, so the direct path would fail here."""
    import grakel.kernels as gk
    from sprokr_graphs import GrakelKernel

    base = params.get("base_graph_kernel")
    if isinstance(base, str):
        params = {"base_graph_kernel": getattr(gk, base)}
    elif base is not None:
        params = {"base_graph_kernel": (getattr(gk, base[0]), base[1])}
    k = GrakelKernel(kernel=name, params=params)
    A, B = _unequal_sets(0)
    ref = _union_reference(k, A, B)
    assert np.abs(_direct_formula(k, A, B) - ref).max() > 1e-3  # the sets tell the paths apart
    np.testing.assert_allclose(k(A, B), ref, rtol=1e-12, atol=1e-14)


def test_grakel_block_evaluations_direct_only_for_the_listed_class(monkeypatch):
    """RandomWalkLabeled (listed) costs |A| |B| + |A| + |B| pair evaluations for a block;
    a user's subclass of it, even of the same name, is not listed (it may change anything)
    and costs the union's Gram, n (n + 1) / 2 with n = |A| + |B|.  Counted on GraKeL's own
    pairwise_operation, which still computes every value."""
    from grakel.kernels import RandomWalkLabeled
    from sprokr_graphs import GrakelKernel

    calls = []
    real = RandomWalkLabeled.pairwise_operation

    def counted(self, x, y):
        calls.append(type(self))
        return real(self, x, y)

    monkeypatch.setattr(RandomWalkLabeled, "pairwise_operation", counted)
    mine = type("RandomWalkLabeled", (RandomWalkLabeled,), {})  # a user's variant, same name

    A, B = _unequal_sets(0)
    listed = GrakelKernel(kernel="RandomWalkLabeled", params={"lamda": 0.01})
    K = listed(A, B)
    assert calls == [RandomWalkLabeled] * (4 * 9 + 4 + 9)
    calls.clear()
    user = GrakelKernel(kernel="RandomWalkLabeled", params={"lamda": 0.01})
    user._make = lambda: mine(normalize=False, lamda=0.01)
    np.testing.assert_allclose(user(A, B), K, rtol=1e-12)
    assert calls == [mine] * (13 * 14 // 2)


def test_wl_features_are_stable_across_calls(graphs):
    _, G = graphs
    k = WLKernel()
    A = k.prepare(G[:50])
    B = k.prepare(G[25:75])
    assert np.allclose(k.pairwise(A.take(np.arange(25, 50)), B.take(np.arange(25))), k(G[25:50]))
    assert np.allclose(np.diag(k(G[:10])), 1.0)


def test_wl_embedding_of_a_large_candidate_list_matches_the_small_one(graphs):
    """~10000 graphs (the sample repeated) embed in one call to the same kernel values as the
    sample alone (its speed is measured by benchmarks/kernels.py, not here)."""
    _, G = graphs
    big = G * 34
    k = WLKernel()
    F = k.prepare(big)
    assert len(F) == len(big)
    n = len(G)
    rows = np.array([0, 5, n + 5, 33 * n + 7])
    K_big = k.pairwise(F.take(rows), k.prepare(G[:10]))
    K_small = k(G[:10])
    assert np.allclose(K_big[0], K_small[0]) and np.allclose(K_big[1], K_small[5])
    assert np.allclose(K_big[2], K_small[5]) and np.allclose(K_big[3], k(G[7:8], G[:10])[0])


def test_wl_errors():
    G = nx.Graph()
    G.add_node(0)
    with pytest.raises(ValueError, match="graph 0: node 0 has no 'label'"):
        WLKernel().prepare([G])
    with pytest.raises(ValueError, match="n_iter"):
        WLKernel(n_iter=-1).prepare([])
    # normalize="no" was true (normalised values, and ``normalized`` declared)
    for cls in (WLKernel, CoreWLKernel):
        with pytest.raises(ValueError, match="^normalize must be True or False, got 'no'$"):
            cls(normalize="no").prepare([G])
    with pytest.raises(ValueError, match="^normalize must be True or False, got 0$"):
        get_registry().create("output_kernel", "grakel", {"normalize": 0}).check_params()
    assert WLKernel(normalize=np.False_).check_params().normalized is False


def test_ged_self_is_zero_and_counts_edits(graphs):
    _, G = graphs
    d, to = graph_edit_distance(G[3], G[3])
    assert d == 0 and not to
    H = G[3].copy()
    u, v = next(iter(H.edges))
    H.edges[u, v]["label"] = 3 if H.edges[u, v]["label"] != 3 else 1
    assert graph_edit_distance(G[3], H, edge_labels=True)[0] == 1
    assert graph_edit_distance(G[3], H, edge_labels=False)[0] == 0
    res = mean_graph_edit_distance([G[1], G[2]], [G[1], None])
    assert res["mean"] == pytest.approx((G[2].number_of_nodes() + G[2].number_of_edges()) / 2)
    assert res["n_timeouts"] == 0 and res["n_exact"] == 2


def _mol(smiles):
    from sprokr_chem import smiles_to_graph
    return smiles_to_graph(smiles)


@pytest.mark.parametrize("a, b, with_labels, without", [
    ("CCO", "CCO", 0, 0),
    ("CCO", "CCN", 1, 1),          # relabel one atom
    ("CCO", "CCCO", 2, 2),         # insert one atom and its bond
    ("CC=C", "CCC", 1, 0),         # a double bond becomes single
    ("CCC", "C1CC1", 1, 1),        # close the ring: one edge
    ("C#N", "CC=O", 4, 3),         # N->O, bond order, insert C, insert its bond
    ("O", "CC", 3, 3),             # relabel, insert one atom and one bond
])
def test_exact_ged_on_hand_computed_pairs(a, b, with_labels, without):
    G, H = _mol(a), _mol(b)
    assert exact_graph_edit_distance(G, H, edge_labels=True) == (with_labels, True)
    assert exact_graph_edit_distance(H, G, edge_labels=False) == (without, True)
    assert exact_graph_edit_distance(G, None) == (G.number_of_nodes() + G.number_of_edges(), True)


def test_exact_ged_refuses_self_loops():
    """The program maps edges between two nodes only: a self-loop was dropped (distance 0 to
    the loop-free graph, networkx says 1) while the empty-graph shortcut counted it."""
    G = nx.path_graph(3)
    nx.set_node_attributes(G, "C", "label")
    H = G.copy()
    H.add_edge(1, 1)
    for a, b in ((G, H), (H, G), (H, None), (None, H)):
        with pytest.raises(ValueError, match="self-loop"):
            exact_graph_edit_distance(a, b)
    assert graph_edit_distance(G, H, method="networkx")[0] == 1


def test_exact_ged_agrees_with_networkx_on_tiny_graphs():
    rng = np.random.default_rng(0)

    def rand_graph():
        G = nx.gnp_random_graph(int(rng.integers(1, 5)), 0.5, seed=int(rng.integers(2**31)))
        for v in G:
            G.nodes[v]["label"] = "CNO"[rng.integers(3)]
        for u, v in G.edges:
            G.edges[u, v]["label"] = int(rng.integers(1, 3))
        return G

    match = lambda x, y: x["label"] == y["label"]  # noqa: E731
    for _ in range(25):
        G, H = rand_graph(), rand_graph()
        for el in (True, False):
            ref = nx.graph_edit_distance(G, H, node_match=match, edge_match=match if el else None)
            assert exact_graph_edit_distance(G, H, edge_labels=el) == (ref, True)
        ref = nx.graph_edit_distance(G, H)  # no labels at all
        assert exact_graph_edit_distance(G, H, edge_labels=False, node_label=None) == (ref, True)


def test_exact_ged_on_qm9_molecules_is_symmetric_and_bounded(graphs):
    _, G = graphs
    for i in range(3):
        d, ex = exact_graph_edit_distance(G[i], G[i + 10])
        assert ex and exact_graph_edit_distance(G[i + 10], G[i]) == (d, True)
        lo = abs(G[i].number_of_nodes() - G[i + 10].number_of_nodes()) + abs(
            G[i].number_of_edges() - G[i + 10].number_of_edges())
        assert lo <= d <= sum(g.number_of_nodes() + g.number_of_edges() for g in (G[i], G[i + 10]))
    with pytest.raises(ValueError, match="time_limit"):
        exact_graph_edit_distance(G[0], G[1], time_limit=0)
    with pytest.raises(ValueError, match="method"):
        graph_edit_distance(G[0], G[1], method="astar")


def test_wl_output_kernel_by_name_in_fit(graphs):
    smiles, G = graphs
    assert get_registry().get("output_kernel", "wl").plugin == "graphs"
    m = SISOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=1e-4, output_sketch="psg",
               m_y=80, output_sketch_params={"p": 0.05}, random_state=0).fit(smiles[:250], G[:250])
    idx = m.predict_topk(smiles[:30], candidates=G, k=1).indices[:, 0]
    assert np.mean(idx == np.arange(30)) > 0.5


def _naive_wl_counts(G, n_iter, node_attrs, edge_attr, tag=()):
    """WL label counts written plainly: labels are nested tuples, neighbours sorted."""
    lab = {v: tuple(G.nodes[v][a] for a in node_attrs) for v in G}
    counts = Counter((tag, 0, lab[v]) for v in G)
    for t in range(1, n_iter + 1):
        lab = {v: (lab[v], tuple(sorted(
            (G.edges[v, u][edge_attr] if edge_attr else None, lab[u]) for u in G[v])))
            for v in G}
        counts.update((tag, t, lab[v]) for v in G)
    return counts


def _naive_core_counts(G, n_iter, node_attrs, edge_attr, levels):
    counts = Counter()
    core = nx.core_number(G)
    for level in levels:
        sub = G.subgraph([v for v in G if core[v] >= level])
        counts.update(_naive_wl_counts(sub, n_iter, node_attrs, edge_attr, tag=level))
    return counts


def _naive_gram(counts):
    K = np.array([[sum(a[k] * b[k] for k in a if k in b) for b in counts] for a in counts], dtype=float)
    d = np.sqrt(np.diag(K))
    return K / np.outer(d, d)


@pytest.mark.parametrize("node_attrs,edge_attr", [
    (("label", "aromatic", "num_hs"), "bond_order"),   # the default on molecule graphs
    (("label",), "bond_order"),
    (("label",), None),
])
def test_edge_labelled_wl_equals_naive_reference(node_attrs, edge_attr):
    from sprokr_chem import smiles_to_graph

    # small molecules that the plain WL confuses (single vs double vs triple bonds, charges,
    # aromatic rings, pyrrole vs pyridine nitrogens)
    smiles = ["CCO", "C=CO", "C#CO", "CC=O", "c1ccccc1", "C1=CCCCC1", "C1CCCCC1", "c1cc[nH]c1",
              "c1ccncc1", "C[N+](C)(C)C", "CC(=O)[O-]", "CC(=O)O", "OC1CC2CC1C2", "N#CC1=CC1"]
    G = [smiles_to_graph(s) for s in smiles]
    nl = node_attrs[0] if len(node_attrs) == 1 else node_attrs
    for n_iter in (1, 3):
        K = WLKernel(n_iter=n_iter, node_label=nl, edge_label=edge_attr)(G)
        ref = _naive_gram([_naive_wl_counts(g, n_iter, node_attrs, edge_attr) for g in G])
        assert np.allclose(K, ref, atol=1e-12)
    max_core = max(max(nx.core_number(g).values()) for g in G)
    Kc = CoreWLKernel(n_iter=2, node_label=nl, edge_label=edge_attr)(G)
    ref = _naive_gram([_naive_core_counts(g, 2, node_attrs, edge_attr, range(max_core, -1, -1))
                       for g in G])
    assert np.allclose(Kc, ref, atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-10


def test_wl_default_labelling_on_molecules_and_plain_graphs(graphs):
    from sprokr_chem import smiles_to_graph

    G = [smiles_to_graph(s) for s in ("CC=O", "C=CO", "CCO")]
    # bond orders separate the enol from acetaldehyde (the plain WL cannot)
    assert WLKernel(node_label="label", edge_label=None)(G)[0, 1] == pytest.approx(1.0)
    assert WLKernel()(G)[0, 1] < 0.9
    F = WLKernel().prepare(G)
    assert F.labelling == "nodes=label,aromatic,num_hs;edges=bond_order"
    # graphs without the molecule attributes fall back to the plain labelling ...
    H = [nx.relabel_nodes(nx.Graph(g.edges()), {}) for g in G]
    for h, g in zip(H, G):
        nx.set_node_attributes(h, {v: g.nodes[v]["label"] for v in h}, "label")
    Fh = WLKernel().prepare(H)
    assert Fh.labelling == "nodes=label;edges=-"
    assert np.allclose(WLKernel().pairwise(Fh, Fh), WLKernel(node_label="label", edge_label=None)(G))
    # ... and mixing the two labellings is refused with a clear message
    with pytest.raises(ValueError, match="different labellings"):
        WLKernel().pairwise(F, Fh)
    with pytest.raises(ValueError, match="has no 'bond_order' attribute"):
        WLKernel(edge_label="bond_order").prepare(H)


def test_wl_features_do_not_depend_on_notation():
    from sprokr_chem import smiles_to_graph

    # one molecule written three ways (Kekule / aromatic / explicit hydrogens, other atom order)
    forms = ["CC1=CC=CC=C1O", "Cc1ccccc1O", "[H]Oc1c([H])c([H])c([H])c([H])c1C([H])([H])[H]"]
    for cls in (WLKernel, CoreWLKernel):
        K = cls()([smiles_to_graph(s) for s in forms])
        assert np.allclose(K, 1.0)


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("core", [False, True])
def test_empty_graph_kernel_equals_its_diagonal(normalize, core):
    from sprokr_graphs.wl import CoreWLKernel, WLKernel

    k = (CoreWLKernel if core else WLKernel)(normalize=normalize)
    G = nx.path_graph(3)
    nx.set_node_attributes(G, "C", "label")
    P = k.prepare_outputs([nx.Graph(), G, nx.Graph()])
    K = k.pairwise(P, P)
    np.testing.assert_allclose(np.diag(K), k.diag(P))  # k(E, E) = diag(E)
    assert K[0, 2] == K[0, 0] > 0 and K[0, 1] == 0 == K[1, 0]


def _labelled(G, label="a"):
    nx.set_node_attributes(G, label, "label")
    return G


PLAIN = dict(node_label="label", edge_label=None)  # GraKeL's WL: no molecule attributes read


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("cls", [WLKernel, CoreWLKernel])
def test_a_batch_of_only_empty_graphs_is_an_empty_graph_of_a_mixed_batch(cls, normalize):
    k = cls(normalize=normalize, **PLAIN)
    E = k.prepare([nx.Graph(), nx.Graph()])  # no node in the whole batch
    np.testing.assert_allclose(k.pairwise(E, E), np.ones((2, 2)))
    np.testing.assert_allclose(k.diag(E), 1.0)
    mixed = k.prepare([nx.Graph(), _labelled(nx.path_graph(3))])
    np.testing.assert_allclose(k.pairwise(E, mixed), [[1.0, 0.0], [1.0, 0.0]])


@pytest.mark.parametrize("normalize", [True, False])
def test_core_wl_graphs_without_cores_above_min_core_have_no_feature(normalize):
    # cores i > min_core = 1: the triangle has its 2-core, the path and the edgeless graph
    # none (their sums are empty: k = 0), unlike an empty graph (the reserved feature)
    G = [_labelled(nx.cycle_graph(3)), _labelled(nx.path_graph(3)), _labelled(nx.empty_graph(2), "b"),
         nx.Graph()]
    k = CoreWLKernel(min_core=1, normalize=normalize, **PLAIN)
    P = k.prepare(G)
    K = k.pairwise(P, P)
    top = 1.0 if normalize else 36.0  # the triangle's 2-core: 4 rounds of 3 alike labels, 4 * 3^2
    np.testing.assert_allclose(K, np.diag([top, 0.0, 0.0, 1.0]))
    np.testing.assert_allclose(k.diag(P), np.diag(K))  # the zero rows too
    # a zero diagonal: the kernel does not claim k(y, y) = 1 (decoders read diag instead)
    assert not k.normalized
    assert CoreWLKernel(normalize=True).normalized and WLKernel(min_core=1).normalized


@pytest.mark.parametrize("bad", [-5, -2, 1.5, True, "1", None])
def test_core_wl_min_core_must_be_an_integer_from_minus_one(bad):
    from sprokr import IOKR

    G = [_labelled(nx.cycle_graph(3)), _labelled(nx.path_graph(3))]
    with pytest.raises(ValueError, match="min_core must be an integer >= -1"):
        CoreWLKernel(min_core=bad, **PLAIN)(G)
    m = IOKR(input_kernel="linear", output_kernel="core_wl", output_kernel_params={"min_core": bad})
    with pytest.raises(ValueError, match="min_core"):  # at fit, before any fitted state
        m.fit(np.eye(2), G)
    assert not hasattr(m, "output_kernel_")


def test_core_wl_min_core_above_every_core_gives_no_feature():
    G = [_labelled(nx.cycle_graph(3)), _labelled(nx.path_graph(3)), nx.Graph()]
    for min_core in (2, 7):  # the batch's largest core is 2
        K = CoreWLKernel(min_core=min_core, normalize=False, **PLAIN)(G)
        np.testing.assert_allclose(K, np.diag([0.0, 0.0, 1.0]))


def test_auto_labelling_of_a_batch_without_edges_or_nodes_compares_with_either():
    from sprokr_graphs.wl import WLFeatures

    edgeless, path = _labelled(nx.empty_graph(2)), _labelled(nx.path_graph(2))
    k = WLKernel()  # "auto": no edge to decide from in the first set
    A, B = k.prepare([edgeless]), k.prepare([path])
    assert A.labelling == "nodes=label;edges=?" and B.labelling == "nodes=label;edges=-"
    np.testing.assert_allclose(k.pairwise(A, B), WLKernel(**PLAIN)([edgeless], [path]))
    assert WLFeatures.concat([A, B]).labelling == "nodes=label;edges=-"
    # no node at all: nothing decides the node labels either
    E = k.prepare([nx.Graph()])
    assert E.labelling == "nodes=?;edges=?"
    np.testing.assert_allclose(k.pairwise(E, B), [[0.0]])
    np.testing.assert_allclose(k.pairwise(E, k.prepare([nx.Graph(), path])), [[1.0, 0.0]])
    # single atoms against molecules: the edge labelling of the molecules is taken
    mols = [_mol("CCO"), _mol("C")]
    chem = dict(node_label=("label", "aromatic", "num_hs"), edge_label="bond_order")
    np.testing.assert_allclose(k(mols[1:], mols[:1]), WLKernel(**chem)(mols[1:], mols[:1]))
    # a labelling that was decided still has to match
    with pytest.raises(ValueError, match="different labellings"):
        k.pairwise(k.prepare(mols[:1]), B)
    with pytest.raises(ValueError, match="cannot concatenate"):
        WLFeatures.concat([A, k.prepare(mols[:1]), B])


def test_wl_output_model_on_plain_graphs_ranks_edgeless_candidates():
    from sprokr import IOKR

    Y = [_labelled(nx.path_graph(n)) for n in range(2, 6)] + [_labelled(nx.cycle_graph(n)) for n in range(3, 7)]
    X = np.random.default_rng(0).normal(size=(len(Y), 3))
    m = IOKR(input_kernel="linear", output_kernel="wl", lam=1e-3).fit(X, Y)
    candidates = [_labelled(nx.empty_graph(n)) for n in (1, 2, 3)] + [nx.Graph()]
    top = m.predict_topk(X[:2], candidates=candidates, k=2)
    assert top.indices.shape == (2, 2)


def test_one_node_attribute_hashes_alike_named_alone_or_in_a_tuple():
    from sprokr_graphs.wl import node_label_key, wl_features, wl_features_from_arrays

    G = nx.path_graph(3)
    nx.set_node_attributes(G, {0: 1, 1: 2.5, 2: "c"}, "x")
    alone, tupled = (WLKernel(node_label=nl, edge_label=None) for nl in ("x", ("x",)))
    A, B = alone.prepare([G]), tupled.prepare([G])
    assert A.labelling == B.labelling
    np.testing.assert_allclose(alone.pairwise(A, B), [[1.0]])
    # the flat-array route reads one attribute the same way
    F = wl_features_from_arrays([3], [node_label_key(G.nodes[v]["x"]) for v in G], [0, 1], [1, 2],
                                labelling=A.labelling)
    np.testing.assert_allclose(alone.pairwise(A, F), [[1.0]])
    assert np.array_equal(wl_features([G], node_label=("x",)).ids, A.ids)


@pytest.mark.parametrize("cls", [WLKernel, CoreWLKernel])
def test_self_loops_are_dropped_by_both_wl_kernels(cls):
    P = _labelled(nx.path_graph(3))
    nx.set_edge_attributes(P, 1, "bond_order")
    L = P.copy()
    L.add_edge(0, 0)  # no bond_order on the loop: its label is never read
    for k in (cls(**PLAIN), cls(node_label="label", edge_label="bond_order"), cls(node_label="label")):
        K = k([P, L])
        np.testing.assert_allclose(K, K[0, 0])  # the loop changes nothing
    assert cls(node_label="label").prepare([L]).labelling == "nodes=label;edges=bond_order"


@pytest.mark.parametrize("k", [WLKernel(), CoreWLKernel()], ids=["wl", "core_wl"])
def test_a_sample_that_is_not_a_graph_is_named_by_its_type(k):
    """The type was given after a fixed article: "sample 0 is a ndarray", "a int"."""
    for sample, kind in ((np.zeros(3), "ndarray"), (3, "int"), ("CCO", "str")):
        with pytest.raises(TypeError, match=f"must be networkx graphs .*: sample 0 is of type {kind}"):
            k.prepare([sample])


@pytest.mark.parametrize("k", [WLKernel(), CoreWLKernel()], ids=["wl", "core_wl"])
def test_a_single_graph_instead_of_a_list_is_named(k):
    from sprokr_graphs import GrakelKernel

    G = _labelled(nx.path_graph(3))
    for kernel in (k, GrakelKernel()):
        with pytest.raises(TypeError, match="expected a sequence of graphs, got a single networkx graph"):
            kernel(G)
