"""The LMBR hook inside `model.generate` (HookLogitsProcessor) adds exactly what it adds inside our beam search.

Tiny random MarianMT and M2M100 models (tests/pipeline/nmt/tiny_hf.py); L matrices of random lattices over the
models' own token ids, and over them + LABEL_OFFSET as the pipeline's L shards of a pretrained model count them. Each search runs with a recording hook that notes, per (sentence, output prefix), what the
LMBR hook added to the log-probabilities; every prefix both searches reached must carry the same terms, and the
n-best lists must agree (our search with the full-beam EOS policy, `generate` with early_stopping=True).
"""
from __future__ import annotations

import random

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from transformers import LogitsProcessorList  # noqa: E402

from lattices.lattice import Lattice  # noqa: E402
from lattices.lmatrix import build_lmatrix  # noqa: E402
from lattices.posteriors import ngram_posteriors  # noqa: E402
from lattices.theta import Theta  # noqa: E402
from pipeline.decode.batching import decode_sources  # noqa: E402
from pipeline.decode.beam_search import SearchSettings  # noqa: E402
from pipeline.decode.hooks import ScoreHook  # noqa: E402
from pipeline.decode.lmbr_hook import lmbr_hook_factory  # noqa: E402
from pipeline.decode.logits_processor import HookLogitsProcessor  # noqa: E402
from lattices.model_units import LABEL_OFFSET  # noqa: E402
from pipeline.nmt.pretrained import load_pretrained  # noqa: E402
from tests.pipeline.nmt.tiny_hf import FAMILIES, synthetic_lines, tiny_family  # noqa: E402

torch.set_num_threads(1)
BEAM, LIMIT, WEIGHT = 4, 40, 0.5
THETA = Theta.from_precisions([60.0, 35.0, 21.0, 13.0], "plain")
LINES = synthetic_lines(6, seed=5)


@pytest.fixture(scope="module", params=[(family, offset) for family in sorted(FAMILIES) for offset in (0, LABEL_OFFSET)],
                ids=lambda p: f"{p[0]}-offset{p[1]}")
def system(request, tmp_path_factory):
    """The model loaded as our search sees it: with offset LABEL_OFFSET, as the pipeline's L shards count ids."""
    family, offset = request.param
    return load_pretrained(tiny_family(family, tmp_path_factory.mktemp(family)), "de", "en", offset=offset)


class Store:
    def __init__(self, matrices):
        self.matrices = matrices

    def get(self, sentences):
        return [self.matrices[s] for s in sentences]


def random_lattice(rng: random.Random, bos: int, eos: int, pool: list[int]) -> Lattice:
    """A few strings of the model's pieces with random costs, <s> ... </s> as the model's BOS and EOS."""
    arcs, n = [], 1
    for _ in range(rng.randint(2, 4)):
        labels = [bos, *(rng.choice(pool) for _ in range(rng.randint(1, 5))), eos]
        prev = 0
        for k, x in enumerate(labels):
            nxt = 1 if k == len(labels) - 1 else n + 1
            n = max(n, nxt)
            arcs.append((prev, nxt, x, rng.uniform(0, 2) if k == 0 else 0.0))
            prev = nxt
    return Lattice.from_arcs(n + 1, 0, arcs, {1: 0.0})


def lmbr_factory(system):
    model, vocab = system.model, system.vocab
    pool = [i for i, token in enumerate(vocab.tokens) if token.startswith("▁")][:12]
    rng = random.Random(7)
    matrices = {i: build_lmatrix(ngram_posteriors(random_lattice(rng, model.bos_id, model.eos_id, pool), 4, 1.0,
                                                  "tropical"), THETA, model.tgt_vocab_size, sentence=i)
                for i in range(len(LINES))}
    return lmbr_hook_factory(Store(matrices), model.bos_id, vocab_size=model.tgt_vocab_size)


