"""Sketched kernel machines: exactness, solvers, robustness, quantiles, output matrices, errors."""
import warnings

import networkx as nx
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.kernel_ridge import KernelRidge

from sprokr.kernels.vector import GaussianKernel
from sprokr.metrics import crossing_loss
from sprokr.models import (
    JointQuantileRegressor,
    RFFKernelMachine,
    SketchedKernelMachine,
    graph_laplacian_matrix,
    joint_quantile_matrix,
)

KP = {"sigma2": 2.0}  # gamma = 0.25


@pytest.fixture
def toy(rng):
    X = rng.uniform(-2, 2, size=(200, 3))
    f = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1]
    return X, f


def brute_force_decomposable(X, Y, Xq, lam, M, gamma=0.25):
    """Exact vv-KRR with K = k M: (K (x) I + n lam I (x) M^-1) vec(A M) = vec(Y)."""
    n, d = Y.shape
    K = np.exp(-gamma * ((X[:, None] - X[None]) ** 2).sum(-1))
    big = np.kron(K, np.eye(d)) + n * lam * np.kron(np.eye(n), np.linalg.inv(M))
    AM = np.linalg.solve(big, Y.ravel()).reshape(n, d)
    Kq = np.exp(-gamma * ((Xq[:, None] - X[None]) ** 2).sum(-1))
    return Kq @ AM


def test_closed_form_equals_exact_krr_with_identity_sketch(toy, rng):
    X, f = toy
    Y = np.c_[f, -f + rng.standard_normal(200) * 0.1]
    Xq = rng.uniform(-2, 2, size=(40, 3))
    lam = 1e-3
    ref = KernelRidge(alpha=200 * lam, kernel="rbf", gamma=0.25).fit(X, Y).predict(Xq)
    for sketch in (None, "identity"):
        model = SketchedKernelMachine(kernel_params=KP, lam=lam, input_sketch=sketch).fit(X, Y)
        np.testing.assert_allclose(model.predict(Xq), ref, atol=1e-8)
    scalar = SketchedKernelMachine(kernel_params=KP, lam=lam, input_sketch="identity").fit(X, Y[:, 0])
    assert scalar.predict(Xq).shape == (40,)
    np.testing.assert_allclose(scalar.predict(Xq), ref[:, 0], atol=1e-8)


@pytest.mark.parametrize("sketch", [None, "identity"])
def test_decomposable_output_matrix_matches_brute_force(sketch, rng):
    X = rng.uniform(-2, 2, size=(40, 2))
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1]), X[:, 0] * X[:, 1]] + 0.05 * rng.standard_normal((40, 3))
    Xq = rng.uniform(-2, 2, size=(10, 2))
    M = graph_laplacian_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]), mu=0.6)
    model = SketchedKernelMachine(kernel_params=KP, lam=1e-2, input_sketch=sketch, output_matrix=M).fit(X, Y)
    np.testing.assert_allclose(model.predict(Xq), brute_force_decomposable(X, Y, Xq, 1e-2, M), atol=1e-7)


def test_adam_reaches_closed_form_on_square_loss(toy, rng):
    X, f = toy
    y = f + 0.1 * rng.standard_normal(200)
    common = dict(kernel_params=KP, lam=1e-2, input_sketch="psr", m_x=40, input_sketch_params={"p": 0.05},
                  random_state=3)
    exact = SketchedKernelMachine(**common).fit(X, y)
    Xq = rng.uniform(-2, 2, size=(100, 3))
    scale = np.abs(exact.predict(Xq)).max()
    # full batch: Adam from zero converges to the closed-form solution
    full = SketchedKernelMachine(**common, optimizer="adam", init="zeros", learning_rate=0.05, batch_size=200,
                                 max_epochs=1000, tol=1e-7, n_iter_no_change=8).fit(X, y)
    # converged_ is the certificate, not the step size running out
    assert full.n_epochs_ > 10 and full.objective_gap_ < 1e-3
    assert full.converged_ == (full.objective_gap_ <= 1e-7)
    assert np.abs(full.predict(Xq) - exact.predict(Xq)).max() < 5e-3 * scale
    # mini-batches: the objective gets within 0.5 % of the closed-form optimum, never below it
    optimum = SketchedKernelMachine(**common, optimizer="adam", max_epochs=1).fit(X, y).objective_[0]
    mini = SketchedKernelMachine(**common, optimizer="adam", init="zeros", learning_rate=0.05, batch_size=64,
                                 max_epochs=400, tol=1e-7, n_iter_no_change=8).fit(X, y)
    assert mini.objective_[0] > 2 * optimum
    assert optimum * (1 - 1e-9) <= min(mini.objective_) < optimum * 1.005
    assert np.abs(mini.predict(Xq) - exact.predict(Xq)).max() < 0.1 * scale


