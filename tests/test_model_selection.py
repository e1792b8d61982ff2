"""Model selection: lam paths equal refits, LambdaSearchCV, select_model, scorers, errors."""
import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, PredefinedSplit

from sprokr import DSOKR, IOKR, ISOKR, SIOKR, SISOKR, SketchedKernelMachine
from sprokr.kernels import GaussianKernel, PrecomputedKernel
from sprokr.metrics import f1_samples_scorer, ranks_from_scores
from sprokr.model_selection import (
    LambdaSearchCV,
    check_lams,
    kernel_loss_scorer,
    lambda_path,
    retrieval_scorer,
    select_model,
    surrogate_error,
)
from sprokr.models import KernelRidgeRegressor, graph_laplacian_matrix
from sprokr.numerics import LocalExecutor

KX, KY = {"gamma": 0.1}, {"gamma": 0.5}
LAMS = np.logspace(-7, -1, 7)
ROOT = Path(__file__).resolve().parents[1]


def _iokr_family():
    return {
        "IOKR": IOKR(input_kernel_params=KX, output_kernel_params=KY),
        "SIOKR": SIOKR(m_x=60, input_kernel_params=KX, output_kernel_params=KY, random_state=0,
                       executor=LocalExecutor(order="shuffled", n_partitions=3, random_state=1)),
        "ISOKR": ISOKR(m_y=30, output_sketch="subsample", input_kernel_params=KX, output_kernel_params=KY,
                       random_state=0),
        "SISOKR": SISOKR(input_sketch="subsample", m_x=60, output_sketch="psg", m_y=30, output_sketch_params={"p": 0.05},
                         input_kernel_params=KX, output_kernel_params=KY, random_state=0),
    }


def _refit_coef(est, lam, X, Y):
    m = clone(est).set_params(lam=lam).fit(X, Y)
    return m, (m.coef_ if m.coef_ is not None else None)


@pytest.mark.parametrize("method", ["eigh", "cholesky"])
@pytest.mark.parametrize("name", ["IOKR", "SIOKR", "ISOKR", "SISOKR"])
def test_iokr_path_equals_refits(multilabel_data, name, method):
    Xtr, Ytr, Xv, Yv = multilabel_data
    est = _iokr_family()[name]
    # the path solves the normal equations for every lam: the refits take the same route
    # (solver="auto" may take the stable QR route, which differs by the normal equations'
    # rounding error -- see tests/test_numerics_reference.py)
    if "solver" in est.get_params():  # both path methods reproduce the Cholesky refits
        est = clone(est).set_params(solver="cholesky")
    refits = [clone(est).set_params(lam=lam).fit(Xtr, Ytr) for lam in LAMS]
    ref = np.array([surrogate_error(m, Xv, Yv) for m in refits])
    path = lambda_path(est, Xtr, Ytr, LAMS, method)
    losses = path.losses(Xv, Yv)
    assert path.method == method
    np.testing.assert_allclose(losses, ref, rtol=1e-7)
    assert np.argmin(losses) == np.argmin(ref)
    assert 0 < np.argmin(ref) < len(LAMS) - 1  # an interior optimum: the test can tell lams apart
    for i in (1, 4):
        copy = path.estimator_at(LAMS[i])
        assert copy.lam == LAMS[i] and copy is not path.estimator_at(LAMS[i + 1])
        if refits[i].coef_ is not None:  # exact IOKR keeps a Cholesky factor instead
            np.testing.assert_allclose(copy.coef_, refits[i].coef_, rtol=1e-6,
                                       atol=1e-7 * np.abs(refits[i].coef_).max())
        np.testing.assert_allclose(copy.predict_coordinates(Xv), refits[i].predict_coordinates(Xv),
                                   rtol=1e-6, atol=1e-8)
        np.testing.assert_array_equal(copy.predict(Xv), refits[i].predict(Xv))
    # the copies do not touch the fitted state they share
    assert path.estimator_.lam == LAMS.max()


