"""Errors that reach the user are the real ones (issue "Nothing breaks, nothing lies"):

* an error re-raised with more context keeps its type and its own message, whatever its
  constructor takes (``MoleculeReadError(index, record, reason)``, a plugin's own types);
* a kernel given a type it cannot take says which types it takes;
* predicting on zero queries returns empty results of the right shape, in every estimator;
* bad inputs are named by every estimator (``DSOKREnsemble`` included), and huge finite
  outputs either fit with finite scores or are refused quickly;
* an unknown component whose plugin was skipped names the plugin and why;
* ``MoleculeRetriever`` takes numeric inputs (descriptor vectors);
* the regressors name a query that is not a collection, a bad ``y`` of ``score`` and a bad
  ``random_state`` (with or without a sketch to draw).
"""
import csv

import numpy as np
import pytest

pytest.importorskip("rdkit")
pytest.importorskip("networkx")

import sprokr  # noqa: E402
from sprokr import IOKR  # noqa: E402
from sprokr.cli import main  # noqa: E402
from sprokr.datasets import sample_path  # noqa: E402
from sprokr.kernels import GaussianKernel  # noqa: E402
from sprokr.registry import Registry, get_registry  # noqa: E402
from sprokr.utils import error_text, reword_error  # noqa: E402
from sprokr_chem import MoleculeReadError, mol_to_graph  # noqa: E402

SMILES = ["CCO", "CCCO", "CCN", "c1ccccc1", "CC(=O)O", "CCCl", "CCOC", "OCCO"]


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(len(SMILES), 3))


# 1. errors re-raised with context keep their type and message -----------------------------
class NeedsArgs(ValueError):
    """A plugin's error whose constructor takes other arguments than a message."""

    def __init__(self, code, detail):
        self.code, self.detail = code, detail
        super().__init__(f"plugin failure {code}: {detail}")


class NoArgs(TypeError):
    """A plugin's error that cannot be re-created with a message."""

    def __init__(self):
        super().__init__("no-arg failure")


