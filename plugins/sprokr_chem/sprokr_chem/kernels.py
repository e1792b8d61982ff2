"""Molecule kernels: Morgan fingerprints + sprokr's vector kernels, and a SMILES spectrum kernel.

Every kernel here accepts SMILES strings, RDKit molecules or molecule graphs (networkx
graphs as :func:`sprokr_chem.mol_to_graph` makes them; a mix too).  ``prepare``
parses each molecule and computes its fingerprint once, as a row of a CSR matrix; the
Gram blocks are then the vector kernels of :mod:`sprokr.kernels.vector` on those sparse
rows (one sparse x dense product per block, no loop over pairs).

Fingerprints are cached per molecule (keyed by the input SMILES, or the canonical SMILES
of a molecule, and the fingerprint parameters) in a bounded process-wide cache, so the
training set, the candidate set and the test set never fingerprint the same molecule twice.
The cache is shared by threads (a model predicting in several threads at once): its
look-ups, insertions and evictions run under one lock, the fingerprints outside it.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from numpy.typing import DTypeLike
import scipy.sparse as sp
from rdkit import Chem
from rdkit.Chem import rdFingerprintGenerator

from sprokr.kernels.base import Kernel
from sprokr.kernels.vector import CosineKernel, MinMaxKernel, TanimotoKernel
from sprokr.utils import check_bool, check_integer, is_real

from .io import MoleculeReadError, blank_inside, is_molecule_graph, to_mol
from .molecules import molecule_smiles

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from rdkit.Chem import Mol
    from sprokr.types import Samples

__all__ = [
    "check_molecules",
    "morgan_fingerprints",
    "unary_counts",
    "MorganTanimotoKernel",
    "MorganCountTanimotoKernel",
    "MorganGaussianTanimotoKernel",
    "MorganMinMaxKernel",
    "MorganCosineKernel",
    "SmilesSpectrumKernel",
    "clear_fingerprint_cache",
]

_CACHE: "OrderedDict[tuple, tuple]" = OrderedDict()
_CACHE_MAX = 200_000
#: guards _CACHE: a hit's look-up and move to the end must not interleave with another
#: thread's eviction (a KeyError), nor an insertion with another thread's
_CACHE_LOCK = threading.Lock()
_GENERATORS: dict[Any, Any] = {}


def clear_fingerprint_cache() -> None:
    """Empty the per-molecule fingerprint cache."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _generator(radius, n_bits):
    key = (radius, n_bits)
    if key not in _GENERATORS:
        _GENERATORS[key] = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    return _GENERATORS[key]


def check_molecules(X: Any, kernel: str | None) -> list:
    """``X`` as a list of SMILES strings, RDKit molecules and molecule graphs.

    A TypeError names ``kernel``, the first sample of another type and what to use instead
    (error messages say "the samples": the models replace it by the argument's name).
    """
    accepted = f"the {kernel or 'molecule'} kernel takes SMILES strings, RDKit molecules or molecule graphs"
    if isinstance(X, (str, Chem.Mol)):
        raise TypeError(f"the samples must be a sequence of molecules, not a single "
                        f"{type(X).__name__} ({accepted})")
    if isinstance(X, np.ndarray) and X.dtype.kind in "biufc":
        raise TypeError(f"the samples: got a numeric array of shape {X.shape}; {accepted} (numeric "
                        f"data takes a vector kernel, e.g. 'gaussian')")
    try:
        items = list(X)
    except TypeError:
        raise TypeError(f"the samples must be a sequence of molecules, got {type(X).__name__} "
                        f"({accepted})") from None
    for i, x in enumerate(items):
        if not isinstance(x, (str, Chem.Mol)) and not is_molecule_graph(x):
            raise TypeError(f"the samples must be molecules: {accepted}; sample {i} is of type "
                            f"{type(x).__name__}")
    return items


