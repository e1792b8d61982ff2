"""An invalid sample found in a chunk names its row of the whole input.

Chunked work hands code rows ``start:stop`` of a larger input (a pass's chunk, a partition on
a Dask worker, a task of a process pool); an invalid molecule found there used to be named
by its row *within the chunk* ("record 7"), beside a ``ChunkError`` naming the chunk's rows,
or by the task's number: the user had to add them up.  Now the error the user gets is the
:class:`~sprokr_chem.MoleculeReadError` itself (``except MoleculeReadError`` works whatever
the executor), naming the row of the input they gave, with its text and reason: for the
local executor (one or several partitions, any chunk order), local worker processes
(``map_tasks``, the feature cache), an in-process chunk loop (``KernelFeatures``) and a
2-worker Dask LocalCluster (partitions prepared on the workers, passes, task maps).

The invalid molecule sits at row ``BAD = 57`` of 120, in the sixth chunk of 10 (row 7 of
its chunk) and in neither the first Dask partition nor the first task.
"""
import csv
import pickle

import numpy as np
import pytest

pytest.importorskip("rdkit")

from sprokr.datasets import sample_path  # noqa: E402
from sprokr.numerics import ChunkError, ChunkTask, LocalExecutor  # noqa: E402
from sprokr.persistence import FeatureCache, FeatureChunk  # noqa: E402
from sprokr.utils import RowError, reword_error, row_offset  # noqa: E402
from sprokr_chem import MoleculeReadError, morgan_fingerprints  # noqa: E402

BAD, N, CHUNK = 57, 120, 10
RECORD = r"invalid molecule at record 57: 'C1CC\(=O' \(RDKit could not parse or sanitise it\)"


@pytest.fixture(scope="module")
def smiles():
    with open(sample_path("qm9_sample.csv"), newline="") as fh:
        good = [r["smiles"] for r in csv.DictReader(fh)][:N]
    bad = list(good)
    bad[BAD] = "C1CC(=O"
    return good, bad


def _check(exc):
    assert type(exc) is MoleculeReadError
    assert exc.index == BAD and exc.record == "C1CC(=O", str(exc)


# ---------------------------------------------------------------------------- the error itself
def test_renumbering_keeps_the_object_its_context_and_its_other_rows():
    exc = reword_error(MoleculeReadError(7, "C1CC(=O", "RDKit could not parse or sanitise it"),
                       "Y: invalid molecule at record 7: 'C1CC(=O' (RDKit could not parse or sanitise it)")
    assert exc.add_row_offset(50) is exc
    assert str(exc) == "Y: " + RECORD.replace("\\", "") and exc.index == BAD
    back = pickle.loads(pickle.dumps(exc))  # as it comes back from a worker process
    assert type(back) is MoleculeReadError and str(back) == str(exc) and back.index == BAD
    # the other invalid records it names move too; a note naming the row is rewritten
    many = MoleculeReadError(1, "x", "bad", where="y", others=[4, 9], n_others=3)
    many.add_note("see invalid molecule at record 1: 'x' (bad; 3 more invalid record(s), e.g. at [4, 9])")
    assert str(many) == "y: invalid molecule at record 1: 'x' (bad; 3 more invalid record(s), e.g. at [4, 9])"
    many.add_row_offset(100)
    assert str(many) == "y: invalid molecule at record 101: 'x' (bad; 3 more invalid record(s), e.g. at [104, 109])"
    assert many.others == [104, 109] and "record 101" in many.__notes__[0]
    # a message reworded beyond recognition: the row is said in a note
    odd = reword_error(MoleculeReadError(2, "C", "why"), "something else entirely")
    odd.add_row_offset(10)
    assert odd.index == 12 and any("record 12" in n for n in odd.__notes__)


def test_row_offset_renumbers_row_errors_only():
    with pytest.raises(MoleculeReadError, match=RECORD):
        with row_offset(50):
            morgan_fingerprints(["CCO"] * 7 + ["C1CC(=O"])
    with pytest.raises(ValueError, match="^plain$"):
        with row_offset(50):
            raise ValueError("plain")
    assert issubclass(MoleculeReadError, (RowError, ValueError))


# ---------------------------------------------------------------------------- local executor
def fingerprint_rows(chunk):
    """A pass over raw SMILES: dense Morgan fingerprints of a chunk (parses every molecule)."""
    return morgan_fingerprints(chunk, n_bits=64).toarray()


class FingerprintTotal(ChunkTask):
    """A reduction over raw SMILES: the column sums of the Morgan fingerprints."""

    name = "fingerprint total"

    def start(self):
        return np.zeros(64)

    def add(self, partial, rows, chunk):
        return partial + np.asarray(morgan_fingerprints(chunk, n_bits=64).sum(axis=0)).ravel()

    def merge(self, a, b):
        return a + b


@pytest.mark.parametrize("ex", [LocalExecutor(), LocalExecutor(n_partitions=3),
                                LocalExecutor(order="shuffled", n_partitions=4, random_state=0)],
                         ids=["one partition", "3 partitions", "shuffled"])
