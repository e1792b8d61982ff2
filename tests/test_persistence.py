"""The safe model format: round trips of every estimator, corruption, versions, plugins, no pickle."""
import hashlib
import io
import dataclasses
import json
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import sprokr
from sprokr import (
    DSOKR, IOKR, ISOKR, SIOKR, SISOKR, CandidateIndex, CandidateSets, DSOKREnsemble,
    JointQuantileRegressor, RFFKernelMachine, SketchedKernelMachine,
)
from sprokr.kernels import GaussianKernel
from sprokr.models import LocalKernelRidgeRegressor, NeighbourKernelRidgeRegressor, graph_laplacian_matrix
from sprokr.models.regressors import KernelRidgeRegressor, MLPSurrogate
from sprokr.persistence import (
    FORMAT_VERSION, MissingPluginError, ModelFormatError, UnsavableObjectError, read_manifest, save,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


# ----------------------------------------------------------------------------- data
def _multilabel(seed=1, n=160, d=6, labels=8):
    r = np.random.default_rng(seed)
    X = r.standard_normal((n, d))
    Y = (X @ r.standard_normal((d, labels)) > 0.7).astype(np.int8)
    return X[:120], Y[:120], X[120:], Y[120:]


ML = _multilabel()
_R = np.random.default_rng(3)
XR = _R.standard_normal((150, 4))
YR = np.sin(XR[:, 0]) + 0.3 * XR[:, 1] + 0.1 * _R.standard_normal(150)
YR2 = np.column_stack([YR, np.cos(XR[:, 2]), XR[:, 3] ** 2])

KX, KY = {"gamma": 0.2}, {"gamma": 0.5}
STRUCTURED = {
    "IOKR": lambda: IOKR(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY),
    "SIOKR-subsample": lambda: SIOKR(lam=1e-3, m_x=40, input_kernel_params=KX, output_kernel_params=KY,
                                     random_state=0),
    "ISOKR-psg": lambda: ISOKR(lam=1e-3, m_y=25, output_sketch_params={"p": 0.1}, input_kernel_params=KX,
                               output_kernel_params=KY, random_state=0),
    "SISOKR-psr-gaussian": lambda: SISOKR(lam=1e-3, input_sketch="psr", m_x=40, input_sketch_params={"p": 0.1},
                                          output_sketch="gaussian", m_y=20, random_state=1),
    "SISOKR-accumulation-countsketch-float32": lambda: SISOKR(
        lam=1e-3, input_sketch="accumulation", m_x=30, input_sketch_params={"m_acc": 4},
        output_sketch="countsketch", m_y=20, dtype="float32", random_state=np.random.default_rng(2)),
    "SISOKR-nystrom-identity-eigh": lambda: SISOKR(lam=1e-3, input_sketch="nystrom", m_x=30,
                                                   output_sketch="identity", solver="eigh", random_state=0),
    "DSOKR-mlp": lambda: DSOKR(m_y=25, regressor_params={"hidden_layer_sizes": (16,), "max_epochs": 4},
                               random_state=0),
    "DSOKR-kernel_ridge-sketched": lambda: DSOKR(
        output_sketch="psg", m_y=25, output_sketch_params={"p": 0.2}, regressor="kernel_ridge",
        regressor_params={"lam": 1e-3, "input_sketch": "subsample", "m_x": 30}, validation_fraction=0.2,
        random_state=0),
    "DSOKR-ridge": lambda: DSOKR(m_y=25, regressor="ridge", regressor_params={"alpha": 0.1}, random_state=0),
    "DSOKR-instance-regressor": lambda: DSOKR(m_y=25, regressor=KernelRidgeRegressor(lam=1e-2),
                                              random_state=0),
    "DSOKREnsemble-mean": lambda: DSOKREnsemble(
        DSOKR(m_y=20, regressor="kernel_ridge", regressor_params={"lam": 1e-3}), n_estimators=2, random_state=0),
    "DSOKREnsemble-max-mixed": lambda: DSOKREnsemble(
        [DSOKR(m_y=20, regressor="kernel_ridge", random_state=1),
         DSOKR(output_sketch="psr", m_y=20, output_sketch_params={"p": 0.2}, regressor="kernel_ridge",
               random_state=2)], aggregation="max", weights=[1.0, 2.0]),
}
MACHINES = {
    "SKM-exact-square": lambda: SketchedKernelMachine(lam=1e-3),
    "SKM-subsample-square": lambda: SketchedKernelMachine(lam=1e-3, input_sketch="subsample", m_x=30, random_state=0),
    "SKM-psg-huber-adam": lambda: SketchedKernelMachine(
        loss="huber", loss_params={"kappa": 0.5}, lam=1e-3, input_sketch="psg", m_x=30, input_sketch_params={"p": 0.1},
        max_epochs=5, normalize_y=True, random_state=0),
    "SKM-gaussian-epsilon-float32": lambda: SketchedKernelMachine(
        loss="epsilon_insensitive", lam=1e-3, input_sketch="gaussian", m_x=20, max_epochs=3, dtype="float32",
        random_state=0),
    "SKM-exact-huber": lambda: SketchedKernelMachine(loss="huber", lam=1e-2, max_epochs=3, random_state=0),
    "SKM-multioutput-graph": lambda: SketchedKernelMachine(
        lam=1e-3, input_sketch="countsketch", m_x=25, random_state=0,
        output_matrix=graph_laplacian_matrix(np.ones((3, 3)) - np.eye(3), mu=0.3)),
    "JointQuantileRegressor": lambda: JointQuantileRegressor(taus=(0.1, 0.5, 0.9), input_sketch="psr", m_x=30,
                                                             input_sketch_params={"p": 0.1}, max_epochs=4,
                                                             random_state=0),
    "RFF-square": lambda: RFFKernelMachine(n_components=40, random_state=0),
    "RFF-pinball": lambda: RFFKernelMachine(n_components=30, loss="pinball", loss_params={"tau": 0.7},
                                            max_epochs=3, random_state=np.random.default_rng(0)),
}


# ----------------------------------------------------------------------------- comparison
def _same_outputs(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert type(a) is type(b) and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
        return
    if hasattr(a, "indices") and hasattr(a, "scores"):  # Decoded
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.scores, b.scores)  # bit-identical, not approximately
        return
    assert isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
    import networkx as nx

    for x, y in zip(a, b):
        if isinstance(x, nx.Graph):
            assert nx.utils.graphs_equal(x, y)
        else:
            assert type(x) is type(y) and x == y


def assert_same_state(a, b, path="model", seen=None):
    """Recursive equality of two object graphs: types, dtypes, array bits, attributes."""
    seen = set() if seen is None else seen
    if (id(a), id(b)) in seen:
        return
    seen.add((id(a), id(b)))
    assert type(a) is type(b), f"{path}: {type(a)} != {type(b)}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        if a.dtype.hasobject:
            for i, (x, y) in enumerate(zip(a.ravel(), b.ravel())):
                assert_same_state(x, y, f"{path}[{i}]", seen)
        else:
            np.testing.assert_array_equal(a, b, err_msg=path, strict=True)
    elif sp.issparse(a):
        assert a.format == b.format and a.shape == b.shape, path
        for part in ("data", "indices", "indptr") if a.format != "coo" else ("data", "row", "col"):
            assert_same_state(getattr(a, part), getattr(b, part), f"{path}.{part}", seen)
    elif isinstance(a, float):
        assert a == b or (np.isnan(a) and np.isnan(b)), path
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_state(x, y, f"{path}[{i}]", seen)
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            assert_same_state(a[k], b[k], f"{path}[{k!r}]", seen)
    elif isinstance(a, np.random.Generator):
        assert_same_state(a.bit_generator.state, b.bit_generator.state, path, seen)
    elif isinstance(a, np.random.RandomState):
        assert_same_state(a.get_state(legacy=False), b.get_state(legacy=False), path, seen)
    elif type(a).__module__.startswith("torch"):
        assert repr(a) == repr(b) and a.training == b.training, path
        sa, sb = a.state_dict(), b.state_dict()
        assert list(sa) == list(sb), path
        for k in sa:
            np.testing.assert_array_equal(sa[k].numpy(), sb[k].numpy(), err_msg=f"{path}.{k}", strict=True)
    elif type(a).__module__.startswith("networkx"):
        import networkx as nx

        assert nx.utils.graphs_equal(a, b), path
    elif hasattr(a, "__dict__"):
        da, db = dict(vars(a)), dict(vars(b))
        if type(a).__name__ == "MLPRegressor":  # Adam's moments are deliberately not saved
            da.pop("_optimizer", None)
        if type(a).__name__ == "CandidateIndex":  # derived forms are recomputed on demand
            da.pop("_derived", None)
            db.pop("_derived", None)
        if type(a).__name__ == "KernelExpansion":  # the prepared support: prepared again on use
            da.pop("_operand", None)
            db.pop("_operand", None)
        assert set(da) == set(db), f"{path}: attributes {set(da) ^ set(db)}"
        for k in da:
            assert_same_state(da[k], db[k], f"{path}.{k}", seen)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _roundtrip(model, tmp_path, name="model.sprokr"):
    path = model.save(tmp_path / name)
    assert path == tmp_path / name and path.exists()
    loaded = sprokr.load(path)
    assert type(loaded) is type(model)
    assert_same_state(model, loaded)
    return loaded, path


# ----------------------------------------------------------------------------- round trips
@pytest.fixture(scope="module")
def fitted_structured():
    Xtr, Ytr, _, _ = ML
    return {name: make().fit(Xtr, Ytr) for name, make in STRUCTURED.items()}


@pytest.mark.parametrize("name", list(STRUCTURED))
def test_structured_roundtrip_bit_identical(fitted_structured, name, tmp_path):
    _, Ytr, Xte, Yte = ML
    model = fitted_structured[name]
    loaded, _ = _roundtrip(model, tmp_path)
    _same_outputs(model.predict(Xte), loaded.predict(Xte))
    _same_outputs(model.predict_topk(Xte, k=4), loaded.predict_topk(Xte, k=4))
    if hasattr(model, "predict_coordinates"):
        np.testing.assert_array_equal(model.predict_coordinates(Xte), loaded.predict_coordinates(Xte))
    # a candidate index built before saving works with the loaded model (persistent owner token)
    cands = np.vstack([Ytr, Yte])
    index = model.make_candidate_index(cands)
    _same_outputs(model.predict_topk(Xte, candidates=index, k=3), loaded.predict_topk(Xte, candidates=index, k=3))
    # ... and an index saved on its own and loaded with the model
    index_path = index.save(tmp_path / "index.sprokr")
    index2 = sprokr.load(index_path, model=loaded)
    assert_same_state(index, index2, "index")
    _same_outputs(model.predict_topk(Xte, candidates=index, k=3), loaded.predict_topk(Xte, candidates=index2, k=3))
    if isinstance(model, DSOKREnsemble):
        return  # the ensemble does not take CandidateSets yet (issue 12, item 6)
    # per-query candidate sets, raw and over a loaded index
    sets = CandidateSets([cands[i:i + 15] for i in range(len(Xte))])
    _same_outputs(model.predict_topk(Xte, candidates=sets, k=2), loaded.predict_topk(Xte, candidates=sets, k=2))
    pool_sets = [np.arange(i, i + 30) % len(cands) for i in range(len(Xte))]
    _same_outputs(model.predict(Xte, candidates=CandidateSets.from_pool(index, pool_sets)),
                  loaded.predict(Xte, candidates=CandidateSets.from_pool(index2, pool_sets)))


@pytest.mark.parametrize("name", list(MACHINES))
def test_kernel_machine_roundtrip_bit_identical(name, tmp_path):
    y = YR2 if "multioutput" in name else YR
    model = MACHINES[name]().fit(XR[:100], y[:100])
    loaded, _ = _roundtrip(model, tmp_path)
    _same_outputs(model.predict(XR[100:]), loaded.predict(XR[100:]))
    assert type(loaded).load(tmp_path / "model.sprokr").get_params().keys() == model.get_params().keys()


def test_torch_regressor_roundtrip(tmp_path):
    pytest.importorskip("torch")
    Xtr, Ytr, Xte, _ = ML
    for params in ({"hidden_layer_sizes": (16, 8), "max_epochs": 3, "dropout": 0.1, "activation": "gelu"},
                   {"hidden_layer_sizes": (8,), "max_epochs": 2, "loss": "huber"}):
        model = DSOKR(m_y=20, regressor="torch_mlp", regressor_params=params, random_state=0).fit(Xtr, Ytr)
        loaded, _ = _roundtrip(model, tmp_path)
        _same_outputs(model.predict_topk(Xte, k=3), loaded.predict_topk(Xte, k=3))
    # a user-defined network architecture is code: refused at save time, with its attribute
    from sprokr.models.regressors import token_cnn

    model = DSOKR(m_y=20, regressor="torch_mlp", regressor_params={"module": token_cnn(10), "max_epochs": 1},
                  random_state=0).fit(np.random.default_rng(0).integers(1, 10, (len(Ytr), 7)), Ytr)
    with pytest.raises(UnsavableObjectError, match=r"DSOKR\.regressor_params\['module'\] of type builtins\.function"):
        model.save(tmp_path / "cnn.sprokr")


def test_regressors_saved_alone_and_loaded_models_refit(tmp_path):
    Xtr, _, Xte, _ = ML
    T = np.random.default_rng(0).standard_normal((len(Xtr), 3))
    for reg in (KernelRidgeRegressor(lam=1e-2, input_sketch="psg", m_x=20, input_sketch_params={"p": 0.2},
                                     random_state=0),
                MLPSurrogate(hidden_layer_sizes=(8,), max_epochs=3, random_state=0)):
        reg.fit(Xtr, T)
        loaded, _ = _roundtrip(reg, tmp_path)
        _same_outputs(reg.predict(Xte), loaded.predict(Xte))
    # a loaded model is an ordinary estimator: cloned, refitted, saved again
    model = SIOKR(m_x=30, random_state=0).fit(ML[0], ML[1])
    loaded, _ = _roundtrip(model, tmp_path)
    assert clone(loaded).get_params() == model.get_params()
    _same_outputs(loaded.fit(ML[0], ML[1]).predict_topk(ML[2], k=2), model.predict_topk(ML[2], k=2))


def test_unfitted_estimator_roundtrip(tmp_path):
    model = SISOKR(input_sketch="psr", m_x=20, input_sketch_params={"p": 0.1}, random_state=0)
    loaded, _ = _roundtrip(model, tmp_path)
    assert loaded.get_params() == model.get_params()


@pytest.mark.parametrize("refit", [True, False])
def test_lambda_search_cv_roundtrip(refit, tmp_path):
    """A fitted LambdaSearchCV is saved with its best estimator (refitted, or the path's copy)."""
    from sprokr.model_selection import LambdaSearchCV

    Xtr, Ytr, Xte, _ = ML
    search = LambdaSearchCV(SISOKR(input_sketch="subsample", m_x=30, output_sketch="subsample", m_y=20),
                            lams=[1e-4, 1e-3, 1e-2], refit=refit, random_state=0).fit(Xtr, Ytr)
    loaded, _ = _roundtrip(search, tmp_path)
    assert loaded.best_lam_ == search.best_lam_ and loaded.best_estimator_.solver_ == search.best_estimator_.solver_
    _same_outputs(search.predict(Xte), loaded.predict(Xte))
    _same_outputs(search.predict_topk(Xte, k=3), loaded.predict_topk(Xte, k=3))
    assert loaded.fit(Xtr, Ytr).best_lam_ == search.best_lam_
    from sprokr.metrics import f1_samples_scorer  # a scorer object is code: refused, named

    search.set_params(scoring=f1_samples_scorer())
    with pytest.raises(UnsavableObjectError, match=r"LambdaSearchCV\.scoring of type"):
        search.save(tmp_path / "scorer.sprokr")


def _path_copy(est, X, Y):
    from sprokr.model_selection import lambda_path

    return lambda_path(est, X, Y, [1e-4, 1e-3, 1e-2]).estimator_at(1e-3)


def _best_without_refit(est, X, Y):
    from sprokr.model_selection import LambdaSearchCV

    return LambdaSearchCV(est, lams=[1e-4, 1e-3, 1e-2], refit=False, random_state=0).fit(X, Y).best_estimator_


def _state_with_coef(est, X, Y):
    state = clone(est).fit_state(X, Y)
    return state.with_coef(np.random.default_rng(0).standard_normal(np.shape(clone(est).fit(X, Y).coef_)), lam=2e-3)


_FLAT = {"gamma": 1e-4}  # a very flat kernel: the float32 check fails at lam=1e-8 (float64 fallback)
_SKETCH = {"input_sketch": "subsample", "m_x": 30, "random_state": 0}
_SISOKR = {**_SKETCH, "output_sketch": "subsample", "m_y": 20}
# name: (model from (X, Y), regression targets?, dtype_ expected or None)
LESS_COMMON = {
    "path-SISOKR-sketched": (lambda X, Y: _path_copy(SISOKR(**_SISOKR), X, Y), False, None),
    "path-SISOKR-exact": (lambda X, Y: _path_copy(SISOKR(output_sketch="subsample", m_y=20, random_state=0), X, Y),
                          False, None),
    "path-KRR-exact": (lambda X, y: _path_copy(KernelRidgeRegressor(), X, y), True, None),
    "path-SKM-sketched": (lambda X, y: _path_copy(SketchedKernelMachine(**_SKETCH), X, y), True, None),
    "search-no-refit-SISOKR": (lambda X, Y: _best_without_refit(SISOKR(**_SKETCH), X, Y), False, None),
    "search-no-refit-SKM": (lambda X, y: _best_without_refit(SketchedKernelMachine(**_SKETCH), X, y), True, None),
    "fit_state-SISOKR": (lambda X, Y: SISOKR(**_SISOKR).fit_state(X, Y), False, None),
    "fit_state-KRR": (lambda X, y: KernelRidgeRegressor(**_SKETCH).fit_state(X, y), True, None),
    "fit_state-SKM": (lambda X, y: SketchedKernelMachine().fit_state(X, y), True, None),
    "with_coef-SISOKR": (lambda X, Y: _state_with_coef(SISOKR(**_SISOKR), X, Y), False, None),
    "with_coef-KRR": (lambda X, y: _state_with_coef(KernelRidgeRegressor(), X, y), True, None),
    "with_coef-SKM": (lambda X, y: _state_with_coef(SketchedKernelMachine(**_SKETCH), X, y), True, None),
    "float32-fallback-KRR": (lambda X, y: KernelRidgeRegressor(kernel_params=_FLAT, lam=1e-8, dtype="float32").fit(X, y),
                             True, np.float64),
    "float32-fallback-SISOKR": (lambda X, Y: SISOKR(input_kernel_params=_FLAT, lam=1e-8, dtype="float32").fit(X, Y),
                                False, np.float64),
    "float32-kept-KRR": (lambda X, y: KernelRidgeRegressor(dtype="float32").fit(X, y), True, np.float32),
    "float32-fallback-local": (lambda X, y: LocalKernelRidgeRegressor(
        n_regions=3, m_x=20, kernel_params=_FLAT, lam=1e-8, dtype="float32", random_state=0).fit(X, y), True, None),
    "neighbour": (lambda X, y: NeighbourKernelRidgeRegressor(n_neighbors=5).fit(X, y), True, None),
}


@pytest.mark.parametrize("name", list(LESS_COMMON))
@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")
def test_less_common_fitted_states_roundtrip(name, tmp_path):
    """lam-path copies, a search's unrefitted best estimator, fit_state (no solve) and its
    with_coef copy, float32 fits that fell back to float64 or kept float32, the local ridges:
    saved and loaded with their state, predicting bit-identically (a state alone: the same
    NotFittedError), and refitted."""
    make, regression, dtype = LESS_COMMON[name]
    Xtr, Ytr, Xte, _ = ML
    Y = Xtr @ np.arange(1.0, 7.0) if regression else Ytr
    model = make(Xtr, Y)
    loaded, _ = _roundtrip(model, tmp_path)
    for attr in ("dtype_", "solver_", "lam"):
        assert getattr(loaded, attr, None) == getattr(model, attr, None), attr
    if dtype is not None:
        assert loaded.dtype_ == dtype
    if name.startswith("fit_state"):
        for m in (model, loaded):
            with pytest.raises(NotFittedError):
                m.predict(Xte)
    else:
        _same_outputs(model.predict(Xte), loaded.predict(Xte))
        if not regression:
            _same_outputs(model.predict_topk(Xte, k=3), loaded.predict_topk(Xte, k=3))
    loaded.fit(Xtr, Y).predict(Xte)


def test_saving_is_deterministic_and_atomic(fitted_structured, tmp_path, monkeypatch):
    model = fitted_structured["SIOKR-subsample"]
    a, b = model.save(tmp_path / "a.sprokr"), model.save(tmp_path / "b.sprokr")
    assert a.read_bytes() == b.read_bytes()
    # a failed save leaves neither the target nor a temporary file behind
    bad = clone(model).set_params(input_kernel=_UserKernel(gamma=0.2), input_kernel_params=None)
    bad.fit(ML[0], ML[1])
    with pytest.raises(UnsavableObjectError, match=r"SIOKR\.input_kernel .*_UserKernel"):
        bad.save(tmp_path / "bad.sprokr")
    assert sorted(os.listdir(tmp_path)) == ["a.sprokr", "b.sprokr"]
    # that failure comes before any byte is written: a save failing in the middle of the
    # writing (the second array here) leaves the file it was replacing as it was, and no
    # temporary file
    import sprokr.persistence._container as container

    written, real = [], container.write_array

    def failing(zf, name, arr):
        if written:
            raise OSError(28, "No space left on device")
        written.append(name)
        return real(zf, name, arr)

    monkeypatch.setattr(container, "write_array", failing)
    old = a.read_bytes()
    other = clone(model).set_params(lam=0.1).fit(ML[0], ML[1])
    with pytest.raises(OSError, match="No space left"):
        other.save(a)
    assert written and a.read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == ["a.sprokr", "b.sprokr"]


def test_saving_to_a_directory_is_refused_before_writing(fitted_structured, tmp_path):
    # was found by os.replace once the whole file was written: "[Errno 21] Is a directory:
    # '<parent>/.<dir>.<hex>.tmp' -> '<dir>'"
    target = tmp_path / "models"
    target.mkdir()
    with pytest.raises(IsADirectoryError, match=f"cannot save to {target}: a directory; give a file path"):
        fitted_structured["SIOKR-subsample"].save(target)
    assert sorted(os.listdir(tmp_path)) == ["models"] and not os.listdir(target)


class _UserKernel(GaussianKernel):
    """A kernel class that is not registered: its code cannot be rebuilt by name."""


def test_unsavable_state_named(tmp_path):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.linear_model import Ridge

    model = DSOKR(m_y=20, regressor=make_pipeline(StandardScaler(), Ridge()), random_state=0).fit(ML[0], ML[1])
    with pytest.raises(UnsavableObjectError, match=r"DSOKR\.regressor of type sklearn\.pipeline\.Pipeline"):
        model.save(tmp_path / "m.sprokr")
    with pytest.raises(UnsavableObjectError, match="save expects a sprokr estimator"):
        save({"a": 1}, tmp_path / "m.sprokr")
    model = SIOKR(m_x=20, random_state=0).fit(ML[0], ML[1])
    model.extra_ = lambda x: x  # new learned state the format cannot hold: refused, never dropped
    with pytest.raises(UnsavableObjectError, match=r"SIOKR\.extra_ of type builtins\.function"):
        model.save(tmp_path / "m.sprokr")


# ----------------------------------------------------------------------------- plugins
@pytest.fixture(scope="module")
def qm9(qm9_smiles_graphs):
    from sprokr.datasets import sample_path
    from sprokr_chem.datasets import load_qm9

    smiles, graphs = qm9_smiles_graphs
    _, props, _ = load_qm9(sample_path("qm9_sample.csv"))
    props = (props - props.mean(0)) / props.std(0)
    return smiles[:120], graphs[:120], props[:120]


def test_plugin_kernels_roundtrip_on_qm9(qm9, tmp_path):
    smiles, graphs, props = qm9
    tr, te = slice(0, 90), slice(90, 120)
    setups = {
        # property vector -> SMILES (Morgan Tanimoto), candidates are SMILES strings
        "smiles": (SISOKR(input_kernel="gaussian", output_kernel="morgan_tanimoto", lam=1e-3,
                          input_sketch="subsample", m_x=40, output_sketch="subsample", m_y=30,
                          random_state=0), props, smiles),
        # property vector -> molecular graph (WL kernel), candidates are networkx graphs
        "graphs": (ISOKR(input_kernel="gaussian", output_kernel="wl", output_kernel_params={"n_iter": 2},
                         lam=1e-3, m_y=30, output_sketch_params={"p": 0.1}, random_state=0), props, graphs),
        # graph inputs (WL features as support) -> SMILES, exact IOKR
        "graph-in": (IOKR(input_kernel="wl", output_kernel="morgan_minmax", lam=1e-2), graphs, smiles),
        # DSOKR whose regressor is a sketched kernel ridge on graphs
        "dsokr-graph-in": (DSOKR(output_kernel="morgan_tanimoto", m_y=25, regressor="kernel_ridge",
                                 regressor_params={"kernel": "core_wl", "lam": 1e-2}, random_state=0),
                           graphs, smiles),
    }
    for name, (model, X, Y) in setups.items():
        model.fit(X[tr], Y[tr])
        loaded, path = _roundtrip(model, tmp_path, f"{name}.sprokr")
        _same_outputs(model.predict(X[te]), loaded.predict(X[te]))
        _same_outputs(model.predict_topk(X[te], k=3), loaded.predict_topk(X[te], k=3))
        index = model.make_candidate_index(Y)
        index2 = sprokr.load(index.save(tmp_path / f"{name}-index.sprokr"), model=loaded)
        _same_outputs(model.predict(X[te], candidates=index), loaded.predict(X[te], candidates=index2))
        manifest = read_manifest(path)
        used = {c["plugin"] for c in manifest["components"]}
        assert used <= set(manifest["plugins"]) and used - {"sprokr"}
        assert all(manifest["plugins"][p]["version"] for p in used)
    comps = {(c["kind"], c["name"], c["plugin"]) for c in read_manifest(tmp_path / "graphs.sprokr")["components"]}
    assert ("output_kernel", "wl", "graphs") in comps


@pytest.mark.parametrize("inputs", ["smiles", "vectors"])
def test_molecule_retriever_roundtrip(qm9, inputs, tmp_path):
    """MoleculeRetriever (method="auto": exact IOKR compared with DSOKR on a small grid)."""
    from sprokr_chem import MoleculeRetriever

    smiles, _, props = qm9
    X = smiles if inputs == "smiles" else props
    model = MoleculeRetriever(inputs=inputs, output_kernel="morgan_count_tanimoto", lams=[1e-3, 1e-2],
                              input_grid=[{"n": 4}] if inputs == "smiles" else None, m_x_grid=[30], m_y_grid=[20],
                              dsokr_lams=[1.0], random_state=0).fit(X[:90], smiles[:90])
    loaded, _ = _roundtrip(model, tmp_path)
    assert loaded.method_ == model.method_ and loaded.best_params_ == model.best_params_
    assert loaded.predict(X[90:], candidates=smiles) == model.predict(X[90:], candidates=smiles)
    a, b = model.predict_topk(X[90:], k=3), loaded.predict_topk(X[90:], k=3)
    assert a.smiles == b.smiles
    np.testing.assert_array_equal(a.scores, b.scores, strict=True)
    assert loaded.fit(X[:90], smiles[:90]).best_params_ == model.best_params_


def test_fgw_decoder_roundtrip(qm9, tmp_path):
    pytest.importorskip("ot")
    _, graphs, props = qm9
    model = IOKR(output_kernel="wl", decoder="fgw_barycenter", decoder_params={"n_neighbors": 2, "max_iter": 5},
                 lam=1e-2).fit(props[:40], graphs[:40])
    loaded, path = _roundtrip(model, tmp_path)
    _same_outputs(model.predict(props[40:43]), loaded.predict(props[40:43]))
    assert ("decoder", "fgw_barycenter", "ot") in {(c["kind"], c["name"], c["plugin"])
                                                   for c in read_manifest(path)["components"]}


# ----------------------------------------------------------------------------- tampering helpers
def _entries(path):
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _write_signed(path, entries, version=None):
    """Write entries as a well-formed, correctly checksummed model file (the documented layout)."""
    manifest = entries["manifest.json"]
    version = json.loads(manifest)["format_version"] if version is None else version
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        zf.comment = (f"sprokr-model {version} manifest-sha256={hashlib.sha256(manifest).hexdigest()} "
                      f"file-sha256=").encode() + b"0" * 64
    data = buf.getvalue()
    path.write_bytes(data[:-64] + hashlib.sha256(data[:-64]).hexdigest().encode())
    return path


def _edit_manifest(src, dst, edit, version=None):
    entries = _entries(src)
    m = json.loads(entries["manifest.json"])
    edit(m)
    entries["manifest.json"] = json.dumps(m).encode()
    return _write_signed(dst, entries, version)


@pytest.fixture(scope="module")
def small_model_file(tmp_path_factory):
    Xtr, Ytr, _, _ = ML
    model = SIOKR(lam=1e-3, m_x=15, random_state=0).fit(Xtr[:40], Ytr[:40])
    return model, model.save(tmp_path_factory.mktemp("small") / "small.sprokr")


def test_resigned_copy_loads(small_model_file, tmp_path):
    model, path = small_model_file
    copy = _write_signed(tmp_path / "copy.sprokr", _entries(path))
    assert_same_state(model, sprokr.load(copy))


# ----------------------------------------------------------------------------- corruption
def test_bit_flips_at_sampled_and_structural_positions_are_refused(small_model_file, tmp_path):
    """One flipped bit at 300 random positions and at every byte of the manifest's local
    header and of the file's last 260 bytes (central directory, end record, trailer) is
    refused as corrupted.  Every byte is covered by the whole-file checksum; testing all
    ~15000 positions would take about a minute, so they are sampled."""
    _, path = small_model_file
    data = path.read_bytes()
    rng = np.random.default_rng(0)
    positions = np.unique(np.concatenate([
        rng.integers(0, len(data), 300),  # everywhere
        np.arange(0, 64),  # local header of the manifest
        np.arange(len(data) - 260, len(data)),  # central directory, end record, trailer
    ]))
    bad = tmp_path / "bad.sprokr"
    for pos in positions:
        flipped = bytearray(data)
        flipped[pos] ^= 1 << int(rng.integers(8))
        bad.write_bytes(bytes(flipped))
        with pytest.raises(ModelFormatError, match="corrupted|truncated"):
            sprokr.load(bad)


@pytest.mark.parametrize("keep", [0, 3, 100, 0.5, -300, -65, -64, -1])
def test_truncated_files_are_refused(small_model_file, tmp_path, keep):
    _, path = small_model_file
    data = path.read_bytes()
    n = int(keep * len(data)) if isinstance(keep, float) else (keep if keep >= 0 else len(data) + keep)
    bad = tmp_path / "trunc.sprokr"
    bad.write_bytes(data[:n])
    with pytest.raises(ModelFormatError, match="truncated|corrupted|not a sprokr model"):
        sprokr.load(bad)


def test_tampered_array_and_manifest_refused_even_with_a_valid_file_checksum(small_model_file, tmp_path):
    _, path = small_model_file
    entries = _entries(path)
    name = max((n for n in entries if n.endswith(".npy")), key=lambda n: len(entries[n]))
    arr = np.load(io.BytesIO(entries[name]), allow_pickle=False).copy()
    arr.flat[0] += 1
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    _write_signed(tmp_path / "a.sprokr", {**entries, name: buf.getvalue()})
    with pytest.raises(ModelFormatError, match=f"checksum mismatch of {name}"):
        sprokr.load(tmp_path / "a.sprokr")
    # a manifest whose own checksum (in the trailer) does not match
    signed = _write_signed(tmp_path / "m.sprokr", entries)
    data = bytearray(signed.read_bytes())
    i = data.index(b"manifest-sha256=") + len("manifest-sha256=")
    data[i:i + 1] = b"0" if data[i:i + 1] != b"0" else b"1"
    body = bytes(data[:-64])
    signed.write_bytes(body + hashlib.sha256(body).hexdigest().encode())
    with pytest.raises(ModelFormatError, match="manifest checksum does not match"):
        sprokr.load(signed)


def test_newer_format_version_refused_and_library_versions_warned(small_model_file, tmp_path):
    _, path = small_model_file

    def newer(m):
        m["format_version"] = FORMAT_VERSION + 1

    p = _edit_manifest(path, tmp_path / "v.sprokr", newer, version=FORMAT_VERSION + 1)
    with pytest.raises(ModelFormatError, match=f"format {FORMAT_VERSION + 1}, newer.*upgrade sprokr"):
        sprokr.load(p)
    p = _edit_manifest(path, tmp_path / "v0.sprokr", lambda m: m.update(format_version=0), version=0)
    with pytest.raises(ModelFormatError, match="no longer reads"):
        sprokr.load(p)
    # trailer and manifest disagree
    p = _edit_manifest(path, tmp_path / "vx.sprokr", newer, version=FORMAT_VERSION)
    with pytest.raises(ModelFormatError, match="format version"):
        sprokr.load(p)

    def older_library(m):
        m["created_by"]["sprokr"] = "0.0.1"

    p = _edit_manifest(path, tmp_path / "lib.sprokr", older_library)
    with pytest.warns(UserWarning, match="saved with sprokr 0.0.1"):
        sprokr.load(p)


def _component_node(node, name):
    """First component node called ``name`` in a manifest tree."""
    if isinstance(node, dict):
        if node.get("@") == "component" and node.get("name") == name:
            return node
        children = list(node.values())
    elif isinstance(node, list):
        children = node
    else:
        return None
    for c in children:
        hit = _component_node(c, name)
        if hit is not None:
            return hit
    return None


def test_missing_plugin_is_named(tmp_path):
    pytest.importorskip("sprokr_chem")
    model = SIOKR(output_kernel="morgan_tanimoto", m_x=10, random_state=0).fit(
        np.arange(30.0)[:, None], ["C" * (1 + i % 5) + "O" * (i % 3) for i in range(30)])
    path = model.save(tmp_path / "chem.sprokr")

    def unknown_component(m):  # the plugin is installed but no longer provides the kernel
        _component_node(m["root"], "morgan_tanimoto")["name"] = "morgan_tanimoto_v9"

    with pytest.raises(MissingPluginError, match=r"output_kernel 'morgan_tanimoto_v9'.*plugin 'chem' "
                                                 r"\(distribution sprokr-chem 0\.1\.0\).*pip install sprokr-chem"):
        sprokr.load(_edit_manifest(path, tmp_path / "a.sprokr", unknown_component))

    def other_plugin(m):  # a plugin that is not installed at all
        node = _component_node(m["root"], "morgan_tanimoto")
        node.update(name="fancy_kernel", plugin="fancychem")
        m["plugins"]["fancychem"] = {"distribution": "sprokr-fancychem", "version": "2.0"}

    with pytest.raises(MissingPluginError, match="'fancy_kernel'.*plugin 'fancychem'.*sprokr-fancychem 2.0"):
        sprokr.load(_edit_manifest(path, tmp_path / "b.sprokr", other_plugin))


class _ScaledGaussian(GaussianKernel):
    """A third-party kernel class, registered below through a factory function."""

    name = "scaled_gaussian"


class _PluginKernel(GaussianKernel):
    """A third-party kernel class registered as a class."""


class _RuntimePlugin:
    @sprokr.hookimpl
    def sprokr_input_kernels(self):
        return {"scaled_gaussian": lambda **params: _ScaledGaussian(**params)}

    @sprokr.hookimpl
    def sprokr_output_kernels(self):
        return {"plain_gaussian_copy": _PluginKernel}


def test_uninstalled_plugin_is_named(tmp_path):
    """A model using a plugin's components, loaded after the plugin is gone."""
    from sprokr.registry import get_registry, reset_registry

    reset_registry()
    try:
        get_registry().register(_RuntimePlugin(), name="runtime")
        model = SIOKR(input_kernel="scaled_gaussian", input_kernel_params={"gamma": 0.3},
                      output_kernel="plain_gaussian_copy", m_x=20, random_state=0).fit(ML[0], ML[1])
        path = model.save(tmp_path / "m.sprokr")
        comps = {(c["kind"], c["name"], c["plugin"]) for c in read_manifest(path)["components"]}
        assert {("input_kernel", "scaled_gaussian", "runtime"),
                ("output_kernel", "plain_gaussian_copy", "runtime")} <= comps
        loaded, _ = _roundtrip(model, tmp_path, "m2.sprokr")
        _same_outputs(model.predict_topk(ML[2], k=2), loaded.predict_topk(ML[2], k=2))
        reset_registry()  # the plugin is no longer installed
        with pytest.raises(MissingPluginError, match="input_kernel 'scaled_gaussian'.*plugin 'runtime'"):
            sprokr.load(path)
    finally:
        reset_registry()


def test_classes_outside_the_allow_list_are_refused(small_model_file, tmp_path, monkeypatch):
    _, path = small_model_file
    imported = []
    import builtins

    real_import = builtins.__import__

    def spy(name, *a, **k):
        imported.append(name)
        return real_import(name, *a, **k)

    for cls in ("os:system", "subprocess:Popen", "builtins:eval", "sprokr.models.sisokr:SISOKR"):
        p = _edit_manifest(path, tmp_path / "evil.sprokr", lambda m: m["root"].update({"class": cls}))
        monkeypatch.setattr(builtins, "__import__", spy)
        with pytest.raises(ModelFormatError, match="not in the allow-list"):
            sprokr.load(p)
        monkeypatch.setattr(builtins, "__import__", real_import)
    assert "subprocess" not in imported
    # unknown node types and object dtypes are refused too
    p = _edit_manifest(path, tmp_path / "n.sprokr",
                       lambda m: m["root"]["params"].update({"lam": {"@": "pickle"}}))
    with pytest.raises(ModelFormatError, match="unknown node type 'pickle'"):
        sprokr.load(p)
    p = _edit_manifest(path, tmp_path / "r.sprokr", lambda m: m["root"].update({"@": "pickle"}))
    with pytest.raises(ModelFormatError, match="'pickle' node.*holds no model"):
        sprokr.load(p)


def test_object_arrays_in_entries_are_refused(small_model_file, tmp_path):
    _, path = small_model_file
    entries = _entries(path)
    name = next(n for n in entries if n.endswith(".npy"))
    buf = io.BytesIO()
    np.save(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)  # a pickled payload
    entries[name] = buf.getvalue()
    m = json.loads(entries["manifest.json"])
    m["arrays"][name] = {"sha256": hashlib.sha256(entries[name]).hexdigest(), "dtype": "|O", "shape": [1]}
    entries["manifest.json"] = json.dumps(m).encode()
    p = _write_signed(tmp_path / "o.sprokr", entries)
    with pytest.raises(ModelFormatError, match="not a valid .npy array: object arrays are refused"):
        sprokr.load(p)


def test_no_pickle_anywhere(small_model_file, monkeypatch):
    model, path = small_model_file
    names = zipfile.ZipFile(path).namelist()
    assert names.count("manifest.json") == 1
    assert all(n.startswith("arrays/") and n.endswith(".npy") for n in names if n != "manifest.json")
    for n, data in _entries(path).items():
        if n.endswith(".npy"):
            np.load(io.BytesIO(data), allow_pickle=False)
        else:
            json.loads(data)

    def boom(*a, **k):
        raise AssertionError("pickle used while loading")

    monkeypatch.setattr(pickle, "loads", boom)
    monkeypatch.setattr(pickle, "load", boom)
    monkeypatch.setattr(pickle, "Unpickler", boom)
    assert_same_state(model, sprokr.load(path))


def test_pickle_files_are_recognised_and_not_loaded(small_model_file, tmp_path):
    model, _ = small_model_file
    p = tmp_path / "model.pkl"
    p.write_bytes(pickle.dumps(model))
    with pytest.raises(ModelFormatError, match="looks like a pickle file.*never unpickles"):
        sprokr.load(p)
    with pytest.raises(FileNotFoundError, match="model file not found"):
        sprokr.load(tmp_path / "missing.sprokr")


# ----------------------------------------------------------------------------- candidate index owner
def test_pickled_index_works_with_pickled_model():
    Xtr, Ytr, Xte, Yte = ML
    model = SISOKR(input_sketch="subsample", m_x=30, output_sketch="psg", m_y=20,
                   output_sketch_params={"p": 0.1}, random_state=0).fit(Xtr, Ytr)
    index = model.make_candidate_index(np.vstack([Ytr, Yte]))
    model2, index2 = pickle.loads(pickle.dumps(model)), pickle.loads(pickle.dumps(index))
    _same_outputs(model.predict_topk(Xte, candidates=index, k=3), model2.predict_topk(Xte, candidates=index2, k=3))
    # an index of an earlier fit (or of another model) is still refused
    model.fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="built by another model"):
        model.predict(Xte, candidates=index)
    with pytest.raises(ValueError, match="built by another model"):
        model.predict(Xte, candidates=CandidateSets.from_pool(index, [[0, 1]] * len(Xte)))


