"""float32 against float64 for every estimator that takes ``dtype`` (one float32 policy).

Exact solvers (IOKR, ISOKR, exact kernel ridge, the exact square-loss machine): float32
kernel values, float64 solves -- within 2x the *rounding floor*: the same formula
evaluated in float64 on the kernel values rounded to float32 (on a flat kernel with a tiny
ridge that floor is itself large; no float32 solver can beat it) -- and a measured check
that refits with float64 kernel values when float32 would cost more than 1e-4, so that
every model is within 1e-4 of float64 whatever the floor.  Sketched input (the ridge of
``sprokr.numerics.sketched_ridge``): within 1e-4 of float64 (SISOKR's whole matrix is in
``tests/test_reference_matrix.py``).
"""
import numpy as np
import pytest

from sprokr import IOKR, ISOKR, SIOKR
from sprokr.kernels import GaussianKernel
from sprokr.models import KernelRidgeRegressor, RFFKernelMachine, SketchedKernelMachine

CASES = {"well": (0.3, 1e-3), "moderate": (1e-2, 1e-6), "flat": (1e-4, 1e-8)}  # gamma, lam


def _data(seed=0, n=80):
    rng = np.random.default_rng(seed)
    X, Xq = rng.normal(size=(n, 4)), rng.normal(size=(9, 4))
    T = np.c_[np.sin(X[:, 0]), X[:, 1] * X[:, 2]]
    Y = (X @ rng.normal(size=(4, 3)) > 0).astype(float)
    return X, Xq, T, Y, np.unique(Y, axis=0)


def _rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def _ridge_hat(K, Kq, lam):
    """``Kq (K + n lam I)^-1`` in float64 (well conditioned: cond <= 1 + k_max / lam)."""
    n = K.shape[0]
    return np.linalg.solve(K + n * lam * np.eye(n), Kq.T).T


def _floor(gamma, lam, X, Xq, right):
    """Relative change of ``Kq (K + n lam I)^-1 right`` when the kernel values are float32."""
    k64, k32 = GaussianKernel(gamma=gamma), GaussianKernel(gamma=gamma, dtype="float32")
    X32, Xq32 = k32.prepare(X), k32.prepare(Xq)
    ref = _ridge_hat(k64(X), k64(Xq, X), lam) @ right
    rounded = _ridge_hat(k32(X32, X32).astype(float), k32(Xq32, X32).astype(float), lam) @ right
    return _rel(rounded, ref)


def _exact_models(gamma, lam):
    kx = {"gamma": gamma}
    return {
        "IOKR": lambda dt: IOKR(lam=lam, input_kernel_params=kx, output_kernel_params={"gamma": 0.5}, dtype=dt),
        "ISOKR": lambda dt: ISOKR(lam=lam, input_kernel_params=kx, output_kernel_params={"gamma": 0.5}, m_y=10,
                                  random_state=0, dtype=dt),
        "KernelRidgeRegressor": lambda dt: KernelRidgeRegressor(kernel_params=kx, lam=lam, dtype=dt),
        "SketchedKernelMachine": lambda dt: SketchedKernelMachine(kernel_params=kx, lam=lam, dtype=dt),
    }


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("name", list(_exact_models(1, 1)))
def test_exact_solvers_within_twice_the_float32_rounding_floor(case, name):
    gamma, lam = CASES[case]
    X, Xq, T, Y, C = _data()
    make = _exact_models(gamma, lam)[name]
    m64, m32 = make("float64").fit(X, Y if "OKR" in name else T), make("float32").fit(X, Y if "OKR" in name else T)
    if "OKR" in name:  # scores: the floor of the input side times the (float64) output side
        out, got = m64.predict_scores(Xq, C), m32.predict_scores(Xq, C)
        if m64.output_features_ is None:
            right = GaussianKernel(gamma=0.5)(Y, C)
        else:  # T_y psi(c) with the fitted output basis (both models draw the same sketch)
            f = m64.output_features_
            right = f.transform(Y) @ f.transform(C).T
    else:
        out, got, right = m64.predict(Xq), m32.predict(Xq), T
    floor = _floor(gamma, lam, X, Xq, right)
    assert _rel(got, out) <= 2 * floor + 1e-12, (_rel(got, out), floor)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("name", list(_exact_models(1, 1)))
