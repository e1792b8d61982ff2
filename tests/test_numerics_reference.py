"""The input-sketched ridge against the paper's formula evaluated densely and in 40 digits.

SIOKR's output coordinates (issue: "numerics you can trust") are
``H(x) = k(x, X) R^T gamma`` with ``gamma = (R K^2 R^T + n lam R K R^T)^+ R K`` (the
coefficients of ``psi(y_i)``).  General sketches ``R = W S`` (Gaussian, p-sparsified,
CountSketch) on a well-conditioned problem must match a float64 dense evaluation; on a
flat kernel with a tiny ridge (the Bibtex regime) the normal equations lose the answer, and
the stable route (``solver="auto"`` / ``"qr"``) must match the formula in 40-digit arithmetic.
"""
import mpmath
import numpy as np
import pytest

from sprokr import SIOKR
from sprokr.kernels import GaussianKernel

SKETCHES = [("gaussian", None), ("psr", {"p": 0.2}), ("psg", {"p": 0.2}), ("countsketch", None),
            ("subsample", None)]


def _data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = (X @ rng.normal(size=(d, 4)) > 0).astype(float)
    return X, Y, rng.normal(size=(7, d))


def _dense_reference(K, Kq, R, lam):
    n = K.shape[0]
    A = K @ R.T
    G = A.T @ A + n * lam * (R @ K @ R.T)
    return Kq @ R.T @ np.linalg.lstsq(G, A.T, rcond=None)[0]


def _mp_reference(K, Kq, R, lam, dps=40):
    """The same formula with every operation in ``dps`` digits (inputs exact as floats)."""
    with mpmath.workdps(dps):
        Km, Kqm, Rm = mpmath.matrix(K.tolist()), mpmath.matrix(Kq.tolist()), mpmath.matrix(R.tolist())
        n = K.shape[0]
        A = Km * Rm.T
        G = A.T * A + mpmath.mpf(n) * mpmath.mpf(lam) * (Rm * Km * Rm.T)
        gamma = mpmath.inverse(G) * A.T  # G is m x m and invertible: 40 digits are plenty
        H = Kqm * Rm.T * gamma
        return np.array(H.tolist(), dtype=float)


@pytest.mark.parametrize("sketch,params", SKETCHES)
@pytest.mark.parametrize("solver", ["cholesky", "qr", "auto"])
def test_general_sketches_match_the_dense_formula(sketch, params, solver):
    X, Y, Xq = _data()
    model = SIOKR(input_sketch=sketch, m_x=20, input_sketch_params=params, lam=1e-2,
                  input_kernel_params={"gamma": 0.3}, solver=solver, random_state=0).fit(X, Y)
    k = GaussianKernel(gamma=0.3)
    R = model.input_sketch_matrix_.toarray()
    ref = _dense_reference(k(X), k(Xq, X), R, 1e-2)
    # "cholesky" adds its documented jitter rcond * mean(diag G) (relative 1e-10 of G's
    # scale, ~1e-5 of the solution here); the other routes solve the formula as written
    rtol = 1e-4 if solver == "cholesky" else 1e-8
    np.testing.assert_allclose(model.predict_coordinates(Xq), ref, rtol=rtol, atol=rtol * 1e-2 * np.abs(ref).max())


@pytest.mark.parametrize("sketch,params", [("gaussian", None), ("psr", {"p": 0.2}), ("subsample", None)])
def test_flat_kernel_tiny_ridge_matches_40_digit_arithmetic(sketch, params):
    """Gaussian gamma = 1e-4 (k ~ 0.999 everywhere), lam = 1e-8: R K^2 R^T squares a
    condition number of ~1e8.  The stable route agrees with the 40-digit formula to ~1e-6
    and gives the same top candidate; the route ``auto`` picks it by itself."""
    X, Y, Xq = _data(n=80, d=4, seed=1)
    k = GaussianKernel(gamma=1e-4)
    models = {s: SIOKR(input_sketch=sketch, m_x=25, input_sketch_params=params, lam=1e-8,
                       input_kernel_params={"gamma": 1e-4}, solver=s, random_state=0).fit(X, Y)
              for s in ("auto", "qr", "cholesky")}
    R = models["qr"].input_sketch_matrix_.toarray()
    exact = _mp_reference(k(X), k(Xq, X), R, 1e-8)
    scale = np.abs(exact).max()
    for s in ("auto", "qr"):
        H = models[s].predict_coordinates(Xq)
        assert np.abs(H - exact).max() <= 1e-5 * scale, (s, np.abs(H - exact).max() / scale)
        # the largest coefficient alpha_i(x) (the training output weighted most) agrees
        np.testing.assert_array_equal(np.argmax(H, axis=1), np.argmax(exact, axis=1))
    assert models["auto"].solver_ == "qr"  # the default "cholesky" would not notice
    # the normal equations are measurably worse here (what the stable route is for)
    H = models["cholesky"].predict_coordinates(Xq)
    assert np.abs(H - exact).max() > 10 * np.abs(models["qr"].predict_coordinates(Xq) - exact).max()


def test_well_conditioned_auto_keeps_the_fast_route():
    X, Y, _ = _data()
    model = SIOKR(input_sketch="subsample", m_x=20, lam=1e-2, input_kernel_params={"gamma": 0.3},
                  random_state=0).fit(X, Y)
    assert model.solver_ == "cholesky" and model.solver_error_estimate_ < 1e-6
