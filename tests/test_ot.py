import numpy as np
import pytest

pytest.importorskip("ot")
pytest.importorskip("sprokr_ot")
pytest.importorskip("sprokr_chem")
import networkx as nx  # noqa: E402

from sprokr import IOKR, SISOKR  # noqa: E402
from sprokr.registry import get_registry  # noqa: E402
from sprokr_ot import FGWBarycenterDecoder, fgw_distance, label_alphabet  # noqa: E402

match = dict(node_match=lambda a, b: a["label"] == b["label"],
             edge_match=lambda a, b: a["label"] == b["label"])


@pytest.fixture(scope="module")
def data(qm9_smiles_graphs):
    return qm9_smiles_graphs


def test_fgw_distance(data):
    _, G = data
    assert fgw_distance(G[0], G[0]) == pytest.approx(0.0, abs=1e-12)
    assert fgw_distance(G[0], G[1]) > 0
    assert fgw_distance(G[0], G[1], alpha=0.0) == pytest.approx(fgw_distance(G[1], G[0], alpha=0.0))


def _labelled_path(labels, edge_labels=None):
    G = nx.path_graph(len(labels))
    nx.set_node_attributes(G, dict(enumerate(labels)), "label")
    for (u, v), e in zip(G.edges, edge_labels or ()):
        G.edges[u, v]["label"] = e
    return G


def test_fgw_labels_are_compared_by_value():
    """Node labels are values (as the WL kernels' tuple labelling): the alphabet may be any
    sequence of the graphs' own labels, 1 and 1.0 are one label, "1" another."""
    G = _labelled_path([1, 2, 1])
    for alphabet in ([1, 2], (2, 1), np.array([1, 2]), [1.0, 2.0], np.array([1, 2, 3])):
        assert fgw_distance(G, G, alphabet=alphabet) == pytest.approx(0.0, abs=1e-12)
    assert fgw_distance(G, _labelled_path([1.0, np.int64(2), 1])) == pytest.approx(0.0, abs=1e-12)
    assert fgw_distance(G, _labelled_path(["1", "2", "1"])) > 0.5  # no label in common
    # the alphabet keeps the labels as they occur: ints stay ints, strings sort as before
    assert label_alphabet([G, _labelled_path([2.0, 3])]) == [1, 2, 3]
    assert [type(a) for a in label_alphabet([G, _labelled_path([2.0, 3])])] == [int, int, int]
    assert label_alphabet([_labelled_path(["O", "C", "N+"])]) == ["C", "N+", "O"]
    with pytest.raises(ValueError, match="twice"):
        fgw_distance(G, G, alphabet=[1, 2, 1.0])
    with pytest.raises(ValueError, match="G2: node 1 has the label 3, which is not in the alphabet"):
        fgw_distance(G, _labelled_path([1, 3]), alphabet=[1, 2])


def test_fgw_decoder_keeps_the_training_label_type(data):
    """Int-labelled training graphs are decoded with int labels: the barycenters of training
    inputs are their own graphs, labels and all (they came back as '6', '7', ...)."""
    smiles, G = data
    z = {"C": 6, "N": 7, "O": 8, "F": 9}

    def int_labelled(g):
        H = nx.Graph()
        H.add_nodes_from((v, {"label": z[d["label"]]}) for v, d in g.nodes(data=True))
        H.add_edges_from((u, v, {"label": d["label"]}) for u, v, d in g.edges(data=True))
        return H

    Gi = [int_labelled(g) for g in G[:60]]
    m = IOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=1e-5, decoder="fgw_barycenter",
             decoder_params={"select": "median", "n_neighbors": 3}).fit(smiles[:60], Gi)
    pred = m.predict(smiles[:5])
    assert {type(d["label"]) for p in pred for _, d in p.nodes(data=True)} == {int}
    assert all(nx.is_isomorphic(p, t, **match) for p, t in zip(pred, Gi[:5]))
    dec = FGWBarycenterDecoder()
    B = dec.barycenter([Gi[0], Gi[0].copy()], [0.3, 0.7], np.asarray(label_alphabet(Gi)))
    assert nx.is_isomorphic(B, Gi[0], **match)


