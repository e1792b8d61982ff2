"""LocalKernelRidgeRegressor (one ridge per k-means region of the inputs) and
NeighbourKernelRidgeRegressor (one ridge per query's neighbourhood)."""
import re

import numpy as np
import pytest
import scipy.sparse as sp

import sprokr
from sprokr import DSOKR
from sprokr.kernels import GaussianKernel
from sprokr.models import KernelRidgeRegressor, LocalKernelRidgeRegressor, NeighbourKernelRidgeRegressor


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    centres = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]])
    X = np.vstack([c + 0.7 * rng.standard_normal((120, 2)) for c in centres])
    T = np.column_stack([np.sin(2 * X[:, 0]), np.cos(X[:, 1]), X[:, 0] * X[:, 1]])
    Xq = np.vstack([c + 0.7 * rng.standard_normal((20, 2)) for c in centres])
    return X, T, Xq


def test_exact_regions_equal_the_naive_block_diagonal_ridge(data):
    # every region holds fewer samples than m_x: each is the exact ridge of its samples,
    # (K_rr + n_r lam I)^-1 T_r, predicted with k(x, X_r) for the queries of region r
    X, T, Xq = data
    lam, g = 1e-4, 0.8
    m = LocalKernelRidgeRegressor(n_regions=3, kernel_params={"gamma": g}, lam=lam, m_x=1000,
                                  random_state=0).fit(X, T)
    assert m.n_regions_ == 3 and m.region_sizes_.sum() == X.shape[0]
    k = GaussianKernel(gamma=g)
    lab = np.argmin(((X[:, None, :] - m.centres_[None]) ** 2).sum(-1), axis=1)
    labq = np.argmin(((Xq[:, None, :] - m.centres_[None]) ** 2).sum(-1), axis=1)
    expected = np.zeros((Xq.shape[0], T.shape[1]))
    for r in range(3):
        Xr, Tr = X[lab == r], T[lab == r]
        alpha = np.linalg.solve(k(Xr, Xr) + Xr.shape[0] * lam * np.eye(Xr.shape[0]), Tr)
        expected[labq == r] = k(Xq[labq == r], Xr) @ alpha
    np.testing.assert_allclose(m.predict(Xq), expected, rtol=1e-8, atol=1e-10)
    # the three well separated blobs are the three regions
    assert sorted(np.bincount(lab)) == [120, 120, 120]


def test_float32_targets_are_not_copied_whole_and_give_the_float64_fit(data):
    X, T, Xq = data
    kw = dict(n_regions=3, kernel_params={"gamma": 0.5}, lam=1e-4, m_x=50, random_state=1)
    T32 = T.astype(np.float32)
    a = LocalKernelRidgeRegressor(**kw).fit(X, T32)
    b = LocalKernelRidgeRegressor(**kw).fit(X, T32.astype(np.float64))
    np.testing.assert_allclose(a.predict(Xq), b.predict(Xq), rtol=1e-12, atol=1e-12)
    assert T32.dtype == np.float32  # the caller's array is untouched


def test_one_region_is_the_kernel_ridge_regressor(data):
    X, T, Xq = data
    common = dict(kernel_params={"gamma": 0.5}, lam=1e-3, input_sketch=None)
    local = LocalKernelRidgeRegressor(n_regions=1, m_x=None, random_state=0, **common).fit(X, T)
    ref = KernelRidgeRegressor(**common).fit(X, T)
    np.testing.assert_allclose(local.predict(Xq), ref.predict(Xq), rtol=1e-10, atol=1e-12)


def test_sketched_regions_are_seeded_and_beat_one_global_sketch(data):
    X, T, Xq = data
    kw = dict(n_regions=3, kernel_params={"gamma": 2.0}, lam=1e-6, m_x=30)
    a = LocalKernelRidgeRegressor(random_state=3, **kw).fit(X, T)
    b = LocalKernelRidgeRegressor(random_state=3, **kw).fit(X, T)
    c = LocalKernelRidgeRegressor(random_state=4, **kw).fit(X, T)
    np.testing.assert_array_equal(a.predict(Xq), b.predict(Xq))
    assert not np.allclose(a.predict(Xq), c.predict(Xq))
    # 3 x 30 support points in their regions against 30 for the whole set: a narrow kernel
    # is followed far better
    glob = KernelRidgeRegressor(kernel_params={"gamma": 2.0}, lam=1e-6, input_sketch="subsample", m_x=30,
                                random_state=3).fit(X, T)
    err = lambda m: np.mean((m.predict(X) - T) ** 2)  # noqa: E731
    assert err(a) < 0.5 * err(glob)


