"""What a selection's fits share (SelectionCache), grids that extend while the validation
improves, and MoleculeRetriever's method="auto"."""
import numpy as np
import pytest
from sklearn.base import clone

from sprokr import IOKR, SISOKR
from sprokr.kernels import GaussianKernel
from sprokr.model_selection import (
    SelectionCache,
    exact_iokr_cost,
    grow_until_plateau,
    perfect_h_curve,
    retrieval_scorer,
    select_model,
)
from sprokr.numerics import SketchedFeatures
from sprokr.sketches import resolve_sketch

LAMS = np.logspace(-1, -7, 7)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 4))
    W = rng.standard_normal((4, 3))
    Y = np.tanh(X @ W) + 0.05 * rng.standard_normal((150, 3))
    return X[:110], Y[:110], X[110:], Y[110:]


def _estimators():
    return {"IOKR": IOKR(input_kernel="gaussian", output_kernel="gaussian", output_kernel_params={"gamma": 0.5}),
            "SISOKR": SISOKR(input_kernel="gaussian", output_kernel="gaussian", output_kernel_params={"gamma": 0.5},
                             input_sketch="subsample", m_x=20, output_sketch="psg", m_y=20,
                             output_sketch_params={"p": 0.1}, random_state=0)}


def _search(est, data, cache, scoring, **kw):
    Xtr, Ytr, Xv, Yv = data
    sketched = isinstance(est, SISOKR) and est.input_sketch is not None
    return select_model(est, Xtr, Ytr, lams=LAMS, param_grid={"input_kernel_params": [{"gamma": 0.05}, {"gamma": 0.3}]},
                        m_x_grid=[20, 40] if sketched else None, m_y_grid=[20, 40] if sketched else None,
                        scoring=scoring, validation_data=(Xv, Yv), random_state=0, cache=cache, **kw)


def _same(a, b):
    assert a["best_params"] == b["best_params"]
    for g, h in zip(a["grid"], b["grid"]):
        np.testing.assert_allclose(g["scores"], h["scores"], rtol=1e-9, atol=1e-12)
    if a["m_x"] is not None:
        assert a["m_x"]["m"] == b["m_x"]["m"]
        for s, t in zip(a["m_x"]["scores"], b["m_x"]["scores"]):
            np.testing.assert_allclose(s, t, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["IOKR", "SISOKR"])
@pytest.mark.parametrize("scoring", [None, "retrieval"])
def test_cached_selection_equals_recomputing(data, name, scoring):
    """The kept prepared samples, kernel columns and factorisations give the lam path scores
    and the choices of a selection that recomputes everything."""
    scoring = retrieval_scorer("mrr") if scoring else None
    est = _estimators()[name]
    plain = _search(est, data, None, scoring)
    cache = SelectionCache()
    cached = _search(est, data, cache, scoring)
    _same(plain, cached)
    stats = cache.stats
    assert stats["blocks_served"] > 0 and stats["blocks_computed"] == 0
    # each kernel configuration prepares the (train + validation) samples once
    assert stats["prepared"] <= 2 * 2 + 2


def test_output_kernels_share_the_input_side(data):
    """Two selections (two output kernels) on views of one cache: the training Gram's
    eigendecomposition (input side only) is computed once, and the choices are those of
    separate selections without cache."""
    Xtr, Ytr, Xv, Yv = data
    cache = SelectionCache()
    X, Y = cache.samples(np.vstack([Xtr, Xv])), cache.samples(np.vstack([Ytr, Yv]))
    tr, va = np.arange(len(Xtr)), np.arange(len(Xtr), len(Xtr) + len(Xv))
    for gamma in (0.5, 2.0):
        est = IOKR(input_kernel="gaussian", output_kernel="gaussian", output_kernel_params={"gamma": gamma})
        ref = select_model(est, Xtr, Ytr, lams=LAMS, param_grid={"input_kernel_params": [{"gamma": 0.1}]},
                           validation_data=(Xv, Yv), scoring=retrieval_scorer("mrr"))
        res = select_model(est, X.take(tr), Y.take(tr), lams=LAMS, param_grid={"input_kernel_params": [{"gamma": 0.1}]},
                           validation_data=(X.take(va), Y.take(va)), scoring=retrieval_scorer("mrr"), cache=cache)
        _same(ref, res)
    stats = cache.stats
    # second output kernel: the eigendecomposition and the validation rows in its basis
    # come from the first one's (the paths' state fits factorise nothing: no ridge factor)
    assert stats["memo_hits"] >= 2


