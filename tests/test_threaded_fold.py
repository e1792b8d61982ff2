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


def _blas_threads():
    from threadpoolctl import threadpool_info

    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


def test_a_small_sketched_ridge_runs_on_one_blas_thread():
    """Below SINGLE_THREAD_MAX_WORK the sketched ridge limits BLAS to one thread (its short
    BLAS calls gain little from threads, whose idle spinning slows the kernel passes run in
    the library's own threads); above it BLAS keeps its threads."""
    from threadpoolctl import threadpool_limits

    from sprokr.models import KernelRidgeRegressor
    from sprokr.numerics import SINGLE_THREAD_MAX_WORK, small_work_threads
    from sprokr.numerics._ridge import ridge_work
    from sprokr.sketches import PSR

    seen = []

    class Recording(GaussianKernel):
        def pairwise(self, A, B):
            seen.append(_blas_threads())
            return super().pairwise(A, B)

    rng = np.random.default_rng(0)
    X, T = rng.standard_normal((600, 5)), rng.standard_normal((600, 2))
    # two BLAS threads whatever the environment (with one, as under OMP_NUM_THREADS=1 or on
    # one core, the checks below held without any limit)
    with threadpool_limits(limits=2, user_api="blas"):
        assert _blas_threads() == 2
        KernelRidgeRegressor(kernel=Recording(gamma=0.2), lam=1e-3, input_sketch="psr", m_x=40,
                             input_sketch_params={"p": 0.05}, random_state=0).fit(X, T)
        assert _blas_threads() == 2  # restored after the fit
        with small_work_threads(SINGLE_THREAD_MAX_WORK):
            assert _blas_threads() == 1
        with small_work_threads(2 * SINGLE_THREAD_MAX_WORK):  # above it: BLAS keeps its threads
            assert _blas_threads() == 2
    assert seen and set(seen) == {1}
    R = PSR(m=40, p=0.05).draw(600, 0)
    assert ridge_work(600, R, X[R.indices]) <= SINGLE_THREAD_MAX_WORK
    assert ridge_work(5000, PSR(m=2250, p=0.05).draw(5000, 0), X[:10]) > SINGLE_THREAD_MAX_WORK


@pytest.mark.parametrize("optimizer", ["auto", "lbfgs"])
def test_a_small_kernel_machine_solves_on_one_blas_thread(monkeypatch, optimizer):
    """The iterative solvers (Newton, L-BFGS) of a small machine run on one BLAS thread: their
    steps are short BLAS calls between elementwise passes, and two threads (with numpy's and
    scipy's pools spinning beside each other) made them 7-15x slower (docs/benchmarks.md,
    "Robust regression")."""
    from threadpoolctl import threadpool_limits

    import sprokr.models.feature_problem as fp
    from sprokr.models import SketchedKernelMachine

    seen = []
    for name in ("newton_solve", "lbfgs_solve"):
        real = getattr(fp, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            seen.append((_name, _blas_threads()))
            return _real(*args, **kwargs)

        monkeypatch.setattr(fp, name, spy)
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(600, 5))
    y = X.sum(axis=1) + 0.1 * rng.standard_normal(600)
    with threadpool_limits(limits=2, user_api="blas"):  # two BLAS threads whatever the environment
        assert _blas_threads() == 2
        model = SketchedKernelMachine(loss="epsilon_insensitive", loss_params={"epsilon": 0.1}, lam=1e-4, m_x=40,
                                      input_sketch="psr", input_sketch_params={"p": 0.05}, optimizer=optimizer,
                                      random_state=0).fit(X, y)
    assert model.converged_
    assert [t for _, t in seen] == [1]
    assert seen[0][0] == ("newton_solve" if optimizer == "auto" else "lbfgs_solve")
