import numpy as np
import pytest

from sprokr import DSOKR, DSOKREnsemble, IOKR, ISOKR, SISOKR, CandidateSets
from sprokr.metrics import hits_at_k, mean_reciprocal_rank, ranks_from_scores, top_k_accuracy


@pytest.fixture
def fitted():
    r = np.random.default_rng(0)
    X = r.standard_normal((150, 4))
    Y = np.tanh(X @ r.standard_normal((4, 3)))
    m = SISOKR(lam=1e-3, output_sketch="psg", m_y=40, output_sketch_params={"p": 0.1},
               random_state=0).fit(X[:100], Y[:100])
    return m, X[100:], Y


def test_candidate_sets_match_per_query_decoding(fitted):
    m, Xq, Y = fitted
    r = np.random.default_rng(1)
    sets = [Y[r.choice(150, size=r.integers(1, 12), replace=False)] for _ in range(len(Xq))]
    pred = m.predict(Xq, candidates=CandidateSets(sets))
    res = m.predict_topk(Xq, candidates=CandidateSets(sets), k=3)
    for q in range(len(Xq)):
        ref = m.predict_topk(Xq[q:q + 1], candidates=sets[q], k=3)
        kk = min(3, len(sets[q]))
        assert np.array_equal(res.indices[q, :kk], ref.indices[0, :kk])
        assert np.allclose(res.scores[q, :kk], ref.scores[0, :kk])
        assert (res.indices[q, kk:] == -1).all()
        assert np.array_equal(pred[q], sets[q][ref.indices[0, 0]])


def test_candidate_sets_from_pool_and_index(fitted):
    m, Xq, Y = fitted
    r = np.random.default_rng(2)
    idx = [r.choice(150, size=7, replace=False) for _ in range(len(Xq))]
    a = m.predict_topk(Xq, candidates=CandidateSets.from_pool(Y, idx), k=7)
    b = m.predict_topk(Xq, candidates=CandidateSets([Y[i] for i in idx]), k=7)
    c = m.predict_topk(Xq, candidates=CandidateSets.from_pool(m.make_candidate_index(Y), idx), k=7)
    assert np.array_equal(a.indices, b.indices) and np.array_equal(a.indices, c.indices)
    # small memory budget: many query batches, same answer
    m2 = m.set_params(max_memory_mb=0.001)
    d = m2.predict_topk(Xq, candidates=CandidateSets.from_pool(Y, idx), k=7)
    assert np.array_equal(a.indices, d.indices)


def test_candidate_sets_errors(fitted):
    m, Xq, Y = fitted
    with pytest.raises(ValueError, match="query \\[1\\]"):
        CandidateSets([Y[:3], Y[:0]])
    with pytest.raises(ValueError, match="outside the pool"):
        CandidateSets.from_pool(Y, [[0, 200]])
    with pytest.raises(ValueError, match="one set per query"):
        m.predict(Xq, candidates=CandidateSets([Y[:3]]))
    other = IOKR(lam=1e-3).fit(Xq, Y[:50])
    with pytest.raises(ValueError, match="another model"):
        m.predict(Xq[:1], candidates=CandidateSets.from_pool(other.make_candidate_index(Y), [[0, 1]]))


@pytest.mark.parametrize("make", [lambda k: ISOKR(lam=1e-3, output_kernel=k, m_y=30, random_state=0),
                                  lambda k: DSOKR(output_kernel=k, m_y=30, regressor="kernel_ridge", random_state=0)],
                         ids=["ISOKR", "DSOKR"])
@pytest.mark.parametrize("kernel", ["gaussian", "linear"])
def test_predict_scores_are_what_the_docstring_says(make, kernel):
    """``<h(x), psi(c)> - k(c, c)/2``, the constant -1/2 left out for a normalised output kernel
    (the docstring said the term was always there; the numbers are kept: code relies on them)."""
    r = np.random.default_rng(0)
    X, Y = r.standard_normal((80, 4)), r.standard_normal((80, 3))
    m = make(kernel).fit(X, Y)
    C = Y[:12] + 0.1
    H = m.predict_coordinates(X[:5])
    E = np.asarray(m.make_candidate_index(C).gather_embeddings())
    want = H @ E.T
    if kernel == "linear":  # not normalised: k(c, c) = |c|^2
        want -= 0.5 * (C ** 2).sum(axis=1)[None, :]
    np.testing.assert_allclose(m.predict_scores(X[:5], candidates=C), want, rtol=1e-9, atol=1e-9)
    for doc in (type(m).predict_scores.__doc__, DSOKREnsemble.predict_scores.__doc__):
        doc = " ".join(doc.split())
        assert "normalised output kernel" in doc and "left out" in doc and "0.5 above" in doc


