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
    DSOKR, IOKR, SIOKR, SISOKR, DSOKREnsemble, JointQuantileRegressor, RFFKernelMachine, SketchedKernelMachine,
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


def _fit_traced(model, fit_args, trace):
    """``model.fit(*fit_args)`` under the tracer ``trace`` (``sys.settrace``), removed after."""
    sys.settrace(trace)
    try:
        model.fit(*fit_args)
    finally:
        sys.settrace(None)


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

    _fit_traced(model, fit_args, trace)
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

    _fit_traced(model, fit_args, trace)
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


# ---------------------------------------------------------------------------------------
# Several threads predicting with one fitted model at once (a web service, a thread pool):
# prediction is read-only, as in scikit-learn, and the lazily built state (a candidate
# index's folded form, the row-block pool, the BLAS limit, the fingerprint cache) is built
# once and shared, whichever threads get there first.

# the 64 label sets of 6 labels, shuffled: distinct candidates (no exact ties to break)
CANDS = np.random.default_rng(11).permutation((np.arange(64)[:, None] >> np.arange(6) & 1).astype(np.int8))

FIRST_CALLS = {
    "SIOKR": lambda: SIOKR(lam=1e-3, m_x=40, random_state=0),  # exact outputs: the folded index
    "IOKR": lambda: IOKR(lam=1e-3),
    "SISOKR": CASES["SISOKR"][0],
    "DSOKR": CASES["DSOKR"][0],
    "DSOKREnsemble": CASES["DSOKREnsemble"][0],
    "SketchedKernelMachine": CASES["SketchedKernelMachine"][0],
    "RFFKernelMachine": CASES["RFFKernelMachine"][0],
}


def _reads(name):
    """(key, read) pairs: each method the model has x batch sizes x kinds of candidates
    (the training outputs, an index built beforehand, one built in the call, a raw set)."""
    if name in ("SketchedKernelMachine", "RFFKernelMachine"):
        return [(f"predict{n}", lambda m, index, n=n: m.predict(XQ4[:n])) for n in (1, 40)]
    kinds = {"default": lambda m, index: None, "index": lambda m, index: index,
             "new index": lambda m, index: m.make_candidate_index(CANDS), "raw": lambda m, index: CANDS.copy()}
    methods = {"predict": lambda m, Xq, c: m.predict(Xq, candidates=c),
               "topk": lambda m, Xq, c: m.predict_topk(Xq, k=3, candidates=c),
               "scores": lambda m, Xq, c: m.predict_scores(Xq, candidates=c)}
    return [(f"{meth}{n} {kind}", lambda m, index, f=f, n=n, c=c: f(m, XQ[:n], c(m, index)))
            for meth, f in methods.items() for n in (1, 40) for kind, c in kinds.items()]


def _equal(got, ref):
    """Decoded outputs, indices and candidates exactly; scores and coordinates to 1e-10."""
    if hasattr(ref, "indices"):
        return np.array_equal(got.indices, ref.indices) and _equal(got.scores, ref.scores)
    if isinstance(ref, list):
        return isinstance(got, list) and got == ref
    got, ref = np.asarray(got), np.asarray(ref)
    if ref.dtype.kind != "f":
        return got.shape == ref.shape and np.array_equal(got, ref)
    return got.shape == ref.shape and np.allclose(got, ref, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(ref).max()))


def _first_calls_at_once(model, reads, index=None, n_threads=4):
    """Every thread makes all ``reads`` on ``model`` (a shuffled order each), released at
    once: the first calls of a fresh model run together.  Returns [(key, result or exception)]."""
    start = threading.Barrier(n_threads)

    def worker(seed):
        start.wait()
        out = []
        for i in np.random.default_rng(seed).permutation(len(reads)):
            key, read = reads[i]
            try:
                out.append((key, read(model, index)))
            except Exception as exc:  # reported by the test
                out.append((key, exc))
        return out

    from concurrent.futures import ThreadPoolExecutor

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        with ThreadPoolExecutor(n_threads) as pool:
            return [r for f in [pool.submit(worker, s) for s in range(n_threads)] for r in f.result()]
    finally:
        sys.setswitchinterval(old)


