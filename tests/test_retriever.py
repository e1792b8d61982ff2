"""MoleculeRetriever (sprokr-chem): one estimator from SMILES or text to molecules, with its
settings chosen on a validation split of the training data; save/load, clone, the CLI and
the benchmark script on the shipped 300-molecule QM9 sample (small grids: fast)."""
import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sprokr_chem")
pytest.importorskip("sprokr_graphs")

from rdkit import Chem  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

import sprokr  # noqa: E402
from sprokr.datasets import sample_path  # noqa: E402
from sprokr_chem import MoleculeReadError, MoleculeRetriever  # noqa: E402
from sprokr_chem.datasets import load_qm9  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"iokr": {}, "sisokr": {"m_x_grid": (20, 40, 80), "m_y_grid": (20, 40)},
         "dsokr": {"m_x_grid": (20, 40, 80), "m_y_grid": (20, 40), "hidden_layer_sizes": [(32,)],
                   "max_epochs": 1000}}


def canon(smiles):
    return [Chem.MolToSmiles(Chem.MolFromSmiles(s)) for s in smiles]


@pytest.fixture(scope="module")
def qm9():
    smiles, _, _ = load_qm9(sample_path("qm9_sample.csv"))
    return smiles[:200], smiles[200:250], smiles[200:]  # train, queries, 100 unseen candidates


def small(method, **kw):
    kw = {"lams": (1e-2, 1e-4, 1e-6), "input_grid": [{"n": 3}, {"n": 4}], "random_state": 0, **SMALL[method], **kw}
    return MoleculeRetriever(method=method, **kw)


@pytest.fixture(scope="module")
def fitted(qm9):
    X, _, _ = qm9
    return {m: small(m).fit(X, X) for m in ("iokr", "sisokr", "dsokr")}


@pytest.mark.parametrize("method", ["iokr", "sisokr", "dsokr"])
def test_each_method_retrieves_valid_molecules_from_the_pool(fitted, qm9, method):
    _, queries, pool = qm9
    model = fitted[method]
    assert model.inputs_ == "smiles" and model.method_ == method
    pred = model.predict(queries, candidates=pool)
    assert len(pred) == len(queries) and set(pred) <= set(canon(pool))
    # unseen molecules among 100 candidates: chance MRR ~ 0.05
    assert model.score(queries, queries, candidates=pool) > {"iokr": 0.4, "sisokr": 0.25, "dsokr": 0.15}[method]
    # default pool: the distinct training molecules
    assert set(model.predict(queries[:5])) <= set(model.training_molecules_) == set(model.candidates_)


@pytest.mark.parametrize("method", ["iokr", "dsokr"])
def test_score_matrix_agrees_with_topk_and_predict(fitted, qm9, method):
    _, queries, pool = qm9
    model = fitted[method]
    S = model.predict_scores(queries, candidates=pool)
    assert S.shape == (len(queries), len(pool))
    top = model.predict_topk(queries, k=5, candidates=pool)
    order = np.argsort(-S, axis=1, kind="stable")[:, :5]  # ties: the earlier candidate first
    assert np.array_equal(top.indices, order)
    np.testing.assert_allclose(top.scores, np.take_along_axis(S, order, axis=1), rtol=1e-10, atol=1e-12)
    assert top.smiles == [[canon(pool)[j] for j in row] for row in order]
    assert model.predict(queries, candidates=pool) == [row[0] for row in top.smiles]


