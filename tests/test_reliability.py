"""Bad inputs, broken kernels and failed refits: clear errors naming the culprit, nothing lost.

One test per class of failure (issue "Reliability"), over the estimators it concerns.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from sprokr import (
    DSOKR,
    IOKR,
    ISOKR,
    SIOKR,
    SISOKR,
    CandidateSets,
    DSOKREnsemble,
    JointQuantileRegressor,
    RFFKernelMachine,
    SketchedKernelMachine,
)
from sprokr.kernels import GaussianKernel
from sprokr.models import KernelRidgeRegressor


@pytest.fixture(scope="module")
def data():
    r = np.random.default_rng(0)
    X = r.standard_normal((160, 5))
    Y = (X @ r.standard_normal((5, 6)) > 0.3).astype(np.int8)
    y = X @ np.arange(1.0, 6.0) + 0.1 * r.standard_normal(160)
    return X[:120], Y[:120], y[:120], X[120:], Y[120:]


STRUCTURED = {
    "IOKR": lambda **kw: IOKR(lam=1e-3, **kw),
    "SIOKR": lambda **kw: SIOKR(lam=1e-3, m_x=40, random_state=0, **kw),
    "ISOKR": lambda **kw: ISOKR(lam=1e-3, m_y=30, output_sketch_params={"p": 0.1}, random_state=0, **kw),
    "SISOKR": lambda **kw: SISOKR(lam=1e-3, input_sketch="subsample", m_x=40, output_sketch="psg", m_y=30,
                                  output_sketch_params={"p": 0.1}, random_state=0, **kw),
    "DSOKR": lambda **kw: DSOKR(m_y=30, regressor="kernel_ridge", random_state=0, **kw),
}
REGRESSORS = {
    "SKM-square": lambda **kw: SketchedKernelMachine(input_sketch="psr", m_x=40, input_sketch_params={"p": 0.1},
                                                     random_state=0, **kw),
    "SKM-huber": lambda **kw: SketchedKernelMachine(loss="huber", input_sketch="psr", m_x=40,
                                                    input_sketch_params={"p": 0.1}, random_state=0, max_epochs=20,
                                                    **kw),
    "JQR": lambda **kw: JointQuantileRegressor(input_sketch="psg", m_x=40, input_sketch_params={"p": 0.1},
                                               random_state=0, max_epochs=20, **kw),
    "KRR": lambda **kw: KernelRidgeRegressor(**kw),
}


# 1. a failed refit leaves the previous model intact ------------------------------------
@pytest.mark.parametrize("name", sorted(REGRESSORS))
@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan])
def test_failed_refit_keeps_the_regressor(data, name, bad):
    X, _, y, Xt, _ = data
    model = REGRESSORS[name](kernel_params={"sigma2": 4.0}).fit(X, y)
    before = model.predict(Xt)
    model.set_params(kernel_params={"sigma2": bad})
    with pytest.raises(ValueError, match="sigma2 must be a finite number > 0"):
        model.fit(X, y)
    np.testing.assert_array_equal(model.predict(Xt), before)


@pytest.mark.parametrize("name", sorted(STRUCTURED))
def test_failed_refit_keeps_the_structured_model(data, name):
    X, Y, _, Xt, _ = data
    kw = {} if name == "DSOKR" else {"input_kernel_params": {"sigma2": 4.0}}
    model = STRUCTURED[name](**kw).fit(X, Y)
    before = model.predict_scores(Xt)
    with pytest.raises(ValueError):
        model.set_params(output_kernel_params={"sigma2": -1.0}).fit(X, Y)
    np.testing.assert_array_equal(model.predict_scores(Xt), before)


def test_refit_failing_inside_the_pass_restores_state(data):
    X, Y, y, Xt, _ = data

    class FailsLater(GaussianKernel):
        """Fine on small blocks (the checks), raises on the training pass."""

        def pairwise(self, A, B):
            if A.shape[0] > 64:
                raise FloatingPointError("numerical failure in the kernel")
            return super().pairwise(A, B)

    model = SISOKR(lam=1e-3, input_sketch="subsample", m_x=30, random_state=0, chunk_size=100).fit(X, Y)
    before = model.predict_scores(Xt)
    with pytest.raises(Exception, match="numerical failure"):
        model.set_params(input_kernel=FailsLater()).fit(X, Y)
    np.testing.assert_array_equal(model.predict_scores(Xt), before)


# 2. broken kernels: non-finite, wrong shape, indefinite, overflow ------------------------
class Negated(GaussianKernel):
    def pairwise(self, A, B):
        return -super().pairwise(A, B)


class WrongShape(GaussianKernel):
    def pairwise(self, A, B):
        return super().pairwise(A, B)[:, :-1]


class NaNs(GaussianKernel):
    def pairwise(self, A, B):
        K = super().pairwise(A, B)
        K[0, 0] = np.nan
        return K


@pytest.mark.parametrize("name", ["IOKR", "SIOKR", "ISOKR", "SISOKR"])
@pytest.mark.parametrize("side", ["input", "output"])
@pytest.mark.parametrize("kernel,match", [(Negated(), "not positive semi-definite"),
                                          (WrongShape(), "Gram block of shape"),
                                          (NaNs(), "non-finite")])
def test_broken_kernels_are_named(data, name, side, kernel, match):
    X, Y, _, _, _ = data
    with pytest.raises(ValueError, match=match):
        STRUCTURED[name](**{f"{side}_kernel": kernel}).fit(X, Y)


def test_broken_output_kernel_in_dsokr_and_kernel_machine(data):
    X, Y, y, _, _ = data
    with pytest.raises(ValueError, match="not positive semi-definite"):
        DSOKR(output_kernel=Negated(), m_y=20, regressor="kernel_ridge").fit(X, Y)
    with pytest.raises(ValueError, match="not positive semi-definite"):
        SketchedKernelMachine(kernel=Negated()).fit(X, y)
    with pytest.raises(ValueError, match="Gram block of shape"):
        SketchedKernelMachine(kernel=WrongShape(), input_sketch="subsample", m_x=20).fit(X, y)


class Skewed(GaussianKernel):
    """Not symmetric, in float32 and in float64 alike."""

    def pairwise(self, A, B):
        K = super().pairwise(A, B)
        K[0, -1] += 0.01
        return K


class RoundedApart(GaussianKernel):
    """A Gaussian kernel whose float32 values put ``k(a, b)`` and ``k(b, a)`` 3e-5 apart
    (relative) where ``a`` and ``b`` differ in their first coordinate -- what a narrow
    float32 Gaussian's rounded exponent did on one development machine's BLAS, and does
    not on another's (its float32 Gram came out symmetric there); its float64 values are the
    Gaussian's own, exactly symmetric."""

    def pairwise(self, A, B):
        K = super().pairwise(A, B)
        if K.dtype == np.float32:
            above = np.asarray(A)[:, :1] > np.asarray(B)[:, 0]
            K *= np.where(above, np.float32(1 + 3e-5), np.float32(1)).astype(np.float32)
        return K