def test_fgw_distance_refuses_bad_inputs_clearly():
    G = _labelled_path([1, 2, 1])
    unlabelled = nx.path_graph(3)
    cases = [
        ((unlabelled, G), {}, ValueError, "G1: node 0 has no 'label' attribute"),
        ((G, [G]), {}, TypeError, "G2 must be a networkx graph, got list"),
        ((G, G), {"alpha": "0.5"}, TypeError, "alpha must be a number in \\[0, 1\\], got str"),
        ((G, G), {"alpha": float("nan")}, ValueError, "alpha must lie in"),
        ((_labelled_path([1, 2], ["double"]), G), {}, ValueError, "G1: edge \\(0, 1\\) has label='double'.*numeric"),
        ((G, _labelled_path([1, 2], [float("nan")])), {}, ValueError, "G2: edge \\(0, 1\\) has label=nan.*finite"),
        ((nx.DiGraph(G), G), {}, ValueError, "G1 is directed"),
        ((G, G), {"alphabet": "12"}, TypeError, "alphabet must be a sequence"),
        ((G, _labelled_path([1, float("nan")])), {}, ValueError, "G2: node 1.*NaN"),
    ]
    for args, kw, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fgw_distance(*args, **kw)
    # unlabelled edges weigh 1, as edges without the attribute
    assert fgw_distance(_labelled_path([1, 2], ["double"]), G, edge_label=None) > 0


def test_fgw_barycenter_refuses_bad_inputs_clearly():
    G = _labelled_path([1, 2, 1], [1, 2])
    dec = FGWBarycenterDecoder(select="median")
    cases = [
        (([], [], [1, 2]), ValueError, "graphs is empty"),
        (([G, G.copy()], [0.0, 0.0], [1, 2]), ValueError, "all zero"),
        (([G, G.copy(), G.copy()], [0.5, 0.5], [1, 2]), ValueError, "one number per graph: 3 graphs"),
        (([G, G.copy()], [-1.0, 2.0], [1, 2]), ValueError, "finite and >= 0"),
        (([G, G.copy()], [np.nan, 1.0], [1, 2]), ValueError, "finite and >= 0"),
        (([G, nx.path_graph(2)], [0.5, 0.5], [1, 2]), ValueError, "graphs\\[1\\]: node 0 has no 'label'"),
        (([G, _labelled_path([1, 3])], [0.5, 0.5], [1, 2]), ValueError, "graphs\\[1\\]: node 1 has the label 3"),
        ((G, [1.0], [1, 2]), TypeError, "sequence of networkx graphs"),
    ]
    for args, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            dec.barycenter(*args)
    for params, msg in (({"max_iter": -1}, "max_iter"), ({"max_iter": True}, "max_iter"),
                        ({"tol": float("nan")}, "tol"), ({"alpha": 2.0}, "alpha"),
                        ({"threshold": "1"}, "threshold")):
        with pytest.raises(ValueError, match=msg):
            FGWBarycenterDecoder(**params).barycenter([G], [1.0], [1, 2])
        with pytest.raises(ValueError, match=msg):  # at fit, through the model's decoder check
            FGWBarycenterDecoder(**params).validate()
    # decode names the candidate, before any barycenter is computed
    from sprokr.decoders import CandidateIndex

    pool = [G, _labelled_path([1, 2], ["double"])]
    with pytest.raises(ValueError, match="candidate 1: edge \\(0, 1\\) has label='double'"):
        dec.decode(np.zeros((1, 1)), CandidateIndex(pool, np.zeros((2, 1))), weights=np.array([[0.5, 0.5]]))
    # an empty graph has no node to carry its weight: it leaves the barycenter (POT failed on it)
    E = nx.Graph()
    assert nx.is_isomorphic(dec.barycenter([G, E, G.copy()], [0.4, 0.2, 0.4], [1, 2]), G, **match)
    assert dec.barycenter([G, E], [0.4, 0.6], [1, 2]).number_of_nodes() == 0