def _vector_data(rng):
    X = rng.standard_normal((260, 5))
    W = rng.standard_normal((5, 3))
    T = np.sin(X @ W) + 0.3 * rng.standard_normal((260, 3))
    return X[:200], T[:200], X[200:], T[200:]


VECTOR_MODELS = {
    "krr": KernelRidgeRegressor(kernel_params={"gamma": 0.2}),
    "krr_sketch": KernelRidgeRegressor(kernel_params={"gamma": 0.2}, input_sketch="subsample", m_x=80,
                                       random_state=0),
    "machine": SketchedKernelMachine(kernel_params={"gamma": 0.2}, normalize_y=True),
    # a flatter kernel: the path must solve the refits' (whitened) closed form, not an eigenbasis
    "machine_sketch_flat": SketchedKernelMachine(kernel_params={"gamma": 0.01}, input_sketch="subsample", m_x=80,
                                                 normalize_y=True, random_state=0),
    "krr_sketch_flat": KernelRidgeRegressor(kernel_params={"gamma": 0.01}, input_sketch="subsample", m_x=80,
                                            random_state=0),
    "machine_sketch_M": SketchedKernelMachine(kernel_params={"gamma": 0.2}, input_sketch="subsample", m_x=80,
                                              output_matrix=graph_laplacian_matrix(np.ones((3, 3)) - np.eye(3), 0.5),
                                              normalize_y=True, random_state=0),
}