def _narrow_float32_points():
    """Points whose narrow float32 Gaussian Gram is asymmetric by more than a few ulps on
    some BLAS: equal points far from the origin (the exponent, ~|a|^2 / sigma^2 ~ 150, is
    rounded) -- and nearly equal ones with :class:`RoundedApart`, asymmetric on every one."""
    r = np.random.default_rng(1)
    X = r.standard_normal((64, 24))
    X[32:] = X[:32]
    near = X + np.r_[np.zeros((32, 24)), 1e-3 * r.standard_normal((32, 24))]
    rounded = RoundedApart(sigma2=0.16, dtype="float32")
    X32 = rounded.prepare(near)
    K = rounded.pairwise(X32, X32)
    assert np.abs(K.astype(np.float64) - K.T).max() > 100 * np.finfo(np.float32).eps  # the premise
    return [(X, GaussianKernel(sigma2=0.16, dtype="float32")), (near, rounded)]


def test_float32_rounding_of_a_valid_kernel_is_not_reported_as_broken():
    from sprokr.numerics import check_kernel_sample

    Y = (np.arange(64)[:, None] % np.array([2, 3, 5]) == 0).astype(np.int8)
    for X, kernel in _narrow_float32_points():
        check_kernel_sample(kernel, kernel.prepare(X), "input kernel")  # decided in float64: valid
        IOKR(lam=1e-3, input_kernel=kernel, dtype="float32").fit(X, Y)
        SISOKR(lam=1e-3, input_kernel=kernel, dtype="float32", output_sketch="psg", m_y=20, random_state=0).fit(X, Y)
        SketchedKernelMachine(kernel=kernel, dtype="float32").fit(X, X[:, 0])
    with pytest.raises(ValueError, match="not symmetric"):  # a real defect still is
        check_kernel_sample(Skewed(sigma2=0.16, dtype="float32"), kernel.prepare(X), "input kernel")
    with pytest.raises(ValueError, match="not positive semi-definite"):
        check_kernel_sample(Negated(sigma2=0.16, dtype="float32"), kernel.prepare(X), "input kernel")