def test_loading_an_index_with_the_wrong_model_is_refused(fitted_structured, tmp_path):
    a, b = fitted_structured["SIOKR-subsample"], fitted_structured["ISOKR-psg"]
    path = a.make_candidate_index(ML[1]).save(tmp_path / "i.sprokr")
    assert isinstance(sprokr.load(path), CandidateIndex)
    assert isinstance(CandidateIndex.load(path, model=a), CandidateIndex)
    with pytest.raises(ValueError, match="built by another model"):
        sprokr.load(path, model=b)
    with pytest.raises(TypeError, match="holds an object of type CandidateIndex, not of type SIOKR"):
        SIOKR.load(path)


def test_candidate_sets_and_object_candidates_roundtrip(fitted_structured, tmp_path):
    model = fitted_structured["SIOKR-subsample"]
    index = model.make_candidate_index(ML[1])
    sets = CandidateSets.from_pool(index, [[0, 3, 5], [1, 2]])
    loaded = sprokr.load(save(sets, tmp_path / "sets.sprokr"))
    assert_same_state(sets, loaded, "sets")
    # candidates of any encodable kind: object arrays, tuples, strings, numpy scalars
    cands = np.empty(4, dtype=object)
    cands[:] = ["a", ("b", 1), np.float32(2.5), None]
    idx = CandidateIndex(cands, np.arange(8.0).reshape(4, 2), owner=model.index_token_)
    assert_same_state(idx, sprokr.load(idx.save(tmp_path / "o.sprokr"), model=model), "index")