def test_local_passes_name_the_row_of_the_input(smiles, ex):
    good, bad = smiles
    ref = ex.map_rows(ex.partition(good), fingerprint_rows, CHUNK)
    assert ref.shape == (N, 64)
    with pytest.raises(MoleculeReadError, match="^" + RECORD) as info:
        ex.map_rows(ex.partition(bad), fingerprint_rows, CHUNK)
    _check(info.value)
    np.testing.assert_allclose(ex.map_reduce(ex.partition(good), FingerprintTotal(), CHUNK), ref.sum(axis=0))
    with pytest.raises(MoleculeReadError, match="^" + RECORD) as info:
        ex.map_reduce(ex.partition(bad), FingerprintTotal(), CHUNK)
    _check(info.value)
    # other errors still name the chunk's rows
    with pytest.raises(ChunkError, match=r"^pass failed on rows 50-60: ZeroDivisionError"):
        ex.map_rows(ex.partition(np.arange(N)), lambda c: np.array([1 // (int(v) - 55) for v in c]), CHUNK)


def test_kernel_features_transform_names_the_row_of_the_input(smiles):
    from sprokr.kernels import KernelFeatures

    good, bad = smiles
    f = KernelFeatures(kernel="smiles_spectrum", m_x=20, chunk_size=CHUNK, random_state=0).fit(good)
    with pytest.raises(MoleculeReadError, match="^" + RECORD) as info:
        f.transform(bad)
    _check(info.value)


# ---------------------------------------------------------------------------- worker processes
class StrictMorgan:
    """A featuriser that refuses invalid molecules (``MoleculeReadError`` naming its row of the chunk)."""

    name = "strict-morgan"

    def feature_params(self):
        return {"n_bits": 64}

    def __call__(self, items):
        return FeatureChunk({"morgan": morgan_fingerprints(items, n_bits=64)}, [])


@pytest.mark.parametrize("processes", [1, 2])
def test_task_maps_name_the_row_of_the_input(smiles, processes):
    good, bad = smiles
    ex = LocalExecutor(progress=False)
    bounds = [(a, min(a + CHUNK, N)) for a in range(0, N, CHUNK)]
    tasks = [(bad[a:b],) for a, b in bounds]
    with pytest.raises(MoleculeReadError, match="^" + RECORD) as info:
        list(ex.map_tasks(morgan_fingerprints, tasks, processes=processes, rows=bounds))
    _check(info.value)
    # without the rows the task is named, and the row within it
    with pytest.raises(ChunkError, match=r"failed on task 5: MoleculeReadError: invalid molecule at record 7:"):
        list(ex.map_tasks(morgan_fingerprints, tasks, processes=processes))
    # other errors name the rows
    with pytest.raises(ChunkError, match=r"^tasks failed on rows 50-60 \(task 5\): TypeError"):
        list(ex.map_tasks(morgan_fingerprints, [(g,) if i != 5 else (3,) for i, (g,) in enumerate(tasks)],
                          processes=processes, rows=bounds))
    with pytest.raises(ValueError, match="rows: one"):
        list(ex.map_tasks(morgan_fingerprints, tasks, rows=bounds[:-1]))


@pytest.mark.parametrize("processes", [1, 2])
def test_feature_cache_names_the_row_of_the_input(smiles, tmp_path, processes):
    good, bad = smiles
    cache = FeatureCache(tmp_path)
    with pytest.raises(MoleculeReadError, match="^" + RECORD) as info:
        cache.compute(bad, StrictMorgan(), chunk_size=CHUNK, processes=processes)
    _check(info.value)
    T = cache.compute(good, StrictMorgan(), chunk_size=CHUNK, processes=processes)
    assert abs(T["morgan"] - morgan_fingerprints(good, n_bits=64)).max() == 0


# ---------------------------------------------------------------------------- Dask
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed "
                                                            "(pip install 'sprokr[dask]')")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.mark.dask
def test_dask_names_the_row_of_the_input(smiles, client, tmp_path):
    from sprokr import SISOKR
    from sprokr.numerics import DaskExecutor

    good, bad = smiles
    ex = DaskExecutor(client=client, progress=False)
    X = np.random.default_rng(0).standard_normal((N, 4))
    model = SISOKR(output_kernel="morgan_tanimoto", input_sketch="subsample", m_x=20, output_sketch="subsample",
                   m_y=20, chunk_size=CHUNK, executor=ex, random_state=0)
    # Y prepared partition by partition on the workers (4 partitions of 30 rows)
    with pytest.raises(MoleculeReadError, match="^Y: " + RECORD) as info:
        model.fit(X, bad)
    _check(info.value)
    # passes over raw SMILES on the workers, chunk by chunk
    with pytest.raises(MoleculeReadError, match="^" + RECORD) as info:
        ex.map_rows(ex.partition(bad), fingerprint_rows, CHUNK)
    _check(info.value)
    with pytest.raises(MoleculeReadError, match="^" + RECORD) as info:
        ex.map_reduce(ex.partition(bad), FingerprintTotal(), CHUNK)
    _check(info.value)
    # the feature cache's task map on the workers
    with pytest.raises(MoleculeReadError, match="^" + RECORD) as info:
        FeatureCache(tmp_path).compute(bad, StrictMorgan(), chunk_size=CHUNK, executor=ex)
    _check(info.value)
    # the valid input goes through
    assert model.fit(X, good).predict(X[:2]) is not None
