"""The executor layer: local, shuffled-order local and Dask executors give the same models.

Dask tests use a 2-worker LocalCluster (separate processes: the tasks really travel) and
are skipped, with a reason, when dask.distributed is not installed (CI installs it).
"""
import numpy as np
import pytest

from sprokr import DSOKR, IOKR, ISOKR, SIOKR, SISOKR, SketchedKernelMachine
from sprokr.numerics import (
    ChunkError,
    LocalExecutor,
    TopKTask,
    merge_topk,
    select_topk,
    topk_search,
)

SHUFFLED = LocalExecutor(order="shuffled", n_partitions=3, random_state=0)


@pytest.fixture(scope="module")
def data():
    r = np.random.default_rng(1)
    X = r.standard_normal((420, 6))
    W = r.standard_normal((6, 8))
    Y = (X @ W > 0.7).astype(np.int8)
    return X[:360], Y[:360], X[360:], Y[360:]


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed "
                                                            "(pip install 'sprokr[dask]')")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


MODELS = {
    "SISOKR": lambda ex: SISOKR(lam=1e-3, input_sketch="subsample", m_x=80, output_sketch="psg", m_y=30,
                                output_sketch_params={"p": 0.05}, random_state=0, chunk_size=50, executor=ex),
    "SIOKR": lambda ex: SIOKR(lam=1e-3, m_x=80, random_state=0, chunk_size=50, executor=ex),
    "ISOKR": lambda ex: ISOKR(lam=1e-3, m_y=30, output_sketch_params={"p": 0.05}, random_state=0,
                              chunk_size=50, executor=ex),
    "IOKR": lambda ex: IOKR(lam=1e-3, chunk_size=50, executor=ex),
    "SISOKR-psr-input": lambda ex: SISOKR(lam=1e-3, input_sketch="psr", m_x=40, input_sketch_params={"p": 0.05},
                                          output_sketch="subsample", m_y=40, random_state=1, chunk_size=64,
                                          executor=ex),
}


def _check_same(a, b, Xte, rtol=1e-8):
    sa, sb = a.predict_scores(Xte), b.predict_scores(Xte)
    scale = np.abs(sa).max()
    np.testing.assert_allclose(sb, sa, rtol=0, atol=rtol * scale)
    ta, tb = a.predict_topk(Xte, k=5), b.predict_topk(Xte, k=5)
    np.testing.assert_array_equal(ta.indices[:, 0], tb.indices[:, 0])
    np.testing.assert_array_equal(np.asarray(a.predict(Xte)), np.asarray(b.predict(Xte)))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_shuffled_chunk_order_gives_the_same_model(data, name):
    Xtr, Ytr, Xte, _ = data
    a = MODELS[name]("local").fit(Xtr, Ytr)
    b = MODELS[name](SHUFFLED).fit(Xtr, Ytr)
    _check_same(a, b, Xte)


def test_fixed_partitioning_is_bit_identical(data):
    Xtr, Ytr, Xte, _ = data
    ex = LocalExecutor(n_partitions=3)
    a = MODELS["SISOKR"](ex).fit(Xtr, Ytr)
    b = MODELS["SISOKR"](ex).fit(Xtr, Ytr)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.predict_scores(Xte), b.predict_scores(Xte))


def test_dask_without_client_is_a_clear_error(data):
    pytest.importorskip("distributed", reason="dask.distributed is not installed")
    import distributed

    try:
        distributed.default_client()
        pytest.skip("a default client exists in this process")
    except ValueError:
        pass
    Xtr, Ytr, _, _ = data
    with pytest.raises(ValueError, match="needs a running dask.distributed Client"):
        SISOKR(input_sketch="subsample", m_x=20, executor="dask").fit(Xtr, Ytr)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_dask_fit_and_predict_equal_local(data, client, name):
    Xtr, Ytr, Xte, _ = data
    a = MODELS[name]("local").fit(Xtr, Ytr)
    b = MODELS[name](client).fit(Xtr, Ytr)
    _check_same(a, b, Xte)


def test_dask_by_name_uses_the_default_client_and_dask_arrays(data, client):
    da = pytest.importorskip("dask.array")
    Xtr, Ytr, Xte, _ = data
    a = MODELS["SISOKR"]("local").fit(Xtr, Ytr)
    b = MODELS["SISOKR"]("dask").fit(da.from_array(Xtr, chunks=(100, 6)), da.from_array(Ytr, chunks=(70, 8)))
    _check_same(a, b, Xte)
    # the default candidate index stays on the workers; its top-k lists merge exactly
    assert b.default_index_.partitions is not None and b.default_index_.embeddings is None