def test_documented_example_runs(capsys):
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "reliability.md").read_text()
    section = text.split("## Persistence", 1)[1]
    code = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    exec(compile(code, "docs/reliability.md Persistence example", "exec"), {})
    assert "'kind': 'input_kernel', 'name': 'gaussian', 'plugin': 'sprokr'" in capsys.readouterr().out


def test_generic_values_roundtrip(tmp_path):
    """Every value kind of the format, as (future) attributes of an estimator."""
    model = SketchedKernelMachine(random_state=np.random.default_rng(5))
    shared = np.arange(6.0).reshape(2, 3)
    model.values_ = {
        "floats": [float("nan"), float("inf"), -float("inf"), 0.1, -0.0, 1e308],
        "ints": [0, -1, 2**70], "text": "é", "bytes": b"\x00\xff", "none": None, "flags": (True, False),
        "set": {3, 1, 2}, "frozen": frozenset({"a"}), (1, "tuple key"): "v",
        "scalars": [np.float32(1.1), np.float16(2.5), np.longdouble(1) / 3, np.complex128(1 + 2j),
                    np.int8(-3), np.uint64(2**63), np.bool_(True), np.str_("s"), np.float64("nan")],
        "dtypes": [np.dtype("float32"), np.dtype("<U3")],
        "arrays": [shared, shared, shared.T, np.asfortranarray(shared), np.array(["ab", "c"]),
                   np.array(["2020-01-01"], dtype="datetime64[D]"), np.zeros((0, 4), np.float32),
                   np.array(3.5)],
        "sparse": [sp.csr_matrix(shared), sp.csc_array(shared), sp.coo_matrix(shared)],
        "rng": [np.random.RandomState(4), np.random.Generator(np.random.MT19937(1))],
    }
    loaded, _ = _roundtrip(model, tmp_path)
    arrays = loaded.values_["arrays"]
    assert arrays[0] is arrays[1]  # shared objects stay shared
    assert arrays[3].flags.f_contiguous
    assert loaded.random_state.random() == model.random_state.random()  # generator state exact
    model.values_ = [np.array([object()], dtype=object)]
    with pytest.raises(UnsavableObjectError, match=r"values_\[0\]\[0\] of type builtins\.object"):
        model.save(tmp_path / "x.sprokr")
    model.values_ = [np.ma.masked_array([1.0], mask=[True])]  # a subclass would lose its mask
    with pytest.raises(UnsavableObjectError, match=r"values_\[0\] of type numpy\.ma\.MaskedArray"):
        model.save(tmp_path / "x.sprokr")