class OwnStr(ValueError):
    """A plugin's error with its own ``__str__`` (its message is not its argument)."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code

    def __str__(self):
        return f"own-str failure #{self.code}"


ERRORS = [lambda: NeedsArgs(7, "bad sample"), NoArgs, lambda: OwnStr(3), lambda: MoleculeReadError(2, "C1C(", "why")]


class FailingKernel(GaussianKernel):
    """A plugin kernel whose ``prepare`` raises its own exception type on the output side."""

    def __init__(self, sigma2=1.0, make=None, dtype="float64"):
        super().__init__(sigma2=sigma2, dtype=dtype)
        self.make = make

    def prepare(self, X):
        raise self.make()


@pytest.mark.parametrize("make", ERRORS, ids=lambda m: m().__class__.__name__)
def test_plugin_errors_keep_their_type_and_message(X, make):
    expected = make()
    with pytest.raises(type(expected)) as info:
        IOKR(output_kernel=FailingKernel(make=make)).fit(X, X)
    exc = info.value
    attrs = {k: v for k, v in vars(exc).items() if k != "__notes__"}
    assert type(exc) is type(expected) and attrs == vars(expected)  # the same error, attributes kept
    text = error_text(exc)  # what the CLI prints
    assert str(expected) in text and "Y" in text and "missing" not in text and "positional" not in text


class BadParams(GaussianKernel):
    """A plugin kernel whose ``check_params`` raises its own exception type."""

    def __init__(self, sigma2=1.0, make=None, dtype="float64"):
        super().__init__(sigma2=sigma2, dtype=dtype)
        self.make = make

    def check_params(self):
        raise self.make()


@pytest.mark.parametrize("make", ERRORS, ids=lambda m: m().__class__.__name__)
def test_factory_and_check_params_errors_keep_their_type(X, make):
    expected = make()

    class Plugin:
        @sprokr.hookimpl
        def sprokr_input_kernels(self):
            def failing():
                raise make()
            return {"failing": failing}

    reg = Registry(entry_points=False)
    reg.register(Plugin(), name="testplugin")
    with pytest.raises(type(expected)) as info:
        reg.create("input_kernel", "failing")
    assert str(expected) in error_text(info.value) and "testplugin" in error_text(info.value)
    with pytest.raises(type(expected)) as info:
        IOKR(input_kernel=BadParams(make=make)).fit(X, X)
    assert str(expected) in error_text(info.value) and "input_kernel" in error_text(info.value)


def test_reword_error_never_builds_a_new_instance():
    exc = NeedsArgs(1, "x")
    assert reword_error(exc, "Y: plugin failure 1: x") is exc and str(exc) == "Y: plugin failure 1: x"
    own = OwnStr(5)
    assert reword_error(own, "Y: own-str failure #5") is own
    assert error_text(own) == "own-str failure #5; Y: own-str failure #5"
    plain = KeyError("k")  # a custom __str__ too: the context goes to a note
    assert reword_error(plain, "X: 'k'") is plain and "X: 'k'" in plain.__notes__


def test_molecule_read_error_survives_pickling():
    import pickle

    exc = reword_error(MoleculeReadError(2, "C1C(", "RDKit could not parse it"), "Y: invalid molecule at record 2")
    back = pickle.loads(pickle.dumps(exc))  # e.g. from a process pool or a Dask worker
    assert type(back) is MoleculeReadError and str(back) == str(exc)
    assert (back.index, back.record, back.reason) == (2, "C1C(", "RDKit could not parse it")


def test_bad_smiles_in_outputs_candidates_and_queries_name_the_record(X):
    bad = list(SMILES)
    bad[1] = "C1CC(=O"
    with pytest.raises(MoleculeReadError, match=r"^Y: invalid molecule at record 1: 'C1CC\(=O' \(RDKit") as info:
        IOKR(output_kernel="morgan_tanimoto").fit(X, bad)
    assert info.value.index == 1 and info.value.record == "C1CC(=O"
    model = IOKR(output_kernel="morgan_tanimoto").fit(X, SMILES)
    with pytest.raises(MoleculeReadError, match=r"^candidates: invalid molecule at record 1: 'C1CC\(=O'"):
        model.predict_topk(X, candidates=["CCO", "C1CC(=O"], k=1)
    with pytest.raises(MoleculeReadError, match=r"^candidates: invalid molecule at record 1: '' \(empty SMILES\)"):
        model.make_candidate_index(["CCO", ""])
    queries = IOKR(input_kernel="smiles_spectrum", output_kernel="morgan_tanimoto").fit(SMILES, SMILES)
    with pytest.raises(MoleculeReadError, match=r"^X: invalid molecule at record 0: ''"):
        queries.predict([""])


# 2. a kernel given a type it cannot take says which types it takes ------------------------
def _first_party_kernels():
    rows = get_registry().list_components()
    return sorted({r["name"] for r in rows if r["kind"] == "output_kernel" and r["plugin"] in ("sprokr", "chem", "graphs")})


WRONG = {
    "numbers": lambda X: X,
    "smiles": lambda X: list(SMILES),
    "graphs": lambda X: [mol_to_graph(s) for s in SMILES],
    "text": lambda X: ["a sentence about cats"] * len(SMILES),
    "floats": lambda X: [float(i) for i in range(len(SMILES))],
    "dicts": lambda X: [{"a": i} for i in range(len(SMILES))],
    "ragged": lambda X: [[1.0] * (i % 3 + 1) for i in range(len(SMILES))],
}


_VECTORS, _MOLECULES = {"numbers", "floats"}, {"smiles", "graphs"}
# what each first-party output kernel takes among WRONG's kinds; a fit on any other kind is
# refused (so that a kernel silently accepting a type it cannot take fails the test)
TAKES = {
    **dict.fromkeys(["cosine", "gaussian", "laplacian", "linear", "polynomial", "tanimoto"], _VECTORS),
    "minmax": {"floats"},  # non-negative vectors only: "numbers" has negative entries
    **dict.fromkeys(["core_wl", "grakel", "wl"], {"graphs"}),
    **dict.fromkeys(["morgan_cosine", "morgan_count_tanimoto", "morgan_gaussian_tanimoto", "morgan_minmax",
                     "morgan_tanimoto", "smiles_spectrum"], _MOLECULES),
    "text": {"text", "smiles"},  # SMILES strings are texts too
    "precomputed": set(),  # a Gram matrix, none of these
}


def test_every_first_party_kernel_says_what_it_takes():
    assert set(_first_party_kernels()) == set(TAKES)


@pytest.mark.parametrize("kernel", _first_party_kernels())
@pytest.mark.parametrize("kind", sorted(WRONG))
def test_kernels_say_which_types_they_take(X, kernel, kind):
    Y = WRONG[kind](X)
    try:
        IOKR(output_kernel=kernel).fit(X, Y)
    except MoleculeReadError as exc:  # a string that is not a molecule: the documented error
        assert kind not in TAKES.get(kernel, ()), (kernel, kind)
        assert str(exc).startswith("Y: invalid molecule at record 0")
    except (TypeError, ValueError) as exc:
        assert kind not in TAKES.get(kernel, ()), (kernel, kind, exc)
        msg = error_text(exc)
        says = ("takes", "take graphs", "non-negative", "Gram block", "square training Gram")
        assert (msg.startswith("Y") or "precomputed" in msg) and any(w in msg for w in says), msg
        for internal in ("inhomogeneous", "could not convert", "positional argument", "setting an array element"):
            assert internal not in msg, msg
    else:  # accepted: only a kind the kernel takes
        assert kind in TAKES.get(kernel, ()), f"{kernel} accepted {kind} outputs without a word"


@pytest.mark.parametrize("kernel", ["morgan_tanimoto", "morgan_count_tanimoto", "morgan_minmax", "morgan_cosine",
                                    "morgan_gaussian_tanimoto", "smiles_spectrum"])
def test_molecule_kernels_take_molecule_graphs(kernel):
    k = get_registry().create("output_kernel", kernel)
    graphs = [mol_to_graph(s) for s in SMILES]
    np.testing.assert_allclose(k(graphs), k(SMILES), atol=1e-12)
    np.testing.assert_allclose(k(graphs[:3], SMILES), k(SMILES[:3], SMILES), atol=1e-12)


def test_cli_molecule_output_type_with_a_morgan_kernel(tmp_path, capsys):
    """docs/cli.md's `[output] type = "molecule"` with docs/molecules.md's Morgan count Tanimoto."""
    rows = list(csv.DictReader(open(sample_path("qm9_sample.csv"))))
    for name, part in (("train.csv", rows[:80]), ("test.csv", rows[80:100])):
        with open(tmp_path / name, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(part)
    (tmp_path / "m.toml").write_text('''estimator = "IOKR"
[params]
lam = 1e-3
output_kernel = "morgan_count_tanimoto"
[input]
columns = ["mu", "alpha", "homo", "lumo"]
standardize = true
[output]
column = "smiles"
type = "molecule"
''')
    assert main(["fit", "--config", str(tmp_path / "m.toml"), "--train", str(tmp_path / "train.csv"),
                 "-o", str(tmp_path / "m.sprokr")]) == 0, capsys.readouterr().err
    assert main(["predict", str(tmp_path / "m.sprokr"), "--input", str(tmp_path / "test.csv"),
                 "--candidates", str(tmp_path / "train.csv"), "-o", str(tmp_path / "p.csv")]) == 0, \
        capsys.readouterr().err
    pred = [r["prediction"] for r in csv.DictReader(open(tmp_path / "p.csv"))]
    train = {r["smiles"] for r in rows[:80]}
    from sprokr_chem import canonical_smiles

    assert len(pred) == 20 and set(pred) <= set(canonical_smiles(sorted(train)))


# 3. zero queries give empty results of the right shape ------------------------------------
def _zero_query_cases():
    from test_conformance import ESTIMATORS

    from sprokr.models import MLPSurrogate

    return ESTIMATORS + [MLPSurrogate(max_epochs=3, random_state=0)]


def _same_kind_empty(empty, full):
    """``empty`` is ``full`` with zero rows: same type, same trailing shape."""
    if isinstance(full, np.ndarray):
        assert isinstance(empty, np.ndarray) and empty.shape == (0,) + full.shape[1:], (empty, full.shape)
    else:
        assert type(empty) is type(full) and len(empty) == 0


@pytest.mark.parametrize("estimator", _zero_query_cases(), ids=lambda e: repr(e).replace("\n", "")[:60])
def test_zero_queries_give_empty_results(estimator):
    import warnings

    from sklearn.base import clone

    r = np.random.default_rng(0)
    X = r.normal(size=(60, 4))
    structured = hasattr(estimator, "predict_topk")
    if structured:
        Y = (X[:, :3] > 0).astype(float)
    elif type(estimator).__name__ == "MLPSurrogate":
        Y = X[:, :2] @ r.normal(size=(2, 3))
    else:
        Y = X @ np.arange(1.0, 5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = clone(estimator).fit(X, Y)
    X0, X2 = X[:0], X[:2]
    _same_kind_empty(model.predict(X0), model.predict(X2))
    if not structured:
        with pytest.raises(ValueError, match="0 sample"):  # a score of nothing is undefined
            model.score(X0, Y[:0])
        return
    C = Y[:10]
    for k in (1, 3, 50):
        top = model.predict_topk(X0, k=k, candidates=C)
        assert top.indices.shape == top.scores.shape == (0, min(k, len(C)))
        assert top.indices.dtype.kind == "i"
    _same_kind_empty(model.predict(X0, candidates=C), model.predict(X2, candidates=C))
    index = model.make_candidate_index(C)
    assert model.predict_topk(X0, k=2, candidates=index).indices.shape == (0, 2)
    assert model.predict_scores(X0, candidates=C).shape == (0, 10)
    assert model.predict_coordinates(X0).shape == (0,) + model.predict_coordinates(X2).shape[1:]
    if hasattr(model, "predict_weights"):
        assert model.predict_weights(X0).shape == (0,) + model.predict_weights(X2).shape[1:]
    with pytest.raises(ValueError, match="cannot score on 0 samples"):
        model.score(X0, Y[:0])
    with pytest.raises(ValueError, match="candidate set is empty"):
        model.make_candidate_index(C[:0])


def test_zero_queries_with_strings_graphs_and_the_retriever():
    from sprokr_chem import MoleculeRetriever

    graphs = [mol_to_graph(s) for s in SMILES]
    texts = ["a b", "c d e", "f g", "h", "i j", "k l m", "n", "o p"]
    for Xtr, Ytr, Q in ((SMILES, SMILES, []), (texts, graphs, [])):
        model = IOKR(input_kernel="smiles_spectrum" if Xtr is SMILES else "text",
                     output_kernel="morgan_tanimoto" if Ytr is SMILES else "wl").fit(Xtr, Ytr)
        assert model.predict(Q) == [] and model.predict_topk(Q, k=3).indices.shape == (0, 3)
    pytest.importorskip("ot")
    fgw = IOKR(input_kernel="text", output_kernel="wl", decoder="fgw_barycenter").fit(texts, graphs)
    assert fgw.predict([]) == []
    ret = MoleculeRetriever(random_state=0).fit(SMILES * 3, SMILES * 3)
    assert ret.predict([]) == [] and ret.predict_topk([], k=3).indices.shape == (0, 3)
    assert ret.predict_scores([]).shape[0] == 0


# 4. ragged and huge (finite) inputs and outputs: named by every estimator -------------------
NUMPY_INTERNALS = ("inhomogeneous", "setting an array element", "could not convert", "too many indices",
                   "broadcast", "nothing to concatenate", "overflow encountered")


class _Watchdog:
    """Fails the test instead of hanging it (a fit that never ends is the bug under test)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        import signal

        def fail(*_):
            raise AssertionError(f"did not finish within {self.seconds} s")
        self.old = signal.signal(signal.SIGALRM, fail)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        import signal

        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.old)


