"""Valid inputs in the containers a scikit-learn user passes: every estimator gives the
results of the canonical float64 C-contiguous arrays (predictions to 1e-10, identical
decoded outputs), records the same ``n_features_in_`` and never modifies what it is given.

Containers: lists and tuples of rows, integer / boolean / float32 arrays, Fortran-ordered,
strided and read-only arrays, memory maps, scipy sparse matrices and arrays (csr, csc, coo)
for ``X`` and for label-set outputs ``Y``; dataframes for ``X`` (``feature_names_in_``) and
for ``Y`` / ``y``.  pandas is optional: the dataframe tests run on a stand-in with pandas'
semantics (rows by position through ``take``, iteration over the column labels, ``df[c]`` a
column; scikit-learn's feature-name reader is pointed at it), and on pandas itself where it
is installed.
"""
import copy
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning

from sprokr import (
    DSOKR,
    IOKR,
    ISOKR,
    SIOKR,
    SISOKR,
    DSOKREnsemble,
    JointQuantileRegressor,
    RFFKernelMachine,
    SketchedKernelMachine,
)
from sprokr.kernels import KernelFeatures
from sprokr.model_selection import LambdaSearchCV, SelectionCache, select_model
from sprokr.models import (
    KernelRidgeRegressor,
    LocalKernelRidgeRegressor,
    MLPSurrogate,
    NeighbourKernelRidgeRegressor,
)
from sprokr.utils import frame_as_array

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

RNG = np.random.default_rng(0)
N, D = 40, 4
X = RNG.standard_normal((N, D))
X_INT = RNG.integers(-3, 4, size=(N, D)).astype(np.float64)
X_BOOL = (RNG.random((N, D)) < 0.5).astype(np.float64)
y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
Y_VEC = np.column_stack([np.sin(X[:, 0]), np.cos(X[:, 1]), X[:, 2] ** 2])
Y_LAB = (RNG.random((N, 5)) < 0.4).astype(np.float64)

#: estimators with an output kernel (decoded outputs: identical) and regressors (1e-10)
STRUCTURED = {
    "IOKR": lambda: IOKR(),
    "SIOKR": lambda: SIOKR(m_x=15, random_state=0),
    "ISOKR": lambda: ISOKR(m_y=15, output_sketch_params={"p": 0.3}, random_state=0),
    "SISOKR": lambda: SISOKR(input_sketch="subsample", m_x=15, output_sketch="psg", m_y=12,
                             output_sketch_params={"p": 0.3}, random_state=0),
    "DSOKR-kernel_ridge": lambda: DSOKR(m_y=8, regressor="kernel_ridge", random_state=0),
    "DSOKR-mlp": lambda: DSOKR(m_y=8, regressor_params={"max_epochs": 3}, random_state=0),
    "DSOKR-ridge": lambda: DSOKR(m_y=8, regressor="ridge", random_state=0),
    "DSOKREnsemble": lambda: DSOKREnsemble(DSOKR(m_y=6, regressor="kernel_ridge"), n_estimators=2, random_state=0),
}
REGRESSORS = {
    "SketchedKernelMachine": lambda: SketchedKernelMachine(),
    "SketchedKernelMachine-huber": lambda: SketchedKernelMachine(loss="huber", input_sketch="subsample", m_x=15,
                                                                 random_state=0),
    "JointQuantileRegressor": lambda: JointQuantileRegressor(tol=1e-6),
    "RFFKernelMachine": lambda: RFFKernelMachine(random_state=0),
    "KernelRidgeRegressor": lambda: KernelRidgeRegressor(),
    "LocalKernelRidgeRegressor": lambda: LocalKernelRidgeRegressor(n_regions=3, random_state=0),
    "NeighbourKernelRidgeRegressor": lambda: NeighbourKernelRidgeRegressor(),
    "MLPSurrogate": lambda: MLPSurrogate(max_epochs=3, random_state=0),
}
ALL = {**STRUCTURED, **REGRESSORS}
#: float32 networks: their predictions agree to float32 rounding only
TOL = {"MLPSurrogate": 1e-5, "DSOKR-mlp": 0.0}


def _strided_rows(a):
    big = np.zeros((2 * a.shape[0],) + a.shape[1:], dtype=a.dtype)
    big[::2] = a
    return big[::2]


def _strided_cols(a):
    big = np.zeros((a.shape[0], 2 * a.shape[1]), dtype=a.dtype)
    big[:, ::2] = a
    return big[:, ::2]


