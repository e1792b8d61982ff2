"""The lam path on a rank-deficient Gram: the eigenpairs of its range only, the null space implicit."""
import numpy as np
import pytest
from sklearn.base import clone

from sprokr import IOKR, ISOKR
from sprokr.kernels import resolve_kernel
from sprokr.model_selection import kernel_loss_scorer, lambda_path, retrieval_scorer, surrogate_error
from sprokr.model_selection import _systems
from sprokr.models import KernelRidgeRegressor

LAMS = np.logspace(-7, -1, 7)


def test_gram_eigh_through_the_rank():
    r = np.random.default_rng(0)
    X = r.standard_normal((300, 12))
    G = X @ X.T  # rank 12
    s, W, complete = _systems.gram_eigh(G)
    assert not complete and W.shape == (300, 12)
    np.testing.assert_allclose(W.T @ W, np.eye(12), atol=1e-12)
    np.testing.assert_allclose((W * s) @ W.T, G, atol=1e-11 * np.abs(G).max())
    np.testing.assert_allclose(np.sort(s), np.linalg.eigvalsh(G)[-12:], rtol=1e-10)
    K = np.asarray(resolve_kernel("gaussian", {"gamma": 0.5}, "input", np.dtype(np.float64)).pairwise(X, X))
    s, W, complete = _systems.gram_eigh(K)  # full rank: the full eigendecomposition
    assert complete and W.shape == (300, 300)


@pytest.fixture(params=["low-rank", "full"])
def route(request, monkeypatch):
    if request.param == "full":
        monkeypatch.setattr(_systems, "LOW_RANK_FRACTION", 0.0)
    return request.param


@pytest.mark.parametrize("name", ["IOKR", "ISOKR"])
def test_iokr_path_on_a_linear_kernel_equals_refits(multilabel_data, route, name):
    Xtr, Ytr, Xv, Yv = multilabel_data  # 6 input features: the 180 x 180 Gram has rank 6
    # ISOKR's sketched outputs score through the coordinates (n_val x m x p, then x n_c)
    est = IOKR(input_kernel="linear", output_kernel_params={"gamma": 0.5}) if name == "IOKR" else \
        ISOKR(input_kernel="linear", output_kernel_params={"gamma": 0.5}, output_sketch="subsample", m_y=30,
              random_state=0)
    refits = [clone(est).set_params(lam=lam).fit(Xtr, Ytr) for lam in LAMS]
    path = lambda_path(est, Xtr, Ytr, LAMS, "eigh")
    losses = path.losses(Xv, Yv)
    assert path.system.complete == (route == "full")  # (factorised by the first scoring)
    np.testing.assert_allclose(losses, [surrogate_error(m, Xv, Yv) for m in refits], rtol=1e-7)
    for i in (0, 3, 6):
        np.testing.assert_allclose(path.estimator_at(LAMS[i]).predict_coordinates(Xv),
                                   refits[i].predict_coordinates(Xv), rtol=1e-6, atol=1e-8)
    _, first = np.unique(Yv, axis=0, return_index=True)
    Xd, Yd = Xv[np.sort(first)], Yv[np.sort(first)]
    scorer = retrieval_scorer("mrr")
    fast = path.scores(Xd, Yd, scoring=scorer)
    np.testing.assert_allclose(fast, [scorer(path.estimator_at(lam), Xd, Yd) for lam in LAMS], atol=1e-12)


def test_vector_path_on_a_linear_kernel_equals_refits(route):
    r = np.random.default_rng(3)
    X = r.standard_normal((260, 4))
    T = X @ r.standard_normal((4, 3)) + 0.3 * r.standard_normal((260, 3))
    est = KernelRidgeRegressor(kernel="linear")
    refits = [clone(est).set_params(lam=lam).fit(X[:200], T[:200]) for lam in LAMS]
    path = lambda_path(est, X[:200], T[:200], LAMS, "eigh")
    np.testing.assert_allclose(path.losses(X[200:], T[200:]),
                               [-kernel_loss_scorer(m, X[200:], T[200:]) for m in refits], rtol=1e-7)
    assert path.system.complete == (route == "full")
    np.testing.assert_allclose(path.estimator_at(LAMS[2]).predict(X[200:]), refits[2].predict(X[200:]),
                               rtol=1e-6, atol=1e-8)


def test_in_place_symmetrisation_equals_the_copy():
    r = np.random.default_rng(4)
    for m in (5, 512, 1300):
        M = r.standard_normal((m, m))
        want = _systems.symmetric(M)
        assert want is not M
        got = _systems.symmetric(M, overwrite=True)
        assert got is M
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["IOKR", "ISOKR"])
def test_queries_outside_the_grams_range(multilabel_data, route, name):
    """A precomputed rank-6 training Gram with query rows that are not in its range: the
    null-space term (1 / (n lam) on the query's component outside the range) carries weight."""
    Xtr, Ytr, Xv, Yv = multilabel_data
    _, first = np.unique(Yv, axis=0, return_index=True)
    Xv, Yv = Xv[np.sort(first)], Yv[np.sort(first)]
    K = Xtr @ Xtr.T
    Q = Xv @ Xtr.T + 0.05 * np.random.default_rng(9).standard_normal((len(Xv), len(Xtr)))
    kw = {"input_kernel": "precomputed", "output_kernel_params": {"gamma": 0.5}}
    est = IOKR(**kw) if name == "IOKR" else ISOKR(**kw, output_sketch="subsample", m_y=30, random_state=0)
    lams = np.logspace(-5, -1, 5)
    refits = [clone(est).set_params(lam=lam).fit(K, Ytr) for lam in lams]
    path = lambda_path(est, K, Ytr, lams, "eigh")
    np.testing.assert_allclose(path.losses(Q, Yv), [surrogate_error(m, Q, Yv) for m in refits], rtol=1e-7)
    assert path.system.complete == (route == "full")
    scorer = retrieval_scorer("mrr")
    np.testing.assert_allclose(path.scores(Q, Yv, scoring=scorer), [scorer(m, Q, Yv) for m in refits], atol=1e-12)


def test_vector_path_with_queries_outside_the_grams_range(route):
    r = np.random.default_rng(3)
    X = r.standard_normal((260, 4))
    T = X @ r.standard_normal((4, 3)) + 0.3 * r.standard_normal((260, 3))
    K, Q = X[:200] @ X[:200].T, X[200:] @ X[:200].T + 0.05 * r.standard_normal((60, 200))
    est = KernelRidgeRegressor(kernel="precomputed")
    refits = [clone(est).set_params(lam=lam).fit(K, T[:200]) for lam in LAMS]
    path = lambda_path(est, K, T[:200], LAMS, "eigh")
    np.testing.assert_allclose(path.losses(Q, T[200:]), [-kernel_loss_scorer(m, Q, T[200:]) for m in refits],
                               rtol=1e-7)
    assert path.system.complete == (route == "full")
