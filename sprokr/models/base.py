"""The decoding interface shared by every model that predicts in an output-kernel basis.

A model (SISOKR family, DSOKR) predicts coordinates ``H(x)`` of ``h(x)`` on an output
basis and embeds candidates in the same basis; :class:`OutputKernelModel` turns that into
``predict`` / ``make_candidate_index`` / ``score`` through the model's decoder.  A model
provides: ``output_kernel_``, ``output_features_`` (a fitted
:class:`~sprokr.models.SketchedFeatures`, or None to use ``_exact_output_embedding``),
``decoder_``, ``index_token_``, ``prepare_inputs`` and ``predict_coordinates``.
"""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..utils import iter_chunks, num_samples, take_slice
from ..decoders.candidates import CandidateIndex
from ..persistence import SaveMixin

__all__ = ["OutputKernelModel"]

OUTPUT_DTYPE = np.dtype(np.float64)


class OutputKernelModel(SaveMixin):
    """Mixin: candidate decoding for models with an output-kernel basis."""

    def embed_candidates(self, candidates):
        """Output coordinates ``E(c)`` (n_c, d) and offsets ``-k(c,c)/2`` (None if normalised)."""
        check_is_fitted(self, "output_rank_")
        ky = self.output_kernel_
        Cp = ky.prepare(candidates)
        if num_samples(Cp) == 0:
            raise ValueError("the candidate set is empty; expected at least one candidate")
        if self.output_features_ is not None:
            E = self.output_features_.transform(Cp, getattr(self, "chunk_size", None))
        else:
            E = self._exact_output_embedding(Cp)
        offsets = None if ky.normalized else -0.5 * ky.diag(Cp).astype(OUTPUT_DTYPE)
        return E, offsets

    def make_candidate_index(self, candidates):
        """Embed a candidate set once; pass the result as ``predict(X, candidates=index)``."""
        if num_samples(candidates, "candidates") == 0:
            raise ValueError("the candidate set is empty; expected at least one candidate")
        E, offsets = self.embed_candidates(candidates)
        return CandidateIndex(candidates, E, offsets, owner=self.index_token_)

    def search_index(self, Xp, index, k=1, max_memory_mb=None):
        """Top-k of a :class:`CandidateIndex` for prepared queries ``Xp`` (a ``Decoded``)."""
        budget = max_memory_mb or getattr(self, "max_memory_mb", None) or 256
        return index.search(self.predict_coordinates(Xp, prepared=True), k, budget)

    def predict(self, X, candidates=None, top_k=None):
        """Decode ``X`` over a candidate set.

        Parameters
        ----------
        X : inputs the model accepts, n_q samples
        candidates : collection, CandidateIndex or None
            Candidate outputs (default: the distinct training outputs).
        top_k : int, optional
            If given, return a :data:`sprokr.decoders.Decoded` ``(indices, scores)`` of
            shape (n_q, top_k) into the candidate set instead of the decoded outputs.

        Returns
        -------
        The decoded outputs (a subset of the candidates, in their own type), or ``Decoded``.
        """
        check_is_fitted(self, "output_rank_")
        return self.decoder_.decode(self, X, candidates=candidates, top_k=top_k)

    def score(self, X, Y):
        """Minus the mean squared output-kernel distance ``|psi(f(x)) - psi(y)|^2`` (0 is best)."""
        pred = self.predict(X)
        ky = self.output_kernel_
        A, B = ky.prepare(pred), ky.prepare(Y)
        n = num_samples(B)
        total = 0.0
        for sl in iter_chunks(n, 512):
            a, b = take_slice(A, sl), take_slice(B, sl)
            total += float(np.sum(ky.diag(a) + ky.diag(b) - 2 * np.diag(ky.pairwise(a, b))))
        return -total / n