def test_the_selection_chooses_among_what_it_tried(fitted):
    for method, model in fitted.items():
        sel = model.selection_
        assert [t["output_kernel"] for t in sel["tried"]] == ["wl", "morgan_count_tanimoto"]
        assert sel["chosen"] == model.output_kernel_ == model.best_params_["output_kernel"]
        assert model.best_score_ == max(t["best_score"] for t in sel["tried"])
        assert sel["n_train"] == 160 and sel["n_val"] == 40
        if method == "dsokr":
            runs = [r for t in sel["tried"] for r in t["runs"]]
            assert {r["input_kernel_params"]["n"] for r in runs} == {3, 4}
            assert model.best_params_["m_y"] in (20, 40)
            continue
        for t in sel["tried"]:
            assert [g["params"]["input_kernel_params"] for g in t["grid"]] == [{"n": 3}, {"n": 4}]
            assert all(g["lams"] == [1e-2, 1e-4, 1e-6] for g in t["grid"])
            scores = np.array([g["scores"] for g in t["grid"]])
            assert np.ptp(scores) > 0  # the settings make a difference on validation
        best = max(model.selection_["tried"], key=lambda t: t["best_score"])
        assert model.best_params_["lam"] in (1e-2, 1e-4, 1e-6)
        best_point = max(best["grid"], key=lambda g: g["best_score"])  # the first best, as the search
        assert model.best_params_["input_kernel_params"] == best_point["params"]["input_kernel_params"]
        if method == "sisokr":  # the m_x growth, from the grid's best settings, re-picks lam at each size
            growth = best["m_x"]
            assert model.best_params_["lam"] == growth["best_lams"][growth["m"].index(model.best_params_["m_x"])]
        else:
            assert model.best_params_["lam"] == best_point["best_lam"]
        if method == "sisokr":
            assert model.best_params_["m_x"] in (20, 40, 80) and model.best_params_["m_y"] in (20, 40)
            assert best["m_x"]["m"][0] == 20 and best["perfect_h"]["m"] == [20, 40]
            assert (model.model_.m_x, model.model_.m_y) == (model.best_params_["m_x"], model.best_params_["m_y"])


def test_refit_uses_all_training_pairs_except_for_a_dsokr_network(fitted, qm9):
    assert fitted["iokr"].model_.n_train_ == fitted["sisokr"].model_.n_train_ == 200
    d = fitted["dsokr"]
    regressors = {r["regressor"] for r in d.selection_["tried"][0]["runs"]}
    assert regressors == {"ridge", "mlp"}  # the ridge penalties, then the network at the chosen sizes
    if d.best_params_["regressor"] == "ridge":  # closed form: features and model refitted on all pairs
        assert d.model_.n_train_ == 200 and d.input_features_.features_.R.m == d.best_params_["m_x"]
    else:  # the network keeps the validation split for early stopping
        assert d.model_.n_train_ == 160
    X, _, _ = qm9
    # (the fixture's choice is the ridge: a network chosen, its refit is checked here; the
    # ridge crippled by a huge penalty, validation picks the network)
    net = small("dsokr", dsokr_lams=[1e2]).fit(X, X)
    assert net.best_params_["regressor"] == "mlp" and net.model_.n_train_ == 160
    # the ridge alone (no network): always refitted on all pairs, with its chosen m_x
    r = small("dsokr", hidden_layer_sizes=[], output_kernel="morgan_count_tanimoto").fit(X, X)
    assert r.best_params_["regressor"] == "ridge" and r.model_.n_train_ == 200
    assert r.best_params_["m_x"] in (20, 40, 80) and r.best_params_["regressor_params"]["alpha"] in (1e-4, 1e-3, 1e-2, 1e-1)


def test_text_inputs(qm9):
    X, queries, pool = qm9
    from rdkit.Chem import rdMolDescriptors

    words = "zero one two three four five six seven eight nine".split()

    def describe(s):
        m = Chem.MolFromSmiles(s)
        count = lambda el: sum(a.GetSymbol() == el for a in m.GetAtoms())  # noqa: E731
        bonds = [b.GetBondTypeAsDouble() for b in m.GetBonds()]
        return (f"a molecule with {words[count('C')]} carbon atoms, {words[count('N')]} nitrogen atoms, "
                f"{words[count('O')]} oxygen atoms, {words[rdMolDescriptors.CalcNumRings(m)]} rings, "
                f"{words[bonds.count(2.0)]} double bonds and {words[bonds.count(3.0)]} triple bonds")

    model = MoleculeRetriever(method="iokr", output_kernel="morgan_count_tanimoto", lams=(1e-2, 1e-4),
                              random_state=0).fit([describe(s) for s in X], X)
    assert model.inputs_ == "text" and model.model_.input_kernel_.name == "text"
    pred = model.predict([describe(s) for s in queries], candidates=pool)
    assert set(pred) <= set(canon(pool))
    assert model.score([describe(s) for s in queries], queries, candidates=pool) > 0.15  # chance ~ 0.05


