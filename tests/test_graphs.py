import time

import numpy as np
import pytest

grakel = pytest.importorskip("grakel")
pytest.importorskip("sprokr_graphs")
pytest.importorskip("sprokr_chem")
import networkx as nx  # noqa: E402

from sprokr import SISOKR  # noqa: E402
from sprokr.metrics import graph_edit_distance, mean_graph_edit_distance  # noqa: E402
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
    assert res["n_timeouts"] == 0


def test_wl_output_kernel_by_name_in_fit(graphs):
    smiles, G = graphs
    assert get_registry().get("output_kernel", "wl").plugin == "graphs"
    m = SISOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=1e-4, output_sketch="psg",
               m_y=80, output_sketch_params={"p": 0.05}, random_state=0).fit(smiles[:250], G[:250])
    idx = m.predict_topk(smiles[:30], candidates=G, k=1).indices[:, 0]
    assert np.mean(idx == np.arange(30)) > 0.5
