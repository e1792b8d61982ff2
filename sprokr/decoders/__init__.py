"""Decoders: candidate-set decoding (chunked argmax / top-k) and the Decoder protocol."""
from .base import CandidateDecoder, CandidateSets, Decoder, check_top_k
from .candidates import CandidateIndex, Decoded, grouped_topk_search, topk_search

BUILTIN_DECODERS = {CandidateDecoder.name: CandidateDecoder}

__all__ = ["Decoder", "CandidateDecoder", "CandidateSets", "CandidateIndex", "Decoded", "topk_search",
           "grouped_topk_search", "check_top_k", "BUILTIN_DECODERS"]
