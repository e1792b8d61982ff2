import re

import numpy as np
import pytest

pytest.importorskip("rdkit")
sprokr_chem = pytest.importorskip("sprokr_chem")
from rdkit import Chem  # noqa: E402

from sprokr import IOKR  # noqa: E402
from sprokr.datasets import sample_path  # noqa: E402
from sprokr.registry import get_registry  # noqa: E402
from sprokr_chem import (  # noqa: E402
    MoleculeReadError, MorganGaussianTanimotoKernel, MorganMinMaxKernel, MorganTanimotoKernel,
    SmilesSpectrumKernel, graph_to_smiles, morgan_fingerprints, read_sdf, read_smiles,
    smiles_to_graph,
)
from sprokr_chem.datasets import load_qm9  # noqa: E402


@pytest.fixture(scope="module")
def qm9():
    smiles, props, names = load_qm9(sample_path("qm9_sample.csv"))
    return smiles, props


def test_tanimoto_identical_is_one_and_disjoint_is_zero():
    k = MorganTanimotoKernel()
    K = k(["CCO", "CCO", "c1ccccc1"])
    assert K[0, 1] == pytest.approx(1.0)
    # methane and hydrogen fluoride share no Morgan bit
    fp = morgan_fingerprints(["C", "F"])
    assert set(fp[0].indices).isdisjoint(fp[1].indices)
    assert k(["C", "F"])[0, 1] == 0.0
    # in between: |a & b| / |a | b| of the bit sets (ethanol and ethylamine share some bits)
    a, b = (set(row.indices) for row in morgan_fingerprints(["CCO", "CCN"]))
    assert 0 < len(a & b) < len(a | b)
    assert k(["CCO", "CCN"])[0, 1] == pytest.approx(len(a & b) / len(a | b), rel=1e-12)


def test_kernels_on_known_molecules():
    mm = MorganMinMaxKernel()(["CCO", "CCN"])
    gt = MorganGaussianTanimotoKernel(gamma=0.5)(["CCO", "CCN", "CCO"])
    t = MorganTanimotoKernel()(["CCO", "CCN"])[0, 1]
    assert gt[0, 2] == pytest.approx(1.0)
    assert gt[0, 1] == pytest.approx(np.exp(-0.5 * (2 - 2 * t)))
    assert mm[0, 0] == 1.0 and 0 < mm[0, 1] < 1
    s = SmilesSpectrumKernel(n=3)(["CCO", "CCO", "OCC", "c1ccccc1"])
    assert s[0, 1] == pytest.approx(1.0) and s[0, 2] < 1.0 and s[0, 3] < s[0, 2]


@pytest.mark.parametrize("name, params, what", [
    ("smiles_spectrum", {"n_features": 0}, "n_features must be an integer >= 1, got 0"),
    ("smiles_spectrum", {"n": 2.5}, "n must be an integer >= 1, got 2.5"),
    ("smiles_spectrum", {"min_n": 3, "n": 2}, "need 1 <= min_n <= n"),
    ("morgan_tanimoto", {"n_bits": 0}, "n_bits must be an integer >= 1, got 0"),
    ("morgan_minmax", {"radius": "2"}, "radius must be an integer >= 0, got '2'"),
    ("morgan_gaussian_tanimoto", {"gamma": np.inf}, "gamma must be a finite number > 0, got inf"),
    # flags are bools: counts="no" was true (count fingerprints), canonical=0 was false
    ("morgan_cosine", {"counts": "no"}, "counts must be True or False, got 'no'"),
    ("morgan_tanimoto", {"counts": 1}, "counts must be True or False, got 1"),
    ("morgan_count_tanimoto", {"counts": "false"}, "counts must be True or False, got 'false'"),
    ("morgan_gaussian_tanimoto", {"counts": None}, "counts must be True or False, got None"),
    ("smiles_spectrum", {"canonical": 0}, "canonical must be True or False, got 0"),
])
def test_molecule_kernel_parameters_are_checked(name, params, what):
    """The molecule kernels had no check_params: SmilesSpectrumKernel(n_features=0) ended the
    whole process with SIGFPE (scikit-learn's hashing modulo 0), gamma=inf gave NaN on the
    diagonal (inf * 0), radius='2' a TypeError from a comparison; the model now refuses them
    when it resolves the kernel, and prepare does too."""
    from sprokr.kernels import resolve_kernel

    with pytest.raises(ValueError, match=f"input_kernel '{name}': {what}"):
        resolve_kernel(name, params, "input", np.dtype("float64"))
    k = get_registry().create("input_kernel", name, params)
    with pytest.raises(ValueError, match=what):
        k(["CCO", "C"])


