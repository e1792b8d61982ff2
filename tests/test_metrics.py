"""Input validation of sprokr.metrics: clear errors naming the argument, never numpy's."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sprokr.metrics import (
    arrmse,
    crossing_loss,
    f1_samples,
    hits_at_k,
    mean_graph_edit_distance,
    mean_reciprocal_rank,
    pinball_loss,
    ranks_from_scores,
    rrmse,
    top_k_accuracy,
    true_ranks,
)


def test_rrmse_names_a_y_train_mean_of_the_wrong_length(rng):
    Y = rng.standard_normal((20, 3))
    P = Y + 0.1 * rng.standard_normal((20, 3))
    mu = rng.standard_normal(3)
    want = np.sqrt(((Y - P) ** 2).sum(0) / ((Y - mu) ** 2).sum(0))
    np.testing.assert_allclose(rrmse(Y, P, mu), want)
    np.testing.assert_allclose(rrmse(Y, P, list(mu)), want)
    assert arrmse(Y[:, :1], P[:, :1], 0.5) == pytest.approx(rrmse(Y[:, 0], P[:, 0], [0.5])[0])  # a scalar: every target
    for bad in (np.zeros(2), np.zeros(4), np.zeros(1), np.zeros((1, 3)), np.zeros((3, 1))):
        for f in (rrmse, arrmse):
            with pytest.raises(ValueError, match=r"^y_train_mean must hold one mean per target: shape \(3,\) "
                                                 r"for the 3 target\(s\) of y_true, got shape "):
                f(Y, P, bad)


EMPTY = {
    "f1_samples": (lambda: f1_samples(np.zeros((0, 3)), np.zeros((0, 3))), "Y_true and Y_pred are empty"),
    "f1_samples sparse": (lambda: f1_samples(sp.csr_matrix((0, 3)), np.zeros((0, 3))), "Y_true and Y_pred are empty"),
    "top_k_accuracy": (lambda: top_k_accuracy(np.zeros(0, int), np.zeros((0, 3), int), 2),
                       "y_true and y_pred are empty"),
    "hits_at_k": (lambda: hits_at_k(np.zeros(0, int), np.zeros((0, 3), int)), "y_true and y_pred are empty"),
    "mean_reciprocal_rank": (lambda: mean_reciprocal_rank(np.zeros(0, int), np.zeros((0, 3), int)),
                             "y_true and y_pred are empty"),
    "mean_reciprocal_rank ranks": (lambda: mean_reciprocal_rank(None, ranks=[]), "ranks is empty"),
    "rrmse": (lambda: rrmse(np.zeros((0, 2)), np.zeros((0, 2))), "y_true and y_pred are empty"),
    "arrmse": (lambda: arrmse(np.zeros((0, 2)), np.zeros((0, 2)), np.zeros(2)), "y_true and y_pred are empty"),
    "pinball_loss": (lambda: pinball_loss(np.zeros(0), np.zeros((0, 2)), [0.2, 0.8]), "y_true and q_pred are empty"),
    "crossing_loss": (lambda: crossing_loss(np.zeros((0, 2))), "q_pred is empty"),
    "mean_graph_edit_distance": (lambda: mean_graph_edit_distance([], []), "y_true and y_pred are empty"),
}


@pytest.mark.parametrize("name", EMPTY)
def test_metrics_refuse_empty_input_clearly(name):
    """A mean over no sample is undefined: a ValueError saying so (as scikit-learn's metrics),
    not NaN with numpy's "Mean of empty slice" warning (rrmse said "a target is constant")."""
    call, what = EMPTY[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way
        owner = {"hits_at_k": "top_k_accuracy", "arrmse": "rrmse"}.get(name, name.split()[0])  # (the callees)
        with pytest.raises(ValueError, match=f"^no samples: {what}; {owner} needs at least one"):
            call()


NON_FINITE = {
    "rrmse y_true": (lambda b: rrmse(b, np.ones((3, 2))), "y_true", 1),
    "rrmse y_pred": (lambda b: rrmse(np.arange(6.0).reshape(3, 2), b), "y_pred", 1),
    "arrmse y_pred": (lambda b: arrmse(np.arange(6.0).reshape(3, 2), b), "y_pred", 1),
    "pinball y_true": (lambda b: pinball_loss(b[:, 0], np.ones((3, 2)), [0.2, 0.8]), "y_true", 1),
    "pinball q_pred": (lambda b: pinball_loss(np.ones(3), b, [0.2, 0.8]), "q_pred", 1),
    "crossing q_pred": (lambda b: crossing_loss(b), "q_pred", 1),
}


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("name", NON_FINITE)
def test_regression_metrics_name_a_non_finite_argument_and_its_row(name, value):
    """A NaN / inf in the targets or predictions made the metric NaN (or inf), silently:
    now a ValueError naming the argument and the first row, as scikit-learn's metrics refuse
    them ("Input contains NaN")."""
    call, arg, row = NON_FINITE[name]
    bad = np.ones((3, 2))
    bad[row, 0] = value
    with pytest.raises(ValueError, match=rf"^{arg} contains 1 NaN or infinite value\(s\) \(the first in row {row}\)"):
        call(bad)


def test_regression_metrics_take_sparse_and_listed_targets(rng):
    """Sparse targets gave numpy's "setting an array element with a sequence": densified (a
    few target columns); the value equals the dense one.  Non-numbers are named."""
    Y, P = rng.standard_normal((6, 3)), rng.standard_normal((6, 3))
    want = rrmse(Y, P)
    np.testing.assert_allclose(rrmse(sp.csr_matrix(Y), P), want)
    np.testing.assert_allclose(rrmse(Y, sp.csc_matrix(P)), want)
    np.testing.assert_allclose(rrmse(Y.tolist(), P.tolist()), want)
    with pytest.raises(ValueError, match="^y_true must be an array of numbers"):
        rrmse([["a", 1.0]], [[1.0, 2.0]])
    with pytest.raises(ValueError, match=r"^y_true must hold one scalar target per sample"):
        pinball_loss(np.ones((3, 2)), np.ones((3, 2)), [0.2, 0.8])


def test_check_finite_names_the_first_row_of_dense_and_csr_arrays():
    """The shared finiteness check (every estimator's targets, the metrics) names the row of
    the first NaN / inf for dense arrays and CSR matrices; other sparse formats give the count."""
    from sprokr.utils import check_finite

    A = np.ones((5, 3))
    A[3, 1], A[4, 0] = np.nan, np.inf
    for X in (A, sp.csr_matrix(A)):
        with pytest.raises(ValueError, match=r"^T contains 2 NaN or infinite value\(s\) \(the first in row 3\); "):
            check_finite(X, "T")
    with pytest.raises(ValueError, match=r"^T contains 2 NaN or infinite value\(s\); expected finite numbers$"):
        check_finite(sp.csc_matrix(A), "T")
    assert check_finite(np.ones(3), "T") is not None


def test_ranked_lists_without_columns_and_empty_rank_inputs():
    """(n, 0) ranked lists (no prediction) failed in numpy's argmax ('attempt to get argmax of
    an empty sequence'): the truth is never hit; ranks_from_scores of 0 queries refused y_true=[]
    as a float array while the (0, n_c) scores were fine."""
    none = np.zeros((2, 0), dtype=np.int64)
    assert true_ranks([0, 1], none).tolist() == [np.inf, np.inf]
    assert top_k_accuracy([0, 1], none, k=3) == 0.0
    assert mean_reciprocal_rank([0, 1], none) == 0.0
    assert ranks_from_scores(np.zeros((0, 3)), []).shape == (0,)


def test_graph_edit_distance_names_its_timeout():
    """A timeout <= 0 was reported as the exact solver's 'time_limit must be ...' (an argument
    the caller did not pass), and by networkx's own NetworkXError with method='networkx'."""
    import networkx as nx

    from sprokr.metrics import graph_edit_distance, mean_graph_edit_distance

    G = nx.path_graph(2)
    for method in ("exact", "networkx"):
        for bad in (0, -1.0, float("nan"), "5", True):
            with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
                graph_edit_distance(G, G, timeout=bad, method=method)
    with pytest.raises(ValueError, match="timeout must be"):
        mean_graph_edit_distance([G], [G], timeout=0)
    assert graph_edit_distance(G, G, timeout=5)[0] == 0.0


@pytest.mark.parametrize("sparse", [False, True])
def test_f1_samples_refuses_labels_other_than_zero_and_one(sparse):
    """Any non-zero value was counted as a label: a -1 / +1 label matrix scored F1 1.0 against
    any prediction, and continuous scores were all labels; now refused, naming the argument."""
    Y = np.array([[1, 0, 0], [0, 1, 1]])
    P = np.array([[1, 1, 0], [0, 1, 0]])
    want = f1_samples(Y, P)
    wrap = sp.csr_matrix if sparse else np.asarray
    for other in (Y.astype(bool), Y.astype(np.float32), Y.astype(float)):  # decoded 0. / 1. floats
        assert f1_samples(wrap(other), P) == pytest.approx(want)
    pm = 2 * Y - 1  # the -1 / +1 form of Y
    with pytest.raises(ValueError, match=r"^Y_true must hold 0 / 1 label values \(a binary indicator matrix\), "
                                         r"got 3 other value\(s\), e.g. -1$"):
        f1_samples(wrap(pm), P)
    with pytest.raises(ValueError, match=r"^Y_pred must hold 0 / 1 label values .*, got 1 other value\(s\), "
                                         r"e.g. 0.7$"):
        f1_samples(Y, wrap(np.where(P == 1, 1.0, [[0, 0, 0.7], [0, 0, 0]])))
    with pytest.raises(ValueError, match=r"^Y_pred must hold 0 / 1 label values .*, e.g. 2$"):
        f1_samples(Y, wrap(2 * P))


def test_f1_samples_leaves_a_sparse_argument_unchanged():
    """A CSR argument's explicit zeros were eliminated in place (its data, indices and indptr
    rewritten): the caller's matrix was modified."""
    Y = sp.csr_matrix((np.array([1.0, 0.0, 1.0]), np.array([0, 1, 2]), np.array([0, 3])), shape=(1, 3))
    before = [Y.data.copy(), Y.indices.copy(), Y.indptr.copy()]
    assert f1_samples(Y, sp.csr_matrix([[1, 1, 1]])) == pytest.approx(0.8)
    assert f1_samples(Y, Y) == 1.0
    for a, b in zip(before, (Y.data, Y.indices, Y.indptr)):
        np.testing.assert_array_equal(a, b)