def test_pinball_median_and_upper_quantile(rng):
    X = rng.uniform(-2, 2, size=(400, 1))
    noise = rng.exponential(size=400)  # skewed: median log 2 ~ 0.69, mean 1
    y = np.sin(2 * X[:, 0]) + noise
    fits = {}
    for tau in (0.5, 0.9):
        model = SketchedKernelMachine(kernel_params={"sigma2": 0.5}, lam=1e-4, loss="pinball",
                                      loss_params={"tau": tau}, input_sketch="subsample", m_x=60,
                                      random_state=0).fit(X, y)
        fits[tau] = model.predict(X)
        assert abs(np.mean(y < fits[tau]) - tau) < 0.06
    square = SketchedKernelMachine(kernel_params={"sigma2": 0.5}, lam=1e-4, input_sketch="subsample", m_x=60,
                                   random_state=0).fit(X, y).predict(X)
    # the median fit tracks f + log 2, the least-squares fit f + 1
    assert np.mean(np.abs(fits[0.5] - np.sin(2 * X[:, 0]) - np.log(2))) < 0.15
    assert np.mean(square - fits[0.5]) > 0.2


def test_huber_is_robust_to_outliers(rng):
    X = rng.uniform(-2, 2, size=(300, 1))
    f = np.sin(2 * X[:, 0])
    y = f + 0.1 * rng.standard_normal(300)
    bad = rng.choice(300, 30, replace=False)
    y[bad] += 30.0  # 10 % gross outliers
    Xq = np.linspace(-2, 2, 200)[:, None]
    common = dict(kernel_params={"sigma2": 0.5}, lam=1e-3, input_sketch="psr", m_x=60, input_sketch_params={"p": 0.05},
                  random_state=0)
    sq = SketchedKernelMachine(**common).fit(X, y).predict(Xq)
    hub = SketchedKernelMachine(**common, loss="huber", loss_params={"kappa": 0.5}).fit(X, y).predict(Xq)
    truth = np.sin(2 * Xq[:, 0])
    err_sq, err_hub = np.sqrt(np.mean((sq - truth) ** 2)), np.sqrt(np.mean((hub - truth) ** 2))
    assert err_sq > 2.0  # the outliers drag the least-squares fit up by ~3
    assert err_hub < 0.5 and err_hub < err_sq / 5


def test_epsilon_insensitive_and_exact_nonsmooth(toy, rng):
    X, f = toy
    y = f + 0.05 * rng.standard_normal(200)
    svr = SketchedKernelMachine(kernel_params=KP, lam=1e-3, loss="epsilon_insensitive",
                                loss_params={"epsilon": 0.1}, random_state=0).fit(X, y)  # exact (Cholesky features)
    assert svr.rank_ == 200
    assert np.sqrt(np.mean((svr.predict(X) - f) ** 2)) < 0.15


def test_hinge_classification(rng):
    X = rng.standard_normal((200, 2))
    y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4, 1.0, -1.0)
    clf = SketchedKernelMachine(kernel_params={"sigma2": 0.5}, lam=1e-4, loss="hinge", input_sketch="psg", m_x=50,
                                input_sketch_params={"p": 0.05}, random_state=0).fit(X, y)
    assert np.mean(np.sign(clf.predict(X)) == y) > 0.9


