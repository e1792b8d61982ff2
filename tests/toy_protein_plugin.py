"""A toy third-party plugin for amino-acid sequences, using every domain hook of sprokr.

Nothing of it is known to sprokr: it adds

* a file type: ``.fasta`` / ``.fa`` (``>name key=value ...`` header lines, then the
  sequence on one or more lines): columns ``name``, ``sequence`` and every header field;
* a column type for the command line: ``protein`` (the 20-letter amino-acid alphabet,
  validated; an invalid residue names the file, line and column);
* a depiction: a sequence drawn as coloured letters (by residue class) with matplotlib;
* an input and output kernel: ``kmer_spectrum``, the cosine of k-mer count vectors; fitted
  on training inputs it keeps a :class:`KmerVocabulary` (k-mers outside it share one
  bucket), a plain data class it declares safe to save (hook ``sprokr_saveable_classes``).

``tests/test_domain_hooks.py`` registers it and runs it through ``sprokr fit / predict /
evaluate``, the safe model format and :func:`sprokr.plotting.plot_outputs`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import sprokr
from sprokr.io import DataFileError, Table
from sprokr.kernels import Kernel

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
#: residue classes and their colours in a depiction
CLASSES = {**{a: "tab:orange" for a in "AVLIMFWC"},   # hydrophobic
           **{a: "tab:green" for a in "STNQYGP"},      # polar / special
           **{a: "tab:blue" for a in "KRH"},           # positive
           **{a: "tab:red" for a in "DE"}}             # negative


# ------------------------------------------------------------------ file type
class FastaReader:
    suffixes = (".fasta", ".fa")
    description = "FASTA: '>name key=value ...' header lines, then the sequence"

    def guess_can_open(self, path):
        return Path(path).name.lower().endswith(self.suffixes)

    def read(self, path):
        p = Path(path)
        records, lines = [], []
        with open(p, encoding="utf-8") as fh:
            for k, line in enumerate(fh, 1):
                line = line.strip()
                if not line or line.startswith(";"):
                    continue
                if line.startswith(">"):
                    name, *fields = line[1:].split()
                    record = {"name": name, "sequence": ""}
                    for f in fields:
                        key, sep, value = f.partition("=")
                        if not sep or key in record:
                            raise DataFileError(f"{p} line {k}: header field {f!r} is not a new key=value")
                        record[key] = value
                    records.append(record)
                    lines.append(k)
                elif not records:
                    raise DataFileError(f"{p} line {k}: sequence before the first '>' header")
                else:
                    records[-1]["sequence"] += line
        keys = list(records[0]) if records else ["name", "sequence"]
        for rec, k in zip(records, lines):
            if list(rec) != keys:
                raise DataFileError(f"{p} line {k}: header fields {list(rec)[2:]}, the first record has {keys[2:]}")
        return Table(str(p), {key: [r[key] for r in records] for key in keys}, lines)


# ------------------------------------------------------------------ column type
class ProteinColumn:
    n_columns = 1
    default_column = "sequence"  # a FASTA candidate pool without the output column

    def parse(self, values, table):
        ((name, column),) = values.items()
        out = []
        for i, v in enumerate(column):
            s = str(v).strip().upper()
            bad = sorted(set(s) - set(AMINO_ACIDS))
            if not s or bad:
                why = "empty sequence" if not s else f"{', '.join(map(repr, bad))} not among the 20 amino acids"
                raise DataFileError(f"{table.where(i)}: column {name!r} holds {str(v)[:30]!r}: {why}")
            out.append(s)
        return out

    def format(self, value, columns):
        return str(value)

    def canonical(self, values):
        return [str(v).strip().upper() for v in values]


# ------------------------------------------------------------------ depiction
class ProteinDepiction:
    def can_draw(self, obj):
        return isinstance(obj, str) and bool(obj) and set(obj) <= set(AMINO_ACIDS)

    def draw(self, obj, ax, *, width=12, **kwargs):
        rows = (len(obj) + width - 1) // width
        for i, a in enumerate(obj):
            ax.text((i % width + 0.5) / width, 1 - (i // width + 0.5) / rows, a, color=CLASSES[a],
                    ha="center", va="center", family="monospace", fontsize=7, transform=ax.transAxes)


# ------------------------------------------------------------------ kernel and its saved state
@dataclass
class KmerVocabulary:
    """The k-mers seen in training sequences (sorted); a plain data class."""

    k: int
    kmers: list = field(default_factory=list)

    @classmethod
    def from_sequences(cls, sequences, k):
        return cls(k, sorted({s[i:i + k] for s in sequences for i in range(len(s) - k + 1)}))


def _check_sequences(X, k):
    if isinstance(X, str) or not all(isinstance(s, str) for s in X):
        raise TypeError("kmer_spectrum expects a sequence of amino-acid strings")
    for i, s in enumerate(X):
        if len(s) < k or set(s) - set(AMINO_ACIDS):
            raise ValueError(f"sample {i}: {s[:30]!r} is not an amino-acid sequence of length >= k={k}")


class KmerSpectrumKernel(Kernel):
    """Cosine of k-mer counts.  Unfitted: every one of the 20**k k-mers is a feature; fitted
    (``fit(X)``, done by the models on training inputs): the k-mers of ``vocabulary_``, the
    others counted in one shared bucket."""

    name = "kmer_spectrum"
    normalized = True
    learns_from_data = True

    def __init__(self, k=2):
        self.k = k

    def check_params(self):
        if not isinstance(self.k, int) or not 1 <= self.k <= 5:
            raise ValueError(f"k must be an int in [1, 5], got {self.k!r}")
        return self

    def fit(self, X, y=None):
        self.check_params()
        _check_sequences(X, self.k)
        self.vocabulary_ = KmerVocabulary.from_sequences(X, self.k)
        return self

    def prepare(self, X):
        k = self.k
        _check_sequences(X, k)
        vocab = getattr(self, "vocabulary_", None)
        if vocab is not None:
            index = {m: j for j, m in enumerate(vocab.kmers)}
            n_features, other = len(vocab.kmers) + 1, len(vocab.kmers)
            col = lambda m: index.get(m, other)  # noqa: E731
        else:
            digit = {a: j for j, a in enumerate(AMINO_ACIDS)}
            n_features = 20 ** k
            col = lambda m: sum(digit[a] * 20 ** p for p, a in enumerate(m))  # noqa: E731
        rows, cols = [], []
        for i, s in enumerate(X):
            for t in range(len(s) - k + 1):
                rows.append(i)
                cols.append(col(s[t:t + k]))
        C = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(X), n_features))
        C.sum_duplicates()
        norms = np.sqrt(np.asarray(C.multiply(C).sum(axis=1)).ravel())
        return sp.diags(1 / norms) @ C

    def pairwise(self, A, B):
        return np.asarray((A @ B.T).toarray(), dtype=np.float64)


# ------------------------------------------------------------------ the hooks
@sprokr.hookimpl
def sprokr_readers():
    return {"fasta": FastaReader}


@sprokr.hookimpl
def sprokr_column_types():
    return {"protein": ProteinColumn}


@sprokr.hookimpl
def sprokr_depictions():
    return {"protein": ProteinDepiction}


@sprokr.hookimpl
def sprokr_saveable_classes():
    return [KmerVocabulary]


@sprokr.hookimpl
def sprokr_input_kernels():
    return {"kmer_spectrum": KmerSpectrumKernel}


@sprokr.hookimpl
def sprokr_output_kernels():
    return {"kmer_spectrum": KmerSpectrumKernel}