@pytest.mark.parametrize("kernel", [MorganTanimotoKernel(), SmilesSpectrumKernel()], ids=["morgan", "spectrum"])
def test_a_sample_that_is_not_a_molecule_is_named_by_its_type(kernel):
    """The type was given after a fixed article: "sample 1 is a int"."""
    for sample, kind in ((3, "int"), (1.5, "float"), ({"a": 1}, "dict")):
        with pytest.raises(TypeError, match=f"must be molecules: .*; sample 1 is of type {kind}$"):
            kernel.prepare(["CCO", sample])


def test_fingerprint_kernels_psd(qm9):
    smiles, _ = qm9
    for k in (MorganTanimotoKernel(), MorganMinMaxKernel(), SmilesSpectrumKernel()):
        K = k(smiles[:80])
        assert np.allclose(K, K.T)
        assert np.linalg.eigvalsh(K).min() > -1e-8


def test_count_fingerprints_count_repeated_substructures():
    fp = morgan_fingerprints(["CCCC", "CCCC", "CCO"], counts=True)
    assert fp.shape == (3, 2048) and fp.max() > 1  # butane's CH2/CH3 environments repeat
    assert (fp[0] != fp[1]).nnz == 0 and (fp[0] != fp[2]).nnz > 0
    bits = morgan_fingerprints(["CCCC"], counts=False)
    assert bits.max() == 1 and set(bits.indices) == set(fp[0].indices)


def test_invalid_smiles_error_names_record():
    with pytest.raises(MoleculeReadError, match=r"record 1: 'C1CC'"):
        read_smiles(["CCO", "C1CC", "CC"])
    mols, report = read_smiles(["CCO", "C1CC", "xyz", "CC"], on_error="skip")
    assert len(mols) == 2 and report.kept == [0, 3]
    assert [i for i, _, _ in report.skipped] == [1, 2]
    with pytest.raises(MoleculeReadError, match="record 2"):
        MorganTanimotoKernel().prepare(["CCO", "CC", "not_a_smiles"])


def test_whitespace_inside_a_smiles_is_an_error_around_it_is_not():
    """RDKit reads a SMILES up to its first blank and takes the rest for a name: "CC O" was
    ethane, silently, in every reader of SMILES strings (training outputs, candidates, the
    kernels, a CSV column).  Around the SMILES, blanks are ignored; a CXSMILES extension
    after a blank is kept; a missing value (None, NaN) is named as such."""
    from sprokr_chem import canonical_smiles

    assert canonical_smiles([" CCO ", "CCO\n", "\tOCC", "C[C@H](O)CC |&1:1|"]) == ["CCO"] * 3 + ["CC[C@H](C)O"]
    for text, head, rest in (("CC O", "CC", "O"), ("CCO ethanol", "CCO", "ethanol"), ("C\tC", "C", "C")):
        with pytest.raises(MoleculeReadError, match=rf"record 1: .*whitespace inside the SMILES: RDKit would read "
                                                    rf"'{head}' and take '{rest}' for a name"):
            read_smiles(["CCO", text])
    with pytest.raises(MoleculeReadError, match=r"^y: invalid molecule at record 0: 'CC O'"):
        canonical_smiles(["CC O"], "y")
    for kernel in (MorganTanimotoKernel(), sprokr_chem.SmilesSpectrumKernel()):
        with pytest.raises(MoleculeReadError, match="record 1.*whitespace inside"):
            kernel.prepare(["CCO", "CC O"])
    for missing in (None, float("nan"), np.nan):
        with pytest.raises(MoleculeReadError, match=r"record 0: .*missing value \(None or NaN\)"):
            read_smiles([missing])
    # the featuriser of large collections reports the row, as for any invalid SMILES
    chunk = sprokr_chem.MoleculeFeaturizer(("morgan",))(["CCO", "CC O", "C[C@H](O)CC |&1:1|"])
    assert [i for i, _ in chunk.errors] == [1] and "whitespace inside the SMILES" in chunk.errors[0][1]


