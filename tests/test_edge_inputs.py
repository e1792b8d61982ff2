"""Edge-case inputs of the public estimators (an audit of degenerate but plausible data).

The project's standard: a ``ValueError`` naming the argument and what was expected, raised
before any state changes; no deep library message and no silent wrong answer; a refit
leaves no attribute of the previous fit behind.
"""
import numpy as np
import pytest

from sprokr import DSOKR, DSOKREnsemble, IOKR, SISOKR
from sprokr.models import MLPSurrogate

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    Y = (rng.random((30, 4)) < 0.4).astype(float)
    return X, Y


@pytest.mark.parametrize("make", [
    lambda: IOKR(output_kernel="linear"),
    lambda: SISOKR(output_kernel="linear", input_sketch="subsample", m_x=10, output_sketch="subsample", m_y=10,
                   random_state=0),
], ids=["exact-outputs", "sketched-outputs"])
@pytest.mark.parametrize("state", [False, True], ids=["fit", "fit_state"])
def test_refit_without_default_index_keeps_no_index_attributes(data, make, state):
    """A refit without the default index (``default_index=False``, or ``fit_state`` that
    skips it) left ``n_distinct_outputs_`` -- and the groups ``predict_weights`` reads --
    of the previous fit's index: a count of outputs the new model does not have."""
    X, Y = data
    model = make().fit(X, Y)
    assert model.n_distinct_outputs_ == len(np.unique(Y, axis=0))

    def refit(m):  # fit_state builds no index with exact outputs
        if not state:
            return m.set_params(default_index=False).fit(X[:12], Y[:12])
        if "output_sketch" in m.get_params():
            m.set_params(output_sketch=None, m_y=None)
        return m.fit_state(X[:12], Y[:12])

    refit(model)
    assert model.default_index_ is None
    for name in ("n_distinct_outputs_", "output_groups_", "_support_groups"):
        assert not hasattr(model, name), name
    assert set(vars(model)) == set(vars(refit(make())))


@pytest.mark.parametrize("regressor", ["ridge", "mlp"])
def test_dsokr_names_an_empty_output_basis(data, regressor):
    """Every sketched output of zero norm (empty label sets, linear kernel): the output basis
    has rank 0 and the regressor was handed targets with no column (scikit-learn's "Found
    array with 0 feature(s)", naming neither m_y nor the output kernel)."""
    X, _ = data
    Y = np.zeros((30, 4))
    Y[25:, 0] = 1.0  # 25 empty label sets of 30: both sampled outputs empty
    model = DSOKR(output_kernel="linear", m_y=2, regressor=regressor, random_state=0)
    with pytest.raises(ValueError, match=r"output basis is empty.*m_y=2"):
        model.fit(X, Y)
    assert not hasattr(model, "regressor_")


@pytest.mark.parametrize("make", [
    lambda: DSOKR(output_kernel="linear", m_y=5, regressor="kernel_ridge", random_state=0),
    lambda: DSOKREnsemble(DSOKR(output_kernel="linear", m_y=5, regressor="kernel_ridge"), random_state=0),
], ids=["dsokr", "ensemble"])
def test_dsokr_refuses_empty_validation_data(data, make):
    """``validation_data`` with 0 pairs: a NaN ``validation_loss_`` and numpy's "Mean of
    empty slice" warnings."""
    X, Y = data
    model = make().fit(X, Y)
    before = model.predict(X[:3])
    with pytest.raises(ValueError, match="validation_data is empty"):
        model.fit(X, Y, validation_data=(X[:0], Y[:0]))
    np.testing.assert_array_equal(model.predict(X[:3]), before)


@pytest.mark.parametrize("monitor", ["loss", "mrr"])
def test_mlp_surrogate_refuses_empty_eval_set(monitor):
    """An ``eval_set`` of 0 samples: an AttributeError (``n_outputs_``) from predict during
    the first epoch (the torch regressors trained on, every validation loss NaN)."""
    rng = np.random.default_rng(0)
    X, T = rng.normal(size=(30, 3)), rng.normal(size=(30, 2))
    with pytest.raises(ValueError, match="eval_set is empty"):
        MLPSurrogate(hidden_layer_sizes=(4,), max_epochs=2, monitor=monitor, random_state=0).fit(
            X, T, eval_set=(X[:0], T[:0], np.zeros(0)))