def test_metadata_kept_verbatim(small_model_file, tmp_path):
    model, _ = small_model_file
    meta = {"columns": {"input": ["mu", "alpha"], "output": "smiles"}, "seed": 3, "note": None, "w": 0.5}
    path = model.save(tmp_path / "m.sprokr", metadata=meta)
    assert read_manifest(path)["metadata"] == meta
    assert_same_state(model, sprokr.load(path))
    for bad in ({1: "x"}, {"a": (1, 2)}, {"a": float("nan")}, {"a": np.float64(1.0)}):
        with pytest.raises(ValueError, match="metadata"):
            model.save(tmp_path / "bad.sprokr", metadata=bad)
    assert not (tmp_path / "bad.sprokr").exists()


def test_benchmark_smoke(tmp_path):
    """benchmarks/persistence.py runs end to end and follows the --json convention."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "persistence.py"
    out = subprocess.run([sys.executable, str(script), "--n", "80", "--flips", "20", "--repeats", "1", "--json"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(res) == {"safe", "pickle"}
    assert res["safe"]["refused"] == 20  # every corruption of the safe format is refused
    assert sum(res["pickle"][k] for k in ("refused", "identical", "different", "fails_at_predict")) == 20


@dataclasses.dataclass
class _Vocabulary:
    """A plugin's plain data class (declared through the sprokr_saveable_classes hook)."""

    words: list