def test_sketch_parameters_with_regions_smaller_than_m_x(data):
    """Regions of at most m_x rows are exact ridges: they take no sketch parameters."""
    X, T, Xq = data
    model = LocalKernelRidgeRegressor(n_regions=3, kernel_params={"gamma": 2.0}, input_sketch="psg", m_x=100,
                                      input_sketch_params={"p": 0.2}, random_state=0).fit(X, T)
    assert {r.input_sketch for r in model.regions_} == {"psg"}  # the regions are of ~120 rows
    model.set_params(m_x=500).fit(X, T)
    assert {r.input_sketch for r in model.regions_} == {None}
    assert model.predict(Xq).shape == (60, 3)


def test_sparse_inputs_and_one_dimensional_targets(data):
    X, T, Xq = data
    m = LocalKernelRidgeRegressor(n_regions=3, kernel_params={"gamma": 0.5}, lam=1e-3, random_state=0)
    dense = m.fit(X, T[:, 0]).predict(Xq)
    assert dense.shape == (Xq.shape[0],)
    sparse = LocalKernelRidgeRegressor(n_regions=3, kernel_params={"gamma": 0.5}, lam=1e-3,
                                       random_state=0).fit(sp.csr_matrix(X), T[:, 0]).predict(sp.csr_matrix(Xq))
    np.testing.assert_allclose(sparse, dense, rtol=1e-8, atol=1e-10)
    assert m.predict(Xq[:0]).shape == (0,)


@pytest.mark.parametrize("params, Xbad, match", [
    ({"n_regions": 0}, None, "n_regions"),
    ({"n_regions": 10_000}, None, "n_regions"),
    ({"n_regions": 2.5}, None, "n_regions"),
    ({"n_regions": "AUTO"}, None, "n_regions"),
    ({"m_x": 0}, None, "m_x"),
    ({}, "strings", "X must hold numbers"),
    ({}, "nan", "NaN"),
    ({}, "nan_y", "NaN"),
    ({}, "huge_y", "y holds values up to .*: LocalKernelRidgeRegressor's losses"),  # before the k-means
    ({"lam": -1.0}, None, "lam"),
    ({"kernel": "no_such_kernel"}, None, "no_such_kernel"),
])
def test_bad_arguments_are_named_before_any_state_changes(data, params, Xbad, match):
    _refit_fails_and_keeps_the_fit(LocalKernelRidgeRegressor(n_regions=3, random_state=0), data, params, Xbad, match)


def _refit_fails_and_keeps_the_fit(m, data, params, Xbad, match):
    """A refit with a bad parameter or bad data raises an error naming it; the previous
    fit still predicts as before."""
    X, T, _ = data
    m.fit(X, T)
    before = m.predict(X[:5])
    Xf, Tf = X, T
    if Xbad == "nan_y":
        Tf = T.astype(np.float32)
        Tf[5, 2] = np.inf
    if Xbad == "huge_y":  # float targets are used as given: their scale is checked too
        Tf = T * 1e200
    if Xbad == "strings":
        Xf = np.array([["a", "b"]] * X.shape[0])
    elif Xbad == "nan":
        Xf = X.copy()
        Xf[3, 1] = np.nan
    with pytest.raises((ValueError, TypeError), match=match):
        m.set_params(**params).fit(Xf, Tf)
    np.testing.assert_array_equal(m.predict(X[:5]), before)  # the previous fit is intact
    with pytest.raises(ValueError, match="features"):
        m.predict(np.zeros((2, 5)))


@pytest.mark.parametrize("kernel", ["precomputed", "text", "smiles_spectrum", "core_wl"])
def test_regional_ridge_refuses_kernels_not_on_vectors_before_the_k_means(data, kernel, monkeypatch):
    """The regions' ridges evaluate the kernel on (prepared) rows of the numeric inputs.
    Another kernel failed after the k-means, inside a region's ridge, with the kernel's
    internals (a precomputed kernel: "the right-hand samples must be training samples ...
    a (21, 3) block"); it is refused at fit, naming ``kernel`` and the kind it must be, and
    the previous fit is intact."""
    import sklearn.cluster

    if kernel == "smiles_spectrum":
        pytest.importorskip("sprokr_chem")
    if kernel == "core_wl":
        pytest.importorskip("sprokr_graphs")
    X, T, _ = data
    m = LocalKernelRidgeRegressor(n_regions=3, random_state=0).fit(X, T)
    before = m.predict(X[:5])

    def no_kmeans(*args, **kwargs):
        raise AssertionError("the k-means ran before the kernel was checked")

    monkeypatch.setattr(sklearn.cluster, "MiniBatchKMeans", no_kmeans)
    with pytest.raises(ValueError, match=f"kernel must be a vector kernel.*got '{kernel}'"):
        m.set_params(kernel=kernel).fit(X, T)
    np.testing.assert_array_equal(m.predict(X[:5]), before)


