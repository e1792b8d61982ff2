"""Molecules in figures: the ``molecule`` depiction (hook ``sprokr_depictions``) and
:func:`plot_molecules`.

:func:`sprokr.plotting.plot_outputs` draws every output that is a SMILES string, an RDKit
molecule or a molecule graph (:func:`sprokr_chem.mol_to_graph`) with RDKit through
:class:`MoleculeDepiction`; :func:`plot_molecules` is that figure for molecules only.
Needs matplotlib (``pip install "sprokr[plot]"``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:  # imported for the annotations only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from rdkit.Chem import Mol
    from sprokr.types import PathLike

__all__ = ["MoleculeDepiction", "plot_molecules"]


def _to_mol(obj: Any) -> Optional[Mol]:
    """An RDKit molecule from a SMILES string, an RDKit ``Mol`` or a molecule graph (None
    for a graph that is not a valid molecule); ``ValueError`` for an invalid SMILES."""
    from rdkit import Chem, RDLogger

    if isinstance(obj, Chem.Mol):
        return obj
    if isinstance(obj, str):
        RDLogger.DisableLog("rdApp.*")
        try:
            mol = Chem.MolFromSmiles(obj)
        finally:
            RDLogger.EnableLog("rdApp.*")
        if mol is None:
            raise ValueError(f"invalid SMILES {obj!r}")
        return mol
    if hasattr(obj, "nodes") and hasattr(obj, "edges"):
        from .graphs import graph_to_mol

        return graph_to_mol(obj)
    raise ValueError(f"cannot draw an object of type {type(obj).__name__} as a molecule (SMILES, RDKit Mol or "
                     f"molecule graph)")


class MoleculeDepiction:
    """RDKit depictions of SMILES strings, RDKit molecules and molecule graphs.

    Registered as ``molecule`` by sprokr-chem; :func:`sprokr.plotting.plot_outputs` uses it
    for every output it can draw.
    """

    def can_draw(self, obj: Any) -> bool:
        """True for an RDKit ``Mol``, a valid SMILES string and a graph that is a valid molecule."""
        try:
            return _to_mol(obj) is not None
        except (ValueError, TypeError, KeyError):
            return False

    def draw(self, obj: Any, ax: Axes, *, image_size: int = 220, **kwargs: Any) -> None:
        """Draw the molecule as an image of ``image_size`` pixels into ``ax`` (nothing for a
        graph that is not a valid molecule; ``ValueError`` for an invalid SMILES)."""
        from rdkit.Chem import Draw

        mol = _to_mol(obj)
        if mol is not None:
            ax.imshow(np.asarray(Draw.MolToImage(mol, size=(image_size, image_size))))

    def same(self, a: Any, b: Any) -> bool:
        """Whether two molecules are the same (equal canonical SMILES)."""
        from rdkit import Chem

        ma, mb = _to_mol(a), _to_mol(b)
        return ma is not None and mb is not None and bool(Chem.MolToSmiles(ma) == Chem.MolToSmiles(mb))


def plot_molecules(predicted: Sequence[Any], truth: Optional[Sequence[Any]] = None, *,
                   scores: Optional[ArrayLike] = None, max_rows: int = 8, image_size: int = 220,
                   title: Optional[str] = None, path: Optional[PathLike] = None) -> Figure:
    """Predicted molecules drawn next to the true ones (RDKit depictions).

    One row per query: the true molecule (when ``truth`` is given), then its predictions
    best first.  Predictions identical to the truth (same canonical SMILES) are framed in
    green, the others in grey.  :func:`sprokr.plotting.plot_outputs` with
    :class:`MoleculeDepiction` for every cell.

    Parameters
    ----------
    predicted : sequence
        One entry per query: a molecule (top-1) or a sequence of molecules (list, tuple or
        array; top-k, best first).  A molecule is a SMILES string, an RDKit ``Mol`` or a
        molecular graph (converted by :func:`sprokr_chem.graph_to_mol`).
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
    ValueError
        An invalid SMILES (named), an empty ``predicted`` or a too short ``truth``.
    """
    from sprokr.plotting import plot_outputs

    rows = [list(p) if isinstance(p, (list, tuple, np.ndarray)) else [p] for p in predicted]
    return plot_outputs(rows, truth, scores=scores, depiction=MoleculeDepiction(), max_rows=max_rows,
                        title=title, path=path, image_size=image_size)