def test_exact_solvers_float32_checked_and_within_1e_4(case, name, caplog):
    """The float32 check of the exact solvers: float32 kept where it is accurate (the
    well-conditioned case), float64 kernel values where not (the flat case, whose float32
    rounding floor is far above 1e-4), the estimate recorded and the choice logged."""
    gamma, lam = CASES[case]
    X, Xq, T, Y, C = _data()
    make = _exact_models(gamma, lam)[name]
    target = Y if "OKR" in name else T
    m64 = make("float64").fit(X, target)
    with caplog.at_level("WARNING"):
        m32 = make("float32").fit(X, target)
    est = m32.solver_error_estimate_
    assert est is not None and np.isfinite(est)
    refitted = m32.dtype_ == np.float64
    assert refitted == (est > 1e-4)
    assert refitted == any("would change this model's predictions" in r.getMessage() for r in caplog.records)
    assert "float32_check" in m32.fit_times_ and ("float64_refit" in m32.fit_times_) == refitted
    if case == "well":
        assert not refitted
    if case == "flat":
        assert refitted
        if "OKR" in name:
            assert m32.solver_precision_ == np.float64
    if "OKR" in name:
        got, out = m32.predict_scores(Xq, C), m64.predict_scores(Xq, C)
        # per-query centred scores (the ranking is what they decide)
        got, out = got - got.mean(axis=1, keepdims=True), out - out.mean(axis=1, keepdims=True)
    else:
        got, out = m32.predict(Xq), m64.predict(Xq)
    assert _rel(got, out) <= 1e-4


@pytest.mark.parametrize("name", ["IOKR", "ISOKR", "KernelRidgeRegressor", "SketchedKernelMachine"])
def test_exact_solvers_whose_float32_system_is_indefinite_fall_back(name, caplog):
    """A linear kernel of large inputs (|K| ~ 4e5) with n lam = 1.6e-3: float32 rounding of
    the kernel values (~2e-2) makes ``K + n lam I`` indefinite, so the float32 fit cannot
    even be factorised -- the model is refitted with float64 kernel values (logged, the
    estimate infinite), not reported as a broken kernel."""
    rng = np.random.default_rng(0)
    X = 43 * rng.standard_normal((133, 10))
    Y = (rng.random((133, 4)) < 0.35).astype(float)
    n, lam = X.shape[0], 1.2e-5
    K64 = X @ X.T
    K32 = (X.astype(np.float32) @ X.T.astype(np.float32)).astype(float)
    np.linalg.cholesky(K64 + n * lam * np.eye(n))  # the premise: PD in float64 ...
    with pytest.raises(np.linalg.LinAlgError):  # ... not with float32 kernel values
        np.linalg.cholesky(K32 + n * lam * np.eye(n))
    make = {
        "IOKR": lambda dt: IOKR(lam=lam, input_kernel="linear", dtype=dt),
        "ISOKR": lambda dt: ISOKR(lam=lam, input_kernel="linear", m_y=20, random_state=0, dtype=dt),
        "KernelRidgeRegressor": lambda dt: KernelRidgeRegressor(kernel="linear", lam=lam, dtype=dt),
        "SketchedKernelMachine": lambda dt: SketchedKernelMachine(kernel="linear", lam=lam, dtype=dt),
    }[name]
    m64 = make("float64").fit(X, Y)
    with caplog.at_level("WARNING"):
        m32 = make("float32").fit(X, Y)
    assert m32.dtype_ == np.float64 and m32.solver_error_estimate_ > 1e-4
    assert any("float64" in r.getMessage() for r in caplog.records)
    if "OKR" in name:
        got, out = m32.predict_coordinates(X[:9]), m64.predict_coordinates(X[:9])
    else:
        got, out = m32.predict(X[:9]), m64.predict(X[:9])
    assert _rel(got, out) <= 1e-4


