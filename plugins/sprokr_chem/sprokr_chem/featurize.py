"""Molecule features at scale: one parse per molecule, several feature blocks, cached on disk.

:class:`MoleculeFeaturizer` turns a chunk of SMILES strings into the feature blocks the
molecule kernels use, parsing each molecule once:

``"morgan"``
    Morgan (ECFP-like) **count** fingerprints, folded to ``n_bits`` columns: CSR, float64
    (the precision of the output kernels, so that preparing them makes no copy).  The
    Tanimoto kernel of these rows is :class:`~sprokr_chem.MorganCountTanimotoKernel`
    (``morgan_count_tanimoto``, which takes the CSR rows as already computed fingerprints).
``"spectrum"``
    Character n-gram counts (``spectrum_min_n .. spectrum_n``) of the RDKit canonical
    SMILES, hashed into ``spectrum_bits`` columns (scikit-learn's stateless
    ``HashingVectorizer``; default 2^16: MOSES SMILES hold ~7,000 distinct 1- to 4-grams,
    about 5 % of which share a column with another): CSR, float32.  The cosine kernel of these rows is the
    normalised spectrum kernel (:class:`~sprokr_chem.SmilesSpectrumKernel`, whose
    ``prepare`` takes them too).
``"descriptors"``
    Cheap RDKit descriptors, :data:`DESCRIPTOR_NAMES` (dense float64, unscaled):
    exact mass (Da), element counts (with hydrogens) of :data:`ELEMENTS` and of any other
    element, Crippen logP, TPSA (A^2), Lipinski H-bond donors (NH + OH) and acceptors
    (N + O), rotatable bonds (RDKit's non-strict definition), ring and aromatic ring
    counts, fraction of sp3 carbons, net formal charge.  Each costs microseconds (the
    strict rotatable-bond pattern and the SMARTS-based acceptor count cost 30-100 times
    more and are not used).
``"wl"``
    Chemistry-aware Weisfeiler-Lehman subtree counts (``sprokr_graphs``, atom labels
    element + charge, aromaticity, H count; bond orders as edge labels; ``wl_iter``
    rounds), the 64-bit label ids folded to ``wl_bits`` columns: CSR, float64.  The cosine
    kernel of these rows is the normalised WL kernel (up to the folding): the features of
    :class:`sprokr_graphs.WLKernel` on :func:`sprokr_chem.mol_to_graph` graphs, with the
    graphs' nodes and edges listed straight from RDKit (no networkx graphs).
``"canonical"``
    1 where the input SMILES already is RDKit's canonical SMILES, else 0 (uint8, one
    column; with ``"spectrum"``, which computes it anyway).

An invalid SMILES gets an all-zero row in every block and is reported by row
(:attr:`sprokr.persistence.FeatureTable.errors`), never dropped.  Use it through
:func:`featurize_molecules`, which caches the blocks on disk (:class:`sprokr.persistence.
FeatureCache`, keyed by the input's checksum and these parameters) and runs the chunks in
worker processes (RDKit holds the GIL) or on Dask workers.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import scipy.sparse as sp

from sprokr.persistence import FeatureCache, FeatureChunk, FeatureTable
from sprokr.utils import check_integer

if TYPE_CHECKING:  # imported for the annotations only
    from sprokr.numerics import Executor
    from sprokr.types import PathLike

__all__ = ["BLOCKS", "DESCRIPTOR_NAMES", "ELEMENTS", "MoleculeFeaturizer", "featurize_molecules"]

#: feature blocks :class:`MoleculeFeaturizer` can compute
BLOCKS = ("morgan", "spectrum", "descriptors", "wl", "canonical")
#: elements counted one by one (hydrogens included); the rest are summed in ``n_other``
ELEMENTS = ("C", "H", "N", "O", "F", "P", "S", "Cl", "Br", "I")
#: columns of the ``"descriptors"`` block, in order
DESCRIPTOR_NAMES = (("exact_mass",) + tuple(f"n_{e}" for e in ELEMENTS) + ("n_other",)
                    + ("logp", "tpsa", "hbd", "hba", "rotatable_bonds", "rings", "aromatic_rings",
                       "fraction_sp3", "formal_charge"))
_FORMULA = re.compile(r"([A-Z][a-z]?)(\d*)")
#: bump when a block's definition changes (it is part of the cache key)
FEATURE_VERSION = 3


class MoleculeFeaturizer:
    """Feature blocks of SMILES strings (see the module documentation).

    Calling it on a list of SMILES returns a :class:`sprokr.persistence.FeatureChunk`.

    Parameters
    ----------
    blocks : sequence of str, default ("morgan",)
        Any of :data:`BLOCKS`.
    radius : int, default 2
        Morgan fingerprint radius.
    n_bits : int, default 2048
        Morgan fingerprint folded width.
    spectrum_n : int, default 4
        Longest n-gram of ``"spectrum"``.
    spectrum_min_n : int, default 1
        Shortest n-gram of ``"spectrum"``.
    spectrum_bits : int, default 2**16
        Hashed width of ``"spectrum"``.
    wl_iter : int, default 3
        WL rounds of ``"wl"``.
    wl_bits : int, default 2**20
        Folded width of ``"wl"``.
    """

    name = "molecules"

    def __init__(self, blocks: Sequence[str] = ("morgan",), radius: int = 2, n_bits: int = 2048,
                 spectrum_n: int = 4, spectrum_min_n: int = 1, spectrum_bits: int = 2**16,
                 wl_iter: int = 3, wl_bits: int = 2**20) -> None:
        self.blocks = tuple(blocks)
        self.radius = radius
        self.n_bits = n_bits
        self.spectrum_n = spectrum_n
        self.spectrum_min_n = spectrum_min_n
        self.spectrum_bits = spectrum_bits
        self.wl_iter = wl_iter
        self.wl_bits = wl_bits
        self._check()

    def _check(self):
        if isinstance(self.blocks, str) or not self.blocks:
            raise ValueError(f"blocks must be a non-empty sequence of {BLOCKS}, got {self.blocks!r}")
        bad = [b for b in self.blocks if b not in BLOCKS]
        if bad or len(set(self.blocks)) != len(self.blocks):
            raise ValueError(f"blocks must be distinct names among {BLOCKS}, got {list(self.blocks)}")
        for name in ("radius", "wl_iter"):
            check_integer(getattr(self, name), name, 0)
        for name in ("n_bits", "spectrum_n", "spectrum_min_n", "spectrum_bits", "wl_bits"):
            check_integer(getattr(self, name), name)
        if self.spectrum_min_n > self.spectrum_n:
            raise ValueError(f"need spectrum_min_n <= spectrum_n, got {self.spectrum_min_n} > {self.spectrum_n}")
        if "canonical" in self.blocks and "spectrum" not in self.blocks:
            raise ValueError("the 'canonical' block comes with the 'spectrum' block (which computes it)")

    def get_params(self) -> dict[str, Any]:
        return {"blocks": list(self.blocks), "radius": int(self.radius), "n_bits": int(self.n_bits),
                "spectrum_n": int(self.spectrum_n), "spectrum_min_n": int(self.spectrum_min_n),
                "spectrum_bits": int(self.spectrum_bits), "wl_iter": int(self.wl_iter), "wl_bits": int(self.wl_bits)}

    def feature_params(self) -> dict[str, Any]:
        """What determines the features: the parameters (only those of the blocks asked
        for), the feature version and the RDKit version (the cache key)."""
        from rdkit import __version__ as rdkit_version

        p = self.get_params()
        keep = {"blocks"}
        if "morgan" in self.blocks:
            keep |= {"radius", "n_bits"}
        if "spectrum" in self.blocks:
            keep |= {"spectrum_n", "spectrum_min_n", "spectrum_bits"}
        if "wl" in self.blocks:
            keep |= {"wl_iter", "wl_bits"}
        out = {k: v for k, v in p.items() if k in keep}
        out.update({"feature_version": FEATURE_VERSION, "rdkit": rdkit_version})
        return out

    def __repr__(self):
        return "MoleculeFeaturizer(" + ", ".join(f"{k}={v!r}" for k, v in self.get_params().items()) + ")"

    # ------------------------------------------------------------------ one chunk
    def __call__(self, smiles: Sequence[str]) -> FeatureChunk:
        """Feature blocks of a chunk of SMILES strings (one row each, zeros if invalid)."""
        from rdkit import Chem, RDLogger

        from .io import blank_inside

        self._check()
        if isinstance(smiles, str):
            raise TypeError("expected a sequence of SMILES strings, not one string")
        smiles = list(smiles)
        n = len(smiles)
        mols: list[Any] = [None] * n
        errors = []
        RDLogger.DisableLog("rdApp.*")
        try:
            for i, s in enumerate(smiles):
                if not isinstance(s, str) or not s.strip():
                    errors.append((i, "empty SMILES" if isinstance(s, str) else f"not a string ({type(s).__name__})"))
                    continue
                if blank_inside(s):  # RDKit would read up to the blank (mol_from_smiles)
                    errors.append((i, "whitespace inside the SMILES (RDKit would take the rest for a name)"))
                    continue
                m = Chem.MolFromSmiles(s)
                if m is None:
                    errors.append((i, "RDKit could not parse or sanitise it"))
                elif m.GetNumAtoms() == 0:
                    errors.append((i, "molecule has no atoms"))
                else:
                    mols[i] = m
        finally:
            RDLogger.EnableLog("rdApp.*")
        out: dict[str, Any] = {}
        if "morgan" in self.blocks:
            out["morgan"] = self._morgan(mols)
        if "spectrum" in self.blocks:
            out["spectrum"], canonical = self._spectrum(mols, smiles)
            if "canonical" in self.blocks:
                out["canonical"] = canonical
        if "descriptors" in self.blocks:
            out["descriptors"] = self._descriptors(mols, errors)
        if "wl" in self.blocks:
            out["wl"] = self._wl(mols, errors)
        bad = {i for i, _ in errors}
        if bad:  # invalid rows are zeros in every block (a block may have failed alone)
            rows = np.array(sorted(bad))
            for name, a in out.items():
                if sp.issparse(a):
                    keep = np.ones(n, dtype=float)
                    keep[rows] = 0
                    out[name] = sp.csr_matrix(sp.diags(keep.astype(a.dtype)) @ a)
                    out[name].eliminate_zeros()
                else:
                    a[rows] = 0
        seen: set[int] = set()
        errors = [(i, why) for i, why in errors if not (i in seen or seen.add(i))]  # type: ignore[func-returns-value]
        return FeatureChunk(out, errors)

    def _morgan(self, mols):
        from rdkit.Chem import rdFingerprintGenerator

        gen = rdFingerprintGenerator.GetMorganGenerator(radius=int(self.radius), fpSize=int(self.n_bits))
        indptr, ind, val = [0], [], []
        for m in mols:
            if m is not None:
                fp = gen.GetCountFingerprint(m).GetNonzeroElements()
                ind.append(np.fromiter(fp.keys(), dtype=np.int32, count=len(fp)))
                val.append(np.fromiter(fp.values(), dtype=np.float64, count=len(fp)))
                indptr.append(indptr[-1] + len(fp))
            else:
                indptr.append(indptr[-1])
        X = sp.csr_matrix((np.concatenate(val) if val else np.zeros(0, np.float64),
                           np.concatenate(ind) if ind else np.zeros(0, np.int32), np.asarray(indptr)),
                          shape=(len(mols), int(self.n_bits)))
        X.sort_indices()
        return X

    def _spectrum(self, mols, smiles):
        from rdkit import Chem
        from sklearn.feature_extraction.text import HashingVectorizer

        texts = [Chem.MolToSmiles(m) if m is not None else "" for m in mols]
        canonical = np.array([[m is not None and t == s] for m, t, s in zip(mols, texts, smiles)], dtype=np.uint8)
        hv = HashingVectorizer(analyzer="char", ngram_range=(int(self.spectrum_min_n), int(self.spectrum_n)),
                               lowercase=False, n_features=int(self.spectrum_bits), alternate_sign=False, norm=None,
                               dtype=np.float32)
        X = sp.csr_matrix(hv.transform(texts), dtype=np.float32)
        X.sort_indices()
        return X, canonical

    def _descriptors(self, mols, errors):
        from rdkit import Chem
        from rdkit.Chem import rdMolDescriptors as D

        col = {e: 1 + k for k, e in enumerate(ELEMENTS)}
        other = 1 + len(ELEMENTS)
        out = np.zeros((len(mols), len(DESCRIPTOR_NAMES)), dtype=np.float64)
        nonstrict = D.NumRotatableBondsOptions.NonStrict
        for i, m in enumerate(mols):
            if m is None:
                continue
            row = out[i]
            row[0] = D.CalcExactMolWt(m)
            # element counts from the Hill formula (hydrogens included): 20x cheaper than
            # a Python loop over the atoms
            for sym, cnt in _FORMULA.findall(D.CalcMolFormula(m)):
                row[col.get(sym, other)] += int(cnt) if cnt else 1
            k = other + 1
            row[k] = D.CalcCrippenDescriptors(m)[0]
            row[k + 1] = D.CalcTPSA(m)
            row[k + 2] = D.CalcNumLipinskiHBD(m)
            row[k + 3] = D.CalcNumLipinskiHBA(m)
            row[k + 4] = D.CalcNumRotatableBonds(m, nonstrict)
            row[k + 5] = D.CalcNumRings(m)
            row[k + 6] = D.CalcNumAromaticRings(m)
            row[k + 7] = D.CalcFractionCSP3(m)
            row[k + 8] = Chem.GetFormalCharge(m)
            if not np.isfinite(row).all():
                errors.append((i, "RDKit returned a non-finite descriptor"))
        return out

    def _wl(self, mols, errors):
        try:
            from sprokr_graphs.wl import (CHEM_EDGE_LABEL, CHEM_NODE_LABELS, edge_label_key, labelling_name,
                                          node_label_key, wl_features_from_arrays)
        except ImportError:
            raise ImportError("the 'wl' block needs the sprokr-graphs plugin (pip install sprokr-graphs)") from None
        from .graphs import atom_label, bond_order

        # the labelled graphs of mol_to_graph, listed straight from RDKit (no networkx)
        sizes, keys, src, dst, ekeys, rows = [], [], [], [], [], []
        node_keys: dict[tuple, str] = {}  # label texts of the few distinct atom / bond kinds
        edge_keys: dict[Any, str] = {}
        off = 0
        for i, m in enumerate(mols):
            if m is None:
                continue
            bonds = list(m.GetBonds())
            orders = [bond_order(b) for b in bonds]
            if any(o is None for o in orders):
                errors.append((i, "graph conversion failed: unsupported bond type"))
                continue
            n_atoms = 0
            for a in m.GetAtoms():
                t = (a.GetSymbol(), a.GetFormalCharge(), a.GetIsAromatic(), a.GetTotalNumHs())
                k = node_keys.get(t)
                if k is None:
                    k = node_keys[t] = node_label_key(atom_label(t[0], t[1]), bool(t[2]), int(t[3]))
                keys.append(k)
                n_atoms += 1
            for b, o in zip(bonds, orders):
                src.append(off + b.GetBeginAtomIdx())
                dst.append(off + b.GetEndAtomIdx())
                k = edge_keys.get(o)
                ekeys.append(k if k is not None else edge_keys.setdefault(o, edge_label_key(o)))
            sizes.append(n_atoms)
            off += n_atoms
            rows.append(i)
        W = wl_features_from_arrays(sizes, keys, np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
                                    ekeys, int(self.wl_iter), normalize=False,
                                    labelling=labelling_name(CHEM_NODE_LABELS, CHEM_EDGE_LABEL))
        cols = (W.ids.view(np.uint64) % np.uint64(self.wl_bits)).astype(np.int64)
        graph_rows = np.asarray(rows, dtype=np.int64)[np.repeat(np.arange(len(W)), np.diff(W.indptr))]
        X = sp.csr_matrix((W.values.astype(np.float64), (graph_rows, cols)), shape=(len(mols), int(self.wl_bits)))
        X.sum_duplicates()  # ids folded onto one column add up
        X.sort_indices()
        return X


def featurize_molecules(smiles: Sequence[str], blocks: Sequence[str] = ("morgan",), cache_dir: PathLike | None = None,
                        source: str | None = None, executor: Executor | None = None, chunk_size: int = 20_000,
                        processes: int | None = None, verify: bool = True, **params: Any) -> FeatureTable:
    """Feature blocks of many SMILES, computed in parallel chunks and cached on disk.

    Every molecule is parsed once for all the blocks asked; the blocks are cached
    together, as one entry of a :class:`~sprokr.persistence.FeatureCache` keyed by the
    input's checksum and the featuriser's parameters (so asking later for another set of
    blocks computes a new entry).

    Parameters
    ----------
    smiles : sequence of str
    blocks : sequence of str
        Blocks of :class:`MoleculeFeaturizer`.
    cache_dir : path, optional
        Directory of the cache (default ``$SPROKR_CACHE``, else ``~/.cache/sprokr/features``).
    source : str, optional
        Names the input's content, e.g. ``"sha256:" + file_checksum(path)`` of the file the
        SMILES come from (then the cache is found without hashing the strings); default
        the checksum of the strings.
    executor : Executor, optional
        ``map_tasks`` runs the chunks: local worker processes (default, ``processes`` of
        them) or a :class:`~sprokr.numerics.DaskExecutor`'s workers.
    chunk_size, processes, verify :
        See :meth:`sprokr.persistence.FeatureCache.compute`.
    **params :
        Parameters of :class:`MoleculeFeaturizer` (``radius``, ``n_bits``, ...).

    Returns
    -------
    FeatureTable
        ``table[block]`` for each block (memory-mapped), ``table.errors`` the invalid
        rows, ``table.compute_s`` the time spent computing (0 when read from the cache).
    """
    featurizer = MoleculeFeaturizer(blocks, **params)  # validates the parameters before any work
    cache = FeatureCache(default_cache_dir() if cache_dir is None else cache_dir)
    return cache.compute(smiles, featurizer, source=source, executor=executor, chunk_size=chunk_size,
                         processes=processes, verify=verify, name=f"featurising ({', '.join(featurizer.blocks)})")


def default_cache_dir():
    """``$SPROKR_CACHE`` or ``~/.cache/sprokr/features``."""
    import os
    from pathlib import Path

    env = os.environ.get("SPROKR_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "sprokr" / "features"
