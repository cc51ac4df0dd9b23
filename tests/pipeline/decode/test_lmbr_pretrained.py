"""The hybrid over a pretrained model: word lattices mapped to the model's units, their L, LMBR in our search.

Tiny random MarianMT and M2M100 models (tests/pipeline/nmt/tiny_hf.py) loaded with target ids shifted by one (id
0 free for the FST epsilon), word lattices over their language mapped with lattices/model_units.py, posteriors and
L as for our own models, and the LMBR hook on the pretrained model's scores (bounded gains with patience: L's gains
rise along a lattice path, so the search must not stop at B finished hypotheses).
"""
from __future__ import annotations

import random

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from lattices.lattice import Lattice  # noqa: E402
from lattices.lmatrix import build_lmatrix  # noqa: E402
from lattices.model_units import LABEL_OFFSET, ModelUnitMapper, map_lattice_to_model, sentencepiece_pieces  # noqa: E402
from lattices.posteriors import ngram_posteriors  # noqa: E402
from lattices.theta import Theta  # noqa: E402
from pipeline.decode.batching import decode_sources  # noqa: E402
from pipeline.decode.beam_search import SearchSettings  # noqa: E402
from pipeline.decode.lmbr_hook import lmbr_hook_factory  # noqa: E402
from pipeline.nmt.pretrained import load_pretrained  # noqa: E402
from pipeline.text.tokenizers import get_tokenizer  # noqa: E402
from pipeline.vocab import BOS, EOS  # noqa: E402
from tests.pipeline.nmt.tiny_hf import FAMILIES, synthetic_lines, tiny_family  # noqa: E402

torch.set_num_threads(1)
THETA = Theta.from_precisions([60.0, 35.0, 21.0, 13.0], "plain")
SOURCES = synthetic_lines(4, seed=5)




@pytest.fixture(scope="module", params=sorted(FAMILIES))
def system(request, tmp_path_factory):
    return load_pretrained(tiny_family(request.param, tmp_path_factory.mktemp(request.param)), "de", "en",
                           offset=LABEL_OFFSET)


@pytest.fixture(scope="module")
def targets(system) -> list[str]:
    """What the lattices say (unrelated to what the random model prefers): lines the tokenizer spells without
    <unk> (the tiny SentencePiece model lacks a few letters), as decode_line would drop it."""
    tokenizer = system.vocab.tokenizer
    lines = [line for line in synthetic_lines(40, seed=9)
             if tokenizer.unk_token_id not in tokenizer(text_target=line)["input_ids"]]
    return lines[:len(SOURCES)]


@pytest.fixture(scope="module")
def mapper(system):
    tokenizer, vocab = system.vocab.tokenizer, system.vocab
    detokenizer = get_tokenizer("moses", "en")
    processor = getattr(tokenizer, "spm_target", None) or tokenizer.sp_model  # Marian's target side; M2M100's one
    return ModelUnitMapper(detokenizer.detokenize, sentencepiece_pieces(processor),
                           tokenizer.convert_tokens_to_ids, bos_id=vocab.bos_id - vocab.offset,
                           eos_id=vocab.eos_id - vocab.offset)


class Store:
    def __init__(self, matrices):
        self.matrices = matrices

    def get(self, sentences):
        return [self.matrices[s] for s in sentences]


def word_lattice(words: list[str], rng: random.Random, alternatives: bool) -> Lattice:
    """<s> words </s>; with `alternatives`, some positions also offer another word at a higher cost."""
    symbols: dict[str, int] = {}
    label = lambda w: symbols.setdefault(w, len(symbols) + 1)  # noqa: E731
    arcs = [(0, 1, label(BOS), 0.0)]
    for k, word in enumerate(words):
        arcs.append((k + 1, k + 2, label(word), 0.0))
        if alternatives and rng.random() < 0.5:
            arcs.append((k + 1, k + 2, label(rng.choice(["haus", "katze", "mond"])), 2.0))
    arcs.append((len(words) + 1, len(words) + 2, label(EOS), 0.0))
    return Lattice.from_arcs(len(words) + 3, 0, arcs, {len(words) + 2: 0.0}, {i: w for w, i in symbols.items()})