@pytest.mark.parametrize("case", ["well", "flat"])
@pytest.mark.parametrize("make", [
    lambda kx, lam: IOKR(lam=lam, input_kernel_params=kx, output_kernel_params={"gamma": 0.5}),
    lambda kx, lam: KernelRidgeRegressor(kernel_params=kx, lam=lam),
    lambda kx, lam: SketchedKernelMachine(kernel_params=kx, lam=lam),
    lambda kx, lam: KernelRidgeRegressor(kernel=GaussianKernel(**kx), lam=lam),
    lambda kx, lam: SIOKR(lam=lam, input_kernel_params=kx, output_kernel_params={"gamma": 0.5}, m_x=30,
                          random_state=0),
], ids=["IOKR", "KernelRidgeRegressor", "SketchedKernelMachine", "kernel-instance", "SIOKR"])
def test_a_float32_kernel_is_a_checked_float32_request(make, case):
    """``dtype="float32"`` in the kernel's parameters (or instance) of a float64 model computes
    float32 kernel values: checked like the model's own ``dtype="float32"`` (it was not: the
    flat case was 4e-4 off, silently), float32 kept where accurate, float64 where not."""
    gamma, lam = CASES[case]
    X, Xq, T, Y, C = _data()
    m32 = make({"gamma": gamma, "dtype": "float32"}, lam)
    m64 = make({"gamma": gamma}, lam)
    target = Y if hasattr(m32, "predict_scores") else T
    m32.fit(X, target), m64.fit(X, target)
    assert m32.solver_error_estimate_ is not None
    assert m32.dtype_ == (np.float32 if case == "well" else np.float64)
    if hasattr(m32, "predict_scores"):
        got, out = m32.predict_scores(Xq, C), m64.predict_scores(Xq, C)
        got, out = got - got.mean(axis=1, keepdims=True), out - out.mean(axis=1, keepdims=True)
    else:
        got, out = m32.predict(Xq), m64.predict(Xq)
    assert _rel(got, out) <= 1e-4


@pytest.mark.parametrize("case", list(CASES))
def test_sketched_ridge_float32_within_1e_4(case):
    """SIOKR: the float32 check keeps float32 where it is accurate, falls back where not."""
    gamma, lam = CASES[case]
    X, Xq, T, Y, C = _data()
    kw = dict(lam=lam, input_kernel_params={"gamma": gamma}, output_kernel_params={"gamma": 0.5}, m_x=30,
              random_state=0)
    m64, m32 = SIOKR(**kw).fit(X, Y), SIOKR(**kw, dtype="float32").fit(X, Y)
    assert _rel(m32.predict_scores(Xq, C), m64.predict_scores(Xq, C)) <= 1e-4


@pytest.mark.parametrize("make", [
    lambda dt: KernelRidgeRegressor(kernel_params={"gamma": 0.3}, lam=1e-3, input_sketch="subsample", m_x=30,
                                    random_state=0, dtype=dt),
    lambda dt: SketchedKernelMachine(kernel_params={"gamma": 0.3}, lam=1e-3, input_sketch="subsample", m_x=30,
                                     random_state=0, dtype=dt),
    lambda dt: RFFKernelMachine(kernel_params={"gamma": 0.3}, lam=1e-3, n_components=50, random_state=0, dtype=dt),
], ids=["KernelRidgeRegressor-sketch", "SketchedKernelMachine-sketch", "RFFKernelMachine"])
def test_other_sketched_estimators_float32_on_a_well_conditioned_kernel(make):
    X, Xq, T, _, _ = _data()
    assert _rel(make("float32").fit(X, T).predict(Xq), make("float64").fit(X, T).predict(Xq)) <= 1e-4


def test_sketched_kernel_ridge_float32_falls_back_on_a_flat_kernel():
    """KernelRidgeRegressor adopts the solver's float64 fallback (kernel values and predictions)."""
    X, Xq, T, _, _ = _data()

    def make(dt):
        return KernelRidgeRegressor(kernel_params={"gamma": 1e-4}, lam=1e-8, input_sketch="subsample", m_x=30,
                                    random_state=0, dtype=dt)
    m32 = make("float32").fit(X, T)
    assert m32.dtype_ == np.float64  # the float32 solution failed its check
    assert _rel(m32.predict(Xq), make("float64").fit(X, T).predict(Xq)) <= 1e-4


