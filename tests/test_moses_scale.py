"""Molecules at scale: MOSES loading, parallel featurisation with the on-disk cache, the
executors' task maps, memory-mapped candidate indexes, float32 screening with float64
rescoring, ``default_index=False``, and a smoke run of ``benchmarks/moses.py`` (local and
Dask give the same predictions)."""
import gzip
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("rdkit")

from sprokr.numerics import LocalExecutor, RescoredTopKTask, TopKTask, topk_search  # noqa: E402
from sprokr.persistence import FeatureCache, FeatureChunk  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sprokr" / "data" / "qm9_sample.csv"


def qm9_smiles():
    import csv

    with open(SAMPLE, newline="") as fh:
        return [r["smiles"] for r in csv.DictReader(fh)]


def write_moses(path, smiles, split=None, gz=True):
    text = ("SMILES" + (",SPLIT" if split else "") + "\n"
            + "".join(s + (f",{split[i]}" if split else "") + "\n" for i, s in enumerate(smiles)))
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        Path(path).write_text(text)
    return path


# ---------------------------------------------------------------------------- loading
def test_load_moses_gz_plain_split_and_errors(tmp_path):
    from sprokr_chem.datasets import load_moses

    smi = qm9_smiles()[:20]
    assert load_moses(write_moses(tmp_path / "a.csv.gz", smi)) == smi
    assert load_moses(write_moses(tmp_path / "a.csv", smi, gz=False), n_rows=5) == smi[:5]
    split = ["train" if i % 3 else "test" for i in range(20)]
    p = write_moses(tmp_path / "b.csv", smi, split, gz=False)
    assert load_moses(p, split="test") == [s for s, t in zip(smi, split) if t == "test"]
    with pytest.raises(ValueError, match="no 'SPLIT' column"):
        load_moses(tmp_path / "a.csv.gz", split="test")
    (tmp_path / "c.csv").write_text("smi,x\nCC,1\n")
    with pytest.raises(ValueError, match="no 'SMILES' column"):
        load_moses(tmp_path / "c.csv")
    (tmp_path / "d.csv").write_text("SMILES\nCC\n\nCCO\n,\n")
    with pytest.raises(ValueError, match="line 5 has an empty SMILES"):
        load_moses(tmp_path / "d.csv")
    with pytest.raises(FileNotFoundError):
        load_moses(tmp_path / "missing.csv.gz")


# ---------------------------------------------------------------------------- featuriser
def test_featurizer_blocks_match_reference_implementations():
    from rdkit import Chem
    from rdkit.Chem import rdMolDescriptors as D
    from sklearn.feature_extraction.text import HashingVectorizer

    from sprokr_chem import mol_to_graph, morgan_fingerprints
    from sprokr_chem.featurize import DESCRIPTOR_NAMES, MoleculeFeaturizer
    from sprokr_graphs.wl import wl_features

    smi = qm9_smiles()[:60] + ["C[N+](C)(C)C.[Cl-]", "OC(=O)c1ccccc1Br"]
    c = MoleculeFeaturizer(("morgan", "spectrum", "canonical", "descriptors", "wl"), wl_bits=2**62)(smi)
    assert c.errors == []
    ref = morgan_fingerprints(smi, 2, 2048, counts=True)
    assert abs(c.arrays["morgan"] - ref).max() == 0
    canon = [Chem.MolToSmiles(Chem.MolFromSmiles(s)) for s in smi]
    hv = HashingVectorizer(analyzer="char", ngram_range=(1, 4), lowercase=False, n_features=2**16,
                           alternate_sign=False, norm=None)
    assert abs(c.arrays["spectrum"] - hv.transform(canon)).max() == 0
    assert (c.arrays["canonical"].ravel() == [int(a == b) for a, b in zip(canon, smi)]).all()
    W = wl_features([mol_to_graph(s) for s in smi], 3, "auto", normalize=False, edge_label="auto")
    rows = np.repeat(np.arange(len(W)), np.diff(W.indptr))
    Wr = sp.csr_matrix((W.values, (rows, (W.ids.view(np.uint64) % np.uint64(2**62)).astype(np.int64))),
                       shape=c.arrays["wl"].shape)
    assert abs(c.arrays["wl"] - Wr).max() == 0
    d = c.arrays["descriptors"]
    col = {n: j for j, n in enumerate(DESCRIPTOR_NAMES)}
    for i in (0, len(smi) - 2, len(smi) - 1):
        m = Chem.MolFromSmiles(smi[i])
        mh = Chem.AddHs(m)
        assert d[i, col["exact_mass"]] == pytest.approx(D.CalcExactMolWt(m))
        assert d[i, col["logp"]] == pytest.approx(D.CalcCrippenDescriptors(m)[0])
        assert d[i, col["tpsa"]] == pytest.approx(D.CalcTPSA(m))
        assert d[i, col["n_H"]] == sum(a.GetSymbol() == "H" for a in mh.GetAtoms())
        assert d[i, col["n_C"]] == sum(a.GetSymbol() == "C" for a in m.GetAtoms())
        assert d[i, col["formal_charge"]] == Chem.GetFormalCharge(m)
    assert d[-2, col["n_Cl"]] == 1 and d[-1, col["n_Br"]] == 1