def test_dask_kernel_machine_and_dsokr_equal_local(data, client):
    Xtr, Ytr, Xte, _ = data
    y = Xtr @ np.arange(1.0, 7.0)
    kw = dict(kernel_params={"sigma2": 4.0}, lam=1e-4, input_sketch="psr", m_x=60, input_sketch_params={"p": 0.05},
              random_state=0, chunk_size=64)
    a = SketchedKernelMachine(**kw).fit(Xtr, y)
    b = SketchedKernelMachine(**kw, executor=client).fit(Xtr, y)
    np.testing.assert_allclose(b.predict(Xte), a.predict(Xte), rtol=1e-8, atol=1e-8 * np.abs(a.predict(Xte)).max())
    kw = dict(output_kernel="gaussian", output_sketch="psg", m_y=30, output_sketch_params={"p": 0.05},
              regressor="kernel_ridge", regressor_params={"lam": 1e-3}, random_state=0)
    d1 = DSOKR(**kw).fit(Xtr, Ytr)
    d2 = DSOKR(**kw, executor=client).fit(Xtr, Ytr)
    _check_same(d1, d2, Xte)


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_a_failing_chunk_names_its_rows_and_leaves_the_model_unchanged(data, request, executor):
    Xtr, Ytr, Xte, _ = data
    ex = request.getfixturevalue("client") if executor == "dask" else LocalExecutor()
    model = SISOKR(input_kernel="linear", lam=1e-3, input_sketch="subsample", m_x=40, random_state=0,
                   chunk_size=50, executor=ex).fit(Xtr, Ytr)
    before = model.predict_scores(Xte)
    coef = model.coef_.copy()
    bad = Xtr.copy()
    rows = np.setdiff1d(np.arange(300, 310), model.input_sketch_matrix_.indices)  # not support points
    bad[rows] *= 1e200  # overflows the linear kernel in those rows only
    with pytest.raises(ChunkError, match=r"rows \d+-\d+.*non-finite") as err:
        model.fit(bad, Ytr)
    lo, hi = map(int, __import__("re").search(r"rows (\d+)-(\d+)", str(err.value)).groups())
    assert lo <= rows[0] < hi  # the chunk named holds the first bad row
    np.testing.assert_array_equal(model.coef_, coef)
    np.testing.assert_array_equal(model.predict_scores(Xte), before)


@pytest.mark.parametrize("executor", ["local", "shuffled", "dask"])
def test_partition_columns_are_read_by_name(request, executor):
    """``partition(..., names=...)``: gathers and row maps name the column they read."""
    from sprokr.numerics import DaskExecutor

    ex = {"local": LocalExecutor(), "shuffled": SHUFFLED}.get(executor)
    if ex is None:
        ex = DaskExecutor(client=request.getfixturevalue("client"), n_partitions=3)
    X = np.arange(40.0).reshape(20, 2)
    Y = -np.arange(20.0)
    labels = [f"y{i}" for i in range(20)]
    parts = ex.partition(X, Y, labels, prepare=(None, lambda y: 2 * y, None),
                         names=("inputs", "outputs", "raw_outputs"))
    assert parts.names == ("inputs", "outputs", "raw_outputs") and parts.column("raw_outputs") == 2
    idx = np.array([17, 3, 9, 0])
    np.testing.assert_array_equal(ex.take_rows(parts, idx, which="inputs"), X[idx])
    np.testing.assert_array_equal(ex.take_rows(parts, idx, which="outputs"), 2 * Y[idx])  # prepared
    assert list(ex.take_rows(parts, idx, which="raw_outputs")) == [labels[i] for i in idx]
    np.testing.assert_array_equal(ex.take_rows(parts, idx), X[idx])  # default: the first column
    out = ex.map_rows(parts, lambda y: y[:, None] + 1, 6, which="outputs")
    np.testing.assert_array_equal(out[:, 0], 2 * Y + 1)
    with pytest.raises(ValueError, match="no column named 'targets'"):
        ex.take_rows(parts, idx, which="targets")
    with pytest.raises(ValueError, match="no column named 'outputs'"):
        ex.map_rows(ex.partition(X), np.asarray, 6, which="outputs")  # unnamed columns
    for bad in (("inputs",), ("a", "a", "b"), ("a", "", "b")):
        with pytest.raises(ValueError, match="3 distinct non-empty strings"):
            ex.partition(X, Y, labels, names=bad)