@pytest.mark.parametrize("M", [None, "diag"])
def test_sketched_kernel_machine_float32_closed_form_on_a_flat_kernel(M):
    """The square-loss closed form goes through the numerics' sketched ridge (formerly an
    eigenbasis truncated at 1e-6 in float32: 1.1 relative here); with an output matrix of
    several eigenvalues, the float64 whitened system solved per eigengroup."""
    X, Xq, T, _, _ = _data()
    out = None if M is None else np.diag([1.0, 0.5])

    def make(dt):
        return SketchedKernelMachine(kernel_params={"gamma": 1e-4}, lam=1e-8, input_sketch="subsample", m_x=30,
                                     output_matrix=out, random_state=0, dtype=dt)
    m32, m64 = make("float32").fit(X, T), make("float64").fit(X, T)
    assert m32.dtype_ == np.float64  # float32 kernel values fail the check on this kernel
    assert _rel(m32.predict(Xq), m64.predict(Xq)) <= 1e-4
    # and the float64 model is the paper's formula in 40 digits, per eigenvalue e_j of M:
    # f_j = Kq R^T (A^T A + n lam / e_j R A)^-1 A^T T_j with A = K R^T
    mpmath = pytest.importorskip("mpmath")
    k = GaussianKernel(gamma=1e-4)
    R = m64.sketch_matrix_.toarray()
    e = [1.0, 1.0] if M is None else [1.0, 0.5]
    n = X.shape[0]
    ref = np.empty((Xq.shape[0], 2))
    with mpmath.workdps(40):
        A = mpmath.matrix(k(X).tolist()) * mpmath.matrix(R.T.tolist())
        Rm, KqR = mpmath.matrix(R.tolist()), mpmath.matrix((k(Xq, X) @ R.T).tolist())
        for j in range(2):
            G = A.T * A + mpmath.mpf(n) * mpmath.mpf(1e-8) / mpmath.mpf(e[j]) * (Rm * A)
            f = KqR * mpmath.lu_solve(G, A.T * mpmath.matrix(T[:, j].tolist()))
            ref[:, j] = np.array(f.tolist(), dtype=float)[:, 0]
    assert _rel(m64.predict(Xq), ref) <= 1e-6


# Cases where the sketched ridge's float32 checks used to accept inaccurate solutions (a
# smooth kernel resolved down to tiny pivots; the plain normal equations with float32
# products): seed, n, d, gamma, lam, sketch.  Found by a 648-case sweep (seeds 0-2,
# n 200/600, d 3/10, gamma 0.01/0.1/1, lam 1e-2/1e-4/1e-6, three sketches).
HARD = [(0, 600, 3, 0.1, 1e-2, "subsample"), (1, 600, 3, 1.0, 1e-6, "subsample"),
        (2, 600, 3, 1.0, 1e-4, "subsample"), (1, 200, 10, 0.01, 1e-4, "gaussian"),
        (0, 600, 10, 0.01, 1e-4, "psr"), (2, 200, 3, 0.1, 1e-2, "subsample"),
        (1, 600, 3, 0.1, 1e-2, "gaussian")]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed,n,d,gamma,lam,sketch", HARD)
def test_auto_route_meets_its_tolerance_where_checks_used_to_fail(seed, n, d, gamma, lam, sketch, dtype):
    """Whatever route "auto" keeps (plain normal equations, whitened, float32 or the float64
    fallback), the coordinates are within 1e-4 (float32) / 1e-6 (float64) of the stable
    float64 QR route."""
    rng = np.random.default_rng(seed)
    X, Xq = rng.normal(size=(n, d)), rng.normal(size=(20, d))
    Y = (X @ rng.normal(size=(d, 5)) + 0.3 * rng.normal(size=(n, 5)) > 0).astype(float)
    kw = dict(input_kernel_params={"gamma": gamma}, output_kernel_params={"gamma": 0.5}, lam=lam,
              input_sketch=sketch, m_x=n // 5, input_sketch_params={"p": 0.2} if sketch == "psr" else None,
              random_state=seed)
    ref = SIOKR(**kw, solver="qr").fit(X, Y).predict_coordinates(Xq)
    model = SIOKR(**kw, dtype=dtype).fit(X, Y)
    assert model.solver_ in ("cholesky", "whitened", "qr")
    assert _rel(model.predict_coordinates(Xq), ref) <= (1e-4 if dtype == "float32" else 1e-6)


