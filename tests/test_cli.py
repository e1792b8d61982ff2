"""The file-level command line: sprokr fit / predict / evaluate / select."""
import csv
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from sprokr.cli import main
from sprokr.datasets import sample_path

MULTI = '''estimator = "SISOKR"
random_state = 0

[params]
lam = 1e-3
input_sketch = "subsample"
m_x = 60

[input]
columns = ["f0", "f1", "f2", "f3"]

[output]
columns = ["sports", "music", "science"]
type = "labels"

[select]
lams = [1e-5, 1e-3, 1e-1]
'''


@pytest.fixture
def multilabel(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 4))
    Y = (X[:, :3] + 0.3 * rng.normal(size=(240, 3)) > 0).astype(int)
    for name, sl in (("train.csv", slice(0, 200)), ("test.csv", slice(200, 240))):
        with open(tmp_path / name, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["f0", "f1", "f2", "f3", "sports", "music", "science"])
            w.writerows([[*map(float, x), *y] for x, y in zip(X[sl], Y[sl])])
    (tmp_path / "model.toml").write_text(MULTI)
    return tmp_path


def kekule(smiles, canonical=True):
    """Another spelling of one molecule: Kekule bonds, rooted at its last atom (RDKit)."""
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    Chem.Kekulize(mol, clearAromaticFlags=True)
    return Chem.MolToSmiles(mol, kekuleSmiles=True, canonical=canonical, rootedAtAtom=mol.GetNumAtoms() - 1)


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_multilabel_fit_predict_evaluate_select(multilabel, capsys):
    d = multilabel
    code, out, _ = run(["fit", "--config", d / "model.toml", "--train", d / "train.csv", "-o", d / "m.sprokr",
                        "--json"], capsys)
    assert code == 0 and json.loads(out)["n_train"] == 200
    code, out, _ = run(["predict", d / "m.sprokr", "--input", d / "test.csv", "-o", d / "p.csv"], capsys)
    rows = list(csv.DictReader(open(d / "p.csv")))
    assert code == 0 and len(rows) == 40
    assert all(set(filter(None, r["prediction"].split(";"))) <= {"sports", "music", "science"} for r in rows)
    code, out, _ = run(["evaluate", d / "m.sprokr", "--test", d / "test.csv", "--json"], capsys)
    res = json.loads(out)
    assert code == 0 and res["f1_samples"] > 0.6  # far above chance on this easy problem
    code, out, _ = run(["select", "--config", d / "model.toml", "--train", d / "train.csv", "-o", d / "chosen.toml",
                        "--figure", d / "lam.png", "--json"], capsys)
    chosen = tomllib.loads((d / "chosen.toml").read_text())
    assert code == 0 and chosen["params"]["lam"] == json.loads(out)["best_params"]["lam"] in (1e-5, 1e-3, 1e-1)
    assert (d / "lam.png").stat().st_size > 0


def test_a_value_model_on_labels_is_evaluated_on_the_labels_it_writes(multilabel, capsys):
    """A ridge regressor on 0/1 label columns predicts values; `sprokr predict` writes the
    labels above 0.5, and `evaluate` scores those (it passed candidates= to the regressor's
    predict: a TypeError)."""
    d = multilabel
    (d / "ridge.toml").write_text('estimator = "KernelRidgeRegressor"\n[params]\nlam = 1e-3\n[input]\n'
                                  'columns = ["f0", "f1", "f2", "f3"]\n[output]\n'
                                  'columns = ["sports", "music", "science"]\ntype = "labels"\n')
    assert run(["fit", "--config", d / "ridge.toml", "--train", d / "train.csv", "-o", d / "r.sprokr"], capsys)[0] == 0
    code, out, err = run(["evaluate", d / "r.sprokr", "--test", d / "test.csv", "--json"], capsys)
    assert code == 0, err
    assert run(["predict", d / "r.sprokr", "--input", d / "test.csv", "-o", d / "p.csv"], capsys)[0] == 0
    names = ["sports", "music", "science"]
    rows = list(csv.DictReader(open(d / "p.csv")))
    P = np.array([[n in r["prediction"].split(";") for n in names] for r in rows], dtype=float)
    Y = np.array([[float(r[n]) for n in names] for r in csv.DictReader(open(d / "test.csv"))])
    from sprokr.metrics import f1_samples

    assert json.loads(out)["f1_samples"] == pytest.approx(f1_samples(Y, P), abs=1e-12)