class _VocabularyPlugin:
    @sprokr.hookimpl
    def sprokr_saveable_classes(self):
        return [_Vocabulary]


def test_saveable_class_of_a_missing_plugin_is_named(tmp_path):
    """A plugin's class in a model: loads while the plugin is registered; without it the error
    names the plugin -- from the object node, or (models saved before the node named it) from
    the plugin table's distribution matching the class's package."""
    from sprokr.registry import get_registry, reset_registry

    reset_registry()
    try:
        get_registry().register(_VocabularyPlugin(), name="vocab")
        model = SIOKR(m_x=10, random_state=0).fit(ML[0][:30], ML[1][:30])
        model.vocabulary_ = _Vocabulary(["a", "b"])
        path = model.save(tmp_path / "v.sprokr")
        assert sprokr.load(path).vocabulary_ == _Vocabulary(["a", "b"])

        def older(m):  # as saved before object nodes named their plugin
            node = next(n for n in _nodes(m["root"]) if n.get("@") == "object" and "plugin" in n)
            del node["plugin"]
            m["plugins"]["vocab"] = {"distribution": "test-persistence", "version": "0.1"}

        old = _edit_manifest(path, tmp_path / "old.sprokr", older)
        assert sprokr.load(old).vocabulary_ == _Vocabulary(["a", "b"])
        reset_registry()  # the plugin is no longer installed
        with pytest.raises(MissingPluginError, match=r"class test_persistence:_Vocabulary .*plugin 'vocab'"):
            sprokr.load(path)
        with pytest.raises(MissingPluginError, match=r"plugin 'vocab' \(distribution test-persistence 0\.1\)"):
            sprokr.load(old)
        # a class no plugin declares is still refused, whatever the manifest claims
        m_path = _edit_manifest(path, tmp_path / "evil.sprokr", lambda m: next(
            n for n in _nodes(m["root"]) if n.get("@") == "object" and "plugin" in n).update(plugin="sprokr"))
        with pytest.raises(ModelFormatError, match="not in the allow-list"):
            sprokr.load(m_path)
    finally:
        reset_registry()