# ------------------------------------------------- executor=client in scikit-learn's clone
CLONED = {
    "SISOKR": MODELS["SISOKR"],
    "DSOKR": lambda ex: DSOKR(output_kernel="gaussian", output_sketch="subsample", m_y=20, regressor="kernel_ridge",
                              regressor_params={"lam": 1e-3}, random_state=0, chunk_size=64, executor=ex),
    "SketchedKernelMachine": lambda ex: SketchedKernelMachine(lam=1e-3, input_sketch="subsample", m_x=40,
                                                              random_state=0, chunk_size=64, executor=ex),
}


@pytest.mark.parametrize("given", ["Client", "DaskExecutor"])
@pytest.mark.parametrize("name", sorted(CLONED))
def test_clone_shares_the_dask_client(client, name, given):
    """A client is a connection, not a value: clones share it (a deep copy fails on its sockets)."""
    import copy

    from sklearn.base import clone

    from sprokr.numerics import DaskExecutor

    ex = client if given == "Client" else DaskExecutor(client=client, n_partitions=3, timeout=30.0, retries=1)
    est = CLONED[name](ex)
    new = clone(est)
    a, b = est.get_params(deep=False), new.get_params(deep=False)
    assert est.get_params()["executor"] is ex  # the original is not modified
    assert {k: v for k, v in b.items() if k != "executor"} == {k: v for k, v in a.items() if k != "executor"}
    if given == "Client":
        assert b["executor"] is client and clone(new).get_params()["executor"] is client
    else:  # a new executor with the same settings, on the same client
        assert type(b["executor"]) is DaskExecutor and b["executor"] is not ex
        assert b["executor"].get_params() == ex.get_params() and b["executor"].client is client
        assert copy.deepcopy(ex).client is client and copy.deepcopy(ex).get_params() == ex.get_params()
    dup = copy.deepcopy(est)  # unfitted, then fitted: every attribute copied, the client shared
    assert dup.get_params(deep=False).keys() == a.keys() and dup.executor is not None
    assert (dup.executor is client) if given == "Client" else (dup.executor.client is client)
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((120, 4)), rng.standard_normal((120, 3))
    y = Y[:, 0] if name == "SketchedKernelMachine" else Y
    est.fit(X, y)
    dup = copy.deepcopy(est)
    np.testing.assert_array_equal(dup.predict(X[:10]), est.predict(X[:10]))
    assert (dup.executor is client) if given == "Client" else (dup.executor.client is client)


def test_searches_ensembles_and_cross_validation_on_dask_equal_local(data, client):
    """clone() inside LambdaSearchCV, select_model, DSOKREnsemble and cross_val_score keeps
    executor=client: the results are the local ones."""
    from sklearn.model_selection import cross_val_score

    from sprokr import DSOKREnsemble
    from sprokr.model_selection import LambdaSearchCV, select_model

    Xtr, Ytr, Xte, _ = data
    lams = [1e-4, 1e-2, 1.0]
    searches = [LambdaSearchCV(MODELS["SIOKR"](ex), lams, validation_fraction=0.25, random_state=0).fit(Xtr, Ytr)
                for ex in ("local", client)]
    assert searches[1].best_lam_ == searches[0].best_lam_
    assert searches[1].best_estimator_.executor is client
    np.testing.assert_allclose(searches[1].scores_, searches[0].scores_, rtol=1e-8)
    _check_same(searches[0].best_estimator_, searches[1].best_estimator_, Xte)
    selected = [select_model(MODELS["SIOKR"](ex), Xtr, Ytr, lams=lams, random_state=0) for ex in ("local", client)]
    assert selected[1]["best_params"] == selected[0]["best_params"]
    ensembles = [DSOKREnsemble(CLONED["DSOKR"](ex), n_estimators=2, random_state=0).fit(Xtr, Ytr)
                 for ex in ("local", client)]
    assert all(m.executor is client for m in ensembles[1].estimators_)
    _check_same(ensembles[0], ensembles[1], Xte)
    y = Xtr @ np.arange(1.0, 7.0)
    scores = [cross_val_score(CLONED["SketchedKernelMachine"](ex), Xtr, y, cv=3) for ex in ("local", client)]
    np.testing.assert_allclose(scores[1], scores[0], rtol=1e-8)