def test_r2_of_constant_test_targets_is_undefined(multilabel, capsys):
    """One test row: R^2 divides by a zero total sum of squares (it printed -9e303)."""
    d = multilabel
    (d / "ridge.toml").write_text('estimator = "KernelRidgeRegressor"\n[params]\nlam = 1e-3\n[input]\n'
                                  'columns = ["f0", "f1", "f2"]\n[output]\ncolumn = "f3"\n')
    lines = (d / "test.csv").read_text().splitlines()
    (d / "one.csv").write_text("\n".join(lines[:2]) + "\n")
    assert run(["fit", "--config", d / "ridge.toml", "--train", d / "train.csv", "-o", d / "r.sprokr"], capsys)[0] == 0
    code, out, _ = run(["evaluate", d / "r.sprokr", "--test", d / "one.csv", "--json"], capsys)
    res = json.loads(out)
    assert code == 0 and res["r2"] is None and res["mse"] >= 0
    code, out, err = run(["evaluate", d / "r.sprokr", "--test", d / "test.csv", "--json"], capsys)
    assert code == 0 and -1 < json.loads(out)["r2"] < 1


def test_errors_are_one_line_with_exit_code_2(multilabel, capsys):
    d = multilabel
    (d / "bad.toml").write_text(MULTI.replace('"f3"]', '"f9"]'))
    code, _, err = run(["fit", "--config", d / "bad.toml", "--train", d / "train.csv", "-o", d / "m.sprokr"], capsys)
    assert code == 2 and "no column 'f9'" in err and "'f3'" in err and "Traceback" not in err
    (d / "bad.toml").write_text(MULTI.replace("m_x = 60", "m_xx = 60"))
    code, _, err = run(["fit", "--config", d / "bad.toml", "--train", d / "train.csv", "-o", d / "m.sprokr"], capsys)
    assert code == 2 and "no parameter(s) ['m_xx']" in err
    (d / "bad.toml").write_text(MULTI.replace('"SISOKR"', '"SISOKRR"'))
    code, _, err = run(["fit", "--config", d / "bad.toml", "--train", d / "train.csv", "-o", d / "m.sprokr"], capsys)
    assert code == 2 and "unknown estimator 'SISOKRR'" in err
    lines = (d / "train.csv").read_text().splitlines()
    lines[3] = lines[3].replace(lines[3].split(",")[0], "abc", 1)
    (d / "bad.csv").write_text("\n".join(lines) + "\n")
    code, _, err = run(["fit", "--config", d / "model.toml", "--train", d / "bad.csv", "-o", d / "m.sprokr"], capsys)
    assert code == 2 and "bad.csv line 4: column 'f0' holds 'abc'" in err
    code, _, err = run(["predict", d / "none.sprokr", "--input", d / "test.csv"], capsys)
    assert code == 2 and "no such model file" in err


