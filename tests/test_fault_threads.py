"""A model shared between threads: one thread predicts while another refits it.

Every estimator builds its new state aside and publishes it at once
(:func:`sprokr.utils.atomic_fit`); readers run on one state (:func:`sprokr.utils.consistent_read`).
So each prediction made during refits equals the old model's or the new model's,
never a mix of the two, and a refit that fails leaves the model as it was.
"""
import sys
import threading

import numpy as np
import pytest
from sklearn.base import clone

from sprokr import (
    DSOKR, IOKR, SISOKR, DSOKREnsemble, JointQuantileRegressor, RFFKernelMachine, SketchedKernelMachine,
)
from sprokr.models.regressors import KernelRidgeRegressor, MLPSurrogate

pytestmark = [pytest.mark.faults, pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]


def _structured(seed, n=150):
    r = np.random.default_rng(seed)
    X = r.standard_normal((n, 5))
    Y = (X @ r.standard_normal((5, 6)) > 0.4).astype(np.int8)
    return X, Y


def _vectors(seed, n=150, d=1):
    r = np.random.default_rng(seed)
    X = r.standard_normal((n, 4))
    y = np.sin(X @ r.standard_normal((4, d))) + 0.05 * r.standard_normal((n, d))
    return X, (y[:, 0] if d == 1 else y)


XQ = np.random.default_rng(9).standard_normal((40, 5))
XQ4 = XQ[:, :4]

CASES = {
    "SISOKR": (lambda: SISOKR(lam=1e-3, input_sketch="subsample", m_x=40, output_sketch="psg", m_y=20,
                              output_sketch_params={"p": 0.1}, random_state=0),
               _structured, lambda m: m.predict_scores(XQ)),
    "SISOKR-topk": (lambda: SISOKR(lam=1e-3, input_sketch="subsample", m_x=40, random_state=0),
                    _structured, lambda m: np.asarray(m.predict_topk(XQ, k=3).scores)),
    "IOKR": (lambda: IOKR(lam=1e-3), _structured, lambda m: m.predict_scores(XQ)),
    "DSOKR": (lambda: DSOKR(output_sketch="psg", m_y=20, output_sketch_params={"p": 0.1},
                            regressor="kernel_ridge", regressor_params={"lam": 1e-3}, random_state=0),
              _structured, lambda m: m.predict_scores(XQ)),
    "DSOKREnsemble": (lambda: DSOKREnsemble(
        DSOKR(output_sketch="psg", m_y=15, output_sketch_params={"p": 0.1}, regressor="kernel_ridge",
              regressor_params={"lam": 1e-3}), n_estimators=2, random_state=0),
        _structured, lambda m: m.predict_scores(XQ)),
    "SketchedKernelMachine": (lambda: SketchedKernelMachine(lam=1e-3, input_sketch="subsample", m_x=40, random_state=0),
                              _vectors, lambda m: m.predict(XQ4)),
    "JointQuantileRegressor": (lambda: JointQuantileRegressor(taus=[0.3, 0.7], lam=1e-3, input_sketch="subsample",
                                                              m_x=20, max_iter=20, random_state=0),
                               lambda s: _vectors(s, n=60), lambda m: m.predict(XQ4)),
    "RFFKernelMachine": (lambda: RFFKernelMachine(lam=1e-3, n_components=60, random_state=0),
                         _vectors, lambda m: m.predict(XQ4)),
    "KernelRidgeRegressor": (lambda: KernelRidgeRegressor(lam=1e-3, input_sketch="subsample", m_x=40,
                                                          random_state=0),
                             lambda s: _vectors(s, d=3), lambda m: m.predict(XQ4)),
    "MLPSurrogate": (lambda: MLPSurrogate(hidden_layer_sizes=(8,), max_epochs=3, random_state=0),
                     lambda s: _vectors(s, d=3), lambda m: m.predict(XQ4)),
}


