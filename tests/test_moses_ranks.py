"""The rank-of-the-truth passes of ``benchmarks/_moses.py`` against a naive dense float64
count: plain float32 GEMM blocks, through the bounded screen (sparse survivors and the dense
fallback of a truth ranked far down), with offsets, ties and several chunks."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from sprokr.decoders import CandidateIndex

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _moses_module():
    spec = importlib.util.spec_from_file_location("moses_pieces", BENCH / "_moses.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def naive_ranks(H, E, offsets, truth):
    """1 + #greater + (#ties - 1) / 2 from the same pairwise float64 formula."""
    E64 = np.asarray(E, dtype=np.float64)
    ranks = np.empty(H.shape[0])
    for i in range(H.shape[0]):
        # the per-pair formula of the tasks (row-wise einsum) for every candidate
        s = np.einsum("ij,ij->i", np.broadcast_to(H[i], E64.shape), E64)
        if offsets is not None:
            s = s + offsets
        t = s[truth[i]]
        ranks[i] = 1 + np.count_nonzero(s > t) + max(np.count_nonzero(s == t) - 1, 0) / 2
    return ranks


def anisotropic(rng, n, d, dtype):
    scales = np.geomspace(1.0, 1e-3, d)
    E = (rng.standard_normal((n, d)) * scales).astype(dtype)
    return E


@pytest.mark.parametrize("with_offsets", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ranks_of_truth_equal_the_naive_count_with_and_without_the_screen(with_offsets, dtype):
    mod = _moses_module()
    rng = np.random.default_rng(0)
    n, d, nq = 3000, 24, 60
    E = anisotropic(rng, n, d, dtype)
    E[100:110] = E[7]  # duplicates: ties with a truth
    offsets = -0.5 * np.einsum("ij,ij->i", E, E).astype(np.float64) if with_offsets else None
    truth = rng.integers(0, n, nq)
    truth[:3] = 7
    # queries near their truth (well ranked) and a few random ones (ranked far down)
    H = np.asarray(E[truth], dtype=np.float64) + 0.05 * rng.standard_normal((nq, d))
    H[-10:] = rng.standard_normal((10, d))
    expected = naive_ranks(H, E, offsets, truth)
    plain = CandidateIndex(list(range(n)), E, offsets)
    got_plain = mod.ranks_of_truth(H, plain, truth, chunk=700)
    np.testing.assert_array_equal(got_plain, expected)
    screened = CandidateIndex(list(range(n)), E, offsets).build_screen(6)
    got = mod.ranks_of_truth(H, screened, truth, chunk=700)
    np.testing.assert_array_equal(got, expected)
    assert expected[:3].max() >= 5  # the duplicates do tie with the truth
    assert expected.max() > 100  # some truths are ranked far down


def test_screened_ranks_take_both_routes():
    """A block of well-ranked truths is counted from the survivors only; truths ranked far
    down from their rows of the float32 GEMM -- both equal to the naive count."""
    mod = _moses_module()
    rng = np.random.default_rng(1)
    n, d = 4000, 32
    E = anisotropic(rng, n, d, np.float32)
    truth = rng.integers(0, n, 40)
    offsets = -0.5 * np.einsum("ij,ij->i", E, E).astype(np.float64)  # the truth is the nearest: rank 1
    H = np.asarray(E[truth], dtype=np.float64)
    H[20:] = -H[20:]  # the truth scores among the lowest: nearly every candidate passes
    index = CandidateIndex(list(range(n)), E, offsets).build_screen(8)
    s = mod.truth_scores(H, E, offsets, truth)
    routes = []

    class Counting(mod.ScreenedRankTask):
        query_block = 20
        dense = False

        def count(self, state, E, offsets, S, q=slice(None)):
            first = q.start if isinstance(q, slice) else int(q[0])
            routes.append(("dense", first // self.query_block * self.query_block))
            self.dense = True
            try:
                return super().count(state, E, offsets, S, q)
            finally:
                self.dense = False

        def exact(self, state, r, c, E, offsets):
            if not self.dense:
                routes.append(("sparse", int(r.min()) // self.query_block * self.query_block))
            return super().exact(state, r, c, E, offsets)

    from sprokr.numerics import LocalExecutor

    ex = LocalExecutor()
    task = Counting(H, s, index.screen.norm_max, index.screen)
    got = ex.map_reduce(ex.partition(E, index.screen.projections, offsets), task, 1000)
    expected = naive_ranks(H, E, offsets, truth)
    np.testing.assert_array_equal(got, expected)
    assert (expected[:20] == 1).all() and expected[20:].min() > n / 2
    assert ("dense", 20) in routes and ("sparse", 0) in routes
    assert ("dense", 0) not in routes and ("sparse", 20) not in routes
