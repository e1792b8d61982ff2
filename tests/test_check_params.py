"""``check_params()``: the parameter checks of every estimator that need no data.

For each estimator of ``sprokr.models`` with ``fit`` (and sprokr-chem's MoleculeRetriever):
a bad value is refused by ``check_params()`` with the exception type and message ``fit``
gives on a tiny valid dataset; good parameters pass, the estimator is returned and nothing
of it (nor of the objects among its parameters) changes.  The command line calls it before
reading any data file.
"""
import pickle
import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from sklearn.base import clone

import sprokr
from sprokr import models
from sprokr.cli import main
from sprokr.kernels import GaussianKernel
from sprokr.models import (DSOKR, IOKR, ISOKR, SIOKR, SISOKR, DSOKREnsemble, JointQuantileRegressor,
                           KernelRidgeRegressor, LocalKernelRidgeRegressor, MLPSurrogate,
                           NeighbourKernelRidgeRegressor, RFFKernelMachine, SequenceRegressor, SketchedKernelMachine,
                           SmilesRegressor, SmilesTokenizer, TextRegressor, TorchRegressor, WordTokenizer)
from sprokr.sketches import SubSample
from sprokr.utils import check_positive

TEXTS = ["the cat sat", "a dog ran far", "cats and dogs", "the end of it", "run cat run", "far and away"] * 2
SMILES = ["CCO", "CCN", "c1ccccc1", "CC(=O)O", "CCCC", "OCCO"] * 2


def _data(kind, multilabel_data):
    """A tiny valid training set of each kind (from the shared multi-label problem)."""
    X, Y = multilabel_data[0][:40], multilabel_data[1][:40]
    if kind == "pairs":  # structured outputs (label sets)
        return X, Y
    if kind == "scalar":
        return X, X[:, 0] + 0.1 * X[:, 1]
    if kind == "targets":  # (n, p) targets of a surrogate regressor
        return X, np.c_[X[:, 0], X[:, 1] * X[:, 2]]
    if kind == "texts":
        return TEXTS, np.c_[np.arange(len(TEXTS)), np.ones(len(TEXTS))].astype(float)
    if kind == "smiles":
        return SMILES, np.c_[np.arange(len(SMILES)), np.ones(len(SMILES))].astype(float)
    if kind == "strings":
        return TEXTS, None
    raise AssertionError(kind)