def test_featurizer_reports_invalid_rows_with_zero_features():
    from sprokr_chem.featurize import MoleculeFeaturizer

    c = MoleculeFeaturizer(("morgan", "descriptors"))(["CCO", "C1CC", "", "xyz", "c1ccccc1"])
    assert [i for i, _ in c.errors] == [1, 2, 3]
    assert "parse" in c.errors[0][1] and "empty" in c.errors[1][1]
    M, Dd = c.arrays["morgan"], c.arrays["descriptors"]
    assert M.shape[0] == 5 and Dd.shape == (5, Dd.shape[1])
    assert M[[1, 2, 3]].nnz == 0 and not Dd[[1, 2, 3]].any()
    assert M[[0, 4]].getnnz(axis=1).min() > 0 and (Dd[[0, 4], 0] > 0).all()
    with pytest.raises(ValueError, match="blocks"):
        MoleculeFeaturizer(("morgan", "nope"))
    with pytest.raises(ValueError, match="spectrum"):
        MoleculeFeaturizer(("canonical",))


# ---------------------------------------------------------------------------- feature cache
class CountingFeaturizer:
    """Row sums of the items' lengths; counts its calls in a file; fails on a poison item."""

    name = "counting"

    def __init__(self, log, poison=None):
        self.log, self.poison = str(log), poison

    def feature_params(self):
        return {"version": 1}

    def __call__(self, items):
        with open(self.log, "a") as fh:
            fh.write(f"{items[0]}\n")
        if self.poison is not None and self.poison in items:
            raise RuntimeError("poisoned chunk")
        dense = np.array([[len(s), s.count("C")] for s in items], dtype=np.float64)
        sparse = sp.csr_matrix(dense[:, :1] * (np.arange(len(items))[:, None] % 2))
        errors = [(i, "has an X") for i, s in enumerate(items) if "X" in s]
        return FeatureChunk({"dense": dense, "sparse": sparse}, errors)