def _fingerprint(x, i, radius, n_bits, counts):
    if not isinstance(x, str):  # a molecule object: the molecule of its SMILES (explicit hydrogens
        # removed, aromaticity perceived: an AddHs or kekulised molecule is its SMILES' molecule)
        if not isinstance(x, Chem.Mol) and not is_molecule_graph(x):
            to_mol(x, i)  # raises the documented error for other types
        x = molecule_smiles(x, i)
    key = (x, radius, n_bits, counts)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    mol = to_mol(x, i)
    gen = _generator(radius, n_bits)
    if counts:
        fp = gen.GetCountFingerprint(mol).GetNonzeroElements()
        idx = np.fromiter(fp.keys(), dtype=np.int32, count=len(fp))
        val = np.fromiter(fp.values(), dtype=np.float64, count=len(fp))
        order = np.argsort(idx)
        out = (idx[order], val[order])
    else:
        idx = np.asarray(list(gen.GetFingerprint(mol).GetOnBits()), dtype=np.int32)
        out = (idx, np.ones(idx.size))
    with _CACHE_LOCK:
        _CACHE[key] = out
        if len(_CACHE) > _CACHE_MAX:
            _CACHE.popitem(last=False)
    return out


def morgan_fingerprints(molecules: Sequence[str | Mol], radius: int = 2, n_bits: int = 2048, counts: bool = False,
                        dtype: DTypeLike = np.float64) -> sp.csr_matrix:
    """Morgan fingerprints of SMILES strings / RDKit molecules / molecule graphs as a CSR
    matrix (n, n_bits).

    ``counts=False``: bit vectors (0/1); ``counts=True``: occurrence counts of each
    (folded) environment.  Invalid molecules raise
    :class:`sprokr_chem.MoleculeReadError` naming their index and SMILES.

    Parameters
    ----------
    molecules : sequence of str, rdkit.Chem.Mol or networkx.Graph
        SMILES strings, RDKit molecules or molecule graphs.
    radius : int, default 2
        Radius of the Morgan environments.
    n_bits : int, default 2048
        Length of the (folded) fingerprints.
    counts : bool, default False
        Occurrence counts instead of bits.
    dtype : numpy dtype, default numpy.float64
        Dtype of the matrix's values.
    """
    if isinstance(molecules, (str, Chem.Mol)):
        raise TypeError("expected a sequence of molecules (SMILES, RDKit Mol or molecule graph), not a single one")
    # as the kernels' check_params (True, 2.0 and counts="no" were taken as 1, 2 and true)
    radius, n_bits = check_integer(radius, "radius", 0), check_integer(n_bits, "n_bits")
    counts = check_bool(counts, "counts")
    indptr, indices, values = [0], [], []
    for i, x in enumerate(molecules):
        idx, val = _fingerprint(x, i, radius, n_bits, counts)
        indices.append(idx)
        values.append(val)
        indptr.append(indptr[-1] + idx.size)
    n = len(indptr) - 1
    ind = np.concatenate(indices) if indices else np.zeros(0, np.int32)
    dat = np.concatenate(values).astype(dtype) if values else np.zeros(0, dtype)
    return sp.csr_matrix((dat, ind, np.asarray(indptr)), shape=(n, n_bits))


def unary_counts(X: Any, n_bits: int | None = None) -> Any:
    """Binary "unary" expansion of a count matrix: column ``f + n_bits (t - 1)`` is ``[x_f >= t]``.

    ``sum_f min(a_f, b_f) = <u(a), u(b)>`` and ``sum_f a_f = |u(a)|^2``, so the MinMax kernel
    of counts is the Tanimoto kernel of the expansions -- an explicit binary feature map
    (which also proves MinMax positive semi-definite).  ``X``: CSR (n, n_bits) of
    non-negative integer counts; a matrix whose entries are all 0/1 is returned unchanged
    (the expansion is idempotent), so already expanded rows can be passed again.

    Returns a CSR matrix of shape (n, n_bits * max count) with unit entries.

    Parameters
    ----------
    X : sparse matrix of shape (n, n_bits)
        Non-negative integer counts (CSR, or anything ``scipy.sparse.csr_matrix`` takes).
    n_bits : int, optional
        Width of a count block (default: the number of columns of ``X``).
    """
    X = sp.csr_matrix(X)
    n_bits = X.shape[1] if n_bits is None else int(n_bits)
    if X.nnz == 0 or X.data.max() <= 1:
        return X
    if X.data.min() < 0 or np.any(X.data != np.round(X.data)):
        raise ValueError("unary_counts expects non-negative integer counts")
    X = X.copy()
    X.eliminate_zeros()
    reps = X.data.astype(np.int64)
    t_max = int(reps.max())
    row_nnz = np.add.reduceat(reps, X.indptr[:-1]) * (np.diff(X.indptr) > 0) if reps.size else 0
    indptr = np.concatenate([[0], np.cumsum(row_nnz)])
    # entry (f, c) -> columns f, f + n_bits, ..., f + n_bits (c - 1)
    starts = np.repeat(np.cumsum(reps) - reps, reps)
    level = np.arange(reps.sum()) - starts
    cols = np.repeat(X.indices.astype(np.int64), reps) + n_bits * level
    out = sp.csr_matrix((np.ones(cols.size, dtype=X.dtype), cols, indptr),
                        shape=(X.shape[0], n_bits * t_max))
    out.sort_indices()
    return out


