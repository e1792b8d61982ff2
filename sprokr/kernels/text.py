"""A text kernel: word and character n-grams, sublinear / BM25-style weighting, cosine.

``k(s, t) = <phi(s), phi(t)>`` with ``phi(s)`` the concatenation of two unit-norm blocks,

* words: word n-grams (``word_ngrams``, default uni- and bigrams),
* characters: character n-grams inside word boundaries (``char_ngrams``, default 3-5,
  scikit-learn's ``char_wb``), which match morphology that words miss (``chloride`` /
  ``dichloride``, ``-ic acid`` / ``-ate``, IUPAC fragments),

scaled by ``sqrt(1 - char_weight)`` and ``sqrt(char_weight)`` so that ``|phi(s)| = 1`` and
``k(s, s) = 1``.  Each block is a vector of hashed n-gram counts (scikit-learn's stateless
``HashingVectorizer``: train and test texts share one feature space without a vocabulary)
weighted by

* ``weighting="sublinear"`` (default): ``1 + log(tf)``;
* ``"bm25"``: ``tf (k1 + 1) / (tf + k1 (1 - b + b len / avg_len))``, a term frequency that
  saturates (a word said five times is not five times the evidence) with a length correction;
* ``"tf"``: raw counts;  ``"binary"``: presence;

times the inverse document frequency ``idf(f) = log((1 + n) / (1 + df(f))) + 1``
(scikit-learn's smooth idf) when the kernel has been fitted.

The defaults (sublinear, ``char_weight=0.7``) were chosen on ChEBI-20 descriptions by the
nearest-description MRR on the training half only (``benchmarks/text_kernel_chebi.py``,
both seeds chose them; docs/molecules.md has the numbers).

Fitting.  :meth:`TextKernel.fit` learns the idf of every hashed n-gram and the average
length from training texts (learned state ``idf_``, ``avg_len_``, saved with a model).
An unfitted kernel is stateless: no idf (all ones) and ``len / avg_len = 1`` -- usable by
name (``input_kernel="text"``) but weaker; fit it on the training texts and pass the
instance (``IOKR(input_kernel=TextKernel().fit(texts_train))``) for the full weighting.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from numpy.typing import DTypeLike
import scipy.sparse as sp

from ..utils import check_bool, check_integer, check_strings, is_real
from .base import Kernel

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from ..types import Samples

__all__ = ["TextKernel"]

_WEIGHTINGS = ("sublinear", "bm25", "tf", "binary")


def _check_range(name, r):
    try:
        lo, hi = r
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (min_n, max_n), got {r!r}") from None
    # (bool is an int: (True, True) would silently be (1, 1))
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in (lo, hi)) \
            or not 1 <= lo <= hi:
        raise ValueError(f"{name} must be a pair of ints with 1 <= min_n <= max_n, got {r!r}")
    return int(lo), int(hi)


class TextKernel(Kernel):
    """Cosine kernel on weighted word + character n-grams of texts (see the module doc).

    Parameters
    ----------
    word_ngrams : (int, int), default (1, 2)
        Range of word n-gram lengths.
    char_ngrams : (int, int) or None, default (3, 5)
        Range of character n-gram lengths (within word boundaries); None: words only.
    char_weight : float in [0, 1], default 0.7
        Share of the character block in the kernel (0: words only, 1: characters only).
    weighting : {"sublinear", "bm25", "tf", "binary"}, default "sublinear"
    k1, b : float, default 1.2, 0.75
        BM25 saturation and length correction (``weighting="bm25"`` only).
    lowercase : bool, default True
    n_features : int, default 2**20
        Hash buckets per block.
    dtype : {"float64", "float32"}

    Attributes
    ----------
    idf_ : ndarray of shape (2 * n_features,)
        Inverse document frequencies of the hashed n-grams (after :meth:`fit`).
    avg_len_ : ndarray of shape (2,)
        Average number of word / character n-grams of a training text (after :meth:`fit`).
    """

    learns_from_data = True
    name = "text"
    normalized = True

    def __init__(self, word_ngrams: tuple[int, int] | None = (1, 2), char_ngrams: tuple[int, int] | None = (3, 5),
                 char_weight: float = 0.7, weighting: str = "sublinear", k1: float = 1.2, b: float = 0.75,
                 lowercase: bool = True, n_features: int = 2**20, dtype: DTypeLike = "float64") -> None:
        self.word_ngrams = word_ngrams
        self.char_ngrams = char_ngrams
        self.char_weight = char_weight
        self.weighting = weighting
        self.k1 = k1
        self.b = b
        self.lowercase = lowercase
        self.n_features = n_features
        self.dtype = dtype

    # ------------------------------------------------------------------ checks
    def check_params(self) -> Self:
        _check_range("word_ngrams", self.word_ngrams)
        if self.char_ngrams is not None:
            _check_range("char_ngrams", self.char_ngrams)
        w = self.char_weight
        if not is_real(w) or not 0 <= w <= 1:
            raise ValueError(f"char_weight must be a number in [0, 1], got {w!r}")
        if self.char_ngrams is None and w > 0:
            raise ValueError("char_weight must be 0 when char_ngrams is None")
        if self.weighting not in _WEIGHTINGS:
            raise ValueError(f"weighting must be one of {', '.join(_WEIGHTINGS)}, got {self.weighting!r}")
        for name in ("k1", "b"):
            v = getattr(self, name)
            if not is_real(v) or not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.b > 1:
            raise ValueError(f"b must be in [0, 1], got {self.b!r}")
        check_bool(self.lowercase, "lowercase")
        check_integer(self.n_features, "n_features")
        return self

    @staticmethod
    def _texts(X):
        return check_strings(X, "text", "the samples", "the 'text' kernel")

    # ------------------------------------------------------------------ features
    def _counts(self, texts):
        """Hashed n-gram counts: [words | characters], CSR (n, 2 n_features) float64."""
        from sklearn.feature_extraction.text import HashingVectorizer

        if not texts:  # HashingVectorizer.transform fails on an empty sequence
            return sp.csr_matrix((0, 2 * int(self.n_features)))
        common = dict(n_features=int(self.n_features), alternate_sign=False, norm=None,
                      lowercase=bool(self.lowercase), dtype=np.float64)
        word = HashingVectorizer(analyzer="word", ngram_range=tuple(self.word_ngrams), **common)
        blocks = [word.transform(texts)]
        if self.char_ngrams is not None:
            char = HashingVectorizer(analyzer="char_wb", ngram_range=tuple(self.char_ngrams), **common)
            blocks.append(char.transform(texts))
        else:
            blocks.append(sp.csr_matrix((len(texts), int(self.n_features))))
        return sp.hstack(blocks, format="csr")

    def fit(self, X: Sequence[str], y: Any | None = None) -> Self:
        """Learn the idf of the hashed n-grams and the average text length from texts ``X``."""
        from sklearn.feature_extraction.text import TfidfTransformer

        self.check_params()
        texts = self._texts(X)
        if not texts:
            raise ValueError("fit needs at least one text")
        C = self._counts(texts)
        idf = TfidfTransformer(smooth_idf=True).fit(C).idf_
        half = int(self.n_features)
        lens = np.stack([np.asarray(C[:, :half].sum(axis=1)).ravel(),
                         np.asarray(C[:, half:].sum(axis=1)).ravel()], axis=1)
        self.idf_ = idf.astype(np.float64)
        self.avg_len_ = np.maximum(lens.mean(axis=0), 1e-12)
        return self

    def prepare(self, X: Samples) -> Any:
        """Unit-norm feature rows (CSR (n, 2 n_features)) of a sequence of texts."""
        if sp.issparse(X):  # already prepared rows
            return sp.csr_matrix(X, dtype=self._dtype())
        self.check_params()
        texts = self._texts(X)
        C = self._counts(texts)
        half = int(self.n_features)
        idf = getattr(self, "idf_", None)
        if idf is not None and idf.size != 2 * half:
            raise ValueError(f"the kernel was fitted with n_features={idf.size // 2}, now {half}: refit it")
        avg = getattr(self, "avg_len_", None)
        out = []
        for j, (lo, hi) in enumerate(((0, half), (half, 2 * half))):
            B = C[:, lo:hi].tocsr()
            B.sum_duplicates()
            w = self._weights(B, None if avg is None else avg[j])
            if idf is not None:
                w = w @ sp.diags(idf[lo:hi])
            w = sp.csr_matrix(w)
            norms = np.sqrt(np.asarray(w.multiply(w).sum(axis=1)).ravel())
            norms[norms == 0] = 1.0
            share = self.char_weight if j == 1 else 1.0 - self.char_weight
            out.append(sp.diags(np.sqrt(share) / norms) @ w)
        return sp.csr_matrix(sp.hstack(out, format="csr"), dtype=self._dtype())

    def _weights(self, B, avg_len):
        """Weighted term frequencies of the count rows ``B`` (CSR), same pattern."""
        W = B.copy()
        tf = W.data
        if self.weighting == "binary":
            W.data = np.ones_like(tf)
        elif self.weighting == "sublinear":
            W.data = 1.0 + np.log(tf)
        elif self.weighting == "bm25":
            k1, b = float(self.k1), float(self.b)
            lens = np.asarray(B.sum(axis=1)).ravel()
            rel = np.ones_like(lens) if avg_len is None else lens / avg_len
            norm = np.repeat(k1 * (1.0 - b + b * rel), np.diff(B.indptr))
            W.data = tf * (k1 + 1.0) / (tf + norm)
        return W

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        # unit-norm sparse rows: one sparse x sparse product (the hashed space is far too wide
        # to densify either side)
        return np.asarray((A @ B.T).toarray(), dtype=self._dtype())