@pytest.mark.parametrize("method", ["eigh", "cholesky"])
@pytest.mark.parametrize("name", list(VECTOR_MODELS))
def test_vector_path_equals_refits(rng, name, method):
    Xtr, Ttr, Xv, Tv = _vector_data(rng)
    est = VECTOR_MODELS[name]
    lams = np.logspace(-6, 0, 7)
    refits = [clone(est).set_params(lam=lam).fit(Xtr, Ttr) for lam in lams]
    ref = np.array([-kernel_loss_scorer(m, Xv, Tv) for m in refits])
    path = lambda_path(est, Xtr, Ttr, lams, method)
    losses = path.losses(Xv, Tv)
    np.testing.assert_allclose(losses, ref, rtol=1e-7)
    assert 0 < np.argmin(ref) < len(lams) - 1 and np.argmin(losses) == np.argmin(ref)
    copy = path.estimator_at(lams[2])
    np.testing.assert_allclose(copy.predict(Xv), refits[2].predict(Xv), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_flat_kernel_path_ranks_like_refits(rng, dtype):
    """A nearly constant input kernel (Gaussian, gamma 1e-3 on 6-D data: k ~ 0.99) with lams down
    to 1e-12: the cross products are far from the whitened scale of R K R^T, yet the path
    reproduces the refits' validation losses (whitening by K~ = R K R^T does not: ~1e5 off)."""
    X = rng.standard_normal((400, 6))
    Y = (X @ rng.standard_normal((6, 8)) > 0.7).astype(np.int8)
    est = SISOKR(input_sketch="subsample", m_x=150, output_sketch="subsample", m_y=40, dtype=dtype,
                 input_kernel_params={"gamma": 1e-3}, output_kernel_params={"gamma": 0.5}, random_state=0)
    lams = np.logspace(-12, -2, 11)
    for method in ("eigh", "cholesky"):
        # the path solves the normal equations: compared with refits on the same route (the
        # stable QR route of solver="auto" differs at the smallest lams, where the normal
        # equations lose the answer -- see tests/test_numerics_reference.py)
        est.set_params(solver="cholesky")  # both path methods reproduce the Cholesky refits
        ref = np.array([surrogate_error(clone(est).set_params(lam=lam).fit(X[:300], Y[:300]), X[300:], Y[300:])
                        for lam in lams])
        losses = lambda_path(est, X[:300], Y[:300], lams, method).losses(X[300:], Y[300:])
        np.testing.assert_allclose(losses, ref, rtol=1e-4)
        assert np.argmin(losses) == np.argmin(ref)


@pytest.mark.parametrize("make", [
    lambda dt: IOKR(dtype=dt, input_kernel_params={"gamma": 1e-3}),
    lambda dt: KernelRidgeRegressor(kernel_params={"gamma": 1e-3, "dtype": dt}),
    lambda dt: SketchedKernelMachine(kernel_params={"gamma": 1e-3}, dtype=dt),
], ids=["IOKR", "KernelRidgeRegressor-kernel-dtype", "SketchedKernelMachine"])
def test_exact_float32_lam_path_is_computed_in_float64(rng, make):
    """An exact path solves every lam from one Gram: from float32 kernel values its small lams
    were off (IOKR's validation loss at lam = 1e-8 by 7 %, choosing 1e-6 instead of 1e-8).
    A float32 request's exact path is computed, and its models predict, in float64 (its
    float32 refits are checked and fall back there)."""
    X = rng.standard_normal((300, 6))
    Y = (X @ rng.standard_normal((6, 8)) > 0.7).astype(np.int8)
    T = np.c_[np.sin(X[:, 0]), X[:, 1] * X[:, 2]]
    target = Y if isinstance(make("float64"), IOKR) else T
    lams = [1e-8, 1e-6, 1e-3]
    p32 = lambda_path(make("float32"), X[:200], target[:200], lams)
    p64 = lambda_path(make("float64"), X[:200], target[:200], lams)
    np.testing.assert_allclose(p32.losses(X[200:], target[200:]), p64.losses(X[200:], target[200:]), rtol=1e-10)
    for lam in lams:
        m = p32.estimator_at(lam)
        assert m.dtype_ == np.float64
        assert m.get_params()["lam"] == lam


def test_float32_sketched_lam_path_models_predict_in_float64(rng):
    """A sketched path is computed in float64; its models predicted with float32 kernel
    values, unchecked (this flat Gaussian: up to 0.73 off at lam = 1e-8, 5e-4 at 1e-4, where
    a float32 fit checks its predictions and falls back to float64).  They predict in
    float64 now, as the float64 path's do."""
    X = rng.standard_normal((400, 6))
    T = np.c_[np.sin(X[:, 0]), X[:, 1] * X[:, 2]]
    kw = dict(kernel_params={"gamma": 1e-4}, input_sketch="subsample", m_x=120, random_state=0)
    lams = [1e-8, 1e-6, 1e-4]
    p32 = lambda_path(SketchedKernelMachine(dtype="float32", **kw), X[:300], T[:300], lams)
    p64 = lambda_path(SketchedKernelMachine(dtype="float64", **kw), X[:300], T[:300], lams)
    for lam in lams:
        m32, m64 = p32.estimator_at(lam), p64.estimator_at(lam)
        assert m32.dtype_ == np.float64
        P64 = m64.predict(X[300:])
        scale = np.abs(P64 - P64.mean(axis=0)).max()
        assert np.abs(m32.predict(X[300:]) - P64).max() <= 1e-9 * scale
    # the explicit routes keep their refits' precision
    Y = (X @ rng.standard_normal((6, 8)) > 0.7).astype(np.int8)
    est = SISOKR(dtype="float32", solver="cholesky", input_sketch="subsample", m_x=60, random_state=0)
    assert lambda_path(est, X[:300], Y[:300], lams).estimator_at(lams[0]).dtype_ == np.float32


def test_search_picks_the_known_best_lam(rng):
    """Noisy targets: small lam overfits, large lam underfits; the brute-force refits give the
    reference choice, and LambdaSearchCV must pick the same on the same split."""
    Xtr, Ttr, Xv, Tv = _vector_data(rng)
    est = KernelRidgeRegressor(kernel_params={"gamma": 0.5})
    lams = np.logspace(-8, 1, 19)
    ref = [-kernel_loss_scorer(clone(est).set_params(lam=lam).fit(Xtr, Ttr), Xv, Tv) for lam in lams]
    best = int(np.argmin(ref))
    assert 2 < best < len(lams) - 3
    for method in ("auto", "eigh", "cholesky", "refit"):
        s = LambdaSearchCV(est, lams, method=method).fit(Xtr, Ttr, validation_data=(Xv, Tv))
        assert s.best_lam_ == lams[best] and s.best_index_ == best
        np.testing.assert_allclose(-s.scores_, ref, rtol=1e-7)
        # refit on all the data given to fit, at the chosen lam
        np.testing.assert_allclose(s.predict(Xv), clone(est).set_params(lam=lams[best]).fit(Xtr, Ttr).predict(Xv))


def test_scorer_path_equals_refit_route(multilabel_data):
    Xtr, Ytr, _, _ = multilabel_data
    est = _iokr_family()["SISOKR"]
    kw = dict(lams=LAMS, scoring=f1_samples_scorer(), validation_fraction=0.3, random_state=0)
    fast = LambdaSearchCV(est, method="eigh", **kw).fit(Xtr, Ytr)
    slow = LambdaSearchCV(est, method="refit", **kw).fit(Xtr, Ytr)
    np.testing.assert_allclose(fast.scores_, slow.scores_)
    assert fast.best_lam_ == slow.best_lam_ and fast.method_ == "eigh" and slow.method_ == "refit"
    assert np.ptp(fast.scores_) > 0.05  # the metric sees the lam


def test_gridsearchcv_with_a_sprokr_scorer_makes_the_same_choice(multilabel_data):
    Xtr, Ytr, Xv, Yv = multilabel_data
    est = _iokr_family()["SIOKR"].set_params(executor="local")
    X, Y = np.vstack([Xtr, Xv]), np.vstack([Ytr, Yv])
    fold = PredefinedSplit(np.r_[np.full(len(Xtr), -1), np.zeros(len(Xv))])
    gs = GridSearchCV(est, {"lam": list(LAMS)}, scoring=f1_samples_scorer(), cv=fold).fit(X, Y)
    s = LambdaSearchCV(est, LAMS, scoring=f1_samples_scorer()).fit(Xtr, Ytr, validation_data=(Xv, Yv))
    np.testing.assert_allclose(s.scores_, gs.cv_results_["mean_test_score"])
    assert s.best_lam_ == gs.best_params_["lam"]


def test_gridsearchcv_over_kernel_parameters_with_an_inner_lam_search(multilabel_data):
    Xtr, Ytr, Xte, Yte = multilabel_data
    inner = LambdaSearchCV(_iokr_family()["SISOKR"], LAMS, validation_fraction=0.25, random_state=0)
    grid = [{"gamma": g} for g in (0.01, 0.1, 1.0)]
    gs = GridSearchCV(inner, {"estimator__input_kernel_params": grid}, scoring=kernel_loss_scorer, cv=2)
    gs.fit(Xtr, Ytr)
    best = gs.best_estimator_
    assert gs.best_params_["estimator__input_kernel_params"] in grid
    assert best.best_lam_ in LAMS and best.best_estimator_.n_train_ == len(Xtr)
    assert best.predict(Xte).shape == Yte.shape and np.isfinite(gs.cv_results_["mean_test_score"]).all()
    # the default score of the search is its kernel loss
    assert best.score(Xte, Yte) == pytest.approx(-surrogate_error(best.best_estimator_, Xte, Yte))


def test_refit_false_keeps_the_copy_and_leaves_the_estimator_untouched(multilabel_data):
    Xtr, Ytr, Xv, _ = multilabel_data
    est = _iokr_family()["ISOKR"]
    before = est.get_params()
    s = LambdaSearchCV(est, LAMS, refit=False, random_state=3).fit(Xtr, Ytr)
    assert est.get_params() == before and not hasattr(est, "coef_")
    assert s.best_estimator_.lam == s.best_lam_ and s.best_estimator_.n_train_ == s.n_train_ < len(Xtr)
    assert s.n_train_ + s.n_val_ == len(Xtr)
    top = s.predict_topk(Xv, k=3)
    assert top.indices.shape == (len(Xv), 3)
    assert s.predict_scores(Xv).shape == (len(Xv), len(s.best_estimator_.default_index_))


def test_seeded_reproducibility(multilabel_data):
    Xtr, Ytr, _, _ = multilabel_data
    est = SISOKR(input_sketch="subsample", m_x=50, output_sketch="subsample", m_y=20, input_kernel_params=KX,
                 output_kernel_params=KY)  # random_state None: drawn from the search's seed
    a = LambdaSearchCV(est, LAMS, random_state=7).fit(Xtr, Ytr)
    b = LambdaSearchCV(est, LAMS, random_state=7).fit(Xtr, Ytr)
    c = LambdaSearchCV(est, LAMS, random_state=8).fit(Xtr, Ytr)
    np.testing.assert_array_equal(a.scores_, b.scores_)
    assert a.best_lam_ == b.best_lam_
    np.testing.assert_array_equal(a.predict_coordinates(Xtr[:5]), b.predict_coordinates(Xtr[:5]))
    assert not np.allclose(a.scores_, c.scores_)
    r1 = select_model(est, Xtr, Ytr, LAMS, m_x_grid=[20, 40], random_state=5)
    r2 = select_model(est, Xtr, Ytr, LAMS, m_x_grid=[20, 40], random_state=5)
    assert r1["best_params"] == r2["best_params"] and r1["m_x"]["best_scores"] == r2["m_x"]["best_scores"]


@pytest.mark.parametrize("lams, match", [
    ([], "empty"), ([1e-3, 0.0], "> 0"), ([1e-3, -1.0], "> 0"), ([np.nan], "> 0"), ([np.inf], "> 0"),
    ([1e-3, 1e-3], "duplicate"), (["1e-3"], "real numbers"), ([True], "real numbers"), (None, "sequence"),
    (0.1, "sequence"), ("0.1", "sequence"),
])
def test_bad_grids_are_named(lams, match):
    with pytest.raises(ValueError, match=match):
        check_lams(lams)


def test_bad_arguments_are_named(multilabel_data):
    Xtr, Ytr, _, _ = multilabel_data
    est = _iokr_family()["SIOKR"]
    with pytest.raises(ValueError, match="lams"):
        LambdaSearchCV(est, [1e-3, -1e-3]).fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="'lam' parameter"):
        LambdaSearchCV(DSOKR(), LAMS).fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="scoring"):
        LambdaSearchCV(est, LAMS, scoring="no_such_metric").fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="validation_fraction"):
        LambdaSearchCV(est, LAMS, validation_fraction=1.5).fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="validation_data"):
        LambdaSearchCV(est, LAMS, validation_fraction=None).fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="method"):
        LambdaSearchCV(est, LAMS, method="qr").fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="refit"):
        LambdaSearchCV(est, LAMS, refit="yes").fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="different numbers of samples"):
        LambdaSearchCV(est, LAMS).fit(Xtr, Ytr, validation_data=(Xtr[:5], Ytr[:4]))
    with pytest.raises(ValueError, match="m_y_grid needs an estimator with an output sketch"):
        select_model(est, Xtr, Ytr, LAMS, m_y_grid=[10, 20])
    with pytest.raises(ValueError, match="increasing"):
        select_model(est, Xtr, Ytr, LAMS, m_x_grid=[40, 20])
    with pytest.raises(ValueError, match="metric"):
        retrieval_scorer("ndcg")