def _nodes(node):
    """Every dict node of a manifest tree."""
    if isinstance(node, dict):
        yield node
        children = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return
    for c in children:
        yield from _nodes(c)


def test_roundtrip_of_a_triangular_output_basis(tmp_path):
    # an output sketch above EIGH_BASIS_MAX_M takes the Cholesky route: the features keep
    # (pivots, L_11), not B; saved and loaded as such, with the same predictions
    from sprokr.numerics import EIGH_BASIS_MAX_M

    rng = np.random.default_rng(0)
    X = rng.standard_normal((EIGH_BASIS_MAX_M + 150, 4))
    Y = np.tanh(X @ rng.standard_normal((4, 3)))
    model = SISOKR(lam=1e-4, input_sketch="subsample", m_x=100, output_sketch="subsample",
                   m_y=EIGH_BASIS_MAX_M + 50, random_state=0).fit(X, Y)
    f = model.output_features_
    assert f.basis_route == "cholesky" and f._chol is not None and "basis_" not in vars(f)
    loaded, _ = _roundtrip(model, tmp_path)
    np.testing.assert_array_equal(model.predict_coordinates(X[:15]), loaded.predict_coordinates(X[:15]))
    np.testing.assert_array_equal(model.predict(X[:15]), loaded.predict(X[:15]))
    np.testing.assert_array_equal(model.predict_weights(X[:5]), loaded.predict_weights(X[:5]))