def _problem(estimator):
    r = np.random.default_rng(0)
    X = r.normal(size=(60, 4))
    structured = hasattr(estimator, "predict_topk")
    Y = (X[:, :3] > 0).astype(float) if structured else X @ np.arange(1.0, 5.0)
    return X, Y, structured


def _fit(estimator, X, Y):
    import warnings

    from sklearn.base import clone

    with warnings.catch_warnings(), _Watchdog(120):
        warnings.simplefilter("ignore")
        return clone(estimator).fit(X, Y)


@pytest.mark.parametrize("estimator", _zero_query_cases()[:-1], ids=lambda e: repr(e).replace("\n", "")[:60])
@pytest.mark.parametrize("case", ["ragged X", "X * 1e200", "Y * 1e200", "ragged Y"])
def test_ragged_and_huge_data_are_named(estimator, case):
    X, Y, structured = _problem(estimator)
    if case == "ragged X":
        X = [list(x) if i % 2 else list(x[:3]) for i, x in enumerate(X)]
    elif case == "X * 1e200":
        X = X * 1e200
    elif case == "Y * 1e200":
        Y = Y * 1e200
    else:
        Y = [list(np.atleast_1d(y)) + [0.0] * (i % 2) for i, y in enumerate(Y)]
    name = "X" if case.endswith("X") or case.startswith("X") else "Y"
    from sprokr.numerics import ChunkError

    try:
        model = _fit(estimator, X, Y)
    except (ValueError, TypeError, ChunkError) as exc:  # ChunkError: a chunked pass names its rows
        msg = error_text(exc)
        assert not any(s in msg for s in NUMPY_INTERNALS), msg
        names = {"X": ("X", "inputs' (X)"), "Y": ("Y", "y ", "y:", "outputs' (Y")}[name]
        assert any(n in msg for n in names), msg
        return
    assert "ragged" not in case, "a ragged collection was accepted"
    Xq = X[:5]
    if structured:  # a fit must give finite scores
        assert np.isfinite(model.predict_scores(Xq)).all()
    else:
        assert np.isfinite(model.predict(Xq)).all() and np.isfinite(model.score(Xq, Y[:5]))