# (estimator, bad parameters, data kind, the parameter the message names)
BAD = [
    (SISOKR, dict(lam=-1), "pairs", "lam"),
    (SISOKR, dict(solver="foo"), "pairs", "solver"),
    (SISOKR, dict(input_kernel="nope"), "pairs", "input_kernel"),
    (SISOKR, dict(input_kernel_params="sigma2"), "pairs", "input_kernel_params"),
    (SISOKR, dict(input_kernel_params={"sigma2": -1.0}), "pairs", "sigma2"),
    (SISOKR, dict(input_sketch="subsample", m_x=2.5), "pairs", "m_x"),
    (SISOKR, dict(input_sketch="subsample"), "pairs", "m_x"),
    (SISOKR, dict(m_y=5), "pairs", "m_y"),
    (SISOKR, dict(output_sketch="nope", m_y=5), "pairs", "output_sketch"),
    (SISOKR, dict(dtype="int8"), "pairs", "dtype"),
    (SISOKR, dict(rcond=-1.0), "pairs", "rcond"),
    (SISOKR, dict(chunk_size=0), "pairs", "chunk_size"),
    (SISOKR, dict(decoder="nope"), "pairs", "decoder"),
    (SISOKR, dict(max_memory_mb=-5), "pairs", "max_memory_mb"),
    (SISOKR, dict(executor="nope"), "pairs", "executor"),
    (SISOKR, dict(random_state=-1), "pairs", "random_state"),
    (SISOKR, dict(random_state="seed"), "pairs", "random_state"),
    (SISOKR, dict(default_index="yes"), "pairs", "default_index"),
    # a numbers.Real that is no Python / numpy number: was a TypeError of np.isfinite
    (SISOKR, dict(lam=Fraction(1, 10)), "pairs", "lam"),
    # sampling weights, not a mask: a bool array was read as 0 / 1 weights
    (SISOKR, dict(input_sketch="subsample", m_x=5, input_sketch_params={"probabilities": [True, False] * 20}),
     "pairs", "probabilities"),
    # a sketch's own parameters (Sketch.check_params): were found by fit's draw only
    (SISOKR, dict(output_sketch="psg", m_y=5, output_sketch_params={"p": 2.0}), "pairs", "p"),
    # a bool is not a number (p=True was p = 1, coef0=True was coef0 = 1)
    (SISOKR, dict(output_sketch="psg", m_y=5, output_sketch_params={"p": True}), "pairs", "p"),
    (SISOKR, dict(input_kernel="polynomial", input_kernel_params={"coef0": True}), "pairs", "coef0"),
    (SISOKR, dict(input_sketch="psparsified", m_x=5, input_sketch_params={"distribution": "cauchy"}), "pairs",
     "distribution"),
    (SISOKR, dict(input_sketch="accumulation", m_x=5, input_sketch_params={"m_acc": 0}), "pairs", "m_acc"),
    (SISOKR, dict(input_sketch="subsample", m_x=5, input_sketch_params={"probabilities": [-1.0] * 40}), "pairs",
     "probabilities"),
    (DSOKR, dict(m_y=5, output_sketch_params={"p": 0.0}), "pairs", "p"),
    (IOKR, dict(lam=0.0), "pairs", "lam"),
    (IOKR, dict(output_kernel="nope"), "pairs", "output_kernel"),
    (SIOKR, dict(m_x=0), "pairs", "m_x"),
    (SIOKR, dict(solver="fast"), "pairs", "solver"),
    (ISOKR, dict(m_y="10"), "pairs", "m_y"),
    (ISOKR, dict(output_sketch_params={"q": 1}), "pairs", "q"),
    (DSOKR, dict(m_y=5, validation_fraction=2.0), "pairs", "validation_fraction"),
    (DSOKR, dict(output_sketch=None, m_y=None), "pairs", "output sketch"),
    (DSOKR, dict(m_y=5, regressor="nope"), "pairs", "regressor"),
    (DSOKR, dict(m_y=5, regressor=object()), "pairs", "regressor"),
    (DSOKR, dict(m_y=1.5), "pairs", "m_y"),
    (DSOKR, dict(m_y=5, rcond=-1.0), "pairs", "rcond"),
    (DSOKR, dict(m_y=5, output_kernel="nope"), "pairs", "output_kernel"),
    (DSOKR, dict(m_y=5, random_state="a"), "pairs", "random_state"),
    (DSOKR, dict(m_y=5, decoder="nope"), "pairs", "decoder"),
    (DSOKREnsemble, dict(estimator=DSOKR(m_y=5), aggregation="median"), "pairs", "aggregation"),
    (DSOKREnsemble, dict(estimator=DSOKR(m_y=5), n_estimators=0), "pairs", "n_estimators"),
    (DSOKREnsemble, dict(estimator=DSOKR(m_y=5), weights=[1.0, -1.0, 1.0]), "pairs", "weights"),
    (DSOKREnsemble, dict(estimator=[]), "pairs", "estimator"),
    (DSOKREnsemble, dict(estimator=DSOKR(m_y=5, validation_fraction=0.5)), "pairs", "validation_fraction"),
    (DSOKREnsemble, dict(estimator=DSOKR(m_y=5, rcond=-1.0)), "pairs", "rcond"),
    (DSOKREnsemble, dict(estimator=[DSOKR(m_y=5), DSOKR(m_y=5, regressor="nope")]), "pairs", "regressor"),
    # members of different output kernels: refused with the parameters (it was after fitting them all)
    (DSOKREnsemble, dict(estimator=[DSOKR(m_y=5), DSOKR(m_y=5, output_kernel="linear")]), "pairs",
     "estimator: all ensemble members must use the same output kernel"),
    (KernelRidgeRegressor, dict(lam=-1), "scalar", "lam"),
    (KernelRidgeRegressor, dict(kernel="nope"), "scalar", "kernel"),
    (KernelRidgeRegressor, dict(solver="x"), "scalar", "solver"),
    (KernelRidgeRegressor, dict(input_sketch="subsample", m_x=2.5), "scalar", "m_x"),
    (KernelRidgeRegressor, dict(dtype="int8"), "scalar", "dtype"),
    (KernelRidgeRegressor, dict(random_state=True), "scalar", "random_state"),
    (MLPSurrogate, dict(max_epochs=0), "targets", "max_epochs"),
    (MLPSurrogate, dict(lr_factor=1.0), "targets", "lr_factor"),
    (MLPSurrogate, dict(monitor="auc"), "targets", "monitor"),
    (MLPSurrogate, dict(random_state=-2), "targets", "random_state"),
    (MLPSurrogate, dict(hidden_layer_sizes=(64, 0)), "targets", "hidden_layer_sizes"),
    (MLPSurrogate, dict(hidden_layer_sizes="64"), "targets", "hidden_layer_sizes"),
    (MLPSurrogate, dict(activation="gelu"), "targets", "activation"),
    # the early-stopping rule: n_iter_no_change=0 never stopped, -1 stopped after one epoch
    # as converged, and a NaN tol never counted an improvement (unchecked before)
    (MLPSurrogate, dict(n_iter_no_change=0), "targets", "n_iter_no_change"),
    (MLPSurrogate, dict(n_iter_no_change=-1), "targets", "n_iter_no_change"),
    (MLPSurrogate, dict(n_iter_no_change=2.5), "targets", "n_iter_no_change"),
    (MLPSurrogate, dict(tol=float("nan")), "targets", "tol"),
    (MLPSurrogate, dict(tol=-1.0), "targets", "tol"),
    (MLPSurrogate, dict(tol="small"), "targets", "tol"),
    (LocalKernelRidgeRegressor, dict(m_x=0), "scalar", "m_x"),
    (LocalKernelRidgeRegressor, dict(lam=-1), "scalar", "lam"),
    (LocalKernelRidgeRegressor, dict(kernel="nope"), "scalar", "kernel"),
    (LocalKernelRidgeRegressor, dict(n_regions=2, solver="x"), "scalar", "solver"),
    (LocalKernelRidgeRegressor, dict(dtype="int8"), "scalar", "dtype"),
    (LocalKernelRidgeRegressor, dict(random_state=1.5), "scalar", "random_state"),
    (NeighbourKernelRidgeRegressor, dict(lam=-1), "scalar", "lam"),
    (NeighbourKernelRidgeRegressor, dict(chunk_size=0), "scalar", "chunk_size"),
    (NeighbourKernelRidgeRegressor, dict(kernel="nope"), "scalar", "kernel"),
    (TorchRegressor, dict(loss="absolute"), "targets", "loss"),
    (TorchRegressor, dict(loss_delta=0.0), "targets", "loss_delta"),
    (TorchRegressor, dict(max_epochs=0), "targets", "max_epochs"),
    (TorchRegressor, dict(monitor="auc"), "targets", "monitor"),
    (TorchRegressor, dict(n_iter_no_change=0), "targets", "n_iter_no_change"),
    (TorchRegressor, dict(tol=float("nan")), "targets", "tol"),
    (SmilesRegressor, dict(architecture="rnn"), "smiles", "architecture"),
    (SmilesRegressor, dict(min_count=0), "smiles", "min_count"),
    (TextRegressor, dict(max_length=-1), "texts", "max_length"),
    (TextRegressor, dict(lr_drops=-1), "texts", "lr_drops"),
    (SmilesTokenizer, dict(min_count=0), "strings", "min_count"),
    (SmilesTokenizer, dict(max_vocabulary=0), "strings", "max_vocabulary"),
    (WordTokenizer, dict(max_length=-1), "strings", "max_length"),
    (SketchedKernelMachine, dict(lam=-1), "scalar", "lam"),
    (SketchedKernelMachine, dict(loss="nope"), "scalar", "loss"),
    (SketchedKernelMachine, dict(optimizer="sgd"), "scalar", "optimizer"),
    (SketchedKernelMachine, dict(kernel="nope"), "scalar", "kernel"),
    (SketchedKernelMachine, dict(max_iter=0), "scalar", "max_iter"),
    (SketchedKernelMachine, dict(learning_rate=0.0), "scalar", "learning_rate"),
    (SketchedKernelMachine, dict(init="random"), "scalar", "init"),
    (SketchedKernelMachine, dict(normalize_y="yes"), "scalar", "normalize_y"),
    (SketchedKernelMachine, dict(input_sketch="subsample", m_x=2.5), "scalar", "m_x"),
    (SketchedKernelMachine, dict(executor="nope"), "scalar", "executor"),
    (SketchedKernelMachine, dict(dtype="int8"), "scalar", "dtype"),
    (JointQuantileRegressor, dict(taus=[0.5, 0.2]), "scalar", "taus"),
    (JointQuantileRegressor, dict(taus="median"), "scalar", "taus"),
    (JointQuantileRegressor, dict(gamma_tau=-1.0), "scalar", "gamma_tau"),
    (JointQuantileRegressor, dict(lam=0.0), "scalar", "lam"),
    (RFFKernelMachine, dict(n_components=0), "scalar", "n_components"),
    (RFFKernelMachine, dict(kernel="laplacian"), "scalar", "kernel"),
    (RFFKernelMachine, dict(loss="nope"), "scalar", "loss"),
    (RFFKernelMachine, dict(lam=-1), "scalar", "lam"),
    (RFFKernelMachine, dict(dtype="int8"), "scalar", "dtype"),
    (RFFKernelMachine, dict(random_state=-1), "scalar", "random_state"),
]