def test_feature_cache_resumes_after_an_interruption(tmp_path):
    from sprokr.numerics import ChunkError

    items = [f"C{'C' * (i % 5)}O{i}" for i in range(95)]
    items[42] = "XCC"
    cache = FeatureCache(tmp_path / "cache")
    calls = tmp_path / "calls.txt"
    with pytest.raises(ChunkError, match="poisoned"):
        cache.compute(items, CountingFeaturizer(calls, poison=items[60]), chunk_size=10, processes=1)
    done_first = calls.read_text().split()
    assert len(done_first) == 7  # chunks 0..5 written, chunk 6 failed
    entry = cache.entry_path(CountingFeaturizer(calls), "items-sha256:" + _items_sha(items), len(items))
    manifest = json.loads((entry / "manifest.json").read_text())
    assert sorted(map(int, manifest["chunks"])) == [0, 1, 2, 3, 4, 5] and not manifest["complete"]
    calls.write_text("")
    T = cache.compute(items, CountingFeaturizer(calls), chunk_size=10, processes=1)
    assert len(calls.read_text().split()) == 4  # only chunks 6..9 were computed
    assert not T.from_cache and T.n_rows == 95
    ref = CountingFeaturizer(tmp_path / "x")(items)
    assert np.array_equal(T["dense"], ref.arrays["dense"])
    assert isinstance(T["dense"], np.memmap)
    S = T["sparse"]
    assert isinstance(S, sp.csr_matrix) and abs(S - ref.arrays["sparse"]).max() == 0
    assert T.errors == [(42, "XCC", "has an X")] and not T.valid[42] and T.valid.sum() == 94
    again = cache.compute(items, CountingFeaturizer(calls), chunk_size=10, processes=1)
    assert again.from_cache and len(calls.read_text().split()) == 4
    # other items or other parameters: another entry
    other = cache.compute(items[:50], CountingFeaturizer(calls), chunk_size=10, processes=1)
    assert other.path != T.path and other.n_rows == 50
    # a damaged file is detected
    with open(T.path / "dense.npy", "r+b") as fh:
        fh.seek(-3, 2)
        fh.write(b"\x01\x02\x03")
    with pytest.raises(ValueError, match="checksum"):
        cache.compute(items, CountingFeaturizer(calls), chunk_size=10, processes=1)


def _items_sha(items):
    from sprokr.persistence import items_checksum

    return items_checksum(items)


def test_feature_cache_recomputes_a_damaged_chunk(tmp_path):
    from sprokr.numerics import ChunkError

    items = [f"C{i}" for i in range(30)]
    cache = FeatureCache(tmp_path)
    calls = tmp_path / "calls.txt"
    with pytest.raises(ChunkError):
        cache.compute(items, CountingFeaturizer(calls, poison=items[25]), chunk_size=10, processes=1)
    entry = next(p for p in tmp_path.iterdir() if p.is_dir())
    with open(entry / "chunks" / "1.npz", "r+b") as fh:
        fh.seek(100)
        fh.write(b"garbage")
    calls.write_text("")
    T = cache.compute(items, CountingFeaturizer(calls), chunk_size=10, processes=1)
    assert calls.read_text().split() == ["C10", "C20"]  # chunk 1 (damaged) and chunk 2
    assert np.array_equal(T["dense"], CountingFeaturizer(tmp_path / "y")(items).arrays["dense"])


def test_featurize_molecules_in_worker_processes_is_cached(tmp_path):
    from sprokr_chem.featurize import MoleculeFeaturizer, featurize_molecules

    smi = qm9_smiles()[:120] + ["not a molecule"]
    T = featurize_molecules(smi, ("morgan", "descriptors"), cache_dir=tmp_path, chunk_size=40, processes=2)
    ref = MoleculeFeaturizer(("morgan", "descriptors"))(smi)
    assert abs(T["morgan"] - ref.arrays["morgan"]).max() == 0
    assert np.array_equal(T["descriptors"], ref.arrays["descriptors"])
    assert [r for r, _, _ in T.errors] == [120] and T.errors[0][1] == "not a molecule"
    again = featurize_molecules(smi, ("morgan", "descriptors"), cache_dir=tmp_path, chunk_size=40, processes=2)
    assert again.from_cache and again.path == T.path and again.compute_s == 0


# ---------------------------------------------------------------------------- executors
def _square(x):
    return x * x


def test_local_map_tasks_processes_and_errors():
    from sprokr.numerics import ChunkError

    ex = LocalExecutor(progress=False)
    tasks = [(i,) for i in range(7)]
    for procs in (1, 2):
        got = dict(ex.map_tasks(_square, tasks, processes=procs))
        assert got == {i: i * i for i in range(7)}
    with pytest.raises(ChunkError, match="task 2"):
        list(ex.map_tasks(_square, [(1,), (2,), (None,)], processes=1))
    with pytest.raises(ValueError, match="processes"):
        list(ex.map_tasks(_square, tasks, processes=0))
    with pytest.raises(ValueError, match="weights"):
        list(ex.map_tasks(_square, tasks, weights=[1, 2]))