def lmbr_decode(system, mapper, lattices, weight: float):
    model, vocab = system.model, system.vocab
    matrices = {i: build_lmatrix(ngram_posteriors(map_lattice_to_model(lattice, mapper), 4, 1.0, "tropical"), THETA,
                                 model.tgt_vocab_size, sentence=i) for i, lattice in enumerate(lattices)}
    settings = SearchSettings(beam=4, weight=weight, max_length_a=0, max_length_b=40, patience=8)
    factory = lmbr_hook_factory(Store(matrices), model.bos_id, vocab_size=model.tgt_vocab_size, gains="bounded")
    hyps = decode_sources(model, [vocab.encode_line(line) for line in SOURCES], settings, batch_sentences=2,
                          hook_factory=factory)
    return [vocab.decode_line(sentence[0].tokens) for sentence in hyps]


def test_with_lambda_near_zero_the_lattice_string_comes_out_through_the_models_units(system, mapper, targets):
    rng = random.Random(1)
    lattices = [word_lattice(line.split(), rng, alternatives=False) for line in targets]
    assert lmbr_decode(system, mapper, lattices, weight=1e-6) == targets


def test_the_model_alone_prefers_other_strings_and_lmbr_moves_it_to_the_lattice(system, mapper, targets):
    vocab = system.vocab
    settings = SearchSettings(beam=4, max_length_a=0, max_length_b=40)
    alone = decode_sources(system.model, [vocab.encode_line(line) for line in SOURCES], settings)
    assert all(vocab.decode_line(hyps[0].tokens) != target for hyps, target in zip(alone, targets))
    assert all(t >= LABEL_OFFSET for hyps in alone for h in hyps for t in h.tokens)  # id 0 (epsilon): never
    rng = random.Random(2)
    lattices = [word_lattice(line.split(), rng, alternatives=True) for line in targets]
    hybrid = lmbr_decode(system, mapper, lattices, weight=0.05)
    assert sum(h == t for h, t in zip(hybrid, targets)) >= 3


def test_one_decoding_call_with_l_built_from_lattice_files_in_the_models_units(system, targets, tmp_path):
    """The whole path of a split: word lattice files -> L shard in the model's ids (lattices/model_shards.py) ->
    translate_lines on the raw source lines with the LMBR hook over the shard (sorted, in batches of 2)."""
    from lattices.fst_io import lattice_paths, write_lattice
    from lattices.lmatrix_shards import LMatrixStore
    from lattices.model_shards import build_model_lmatrix_shard, model_unit_mapper
    from pipeline.decode.translate import load_models, translate_lines

    models = load_models([system.name], languages=("de", "en"))
    vocab = models.tgt_vocab
    rng = random.Random(1)
    for i, line in enumerate(targets):
        write_lattice(word_lattice(line.split(), rng, alternatives=False), tmp_path / "lattices" / f"{i}.fst")
    mapper = model_unit_mapper(vocab, get_tokenizer("moses", "en").detokenize)
    stats = build_model_lmatrix_shard(lattice_paths(tmp_path), mapper, len(vocab), THETA, 1.0, "tropical", 0,
                                      tmp_path / "shard-0.npz", model=system.name)
    assert stats["sentences"] == len(targets) and stats["signature"]["vocab_size"] == len(vocab)
    factory = lmbr_hook_factory(LMatrixStore([tmp_path / "shard-0.npz"]), vocab.bos_id, vocab_size=len(vocab),
                                gains="bounded")
    settings = SearchSettings(beam=4, weight=1e-6, max_length_a=0, max_length_b=40, patience=8)
    result = translate_lines(SOURCES, models, settings, batch_sentences=2, hook_factory=factory)
    assert result.text == targets