def test_retrieval_scorer_ranks_validation_outputs(multilabel_data):
    Xtr, Ytr, Xv, Yv = multilabel_data
    m = ISOKR(lam=1e-3, m_y=30, input_kernel_params=KX, output_kernel_params=KY, random_state=0).fit(Xtr, Ytr)
    S = m.predict_scores(Xv, candidates=Yv)
    ranks = ranks_from_scores(S, np.arange(len(Yv)))
    assert retrieval_scorer("mrr", query_batch=7)(m, Xv, Yv) == pytest.approx(np.mean(1 / ranks))
    assert retrieval_scorer("top_k", k=5)(m, Xv, Yv) == pytest.approx(np.mean(ranks <= 5))
    extra = retrieval_scorer("top_k", k=5, extra_candidates=Ytr)(m, Xv, Yv)
    assert extra <= np.mean(ranks <= 5)  # more distractors never help
    s = LambdaSearchCV(m, LAMS, scoring=retrieval_scorer("mrr"), random_state=0).fit(Xtr, Ytr)
    assert 0 < s.best_score_ <= 1


def test_select_model_chooses_sizes_and_returns_plain_data(rng):
    """Inputs in a 3-D subspace with a linear kernel: K has rank 3, so any m_x >= 3 sub-sample
    is an exact Nystrom basis and the growth stops; outputs in a 4-D subspace: the
    perfect-h projection error vanishes from m_y = 4."""
    n = 240
    Z = rng.standard_normal((n, 3))
    X = Z @ rng.standard_normal((3, 6))
    U = np.linalg.qr(rng.standard_normal((10, 4)))[0]
    Y = (Z @ rng.standard_normal((3, 4)) + 0.3 * rng.standard_normal((n, 4))) @ U.T
    est = SISOKR(input_kernel="linear", output_kernel="linear", input_sketch="subsample", m_x=2,
                 output_sketch="subsample", m_y=2, random_state=0)
    res = select_model(est, X, Y, LAMS, m_y_grid=[2, 4, 8, 16], m_x_grid=[2, 4, 8, 16, 32],
                       param_grid={"rcond": [1e-10, 1e-8]}, random_state=0)
    best = res["best_params"]
    assert res["perfect_h"]["plateau_m"] == 4 and best["m_y"] == 4
    assert res["m_x"]["stopped"] == "converged" and best["m_x"] == res["m_x"]["selected_m"] == 4
    assert res["m_x"]["best_scores"][0] < res["m_x"]["best_scores"][1]
    assert best["lam"] in LAMS and best["rcond"] in (1e-10, 1e-8) and len(res["grid"]) == 2
    json.dumps(res)  # plain data, for figures
    assert res["n_train"] + res["n_val"] == n
    model = clone(est).set_params(**best).fit(X, Y)
    assert model.input_sketch_matrix_.m == 4