def _readonly(a):
    b = a.copy()
    b.flags.writeable = False
    return b


def _memmap(tmp_path, a):
    m = np.lib.format.open_memmap(tmp_path / "a.npy", mode="w+", dtype=a.dtype, shape=a.shape)
    m[:] = a
    m.flush()
    del m
    return np.load(tmp_path / "a.npy", mmap_mode="r")


#: name -> (canonical float64 values, container of them)
X_CONTAINERS = {
    "list": (X, lambda a, t: a.tolist()),
    "tuple": (X, lambda a, t: tuple(map(tuple, a.tolist()))),
    "list-of-arrays": (X, lambda a, t: list(a.copy())),
    "int64": (X_INT, lambda a, t: a.astype(np.int64)),
    "int32": (X_INT, lambda a, t: a.astype(np.int32)),
    "bool": (X_BOOL, lambda a, t: a.astype(bool)),
    "float32": (X.astype(np.float32).astype(np.float64), lambda a, t: a.astype(np.float32)),
    "fortran": (X, lambda a, t: np.asfortranarray(a)),
    "strided-rows": (X, lambda a, t: _strided_rows(a)),
    "strided-cols": (X, lambda a, t: _strided_cols(a)),
    "read-only": (X, lambda a, t: _readonly(a)),
    "memmap": (X, lambda a, t: _memmap(t, a)),
    **{f"{f}_{kind}": (X, (lambda f, kind: lambda a, t: getattr(sp, f"{f}_{kind}")(a))(f, kind))
       for f in ("csr", "csc", "coo") for kind in ("matrix", "array")},
}


def _snapshot(obj):
    if sp.issparse(obj):
        return type(obj), obj.format, obj.toarray(), obj.data.copy()
    if isinstance(obj, np.ndarray):
        return type(obj), obj.copy(), obj.dtype, obj.flags.writeable, obj.flags.c_contiguous, obj.flags.f_contiguous
    return type(obj), copy.deepcopy(obj)


def _unchanged(before, obj):
    """Same container type, values, dtype and flags as the snapshot ``before``."""
    after = _snapshot(obj)
    if before[0] is not after[0]:
        return False
    if sp.issparse(obj):
        return before[1] == after[1] and np.array_equal(before[2], after[2]) and np.array_equal(before[3], after[3])
    if isinstance(obj, np.ndarray):
        return np.array_equal(before[1], after[1]) and before[2:] == after[2:]
    return np.array_equal(np.asarray(before[1], dtype=float), np.asarray(after[1], dtype=float))


def _dense(P):
    if sp.issparse(P):
        return P.toarray()
    return np.asarray(P, dtype=np.float64)


def _assert_same(P, P0, name, tol=1e-10):
    A, B = _dense(P), _dense(P0)
    assert A.shape == B.shape
    if name in STRUCTURED:  # decoded outputs: the same candidates
        np.testing.assert_array_equal(A, B)
    else:
        np.testing.assert_allclose(A, B, rtol=TOL.get(name, tol), atol=TOL.get(name, tol))


def _targets(name):
    return Y_VEC if name in STRUCTURED else y


# ------------------------------------------------------------------ X containers
@pytest.mark.parametrize("container", list(X_CONTAINERS))
@pytest.mark.parametrize("name", list(ALL))
def test_inputs_in_any_container_give_the_canonical_results(name, container, tmp_path):
    values, make = X_CONTAINERS[container]
    if name == "DSOKR-mlp" and container.startswith(("csr", "csc", "coo")):
        pytest.skip("the float32 network's sparse products differ in their last bits: MLPSurrogate covers them")
    T = _targets(name)
    ref = ALL[name]().fit(values, T)
    P0, s0 = ref.predict(values), ref.score(values, T)
    Xc = make(values, tmp_path)
    before = _snapshot(Xc)
    model = ALL[name]().fit(Xc, T)
    tol = 1e-8 if sp.issparse(Xc) else 1e-10  # sparse products round differently
    _assert_same(model.predict(Xc), P0, name, tol)
    _assert_same(model.predict(values), P0, name, tol)  # another container at predict
    _assert_same(ref.predict(Xc), P0, name, tol)  # and the other way round
    assert model.score(Xc, T) == pytest.approx(s0, rel=1e-8, abs=1e-8)
    assert model.n_features_in_ == D
    assert _unchanged(before, Xc), "the estimator modified the inputs it was given"


