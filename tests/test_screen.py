"""The bounded screen of a candidate index: the same top-k as a float64 search, for less work."""
import numpy as np
import pytest

import sprokr
import sprokr.numerics as N
from sprokr import SISOKR
from sprokr.decoders import CandidateIndex
from sprokr.numerics import LocalExecutor, ScreenedTopKTask, build_screen, screened_topk_search


def _anisotropic(n, d, rng, decay=6.0, dtype=np.float32):
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    return ((rng.standard_normal((n, d)) * np.exp(-np.arange(d) / decay)) @ Q).astype(dtype)


def _reference(H, E, k, offsets=None):
    """float64 scores of every pair, ranked by (score desc, index asc): the naive search."""
    S = np.asarray(H, dtype=np.float64) @ np.asarray(E, dtype=np.float64).T
    if offsets is not None:
        S = S + offsets
    order = np.lexsort((np.broadcast_to(np.arange(S.shape[1]), S.shape), -S), axis=1)[:, :k]
    return order, np.take_along_axis(S, order, axis=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("with_offsets", [False, True])
@pytest.mark.parametrize("k", [1, 10])
def test_screened_search_equals_the_naive_float64_search(dtype, with_offsets, k):
    rng = np.random.default_rng(0)
    E = _anisotropic(6000, 48, rng, dtype=dtype)
    H = E[rng.choice(6000, 70)].astype(np.float64) + 0.05 * rng.standard_normal((70, 48))
    off = -0.5 * (np.asarray(E, dtype=np.float64) ** 2).sum(1) if with_offsets else None
    screen = build_screen(E, 12, off)
    got = screened_topk_search(H, E, screen, k, off, max_memory_mb=0.5)  # many chunks
    idx, sc = _reference(H, E, k, off)
    assert (got.indices == idx).all()
    np.testing.assert_allclose(got.scores, sc, rtol=0, atol=1e-12)


def test_isotropic_embeddings_are_still_searched_exactly():
    # no dominant directions: the bound prunes little, the result must not change
    rng = np.random.default_rng(1)
    E = rng.standard_normal((3000, 20)).astype(np.float32)
    H = rng.standard_normal((40, 20))
    got = screened_topk_search(H, E, build_screen(E, 5), 7, max_memory_mb=0.2)
    idx, sc = _reference(H, E, 7)
    assert (got.indices == idx).all()
    np.testing.assert_allclose(got.scores, sc, rtol=0, atol=1e-12)


def test_embeddings_inside_the_screened_subspace_and_ties():
    # zero complements make the bound equal to the score: only the rounding margin keeps
    # the top candidates; exact duplicates tie and are ranked by their index
    rng = np.random.default_rng(2)
    E = _anisotropic(4000, 16, rng)
    E[:, :] = E @ np.linalg.qr(rng.standard_normal((16, 16)))[0][:, :4] @ np.linalg.qr(
        rng.standard_normal((16, 16)))[0][:, :4].T
    E[3000] = E[10]
    E[3500] = E[10]
    H = np.vstack([E[10].astype(np.float64), rng.standard_normal((20, 16))])
    off = -0.5 * (E.astype(np.float64) ** 2).sum(1)  # the nearest embedding scores best
    got = screened_topk_search(H, E, build_screen(E, 4, off), 5, off, max_memory_mb=0.1)
    idx, sc = _reference(H, E, 5, off)
    np.testing.assert_allclose(got.scores, sc, rtol=0, atol=1e-12)
    assert list(got.indices[0, :3]) == [10, 3000, 3500]
    assert (got.indices[1:] == idx[1:]).all()


def test_the_bound_holds_for_every_pair():
    rng = np.random.default_rng(3)
    E = _anisotropic(2000, 32, rng)
    H = 10 * rng.standard_normal((30, 32))
    screen = build_screen(E, 8)
    task = ScreenedTopKTask(H, screen, 3)
    U = task.Hs.astype(np.float64) @ screen.projections.astype(np.float64).T
    S = H @ E.astype(np.float64).T
    assert (U + task.margin[:, None] >= S).all()
    # the projections are E Q1 and the complements' norms, rounded up
    Q1 = screen.basis
    np.testing.assert_allclose(Q1.T @ Q1, np.eye(8), atol=1e-12)
    E64 = E.astype(np.float64)
    np.testing.assert_allclose(screen.projections[:, :8], E64 @ Q1, rtol=1e-5, atol=1e-6)
    tail = np.linalg.norm(E64 - E64 @ Q1 @ Q1.T, axis=1)
    assert (screen.projections[:, 8] >= tail).all()
    np.testing.assert_allclose(screen.projections[:, 8], tail, rtol=1e-6)


def test_build_screen_names_a_bad_dimension():
    E = np.zeros((10, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="dim must be between 1 and 3"):
        build_screen(E, 4)
    with pytest.raises(ValueError, match="out must be a float32 array"):
        build_screen(E, 2, out=np.zeros((10, 3)))


@pytest.fixture(scope="module")
def model_and_data():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 5))
    Y = np.tanh(X @ rng.standard_normal((5, 12)))
    C = np.vstack([Y, np.tanh(rng.standard_normal((2700, 5)) @ rng.standard_normal((5, 12)))])
    model = SISOKR(input_kernel="gaussian", input_kernel_params={"gamma": 0.2}, output_kernel="gaussian",
                   output_kernel_params={"gamma": 0.5}, lam=1e-3, input_sketch="subsample", m_x=100, output_sketch="subsample", m_y=40,
                   random_state=0,
                   default_index=False).fit(X, Y)
    return model, X, C