# ... and where one refinement step looked converged (first correction 1.2e-5) while the
# contraction was 0.43 (found by a 216-case sweep of the kernel ridge, seed 0)
REFINE_HARD = [(0, 200, 3, 0.01, 1e-2, "subsample"), (0, 200, 3, 0.01, 1e-4, "gaussian")]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed,n,d,gamma,lam,sketch", HARD + REFINE_HARD)
def test_refined_route_meets_its_tolerance_with_few_targets(seed, n, d, gamma, lam, sketch, dtype):
    """The same hard cases with 5 real targets (the kernel ridge): "auto" takes the refined
    route (float32 products, float64 residuals) or the plain one, and whatever it keeps is
    within 1e-4 (float32) / 1e-6 (float64) of the stable float64 QR route, its estimate
    within the tolerance too."""
    from sprokr.models import KernelRidgeRegressor

    rng = np.random.default_rng(seed)
    X, Xq = rng.normal(size=(n, d)), rng.normal(size=(20, d))
    T = np.sin(X @ rng.normal(size=(d, 5))) + 0.1 * rng.normal(size=(n, 5))
    kw = dict(kernel_params={"gamma": gamma}, lam=lam, input_sketch=sketch, m_x=n // 5,
              input_sketch_params={"p": 0.2} if sketch == "psr" else None, random_state=seed)
    ref = KernelRidgeRegressor(**kw, solver="qr").fit(X, T).predict(Xq)
    model = KernelRidgeRegressor(**kw, dtype=dtype).fit(X, T)
    tol = 1e-4 if dtype == "float32" else 1e-6
    assert _rel(model.predict(Xq), ref) <= tol
    assert model.solver_error_estimate_ is not None and model.solver_error_estimate_ <= tol



def test_support_rows_computed_once_per_precision_when_float32_is_refused_early(monkeypatch):
    """A float32 request whose kernel values would move K~'s whitened basis goes to float64
    before any pass; the float64 support rows (K~, the whitening, the passes) are computed
    once, not once for the early check and again for the whitening."""
    from sprokr.numerics import SketchedFeatures

    calls = []
    original = SketchedFeatures.support_rows

    def counted(self):
        calls.append(np.dtype(self.dtype).name)
        return original(self)

    monkeypatch.setattr(SketchedFeatures, "support_rows", counted)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    T = np.c_[np.sin(X[:, 0]), X[:, 1] * X[:, 2]]
    kw = dict(kernel_params={"sigma2": 1e4}, lam=1e-5, input_sketch="psr", m_x=30, input_sketch_params={"p": 0.1},
              random_state=0)
    m32 = KernelRidgeRegressor(**kw, dtype="float32").fit(X, T)
    assert m32.dtype_ == np.float64  # refused by the early check (flat kernel)
    assert calls.count("float64") == 1 and calls.count("float32") == 1, calls
    m64 = KernelRidgeRegressor(**kw).fit(X, T)
    assert _rel(m32.predict(X), m64.predict(X)) <= 1e-6  # (the inputs were rounded to float32)


def test_float32_estimate_parts_add_up():
    """``parts=True`` splits the estimate for the plain route, whose conditioning factor
    (PLAIN_SAFETY) scales the error propagated through its solve, not the error of predictions made from the solution (their float32
    rounding and kernel values), which G's conditioning does not amplify; scaling both made
    the scale benchmark's float32 solution (true error 1.1e-5, estimate 1.07e-4) refine for
    nothing at n = 1e5 (refinement cannot change how predictions round)."""
    from sprokr.numerics import ShiftedCrossProducts, column_shift, float32_error_estimate

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 5)) + 3.0  # away from the origin: float32 kernel values lose eps_32 g|x|^2
    S = X[rng.choice(300, 40, replace=False)]
    k = GaussianKernel(gamma=2.0)
    A64, A32 = k(X, S), k(X.astype(np.float32), S.astype(np.float32))
    T = np.sin(X[:, :2])
    acc = ShiftedCrossProducts(40, 2, np.float32, column_shift(A64, np.float32), T.mean(axis=0), False)
    acc.add(np.arange(300), np.array(A32), T)
    G, AtT = acc.result()
    G = G + 300 * 1e-3 * k(S, S)
    L = np.linalg.cholesky(G)
    w = np.linalg.solve(G, AtT)
    total = float32_error_estimate(acc, A32[::3], A64[::3], T[::3], L, w, 300, 0.3)
    sol, pred = float32_error_estimate(acc, A32[::3], A64[::3], T[::3], L, w, 300, 0.3, parts=True)
    assert sol > 0 and pred > 0 and np.isclose(sol + pred, total)
