"""Model selection on tiny data and unusual arguments: each test is a bug an audit found."""
import numpy as np
import pytest

from sprokr import IOKR, SISOKR
from sprokr.model_selection import grow_until_plateau, lambda_path, perfect_h_curve, retrieval_scorer, select_model
from sprokr.models import KernelRidgeRegressor


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


@pytest.mark.parametrize("method", ["eigh", "cholesky", "refit"])
@pytest.mark.parametrize("scoring", [None, "retrieval"])
def test_lambda_path_scores_name_bad_validation_pairs(tiny, method, scoring):
    """The fast routes scored 0 validation pairs as [nan] (numpy warnings) and met 3 inputs
    with 2 outputs as numpy's 'operands could not be broadcast' (the retrieval scores as
    'y_true holds positions outside the candidate set'); the refit route named them."""
    X, Y = tiny
    scorer = retrieval_scorer() if scoring else None
    path = lambda_path(IOKR(), X[:9], Y[:9], [1e-3, 1e-1], method)
    with pytest.raises(ValueError, match="^cannot score on 0 samples: X_val is empty"):
        path.scores(X[9:9], Y[9:9], scorer)
    with pytest.raises(ValueError, match="^X_val and Y_val have different numbers of samples: 3 and 2"):
        path.scores(X[9:], Y[9:11], scorer)
    with pytest.raises(ValueError, match="^X_val and Y_val have different numbers of samples"):
        path.losses(X[9:], Y[9:11])
    assert np.isfinite(path.scores(X[9:], Y[9:], scorer)).all()


@pytest.mark.parametrize("method", ["eigh", "cholesky"])
def test_lambda_path_losses_name_targets_of_other_columns(tiny, method):
    """Kernel ridge targets of 2 columns against validation targets of 1: numpy's broadcast
    error on the fast routes (LambdaSearchCV's split names it as validation_data)."""
    X, Y = tiny
    path = lambda_path(KernelRidgeRegressor(), X[:9], Y[:9], [1e-3, 1e-1], method)
    with pytest.raises(ValueError, match=r"^Y_val has shape \(3, 1\), the training Y \(9, 2\): expected shape "
                                         r"\(n_val, 2\)"):
        path.losses(X[9:], Y[9:, :1])


def test_perfect_h_curve_names_bad_arguments(tiny):
    """A negative rtol gave an IndexError ('list index out of range': plateau_index returned
    the index past the end), empty candidates an IndexError, an empty Y_val a NaN curve refused
    as 'values must be ... finite numbers', a metric returning NaN the same."""
    _, Y = tiny
    with pytest.raises(ValueError, match="^rtol must be >= 0"):
        perfect_h_curve(Y[:8], Y[8:], "gaussian", [2, 4], rtol=-0.1)
    with pytest.raises(ValueError, match="^rtol must be >= 0"):
        from sprokr.model_selection import plateau_index
        plateau_index([3.0, 2.0, 1.0], rtol=-0.1)
    with pytest.raises(ValueError, match="^Y_val is empty"):
        perfect_h_curve(Y[:8], Y[8:8], "gaussian", [2, 4])
    with pytest.raises(ValueError, match="^candidates is empty"):
        perfect_h_curve(Y[:8], Y[8:], "gaussian", [2, 4], candidates=Y[:0])
    with pytest.raises(ValueError, match="^metric returned nan at m=2"):
        perfect_h_curve(Y[:8], Y[8:], "gaussian", [2, 4], metric=lambda a, b: float("nan"))


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_retrieval_scorer_refuses_a_bad_query_batch(bad):
    """query_batch=0, -1 or 2.5 was accepted (iter_chunks made it 1, or truncated it)."""
    with pytest.raises(ValueError, match="^query_batch must be an integer >= 1"):
        retrieval_scorer("mrr", query_batch=bad)


def test_exact_iokr_cost_names_bad_arguments():
    """rate=0 was a ZeroDivisionError, a negative rate an estimate of negative seconds that
    fits every budget, a negative count a smaller estimate."""
    from sprokr.model_selection import exact_iokr_cost

    for bad in (0, -1e9, float("nan")):
        with pytest.raises(ValueError, match="^rate must be"):
            exact_iokr_cost(100, 80, 20, rate=bad)
    with pytest.raises(ValueError, match="^n_lams must be an integer >= 0, got -5"):
        exact_iokr_cost(100, 80, 20, n_lams=-5)
    with pytest.raises(ValueError, match="^n_fit must be an integer >= 0"):
        exact_iokr_cost(100.5, 80, 20)
    assert exact_iokr_cost(100, 80, 20).seconds > 0