def test_empty_sdf_record_error(tmp_path):
    block = Chem.MolToMolBlock(Chem.MolFromSmiles("CCO"))
    good = block + ">  <Description>\nethanol\n\n$$$$\n"
    path = tmp_path / "x.sdf"
    path.write_text(good + "\n$$$$\n" + good)
    with pytest.raises(MoleculeReadError, match="record 1.*empty SDF record"):
        read_sdf(path)
    mols, props, report = read_sdf(path, on_error="skip")
    assert len(mols) == 2 and props[0]["Description"] == "ethanol"
    assert report.skipped[0][0] == 1


def test_smiles_graph_smiles_round_trip(qm9):
    smiles, _ = qm9
    for s in smiles:
        G = smiles_to_graph(s)
        assert G.number_of_nodes() == Chem.MolFromSmiles(s).GetNumAtoms()
        assert graph_to_smiles(G) == Chem.MolToSmiles(Chem.MolFromSmiles(s))


def test_charged_round_trip_and_invalid_graph():
    s = "C[N+](C)(C)C.[O-]C=O"
    assert graph_to_smiles(smiles_to_graph(s)) == Chem.MolToSmiles(Chem.MolFromSmiles(s))
    G = smiles_to_graph("CC")
    G.add_edge(0, 1, label=3)
    G.add_node(2, label="C")
    G.add_edge(0, 2, label=3)  # pentavalent carbon
    assert graph_to_smiles(G) is None
    with pytest.raises(sprokr_chem.GraphConversionError):
        sprokr_chem.graph_to_mol(G, errors="raise")


@pytest.mark.parametrize("kernel", ["smiles_spectrum", "morgan_tanimoto", "morgan_count_tanimoto", "morgan_minmax",
                                    "morgan_cosine", "morgan_gaussian_tanimoto"])
def test_molecule_kernels_read_a_molecule_object_as_its_smiles(kernel):
    """An RDKit molecule with explicit hydrogens (``AddHs``, e.g. after a 3D embedding) or
    kekulised without aromatic flags is the molecule of its SMILES for every molecule kernel,
    as for ``canonical_smiles``: the spectrum kernel wrote it as it was (k = 0.24 / 0.05 with
    its own SMILES for phenol) and the fingerprints saw the hydrogens and Kekule bonds
    (Tanimoto 0.19)."""
    k = get_registry().create("input_kernel", kernel)
    kekulised = Chem.MolFromSmiles("Oc1ccccc1")
    Chem.Kekulize(kekulised, clearAromaticFlags=True)
    X = ["Oc1ccccc1", Chem.AddHs(Chem.MolFromSmiles("c1ccccc1O")), kekulised, smiles_to_graph("C1=CC=CC=C1O")]
    np.testing.assert_allclose(k.pairwise(k.prepare(X), k.prepare(X)), 1.0, rtol=1e-12)


def test_the_graph_of_a_molecule_object_is_the_graph_of_its_smiles():
    """``mol_to_graph`` of an ``AddHs`` molecule had the hydrogens as nodes (13 for phenol)
    and of a kekulised one Kekule bond orders and no aromatic atoms: WL similarity 0.05 /
    0.02 with phenol's graph.  Both are now its SMILES' graph (heavy atoms in their order,
    isotopic hydrogens kept); the graph records the aromatic canonical SMILES."""
    WLKernel = pytest.importorskip("sprokr_graphs").WLKernel
    kekulised = Chem.MolFromSmiles("Oc1ccccc1")
    Chem.Kekulize(kekulised, clearAromaticFlags=True)
    graphs = [smiles_to_graph("Oc1ccccc1"), sprokr_chem.mol_to_graph(Chem.AddHs(Chem.MolFromSmiles("Oc1ccccc1"))),
              sprokr_chem.mol_to_graph(kekulised)]
    assert [G.number_of_nodes() for G in graphs] == [7, 7, 7]
    assert [G.graph["smiles"] for G in graphs] == ["Oc1ccccc1"] * 3
    k = WLKernel()
    np.testing.assert_allclose(k.pairwise(k.prepare(graphs), k.prepare(graphs)), 1.0, rtol=1e-12)
    assert sprokr_chem.mol_to_graph(Chem.MolFromSmiles("[2H]OC")).number_of_nodes() == 3