def _id(case):
    cls, kw, _, _ = case
    return f"{cls.__name__}-{'-'.join(f'{k}={v!r}'[:30] for k, v in kw.items())}"


@pytest.mark.parametrize("case", BAD, ids=[_id(c) for c in BAD])
def test_check_params_raises_what_fit_raises(case, multilabel_data):
    cls, kw, kind, named = case
    X, Y = _data(kind, multilabel_data)
    with pytest.raises((ValueError, TypeError)) as by_fit:
        cls(**kw).fit(X, Y)
    with pytest.raises((ValueError, TypeError)) as by_check:
        cls(**kw).check_params()
    assert type(by_check.value) is type(by_fit.value)
    assert str(by_check.value) == str(by_fit.value)
    assert named in str(by_check.value)


# the estimators of sprokr.models with fit, each with good parameters (objects among them:
# instances of components, a RandomState, which check_params must not draw from)
GOOD = [
    SISOKR(), SISOKR(input_sketch="subsample", m_x=10, output_sketch="psg", m_y=5, random_state=0),
    SISOKR(input_kernel=GaussianKernel(gamma=0.5), input_sketch=SubSample(m=10), m_x=10,
           random_state=np.random.RandomState(3), output_kernel_params={"sigma2": 2.0}),
    IOKR(), SIOKR(), ISOKR(), DSOKR(), DSOKR(regressor="kernel_ridge", regressor_params={"lam": 1e-3}, m_y=5,
                                            random_state=np.random.RandomState(0)),
    DSOKREnsemble(DSOKR(m_y=5)), DSOKREnsemble([DSOKR(m_y=5), DSOKR(m_y=6)], weights=[1.0, 2.0]),
    KernelRidgeRegressor(), KernelRidgeRegressor(kernel=GaussianKernel(), input_sketch="subsample", m_x=10),
    LocalKernelRidgeRegressor(), MLPSurrogate(), NeighbourKernelRidgeRegressor(), TorchRegressor(),
    SmilesRegressor(), TextRegressor(), SmilesTokenizer(), WordTokenizer(),
    SketchedKernelMachine(), SketchedKernelMachine(input_sketch="subsample", m_x=10, loss="huber"),
    JointQuantileRegressor(), RFFKernelMachine(random_state=np.random.RandomState(1)),
]


