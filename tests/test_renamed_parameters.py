"""One vocabulary (docs/parameters.md): the former parameter names keep working until sprokr
0.3 with a FutureWarning naming the new one -- in constructors, set_params, GridSearchCV,
DSOKR's regressor_params, functions, model files of the command line, and models saved or
pickled by a sprokr from before the renames (tests/data/pre_rename, written by that code)."""
import contextlib
import importlib.util
import json
import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

import sprokr
from sprokr.deprecation import REMOVED_IN, RenamedParameterWarning, renamed_message
from sprokr.kernels import KernelFeatures
from sprokr.models import (DSOKR, DSOKREnsemble, JointQuantileRegressor, MLPSurrogate, RFFKernelMachine,
                           SketchedKernelMachine)

OLD = Path(__file__).resolve().parent / "data" / "pre_rename"
HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(60)
    Y = (X @ rng.standard_normal((3, 4)) > 0).astype(int)
    T = rng.standard_normal((60, 2))
    return X, y, Y, T


@contextlib.contextmanager
def renamed(*patterns):
    """Records the block's warnings: at least one RenamedParameterWarning, and one matching
    each regex of ``patterns`` (``pytest.warns`` would re-raise the others, errors here)."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        yield rec
    messages = [str(w.message) for w in rec if issubclass(w.category, RenamedParameterWarning)]
    assert messages, "no RenamedParameterWarning"
    for pattern in patterns:
        assert any(re.search(pattern, m) for m in messages), (pattern, messages)


def no_renamed_warning():
    """A context in which any RenamedParameterWarning fails the test."""
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error", RenamedParameterWarning)
    return ctx


def build_old(cls, old, common):
    """``cls(**old, **common)``: one RenamedParameterWarning per former name, each naming the new one."""
    with renamed() as rec:
        est = cls(**old, **common)
    messages = [str(w.message) for w in rec if issubclass(w.category, RenamedParameterWarning)]
    assert len(messages) == len(old), messages
    for name in old:
        assert renamed_message(name, cls.renamed_parameters[name]) in messages
    assert all(f"removed in sprokr {REMOVED_IN}" in m for m in messages)
    return est


# (class, former keywords, the same with the new names, fit arguments, output method)
def _cases():
    cases = [
        ("SketchedKernelMachine", SketchedKernelMachine,
         dict(sketch="psg", m=20, sketch_params={"p": 0.1}, solver="lbfgs"),
         dict(input_sketch="psg", m_x=20, input_sketch_params={"p": 0.1}, optimizer="lbfgs"),
         dict(loss="huber", lam=1e-3, random_state=0), "y", "predict"),
        ("JointQuantileRegressor", JointQuantileRegressor,
         dict(sketch="subsample", m=20, solver="lbfgs"),
         dict(input_sketch="subsample", m_x=20, optimizer="lbfgs"),
         dict(taus=(0.3, 0.7), random_state=0), "y", "predict"),
        ("RFFKernelMachine-gamma", RFFKernelMachine, dict(gamma=0.5, solver="closed_form"),
         dict(kernel_params={"gamma": 0.5}, optimizer="closed_form"), dict(n_components=30, random_state=0), "y",
         "predict"),
        ("RFFKernelMachine-sigma2", RFFKernelMachine, dict(sigma2=2.0),
         dict(kernel="gaussian", kernel_params={"sigma2": 2.0}), dict(n_components=30, random_state=0), "y",
         "predict"),
        ("KernelFeatures", KernelFeatures, dict(n_components=15, sketch="psg", sketch_params={"p": 0.1}),
         dict(m_x=15, input_sketch="psg", input_sketch_params={"p": 0.1}), dict(random_state=0), None,
         "transform"),
        ("MLPSurrogate", MLPSurrogate, dict(alpha=1e-2, learning_rate_init=3e-3, patience=2),
         dict(lam=1e-2, learning_rate=3e-3, n_iter_no_change=2),
         dict(hidden_layer_sizes=(8,), max_epochs=6, random_state=0), "T", "predict"),
    ]
    if HAS_TORCH:
        from sprokr.models import TorchRegressor

        cases.append(("TorchRegressor", TorchRegressor, dict(lr=3e-3, weight_decay=1e-2, patience=2),
                      dict(learning_rate=3e-3, lam=1e-2, n_iter_no_change=2),
                      dict(hidden_layer_sizes=(8,), max_epochs=6, num_threads=1, random_state=0), "T", "predict"))
    return cases


CASES = _cases()


@pytest.mark.parametrize("name, cls, old, new, common, target, method", CASES, ids=[c[0] for c in CASES])
def test_former_names_warn_and_fit_the_same_model(name, cls, old, new, common, target, method, data):
    X, y, _, T = data
    fit_args = (X,) if target is None else (X, {"y": y, "T": T}[target])
    old_est = build_old(cls, old, common)
    ctx = no_renamed_warning()
    try:
        new_est = cls(**new, **common)
        # the constructor stored the new names: the same parameters, cloned without a warning
        assert old_est.get_params() == new_est.get_params()
        assert not set(old) & set(old_est.get_params())
        again = clone(old_est)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            warnings.filterwarnings("ignore", message=".*(converge|max_epochs|max_iter).*")
            P_old = getattr(old_est.fit(*fit_args), method)(X[:7])
            P_new = getattr(new_est.fit(*fit_args), method)(X[:7])
            P_again = getattr(again.fit(*fit_args), method)(X[:7])
    finally:
        ctx.__exit__(None, None, None)
    np.testing.assert_array_equal(P_old, P_new)
    np.testing.assert_array_equal(P_again, P_new)


@pytest.mark.parametrize("name, cls, old, new, common, target, method", CASES, ids=[c[0] for c in CASES])
def test_set_params_takes_former_names(name, cls, old, new, common, target, method):
    est = cls(**common)
    for k, v in old.items():
        with renamed(rf"set_params: `{k}` is deprecated"):
            assert est.set_params(**{k: v}) is est
    assert est.get_params() == cls(**new, **common).get_params()


def test_old_and_new_name_together_is_an_error():
    with pytest.raises(TypeError, match="`m` and `m_x` were both given"):
        with renamed():
            SketchedKernelMachine(m=10, m_x=20)
    with pytest.raises(TypeError, match="both given"):
        with renamed():
            RFFKernelMachine(gamma=0.5, kernel_params={"gamma": 0.2})
    with pytest.raises(TypeError, match="`estimators` and `estimator`"):
        with renamed():
            DSOKREnsemble(DSOKR(), estimators=DSOKR())


def test_into_dict_rename_never_modifies_the_users_dict():
    kp = {"sigma2": 3.0}
    est = RFFKernelMachine(kernel_params=kp)
    with renamed():
        est.set_params(sigma2=None)  # the former default: the key unset
    assert kp == {"sigma2": 3.0} and est.kernel_params == {}
    with renamed():
        est.set_params(gamma=0.25)
    assert est.kernel_params == {"gamma": 0.25} and kp == {"sigma2": 3.0}


def test_rff_takes_the_gaussian_kernel_only(data):
    X, y, _, _ = data
    with pytest.raises(ValueError, match="Gaussian kernel only.*'laplacian'"):
        RFFKernelMachine(kernel="laplacian").fit(X, y)
    with pytest.raises(ValueError, match="gamma"):
        RFFKernelMachine(kernel_params={"gamma": -1.0}).fit(X, y)
    with pytest.raises(ValueError, match="either gamma or sigma2"):
        RFFKernelMachine(kernel_params={"gamma": 1.0, "sigma2": 1.0}).fit(X, y)
    from sprokr.kernels import GaussianKernel

    a = RFFKernelMachine(kernel=GaussianKernel(sigma2=2.0), random_state=0).fit(X, y).predict(X[:5])
    b = RFFKernelMachine(kernel_params={"sigma2": 2.0}, random_state=0).fit(X, y).predict(X[:5])
    np.testing.assert_array_equal(a, b)


def test_grid_search_with_new_and_former_names(data):
    X, y, _, _ = data
    base = SketchedKernelMachine(input_sketch="subsample", random_state=0)
    new = GridSearchCV(base, {"m_x": [10, 20], "optimizer": ["closed_form"]}, cv=2).fit(X, y)
    assert new.best_params_["m_x"] in (10, 20)
    with renamed("`m` is deprecated"):
        old = GridSearchCV(base, {"m": [10, 20], "optimizer": ["closed_form"]}, cv=2).fit(X, y)
    np.testing.assert_array_equal(old.cv_results_["mean_test_score"], new.cv_results_["mean_test_score"])


def test_dsokr_regressor_params_with_former_names(data):
    X, _, Y, _ = data
    common = {"hidden_layer_sizes": (8,), "max_epochs": 5}
    with renamed("`alpha` is deprecated.*use `lam`"):
        old = DSOKR(m_y=10, regressor="mlp", regressor_params={**common, "alpha": 1e-2, "patience": 2},
                    random_state=0)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*max_epochs.*")
            P_old = old.fit(X, Y).predict_scores(X[:5])
    new = DSOKR(m_y=10, regressor="mlp", regressor_params={**common, "lam": 1e-2, "n_iter_no_change": 2},
                random_state=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*max_epochs.*")
        P_new = new.fit(X, Y).predict_scores(X[:5])
    np.testing.assert_array_equal(P_old, P_new)
    assert old.regressor_.lam == 1e-2 and old.regressor_.n_iter_no_change == 2


def test_dsokr_ensemble_estimator(data):
    X, _, Y, _ = data
    member = DSOKR(m_y=10, regressor="kernel_ridge")
    with renamed("use `estimator`"):
        old = DSOKREnsemble(estimators=member, n_estimators=2, random_state=0)
    new = DSOKREnsemble(estimator=member, n_estimators=2, random_state=0)
    assert old.get_params() == new.get_params()
    np.testing.assert_array_equal(old.fit(X, Y).predict_scores(X[:5]), new.fit(X, Y).predict_scores(X[:5]))
    with pytest.raises(TypeError, match="estimator must be a DSOKR"):
        DSOKREnsemble(estimator=[]).fit(X, Y)
    # a nested parameter under the former name
    with renamed("set_params: `estimators` is deprecated"):
        new.set_params(estimators__m_y=7)
    assert new.estimator.m_y == 7


def test_functions_take_former_keywords(data):
    from sprokr.model_selection import grow_until_plateau, select_model

    errors = {10: 1.0, 20: 0.99, 40: 0.99, 80: 0.5}
    evaluate = lambda m: (errors[m], 0.0)  # noqa: E731
    with renamed("`patience` is deprecated.*use `n_iter_no_change`"):
        old = grow_until_plateau([10, 20, 40, 80], evaluate, rtol=0.05, patience=3)
    assert old == grow_until_plateau([10, 20, 40, 80], evaluate, rtol=0.05, n_iter_no_change=3)
    assert old["selected_m"] == 80  # patience 3 reaches the last size
    X, _, Y, _ = data
    est = sprokr.SIOKR(input_sketch="subsample", m_x=10, random_state=0)
    kw = dict(lams=[1e-3, 1e-1], m_x_grid=[10, 20, 30], rtol=0.5, random_state=0)
    with renamed("select_model: |`patience`"):
        a = select_model(est, X, Y, patience=2, **kw)
    b = select_model(est, X, Y, n_iter_no_change=2, **kw)
    assert a["best_params"] == b["best_params"] and a["m_x"]["m"] == b["m_x"]["m"]
    # the kernel machines' input sketch size is m_x too: select_model grows it
    machine = SketchedKernelMachine(input_sketch="subsample", m_x=10, random_state=0)
    res = select_model(machine, X, Y[:, 0].astype(float), lams=[1e-3], m_x_grid=[10, 20], random_state=0)
    assert res["m_x"]["param"] == "m_x" and res["best_params"]["m_x"] in (10, 20)


@pytest.mark.skipif(importlib.util.find_spec("sprokr_chem") is None, reason="needs sprokr-chem")
def test_molecule_retriever_dsokr_lams():
    from sprokr_chem import MoleculeRetriever

    with renamed("`alphas` is deprecated.*use `dsokr_lams`"):
        r = MoleculeRetriever(method="dsokr", alphas=[1e-2, 1e-1])
    assert r.get_params()["dsokr_lams"] == [1e-2, 1e-1] and "alphas" not in r.get_params()
    with pytest.raises(ValueError, match="dsokr_lams"):
        MoleculeRetriever(method="dsokr", dsokr_lams=[1e-3, -1.0]).fit(["CCO", "CCC", "CCN", "CO"] * 3,
                                                                       ["CCO", "CCC", "CCN", "CO"] * 3)


# ----------------------------------------------------------------------- saved models
SAVED = json.loads((OLD / "predictions.json").read_text())


@pytest.mark.parametrize("name", sorted(SAVED))
def test_models_saved_before_the_renames_load_under_the_new_names(name, tmp_path):
    if "torch" in name and not HAS_TORCH:
        pytest.skip("needs torch")
    path = OLD / f"{name}.sprokr"
    with renamed() as rec:
        model = sprokr.load(path)
    found = [str(w.message) for w in rec if issubclass(w.category, RenamedParameterWarning)]
    # one warning for the file, naming the renamed parameters and how to keep the file loadable
    assert len(found) == 1 and "save it again" in found[0] and str(path) in found[0]
    Xq = np.load(OLD / "Xq.npy")
    out = (model.transform if hasattr(model, "transform") else
           model.predict_scores if hasattr(model, "predict_scores") else model.predict)(Xq)
    np.testing.assert_allclose(np.asarray(out, dtype=float), SAVED[name], rtol=1e-10, atol=1e-12)
    params = model.get_params(deep=False)
    old_names = set(getattr(type(model), "renamed_parameters", {}))
    assert not old_names & set(vars(model)), "former names left in the loaded model"
    assert set(params) == set(type(model)._get_param_names())
    # saved again: the new names, no warning; refitting a clone works
    again_path = model.save(tmp_path / "again.sprokr")
    ctx = no_renamed_warning()
    try:
        again = sprokr.load(again_path)
    finally:
        ctx.__exit__(None, None, None)
    assert again.get_params(deep=False).keys() == params.keys()


def test_loaded_old_models_record_the_new_values():
    with renamed(r"SketchedKernelMachine\.m -> m_x"):
        skm = sprokr.load(OLD / "skm.sprokr")
    assert (skm.input_sketch, skm.m_x, skm.optimizer, skm.loss) == ("subsample", 15, "lbfgs", "huber")
    with renamed(r"RFFKernelMachine\.gamma"):
        rff = sprokr.load(OLD / "rff.sprokr")
    assert (rff.kernel, rff.kernel_params, rff.optimizer) == ("gaussian", {"gamma": 0.5}, "auto")
    with renamed():
        kf = sprokr.load(OLD / "kernel_features.sprokr")
    assert (kf.m_x, kf.input_sketch, kf.n_components_) == (10, "subsample", kf.features_.rank)
    with renamed(r"MLPSurrogate\.alpha -> lam"):
        mlp = sprokr.load(OLD / "mlp.sprokr")
    assert (mlp.lam, mlp.learning_rate, mlp.n_iter_no_change) == (1e-3, 1e-2, 3)
    with renamed(r"DSOKREnsemble\.estimators -> estimator"):
        ens = sprokr.load(OLD / "dsokr_ensemble.sprokr")
    assert isinstance(ens.estimator, DSOKR)


def test_pickled_model_from_before_the_renames():
    with renamed("saved with sprokr < 0.2: `m` is deprecated"):
        model = pickle.loads((OLD / "skm.pkl").read_bytes())
    assert (model.m_x, model.input_sketch, model.optimizer) == (15, "subsample", "lbfgs")
    np.testing.assert_allclose(model.predict(np.load(OLD / "Xq.npy")), SAVED["skm"], rtol=1e-10, atol=1e-12)
    ctx = no_renamed_warning()
    try:
        again = pickle.loads(pickle.dumps(model))
    finally:
        ctx.__exit__(None, None, None)
    assert again.get_params() == model.get_params()


# ----------------------------------------------------------------------- command line
MODEL_FILE = '''estimator = "SketchedKernelMachine"
random_state = 0

[params]
lam = 1e-3
sketch = "subsample"
m = 30
solver = "closed_form"

[input]
columns = ["x0", "x1", "x2"]

[output]
columns = ["y"]
'''


def test_cli_model_file_with_former_names(tmp_path, capsys, data):
    import csv
    import tomllib

    from sprokr.cli import main

    X, y, _, _ = data
    with open(tmp_path / "train.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["x0", "x1", "x2", "y"])
        w.writerows([[*map(float, x), float(t)] for x, t in zip(X, y)])
    (tmp_path / "old.toml").write_text(MODEL_FILE)
    capsys.readouterr()
    # the command line prints each warning once, one line each, on standard error (the
    # test configuration turns these warnings into errors: let them through as a user sees them)
    warnings.simplefilter("default", RenamedParameterWarning)
    assert main(["fit", "--config", str(tmp_path / "old.toml"), "--train", str(tmp_path / "train.csv"),
                 "-o", str(tmp_path / "m.sprokr")]) == 0
    assert "`m` is deprecated" in capsys.readouterr().err
    model = sprokr.load(tmp_path / "m.sprokr")
    assert (model.m_x, model.optimizer) == (30, "closed_form")
    # sprokr select writes the chosen configuration with the new names
    assert main(["select", "--config", str(tmp_path / "old.toml"), "--train", str(tmp_path / "train.csv"),
                 "-o", str(tmp_path / "chosen.toml")]) == 0
    assert "is deprecated" in capsys.readouterr().err
    chosen = tomllib.loads((tmp_path / "chosen.toml").read_text())["params"]
    assert {"input_sketch", "m_x", "optimizer", "lam"} <= set(chosen) and not {"sketch", "m", "solver"} & set(chosen)
    capsys.readouterr()