def _same(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(b).max()))


def _race(make, data, read, n_refits=6):
    """Refit a shared model on data B / data A in a thread while reading it here; returns
    the number of reads that matched neither model (and how many reads were made)."""
    (Xa, Ya), (Xb, Yb) = data(1), data(2)
    ref_a, ref_b = read(make().fit(Xa, Ya)), read(make().fit(Xb, Yb))
    assert not _same(ref_a, ref_b)
    model = make().fit(Xa, Ya)
    failures = []

    def refit():
        try:
            for i in range(n_refits):
                model.fit(*((Xb, Yb) if i % 2 == 0 else (Xa, Ya)))
        except BaseException as exc:  # reported below
            failures.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: a mixed state shows up quickly
    t = threading.Thread(target=refit)
    t.start()
    mixed = reads = 0
    try:
        while t.is_alive() or reads < 5:  # reads all along the refits
            got = read(model)
            reads += 1
            if not (_same(got, ref_a) or _same(got, ref_b)):
                mixed += 1
    finally:
        t.join()
        sys.setswitchinterval(old)
    assert not failures, failures
    return mixed, reads


@pytest.mark.parametrize("name", sorted(CASES))
def test_predict_during_a_refit_sees_the_old_or_the_new_model(name):
    make, data, read = CASES[name]
    mixed, reads = _race(make, data, read)
    assert mixed == 0, f"{mixed} of {reads} predictions were neither the old model's nor the new one's"


def _read_at_every_line(model, fit_args, read, before, functions=None):
    """Refit ``model`` while reading it at every line the refit executes in the module
    that defines the estimator (optionally: in these functions only) -- a tracer; the
    reads are not traced.  Returns, for each read, True when it equals ``before`` or
    what went wrong."""
    import inspect

    source = inspect.getfile(type(model))
    results = []

    def trace(frame, event, arg):
        if event == "call":
            code = frame.f_code
            return trace if code.co_filename == source and (functions is None or code.co_name in functions) else None
        if event == "line":
            try:
                results.append(_same(read(model), before))
            except Exception as exc:  # a half-built state may not even predict
                results.append(exc)
        return trace

    sys.settrace(trace)
    try:
        model.fit(*fit_args)
    finally:
        sys.settrace(None)
    return results


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_read_at_every_line_of_a_refit_sees_the_old_model(name):
    """Deterministic interleaving: the model is read at every line its refit executes
    (as another thread could); each read must give the previous model, the new one being
    published only at the end, all at once."""
    make, data, read = CASES[name]
    (Xa, Ya), (Xb, Yb) = data(1), data(2)
    model = make().fit(Xa, Ya)
    before = read(model)
    results = _read_at_every_line(model, (Xb, Yb), read, before)
    assert len(results) >= 5
    bad = [r for r in results if r is not True]
    assert not bad, f"{len(bad)} of {len(results)} reads saw a mixed state: {bad[:3]}"
    assert _same(read(model), read(make().fit(Xb, Yb)))


@pytest.fixture(scope="module")
def retriever_case():
    pytest.importorskip("sprokr_chem")
    from sprokr.datasets import sample_path
    from sprokr_chem import MoleculeRetriever
    from sprokr_chem.datasets import load_qm9

    smiles, _, _ = load_qm9(sample_path("qm9_sample.csv"))
    pool, queries = smiles[:80], smiles[80:90]

    def data(seed):
        idx = np.random.default_rng(seed).permutation(80)[:60]
        return [pool[i] for i in idx], [pool[i] for i in idx]

    make = lambda: MoleculeRetriever(method="iokr", output_kernel="morgan_count_tanimoto",  # noqa: E731
                                     input_grid=[{"n": 4}], lams=[1e-3, 1e-2], candidates=pool, random_state=0)
    return make, data, lambda m: m.predict_scores(queries)


