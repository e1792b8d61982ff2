import re

import numpy as np
import pytest
import scipy.sparse as sp

from sprokr.kernels import GaussianKernel
from sprokr.numerics import SketchedFeatures
from sprokr.sketches import (
    PSG,
    PSR,
    Accumulation,
    CountSketch,
    GaussianSketch,
    IdentitySketch,
    PSparsified,
    SubSample,
)

N = 24
SKETCHES = [
    SubSample(6),
    SubSample(6, probabilities=np.arange(1, N + 1)),
    GaussianSketch(6),
    PSR(6, p=0.3),
    PSG(6, p=0.3),
    Accumulation(6, m_acc=3),
    CountSketch(6),
    IdentitySketch(),
]


@pytest.mark.parametrize("sketch", SKETCHES, ids=lambda s: repr(s))
def test_expected_gram_of_sketch_is_identity(sketch):
    rng = np.random.default_rng(0)
    draws = 4000
    acc = np.zeros((N, N))
    for _ in range(draws):
        R = sketch.draw(N, rng).toarray()
        acc += R.T @ R
    acc /= draws
    # Monte Carlo error ~ 1/sqrt(draws) per entry
    assert np.abs(acc - np.eye(N)).max() < 0.12


@pytest.mark.parametrize("sketch", SKETCHES, ids=lambda s: repr(s))
def test_decomposition_trick_equals_dense_product(sketch, rng):
    X = rng.standard_normal((N, 3))
    k = GaussianKernel(gamma=0.5)
    R = sketch.draw(N, np.random.default_rng(3))
    K = k(X)
    feats = SketchedFeatures(k, R, X[R.indices], np.float64, 1e-12)
    np.testing.assert_allclose(feats.block(X[:7]), K[:7] @ R.toarray().T, atol=1e-12)
    # R K R^T from the gathered rows equals the dense sandwich
    rows = feats.block(X[R.indices])
    np.testing.assert_allclose(R.sandwich_from_rows(rows), R.toarray() @ K @ R.toarray().T, atol=1e-10)


def test_psparsified_only_keeps_non_null_columns():
    R = PSR(20, p=0.01).draw(1000, 0)
    dense = R.toarray()
    nonnull = np.flatnonzero(np.abs(dense).sum(0))
    np.testing.assert_array_equal(nonnull, R.indices)
    # E[m'] = n (1 - (1 - p)^m) ~ 182: far fewer kernel columns than n
    assert 100 < R.indices.size < 280


def test_same_seed_same_sketch_and_bad_parameters():
    a = PSG(10, p=0.2).draw(50, 7).toarray()
    b = PSG(10, p=0.2).draw(50, 7).toarray()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, PSG(10, p=0.2).draw(50, 8).toarray())
    with pytest.raises(ValueError, match="larger than the number of samples"):
        SubSample(60).draw(50)
    with pytest.raises(ValueError, match=">= 1"):
        GaussianSketch(0).draw(50)
    for p in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"\(0, 1\]"):
            PSR(5, p=p).draw(50)
    with pytest.raises(ValueError, match="probabilities"):
        SubSample(5, probabilities=np.ones(3)).draw(50)


@pytest.mark.parametrize("sketch", SKETCHES, ids=lambda s: repr(s))
@pytest.mark.parametrize("n", [10.5, 10.0, -5, 0, True, "10", None])
def test_draw_refuses_an_n_samples_that_is_not_an_integer_at_least_1(sketch, n):
    """draw(10.5) was truncated to 10 samples; draw(-5) said "m=6 is larger than n_samples=-5"."""
    with pytest.raises(ValueError, match=rf"^n_samples must be an integer >= 1, got {re.escape(repr(n))}$"):
        sketch.draw(n, 0)
    assert sketch.draw(np.int64(N), 0).n == N  # numpy integers are integers


@pytest.mark.parametrize("m_acc", [True, False, 2.0, 0, "3", None])
def test_accumulation_refuses_an_m_acc_that_is_not_an_integer_at_least_1(m_acc):
    with pytest.raises(ValueError, match=f"^m_acc must be an integer >= 1, got {m_acc!r}$"):
        Accumulation(6, m_acc=m_acc).draw(N)
    assert Accumulation(6, m_acc=np.int64(2)).draw(N, 0).m == 6  # numpy integers are integers


@pytest.mark.parametrize("m, msg", [(0, "m_y must be an integer >= 1, got 0"),
                                    (-1, "m_y must be an integer >= 1, got -1"),
                                    (10.5, "m_y must be an integer >= 1, got 10.5"),
                                    ("10", "m_y must be an integer >= 1, got '10'"),
                                    (True, "m_y must be an integer >= 1, got True"),
                                    (np.float64(10.0), "m_y must be an integer >= 1"),
                                    (51, r"m_y=51 is larger than the number of samples n_samples=50")])
