import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import (
    cosine_similarity,
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)

from sprokr.kernels import (
    CosineKernel,
    GaussianKernel,
    LaplacianKernel,
    LinearKernel,
    MinMaxKernel,
    PolynomialKernel,
    TanimotoKernel,
)


@pytest.fixture
def XY(rng):
    return rng.standard_normal((30, 7)), rng.standard_normal((20, 7))


@pytest.mark.parametrize(
    "ours, ref",
    [
        (LinearKernel(), linear_kernel),
        (PolynomialKernel(degree=2, gamma=0.3, coef0=1.0), lambda a, b: polynomial_kernel(a, b, 2, 0.3, 1.0)),
        (GaussianKernel(gamma=0.2), lambda a, b: rbf_kernel(a, b, gamma=0.2)),
        (GaussianKernel(sigma2=2.5), lambda a, b: rbf_kernel(a, b, gamma=1 / 5.0)),
        (LaplacianKernel(gamma=0.3), lambda a, b: laplacian_kernel(a, b, gamma=0.3)),
        (CosineKernel(), cosine_similarity),
    ],
)
def test_vector_kernels_match_scikit_learn(XY, ours, ref):
    X, Y = XY
    np.testing.assert_allclose(ours(X, Y), ref(X, Y), rtol=1e-10, atol=1e-12)
    # sparse inputs give the same Gram
    np.testing.assert_allclose(ours(sp.csr_matrix(X), Y), ref(X, Y), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours(X, sp.csr_matrix(Y)), ref(X, Y), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.diag(ours.prepare(X)), np.diag(ref(X, X)), rtol=1e-10)


def test_float32_kernels_are_float32_and_close(XY):
    X, Y = XY
    K32 = GaussianKernel(gamma=0.1, dtype="float32")(X, Y)
    assert K32.dtype == np.float32
    np.testing.assert_allclose(K32, rbf_kernel(X, Y, gamma=0.1), rtol=1e-4, atol=1e-6)


def test_tanimoto_and_minmax_known_values():
    A = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 0]], dtype=float)
    K = TanimotoKernel()(A)
    assert K[0, 1] == 1.0  # identical
    assert K[0, 2] == 0.0  # disjoint
    assert K[3, 3] == 1.0  # two empty fingerprints are identical
    np.testing.assert_allclose(MinMaxKernel()(A), K)  # equal on binary vectors
    C = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0]])
    expected = (1 + 1 + 0) / (2 + 3 + 1)
    assert MinMaxKernel()(C)[0, 1] == pytest.approx(expected)
    with pytest.raises(ValueError, match="non-negative"):
        MinMaxKernel()(-C)


@pytest.mark.parametrize("sparse", [False, True])
def test_cosine_zero_vectors_and_zero_rows(sparse):
    """The cosine kernel is normalized (diag gives 1), but k(0, 0) was 0: the Gram's diagonal
    disagreed with diag for a zero vector; and a block with 0 rows (zero queries) failed in
    scikit-learn's normalize ('Found array with 0 sample(s)')."""
    A = np.array([[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]])
    A = sp.csr_matrix(A) if sparse else A
    k = CosineKernel()
    K = k(A)
    np.testing.assert_allclose(np.diag(K), k.diag(k.prepare(A)))
    np.testing.assert_allclose(K, [[1, 0, 1], [0, 1, 0], [1, 0, 1]])
    assert np.linalg.eigvalsh(K).min() > -1e-12
    assert k(A[:0], A).shape == (0, 3) and k(A, A[:0]).shape == (3, 0)


def test_kernel_rejects_nan_and_bad_shapes():
    with pytest.raises(ValueError, match="NaN"):
        GaussianKernel()(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="2-D"):
        GaussianKernel()(np.zeros((2, 2, 2)))
    with pytest.raises(TypeError, match="numeric"):
        GaussianKernel()(["a", "b"])
    with pytest.raises(ValueError, match="sigma2"):
        GaussianKernel(sigma2=-1.0)(np.zeros((2, 2)))