def test_joint_quantile_regressor(rng):
    X = rng.uniform(0, 1, size=(400, 1))
    y = np.sin(4 * X[:, 0]) + (0.2 + X[:, 0]) * rng.standard_normal(400)  # heteroscedastic
    taus = (0.1, 0.5, 0.9)
    jq = JointQuantileRegressor(taus=taus, gamma_tau=1.0, kernel_params={"sigma2": 0.1}, lam=1e-4,
                                input_sketch="psr", m_x=50, input_sketch_params={"p": 0.05}, random_state=0).fit(X, y)
    Q = jq.predict(X)
    assert Q.shape == (400, 3)
    np.testing.assert_allclose([np.mean(y < Q[:, j]) for j in range(3)], taus, atol=0.06)
    assert crossing_loss(Q, taus) < 0.01
    # wider interval where the noise is larger
    width = Q[:, 2] - Q[:, 0]
    assert width[X[:, 0] > 0.8].mean() > 1.5 * width[X[:, 0] < 0.2].mean()
    np.testing.assert_allclose(jq.output_matrix_, joint_quantile_matrix(taus, 1.0))


@pytest.mark.parametrize("sketch", [None, "subsample"])
def test_joint_quantile_regressor_takes_sparse_inputs(rng, sketch):
    """Sparse X as in every other kernel machine (it was refused): the same model as on the
    dense array, up to the solver's tolerance (kernel values rounded in another order)."""
    import scipy.sparse as sp

    X = rng.uniform(0, 1, size=(120, 6))
    X[X < 0.6] = 0
    y = X @ np.arange(1.0, 7.0) + 0.1 * rng.standard_normal(120)
    make = lambda: JointQuantileRegressor(taus=(0.2, 0.8), lam=1e-3, input_sketch=sketch,  # noqa: E731
                                          m_x=40 if sketch else None, random_state=0)
    dense, sparse = make().fit(X, y), make().fit(sp.csr_matrix(X), y)
    Q = sparse.predict(sp.csr_matrix(X[:10]))
    assert Q.shape == (10, 2) and sparse.converged_
    np.testing.assert_allclose(Q, dense.predict(X[:10]), atol=1e-3 * np.abs(y).max())


def test_sketched_kernel_only_evaluates_selected_columns(toy):
    X, f = toy
    calls = []

    class Recording(GaussianKernel):
        def pairwise(self, A, B):
            calls.append(B.shape[0])
            return super().pairwise(A, B)

    model = SketchedKernelMachine(kernel=Recording(sigma2=2.0), lam=1e-3, input_sketch="psr", m_x=20,
                                  input_sketch_params={"p": 0.01}, chunk_size=50, random_state=0).fit(X, f)
    m_prime = model.sketch_matrix_.indices.size
    assert m_prime < 100 and max(calls) == m_prime  # never the n training columns
    model.predict(X[:7])
    assert calls[-1] == m_prime


def test_rff_approaches_exact_krr(toy, rng):
    X, f = toy
    Xq = rng.uniform(-2, 2, size=(50, 3))
    exact = SketchedKernelMachine(kernel_params=KP, lam=1e-3).fit(X, f).predict(Xq)
    errs = [np.abs(RFFKernelMachine(kernel_params={"sigma2": 2.0}, n_components=s, lam=1e-3, random_state=0).fit(X, f)
                   .predict(Xq) - exact).mean() for s in (20, 2000)]
    assert errs[1] < errs[0] / 3 and errs[1] < 0.05


def test_sklearn_conventions_and_reproducibility(toy):
    X, f = toy
    X0, f0 = X.copy(), f.copy()
    M = np.eye(1)
    model = SketchedKernelMachine(kernel_params=KP, loss="huber", input_sketch="psg", m_x=30,
                                  input_sketch_params={"p": 0.05}, output_matrix=M, random_state=7)
    params = model.get_params()
    assert model.fit(X, f) is model
    assert model.get_params() == params
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(f, f0)
    np.testing.assert_array_equal(M, np.eye(1))
    again = clone(model).fit(X, f)
    np.testing.assert_array_equal(model.predict(X), again.predict(X))
    other = clone(model).set_params(random_state=8).fit(X, f)
    assert not np.array_equal(other.predict(X), model.predict(X))
    assert 0.9 < model.score(X, f) <= 1.0


