import numpy as np
import pytest

from sprokr.numerics import ShiftedCrossProducts, column_shift, psd_eigh, psd_solve


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_shifted_cross_products_are_exact_identities(dtype):
    """Chunked, double-centred accumulation equals A^T A and A^T T computed at once."""
    rng = np.random.default_rng(0)
    # a nearly flat block with a row scale factor, like a wide-bandwidth Gaussian kernel
    A = (1.2 + 0.05 * rng.random((700, 40))) * (1 + 0.1 * rng.random((700, 1)))
    T = 0.9 + 1e-3 * rng.standard_normal((700, 7))
    c = column_shift(A[:50].astype(dtype), dtype)  # a shift fixed before the pass
    acc = ShiftedCrossProducts(40, 7, dtype, c, T[:50].mean(axis=0))
    for sl in (slice(0, 300), slice(300, 650), slice(650, 700)):
        acc.add(sl, A[sl].astype(dtype), T[sl], overwrite=False)
    AtA, AtT = acc.result()
    G = A.astype(dtype).astype(np.float64)
    err = np.abs(AtA - G.T @ G).max()
    if dtype == np.float64:
        assert err <= 1e-13 * np.diag(G.T @ G).mean()
        assert np.abs(AtT - G.T @ T).max() <= 1e-13 * np.abs(G.T @ T).max()
    else:  # the centring must beat a plain float32 product by far
        A32 = A.astype(np.float32)
        naive = np.abs((A32.T @ A32).astype(np.float64) - G.T @ G).max()
        assert err < naive / 100
        assert np.abs(AtT - G.T @ T).max() <= 1e-6 * np.abs(G.T @ T).max()
    ident = ShiftedCrossProducts(40, 700, dtype, c, identity_targets=True)
    ident.add(slice(0, 700), A.astype(dtype))
    np.testing.assert_allclose(ident.result()[1], G.T, rtol=1e-6)


def test_psd_eigh_threshold_and_solvers_agree():
    rng = np.random.default_rng(1)
    B = rng.standard_normal((30, 8))
    K = B @ B.T  # rank 8
    U, d = psd_eigh(K, rcond=1e-10)
    assert U.shape == (30, 8) and np.all(np.diff(d) <= 0)
    np.testing.assert_allclose(U @ np.diag(d) @ U.T, K, atol=1e-10)
    G = K @ K + 0.1 * K
    b = K @ rng.standard_normal((30, 3))  # in the range of G
    x1, x2 = psd_solve(G, b, method="cholesky"), psd_solve(G, b, method="eigh")
    np.testing.assert_allclose(K @ x1, K @ x2, atol=1e-6)  # same function, null space aside
    with pytest.raises(ValueError, match="cholesky"):
        psd_solve(G, b, method="lu")


