"""Tokenizers for the sequence encoders of DSOKR: SMILES atoms and lowercased words.

Both are scikit-learn transformers: ``fit(texts)`` learns a vocabulary from the training
strings, ``transform(texts)`` returns a padded integer array of shape
(n, ``max_length_``) with ``0`` for padding and ``1`` for tokens outside the vocabulary,
ready for :class:`~sprokr.models.SequenceRegressor` (no torch needed here).

* :class:`SmilesTokenizer`: the atom-level regular expression of Schwaller et al. (2019,
  the Molecular Transformer): bracket atoms (``[nH]``, ``[C@@H]``, ``[NH3+]``) are one
  token, so are ``Cl``, ``Br`` and two-digit ring closures (``%10``); any other character
  is a token of its own, so ``"".join(tokenize(s)) == s`` for every string.
* :class:`WordTokenizer`: lowercased words (runs of letters and digits) and punctuation
  marks; optionally each word is split at the hyphens and commas of chemical names
  (``2-hydroxy`` -> ``2``, ``-``, ``hydroxy``), which keeps the vocabulary small.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Optional, Self

import re

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..utils import check_integer, check_positive, check_strings

__all__ = ["SmilesTokenizer", "WordTokenizer", "PAD_INDEX", "UNKNOWN_INDEX", "SMILES_TOKEN_PATTERN"]

#: index of the padding token
PAD_INDEX = 0
#: index of every token outside the vocabulary
UNKNOWN_INDEX = 1
#: Schwaller et al.'s SMILES token pattern, plus a catch-all single character (last)
SMILES_TOKEN_PATTERN = (r"(\[[^\]]+]|Br?|Cl?|N|O|S|P|F|I|b|c|n|o|s|p|\(|\)|\.|=|#|-|\+|\\|/|:|~|@|\?|>|\*|\$"
                        r"|%[0-9]{2}|[0-9]|.)")
_SMILES_RE = re.compile(SMILES_TOKEN_PATTERN, re.DOTALL)
_WORD_RE = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
_WHOLE_WORD_RE = re.compile(r"[^\s.,;:!?]+(?:[.,][^\s.,;:!?]+)*|\S")


class _Tokenizer(TransformerMixin, BaseEstimator):
    """Vocabulary fitting and padding shared by the tokenizers (``tokenize`` in subclasses)."""

    what = "text"

    def tokenize(self, text: str) -> list:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them).

        Checks ``max_length`` (None or > 0), ``min_count`` (an integer >= 1) and
        ``max_vocabulary`` (None or an integer >= 1); ``fit`` runs the same checks first.
        Nothing of the tokenizer is changed.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            A parameter value is invalid (the message names it).
        """
        if self.max_length is not None:
            check_positive(self.max_length, "max_length")
        check_integer(self.min_count, "min_count")
        if self.max_vocabulary is not None and (
                isinstance(self.max_vocabulary, bool) or not isinstance(self.max_vocabulary, (int, np.integer))
                or self.max_vocabulary < 1):
            raise ValueError(f"max_vocabulary must be a positive integer or None, got {self.max_vocabulary!r}")
        return self

    def fit(self, X: Any, y: Any = None) -> Self:
        """Vocabulary of the tokens seen ``min_count`` times or more in the training strings ``X``.

        Tokens are ordered by decreasing count (ties alphabetically), after the two reserved
        entries ``<pad>`` (0) and ``<unk>`` (1).  The parameters are checked first
        (:meth:`check_params`).  Returns self.
        """
        self.check_params()
        texts = check_strings(X, self.what)
        if not texts:
            raise ValueError("cannot fit a tokenizer on 0 strings: X is empty")
        seqs = [self.tokenize(s) for s in texts]
        counts = Counter(t for seq in seqs for t in seq)
        kept = sorted((t for t, c in counts.items() if c >= self.min_count), key=lambda t: (-counts[t], t))
        if self.max_vocabulary is not None:
            kept = kept[:int(self.max_vocabulary)]
        self.vocabulary_ = {"<pad>": PAD_INDEX, "<unk>": UNKNOWN_INDEX, **{t: i + 2 for i, t in enumerate(kept)}}
        longest = max(len(seq) for seq in seqs)
        self.max_length_ = max(1, longest if self.max_length is None else min(longest, int(self.max_length)))
        return self

    @property
    def vocabulary_size_(self) -> int:
        """Number of token ids (padding and unknown included)."""
        check_is_fitted(self, "vocabulary_")
        return len(self.vocabulary_)

    def transform(self, X: Any) -> np.ndarray:
        """Token ids, shape (n, ``max_length_``) int64, padded with 0 (truncated beyond)."""
        check_is_fitted(self, "vocabulary_")
        texts = check_strings(X, self.what)
        out = np.full((len(texts), self.max_length_), PAD_INDEX, dtype=np.int64)
        voc, L = self.vocabulary_, self.max_length_
        for i, s in enumerate(texts):
            ids = [voc.get(t, UNKNOWN_INDEX) for t in self.tokenize(s)[:L]]
            out[i, :len(ids)] = ids
        return out

    def inverse_transform(self, ids: Any) -> list:
        """Token lists of id rows (padding dropped; unknown tokens as ``<unk>``)."""
        check_is_fitted(self, "vocabulary_")
        inv = {i: t for t, i in self.vocabulary_.items()}
        return [[inv[int(i)] for i in row if i != PAD_INDEX] for row in np.asarray(ids)]