# ------------------------------------------------------------------ Y containers
Y_LABEL_CONTAINERS = {
    "list": lambda a: a.tolist(),
    "int8": lambda a: a.astype(np.int8),
    "int64": lambda a: a.astype(np.int64),
    "bool": lambda a: a.astype(bool),
    "fortran": np.asfortranarray,
    "read-only": _readonly,
    **{f"{f}_{kind}": getattr(sp, f"{f}_{kind}") for f in ("csr", "csc", "coo") for kind in ("matrix", "array")},
}


@pytest.mark.parametrize("container", list(Y_LABEL_CONTAINERS))
@pytest.mark.parametrize("name", list(STRUCTURED))
def test_label_sets_in_any_container_decode_the_same_outputs(name, container):
    Yc = Y_LABEL_CONTAINERS[container](Y_LAB)
    before = _snapshot(Yc)
    ref = STRUCTURED[name]().fit(X, Y_LAB)
    model = STRUCTURED[name]().fit(X, Yc)
    P = model.predict(X)
    _assert_same(P, ref.predict(X), name)
    _assert_same(model.predict(X, candidates=Y_LAB), ref.predict(X), name)  # candidates in another container
    _assert_same(ref.predict(X, candidates=Yc), ref.predict(X), name)
    np.testing.assert_array_equal(model.predict_topk(X, k=3).indices, ref.predict_topk(X, k=3).indices)
    assert model.score(X, Yc) == pytest.approx(ref.score(X, Y_LAB), abs=1e-12)
    if sp.issparse(Yc):
        assert sp.issparse(P)  # the decoded outputs are candidates, in the candidates' container
    assert _unchanged(before, Yc)


Y_VECTOR_CONTAINERS = {
    "list": lambda a: a.tolist(),
    "tuple": lambda a: tuple(a.tolist()),
    "float32": lambda a: a.astype(np.float32),
    "strided": _strided_rows,
    "read-only": _readonly,
}


@pytest.mark.parametrize("container", list(Y_VECTOR_CONTAINERS))
@pytest.mark.parametrize("name", list(REGRESSORS))
def test_targets_in_any_container_give_the_canonical_results(name, container):
    make = Y_VECTOR_CONTAINERS[container]
    yc = make(y)
    canon = np.asarray(yc, dtype=np.float64)
    before = _snapshot(yc)
    ref = REGRESSORS[name]().fit(X, canon)
    model = REGRESSORS[name]().fit(X, yc)
    _assert_same(model.predict(X), ref.predict(X), name)
    assert model.score(X, yc) == pytest.approx(ref.score(X, canon), rel=1e-10)
    assert _unchanged(before, yc)


# ------------------------------------------------------------------ fixes
@pytest.mark.parametrize("name", list(REGRESSORS))
def test_sparse_targets_are_refused_naming_the_argument(name):
    """Regression targets are dense numbers (as scikit-learn's regressors, which say "Sparse
    data was passed ..., but dense data is required"): a sparse y was reported as "values
    of dtype object" or "a sequence"."""
    arg = "T" if name == "MLPSurrogate" else "y"
    with pytest.raises(TypeError, match=rf"{arg} must be a dense array: got a scipy sparse csr_matrix .*"
                                        rf"{arg}\.toarray\(\)"):
        REGRESSORS[name]().fit(X, sp.csr_matrix(y[:, None]))


def test_column_vector_y_warns_for_the_single_output_estimator():
    """JointQuantileRegressor takes scalar targets: an (n, 1) column is used as (n,) with
    scikit-learn's DataConversionWarning (``column_or_1d(y, warn=True)``), attributed to the
    caller; predictions and score are those of the 1-D targets."""
    ref = JointQuantileRegressor(tol=1e-6).fit(X, y)
    with pytest.warns(DataConversionWarning, match="column-vector y was passed") as rec:
        model = JointQuantileRegressor(tol=1e-6).fit(X, y[:, None])
    assert all(r.filename == __file__ for r in rec if r.category is DataConversionWarning)
    np.testing.assert_allclose(model.predict(X), ref.predict(X), rtol=1e-10, atol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataConversionWarning)  # score takes (n,) or (n, 1) silently
        assert model.score(X, y[:, None]) == pytest.approx(ref.score(X, y))
        JointQuantileRegressor(tol=1e-6).fit(X, y)


@pytest.mark.parametrize("name", ["SketchedKernelMachine", "RFFKernelMachine", "KernelRidgeRegressor",
                                  "LocalKernelRidgeRegressor", "NeighbourKernelRidgeRegressor"])