def test_metal_complexes_with_dative_bonds_and_quadruple_bonds_are_graphs():
    """RDKit reads cisplatin written as ``Cl[Pt](Cl)([NH3])[NH3]`` with two dative bonds:
    ``mol_to_graph`` refused them ("unsupported bond type DATIVE", without naming the
    molecule's position), so the default output kernel ``wl`` failed the whole fit of a
    training set holding one metal complex.  A dative bond is a single bond for the kernels,
    its donor recorded for the way back."""
    WLKernel = pytest.importorskip("sprokr_graphs").WLKernel
    for s in ("Cl[Pt](Cl)([NH3])[NH3]", "O->[Cu+2]<-O", "[Re]$[Re]", "CC(=O)O[Co]->N"):
        G = smiles_to_graph(s)
        assert graph_to_smiles(G) == Chem.MolToSmiles(Chem.MolFromSmiles(s))
    G = smiles_to_graph("N->[Pt]")
    assert G.edges[0, 1] == {"label": 1, "bond_order": 1, "dative": 0}
    K = WLKernel().pairwise(*(WLKernel().prepare([smiles_to_graph(s) for s in ("Cl[Pt](Cl)([NH3])[NH3]", "CC")]),) * 2)
    np.testing.assert_allclose(np.diag(K), 1.0)
    G.edges[0, 1]["dative"] = 7  # not one of its nodes
    with pytest.raises(sprokr_chem.GraphConversionError, match=r"edge \(0, 1\): a dative bond \(from 7\)"):
        sprokr_chem.graph_to_mol(G, errors="raise")


def test_a_graph_keeps_the_stereo_isotopes_and_radicals_of_its_molecule():
    """The graph labels leave out stereochemistry, isotopes and radicals (the graph kernels
    do not compare them), and every reading of a graph as a molecule dropped them: training
    outputs given as graphs, the command line's ``molecule`` column written back
    (``C[C@H](N)C(=O)O`` came back as ``CC(N)C(=O)O``).  The graph keeps its molecule's
    SMILES; a graph edited since is read from its labels."""
    from sprokr_chem import canonical_smiles
    from sprokr_chem.columns import MoleculeColumn

    smiles = ["C[C@H](N)C(=O)O", "C/C=C\\C", "[13CH4]", "[2H]C([2H])([2H])O", "[CH3]", "[2H]",
              "Cl[Pt](Cl)([NH3])[NH3]", "*CC*", "c1cc[nH]c1"]
    graphs = [smiles_to_graph(s) for s in smiles]
    assert canonical_smiles(graphs) == canonical_smiles(smiles)
    assert [MoleculeColumn().format(G, ["smiles"]) for G in graphs] == canonical_smiles(smiles)
    # the labels alone: what the graph kernels compare (and the decoders build)
    assert [graph_to_smiles(G) for G in graphs[:5]] == ["CC(N)C(=O)O", "CC=CC", "C", "[H]C([H])([H])O", "C"]
    # a graph edited since it was made: its labels, not the stale SMILES
    G = smiles_to_graph("C[C@H](N)C(=O)O")
    G.nodes[2]["label"] = "O"
    assert canonical_smiles([G]) == ["CC(O)C(=O)O"]
    # the molecule kernels read a graph as its molecule too
    fp = sprokr_chem.SmilesSpectrumKernel()
    np.testing.assert_allclose(fp.pairwise(fp.prepare(graphs), fp.prepare(smiles)).diagonal(), 1.0)


def test_plugin_discovered_by_entry_point_and_used_by_name(qm9):
    smiles, props = qm9
    comp = get_registry().get("output_kernel", "morgan_tanimoto")
    assert comp.plugin == "chem"
    X = (props - props.mean(0)) / props.std(0)
    m = IOKR(input_kernel="gaussian", output_kernel="morgan_tanimoto", lam=1e-3).fit(X[:200], smiles[:200])
    pred = m.predict(X[:20])
    assert np.mean([p == s for p, s in zip(pred, smiles[:20])]) > 0.8  # training points are recovered


def test_registry_names_match_the_lazy_kernel_classes():
    """The plugin lists its kernels without importing RDKit; each lazy factory builds the class."""
    from sprokr.registry import Registry
    from sprokr_chem.kernels import KERNELS

    reg = Registry()
    names = {n for n in reg.names("input_kernel") if reg.get("input_kernel", n).plugin == "chem"}
    assert names == set(KERNELS)
    for name, cls in KERNELS.items():
        assert type(reg.create("input_kernel", name)) is cls