@pytest.mark.parametrize("n", [40, 6])
def test_regional_ridge_refuses_a_precomputed_gram(data, n):
    """A training Gram as ``X`` with the precomputed kernel is refused too, even one small
    enough to be the whole probe (the regions would take blocks of its rows)."""
    X, T, _ = data
    with pytest.raises(ValueError, match="kernel must be a vector kernel.*got 'precomputed'"):
        LocalKernelRidgeRegressor(n_regions=2, kernel="precomputed", random_state=0).fit(X[:n] @ X[:n].T, T[:n])


def test_float32_checks_failing_in_many_regions_give_one_warning():
    """A flat kernel fails the float32 check of every regional ridge: one LinAlgWarning for
    the fit (it was one per region: 16), naming how many and the range of the estimates;
    the predictions are the float64 fit's."""
    from scipy.linalg import LinAlgWarning

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 6))
    T = np.c_[np.sin(X[:, 0]), X[:, 1] * X[:, 2]]
    kw = dict(kernel_params={"gamma": 1e-4}, lam=1e-5, random_state=0)
    with pytest.warns(LinAlgWarning) as rec:
        m32 = LocalKernelRidgeRegressor(dtype="float32", **kw).fit(X, T)
    msgs = [str(w.message) for w in rec if issubclass(w.category, LinAlgWarning)]
    assert len(msgs) == 1 and re.match(r"\d+ of the 16 regional ridges \(estimates [0-9.e-]+ to [0-9.e-]+\): "
                                       r"dtype='float32'", msgs[0]), msgs
    assert rec[0].filename == __file__  # attributed to the fit line
    P64 = LocalKernelRidgeRegressor(**kw).fit(X, T).predict(X)
    np.testing.assert_allclose(m32.predict(X), P64, rtol=0, atol=1e-6 * np.abs(P64).max())


def test_grouped_accuracy_warnings_pass_other_warnings_through():
    import warnings

    from scipy.linalg import LinAlgWarning

    from sprokr.progress import grouped_accuracy_warnings

    with pytest.warns(UserWarning, match="unrelated") as rec:
        with grouped_accuracy_warnings("parts", 3):
            warnings.warn("unrelated", UserWarning)
            warnings.warn("slow route (estimate 0.5): kept", LinAlgWarning)
            warnings.warn("slow route (estimate 0.25): kept", LinAlgWarning)
            warnings.warn("another kind", LinAlgWarning)
    lin = sorted(str(w.message) for w in rec if issubclass(w.category, LinAlgWarning))
    assert lin == ["2 of the 3 parts (estimates 0.25 to 0.5): slow route: kept", "another kind"]


def test_dsokr_with_regional_ridges_predicts_and_survives_saving(data, tmp_path):
    X, T, Xq = data
    Y = (T > 0).astype(float)  # label sets
    model = DSOKR(output_kernel="gaussian", output_kernel_params={"gamma": 0.5}, m_y=20,
                  regressor="local_kernel_ridge",
                  regressor_params={"n_regions": 3, "kernel_params": {"gamma": 0.5}, "lam": 1e-4, "m_x": 50},
                  random_state=0).fit(X, Y)
    assert isinstance(model.regressor_, LocalKernelRidgeRegressor)
    pred = model.predict(Xq, candidates=Y)
    assert pred.shape == (Xq.shape[0], Y.shape[1])
    again = sprokr.load(model.save(tmp_path / "local.sprokr"))
    np.testing.assert_array_equal(again.predict(Xq, candidates=Y), pred)


@pytest.mark.parametrize("cls, name, auto", [(LocalKernelRidgeRegressor, "n_regions", 16),
                                             (NeighbourKernelRidgeRegressor, "n_neighbors", 8)])