def test_progress_is_logged_per_candidate(multilabel_data, caplog):
    Xtr, Ytr, _, _ = multilabel_data
    with caplog.at_level(logging.INFO, logger="sprokr"):
        LambdaSearchCV(_iokr_family()["ISOKR"], LAMS, random_state=0).fit(Xtr, Ytr)
    lines = [r.getMessage() for r in caplog.records if r.name == "sprokr.model_selection"]
    assert sum("lam=" in m and "kernel_loss" in m for m in lines) == len(LAMS)
    assert any("best lam" in m for m in lines)


def test_documented_example_runs(capsys):
    code = re.findall(r"```python\n(.*?)```", (ROOT / "docs/model_selection.md").read_text(), re.S)[0]
    exec(compile(code, "docs/model_selection.md example", "exec"), {})
    assert "chosen lam" in capsys.readouterr().out


def test_bibtex_benchmark_smoke(tmp_path):
    """benchmarks/model_selection_bibtex.py end to end on a tiny slice (the real run's numbers
    are in docs/model_selection.md): the JSON convention and the rows, not timings."""
    import subprocess
    import sys

    from sprokr.datasets import default_data_dir

    data = default_data_dir() / "bibtex"
    if not data.is_dir():
        pytest.skip("needs ../shared/data/bibtex")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "model_selection_bibtex.py"), "--data", str(data),
                          "--n-train", "400",
                          "--m-x", "60", "--m-y", "15", "--lams", "-6", "-2", "3", "--sigma2", "--brute-force",
                          "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(res) == {"paper", "path-kl/eigh", "path-kl/chol", "path-f1", "brute-f1"}
    assert res["path-kl/eigh"]["lam"] == res["path-kl/chol"]["lam"]
    assert res["path-f1"]["lam"] == res["brute-f1"]["lam"]  # the path and the refits agree
    assert all(0 < r["f1"] <= 1 and np.isfinite(r["fit_s"]) for r in res.values())