@pytest.mark.parametrize("name", sorted(FIRST_CALLS))
def test_first_predictions_of_a_fresh_model_in_threads_equal_the_serial_ones(name):
    make = FIRST_CALLS[name]
    data = _vectors if name in ("SketchedKernelMachine", "RFFKernelMachine") else _structured
    X, Y = data(1)
    reads = _reads(name)
    ref = {}
    for key, read in reads:  # each on a fresh model and index: its first call, serially
        m = make().fit(X, Y)
        ref[key] = read(m, m.make_candidate_index(CANDS) if hasattr(m, "make_candidate_index") else None)
    model = make().fit(X, Y)
    index = model.make_candidate_index(CANDS) if hasattr(model, "make_candidate_index") else None
    results = _first_calls_at_once(model, reads, index)
    errors = [(k, r) for k, r in results if isinstance(r, Exception)]
    assert not errors, errors[:3]
    wrong = [k for k, r in results if not _equal(r, ref[k])]
    assert not wrong, f"{len(wrong)} of {len(results)} concurrent predictions differ from the serial ones: {wrong[:5]}"
    assert all(_equal(read(model, index), ref[k]) for k, read in reads)  # and the model predicts as before


def test_first_predictions_of_a_fresh_retriever_in_threads_equal_the_serial_ones(retriever_case):
    from sprokr.datasets import sample_path
    from sprokr_chem import clear_fingerprint_cache
    from sprokr_chem.datasets import load_qm9

    make, data, _ = retriever_case
    X, Y = data(1)
    smiles, _, _ = load_qm9(sample_path("qm9_sample.csv"))
    queries, extra = smiles[80:90], smiles[90:110]
    reads = [(f"{meth}{n} {kind}", lambda m, _, f=f, n=n, c=c: f(m, queries[:n], None if c is None else list(c)))
             for meth, f in {"predict": lambda m, q, c: m.predict(q, candidates=c),
                             "topk": lambda m, q, c: m.predict_topk(q, k=3, candidates=c),
                             "scores": lambda m, q, c: m.predict_scores(q, candidates=c)}.items()
             for n in (1, 10) for kind, c in {"default": None, "raw": extra}.items()]
    reference = make().fit(X, Y)
    ref = {k: read(reference, None) for k, read in reads}
    model = make().fit(X, Y)
    clear_fingerprint_cache()  # the candidates' and queries' fingerprints computed in the threads
    results = _first_calls_at_once(model, reads, n_threads=3)
    errors = [(k, r) for k, r in results if isinstance(r, Exception)]
    assert not errors, errors[:3]

    def equal(got, want):
        if hasattr(want, "smiles"):
            return got.smiles == want.smiles and np.array_equal(got.indices, want.indices) and \
                _equal(got.scores, want.scores)
        return _equal(got, want)

    wrong = [k for k, r in results if not equal(r, ref[k])]
    assert not wrong, f"{len(wrong)} of {len(results)} concurrent predictions differ from the serial ones: {wrong[:5]}"


def test_threads_predicting_at_once_fold_a_fresh_candidate_index_once(monkeypatch):
    """Without output sketch, a candidate index is folded with the coefficients on first
    use (``E C^T``: as large as the index) and cached on it.  Threads that predict at once
    with a fresh index must build that form once and share it, not each build its own."""
    import sprokr.models.sisokr as sisokr_module

    X, Y = _structured(1)
    model = SIOKR(lam=1e-3, m_x=40, random_state=0).fit(X, Y)
    reference = model.predict_scores(XQ, candidates=model.make_candidate_index(CANDS))
    index = model.make_candidate_index(CANDS)
    n_threads, folds = 3, []
    together = threading.Barrier(n_threads)
    fold = sisokr_module.matmul  # (the fold's product: E C^T)

    def folding(A, B):
        folds.append(threading.get_ident())
        try:  # every thread folding at the same time, or (one fold at a time) a time-out
            together.wait(timeout=2.0)
        except threading.BrokenBarrierError:
            pass
        return fold(A, B)

    monkeypatch.setattr(sisokr_module, "matmul", folding)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(n_threads) as pool:
        results = [f.result() for f in [pool.submit(model.predict_scores, XQ, candidates=index)
                                        for _ in range(n_threads)]]
    assert len(folds) == 1, f"the index was folded {len(folds)} times by {n_threads} threads"
    assert len(index.cache) == 1
    assert all(_equal(r, reference) for r in results)


