"""The local search of float64 embeddings: a centred float32 screen, exact float64 results."""
import numpy as np
import pytest

from sprokr.numerics import CentredTopKTask, LocalExecutor, TopKTask, topk_search
from sprokr.numerics._search import centred_screen_pays, centred_topk_task


def _reference(H, E, k, offsets=None):
    """float64 scores of every pair, ranked by (score desc, index asc): the naive search."""
    S = H @ E.T
    if offsets is not None:
        S = S + offsets
    order = np.lexsort((np.broadcast_to(np.arange(S.shape[1]), S.shape), -S), axis=1)[:, :k]
    return order, np.take_along_axis(S, order, axis=1)


def _flat(n, nq, d, rng, common=1e3, spread=1e-3):
    """Embeddings and queries sharing a large common part (a flat output kernel): their
    scores differ by far less than the float32 rounding of the raw product."""
    c = rng.standard_normal(d) * common
    E = c + spread * rng.standard_normal((n, d))
    H = c / common + spread * rng.standard_normal((nq, d))
    return H, E


@pytest.mark.parametrize("k", [1, 5])
@pytest.mark.parametrize("with_offsets", [False, True])
def test_flat_scores_are_ranked_as_the_float64_product_ranks_them(k, with_offsets):
    rng = np.random.default_rng(0)
    H, E = _flat(3000, 80, 40, rng)
    off = -0.5 * (E ** 2).sum(1) if with_offsets else None
    assert centred_screen_pays(H, E)
    got = topk_search(H, E, k, off, max_memory_mb=0.2)  # many candidate chunks
    idx, sc = _reference(H, E, k, off)
    assert (got.indices == idx).all()
    np.testing.assert_allclose(got.scores, sc, rtol=1e-13, atol=0)
    # the raw float32 product cannot tell these candidates apart: the test can fail
    S32 = H.astype(np.float32) @ E.astype(np.float32).T
    if off is not None:
        S32 = S32 + off.astype(np.float32)
    assert (np.argmax(S32, axis=1) != idx[:, 0]).any()


def test_ties_keep_the_smaller_index_and_chunk_order_does_not_matter():
    rng = np.random.default_rng(1)
    H, E = _flat(2000, 64, 16, rng, common=10.0, spread=1.0)
    E[1500] = E[7]
    E[1900] = E[7]
    H[:10] = E[7]  # nearest to candidates 7, 1500 and 1900 (a tie)
    off = -0.5 * (E ** 2).sum(1)
    idx, sc = _reference(H, E, 3, off)
    for ex in (LocalExecutor(), LocalExecutor(order="shuffled", n_partitions=3, random_state=3)):
        task = centred_topk_task(H, E, 3, off, 100)
        got = ex.map_reduce(ex.partition(E, off), task, 100)
        assert (got.indices == idx).all()
        assert (got.indices[:10] == [7, 1500, 1900]).all()
        np.testing.assert_allclose(got.scores, sc, rtol=1e-13, atol=1e-12)


def test_the_bound_covers_the_screen_rounding():
    # the certified bound is never below the screen's real error (else a candidate could
    # be dropped), and not so loose that everything survives
    rng = np.random.default_rng(2)
    H, E = _flat(1000, 50, 64, rng, common=100.0, spread=0.1)
    off = -0.5 * (E ** 2).sum(1)
    task = centred_topk_task(H, E, 1, off, 1000)
    Ec = E - task.e_mean
    S32 = (task.Hc32 @ Ec.astype(np.float32).T + (Ec @ task.h_mean + off).astype(np.float32)).astype(np.float64)
    S = (H - task.h_mean) @ Ec.T + (Ec @ task.h_mean + off)
    err = np.abs(S32 - S).max(axis=1)
    assert (err <= task.bound).all()
    state = task.add(task.start(), slice(0, 1000), E, off)
    assert state[2][0].size < 5 * 50  # a few survivors per query, not the whole index


def test_few_queries_and_float32_embeddings_keep_the_plain_search():
    rng = np.random.default_rng(4)
    E = rng.standard_normal((500, 20))
    assert not centred_screen_pays(rng.standard_normal((3, 20)), E)
    assert not centred_screen_pays(rng.standard_normal((100, 20)), E.astype(np.float32))
    H = rng.standard_normal((3, 20))
    got = topk_search(H, E, 4)
    idx, sc = _reference(H, E, 4)
    assert (got.indices == idx).all()


def test_the_same_result_as_the_float64_task():
    rng = np.random.default_rng(5)
    E = rng.standard_normal((4000, 30)) * np.exp(-np.arange(30) / 5)
    H = rng.standard_normal((120, 30))
    off = rng.standard_normal(4000)
    ex = LocalExecutor()
    ref = ex.map_reduce(ex.partition(E, off), TopKTask(H, 8), 512)
    got = topk_search(H, E, 8, off, max_memory_mb=0.3)
    assert (got.indices == ref.indices).all()
    np.testing.assert_allclose(got.scores, ref.scores, rtol=1e-12, atol=1e-12)
    assert isinstance(CentredTopKTask(H, 1, E.mean(0), 1.0, 1.0, 0.0).start(), tuple)


def test_one_best_fold_fills_empty_slots_and_keeps_the_first_of_ties():
    """k = 1 folds a block with one argmax pass from the empty state: -inf scores still
    take an index, ties across blocks keep the smaller index, as a full ranking does."""
    S = np.array([[-np.inf, -np.inf, -np.inf], [1.0, 3.0, 3.0], [2.0, 0.0, 2.0]])
    task = TopKTask(np.zeros((3, 1)), 1)
    state = task.fold_scores(task.start(), S[:, :2], 0)
    state = task.fold_scores(state, S[:, 2:], 2)
    assert state[0][:, 0].tolist() == [0, 1, 0]
    assert state[1][:, 0].tolist() == [-np.inf, 3.0, 2.0]
    assert task.fold_scores(state, np.zeros((3, 0)), 3)[0].tolist() == state[0].tolist()


def test_fold_with_survivors_returns_every_entry_above_the_threshold():
    rng = np.random.default_rng(5)
    S = rng.standard_normal((700, 300)).astype(np.float32)
    shift = rng.standard_normal(300).astype(np.float32)
    full = S + shift
    task = TopKTask(np.zeros((700, 1)), 2)
    (idx, sc), (r, c, v) = task.fold_with_survivors(task.start(), S.copy(), 10, shift=shift,
                                                    threshold=lambda kth, q: kth - 0.5)
    ref_i, ref_s = _reference(np.eye(700), full.T.astype(np.float64), 2)  # rows of `full` as scores
    assert (idx == ref_i + 10).all()
    np.testing.assert_array_equal(sc, ref_s.astype(np.float32))
    rr, cc = np.nonzero(full >= (ref_s[:, 1] - 0.5).astype(np.float32)[:, None])
    assert sorted(zip(r.tolist(), c.tolist())) == sorted(zip(rr.tolist(), cc.tolist()))
    np.testing.assert_array_equal(v, full[r, c])