@pytest.mark.parametrize("method", ["eigh", "cholesky"])
@pytest.mark.parametrize("name", ["IOKR", "SIOKR", "ISOKR", "SISOKR", "IOKR-linear"])
def test_retrieval_path_equals_the_scorer_on_each_lam(multilabel_data, name, method):
    """The path scores a retrieval scorer from one factorisation: the same values as the
    scorer applied to the fitted copy at each lam (offsets of an unnormalised output kernel,
    distractors included)."""
    Xtr, Ytr, Xv, Yv = multilabel_data
    # distinct validation outputs: equal candidates tie, and which of two scores equal to
    # rounding ranks first is decided by the last bit of either route
    _, first = np.unique(Yv, axis=0, return_index=True)
    Xv, Yv = Xv[np.sort(first)], Yv[np.sort(first)]
    est = (IOKR(input_kernel_params=KX, output_kernel="linear") if name == "IOKR-linear"
           else _iokr_family()[name])
    extra = Ytr[~(Ytr[:, None, :] == Yv[None]).all(axis=2).any(axis=1)][:40]  # distractors, none equal to Yv
    for scorer in (retrieval_scorer("mrr"), retrieval_scorer("top_k", k=3, extra_candidates=extra)):
        path = lambda_path(est, Xtr, Ytr, LAMS, method)
        fast = path.scores(Xv, Yv, scoring=scorer)
        slow = [scorer(path.estimator_at(lam), Xv, Yv) for lam in LAMS]
        np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)
        assert np.ptp(fast) > 0  # the lams are told apart