def test_overflowing_inputs_are_reported(data):
    X, Y, y, _, _ = data
    with pytest.raises(ValueError, match="non-finite|overflow"):
        SISOKR(input_sketch="subsample", m_x=30, random_state=0).fit(X * 1e200, Y)
    with pytest.raises(ValueError, match="non-finite|overflow"):
        SketchedKernelMachine(kernel="linear", input_sketch="subsample", m_x=30, random_state=0).fit(X * 1e200, y)


# 3. errors name the right argument ------------------------------------------------------
def test_nan_errors_name_the_argument(data):
    X, Y, _, Xt, Yt = data
    Ynan = Y.astype(float)
    Ynan[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"^Y contains 1 NaN"):
        SISOKR().fit(X, Ynan)
    Xnan = X.copy()
    Xnan[0, 0] = np.inf
    with pytest.raises(ValueError, match=r"^X contains 1 NaN"):
        SISOKR().fit(Xnan, Y)
    model = STRUCTURED["SISOKR"]().fit(X, Y)
    C = Yt.astype(float)
    C[1, 1] = np.nan
    with pytest.raises(ValueError, match=r"^candidates contains 1 NaN"):
        model.predict(Xt, candidates=C)
    with pytest.raises(ValueError, match=r"^candidates contains 1 NaN"):
        model.make_candidate_index(C)
    with pytest.raises(ValueError, match=r"^candidates contains 1 NaN"):
        model.predict(Xt[:2], candidates=CandidateSets([C[:3], C[3:6]]))
    with pytest.raises(ValueError, match=r"^X contains 1 NaN"):
        model.predict(Xnan[:5])
    with pytest.raises(ValueError, match=r"^y contains 1 NaN"):
        model.score(Xt, C)


# 4. shapes: zero features, single samples, feature mismatch ------------------------------
@pytest.mark.parametrize("make", [lambda: STRUCTURED["SISOKR"](), lambda: REGRESSORS["SKM-square"](),
                                  lambda: RFFKernelMachine(random_state=0)])
def test_shapes_are_checked_with_clear_messages(data, make):
    X, Y, y, Xt, _ = data
    target = Y if isinstance(make(), SISOKR) else y
    with pytest.raises(ValueError, match=r"0 feature\(s\)"):
        make().fit(np.zeros((60, 0)), target[:60])
    model = make().fit(X, target)
    assert model.n_features_in_ == X.shape[1]
    with pytest.raises(ValueError, match="Reshape your data"):
        model.predict(Xt[0])  # a 1-d single sample
    with pytest.raises(ValueError, match=r"X has 4 features, but \w+ is expecting 5 features"):
        model.predict(Xt[:, :4])
    assert np.asarray(model.predict(Xt[:1])).shape[0] == 1


# 5. the random-feature machine validates its inputs --------------------------------------
def test_rff_validates_inputs(data):
    X, _, y, Xt, _ = data
    with pytest.raises(ValueError, match="0 samples"):
        RFFKernelMachine().fit(X[:0], y[:0])
    Xnan = X.copy()
    Xnan[2, 2] = np.nan
    with pytest.raises(ValueError, match=r"^X contains 1 NaN"):
        RFFKernelMachine().fit(Xnan, y)
    dense = RFFKernelMachine(random_state=0).fit(X, y)
    sparse = RFFKernelMachine(random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.predict(sp.csr_matrix(Xt)), dense.predict(Xt), rtol=1e-8)
    with pytest.raises(ValueError, match="expecting 5 features"):
        dense.predict(Xt[:, :3])


# 6. DSOKR and its ensemble ---------------------------------------------------------------
def test_dsokr_default_mlp_takes_sparse_inputs(data):
    X, Y, _, Xt, _ = data
    model = DSOKR(m_y=20, regressor_params={"max_epochs": 5}, random_state=0).fit(sp.csr_matrix(X), Y)
    assert len(model.predict(sp.csr_matrix(Xt))) == len(Xt)


def test_ensemble_members_share_one_validation_split(data):
    X, Y, _, Xt, Yt = data
    base = DSOKR(m_y=20, regressor="kernel_ridge")
    ens = DSOKREnsemble(base, n_estimators=3, validation_fraction=0.25, random_state=0).fit(X, Y)
    n_train = {e.n_train_ for e in ens.estimators_}
    assert n_train == {90}
    # the default index is aligned: equal to an explicit index of the same candidates
    cands = ens.default_index_.candidates
    explicit = ens.predict_scores(Xt, candidates=cands)
    np.testing.assert_allclose(ens.predict_scores(Xt), explicit, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="members must not set validation_fraction"):
        DSOKREnsemble(DSOKR(validation_fraction=0.2), n_estimators=2).fit(X, Y)