def test_an_invalid_validation_fraction_is_named_with_validation_data_too():
    """``validation_fraction`` is unused when ``validation_data`` is given, but a value that
    is not a fraction is still a mistake, named (it was silently ignored)."""
    from sprokr.model_selection import LambdaSearchCV
    from sprokr.models import KernelRidgeRegressor

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    search = LambdaSearchCV(KernelRidgeRegressor(), lams=[1e-3, 1e-1], validation_fraction=1.5)
    with pytest.raises(ValueError, match="validation_fraction"):
        search.fit(X[:20], y[:20], validation_data=(X[20:], y[20:]))


@pytest.mark.parametrize("grid", [{"lam": [5.0, 0.5]}, [{"rcond": [1e-10]}, {"lam": np.array([5.0])}]])
def test_select_model_refuses_lam_in_param_grid(tiny, grid):
    """param_grid={"lam": [5.0]} was recorded as the point's params and silently replaced by the
    best lam of lams; the grid of ridge values is lams, named before any fit."""
    X, Y = tiny
    with pytest.raises(ValueError, match=r"^param_grid holds 'lam' \(\[5\.0.*pass the ridge values as lams="):
        select_model(_sisokr(), X, Y, lams=[1e-2], param_grid=grid, random_state=0)
    res = select_model(_sisokr(), X, Y, lams=[5.0, 0.5], param_grid={"rcond": [1e-10]}, random_state=0)
    assert res["best_params"]["lam"] in (5.0, 0.5) and res["grid"][0]["params"] == {"rcond": 1e-10}


@pytest.mark.parametrize("size", ["m_x", "m_y"])
def test_select_model_refuses_a_size_in_param_grid_with_its_grid(tiny, size):
    """param_grid={"m_x": [2, 5]} with m_x_grid: the m_x growth silently overrode the grid's
    m_x; param_grid={"m_y": [2, 5]} with m_y_grid: the grid's m_y overrode the perfect-h
    curve's choice.  Two names for one setting, refused before any fit."""
    X, Y = tiny
    scorer, calls = _spy()
    for grid in ({size: [2, 5]}, [{"rcond": [1e-10]}, {size: np.array([2])}]):
        with pytest.raises(ValueError, match=rf"^param_grid holds '{size}' \(\[2.*\), but {size}_grid chooses the "
                                             rf"(input|output) sketch size: give the sizes as {size}_grid=\.\.\. only"):
            select_model(_sisokr(), X, Y, lams=[1e-2], param_grid=grid, scoring=scorer, random_state=0,
                         **{f"{size}_grid": [2, 4]})
    assert calls == []
    # without its grid, a size in param_grid is a parameter like any other (the other size's grid too)
    other = {"m_x": "m_y", "m_y": "m_x"}[size]
    res = select_model(_sisokr(), X, Y, lams=[1e-2], param_grid={size: [2, 5]}, random_state=0,
                       **{f"{other}_grid": [2, 4]})
    assert [g["params"][size] for g in res["grid"]] == [2, 5] and res["best_params"][size] in (2, 5)


def _nan_at(gamma):
    """The kernel loss, NaN at every lam for the input kernel's ``gamma`` (a degenerate setting)."""
    from sprokr.model_selection import kernel_loss_scorer

    def scorer(est, X, Y):
        return float("nan") if est.input_kernel_params == {"gamma": gamma} else kernel_loss_scorer(est, X, Y)

    return scorer