def test_ranking_metrics():
    truth = np.array([0, 2, 5])
    ranked = np.array([[0, 1, 2], [1, 2, 0], [0, 1, 2]])
    assert top_k_accuracy(truth, ranked, 1) == pytest.approx(1 / 3)
    assert hits_at_k(truth, ranked, 2) == pytest.approx(2 / 3)
    assert mean_reciprocal_rank(truth, ranked) == pytest.approx((1 + 0.5 + 0) / 3)
    S = np.array([[3.0, 1, 2], [0.0, 5, 1]])
    assert ranks_from_scores(S, np.array([2, 1])).tolist() == [2.0, 1.0]


@pytest.mark.parametrize("k", [1.5, 2.0, True, np.bool_(True), 0, -1, "2", None])
def test_top_k_accuracy_refuses_a_k_that_is_not_an_integer_at_least_1(k):
    truth, ranked = np.array([0, 2]), np.array([[0, 1, 2], [1, 2, 0]])
    with pytest.raises(ValueError, match=r"^k must be an integer >= 1, got "):
        top_k_accuracy(truth, ranked, k)
    with pytest.raises(ValueError, match=r"^k must be an integer >= 1, got "):
        hits_at_k(truth, ranked, k)
    assert top_k_accuracy(truth, ranked, np.int64(2)) == 1.0  # numpy integers are integers


def test_mean_reciprocal_rank_refuses_ranks_below_1_and_nan():
    assert mean_reciprocal_rank(None, ranks=[1, 2, np.inf, 1.5]) == pytest.approx((1 + 0.5 + 0 + 1 / 1.5) / 4)
    with pytest.raises(ValueError, match=r"^ranks must be >= 1 .* got 1 rank\(s\) below 1, e\.g\. 0\.0"):
        mean_reciprocal_rank(None, ranks=[0, 1])  # 0-based ranks gave an MRR of inf
    with pytest.raises(ValueError, match=r"^ranks must be >= 1"):
        mean_reciprocal_rank(None, ranks=[-np.inf, 1])
    with pytest.raises(ValueError, match=r"^ranks contain NaN"):
        mean_reciprocal_rank(None, ranks=[np.nan, 1])