def test_molecule_retriever_during_a_refit(retriever_case):
    make, data, read = retriever_case
    mixed, reads = _race(make, data, read, n_refits=4)
    assert mixed == 0, f"{mixed} of {reads} predictions were neither the old model's nor the new one's"
    (Xa, Ya), (Xb, Yb) = data(1), data(2)
    model = make().fit(Xa, Ya)
    results = _read_at_every_line(model, (Xb, Yb), read, read(model), functions={"fit"})
    assert len(results) >= 5 and all(r is True for r in results)


def test_torch_regressor_during_a_refit():
    pytest.importorskip("torch")
    from sprokr.models.torch_regressors import TorchRegressor

    make = lambda: TorchRegressor(hidden_layer_sizes=(8,), max_epochs=3, random_state=0)  # noqa: E731
    data, read = (lambda s: _vectors(s, d=3)), (lambda m: m.predict(XQ4))
    mixed, reads = _race(make, data, read)
    assert mixed == 0, f"{mixed} of {reads} predictions were neither the old model's nor the new one's"
    (Xa, Ya), (Xb, Yb) = data(1), data(2)
    model = make().fit(Xa, Ya)
    results = _read_at_every_line(model, (Xb, Yb), read, read(model))
    assert len(results) >= 5 and all(r is True for r in results)


class InjectedFailure(BaseException):
    """Raised inside a refit by :func:`_fail_at_line` (a BaseException: no ``except
    Exception`` of the library turns it into a fallback)."""


def _fail_at_line(model, fit_args, at):
    """Refit ``model``, raising :class:`InjectedFailure` at the ``at``-th line the refit
    executes in the module that defines the estimator (``at=None``: no failure); returns
    the number of lines executed there."""
    import inspect

    source = inspect.getfile(type(model))
    count = [0]

    def trace(frame, event, arg):
        if event == "call":
            return trace if frame.f_code.co_filename == source else None
        if event == "line":
            count[0] += 1
            if count[0] == at:
                raise InjectedFailure(at)
        return trace

    sys.settrace(trace)
    try:
        model.fit(*fit_args)
    finally:
        sys.settrace(None)
    return count[0]


def test_a_failed_refit_leaves_the_model_as_it_was():
    """For every estimator: a refit that fails after validation raises, and the model
    predicts exactly as before, its state untouched.

    Infinite rows are refused by the input validation, before the refit touches anything
    (with a fit that set its state in place, that alone passed): the refit is also made to
    fail at a quarter, half, three quarters and at the very last line it executes in the
    estimator's module, on other data."""
    for name, (make, data, read) in CASES.items():
        (X, Y), (Xb, Yb) = data(1), data(2)
        n_lines = _fail_at_line(make().fit(X, Y), (Xb, Yb), None)  # a refit that succeeds
        assert n_lines >= 4, (name, n_lines)
        model = make().fit(X, Y)
        before = read(model)
        state = dict(model.__dict__)
        bad = np.array(X, dtype=float)
        bad[-5:] = np.inf
        with pytest.raises(ValueError, match="NaN or infinite value"):
            model.fit(bad, Y)
        for at in (None, n_lines // 4, n_lines // 2, 3 * n_lines // 4, n_lines):
            if at is not None:
                with pytest.raises(InjectedFailure):
                    _fail_at_line(model, (Xb, Yb), at)
            assert _same(read(model), before), (name, at)
            assert set(model.__dict__) == set(state), (name, at)
            assert all(model.__dict__[k] is v for k, v in state.items()), (name, at)


def test_refit_publishes_a_new_state_object():
    X, Y = _structured(1)
    model = SISOKR(lam=1e-3, input_sketch="subsample", m_x=40, random_state=0).fit(X, Y)
    old_state = model.__dict__
    old_coef = model.coef_
    model.fit(*_structured(2))
    assert model.__dict__ is not old_state and old_state["coef_"] is old_coef  # the old state untouched
    assert clone(model).get_params() == model.get_params()