def test_cache_blocks_memory_bound_and_views():
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((60, 3))
    k = GaussianKernel(gamma=0.7)
    cache = SelectionCache()
    V = cache.samples(Z)
    assert cache.samples(Z).master is V.master and len(V) == 60
    np.testing.assert_array_equal(V[5], Z[5])
    A, B = V.take(np.arange(10, 30)), V.take([3, 50, 7])
    ck = cache.kernel(k)
    np.testing.assert_allclose(ck.pairwise(ck.prepare(A), ck.prepare(B)), k(Z[10:30], Z[[3, 50, 7]]), rtol=1e-13)
    assert cache.stats["columns_computed"] == 3
    ck.pairwise(ck.prepare(V.take([1, 2])), ck.prepare(V.take([50, 3])))  # kept columns: none computed
    assert cache.stats["columns_computed"] == 3
    # samples that are not views of the cache: the plain kernel
    np.testing.assert_allclose(ck.pairwise(ck.prepare(Z[:4]), ck.prepare(Z[:2])), k(Z[:4], Z[:2]), rtol=1e-13)
    # a memoised result is computed once and cannot be modified in place
    calls = []
    out = ck.memo("twice", ck.prepare(A), lambda: calls.append(1) or np.ones(3), key=(np.arange(3), 0.5))
    again = ck.memo("twice", ck.prepare(A), lambda: calls.append(1) or np.zeros(3), key=(np.arange(3), 0.5))
    assert calls == [1] and again is out and not out.flags.writeable
    # a tiny memory bound: blocks are computed without being kept, values unchanged
    small = SelectionCache(max_memory_mb=1e-3)
    sk = small.kernel(k)
    W = small.samples(Z)
    np.testing.assert_allclose(sk.pairwise(sk.prepare(W), sk.prepare(W)), k(Z), rtol=1e-13)
    assert small.stats["blocks_computed"] > 0 and small.stats["bytes"] <= 1e-3 * 2**20
    with pytest.raises(ValueError, match="max_memory_mb"):
        SelectionCache(max_memory_mb=0)
    # the default bound follows the memory available, within [2 GB, 8 GB]
    from sprokr.model_selection import default_cache_mb

    assert 2048 <= default_cache_mb() <= 8192
    assert 2048 <= SelectionCache().max_memory_mb <= 8192
    with pytest.raises(TypeError, match="cache must be a SelectionCache"):
        select_model(IOKR(), Z[:40], Z[:40], validation_data=(Z[40:], Z[40:]), cache="yes")


def test_sketched_features_memo_is_exact():
    """The output basis and features kept by the cache equal a fresh computation."""
    rng = np.random.default_rng(2)
    Y = rng.standard_normal((80, 3))
    k = GaussianKernel(gamma=0.4)
    R = resolve_sketch("psg", 15, {"p": 0.1}, 80, "output").draw(80, np.random.default_rng(0))
    ref = SketchedFeatures(k, R, Y[R.indices], np.float64, 1e-10).fit_basis()
    cache = SelectionCache()
    ck, V = cache.kernel(k), cache.samples(Y)
    Vp = ck.prepare_outputs(V)
    for _ in range(2):
        f = SketchedFeatures(ck, R, Vp.take(R.indices), np.float64, 1e-10).fit_basis()
        np.testing.assert_allclose(f.transform(Vp), ref.transform(Y), rtol=1e-10, atol=1e-12)
    assert cache.stats["memo_hits"] >= 2