def test_graph_laplacian_matrix():
    P = np.array([[0, 1, 1], [1, 0, 0], [1, 0, 0]], dtype=float)
    np.testing.assert_allclose(graph_laplacian_matrix(P, mu=0.0), np.eye(3))
    G = nx.Graph([(0, 1), (0, 2)])
    M = graph_laplacian_matrix(G, mu=0.5)
    np.testing.assert_allclose(M, graph_laplacian_matrix(P, mu=0.5))
    L = np.diag(P.sum(1)) - P
    np.testing.assert_allclose(M @ (0.5 * L + 0.5 * np.eye(3)), np.eye(3), atol=1e-12)
    with pytest.raises(ValueError, match="mu"):
        graph_laplacian_matrix(P, mu=1.0)
    with pytest.raises(ValueError, match="symmetric"):
        graph_laplacian_matrix(np.triu(P), mu=0.5)


@pytest.mark.parametrize("kwargs, y_cols, match", [
    ({"output_matrix": np.eye(3)}, 2, "shape"),
    ({"output_matrix": np.array([[1.0, 2.0], [2.0, 1.0]])}, 2, "semi-definite"),
    ({"output_matrix": np.array([[1.0, 0.5], [0.0, 1.0]])}, 2, "symmetric"),
    ({"loss": "huber", "loss_params": {"kappa": -1.0}}, 1, "kappa"),
    ({"loss": "epsilon_insensitive", "loss_params": {"epsilon": -0.5}}, 1, "epsilon"),
    ({"loss": "pinball", "loss_params": {"tau": 1.5}}, 1, "inside"),
    ({"loss": "pinball", "loss_params": {"tau": [0.1, 0.5, 0.9]}}, 2, "quantile levels"),
    ({"loss": "huber", "optimizer": "closed_form"}, 1, "square"),
    ({"lam": -1.0}, 1, "lam"),
    ({"max_epochs": 0}, 1, "max_epochs"),
    ({"input_sketch": "psr", "m_x": 500}, 1, "larger"),
    ({"input_sketch_params": {"p": 2.0}}, 1, "input_sketch_params=.* was given but input_sketch is None"),
    ({"normalize_y": "yes"}, 1, "normalize_y"),
])
def test_bad_inputs_raise_before_any_state_change(kwargs, y_cols, match, toy):
    X, f = toy
    y = f if y_cols == 1 else np.c_[f, f]
    model = SketchedKernelMachine(kernel_params=KP, **kwargs)
    with pytest.raises(ValueError, match=match):
        model.fit(X, y)
    assert not hasattr(model, "coef_")


@pytest.mark.parametrize("taus", [(0.0, 0.5), (0.5, 1.0), (-0.1, 0.5), (0.7, 0.3)])
def test_joint_quantile_bad_levels(taus, toy):
    X, f = toy
    model = JointQuantileRegressor(taus=taus)
    with pytest.raises(ValueError):
        model.fit(X, f)
    assert not hasattr(model, "coef_")


