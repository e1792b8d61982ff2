"""Deprecated alias of the sketch-size part of :mod:`sprokr.model_selection`.

Every name lives in :mod:`sprokr.model_selection` now (``perfect_h_curve``,
``plateau_index``, ``approximate_leverage_scores``, ``surrogate_error``, ``select_m_x``,
``grow_until_plateau``) and the figures in :mod:`sprokr.plotting`; importing this module
emits a ``FutureWarning``.  ``plot_curve`` / ``plot_leverage_scores`` keep their former
signature (``path`` as third positional argument) and draw through :mod:`sprokr.plotting`.
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from .model_selection import (
    approximate_leverage_scores,
    grow_until_plateau,
    perfect_h_curve,
    plateau_index,
    select_m_x,
    surrogate_error,
)

if TYPE_CHECKING:  # imported for the annotations only
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike
    from .types import PathLike

__all__ = [
    "perfect_h_curve",
    "plateau_index",
    "approximate_leverage_scores",
    "plot_leverage_scores",
    "plot_curve",
    "surrogate_error",
    "select_m_x",
    "grow_until_plateau",
]

warnings.warn("sprokr.selection is deprecated and will be removed: import these names from "
              "sprokr.model_selection (figures: sprokr.plotting)", FutureWarning, stacklevel=2)


def plot_curve(x: ArrayLike, y: ArrayLike, path: PathLike | None = None, xlabel: str = "", ylabel: str = "",
               title: str | None = None, mark: float | None = None, logx: bool = False) -> Figure:
    """Deprecated: :func:`sprokr.plotting.plot_curve` (``path`` is a keyword there)."""
    from .plotting import plot_curve as plot

    return plot(x, y, xlabel=xlabel, ylabel=ylabel, title=title, mark=mark, logx=logx, path=path)


def plot_leverage_scores(scores: ArrayLike, path: PathLike | None = None, top: int | None = 400,
                         title: str = "approximate leverage scores") -> Figure:
    """Deprecated: :func:`sprokr.plotting.plot_leverage_scores` (``path`` is a keyword there)."""
    from .plotting import plot_leverage_scores as plot

    return plot(scores, top=top, title=title, path=path)