def test_auto_count_is_the_former_default_or_every_sample(data, cls, name, auto):
    """The default ``"auto"`` is the former default count (16 regions, 8 neighbours) on a
    training set at least that large, with the same predictions, and one region (or
    neighbour) per sample on a smaller one, where the former default was refused."""
    X, T, Xq = data
    kw = {"random_state": 0} if cls is LocalKernelRidgeRegressor else {}
    assert cls().get_params()[name] == "auto"
    np.testing.assert_array_equal(cls(**kw).fit(X, T).predict(Xq), cls(**{name: auto}, **kw).fit(X, T).predict(Xq))
    small = slice(0, 360, 72)  # 5 samples, from the three blobs
    np.testing.assert_array_equal(cls(**kw).fit(X[small], T[small]).predict(Xq),
                                  cls(**{name: 5}, **kw).fit(X[small], T[small]).predict(Xq))
    if cls is NeighbourKernelRidgeRegressor:
        assert cls().fit(X[small], T[small]).n_neighbors_ == 5
    one = cls(**kw).fit(X[:1], T[:1])  # one sample: one region, one neighbour
    assert one.predict(Xq).shape == (Xq.shape[0], T.shape[1])


@pytest.mark.parametrize("cls, name", [(LocalKernelRidgeRegressor, "n_regions"),
                                       (NeighbourKernelRidgeRegressor, "n_neighbors")])
def test_explicit_count_above_the_samples_is_refused_naming_n_samples(data, cls, name):
    """As scikit-learn's KMeans refuses more clusters than samples: an explicit count is
    not clipped; the message names the parameter and ``n_samples`` (scikit-learn's
    one-sample pattern ``n_samples=1``)."""
    X, T, _ = data
    for n in (1, 4):
        with pytest.raises(ValueError, match=rf"^{name} must be an integer between 1 and the number of samples "
                                             rf"\(n_samples={n}\), or 'auto' .*, got {n + 1}$"):
            cls(**{name: n + 1}).fit(X[:n], T[:n])
    fitted = cls(**{name: 4}).fit(X[:4], T[:4])  # n itself is taken
    assert (fitted.n_neighbors_ if name == "n_neighbors" else fitted.region_sizes_.sum()) == 4


# ---------------------------------------------------------------- NeighbourKernelRidgeRegressor
def _naive_neighbour_ridge(X, T, Xq, k, g, lam):
    """Each query's own dense ridge on its k nearest training rows (ties: smaller index)."""
    from sklearn.metrics.pairwise import euclidean_distances, rbf_kernel

    nb = np.argsort(euclidean_distances(Xq, X), axis=1, kind="stable")[:, :k]
    return np.stack([rbf_kernel(Xq[i:i + 1], X[n], gamma=g)[0]
                     @ np.linalg.solve(rbf_kernel(X[n], X[n], gamma=g) + k * lam * np.eye(k), T[n])
                     for i, n in enumerate(nb)])