# --------------------------------------------------------------------------- grids that extend
def test_grow_until_plateau_extends_a_grid_that_still_improves():
    err = lambda m: (-min(m, 500) / 500.0, 0.0)  # noqa: E731  # improves up to 500, flat beyond
    plain = grow_until_plateau([100, 200], err, rtol=0.01)
    assert plain["m"] == [100, 200] and plain["stopped"] == "grid" and plain["selected_m"] == 200
    ext = grow_until_plateau([100, 200], err, rtol=0.01, max_size=1000)
    assert ext["m"] == [100, 200, 400, 800, 1000] and ext["extended"] == [400, 800, 1000]
    assert ext["stopped"] == "converged" and ext["selected_m"] == 800
    capped = grow_until_plateau([100, 200], err, rtol=0.01, max_size=300)
    assert capped["m"] == [100, 200, 300] and capped["stopped"] == "grid"
    # a grid that converges inside is not extended
    assert grow_until_plateau([100, 600, 700], err, rtol=0.01, max_size=5000)["extended"] == []
    with pytest.raises(ValueError, match="max_size"):
        grow_until_plateau([1, 2], err, max_size=0)


def test_perfect_h_curve_extends_while_the_error_still_falls():
    rng = np.random.default_rng(3)
    Y = rng.standard_normal((240, 40))  # rank 40 outputs: the projection error falls until m_y ~ 40
    plain = perfect_h_curve(Y[:200], Y[200:], "linear", [5, 10], sketch="subsample", random_state=0)
    assert plain["plateau_m"] == 10 and plain["extended"] == []
    ext = perfect_h_curve(Y[:200], Y[200:], "linear", [5, 10], sketch="subsample", random_state=0, max_m=200)
    assert ext["extended"][:2] == [20, 40] and ext["plateau_m"] >= 40
    assert ext["projection_error"][:2] == plain["projection_error"]


def test_select_model_extends_the_sketch_sizes(data):
    """SISOKR on a problem where larger sketches keep helping: with ``extend_grids`` the sizes
    go beyond the grid's edge (up to the training part) instead of stopping there."""
    Xtr, Ytr, Xv, Yv = data
    est = SISOKR(input_kernel="gaussian", input_kernel_params={"gamma": 2.0}, output_kernel="linear",
                 input_sketch="subsample", m_x=5, random_state=0)
    kw = dict(lams=[1e-6], m_x_grid=[5, 10], validation_data=(Xv, Yv), random_state=0, rtol=0.001)
    plain = select_model(est, Xtr, Ytr, **kw)
    ext = select_model(est, Xtr, Ytr, extend_grids=True, **kw)
    assert plain["m_x"]["m"] == [5, 10] and plain["m_x"]["stopped"] == "grid"
    assert ext["m_x"]["extended"][0] == 20 and ext["best_params"]["m_x"] > 10
    assert max(ext["m_x"]["m"]) <= len(Xtr)
    assert ext["best_score"] > plain["best_score"]


# --------------------------------------------------------------------------- method="auto"
def test_exact_iokr_cost():
    c = exact_iokr_cost(1000, 800, 200, n_points=2, n_outputs=2, n_lams=8, rate=1e9)
    assert c.memory_mb == pytest.approx(2 * 1000**2 * 8 / 2**20)
    assert c.seconds == pytest.approx(c.flops / 1e9)
    assert c.fits(1e9, 1e9) and not c.fits(c.seconds / 2, 1e9) and not c.fits(1e9, 1.0)
    # O(n^3): twice the pairs, ~8x the time
    assert 7 < exact_iokr_cost(2000, 1600, 400, 2, 2, 8, rate=1e9).seconds / c.seconds < 8.5


