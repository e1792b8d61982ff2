"""Reproducibility: every random draw comes from the estimator's ``random_state`` (or, left
to None, from a sketch's own ``random_state``), never from numpy's or Python's global
state; the results do not depend on the chunk size nor on the row-block threads."""
import random

import numpy as np
import pytest
from sklearn.base import clone

from sprokr import DSOKR, ISOKR, SIOKR, SISOKR, DSOKREnsemble, JointQuantileRegressor, RFFKernelMachine, \
    SketchedKernelMachine
from sprokr.kernels import KernelFeatures
from sprokr.model_selection import LambdaSearchCV, select_model
from sprokr.models.local_ridge import LocalKernelRidgeRegressor
from sprokr.models.regressors import KernelRidgeRegressor
from sprokr.sketches import PSG, SubSample

ML, REG, FEAT = "multilabel", "regression", "features"
PSG_P = {"p": 0.1}

#: name -> (estimator factory, kind of data)
ESTIMATORS = {
    "SIOKR": (lambda **k: SIOKR(lam=1e-3, m_x=40, **k), ML),
    "ISOKR": (lambda **k: ISOKR(lam=1e-3, m_y=30, output_sketch_params=PSG_P, **k), ML),
    "SISOKR": (lambda **k: SISOKR(lam=1e-3, input_sketch="subsample", m_x=40, output_sketch="psg", m_y=30,
                                  output_sketch_params=PSG_P, **k), ML),
    "SISOKR-gaussian-countsketch": (lambda **k: SISOKR(lam=1e-3, input_sketch="gaussian", m_x=30,
                                                       output_sketch="countsketch", m_y=20, **k), ML),
    "SISOKR-accumulation-nystrom": (lambda **k: SISOKR(lam=1e-3, input_sketch="accumulation", m_x=30,
                                                       input_sketch_params={"m_acc": 5}, output_sketch="nystrom",
                                                       m_y=20, **k), ML),
    "DSOKR-ridge": (lambda **k: DSOKR(m_y=30, regressor="ridge", validation_fraction=0.2, **k), ML),
    "DSOKR-mlp": (lambda **k: DSOKR(m_y=30, regressor="mlp", regressor_params={"max_epochs": 3}, **k), ML),
    "DSOKR-kernel-ridge": (lambda **k: DSOKR(m_y=30, regressor="kernel_ridge",
                                             regressor_params={"input_sketch": "subsample", "m_x": 30}, **k), ML),
    "DSOKREnsemble": (lambda **k: DSOKREnsemble(DSOKR(m_y=20, regressor="ridge"), n_estimators=2,
                                                validation_fraction=0.2, **k), ML),
    "KernelRidgeRegressor": (lambda **k: KernelRidgeRegressor(lam=1e-3, input_sketch="subsample", m_x=40, **k), REG),
    "LocalKernelRidgeRegressor": (lambda **k: LocalKernelRidgeRegressor(n_regions=3, lam=1e-3, m_x=20, **k), REG),
    "SketchedKernelMachine": (lambda **k: SketchedKernelMachine(lam=1e-3, input_sketch="psr", m_x=40,
                                                                input_sketch_params=PSG_P, **k), REG),
    "SketchedKernelMachine-adam": (lambda **k: SketchedKernelMachine(loss="huber", lam=1e-3, input_sketch="subsample",
                                                                     m_x=40, optimizer="adam", max_epochs=3,
                                                                     batch_size=32, **k), REG),
    "JointQuantileRegressor": (lambda **k: JointQuantileRegressor(lam=1e-3, input_sketch="subsample", m_x=30,
                                                                  max_iter=100, **k), REG),
    "RFFKernelMachine": (lambda **k: RFFKernelMachine(n_components=30, loss="huber", optimizer="adam", max_epochs=3,
                                                      batch_size=32, lam=1e-3, **k), REG),
    "KernelFeatures": (lambda **k: KernelFeatures(m_x=30, **k), FEAT),
}
CHUNKED = [name for name, (make, _) in ESTIMATORS.items() if "chunk_size" in make().get_params()]


@pytest.fixture(scope="module")
def data():
    r = np.random.default_rng(1)  # as conftest's multilabel_data: 180 + 60 samples, 6 features, 8 labels
    X = r.standard_normal((240, 6))
    Y = (X @ r.standard_normal((6, 8)) > 0.7).astype(np.int8)
    Xtr, Ytr, Xte = X[:180], Y[:180], X[180:]
    y = Xtr @ np.arange(1.0, 7.0) + np.sin(3 * Xtr[:, 0])
    return {ML: (Xtr, Ytr), REG: (Xtr, y), FEAT: (Xtr,), "test": Xte}