def test_index_with_a_screen_predicts_the_same_and_survives_saving(model_and_data, tmp_path):
    model, X, C = model_and_data
    plain = model.make_candidate_index(C)
    screened = model.make_candidate_index(C).build_screen(8)
    ref = model.predict_topk(X[:50], 10, candidates=plain)
    got = model.predict_topk(X[:50], 10, candidates=screened)
    assert (got.indices == ref.indices).all()
    np.testing.assert_allclose(got.scores, ref.scores, rtol=0, atol=1e-10)
    again = sprokr.load(screened.save(tmp_path / "s.sprokr"), model=model)
    assert again.screen is not None and again.screen.dim == 8
    np.testing.assert_array_equal(again.screen.projections, screened.screen.projections)
    back = model.predict_topk(X[:50], 10, candidates=again)
    assert (back.indices == got.indices).all() and np.array_equal(back.scores, got.scores)


def test_large_index_on_disk_gets_a_memory_mapped_screen(model_and_data, tmp_path, monkeypatch):
    model, X, C = model_and_data
    # 24,000 candidates: the screen's projections (1.06 MiB) are large enough to be memory-mapped
    C = np.vstack([C] + [C + 0.01 * j for j in range(1, 8)])
    monkeypatch.setattr(N, "SCREEN_MIN_CANDIDATES", 2000)
    monkeypatch.setattr(N, "SCREEN_DIM", 10)
    disk = model.make_candidate_index(C, dtype="float32", path=tmp_path / "idx.sprokr")
    assert [p.name for p in tmp_path.iterdir()] == ["idx.sprokr"]  # no temporary left
    assert disk.screen is not None and disk.screen.dim == 10
    assert isinstance(disk.screen.projections, np.memmap)
    ref = model.predict_topk(X[:40], 5, candidates=model.make_candidate_index(C, dtype="float64"))
    got = model.predict_topk(X[:40], 5, candidates=disk)
    # float32 embeddings: the same lists, scores within float32 rounding of the embeddings
    assert (got.indices == ref.indices).mean() > 0.99
    np.testing.assert_allclose(got.scores, ref.scores, rtol=1e-5, atol=1e-6)
    unscreened = CandidateIndex(disk.candidates, disk.embeddings, disk.offsets, owner=disk.owner)
    exact = unscreened.search(model.predict_coordinates(X[:40]), 5)
    got = disk.search(model.predict_coordinates(X[:40]), 5)
    assert (got.indices == exact.indices).all()
    np.testing.assert_allclose(got.scores, exact.scores, rtol=0, atol=1e-12)
    # distributed from the mapped file: each partition maps its rows of E and of the screen
    dist = disk.distribute(LocalExecutor(n_partitions=3))
    got = dist.search(model.predict_coordinates(X[:40]), 5)
    assert (got.indices == exact.indices).all()
    np.testing.assert_allclose(got.scores, exact.scores, rtol=0, atol=1e-12)
    small = model.make_candidate_index(C[:1500], dtype="float32", path=tmp_path / "small.sprokr")
    assert small.screen is None  # below SCREEN_MIN_CANDIDATES