@pytest.mark.parametrize("k", [1, 5, 40])
def test_neighbour_ridge_equals_the_naive_per_query_ridge(data, k):
    X, T, Xq = data
    m = NeighbourKernelRidgeRegressor(n_neighbors=k, kernel_params={"gamma": 0.8}, lam=1e-4, chunk_size=7).fit(X, T)
    np.testing.assert_allclose(m.predict(Xq), _naive_neighbour_ridge(X, T, Xq, k, 0.8, 1e-4), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("block", [1, 400, 1 << 20])
def test_neighbour_groups_of_any_size_give_the_naive_ridge(data, block, monkeypatch):
    """Queries take their neighbourhoods' Grams from one Gram per group (the union of the
    group's neighbours): one query per group, a few, or all of them in one."""
    import sprokr.models.local_ridge as local_ridge

    monkeypatch.setattr(local_ridge, "NEIGHBOUR_BLOCK", block)
    X, T, Xq = data
    m = NeighbourKernelRidgeRegressor(n_neighbors=5, kernel_params={"gamma": 0.8}, lam=1e-4).fit(X, T)
    np.testing.assert_allclose(m.predict(Xq), _naive_neighbour_ridge(X, T, Xq, 5, 0.8, 1e-4), rtol=1e-9, atol=1e-9)


def test_one_neighbour_ranks_like_the_nearest_neighbour(data):
    # k = 1: the nearest training target scaled by k(x, x_1) / (1 + lam) > 0, so a retrieval
    # (scores up to a positive factor per query) ranks as the nearest-neighbour regressor's
    from sklearn.neighbors import KNeighborsRegressor

    X, T, Xq = data
    P = NeighbourKernelRidgeRegressor(n_neighbors=1, kernel_params={"gamma": 0.3}).fit(X, T).predict(Xq)
    ref = KNeighborsRegressor(n_neighbors=1).fit(X, T).predict(Xq)
    scale = P[:, 0] / ref[:, 0]
    assert np.all((scale > 0) & (scale <= 1))
    np.testing.assert_allclose(P, scale[:, None] * ref, rtol=1e-12)


def test_neighbour_ridge_keeps_float32_targets_and_takes_sparse_inputs(data):
    X, T, Xq = data
    T32 = T.astype(np.float32)
    m = NeighbourKernelRidgeRegressor(n_neighbors=6, kernel_params={"gamma": 0.5}).fit(X, T32)
    assert np.shares_memory(m.targets_, T32)  # not copied (DSOKR's n x p targets)
    np.testing.assert_allclose(m.predict(Xq), _naive_neighbour_ridge(X, T32.astype(np.float64), Xq, 6, 0.5, 1e-5),
                               rtol=1e-8, atol=1e-8)
    ms = NeighbourKernelRidgeRegressor(n_neighbors=6, kernel_params={"gamma": 0.5}).fit(sp.csr_matrix(X), T[:, 0])
    np.testing.assert_allclose(ms.predict(sp.csr_matrix(Xq)), m.predict(Xq)[:, 0], rtol=1e-5, atol=1e-6)
    assert ms.predict(Xq[:0]).shape == (0,)


@pytest.mark.parametrize("chunk_size", [None, 7])
def test_neighbour_ridge_fitted_on_dense_inputs_takes_sparse_queries(data, chunk_size):
    X, T, Xq = data
    m = NeighbourKernelRidgeRegressor(n_neighbors=5, kernel_params={"gamma": 0.5}, chunk_size=chunk_size).fit(X, T)
    dense = m.predict(Xq)
    for fmt in ("csr", "csc", "coo"):  # densified a block of queries at a time
        np.testing.assert_array_equal(m.predict(sp.csr_matrix(Xq).asformat(fmt)), dense)
    assert m.predict(sp.csr_matrix(Xq[:0])).shape == (0, T.shape[1])


@pytest.mark.parametrize("params, Xbad, match", [
    ({"n_neighbors": 0}, None, "n_neighbors"),
    ({"n_neighbors": 10_000}, None, "n_neighbors"),
    ({"n_neighbors": 2.5}, None, "n_neighbors"),
    ({"n_neighbors": "all"}, None, "n_neighbors"),
    ({"chunk_size": 0}, None, "chunk_size"),
    ({}, "strings", "X must hold numbers"),
    ({}, "nan", "NaN"),
    ({}, "nan_y", "NaN"),
    ({}, "huge_y", "y holds values up to .*: NeighbourKernelRidgeRegressor's losses"),
    ({"lam": 0.0}, None, "lam"),
    ({"kernel": "no_such_kernel"}, None, "no_such_kernel"),
])
def test_neighbour_ridge_bad_arguments_are_named_before_any_state_changes(data, params, Xbad, match):
    _refit_fails_and_keeps_the_fit(NeighbourKernelRidgeRegressor(), data, params, Xbad, match)


def test_dsokr_with_neighbour_ridges_predicts_and_survives_saving(data, tmp_path):
    X, T, Xq = data
    Y = (T > 0).astype(float)
    model = DSOKR(output_kernel="gaussian", output_kernel_params={"gamma": 0.5}, m_y=20,
                  regressor="neighbour_kernel_ridge",
                  regressor_params={"n_neighbors": 8, "kernel_params": {"gamma": 0.5}, "lam": 1e-4},
                  random_state=0).fit(X, Y)
    assert isinstance(model.regressor_, NeighbourKernelRidgeRegressor)
    pred = model.predict(Xq, candidates=Y)
    assert pred.shape == (Xq.shape[0], Y.shape[1])
    again = sprokr.load(model.save(tmp_path / "near.sprokr"))
    np.testing.assert_array_equal(again.predict(Xq, candidates=Y), pred)


@pytest.mark.parametrize("cls, name", [(LocalKernelRidgeRegressor, "n_regions"),
                                       (NeighbourKernelRidgeRegressor, "n_neighbors")])
@pytest.mark.parametrize("value", [0, -2, 2.5, True, "AUTO", None])
def test_region_and_neighbour_counts_are_checked_without_data(cls, name, value):
    """check_params refuses a count that no data could make valid ("auto" or an integer
    >= 1); the bound by the number of samples stays with fit."""
    with pytest.raises(ValueError, match=f"{name} must be an integer between 1 and the number of samples, or 'auto'"):
        cls(**{name: value}).check_params()
    assert cls(**{name: 10 ** 6}).check_params() is not None
