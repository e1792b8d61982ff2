"""The domain hooks (file readers, column types, depictions, saveable classes) carry a
third-party domain end to end: a toy amino-acid plugin (tests/toy_protein_plugin.py), unknown
to sprokr, goes through ``sprokr fit / predict / evaluate``, the safe model format and
``plot_outputs``."""
import csv
import json

import numpy as np
import pytest

import sprokr
import toy_protein_plugin as toy
from sprokr.cli import main
from sprokr.registry import Registry, get_registry, reset_registry

CONFIG = '''estimator = "IOKR"
[params]
lam = 1e-3
input_kernel = "kmer_spectrum"
input_kernel_params = {k = 2}
output_kernel = "kmer_spectrum"
output_kernel_params = {k = 3}

[input]
column = "sequence"
type = "protein"

[output]
column = "parent"
type = "protein"
'''


@pytest.fixture
def plugin():
    reset_registry()
    get_registry().register(toy, name="toyprotein")
    yield toy
    reset_registry()


def fragments(parents, n, rng):
    """``n`` fragments of 20 residues per parent protein, each with 2 point mutations."""
    X, Y = [], []
    for p in parents:
        for _ in range(n):
            o = int(rng.integers(0, len(p) - 19))
            s = list(p[o:o + 20])
            for pos in rng.choice(20, 2, replace=False):
                s[pos] = rng.choice(list(toy.AMINO_ACIDS))
            X.append("".join(s))
            Y.append(p)
    return X, Y


def write_fasta(path, names, sequences, **fields):
    with open(path, "w") as fh:
        for i, (name, s) in enumerate(zip(names, sequences)):
            header = " ".join([name] + [f"{k}={v[i]}" for k, v in fields.items()])
            fh.write(f">{header}\n{s[:25]}\n{s[25:]}\n")  # sequences over two lines