def test_barycenter_of_one_graph_is_that_graph(data):
    _, G = data
    dec = FGWBarycenterDecoder()
    alphabet = label_alphabet(G)
    for g in G[:10]:
        assert nx.is_isomorphic(dec.barycenter([g], [1.0], alphabet), g, **match)
        assert nx.is_isomorphic(dec.barycenter([g, g], [0.3, 0.7], alphabet), g, **match)
    # two distinct copies are not merged: POT's fgw_barycenters itself must return the graph
    # (the first 30 sample molecules, symmetric ones such as CCC1(C)CCC1C included)
    failed = [i for i, g in enumerate(G[:30])
              if not nx.is_isomorphic(dec.barycenter([g, g.copy()], [0.3, 0.7], alphabet), g, **match)]
    assert failed == []


def test_fgw_decoder_by_name_returns_graphs_and_smiles(data):
    smiles, G = data
    assert get_registry().get("decoder", "fgw_barycenter").plugin == "ot"
    m = IOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=1e-5,
             decoder="fgw_barycenter", decoder_params={"n_neighbors": 3}).fit(smiles[:200], G[:200])
    pred = m.predict(smiles[:8])
    assert len(pred) == 8 and all(isinstance(g, nx.Graph) for g in pred)
    assert all("smiles" in g.graph for g in pred)
    # training inputs: alpha(x) concentrates on the training graph itself
    assert np.mean([nx.is_isomorphic(p, t, **match) for p, t in zip(pred, G[:8])]) >= 0.5
    assert sum(g.graph["smiles"] is not None for g in pred) >= 4
    with pytest.raises(ValueError, match="top_k"):
        m.predict_topk(smiles[:2], k=2)


def test_fgw_decoder_with_sketched_output(data):
    smiles, G = data
    m = SISOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=1e-4, output_sketch="psg",
               m_y=60, output_sketch_params={"p": 0.05}, random_state=0).fit(smiles[:200], G[:200])
    dec = FGWBarycenterDecoder(n_neighbors=3)
    H, index = m.predict_coordinates(smiles[200:205]), m.default_index_
    idx, W = dec.neighbor_weights(H, index)
    assert np.allclose(W.sum(axis=1), 1) and (W >= 0).all()
    # alpha(x) is exact for sketched outputs too (predict_weights); only an explicit
    # candidate set has no training weights
    alpha = m.predict_weights(smiles[200:205])
    idx_a, W_a = FGWBarycenterDecoder(weights="alpha", n_neighbors=3).neighbor_weights(H, index, alpha)
    assert np.allclose(W_a.sum(axis=1), 1) and (W_a >= 0).all()
    with pytest.raises(ValueError, match="default candidates"):
        FGWBarycenterDecoder(weights="alpha").neighbor_weights(H, m.make_candidate_index(G[:50]))
    out = dec.decode(H[:3], index)
    assert len(out) == 3


def test_fgw_output_sanitises_on_sample_molecules(data):
    """Barycenters of unseen molecules' neighbours are valid molecules (RDKit), every graph
    says how it was obtained, and the counts add up."""
    from sprokr_chem import graph_to_smiles

    smiles, G = data
    m = IOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=1e-4).fit(smiles[:200], G[:200])
    Xq = smiles[200:215]  # not training molecules: the barycenters are new graphs
    H, index, alpha = m.predict_coordinates(Xq), m.default_index_, m.predict_weights(Xq)
    for select in ("median", "score"):
        dec = FGWBarycenterDecoder(n_neighbors=4, select=select, n_starts=2)
        out = dec.decode(H, index, weights=alpha)
        assert all(graph_to_smiles(g) is not None for g in out)
        assert all(g.graph["smiles"] == graph_to_smiles(g) for g in out)
        assert sum(dec.counts_.values()) == len(Xq)
        assert {g.graph["fgw_status"] for g in out} <= set(dec.counts_)
    # the median barycenters are new graphs (not all copies of a neighbour)
    nb = [G[i] for i in range(200)]
    new = [not any(nx.is_isomorphic(g, t, **match) for t in nb) for g in
           FGWBarycenterDecoder(n_neighbors=4, select="median").decode(H, index, weights=alpha)]
    assert sum(new) >= 3