@pytest.mark.parametrize("value", [Fraction(1, 10), Decimal("0.1"), "0.1", None, np.array(0.1)],
                         ids=["Fraction", "Decimal", "str", "None", "0-d array"])
def test_check_positive_names_a_value_that_is_not_a_python_or_numpy_number(value):
    """A ``fractions.Fraction`` is a ``numbers.Real``: it passed the type test and ended in
    numpy's TypeError ("ufunc 'isfinite' not supported for the input types")."""
    with pytest.raises(ValueError, match=rf"^lam must be a finite real number, got {re.escape(repr(value))}$"):
        check_positive(value, "lam")
    assert check_positive(np.float32(0.5), "lam") == 0.5 and check_positive(np.int64(2), "lam", strict=False) == 2.0


def test_every_estimator_class_with_fit_has_check_params():
    classes = {getattr(models, n) for n in models.__all__ if isinstance(getattr(models, n), type)
               and hasattr(getattr(models, n), "fit")}
    assert classes == {type(e) for e in GOOD} | {SequenceRegressor}  # (abstract: no tokenizer)
    for cls in classes:
        assert callable(getattr(cls, "check_params", None)), cls


@pytest.mark.parametrize("est", GOOD, ids=[type(e).__name__ for e in GOOD])
def test_check_params_on_good_parameters_returns_self_and_changes_nothing(est):
    est = clone(est)
    before = pickle.dumps(est.__dict__)
    ids = {k: id(v) for k, v in est.__dict__.items()}
    assert est.check_params() is est
    assert pickle.dumps(est.__dict__) == before  # deep: components, RandomState (nothing drawn)
    assert {k: id(v) for k, v in est.__dict__.items()} == ids


def test_the_checks_that_need_the_data_stay_in_fit(multilabel_data):
    X, Y = _data("pairs", multilabel_data)
    est = SISOKR(input_sketch="subsample", m_x=1000)
    assert est.check_params() is est  # m_x is an integer >= 1: the rest needs n
    with pytest.raises(ValueError, match="m_x=1000 is larger than the number of samples n_samples=40"):
        est.fit(X, Y)
    with pytest.raises(ValueError, match="n_neighbors must be an integer between 1 and the number of samples"):
        NeighbourKernelRidgeRegressor(n_neighbors=0).check_params().fit(*_data("scalar", multilabel_data))


