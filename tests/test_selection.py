"""Sketch-size selection: perfect h, plateau detection, leverage scores, m_x selection."""
import numpy as np
import pytest

from sprokr import IOKR, SIOKR
from sprokr.kernels import BUILTIN_KERNELS
from sprokr.model_selection import (
    approximate_leverage_scores,
    perfect_h_curve,
    plateau_index,
    select_m_x,
    surrogate_error,
)
from sprokr.plotting import plot_leverage_scores
from sprokr.sketches import SubSample


def test_perfect_h_full_subsample_reaches_exact_decoding(multilabel_data):
    """With m_y = n and sub-sampling, P~ is the projection on span psi(Y): exact decoding."""
    Xtr, Ytr, _, Yval = multilabel_data
    n = len(Ytr)
    k = BUILTIN_KERNELS["gaussian"]()
    acc = lambda Yt, Yp: float(np.mean(np.all(np.asarray(Yt) == np.asarray(Yp), axis=1)))  # noqa: E731
    res = perfect_h_curve(Ytr, Yval, "gaussian", [10, 40, n], candidates=Ytr, metric=acc,
                          greater_is_better=True, random_state=0)
    exact_idx = k(Yval, Ytr).argmax(axis=1)  # exact h = psi(y_val): scores k(y_val, c)
    exact = acc(Yval, Ytr[exact_idx])
    assert res["metric"][-1] == pytest.approx(exact)
    assert res["metric"][0] < exact  # a small sketch loses accuracy on this problem
    # the decoded outputs themselves are those of the exact decoder
    assert res["criterion"] == "metric" and res["plateau_m"] in res["m"]


def test_perfect_h_projection_error_plateaus_at_subspace_dimension(rng, tmp_path):
    d, D = 8, 60
    U = np.linalg.qr(rng.standard_normal((D, d)))[0]
    Y = rng.standard_normal((400, d)) * 3 @ U.T + 0.01 * rng.standard_normal((400, D))
    res = perfect_h_curve(Y[:300], Y[300:], "linear", [2, 4, 6, 8, 10, 16, 32], random_state=0,
                          plot=tmp_path / "ph.png")
    assert res["plateau_m"] == d
    assert res["criterion"] == "projection_error"
    err = np.array(res["projection_error"])
    assert err[3] < 0.01 * err[0]
    assert (tmp_path / "ph.png").read_bytes()[:4] == b"\x89PNG"


def test_plateau_index():
    assert plateau_index([10, 5, 1, 0.99, 1.0]) == 2
    assert plateau_index([0.1, 0.5, 0.9, 0.91], greater_is_better=True) == 2
    assert plateau_index([1, 1, 1]) == 0
    with pytest.raises(ValueError):
        plateau_index([])


def test_leverage_scores_exact_with_full_nystrom_and_usable_as_probabilities(rng, tmp_path):
    Z = rng.standard_normal((120, 3))
    k = BUILTIN_KERNELS["gaussian"](gamma=0.5)
    lam = 1e-3
    K = k(Z)
    n = len(Z)
    exact = np.diag(np.linalg.solve(K + n * lam * np.eye(n), K))  # K (K + n lam)^-1, symmetric
    s = approximate_leverage_scores(Z, k, lam, m=n, random_state=0)
    np.testing.assert_allclose(s, exact, atol=1e-8)
    s_small = approximate_leverage_scores(Z, k, lam, m=40, random_state=0)
    assert np.all(s_small >= 0) and np.all(s_small <= 1) and s_small.sum() <= exact.sum() + 1e-6
    assert np.corrcoef(s_small, exact)[0, 1] > 0.6  # 0.74 observed; unrelated scores give ~0
    R = SubSample(m=30, probabilities=s_small).draw(n, np.random.default_rng(0))
    assert R.m == 30
    fig = plot_leverage_scores(s, path=tmp_path / "lev.png")  # a Figure, saved because a path is given
    assert fig.axes and (tmp_path / "lev.png").read_bytes()[:4] == b"\x89PNG"


def test_surrogate_error_matches_explicit_computation(multilabel_data):
    Xtr, Ytr, Xv, Yv = multilabel_data
    m = IOKR(input_kernel="gaussian", output_kernel="linear", lam=1e-2).fit(Xtr, Ytr)
    H = m.predict_coordinates(Xv)  # alpha(x), (n_val, n)
    Yf, Yvf = Ytr.astype(float), Yv.astype(float)
    explicit = np.mean(np.sum((H @ Yf - Yvf) ** 2, axis=1))
    assert surrogate_error(m, Xv, Yv, chunk_size=50) == pytest.approx(explicit, rel=1e-8)


def test_select_m_x_budget_and_convergence(multilabel_data):
    Xtr, Ytr, Xv, Yv = multilabel_data
    kw = dict(input_kernel="gaussian", output_kernel="gaussian", lam=1e-3)
    res = select_m_x(Xtr, Ytr, Xv, Yv, [5, 10, 20, 40, 80], budget_s=60, random_state=0, **kw)
    assert res["selected_m"] in res["m"] and res["stopped"] in ("converged", "grid")
    assert res["errors"][0] > min(res["errors"])
    tiny = select_m_x(Xtr, Ytr, Xv, Yv, [5, 10, 20], budget_s=1e-9, random_state=0, **kw)
    assert tiny["stopped"] == "budget" and tiny["m"] == [5]
    model = SIOKR(m_x=res["selected_m"], **kw).fit(Xtr, Ytr)
    assert surrogate_error(model, Xv, Yv) > 0


def test_selection_module_is_a_deprecated_alias(tmp_path):
    """``sprokr.selection`` warns on import (naming the new home) and gives the same objects."""
    import importlib
    import sys

    import sprokr.model_selection as ms

    sys.modules.pop("sprokr.selection", None)
    with pytest.warns(FutureWarning, match=r"sprokr\.model_selection"):
        old = importlib.import_module("sprokr.selection")
    moved = [n for n in old.__all__ if n not in ("plot_curve", "plot_leverage_scores")]
    assert moved and all(getattr(old, n) is getattr(ms, n) for n in moved)
    assert set(moved) <= set(ms.__all__)
    pytest.importorskip("matplotlib")
    # the two figure helpers keep their former positional signature, drawn by sprokr.plotting
    fig = old.plot_curve([1, 2], [1, 0], tmp_path / "s.png", "m", "e")
    assert fig.axes[0].get_xlabel() == "m" and (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    fig = old.plot_leverage_scores([0.3, 0.2, 0.5], tmp_path / "lev.png", 2)
    assert fig.axes[0].lines[0].get_ydata().tolist() == [0.5, 0.3]
