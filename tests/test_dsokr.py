"""DSOKR: equivalence with ISOKR, isometry of psi~, ensembles, regressor checks."""
import numpy as np
import pytest
from sklearn.base import BaseEstimator

from sprokr import DSOKR, DSOKREnsemble, ISOKR, SISOKR
from sprokr.kernels import BUILTIN_KERNELS
from sprokr.models.dsokr import sketched_output_targets
from sprokr.models.regressors import KernelRidgeRegressor, torch_available
from sprokr.registry import get_registry
from sprokr.sketches import GaussianSketch, SubSample


@pytest.mark.parametrize("repeated", [False, True], ids=["distinct", "repeated-outputs"])
@pytest.mark.parametrize("sketch", ["subsample", "gaussian"])
def test_kernel_ridge_dsokr_equals_isokr(multilabel_data, sketch, repeated):
    Xtr, Ytr, Xte, _ = multilabel_data
    if repeated:  # 20 label sets among 180 samples: both models collapse the output sketch
        Ytr = Ytr[np.random.default_rng(5).integers(0, 20, size=len(Ytr))]
    iso = ISOKR(input_kernel="gaussian", output_kernel="gaussian", lam=1e-3, output_sketch=sketch, m_y=40,
                random_state=3).fit(Xtr, Ytr)
    ds = DSOKR(output_kernel="gaussian", output_sketch=sketch, m_y=40, regressor="kernel_ridge",
               regressor_params={"kernel": "gaussian", "lam": 1e-3}, random_state=3).fit(Xtr, Ytr)
    assert ds.output_rank_ == iso.output_rank_
    if repeated:  # equal support outputs share one kernel column in both models
        assert ds.output_features_.R.indices.size == iso.output_features_.R.indices.size < 40
    np.testing.assert_allclose(ds.predict_coordinates(Xte), iso.predict_coordinates(Xte), atol=1e-9)
    np.testing.assert_array_equal(ds.predict(Xte), iso.predict(Xte))
    a, b = ds.predict_topk(Xte, k=3), iso.predict_topk(Xte, k=3)
    np.testing.assert_array_equal(a.indices, b.indices)