@pytest.fixture(scope="module")
def qm9_small():
    from sprokr.datasets import sample_path

    pytest.importorskip("rdkit")
    from sprokr_chem.datasets import load_qm9

    smiles, _, _ = load_qm9(sample_path("qm9_sample.csv"))
    return smiles[:160]


AUTO_SMALL = dict(output_kernel="morgan_count_tanimoto", lams=(1e-2, 1e-4, 1e-6), input_grid=[{"n": 4}],
                  m_x_grid=(20, 40), m_y_grid=(20, 40), random_state=0)


def test_auto_chooses_exact_iokr_on_small_data(qm9_small):
    from sprokr_chem import MoleculeRetriever

    model = MoleculeRetriever(**AUTO_SMALL).fit(qm9_small, qm9_small)
    auto = model.selection_["auto"]
    assert model.method_ == "iokr" and auto["chosen"] == "iokr" and auto["iokr_fits"]
    assert set(auto["compared"]) == {"iokr", "dsokr"}
    assert auto["compared"]["iokr"]["best_score"] >= auto["compared"]["dsokr"]["best_score"]
    assert model.best_score_ == auto["compared"]["iokr"]["best_score"]
    assert "fits the budgets" in auto["reason"] and model.selection_["method"] == "auto"
    assert type(model.model_).__name__ == "IOKR"
    # the fitted model keeps nothing of the selection's cache
    assert "Cached" not in type(model.model_.input_kernel_).__name__
    assert model.selection_["cache"]["blocks_served"] > 0
    # the sketched search released its output kernel's columns and bases when it was done
    assert model.selection_["cache"]["released"] > 0


def test_release_drops_one_kernels_columns_and_results_only():
    from sprokr.kernels import GaussianKernel, LinearKernel

    Z = np.random.default_rng(5).normal(size=(60, 4))
    cache = SelectionCache(max_memory_mb=64)
    V = cache.samples(Z)
    g, lin = cache.kernel(GaussianKernel(gamma=0.3)), cache.kernel(LinearKernel())
    Kg = g.pairwise(g.prepare(V), g.prepare(V.take(np.arange(10))))
    lin.pairwise(lin.prepare(V), lin.prepare(V.take(np.arange(5))))
    g.memo("result", g.prepare(V), lambda: np.ones(1000))
    kept = cache.stats["bytes"]
    freed = cache.release(GaussianKernel(gamma=0.3))  # by configuration, as the cache keys it
    assert freed == 60 * 60 * 8 + 8000 and cache.stats["bytes"] == kept - freed
    assert cache.stats["released"] == freed
    # the linear kernel's columns are still served; the Gaussian ones are computed again, equal
    computed = cache.stats["columns_computed"]
    lin.pairwise(lin.prepare(V), lin.prepare(V.take(np.arange(5))))
    assert cache.stats["columns_computed"] == computed
    np.testing.assert_array_equal(g.pairwise(g.prepare(V), g.prepare(V.take(np.arange(10)))), Kg)
    assert cache.stats["columns_computed"] == computed + 10
    assert cache.release(g) > 0 and cache.release(g) == 0
    with pytest.raises(TypeError, match="kernel must be a Kernel"):
        cache.release("gaussian")


@pytest.mark.parametrize("budget", [{"time_budget_s": 1e-9}, {"memory_budget_mb": 1e-6}])
def test_auto_falls_back_to_a_sketched_model_over_budget(qm9_small, budget):
    from sprokr_chem import MoleculeRetriever

    model = MoleculeRetriever(**AUTO_SMALL, **budget).fit(qm9_small, qm9_small)
    auto = model.selection_["auto"]
    assert model.method_ == "dsokr" and not auto["iokr_fits"] and list(auto["compared"]) == ["dsokr"]
    assert "does not fit" in auto["reason"]
    assert ("s >" in auto["reason"]) == ("time_budget_s" in budget)
    # the estimate that exceeds the budget is shown as such (it read 'estimated 0 s > 1e-09 s')
    import re

    over = re.search(r"([0-9.e+-]+) (s|MB) > ([0-9.e+-]+) (s|MB)", auto["reason"])
    assert over and float(over.group(1)) > float(over.group(3)) > 0
    assert len(model.predict(qm9_small[:5])) == 5
    with pytest.raises(ValueError, match="time_budget_s must be a finite number > 0"):
        clone(model).set_params(time_budget_s=0).fit(qm9_small, qm9_small)