def test_partition_from_builds_partitions_where_they_live():
    ex = LocalExecutor(n_partitions=3)
    parts = ex.partition_from(lambda a, b: (np.arange(a, b) * 2,), 10)
    assert parts.n == 10 and parts.n_partitions == 3
    assert list(ex.take_rows(parts, [9, 0, 4])) == [18, 0, 8]


# ---------------------------------------------------------------------------- top-k
def test_rescored_topk_equals_float64_search_of_float32_embeddings():
    rng = np.random.default_rng(0)
    H = rng.standard_normal((200, 24))
    E = rng.standard_normal((5000, 24)).astype(np.float32)
    off = rng.standard_normal(5000)
    for offsets in (None, off):
        S = H @ E.astype(np.float64).T + (0 if offsets is None else offsets)
        ref = np.argsort(-S, axis=1, kind="stable")[:, :7]
        r = topk_search(H, E, 7, offsets, max_memory_mb=0.5)
        assert (r.indices == ref).all()
        np.testing.assert_allclose(r.scores, np.take_along_axis(S, ref, 1), rtol=0, atol=1e-12)
        ex = LocalExecutor(n_partitions=4, order="shuffled", random_state=3)
        parts = ex.partition(E) if offsets is None else ex.partition(E, offsets)
        r2 = ex.map_reduce(parts, RescoredTopKTask(H, 7), 333)
        assert (r2.indices == r.indices).all() and np.array_equal(r2.scores, r.scores)
    # float64 embeddings keep the plain task
    assert type(TopKTask(H, 3)) is TopKTask


# ---------------------------------------------------------------------------- persistence
def test_array_entries_are_aligned_and_memory_mapped(tmp_path):
    import sprokr
    from sprokr.decoders.candidates import CandidateIndex

    rng = np.random.default_rng(1)
    E = rng.standard_normal((30_000, 16)).astype(np.float32)
    labels = [f"C{'O' * (i % 4)}N{i}é" for i in range(30_000)]  # a long list of (non-ASCII) strings
    path = CandidateIndex(labels, E, rng.standard_normal(30_000), owner="tok").save(tmp_path / "i.sprokr")
    aligned = 0
    with zipfile.ZipFile(path) as zf, open(path, "rb") as fh:
        for info in zf.infolist():
            if info.filename.endswith(".npy"):
                aligned += 1
                fh.seek(info.header_offset + 26)
                n, m = (int(v) for v in np.frombuffer(fh.read(4), dtype="<u2"))
                fh.seek(info.header_offset + 30 + n + m + 8)
                hlen = int(np.frombuffer(fh.read(2), dtype="<u2")[0])
                assert (info.header_offset + 30 + n + m + 10 + hlen) % 64 == 0, info.filename
    assert aligned >= 2  # the embeddings and the offsets at least (none found: nothing checked)
    mapped = sprokr.load(path, mmap=True)
    assert isinstance(mapped.embeddings, np.memmap) and not mapped.embeddings.flags.writeable
    assert np.array_equal(mapped.embeddings, E) and mapped.candidates == labels
    plain = sprokr.load(path)
    assert not isinstance(plain.embeddings, np.memmap) and np.array_equal(plain.embeddings, E)
    H = rng.standard_normal((50, 16))
    a, b = mapped.search(H, 5), plain.search(H, 5)
    assert (a.indices == b.indices).all() and np.array_equal(a.scores, b.scores)


# ---------------------------------------------------------------------------- models
@pytest.fixture(scope="module")
def molecules():
    from sprokr_chem.featurize import MoleculeFeaturizer

    smi = qm9_smiles()
    c = MoleculeFeaturizer(("spectrum", "morgan"))(smi)
    return smi, c.arrays["spectrum"], c.arrays["morgan"]