def test_lower_triangle_solvers_ignore_the_upper_triangle():
    """The sketched ridge hands LAPACK a Fortran-ordered G whose upper triangle is junk."""
    from sprokr.numerics import cholesky_solve

    rng = np.random.default_rng(2)
    B = rng.standard_normal((40, 40))
    G = B @ B.T + 0.5 * np.eye(40)
    b = rng.standard_normal((40, 3))
    junk = np.asfortranarray(np.tril(G) + np.triu(rng.standard_normal((40, 40)), 1))
    ref = np.linalg.solve(G, b)
    np.testing.assert_allclose(cholesky_solve(junk, b), ref, rtol=1e-8)
    np.testing.assert_allclose(psd_solve(junk, b, method="eigh", lower_only=True), ref, rtol=1e-8)
    # overwrite=True factorises in place; without it G is left untouched
    before = junk.copy()
    cholesky_solve(junk, b)
    np.testing.assert_array_equal(junk, before)
    with pytest.raises(np.linalg.LinAlgError):
        cholesky_solve(np.asfortranarray(-G), b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lower_only_cross_products_match_full(dtype):
    rng = np.random.default_rng(3)
    A = 1 + 0.1 * rng.random((300, 25))
    acc = ShiftedCrossProducts(25, 2, dtype, column_shift(A[:10].astype(dtype), dtype))
    acc.add(slice(0, 300), A.astype(dtype), rng.random((300, 2)))
    full, _ = acc.result()
    lower, _ = acc.result(lower_only=True)
    assert lower.flags.f_contiguous
    np.testing.assert_allclose(np.tril(lower), np.tril(full), rtol=1e-12)
    E = rng.random((25, 25)).astype(dtype)
    plus, _ = acc.result(lower_only=True, plus=E)
    np.testing.assert_allclose(np.tril(plus), np.tril(full + E.astype(np.float64)), rtol=1e-12)
    np.testing.assert_array_equal(acc.result(lower_only=True)[0], lower)  # result() is repeatable
    np.testing.assert_allclose(full, full.T, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blas_matmul_any_layout(dtype):
    from sprokr.numerics import matmul

    rng = np.random.default_rng(4)
    A = rng.random((37, 23)).astype(dtype)
    B = rng.random((23, 11)).astype(dtype)
    for a in (A, np.asfortranarray(A), A[:, ::1][::1]):
        for b in (B, np.asfortranarray(B), rng.random((23, 22)).astype(dtype)[:, ::2]):
            C = matmul(a, b)
            assert C.dtype == dtype and C.flags.c_contiguous
            np.testing.assert_allclose(C, a @ b, rtol=1e-5)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_row_block_pool_works_in_a_forked_child():
    """A pool created before fork has no threads in the child; the child must not hang."""
    import multiprocessing as mp

    from sprokr.numerics import for_row_blocks

    def square_rows(out):
        def work(sl):
            out[sl] = out[sl] ** 2

        for_row_blocks(work, out.shape[0])
        return out

    a = np.arange(4000.0).reshape(1000, 4)
    np.testing.assert_array_equal(square_rows(a.copy()), a**2)  # creates the pool here
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:  # the child's call goes through for_row_blocks
        assert pool.apply_async(_child_sum_of_squares).get(timeout=60) == float(np.sum(a**2))


def _child_sum_of_squares():
    from sprokr.numerics import for_row_blocks

    a = np.arange(4000.0).reshape(1000, 4)

    def work(sl):
        a[sl] = a[sl] ** 2

    for_row_blocks(work, a.shape[0])
    return float(a.sum())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cross_products_merge_in_any_order(dtype):
    """Partial sums of disjoint chunks merge to the one-pass result, whatever the order."""
    rng = np.random.default_rng(7)
    A = (1.0 + 0.05 * rng.random((900, 30))).astype(dtype)
    T = rng.standard_normal((900, 4))
    c, d = column_shift(A[:64], dtype), T[:64].mean(axis=0)
    whole = ShiftedCrossProducts(30, 4, dtype, c, d).add(slice(0, 900), A, T)
    bounds = [0, 100, 350, 351, 700, 900]
    parts = [ShiftedCrossProducts(30, 4, dtype, c, d).add(slice(a, b), A[a:b], T[a:b])
             for a, b in zip(bounds[:-1], bounds[1:])]
    results = []
    for order in ([0, 1, 2, 3, 4], [4, 2, 0, 3, 1]):
        acc = ShiftedCrossProducts(30, 4, dtype, c, d)
        for i in order:
            acc.merge(parts[i])
        results.append(acc.result())
        G1, B1 = results[-1]
        G0, B0 = whole.result()
        # other chunks round differently in float32 (each chunk's product carries its own
        # rounding, up to a few float32 eps = 1.2e-7 relative); the sums are float64
        tol = 1e-12 if dtype == np.float64 else 1e-6
        np.testing.assert_allclose(G1, G0, rtol=tol)
        np.testing.assert_allclose(B1, B0, rtol=tol, atol=tol * np.abs(B0).max())
    # the same partial results merged in another order: equal to float64 rounding
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-14)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-13, atol=1e-13 * np.abs(B0).max())
    # a fixed order is bit-identical run after run
    again = ShiftedCrossProducts(30, 4, dtype, c, d)
    for i in [4, 2, 0, 3, 1]:
        again.merge(ShiftedCrossProducts(30, 4, dtype, c, d).add(
            slice(bounds[i], bounds[i + 1]), A[bounds[i]:bounds[i + 1]], T[bounds[i]:bounds[i + 1]]))
    np.testing.assert_array_equal(again.result()[0], acc.result()[0])
    with pytest.raises(ValueError, match="different shifts"):
        acc.merge(ShiftedCrossProducts(30, 4, dtype, c + 1, d))