def test_ranks_from_scores_breaks_ties_at_random_in_expectation():
    """Tied candidates cost the truth half a rank each: constant scores (a model whose
    kernel underflows to 0 everywhere) rank the truth in the middle, not first (they gave
    MRR 1 before, so a model selection could choose a collapsed model)."""
    S = np.zeros((2, 1000))
    np.testing.assert_array_equal(ranks_from_scores(S, np.array([3, 999])), [500.5, 500.5])
    assert mean_reciprocal_rank(None, ranks=ranks_from_scores(S, np.array([3, 999]))) < 0.01
    S = np.array([[1.0, 3.0, 3.0, 3.0, 0.0]])  # the truth tied with two others, one above none
    assert ranks_from_scores(S, np.array([2])).tolist() == [2.0]
    assert ranks_from_scores(S, np.array([4])).tolist() == [5.0]
    with pytest.raises(ValueError, match="NaN"):
        ranks_from_scores(np.array([[0.9, np.nan, 0.5]]), np.array([1]))
    with pytest.raises(TypeError, match="integer"):
        ranks_from_scores(S, np.array([2.0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_ranks_from_scores_matches_a_naive_count_across_row_blocks(dtype):
    """Many rows (several cache blocks), ties, float32 compared without a float64 copy;
    a NaN in a late block, off the truth, is still refused."""
    rng = np.random.default_rng(3)
    S = rng.integers(-20, 20, size=(700, 300)).astype(dtype)  # integer values: many ties
    t = rng.integers(0, 300, 700)
    naive = [1 + np.sum(row > row[j]) + 0.5 * (np.sum(row == row[j]) - 1) for row, j in zip(S, t)]
    np.testing.assert_array_equal(ranks_from_scores(S, t), naive)
    if dtype is not np.int64:
        S[650, (t[650] + 1) % 300] = np.nan
        with pytest.raises(ValueError, match="NaN"):
            ranks_from_scores(S, t)
        S[650] = 0
        S[650, t[650]] = np.nan
        with pytest.raises(ValueError, match="NaN"):
            ranks_from_scores(S, t)


def test_f1_samples_takes_sparse_labels_and_refuses_nan():
    import scipy.sparse as sp
    from sklearn.metrics import f1_score

    from sprokr.metrics import f1_samples

    rng = np.random.default_rng(0)
    A, B = (rng.random((40, 6)) < 0.3).astype(int), (rng.random((40, 6)) < 0.3).astype(int)
    want = f1_score(A, B, average="samples", zero_division=1)
    for a, b in [(A, B), (sp.csr_matrix(A), B), (A, sp.csr_matrix(B.astype(float))), (sp.csr_matrix(A), sp.csc_matrix(B))]:
        assert f1_samples(a, b) == pytest.approx(want, abs=1e-15)
    with pytest.raises(ValueError, match="Y_pred contains NaN"):
        f1_samples([[1, 0]], [[np.nan, 0]])  # (NaN != 0 counted it as a predicted label: F1 1.0)
    with pytest.raises(ValueError, match="Y_true contains NaN"):
        f1_samples(sp.csr_matrix([[np.nan, 1.0]]), [[1, 1]])


def test_shared_candidate_sets_use_one_product_per_set_and_match(fitted):
    """Queries whose sets repeat (same molecular formula) are decoded per distinct set."""
    from sprokr.decoders import shared_sets

    m, Xq, Y = fitted
    r = np.random.default_rng(3)
    distinct = [r.choice(150, size=s, replace=False) for s in (2, 5, 9)]
    owner = r.integers(0, 3, size=len(Xq))
    idx = [distinct[o] for o in owner]
    sets = CandidateSets.from_pool(Y, idx)
    flat = sets.indices
    ends = np.cumsum(sets.sizes)
    assert shared_sets(flat, ends - sets.sizes, ends) is not None  # the shared path is taken
    res = m.predict_topk(Xq, candidates=sets, k=4)
    for q in range(len(Xq)):
        ref = m.predict_topk(Xq[q:q + 1], candidates=Y[idx[q]], k=4)
        kk = min(4, idx[q].size)
        np.testing.assert_array_equal(res.indices[q, :kk], ref.indices[0, :kk])
        np.testing.assert_allclose(res.scores[q, :kk], ref.scores[0, :kk])
        assert (res.indices[q, kk:] == -1).all()
    pred = m.predict(Xq, candidates=sets)
    np.testing.assert_array_equal(pred, np.array([Y[idx[q]][res.indices[q, 0]] for q in range(len(Xq))]))


@pytest.mark.parametrize("model", [
    IOKR(), SISOKR(output_sketch="subsample", m_y=5, random_state=0),
    DSOKR(m_y=5, regressor="kernel_ridge", random_state=0),
    DSOKREnsemble(DSOKR(m_y=5, regressor="kernel_ridge"), n_estimators=2, random_state=0)],
    ids=lambda m: type(m).__name__)
def test_candidates_of_the_wrong_width_are_named(model):
    """Was a ChunkError of the chunked embedding ("candidate embedding failed on rows 0-5")."""
    r = np.random.default_rng(0)
    X, Y = r.standard_normal((12, 3)), r.standard_normal((12, 2))
    m = model.fit(X, Y)
    C = r.standard_normal((6, 4))
    msg = r"^candidates: got outputs with 4 features, .* trained on outputs with 2 features: expected shape"
    for call in (lambda: m.predict(X[:3], candidates=C), lambda: m.predict_scores(X[:3], candidates=C),
                 lambda: m.predict_topk(X[:3], k=2, candidates=C), lambda: m.make_candidate_index(C),
                 lambda: m.predict(X[:2], candidates=CandidateSets([C[:3], C[3:]]))):
        with pytest.raises(ValueError, match=msg):
            call()
    assert m.predict_scores(X[:3], candidates=Y[:4]).shape == (3, 4)
