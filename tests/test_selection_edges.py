"""Model selection on tiny data and unusual arguments: each test is a bug an audit found."""
import numpy as np
import pytest

from sprokr import SISOKR
from sprokr.model_selection import grow_until_plateau, perfect_h_curve, select_model


@pytest.fixture
def tiny():
    rng = np.random.default_rng(0)
    return rng.standard_normal((12, 3)), rng.standard_normal((12, 2))


def _sisokr():
    return SISOKR(input_sketch="subsample", m_x=3, output_sketch="subsample", m_y=3, random_state=0)


@pytest.mark.parametrize("bad", [[2.5], [2, 3.9], [True, 3], ["2", "4"], [float("nan")]])
def test_sketch_size_grids_are_refused_not_truncated(tiny, bad):
    """m_x_grid=[2.5] ran at m_x=2 (int() truncated it), and [True, 3] at 1, 3; the grids are
    named before any fit, as the chemistry plugin's check_grid does."""
    X, Y = tiny
    for name in ("m_x_grid", "m_y_grid"):
        with pytest.raises(ValueError, match=f"^{name} must be a non-empty increasing sequence of positive integers"):
            select_model(_sisokr(), X, Y, lams=[1e-2], random_state=0, **{name: bad})
    with pytest.raises(ValueError, match="^m_grid must be"):
        perfect_h_curve(Y[:8], Y[8:], "gaussian", bad)
    with pytest.raises(ValueError, match="^the grid of m must be"):
        grow_until_plateau(bad, lambda m: (1.0 / m, 0.0))


def test_integral_float_sizes_are_sizes(tiny):
    X, Y = tiny
    res = select_model(_sisokr(), X, Y, lams=[1e-2], m_x_grid=np.array([2.0, 4.0]), m_y_grid=[3.0],
                       random_state=0)
    assert res["m_x"]["m"][0] == 2 and isinstance(res["best_params"]["m_x"], int)
    assert res["best_params"]["m_y"] == 3 and isinstance(res["best_params"]["m_y"], int)


def test_select_model_names_m_x_budget_s(tiny):
    """A bad m_x_budget_s was refused as 'budget_s' (grow_until_plateau's argument), after the
    perfect-h curve and every grid point had been fitted."""
    X, Y = tiny
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="^m_x_budget_s must be"):
            select_model(_sisokr(), X, Y, lams=[1e-2], m_x_grid=[2, 4], m_x_budget_s=bad, random_state=0)


@pytest.mark.parametrize("grid", [[], ()])
def test_select_model_refuses_an_empty_param_grid(tiny, grid):
    """param_grid=[] (no point at all) failed after the split as 'every lam scored NaN or -inf
    on the validation data', which no lam had."""
    X, Y = tiny
    with pytest.raises(ValueError, match="^param_grid holds no parameter point"):
        select_model(_sisokr(), X, Y, lams=[1e-2], param_grid=grid, random_state=0)
    assert select_model(_sisokr(), X, Y, lams=[1e-2], param_grid=[{}], random_state=0)["best_params"] == {"lam": 1e-2}