# ----------------------------------------------------------------------------- distributed fits
def test_a_distributed_candidate_index_is_saved_as_its_local_content(tmp_path):
    """An index held in row partitions (here a LocalExecutor's) is saved gathered: the file is
    self-contained; the index in memory stays distributed."""
    from sprokr.numerics import LocalExecutor

    Xtr, Ytr, Xte, Yte = ML
    model = SIOKR(m_x=30, random_state=0).fit(Xtr, Ytr)
    index = model.make_candidate_index(np.vstack([Ytr, Yte]))
    dist = index.distribute(LocalExecutor(n_partitions=3))
    loaded = sprokr.load(dist.save(tmp_path / "index.sprokr"), model=model)
    assert dist.partitions is not None and loaded.partitions is None
    assert_same_state(index, loaded, "index")
    _same_outputs(model.predict_topk(Xte, candidates=index, k=3), model.predict_topk(Xte, candidates=loaded, k=3))
    # the same as a model's default index
    expected = model.predict_topk(Xte, k=3)
    model.default_index_ = model.default_index_.distribute(LocalExecutor(n_partitions=2))
    again = sprokr.load(model.save(tmp_path / "model.sprokr"))
    assert again.default_index_.partitions is None
    _same_outputs(expected, again.predict_topk(Xte, k=3))