def test_select_model_skips_a_grid_point_that_scores_nan_at_every_lam(tiny):
    """One grid point scoring NaN at every lam aborted the whole selection ('every lam scored NaN
    or -inf'); it is skipped with a warning naming it and recorded with a NaN best, as
    GridSearchCV does, and the selection fails only when every point does."""
    X, Y = tiny
    grid = {"input_kernel_params": [{"gamma": 2.0}, {"gamma": 0.5}]}
    with pytest.warns(UserWarning, match=r"the param_grid point \{'input_kernel_params': \{'gamma': 2\.0\}\} "
                                         r"scored NaN or an infinite value at every lam"):
        res = select_model(_sisokr(), X, Y, lams=[1e-2, 1e-1], param_grid=grid, scoring=_nan_at(2.0),
                           random_state=0)
    skipped, kept = res["grid"]
    assert skipped["params"] == {"input_kernel_params": {"gamma": 2.0}} and np.isnan(skipped["scores"]).all()
    assert np.isnan(skipped["best_score"]) and np.isnan(skipped["best_lam"])
    assert res["best_params"]["input_kernel_params"] == {"gamma": 0.5} and np.isfinite(res["best_score"])
    assert res["best_score"] == kept["best_score"] and res["best_params"]["lam"] == kept["best_lam"]
    with pytest.warns(UserWarning), pytest.raises(
            ValueError, match="^every point of param_grid, at every lam, scored NaN or an infinite value"):
        select_model(_sisokr(), X, Y, lams=[1e-2], param_grid={"input_kernel_params": [{"gamma": 2.0}] * 2},
                     scoring=_nan_at(2.0), random_state=0)


def test_nan_and_infinite_scores_are_never_the_best(tiny):
    """A lam scoring +inf was chosen over the finite ones (only NaN was set aside)."""
    from sprokr.model_selection import LambdaSearchCV

    X, Y = tiny
    lams = [1e-2, 1e-1]

    def scorer(est, X, Y):
        return float("inf") if est.lam == 1e-2 else -1.0

    s = LambdaSearchCV(_sisokr(), lams=lams, scoring=scorer, refit=False, random_state=0).fit(X, Y)
    assert s.best_lam_ == 1e-1 and s.best_score_ == -1.0
    with pytest.raises(ValueError, match="^every lam scored NaN or an infinite value"):
        LambdaSearchCV(_sisokr(), lams=lams, scoring=lambda e, X, Y: float("nan"), random_state=0).fit(X, Y)


def test_select_model_names_the_m_x_size_that_scores_nan_at_every_lam(tiny):
    """A size of the m_x growth with no finite score has no error to compare: refused, named."""
    from sprokr.model_selection import kernel_loss_scorer

    X, Y = tiny

    def scorer(est, X, Y):
        return float("nan") if est.m_x == 4 else kernel_loss_scorer(est, X, Y)

    with pytest.raises(ValueError, match=r"^every lam scored NaN or an infinite value on the validation data at "
                                         r"m_x=4 \(m_x_grid\)"):
        select_model(_sisokr(), X, Y, lams=[1e-2], m_x_grid=[2, 4], n_iter_no_change=3, scoring=scorer,
                     random_state=0)


def _spy():
    """A kernel-loss scorer recording its calls (a selection that fitted and scored something)."""
    from sprokr.model_selection import kernel_loss_scorer

    calls = []

    def scorer(est, X, Y):
        calls.append(est.get_params()["m_x"] if "m_x" in est.get_params() else None)
        return kernel_loss_scorer(est, X, Y)

    return scorer, calls


@pytest.mark.parametrize("validation_data", [False, True])
def test_sketch_sizes_beyond_the_training_part_are_refused_before_any_fit(tiny, validation_data):
    """m_x_grid=[2, 4, 50] on 10 training pairs fitted the grid and the sizes 2 and 4, then failed
    at 50 as 'input_sketch: sketch size m_x=50 is larger than the number of samples' (and went
    through when the growth stopped before 50); m_y_grid named m_y, not m_y_grid."""
    X, Y = tiny
    kw = dict(validation_data=(X[9:], Y[9:])) if validation_data else dict(validation_fraction=3 / 12)
    Xf, Yf = (X[:9], Y[:9]) if validation_data else (X, Y)
    part = "the training data X, Y" if validation_data else r"the training part of X, Y \(validation_fraction"
    scorer, calls = _spy()
    for name in ("m_x_grid", "m_y_grid"):
        with pytest.raises(ValueError, match=f"^{name} holds the size 50, but {part}.* has 9 samples: .*at most 9"):
            select_model(_sisokr(), Xf, Yf, lams=[1e-2], scoring=scorer, n_iter_no_change=5, random_state=0,
                         **{name: [2, 4, 50]}, **kw)
    assert calls == []
    res = select_model(_sisokr(), Xf, Yf, lams=[1e-2], m_x_grid=[2, 9], m_y_grid=[2, 9], n_iter_no_change=5,
                       random_state=0, **kw)
    assert res["n_train"] == 9 and res["m_x"]["m"] == [2, 9]