def _sisokr(**kw):
    from sprokr import SISOKR

    return SISOKR(input_kernel="cosine", output_kernel="morgan_count_tanimoto", lam=1e-4, input_sketch="subsample",
                  m_x=80, output_sketch="subsample", m_y=40, random_state=0, **kw)


def test_default_index_false_predicts_the_same_with_candidates(molecules):
    smi, X, Y = molecules
    on = _sisokr().fit(X[:200], Y[:200])
    off = _sisokr(default_index=False).fit(X[:200], Y[:200])
    assert off.default_index_ is None
    with pytest.raises(ValueError, match="default_index=False"):
        off.predict(X[200:])
    with pytest.raises(ValueError, match="default_index=False"):
        off.predict_weights(X[200:])
    a = on.predict_topk(X[200:], 5, candidates=Y)
    b = off.predict_topk(X[200:], 5, candidates=Y)
    assert (a.indices == b.indices).all()
    np.testing.assert_allclose(a.scores, b.scores, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="default_index"):
        _sisokr(default_index="no").fit(X[:200], Y[:200])


def test_index_on_disk_is_memory_mapped_and_distributes(molecules, tmp_path):
    import sprokr

    smi, X, Y = molecules
    model = _sisokr(default_index=False).fit(X[:200], Y[:200])
    # 7500 distinct candidates (count vectors scaled: other Tanimoto values); arrays of at
    # least 1 MiB are memory-mapped
    C, labels = sp.vstack([Y * (1 + j) for j in range(25)], format="csr"), [f"{s}/{j}" for j in range(25) for s in smi]
    mem = model.make_candidate_index(C, dtype="float32", labels=labels)
    disk = model.make_candidate_index(C, dtype="float32", path=tmp_path / "idx.sprokr", labels=labels)
    assert isinstance(disk.embeddings, np.memmap) and disk.candidates == labels
    assert np.array_equal(np.asarray(disk.embeddings), mem.embeddings)
    assert [p.name for p in tmp_path.iterdir()] == ["idx.sprokr"]  # no temporary left
    again = sprokr.load(tmp_path / "idx.sprokr", model=model, mmap=True)
    ref = model.predict_topk(X[200:], 10, candidates=mem)
    for index in (disk, again, again.distribute(LocalExecutor(n_partitions=3))):
        got = model.predict_topk(X[200:], 10, candidates=index)
        assert (got.indices == ref.indices).all() and np.array_equal(got.scores, ref.scores)
    assert model.predict(X[200:203], candidates=disk) == [labels[i] for i in ref.indices[:3, 0]]
    other = _sisokr(default_index=False).fit(X[:150], Y[:150])
    with pytest.raises(ValueError, match="another model"):
        sprokr.load(tmp_path / "idx.sprokr", model=other, mmap=True)


def test_sparse_unique_inverse_is_exact_even_with_hash_collisions(monkeypatch):
    import sprokr.utils as U

    rng = np.random.default_rng(0)
    A = (rng.random((80, 6)) < 0.4) * rng.integers(1, 3, (80, 6)).astype(float)
    A = A[rng.integers(0, 80, 80)]
    ref = U.unique_inverse(A)
    got = U.unique_inverse(sp.csr_matrix(A))
    assert all(np.array_equal(a, b) for a, b in zip(ref, got))
    monkeypatch.setattr(U, "_mix64", lambda x: np.zeros_like(x))  # every row hashes alike
    got = U.unique_inverse(sp.csr_matrix(A))
    assert all(np.array_equal(a, b) for a, b in zip(ref, got))


