"""Decoders: they turn query coordinates and a candidate index into outputs.

:class:`CandidateIndex` (a candidate set embedded in a model's output basis),
:class:`CandidateSets` (one candidate set per query), the :class:`Decoder` protocol and the
built-in ``"candidates"`` decoder (chunked argmax / top-k within a memory budget).
"""
from .base import CandidateDecoder, CandidateSets, Decoder, check_top_k, shared_sets
from .candidates import CandidateIndex, Decoded

BUILTIN_DECODERS = {CandidateDecoder.name: CandidateDecoder}

__all__ = ["Decoder", "CandidateDecoder", "CandidateSets", "CandidateIndex", "Decoded", "check_top_k",
           "shared_sets", "BUILTIN_DECODERS"]