def test_torch_regressor_refuses_empty_eval_set():
    """The same ``eval_set`` of 0 samples trained a torch regressor on with every validation
    loss NaN (``best_loss_`` NaN, early stopping comparing nothing)."""
    pytest.importorskip("torch")
    from sprokr.models import TorchRegressor

    rng = np.random.default_rng(0)
    X, T = rng.normal(size=(30, 3)).astype(np.float32), rng.normal(size=(30, 2))
    with pytest.raises(ValueError, match="eval_set is empty"):
        TorchRegressor(max_epochs=2, num_threads=1, random_state=0).fit(X, T, eval_set=(X[:0], T[:0]))


@pytest.mark.parametrize("kernel", ["precomputed", "text", "smiles_spectrum"])
def test_neighbour_ridge_refuses_kernels_not_on_vectors(kernel):
    """The neighbour ridge evaluates its kernel on the numeric input vectors (documented: a
    vector kernel).  Another kernel was accepted by ``fit`` and every ``predict`` then failed
    with the kernel's internals ("call prepare first", an AttributeError on ``toarray``)."""
    from sprokr.models import NeighbourKernelRidgeRegressor

    if kernel == "smiles_spectrum":
        pytest.importorskip("sprokr_chem")
    rng = np.random.default_rng(0)
    X, y = rng.random((20, 4)), rng.normal(size=20)
    model = NeighbourKernelRidgeRegressor(n_neighbors=3, kernel=kernel)
    with pytest.raises(ValueError, match=f"kernel must be a vector kernel.*got '{kernel}'"):
        model.fit(X, y)
    assert not hasattr(model, "targets_")


def test_neighbour_ridge_takes_any_kernel_that_works_on_vectors():
    """The check is the kernel on the vectors, not its class: a third party's vector kernel
    that does not subclass VectorKernel is accepted and predicts as the built-in one."""
    from sprokr.kernels import GaussianKernel
    from sprokr.kernels.base import Kernel
    from sprokr.models import NeighbourKernelRidgeRegressor

    class Plain(Kernel):  # a kernel of the base class only, on numeric vectors
        def pairwise(self, A, B):
            return GaussianKernel(gamma=0.5).pairwise(np.asarray(A, float), np.asarray(B, float))

        def diag(self, A):
            return np.ones(len(A))

    rng = np.random.default_rng(0)
    X, y = rng.random((20, 4)), rng.normal(size=20)
    got = NeighbourKernelRidgeRegressor(n_neighbors=5, kernel=Plain()).fit(X, y).predict(X[:6])
    want = NeighbourKernelRidgeRegressor(n_neighbors=5, kernel_params={"gamma": 0.5}).fit(X, y).predict(X[:6])
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("sketch", [None, "subsample"])
def test_bad_input_met_inside_a_pass_is_a_value_error(sketch):
    """A precomputed query block with the wrong columns is found while the prediction pass
    prepares its chunks: the error names the rows (a ChunkError) and is a ValueError, as the
    same mistake is for IOKR, whose queries are prepared before any pass."""
    from sprokr.models import KernelRidgeRegressor
    from sprokr.numerics import ChunkError

    rng = np.random.default_rng(0)
    X = rng.random((40, 3))
    model = KernelRidgeRegressor(kernel="precomputed", input_sketch=sketch, m_x=10 if sketch else None,
                                 random_state=0).fit(X @ X.T, rng.normal(size=40))
    with pytest.raises(ValueError, match="one column per training sample") as info:
        model.predict(rng.random((5, 20)))
    assert isinstance(info.value, ChunkError)


def test_an_ensemble_names_itself_for_inputs_of_the_wrong_width():
    """DSOKREnsemble refused X of another width in the words of its first member ('DSOKR is
    expecting 3 features')."""
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(40, 3)), (rng.random((40, 4)) > 0.5).astype(int)
    members = [DSOKR(output_sketch="subsample", m_y=10, regressor="ridge", random_state=s) for s in range(2)]
    model = DSOKREnsemble(members).fit(X, Y)
    with pytest.raises(ValueError, match="X has 5 features, but DSOKREnsemble is expecting 3"):
        model.predict(rng.normal(size=(2, 5)))


def test_messages_name_a_type_with_its_article():
    """"got a ndarray holding str values": the type after a fixed article."""
    from sprokr.kernels.base import describe_samples
    from sprokr.utils import type_with_article

    assert describe_samples(np.array(["CCO", "CCN"])).startswith("an ndarray holding str values")
    assert describe_samples(["CCO"]).startswith("a list holding str values")
    assert [type_with_article(v) for v in (1, 1.0, object(), np.uint8(1), (1,))] == \
        ["an int", "a float", "an object", "a uint8", "a tuple"]