def test_fgw_decoding_pieces():
    from sprokr_chem import graph_to_smiles, smiles_to_graph
    from sprokr_ot import decode_edges, repair_molecule
    from sprokr_ot.fgw import _max_valence, _weighted_median

    assert [_max_valence(a) for a in ("C", "N", "O", "F", "N+", "O-")] == [4, 3, 2, 1, 4, 1]
    assert _max_valence("X1") is None
    assert _weighted_median([9, 7, 8], [0.2, 0.4, 0.4]) == 8
    assert _weighted_median([9, 7, 8], [0.6, 0.2, 0.2]) == 9
    # a certain triangle of single bonds, an uncertain extra edge, a double-bond wish
    P = np.zeros((2, 4, 4))
    for i, j in ((0, 1), (1, 2), (0, 2)):
        P[0, i, j] = P[0, j, i] = 1.0
    P[0, 2, 3] = P[0, 3, 2] = 0.2   # below threshold but needed to connect node 3
    P[1, 0, 1] = P[1, 1, 0] = 0.9; P[0, 0, 1] = P[0, 1, 0] = 0.1  # mostly a double bond
    edges = decode_edges(P, [1.0, 2.0], caps=[4, 4, 4, 1])
    assert edges == {(0, 1): 2.0, (0, 2): 1.0, (1, 2): 1.0, (2, 3): 1.0}
    assert decode_edges(P, [1.0, 2.0], caps=[1, 4, 4, 4])[(0, 1)] == 1.0  # valence caps the order
    # repair: a pentavalent carbon loses a bond; disconnected pieces keep the largest one
    Gb = smiles_to_graph("CC(C)(C)C")
    Gb.add_edge(1, 5, label=1); Gb.nodes[5]["label"] = "C"
    caps = {v: _max_valence(d["label"]) for v, d in Gb.nodes(data=True)}
    assert graph_to_smiles(Gb) is None
    H = repair_molecule(Gb, graph_to_smiles, caps)
    assert H is not None and graph_to_smiles(H) == "CC(C)(C)C"
    with pytest.raises(ValueError, match="select"):
        FGWBarycenterDecoder(select="best")._check()


def test_model_score_fast_path_equals_pairwise(data):
    """The explicit-feature path of ModelScore equals sum_i a_i k(y_i, G) by pairwise."""
    from sprokr_graphs import WLKernel
    from sprokr_ot import ModelScore

    _, G = data
    rng = np.random.default_rng(0)
    coef = rng.normal(size=(3, 40))
    new = G[40:55] + [G[0]]
    for ky, half in ((WLKernel(), 0.0), (WLKernel(normalize=False), 0.5)):
        ms = ModelScore(ky, G[:40], coef, half)
        assert ms.explicit
        ref = np.asarray(ky(new, G[:40])) @ coef.T - half * np.diag(np.asarray(ky(new)))[:, None]
        for q in range(3):
            assert np.allclose(ms(q, new), ref[:, q], rtol=1e-10, atol=1e-10)