# 5. an unknown name whose plugin was skipped says which plugin and why ---------------------
def test_unknown_component_names_the_skipped_plugin(X):
    import warnings

    from sprokr.registry import PluginWarning

    class Bad:
        @sprokr.hookimpl
        def sprokr_input_kernels(self):
            return {"notcallable": 42}

        @sprokr.hookimpl
        def sprokr_sketches(self):
            raise RuntimeError("the sketch library is missing")

    reg = Registry(entry_points=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)
        reg.register(Bad(), name="bad")
    for name in ("notcallable", "bad:notcallable"):
        with pytest.raises(ValueError, match=r"unknown input_kernel .*was skipped.*plugin 'bad'.*'notcallable'.*"
                                             r"not callable"):
            reg.get("input_kernel", name)
    with pytest.raises(ValueError, match=r"unknown sketch 'mysketch'.*skipped.*'bad'.*sprokr_sketches raised "
                                         r"RuntimeError: the sketch library is missing"):
        reg.get("sketch", "mysketch")
    with pytest.raises(ValueError) as info:  # nothing of that kind was skipped: no note
        reg.get("output_kernel", "nothere")
    assert "skipped" not in str(info.value)


def test_unknown_kernel_of_a_plugin_that_failed_to_import(tmp_path, monkeypatch, X):
    import sys
    import warnings

    from sprokr.registry import PluginWarning, reset_registry

    (tmp_path / "broken_kernels_plugin.py").write_text("raise ImportError('libfoo.so not found')\n")
    info = tmp_path / "sprokr_broken_kernels-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sprokr-broken-kernels\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[sprokr]\nbrokenk = broken_kernels_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reset_registry()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PluginWarning)
            with pytest.raises(ValueError, match=r"unknown input_kernel 'foo_kernel'.*plugin that was skipped.*"
                                                 r"'brokenk'.*libfoo\.so not found"):
                IOKR(input_kernel="foo_kernel").fit(X, X)
    finally:
        reset_registry()
        sys.modules.pop("broken_kernels_plugin", None)