def test_result_adds_a_scaled_matrix_in_either_layout_and_sym_norm1_reads_the_lower_triangle():
    from sprokr.numerics._linalg import sym_norm1

    rng = np.random.default_rng(2)
    A, T = rng.standard_normal((60, 9)), rng.standard_normal((60, 2))
    acc = ShiftedCrossProducts(9, 2, np.float64, column_shift(A[:10], np.float64))
    acc.add(slice(0, 60), A, T)
    P = rng.standard_normal((9, 9))
    P = P + P.T
    for plus in (P, np.asfortranarray(P), P.T):  # C-ordered, Fortran-ordered, a Fortran view
        G, _ = acc.result(plus=plus, plus_scale=0.3)
        np.testing.assert_allclose(G, A.T @ A + 0.3 * P, rtol=1e-12, atol=1e-12)
        Gl, _ = acc.result(lower_only=True, plus=plus, plus_scale=0.3)
        np.testing.assert_allclose(np.tril(Gl), np.tril(A.T @ A + 0.3 * P), rtol=1e-12, atol=1e-12)
    Gl = np.asfortranarray(np.tril(P) + np.triu(np.full((9, 9), 1e6), 1))  # garbage above the diagonal
    work = np.empty((9, 9))
    for w in (None, work):
        assert np.isclose(sym_norm1(Gl, lower_only=True, work=w), np.abs(P).sum(axis=0).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rank_deficient", [False, True])
def test_own_rows_sums_from_the_factor_match_dense_products(dtype, rank_deficient):
    """Sub-sampling's support rows (``A`` at the support is ``K~``): their whitened sums,
    formed from the pivoted Cholesky factor (``lauum`` and rank-two corrections, never the
    m x r rows), equal ``Z^T Z`` and ``Z^T T`` of the dense ``Z = K~ P_r L^-T``, in float64
    whatever the accumulator's dtype."""
    from sprokr.numerics import Whitening

    rng = np.random.default_rng(3)
    m, p = 60, 5
    X = rng.standard_normal((m, 8))
    # a Gaussian Gram (full rank) or a linear one of 8 features (rank 8 of 60)
    Kt = X @ X.T if rank_deficient else np.exp(-0.3 * ((X[:, None] - X[None]) ** 2).sum(-1))
    wh = Whitening(Kt)
    assert (wh.rank < m) == rank_deficient
    T = rng.standard_normal((m, p))
    c = column_shift(Kt[:20], dtype)
    d = T.mean(axis=0)
    acc = ShiftedCrossProducts(m, p, dtype, c, d, whiten=wh).add_own_rows(np.arange(m), Kt, T)
    G, ZtT = acc.result()
    Z = Kt[:, wh.sel] @ np.linalg.inv(np.tril(wh.L)).T  # dense reference
    scale = np.abs(Z.T @ Z).max()
    np.testing.assert_allclose(G, Z.T @ Z, atol=1e-12 * scale)
    np.testing.assert_allclose(ZtT, Z.T @ T, atol=1e-12 * scale * np.abs(T).max())
    assert np.triu(acc.AtA, 1).max() == 0  # the sum's strict upper triangle stays zero


def test_a_shipped_whitening_says_it_has_no_factor():
    """The pivoted factor (m x m) is never pickled with a whitening: a copy refuses to form
    the support rows from it, with a clear error, instead of failing on ``None``."""
    import pickle

    from sprokr.numerics import Whitening

    X = np.random.default_rng(0).standard_normal((30, 2))
    wh = pickle.loads(pickle.dumps(Whitening(X @ X.T)))  # rank 2 of 30: L_21 is needed
    for use in (wh.own_rows, wh.own_gram, lambda: wh.own_products(np.ones((30, 1)))):
        with pytest.raises(ValueError, match="without its pivoted factor"):
            use()


@pytest.mark.parametrize("lower", [True, False])
def test_triangular_gram_reads_one_triangle(lower):
    from sprokr.numerics import triangular_gram

    r = np.random.default_rng(5)
    M = r.standard_normal((37, 37))
    T = np.tril(M) if lower else np.triu(M)
    want = T.T @ T if lower else T @ T.T
    got = triangular_gram(M, lower=lower)  # the other triangle of M is not read
    tri = np.tril if lower else np.triu
    np.testing.assert_allclose(tri(got), tri(want), rtol=1e-13, atol=1e-13)
    assert got.flags.f_contiguous and not np.shares_memory(got, M)
    assert triangular_gram(np.zeros((0, 0))).shape == (0, 0)