def test_model_score_takes_the_fast_path_for_a_batch_without_edges(data, monkeypatch):
    """New graphs without any edge (single atoms) are prepared with the labelling
    ``edges=?``, which compares with the molecules' ``edges=bond_order``: they are scored
    by the explicit features too (the labelling strings differ, so they went through the
    kernel's pairwise before), with the pairwise values."""
    import networkx as nx
    from sprokr_graphs import WLKernel
    from sprokr_ot import ModelScore

    _, G = data
    coef = np.random.default_rng(1).normal(size=(2, 40))
    atom = dict(G[0].nodes[next(iter(G[0].nodes))])  # a molecule graph's node attributes
    atoms = []
    for label in ("C", "N", "O"):
        g = nx.Graph()
        g.add_node(0, **{**atom, "label": label, "symbol": label})
        atoms.append(g)
    ky = WLKernel()
    ms = ModelScore(ky, G[:40], coef)
    assert ms.ref.get_labelling() != ky.prepare_outputs(atoms).get_labelling()  # edges=? against bond orders
    ref = np.asarray(ky(atoms, G[:40])) @ coef.T
    calls = []
    monkeypatch.setattr(WLKernel, "pairwise", lambda self, A, B: calls.append(1) or pytest.fail("pairwise used"))
    for q in range(2):
        np.testing.assert_allclose(ms(q, atoms), ref[:, q], rtol=1e-10, atol=1e-12)
    assert not calls


def test_molecule_edits_are_single_valid_edits():
    from sprokr_chem import graph_to_smiles, smiles_to_graph
    from sprokr_ot import molecule_edits

    G = smiles_to_graph("C1CC1O")  # cyclopropanol: a ring, one bridge to O
    caps = {"C": 4, "N": 3, "O": 2}
    edits = list(molecule_edits(G, ["C", "N", "O"], (1, 2, 3), max_nodes=5, caps=caps))
    for H in edits:
        assert nx.is_connected(H)
        assert abs(H.number_of_nodes() - 4) + abs(H.number_of_edges() - 4) <= 2
        for v, d in H.nodes(data=True):  # valences within the caps
            assert sum(e["label"] for _, _, e in H.edges(v, data=True)) <= caps[d["label"]]
    smi = {graph_to_smiles(H) for H in edits} - {None}
    expected = {"CC(C)O", "OC1CC1C", "CC1CC1", "NC1CC1", "C1CC1", "O=C1CC1", "NC1CC1O",
                "OCC1CC1", "OC1CCC1", "OC1CN1"}  # ..., atoms inserted, relabelled
    assert {graph_to_smiles(smiles_to_graph(e)) for e in expected} <= smi
    assert graph_to_smiles(G) not in smi  # every edit changes the molecule
    assert not any(H.number_of_nodes() > 5 for H in edits)
    assert all(H.number_of_nodes() <= 4 for H in molecule_edits(G, ["C"], (1,), max_nodes=4))
    # contraction: propanol's middle carbon goes, ethanol remains; never a triangle's atom
    chain = {graph_to_smiles(H) for H in molecule_edits(smiles_to_graph("CCCO"), ["C"], (1,), max_nodes=4)}
    assert "CCO" in chain


def test_model_guided_search_climbs_to_the_best_molecule():
    """With the WL similarity to a target as the score, the search reaches the target from a
    molecule a few edits away; a penalty on the target's key keeps it out."""
    from rdkit import Chem
    from sprokr_chem import graph_to_mol, mol_to_graph, smiles_to_graph
    from sprokr_graphs import WLKernel
    from sprokr_ot import model_guided_search

    ky = WLKernel()
    target = smiles_to_graph("CC(=O)NC")
    ref = ky.prepare([target])

    def score(graphs):
        return np.asarray(ky.pairwise(ky.prepare(graphs), ref))[:, 0]

    def canonical(G):
        mol = graph_to_mol(G)
        return None if mol is None else (Chem.MolToSmiles(mol), mol_to_graph(mol))

    caps = {"C": 4, "N": 3, "O": 2}
    start = smiles_to_graph("CCCO")  # four edits away; from e.g. CC(O)C greedy steps stop at acetone
    G, s, info = model_guided_search([start], score, ["C", "N", "O"], canonical, caps=caps, max_nodes=5,
                                     max_steps=6)
    assert Chem.MolToSmiles(graph_to_mol(G)) == "CNC(C)=O" and s == pytest.approx(1.0)
    assert not info["start"] and info["steps"] >= 2
    G2, s2, _ = model_guided_search([start], score, ["C", "N", "O"], canonical, caps=caps, max_nodes=5,
                                    max_steps=6, penalty=lambda k: 10.0 if k == "CNC(C)=O" else 0.0)
    assert Chem.MolToSmiles(graph_to_mol(G2)) != "CNC(C)=O" and s2 < 1.0
    # no step: the best start is returned as it is
    G3, _, info3 = model_guided_search([start, target], score, ["C"], canonical, max_steps=0)
    assert Chem.MolToSmiles(graph_to_mol(G3)) == "CNC(C)=O" and info3["start"]
    with pytest.raises(ValueError, match="valid molecule"):
        model_guided_search([nx.Graph()], score, ["C"], lambda G: None)