def test_cached_kernel_ridge_path(data):
    """Estimators with vector targets (kernel ridge): the inputs are served by the cache,
    the targets stay arrays; same choices."""
    from sprokr.models import KernelRidgeRegressor

    Xtr, Ytr, Xv, Yv = data
    est = KernelRidgeRegressor(kernel="gaussian")
    kw = dict(lams=LAMS, param_grid={"kernel_params": [{"gamma": 0.1}, {"gamma": 1.0}]}, validation_data=(Xv, Yv))
    cache = SelectionCache()
    _same(select_model(est, Xtr, Ytr, **kw), select_model(est, Xtr, Ytr, cache=cache, **kw))
    assert cache.stats["blocks_served"] > 0
    big = GaussianKernel(gamma=0.5)
    assert cache.kernel(big).handle is cache.kernel(GaussianKernel(gamma=0.5)).handle
    assert cache.kernel(big).handle is not cache.kernel(GaussianKernel(gamma=0.25)).handle


def test_perfect_h_sketch_is_the_seeded_models_and_its_basis_is_reused(monkeypatch):
    """With an integer seed each perfect-h size draws the sketch a DSOKR seeded alike draws,
    so the fit at the chosen size finds its output basis in the cache (no second factorisation)."""
    import sprokr.numerics._features as features_module
    from sprokr import DSOKR

    factorised = []  # the sizes of the bases factorised (psd_eigh of R K R^T)
    eigh = features_module.psd_eigh
    monkeypatch.setattr(features_module, "psd_eigh", lambda K, rcond: (factorised.append(K.shape[0]),
                                                                       eigh(K, rcond))[1])
    rng = np.random.default_rng(4)
    X, Y = rng.standard_normal((120, 5)), rng.standard_normal((120, 3))
    k = GaussianKernel(gamma=0.4)
    cache = SelectionCache()
    ck, V = cache.kernel(k), cache.samples(Y)
    tr, va = V.take(np.arange(90)), V.take(np.arange(90, 120))
    ph = perfect_h_curve(tr, va, ck, [10, 20], sketch="psg", sketch_params={"p": 0.1}, random_state=7)
    misses = cache.stats["memo_misses"]
    assert factorised == [10, 20]  # one basis per point of the curve
    model = DSOKR(output_kernel=ck, output_sketch="psg", m_y=20, output_sketch_params={"p": 0.1},
                  regressor="ridge", random_state=7).fit(X[:90], tr, validation_data=(X[90:], va))
    # the fit factorised nothing: its basis is the curve's (the memo counts below did not
    # tell: a basis factorised again is one more miss among the few allowed)
    assert factorised == [10, 20]
    R = resolve_sketch("psg", 20, {"p": 0.1}, 90, "output").draw(90, np.random.default_rng(7))
    np.testing.assert_array_equal(model.output_sketch_matrix_.indices, R.indices)
    assert ph["m"] == [10, 20]
    # the basis (and the training features) were kept by perfect-h's points: hits, and at most
    # the targets' and validation features' misses, never the basis factorisation again
    assert cache.stats["memo_hits"] >= 1
    fresh = DSOKR(output_kernel=k, output_sketch="psg", m_y=20, output_sketch_params={"p": 0.1},
                  regressor="ridge", random_state=7).fit(X[:90], Y[:90])
    np.testing.assert_allclose(model.predict_coordinates(X[90:]) @ model.predict_coordinates(X[90:]).T,
                               fresh.predict_coordinates(X[90:]) @ fresh.predict_coordinates(X[90:]).T,
                               rtol=1e-8, atol=1e-10)
    assert cache.stats["memo_misses"] - misses < 10