# 6. MoleculeRetriever takes numeric inputs (descriptor vectors) -----------------------------
@pytest.fixture(scope="module")
def qm9_vectors():
    rows = list(csv.DictReader(open(sample_path("qm9_sample.csv"))))
    props = ["mu", "alpha", "homo", "lumo", "gap", "r2", "zpve", "cv"]
    X = np.array([[float(r[p]) for p in props] for r in rows])
    return X, [r["smiles"] for r in rows]


def test_retriever_takes_numeric_inputs(qm9_vectors, tmp_path):
    from sprokr_chem import MoleculeRetriever, canonical_smiles
    from sprokr_chem.retriever import VECTOR_GAMMAS

    X, smiles = qm9_vectors
    Xtr = X[:240].copy()
    model = MoleculeRetriever(method="iokr", output_kernel="morgan_count_tanimoto", random_state=0).fit(Xtr, smiles[:240])
    np.testing.assert_array_equal(Xtr, X[:240])  # the user's array is not standardised in place
    assert model.inputs_ == "vectors" and model.model_.input_kernel == "gaussian"
    assert model.best_params_["input_kernel_params"]["gamma"] in [g / X.shape[1] for g in VECTOR_GAMMAS]
    # the queries are standardised with the training statistics
    np.testing.assert_allclose(model.input_center_, X[:240].mean(axis=0))
    Z = (X[240:] - X[:240].mean(axis=0)) / X[:240].std(axis=0)
    index = model.model_.make_candidate_index(canonical_smiles(smiles))
    np.testing.assert_allclose(model.predict_scores(X[240:], candidates=smiles),
                               model.model_.predict_scores(Z, candidates=index), rtol=1e-10, atol=1e-12)
    pred = model.predict(X[240:], candidates=smiles)
    assert len(pred) == 60 and set(pred) <= set(canonical_smiles(smiles))
    # far above chance: a uniform ranking of 300 candidates has MRR H(300)/300 = 0.021
    assert model.score(X[240:], smiles[240:], candidates=smiles) > 0.04
    model.save(tmp_path / "r.sprokr")
    loaded = sprokr.load(tmp_path / "r.sprokr")
    assert loaded.predict(X[240:], candidates=smiles) == pred
    with pytest.raises(ValueError, match="X has 3 features, but MoleculeRetriever was fitted on 8"):
        model.predict(X[240:, :3])