def test_resolve_sketch_names_the_estimator_sketch_size(m, msg):
    from sprokr.sketches import resolve_sketch

    with pytest.raises(ValueError, match=f"^output_sketch: sketch size {msg}"):
        resolve_sketch("psg", m, {"p": 0.2}, 50, "output")
    with pytest.raises(ValueError, match=f"^output_sketch: sketch size {msg}"):
        resolve_sketch(PSG(m, p=0.2), m, None, 50, "output")


def test_resolve_sketch_takes_numpy_integer_sizes_and_names_an_instance_m():
    from sprokr.sketches import resolve_sketch

    assert resolve_sketch("subsample", np.int64(10), None, 50, "input").m == 10
    assert resolve_sketch(SubSample(np.int32(10)), np.int32(10), None, 50, "input").m == 10
    assert resolve_sketch(IdentitySketch(), 10**6, None, 50, "input") is not None  # identity ignores m_x
    with pytest.raises(ValueError, match="^input_sketch: sketch size m=60 is larger"):  # the instance's m
        resolve_sketch(SubSample(60), None, None, 50, "input")


@pytest.mark.parametrize("sketch", [SubSample(12), PSG(12, p=0.3), GaussianSketch(12)], ids=repr)
@pytest.mark.parametrize("duplicated", [False, True], ids=["full-rank", "rank-deficient"])
def test_cholesky_and_eigen_bases_give_the_same_features_up_to_rotation(sketch, duplicated):
    # the two whitening bases of K~ = R K R^T differ by a rotation: the features' inner
    # products (what ridges, projections and decoding use) must agree, and both equal the
    # naive dense formula k_a^T R^T (R K R^T)^+ R k_b
    rng = np.random.default_rng(1)
    X = rng.standard_normal((N, 3))
    if duplicated:  # repeated samples: K~ is singular, both routes must find its rank
        X[N // 2:] = X[: N - N // 2]
    k = GaussianKernel(gamma=0.3)
    R = sketch.draw(N, np.random.default_rng(5))
    Q = rng.standard_normal((9, 3))
    out = {}
    for route in ("eigh", "cholesky"):
        f = SketchedFeatures(k, R, X[R.indices], np.float64, 1e-10, basis=route).fit_basis()
        assert f.basis_route == route
        Kt = R.toarray() @ k(X) @ R.toarray().T
        # B^T K~ B = I_r
        np.testing.assert_allclose(f.basis_.T @ Kt @ f.basis_, np.eye(f.rank), atol=1e-6)
        out[route] = (f.rank, f.transform(Q), f.transform(X))
    assert out["eigh"][0] == out["cholesky"][0]
    Rd = R.toarray()
    Kt = Rd @ k(X) @ Rd.T
    naive = (k(Q, X) @ Rd.T) @ np.linalg.pinv(Kt, rcond=1e-10, hermitian=True) @ (Rd @ k(X, Q))
    for route, (_, Fq, Fx) in out.items():
        np.testing.assert_allclose(Fq @ Fq.T, naive, atol=1e-7, err_msg=route)
    np.testing.assert_allclose(out["eigh"][2] @ out["eigh"][1].T, out["cholesky"][2] @ out["cholesky"][1].T,
                               atol=1e-8)


def test_basis_route_auto_switches_at_the_documented_size():
    from sprokr.numerics import EIGH_BASIS_MAX_M

    X = np.random.default_rng(0).standard_normal((EIGH_BASIS_MAX_M + 5, 2))
    k = GaussianKernel(gamma=0.5)
    for m, route in ((EIGH_BASIS_MAX_M, "eigh"), (EIGH_BASIS_MAX_M + 1, "cholesky")):
        R = SubSample(m).draw(X.shape[0], 0)
        assert SketchedFeatures(k, R, X[R.indices], np.float64, 1e-10).basis_route == route
    with pytest.raises(ValueError, match="basis must be one of"):
        SketchedFeatures(k, R, X[R.indices], np.float64, 1e-10, basis="qr")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sketch", [SubSample(40), PSG(40, p=0.02)], ids=repr)
def test_triangular_route_solves_with_L_and_matches_the_explicit_basis(sketch, dtype):
    # a sparse or scaled sketch on the Cholesky route: the map solves with L_11 (trsm) and
    # never forms B = P_r L_11^-T unless asked; its features, B C and B^T P equal the
    # products with the explicit B (naive dense), up to the dtype's rounding
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 3))
    k = GaussianKernel(gamma=0.4)
    R = sketch.draw(400, np.random.default_rng(7))
    assert sp.issparse(R.weights)  # (a dense W is folded into one map: the explicit basis)
    f = SketchedFeatures(k, R, X[R.indices], dtype, 1e-10, basis="cholesky").fit_basis()
    assert "basis_" not in f.__dict__ and f.fitted
    Q = rng.standard_normal((11, 3))
    Fq = f.transform(Q)
    assert Fq.dtype == dtype and Fq.shape == (11, f.rank)
    B = f.basis_  # formed now, once
    assert "basis_" in f.__dict__ and B.shape == (R.m, f.rank) and B.dtype == dtype
    Rd = R.toarray()
    Kt = Rd @ k(X) @ Rd.T
    np.testing.assert_allclose(B.astype(np.float64).T @ Kt @ B.astype(np.float64), np.eye(f.rank),
                               atol=1e-6 if dtype == np.float64 else 2e-3)
    naive = (k(Q, X) @ Rd.T) @ B.astype(np.float64)
    tol = 1e-9 if dtype == np.float64 else 2e-3
    np.testing.assert_allclose(Fq, naive, atol=tol * np.abs(naive).max())
    C = rng.standard_normal((f.rank, 2))
    P = rng.standard_normal((R.m, 2))
    B64 = B.astype(np.float64)
    np.testing.assert_allclose(f.basis_times(C), B64 @ C, rtol=1e-6 if dtype == np.float32 else 1e-10,
                               atol=1e-6 * np.abs(B64 @ C).max())
    np.testing.assert_allclose(f.basis_transpose_times(P), B64.T @ P, rtol=1e-6 if dtype == np.float32 else 1e-10,
                               atol=1e-6 * np.abs(B64.T @ P).max())