def test_save_load_round_trip(fitted, qm9, tmp_path):
    _, queries, pool = qm9
    for method, model in fitted.items():
        path = model.save(tmp_path / f"{method}.sprokr")
        again = sprokr.load(path)
        assert type(again) is MoleculeRetriever and again.get_params() == model.get_params()
        assert again.predict(queries, candidates=pool) == model.predict(queries, candidates=pool)
        assert np.array_equal(again.predict_scores(queries, candidates=pool),
                              model.predict_scores(queries, candidates=pool))
        assert again.selection_ == model.selection_ and again.best_params_ == model.best_params_
    assert MoleculeRetriever.load(tmp_path / "iokr.sprokr").method_ == "iokr"


def test_clone_and_params():
    est = MoleculeRetriever(method="sisokr", candidates=["CCO", "CCN"], m_x_grid=(10, 20), random_state=3)
    c = clone(est)
    assert c is not est and c.get_params() == est.get_params()
    assert not hasattr(c, "model_")
    with pytest.raises(NotFittedError):
        c.predict(["CCO"])


def test_candidate_pools_from_files_and_construction(qm9, tmp_path):
    X, queries, pool = qm9
    (tmp_path / "pool.smi").write_text("".join(f"{s} mol{i}\n" for i, s in enumerate(pool)))
    model = small("iokr", output_kernel="morgan_count_tanimoto", candidates=tmp_path / "pool.smi").fit(X, X)
    assert model.candidates_ == canon(pool)
    assert set(model.predict(queries)) <= set(canon(pool))
    with open(tmp_path / "pool.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["name", "SMILES"]] + [[f"m{i}", s] for i, s in enumerate(pool)])
    assert np.array_equal(model.predict_scores(queries[:3], candidates=tmp_path / "pool.csv"),
                          model.predict_scores(queries[:3]))
    mols = [Chem.MolFromSmiles(s) for s in pool[:10]]
    assert model.predict(queries[:3], candidates=mols) == model.predict(queries[:3], candidates=pool[:10])


def test_clear_errors(qm9, fitted, tmp_path):
    X, queries, pool = qm9
    with pytest.raises(ValueError, match="method must be one of 'auto', 'iokr', 'sisokr', 'dsokr'"):
        MoleculeRetriever(method="krr").fit(X, X)
    with pytest.raises(ValueError, match="inputs must be"):
        MoleculeRetriever(inputs="inchi").fit(X, X)
    with pytest.raises(ValueError, match="unknown output_kernel 'morgan'"):
        MoleculeRetriever(output_kernel="morgan").fit(X, X)
    with pytest.raises(ValueError, match="validation_fraction"):
        MoleculeRetriever(validation_fraction=1.5).fit(X, X)
    with pytest.raises(ValueError, match="X and y have different numbers of samples: 200 and 199"):
        MoleculeRetriever().fit(X, X[:-1])
    bad = list(X)
    bad[7] = "C1CC(("
    with pytest.raises(MoleculeReadError, match=r"^X: invalid molecule at record 7: 'C1CC\(\('"):
        MoleculeRetriever().fit(bad, X)
    with pytest.raises(MoleculeReadError, match=r"^y: invalid molecule at record 7"):
        MoleculeRetriever().fit(X, bad)
    model = fitted["iokr"]
    with pytest.raises(MoleculeReadError, match=r"^candidates: invalid molecule at record 7: 'C1CC\(\(' .*"
                                                r"1 more invalid record\(s\), e.g. at \[9\]"):
        model.predict(queries, candidates=bad[:9] + ["xyz"])
    (tmp_path / "bad.smi").write_text("CCO a\nCCN b\nC1CC(( c\n")
    with pytest.raises(MoleculeReadError, match=r"bad.smi line 3\): invalid molecule at record 2"):
        model.predict(queries, candidates=tmp_path / "bad.smi")
    with pytest.raises(ValueError, match="candidates is empty"):
        model.predict(queries, candidates=[])
    from sprokr.io import DataFileError
    with pytest.raises(DataFileError, match=r"^candidates: .*missing\.smi: no such file"):
        model.predict(queries, candidates=tmp_path / "missing.smi")
    with pytest.raises(ValueError, match=r"^X and y: need at least 5 training pairs .* got 3"):
        MoleculeRetriever().fit(X[:3], X[:3])
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        MoleculeRetriever(method="dsokr", hidden_layer_sizes=256).fit(X, X)
    with pytest.raises(ValueError, match="dsokr_lams"):
        MoleculeRetriever(method="dsokr", dsokr_lams=[1e-3, -1.0]).fit(X, X)


def test_predictions_name_an_x_that_is_not_a_collection(fitted):
    model = fitted["iokr"]
    for method in (model.predict, model.predict_scores, model.predict_topk):
        for bad in (None, 3.0, np.float64(2.0)):
            with pytest.raises(TypeError, match="^X must be a sequence of SMILES or texts, or an array of numbers"):
                method(bad)


@pytest.mark.parametrize("grid", [[2.5], [20, 40.5], [True, 40], ["20"], [float("nan")]])
def test_sketch_size_grids_take_integers_only(qm9, grid):
    from sprokr_chem._selection import check_grid

    X, _, _ = qm9
    for name in ("m_x_grid", "m_y_grid"):
        with pytest.raises(ValueError, match=f"^{name} must be a non-empty increasing sequence of positive integers"):
            MoleculeRetriever(method="sisokr", **{name: grid}).fit(X[:20], X[:20])
    assert check_grid([20, 40.0, np.int64(80)], "m_x_grid") == [20, 40, 80]  # integral floats are sizes


@pytest.mark.parametrize("grid", [[20, 40.0, np.int64(80)], [1], [2.5], [0, 4], [4, 4], [8, 4], [True, 40], [],
                                  "20", 20, None, [float("inf")], [np.float32(3.0), 5], [20, 1000]])
def test_check_grid_is_sprokr_check_sizes(grid):
    """The plugin kept its own copy of select_model's size check (another message); it is
    sprokr.model_selection.check_sizes now: the same values accepted, the same errors."""
    from sprokr.model_selection import check_sizes
    from sprokr_chem._selection import check_grid

    def outcome(check, *args):
        try:
            return check(grid, "m_x_grid", *args)
        except ValueError as exc:
            return str(exc).split(", but ")[0]  # (the name of the part holding the samples differs)

    assert outcome(check_grid) == (None if grid is None else outcome(check_sizes))
    if grid is not None:
        assert outcome(check_grid, 100) == outcome(check_sizes, 100)


def test_sketch_size_grids_beyond_the_training_part_are_named(qm9):
    X, _, _ = qm9
    with pytest.raises(ValueError, match=r"^m_y_grid holds the size 1000, but the model selection's training part "
                                         r"\(the rest of the training pairs validates\) has 16 samples: .* at most 16"):
        MoleculeRetriever(method="sisokr", m_y_grid=[4, 1000]).fit(X[:20], X[:20])


def test_a_failed_refit_keeps_the_previous_model(qm9):
    X, queries, _ = qm9
    model = small("iokr", output_kernel="morgan_count_tanimoto").fit(X[:100], X[:100])
    before = model.model_, model.predict(queries)
    with pytest.raises(MoleculeReadError):
        model.fit(X[:99] + ["C1CC(("], X[:100])
    assert model.model_ is before[0] and model.predict(queries) == before[1]


def test_cross_validation_uses_score(qm9):
    from sklearn.model_selection import cross_val_score

    X, _, _ = qm9
    scores = cross_val_score(small("iokr", output_kernel="morgan_count_tanimoto", input_grid=[{"n": 4}]),
                             X[:150], X[:150], cv=2)
    assert scores.shape == (2,) and (0.1 < scores).all() and (scores <= 1).all()


def _write_retriever_files(tmp_path, X, queries, pool):
    """train.csv / test.csv (SMILES -> the same SMILES), pool.smi and m.toml: an IOKR
    MoleculeRetriever configuration for the command line."""
    for name, rows in (("train.csv", X), ("test.csv", queries)):
        with open(tmp_path / name, "w", newline="") as fh:
            csv.writer(fh).writerows([["query", "target"]] + [[s, s] for s in rows])
    (tmp_path / "pool.smi").write_text("".join(f"{s}\n" for s in pool))
    (tmp_path / "m.toml").write_text('''estimator = "MoleculeRetriever"
random_state = 0
[params]
method = "iokr"
output_kernel = "morgan_count_tanimoto"
lams = [1e-2, 1e-4]
input_grid = [{n = 4}]
[input]
column = "query"
type = "smiles"
[output]
column = "target"
type = "smiles"
''')


def test_command_line_builds_the_plugin_estimator_by_name(qm9, tmp_path, capsys):
    from sprokr.cli import main
    from sprokr.registry import get_registry

    assert "MoleculeRetriever" in get_registry().names("estimator")
    X, queries, pool = qm9
    _write_retriever_files(tmp_path, X, queries, pool)
    args = [str(a) for a in ("fit", "--config", tmp_path / "m.toml", "--train", tmp_path / "train.csv",
                             "-o", tmp_path / "m.sprokr")]
    assert main(args) == 0
    assert main([str(a) for a in ("predict", tmp_path / "m.sprokr", "--input", tmp_path / "test.csv",
                                  "--top-k", "2", "-o", tmp_path / "top.csv")]) == 0
    top = list(csv.DictReader(open(tmp_path / "top.csv")))
    assert len(top) == 100 and {r["prediction"] for r in top} <= set(canon(X))
    capsys.readouterr()
    assert main([str(a) for a in ("evaluate", tmp_path / "m.sprokr", "--test", tmp_path / "test.csv",
                                  "--candidates", tmp_path / "pool.smi", "--json")]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["truth_in_candidates"] == 1.0 and res["mrr"] > 0.3
    (tmp_path / "bad.toml").write_text((tmp_path / "m.toml").read_text().replace("lams", "lambdas"))
    assert main([str(a) for a in ("fit", "--config", tmp_path / "bad.toml", "--train", tmp_path / "train.csv",
                                  "-o", tmp_path / "b.sprokr")]) == 2
    assert "lambdas" in capsys.readouterr().err


def test_command_line_writes_canonical_smiles_with_and_without_top_k(qm9, tmp_path):
    """docs/cli.md: a MoleculeRetriever's predictions are written as canonical SMILES.  With
    --top-k and a --candidates pool they were the pool's SMILES as given (written another
    way than predict wrote them); both are now the retriever's own canonical SMILES."""
    from sprokr.cli import main

    X, queries, pool = qm9
    # the pool as another program may write it: the same molecules, SMILES rooted at their last atom
    written = [Chem.MolToSmiles(m, rootedAtAtom=m.GetNumAtoms() - 1) for m in map(Chem.MolFromSmiles, pool)]
    assert sum(w != c for w, c in zip(written, canon(pool))) > len(pool) // 2
    _write_retriever_files(tmp_path, X, queries, written)
    assert main([str(a) for a in ("fit", "--config", tmp_path / "m.toml", "--train", tmp_path / "train.csv",
                                  "-o", tmp_path / "m.sprokr")]) == 0
    common = ("predict", tmp_path / "m.sprokr", "--input", tmp_path / "test.csv", "--candidates", tmp_path / "pool.smi")
    assert main([str(a) for a in (*common, "-o", tmp_path / "best.csv")]) == 0
    assert main([str(a) for a in (*common, "--top-k", "3", "-o", tmp_path / "top.csv")]) == 0
    best = [r["prediction"] for r in csv.DictReader(open(tmp_path / "best.csv"))]
    top = list(csv.DictReader(open(tmp_path / "top.csv")))
    assert len(top) == 3 * len(queries) and {r["prediction"] for r in top} <= set(canon(pool))
    assert [r["prediction"] for r in top if r["rank"] == "1"] == best  # rank 1 is what predict writes
    assert set(best) <= set(canon(pool))


def test_benchmark_script_smoke(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "qm9_retriever.py"), "--data",
                          str(sample_path("qm9_sample.csv")), "--n-train", "200", "--n-test", "40",
                          "--methods", "NN,iokr,dsokr", "--params", json.dumps({"lams": [1e-2, 1e-4],
                          "input_grid": [{"n": 4}], "m_y_grid": [20, 40], "hidden_layer_sizes": [[32]]}),
                          "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(res) == {"NN", "IOKR", "DSOKR"}
    for name, r in res.items():
        assert 0 <= r["top1"] <= r["top5"] <= r["top10"] <= 1 and 0 < r["MRR"] <= 1, name
        assert np.isfinite([r["fit_s"], r["decode_s"]]).all()  # both phases timed
    assert res["IOKR"]["MRR"] > 0.2  # 100 unseen candidates: chance ~ 0.05


def test_an_input_grid_point_the_kernel_refuses_is_named(qm9):
    X, _, _ = qm9
    with pytest.raises(TypeError, match=r"^input_grid\[1\]: invalid parameters .*unknown bogus"):
        MoleculeRetriever(method="iokr", input_grid=[{"n": 3}, {"bogus": 1}]).fit(X[:20], X[:20])


def test_molecule_objects_with_explicit_hydrogens_or_kekulised_equal_their_smiles(fitted, qm9):
    """An RDKit molecule is the molecule of its SMILES: with explicit hydrogens (``AddHs``, an
    SDF read with ``removeHs=False``) or kekulised, as candidates, training outputs or
    SMILES inputs, it gives what the SMILES string gives (it used to be written with its
    ``[H]`` atoms or Kekule bonds: another candidate, other n-grams, never the true one)."""
    from sprokr_chem import canonical_smiles

    X, queries, pool = qm9
    benzene = Chem.MolFromSmiles("c1ccccc1")
    Chem.Kekulize(benzene, clearAromaticFlags=True)
    assert canonical_smiles([Chem.AddHs(Chem.MolFromSmiles("OCC(N)=O")), benzene, "C(N)(=O)CO"]) == \
        ["NC(=O)CO", "c1ccccc1", "NC(=O)CO"]
    model = fitted["iokr"]
    with_h = [Chem.AddHs(Chem.MolFromSmiles(s)) for s in pool]
    assert model.predict(queries, candidates=with_h) == model.predict(queries, candidates=pool)
    np.testing.assert_allclose(model.predict_scores(queries[:5], candidates=with_h),
                               model.predict_scores(queries[:5], candidates=pool))
    np.testing.assert_allclose(model.predict_scores([Chem.AddHs(Chem.MolFromSmiles(s)) for s in queries[:5]]),
                               model.predict_scores(queries[:5]))
    assert model.score(queries, with_h[:50], candidates=pool) == model.score(queries, queries, candidates=pool)


def test_duplicated_pairs_are_split_by_molecule(qm9, monkeypatch):
    """Each pair given three times: the split is by molecule (no validation molecule among the
    training pairs) and scores each validation molecule once (no twin in the validation pool
    to tie with it).  It used to split the pairs: on the first 200 molecules of the sample,
    validation MRR 0.917 -> 0.883 and another lam.  Without duplicates, the split of the
    pairs it always was."""
    import sprokr_chem.retriever as mod

    splits = []

    class Spy(mod.RetrieverSearch):
        def __init__(self, owner, kind, X, Ys, split, seed):
            splits.append((Ys, split))
            super().__init__(owner, kind, X, Ys, split, seed)

    monkeypatch.setattr(mod, "RetrieverSearch", Spy)
    X = qm9[0][:120]
    one = small("iokr").fit(X, X)
    three = small("iokr").fit(X * 3, X * 3)
    rng = np.random.default_rng(0)
    perm = rng.permutation(120)
    assert np.array_equal(splits[0][1][1], np.sort(perm[:24])) and np.array_equal(splits[0][1][0], np.sort(perm[24:]))
    Ys, (tr, va) = splits[1]
    assert len({Ys[i] for i in va}) == va.size == 24
    assert not {Ys[i] for i in va} & {Ys[i] for i in tr}
    assert tr.size + va.size + three.selection_["n_val_unscored"] == 360
    assert (three.selection_["n_train"], three.selection_["n_val"], three.selection_["n_val_unscored"]) == \
        (3 * 96, 24, 48)
    assert one.selection_["n_val_unscored"] == 0
    with pytest.raises(ValueError, match=r"^y: need at least 4 distinct molecules .* got 3"):
        small("iokr").fit(X[:3] * 3, X[:3] * 3)


def test_one_word_texts_read_as_smiles_say_how_to_pass_texts(qm9):
    """``inputs="auto"`` reads X without whitespace as SMILES: when most of X is then invalid
    (one-word names, e.g. "ethanol"), the error says to pass ``inputs="text"``; one invalid
    SMILES among valid ones does not get the hint."""
    names = ["ethanol", "methane", "benzene", "water", "propane", "acetone"]
    mols = ["CCO", "C", "c1ccccc1", "O", "CCC", "CC(C)=O"]
    with pytest.raises(MoleculeReadError, match=r"^X: invalid molecule at record 0: 'ethanol'") as info:
        MoleculeRetriever().fit(names, mols)
    assert any("pass inputs='text'" in n for n in info.value.__notes__)
    X = list(qm9[0])
    X[7] = "C1CC(("
    with pytest.raises(MoleculeReadError) as info:
        MoleculeRetriever().fit(X, qm9[0])
    assert not getattr(info.value, "__notes__", None)
    assert MoleculeRetriever(inputs="text", method="iokr", random_state=0).fit(names, mols).inputs_ == "text"


def kekule(smiles):
    """The Kekule spelling of a molecule (another string, the same molecule)."""
    mol = Chem.MolFromSmiles(smiles)
    Chem.Kekulize(mol, clearAromaticFlags=True)
    return Chem.MolToSmiles(mol, kekuleSmiles=True, canonical=False)


def test_one_molecule_spelled_twice_in_the_pool_is_one_candidate(fitted, qm9):
    """A pool holding each molecule twice (aromatic and Kekule) ranks distinct molecules:
    ``predict_topk`` lists each molecule once, its index the first occurrence, and gives
    what the pool without repeats gives; ``predict_scores`` keeps the pool's columns, the
    repeats scored alike.  The same molecule was listed at ranks 1 and 2."""
    _, queries, pool = qm9
    doubled = list(pool) + [kekule(s) for s in pool]
    assert len(set(doubled)) > len(pool)  # other strings ...
    model = fitted["iokr"]
    top = model.predict_topk(queries, k=5, candidates=doubled)
    plain = model.predict_topk(queries, k=5, candidates=pool)
    assert all(len(set(row)) == 5 for row in top.smiles)
    assert top.smiles == plain.smiles and np.array_equal(top.indices, plain.indices)
    np.testing.assert_allclose(top.scores, plain.scores, rtol=1e-12)
    S = model.predict_scores(queries[:5], candidates=doubled)
    assert S.shape == (5, 2 * len(pool)) and np.array_equal(S[:, :len(pool)], S[:, len(pool):])
    assert model.predict(queries, candidates=doubled) == model.predict(queries, candidates=pool)
    # a pool of one molecule in three spellings: one candidate
    one = model.predict_topk(queries[:2], k=3, candidates=["c1ccccc1", "C1=CC=CC=C1", "[cH]1ccccc1"])
    assert one.smiles == [["c1ccccc1"]] * 2 and one.indices.tolist() == [[0], [0]]
    with pytest.raises(ValueError, match="k must be an integer >= 1, got None"):
        model.predict_topk(queries[:2], k=None)


def test_a_table_or_a_two_dimensional_array_of_molecules_is_refused_naming_the_argument(fitted, qm9):
    """Iterating a DataFrame gives its column names: they were read as the molecules (a
    column named "C" predicted methane's neighbour for a one-row table; other tables failed
    with an IndexError deep in the selection)."""
    pd = pytest.importorskip("pandas")
    X, queries, _ = qm9
    model = fitted["iokr"]
    with pytest.raises(TypeError, match=r"^X must be a one-dimensional sequence of molecules, got a DataFrame with "
                                        r"columns \['C'\]; pass one column, e.g. X\['C'\]"):
        model.predict(pd.DataFrame({"C": queries[:1]}))
    with pytest.raises(TypeError, match=r"^candidates must be a one-dimensional .* DataFrame"):
        model.predict(queries[:2], candidates=pd.DataFrame({"smiles": queries}))
    with pytest.raises(TypeError, match=r"^y must be a one-dimensional .* DataFrame with columns \['CCO'\]"):
        small("iokr").fit(X[:40], pd.DataFrame({"CCO": X[:40]}))
    with pytest.raises(TypeError, match=r"^X must be a one-dimensional sequence of SMILES or texts, got a DataFrame"):
        small("iokr").fit(pd.DataFrame({"a text": X[:40]}), X[:40])
    with pytest.raises(TypeError, match=r"^X must be a one-dimensional sequence of texts, got a DataFrame"):
        small("iokr", inputs="text").fit(pd.DataFrame({"a text": X[:40]}), X[:40])
    with pytest.raises(TypeError, match=r"^X must be a one-dimensional sequence of SMILES or texts, got an array of "
                                        r"shape \(20, 2\)"):
        small("iokr").fit(np.array(X[:40]).reshape(20, 2), X[:20])
    # one column of the table is a sequence: taken as is
    assert model.predict(pd.DataFrame({"s": queries[:3]})["s"]) == model.predict(queries[:3])


def test_molecule_graphs_as_inputs_are_molecules(qm9):
    """Molecule graphs as X (the command line's ``molecule`` column type) are read as their
    SMILES: ``np.ndim`` failed on them ("inhomogeneous shape"), and graphs of as many atoms
    as each other were taken for rows of numbers (``inputs="vectors"``)."""
    from sprokr_chem import smiles_to_graph

    X = qm9[0][:40]
    model = small("iokr", output_kernel="morgan_count_tanimoto").fit(X, X)
    graphs = [smiles_to_graph(s) for s in X]
    assert model.predict(graphs[:5]) == model.predict(X[:5])
    same_size = [s for s in X if Chem.MolFromSmiles(s).GetNumAtoms() == 9][:12]
    assert len(same_size) == 12
    fitted_on_graphs = small("iokr", output_kernel="morgan_count_tanimoto").fit(
        [smiles_to_graph(s) for s in same_size], same_size)
    assert fitted_on_graphs.inputs_ == "smiles"


def test_metal_complexes_among_the_training_molecules(qm9):
    """Cisplatin (two dative bonds once RDKit reads it) among the training and candidate
    molecules: the default output kernels (``wl`` among them) take it; ``wl`` failed the fit
    with "unsupported bond type DATIVE"."""
    X = list(qm9[0][:40]) + ["Cl[Pt](Cl)([NH3])[NH3]", "O->[Cu+2]<-O"]
    model = small("iokr").fit(X, X)
    assert [t["output_kernel"] for t in model.selection_["tried"]] == ["wl", "morgan_count_tanimoto"]
    assert model.predict(["Cl[Pt](Cl)([NH3])[NH3]"])[0] == "[NH3]->[Pt](<-[NH3])([Cl])[Cl]"


def test_one_smiles_with_a_stray_blank_is_named_not_a_reason_to_read_texts(qm9):
    """``inputs="auto"`` read a whole column of SMILES as texts when one element held a
    blank (a typo): the model silently used the text kernel.  Texts are now detected when at
    least half the elements hold whitespace; the stray blank is an invalid SMILES, named."""
    X = list(qm9[0][:40])
    X[7] = "CC O"
    with pytest.raises(MoleculeReadError, match=r"^X: invalid molecule at record 7: 'CC O' \(whitespace inside"):
        small("iokr").fit(X, qm9[0][:40])
    texts = [f"molecule number {i}" for i in range(20)] + [f"m{i}" for i in range(20)]
    model = small("iokr", output_kernel="morgan_count_tanimoto", input_grid=[{}]).fit(texts, qm9[0][:40])
    assert model.inputs_ == "text"


def test_sets_are_refused_their_order_changes_from_run_to_run(fitted, qm9):
    """A set of outputs was paired with the inputs in its iteration order (which depends on
    the process's string hashing): a silently wrong fit; a set of queries gave predictions in
    that order, a set of candidates ties and indices that changed from run to run."""
    X, queries, pool = qm9
    model = fitted["iokr"]
    with pytest.raises(TypeError, match=r"^y is a set, whose order changes from run to run .* sorted\(y\)"):
        small("iokr").fit(X[:40], set(X[:40]))
    with pytest.raises(TypeError, match=r"^X is a frozenset, whose order"):
        model.predict(frozenset(queries))
    with pytest.raises(TypeError, match=r"^candidates is a set, whose order"):
        model.predict_topk(queries[:2], k=2, candidates=set(pool))
    assert model.predict(queries[:2], candidates=sorted(set(pool))) == model.predict(queries[:2], candidates=pool)
