"""Molecule <-> labelled networkx graph.

A molecule becomes an undirected ``networkx.Graph`` over its heavy atoms:

* node attribute ``label``: the element symbol, with the formal charge appended when it
  is not zero (``"C"``, ``"N+"``, ``"O-"``); also ``symbol``, ``charge``, ``aromatic``
  (bool, RDKit's aromaticity perception) and ``num_hs`` (total hydrogen count);
* edge attribute ``label``: the bond order as an int (1, 2, 3) after kekulisation, or
  ``1.5`` for aromatic bonds when ``kekulize=False``;
* edge attribute ``bond_order``: the bond order with aromatic bonds as ``1.5`` whatever
  ``kekulize`` is.  Unlike a Kekule structure (which RDKit picks from the atom order, so
  two SMILES of one molecule can give different ones), it does not depend on how the
  molecule was written: the chemistry-aware WL kernels of sprokr-graphs label edges with it.
* a quadruple bond (``$``) has order 4; a dative bond (``->``, e.g. of a metal complex:
  RDKit writes cisplatin ``Cl[Pt](Cl)([NH3])[NH3]`` with two) is a single bond for both
  attributes, with the edge attribute ``dative`` = the donor node, from which
  :func:`graph_to_mol` restores it.

Hydrogens are implicit, so a graph built by another route (e.g. an FGW barycenter) can
be turned back into a molecule: RDKit adds the hydrogens valence requires, and
:func:`graph_to_mol` returns ``None`` (or raises) when the graph cannot be sanitised.

What the labels leave out -- stereochemistry (``@``, ``/``, ``\\``), isotopes (``[13C]``),
radicals (``[CH3]``) -- is kept in the graph attribute ``smiles``: the canonical SMILES of
the molecule the graph was made from.  :func:`graph_to_mol` and :func:`graph_to_smiles`
read the labels only (the molecule without them: what the graph kernels compare);
:func:`molecule_from_graph` -- and with it :func:`sprokr_chem.canonical_smiles`, the
molecule kernels and the command line's ``molecule`` column -- returns the molecule of
``smiles`` when the graph still describes it (its labels are those of that molecule: a
graph edited since, e.g. by a decoder, falls back to its labels).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import networkx as nx
from rdkit import Chem, RDLogger

from .io import MoleculeReadError, to_mol

if TYPE_CHECKING:  # imported for the annotations only
    from rdkit.Chem import Mol

__all__ = ["mol_to_graph", "graph_to_mol", "smiles_to_graph", "graph_to_smiles",
           "GraphConversionError", "atom_label", "bond_order", "molecule_from_graph"]

_BOND_ORDER = {
    Chem.BondType.SINGLE: 1,
    Chem.BondType.DOUBLE: 2,
    Chem.BondType.TRIPLE: 3,
    Chem.BondType.QUADRUPLE: 4,
    Chem.BondType.AROMATIC: 1.5,
    Chem.BondType.DATIVE: 1,  # with the edge attribute "dative" (the donor) in the graphs
}
_ORDER_BOND = {1: Chem.BondType.SINGLE, 2: Chem.BondType.DOUBLE, 3: Chem.BondType.TRIPLE,
               4: Chem.BondType.QUADRUPLE, 1.5: Chem.BondType.AROMATIC}
_LABEL_RE = re.compile(r"^([A-Z][a-z]?|\*)(\d*[+-]+|[+-]\d*)?$")  # "*": a dummy atom (attachment point)


class GraphConversionError(ValueError):
    """A graph does not describe a valid molecule."""


def atom_label(symbol: str, charge: int) -> str:
    """The ``label`` node attribute of :func:`mol_to_graph`: element + formal charge ("N+", "O-")."""
    return _atom_label(symbol, charge)


def bond_order(bond: Any) -> float | None:
    """The ``bond_order`` edge attribute of :func:`mol_to_graph` (1, 2, 3, 4, aromatic 1.5,
    dative 1), or None for a bond type the graphs do not represent."""
    return _BOND_ORDER.get(bond.GetBondType())


def _atom_label(symbol, charge):
    if charge == 0:
        return symbol
    sign = "+" if charge > 0 else "-"
    return symbol + (sign if abs(charge) == 1 else f"{sign}{abs(charge)}")


def _parse_label(label):
    m = _LABEL_RE.match(str(label))
    if not m:
        raise GraphConversionError(f"node label {label!r} is not an element symbol (e.g. 'C', 'N+')")
    symbol, ch = m.group(1), m.group(2) or ""
    if not ch:
        return symbol, 0
    sign = 1 if "+" in ch else -1
    digits = ch.replace("+", "").replace("-", "")
    return symbol, sign * (int(digits) if digits else 1)


def mol_to_graph(mol: str | Mol, kekulize: bool = True) -> nx.Graph:
    """Labelled graph of a molecule (RDKit ``Mol`` or SMILES string); see the module doc.

    An RDKit molecule is read as its SMILES would be: without its explicit hydrogens
    (``Chem.AddHs``, an SDF read with ``removeHs=False``; isotopic ones stay) and with its
    aromaticity perceived (a molecule kekulised without aromatic flags), the heavy atoms
    keeping their order -- its graph is that of its SMILES (the hydrogens were nodes, and
    the Kekule bonds other labels: WL similarity 0.05 / 0.02 with phenol's own graph).

    Parameters
    ----------
    mol : str or rdkit.Chem.Mol
        The molecule, or its SMILES string.
    kekulize : bool, default True
        Edge ``label``: Kekule bond orders (1, 2, 3); ``False``: aromatic bonds as ``1.5``.
    """
    if isinstance(mol, Chem.Mol) and mol.GetNumAtoms():
        RDLogger.DisableLog("rdApp.*")
        try:
            mol = Chem.RemoveHs(mol)  # (sanitises the copy: aromaticity perceived)
        except Exception as exc:  # noqa: BLE001 - RDKit raises several exception types
            raise GraphConversionError(f"the molecule does not sanitise: {exc}") from None
        finally:
            RDLogger.EnableLog("rdApp.*")
    mol = to_mol(mol)
    smiles = Chem.MolToSmiles(mol)  # stereo, isotopes, radicals: what the labels leave out
    # aromaticity and hydrogen counts are read before kekulisation clears the flags
    aromatic_order = {b.GetIdx(): _BOND_ORDER.get(b.GetBondType()) for b in mol.GetBonds()}
    atoms = [(a.GetSymbol(), a.GetFormalCharge(), a.GetIsAromatic(), a.GetTotalNumHs())
             for a in mol.GetAtoms()]
    if kekulize:
        mol = Chem.Mol(mol)
        Chem.Kekulize(mol, clearAromaticFlags=True)
    G = nx.Graph()
    for i, (symbol, charge, aromatic, num_hs) in enumerate(atoms):
        G.add_node(i, label=_atom_label(symbol, charge), symbol=symbol, charge=charge,
                   aromatic=bool(aromatic), num_hs=int(num_hs))
    for b in mol.GetBonds():
        order = _BOND_ORDER.get(b.GetBondType())
        if order is None or aromatic_order[b.GetIdx()] is None:
            raise GraphConversionError(f"unsupported bond type {b.GetBondType()} in {Chem.MolToSmiles(mol)}")
        G.add_edge(b.GetBeginAtomIdx(), b.GetEndAtomIdx(), label=order,
                   bond_order=aromatic_order[b.GetIdx()])
        if b.GetBondType() == Chem.BondType.DATIVE:
            G.edges[b.GetBeginAtomIdx(), b.GetEndAtomIdx()]["dative"] = b.GetBeginAtomIdx()
    G.graph["smiles"] = smiles
    return G


def graph_to_mol(G: nx.Graph, node_label: str = "label", edge_label: str = "label", errors: str = "none") -> Mol | None:
    """Sanitised RDKit molecule from a labelled graph.

    Parameters
    ----------
    G : networkx.Graph with node labels like ``"C"``/``"N+"`` and bond-order edge labels
    node_label : str, default "label"
        Node attribute holding the element symbol and charge.
    edge_label : str, default "label"
        Edge attribute holding the bond order (1 when missing).
    errors : {"none", "raise"}
        What to do when the graph is not a valid molecule: return ``None`` or raise
        :class:`GraphConversionError`.
    """
    if errors not in ("none", "raise"):
        raise ValueError(f"errors must be 'none' or 'raise', got {errors!r}")
    try:
        if G.number_of_nodes() == 0:
            raise GraphConversionError("the graph has no nodes")
        atoms: list[tuple[str, int]] = []
        pos: dict[Any, int] = {}
        bonds: list[tuple[int, int, Any]] = []
        for v, data in G.nodes(data=True):
            if node_label not in data:
                raise GraphConversionError(f"node {v!r} has no {node_label!r} attribute")
            pos[v] = len(atoms)
            atoms.append(_parse_label(data[node_label]))
        for u, v, data in G.edges(data=True):
            order = data.get(edge_label, 1)
            try:
                bt = _ORDER_BOND[float(order) if float(order) == 1.5 else int(round(float(order)))]
            except (KeyError, ValueError, TypeError):
                raise GraphConversionError(f"edge ({u!r}, {v!r}) has bond order {order!r}") from None
            donor = data.get("dative")
            if donor is not None:  # a dative bond, from the donor (mol_to_graph)
                if bt != Chem.BondType.SINGLE or donor not in (u, v):
                    raise GraphConversionError(f"edge ({u!r}, {v!r}): a dative bond (from {donor!r}) must be a "
                                               f"single bond from one of its nodes, got order {order!r}")
                u, v, bt = donor, (v if donor == u else u), Chem.BondType.DATIVE
            bonds.append((pos[u], pos[v], bt))
        return _assemble(atoms, bonds)
    except GraphConversionError:
        if errors == "raise":
            raise
        return None


def _assemble(atoms, bonds):
    """The sanitised molecule of ``atoms`` [(symbol, charge)] and ``bonds`` [(i, j, BondType)]
    (a dative bond from i), hydrogens implicit; :class:`GraphConversionError` if it is none."""
    rw = Chem.RWMol()
    for symbol, charge in atoms:
        atom = Chem.Atom(symbol)
        atom.SetFormalCharge(charge)
        rw.AddAtom(atom)
    for i, j, bt in bonds:
        rw.AddBond(i, j, bt)
        if bt == Chem.BondType.AROMATIC:
            rw.GetAtomWithIdx(i).SetIsAromatic(True)
            rw.GetAtomWithIdx(j).SetIsAromatic(True)
    mol = rw.GetMol()
    RDLogger.DisableLog("rdApp.*")
    try:
        Chem.SanitizeMol(mol)
    except Exception as exc:  # RDKit raises several exception types
        raise GraphConversionError(f"the graph does not sanitise: {exc}") from None
    finally:
        RDLogger.EnableLog("rdApp.*")
    return mol


def _labels_smiles(mol):
    """``graph_to_smiles(mol_to_graph(mol))`` without networkx: the SMILES of what the graph
    labels keep of ``mol`` (None when they do not make a molecule)."""
    mol = Chem.Mol(mol)
    try:
        Chem.Kekulize(mol, clearAromaticFlags=True)
    except Exception:  # noqa: BLE001 - RDKit raises several exception types
        return None
    atoms = [(a.GetSymbol(), a.GetFormalCharge()) for a in mol.GetAtoms()]
    bonds = []
    for b in mol.GetBonds():
        order = _BOND_ORDER.get(b.GetBondType())
        if order is None:
            return None
        bt = Chem.BondType.DATIVE if b.GetBondType() == Chem.BondType.DATIVE else _ORDER_BOND[order]
        bonds.append((b.GetBeginAtomIdx(), b.GetEndAtomIdx(), bt))
    try:
        return Chem.MolToSmiles(_assemble(atoms, bonds))
    except GraphConversionError:
        return None


def smiles_to_graph(smiles: str, kekulize: bool = True) -> nx.Graph:
    """Labelled graph of a SMILES string (:class:`sprokr_chem.MoleculeReadError` if invalid).

    Parameters
    ----------
    smiles : str
        The SMILES string.
    kekulize : bool, default True
        Edge ``label``: Kekule bond orders (1, 2, 3); ``False``: aromatic bonds as ``1.5``.
    """
    # the string itself: read from SMILES, the molecule has no explicit hydrogens and its
    # aromaticity perceived (mol_to_graph's clean-up of an RDKit molecule is not needed)
    return mol_to_graph(smiles if isinstance(smiles, str) else to_mol(smiles), kekulize=kekulize)


def graph_to_smiles(G: nx.Graph, errors: str = "none", **kw: Any) -> str | None:
    """Canonical SMILES of a labelled graph, or ``None`` when it does not sanitise.

    Parameters
    ----------
    G : networkx.Graph
        A labelled molecule graph (see :func:`graph_to_mol`).
    errors : {"none", "raise"}, default "none"
        What to do when the graph is not a valid molecule: return ``None`` or raise
        :class:`GraphConversionError`.
    **kw
        Passed to :func:`graph_to_mol` (``node_label``, ``edge_label``).
    """
    mol = graph_to_mol(G, errors=errors, **kw)
    return None if mol is None else Chem.MolToSmiles(mol)


def molecule_from_graph(G: nx.Graph, index: int = 0) -> Mol:
    """The molecule a labelled graph describes; a graph that is not one raises
    :class:`~sprokr_chem.io.MoleculeReadError` naming ``index`` (its position in the user's
    collection).

    The molecule of the graph attribute ``smiles`` (set by :func:`mol_to_graph`: with its
    stereochemistry, isotopes and radicals) when the graph's labels are that molecule's,
    else the molecule of the labels (:func:`graph_to_mol`).

    Parameters
    ----------
    G : networkx.Graph
        A labelled molecule graph.
    index : int, default 0
        Its position, named by the error.
    """
    try:
        mol = graph_to_mol(G, errors="raise")
    except GraphConversionError as exc:
        raise MoleculeReadError(index, f"<graph with {G.number_of_nodes()} nodes>", str(exc)) from None
    smiles = G.graph.get("smiles") if isinstance(getattr(G, "graph", None), dict) else None
    if isinstance(smiles, str) and smiles:
        RDLogger.DisableLog("rdApp.*")
        try:
            full = Chem.MolFromSmiles(smiles)
        finally:
            RDLogger.EnableLog("rdApp.*")
        if full is not None and _labels_smiles(full) == Chem.MolToSmiles(mol):
            return full
    return mol