def test_retriever_refuses_inputs_it_was_not_told_about_at_once(qm9_vectors):
    from sprokr_chem import MoleculeRetriever

    X, smiles = qm9_vectors
    for kind in ("smiles", "text"):
        with pytest.raises(ValueError, match=f"inputs='{kind}' but X holds numbers.*inputs='vectors'"):
            MoleculeRetriever(inputs=kind).fit(X[:50], smiles[:50])
    with pytest.raises((TypeError, ValueError), match=r"X must hold numbers.*inputs='vectors' takes"):
        MoleculeRetriever(inputs="vectors").fit(smiles[:50], smiles[:50])
    with pytest.raises(ValueError, match="inputs must be one of 'auto', 'smiles', 'text', 'vectors'"):
        MoleculeRetriever(inputs="numbers").fit(X[:50], smiles[:50])


def test_cli_select_on_the_retriever_says_fit_selects(tmp_path, capsys):
    (tmp_path / "r.toml").write_text('''estimator = "MoleculeRetriever"
[input]
columns = ["mu", "alpha"]
[output]
column = "smiles"
type = "smiles"
''')
    code = main(["select", "--config", str(tmp_path / "r.toml"), "--train", str(sample_path("qm9_sample.csv")),
                 "-o", str(tmp_path / "c.toml")])
    err = capsys.readouterr().err
    assert code == 2 and "MoleculeRetriever has no lam parameter" in err and "sprokr fit" in err


class NaNBeyondTen(GaussianKernel):
    """A kernel (a plugin's bug) that returns NaN for samples whose first feature exceeds 10."""

    def pairwise(self, A, B):
        K = super().pairwise(A, B)
        K[np.asarray(A)[:, 0] > 10] = np.nan
        return K


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("model", ["SISOKR", "IOKR"])
def test_a_kernel_returning_nan_at_predict_time_is_named(X, model, dtype):
    # the kernel block's finiteness is checked through its product with the coefficients
    Y = np.random.default_rng(1).normal(size=(len(SMILES), 2))
    params = {"input_sketch": "subsample", "m_x": 6, "random_state": 0} if model == "SISOKR" else {}
    est = getattr(sprokr, model)(input_kernel=NaNBeyondTen(gamma=0.5), dtype=dtype, **params).fit(X, Y)
    Xq = X[:3].copy()
    Xq[1, 0] = 11.0
    with pytest.raises(ValueError, match="input kernel returned non-finite values"):
        est.predict(Xq, candidates=Y)
    assert np.isfinite(est.predict(X[:3], candidates=Y)).all()