class RecordingHook(ScoreHook):
    """Delegates to `inner` and records what it adds: terms[(sentence, prefix)] = scores - log_probs [V]."""

    def __init__(self, inner: ScoreHook, sentences: list[int], terms: dict) -> None:
        self.inner, self.terms = inner, terms
        self.sentences = list(sentences)                       # batch position -> input index, of the active
        self.rows = [(s, ()) for s in range(len(sentences))]   # per row: (batch position, prefix)

    def scores(self, log_probs, t):
        before = log_probs.clone()
        out = self.inner.scores(log_probs, t)
        for r, (s, prefix) in enumerate(self.rows):
            self.terms[(self.sentences[s], prefix)] = (out[r] - before[r]).clone()
        return out

    def reorder(self, index):
        self.inner.reorder(index)
        self.rows = [self.rows[i] for i in index.tolist()]

    def advance(self, tokens):
        self.inner.advance(tokens)
        self.rows = [(s, prefix + (y,)) for (s, prefix), y in zip(self.rows, tokens.tolist())]

    def select_sentences(self, keep):
        self.inner.select_sentences(keep)
        kept = keep.tolist()
        renumber = {old: new for new, old in enumerate(kept)}
        self.sentences = [self.sentences[k] for k in kept]
        self.rows = [(renumber[s], prefix) for s, prefix in self.rows]


def test_generate_with_the_processor_adds_our_lmbr_terms_and_finds_our_nbest(system):
    model, vocab = system.model, system.vocab
    factory = lmbr_factory(system)
    ours_terms, theirs_terms = {}, {}

    def recording(indices, device):
        return RecordingHook(factory(indices, device), list(indices), ours_terms)

    settings = SearchSettings(beam=BEAM, nbest=BEAM, max_length_a=0, max_length_b=LIMIT, weight=WEIGHT,
                              full_beam=True)
    ours = decode_sources(model, [vocab.encode_line(line) for line in LINES], settings, batch_sentences=len(LINES),
                          sort=False, hook_factory=recording)

    hook = RecordingHook(factory(range(len(LINES)), torch.device("cpu")), list(range(len(LINES))), theirs_terms)
    processor = HookLogitsProcessor(hook, BEAM, prefix_length=1 + len(model.prefix), weight=WEIGHT,
                                    offset=model.offset)
    inputs = vocab.tokenizer(LINES, return_tensors="pt", padding=True)
    forced = {"forced_bos_token_id": model.bos_id - model.offset} if model.prefix else {}
    out = model.model.generate(**inputs, num_beams=BEAM, num_return_sequences=BEAM, length_penalty=0.0,
                               early_stopping=True, max_new_tokens=LIMIT + 5, output_scores=True,
                               return_dict_in_generate=True, logits_processor=LogitsProcessorList([processor]),
                               **forced)

    shared = ours_terms.keys() & theirs_terms.keys()
    assert len(shared) >= 2 * len(LINES) and len(shared) >= len(ours_terms) // 2
    for key in shared:
        torch.testing.assert_close(ours_terms[key], theirs_terms[key], rtol=0, atol=1e-6, equal_nan=True)
    assert any(bool((term[torch.isfinite(term)] != 0).any()) for term in ours_terms.values())  # L did add

    skip = 1 + len(model.prefix)
    for i, hyps in enumerate(ours):
        theirs = []
        for row in range(i * BEAM, (i + 1) * BEAM):
            ids = [i + model.offset for i in out.sequences[row, skip:].tolist()]  # in our ids
            theirs.append((tuple(ids[:ids.index(vocab.eos_id)]), float(out.sequences_scores[row])))
        assert [h.tokens for h in hyps] == [tokens for tokens, _ in theirs]
        assert [h.score for h in hyps] == pytest.approx([score for _, score in theirs], abs=1e-4)
        assert all(len(h.tokens) < LIMIT for h in hyps)


def test_a_prefix_length_that_misses_the_prompt_is_refused(system):
    hook = ScoreHook()
    processor = HookLogitsProcessor(hook, BEAM, prefix_length=0)
    with pytest.raises(ValueError, match="prefix_length 0 does not match"):
        processor(torch.zeros((BEAM, 2), dtype=torch.long), torch.zeros((BEAM, 5)))