@pytest.mark.parametrize("params, error, match", [
    ({"gamma_tau": -1.0}, ValueError, "gamma_tau must be >= 0"),
    ({"gamma_tau": np.nan}, ValueError, "gamma_tau must be a finite"),
    ({"gamma_tau": "abc"}, TypeError, "gamma_tau must be a finite real number >= 0"),
    ({"gamma_tau": None}, TypeError, "gamma_tau must be a finite real number >= 0"),
    ({"taus": (0.0, 0.5)}, ValueError, r"taus must lie strictly inside \(0, 1\)"),
    ({"taus": []}, ValueError, "taus must be a quantile level or a non-empty 1-D sequence"),
    ({"taus": [[0.1, 0.5]]}, ValueError, "taus must be a quantile level or a non-empty 1-D sequence"),
    ({"taus": "abc"}, TypeError, "taus must be a quantile level"),
    ({"taus": ["a", "b"]}, TypeError, "taus must be a quantile level"),
    ({"taus": [0.1, [0.2, 0.3]]}, ValueError, "taus must be .* ragged"),
    ({"taus": (0.7, 0.3)}, ValueError, "taus must be strictly increasing"),
])
def test_joint_quantile_parameters_are_named(params, error, match, toy):
    X, f = toy
    model = JointQuantileRegressor(**params)
    with pytest.raises(error, match=match):
        model.fit(X[:20], f[:20])
    assert not hasattr(model, "coef_")


def test_bad_targets(toy):
    X, f = toy
    with pytest.raises(ValueError, match=r"^y must hold scalar targets, shape \(n_samples,\)"):
        JointQuantileRegressor().fit(X[:20], np.c_[f[:20], f[:20]])
    with pytest.raises(ValueError, match="samples"):
        SketchedKernelMachine().fit(X, f[:-1])
    with pytest.raises(ValueError, match="NaN"):
        SketchedKernelMachine().fit(X, np.where(np.arange(200) == 3, np.nan, f))


def test_float32_sketched_closed_form_on_a_nearly_flat_kernel(rng):
    # sigma2 >> |x - x'|^2: R K R^T is numerically low-rank and float32 rounding makes the
    # normal equations indefinite unless the feature map truncates (rcond 1e-6) / falls back
    X = rng.standard_normal((600, 8))
    Y = np.c_[X[:, 0] + X[:, 1] ** 2, X[:, 2] * X[:, 3]]
    kw = dict(kernel_params={"sigma2": 1e2}, lam=1e-5, input_sketch="psr", m_x=60, input_sketch_params={"p": 0.03},
              random_state=0)
    p64 = SketchedKernelMachine(**kw).fit(X, Y).predict(X)
    m32 = SketchedKernelMachine(**kw, dtype="float32").fit(X, Y)
    assert m32.coef_.dtype == np.float64  # one policy: float32 blocks, float64 coefficients
    err = np.sqrt(np.mean((m32.predict(X) - p64) ** 2)) / np.std(Y)
    assert err < 0.05


def test_ridge_solver_falls_back_when_rounding_makes_the_system_indefinite():
    from sprokr.numerics import ridge_by_eigengroups

    U = np.linalg.qr(np.random.default_rng(0).standard_normal((5, 5)))[0]
    g = np.array([3.0, 1.0, 0.5, 0.0, -1e-3])  # a "PSD" G spoiled by rounding
    G, H = (U * g) @ U.T, np.arange(10.0).reshape(5, 2)
    C = ridge_by_eigengroups(G, H, n=1, lam=1e-4, V=np.eye(2), e=np.ones(2))
    gc = np.maximum(g, 0)
    np.testing.assert_allclose(C, U @ ((U.T @ H) / (gc + 1e-4)[:, None]), rtol=1e-10)