def _overlapping(region, probe):
    """Two threads in ``region()`` (a context) at once, the first leaving while the second
    is still inside: returns ``probe()`` read by the second after the first has left."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def first():
        with region():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def second():
        a_in.wait(5)
        with region():
            b_in.set()
            a_out.wait(5)
            seen.append(probe())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(seen) == 1
    return seen[0]


def test_overlapping_single_blas_thread_regions_restore_the_blas_limits(monkeypatch):
    """The BLAS thread limit is process-wide.  Two threads inside ``single_blas_thread`` at
    once (two fits, or predictions of a local-ridge regressor): BLAS must stay on one thread
    until both have left, then get its limits back -- not be left on one thread for good
    (each thread restoring the limit it found on entering: the second found 1).  threadpoolctl
    is replaced by its semantics on one process-wide setting (OpenBLAS itself may ignore
    settings made outside the main thread, which would hide the overlap)."""
    from sprokr.numerics import _linalg, single_blas_thread

    class Blas:
        threads = 2

        def limit(self, limits, user_api):
            blas = self

            class Limiter:  # as threadpoolctl's: applied at once, restores what it found
                def __init__(self):
                    self.original, blas.threads = blas.threads, limits

                def restore_original_limits(self):
                    blas.threads = self.original

                def __enter__(self):
                    return self

                def __exit__(self, *exc):
                    self.restore_original_limits()

            return Limiter()

    blas = Blas()
    monkeypatch.setattr(_linalg, "_CONTROLLER", blas)
    inside = _overlapping(single_blas_thread, lambda: blas.threads)
    assert (inside, blas.threads) == (1, 2)  # one thread until both left, then the limits back
    with single_blas_thread():  # and one region alone, as before
        assert blas.threads == 1
    assert blas.threads == 2


def test_threads_making_their_first_row_block_pass_at_once_share_one_pool(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from sprokr.numerics import _parallel

    monkeypatch.setattr(_parallel, "_POOL", None)  # (the process's pool, if any, restored afterwards)
    monkeypatch.setattr(_parallel, "n_workers", lambda: 2)
    made = []
    together = threading.Barrier(2)

    class Pool(ThreadPoolExecutor):
        def __init__(self, *args, **kwargs):
            made.append(self)
            try:  # both threads creating a pool at once, or (one creation) a time-out
                together.wait(timeout=1.5)
            except threading.BrokenBarrierError:
                pass
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(_parallel, "ThreadPoolExecutor", Pool)
    rows = np.zeros(8)

    def count(sl):
        rows[sl] += 1

    threads = [threading.Thread(target=_parallel.for_row_blocks, args=(count, 8)) for _ in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for pool in made:
            pool.shutdown()
    assert len(made) == 1, f"{len(made)} row-block pools were created"
    assert (rows == 2).all()


def test_a_fingerprint_cache_hit_survives_an_eviction_by_another_thread(monkeypatch):
    """sprokr_chem's fingerprint cache is process-wide and bounded: a hit (look-up, then
    moved to the end) must not interleave with another thread evicting or clearing it."""
    pytest.importorskip("sprokr_chem")
    from collections import OrderedDict

    from sprokr_chem import kernels as chem_kernels

    key, fingerprint = ("CCO", 2, 2048, True), (np.array([1, 5], dtype=np.int32), np.array([1.0, 2.0]))
    clearing = []

    class Cache(OrderedDict):
        def get(self, k, default=None):
            hit = super().get(k, default)
            if hit is not None and not clearing:  # another thread empties the cache meanwhile
                t = threading.Thread(target=chem_kernels.clear_fingerprint_cache)
                clearing.append(t)
                t.start()
                t.join(0.5)  # done at once, unless the hit holds the cache
            return hit

    cache = Cache({key: fingerprint})
    monkeypatch.setattr(chem_kernels, "_CACHE", cache)
    got = chem_kernels._fingerprint("CCO", 0, 2, 2048, True)
    clearing[0].join()
    assert got is fingerprint
    assert not cache  # the clearing thread ran after the hit


def test_overlapping_torch_thread_settings_restore_the_thread_count():
    """``TorchRegressor(num_threads=...)`` sets torch's process-wide thread count during a
    fit or a prediction.  Two calls at once: the count must stay set until both have left,
    then come back -- not stay at the value the second call found (each call restoring what
    it found on entering).  A stand-in for torch's two functions keeps the count."""
    from sprokr.models import torch_regressors

    class Torch:
        threads = 4

        def get_num_threads(self):
            return self.threads

        def set_num_threads(self, n):
            self.threads = n

    torch = Torch()
    inside = _overlapping(lambda: torch_regressors._torch_threads(torch, 1), lambda: torch.threads)
    assert (inside, torch.threads) == (1, 4)  # set until both left, then the count found before
    with torch_regressors._torch_threads(torch, None):  # no num_threads: untouched
        assert torch.threads == 4