_LOAD_WITHOUT_A_CLUSTER = r"""
import json, logging, sys, warnings
import numpy as np
import sprokr
from sprokr.numerics import DaskExecutor, LocalExecutor

logged = []
handler = logging.Handler(logging.WARNING)
handler.emit = logged.append
logging.getLogger("sprokr").addHandler(handler)
warnings.simplefilter("error")
X, Xte = np.load(sys.argv[1] + "/X.npy"), np.load(sys.argv[1] + "/Xte.npy")
for case in json.loads(open(sys.argv[1] + "/cases.json").read()):
    model = sprokr.load(case["path"])
    assert type(model.executor_) is LocalExecutor, (case, model.executor_)
    if case["given"] == "DaskExecutor":  # its settings, without the client
        assert type(model.executor) is DaskExecutor and model.executor.client is None, case
        assert model.executor.get_params()["timeout"] == 30.0, case
    else:
        assert model.executor == "dask", (case, model.executor)
    got, ref = np.asarray(model.predict(Xte)), np.load(case["path"] + ".npy")
    assert got.dtype == ref.dtype, case
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0, err_msg=str(case))
    if case["name"] == "SketchedKernelMachine":  # a refit follows the parameter: a clear error here
        try:
            model.fit(X, np.zeros(len(X)))
            raise AssertionError("refitted without a client")
        except ValueError as exc:
            assert "needs a running dask.distributed Client" in str(exc), exc
assert not logged, [r.getMessage() for r in logged]
print("ok")
"""


def test_a_model_fitted_on_dask_is_saved_and_loaded_without_a_cluster(tmp_path):
    """The executor is runtime configuration: a model fitted on a Dask cluster (given as a
    Client, a DaskExecutor or "dask") is saved with its whole fitted state (a distributed
    default index gathered), and a fresh process without any client loads it and predicts the
    Dask model's predictions, locally and silently."""
    import json
    import subprocess
    import sys

    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
    from sprokr.numerics import DaskExecutor

    Xtr, Ytr, Xte, _ = ML
    y = Xtr @ np.arange(1.0, 7.0)
    models = {
        "SISOKR": (lambda ex: SISOKR(lam=1e-3, input_sketch="subsample", m_x=40, output_sketch="subsample", m_y=20,
                                     random_state=0, chunk_size=50, executor=ex), Ytr),
        "DSOKR": (lambda ex: DSOKR(output_kernel="gaussian", output_sketch="subsample", m_y=20,
                                   regressor="kernel_ridge", regressor_params={"lam": 1e-3}, random_state=0,
                                   chunk_size=50, executor=ex), Ytr),
        "SketchedKernelMachine": (lambda ex: SketchedKernelMachine(lam=1e-3, input_sketch="subsample", m_x=40,
                                                                   random_state=0, chunk_size=50, executor=ex), y),
    }
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cluster)
    cases = []
    try:
        for given in ("Client", "DaskExecutor", "dask"):
            ex = {"Client": client, "DaskExecutor": DaskExecutor(client=client, timeout=30.0),
                  "dask": "dask"}[given]
            for name, (make, targets) in models.items():
                model = make(ex).fit(Xtr, targets)
                if name == "SISOKR":  # the default index is held by the workers
                    assert model.default_index_.partitions is not None
                path = model.save(tmp_path / f"{name}-{given}.sprokr")
                np.save(f"{path}.npy", np.asarray(model.predict(Xte)))  # the Dask model's predictions
                assert model.executor is ex and not model.executor_.in_process  # saving changed nothing
                cases.append({"name": name, "given": given, "path": str(path)})
                if (name, given) == ("SISOKR", "Client"):
                    late = model
    finally:
        client.close()
        cluster.close()
    # saved after its cluster was closed: the index is rebuilt here (with a warning), then saved
    path = late.save(tmp_path / "SISOKR-closed.sprokr")
    np.testing.assert_array_equal(np.load(tmp_path / "SISOKR-Client.sprokr.npy"), late.predict(Xte))
    np.save(f"{path}.npy", np.asarray(late.predict(Xte)))
    cases.append({"name": "SISOKR", "given": "Client", "path": str(path)})
    np.save(tmp_path / "X.npy", Xtr)
    np.save(tmp_path / "Xte.npy", Xte)
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    out = subprocess.run([sys.executable, "-c", _LOAD_WITHOUT_A_CLUSTER, str(tmp_path)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", (out.stdout + out.stderr)[-3000:]


PRE_DASK_SAVE = Path(__file__).resolve().parent / "data" / "pre_dask_save"


@pytest.mark.parametrize("name, method, param", [("skm", "predict", "dask"), ("jqr", "predict", "DaskExecutor"),
                                                 ("dsokr", "predict_scores", "dask")])
def test_a_file_of_an_earlier_sprokr_fitted_on_dask_predicts_without_a_cluster(name, method, param, tmp_path,
                                                                                monkeypatch):
    """Files written before __sprokr_save__ (tests/data/pre_dask_save, by that code: commit
    70267a0, on a LocalCluster) hold the fitted executor_ of a model fitted with
    executor="dask" or a DaskExecutor as that DaskExecutor; loaded, SketchedKernelMachine and
    JointQuantileRegressor predicted through Dask ('needs a running dask.distributed Client').
    Loaded now, the executor_ is local and the model predicts the Dask model's predictions
    (computed by the old code) without asking for any client; the parameter is kept; saved
    again, it is a file of the current format."""
    import distributed

    from sprokr.numerics import DaskExecutor, LocalExecutor

    def no_client(*args, **kwargs):
        raise AssertionError("the loaded model asked for a Dask client")

    # whatever default client this process has (another test's) is out of reach
    monkeypatch.setattr(distributed, "default_client", no_client)
    Xq = np.load(PRE_DASK_SAVE / "Xq.npy")
    expected = json.loads((PRE_DASK_SAVE / "predictions.json").read_text())[name]
    path = PRE_DASK_SAVE / f"{name}.sprokr"
    saved = read_manifest(path)["root"]["state"]["executor_"]
    assert saved.get("@") in ("component", "ref"), saved  # the file does hold the old executor_
    model = sprokr.load(path)
    assert type(model.executor_) is LocalExecutor
    if param == "DaskExecutor":  # the same object as executor_ in the file: its settings kept
        assert type(model.executor) is DaskExecutor and model.executor.client is None
        assert model.executor.timeout == 30.0
    else:
        assert model.executor == "dask"
    np.testing.assert_allclose(getattr(model, method)(Xq), expected, rtol=1e-10, atol=1e-12)
    again = sprokr.load(model.save(tmp_path / f"{name}.sprokr"))
    assert read_manifest(tmp_path / f"{name}.sprokr")["root"]["state"]["executor_"]["name"] == "local"
    assert type(again.executor_) is LocalExecutor
    np.testing.assert_allclose(getattr(again, method)(Xq), expected, rtol=1e-10, atol=1e-12)


def test_metadata_must_be_a_dict(tmp_path):
    """``save(..., metadata=...)`` takes a dict (documented; a command-line model's
    configuration lives there): a plain-JSON list was stored and read back as the metadata."""
    from sprokr.persistence import save

    with pytest.raises(ValueError, match="metadata must be a dict"):
        save(np.arange(3.0), tmp_path / "m.sprokr", metadata=[1])
    assert not (tmp_path / "m.sprokr").exists()
