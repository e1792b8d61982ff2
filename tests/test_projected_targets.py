"""ProjectedTargets: a ridge fitted to Psi E^T scores as the DSOKR fitted to Psi."""
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.neural_network import MLPRegressor

from sprokr import DSOKR
from sprokr.model_selection import ProjectedTargets, retrieval_scorer


@pytest.fixture
def vector_outputs():
    r = np.random.default_rng(7)
    X = r.standard_normal((260, 5))
    Y = np.tanh(X @ r.standard_normal((5, 4))) + 0.1 * r.standard_normal((260, 4))
    return X[:200], Y[:200], X[200:], Y[200:]


def dsokr(kernel, reg, **params):
    return DSOKR(output_kernel=kernel, output_sketch="psg", m_y=60, output_sketch_params={"p": 0.2},
                 regressor=reg, regressor_params=params, random_state=3)


@pytest.mark.parametrize("kernel", ["gaussian", "linear"])
def test_projected_scores_equal_the_fitted_dsokr(vector_outputs, kernel):
    Xtr, Ytr, Xva, Yva = vector_outputs
    base = dsokr(kernel, "ridge", alpha=1e-2).fit(Xtr, Ytr)
    proj = ProjectedTargets(base, Ytr, Yva)
    assert proj.targets_.shape == (200, 60)
    Psi = base.embed_candidates(Ytr)[0]  # C = Psi E^T, formed explicitly
    E = base.make_candidate_index(Yva).gather_embeddings()
    np.testing.assert_allclose(proj.targets_, Psi @ E.T, rtol=1e-10, atol=1e-12 * np.abs(Psi @ E.T).max())
    feats = {"raw": (Xtr, Xva), "squares": (np.c_[Xtr, Xtr ** 2], np.c_[Xva, Xva ** 2])}
    scorer = retrieval_scorer("mrr")
    for name, (Ftr, Fva) in feats.items():
        for alpha in (1e-4, 1e-1, 10.0):
            model = dsokr(kernel, "ridge", alpha=alpha).fit(Ftr, Ytr)
            want = model.predict_scores(Fva, candidates=Yva)
            got = proj.scores(Ridge(alpha=alpha), Ftr, Fva)
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max(), err_msg=name)
            assert proj.score(Ridge(alpha=alpha), Ftr, Fva) == pytest.approx(scorer(model, Fva, Yva), abs=1e-12)
    # the identity holds for any regressor linear in its targets
    got = proj.scores(LinearRegression(), Xtr, Xva)
    want = DSOKR(output_kernel=kernel, output_sketch="psg", m_y=60, output_sketch_params={"p": 0.2},
                 regressor=LinearRegression(), random_state=3).fit(Xtr, Ytr).predict_scores(Xva, candidates=Yva)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())


def test_projected_targets_with_repeated_training_outputs(vector_outputs):
    Xtr, Ytr, Xva, Yva = vector_outputs
    Ytr = Ytr[np.random.default_rng(2).integers(0, 50, size=len(Ytr))]  # 50 distinct outputs
    base = dsokr("gaussian", "ridge", alpha=1e-3).fit(Xtr, Ytr)
    assert len(base.default_index_) == np.unique(Ytr, axis=0).shape[0] < 60
    proj = ProjectedTargets(base, Ytr, Yva)
    want = base.predict_scores(Xva, candidates=Yva)
    np.testing.assert_allclose(proj.scores(Ridge(alpha=1e-3), Xtr, Xva), want, rtol=1e-9,
                               atol=1e-9 * np.abs(want).max())


def test_projected_targets_refuse_a_nonlinear_regressor_and_wrong_rows(vector_outputs):
    Xtr, Ytr, Xva, Yva = vector_outputs
    proj = ProjectedTargets(dsokr("gaussian", "ridge").fit(Xtr, Ytr), Ytr, Yva)
    with pytest.raises(TypeError, match="regressor must be one of"):
        proj.scores(MLPRegressor(), Xtr, Xva)
    with pytest.raises(ValueError, match="F_train has 199 rows, expected 200"):
        proj.scores(Ridge(), Xtr[1:], Xva)
    with pytest.raises(ValueError, match="F_val has 59 rows, expected 60"):
        proj.scores(Ridge(), Xtr, Xva[1:])
    with pytest.raises(ValueError, match="Y_train has 199 samples"):
        ProjectedTargets(dsokr("gaussian", "ridge").fit(Xtr, Ytr), Ytr[1:], Yva)
    with pytest.raises(NotFittedError):
        ProjectedTargets(dsokr("gaussian", "ridge"), Ytr, Yva)
    with pytest.raises(ValueError, match="metric must be"):
        proj.score(Ridge(), Xtr, Xva, metric="auc")


@pytest.mark.parametrize("basis", ["cholesky", "eigh"])
def test_feature_inner_products_equal_the_product_of_the_features(vector_outputs, basis):
    from sprokr.kernels import resolve_kernel
    from sprokr.numerics import SketchedFeatures
    from sprokr.sketches import resolve_sketch

    Xtr, Ytr, Xva, Yva = vector_outputs
    ky = resolve_kernel("gaussian", {"gamma": 0.3}, "output", np.dtype(np.float64))
    R = resolve_sketch("psg", 60, {"p": 0.2}, 200, "output").draw(200, np.random.default_rng(0))
    f = SketchedFeatures(ky, R, ky.prepare_outputs(Ytr[R.indices]), np.float64, 1e-10, basis=basis).fit_basis()
    A, B = ky.prepare_outputs(Ytr), ky.prepare_outputs(Yva)
    want = f.transform(A) @ f.transform(B).T
    np.testing.assert_allclose(f.inner(A, B), want, rtol=1e-10, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("kernel", ["gaussian", "linear"])
def test_projected_targets_from_the_basis_alone_equal_the_fitted_dsokr(vector_outputs, kernel):
    from sprokr.kernels import resolve_kernel
    from sprokr.models.dsokr import sketched_output_basis
    from sprokr.sketches import resolve_sketch

    Xtr, Ytr, Xva, Yva = vector_outputs
    model = dsokr(kernel, "ridge", alpha=1e-2).fit(Xtr, Ytr)
    # the sketch the fit draws first from its seed, and the basis it builds on it
    R = resolve_sketch("psg", 60, {"p": 0.2}, 200, "output").draw(200, np.random.default_rng(3))
    ky = resolve_kernel(kernel, None, "output", np.dtype(np.float64))
    basis = sketched_output_basis(ky, R, Ytr)
    assert basis.rank == model.output_rank_
    proj = ProjectedTargets.from_features(basis, Ytr, Yva)
    np.testing.assert_allclose(proj.targets_, ProjectedTargets(model, Ytr, Yva).targets_, rtol=1e-9,
                               atol=1e-11 * np.abs(proj.targets_).max())
    want = model.predict_scores(Xva, candidates=Yva)
    np.testing.assert_allclose(proj.scores(Ridge(alpha=1e-2), Xtr, Xva), want, rtol=1e-9,
                               atol=1e-9 * np.abs(want).max())