def test_m_x_growth_keeps_the_grid_fits_output_sketch(data, monkeypatch):
    """SISOKR draws its output sketch after its input sketch: without care every m_x of the
    growth would draw (and factorise, and compute targets for) another one.  The growth's
    fits reuse the best grid fit's output sketch, so the cache keeps their output side."""
    seen = []

    def spying(orig):  # the fits of the selection: its paths' state fits and its refits
        def spy(self, X, Y):
            out = orig(self, X, Y)
            seen.append((self.m_x, self.output_sketch_matrix_.indices.copy()))
            return out
        return spy

    for name in ("fit", "fit_state"):
        monkeypatch.setattr(SISOKR, name, spying(getattr(SISOKR, name)))
    est = _estimators()["SISOKR"]
    sel = _search(est, data, SelectionCache(), None)
    sizes = [m for m, _ in seen]
    assert 20 in sizes and 40 in sizes and sel["m_x"]["m"] == [20, 40]
    ref = [idx for m, idx in seen if m == 20][-1]
    for m, idx in seen:
        np.testing.assert_array_equal(idx, ref)


def test_selection_fits_take_the_perfect_h_sketch_and_its_basis(data, monkeypatch):
    """The fits of a selection with an m_y grid take the perfect-h curve's sketch at the
    chosen size: the output basis is factorised once per curve point and never again by a
    fit (SISOKR draws its input sketch first, and would otherwise draw an output sketch of
    its own), and the fits' output sketch is the curve's."""
    import sprokr.numerics._features as features_module

    sizes, seen = [], []
    eigh = features_module.psd_eigh
    monkeypatch.setattr(features_module, "psd_eigh", lambda K, rcond: (sizes.append(K.shape[0]), eigh(K, rcond))[1])
    def spying(orig):  # the fits of the selection: its paths' state fits and its refits
        def spy(self, X, Y):
            out = orig(self, X, Y)
            seen.append(self.output_sketch_matrix_)
            return out
        return spy

    for name in ("fit", "fit_state"):
        monkeypatch.setattr(SISOKR, name, spying(getattr(SISOKR, name)))
    sel = _search(_estimators()["SISOKR"], data, SelectionCache(), None)
    assert sizes == [20, 40]  # the curve's two points only
    assert sel["best_params"]["m_y"] == 40 and "plateau_sketch" not in sel["perfect_h"]
    assert len(seen) >= 3
    for R in seen:
        np.testing.assert_array_equal(R.toarray(), seen[0].toarray())


@pytest.mark.parametrize("output_sketch", ["subsample", "psg"])
def test_a_sketched_fit_computes_only_its_sketches_columns(data, output_sketch):
    """The kernels' sample checks at fit take the sketches' own support points: through a
    cache, a SISOKR fit computes the kernel columns of its two supports and no other."""
    Xtr, Ytr, _, _ = data
    cache = SelectionCache()
    X, Y = cache.samples(Xtr), cache.samples(Ytr)
    est = SISOKR(input_kernel=cache.kernel(GaussianKernel(gamma=0.3)),
                 output_kernel=cache.kernel(GaussianKernel(gamma=0.5)), input_sketch="subsample", m_x=20,
                 output_sketch=output_sketch, m_y=15, output_sketch_params={"p": 0.1} if output_sketch == "psg" else None,
                 random_state=0).fit(X, Y)
    support = np.unique(est.input_sketch_matrix_.indices).size + np.unique(est.output_sketch_matrix_.indices).size
    assert cache.stats["columns_computed"] == support < 2 * len(X)
