"""Bad inputs of the public estimators, found by an audit of fit / predict / score.

The project's standard: a ``ValueError`` or ``TypeError`` naming the argument and what was
expected, raised before any state changes; nothing the user passed is modified; no deep
library message (scikit-learn's, torch's) and no silent wrong answer.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from sprokr import IOKR
from sprokr.models import LocalKernelRidgeRegressor, NeighbourKernelRidgeRegressor

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    Y = np.c_[X @ rng.normal(size=3), X[:, 0]]
    return X, Y


# inputs with no features: nothing to measure distances on -------------------------------
@pytest.mark.parametrize("make", [
    lambda: NeighbourKernelRidgeRegressor(n_neighbors=3),
    lambda: LocalKernelRidgeRegressor(n_regions=2, m_x=10, random_state=0),
], ids=["neighbour", "local"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_vector_ridges_refuse_inputs_without_features(data, make, sparse):
    _, Y = data
    X0 = np.zeros((Y.shape[0], 0))
    if sparse:
        X0 = sp.csr_matrix(X0)
    with pytest.raises(ValueError, match=r"^X has 0 feature\(s\).*n_features >= 1"):
        make().fit(X0, Y)


def test_kernel_error_on_inputs_without_features_is_grammatical(data):
    _, Y = data
    with pytest.raises(ValueError, match=r"^X has 0 feature\(s\)"):
        IOKR().fit(np.zeros((Y.shape[0], 0)), Y)


# the neural surrogates: their own parameter names, scikit-learn's score checks -------------
def _mlp():
    from sprokr.models import MLPSurrogate

    return MLPSurrogate(hidden_layer_sizes=(4,), max_epochs=2, random_state=0)


def _torch():
    pytest.importorskip("torch")
    from sprokr.models import TorchRegressor

    return TorchRegressor(hidden_layer_sizes=(4,), max_epochs=2, random_state=0)


NETWORKS = pytest.mark.parametrize("make", [_mlp, _torch], ids=["mlp", "torch"])


@NETWORKS
@pytest.mark.parametrize("param, value, expected", [
    ("lam", -1.0, "lam must be >= 0"),
    ("lam", float("nan"), "lam must be a finite real number"),
    ("lam", "x", "lam must be a finite real number"),
    ("learning_rate", 0.0, "learning_rate must be > 0"),
    ("batch_size", 0, "batch_size must be an integer >= 1"),
    ("batch_size", -1, "batch_size must be an integer >= 1"),
    ("batch_size", 2.5, "batch_size must be an integer >= 1"),
])
def test_networks_name_their_bad_parameters(data, make, param, value, expected):
    X, Y = data
    est = make().set_params(**{param: value})
    with pytest.raises(ValueError, match=f"^{expected}"):
        est.check_params()
    with pytest.raises(ValueError, match=f"^{expected}"):
        est.fit(X, Y)


@NETWORKS
def test_networks_refuse_empty_and_featureless_inputs(data, make):
    X, Y = data
    with pytest.raises(ValueError, match="cannot fit on 0 samples: X is empty"):
        make().fit(X[:0], Y[:0])
    with pytest.raises(ValueError, match=r"^X has 0 feature\(s\)"):
        make().fit(np.zeros((X.shape[0], 0)), Y)


@NETWORKS
@pytest.mark.parametrize("case, expected", [
    ("empty", "cannot score on 0 samples: X is empty"),
    ("short y", "X and y have different numbers of samples: 10 and 9"),
    ("nan y", "y contains NaN or infinite values"),
    ("wrong columns", r"y must have shape \(n_samples, 2\)"),
])
def test_networks_score_names_bad_y(data, make, case, expected):
    X, Y = data
    est = make().fit(X, Y)
    Xs, Ys = X[:10], Y[:10].copy()
    if case == "empty":
        Xs, Ys = X[:0], Y[:0]
    elif case == "short y":
        Ys = Ys[:9]
    elif case == "nan y":
        Ys[2, 1] = np.nan
    else:
        Ys = Ys[:, :1]
    with pytest.raises(ValueError, match=expected):
        est.score(Xs, Ys)


# metrics: no silent wrong answer ----------------------------------------------------------
def test_f1_samples_reads_label_strings_as_numbers():
    from sprokr.metrics import f1_samples

    Y = np.array([[1, 0, 0], [0, 1, 1]])
    P = np.array([[1, 1, 0], [0, 1, 0]])
    # "0" != 0: every string entry counted as a label before
    assert f1_samples(Y.astype(str), P) == pytest.approx(f1_samples(Y, P))
    with pytest.raises(TypeError, match="Y_true must hold 0 / 1 label values"):
        f1_samples(np.array([["a", "b", "c"], ["d", "e", "f"]]), P)


@pytest.mark.parametrize("mean, expected", [
    (np.array([0.0, np.nan]), "y_train_mean contains 1 NaN"),
    ("a", "y_train_mean must be a number or an array of numbers"),
])
def test_rrmse_checks_y_train_mean(mean, expected):
    from sprokr.metrics import arrmse, rrmse

    Y = np.array([[1.0, 2.0], [3.0, 5.0], [4.0, 1.0]])
    for metric in (rrmse, arrmse):
        with pytest.raises(ValueError, match=expected):
            metric(Y, Y + 0.1, mean)


def test_mean_reciprocal_rank_refuses_lists_and_ranks_together():
    from sprokr.metrics import mean_reciprocal_rank

    with pytest.raises(ValueError, match="either .* or ranks=, not both"):
        mean_reciprocal_rank([0, 1], [[1, 0], [1, 0]], ranks=[1, 1])


# LambdaSearchCV: validation data and score named ------------------------------------------
@pytest.fixture(scope="module")
def labels():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 4))
    Y = (rng.random((30, 6)) > 0.6).astype(float)
    return X, Y


@pytest.fixture(scope="module")
def search(labels):
    from sprokr.model_selection import LambdaSearchCV

    return LambdaSearchCV(IOKR(), lams=[1e-3, 1e-1], random_state=0).fit(*labels)


@pytest.mark.parametrize("case, expected", [
    ("X_val nan", r"^X_val contains 1 NaN or infinite value\(s\) \(the first in row 2\)"),
    ("Y_val nan", r"^Y_val contains 1 NaN or infinite value\(s\) \(the first in row 2\)"),
    ("X_val width", r"^validation_data: X_val has shape \(8, 3\), the training X \(30, 4\)"),
])
def test_lambda_search_names_bad_validation_data(labels, search, case, expected):
    X, Y = labels
    Xv, Yv = X[:8].copy(), Y[:8].copy()
    if case == "X_val nan":
        Xv[2, 1] = np.nan
    elif case == "Y_val nan":
        Yv[2, 1] = np.nan
    else:
        Xv = Xv[:, :3]
    before = search.predict(X[:5])
    with pytest.raises(ValueError, match=expected):
        search.fit(X, Y, validation_data=(Xv, Yv))
    np.testing.assert_array_equal(search.predict(X[:5]), before)  # the failed refit kept the model


@pytest.mark.parametrize("rows, expected", [
    ((5, 4), "X and Y have different numbers of samples: 5 and 4"),
    ((4, 5), "X and Y have different numbers of samples: 4 and 5"),
    ((0, 0), "cannot score on 0 samples"),
])
def test_lambda_search_score_checks_pairs(labels, search, rows, expected):
    from sprokr.model_selection import kernel_loss_scorer

    X, Y = labels
    with pytest.raises(ValueError, match=expected):
        search.score(X[:rows[0]], Y[:rows[1]])
    with pytest.raises(ValueError, match=expected):
        kernel_loss_scorer(search.best_estimator_, X[:rows[0]], Y[:rows[1]])


# data files of many columns: errors that stay readable -------------------------------------
def _npz(tmp_path, arrays):
    path = tmp_path / "data.npz"
    np.savez(path, **arrays)
    return path


def test_npz_rows_mismatch_names_the_short_array(tmp_path):
    from sprokr.io import DataFileError, read_table

    arrays = {f"tag_{i:03d}": np.zeros(4) for i in range(150)}
    arrays["tag_007"] = np.zeros(3)
    with pytest.raises(DataFileError, match=r"3 rows: 'tag_007'(;|$)") as info:
        read_table(_npz(tmp_path, arrays))
    msg = str(info.value)
    assert "4 rows: 'tag_000', 'tag_001', 'tag_002', 'tag_003', 'tag_004' and 144 more" in msg
    assert len(msg) < 400  # every array's size was listed


def test_missing_column_lists_a_bounded_number_of_columns(tmp_path):
    from sprokr.io import DataFileError, read_table

    table = read_table(_npz(tmp_path, {f"tag_{i:03d}": np.zeros(4) for i in range(150)}))
    with pytest.raises(DataFileError, match="no column 'X'; available columns: 'tag_000'.* and 130 more$") as info:
        table.column("X")
    assert len(str(info.value)) < 400


# the torch architectures: named before torch builds the network ---------------------------
@pytest.mark.parametrize("params, expected", [
    ({"dropout": 2.0}, r"dropout must be a probability in \[0, 1\)"),
    ({"dropout": -0.1}, r"dropout must be a probability in \[0, 1\)"),
    ({"kernel_sizes": ()}, "kernel_sizes must be a non-empty sequence of integers >= 1"),
    ({"kernel_sizes": (3, 0)}, "kernel_sizes must be a non-empty sequence of integers >= 1"),
])
def test_sequence_regressor_names_bad_architecture(params, expected):
    pytest.importorskip("torch")
    from sprokr.models import SmilesRegressor

    est = SmilesRegressor(max_epochs=1, channels=4, embed_dim=4, hidden_layer_sizes=(4,), **params)
    with pytest.raises(ValueError, match=expected):
        est.check_params()
    with pytest.raises(ValueError, match=expected):
        est.fit(["CCO", "CCN", "CCC"], np.zeros((3, 2)))


def test_molecule_retriever_score_on_nothing_says_score():
    pytest.importorskip("rdkit")
    from sprokr_chem import MoleculeRetriever

    rng = np.random.default_rng(0)
    smiles = ["CCO", "CCCO", "CCN", "c1ccccc1", "CC(=O)O", "CCCl", "CCOC", "OCCO", "CCCC", "CC=O"]
    X = rng.normal(size=(len(smiles), 3))
    model = MoleculeRetriever(method="iokr", output_kernel="morgan_count_tanimoto", lams=[1e-2],
                              random_state=0).fit(X, smiles)
    with pytest.raises(ValueError, match="cannot score on 0 samples: X is empty"):
        model.score(X[:0], [])


@pytest.mark.parametrize("metric", ["top_k_accuracy", "hits_at_k", "mean_reciprocal_rank"])
def test_ranking_metrics_call_empty_lists_empty(metric):
    import sprokr.metrics

    with pytest.raises(ValueError, match="no samples: y_true and y_pred are empty"):
        getattr(sprokr.metrics, metric)([], [])
