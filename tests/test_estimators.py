import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV

from sprokr import DSOKR, IOKR, ISOKR, SIOKR, SISOKR
from sprokr.metrics import f1_samples, f1_samples_scorer
from sprokr.numerics import SketchedFeatures

KX = {"gamma": 0.2}
KY = {"gamma": 0.5}


def scores(model, X, cands=None):
    return model.predict_topk(X, candidates=cands, k=5)


def test_identity_sketches_equal_iokr(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    exact = IOKR(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY).fit(Xtr, Ytr)
    ident = SISOKR(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY,
                   input_sketch="identity", output_sketch="identity").fit(Xtr, Ytr)
    a, b = scores(exact, Xte), scores(ident, Xte)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("side", ["input", "output", "both"])
def test_subsampling_with_m_equal_n_is_exact(multilabel_data, side):
    Xtr, Ytr, Xte, _ = multilabel_data
    n = len(Xtr)
    exact = IOKR(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY).fit(Xtr, Ytr)
    kw = {}
    if side in ("input", "both"):
        kw.update(input_sketch="subsample", m_x=n)
    if side in ("output", "both"):
        kw.update(output_sketch="subsample", m_y=n)
    sk = SISOKR(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY, random_state=0, **kw).fit(Xtr, Ytr)
    np.testing.assert_allclose(scores(sk, Xte).scores, scores(exact, Xte).scores, rtol=1e-5, atol=1e-7)


def test_eigh_and_cholesky_solvers_agree(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    common = dict(lam=1e-2, input_kernel_params=KX, output_kernel_params=KY, input_sketch="psg", m_x=40,
                  input_sketch_params={"p": 0.1}, random_state=1)
    a = SISOKR(solver="cholesky", **common).fit(Xtr, Ytr)
    b = SISOKR(solver="eigh", **common).fit(Xtr, Ytr)
    np.testing.assert_allclose(a.predict_coordinates(Xte), b.predict_coordinates(Xte), rtol=1e-5, atol=1e-6)


def test_sketched_model_learns_and_is_reproducible(multilabel_data):
    Xtr, Ytr, Xte, Yte = multilabel_data
    make = lambda seed: SISOKR(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY,  # noqa: E731
                               input_sketch="psr", m_x=60, input_sketch_params={"p": 0.05},
                               output_sketch="psg", m_y=30, output_sketch_params={"p": 0.05},
                               random_state=seed)
    m = make(0).fit(Xtr, Ytr)
    pred = m.predict(Xte)
    assert pred.shape == Yte.shape and pred.dtype == Yte.dtype
    baseline = f1_samples(Yte, np.tile(Ytr[np.argmax(Ytr.sum(1))], (len(Yte), 1)))
    assert f1_samples(Yte, pred) > max(0.5, baseline + 0.1)
    np.testing.assert_array_equal(make(0).fit(Xtr, Ytr).predict_coordinates(Xte), m.predict_coordinates(Xte))
    assert not np.allclose(make(1).fit(Xtr, Ytr).predict_coordinates(Xte)[:, :3],
                           m.predict_coordinates(Xte)[:, :3])


def test_float32_kernel_blocks_close_to_float64(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    kw = dict(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY, input_sketch="subsample", m_x=80,
              output_sketch="psg", m_y=30, output_sketch_params={"p": 0.1}, random_state=0)
    a = SISOKR(dtype="float64", **kw).fit(Xtr, Ytr)
    b = SISOKR(dtype="float32", **kw).fit(Xtr, Ytr)
    assert b.input_kernel_.dtype == "float32" and a.input_kernel_.dtype == "float64"
    assert b.dtype_ == np.float32  # kept in float32 (well conditioned): the comparison is float32's
    ref = a.predict_coordinates(Xte)
    # float32's target (docs/architecture.md): 1e-4 of the scale (atol=2e-3 was ~3e-3 of it;
    # the float32 fit is ~1e-6 off here)
    np.testing.assert_allclose(b.predict_coordinates(Xte), ref, rtol=0, atol=1e-4 * np.abs(ref).max())


def test_candidates_index_and_top_k(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    m = SIOKR(lam=1e-3, m_x=50, input_kernel_params=KX, output_kernel_params=KY, random_state=0).fit(Xtr, Ytr)
    cands = np.unique(np.vstack([Ytr, 1 - Ytr[:20]]), axis=0)
    index = m.make_candidate_index(cands)
    direct = m.predict_topk(Xte, candidates=cands, k=4)
    via_index = m.predict_topk(Xte, candidates=index, k=4)
    np.testing.assert_array_equal(direct.indices, via_index.indices)
    # brute force: full score matrix
    E, off = m.embed_candidates(cands)
    S = m.predict_coordinates(Xte) @ E.T
    np.testing.assert_array_equal(direct.indices[:, 0], S.argmax(1))
    np.testing.assert_allclose(direct.scores, -np.sort(-S, axis=1)[:, :4], rtol=1e-10)
    # a tiny memory budget forces candidate chunking: same answer
    m.set_params(max_memory_mb=1e-4)
    np.testing.assert_array_equal(m.predict_topk(Xte, candidates=index, k=4).indices, direct.indices)
    np.testing.assert_array_equal(m.predict(Xte, candidates=cands), cands[direct.indices[:, 0]])
    other = clone(m).fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="another model"):
        other.predict(Xte, candidates=index)


def test_non_normalized_output_kernel_uses_offsets(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    m = ISOKR(lam=1e-3, m_y=40, output_kernel="linear", input_kernel_params=KX, random_state=0).fit(Xtr, Ytr)
    cands = np.unique(Ytr, axis=0)
    E, off = m.embed_candidates(cands)
    np.testing.assert_allclose(off, -0.5 * cands.sum(1))
    S = m.predict_coordinates(Xte) @ E.T + off
    np.testing.assert_array_equal(m.predict(Xte, candidates=cands), cands[S.argmax(1)])


def test_grid_search_with_scorer(multilabel_data):
    Xtr, Ytr, _, _ = multilabel_data
    gs = GridSearchCV(SIOKR(m_x=40, input_kernel_params=KX, output_kernel_params=KY, random_state=0),
                      {"lam": [1e-3, 1e-1]}, scoring=f1_samples_scorer(), cv=3)
    gs.fit(Xtr, Ytr)
    assert gs.best_params_["lam"] in (1e-3, 1e-1)
    assert 0 < gs.best_score_ <= 1
    assert IOKR().get_params()["lam"] == 1e-5 and "input_sketch" not in IOKR().get_params()


def test_non_array_inputs_are_accepted(multilabel_data):
    """X and Y are whatever the kernels accept: here lists of Python lists."""
    Xtr, Ytr, Xte, _ = multilabel_data
    m = IOKR(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY)
    m.fit([list(x) for x in Xtr], [tuple(y) for y in Ytr])
    pred = m.predict([list(x) for x in Xte])
    assert isinstance(pred, list) and isinstance(pred[0], tuple)


BAD_FITS = [
    (dict(), lambda X, Y: (X[:-1], Y), "different numbers of samples"),
    (dict(), lambda X, Y: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X), Y), "NaN"),
    (dict(), lambda X, Y: (X, np.where(np.arange(Y.size).reshape(Y.shape) == 5, np.inf, Y)), "NaN or infinite"),
    (dict(input_sketch="subsample", m_x=10**6), None, "sketch size m_x=1000000 is larger than the number of samples"),
    (dict(input_sketch="subsample", m_x=0), None, "sketch size m_x must be an integer >= 1, got 0"),
    (dict(input_sketch="subsample", m_x=10.5), None, "sketch size m_x must be an integer >= 1, got 10.5"),
    (dict(input_sketch="subsample", m_x=True), None, "sketch size m_x must be an integer >= 1, got True"),
    (dict(output_sketch="psg", m_y="10"), None, "sketch size m_y must be an integer >= 1, got '10'"),
    (dict(output_sketch="psg", m_y=10, output_sketch_params={"p": 1.5}), None, r"\(0, 1\]"),
    (dict(output_sketch="psg", m_y=10, output_sketch_params={"p": 0.0}), None, r"\(0, 1\]"),
    (dict(input_kernel="nope"), None, "known input kernels: .*gaussian"),
    (dict(input_kernel_params="abc"), None, "input_kernel_params must be a dict .* got str 'abc'"),
    (dict(output_kernel_params="abc"), None, "output_kernel_params must be a dict .* got str 'abc'"),
    (dict(input_sketch="subsample", m_x=10, input_sketch_params="abc"), None, "input_sketch_params must be a dict"),
    (dict(output_sketch="psg", m_y=10, output_sketch_params="abc"), None, "output_sketch_params must be a dict"),
    (dict(decoder_params="abc"), None, "^decoder_params must be a dict .* got str 'abc'"),
    (dict(executor_params="abc"), None, "^executor_params must be a dict .* got str 'abc'"),
    (dict(output_sketch="nope", m_y=3), None, "known sketches: .*psg"),
    (dict(input_sketch="nope", m_x=3), None, "^input_sketch: unknown sketch 'nope'"),
    (dict(output_sketch=3, m_y=3), None, "^output_sketch: sketch must be a registered name .* got int"),
    (dict(output_sketch="psg", m_y=3, output_sketch_params={"q": 1}), None, "^output_sketch: invalid parameters"),
    (dict(input_sketch="psr"), None, "needs a sketch size m_x"),
    (dict(m_y=5), None, "m_y=5 was given but output_sketch is None"),
    (dict(output_sketch_params={"p": 0.1}), None, r"output_sketch_params=\{'p': 0.1\} was given but output_sketch is None"),
    (dict(input_sketch_params={"p": 0.1}), None, "input_sketch_params=.* was given but input_sketch is None"),
    (dict(lam=-1.0), None, "lam must be > 0"),
    (dict(lam=True), None, "lam must be a finite real number, not a bool"),
    (dict(lam=np.True_), None, "lam must be a finite real number, not a bool"),
    (dict(dtype="int8"), None, "float32 or float64"),
    (dict(dtype="nope"), None, "dtype must be float32 or float64, got 'nope'"),
]


@pytest.mark.parametrize("params, mutate, msg", BAD_FITS)
def test_bad_input_leaves_fitted_model_unchanged(multilabel_data, params, mutate, msg):
    Xtr, Ytr, Xte, _ = multilabel_data
    m = SISOKR(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY).fit(Xtr, Ytr)
    before = m.predict_coordinates(Xte).copy()
    X, Y = (Xtr, Ytr) if mutate is None else mutate(Xtr, Ytr)
    X_copy = X.copy()
    m.set_params(**params)
    with pytest.raises((ValueError, TypeError), match=msg):
        m.fit(X, Y)
    np.testing.assert_array_equal(X, X_copy)  # nothing the user passed is modified
    m.set_params(**{k: SISOKR().get_params()[k] for k in params})
    m.set_params(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY)
    np.testing.assert_array_equal(m.predict_coordinates(Xte), before)


def test_predict_errors(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    with pytest.raises(NotFittedError):
        SISOKR().predict(Xte)
    m = IOKR(input_kernel_params=KX).fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="empty"):
        m.predict(Xte, candidates=np.zeros((0, Ytr.shape[1])))
    with pytest.raises(ValueError, match="^k must be an integer >= 1, got 0$"):
        m.predict_topk(Xte, k=0)
    with pytest.raises(ValueError, match="k must be an integer >= 1, got None"):
        m.predict_topk(Xte, k=None)  # (it returned the outputs of predict, not a Decoded)
    with pytest.raises(ValueError, match="NaN"):
        m.predict(np.full_like(Xte, np.nan))


# the output-kernel models: exact outputs, sketched outputs, and DSOKR (a regressor on them)
OUTPUT_MODELS = [IOKR(), SISOKR(input_sketch="subsample", m_x=5, output_sketch="subsample", m_y=5, random_state=0),
                 DSOKR(m_y=5, regressor="kernel_ridge", random_state=0)]


@pytest.fixture(scope="module")
def tiny():
    r = np.random.default_rng(0)
    return r.standard_normal((12, 3)), r.standard_normal((12, 2))


@pytest.mark.parametrize("model", OUTPUT_MODELS, ids=lambda m: type(m).__name__)
def test_score_checks_the_number_of_samples(tiny, model):
    X, Y = tiny
    m = clone(model).fit(X, Y)
    # a longer X used to be scored on y's rows only; a longer y failed in numpy's broadcasting
    for Xs, Ys in ((X[:6], Y[:5]), (X[:5], Y[:6])):
        with pytest.raises(ValueError, match=f"X and y have different numbers of samples: {len(Xs)} and {len(Ys)}"):
            m.score(Xs, Ys)
    assert np.isfinite(m.score(X[:6], Y[:6]))


@pytest.mark.parametrize("model", OUTPUT_MODELS, ids=lambda m: type(m).__name__)
def test_score_before_fit_is_not_fitted(tiny, model):
    from sklearn.exceptions import NotFittedError

    X, Y = tiny
    with pytest.raises(NotFittedError):  # not an AttributeError on the fitted output kernel
        clone(model).score(X[:6], Y[:6])


@pytest.mark.parametrize("model", OUTPUT_MODELS, ids=lambda m: type(m).__name__)
def test_score_names_y_of_the_wrong_width(tiny, model):
    X, Y = tiny
    m = clone(model).fit(X, Y)
    with pytest.raises(ValueError, match=r"^y: got outputs with 4 features, .* trained on outputs with 2 features"):
        m.score(X[:6], np.zeros((6, 4)))  # was the Gram product's error, without y


def test_repeated_outputs_are_collapsed_exactly(multilabel_data):
    """With many repeated outputs the output side works on distinct outputs only (R_y P)."""
    Xtr, Ytr, Xte, _ = multilabel_data
    rng = np.random.default_rng(5)
    Yrep = Ytr[rng.integers(0, 20, size=len(Ytr))]  # 20 distinct label sets among 180 samples
    n = len(Xtr)
    exact = IOKR(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY).fit(Xtr, Yrep)
    sk = ISOKR(lam=1e-3, output_sketch="subsample", m_y=n, input_kernel_params=KX,
               output_kernel_params=KY, random_state=0).fit(Xtr, Yrep)
    n_distinct = len(np.unique(Yrep, axis=0))
    # equal support outputs share one kernel column: one column per distinct output
    assert sk.output_features_.R.indices.size == n_distinct < n
    np.testing.assert_allclose(scores(sk, Xte).scores, scores(exact, Xte).scores, rtol=1e-5, atol=1e-7)
    # a p-sparsified output sketch: collapsed features span the same space as the plain ones
    kw = dict(lam=1e-3, input_sketch="subsample", m_x=60, output_sketch="psg", m_y=15,
              output_sketch_params={"p": 0.2}, input_kernel_params=KX, output_kernel_params=KY, random_state=3)
    a = SISOKR(**kw).fit(Xtr, Yrep)
    R = a.output_sketch_matrix_
    plain = SketchedFeatures(a.output_kernel_, R, Yrep[R.indices].astype(float), np.float64, 1e-10)
    plain.fit_basis()
    assert a.output_features_.R.indices.size < R.indices.size  # merged support columns
    C = np.unique(Ytr, axis=0).astype(float)
    Pa, Pp = a.output_features_.transform(C), plain.transform(C)
    np.testing.assert_allclose(Pa @ Pa.T, Pp @ Pp.T, atol=1e-8)


@pytest.mark.parametrize("kw", [
    dict(),
    dict(input_sketch="subsample", m_x=60),
    dict(output_sketch="psg", m_y=20, output_sketch_params={"p": 0.1}),
    dict(input_sketch="subsample", m_x=60, output_sketch="psg", m_y=20, output_sketch_params={"p": 0.1}),
])
def test_predict_weights_reproduce_scores(multilabel_data, kw):
    """h(x) = sum_u alpha_u psi(y_u): scores against any candidate equal alpha^T k_y(Y_u, c)."""
    Xtr, Ytr, Xte, _ = multilabel_data
    Yrep = np.vstack([Ytr[:60], Ytr[:60], Ytr[60:]])[: len(Ytr)]  # repeated outputs
    m = SISOKR(lam=1e-3, input_kernel_params=KX, output_kernel_params=KY, random_state=0, **kw).fit(Xtr, Yrep)
    alpha = m.predict_weights(Xte)
    U = m.default_index_.candidates
    assert alpha.shape == (len(Xte), len(U))
    cands = np.unique(Ytr, axis=0)
    E, _ = m.embed_candidates(cands)
    ky = m.output_kernel_
    np.testing.assert_allclose(alpha @ ky(U, cands), m.predict_coordinates(Xte) @ E.T, atol=1e-8)


def test_exact_iokr_names_an_indefinite_system_and_keeps_its_fit(multilabel_data):
    X, Y, Xte, _ = multilabel_data
    model = IOKR(lam=1e-3).fit(X, Y)
    before = model.predict(Xte)
    model.set_params(lam=1e-18, input_kernel_params={"sigma2": 1e9})
    with pytest.raises(ValueError, match="increase lam"):
        model.fit(X, Y)
    np.testing.assert_array_equal(model.predict(Xte), before)  # the previous fit survives


@pytest.mark.parametrize("make", [
    lambda: IOKR(lam=1e-3),
    lambda: SIOKR(lam=1e-3, m_x=60, random_state=0),
])
def test_folded_index_scores_equal_plain_scores(multilabel_data, make):
    """Without output sketch the index is folded with the coefficients (F = E C^T) once;
    scores and rankings must equal those of the coordinates path."""
    X, Y, Xte, _ = multilabel_data
    model = make().fit(X, Y)
    index = model.default_index_
    Xp = model.prepare_inputs(np.vstack([Xte] * 4))  # more queries than candidates: folding pays
    plain = index.search(model.predict_coordinates(Xp, prepared=True), 3)
    assert not index.cache
    H, folded_index = model.search_pair(Xp, index)
    folded = folded_index.search(H, 3)
    assert folded_index is not index and index.cache  # cached for the next batches
    np.testing.assert_allclose(folded.scores, plain.scores, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(folded.indices[:, 0], plain.indices[:, 0])
    np.testing.assert_array_equal(model.predict_topk(np.vstack([Xte] * 4), k=3).indices, folded.indices)
    # a single query does not pay for the fold: a fresh index is searched directly
    fresh = model.make_candidate_index(Y[:40])
    assert model.search_pair(Xp[:1], fresh)[1] is fresh and not fresh.cache


def test_sketched_outputs_are_not_folded(multilabel_data):
    X, Y, Xte, _ = multilabel_data
    model = SISOKR(lam=1e-3, input_sketch="subsample", m_x=60, output_sketch="psg", m_y=30,
                   random_state=0).fit(X, Y)
    model.predict(Xte)
    assert not model.default_index_.cache