def test_generic_diag_and_wide_sparse_inputs(rng):
    """The base-class diag (chunked) matches the Gram diagonal; very wide sparse data stay sparse."""
    from sprokr.kernels import Kernel

    class Poly2(Kernel):
        def pairwise(self, A, B):
            return (A @ B.T + 1.0) ** 2

    X = rng.standard_normal((600, 3))
    np.testing.assert_allclose(Poly2().diag(X), np.diag(Poly2()(X)))
    W = sp.random(50, 2_000_000, density=2e-5, random_state=0, format="csr")
    np.testing.assert_allclose(LinearKernel()(W, W[:7]), (W @ W[:7].T).toarray())


def _mixed_density(rng, n, d=60, dense_cols=(0, 3, 7)):
    """Sparse rows with a few columns present in almost every row (like frequent words)."""
    X = sp.random(n, d, density=0.05, random_state=int(rng.integers(1 << 30)), format="lil")
    for j in dense_cols:
        X[:, j] = (rng.random((n, 1)) < 0.9) * rng.random((n, 1))
    return X.tocsr()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gram_products_every_operand_mix(rng, dtype):
    """Dense, CSR and the split (dense columns + sparse rest) paths give A B^T + L R^T."""
    from sprokr.kernels._gram import gram

    A, B = _mixed_density(rng, 90).astype(dtype), _mixed_density(rng, 70).astype(dtype)
    A0, B0 = A.copy(), B.copy()
    L, R = rng.standard_normal((90, 2)), rng.standard_normal((70, 2))
    ref = 0.7 * A.toarray() @ B.toarray().T + L @ R.T
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a in (A, A.toarray()):
        for b in (B, B.toarray()):
            K = gram(a, b, 0.7, L, R)
            assert K.dtype == dtype and K.shape == (90, 70) and K.flags.c_contiguous
            np.testing.assert_allclose(K, ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(gram(A, B), A.toarray() @ B.toarray().T, rtol=tol, atol=tol)
    assert (A != A0).nnz == 0 and (B != B0).nnz == 0  # the split works on copies


def test_support_operand_memo_gives_the_same_products(rng):
    """A support operand keeps its side of the Gram work across calls: queries with other
    dense columns, other dtypes and dense queries get the same blocks as without it."""
    from sprokr.kernels._gram import gram, support_operand

    B = _mixed_density(rng, 70)
    B0 = B.copy()
    S = support_operand(B)
    assert S is not B and np.shares_memory(S.data, B.data)  # no copy of the support
    kernel = GaussianKernel(gamma=0.3)
    assert getattr(kernel.prepare_support(B), "_sprokr_gram_memo", None) == {}
    for cols in ((0, 3, 7), (1, 2), (0,), ()):
        for _ in range(2):  # the second call reads the memo
            A = _mixed_density(rng, 40, dense_cols=cols)
            ref = 0.7 * A.toarray() @ B.toarray().T
            np.testing.assert_allclose(gram(A, S, 0.7), ref, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(gram(A.astype(np.float32), S.astype(np.float32), 0.7), ref, rtol=1e-5,
                                       atol=1e-5)
            np.testing.assert_allclose(gram(A.toarray(), S, 0.7), ref, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(kernel.pairwise(A, S), rbf_kernel(A.toarray(), B.toarray(), gamma=0.3),
                                       rtol=1e-12)
    memo = S._sprokr_gram_memo
    assert "density" in memo and "sq_norms" in memo and sum(isinstance(k, tuple) for k in memo) >= 2
    assert (B != B0).nnz == 0 and (S != B0).nnz == 0  # neither is modified
    dense = np.ones((3, 2))
    assert support_operand(dense) is dense  # dense supports: one GEMM, nothing to keep
    assert support_operand(S) is S and kernel.prepare_support(S) is S  # prepared once: the memo is kept


def test_query_batches_near_the_threshold_share_one_split_of_the_support(rng):
    """Columns whose density product is near the dense-column threshold cost about the same
    either way: a batch reuses a kept split that has every clearly dense column and no
    clearly sparse one, and gets its own otherwise; the products are exact in both cases."""
    from sprokr.kernels._gram import DENSE_COLUMN_THRESHOLD, gram, support_operand

    B = _mixed_density(rng, 70, dense_cols=(0, 3, 7))
    S = support_operand(B)

    def splits():
        return sorted(np.frombuffer(k[1], dtype=np.intp).tolist() for k in S._sprokr_gram_memo
                      if isinstance(k, tuple))

    A1 = _mixed_density(rng, 40, dense_cols=(0, 3, 7))
    np.testing.assert_allclose(gram(A1, S), A1.toarray() @ B.toarray().T, rtol=1e-12, atol=1e-12)
    first = splits()
    assert len(first) == 1 and {0, 3, 7} <= set(first[0])
    A2 = _mixed_density(rng, 41, dense_cols=(0, 3, 7))  # other rows, the same dense columns
    np.testing.assert_allclose(gram(A2, S), A2.toarray() @ B.toarray().T, rtol=1e-12, atol=1e-12)
    assert splits() == first
    A3 = _mixed_density(rng, 40, dense_cols=(0,))  # columns 3 and 7 now clearly sparse in the queries
    A3 = (A3 @ sp.diags(np.where(np.isin(np.arange(60), [3, 7]), 0.0, 1.0))).tocsr()
    A3.eliminate_zeros()
    dens_b = np.bincount(B.indices, minlength=B.shape[1]) / B.shape[0]
    assert (np.bincount(A3.indices, minlength=60)[[3, 7]] / 40 * dens_b[[3, 7]] < DENSE_COLUMN_THRESHOLD / 2).all()
    np.testing.assert_allclose(gram(A3, S), A3.toarray() @ B.toarray().T, rtol=1e-12, atol=1e-12)
    assert len(splits()) == 2 and not {3, 7} & set([s for s in splits() if s != first[0]][0])


def test_csr_row_norms_sum_repeated_entries_before_squaring():
    from sprokr.kernels._gram import sq_norms

    A = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([0, 0, 1]), np.array([0, 3, 3, 3])), shape=(3, 2))
    assert not A.has_canonical_format
    np.testing.assert_array_equal(sq_norms(A), [18.0, 0.0, 0.0])  # (1 + 2)^2 + 3^2; empty rows 0
    assert A.data.tolist() == [1.0, 2.0, 3.0] and A.indices.tolist() == [0, 0, 1]  # not modified
    B = sp.random(50, 30, density=0.2, format="csr", random_state=0, dtype=np.float32)
    assert sq_norms(B).dtype == np.float32
    np.testing.assert_allclose(sq_norms(B), (B.toarray() ** 2).sum(1), rtol=1e-6)


def test_a_loaded_model_prepares_its_support_once(tmp_path, rng):
    """A model read from disk prepares its support on its first prediction (a CSR support
    gets its memo back) and predicts exactly what the saved model predicted."""
    from sprokr import SISOKR
    from sprokr.kernels._gram import support_operand
    from sprokr.persistence import load, save

    X = _mixed_density(rng, 120)
    Y = rng.standard_normal((120, 3))
    model = SISOKR(lam=1e-3, input_sketch="subsample", m_x=40, random_state=0).fit(X, Y)
    ref = model.predict_coordinates(X[:30])
    save(model, tmp_path / "m.sprokr")
    loaded = load(tmp_path / "m.sprokr")
    np.testing.assert_array_equal(loaded.predict_coordinates(X[:30]), ref)
    op = loaded._expansion.operand()
    assert sp.issparse(op) and support_operand(op) is op and op.__dict__["_sprokr_gram_memo"]
    assert loaded._expansion.operand() is op


def test_gaussian_on_sparse_data_with_dense_columns(rng):
    X, Y = _mixed_density(rng, 80), _mixed_density(rng, 50)
    K = GaussianKernel(gamma=0.3).pairwise(X, Y)
    np.testing.assert_allclose(K, rbf_kernel(X.toarray(), Y.toarray(), gamma=0.3), rtol=1e-12)


def test_feature_count_mismatch_is_named(rng):
    # (the L1 kernels, Laplacian and MinMax, said scipy's "XA and XB must have the same number of columns")
    for kernel in (GaussianKernel(), LinearKernel(), PolynomialKernel(), LaplacianKernel(), MinMaxKernel()):
        with pytest.raises(ValueError, match=r"same number of features.*\(3, 4\).*\(2, 5\)"):
            kernel.pairwise(rng.random((3, 4)), rng.random((2, 5)))
    with pytest.raises(ValueError, match="same number of features"):
        GaussianKernel().pairwise(sp.random(3, 4, density=0.5, format="csr"), sp.random(2, 5, density=0.5, format="csr"))


def test_kernel_params_that_are_not_a_mapping_name_the_parameter(rng):
    from sprokr.kernels import resolve_kernel
    from sprokr.models import KernelRidgeRegressor

    with pytest.raises(TypeError, match="^output_kernel_params must be a dict .* got str 'abc'"):
        resolve_kernel("gaussian", "abc", "output", np.dtype(np.float64))
    X = rng.random((12, 2))
    # a single-kernel estimator's parameters are kernel / kernel_params, not input_kernel*
    with pytest.raises(TypeError, match="^kernel_params must be a dict .* got str 'abc'"):
        KernelRidgeRegressor(kernel_params="abc").fit(X, X[:, 0])
    with pytest.raises(ValueError, match="^kernel 'gaussian': gamma must be"):
        KernelRidgeRegressor(kernel_params={"gamma": -1.0}).fit(X, X[:, 0])


def test_single_kernel_estimators_name_kernel_for_an_unknown_name(rng):
    from sprokr.models import KernelRidgeRegressor

    X = rng.random((12, 2))
    with pytest.raises(ValueError, match="^kernel: unknown input_kernel 'nope'"):
        KernelRidgeRegressor(kernel="nope").fit(X, X[:, 0])
    with pytest.raises(TypeError, match="^kernel: input_kernel must be a registered name"):
        KernelRidgeRegressor(kernel=123).fit(X, X[:, 0])


def test_unknown_name_in_another_case_suggests_the_known_name():
    """'Gaussian' got "did you mean 'gaussian'?" but 'GAUSSIAN' (and 'SUBSAMPLE') nothing: the
    suggestion compared names case-sensitively."""
    from sprokr.kernels import resolve_kernel
    from sprokr.sketches import resolve_sketch

    with pytest.raises(ValueError, match=r"unknown input_kernel 'GAUSSIAN' \(did you mean 'gaussian'\?\); known"):
        resolve_kernel("GAUSSIAN", None, "input", np.dtype(np.float64))
    with pytest.raises(ValueError, match=r"unknown sketch 'SUBSAMPLE' \(did you mean 'subsample'\?\)"):
        resolve_sketch("SUBSAMPLE", 3, None, 10, "input")


@pytest.mark.parametrize("kernel", [GaussianKernel(gamma=-1.0), GaussianKernel(gamma=np.inf),
                                    LaplacianKernel(gamma=-1.0)])
def test_a_kernel_called_directly_checks_its_parameters(kernel):
    """``kernel(X)`` checks the parameters as a model resolving the kernel does (a Gram of
    NaN, or of a non-PSD kernel, was returned)."""
    with pytest.raises(ValueError, match="gamma"):
        kernel(np.random.default_rng(0).random((4, 3)))


@pytest.mark.parametrize("kernel, what", [
    (PolynomialKernel(coef0=True), "coef0 must be a finite number >= 0 (a PSD kernel), got True"),
    (PolynomialKernel(coef0=np.True_), "coef0 must be a finite number >= 0 (a PSD kernel), got np.True_"),
    (PolynomialKernel(gamma=np.True_), "gamma must be a finite number > 0, got np.True_"),
    (GaussianKernel(sigma2=True), "sigma2 must be a finite number > 0, got True"),
])
def test_a_bool_is_not_a_numeric_kernel_parameter(kernel, what):
    """bool is a number to Python: PolynomialKernel(coef0=True) was the kernel with coef0 = 1."""
    import re

    with pytest.raises(ValueError, match=f"^{re.escape(what)}$"):
        kernel.check_params()
    with pytest.raises(ValueError, match=f"^{re.escape(what)}$"):
        kernel(np.ones((2, 3)))
