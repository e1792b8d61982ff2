"""The local executor folds the chunks of a thread-safe pass in parallel threads
(ChunkTask.thread_safe): the same sums as one thread, and only for tasks that say so."""
import threading

import numpy as np
import pytest

from sprokr import SISOKR
from sprokr.kernels import GaussianKernel
from sprokr.model_selection import SelectionCache
from sprokr.numerics import ChunkTask, LocalExecutor
from sprokr.numerics import _executor as executor_module


class _Sums(ChunkTask):
    """Column sums of squares."""

    name = "sums"

    def __init__(self, safe):
        self.thread_safe = safe

    def start(self):
        return np.zeros(3)

    def add(self, partial, rows, X):
        return partial + (X.astype(np.float64) ** 2).sum(axis=0)

    def merge(self, a, b):
        return a + b


@pytest.mark.parametrize("safe", [True, False])
def test_thread_safe_tasks_fold_in_threads_with_the_same_result(safe, monkeypatch):
    monkeypatch.setattr(executor_module, "n_workers", lambda: 2)
    folds = []  # (thread name, first row) of every fold of a group of chunks
    orig = executor_module.fold_chunks

    def spy(task, start, *args, **kw):
        folds.append((threading.current_thread().name, start))
        return orig(task, start, *args, **kw)

    monkeypatch.setattr(executor_module, "fold_chunks", spy)
    X = np.random.default_rng(0).standard_normal((1000, 3))
    ex = LocalExecutor()
    got = ex.map_reduce(ex.partition(X), _Sums(safe), 100)
    np.testing.assert_allclose(got, (X ** 2).sum(axis=0), rtol=1e-12)
    if safe:  # two contiguous groups of whole chunks, each folded in a fold thread
        assert sorted(s for _, s in folds) == [0, 500]
        assert all(name.startswith("sprokr-fold") for name, _ in folds)
    else:
        assert folds == [(threading.current_thread().name, 0)]
    folds.clear()
    shuffled = LocalExecutor(order="shuffled", random_state=0)  # one generator: never shared by threads
    np.testing.assert_allclose(shuffled.map_reduce(shuffled.partition(X), _Sums(True), 100), got, rtol=1e-12)
    assert folds == [(threading.current_thread().name, 0)]


def test_threaded_fold_names_the_failing_rows(monkeypatch):
    monkeypatch.setattr(executor_module, "n_workers", lambda: 2)

    class Failing(_Sums):
        def add(self, partial, rows, X):
            if rows.start <= 730 < rows.stop:
                raise ValueError("bad row")
            return super().add(partial, rows, X)

    ex = LocalExecutor()
    with pytest.raises(Exception, match="700-800"):
        ex.map_reduce(ex.partition(np.ones((1000, 3))), Failing(True), 100)


def test_sketched_ridge_pass_is_threaded_only_with_thread_safe_kernels(monkeypatch):
    """SISOKR's cross-product pass: threaded with a stateless kernel (the same fit to
    rounding), sequential with a selection's caching kernel (its memo is shared state)."""
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((3000, 6)), rng.standard_normal((3000, 4))
    seen = []
    orig = executor_module.fold_chunks_threaded

    def spy(task, *args, **kw):
        seen.append(type(task).__name__)
        return orig(task, *args, **kw)

    def fit(threads, kernel="gaussian"):
        monkeypatch.setattr(executor_module, "n_workers", lambda: threads)
        return SISOKR(input_kernel=kernel, input_kernel_params=None if kernel != "gaussian" else {"gamma": 0.1},
                      input_sketch="subsample", m_x=200, output_sketch="subsample", m_y=50, lam=1e-4,
                      chunk_size=256, random_state=0).fit(X, Y)

    one = fit(1)
    monkeypatch.setattr(executor_module, "fold_chunks_threaded", spy)
    two = fit(2)
    assert "CrossProductTask" in seen
    c1, c2 = one.predict_coordinates(X[:50]), two.predict_coordinates(X[:50])
    assert np.abs(c1).max() > 0
    np.testing.assert_allclose(c2, c1, rtol=1e-4, atol=1e-5 * np.abs(c1).max())
    seen.clear()
    cached = SelectionCache().kernel(GaussianKernel(gamma=0.1))
    fit(2, kernel=cached)
    assert "CrossProductTask" not in seen
