"""IOKR, SIOKR, ISOKR, SISOKR (every pair of sketches), DSOKR and the square-loss machine
against the papers' formulas.

Scores ``<h(x), psi(c)>`` (normalised output kernel: no offset) of

    h(x) = k_x^T Gamma T_y,   Gamma = R_x^T (R_x K^2 R_x^T + n lam R_x K R_x^T)^-1 R_x K
                              (exact input: (K + n lam I)^-1)
    T_y psi(c) = K_y R_y^T (R_y K_y R_y^T)^+ R_y k_y(., c)     (exact output: k_y(., c))

with the default solver, on a well-conditioned input kernel and on a flat one with a tiny
ridge (Gaussian gamma = 1e-4, lam = 1e-8: the Bibtex regime, where a float64 evaluation of
the formula is itself ~50 % off).  The input side ``k_x^T Gamma`` is evaluated in 40-digit
arithmetic (mpmath) on the flat case and in float64 on the well-conditioned one; the output
side (well conditioned, the same eigenvalue threshold as the model) in float64.  Targets:
relative score error <= 1e-6, identical top-1 wherever the reference's top two differ by
more than 1e-6 of the scale.  Outputs are label vectors with repeats (the fit computes the
sketched targets once per distinct output: "collapsed") or real vectors (every output
distinct: the plain path).
"""
import functools

import mpmath
import numpy as np
import pytest

from sprokr import DSOKR, IOKR, ISOKR, SIOKR, SISOKR, SketchedKernelMachine
from sprokr.kernels import GaussianKernel
from sprokr.numerics import psd_eigh

SKETCHES = {
    "subsample": None,
    "gaussian": None,
    "psr": {"p": 0.2},
    "psg": {"p": 0.2},
    "accumulation": {"m_acc": 4},
    "countsketch": None,
}
CASES = {"well": (0.3, 1e-3, 3), "flat": (1e-4, 1e-8, 4)}  # input gamma, lam, input dimension
N, M_X, M_Y, OUT_GAMMA = 80, 25, 20, 0.5


@functools.lru_cache(maxsize=None)
def _data(case, outputs):
    _, _, d = CASES[case]
    rng = np.random.default_rng(1)
    X = rng.normal(size=(N, d))
    Xq = rng.normal(size=(7, d))
    W = rng.normal(size=(d, 4))
    if outputs == "repeated":  # 4 labels: at most 16 distinct outputs among 80
        Y = (X @ W > 0).astype(float)
        C = np.unique(Y, axis=0)
    else:
        Y = np.tanh(X @ W) + 0.1 * rng.normal(size=(N, 4))
        C = np.vstack([Y[:10], rng.normal(size=(10, 4))])
    return X, Y, Xq, C


def _mp_hat(K, Kq, R, lam):
    """``k_x^T Gamma`` (n_q x n) with every operation in 40 digits (float inputs exact)."""
    n = K.shape[0]
    with mpmath.workdps(40):
        Km, Kqm = mpmath.matrix(K.tolist()), mpmath.matrix(Kq.tolist())
        nlam = mpmath.mpf(n) * mpmath.mpf(lam)
        if R is None:
            G = Km + nlam * mpmath.eye(n)
            H = Kqm * mpmath.inverse(G)
        else:
            R = R[np.abs(R).sum(axis=1) > 0]  # an empty row of R (a CountSketch bucket) is no direction
            Rm = mpmath.matrix(R.tolist())
            A = Km * Rm.T
            G = A.T * A + nlam * (Rm * A)
            H = Kqm * Rm.T * mpmath.inverse(G) * A.T
        return np.array(H.tolist(), dtype=float)


def _float_hat(K, Kq, R, lam):
    n = K.shape[0]
    if R is None:
        return np.linalg.solve(K + n * lam * np.eye(n), Kq.T).T
    A = K @ R.T
    return Kq @ R.T @ np.linalg.lstsq(A.T @ A + n * lam * R @ A, A.T, rcond=None)[0]