def test_column_vector_y_is_one_output_column_for_the_multi_output_regressors(name):
    """Multi-output regressors keep an (n, 1) y as one column, as scikit-learn's (Ridge):
    no warning, predictions (n, 1)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataConversionWarning)
        P = REGRESSORS[name]().fit(X, y[:, None]).predict(X)
    assert P.shape == (N, 1)
    np.testing.assert_allclose(P[:, 0], REGRESSORS[name]().fit(X, y).predict(X), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("targets", ["1-D", "column"])
def test_mlp_surrogate_with_one_target_issues_no_data_conversion_warning(targets):
    """scikit-learn's MLP warned a DataConversionWarning at every block of every epoch for
    the (n, 1) targets MLPSurrogate handed it, whatever the user gave (DSOKR with an output
    rank of 1 too)."""
    T = y if targets == "1-D" else y[:, None]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        model = MLPSurrogate(max_epochs=5, random_state=0).fit(X, T)
        dsokr = DSOKR(m_y=1, regressor_params={"max_epochs": 5}, random_state=0).fit(X, T)
    assert dsokr.output_rank_ == 1
    assert not [r for r in rec if issubclass(r.category, DataConversionWarning)]
    assert model.predict(X).shape == (N, 1)
    np.testing.assert_array_equal(model.predict(X), MLPSurrogate(max_epochs=5, random_state=0).fit(X, y).predict(X))


@pytest.mark.parametrize("regressor", ["kernel_ridge", "mlp"])
@pytest.mark.parametrize("container", ["list", "tuple"])
def test_dsokr_records_the_feature_count_of_list_inputs(regressor, container):
    """DSOKR recorded ``n_features_in_`` for arrays only (a list of rows had none, unlike the
    other estimators): it takes its regressor's count when ``X`` has no shape."""
    Xc = X_CONTAINERS[container][1](X, None)
    params = {"max_epochs": 3} if regressor == "mlp" else None
    model = DSOKR(m_y=8, regressor=regressor, regressor_params=params, random_state=0).fit(Xc, Y_LAB)
    assert model.n_features_in_ == D
    ens = DSOKREnsemble(DSOKR(m_y=6, regressor=regressor, regressor_params=params), n_estimators=2,
                        random_state=0).fit(Xc, Y_LAB)
    assert ens.n_features_in_ == D
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])


# ------------------------------------------------------------------ dataframes (stand-in)
class _Labelled:
    """What pandas' DataFrame and Series share here: ``np.asarray`` the values, ``len`` the
    rows, an index that is not ``0..n-1``."""

    def __init__(self, values, index=None):
        self._values = np.asarray(values)
        self.index = np.arange(len(self._values)) * 10 + 7 if index is None else np.asarray(index)

    def __array__(self, dtype=None, copy=None):
        return self._values if dtype is None else self._values.astype(dtype)

    def __len__(self):
        return len(self._values)

    @property
    def shape(self):
        return self._values.shape


class Frame(_Labelled):
    """A pandas DataFrame's semantics, as far as the estimators can see them: rows by
    position through ``take``, iteration over the column labels, ``df[c]`` a column."""

    ndim = 2

    def __init__(self, values, columns, index=None):
        super().__init__(values, index)
        self.columns = list(columns)

    def __iter__(self):
        return iter(self.columns)

    def __getitem__(self, column):
        return self._values[:, self.columns.index(column)]

    def take(self, indices):
        indices = np.asarray(indices)
        return Frame(self._values[indices], self.columns, self.index[indices])


class Series(_Labelled):
    """A pandas Series: ``s[label]`` by index label (not position), ``iloc``, ``take``."""

    ndim = 1

    def __iter__(self):
        return iter(self._values)

    def __getitem__(self, label):
        return self._values[list(self.index).index(label)]

    @property
    def iloc(self):
        return self._values

    def take(self, indices):
        indices = np.asarray(indices)
        return Series(self._values[indices], self.index[indices])


@pytest.fixture
def frames():
    """The stand-ins (their column names are read from ``columns``, as a pandas DataFrame's)."""
    return Frame, Series


COLUMNS = ["a", "b", "c", "d"]
FEATURE_NAMED = {**ALL, "KernelFeatures": lambda: KernelFeatures(input_sketch="subsample", m_x=10, random_state=0)}


def _outputs_frame(name, Frame, Series):
    if name in STRUCTURED:
        return Y_LAB, Frame(Y_LAB, [f"label{j}" for j in range(Y_LAB.shape[1])])
    return y, Series(y)


def _apply(model, X):
    return model.transform(X) if isinstance(model, KernelFeatures) else model.predict(X)