def _same_width(A, B):
    """The two CSR matrices with as many columns (zero columns appended to the narrower)."""
    w = max(A.shape[1], B.shape[1])
    if A.shape[1] != w:
        A = sp.csr_matrix((A.data, A.indices, A.indptr), shape=(A.shape[0], w))
    if B.shape[1] != w:
        B = sp.csr_matrix((B.data, B.indices, B.indptr), shape=(B.shape[0], w))
    return A, B


class _FingerprintKernel(Kernel):
    """Morgan fingerprints (computed once in ``prepare``) + a vector kernel on them."""

    normalized = True
    _counts = False

    def __init__(self, radius: int = 2, n_bits: int = 2048, dtype: DTypeLike = "float64") -> None:
        self.radius = radius
        self.n_bits = n_bits
        self.dtype = dtype

    def _vector_kernel(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def check_params(self) -> Self:
        """``radius`` (an integer >= 0), ``n_bits`` (an integer >= 1) and, for the kernels that
        have it, ``counts`` (True or False: ``counts="no"`` was true); returns self."""
        check_integer(self.radius, "radius", 0)
        check_integer(self.n_bits, "n_bits")
        if "counts" in self.get_params(deep=False):
            check_bool(self.counts, "counts")
        return self

    def prepare(self, X: Samples) -> Any:
        self.check_params()
        if sp.issparse(X):  # already fingerprints
            return self._vector_kernel().prepare(X)
        X = check_molecules(X, self.name)
        fp = morgan_fingerprints(X, self.radius, self.n_bits, self._counts, self._dtype())
        return self._vector_kernel().prepare(fp)

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        return self._vector_kernel().pairwise(A, B)


class MorganTanimotoKernel(_FingerprintKernel):
    """Tanimoto similarity of Morgan fingerprints.

    ``counts=False`` (default): bit vectors, the classical Tanimoto.  ``counts=True``: the
    generalised Tanimoto ``a.b / (|a|^2 + |b|^2 - a.b)`` of count vectors (PSD on
    non-negative vectors); it separates molecules that differ only in how many times an
    environment occurs (e.g. chain lengths), which bit vectors cannot.

    Parameters
    ----------
    radius : int, default 2
        Radius of the Morgan environments.
    n_bits : int, default 2048
        Length of the (folded) fingerprints.
    counts : bool, default False
        Count fingerprints (the generalised Tanimoto) instead of bit vectors.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the fingerprints and of the kernel values.
    """

    name = "morgan_tanimoto"

    def __init__(self, radius: int = 2, n_bits: int = 2048, counts: bool = False, dtype: DTypeLike = "float64") -> None:
        super().__init__(radius, n_bits, dtype)
        self.counts = counts

    @property
    def _counts(self):
        return bool(self.counts)

    def _vector_kernel(self):
        return TanimotoKernel(dtype=self.dtype)


class MorganCountTanimotoKernel(MorganTanimotoKernel):
    """Tanimoto on Morgan **count** fingerprints (``MorganTanimotoKernel(counts=True)``).

    Parameters
    ----------
    radius : int, default 2
        Radius of the Morgan environments.
    n_bits : int, default 2048
        Length of the (folded) fingerprints.
    counts : bool, default True
        Count fingerprints (the generalised Tanimoto); ``False``: bit vectors.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the fingerprints and of the kernel values.
    """

    name = "morgan_count_tanimoto"

    def __init__(self, radius: int = 2, n_bits: int = 2048, counts: bool = True, dtype: DTypeLike = "float64") -> None:
        super().__init__(radius, n_bits, counts, dtype)


class MorganMinMaxKernel(_FingerprintKernel):
    """MinMax kernel on Morgan count fingerprints (Tanimoto generalised to counts).

    ``k(a, b) = sum_f min(a_f, b_f) / sum_f max(a_f, b_f)``.  Prepared molecules are the
    binary unary expansions of their counts (:func:`unary_counts`), an explicit feature map
    on which MinMax is the Tanimoto kernel: a Gram block is one sparse-aware BLAS product
    (no dense L1-distance pass), and the kernel is PSD.

    Parameters
    ----------
    radius : int, default 2
        Radius of the Morgan environments.
    n_bits : int, default 2048
        Length of the (folded) fingerprints.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the fingerprints and of the kernel values.
    """

    name = "morgan_minmax"
    _counts = True

    def _vector_kernel(self):
        return TanimotoKernel(dtype=self.dtype)

    def prepare(self, X: Samples) -> Any:
        self.check_params()
        if sp.issparse(X):  # count fingerprints or their expansion
            X = MinMaxKernel(dtype=self.dtype).prepare(X)
        else:
            X = morgan_fingerprints(check_molecules(X, self.name), self.radius, self.n_bits, True, self._dtype())
        return unary_counts(X, self.n_bits)

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        A, B = _same_width(unary_counts(A, self.n_bits), unary_counts(B, self.n_bits))
        return self._vector_kernel().pairwise(A, B)


class MorganCosineKernel(_FingerprintKernel):
    """Cosine similarity of Morgan fingerprints (``counts=True`` by default).

    Parameters
    ----------
    radius : int, default 2
        Radius of the Morgan environments.
    n_bits : int, default 2048
        Length of the (folded) fingerprints.
    counts : bool, default True
        Count fingerprints; ``False``: bit vectors.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the fingerprints and of the kernel values.
    """

    name = "morgan_cosine"

    def __init__(self, radius: int = 2, n_bits: int = 2048, counts: bool = True, dtype: DTypeLike = "float64") -> None:
        super().__init__(radius, n_bits, dtype)
        self.counts = counts

    @property
    def _counts(self):
        return bool(self.counts)

    def _vector_kernel(self):
        return CosineKernel(dtype=self.dtype)


def _check_gamma(gamma):
    if not is_real(gamma) or not np.isfinite(gamma) or gamma <= 0:
        raise ValueError(f"gamma must be a finite number > 0, got {gamma!r}")


class MorganGaussianTanimotoKernel(_FingerprintKernel):
    """Gaussian-Tanimoto ``exp(-gamma (2 - 2 T(a, b)))`` on Morgan bit fingerprints.

    ``2 - 2 T`` is the squared distance between the Tanimoto feature maps, so this is a
    Gaussian kernel in the Tanimoto RKHS (positive definite, normalised).  ``gamma``
    controls how fast similarity decays (``gamma -> 0`` recovers an affine map of T).

    Parameters
    ----------
    gamma : float > 0, default 1.0
        Decay rate of the similarity with the Tanimoto feature-map distance.
    radius : int, default 2
        Radius of the Morgan environments.
    n_bits : int, default 2048
        Length of the (folded) fingerprints.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the fingerprints and of the kernel values.
    counts : bool, default False
        Count fingerprints (the generalised Tanimoto) instead of bit vectors.
    """

    name = "morgan_gaussian_tanimoto"

    def __init__(self, gamma: float = 1.0, radius: int = 2, n_bits: int = 2048, dtype: DTypeLike = "float64",
                 counts: bool = False) -> None:
        super().__init__(radius, n_bits, dtype)
        self.gamma = gamma
        self.counts = counts

    @property
    def _counts(self):
        return bool(self.counts)

    def _vector_kernel(self):
        return TanimotoKernel(dtype=self.dtype)

    def check_params(self) -> Self:
        """``radius``, ``n_bits`` and ``gamma`` (a finite number > 0: ``gamma=inf`` gave
        ``inf * 0 = NaN`` on the diagonal); returns self."""
        super().check_params()
        _check_gamma(self.gamma)
        return self

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        _check_gamma(self.gamma)
        K = self._vector_kernel().pairwise(A, B)
        K -= 1.0
        K *= 2.0 * self.gamma
        return np.exp(K, out=K)


class SmilesSpectrumKernel(Kernel):
    """Normalised n-gram spectrum kernel on SMILES strings.

    ``k(s, t) = <phi(s), phi(t)> / (|phi(s)| |phi(t)|)`` where ``phi`` counts every
    character n-gram of length ``min_n .. n`` (hashed into ``n_features`` buckets by
    scikit-learn's stateless ``HashingVectorizer``, so train and test strings share one
    feature space without fitting).

    With ``canonical=True`` (the default) each SMILES is first rewritten as RDKit's
    canonical SMILES, so the kernel does not depend on how a molecule is written (atom
    order, Kekule or aromatic form, explicit hydrogens as QM8 ships them): without it the
    same molecules written differently share few n-grams.  An invalid SMILES raises
    :class:`sprokr_chem.MoleculeReadError` (a ``ValueError``) naming its position and text.
    ``canonical=False`` compares the strings as given (the earlier default), without the blanks
    around them; a blank string or whitespace inside one is refused, as RDKit would read the
    rest as a name.  RDKit molecules
    and molecule graphs are written as canonical SMILES first.

    Parameters
    ----------
    n : int, default 4
        Longest n-gram (characters).
    min_n : int, default 1
        Shortest n-gram (characters), ``1 <= min_n <= n``.
    canonical : bool, default True
        Rewrite each SMILES as RDKit's canonical SMILES first.
    n_features : int, default 2**20
        Hashing buckets of the n-gram counts.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the features and of the kernel values.
    """

    name = "smiles_spectrum"
    normalized = True

    def __init__(self, n: int = 4, min_n: int = 1, canonical: bool = True, n_features: int = 2**20,
                 dtype: DTypeLike = "float64") -> None:
        self.n = n
        self.min_n = min_n
        self.canonical = canonical
        self.n_features = n_features
        self.dtype = dtype

    def check_params(self) -> Self:
        """``n``, ``min_n`` (integers, ``1 <= min_n <= n``), ``canonical`` (True or False) and
        ``n_features`` (an integer >= 1: scikit-learn's hashing divided by 0 and ended the
        process with SIGFPE); returns self."""
        check_integer(self.n, "n")
        check_integer(self.min_n, "min_n")
        if self.min_n > self.n:
            raise ValueError(f"need 1 <= min_n <= n, got min_n={self.min_n}, n={self.n}")
        check_bool(self.canonical, "canonical")
        check_integer(self.n_features, "n_features")
        return self

    def prepare(self, X: Samples) -> Any:
        from sklearn.feature_extraction.text import HashingVectorizer

        self.check_params()
        if sp.issparse(X):
            X = CosineKernel(dtype=self.dtype).prepare(X)
            norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
            norms[norms == 0] = 1.0
            return sp.csr_matrix(sp.diags(1.0 / norms) @ X, dtype=X.dtype)
        texts = []
        for i, s in enumerate(check_molecules(X, self.name)):
            if is_molecule_graph(s) or isinstance(s, Chem.Mol):  # as its SMILES would be written
                s = molecule_smiles(s, i)
            elif not s.strip():  # (blanks alone were hashed as a string of spaces with canonical=False)
                raise MoleculeReadError(i, s, "expected a non-empty SMILES string")
            elif self.canonical:
                s = Chem.MolToSmiles(to_mol(s, i))
            elif blank_inside(s):  # as mol_from_smiles: RDKit would read the rest as a name
                raise MoleculeReadError(i, s, "whitespace inside a SMILES string (the rest would be read as a name)")
            else:  # blanks around a SMILES are not part of it
                s = s.strip()
            texts.append(s)
        hv = HashingVectorizer(analyzer="char", ngram_range=(self.min_n, self.n), lowercase=False,
                               n_features=self.n_features, alternate_sign=False, norm="l2",
                               dtype=np.dtype(self.dtype))
        # HashingVectorizer.transform fails on an empty sequence (zero queries)
        rows = hv.transform(texts) if texts else sp.csr_matrix((0, int(self.n_features)))
        return CosineKernel(dtype=self.dtype).prepare(rows)

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        # rows are l2-normalised: the kernel is a sparse x sparse product (the hashed
        # feature space is far too wide to densify either side)
        return np.asarray((A @ B.T).toarray(), dtype=np.dtype(self.dtype))


KERNELS = {
    k.name: k
    for k in (MorganTanimotoKernel, MorganCountTanimotoKernel, MorganGaussianTanimotoKernel, MorganMinMaxKernel,
              MorganCosineKernel, SmilesSpectrumKernel)
}
