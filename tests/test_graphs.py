import time

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


@pytest.fixture(scope="module")
def graphs(qm9_smiles_graphs):
    return qm9_smiles_graphs


def test_wl_matches_grakel_and_is_psd(graphs):
    from grakel.kernels import CoreFramework, WeisfeilerLehman

    _, G = graphs
    sub = G[:60]
    K = WLKernel(n_iter=3)(sub)
    ref = WeisfeilerLehman(n_iter=3, normalize=True).fit_transform(
        grakel.graph_from_networkx(sub, node_labels_tag="label"))
    assert np.allclose(K, ref, atol=1e-10)
    assert np.linalg.eigvalsh(K).min() > -1e-8
    Kc = CoreWLKernel(n_iter=2)(sub)
    ref = CoreFramework(normalize=True, base_graph_kernel=(WeisfeilerLehman, {"n_iter": 2})).fit_transform(
        grakel.graph_from_networkx(sub, node_labels_tag="label"))
    assert np.allclose(Kc, ref, atol=1e-10)
    assert np.linalg.eigvalsh(Kc).min() > -1e-8


def test_wl_features_are_stable_across_calls(graphs):
    _, G = graphs
    k = WLKernel()
    A = k.prepare(G[:50])
    B = k.prepare(G[25:75])
    assert np.allclose(k.pairwise(A.take(np.arange(25, 50)), B.take(np.arange(25))), k(G[25:50]))
    assert np.allclose(np.diag(k(G[:10])), 1.0)


def test_wl_candidate_embedding_is_fast(graphs):
    _, G = graphs
    big = G * 34  # ~10000 graphs
    t0 = time.perf_counter()
    F = WLKernel().prepare(big)
    assert len(F) == len(big)
    assert time.perf_counter() - t0 < 10


def test_wl_errors():
    G = nx.Graph()
    G.add_node(0)
    with pytest.raises(ValueError, match="graph 0: node 0 has no 'label'"):
        WLKernel().prepare([G])
    with pytest.raises(ValueError, match="n_iter"):
        WLKernel(n_iter=-1).prepare([])


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
