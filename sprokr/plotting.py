"""Figures: sketch-size curves, accuracy vs fit time, model selection, leverage scores, outputs.

Every function returns a :class:`matplotlib.figure.Figure` built directly (no
``matplotlib.pyplot`` state): the global backend is never changed and no figure is
registered with pyplot, so the functions are safe in scripts, servers and notebooks alike.
A figure is written to disk only when ``path`` is given (the format follows the file
extension: ``.png``, ``.pdf``, ``.svg`` ...).  In a notebook, a returned ``Figure`` displays
itself when it is the value of the cell.

Needs matplotlib (``pip install "sprokr[plot]"``).  :func:`plot_outputs` draws predicted
outputs next to the true ones with the depictions plugins register (hook
``sprokr_depictions``); sprokr-chem's ``plot_molecules`` is it for molecules.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "new_figure",
    "plot_curve",
    "plot_sketch_size_curve",
    "plot_accuracy_vs_time",
    "plot_model_selection",
    "plot_leverage_scores",
    "plot_outputs",
    "TextDepiction",
]

PathLike = Union[str, "os.PathLike[str]"]


def new_figure(figsize: Tuple[float, float] = (5.0, 3.5), dpi: float = 100, **kwargs: Any) -> "Figure":
    """A matplotlib ``Figure`` that is not managed by pyplot (constrained layout).

    Parameters
    ----------
    figsize : (float, float)
        Width and height in inches.
    dpi : float
        Dots per inch when rasterised.
    **kwargs
        Passed to :class:`matplotlib.figure.Figure`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError('sprokr.plotting needs matplotlib: pip install "sprokr[plot]" '
                          "(or pip install matplotlib)") from exc
    kwargs.setdefault("layout", "constrained")
    return Figure(figsize=figsize, dpi=dpi, **kwargs)


def _finish(fig: "Figure", path: Optional[PathLike]) -> "Figure":
    if path is not None:
        fig.savefig(os.fspath(path))
    return fig


def _axes(ax: Optional["Axes"], figsize: Tuple[float, float] = (5.0, 3.5)) -> Tuple["Figure", "Axes"]:
    if ax is not None:
        return ax.figure, ax  # type: ignore[return-value]
    fig = new_figure(figsize)
    return fig, fig.add_subplot()