def outputs(name, data, **params):
    """A fit's predictions (and top-k lists and scores where they exist), as a list of arrays."""
    make, kind = ESTIMATORS[name]
    model = make().set_params(**params).fit(*data[kind])
    Xte = data["test"]
    if kind == FEAT:
        return [model.transform(Xte)]
    out = [np.asarray(model.predict(Xte))]
    if hasattr(model, "predict_topk"):
        top = model.predict_topk(Xte, k=3)
        out += [top.indices, top.scores]
    return out


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def differs(a, b):
    return any(not np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_seeds_generators_random_states_clones_and_global_state(data, name):
    ref = outputs(name, data, random_state=0)
    assert_same(outputs(name, data, random_state=0), ref)
    assert differs(outputs(name, data, random_state=1), ref)  # another sketch / split / initialisation
    # a fresh Generator or RandomState of the same seed reproduces (the same object, reused, need not)
    assert_same(outputs(name, data, random_state=np.random.default_rng(0)),
                outputs(name, data, random_state=np.random.default_rng(0)))
    assert_same(outputs(name, data, random_state=np.random.RandomState(0)),
                outputs(name, data, random_state=np.random.RandomState(0)))
    # numpy's and Python's global generators are not used
    np.random.seed(1)
    random.seed(1)
    assert_same(outputs(name, data, random_state=0), ref)
    np.random.seed(2)
    random.seed(2)
    assert_same(outputs(name, data, random_state=0), ref)
    # a clone of a fitted estimator refits to the same model
    make, kind = ESTIMATORS[name]
    fitted = make(random_state=0).fit(*data[kind])
    again = clone(fitted).fit(*data[kind])
    Xte = data["test"]
    if kind == FEAT:
        np.testing.assert_array_equal(again.transform(Xte), fitted.transform(Xte))
    else:
        np.testing.assert_array_equal(np.asarray(again.predict(Xte)), np.asarray(fitted.predict(Xte)))


def assert_close(a, b):
    for x, y in zip(a, b):
        if np.issubdtype(np.asarray(x).dtype, np.floating):
            np.testing.assert_allclose(y, x, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(x).max())))
        else:
            np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("name", sorted(CHUNKED))
def test_chunk_size_does_not_change_the_model(data, name):
    assert_close(outputs(name, data, random_state=0), outputs(name, data, random_state=0, chunk_size=7))


@pytest.mark.parametrize("name", ["SISOKR", "SketchedKernelMachine", "KernelRidgeRegressor", "DSOKR-ridge"])
def test_row_block_threads_do_not_change_the_model(data, name, monkeypatch):
    """Thread-safe passes fold their chunks in ``n_workers()`` threads (and row blocks of
    elementwise work): one thread or four give the same model up to rounding."""
    import sprokr.numerics._executor as executor
    import sprokr.numerics._parallel as parallel

    def run(threads):
        monkeypatch.setattr(executor, "n_workers", lambda: threads)
        monkeypatch.setattr(parallel, "n_workers", lambda: threads)
        return outputs(name, data, random_state=0, chunk_size=16)

    assert_close(run(1), run(4))


# an estimator whose random_state is left to None draws its sketch with the sketch's own
# random_state (given to an instance or in *_sketch_params): the fit is reproducible
OWN_SEED = {
    "SISOKR-instances": ("SISOKR", lambda s: {"input_sketch": SubSample(40, random_state=s), "m_x": None,
                                              "output_sketch": PSG(30, p=0.1, random_state=s + 1), "m_y": None,
                                              "output_sketch_params": None}),
    "SISOKR-params": ("SISOKR", lambda s: {"input_sketch_params": {"random_state": s},
                                           "output_sketch_params": {"p": 0.1, "random_state": s}}),
    "SIOKR-params": ("SIOKR", lambda s: {"input_sketch_params": {"random_state": s}}),
    "ISOKR-params": ("ISOKR", lambda s: {"output_sketch_params": {"p": 0.1, "random_state": s}}),
    "DSOKR-instance": ("DSOKR-kernel-ridge", lambda s: {"output_sketch": SubSample(30, random_state=s), "m_y": None,
                                                        "regressor": "ridge", "regressor_params": None}),
    "KernelRidgeRegressor-instance": ("KernelRidgeRegressor", lambda s: {"input_sketch": SubSample(40, random_state=s),
                                                                         "m_x": None}),
    "SketchedKernelMachine-params": ("SketchedKernelMachine", lambda s: {"input_sketch_params": {"p": 0.1,
                                                                                                 "random_state": s}}),
    "JointQuantileRegressor-params": ("JointQuantileRegressor", lambda s: {"input_sketch_params": {"random_state": s}}),
    "KernelFeatures-instance": ("KernelFeatures", lambda s: {"input_sketch": SubSample(30, random_state=s)}),
}


