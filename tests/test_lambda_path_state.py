"""A lam path's fit computes the model's state only (``fit_state``): one factorisation per
path, the same results as refits, and fitted copies that work like fitted models."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import sprokr
from sprokr import DSOKR, IOKR, ISOKR, SIOKR, SISOKR, SketchedKernelMachine
from sprokr.model_selection import lambda_path, retrieval_scorer, surrogate_error
from sprokr.models import KernelRidgeRegressor

KX, KY = {"gamma": 0.2}, {"gamma": 0.5}
LAMS = np.array([1e-1, 1e-3, 1e-5])


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((160, 4))
    Y = np.tanh(X[:, :3] + 0.3 * X[:, 1:]) + 0.05 * rng.standard_normal((160, 3))
    return X[:120], Y[:120], X[120:], Y[120:]


def _output_models():
    return {
        "IOKR": IOKR(input_kernel_params=KX, output_kernel_params=KY),
        "ISOKR": ISOKR(m_y=30, output_sketch="subsample", input_kernel_params=KX, output_kernel_params=KY,
                       random_state=0),
        "SIOKR": SIOKR(m_x=50, input_kernel_params=KX, output_kernel_params=KY, random_state=0),
        "SISOKR-subsample": SISOKR(input_sketch="subsample", m_x=50, output_sketch="psg", m_y=30,
                                   output_sketch_params={"p": 0.05}, input_kernel_params=KX,
                                   output_kernel_params=KY, random_state=0),
        "SISOKR-psparsified": SISOKR(input_sketch="psparsified", m_x=50, input_sketch_params={"p": 0.05},
                                     output_sketch="psg", m_y=30, output_sketch_params={"p": 0.05},
                                     input_kernel_params=KX, output_kernel_params=KY, random_state=0),
    }


def _vector_models():
    return {
        "KernelRidge": KernelRidgeRegressor(kernel_params=KX),
        "KernelRidge-sketched": KernelRidgeRegressor(kernel_params=KX, input_sketch="subsample", m_x=50,
                                                     random_state=0),
        "KernelMachine": SketchedKernelMachine(kernel_params=KX),
        "KernelMachine-sketched": SketchedKernelMachine(kernel_params=KX, input_sketch="subsample", m_x=50,
                                                        random_state=0),
    }


def _close(a, b, tol=1e-6):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert np.abs(a - b).max() <= tol * max(1.0, np.abs(b).max())


# ------------------------------------------------------------------ (a) unchanged results
@pytest.mark.parametrize("name", list(_output_models()))
def test_output_kernel_path_equals_refits(data, name, tmp_path):
    Xtr, Ytr, Xv, Yv = data
    est = _output_models()[name]
    path = lambda_path(est, Xtr, Ytr, LAMS, "eigh")
    refits = [clone(est).set_params(lam=lam).fit(Xtr, Ytr) for lam in LAMS]
    _close(path.losses(Xv, Yv), [surrogate_error(m, Xv, Yv) for m in refits])
    scorer = retrieval_scorer("mrr")
    _close(path.scores(Xv, Yv, scorer), [scorer(m, Xv, Yv) for m in refits])
    for lam, ref in zip(LAMS, refits):
        m = path.estimator_at(lam)
        assert m.lam == lam
        _close(m.predict_coordinates(Xv), ref.predict_coordinates(Xv))
        # (c) the default candidates (the distinct training outputs): no candidates given
        np.testing.assert_array_equal(m.predict(Xv), ref.predict(Xv))
        np.testing.assert_array_equal(m.predict_topk(Xv, k=3).indices, ref.predict_topk(Xv, k=3).indices)
        _close(m.predict_scores(Xv), ref.predict_scores(Xv))
        _close(m.predict_scores(Xv, candidates=Yv), ref.predict_scores(Xv, candidates=Yv))
        np.testing.assert_array_equal(m.predict(Xv, candidates=Yv), ref.predict(Xv, candidates=Yv))
        assert m.score(Xv, Yv) == pytest.approx(ref.score(Xv, Yv), rel=1e-6, abs=1e-9)
    assert path.estimator_.lam == LAMS.max()
    _close(path.estimator_.predict_coordinates(Xv), refits[0].predict_coordinates(Xv))
    # a fitted copy saves and loads like a fitted model
    m = path.estimator_at(LAMS[1])
    m.save(tmp_path / "model.sprokr")
    loaded = sprokr.load(tmp_path / "model.sprokr")
    np.testing.assert_array_equal(loaded.predict(Xv), m.predict(Xv))
    _close(loaded.predict_scores(Xv, candidates=Yv), m.predict_scores(Xv, candidates=Yv), 1e-12)


@pytest.mark.parametrize("name", list(_vector_models()))
def test_vector_path_equals_refits(data, name, tmp_path):
    Xtr, Ytr, Xv, Yv = data
    est = _vector_models()[name]
    path = lambda_path(est, Xtr, Ytr, LAMS, "eigh")
    refits = [clone(est).set_params(lam=lam).fit(Xtr, Ytr) for lam in LAMS]
    _close(path.losses(Xv, Yv), [np.mean(np.sum((m.predict(Xv) - Yv) ** 2, axis=1)) for m in refits])
    for lam, ref in zip(LAMS, refits):
        m = path.estimator_at(lam)
        _close(m.predict(Xv), ref.predict(Xv))
        assert m.score(Xv, Yv) == pytest.approx(ref.score(Xv, Yv), rel=1e-6)
        _close(m.coef_, ref.coef_, 1e-5)
    _close(path.scores(Xv, Yv, "r2"), [m.score(Xv, Yv) for m in refits])
    m = path.estimator_at(LAMS[1])
    m.save(tmp_path / "model.sprokr")
    np.testing.assert_array_equal(sprokr.load(tmp_path / "model.sprokr").predict(Xv), m.predict(Xv))


def test_dsokr_kernel_ridge_path_equals_dsokr_refits(data):
    """DSOKR has no lam of its own (no path); its kernel-ridge surrogate's path on DSOKR's
    targets gives the coordinates of DSOKR refits."""
    Xtr, Ytr, Xv, Yv = data
    reg = KernelRidgeRegressor(kernel_params=KX, input_sketch="subsample", m_x=50, random_state=0)
    dsokr = DSOKR(output_kernel_params=KY, output_sketch="subsample", m_y=30, regressor=reg, random_state=0)
    with pytest.raises(ValueError, match="no 'lam' parameter"):
        lambda_path(dsokr, Xtr, Ytr, LAMS)
    model = clone(dsokr).fit(Xtr, Ytr)
    Psi = model.output_features_.transform(model.output_kernel_.prepare_outputs(Ytr))
    path = lambda_path(reg, Xtr, Psi, LAMS, "eigh")
    for lam in LAMS:
        ref = clone(dsokr).set_params(regressor=clone(reg).set_params(lam=lam)).fit(Xtr, Ytr)
        _close(path.estimator_at(lam).predict(Xv), ref.predict_coordinates(Xv), 1e-5)


# ------------------------------------------------------------------ (b) one factorisation per path
def _count_factorisations(monkeypatch):
    """Counts the factorisations of a ridge system: the fits' solves (the exact factor, the
    sketched ridge, the kernel machine's closed form) and the path's (its eigendecomposition
    of G0, its Cholesky factorisations of G(lam), its direct solves)."""
    import sprokr.model_selection._systems as systems
    import sprokr.models._kernel_machine_routes as km
    import sprokr.models._sisokr_fit as sisokr_fit
    import sprokr.models.regressors as regressors

    calls = []

    def counted(module, name):
        fn = getattr(module, name)

        def wrapper(*a, **k):
            calls.append(name)
            return fn(*a, **k)

        monkeypatch.setattr(module, name, wrapper)

    for module, names in ((sisokr_fit, ("exact_ridge_factor", "sketched_ridge")),
                          (regressors, ("exact_ridge_factor", "sketched_ridge", "checked_exact_factor")),
                          (km, ("sketched_ridge", "ridge_by_eigengroups")),
                          (systems, ("gram_eigh", "cholesky_factor_inplace"))):
        for name in names:
            counted(module, name)
    solver = systems.RidgeSystem.solver
    monkeypatch.setattr(systems.RidgeSystem, "solver", lambda self, lam: (calls.append("solver"), solver(self, lam))[1])
    return calls


@pytest.mark.parametrize("name", ["IOKR", "ISOKR", "SISOKR-subsample", "SISOKR-psparsified", "KernelRidge",
                                  "KernelRidge-sketched", "KernelMachine", "KernelMachine-sketched"])
def test_a_path_factorises_once(data, name, monkeypatch):
    Xtr, Ytr, Xv, Yv = data
    est = {**_output_models(), **_vector_models()}[name]
    calls = _count_factorisations(monkeypatch)
    path = lambda_path(est, Xtr, Ytr, LAMS, "eigh")
    path.losses(Xv, Yv)
    assert len(calls) == 1, calls
    copy = path.estimator_at(LAMS[1])  # a fitted copy: the path's solution, no factorisation
    assert len(calls) == 1, calls
    assert copy.solver_ == "lam path (eigh)"  # its route named (the state solved nothing)


# ------------------------------------------------------------------ (c) the default index
def test_default_index_built_for_fitted_copies_only(data):
    Xtr, Ytr, Xv, Yv = data
    path = lambda_path(_output_models()["IOKR"], Xtr, Ytr, LAMS)
    path.losses(Xv, Yv)
    path.scores(Xv, Yv, retrieval_scorer("mrr"))
    assert path.state_.default_index_ is None and "default_index" not in path.times_
    ref = IOKR(input_kernel_params=KX, output_kernel_params=KY, lam=LAMS[2]).fit(Xtr, Ytr)
    m = path.estimator_at(LAMS[2])
    np.testing.assert_array_equal(m.predict(Xv), ref.predict(Xv))
    assert "default_index" in path.times_
    t = path.times_["default_index"]
    other = path.estimator_at(LAMS[0])  # built once: the copies share its embeddings
    assert other.default_index_.embeddings is m.default_index_.embeddings and path.times_["default_index"] == t
    _close(m.predict_weights(Xv), ref.predict_weights(Xv))


def test_default_index_false_is_kept(data):
    Xtr, Ytr, Xv, Yv = data
    est = clone(_output_models()["SISOKR-subsample"]).set_params(default_index=False)
    m = lambda_path(est, Xtr, Ytr, LAMS).estimator_at(LAMS[1])
    assert m.default_index_ is None
    with pytest.raises(ValueError, match="default_index=False"):
        m.predict(Xv)
    assert m.predict(Xv, candidates=Yv).shape == Yv.shape


# ------------------------------------------------------------------ fit_state itself
@pytest.mark.parametrize("name", list(_output_models()))
def test_fit_state_of_the_iokr_family(data, name):
    Xtr, Ytr, Xv, Yv = data
    est = _output_models()[name]
    state = clone(est).fit_state(Xtr, Ytr)
    fitted = clone(est).fit(Xtr, Ytr)
    assert state.coef_ is None and state.solver_ is None and state.output_rank_ == fitted.output_rank_
    for side in ("input_sketch_matrix_", "output_sketch_matrix_"):
        a, b = getattr(state, side), getattr(fitted, side)
        assert (a is None) == (b is None)
        if a is not None:  # the same random stream as fit
            np.testing.assert_array_equal(a.toarray(), b.toarray())
    with pytest.raises(NotFittedError, match="fit_state"):
        state.predict(Xv, candidates=Yv)
    with pytest.raises(NotFittedError, match="fit_state"):
        state.predict_coordinates(Xv)
    # the candidates' embeddings need the output side only
    _close(state.make_candidate_index(Yv).embeddings, fitted.make_candidate_index(Yv).embeddings, 1e-12)
    with pytest.raises(ValueError, match="120"):
        state.build_default_index(Ytr[:10])
    assert state.build_default_index(Ytr) is state
    np.testing.assert_array_equal(state.default_index_.candidates, fitted.default_index_.candidates)
    _close(state.default_index_.embeddings, fitted.default_index_.embeddings, 1e-12)
    assert state.n_distinct_outputs_ == fitted.n_distinct_outputs_
    coef = fitted.coef_ if fitted.coef_ is not None else np.linalg.inv(
        fitted.input_kernel_.pairwise(fitted.X_support_, fitted.X_support_) + 120 * fitted.lam * np.eye(120))
    copy = state.with_coef(coef, lam=fitted.lam)
    np.testing.assert_array_equal(copy.predict(Xv), fitted.predict(Xv))
    with pytest.raises(NotFittedError):
        clone(est).build_default_index(Ytr)


@pytest.mark.parametrize("name", list(_vector_models()))
def test_fit_state_of_the_vector_models(data, name):
    Xtr, Ytr, Xv, Yv = data
    est = _vector_models()[name]
    state = clone(est).fit_state(Xtr, Ytr)
    fitted = clone(est).fit(Xtr, Ytr)
    assert not hasattr(state, "coef_")
    with pytest.raises(NotFittedError):
        state.predict(Xv)
    copy = state.with_coef(fitted.coef_, lam=fitted.lam)
    _close(copy.predict(Xv), fitted.predict(Xv), 1e-12)
    # a state fit after a fit keeps no solution of the earlier one
    again = clone(est).fit(Xtr, Ytr).fit_state(Xtr, Ytr)
    assert not hasattr(again, "coef_")


def test_kernel_machine_fit_state_needs_the_closed_form(data):
    Xtr, Ytr, _, _ = data
    with pytest.raises(ValueError, match="closed form"):
        SketchedKernelMachine(loss="huber").fit_state(Xtr, Ytr[:, 0])


def test_lambda_search_without_refit_counts_the_default_index(data):
    """``LambdaSearchCV(refit=False)``: ``best_estimator_`` is the path's fitted copy, which
    builds the default index -- its seconds are in ``times_`` (they were left out: the
    times were copied before the copy was made), and the copy predicts without candidates."""
    from sprokr.model_selection import LambdaSearchCV

    Xtr, Ytr, Xv, Yv = data
    search = LambdaSearchCV(_output_models()["IOKR"], lams=LAMS, refit=False, random_state=0).fit(Xtr, Ytr)
    assert "default_index" in search.times_ and search.times_["default_index"] >= 0
    assert search.times_["total"] >= search.times_["default_index"]
    assert search.best_estimator_.predict(Xv).shape == Yv.shape


def test_a_fit_state_model_without_candidates_is_not_called_default_index_false(data):
    """A model from fit_state (default_index=True) has no index yet: predict without
    candidates said "fitted with default_index=False", which it was not."""
    X, Y = data[0], data[1]
    state = IOKR().fit_state(X, Y)
    with pytest.raises(ValueError, match="a model from fit_state builds none"):
        state.predict(X)
    with pytest.raises(ValueError, match="default_index=False"):
        IOKR(default_index=False).fit(X, Y).predict(X)