@functools.lru_cache(maxsize=None)
def _input_hat(case, outputs, sketch):
    """The reference input side of the model fitted with this input sketch (seeded: the
    model's own sketch matrix is redrawn by fitting once)."""
    X, Y, Xq, _ = _data(case, outputs)
    gamma, lam, _ = CASES[case]
    k = GaussianKernel(gamma=gamma)
    R = None
    if sketch is not None:
        R = _model(case, outputs, sketch, None).input_sketch_matrix_.toarray()
    return (_mp_hat if case == "flat" else _float_hat)(k(X), k(Xq, X), R, lam), R


def _output_side(Y, C, Ry):
    """``T_y psi(c)`` (n x n_c): exact, or the sketched feature map's Nystrom product."""
    ky = GaussianKernel(gamma=OUT_GAMMA)
    KyC = ky(Y, C)
    if Ry is None:
        return KyC
    U, d = psd_eigh(Ry @ ky(Y) @ Ry.T, 1e-10)  # the model's threshold on R_y K_y R_y^T
    B = Ry.T @ (U / np.sqrt(d))
    return (ky(Y) @ B) @ (B.T @ KyC)


def _model(case, outputs, in_sketch, out_sketch, dtype="float64"):
    X, Y, _, _ = _data(case, outputs)
    gamma, lam, _ = CASES[case]
    common = dict(lam=lam, input_kernel_params={"gamma": gamma}, output_kernel_params={"gamma": OUT_GAMMA},
                  dtype=dtype)
    sx = dict(input_sketch=in_sketch, m_x=M_X, input_sketch_params=SKETCHES.get(in_sketch))
    sy = dict(output_sketch=out_sketch, m_y=M_Y, output_sketch_params=SKETCHES.get(out_sketch))
    if in_sketch is None and out_sketch is None:
        model = IOKR(**common)
    elif out_sketch is None:
        model = SIOKR(**common, **sx, random_state=0)
    elif in_sketch is None:
        model = ISOKR(**common, **sy, random_state=0)
    else:
        model = SISOKR(**common, **sx, **sy, random_state=0)
    return model.fit(X, Y)


def _combos():
    names = [None, *SKETCHES]
    for case in CASES:
        for sx in names:
            for sy in names:
                for outputs in (["repeated", "distinct"] if sy is not None else ["repeated"]):
                    yield case, sx, sy, outputs