@pytest.mark.parametrize("case", sorted(OWN_SEED))
def test_a_sketch_seed_is_used_when_the_estimator_has_none(data, case):
    name, sketch = OWN_SEED[case]
    ref = outputs(name, data, **sketch(3))
    assert_same(outputs(name, data, **sketch(3)), ref)
    assert differs(outputs(name, data, **sketch(4)), ref)
    # the estimator's random_state, when set, draws the sketch (the sketch's seed is overridden)
    assert_same(outputs(name, data, random_state=0, **sketch(3)), outputs(name, data, random_state=0, **sketch(4)))


def test_perfect_h_curve_uses_a_sketch_seed_when_it_has_none(data):
    """perfect_h_curve(random_state=None) drew from a fresh generator, overriding the
    sketch's own seed (sketch_params={"random_state": s}): curves changed at every run."""
    from sprokr.model_selection import perfect_h_curve

    X, Y = data[ML]

    def curve(s):
        return perfect_h_curve(Y[:140], Y[140:], "gaussian", [10, 20], sketch="subsample",
                               sketch_params={"random_state": s})["projection_error"]

    np.testing.assert_array_equal(curve(3), curve(3))
    assert not np.array_equal(curve(3), curve(4))


def test_searches_use_their_seed_only(data):
    """LambdaSearchCV and select_model: fresh generators and RandomStates of the same seed
    reproduce the choices; numpy's global state does not matter."""
    Xtr, Ytr = data[ML]
    est = SISOKR(input_sketch="subsample", m_x=20, output_sketch="psg", m_y=20, output_sketch_params=PSG_P)
    lams = [1e-4, 1e-3, 1e-2, 1e-1]

    def search(rs):
        m = LambdaSearchCV(est, lams=lams, random_state=rs).fit(Xtr, Ytr)
        return m.best_lam_, m.scores_.tolist(), np.asarray(m.predict(data["test"])).tolist()

    def select(rs):
        r = select_model(est, Xtr, Ytr, lams=lams, m_y_grid=[10, 20, 40], m_x_grid=[10, 20, 40], random_state=rs)
        return r["best_params"], r["best_score"], r["m_x"]["best_scores"]

    for run in (search, select):
        np.random.seed(1)
        ref = run(0)
        np.random.seed(2)
        assert run(0) == ref
        assert run(np.random.default_rng(0)) == run(np.random.default_rng(0))
        assert run(np.random.RandomState(0)) == run(np.random.RandomState(0))


@pytest.mark.parametrize("method", ["sisokr", "dsokr"])
def test_molecule_retriever_same_seed_same_choices(method):
    pytest.importorskip("rdkit")
    from sprokr.datasets import sample_path
    from sprokr_chem import MoleculeRetriever
    from sprokr_chem.datasets import load_qm9

    smiles, _, _ = load_qm9(sample_path("qm9_sample.csv"))
    X, queries = smiles[:120], smiles[120:140]

    def fit(rs):
        model = MoleculeRetriever(method=method, lams=(1e-2, 1e-4), input_grid=[{"n": 3}], m_x_grid=(20, 40),
                                  m_y_grid=(20, 40), output_kernel="morgan_tanimoto", random_state=rs).fit(X, X)
        top = model.predict_topk(queries, k=3)
        return model.best_params_, model.best_score_, top.indices.tolist(), top.scores.tolist()

    np.random.seed(1)
    ref = fit(0)
    np.random.seed(2)
    assert fit(0) == ref
    assert fit(np.random.default_rng(0)) == fit(np.random.default_rng(0))


def test_torch_regressor_ignores_and_keeps_torch_global_seed(data):
    torch = pytest.importorskip("torch")
    Xtr, Ytr = data[ML]

    def fit(torch_seed, rs=0):
        torch.manual_seed(torch_seed)
        state = torch.random.get_rng_state()
        model = DSOKR(m_y=20, regressor="torch_mlp", regressor_params={"max_epochs": 2}, random_state=rs)
        model.fit(Xtr, Ytr)
        assert torch.equal(torch.random.get_rng_state(), state)  # torch's global generator left as it was
        return model.predict_topk(data["test"], k=3).scores

    ref = fit(1)
    np.testing.assert_array_equal(fit(2), ref)
    assert not np.array_equal(fit(1, rs=1), ref)