def test_fgw_decoder_with_search(data):
    """Search on: every graph a valid molecule, statuses counted, the margin keeps training
    molecules out, and the score of the returned graph is at least the proposals'."""
    from sprokr_chem import graph_to_smiles
    from sprokr_ot import ModelScore

    smiles, G = data
    m = IOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=1e-4).fit(smiles[:200], G[:200])
    Xq = smiles[200:210]
    H, index, alpha = m.predict_coordinates(Xq), m.default_index_, m.predict_weights(Xq)
    train = {graph_to_smiles(g) for g in G[:200]}
    # the best proposal (neighbours, i.e. training molecules, excluded by the margin), unsearched
    base = FGWBarycenterDecoder(n_neighbors=4, n_starts=1, search_steps=0, train_margin=np.inf, random_state=0)
    dec = FGWBarycenterDecoder(n_neighbors=4, n_starts=1, search_steps=3, search_beam=2, train_margin=np.inf,
                               random_state=0)
    out0, out = base.decode(H, index, weights=alpha), dec.decode(H, index, weights=alpha)
    assert all(g.graph["smiles"] is not None for g in out)
    assert sum(dec.counts_.values()) == len(Xq) and dec.counts_["searched"] >= 1
    assert not any(g.graph["smiles"] in train for g in out)
    score = ModelScore(index.kernel, index.candidates, alpha)
    compared = 0
    for q in range(len(Xq)):
        if out0[q].graph["smiles"] not in train:  # the search starts from it: it can only improve
            compared += 1
            assert score(q, [out[q]])[0] >= score(q, [out0[q]])[0] - 1e-9
    # (with train_margin=0 every unsearched answer was a training neighbour: nothing was compared)
    assert compared >= 3, compared  # 5 of the 10 queries
    # the pool's canonical SMILES are cached with the index (never saved), not on the decoder
    assert not any(k.startswith("_") for k in vars(dec)) and any("fgw" in str(k) for k in index.cache)
    with pytest.raises(ValueError, match="search_beam"):
        FGWBarycenterDecoder(search_beam=0)._check()
    with pytest.raises(ValueError, match="train_margin"):
        FGWBarycenterDecoder(train_margin=-1.0)._check()


@pytest.mark.parametrize("flag", ["repair", "to_smiles"])
@pytest.mark.parametrize("bad", ["no", 0, None])
def test_fgw_barycenter_decoder_flags_must_be_bools(flag, bad):
    """``repair`` and ``to_smiles`` are flags: ``"no"`` was read by its truth value (true)."""
    import re

    msg = rf"^{flag} must be True or False, got {re.escape(repr(bad))}$"
    with pytest.raises(ValueError, match=msg):
        FGWBarycenterDecoder(**{flag: bad}).validate()
    # at the model's check of its decoder, before any data is read
    with pytest.raises(ValueError, match=rf"{flag} must be True or False"):
        SISOKR(decoder="fgw_barycenter", decoder_params={flag: bad}).check_params()
    assert FGWBarycenterDecoder(**{flag: np.False_}).validate().get_params()[flag] is np.False_