def _check_scores(S, ref, tol):
    scale = np.abs(ref).max()
    err = np.abs(S - ref).max() / scale
    assert err <= tol, err
    top2 = np.sort(ref, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-6 * scale
    np.testing.assert_array_equal(np.argmax(S, axis=1)[clear], np.argmax(ref, axis=1)[clear])
    return err


@pytest.mark.parametrize("case,in_sketch,out_sketch,outputs", list(_combos()))
def test_scores_match_the_papers_formula(case, in_sketch, out_sketch, outputs):
    X, Y, Xq, C = _data(case, outputs)
    model = _model(case, outputs, in_sketch, out_sketch)
    if out_sketch is not None and outputs == "repeated":
        assert model.n_distinct_outputs_ <= N // 2  # the fit took the collapsed path
    Ry = None if out_sketch is None else model.output_sketch_matrix_.toarray()
    hat, Rx = _input_hat(case, outputs, in_sketch)
    if Rx is not None:  # the input sketch is drawn first: the same with or without output sketch
        np.testing.assert_array_equal(model.input_sketch_matrix_.toarray(), Rx)
    ref = hat @ _output_side(Y, C, Ry)
    _check_scores(model.predict_scores(Xq, candidates=C), ref, 1e-6)
    if in_sketch is not None:  # "auto": the plain normal equations only when their measured check passes
        assert model.solver_ in (("whitened", "qr") if case == "flat" else ("cholesky", "whitened", "qr"))
        assert model.solver_error_estimate_ is None or model.solver_error_estimate_ <= 1e-6


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("in_sketch", list(SKETCHES))
def test_float32_sisokr_within_1e_4_of_float64(case, in_sketch):
    """float32 kernel values and products: within 1e-4 of float64 (on the flat case the
    float32 check sends the fit to float64 kernel values, and says so)."""
    _, _, Xq, C = _data(case, "repeated")
    m64 = _model(case, "repeated", in_sketch, "psg")
    m32 = _model(case, "repeated", in_sketch, "psg", dtype="float32")
    _check_scores(m32.predict_scores(Xq, candidates=C), m64.predict_scores(Xq, candidates=C), 1e-4)
    if case == "flat":
        assert m32.solver_precision_ == np.float64 and m32.dtype_ == np.float64
    else:
        assert m32.solver_precision_ == np.float32


def test_float32_fallback_is_logged(caplog):
    with caplog.at_level("WARNING", logger="sprokr.SIOKR"):
        _model("flat", "repeated", "subsample", None, dtype="float32")
    assert "fitted and predicting with float64 kernel values" in caplog.text


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("out_sketch", list(SKETCHES))
def test_dsokr_coordinates_and_its_kernel_ridge_equivalence_with_isokr(case, out_sketch):
    """DSOKR's output coordinates ``psi~(c) = D^-1/2 U^T R_y k_y(., c)`` reproduce the
    Nystrom inner products of the formula, and with a kernel-ridge surrogate (same kernel,
    same lam) DSOKR *is* ISOKR: the same scores as the formula, and as ISOKR."""
    X, Y, Xq, C = _data(case, "repeated")
    gamma, lam, _ = CASES[case]
    ds = DSOKR(output_kernel="gaussian", output_kernel_params={"gamma": OUT_GAMMA}, output_sketch=out_sketch,
               m_y=M_Y, output_sketch_params=SKETCHES[out_sketch], regressor="kernel_ridge",
               regressor_params={"kernel": "gaussian", "kernel_params": {"gamma": gamma}, "lam": lam},
               random_state=0).fit(X, Y)
    Ry = ds.output_sketch_matrix_.toarray()
    E = ds.output_features_.transform(ds.output_kernel_.prepare_outputs(C))
    ky = GaussianKernel(gamma=OUT_GAMMA)
    U, d = psd_eigh(Ry @ ky(Y) @ Ry.T, 1e-10)
    B = Ry.T @ (U / np.sqrt(d))
    nystrom = ky(C, Y) @ B @ B.T @ ky(Y, C)
    np.testing.assert_allclose(E @ E.T, nystrom, atol=1e-9 * np.abs(nystrom).max())
    ref = _input_hat(case, "repeated", None)[0] @ _output_side(Y, C, Ry)
    S = ds.predict_scores(Xq, candidates=C)
    _check_scores(S, ref, 1e-6)
    iso = _model(case, "repeated", None, out_sketch)
    np.testing.assert_array_equal(iso.output_sketch_matrix_.toarray(), Ry)  # the same draw
    _check_scores(S, iso.predict_scores(Xq, candidates=C), 1e-6)


@pytest.mark.parametrize("sketch", list(SKETCHES))
def test_square_loss_machine_matches_its_formula(sketch):
    """The sketched square-loss machine (closed form): ``f = k_x^T R^T B w`` with
    ``B = U D^-1/2`` of ``R K R^T`` and ``w = (Z^T Z + n lam I)^-1 Z^T Y``, ``Z = K R^T B``
    (well-conditioned kernel; the flat case against 40 digits, float32 included, is in
    ``tests/test_float32_policy.py``)."""
    X, Y, Xq, _ = _data("well", "distinct")
    gamma, lam, _ = CASES["well"]
    model = SketchedKernelMachine(kernel_params={"gamma": gamma}, lam=lam, input_sketch=sketch, m_x=M_X,
                                  input_sketch_params=SKETCHES[sketch], random_state=0).fit(X, Y)
    k = GaussianKernel(gamma=gamma)
    R = model.sketch_matrix_.toarray()
    U, d = psd_eigh(R @ k(X) @ R.T, 1e-10)
    B = U / np.sqrt(d)
    Z = k(X) @ R.T @ B
    w = np.linalg.solve(Z.T @ Z + X.shape[0] * lam * np.eye(B.shape[1]), Z.T @ Y)
    ref = k(Xq, X) @ R.T @ B @ w
    assert np.abs(model.predict(Xq) - ref).max() <= 1e-8 * np.abs(ref).max()