@pytest.mark.parametrize("name", list(FEATURE_NAMED))
def test_feature_names_of_a_dataframe_are_recorded_and_checked(name, frames):
    """``feature_names_in_`` as scikit-learn's estimators: set by a fit on a dataframe with
    string column names, checked at predict (a warning for an array, a ValueError for other
    or reordered names), and removed by a refit on an array."""
    Frame, Series = frames
    T, Tf = _outputs_frame(name, Frame, Series)
    Xf = Frame(X, COLUMNS)
    model = FEATURE_NAMED[name]().fit(Xf, Tf)
    assert isinstance(model.feature_names_in_, np.ndarray) and model.feature_names_in_.dtype == object
    np.testing.assert_array_equal(model.feature_names_in_, COLUMNS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _apply(model, Xf)  # same names: no warning
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        _apply(model, X)
    with pytest.raises(ValueError, match="feature names should match those that were passed during fit"):
        _apply(model, Frame(X[:, ::-1], COLUMNS[::-1]))
    with pytest.raises(ValueError, match="feature names should match"):
        _apply(model, Frame(X, ["a", "b", "c", "e"]))
    plain = FEATURE_NAMED[name]().fit(X, T)
    with pytest.warns(UserWarning, match="was fitted without feature names"):
        _apply(plain, Xf)
    model.fit(X, T)
    assert not hasattr(model, "feature_names_in_")


@pytest.mark.parametrize("name", ["SISOKR", "DSOKR-kernel_ridge", "SketchedKernelMachine", "KernelRidgeRegressor",
                                  "KernelFeatures"])
def test_feature_names_are_saved_with_the_model(name, frames, tmp_path):
    import sprokr

    Frame, Series = frames
    T, Tf = _outputs_frame(name, Frame, Series)
    FEATURE_NAMED[name]().fit(Frame(X, COLUMNS), Tf).save(tmp_path / "model.sprokr")
    model = sprokr.load(tmp_path / "model.sprokr")
    np.testing.assert_array_equal(model.feature_names_in_, COLUMNS)
    with pytest.raises(ValueError, match="feature names should match"):
        _apply(model, Frame(X[:, ::-1], COLUMNS[::-1]))


@pytest.mark.parametrize("name", list(ALL))
def test_dataframe_inputs_and_outputs_give_the_canonical_results(name, frames):
    """Outputs given as a dataframe were iterated as one (over the column labels): the
    distinct outputs of the IOKR family and DSOKR were read from uninitialised memory
    (wrong predictions, or "index ... exceeds matrix dimension"); they are now the array
    ``np.asarray(Y)``, and so are the predictions, without the frame's index."""
    Frame, Series = frames
    T, Tf = _outputs_frame(name, Frame, Series)
    Xf = Frame(X, COLUMNS)
    ref = ALL[name]().fit(X, T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (the feature names of the model fitted on arrays)
        P0 = ref.predict(X)
        model = ALL[name]().fit(Xf, Tf)
        P = model.predict(Xf)
    assert isinstance(P, np.ndarray)
    _assert_same(P, P0, name, 1e-10)
    assert model.score(Xf, Tf) == pytest.approx(ref.score(X, T), rel=1e-8, abs=1e-8)
    if name in STRUCTURED:
        Pc = model.predict(Xf, candidates=Tf)  # candidates given as a dataframe
        assert isinstance(Pc, np.ndarray)
        _assert_same(Pc, P0, name)
        index = model.make_candidate_index(Tf, labels=Series(np.arange(N) * 2))  # labels as a series
        np.testing.assert_array_equal(model.predict(Xf, candidates=index),
                                      2 * model.predict_topk(Xf, k=1, candidates=index).indices[:, 0])


def test_frame_as_array_converts_dataframes_and_series_only(frames):
    Frame, Series = frames
    f, s = Frame(X, COLUMNS), Series(y)
    np.testing.assert_array_equal(frame_as_array(f), X)
    np.testing.assert_array_equal(frame_as_array(s), y)
    for other in (X, [1, 2], (1, 2), "abc", sp.csr_matrix(X), None, {"a": 1}):
        assert frame_as_array(other) is other


def test_only_string_column_names_are_feature_names(frames):
    """scikit-learn's rule: integer column names (a frame built from an array) are no names;
    a mix of string and other names is refused, saying how to keep them."""
    Frame, _ = frames
    model = SketchedKernelMachine().fit(Frame(X, [0, 1, 2, 3]), y)
    assert not hasattr(model, "feature_names_in_")
    with pytest.raises(TypeError, match="only supported if all input features have string names"):
        SketchedKernelMachine().fit(Frame(X, ["a", 1, "c", "d"]), y)


@pytest.mark.parametrize("name", ["SISOKR", "IOKR", "SketchedKernelMachine", "KernelRidgeRegressor"])
def test_model_selection_takes_dataframes(name, frames):
    """The searches gather, iterate and concatenate rows of X and Y: dataframes failed
    ("cannot concatenate collections of type ...", or the IOKR family's distinct outputs
    read from uninitialised memory).  The refit on all the data records the feature names,
    which the search exposes as scikit-learn's searches do."""
    Frame, Series = frames
    T, Tf = _outputs_frame(name, Frame, Series)
    Xf = Frame(X, COLUMNS)
    make, lams = ALL[name], [1e-4, 1e-2]
    ref = LambdaSearchCV(make(), lams=lams, random_state=0).fit(X, T)
    search = LambdaSearchCV(make(), lams=lams, random_state=0).fit(Xf, Tf)
    np.testing.assert_allclose(search.scores_, ref.scores_, rtol=1e-10)
    np.testing.assert_array_equal(search.feature_names_in_, COLUMNS)
    assert search.n_features_in_ == D
    assert not hasattr(ref, "feature_names_in_") and ref.n_features_in_ == D
    assert not hasattr(LambdaSearchCV(make()), "n_features_in_")  # not fitted
    tr, va = np.arange(30), np.arange(30, N)
    with_val = LambdaSearchCV(make(), lams=lams).fit(Xf.take(tr), Tf.take(tr), validation_data=(Xf.take(va), Tf.take(va)))
    ref_val = LambdaSearchCV(make(), lams=lams).fit(X[tr], T[tr], validation_data=(X[va], T[va]))
    np.testing.assert_allclose(with_val.scores_, ref_val.scores_, rtol=1e-10)
    a = select_model(make(), X, T, lams=lams, random_state=0, cache=SelectionCache())
    b = select_model(make(), Xf, Tf, lams=lams, random_state=0, cache=SelectionCache())
    assert b["best_params"] == a["best_params"] and b["best_score"] == pytest.approx(a["best_score"], rel=1e-10)


# ------------------------------------------------------------------ pandas itself
@pytest.mark.parametrize("name", ["SISOKR", "DSOKR-kernel_ridge", "SketchedKernelMachine", "JointQuantileRegressor",
                                  "KernelRidgeRegressor", "RFFKernelMachine"])
def test_pandas_dataframes_and_series(name):
    pd = pytest.importorskip("pandas")
    index = np.arange(N)[::-1] * 3 + 100  # not 0..n-1
    Xf = pd.DataFrame(X, columns=COLUMNS, index=index)
    if name in STRUCTURED:
        T, Tf = Y_LAB, pd.DataFrame(Y_LAB, columns=[f"l{j}" for j in range(Y_LAB.shape[1])], index=index)
    else:
        T, Tf = y, pd.Series(y, index=index, name="target")
    ref = ALL[name]().fit(X, T)
    model = ALL[name]().fit(Xf, Tf)
    np.testing.assert_array_equal(model.feature_names_in_, COLUMNS)
    P = model.predict(Xf)
    assert isinstance(P, np.ndarray)
    _assert_same(P, ref.predict(X), name)
    assert model.score(Xf, Tf) == pytest.approx(ref.score(X, T), rel=1e-8, abs=1e-8)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        model.predict(X)
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(Xf[COLUMNS[::-1]])


def test_kernel_features_set_output_pandas():
    """``KernelFeatures`` is a scikit-learn transformer: ``set_output(transform="pandas")``
    gives a DataFrame of its features (named after the class, the input's index kept)."""
    pd = pytest.importorskip("pandas")
    Xf = pd.DataFrame(X, columns=COLUMNS, index=np.arange(N) * 2 + 5)
    ref = KernelFeatures(input_sketch="subsample", m_x=10, random_state=0).fit_transform(X)
    out = KernelFeatures(input_sketch="subsample", m_x=10, random_state=0).set_output(transform="pandas") \
        .fit_transform(Xf)
    assert isinstance(out, pd.DataFrame) and out.shape == ref.shape
    assert list(out.columns) == [f"kernelfeatures{j}" for j in range(ref.shape[1])]
    np.testing.assert_array_equal(out.index, Xf.index)
    np.testing.assert_allclose(out.to_numpy(), ref, rtol=1e-12, atol=1e-12)