def plot_curve(x: ArrayLike, y: ArrayLike, *, xlabel: str = "", ylabel: str = "",
               title: Optional[str] = None, mark: Optional[float] = None, mark_label: str = "plateau",
               logx: bool = False, logy: bool = False, path: Optional[PathLike] = None,
               ax: Optional["Axes"] = None) -> "Figure":
    """A line plot of ``y`` against ``x`` with an optional vertical marker.

    Parameters
    ----------
    x, y : sequences of float of equal length
    xlabel, ylabel : str
        Axis labels.
    title : str, optional
    mark : float, optional
        Draw a dashed vertical line at this ``x`` (e.g. the plateau of a curve).
    mark_label : str
        Legend text of the marker (its value is appended).
    logx, logy : bool
        Logarithmic axes.
    path : str or path-like, optional
        Save the figure there.
    ax : matplotlib.axes.Axes, optional
        Draw into this axes (its figure is returned) instead of a new figure.

    Returns
    -------
    matplotlib.figure.Figure
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xs.ndim != 1 or xs.shape != ys.shape:
        raise ValueError(f"x and y must be 1-D of the same length; got shapes {xs.shape} and {ys.shape}")
    fig, ax = _axes(ax)
    ax.plot(xs, ys, "o-")
    if mark is not None:
        ax.axvline(mark, color="tab:red", ls="--", label=f"{mark_label}: {mark:g}")
        ax.legend()
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    return _finish(fig, path)


def plot_sketch_size_curve(result: Mapping[str, Any], *, title: Optional[str] = None, logx: bool = False,
                           path: Optional[PathLike] = None) -> "Figure":
    """The curve of a sketch-size selection, with the chosen size marked.

    Parameters
    ----------
    result : dict
        Returned by :func:`sprokr.model_selection.perfect_h_curve` (keys ``m``, ``criterion``,
        ``projection_error``, ``metric``, ``plateau_m``, ``times``), by
        :func:`sprokr.model_selection.select_m_x` (keys ``m``, ``errors``, ``fit_times``,
        ``selected_m``) or the ``"m_x"`` entry of :func:`sprokr.model_selection.select_model`
        (keys ``param``, ``m``, ``best_scores``, ``fit_times``, ``selected_m``).
    title : str, optional
        Default: ``"perfect h (validation)"``, ``"SIOKR input sketch size"`` or
        ``"input sketch size"``.
    logx : bool
        Logarithmic sketch-size axis.
    path : str or path-like, optional
        Save the figure there.

    Returns
    -------
    matplotlib.figure.Figure
        Perfect h: the curve used for the plateau (and the projection error on a second
        panel when a task metric was decoded).  ``select_m_x`` and ``select_model``: the
        validation error (or score) and the fit time of each size.
    """
    kind = _sketch_result_kind(result)
    two = kind != "perfect_h" or result["criterion"] == "metric"
    fig = new_figure((9.0, 3.5) if two else (5.0, 3.5))
    axes = fig.subplots(1, 2) if two else [fig.add_subplot()]
    if kind == "perfect_h":
        _perfect_h_panel(result, axes[0], title=title, logx=logx)
        if two:
            plot_curve(result["m"], result["projection_error"], xlabel="m_y", ylabel="projection error",
                       title="projection on the sketched subspace", logx=logx, ax=axes[1])
    else:
        _growth_panel(result, axes[0], title=title or ("SIOKR input sketch size" if kind == "select_m_x"
                                                       else "input sketch size"), logx=logx)
        plot_curve(result["m"], result["fit_times"], xlabel=result.get("param", "m_x"), ylabel="fit time (s)",
                   title="training time", logx=logx, ax=axes[1])
    return _finish(fig, path)


def _sketch_result_kind(result: Any) -> str:
    """``"perfect_h"``, ``"select_m_x"`` or ``"growth"`` (``select_model``'s ``m_x``)."""
    if not isinstance(result, Mapping) or "m" not in result:
        raise TypeError("result must be the dict returned by perfect_h_curve or select_m_x, or select_model's "
                        "'m_x' entry (with key 'm')")
    for key, kind in (("criterion", "perfect_h"), ("errors", "select_m_x"), ("best_scores", "growth")):
        if key in result:
            return kind
    raise TypeError("result has neither 'criterion' (perfect_h_curve), 'errors' (select_m_x) nor "
                    "'best_scores' (select_model's 'm_x')")


def _perfect_h_panel(result: Mapping[str, Any], ax: "Axes", *, title: Optional[str], logx: bool) -> None:
    crit = result["criterion"]
    plot_curve(result["m"], result[crit], xlabel="m_y", ylabel=crit.replace("_", " "),
               title=title or "perfect h (validation)", mark=result.get("plateau_m"), logx=logx, ax=ax)


def _growth_panel(result: Mapping[str, Any], ax: "Axes", *, title: Optional[str], logx: bool,
                  ylabel: str = "validation score") -> None:
    errors = "errors" in result
    plot_curve(result["m"], result["errors"] if errors else result["best_scores"],
               xlabel=result.get("param", "m_x"), ylabel="validation surrogate error" if errors else ylabel,
               title=title, mark=result.get("selected_m"), mark_label="selected", logx=logx, ax=ax)


def plot_accuracy_vs_time(results: Mapping[str, Any], *, metric: str, time_key: str = "fit_s",
                          size_key: Optional[str] = "m", logx: bool = True, title: Optional[str] = None,
                          path: Optional[PathLike] = None, ax: Optional["Axes"] = None) -> "Figure":
    """Accuracy against fit time: one line per method across sketch sizes.

    Parameters
    ----------
    results : mapping
        ``{method: records}`` where ``records`` is one dict (one point: the benchmark
        convention ``{method: {metric: value, "fit_s": s, ...}}``) or a sequence of dicts
        (one point per sketch size, joined by a line, in the given order).
    metric : str
        Key of the accuracy in each record (e.g. ``"f1"``, ``"top1"``).
    time_key : str
        Key of the time in seconds (default ``"fit_s"``).
    size_key : str or None
        Key of the sketch size; when present in a record, the point is annotated with it.
    logx : bool
        Logarithmic time axis (default True).
    title : str, optional
    path : str or path-like, optional
        Save the figure there.
    ax : matplotlib.axes.Axes, optional
        Draw into this axes (its figure is returned) instead of a new figure.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from sprokr.plotting import plot_accuracy_vs_time
    >>> fig = plot_accuracy_vs_time(
    ...     {"SISOKR": [{"m": 100, "f1": 0.40, "fit_s": 0.2}, {"m": 400, "f1": 0.44, "fit_s": 0.6}],
    ...      "IOKR": {"f1": 0.449, "fit_s": 3.1}}, metric="f1")
    """
    if not isinstance(results, Mapping) or not results:
        raise ValueError("results must be a non-empty mapping {method: record or list of records}")
    fig, ax = _axes(ax, (5.5, 3.8))
    for name, recs in results.items():
        recs = [recs] if isinstance(recs, Mapping) else list(recs)
        for r in recs:
            missing = [k for k in (metric, time_key) if k not in r]
            if missing:
                raise KeyError(f"record of {name!r} lacks {missing}; it has {sorted(r)}")
        t = [float(r[time_key]) for r in recs]
        a = [float(r[metric]) for r in recs]
        (line,) = ax.plot(t, a, "o-" if len(recs) > 1 else "o", label=str(name))
        if size_key:
            for r, ti, ai in zip(recs, t, a):
                if size_key in r:
                    ax.annotate(f"{size_key}={r[size_key]}", (ti, ai), textcoords="offset points",
                                xytext=(4, 4), fontsize=7, color=line.get_color())
    if logx:
        from matplotlib.ticker import FuncFormatter, LogLocator

        ax.set_xscale("log")
        # plain numbers ("0.2", "5") at 1, 2 and 5 times the powers of ten: labels that fit
        plain = FuncFormatter(lambda v, _: f"{v:g}")
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        ax.xaxis.set_minor_formatter(plain)
    ax.set_xlabel(f"{time_key.replace('_s', '')} time (s)" if time_key.endswith("_s") else time_key)
    ax.set_ylabel(metric)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _finish(fig, path)


def plot_model_selection(result: Mapping[str, Any], *, title: Optional[str] = None,
                         path: Optional[PathLike] = None) -> "Figure":
    """The curves of :func:`sprokr.model_selection.select_model`, one panel each.

    Panels, in order (those whose search was not run are left out):

    1. ``lam path``: the validation score against ``lam``, one line per input sketch size
       when ``m_x`` was grown (else for the best parameter point), the chosen ``lam``
       marked;
    2. ``perfect h`` (``m_y_grid``): the perfect-h curve of the output sketch size, its
       plateau (the chosen ``m_y``) marked;
    3. ``input sketch size`` (``m_x_grid``): the best validation score of each size, the
       selected size marked;
    4. ``accuracy vs fit time`` (``m_x_grid``): the same scores against the fit time of
       each size (:func:`plot_accuracy_vs_time`).

    Parameters
    ----------
    result : dict
        Returned by :func:`~sprokr.model_selection.select_model`.
    title : str, optional
        Title of the figure (e.g. the estimator's name).
    path : str or path-like, optional
        Save the figure there.

    Returns
    -------
    matplotlib.figure.Figure
        One to four axes, in the order above (the lam path always; perfect h with an
        ``m_y`` search; the two ``m_x`` panels with an ``m_x`` search); ``sprokr select
        --figure`` writes this figure.
    """
    if not isinstance(result, Mapping) or not {"grid", "best_params", "scoring"} <= set(result):
        raise TypeError("result must be the dict returned by sprokr.model_selection.select_model")
    growth, ph = result.get("m_x"), result.get("perfect_h")
    n = 1 + (ph is not None) + 2 * (growth is not None)
    rows, cols = (2, 2) if n == 4 else (1, n)
    fig = new_figure((4.6 * cols, 3.6 * rows))
    axes = list(np.ravel(fig.subplots(rows, cols, squeeze=False)))
    scoring = str(result["scoring"])
    ylabel = "validation -kernel loss" if scoring == "kernel_loss" else f"validation {scoring}"
    _lam_panel(result, axes[0], ylabel)
    k = 1
    if ph is not None:
        _perfect_h_panel(ph, axes[k], title="perfect h (output sketch size)", logx=False)
        k += 1
    if growth is not None:
        _growth_panel(growth, axes[k], title="input sketch size", logx=False, ylabel=ylabel)
        records = [{growth["param"]: m, "score": s, "fit_s": t}
                   for m, s, t in zip(growth["m"], growth["best_scores"], growth["fit_times"])]
        plot_accuracy_vs_time({"best lam per size": records}, metric="score", size_key=growth["param"],
                              title="accuracy vs fit time", ax=axes[k + 1])
        axes[k + 1].set_ylabel(ylabel)
    if title:
        fig.suptitle(title)
    return _finish(fig, path)


def _lam_panel(result: Mapping[str, Any], ax: "Axes", ylabel: str) -> None:
    """Validation score against ``lam``: one line per ``m_x`` tried, or the best grid point."""
    growth, grid = result.get("m_x"), result["grid"]
    # (points skipped for scoring no finite value have best_score NaN: never the best)
    best = max(grid, key=lambda g: g["best_score"] if np.isfinite(g["best_score"]) else -np.inf)
    lams = np.asarray(best["lams"], dtype=float)
    if growth is not None:
        lines = [(f"{growth['param']}={m}", sc) for m, sc in zip(growth["m"], growth["scores"])]
    else:
        lines = [("", best["scores"])]
    for label, scores in lines:
        ax.plot(lams, np.asarray(scores, dtype=float), "o-", ms=3, label=label or None)
    lam = result["best_params"].get("lam")
    if lam is not None:
        ax.axvline(lam, color="tab:red", ls="--", label=f"chosen lam: {lam:g}")
    ax.set_xscale("log")
    ax.set_xlabel("lam")
    ax.set_ylabel(ylabel)
    ax.set_title("lam path")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def plot_leverage_scores(scores: ArrayLike, *, top: Optional[int] = 400,
                         title: str = "approximate leverage scores", logy: bool = False,
                         path: Optional[PathLike] = None) -> "Figure":
    """The ``top`` largest leverage scores, sorted decreasingly.

    Parameters
    ----------
    scores : sequence of float, shape (n,)
        E.g. from :func:`sprokr.model_selection.approximate_leverage_scores`.
    top : int or None
        Number of scores shown (None: all).
    title : str
    logy : bool
        Logarithmic score axis.
    path : str or path-like, optional
        Save the figure there.

    Returns
    -------
    matplotlib.figure.Figure
    """
    s = np.sort(np.asarray(scores, dtype=float).ravel())[::-1]
    if top is not None:
        s = s[: int(top)]
    if s.size == 0:
        raise ValueError("scores is empty")
    return plot_curve(np.arange(1, s.size + 1), s, xlabel="rank", ylabel="leverage score", title=title,
                      logy=logy, path=path)


class TextDepiction:
    """The built-in fallback depiction: any output written as text in its cell.

    Strings are wrapped at ``width`` characters, arrays shown with numpy's printing
    (label vectors as the indices of their non-zero entries).  Registered as ``text``
    (hook ``sprokr_depictions``); :func:`plot_outputs` uses it for outputs no plugin's
    depiction can draw.
    """

    width = 24

    def can_draw(self, obj: Any) -> bool:
        """Always True: every value has a text form."""
        return True

    def draw(self, obj: Any, ax: "Axes", *, fontsize: float = 8, **kwargs: Any) -> None:
        """Write ``obj`` in the middle of ``ax`` (monospace, wrapped)."""
        import textwrap

        if isinstance(obj, np.ndarray) and obj.ndim == 1 and obj.dtype.kind in "biuf" and \
                np.isin(obj, (0, 1)).all():
            text = "{" + ", ".join(map(str, np.flatnonzero(obj).tolist())) + "}"  # a label set
        elif isinstance(obj, np.ndarray):
            text = np.array2string(obj, precision=3, threshold=20)
        else:
            text = str(obj)
        ax.text(0.5, 0.5, "\n".join(textwrap.wrap(text, self.width)[:8]) or " ", ha="center", va="center",
                family="monospace", fontsize=fontsize, transform=ax.transAxes)


def _depiction_for(obj: Any, depictions: Sequence[Tuple[str, Any]]) -> Any:
    for _, dep in depictions:
        try:
            if dep.can_draw(obj):
                return dep
        except Exception:  # a depiction that cannot tell does not draw it
            continue
    return None


def _same(dep: Any, a: Any, b: Any) -> bool:
    """Whether two outputs are the same (the depiction's ``same`` if it has one)."""
    if a is None or b is None:
        return False
    same = getattr(dep, "same", None)
    if same is not None:
        return bool(same(a, b))
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b))) if isinstance(a, np.ndarray) else bool(a == b)
    except Exception:
        return False


