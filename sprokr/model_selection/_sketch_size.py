"""Sketch sizes: the "perfect h" curve of ``m_y``, the growth of ``m_x`` until a plateau."""
from __future__ import annotations

import numbers
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..numerics import DEFAULT_RCOND, SketchedFeatures, topk_search
from ..progress import get_logger, log_message
from ..progress import progress as progress_bar
from ..kernels import resolve_kernel
from ..sketches import drawing_state, resolve_sketch
from ..deprecation import renamed_keywords
from ..utils import check_positive, check_random_state, frame_as_array, iter_chunks, num_samples, take, take_slice, \
    unique_indices
from ._scorers import surrogate_error

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..sketches.base import Sketch
    from ..types import PathLike, RandomStateLike, Samples

__all__ = ["perfect_h_curve", "plateau_index", "grow_until_plateau", "select_m_x", "check_sizes"]

_LOGGER = get_logger("selection")


def plateau_index(values: ArrayLike, greater_is_better: bool = False, rtol: float = 0.05, atol: float = 0.0) -> int:
    """Index of the first point from which the curve stays within tolerance of its best.

    ``values`` are ordered by increasing sketch size.  The tolerance is
    ``atol + rtol * (max(values) - min(values))``; the returned index ``k`` is the smallest
    one such that every ``values[j]``, ``j >= k``, is within it of the best value.

    Parameters
    ----------
    values : array-like of float
        The curve: a non-empty 1-D sequence of finite numbers, by increasing sketch size.
    greater_is_better : bool, default=False
        Whether the best value is the largest (else the smallest).
    rtol : float, default=0.05
        Tolerance relative to the curve's range ``max(values) - min(values)``.
    atol : float, default=0.0
        Absolute tolerance, added to the relative one.

    Returns
    -------
    int
        The index ``k`` of the plateau's first point.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size == 0 or not np.isfinite(v).all():
        raise ValueError("values must be a non-empty 1-D sequence of finite numbers")
    # (a negative tolerance excluded the best value itself: the index past the end)
    rtol, atol = check_positive(rtol, "rtol", strict=False), check_positive(atol, "atol", strict=False)
    best = v.max() if greater_is_better else v.min()
    tol = atol + rtol * (v.max() - v.min())
    ok = np.abs(v - best) <= tol
    bad = np.flatnonzero(~ok)
    return int(bad[-1] + 1) if bad.size else 0


def check_sizes(grid: Any, name: str, upper: int | None = None, part: str = "the training data") -> list[int]:
    """A grid of sketch sizes as a list of int, or a ValueError naming ``name``.

    The check of every sketch-size grid of :mod:`sprokr.model_selection`
    (:func:`select_model`'s ``m_x_grid`` / ``m_y_grid``, the ``m_grid`` of
    :func:`perfect_h_curve` and :func:`select_m_x`), public for code that takes such a grid
    of its own (e.g. a plugin's selection) and should accept and refuse the same values,
    before any of its fits.

    Parameters
    ----------
    grid : sequence of int
        A non-empty, increasing sequence of positive integers.  Integral floats (``4.0``,
        e.g. from ``np.linspace``) are sizes; ``2.5``, a bool or a string is refused, not
        truncated.
    name : str
        The argument's name in the error messages.
    upper : int, optional
        The number of samples the sketches are drawn on: a larger size is refused (a sketch
        draws at most one column per sample), before any of the grid's fits.
    part : str, default="the training data"
        What holds those ``upper`` samples, in the error message.

    Returns
    -------
    list of int
        The sizes, in the grid's order.

    Raises
    ------
    ValueError
        ``grid`` is not a non-empty increasing sequence of positive integers, or (with
        ``upper``) its last size is larger than ``upper``; the message names ``name``.

    Examples
    --------
    >>> from sprokr.model_selection import check_sizes
    >>> check_sizes([100, 200.0, 400], "m_x_grid", upper=500)
    [100, 200, 400]
    >>> check_sizes([100, 1000], "m_x_grid", upper=500, part="the training part")
    Traceback (most recent call last):
    ...
    ValueError: m_x_grid holds the size 1000, but the training part has 500 samples: a sketch draws at most one column per sample, so the sizes must be at most 500
    """
    items = list(grid) if np.iterable(grid) and not isinstance(grid, (str, bytes)) else []
    sizes = []
    for v in items:
        if isinstance(v, (bool, np.bool_)):
            continue
        if isinstance(v, (numbers.Integral, np.integer)):
            sizes.append(int(v))
        elif isinstance(v, (numbers.Real, np.floating)) and float(v).is_integer():  # (nan, inf: not)
            sizes.append(int(float(v)))
    if not items or len(sizes) != len(items) or any(v < 1 for v in sizes) or \
            any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise ValueError(f"{name} must be a non-empty increasing sequence of positive integers, got {grid!r}")
    if upper is not None and sizes[-1] > upper:
        raise ValueError(f"{name} holds the size {sizes[-1]}, but {part} has {upper} samples: a sketch draws at "
                         f"most one column per sample, so the sizes must be at most {upper}")
    return sizes


def perfect_h_curve(Y_train: Samples, Y_val: Samples, output_kernel: str | Kernel, m_grid: Sequence[int],
                    sketch: str | Sketch = "subsample", sketch_params: Mapping[str, Any] | None = None,
                    output_kernel_params: Mapping[str, Any] | None = None, candidates: Samples | None = None,
                    metric: Callable[[Any, Any], float] | None = None, greater_is_better: bool | None = None,
                    rtol: float = 0.05, rcond: float | None = None, random_state: RandomStateLike = None,
                    plot: PathLike | None = None, verbose: bool = False,
                    progress: bool | None = None, max_m: int | None = None) -> dict[str, Any]:
    """The "perfect h" curve: validation error of ``h(y) = P~_Y psi(y)`` for each ``m_y``.

    For each ``m`` in ``m_grid`` an output sketch ``R`` (m x n) is drawn on the training
    outputs; the validation outputs are embedded as ``psi~(y_val)`` (their projection on
    the sketched subspace) and

    * ``projection_error[m]`` = mean ``|P~ psi(y) - psi(y)|^2 = k(y, y) - |psi~(y)|^2``
      (no candidates needed; for the linear kernel, the squared error of the projection);
    * if ``candidates`` or ``metric`` is given, the projections are decoded
      (``argmax_c psi~(y)^T psi~(c) - k(c,c)/2``) over ``candidates`` (default: the
      distinct training outputs) and ``metric(Y_val, decoded)`` is recorded (default: the
      mean output-kernel loss of the decoded outputs, lower is better).

    Parameters
    ----------
    Y_train : samples
        The ``n`` training outputs.
    Y_val : samples
        The ``n_val`` validation outputs.
    output_kernel : str or Kernel
        Registered kernel name or kernel instance.
    m_grid : increasing sequence of int (each <= n)
        The output sketch sizes (checked against ``n`` before any work).
    sketch : str or Sketch, default="subsample"
        The output sketch (name or instance; its ``m`` is set per point).
    sketch_params : dict, optional
        Parameters of a sketch given by name.
    output_kernel_params : dict, optional
        Parameters of a kernel given by name.
    candidates : collection, optional
        Candidate outputs of the decoding (default, when ``metric`` is given: the distinct
        training outputs).
    metric : callable ``metric(Y_true, Y_pred) -> float``, optional
        Score of the decoded outputs (default, when ``candidates`` is given: the mean
        output-kernel loss).
    greater_is_better : bool, optional
        Direction of ``metric`` (default False; the projection error is always lower-better).
    rtol : float, default=0.05
        Plateau tolerance (see :func:`plateau_index`).
    rcond : float, optional
        Relative eigenvalue threshold of the sketched output basis (default 1e-10).
    random_state : None, int or Generator
        An integer: each size's sketch is drawn from a generator seeded with it (the sketch
        a model with this ``random_state`` draws first); a generator: drawn in turn for the
        successive sketches; None: each sketch draws with its own ``random_state`` (a seeded
        sketch instance or ``sketch_params``), as the estimators do.
    plot : str or path, optional
        Save the figure of :func:`sprokr.plotting.plot_sketch_size_curve` there (PNG, PDF
        or SVG by extension).
    verbose : bool
        Show one line per size on standard error (always logged at INFO on the
        ``sprokr.selection`` logger).
    progress : bool, optional
        Progress bar over the sizes (default: :func:`sprokr.progress.progress_enabled`).
    max_m : int, optional
        While the plateau starts at the last size (the curve still improves at the grid's
        edge), add the last size doubled, up to ``max_m`` (e.g. the number of training
        outputs); None: the grid as given.

    Returns
    -------
    dict with ``m`` (list), ``projection_error``, ``metric`` (list or None), ``ranks``,
    ``times`` (s per point), ``criterion`` (name of the curve used), ``plateau_m``
    (smallest m on the plateau), ``extended`` (the sizes added beyond the grid),
    ``plateau_sketch`` (the :class:`~sprokr.numerics.SketchMatrix` drawn at ``plateau_m``:
    a fit that reuses it finds its output basis in a selection's cache) and ``plot``
    (path or None).
    """
    from ..models.base import OUTPUT_DTYPE

    # outputs given as dataframes: arrays (sprokr.utils.frame_as_array)
    Y_train, Y_val, candidates = frame_as_array(Y_train), frame_as_array(Y_val), frame_as_array(candidates)
    n = num_samples(Y_train, "Y_train")
    grid = check_sizes(m_grid, "m_grid", n, "Y_train")
    rtol = check_positive(rtol, "rtol", strict=False)  # (else found by plateau_index after every size)
    if num_samples(Y_val, "Y_val") < 1:  # (a NaN curve, refused by plateau_index as "values")
        raise ValueError("Y_val is empty; expected at least one validation output")
    if candidates is not None and num_samples(candidates, "candidates") < 1:
        raise ValueError("candidates is empty; expected at least one candidate output (or None)")
    if max_m is not None and (isinstance(max_m, bool) or not isinstance(max_m, (int, np.integer)) or
                              not 1 <= max_m <= n):
        raise ValueError(f"max_m must be an integer in [1, n_train={n}] or None, got {max_m!r}")
    ky = resolve_kernel(output_kernel, output_kernel_params, "output", OUTPUT_DTYPE)

    def sketch_of(m):
        if isinstance(sketch, str):
            return resolve_sketch(sketch, m, sketch_params, n, "output")
        return _with_m(resolve_sketch(sketch, None, sketch_params, n, "output"), m, n)

    sketches = [sketch_of(m) for m in grid]  # validated before any work
    rng = check_random_state(random_state)
    seeded = isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool)
    rc = rcond if rcond is not None else DEFAULT_RCOND
    Yp, Yvp = ky.prepare_outputs(Y_train), ky.prepare_outputs(Y_val)
    kvv = ky.diag(Yvp).astype(np.float64)
    decode = candidates is not None or metric is not None
    if decode:
        C = candidates if candidates is not None else take(Y_train, unique_indices(Y_train))
        Cp = ky.prepare_outputs(C)
        off = None if ky.normalized else -0.5 * ky.diag(Cp).astype(np.float64)
        if metric is None:
            metric, greater_is_better = _kernel_loss(ky), False
    gib = bool(greater_is_better)
    proj, met, ranks, times, drawn = [], [], [], [], []
    bar = progress_bar(total=len(grid), desc="perfect h", unit="sizes", enabled=progress)

    def point(m, sk):
        t0 = time.perf_counter()
        # an integer seed: each size's sketch is the one a model seeded with it draws first
        # (DSOKR, ISOKR), so a selection's fit at the chosen size finds its basis in the cache
        R = sk.draw(n, check_random_state(random_state) if seeded else drawing_state(random_state, rng))
        drawn.append(R)
        # the basis needs the sketch's support points only: no pass over the n outputs
        feats = SketchedFeatures.from_support(ky, R, take(Y_train, R.indices), OUTPUT_DTYPE, rc,
                                              prepared=take(Yp, R.indices))[0].fit_basis()
        Hv = feats.transform(Yvp)
        proj.append(float(np.mean(np.maximum(kvv - np.einsum("ij,ij->i", Hv, Hv), 0.0))))
        ranks.append(feats.rank)
        if decode:
            idx = topk_search(Hv, feats.transform(Cp), 1, off).indices[:, 0]
            met.append(float(metric(Y_val, take(C, idx))))  # (set when decode)
            if not np.isfinite(met[-1]):
                raise ValueError(f"metric returned {met[-1]!r} at m={m}; expected a finite number")
        times.append(time.perf_counter() - t0)
        extra = f", metric {met[-1]:.5g}" if decode else ""
        bar.update(1)
        log_message(f"perfect_h m_y={m}: rank {ranks[-1]}, projection error {proj[-1]:.5g}{extra} "
                    f"({times[-1]:.2f} s)", verbose=verbose, logger=_LOGGER)

    for m, sk in zip(grid, sketches):
        point(m, sk)
    curve, crit = (met, "metric") if decode else (proj, "projection_error")
    k = plateau_index(curve, greater_is_better=gib if decode else False, rtol=rtol)
    extended = []
    while max_m is not None and k == len(grid) - 1 and len(grid) > 1 and grid[-1] < max_m:
        # still improving at the grid's edge: the size is not a choice yet
        grid.append(min(2 * grid[-1], max_m))
        extended.append(grid[-1])
        point(grid[-1], sketch_of(grid[-1]))
        k = plateau_index(curve, greater_is_better=gib if decode else False, rtol=rtol)
    bar.close()
    out = {"m": grid, "projection_error": proj, "metric": met if decode else None, "ranks": ranks,
           "times": times, "criterion": crit, "plateau_m": grid[k], "extended": extended,
           "plateau_sketch": drawn[k], "plot": None}
    if plot is not None:
        from ..plotting import plot_sketch_size_curve

        plot_sketch_size_curve(out, path=plot)
        out["plot"] = str(plot)
    return out


def _with_m(sketch, m, n):
    from sklearn.base import clone

    s = clone(sketch).set_params(m=m)
    s.validate(n)
    return s


def _kernel_loss(ky):
    def loss(Y_true, Y_pred):
        A, B = ky.prepare_outputs(Y_true), ky.prepare_outputs(Y_pred)
        total = 0.0
        for sl in iter_chunks(num_samples(A), 512):
            a, b = take_slice(A, sl), take_slice(B, sl)
            total += float(np.sum(ky.diag(a) + ky.diag(b) - 2 * np.einsum("ii->i", ky.pairwise(a, b))))
        return total / max(num_samples(A), 1)

    return loss


@renamed_keywords({"patience": "n_iter_no_change"})
def grow_until_plateau(grid: Sequence[int], evaluate: Callable[[int], tuple[float, float]],
                       budget_s: float | None = None, rtol: float = 0.01, n_iter_no_change: int = 1, name: str = "m",
                       log: Callable[[str], Any] | None = None, max_size: int | None = None) -> dict[str, Any]:
    """Evaluate increasing sizes until the error stops improving or a time budget is exceeded.

    The loop behind :func:`select_m_x` and :func:`~sprokr.model_selection.select_model`:
    ``evaluate(size) -> (error, seconds)`` is called for each size of ``grid`` in turn (lower
    error is better; any sign).  It stops when an evaluation takes longer than ``budget_s``
    ("budget") or when the error has failed ``n_iter_no_change`` times in a row to improve on the
    best one so far by more than ``rtol`` (relative; "converged"); otherwise after the whole
    grid ("grid").  With ``max_size``, a grid that ends while the error still improves is
    extended -- the size doubled, up to ``max_size`` -- until the error stops improving
    (a size at the grid's edge is not a choice): "grid" then means that ``max_size`` was
    reached still improving.  The selected size is the smallest one whose error is within
    ``rtol`` of the best error among the evaluations that stayed within budget.

    Parameters
    ----------
    grid : increasing sequence of int
    evaluate : callable ``size -> (error, seconds)``
    budget_s : float, optional
        Time budget of one evaluation (s); None: no budget.
    rtol : float >= 0
    n_iter_no_change : int >= 1
        Evaluations in a row without improvement before stopping (formerly ``patience``).
    name : str
        Name of the size in log messages.
    log : callable, optional
        ``log(message)`` after each evaluation.
    max_size : int, optional
        Extend the grid beyond its last size (doubling) while the error improves, up to this
        size (e.g. the number of training samples); None: the grid as given.

    Returns
    -------
    dict with ``m`` (evaluated sizes), ``errors``, ``fit_times``, ``selected_m``,
    ``stopped`` ("converged", "budget" or "grid") and ``extended`` (the sizes evaluated
    beyond the grid).
    """
    if budget_s is not None:
        budget_s = check_positive(budget_s, "budget_s")
    rtol = check_positive(rtol, "rtol", strict=False)
    if isinstance(n_iter_no_change, bool) or not isinstance(n_iter_no_change, (int, np.integer)) \
            or n_iter_no_change < 1:
        raise ValueError(f"n_iter_no_change must be an integer >= 1, got {n_iter_no_change!r}")
    grid = check_sizes(grid, f"the grid of {name}")
    if max_size is not None:
        if isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer)) or max_size < 1:
            raise ValueError(f"max_size must be a positive integer or None, got {max_size!r}")
        max_size = int(max_size)
    limit = np.inf if budget_s is None else budget_s
    ms, errs, times, stopped, flat = [], [], [], "grid", 0
    sizes = list(grid)
    for m in _extended(sizes, max_size):
        err, t = evaluate(m)
        err, t = float(err), float(t)
        ms.append(m), errs.append(err), times.append(t)  # type: ignore[func-returns-value]
        if log is not None:
            log(f"{name}={m}: validation error {err:.6g} ({t:.2f} s)")
        if t > limit:
            stopped = "budget"
            break
        if len(errs) > 1:
            prev = min(errs[:-1])
            flat = flat + 1 if err > prev - rtol * abs(prev) else 0
            if flat >= n_iter_no_change:
                stopped = "converged"
                break
    ok = [i for i, t in enumerate(times) if t <= limit] or [0]
    best = min(errs[i] for i in ok)
    sel = next(ms[i] for i in ok if errs[i] <= best + rtol * abs(best))
    return {"m": ms, "errors": errs, "fit_times": times, "selected_m": sel, "stopped": stopped,
            "extended": [m for m in ms if m > grid[-1]]}


def _extended(sizes, max_size):
    """The sizes of ``sizes`` in turn, then (when the caller's loop goes on after the last
    one, i.e. the error still improved) the last doubled, up to ``max_size``."""
    yield from sizes
    last = sizes[-1]
    while max_size is not None and last < max_size:
        last = min(2 * last, max_size)
        yield last



@renamed_keywords({"patience": "n_iter_no_change"})
def select_m_x(X: Samples, Y: Samples, X_val: Samples, Y_val: Samples, m_grid: Sequence[int], budget_s: float,
               rtol: float = 0.01, n_iter_no_change: int = 1, random_state: RandomStateLike = None,
               verbose: bool = False, progress: bool | None = None, **siokr_params: Any) -> dict[str, Any]:
    """Choose the input sketch size of SIOKR by validation surrogate error under a time budget.

    SIOKR is fitted for increasing ``m_x`` in ``m_grid``; the loop stops when the training
    time of a fit exceeds ``budget_s`` or when the error has improved by less than ``rtol``
    (relative) ``n_iter_no_change`` times in a row (formerly ``patience``).  The selected
    ``m_x`` is the smallest one whose error is within ``rtol`` of the best error seen
    among fits that stayed within budget
    (:func:`grow_until_plateau`).  :func:`~sprokr.model_selection.select_model` does the
    same with a whole ``lam`` path per ``m_x``.

    Parameters
    ----------
    X, Y, X_val, Y_val : samples
        Training and validation data.
    m_grid : increasing sequence of int
        The input sketch sizes ``m_x``, tried in turn: each at most the number of samples
        of ``X`` (checked before any fit).
    budget_s : float
        Training-time budget of one fit (s).
    rtol : float, default=0.01
        Relative improvement of the error below which a size counts as no improvement, and
        tolerance of the selection (see :func:`grow_until_plateau`).
    n_iter_no_change : int, default=1
        Sizes in a row without improvement before stopping (formerly ``patience``).
    random_state : None, int or Generator
        Seeds the fits: each one's ``random_state`` is drawn from a generator made from it.
    verbose : bool
        Show one line per size on standard error (always logged at INFO on the
        ``sprokr.selection`` logger).
    progress : bool, optional
        Progress bar over the sizes (default: :func:`sprokr.progress.progress_enabled`).
    **siokr_params
        Passed to :class:`sprokr.SIOKR` (kernels, lam, input_sketch, ...); an
        ``output_sketch`` here makes the models SISOKR.

    Returns
    -------
    dict with ``m`` (evaluated sizes), ``errors``, ``fit_times``, ``selected_m``,
    ``stopped`` ("converged", "budget" or "grid").
    """
    from ..models.sisokr import SISOKR

    budget_s = check_positive(budget_s, "budget_s")
    params = {"input_sketch": "subsample", **siokr_params}
    # every size before the first fit (a size larger than X was refused by its fit, after the smaller ones)
    m_grid = check_sizes(m_grid, "m_grid", None if params["input_sketch"] is None else num_samples(X, "X"), "X")
    rng = check_random_state(random_state)
    bar = progress_bar(total=len(m_grid), desc="select m_x", unit="sizes", enabled=progress)

    def evaluate(m):
        model = SISOKR(m_x=m, random_state=int(rng.integers(2**31 - 1)), **params)
        t0 = time.perf_counter()
        model.fit(X, Y)
        t = time.perf_counter() - t0
        err = surrogate_error(model, X_val, Y_val)
        bar.update(1)
        return err, t

    def log(msg):
        log_message(f"select_m_x {msg}", verbose=verbose, logger=_LOGGER)

    try:
        return grow_until_plateau(m_grid, evaluate, budget_s, rtol, n_iter_no_change, name="m_x", log=log)
    finally:
        bar.close()