def test_kernel_ridge_with_input_sketch_equals_sisokr(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    sis = SISOKR(input_kernel="gaussian", output_kernel="gaussian", lam=1e-3, input_sketch="subsample",
                 m_x=60, output_sketch="subsample", m_y=30, random_state=5).fit(Xtr, Ytr)
    # SISOKR draws the input sketch, then the output sketch, from one generator seeded 5:
    # the regressor gets a fresh generator seeded 5 (same input sketch) and DSOKR the
    # generator advanced past that first draw (same output sketch).
    rng = np.random.default_rng(5)
    Rx = SubSample(m=60).draw(len(Xtr), rng)
    reg = KernelRidgeRegressor(kernel="gaussian", lam=1e-3, input_sketch=SubSample(m=60),
                               random_state=np.random.default_rng(5))
    ds = DSOKR(output_kernel="gaussian", output_sketch="subsample", m_y=30, regressor=reg, random_state=rng)
    ds.fit(Xtr, Ytr)
    np.testing.assert_array_equal(ds.regressor_.sketch_matrix_.indices, Rx.indices)
    np.testing.assert_allclose(ds.predict_coordinates(Xte), sis.predict_coordinates(Xte), atol=1e-7)


def test_psi_tilde_isometry_on_sketched_span(rng):
    """<psi~(a), psi~(b)> = <P psi(a), P psi(b)> and = k(a, b) for a, b in span(R psi(Y))."""
    Y = rng.standard_normal((80, 5))
    k = BUILTIN_KERNELS["gaussian"](gamma=0.3)
    R = GaussianSketch(m=25).draw(80, np.random.default_rng(0))
    feats, Psi, r = sketched_output_targets(k, R, k.prepare(Y))
    K = k(Y)
    # basis vectors e_j = sum_i B_ij psi(y_i), B = R^T basis: elements of the span
    B = R.toarray().T @ feats.basis_  # (n, p)
    # Gram of the basis is the identity (orthonormal basis)
    np.testing.assert_allclose(B.T @ K @ B, np.eye(feats.rank), atol=1e-8)
    # for two elements f = B a, g = B b of the span: <f, g>_H = a^T b
    a, b = rng.standard_normal(feats.rank), rng.standard_normal(feats.rank)
    np.testing.assert_allclose((B @ a) @ K @ (B @ b), a @ b, atol=1e-8)
    # psi~(y) are the coordinates of the projection: |psi~|^2 <= k(y, y) and r = residual
    assert np.all(r >= 0) and np.all(np.einsum("ij,ij->i", Psi, Psi) <= 1 + 1e-10)
    # with R of full rank the span holds every psi(y_i): inner products are exactly K
    full = SubSample(m=80).draw(80, np.random.default_rng(1))  # R full rank: span = all psi(y_i)
    f2, P2, r2 = sketched_output_targets(k, full, k.prepare(Y))
    np.testing.assert_allclose(P2 @ P2.T, K, atol=1e-7)
    np.testing.assert_allclose(r2, 0, atol=1e-7)


def test_ensemble_of_one_equals_single(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    kw = dict(output_kernel="gaussian", output_sketch="subsample", m_y=30, regressor="kernel_ridge",
              regressor_params={"kernel": "gaussian", "lam": 1e-3}, random_state=7)
    single = DSOKR(**kw).fit(Xtr, Ytr)
    for agg in ("mean", "max"):
        ens = DSOKREnsemble([DSOKR(**kw)], aggregation=agg).fit(Xtr, Ytr)
        np.testing.assert_array_equal(ens.predict(Xte), single.predict(Xte))
        a, b = ens.predict_topk(Xte, k=4), single.predict_topk(Xte, k=4)
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_allclose(a.scores, b.scores, atol=1e-10)


def test_ensemble_predicts_with_the_aggregation_it_was_fitted_with(multilabel_data):
    """aggregation was read at predict time: a set_params, or a refit that fails on a bad
    value, silently changed a fitted ensemble's predictions."""
    Xtr, Ytr, Xte, _ = multilabel_data
    base = DSOKR(output_kernel="gaussian", output_sketch="subsample", m_y=20, regressor="kernel_ridge",
                 regressor_params={"kernel": "gaussian", "lam": 1e-3})
    ens = DSOKREnsemble(base, n_estimators=3, aggregation="mean", random_state=0).fit(Xtr, Ytr)
    S = ens.predict_scores(Xte)
    assert ens.aggregation_ == "mean"
    ens.set_params(aggregation="max")
    np.testing.assert_array_equal(ens.predict_scores(Xte), S)
    ens.set_params(aggregation="bogus")
    with pytest.raises(ValueError, match="aggregation"):
        ens.fit(Xtr, Ytr)
    np.testing.assert_array_equal(ens.predict_scores(Xte), S)
    assert not np.array_equal(ens.set_params(aggregation="max").fit(Xtr, Ytr).predict_scores(Xte), S)


def test_ensemble_mean_and_max_scores(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    base = DSOKR(output_kernel="linear", output_sketch="gaussian", m_y=6, regressor="kernel_ridge",
                 regressor_params={"kernel": "gaussian", "lam": 1e-3})
    ens = DSOKREnsemble(base, n_estimators=3, weights=[1, 2, 1], random_state=0).fit(Xtr, Ytr)
    assert len({tuple(e.output_sketch_matrix_.toarray()[0, :3]) for e in ens.estimators_}) == 3
    np.testing.assert_allclose(ens.weights_, [0.25, 0.5, 0.25])
    C = np.unique(Ytr[:50], axis=0)  # distinct candidates: no ties in the argmax
    Cl = BUILTIN_KERNELS["linear"]()
    off = -0.5 * Cl.diag(C.astype(float))
    S = [e.predict_coordinates(Xte) @ e.embed_candidates(C)[0].T for e in ens.estimators_]
    expected_mean = sum(w * s for w, s in zip(ens.weights_, S)) + off
    got = ens.predict_topk(Xte, candidates=C, k=1)
    np.testing.assert_array_equal(got.indices[:, 0], expected_mean.argmax(axis=1))
    np.testing.assert_allclose(got.scores[:, 0], expected_mean.max(axis=1), atol=1e-9)
    ens_max = DSOKREnsemble(base, n_estimators=3, aggregation="max", random_state=0).fit(Xtr, Ytr)
    S = np.max([e.predict_coordinates(Xte) @ e.embed_candidates(C)[0].T for e in ens_max.estimators_], axis=0) + off
    idx = ens_max.make_candidate_index(C)
    got = ens_max.predict_topk(Xte, candidates=idx, k=2)
    np.testing.assert_allclose(got.scores, -np.sort(-S, axis=1)[:, :2], atol=1e-9)
    with pytest.raises(ValueError, match="weights"):
        DSOKREnsemble(base, n_estimators=2, weights=[1, -1]).fit(Xtr, Ytr)


def test_ensemble_members_of_different_output_kernels_are_refused_before_any_fit(multilabel_data, monkeypatch):
    """The members' output kernels were compared after fitting every member: the work was
    wasted and the members (a list: the ensemble's own clones) fitted for nothing.  The
    check is made with the parameters, before any member's fit, and the previous fit of the
    ensemble is intact."""
    Xtr, Ytr, Xte, _ = multilabel_data
    kw = dict(output_sketch="subsample", m_y=10, regressor="kernel_ridge", regressor_params={"lam": 1e-3},
              random_state=0)
    ens = DSOKREnsemble([DSOKR(output_kernel="gaussian", **kw), DSOKR(output_kernel="gaussian", **kw)]).fit(Xtr, Ytr)
    S = ens.predict_scores(Xte)
    fits = []
    monkeypatch.setattr(DSOKR, "fit", lambda self, *a, **k: fits.append(self) or self)
    ens.set_params(estimator=[DSOKR(output_kernel="gaussian", **kw),
                              DSOKR(output_kernel="gaussian", output_kernel_params={"gamma": 2.0}, **kw)])
    with pytest.raises(ValueError, match=r"estimator: all ensemble members must use the same output kernel, "
                                         r"got member 0: GaussianKernel.*; member 1: GaussianKernel.*'gamma': 2\.0"):
        ens.fit(Xtr, Ytr)
    assert fits == []  # no member was fitted
    np.testing.assert_array_equal(ens.predict_scores(Xte), S)


class WrongWidth(BaseEstimator):
    def fit(self, X, T):
        self.p_ = T.shape[1]
        return self

    def predict(self, X):
        return np.zeros((len(X), self.p_ + 1))


def test_wrong_output_dimension_is_a_clear_error(multilabel_data):
    Xtr, Ytr, _, _ = multilabel_data
    ds = DSOKR(output_kernel="gaussian", output_sketch="subsample", m_y=20, regressor=WrongWidth(), random_state=0)
    with pytest.raises(ValueError, match=r"returned predictions of shape .* needs .* output_rank_"):
        ds.fit(Xtr, Ytr)
    assert not hasattr(ds, "regressor_")  # no state on failure


@pytest.mark.parametrize("rcond, msg", [(-1, "rcond must be >= 0"), ("abc", "rcond must be a finite real number"),
                                         (np.nan, "rcond must be a finite real number")])
def test_bad_rcond_is_named_before_any_state_changes(rcond, msg):
    r = np.random.default_rng(0)
    X, Y = r.standard_normal((12, 3)), r.standard_normal((12, 2))
    ds = DSOKR(m_y=5, regressor="kernel_ridge", random_state=0).fit(X, Y)
    before = ds.predict_coordinates(X)
    with pytest.raises(ValueError, match=msg):  # -1 was accepted, NaN failed deep in scikit-learn
        ds.set_params(rcond=rcond).fit(X, Y)
    np.testing.assert_array_equal(ds.predict_coordinates(X), before)


BAD_NUMERIC_X = {
    "1-D": (lambda X: X[:, 0], r"X must be a \(n_samples, n_features\) array, got shape \(12,\)"),
    "3-D": (lambda X: X[:, :, None], r"X must be a \(n_samples, n_features\) array, got shape \(12, 3, 1\)"),
    "strings": (lambda X: np.full(X.shape, "a"), "X must hold numbers"),
    "ragged": (lambda X: [list(x) if i else list(x[:2]) for i, x in enumerate(X)], "X must be .* ragged"),
    "complex": (lambda X: X + 1j, "Complex data not supported: X"),
    "huge": (lambda X: X * 1e200, "X holds values up to .* overflow float64 .* rescale X"),
}


@pytest.mark.parametrize("case", BAD_NUMERIC_X)
def test_numeric_regressor_inputs_are_checked_and_named(case):
    """A scikit-learn regressor (Ridge) takes numbers: DSOKR checks X at fit and predict
    (it used to pass on scikit-learn's, numpy's and scipy's messages, or predict from X * 1e200)."""
    r = np.random.default_rng(0)
    X, Y = r.standard_normal((12, 3)), r.standard_normal((12, 2))
    mutate, msg = BAD_NUMERIC_X[case]
    bad = mutate(X)
    ds = DSOKR(m_y=5, regressor="ridge", random_state=0).fit(X, Y)
    before = ds.predict_coordinates(X)
    with pytest.raises(ValueError, match=msg):
        ds.fit(bad, Y)
    np.testing.assert_array_equal(ds.predict_coordinates(X), before)  # no state changed
    with pytest.raises(ValueError, match=msg):
        ds.predict(bad)


def test_regressors_that_prepare_their_inputs_keep_non_numeric_inputs():
    """Kernel features of texts before a Ridge (a Pipeline), or a kernel ridge with a text
    kernel, take strings: X is not checked as numbers for them."""
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline

    from sprokr.kernels import KernelFeatures

    texts = ["a b", "c d e", "f g", "h", "i j", "k l m", "n", "o p"] * 2
    Y = np.random.default_rng(0).standard_normal((16, 2))
    for reg, params in ((make_pipeline(KernelFeatures("text", m_x=5, random_state=0), Ridge()), None),
                        ("kernel_ridge", {"kernel": "text"})):
        ds = DSOKR(m_y=5, regressor=reg, regressor_params=params, random_state=0).fit(texts, Y)
        assert ds.predict_coordinates(texts[:3]).shape == (3, ds.output_rank_)


def test_user_regressor_not_modified_and_params_untouched(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    reg = KernelRidgeRegressor(kernel="gaussian", lam=1e-2)
    ds = DSOKR(output_kernel="gaussian", m_y=20, regressor=reg, random_state=0)
    Y0 = Ytr.copy()
    ds.fit(Xtr, Ytr)
    assert not hasattr(reg, "coef_") and ds.regressor is reg
    np.testing.assert_array_equal(Ytr, Y0)
    assert ds.get_params()["m_y"] == 20


def test_mlp_early_stopping_and_validation_loss(multilabel_data, capsys):
    Xtr, Ytr, Xte, Yte = multilabel_data
    ds = DSOKR(output_kernel="gaussian", output_sketch="subsample", m_y=30, regressor="mlp",
               regressor_params={"hidden_layer_sizes": (32,), "max_epochs": 400, "n_iter_no_change": 5,
                                 "learning_rate": 1e-2},
               validation_fraction=0.25, random_state=0, verbose=1).fit(Xtr, Ytr)
    out = capsys.readouterr().err
    assert "val kernel loss" in out and "[sprokr.DSOKR] fit done" in out
    reg = ds.regressor_
    assert reg.n_epochs_ < 400  # stopped early
    vals = [v for _, v in reg.history_]
    # the best state is the last one that improved by more than the relative tolerance
    assert min(vals) <= reg.best_loss_ <= min(vals) * (1 + reg.tol) + 1e-12
    np.testing.assert_allclose(ds.validation_loss_, reg.best_loss_, rtol=1e-3)  # float32 network
    # the network learned something: better than predicting the mean target
    assert ds.validation_loss_ < reg.history_[0][1]
    # reproducible
    ds2 = DSOKR(**{**ds.get_params(), "verbose": 0}).fit(Xtr, Ytr)
    np.testing.assert_array_equal(ds2.predict_coordinates(Xte), ds.predict_coordinates(Xte))


def test_linear_kernel_explicit_features(rng):
    U = np.linalg.qr(rng.standard_normal((20, 3)))[0]
    X = rng.standard_normal((150, 4))
    Y = (X[:, :3] @ rng.standard_normal((3, 3))) @ U.T
    ds = DSOKR(output_kernel="linear", output_sketch="subsample", m_y=10, regressor="kernel_ridge",
               regressor_params={"kernel": "linear", "lam": 1e-8}, random_state=0).fit(X, Y)
    assert ds.output_rank_ == 3  # outputs span a 3-dimensional subspace
    E = ds.output_basis_vectors()
    np.testing.assert_allclose(E @ E.T, np.eye(3), atol=1e-8)
    np.testing.assert_allclose(ds.predict_features(X[:10]), Y[:10], atol=1e-5)


def test_builtin_regressors_registered():
    from sprokr.extras import BUILTIN_EXTRAS

    names = get_registry().names("regressor")
    assert {"kernel_ridge", "mlp", "ridge"} <= set(names)
    assert ("torch_mlp" in names) == torch_available()
    if torch_available():  # the packaging table names exactly the regressors registered with torch
        torch_names = {n for n in names if get_registry().get("regressor", n).factory.target.startswith(
            "sprokr.models.torch_regressors:")}
        assert torch_names == set(BUILTIN_EXTRAS["regressor"])


def test_torch_regressors_without_torch_name_the_missing_extra(multilabel_data, without_torch):
    """Without torch the torch regressors are not registered; asking for one said "unknown
    regressor 'torch_mlp'", as for a typo, with no word of torch."""
    from sprokr.extras import BUILTIN_EXTRAS
    from sprokr.models.torch_regressors import TorchRegressor

    Xtr, Ytr, _, _ = multilabel_data
    assert not torch_available() and not set(BUILTIN_EXTRAS["regressor"]) & set(get_registry().names("regressor"))
    for name in ("torch_mlp", "torch_smiles", "torch_text", "sprokr:torch_mlp"):
        with pytest.raises(ValueError, match=rf"the regressor '{name}' needs torch, which is not installed "
                                             rf"\(the torch extra\): pip install .*\[torch\].*; available regressors: "
                                             "kernel_ridge"):
            DSOKR(regressor=name, m_y=10).fit(Xtr, Ytr)
    with pytest.raises(ImportError, match=r"the torch regressors need torch.*pip install .*\[torch\]"):
        TorchRegressor(max_epochs=1).fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="unknown regressor 'torch_mlpp'"):  # a typo is still one
        DSOKR(regressor="torch_mlpp", m_y=10).fit(Xtr, Ytr)


def test_errors(multilabel_data):
    Xtr, Ytr, _, _ = multilabel_data
    with pytest.raises(ValueError, match="different numbers"):
        DSOKR().fit(Xtr, Ytr[:-1])
    with pytest.raises(ValueError, match="validation_fraction"):
        DSOKR(validation_fraction=1.5).fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="larger than"):
        DSOKR(m_y=10_000).fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="unknown regressor"):
        DSOKR(regressor="nope", m_y=10).fit(Xtr, Ytr)


@pytest.mark.skipif(not torch_available(), reason="torch not installed")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_torch_regressor_robust_losses(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    preds = {}
    for loss in ("square", "cauchy"):
        ds = DSOKR(output_kernel="gaussian", m_y=20, regressor="torch_mlp",
                   regressor_params={"loss": loss, "loss_delta": 0.2, "hidden_layer_sizes": (32,),
                                     "max_epochs": 15, "learning_rate": 1e-2, "batch_size": 64, "num_threads": 1},
                   validation_fraction=0.2, random_state=0).fit(Xtr, Ytr)
        preds[loss] = ds.predict_coordinates(Xte)
        assert ds.regressor_.n_epochs_ <= 15 and np.isfinite(ds.validation_loss_)
    assert not np.allclose(preds["square"], preds["cauchy"])
    with pytest.raises(ValueError, match="unknown loss"):
        DSOKR(m_y=20, regressor="torch_mlp", regressor_params={"loss": "nope"}).fit(Xtr, Ytr)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_mlp_surrogate_names_nonfinite_training_data(rng):
    """As the torch regressors: scikit-learn said "Input y contains NaN." for an infinite target
    too, and NaN offsets or eval_set targets were accepted (the validation loss NaN)."""
    from sprokr.models.regressors import MLPSurrogate

    X, T = rng.normal(size=(40, 3)), rng.normal(size=(40, 2))
    model = MLPSurrogate(hidden_layer_sizes=(8,), max_epochs=2, random_state=0).fit(X, T)
    before = model.predict(X[:5])
    Tinf = T.copy()
    Tinf[4, 0] = np.inf
    refused = [((X, Tinf), {}, "T contains 1 NaN or infinite value"),
               ((X, T), {"sample_offsets": np.r_[np.nan, np.zeros(39)]}, "sample_offsets contain 1 NaN"),
               ((X, T), {"sample_offsets": np.zeros(7)}, "sample_offsets must hold one value per sample"),
               ((X, T), {"eval_set": (X[:5], Tinf[:5])}, "eval_set targets contain 1 NaN or infinite value"),
               ((X, T), {"eval_set": (X[:5], T[:5], [0, 0, np.nan, 0, 0])}, "eval_set offsets contain 1 NaN")]
    for args, kwargs, match in refused:
        with pytest.raises(ValueError, match=match):
            model.fit(*args, **kwargs)
        np.testing.assert_array_equal(model.predict(X[:5]), before)


def test_mlp_convergence_flag_and_lr_drops(multilabel_data):
    """converged_ (and no ConvergenceWarning) only when training stopped on a plateau;
    lr_drops resumes from the best weights with a smaller step, never ending worse."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    Xtr, Ytr, _, _ = multilabel_data
    common = dict(output_kernel="gaussian", output_sketch="subsample", m_y=30, regressor="mlp",
                  validation_fraction=0.25, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_epochs=2"):
        short = DSOKR(**common, regressor_params={"hidden_layer_sizes": (16,), "max_epochs": 2}).fit(Xtr, Ytr)
    assert not short.regressor_.converged_ and short.regressor_.n_epochs_ == 2
    params = {"hidden_layer_sizes": (32,), "max_epochs": 400, "n_iter_no_change": 3, "learning_rate": 1e-2}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        plain = DSOKR(**common, regressor_params=params).fit(Xtr, Ytr)
        dropped = DSOKR(**common, regressor_params={**params, "lr_drops": 2}).fit(Xtr, Ytr)
    assert plain.regressor_.converged_ and dropped.regressor_.converged_
    assert dropped.regressor_.n_epochs_ > plain.regressor_.n_epochs_
    assert dropped.validation_loss_ <= plain.validation_loss_ * (1 + 1e-6)
    assert dropped.regressor_.best_epoch_ < dropped.regressor_.n_epochs_
    with pytest.raises(ValueError, match="lr_drops"):
        DSOKR(**common, regressor_params={"lr_drops": -1}).fit(Xtr, Ytr)


def test_self_retrieval_mrr_equals_the_retrieval_scorer(multilabel_data):
    """The MRR computed from validation targets alone equals decoding through the model."""
    from sprokr.model_selection import retrieval_scorer
    from sprokr.models.training import self_retrieval_mrr

    Xtr, Ytr, Xte, Yte = multilabel_data
    _, first = np.unique(Yte, axis=0, return_index=True)  # distinct outputs: no ties between candidates
    Xv, Yv = Xte[np.sort(first)], Yte[np.sort(first)]
    for kernel in ("gaussian", "linear"):  # normalised or not: k(c, c) = |psi~(c)|^2 + r(c)
        ds = DSOKR(output_kernel=kernel, output_sketch="subsample", m_y=25, regressor="kernel_ridge",
                   regressor_params={"kernel": "gaussian", "lam": 1e-2}, random_state=0).fit(Xtr, Ytr)
        Yp = ds.output_kernel_.prepare_outputs(Yv)
        Tv = ds.output_features_.transform(Yp)
        rv = ds.output_kernel_.diag(Yp) - np.einsum("ij,ij->i", Tv, Tv)
        got = self_retrieval_mrr(ds.predict_coordinates(Xv), Tv, rv, chunk=7)
        assert got == pytest.approx(retrieval_scorer("mrr")(ds, Xv, Yv), abs=1e-12)


def test_mlp_monitor_mrr(multilabel_data):
    Xtr, Ytr, _, _ = multilabel_data
    common = dict(output_kernel="gaussian", output_sketch="subsample", m_y=30, regressor="mlp",
                  validation_fraction=0.25, random_state=0)
    params = {"hidden_layer_sizes": (32,), "max_epochs": 300, "n_iter_no_change": 5, "learning_rate": 1e-2}
    ds = DSOKR(**common, regressor_params={**params, "monitor": "mrr"}).fit(Xtr, Ytr)
    reg = ds.regressor_
    assert reg.converged_ and 0 < reg.best_score_ <= 1
    assert reg.best_loss_ == reg.history_[reg.best_epoch_][1]  # the kernel loss of the kept epoch
    np.testing.assert_allclose(ds.validation_loss_, reg.best_loss_, rtol=1e-3)
    with pytest.raises(ValueError, match="monitor='mrr' needs validation data"):
        DSOKR(**{**common, "validation_fraction": None}, regressor_params={**params, "monitor": "mrr"}).fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="monitor must be one of"):
        DSOKR(**common, regressor_params={"monitor": "f1"}).fit(Xtr, Ytr)


def _peak_bytes(fn):
    import tracemalloc

    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_output_targets_are_the_only_n_by_p_array(dtype):
    """The training targets are written in place, in the requested precision: the pass's peak
    is Psi plus chunk-sized temporaries (the former stacked [Psi, r] rows and their copy
    took three float64 n x p arrays)."""
    n, m = 12000, 150
    Y = np.random.default_rng(0).standard_normal((n, 4))
    k = BUILTIN_KERNELS["gaussian"](gamma=0.2)
    R = SubSample(m=m).draw(n, np.random.default_rng(1))
    Yp = k.prepare(Y)
    (feats, Psi, r), peak = _peak_bytes(lambda: sketched_output_targets(k, R, Yp, chunk_size=500, dtype=dtype))
    assert Psi.dtype == dtype and Psi.flags.c_contiguous and r.dtype == np.float64
    assert peak < 1.5 * Psi.nbytes + 2**20, (peak, Psi.nbytes)
    # the values: the float64 coordinates rounded once; residuals from them
    _, P64, r64 = sketched_output_targets(k, R, Yp, chunk_size=500)
    np.testing.assert_array_equal(Psi, P64.astype(dtype))
    np.testing.assert_allclose(r, r64, atol=1e-6 if dtype == np.float32 else 0)
    np.testing.assert_allclose(r64, np.maximum(k.diag(Yp) - np.einsum("ij,ij->i", P64, P64), 0), atol=0)


def _standardised(T, rows):
    from sprokr.models.training import standardise, target_moments

    mu, scale = target_moments(T, rows=rows)
    return standardise(T, mu, scale), mu, scale


def test_standardised_targets_by_blocks_equal_the_whole_formula(rng):
    from sprokr.models.training import standardise, target_moments

    T = 3.0 + rng.standard_normal((1001, 7)) * np.arange(1, 8)
    Ts, mu, scale = _standardised(T, rows=64)
    mu0 = T.mean(axis=0)
    scale0 = float(np.sqrt(np.mean((T - mu0) ** 2)))
    np.testing.assert_allclose(mu, mu0, rtol=1e-14)
    assert scale == pytest.approx(scale0, rel=1e-13)
    assert Ts.dtype == np.float32
    np.testing.assert_allclose(Ts, ((T - mu0) / scale0).astype(np.float32), rtol=1e-6, atol=1e-7)
    # float32 targets: the arithmetic is float64 all the same
    Ts32, mu32, _ = _standardised(T.astype(np.float32), rows=64)
    assert mu32.dtype == np.float64
    np.testing.assert_allclose(Ts32, Ts, atol=1e-5)
    # the moments by other blocks, and a block standardised with them: the same numbers
    mu1, scale1 = target_moments(T, rows=100)
    np.testing.assert_allclose(mu1, mu, rtol=1e-14)
    assert scale1 == pytest.approx(scale, rel=1e-13)
    np.testing.assert_array_equal(standardise(T[10:20], mu, scale), Ts[10:20])
    # constant targets: scale 1, zeros
    Z, _, s1 = _standardised(np.ones((5, 2)), rows=64)
    assert s1 == 1.0 and not Z.any()


def test_mlp_standardises_its_targets_block_by_block(monkeypatch):
    """Beyond ``TARGET_BLOCK_ROWS`` rows the MLP trains on blocks of a fresh permutation per
    epoch, standardised as they are drawn: its fit holds no standardised copy of all the
    targets (the former whole float32 copy alone was 1.0x the targets), trains as well as the
    one-block fit, and is reproducible with its seed."""
    import warnings

    import sprokr.models.regressors as regressors
    from sprokr.models.regressors import MLPSurrogate

    rng = np.random.default_rng(0)
    n, p = 20000, 256
    X = rng.standard_normal((n, 10)).astype(np.float32)
    T = (np.tanh(X @ rng.standard_normal((10, p)))).astype(np.float32)
    fit = lambda: MLPSurrogate(hidden_layer_sizes=(64,), max_epochs=4, random_state=0).fit(X, T)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 4 epochs: not converged
        whole = fit()
        monkeypatch.setattr(regressors, "TARGET_BLOCK_ROWS", 2000)
        blocked, peak = _peak_bytes(fit)
        again = fit()
    assert peak < 0.75 * T.nbytes, peak / T.nbytes
    assert blocked.best_loss_ == pytest.approx(whole.best_loss_, rel=0.1)
    np.testing.assert_array_equal(blocked.predict(X[:50]), again.predict(X[:50]))
    assert np.mean((blocked.predict(X) - T) ** 2) < 0.5 * np.mean((T - T.mean(axis=0)) ** 2)


def test_dsokr_gives_a_float32_network_float32_targets(multilabel_data):
    from sprokr.models import MLPSurrogate

    class Recording(MLPSurrogate):
        def fit(self, X, T, sample_offsets=None, eval_set=None):
            self.seen_dtype_ = np.asarray(T).dtype
            return super().fit(X, T, sample_offsets=sample_offsets, eval_set=eval_set)

    Xtr, Ytr, Xte, _ = multilabel_data
    reg = Recording(hidden_layer_sizes=(16,), max_epochs=3, random_state=0)
    ds = DSOKR(output_kernel="gaussian", output_sketch="subsample", m_y=30, regressor=reg, random_state=0)
    ds.fit(Xtr, Ytr)
    assert ds.regressor_.seen_dtype_ == np.float32
    ridge = DSOKR(output_kernel="gaussian", output_sketch="subsample", m_y=30, regressor="kernel_ridge",
                  regressor_params={"kernel": "gaussian", "lam": 1e-3}, random_state=0).fit(Xtr, Ytr)
    assert ridge.predict_coordinates(Xte).dtype == np.float64


def test_target_precision_is_checked_before_any_work(multilabel_data):
    from sprokr.models import MLPSurrogate

    Xtr, Ytr, _, _ = multilabel_data
    k = BUILTIN_KERNELS["gaussian"](gamma=0.2)
    R = SubSample(m=10).draw(len(Ytr), np.random.default_rng(0))
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        sketched_output_targets(k, R, Ytr, dtype=np.int64)

    class Odd(MLPSurrogate):
        target_dtype = "int8"

    ds = DSOKR(output_kernel="gaussian", output_sketch="subsample", m_y=10, regressor=Odd(max_epochs=1))
    with pytest.raises(ValueError, match=r"Odd.target_dtype must be float32 or float64"):
        ds.fit(Xtr, Ytr)
    assert not hasattr(ds, "regressor_")


def test_mlp_surrogate_sets_n_features_in_and_names_itself_on_a_wrong_width():
    """As every estimator: ``n_features_in_`` after fit, and a wrong number of features is an
    error naming MLPSurrogate (it named the MLPRegressor inside)."""
    import warnings

    import scipy.sparse as sp

    from sprokr.models import MLPSurrogate

    rng = np.random.default_rng(0)
    X, T = rng.standard_normal((40, 4)), rng.standard_normal((40, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2 epochs: not converged
        m = MLPSurrogate(hidden_layer_sizes=(8,), max_epochs=2, random_state=0).fit(X, T)
        assert m.n_features_in_ == 4
        with pytest.raises(ValueError, match=r"^X has 3 features, but MLPSurrogate is expecting 4 features"):
            m.predict(X[:, :3])
        assert MLPSurrogate(hidden_layer_sizes=(8,), max_epochs=2).fit(sp.csr_matrix(X), T).n_features_in_ == 4
        # a refit on another width (its eval_set predicted against the previous fit's count)
        m.fit(X[:, :3], T, eval_set=(X[:10, :3], T[:10]))
        assert m.n_features_in_ == 3 and m.predict(X[:5, :3]).shape == (5, 2)


@pytest.mark.parametrize("regressor", ["kernel_ridge", "mlp"])
def test_validation_data_of_the_wrong_width_is_named(regressor):
    """A Y_val (or X_val) narrower than the training pairs: an error naming validation_data
    (it was the output kernel's "the two sample sets must have the same number of features"
    against the sketch's support, or the regressor's own "X has 3 features")."""
    import warnings

    rng = np.random.default_rng(0)
    X, Y = rng.random((40, 4)), rng.random((40, 5))
    params = {"max_epochs": 2} if regressor == "mlp" else None
    make = lambda: DSOKR(m_y=5, regressor=regressor, regressor_params=params, random_state=0)  # noqa: E731
    with pytest.raises(ValueError, match=r"^validation_data: Y_val has 3 columns, the training Y 5: "
                                         r"expected shape \(n_val, 5\)$"):
        make().fit(X, Y, validation_data=(X[:10], Y[:10, :3]))
    with pytest.raises(ValueError, match=r"^validation_data: X_val has 3 columns, the training X 4"):
        make().fit(X, Y, validation_data=(X[:10, :3], Y[:10]))
    with pytest.raises(ValueError, match=r"^validation_data: Y_val has 3 columns, the training Y 5"):
        DSOKREnsemble(make(), n_estimators=2, random_state=0).fit(X, Y, validation_data=(X[:10], Y[:10, :3]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2 epochs: not converged
        model = make().fit(X, Y, validation_data=(X[:10].tolist(), Y[:10]))  # the right widths, as lists
        assert model.validation_loss_ is not None
        make().fit(X, Y[:, 0], validation_data=(X[:10], Y[:10, 0]))  # scalar outputs
