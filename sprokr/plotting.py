"""Figures: sketch-size curves, accuracy vs fit time, model selection, leverage scores, molecules.

Every function returns a :class:`matplotlib.figure.Figure` built directly (no
``matplotlib.pyplot`` state): the global backend is never changed and no figure is
registered with pyplot, so the functions are safe in scripts, servers and notebooks alike.
A figure is written to disk only when ``path`` is given (the format follows the file
extension: ``.png``, ``.pdf``, ``.svg`` ...).  In a notebook, a returned ``Figure`` displays
itself when it is the value of the cell.

Needs matplotlib (``pip install "sprokr[plot]"``); :func:`plot_molecules` also needs RDKit
(``pip install "sprokr[chem]"``).
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
    "plot_molecules",
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
    best = max(grid, key=lambda g: g["best_score"])
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


def _to_mol(obj: Any) -> Any:
    """An RDKit molecule from a SMILES string, an RDKit ``Mol`` or a molecular graph."""
    from rdkit import Chem

    if obj is None:
        return None
    if isinstance(obj, Chem.Mol):
        return obj
    if isinstance(obj, str):
        mol = Chem.MolFromSmiles(obj)
        if mol is None:
            raise ValueError(f"invalid SMILES {obj!r}")
        return mol
    try:
        from sprokr_chem import graph_to_mol
    except ImportError as exc:
        raise ImportError("drawing molecular graphs needs the sprokr-chem plugin: "
                          'pip install "sprokr[chem]"') from exc
    return graph_to_mol(obj)


def _same(a: Any, b: Any) -> bool:
    from rdkit import Chem

    if a is None or b is None:
        return False
    return bool(Chem.MolToSmiles(a) == Chem.MolToSmiles(b))


def plot_molecules(predicted: Sequence[Any], truth: Optional[Sequence[Any]] = None, *,
                   scores: Optional[ArrayLike] = None, max_rows: int = 8, image_size: int = 220,
                   title: Optional[str] = None, path: Optional[PathLike] = None) -> "Figure":
    """Predicted molecules drawn next to the true ones (RDKit depictions).

    One row per query: the true molecule (when ``truth`` is given), then its predictions
    best first.  Predictions identical to the truth (same canonical SMILES) are framed in
    green, the others in grey.

    Parameters
    ----------
    predicted : sequence
        One entry per query: a molecule (top-1) or a sequence of molecules (top-k, best
        first).  A molecule is a SMILES string, an RDKit ``Mol`` or a molecular graph
        (converted by ``sprokr_chem.graph_to_mol``).
    truth : sequence, optional
        The true molecule of each query.
    scores : array-like of shape (n_queries, k), optional
        Scores shown under the predictions (e.g. ``Decoded.scores``).
    max_rows : int
        At most this many queries are drawn (the first ones).
    image_size : int
        Side of each depiction in pixels.
    title : str, optional
    path : str or path-like, optional
        Save the figure there.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ImportError
        When RDKit is not installed (``pip install "sprokr[chem]"``).
    """
    try:
        from rdkit.Chem import Draw
    except ImportError as exc:
        raise ImportError('plot_molecules needs RDKit: pip install "sprokr[chem]" (or pip install rdkit)') from exc
    rows = [list(p) if isinstance(p, (list, tuple, np.ndarray)) else [p] for p in predicted][: int(max_rows)]
    if not rows:
        raise ValueError("predicted is empty")
    if truth is not None and len(truth) < len(rows):
        raise ValueError(f"truth has {len(truth)} entries for {len(rows)} queries")
    sc = None if scores is None else np.atleast_2d(np.asarray(scores, dtype=float))
    k = max(len(r) for r in rows)
    ncols = k + (truth is not None)
    fig = new_figure((1.9 * ncols, 1.9 * len(rows) + (0.4 if title else 0.0)))
    axes = np.atleast_2d(fig.subplots(len(rows), ncols, squeeze=False))
    for i, preds in enumerate(rows):
        true_mol = _to_mol(truth[i]) if truth is not None else None
        cells = ([("truth", true_mol, "black")] if truth is not None else [])
        for j, p in enumerate(preds):
            mol = _to_mol(p)
            label = f"#{j + 1}" + (f"  {sc[i, j]:.4g}" if sc is not None and j < sc.shape[1] else "")
            cells.append((label, mol, "tab:green" if _same(mol, true_mol) else "0.6"))
        for c, ax in enumerate(axes[i]):
            ax.set_xticks([])
            ax.set_yticks([])
            if c >= len(cells):
                ax.set_axis_off()
                continue
            label, mol, colour = cells[c]
            if mol is not None:
                ax.imshow(np.asarray(Draw.MolToImage(mol, size=(image_size, image_size))))
            for side in ax.spines.values():
                side.set_edgecolor(colour)
                side.set_linewidth(2 if colour != "0.6" else 1)
            ax.set_xlabel(label, fontsize=8)
    if title:
        fig.suptitle(title)
    return _finish(fig, path)
