"""Batched beam decoding of the NMT systems (Iglesias et al. 2018, Algorithm 1), on the model step interface of
pipeline/nmt/interface.py. No Luigi here.

One concept per module: `scores` (step scores laid out per sentence, the length limit), `topk` (early pruning,
top-B, origin and token), `finalize` (finished sets, the backoff stack, n-best), `hooks` (the score hook where
LMBR adds L, and constraint masks), `beam_search` (the batched loop over one batch of sentences), `batching`
(sentence batches, sorting, input order), `unbatched` (the one-query-per-hypothesis reference decoder),
`translate` (files: preprocessing, decoding, postprocessing, timings).
"""

from pipeline.decode.batching import decode_sources, make_batches
from pipeline.decode.beam_search import SearchSettings, beam_search
from pipeline.decode.finalize import Hypothesis
from pipeline.decode.hooks import ChainHook, HookFactory, ScoreHook, SentenceMaskHook

__all__ = ["ChainHook", "HookFactory", "Hypothesis", "ScoreHook", "SearchSettings", "SentenceMaskHook",
           "beam_search", "decode_sources", "make_batches"]