def test_per_region_sizes_and_sketchless_grids(tiny):
    """m_x per region (LocalKernelRidgeRegressor: a region no larger is fitted exactly) may exceed
    the training part; an estimator without m_x is named before any fit, not after the grid."""
    from sprokr.models import LocalKernelRidgeRegressor

    X, Y = tiny
    est = LocalKernelRidgeRegressor(n_regions=2, m_x=3, random_state=0)
    res = select_model(est, X, Y, lams=[1e-2], m_x_grid=[2, 50], n_iter_no_change=5, random_state=0)
    assert res["m_x"]["m"] == [2, 50]
    scorer, calls = _spy()
    with pytest.raises(ValueError, match="^m_x_grid needs an estimator with an input sketch size m_x; IOKR has none"):
        select_model(IOKR(), X, Y, lams=[1e-2], m_x_grid=[2], scoring=scorer, random_state=0)
    assert calls == []


def test_sketch_size_helpers_refuse_sizes_beyond_the_samples_before_any_fit(tiny):
    """select_m_x fitted m_x=2 and 4 before its fit at 50 failed; perfect_h_curve named m_y, not m_grid."""
    from sprokr.model_selection import select_m_x

    X, Y = tiny
    with pytest.raises(ValueError, match="^m_grid holds the size 50, but X has 8 samples"):
        select_m_x(X[:8], Y[:8], X[8:], Y[8:], [2, 4, 50], budget_s=100, n_iter_no_change=5, rtol=0,
                   progress=False, output_sketch="subsample", m_y=3)
    with pytest.raises(ValueError, match="^m_grid holds the size 50, but Y_train has 8 samples"):
        perfect_h_curve(Y[:8], Y[8:], "gaussian", [2, 50])
    assert select_m_x(X[:8], Y[:8], X[8:], Y[8:], [2, 8], budget_s=100, n_iter_no_change=5, progress=False,
                      output_sketch="subsample", m_y=3)["m"] == [2, 8]


def test_select_model_checks_every_point_at_the_largest_sizes_before_any_fit(tiny):
    """Settings the estimator refuses were found only when a fit reached them: an m_x_grid
    with input_sketch=None (or a sketch instance of another size) after the whole param_grid,
    a bad value at the grid's second point after the first one's fit.  Every point is checked
    (check_params, no data) at the largest sizes before any fit."""
    from sprokr.sketches import SubSample

    X, Y = tiny
    scorer, calls = _spy()
    kw = dict(lams=[1e-2], scoring=scorer, n_iter_no_change=5, random_state=0)
    with pytest.raises(ValueError, match=r"^m_x=4 was given but input_sketch is None \(select_model: checked at "
                                         r"m_x=4 \(the largest size m_x_grid may reach\)\)"):
        select_model(SISOKR(output_sketch="subsample", m_y=3, random_state=0), X, Y, m_x_grid=[2, 4], **kw)
    with pytest.raises(ValueError, match=r"^m_x=4 differs from the sketch instance's m=3 \(select_model: "):
        select_model(_sisokr().set_params(input_sketch=SubSample(m=3)), X, Y, m_x_grid=[3, 4], **kw)
    with pytest.raises(ValueError, match=r"rcond.*\(select_model: checked at the param_grid point \{'rcond': -1\.0\}, "
                                         r"with m_y=4 \(the largest size m_y_grid may reach\)\)$"):
        select_model(_sisokr(), X, Y, param_grid={"rcond": [1e-10, -1.0]}, m_y_grid=[2, 4], **kw)
    assert calls == []
    # an output sketch instance is drawn at the curve's sizes: not refused for its own m
    res = select_model(_sisokr().set_params(output_sketch=SubSample(m=3)), X, Y, m_y_grid=[2, 4], **kw)
    assert res["best_params"]["m_y"] in (2, 4) and calls
    calls.clear()
    # the extended growth's largest size is the training part's (9 pairs here)
    with pytest.raises(ValueError, match=r"^m_x=9 differs from the sketch instance's m=3 .*m_x=9 \(the largest"):
        select_model(_sisokr().set_params(input_sketch=SubSample(m=3)), X, Y, m_x_grid=[3], extend_grids=True,
                     validation_fraction=3 / 12, **kw)
    assert calls == []