def test_features_without_the_triangular_factor_use_their_saved_basis():
    # features saved before the triangular route hold basis_ and no factor: still served
    rng = np.random.default_rng(4)
    X = rng.standard_normal((N, 3))
    k = GaussianKernel(gamma=0.4)
    R = SubSample(12).draw(N, np.random.default_rng(2))
    f = SketchedFeatures(k, R, X[R.indices], np.float64, 1e-10, basis="cholesky").fit_basis()
    Fq, B = f.transform(X[:5]), f.basis_
    old = SketchedFeatures.__new__(SketchedFeatures)
    old.__dict__.update({a: v for a, v in f.__dict__.items() if a != "_chol"})
    assert old.rank == f.rank and old.fitted
    np.testing.assert_allclose(old.transform(X[:5]), Fq, atol=1e-12)
    np.testing.assert_allclose(old.basis_times(np.eye(f.rank)), B, atol=1e-12)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        old.nothing


def test_dense_times_sparse_sketch_in_row_blocks_is_the_dense_product():
    """``K R^T`` of a sparse sketch is computed in cache-sized row blocks per core
    (DENSE_SPARSE_ROWS): the same values as the dense product, whatever the number of rows."""
    import numpy as np

    from sprokr.numerics._sketch_matrix import DENSE_SPARSE_ROWS
    from sprokr.sketches import PSR

    n = 900
    R = PSR(m=30, p=0.02).draw(n, 0)
    KS = np.random.default_rng(1).standard_normal((3 * DENSE_SPARSE_ROWS + 7, R.indices.size))
    dense = KS @ R.toarray()[:, R.indices].T
    np.testing.assert_allclose(R.apply_right(KS), dense, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(R.apply_right(KS[:5]), dense[:5], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("sketch,match", [
    (PSG(m=5, p=2.0), "p must lie in"),
    # bool is a numbers.Real: p=True was taken as p = 1 (a dense sketch)
    (PSG(m=5, p=True), r"^p must be a real number in \(0, 1\], got True$"),
    (PSparsified(m=5, p=np.True_), r"^p must be a real number in \(0, 1\], got np.True_$"),
    (PSR(m=5, p="0.5"), r"^p must be a real number in \(0, 1\], got '0.5'$"),
    (PSparsified(m=5, distribution="cauchy"), "distribution must be"),
    (Accumulation(m=5, m_acc=True), "m_acc must be an integer"),
    (SubSample(m=5, probabilities=[0.0, 0.0]), "not all zero"),
    (SubSample(m=5, probabilities=[[0.5, 0.5]]), "must be 1-D"),
    # a mask is no sampling weights: a bool array was read as weights 1.0 / 0.0
    (SubSample(m=5, probabilities=np.arange(10) % 2 == 0), r"^probabilities must be an array of numbers .*booleans"),
    (SubSample(m=5, probabilities=[True] * 10), r"^probabilities must be an array of numbers .*booleans"),
    (SubSample(m=2.5), "sketch size m must be an integer >= 1, got 2.5"),
])
def test_sketch_check_params_needs_no_number_of_samples(sketch, match):
    """A sketch's own parameters are checked without ``n`` (what an estimator's
    ``check_params`` and the command line run before reading data), and ``validate(n)``
    still refuses them."""
    with pytest.raises(ValueError, match=match):
        sketch.check_params()
    with pytest.raises(ValueError, match=match):
        sketch.validate(10)


def test_sketch_check_params_returns_the_sketch_unchanged():
    s = PSG(m=5, p=0.5, random_state=0)
    before = dict(s.__dict__)
    assert s.check_params() is s and s.__dict__ == before
    assert SubSample(m=3, probabilities=[1.0, 2.0, 3.0]).check_params().m == 3
    assert SubSample(m=3, probabilities=[1, 0, 3]).check_params().m == 3  # integer weights are numbers