def test_lam_path_direct_solve_falls_back_on_the_unfactorised_matrix():
    # the direct solve factorises its own copy of G(lam) in place; when that fails (an
    # indefinite G) the pseudo-inverse must be taken of G(lam), not of the failed factor
    from sprokr.model_selection._systems import RidgeSystem
    from sprokr.numerics import psd_eigh

    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    G0 = A @ A.T + np.eye(6)
    G0[5, 5] -= 40.0  # indefinite in its last pivot only: the failed factorisation has
    # already overwritten the first five columns
    B = rng.standard_normal((6, 2))
    system = RidgeSystem(10, G0, B)
    got = system.solver(1e-3)(B)
    U, d = psd_eigh(G0 + 10 * 1e-3 * np.eye(6))
    np.testing.assert_allclose(got, U @ ((U.T @ B) / d[:, None]), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(system.G0, 0.5 * (G0 + G0.T))  # the system's matrix is untouched


@pytest.mark.parametrize("estimator", [KernelRidgeRegressor(), SketchedKernelMachine(loss="square")],
                         ids=["krr", "skm"])
def test_validation_targets_of_another_width_are_refused(estimator):
    """A (n_val, 1) Y_val against 2 training columns was broadcast by the kernel loss and
    scored without an error (a choice made on the wrong targets)."""
    r = np.random.default_rng(0)
    X, Y = r.normal(size=(60, 3)), r.normal(size=(60, 2))
    for Yv in (Y[:10, :1], Y[:10, 0]):
        with pytest.raises(ValueError, match=r"validation_data: Y_val has shape .*expected shape \(n_val, 2\)"):
            select_model(estimator, X, Y, lams=[1e-3, 1e-1], validation_data=(X[:10], Yv))
        search = LambdaSearchCV(estimator, lams=[1e-3, 1e-1])
        with pytest.raises(ValueError, match="validation_data: Y_val"):
            search.fit(X, Y, validation_data=(X[:10], Yv))
        assert not hasattr(search, "best_lam_")
    select_model(estimator, X, Y, lams=[1e-3, 1e-1], validation_data=(X[:10], Y[:10]))


@pytest.mark.parametrize("estimator, name", [
    (KernelRidgeRegressor(kernel="precomputed"), "kernel"),
    (IOKR(input_kernel=PrecomputedKernel()), "input_kernel"),
    (IOKR(output_kernel="precomputed"), "output_kernel"),
], ids=["krr", "iokr-instance", "iokr-output"])
def test_lambda_search_refuses_to_split_a_precomputed_gram(estimator, name, monkeypatch):
    """A validation split takes rows of the Gram: blocks against all the samples, not a
    square training Gram.  It failed inside the path's first kernel block ("Gram rows failed
    on rows 0-48 ... it is a (48, 60) block"); it is refused before any work, naming
    validation_fraction and the estimator's kernel, and a previous search is intact."""
    import sprokr.model_selection._search as search_module

    r = np.random.default_rng(0)
    X, Y = r.normal(size=(60, 3)), r.normal(size=(60, 2))
    search = LambdaSearchCV(KernelRidgeRegressor(), lams=[1e-3, 1e-1], random_state=0).fit(X, Y)
    before = search.predict(X[:5])
    G = X @ X.T
    Xg, Yg = (X, G) if name == "output_kernel" else (G, Y)

    def no_path(*args, **kwargs):
        raise AssertionError("the lam path ran before the kernel was checked")

    monkeypatch.setattr(search_module, "lambda_path", no_path)
    with pytest.raises(ValueError, match=f"validation_fraction: .*the estimator's {name} is 'precomputed'.*"
                                         f"give validation_data"):
        search.set_params(estimator=estimator).fit(Xg, Yg)
    np.testing.assert_array_equal(search.predict(X[:5]), before)


def test_lambda_search_on_a_precomputed_gram_with_validation_data():
    """The route the refusal above points to: the training Gram and the validation block
    against the training samples search as the kernel itself does on the vectors."""
    r = np.random.default_rng(0)
    X, y = r.normal(size=(60, 3)), r.normal(size=60)
    tr, va = np.arange(45), np.arange(45, 60)
    k = GaussianKernel(gamma=0.5)
    pre = LambdaSearchCV(KernelRidgeRegressor(kernel="precomputed"), lams=LAMS).fit(
        k.pairwise(X[tr], X[tr]), y[tr], validation_data=(k.pairwise(X[va], X[tr]), y[va]))
    vec = LambdaSearchCV(KernelRidgeRegressor(kernel=k), lams=LAMS).fit(X[tr], y[tr], validation_data=(X[va], y[va]))
    assert pre.best_lam_ == vec.best_lam_
    np.testing.assert_allclose(pre.scores_, vec.scores_, rtol=1e-8)


def test_select_model_refuses_to_split_a_precomputed_gram(monkeypatch):
    """select_model splits as LambdaSearchCV does: a precomputed Gram, on the estimator or set
    by a param_grid point, is refused before any path runs (it failed inside the first
    point's kernel block), naming validation_fraction and the kernel."""
    import sprokr.model_selection._search as search_module

    r = np.random.default_rng(0)
    X = r.normal(size=(60, 3))
    G, Y = X @ X.T, r.normal(size=(60, 2))

    def no_path(*args, **kwargs):
        raise AssertionError("the lam path ran before the kernel was checked")

    monkeypatch.setattr(search_module, "lambda_path", no_path)
    with pytest.raises(ValueError, match="validation_fraction: .*the estimator's input_kernel is 'precomputed'"):
        select_model(SISOKR(input_kernel="precomputed"), G, Y, lams=[1e-3])
    with pytest.raises(ValueError, match="validation_fraction: .*the estimator's input_kernel is 'precomputed'"):
        select_model(SISOKR(), G, Y, lams=[1e-3],
                     param_grid=[{"input_kernel": ["gaussian"]}, {"input_kernel": ["precomputed"]}])