def test_exact_machine_survives_a_numerically_singular_system(rng, monkeypatch):
    """A tiny ridge on a flat kernel makes K + n lam I indefinite in floating point: the
    exact machine then solves through the eigenpairs instead of crashing in LAPACK."""
    import sprokr.models._kernel_machine_routes as routes  # the exact route's module

    failures = []
    original = routes.ridge_by_eigengroups

    def spy(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except np.linalg.LinAlgError:
            failures.append(kwargs.get("overwrite_g"))
            raise

    monkeypatch.setattr(routes, "ridge_by_eigengroups", spy)
    X = rng.standard_normal((300, 3))
    y = np.sin(X[:, 0])
    m = SketchedKernelMachine(kernel_params={"sigma2": 1e7}, lam=1e-30).fit(X, y)
    assert failures == [True]  # the in-place Cholesky failed, the fallback did not
    assert np.all(np.isfinite(m.predict(X)))


@pytest.mark.parametrize("make", [
    lambda **kw: SketchedKernelMachine(kernel_params=KP, lam=1e-3, **kw),
    lambda **kw: SketchedKernelMachine(kernel_params=KP, lam=1e-3, input_sketch="psg", m_x=60,
                                       input_sketch_params={"p": 0.05}, random_state=0, **kw),
    lambda **kw: RFFKernelMachine(kernel_params={"sigma2": 2.0}, n_components=80, lam=1e-3, random_state=0, **kw),
])
def test_normalize_y_makes_predictions_equivariant(make, toy):
    """With normalize_y, an affine change of the targets changes the predictions the same way
    (the square-loss problem is solved on standardised targets); the raw machine has no
    intercept, so a large offset costs it accuracy."""
    X, f = toy
    Xq = X[:50] + 0.05
    base = make(normalize_y=True).fit(X, f).predict(Xq)
    moved = make(normalize_y=True).fit(X, 1000.0 + 30.0 * f).predict(Xq)
    np.testing.assert_allclose(moved, 1000.0 + 30.0 * base, rtol=1e-6)
    raw = make().fit(X, 1000.0 + 30.0 * f).predict(Xq)
    truth = 1000.0 + 30.0 * (np.sin(2 * Xq[:, 0]) + 0.5 * Xq[:, 1])
    assert np.mean((moved - truth) ** 2) < 0.5 * np.mean((raw - truth) ** 2)


def test_normalize_y_quantiles_in_target_units(rng):
    X = rng.uniform(0, 1, (300, 1))
    y = 500.0 + 40.0 * X[:, 0] + 10.0 * rng.standard_normal(300)
    jq = JointQuantileRegressor(taus=(0.1, 0.5, 0.9), kernel_params={"sigma2": 0.5}, lam=1e-3,
                                normalize_y=True, random_state=0).fit(X, y)
    Q = jq.predict(X)
    assert jq.y_scale_.shape == (3,) and np.allclose(jq.y_mean_, y.mean())
    # empirical coverage of each level close to the level itself
    np.testing.assert_allclose((y[:, None] <= Q).mean(axis=0), [0.1, 0.5, 0.9], atol=0.06)


# --------------------------------------------------------------------------- solvers, checks


def test_adam_parameters_warn_with_another_solver(toy):
    X, f = toy
    kw = dict(kernel_params=KP, lam=1e-3, loss="huber", input_sketch="subsample", m_x=30, random_state=0)
    with pytest.warns(UserWarning, match="learning_rate, max_epochs are used by optimizer='adam' only"):
        SketchedKernelMachine(**kw, learning_rate=0.05, max_epochs=20).fit(X, f)
    with pytest.warns(UserWarning, match="batch_size is used by optimizer='adam' only"):
        RFFKernelMachine(n_components=20, loss="huber", batch_size=32, random_state=0).fit(X, f)
    with pytest.warns(UserWarning, match="n_iter_no_change"):
        JointQuantileRegressor(kernel_params=KP, input_sketch="subsample", m_x=30, optimizer="lbfgs", n_iter_no_change=3,
                               random_state=0).fit(X, f)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # Adam's own parameters, or the defaults: silent
        SketchedKernelMachine(**kw, optimizer="adam", learning_rate=0.05, max_epochs=2).fit(X, f)
        SketchedKernelMachine(**kw).fit(X, f)


@pytest.mark.parametrize("sketch", [None, "subsample"])
def test_fit_times_has_a_breakdown_per_phase(sketch, toy):
    X, f = toy
    kw = dict(kernel_params=KP, lam=1e-3, input_sketch=sketch, m_x=None if sketch is None else 40, random_state=0)
    square = SketchedKernelMachine(**kw).fit(X, f)
    huber = SketchedKernelMachine(**kw, loss="huber").fit(X, f)
    if sketch is None:
        assert set(square.fit_times_) == {"gram", "closed_form"}
        assert {"gram", "init", "features", "solve"} <= set(huber.fit_times_)
    else:
        assert any(k.startswith("ridge_") for k in square.fit_times_)  # the sketched ridge's phases
        assert {"features", "init", "solve"} <= set(huber.fit_times_)
    for m in (square, huber):
        assert all(v >= 0 for v in m.fit_times_.values()) and sum(m.fit_times_.values()) <= m.fit_time_
    assert huber.optimizer_ == "newton" and square.optimizer_ == "closed_form"


def _f32_case(rng, n=80):
    X, Xq = rng.normal(size=(n, 4)), rng.normal(size=(9, 4))
    return X, Xq, np.c_[np.sin(X[:, 0]), X[:, 1] * X[:, 2]]


def test_float32_exact_machine_falls_back_to_float64_when_its_estimate_says_so(rng, caplog):
    """The exact machine at lam = 1e-7 on a smooth kernel: float32 kernel values would move
    the predictions by ~1e-3; the measured estimate sees it, the model is refitted with float64
    kernel values (warning through the model's logger) and matches the float64 model."""
    import logging

    X, Xq, T = _f32_case(rng)
    kw = dict(kernel_params={"gamma": 1e-2}, lam=1e-7)
    m64 = SketchedKernelMachine(**kw).fit(X, T)
    assert m64.solver_error_estimate_ is None  # nothing to check in float64
    with caplog.at_level(logging.WARNING, logger="sprokr"):
        m32 = SketchedKernelMachine(**kw, dtype="float32").fit(X, T)
    assert m32.solver_error_estimate_ > 1e-4 and m32.dtype_ == np.float64
    assert any("refitted" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    assert {"float32_check", "float64_refit"} <= set(m32.fit_times_)
    ref = m64.predict(Xq)
    assert np.abs(m32.predict(Xq) - ref).max() <= 1e-6 * np.abs(ref).max()
    # the float32 solution it replaced was indeed off by more than the tolerance
    from sprokr.models.feature_problem import CHECK_SAFETY
    from sprokr.kernels import GaussianKernel
    k32 = GaussianKernel(gamma=1e-2, dtype="float32")
    X32, Xq32 = k32.prepare(X), k32.prepare(Xq)
    K32 = k32(X32, X32).astype(float)
    off = k32(Xq32, X32).astype(float) @ np.linalg.solve(K32 + 80 * 1e-7 * np.eye(80), T)
    assert np.abs(off - ref).max() / np.abs(ref).max() > 1e-4
    assert m32.solver_error_estimate_ / CHECK_SAFETY < 1.0  # an estimate, not a blow-up


@pytest.mark.parametrize("loss", ["square", "huber", "pinball"])
def test_float32_exact_machine_kept_where_accurate(loss, rng):
    X, Xq, T = _f32_case(rng)
    T = T[:, 0]
    kw = dict(kernel_params={"gamma": 1.0}, lam=1e-3, loss=loss)
    m64, m32 = SketchedKernelMachine(**kw).fit(X, T), SketchedKernelMachine(**kw, dtype="float32").fit(X, T)
    assert m32.dtype_ == np.float32 and 0 <= m32.solver_error_estimate_ <= 1e-4
    ref = m64.predict(Xq)
    # the certified solvers stop within tol = 1e-4 of the optimum: compare at that scale
    assert np.abs(m32.predict(Xq) - ref).max() <= (1e-4 if loss == "square" else 3e-2) * np.abs(ref).max()


def test_float32_estimate_bounds_the_true_change_over_a_sweep():
    """The calibration behind CHECK_SAFETY: over exact machines of 2 sizes x 4 kernel widths x
    4 ridges the estimate is at least the true change of test predictions that float32
    kernel values cause (closed form, computed here in float64 on the rounded values)."""
    from sprokr.kernels import GaussianKernel
    from sprokr.models.feature_problem import float32_prediction_estimate

    rng = np.random.default_rng(0)
    ratios = []
    for n, p in ((80, 4), (300, 10)):
        X, Xq = rng.normal(size=(n, p)), rng.normal(size=(9, p))
        T = np.c_[np.sin(X[:, 0]), X[:, 1] * X[:, 2]]
        for gamma in (1.0, 0.3, 1e-2, 1e-4):
            k64, k32 = GaussianKernel(gamma=gamma), GaussianKernel(gamma=gamma, dtype="float32")
            X32, Xq32 = k32.prepare(X), k32.prepare(Xq)
            for lam in (1e-3, 1e-5, 1e-7, 1e-8):
                ref = k64(Xq, X) @ np.linalg.solve(k64(X) + n * lam * np.eye(n), T)
                b32 = np.linalg.solve(k32(X32, X32).astype(float) + n * lam * np.eye(n), T)
                true = np.abs(k32(Xq32, X32).astype(float) @ b32 - ref).max() / np.abs(ref).max()
                est = float32_prediction_estimate(k32, k64, X32, b32, X32[:: max(1, n // 64)])
                ratios.append(est / true)
    assert min(ratios) >= 1.0, min(ratios)
    assert np.median(ratios) < 20  # not so pessimistic that float32 is always refused


def test_float32_rff_checked(rng):
    X, Xq, T = _f32_case(rng, n=200)
    m32 = RFFKernelMachine(n_components=50, lam=1e-3, dtype="float32", random_state=0).fit(X, T)
    m64 = RFFKernelMachine(n_components=50, lam=1e-3, random_state=0).fit(X, T)
    assert m32.dtype_ == np.float32 and m32.solver_error_estimate_ <= 1e-4
    ref = m64.predict(Xq)
    assert np.abs(m32.predict(Xq) - ref).max() <= 1e-4 * np.abs(ref).max()


def test_exact_machine_nonsmooth_loss_on_a_numerically_singular_gram(monkeypatch):
    """float32 kernel values of a smooth kernel make K numerically indefinite beyond the
    Cholesky features' jitter: the exact machine then uses the eigenpairs above rcond
    (rank < n) instead of crashing in LAPACK."""
    import sprokr.models.kernel_machine as km

    ranks = []
    spy_target = km.SketchedKernelMachine._solve_on_features

    def spy(self, Z, *args, **kwargs):
        ranks.append(Z.shape[1])
        return spy_target(self, Z, *args, **kwargs)

    monkeypatch.setattr(km.SketchedKernelMachine, "_solve_on_features", spy)
    X, _, T = _f32_case(np.random.default_rng(0))
    m = SketchedKernelMachine(kernel_params={"gamma": 1e-2}, lam=1e-3, loss="huber", dtype="float32").fit(X, T[:, 0])
    assert ranks[0] < 80  # the float32 fit ran on eigen features
    assert m.converged_ and np.all(np.isfinite(m.predict(X)))


def test_rff_refuses_inputs_whose_random_features_overflow():
    """Finite but huge inputs overflow ``x^T w``, and ``cos(inf)`` made every prediction NaN
    with only numpy's RuntimeWarnings (the other kernel models refuse them through their
    kernel values): now a ValueError naming the rows, at fit and at predict, the previous
    model intact."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    y = X.sum(axis=1)
    model = RFFKernelMachine(n_components=20, random_state=0).fit(X, y)
    before = model.predict(X[:5])
    bad = X.copy()
    bad[[4, 31]] = [[1e308, 0.0, 0.0], [0.0, -1e308, 1e308]]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow warning from numpy either
        with pytest.raises(ValueError, match=r"random Fourier features of 2 row\(s\) are not finite \(rows \[4, 31\]\)"):
            model.fit(bad, y)
        with pytest.raises(ValueError, match=r"rows \[1\]\).*rescale the inputs"):
            model.predict(bad[3:6])
    np.testing.assert_array_equal(model.predict(X[:5]), before)
    assert np.isfinite(RFFKernelMachine(n_components=20, random_state=0).fit(X * 1e200, y).predict(X[:3] * 1e200)).all()