def plot_outputs(predicted: Sequence[Any], truth: Optional[Sequence[Any]] = None, *,
                 scores: Optional[ArrayLike] = None, depiction: Any = None, max_rows: int = 8,
                 cell_size: float = 1.9, title: Optional[str] = None, path: Optional[PathLike] = None,
                 **draw_kwargs: Any) -> "Figure":
    """Predicted outputs drawn next to the true ones, one row per query.

    Each output is drawn by the first registered depiction that can draw it (hook
    ``sprokr_depictions``: plugins' depictions in registration order -- sprokr-chem draws
    molecules --, then the built-in :class:`TextDepiction`), or by the one named
    ``depiction``.  One row per query: the true output (when ``truth`` is given), then its
    predictions best first.  Predictions equal to the truth (the depiction's ``same``, e.g.
    the same canonical SMILES; else ``==``) are framed in green, the others in grey.

    Parameters
    ----------
    predicted : sequence
        One entry per query: an output (top-1), or a list or tuple of outputs (top-k, best
        first).
    truth : sequence, optional
        The true output of each query.
    scores : array-like of shape (n_queries, k), optional
        Scores shown under the predictions (e.g. ``Decoded.scores``).
    depiction : str or depiction object, optional
        The depiction that draws every output: a registered name (``sprokr plugins`` lists
        them) or an object with ``can_draw`` and ``draw``; default: for each output, the
        first registered depiction that can draw it.
    max_rows : int
        At most this many queries are drawn (the first ones).
    cell_size : float
        Side of each cell in inches.
    title : str, optional
    path : str or path-like, optional
        Save the figure there.
    **draw_kwargs
        Passed to every depiction's ``draw`` (e.g. ``image_size`` for molecules).

    Returns
    -------
    matplotlib.figure.Figure
        One axes per cell, row by row (``len(rows) * (k + (truth is not None))``); each
        cell's x label is ``"truth"`` or ``"#rank  score"``.

    Raises
    ------
    ValueError
        An empty ``predicted``, a ``truth`` shorter than it, an unknown ``depiction``, an
        output no depiction can draw, or an output the chosen depiction rejects.
    """
    from .registry import get_depictions

    rows = [list(p) if isinstance(p, (list, tuple)) else [p] for p in predicted][: int(max_rows)]
    if not rows or not all(rows):
        raise ValueError("predicted is empty (or holds an empty list of outputs)")
    if truth is not None and len(truth) < len(rows):
        raise ValueError(f"truth has {len(truth)} entries for {len(rows)} queries")
    forced = depiction
    deps: list = []
    if isinstance(depiction, str) or depiction is None:
        found = get_depictions()
        deps = [(c.name, d) for c, d in found]
        if isinstance(depiction, str):
            chosen = [d for c, d in found if depiction in (c.name, c.qualified_name)]
            if not chosen:
                raise ValueError(f"unknown depiction {depiction!r}; known depictions: "
                                 f"{', '.join(n for n, _ in deps)}")
            forced = chosen[0]
    elif not (callable(getattr(depiction, "draw", None)) and callable(getattr(depiction, "can_draw", None))):
        raise TypeError(f"depiction must be a registered name or an object with can_draw and draw, "
                        f"got {type(depiction).__name__}")
    sc = None if scores is None else np.atleast_2d(np.asarray(scores, dtype=float))
    k = max(len(r) for r in rows)
    ncols = k + (truth is not None)
    fig = new_figure((cell_size * ncols, cell_size * len(rows) + (0.4 if title else 0.0)))
    axes = np.atleast_2d(fig.subplots(len(rows), ncols, squeeze=False))
    for i, preds in enumerate(rows):
        cells: list = []  # (x label, output, frame colour or None: by comparison with the truth)
        true_obj = truth[i] if truth is not None else None
        if truth is not None:
            cells.append(("truth", true_obj, "black"))
        for j, p in enumerate(preds):
            label = f"#{j + 1}" + (f"  {sc[i, j]:.4g}" if sc is not None and j < sc.shape[1] else "")
            cells.append((label, p, None))
        for c, ax in enumerate(axes[i]):
            ax.set_xticks([])
            ax.set_yticks([])
            if c >= len(cells):
                ax.set_axis_off()
                continue
            label, obj, colour = cells[c]
            dep = forced if forced is not None or obj is None else _depiction_for(obj, deps)
            if obj is not None and dep is None:
                raise ValueError(f"no depiction can draw the output {obj!r} ({type(obj).__name__}) of query {i}; "
                                 f"depictions tried: {', '.join(n for n, _ in deps)}")
            if dep is not None and obj is not None:
                dep.draw(obj, ax, **draw_kwargs)
            if colour is None:
                colour = "tab:green" if truth is not None and _same(dep, obj, true_obj) else "0.6"
            for side in ax.spines.values():
                side.set_edgecolor(colour)
                side.set_linewidth(2 if colour != "0.6" else 1)
            ax.set_xlabel(label, fontsize=8)
    if title:
        fig.suptitle(title)
    return _finish(fig, path)