# ---------------------------------------------------------------------------- benchmark
def _bench(tmp_path, *extra):
    smi = qm9_smiles()
    data = tmp_path / "moses"
    data.mkdir(exist_ok=True)
    write_moses(data / "train.csv.gz", smi[:240])
    write_moses(data / "test.csv.gz", smi[240:])
    env = dict(os.environ, SPROKR_PROGRESS="0")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "moses.py"), "--data", str(data), "--smoke", "240",
                          "--n", "100,216", "--queries", "60", "--m-x", "60", "--m-y", "16,32", "--iokr-n", "100",
                          "--select-n", "100", "--dsokr-epochs", "3", "--cache", str(tmp_path / "cache"),
                          "--workdir", str(tmp_path / "work"), "--json", *extra],
                         capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_moses_benchmark_smoke_local_and_dask_agree(tmp_path):
    pytest.importorskip("distributed")
    local = _bench(tmp_path, "--methods", "sisokr,nn,knn,dsokr,iokr")
    runs = {(r["n"], r["method"]): r for r in local["runs"]}
    assert {m for _, m in runs} == {"sisokr", "nn", "knn", "dsokr", "iokr"}
    for r in local["runs"]:
        assert {"n", "method", "executor", "top1", "top10", "MRR", "featurise_s", "fit_s", "index_s", "decode_s",
                "gemm_s", "peak_rss_mb"} <= set(r)
        assert 0 <= r["top1"] <= r["top10"] <= 1 and 0 < r["MRR"] <= 1 and r["rank_median"] >= 1
        if r["method"] == "sisokr":  # where the fit's time went
            assert {"input_side", "output_side"} <= set(r["fit_times"])
    assert local["settings"]["output"] in ("morgan", "wl") and local["featurise"]["test"]["rows"] == 60
    dask = _bench(tmp_path, "--methods", "sisokr", "--executor", "dask")
    # every local sisokr run has its Dask twin (no run: nothing compared below)
    assert sorted(r["n"] for r in dask["runs"]) == sorted(n for n, m in runs if m == "sisokr")
    for r in dask["runs"]:
        ref = runs[(r["n"], "sisokr")]
        assert r["executor"] == "dask" and r["lam"] == ref["lam"]
        assert r["top1_indices"] == ref["top1_indices"]
        np.testing.assert_allclose(r["top1_scores"], ref["top1_scores"], rtol=0, atol=1e-8)


def test_moses_properties_smoke_with_regional_ridges(tmp_path):
    # the properties task end to end with the local model: regions, validation of its
    # width and lam, a row of results like the other methods'
    out = _bench(tmp_path, "--task", "properties", "--methods", "sisokr,dsokr_local,dsokr_neighbours", "--n", "216",
                 "--gammas", "0.1", "--no-wl", "--m-y", "16", "--local-region-size", "60", "--local-m-x", "30",
                 "--local-gammas", "0.3,1", "--local-lams", "1e-5", "--neighbours-k", "2,4",
                 "--neighbours-gammas", "1", "--neighbours-lams", "1e-5")
    runs = {r["method"]: r for r in out["runs"]}
    assert set(runs) == {"sisokr", "dsokr_local", "dsokr_neighbours"}
    near = runs["dsokr_neighbours"]
    assert {"2/1/1e-05", "4/1/1e-05"} < set(near["val_curve"]) and near["val_mrr"] == max(near["val_curve"].values())
    assert "/".join(f"{near[k]:g}" for k in ("n_neighbors", "gamma", "lam")) in near["val_curve"]
    assert 0 <= near["top1"] <= near["top10"] <= 1 and 0 < near["MRR"] <= 1
    local = runs["dsokr_local"]
    assert local["n_regions"] == 4 and local["m_x"] == 30 and f"{local['gamma']:g}/1e-05" in local["val_curve"]
    # the grid, and the steps past its edge (with two widths the best is on an edge: one
    # step at least, further ones only while validation improves)
    assert {"0.3/1e-05", "1/1e-05"} < set(local["val_curve"]) and len(local["val_curve"]) <= 2 + 4
    assert all(k.endswith("/1e-05") for k in local["val_curve"])  # one lam given: not extended
    assert local["val_mrr"] == max(local["val_curve"].values()) and local["validate"] == "candidates"
    assert 0 <= local["top1"] <= local["top10"] <= 1 and 0 < local["MRR"] <= 1