def test_ensemble_decodes_candidate_sets(data):
    X, Y, _, Xt, Yt = data
    ens = DSOKREnsemble(DSOKR(m_y=20, regressor="kernel_ridge"), n_estimators=2, random_state=0).fit(X, Y)
    sets = [Yt[i:i + 5] for i in range(len(Xt))]
    pred = ens.predict(Xt, candidates=CandidateSets(sets))
    for q in range(0, len(Xt), 7):
        np.testing.assert_array_equal(pred[q], ens.predict(Xt[q:q + 1], candidates=sets[q])[0])


# 7. settings that mean nothing are refused ----------------------------------------------
@pytest.mark.parametrize("params,match", [
    ({"max_memory_mb": 0}, "max_memory_mb must be > 0"),
    ({"max_memory_mb": -5}, "max_memory_mb must be > 0"),
    ({"chunk_size": -1}, "chunk_size must be None or an integer >= 1"),
    ({"chunk_size": 0}, "chunk_size must be None or an integer >= 1"),
    ({"max_memory_mb": 64, "decoder_params": {"max_memory_mb": 128}}, "conflicts with the decoder"),
])
def test_meaningless_settings_are_refused(data, params, match):
    X, Y, _, _, _ = data
    with pytest.raises(ValueError, match=match):
        STRUCTURED["SISOKR"](**params).fit(X, Y)


def _chunked_predictions():
    """(name, fitted model, its call that reads chunk_size at predict time) per estimator."""
    from sprokr.kernels import KernelFeatures

    return {
        "SKM": (lambda X, Y, y: REGRESSORS["SKM-square"]().fit(X, y), lambda m, Xt, Yt: m.predict(Xt)),
        "JQR": (lambda X, Y, y: REGRESSORS["JQR"]().fit(X, y), lambda m, Xt, Yt: m.predict(Xt)),
        "KernelFeatures": (lambda X, Y, y: KernelFeatures(m_x=20, random_state=0).fit(X),
                           lambda m, Xt, Yt: m.transform(Xt)),
        "DSOKR": (lambda X, Y, y: STRUCTURED["DSOKR"]().fit(X, Y), lambda m, Xt, Yt: m.predict(Xt, candidates=Yt)),
        "SISOKR": (lambda X, Y, y: STRUCTURED["SISOKR"]().fit(X, Y), lambda m, Xt, Yt: m.predict(Xt, candidates=Yt)),
    }


@pytest.mark.parametrize("name", ["SKM", "JQR", "KernelFeatures", "DSOKR", "SISOKR"])
def test_chunk_size_set_after_fit_is_checked_where_predict_reads_it(data, name):
    """set_params(chunk_size=...) after fit: the predict-time read gives fit's message (it gave
    int()'s "invalid literal" for "abc", and took -1, 2.5 or True as chunk sizes)."""
    X, Y, y, Xt, Yt = data
    make, call = _chunked_predictions()[name]
    model = make(X, Y, y)
    before = call(model, Xt, Yt)
    for bad in (-1, 0, "abc", 2.5, True):
        model.set_params(chunk_size=bad)
        with pytest.raises(ValueError, match=rf"^chunk_size must be None or an integer >= 1, got {bad!r}$"):
            call(model, Xt, Yt)
    model.set_params(chunk_size=7)  # a valid one is used
    np.testing.assert_allclose(call(model, Xt, Yt), before, rtol=1e-10, atol=1e-12)


def test_decoder_budget_reaches_the_decoder_and_randomstate_is_accepted(data):
    X, Y, _, Xt, _ = data
    model = SISOKR(input_sketch="subsample", m_x=30, decoder_params={"max_memory_mb": 1},
                   random_state=np.random.RandomState(0)).fit(X, Y)
    assert model.decoder_.max_memory_mb == 1
    again = SISOKR(input_sketch="subsample", m_x=30, random_state=np.random.RandomState(0)).fit(X, Y)
    np.testing.assert_array_equal(model.predict_scores(Xt), again.predict_scores(Xt))
    model = SISOKR(max_memory_mb=2).fit(X, Y)
    assert model.decoder_.max_memory_mb == 2


@pytest.mark.parametrize("Estimator", ["SketchedKernelMachine", "RFFKernelMachine"])
def test_hinge_needs_plus_minus_one_labels_before_any_state_changes(Estimator):
    import sprokr.models as models

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    est = getattr(models, Estimator)(loss="hinge", random_state=0).fit(X, y)
    before = est.predict(X)
    with pytest.raises(ValueError, match=r"hinge loss needs labels y in \{-1, \+1\}.*\[0\.0\]"):
        est.fit(X, (y > 0).astype(float))  # 0/1 labels
    with pytest.raises(ValueError, match="normalize_y=True would change the class labels"):
        est.set_params(normalize_y=True).fit(X, y)
    np.testing.assert_array_equal(est.predict(X), before)  # the fitted model is intact