def test_count_fingerprint_kernels_equal_their_definitions_and_are_psd(qm9):
    from sprokr_chem import MorganCountTanimotoKernel, unary_counts

    smiles = qm9[0][:80] + ["CCCC", "CCCCCC", "CCCCCCCCCCCCCCCCCCCC", "C"]
    C = morgan_fingerprints(smiles, counts=True).toarray()
    mn = np.minimum(C[:, None, :], C[None, :, :]).sum(-1)
    mx = np.maximum(C[:, None, :], C[None, :, :]).sum(-1)
    K = MorganMinMaxKernel()(smiles)
    assert np.allclose(K, mn / mx, atol=1e-12)
    # the explicit feature map: binary expansion, inner products = sums of minima
    U = unary_counts(morgan_fingerprints(smiles, counts=True))
    assert set(np.unique(U.data)) == {1.0} and np.allclose((U @ U.T).toarray(), mn)
    # prepared in separate batches (different expansion widths) the blocks agree
    k = MorganMinMaxKernel()
    assert np.allclose(k.pairwise(k.prepare(smiles[-4:-1]), k.prepare(smiles[-1:])), K[-4:-1, -1:])
    G = C @ C.T
    sq = np.diag(G)
    T = MorganCountTanimotoKernel()(smiles)
    assert np.allclose(T, G / (sq[:, None] + sq[None, :] - G), atol=1e-12)
    assert np.allclose(T, MorganTanimotoKernel(counts=True)(smiles))
    # counts separate chain lengths that bit vectors confuse
    chains = ["CCCCCCCC", "CCCCCCCCC"]
    assert MorganTanimotoKernel()(chains)[0, 1] == pytest.approx(1.0)
    assert MorganCountTanimotoKernel()(chains)[0, 1] < 0.99 and MorganMinMaxKernel()(chains)[0, 1] < 0.99
    for M in (K, T):
        assert np.allclose(M, M.T) and np.linalg.eigvalsh(M).min() > -1e-8


def test_smiles_spectrum_canonicalises_by_default(qm9):
    smiles = qm9[0][:40]
    # toluene-ol written three ways: Kekule, aromatic, explicit hydrogens in another atom order
    forms = ["CC1=CC=CC=C1O", "Cc1ccccc1O", "[H]Oc1c([H])c([H])c([H])c([H])c1C([H])([H])[H]"]
    k = SmilesSpectrumKernel()
    assert k.canonical is True
    K = k(forms, smiles)
    assert np.allclose(K[0], K[1]) and np.allclose(K[0], K[2])
    assert np.allclose(k(forms), 1.0)
    # a SMILES with explicit hydrogens and its canonical form: the same kernel row
    explicit = Chem.MolToSmiles(Chem.AddHs(Chem.MolFromSmiles(smiles[5])), allHsExplicit=True)
    assert explicit != Chem.MolToSmiles(Chem.MolFromSmiles(smiles[5]))
    assert np.allclose(k([explicit], smiles), k([smiles[5]], smiles))
    # the strings as given: the written forms differ
    assert SmilesSpectrumKernel(canonical=False)(forms)[0, 2] < 0.9
    with pytest.raises(ValueError, match=r"record 2: 'C1CC'"):
        k.prepare(["CCO", "CC", "C1CC"])


@pytest.mark.parametrize("params, what", [
    ({"radius": True}, "radius must be an integer >= 0, got True"),
    ({"radius": 2.0}, "radius must be an integer >= 0, got 2.0"),
    ({"n_bits": 0}, "n_bits must be an integer >= 1, got 0"),
    ({"counts": "no"}, "counts must be True or False, got 'no'"),
])
def test_morgan_fingerprints_checks_its_parameters_as_the_kernels_do(params, what):
    """The function checked ``int(x) != x`` (True and 2.0 passed as 1 and 2) and read
    ``counts`` by its truth value ("no" gave counts); the kernels' checks now apply."""
    with pytest.raises(ValueError, match=re.escape(what)):
        morgan_fingerprints(["CCO"], **params)
    assert morgan_fingerprints(["CCO"], radius=np.int64(1), n_bits=64).shape == (1, 64)


def test_smiles_spectrum_as_given_refuses_blank_strings_and_inner_whitespace():
    """``canonical=False`` hashed a string of blanks as a molecule and ``"CC O"`` as given
    (RDKit, and ``canonical=True``, read ethane and a name); blanks around a SMILES are not
    part of it."""
    k = SmilesSpectrumKernel(canonical=False)
    for bad, what in (("  ", "expected a non-empty SMILES string"), ("CC O", "whitespace inside a SMILES string")):
        with pytest.raises(MoleculeReadError, match=re.escape(what)):
            k.prepare(["CCO", bad])
    np.testing.assert_allclose(k.pairwise(k.prepare([" CCO "]), k.prepare(["CCO"])), [[1.0]])