# ---------------------------------------------------------------------- top-k merge
def _reference_topk(S, k):
    """Best first, ties by the smaller index: a full lexsort per row."""
    order = np.lexsort((np.broadcast_to(np.arange(S.shape[1]), S.shape), -S), axis=1)[:, :k]
    return order, np.take_along_axis(S, order, axis=1)


@pytest.mark.parametrize("k", [1, 3, 7])
def test_topk_with_ties_is_deterministic_in_any_order(k):
    rng = np.random.default_rng(0)
    H = rng.integers(-2, 3, size=(40, 3)).astype(float)
    E = rng.integers(-2, 3, size=(500, 3)).astype(float)  # many exact ties
    S = H @ E.T
    ref_i, ref_s = _reference_topk(S, k)
    res = topk_search(H, E, k, max_memory_mb=0.01)  # many small candidate blocks
    np.testing.assert_array_equal(res.indices, ref_i)
    np.testing.assert_array_equal(res.scores, ref_s)
    # partial lists of candidate blocks, merged in a shuffled order
    task = TopKTask(H, k)
    bounds = [0, 37, 38, 200, 333, 500]
    parts = [task.add(task.start(), slice(a, b), E[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    for order in ([0, 1, 2, 3, 4], [3, 0, 4, 2, 1]):
        acc = task.start()
        for i in order:
            acc = merge_topk(acc, parts[i], k)
        np.testing.assert_array_equal(acc[0], ref_i)
        np.testing.assert_array_equal(acc[1], ref_s)
    np.testing.assert_array_equal(select_topk(S, k)[0], ref_i)


def test_distributed_index_topk_equals_local(client):
    from sprokr.decoders import CandidateIndex
    from sprokr.numerics import DaskExecutor

    rng = np.random.default_rng(2)
    H = rng.standard_normal((30, 5))
    E = np.round(rng.standard_normal((1000, 5)), 1)
    off = -0.5 * np.round(rng.random(1000), 1)
    ex = DaskExecutor(client=client, n_partitions=4)
    parts = ex.map_rows(ex.partition(np.hstack([E, off[:, None]])), np.asarray, 128, keep=True)
    dist = CandidateIndex(np.arange(1000), None, off, partitions=parts, dim=5)
    local = CandidateIndex(np.arange(1000), E, off)
    for k in (1, 4):
        a, b = local.search(H, k), dist.search(H, k, max_memory_mb=0.01)
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_allclose(a.scores, b.scores, rtol=1e-12)
    np.testing.assert_allclose(dist.gather_embeddings(), E)


@pytest.mark.parametrize("backend", ["local", "dask"])
def test_distributed_screened_index_equals_local(backend, request):
    from sprokr.decoders import CandidateIndex
    from sprokr.numerics import DaskExecutor

    rng = np.random.default_rng(3)
    Q = np.linalg.qr(rng.standard_normal((24, 24)))[0]
    E = ((rng.standard_normal((5000, 24)) * np.exp(-np.arange(24) / 4)) @ Q).astype(np.float32)
    off = -0.5 * (E.astype(np.float64) ** 2).sum(1)
    H = E[:40].astype(np.float64) + 0.05 * rng.standard_normal((40, 24))
    ex = (DaskExecutor(client=request.getfixturevalue("client"), n_partitions=3) if backend == "dask"
          else LocalExecutor(n_partitions=3))
    for offsets in (None, off):
        local = CandidateIndex(np.arange(5000), E, offsets).build_screen(6)
        dist = local.distribute(ex)
        assert dist.screen is local.screen and dist.embeddings is None
        plain = CandidateIndex(np.arange(5000), E.astype(np.float64), offsets)
        for k in (1, 5):
            a, b, c = local.search(H, k), dist.search(H, k, max_memory_mb=0.05), plain.search(H, k)
            np.testing.assert_array_equal(a.indices, c.indices)
            np.testing.assert_array_equal(b.indices, c.indices)
            np.testing.assert_allclose(b.scores, c.scores, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(dist.gather_embeddings(), E)
        with pytest.raises(ValueError, match="build the screen first, then distribute"):
            dist.build_screen(6)