class SmilesTokenizer(_Tokenizer):
    """Atom-level SMILES tokens (module doc), vocabulary fitted on the training SMILES.

    Parameters
    ----------
    max_length : int, optional
        Longest sequence kept (default: the longest training sequence); longer SMILES are
        truncated at ``transform``.
    min_count : int
        Tokens seen fewer times in the training SMILES map to ``<unk>``.
    max_vocabulary : int, optional
        Keep only the most frequent tokens.

    Attributes
    ----------
    vocabulary_ : dict token -> id
    max_length_ : int
    """

    what = "SMILES"

    def __init__(self, max_length: Optional[int] = None, min_count: int = 1, max_vocabulary: Optional[int] = None):
        self.max_length = max_length
        self.min_count = min_count
        self.max_vocabulary = max_vocabulary

    def tokenize(self, text: str) -> list:
        """Tokens of one SMILES; ``"".join(tokens) == text``."""
        return _SMILES_RE.findall(text)


class WordTokenizer(_Tokenizer):
    """Lowercased words and punctuation marks, vocabulary fitted on the training texts.

    Parameters
    ----------
    split_names : bool
        Split chemical names at hyphens, commas and brackets (``(2S)-2-hydroxy`` ->
        ``(``, ``2s``, ``)``, ``-``, ``2``, ``-``, ``hydroxy``).  With ``False`` words are
        the runs of non-space characters (a name such as ``2,3-dihydroxy`` is one token)
        and only the punctuation that ends a word (``.,;:!?``) is split off.
    max_length : int, optional
        Longest sequence kept (default: the longest training text, at most 256).
    min_count : int
        Words seen fewer times map to ``<unk>`` (default 2: words of a single training text
        cannot be learned).
    max_vocabulary : int, optional

    Attributes
    ----------
    vocabulary_ : dict token -> id
    max_length_ : int
    """

    what = "text"

    def __init__(self, split_names: bool = True, max_length: Optional[int] = 256, min_count: int = 2,
                 max_vocabulary: Optional[int] = None):
        self.split_names = split_names
        self.max_length = max_length
        self.min_count = min_count
        self.max_vocabulary = max_vocabulary

    def tokenize(self, text: str) -> list:
        """Tokens of one text (lowercased)."""
        return (_WORD_RE if self.split_names else _WHOLE_WORD_RE).findall(text.lower())