@pytest.fixture
def protein_files(tmp_path):
    rng = np.random.default_rng(0)
    parents = ["".join(rng.choice(list(toy.AMINO_ACIDS), 40)) for _ in range(6)]
    Xtr, Ytr = fragments(parents, 8, rng)
    Xte, Yte = fragments(parents, 3, np.random.default_rng(1))
    write_fasta(tmp_path / "train.fasta", [f"tr{i}" for i in range(len(Xtr))], Xtr, parent=Ytr)
    write_fasta(tmp_path / "test.fa", [f"te{i}" for i in range(len(Xte))], Xte, parent=Yte)
    write_fasta(tmp_path / "pool.fasta", [f"protein{j}" for j in range(6)], parents)
    (tmp_path / "model.toml").write_text(CONFIG)
    return tmp_path, parents, (Xtr, Ytr, Xte, Yte)


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_fit_predict_evaluate_save_load_with_a_plugin_domain(plugin, protein_files, capsys):
    d, parents, (Xtr, Ytr, Xte, Yte) = protein_files
    code, out, err = run(["fit", "--config", d / "model.toml", "--train", d / "train.fasta", "-o", d / "m.sprokr",
                          "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["n_train"] == 48
    # top-2 over the FASTA pool: its `sequence` column (the pool has no `parent` column)
    code, _, err = run(["predict", d / "m.sprokr", "--input", d / "test.fa", "--candidates", d / "pool.fasta",
                        "--top-k", "2", "-o", d / "top.csv"], capsys)
    assert code == 0, err
    rows = list(csv.DictReader(open(d / "top.csv")))
    top1 = [r["prediction"] for r in rows if r["rank"] == "1"]
    assert len(rows) == 2 * len(Xte) and top1 == Yte  # every fragment finds its protein (chance: 1/6)
    assert all(r["prediction"] in parents for r in rows)
    code, out, _ = run(["evaluate", d / "m.sprokr", "--test", d / "test.fa", "--candidates", d / "pool.fasta",
                        "--top-k", "2", "--json"], capsys)
    res = json.loads(out)
    assert code == 0 and res["truth_in_candidates"] == 1.0 and res["top1"] == 1.0 and res["mrr"] == 1.0

    # the saved model: the fitted vocabulary (a plugin's saveable class) comes back equal
    from sprokr.persistence import read_manifest

    model = sprokr.load(d / "m.sprokr")
    assert model.input_kernel_.vocabulary_ == toy.KmerVocabulary.from_sequences(Xtr, 2)
    assert type(model.input_kernel_.vocabulary_) is toy.KmerVocabulary
    assert list(model.predict(Xte, candidates=parents)) == Yte
    manifest = read_manifest(d / "m.sprokr")
    assert "toyprotein" in manifest["plugins"]
    assert '"class": "toy_protein_plugin:KmerVocabulary"' in json.dumps(manifest["root"])
    # default candidates: the distinct training outputs, written back with the column type
    code, _, _ = run(["predict", d / "m.sprokr", "--input", d / "test.fa", "-o", d / "p.csv"], capsys)
    assert code == 0 and [r["prediction"] for r in csv.DictReader(open(d / "p.csv"))] == Yte

    reset_registry()  # the plugin is gone: the model names it
    with pytest.raises(sprokr.persistence.MissingPluginError, match="kmer_spectrum.*plugin 'toyprotein'"):
        sprokr.load(d / "m.sprokr")


def test_plugin_data_errors_name_file_line_and_column(plugin, protein_files, capsys):
    d, _, _ = protein_files
    lines = (d / "train.fasta").read_text().splitlines()
    assert lines[6].startswith(">tr2")
    lines[7] = "B" + lines[7][1:]  # record 3, header on line 7
    (d / "bad.fasta").write_text("\n".join(lines) + "\n")
    code, _, err = run(["fit", "--config", d / "model.toml", "--train", d / "bad.fasta", "-o", d / "m.sprokr"], capsys)
    assert code == 2 and "bad.fasta line 7: column 'sequence' holds 'B" in err and "'B' not among the 20" in err
    (d / "orphan.fasta").write_text("MKV\n>a parent=MKV\nMKV\n")
    code, _, err = run(["fit", "--config", d / "model.toml", "--train", d / "orphan.fasta", "-o", d / "m.sprokr"],
                       capsys)
    assert code == 2 and "orphan.fasta line 1: sequence before the first '>' header" in err
    (d / "typo.toml").write_text(CONFIG.replace('type = "protein"', 'type = "protien"', 1))
    code, _, err = run(["fit", "--config", d / "typo.toml", "--train", d / "train.fasta", "-o", d / "m.sprokr"],
                       capsys)
    assert code == 2 and "unknown column type 'protien'" in err and "protein" in err.split("known column types:")[1]
    (d / "train.fastq").write_text("@r\nMKV\n+\nIII\n")
    code, _, err = run(["fit", "--config", d / "model.toml", "--train", d / "train.fastq", "-o", d / "m.sprokr"],
                       capsys)
    assert code == 2 and "unknown file format '.fastq'" in err and ".fasta" in err and ".csv" in err


def test_saveable_class_hook_is_what_lets_the_state_be_saved(plugin, tmp_path):
    rng = np.random.default_rng(0)
    parents = ["".join(rng.choice(list(toy.AMINO_ACIDS), 40)) for _ in range(4)]
    X, Y = fragments(parents, 5, rng)
    params = dict(input_kernel="kmer_spectrum", output_kernel="kmer_spectrum", lam=1e-3)
    sprokr.IOKR(**params).fit(X, Y).save(tmp_path / "ok.sprokr")

    class KernelsOnly:  # the same kernel, from a plugin that declares no saveable class
        @sprokr.hookimpl
        def sprokr_input_kernels(self):
            return {"kmer_spectrum": toy.KmerSpectrumKernel}

        @sprokr.hookimpl
        def sprokr_output_kernels(self):
            return {"kmer_spectrum": toy.KmerSpectrumKernel}

    reset_registry()
    get_registry().register(KernelsOnly(), name="kernelsonly")
    with pytest.raises(sprokr.persistence.UnsavableObjectError, match=r"vocabulary_ of type toy_protein_plugin"):
        sprokr.IOKR(**params).fit(X, Y).save(tmp_path / "refused.sprokr")

    # a plugin's class held outside the plugin's components: named when the plugin is missing
    reset_registry()
    get_registry().register(toy, name="toyprotein")
    model = sprokr.IOKR(lam=1e-2).fit(np.eye(4), np.eye(4))
    model.vocabulary_note_ = toy.KmerVocabulary(2, ["AA", "AC"])
    model.save(tmp_path / "note.sprokr")
    assert sprokr.load(tmp_path / "note.sprokr").vocabulary_note_ == toy.KmerVocabulary(2, ["AA", "AC"])
    reset_registry()
    with pytest.raises(sprokr.persistence.MissingPluginError,
                       match=r"class toy_protein_plugin:KmerVocabulary .*plugin 'toyprotein'"):
        sprokr.load(tmp_path / "note.sprokr")


def test_plot_outputs_picks_the_plugin_depiction_per_output(plugin, protein_files):
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_rgba

    from sprokr.plotting import plot_outputs

    _, parents, (Xtr, Ytr, Xte, Yte) = protein_files
    model = sprokr.IOKR(input_kernel="kmer_spectrum", output_kernel="kmer_spectrum", lam=1e-3).fit(Xtr, Ytr)
    top = model.predict_topk(Xte[:2], k=2, candidates=parents)
    predicted = [[parents[j] for j in row] for row in top.indices]
    fig = plot_outputs(predicted, Yte[:2], scores=top.scores)
    axes = np.array(fig.axes).reshape(2, 3)
    for i, row in enumerate(axes):
        drawn = ["".join(t.get_text() for t in ax.texts) for ax in row]
        assert drawn == [Yte[i]] + predicted[i]  # each cell spells its sequence, letter by letter
        assert all(len(ax.texts) == 40 and not ax.images for ax in row)
        assert to_rgba(row[0].texts[0].get_color()) == to_rgba(toy.CLASSES[Yte[i][0]])
        framed = [ax.spines["left"].get_edgecolor() == to_rgba("tab:green") for ax in row[1:]]
        assert framed == [p == Yte[i] for p in predicted[i]]
    assert [ax.get_xlabel() for ax in axes[0]][1].startswith("#1  ")
    # another domain's output in the same figure gets its own depiction (sprokr-chem's molecules)
    if "molecule" in get_registry().names("depiction"):
        (a, b) = plot_outputs([[parents[0], "c1ccccc1"]]).axes
        assert len(a.texts) == 40 and not a.images and b.images and not b.texts


def test_missing_first_party_components_say_what_to_install(monkeypatch, tmp_path):
    """Without the chem plugin, a molecule column type or an SDF file names the plugin and how to install it."""
    import sprokr.registry as registry
    from sprokr.io import ColumnSpec, DataFileError, read_table

    monkeypatch.setattr(registry, "_REGISTRY", Registry(entry_points=False))  # sprokr's built-ins only
    with pytest.raises(ValueError, match=r"unknown column type 'molecule'; known column types: labels, numeric, "
                                         r"text; 'molecule' is provided by the chem plugin \(sprokr-chem\).*pip install"):
        ColumnSpec.from_config({"column": "smiles", "type": "molecule"}, "output")
    (tmp_path / "pool.sdf.zip").write_bytes(b"")
    for name in ("pool.sdf", "pool.sdf.zip", "pool.smi", "pool.smi.gz"):
        with pytest.raises(DataFileError, match=r"unknown file format.*\.arff, \.csv, \.csv\.gz, \.npz, \.tsv, "
                                                r"\.tsv\.gz; '\.(sdf|smi)(\.zip|\.gz)?' is provided by the chem plugin"
                                                r".*pip install"):
            read_table(tmp_path / name)
    with pytest.raises(DataFileError, match=r"'\.xyz'; the installed file readers take \.arff, \.csv, \.csv\.gz, \.npz, \.tsv, "
                                         r"\.tsv\.gz$"):
        read_table(tmp_path / "a.xyz")


def test_a_broken_domain_plugin_does_not_break_the_host(tmp_path):
    """A reader whose factory fails is skipped with a warning naming the plugin (CSV files are
    still read); a saveable-classes hook returning something else than classes is reported."""
    import warnings

    from sprokr.io import DataFileError, read_table
    from sprokr.registry import PluginWarning, lazy_factory

    class Broken:
        @sprokr.hookimpl
        def sprokr_readers(self):
            return {"hdf": lazy_factory("no_such_library_xyz:Reader")}

        @sprokr.hookimpl
        def sprokr_saveable_classes(self):
            return [42]

    reg = Registry(entry_points=False)
    with pytest.warns(PluginWarning, match=r"'broken'.*sprokr_saveable_classes.*classes or 'module:Name'.*42"):
        reg.register(Broken(), name="broken")
    import sprokr.registry as registry

    old, registry._REGISTRY = registry._REGISTRY, reg
    try:
        (tmp_path / "t.csv").write_text("a,b\n1,2\n")
        with pytest.warns(PluginWarning, match=r"plugin 'broken': the reader 'hdf' could not be built.*no_such_library"):
            assert read_table(tmp_path / "t.csv").column("b") == ["2"]
        assert reg.names("saveable_class") == []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PluginWarning)
            with pytest.raises(DataFileError, match=r"unknown file format '\.h5'"):
                read_table(tmp_path / "t.h5")
    finally:
        registry._REGISTRY = old