def test_molecules_from_properties_with_a_candidate_pool(tmp_path, capsys):
    pytest.importorskip("sprokr_chem")
    rows = list(csv.DictReader(open(sample_path("qm9_sample.csv"))))[:150]
    props = ["mu", "alpha", "homo", "lumo", "gap", "r2", "zpve", "cv"]
    with open(tmp_path / "train.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows[:120])
    with open(tmp_path / "test.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows[120:])
    (tmp_path / "pool.smi").write_text("".join(f"{r['smiles']} {r['mol_id']}\n" for r in rows))
    (tmp_path / "mols.toml").write_text(f'''estimator = "IOKR"
[params]
lam = 1e-3
output_kernel = "wl"
[input]
columns = {json.dumps(props)}
[output]
column = "smiles"
type = "molecule"
''')
    assert run(["fit", "--config", tmp_path / "mols.toml", "--train", tmp_path / "train.csv",
                "-o", tmp_path / "m.sprokr"], capsys)[0] == 0
    code, _, _ = run(["predict", tmp_path / "m.sprokr", "--input", tmp_path / "test.csv", "--candidates",
                      tmp_path / "pool.smi", "--top-k", "3", "-o", tmp_path / "top.csv"], capsys)
    top = list(csv.DictReader(open(tmp_path / "top.csv")))
    pool = {r["smiles"] for r in rows}
    from rdkit import Chem

    canon = {Chem.MolToSmiles(Chem.MolFromSmiles(s)) for s in pool}
    assert code == 0 and len(top) == 90 and all(r["prediction"] in canon for r in top)
    code, out, _ = run(["evaluate", tmp_path / "m.sprokr", "--test", tmp_path / "test.csv", "--candidates",
                        tmp_path / "pool.smi", "--json"], capsys)
    res = json.loads(out)
    assert code == 0 and res["truth_in_candidates"] == 1.0 and 0 < res["mrr"] <= 1
    # a pool missing 10 of the 30 test molecules: they are misses, over all 30 (not metrics over
    # the 20 found), and the count is named on stderr
    (tmp_path / "part.smi").write_text("".join(f"{r['smiles']} {r['mol_id']}\n" for r in rows[:140]))
    code, out, err = run(["evaluate", tmp_path / "m.sprokr", "--test", tmp_path / "test.csv", "--candidates",
                          tmp_path / "part.smi", "--top-k", "3", "--json"], capsys)
    part = json.loads(out)
    assert code == 0 and part["truth_in_candidates"] == pytest.approx(20 / 30)
    assert "10 of the 30 test molecules are not in" in err and "count as misses" in err
    assert part["top1"] <= 20 / 30 and part["top3"] <= 20 / 30 and part["mrr"] <= 20 / 30 + 1e-12
    # the 20 found alone, against the same pool: the same ranks, averaged over 20 instead of 30
    with open(tmp_path / "found.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows[120:140])
    alone = json.loads(run(["evaluate", tmp_path / "m.sprokr", "--test", tmp_path / "found.csv", "--candidates",
                            tmp_path / "part.smi", "--top-k", "3", "--json"], capsys)[1])
    assert alone["truth_in_candidates"] == 1.0 and alone["mrr"] > 0
    for key in ("top1", "top3", "mrr"):
        assert part[key] == pytest.approx(alone[key] * 20 / 30)
    bad = (tmp_path / "test.csv").read_text().splitlines()
    bad[2] = bad[2].replace(rows[121]["smiles"], "C1CC((", 1)
    (tmp_path / "bad.csv").write_text("\n".join(bad) + "\n")
    code, _, err = run(["evaluate", tmp_path / "m.sprokr", "--test", tmp_path / "bad.csv", "--candidates",
                        tmp_path / "pool.smi"], capsys)
    assert code == 2 and "bad.csv line 3: invalid SMILES 'C1CC(('" in err


def test_molecules_written_twice_in_the_pool_are_one_candidate(tmp_path, capsys):
    """A pool holding every molecule twice (the second in Kekule form, another string): the
    same metrics as the pool without repeats, and ``--top-k`` lists distinct molecules.
    The repeat of the truth tied with it: top-1 fell from 0.37 to 0 on 150 ChEBI molecules."""
    pytest.importorskip("sprokr_chem")

    rows = list(csv.DictReader(open(sample_path("qm9_sample.csv"))))[:150]
    for name, part in (("train.csv", rows[:120]), ("test.csv", rows[120:])):
        with open(tmp_path / name, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(part)

    (tmp_path / "pool.smi").write_text("".join(f"{r['smiles']}\n" for r in rows))
    twice = [r["smiles"] for r in rows] + [kekule(r["smiles"], canonical=False) for r in rows]
    assert len(set(twice)) > 200
    (tmp_path / "twice.smi").write_text("".join(f"{s}\n" for s in twice))
    (tmp_path / "mols.toml").write_text('''estimator = "IOKR"
[params]
lam = 1e-4
input_kernel = "smiles_spectrum"
output_kernel = "wl"
[input]
columns = ["smiles"]
type = "smiles"
[output]
column = "smiles"
type = "molecule"
''')
    assert run(["fit", "--config", tmp_path / "mols.toml", "--train", tmp_path / "train.csv",
                "-o", tmp_path / "m.sprokr"], capsys)[0] == 0
    res = {}
    for pool in ("pool", "twice"):
        code, out, _ = run(["evaluate", tmp_path / "m.sprokr", "--test", tmp_path / "test.csv", "--candidates",
                            tmp_path / f"{pool}.smi", "--top-k", "3", "--json"], capsys)
        assert code == 0
        res[pool] = json.loads(out)
        code, _, _ = run(["predict", tmp_path / "m.sprokr", "--input", tmp_path / "test.csv", "--candidates",
                          tmp_path / f"{pool}.smi", "--top-k", "3", "-o", tmp_path / f"{pool}.csv"], capsys)
        assert code == 0
    assert res["pool"]["top1"] > 0
    assert {k: v for k, v in res["twice"].items() if k != "decode_s"} == \
        {k: v for k, v in res["pool"].items() if k != "decode_s"}
    top = list(csv.DictReader(open(tmp_path / "twice.csv")))
    assert len(top) == 90 and len({(r["query"], r["prediction"]) for r in top}) == 90
    assert top == list(csv.DictReader(open(tmp_path / "pool.csv")))


def test_molecules_written_twice_among_the_training_outputs_are_ranked_once(tmp_path, capsys):
    """Without ``--candidates`` the pool is the model's distinct training outputs, distinct
    as objects: a molecule written two ways in the training file was listed at two ranks by
    ``--top-k``.  Each molecule is ranked once, written as its first spelling; rank 1 is
    ``predict``'s choice."""
    pytest.importorskip("sprokr_chem")
    from rdkit import Chem

    smiles = [r["smiles"] for r in csv.DictReader(open(sample_path("qm9_sample.csv")))][:60]
    with open(tmp_path / "train.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["query", "smiles"], *[[s, s] for s in smiles], *[[s, kekule(s)] for s in smiles]])
    (tmp_path / "mols.toml").write_text('''estimator = "IOKR"
[params]
lam = 1e-6
input_kernel = "smiles_spectrum"
output_kernel = "morgan_count_tanimoto"
[input]
columns = ["query"]
type = "smiles"
[output]
column = "smiles"
type = "smiles"
''')
    assert run(["fit", "--config", tmp_path / "mols.toml", "--train", tmp_path / "train.csv",
                "-o", tmp_path / "m.sprokr"], capsys)[0] == 0
    assert run(["predict", tmp_path / "m.sprokr", "--input", tmp_path / "train.csv", "--top-k", "3", "-o",
                tmp_path / "top.csv"], capsys)[0] == 0
    assert run(["predict", tmp_path / "m.sprokr", "--input", tmp_path / "train.csv", "-o",
                tmp_path / "p.csv"], capsys)[0] == 0
    top = list(csv.DictReader(open(tmp_path / "top.csv")))
    canon = {(r["query"], Chem.MolToSmiles(Chem.MolFromSmiles(r["prediction"]))) for r in top}
    assert len({kekule(s) for s in smiles} - set(smiles)) > 50  # other strings for one molecule
    assert len(top) == 360 and len(canon) == 360
    assert {r["prediction"] for r in top} <= set(smiles)
    assert [r["prediction"] for r in top if r["rank"] == "1"] == \
        [r["prediction"] for r in csv.DictReader(open(tmp_path / "p.csv"))]


def test_molecule_column_predictions_keep_the_stereo_of_the_molecules(tmp_path, capsys):
    """A ``molecule`` output column (graphs for a graph output kernel) is written back with
    the stereochemistry of the predicted molecule: it was written from the graph's labels,
    ``C[C@H](N)C(=O)O`` as ``CC(N)C(=O)O``, so no prediction of a chiral molecule was its
    truth."""
    pytest.importorskip("sprokr_chem")
    from rdkit import Chem
    from rdkit.Chem.EnumerateStereoisomers import EnumerateStereoisomers

    chiral = []
    for r in csv.DictReader(open(sample_path("qm9_sample.csv"))):
        isomers = list(EnumerateStereoisomers(Chem.MolFromSmiles(r["smiles"])))
        if len(isomers) > 1:
            chiral.append(Chem.MolToSmiles(isomers[-1]))
    chiral = chiral[:60]
    assert len(chiral) == 60 and all("@" in s or "/" in s or "\\" in s for s in chiral)
    with open(tmp_path / "train.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["query", "smiles"], *[[s, s] for s in chiral]])
    (tmp_path / "mols.toml").write_text('''estimator = "IOKR"
[params]
lam = 1e-6
input_kernel = "smiles_spectrum"
output_kernel = "wl"
[input]
columns = ["query"]
type = "smiles"
[output]
column = "smiles"
type = "molecule"
''')
    assert run(["fit", "--config", tmp_path / "mols.toml", "--train", tmp_path / "train.csv",
                "-o", tmp_path / "m.sprokr"], capsys)[0] == 0
    code, _, _ = run(["predict", tmp_path / "m.sprokr", "--input", tmp_path / "train.csv", "-o",
                      tmp_path / "p.csv"], capsys)
    pred = [r["prediction"] for r in csv.DictReader(open(tmp_path / "p.csv"))]
    assert code == 0 and set(pred) <= set(chiral) and np.mean([p == s for p, s in zip(pred, chiral)]) > 0.9


def test_python_dash_m_runs_fit_with_json_only_on_stdout(multilabel):
    d = multilabel
    res = subprocess.run([sys.executable, "-m", "sprokr", "fit", "--config", str(d / "model.toml"), "--train",
                          str(d / "train.csv"), "-o", str(d / "m.sprokr"), "--json"],
                         capture_output=True, text=True, check=True)
    assert json.loads(res.stdout)["estimator"] == "SISOKR"
    assert "fitted SISOKR" in res.stderr


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The shipped samples written by `sprokr samples --export`."""
    d = tmp_path_factory.mktemp("samples")
    assert main(["samples", "--export", str(d)]) == 0
    return d


def test_samples_lists_the_shipped_files(capsys):
    code, out, err = run(["samples", "--json"], capsys)
    records = {r["name"]: r for r in json.loads(out)}
    assert code == 0 and set(records) == {"bibtex", "qm9"}
    assert records["qm9"]["path"] == str(sample_path("qm9_sample.csv"))
    assert all(Path(r["path"]).is_file() for r in records.values()) and "--export" in err


def test_shipped_multilabel_sample_round_trips_through_the_model_file(exported, capsys):
    d = exported
    code, out, _ = run(["fit", "--config", d / "bibtex.toml", "--train", d / "bibtex_train.npz", "-o",
                        d / "bibtex.sprokr", "--json"], capsys)
    assert code == 0 and json.loads(out)["n_train"] == 800
    assert run(["predict", d / "bibtex.sprokr", "--input", d / "bibtex_test.npz", "-o", d / "tags.csv"], capsys)[0] == 0
    code, out, _ = run(["evaluate", d / "bibtex.sprokr", "--test", d / "bibtex_test.npz", "--json"], capsys)
    res = json.loads(out)
    assert code == 0 and res["n_test"] == 400 and res["f1_samples"] > 0.25  # the demo's IOKR: ~0.35
    # the CLI's predictions are the saved model's
    from sprokr import load
    from sprokr.io import read_table

    test = read_table(d / "bibtex_test.npz")
    P = load(d / "bibtex.sprokr").predict(np.asarray(test.column("X"), dtype=float))
    rows = list(csv.DictReader(open(d / "tags.csv")))
    assert [set(filter(None, r["prediction"].split(";"))) for r in rows] == \
        [{f"tag_{j:03d}" for j in np.flatnonzero(p)} for p in P]


def test_select_draws_lam_path_perfect_h_and_m_x_curves_on_the_qm9_sample(exported, capsys):
    pytest.importorskip("sprokr_chem")
    d = exported
    code, out, err = run(["select", "--config", d / "qm9.toml", "--train", d / "qm9_train.csv", "-o",
                          d / "chosen.toml", "--figure", d / "select.png", "--json"], capsys)
    res = json.loads(out)
    assert code == 0 and (d / "select.png").read_bytes()[:4] == b"\x89PNG"
    assert res["figure_panels"] == ["lam path", "perfect h (output sketch size)", "input sketch size",
                                    "accuracy vs fit time"]
    chosen = tomllib.loads((d / "chosen.toml").read_text())["params"]
    assert chosen["m_y"] == res["perfect_h"]["plateau_m"] and chosen["m_x"] == res["m_x"]["selected_m"]
    assert res["m_x"]["m"][0] == 50 and len(res["perfect_h"]["curve"]) == 4
    # without --figure: no panels, the same choice
    code, out, _ = run(["select", "--config", d / "qm9.toml", "--train", d / "qm9_train.csv", "-o",
                        d / "chosen2.toml", "--json"], capsys)
    assert code == 0 and "figure" not in json.loads(out) and json.loads(out)["best_params"] == res["best_params"]


def test_standardised_numeric_inputs_store_the_training_statistics(exported, tmp_path, capsys):
    """`[input] standardize = true` (the QM9 sample's configuration): the training file's means
    and deviations are stored with the model and applied by predict / evaluate -- the same
    model as one fitted on the exported pre-standardised z_ columns (rounded to 6 digits)."""
    pytest.importorskip("sprokr_chem")
    from sprokr import load
    from sprokr.persistence import read_manifest

    d = exported
    cfg = tomllib.loads((d / "qm9.toml").read_text())
    assert cfg["input"]["standardize"] is True and "center" not in cfg["input"]
    assert run(["fit", "--config", d / "qm9.toml", "--train", d / "qm9_train.csv", "-o", tmp_path / "raw.sprokr"],
               capsys)[0] == 0
    stored = read_manifest(tmp_path / "raw.sprokr")["metadata"]["config"]["input"]
    rows = list(csv.DictReader(open(d / "qm9_train.csv")))
    P = np.array([[float(r[c]) for c in cfg["input"]["columns"]] for r in rows])
    np.testing.assert_allclose(stored["center"], P.mean(0))
    np.testing.assert_allclose(stored["scale"], P.std(0))
    # the same model on the z_ columns, no standardisation
    cols = cfg["input"]["columns"]
    z = (d / "qm9.toml").read_text().replace("standardize = true\n", "")
    assert json.dumps(cols) in z
    (tmp_path / "z.toml").write_text(z.replace(json.dumps(cols), json.dumps([f"z_{c}" for c in cols])))
    assert run(["fit", "--config", tmp_path / "z.toml", "--train", d / "qm9_train.csv", "-o", tmp_path / "z.sprokr"],
               capsys)[0] == 0
    scores = {}
    for name in ("raw", "z"):
        code, out, _ = run(["evaluate", tmp_path / f"{name}.sprokr", "--test", d / "qm9_test.csv", "--candidates",
                            d / "qm9_pool.smi", "--json"], capsys)
        assert code == 0
        scores[name] = json.loads(out)
    assert scores["raw"]["mrr"] == pytest.approx(scores["z"]["mrr"], abs=0.02)
    # predict applies the stored statistics: equal to the Python model on standardised queries
    assert run(["predict", tmp_path / "raw.sprokr", "--input", d / "qm9_test.csv", "-o", tmp_path / "p.csv"],
               capsys)[0] == 0
    test = list(csv.DictReader(open(d / "qm9_test.csv")))
    Q = (np.array([[float(r[c]) for c in cfg["input"]["columns"]] for r in test]) - P.mean(0)) / P.std(0)
    from sprokr_chem import canonical_smiles
    expected = [str(s) for s in load(tmp_path / "raw.sprokr").predict(Q)]
    got = [r["prediction"] for r in csv.DictReader(open(tmp_path / "p.csv"))]
    assert canonical_smiles(got) == canonical_smiles(expected)


@pytest.mark.parametrize("input_table, message", [
    ('column = "smiles"\ntype = "smiles"\nstandardize = true', "standardize applies to numeric columns"),
    ('columns = ["mu"]\ntype = "numeric"\nstandardize = "yes"', "standardize must be true or false"),
])
def test_standardize_errors(tmp_path, capsys, input_table, message):
    (tmp_path / "m.toml").write_text(f'estimator = "SISOKR"\n[params]\nlam = 1e-3\n[input]\n{input_table}\n'
                                     '[output]\ncolumn = "smiles"\ntype = "smiles"\n')
    (tmp_path / "t.csv").write_text("mu,smiles\n1.0,CCO\n2.0,CCN\n")
    code, _, err = run(["fit", "--config", tmp_path / "m.toml", "--train", tmp_path / "t.csv", "-o",
                        tmp_path / "m.sprokr"], capsys)
    assert code == 2 and message in err


@pytest.mark.parametrize("extra, message", [
    ("center = [0.0]\nscale = [1.0]", "center and scale go together, with standardize = true"),
    ("standardize = true\ncenter = [0.0]", "center and scale go together"),
    ("standardize = true\ncenter = [0.0]\nscale = [0.0]", "scale must hold positive deviations"),
])
def test_stored_scaling_is_checked(tmp_path, capsys, extra, message):
    (tmp_path / "m.toml").write_text(f'estimator = "SISOKR"\n[params]\nlam = 1e-3\n[input]\ncolumns = ["mu"]\n'
                                     f'type = "numeric"\n{extra}\n[output]\ncolumn = "smiles"\ntype = "smiles"\n')
    (tmp_path / "t.csv").write_text("mu,smiles\n1.0,CCO\n2.0,CCN\n")
    code, _, err = run(["fit", "--config", tmp_path / "m.toml", "--train", tmp_path / "t.csv", "-o",
                        tmp_path / "m.sprokr"], capsys)
    assert code == 2 and message in err