# -- sprokr-chem's MoleculeRetriever ------------------------------------------------------
RETRIEVER_BAD = [
    dict(method="best"), dict(inputs="images"), dict(validation_fraction=1.5), dict(lams=[-1.0]),
    dict(output_kernel="nope"), dict(output_kernel=[]), dict(max_epochs=0), dict(time_budget_s=0),
    dict(memory_budget_mb=float("inf")), dict(hidden_layer_sizes="big"), dict(random_state=-1),
]


@pytest.mark.parametrize("kw", RETRIEVER_BAD, ids=[next(iter(k)) for k in RETRIEVER_BAD])
def test_molecule_retriever_check_params_raises_what_fit_raises(kw):
    pytest.importorskip("sprokr_chem")
    from sprokr_chem import MoleculeRetriever

    with pytest.raises((ValueError, TypeError)) as by_fit:
        MoleculeRetriever(**kw).fit(SMILES, SMILES)
    with pytest.raises((ValueError, TypeError)) as by_check:
        MoleculeRetriever(**kw).check_params()
    assert type(by_check.value) is type(by_fit.value)
    assert str(by_check.value) == str(by_fit.value)
    assert next(iter(kw)) in str(by_check.value)


def test_molecule_retriever_check_params_on_good_parameters_returns_self_and_changes_nothing():
    pytest.importorskip("sprokr_chem")
    from sprokr_chem import MoleculeRetriever

    est = MoleculeRetriever(random_state=np.random.RandomState(0))
    before = pickle.dumps(est.__dict__)
    assert est.check_params() is est
    assert pickle.dumps(est.__dict__) == before


# -- the command line ----------------------------------------------------------------------
CONFIG = '''estimator = "SISOKR"
random_state = 0

[params]
lam = -1
input_sketch = "subsample"
m_x = 60

[input]
columns = ["f0", "f1", "f2", "f3"]

[output]
columns = ["sports", "music", "science"]
type = "labels"
'''


@pytest.mark.parametrize("command", ["fit", "select"])
@pytest.mark.parametrize("train", ["a_directory", "missing.csv"])
def test_the_cli_checks_parameter_values_before_reading_the_training_file(tmp_path, capsys, command, train):
    (tmp_path / "model.toml").write_text(CONFIG)
    (tmp_path / "a_directory").mkdir()
    out = tmp_path / ("m.sprokr" if command == "fit" else "chosen.toml")
    code = main([command, "--config", str(tmp_path / "model.toml"), "--train", str(tmp_path / train), "-o", str(out)])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "model.toml" in lines[0] and "lam must be > 0, got -1" in lines[0], err
    assert train not in lines[0], err  # the training file was never read
    assert not out.exists()


def test_the_cli_calls_a_plugin_estimators_check_params_and_skips_it_when_absent(monkeypatch):
    """A third-party estimator with check_params: called, its ValueError a ConfigError naming
    the configuration file; without check_params: built, not checked (its fit checks)."""
    from sklearn.base import BaseEstimator

    from sprokr import registry
    from sprokr.cli._tasks import ConfigError, build_estimator

    class Plain(BaseEstimator):
        def __init__(self, lam=1.0):
            self.lam = lam

        def fit(self, X, Y):
            raise ValueError("never called here")

        def predict(self, X):
            return X

        def save(self, path):
            pass

    class Checked(Plain):
        def check_params(self):
            if self.lam < 0:
                raise ValueError(f"lam must be >= 0, got {self.lam}")
            return self

    class Plugin:
        @sprokr.hookimpl
        def sprokr_estimators(self):
            return {"PlainEstimator": Plain, "CheckedEstimator": Checked}

    r = registry.Registry(entry_points=False)
    monkeypatch.setattr(registry, "_REGISTRY", r)
    r.register(Plugin(), name="thirdparty")
    with pytest.raises(ConfigError, match=r"^plugin\.toml: .*lam must be >= 0, got -1$"):
        build_estimator({"estimator": "CheckedEstimator", "params": {"lam": -1}}, "plugin.toml")
    assert build_estimator({"estimator": "CheckedEstimator", "params": {"lam": 2}}, "plugin.toml").lam == 2
    est = build_estimator({"estimator": "PlainEstimator", "params": {"lam": -1}}, "plugin.toml")
    assert isinstance(est, Plain) and est.lam == -1