# 7. the regressors name bad queries, bad score targets and bad seeds -----------------------
def _regressors():
    from sprokr import JointQuantileRegressor, RFFKernelMachine, SketchedKernelMachine
    from sprokr.models import KernelRidgeRegressor, LocalKernelRidgeRegressor, NeighbourKernelRidgeRegressor

    return [KernelRidgeRegressor(), KernelRidgeRegressor(input_sketch="subsample", m_x=4, random_state=0),
            SketchedKernelMachine(), RFFKernelMachine(n_components=20, random_state=0),
            LocalKernelRidgeRegressor(n_regions=2, m_x=4, random_state=0), NeighbourKernelRidgeRegressor(n_neighbors=3),
            JointQuantileRegressor(taus=(0.3, 0.7))]


@pytest.mark.parametrize("estimator", _regressors(), ids=lambda e: repr(e).replace("\n", "")[:60])
def test_regressors_name_a_query_that_is_not_a_collection(X, estimator):
    from sklearn.base import clone

    model = clone(estimator).fit(X, X[:, 0])
    for bad in (None, 3.0):
        with pytest.raises(TypeError, match="^X must be an array, a sparse matrix or a sequence of samples"):
            model.predict(bad)


SCORE_CASES = {
    "nan": ("y contains NaN", lambda y: np.where(np.arange(y.size) == 2, np.nan, y), None),
    "short": ("X and y have different numbers of samples: 8 and 7", lambda y: y[:-1], None),
    "none": ("y to be passed", lambda y: None, None),
    "strings": ("y must be numbers", lambda y: np.array(list("abcdefgh")), None),
    "two columns": (r"y must have shape \(n_samples,\) or \(n_samples, 1\)", lambda y: np.c_[y, y], None),
    "weights": ("X and sample_weight have different numbers of samples: 8 and 5", lambda y: y, np.ones(5)),
}


@pytest.mark.parametrize("case", sorted(SCORE_CASES))
@pytest.mark.parametrize("estimator", _regressors(), ids=lambda e: repr(e).replace("\n", "")[:60])
def test_regressors_score_names_bad_targets_and_keeps_its_value(X, estimator, case):
    from sklearn.base import RegressorMixin, clone
    from sklearn.metrics import d2_pinball_score

    y = X[:, 0]
    model = clone(estimator).fit(X, y)
    match, bad_y, weights = SCORE_CASES[case]
    with pytest.raises(ValueError, match=match):
        model.score(X, bad_y(y), sample_weight=weights)
    with pytest.raises(ValueError, match="cannot score on 0 samples: X is empty"):
        model.score(X[:0], y[:0])
    w = np.arange(1.0, 9.0)
    if hasattr(model, "taus"):  # the mean D^2 pinball score over the levels
        P = model.predict(X)
        expected = np.mean([d2_pinball_score(y, P[:, j], alpha=t, sample_weight=w) for j, t in enumerate(model.taus)])
    else:  # scikit-learn's R^2
        expected = RegressorMixin.score(model, X, y, sample_weight=w)
    assert model.score(X, list(y), sample_weight=w) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("make", ["KernelRidgeRegressor", "SketchedKernelMachine"])
@pytest.mark.parametrize("seed, error", [("abc", TypeError), (-1, ValueError), (1.5, TypeError)])
def test_a_bad_random_state_is_refused_without_a_sketch_too(X, make, seed, error):
    from sprokr.models import KernelRidgeRegressor, SketchedKernelMachine

    cls = {"KernelRidgeRegressor": KernelRidgeRegressor, "SketchedKernelMachine": SketchedKernelMachine}[make]
    for sketch, m_x in ((None, None), ("subsample", 4)):
        model = cls(input_sketch=sketch, m_x=m_x, random_state=seed)
        with pytest.raises(error, match="random_state"):
            model.fit(X, X[:, 0])
        assert not hasattr(model, "coef_")
