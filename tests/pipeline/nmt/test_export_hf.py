"""Our Transformer exported to the `transformers` format (Blenderbot): after save_pretrained and from_pretrained, its
logits equal ours on padded batches, and `generate`'s n-best equals our decoder's.

The model is small and random, with separate source and target vocabularies of different sizes (the export's joint
vocabulary). Its weights are made large (peaked distributions, where differences would show) and its output gives
EOS a bias, so that beam searches end before their length limit (see test_pretrained.py for why that matters).
"""
from __future__ import annotations

import copy
import math
import random

import pytest
import torch

pytest.importorskip("transformers")

from pipeline.decode.batching import decode_sources  # noqa: E402
from pipeline.decode.beam_search import SearchSettings  # noqa: E402
from pipeline.nmt.checkpoint import save_checkpoint  # noqa: E402
from pipeline.nmt.export_hf import (ExportedVocabulary, export_checkpoint, export_model, hf_model,  # noqa: E402
                                    load_exported)
from pipeline.nmt.pretrained import PretrainedModel  # noqa: E402
from pipeline.nmt.transformer import TransformerConfig, TransformerModel  # noqa: E402
from pipeline.vocab import Vocabulary  # noqa: E402

BEAM, LIMIT = 4, 40
SOURCE_WORDS = [f"s{i}" for i in range(23)]
TARGET_WORDS = [f"t{i}" for i in range(13)]


@pytest.fixture(scope="module")
def vocabularies() -> tuple[Vocabulary, Vocabulary]:
    return Vocabulary.build([SOURCE_WORDS]), Vocabulary.build([TARGET_WORDS])


def small_model(src: Vocabulary, tgt: Vocabulary, seed: int = 0, eos_bias: float = 5.0,
                noise: float = 0.2) -> TransformerModel:
    torch.manual_seed(seed)
    config = TransformerConfig(src_vocab_size=len(src), tgt_vocab_size=len(tgt), pad_id=tgt.pad_id,
                               bos_id=tgt.bos_id, eos_id=tgt.eos_id, layers=2, model_size=32, heads=4, ff_size=48,
                               max_positions=64)
    model = TransformerModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * noise)
        # EOS likely at every step: the decoder's last norm makes unit 0 the constant 1, read only by EOS's row
        model.decoder_norm.weight[0], model.decoder_norm.bias[0] = 0.0, 1.0
        model.tgt_embed.weight[:, 0] = 0.0
        model.tgt_embed.weight[tgt.eos_id, 0] = eos_bias
    return model


@pytest.fixture(scope="module")
def exported(vocabularies, tmp_path_factory):
    from transformers import AutoModelForSeq2SeqLM

    src, tgt = vocabularies
    model = small_model(src, tgt)
    folder = export_model(model, src, tgt, tmp_path_factory.mktemp("hf") / "model")
    return model, AutoModelForSeq2SeqLM.from_pretrained(folder).eval(), ExportedVocabulary.load(folder), folder


def random_sources(n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(SOURCE_WORDS) for _ in range(rng.randint(1, 9))] for _ in range(n)]


def padded(rows: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    return ids, torch.tensor([len(r) for r in rows])


def test_logits_equal_ours_on_padded_batches(exported, vocabularies):
    model, theirs, vocab, _ = exported
    src_vocab, tgt_vocab = vocabularies
    rng = random.Random(3)
    for seed in range(3):
        sources = random_sources(6, seed)
        targets = [[tgt_vocab.bos_id] + [rng.randrange(4, len(tgt_vocab)) for _ in range(rng.randint(1, 10))]
                   for _ in sources]
        src, lengths = padded([src_vocab.encode(s) + [src_vocab.eos_id] for s in sources], src_vocab.pad_id)
        tgt_in, _ = padded(targets, tgt_vocab.pad_id)
        joint, _ = padded([vocab.encode_source(s) for s in sources], theirs.config.pad_token_id)
        mask = (torch.arange(joint.shape[1])[None, :] < lengths[:, None]).long()
        with torch.no_grad():
            ours = model(src, lengths, tgt_in)
            logits = theirs(input_ids=joint, attention_mask=mask, decoder_input_ids=tgt_in).logits
        assert logits.shape[-1] == len(tgt_vocab) + len(src_vocab)
        assert torch.isneginf(logits[..., len(tgt_vocab):]).all()
        assert (logits[..., :len(tgt_vocab)] - ours).abs().max().item() < 1e-5
        assert ours.abs().max().item() > 5  # peaked distributions: a difference would show


def test_the_residual_scale_is_what_makes_them_equal(exported, vocabularies):
    """Blenderbot's LayerNorms have eps 1e-5, ours 1e-6: the export runs the residual stream at sqrt(10) times ours
    (positions, embeddings, each sub-layer's output), the decoder's last LayerNorm scaled back. In float64, where
    rounding is out of the way, the exported logits equal ours to 1e-10; without that scale (the eps difference
    kept) they differ by far more."""
    model, theirs, _, _ = exported
    src_vocab, tgt_vocab = vocabularies
    scale = math.sqrt(1e-5 / 1e-6)
    with torch.no_grad():
        assert torch.allclose(theirs.model.encoder.embed_positions.weight, model.positions * scale, atol=1e-6)
        assert torch.allclose(theirs.model.decoder.layer_norm.weight, model.decoder_norm.weight / scale, atol=1e-6)
        model = copy.deepcopy(model).double()
        exact = hf_model(model, src_vocab, tgt_vocab)
        naive = hf_model(model, src_vocab, tgt_vocab, residual_scale=1.0)
        sources = random_sources(6, seed=4)
        src, lengths = padded([src_vocab.encode(s) + [src_vocab.eos_id] for s in sources], src_vocab.pad_id)
        tgt_in = torch.tensor([[tgt_vocab.bos_id, 5, 6, 7, 8]] * len(sources))
        joint, _ = padded([ExportedVocabulary(src_vocab, tgt_vocab).encode_source(s) for s in sources], 0)
        mask = (torch.arange(joint.shape[1])[None, :] < lengths[:, None]).long()
        ours = model(src, lengths, tgt_in)
        differences = [(m(input_ids=joint, attention_mask=mask, decoder_input_ids=tgt_in).logits[..., :len(tgt_vocab)]
                        - ours).abs().max().item() for m in (exact, naive)]
    assert ours.dtype == torch.float64
    assert differences[0] < 1e-10 and differences[1] > 1e-6, differences


def generate_nbest(theirs, vocab: ExportedVocabulary, sources: list[list[str]]):
    rows = [vocab.encode_source(s) for s in sources]
    ids, lengths = padded(rows, theirs.config.pad_token_id)
    mask = (torch.arange(ids.shape[1])[None, :] < lengths[:, None]).long()
    out = theirs.generate(input_ids=ids, attention_mask=mask, num_beams=BEAM, num_return_sequences=BEAM,
                          length_penalty=0.0, early_stopping=True, max_length=LIMIT + 6, output_scores=True,
                          return_dict_in_generate=True)
    eos = vocab.target.eos_id
    nbest = []
    for i in range(len(sources)):
        entries = []
        for row in range(i * BEAM, (i + 1) * BEAM):
            tokens = out.sequences[row, 1:].tolist()  # after the decoder start token
            assert eos in tokens, "generate's hypothesis did not end by EOS"
            entries.append((tuple(tokens[:tokens.index(eos)]), float(out.sequences_scores[row])))
        nbest.append(entries)
    return nbest


def our_nbest(model, sources: list[list[int]], batch: int):
    settings = SearchSettings(beam=BEAM, nbest=BEAM, max_length_a=0, max_length_b=LIMIT, full_beam=True)
    return [[(h.tokens, h.score) for h in hyps]
            for hyps in decode_sources(model, sources, settings, batch_sentences=batch)]


def assert_same_nbest(ours, theirs, vocab: ExportedVocabulary) -> None:
    for mine, reference in zip(ours, theirs, strict=True):
        assert [t for t, _ in mine] == [t for t, _ in reference]
        assert [s for _, s in mine] == pytest.approx([s for _, s in reference], abs=1e-4)
        assert all(len(t) < LIMIT for t, _ in mine), "a hypothesis reached the length limit"
        assert all(i < vocab.source_offset for t, _ in mine for i in t)


def test_generate_gives_our_decoders_nbest(exported, vocabularies):
    model, theirs, vocab, _ = exported
    src_vocab, _ = vocabularies
    sources = random_sources(8, seed=7)
    ours = our_nbest(model, [src_vocab.encode(s) + [src_vocab.eos_id] for s in sources], batch=len(sources))
    assert_same_nbest(ours, generate_nbest(theirs, vocab, sources), vocab)
    lengths = {len(t) for sentence in ours for t, _ in sentence}
    assert len(lengths) > 2, f"the model's hypotheses all have lengths {lengths}: a weak test"
    theirs_one_by_one = [generate_nbest(theirs, vocab, [s])[0] for s in sources[:3]]
    assert_same_nbest(ours[:3], theirs_one_by_one, vocab)


def test_our_decoder_over_the_exported_model_gives_the_same_nbest(exported, vocabularies):
    """The exported model behind the step interface (pipeline/nmt/pretrained.py), as the hybrid drives it."""
    model, theirs, vocab, _ = exported
    src_vocab, tgt_vocab = vocabularies
    sources = random_sources(6, seed=9)
    adapter = PretrainedModel(theirs, tgt_vocab.bos_id, tgt_vocab.eos_id, tgt_vocab.pad_id)
    ours = our_nbest(model, [src_vocab.encode(s) + [src_vocab.eos_id] for s in sources], batch=3)
    over_export = our_nbest(adapter, [vocab.encode_source(s) for s in sources], batch=3)
    assert_same_nbest(over_export, ours, vocab)


def test_the_folder_read_back_scores_as_wide_as_the_target_vocabulary(exported, vocabularies):
    """load_exported: the pipeline's L and acceptors (target width) index its scores; they and its n-best are ours."""
    model, theirs, _, folder = exported
    src_vocab, tgt_vocab = vocabularies
    adapter, vocab = load_exported(folder)
    assert adapter.tgt_vocab_size == len(tgt_vocab) < vocab.size
    sources = random_sources(5, seed=11)
    src, lengths = padded([src_vocab.encode(s) + [src_vocab.eos_id] for s in sources], src_vocab.pad_id)
    joint, _ = padded([vocab.encode_source(s) for s in sources], theirs.config.pad_token_id)
    bos = torch.full((len(sources),), tgt_vocab.bos_id)
    with torch.no_grad():
        expected, _ = model.step(model.encode(src, lengths), bos)
        got, _ = adapter.step(adapter.encode(joint, lengths), bos)
    assert got.shape == expected.shape == (len(sources), len(tgt_vocab))
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=0)
    assert_same_nbest(our_nbest(adapter, [vocab.encode_source(s) for s in sources], batch=2),
                      our_nbest(model, [src_vocab.encode(s) + [src_vocab.eos_id] for s in sources], batch=2), vocab)


def test_the_folder_and_its_vocabularies(exported, vocabularies, tmp_path):
    import json

    model, _, vocab, folder = exported
    src_vocab, tgt_vocab = vocabularies
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "blenderbot" and config["activation_function"] == "relu"
    assert config["decoder_start_token_id"] == tgt_vocab.bos_id and config["scale_embedding"] is True
    generation = json.loads((folder / "generation_config.json").read_text())
    assert generation["decoder_start_token_id"] == tgt_vocab.bos_id and generation["eos_token_id"] == tgt_vocab.eos_id
    assert not generation.get("encoder_no_repeat_ngram_size") and generation.get("forced_eos_token_id") is None
    assert vocab.source == src_vocab and vocab.target == tgt_vocab
    offset = len(tgt_vocab)
    assert vocab.source_offset == offset
    assert vocab.encode_source(["s3", "nope"]) == [offset + src_vocab.id("s3"), offset + src_vocab.unk_id,
                                                   offset + src_vocab.eos_id]
    ids = [tgt_vocab.bos_id] + tgt_vocab.encode(["t1", "t2"]) + [tgt_vocab.eos_id, tgt_vocab.pad_id]
    assert vocab.decode_target(ids) == ["t1", "t2"]
    # from a checkpoint file, as the pipeline writes them
    src_vocab.save(tmp_path / "src.json")
    tgt_vocab.save(tmp_path / "tgt.json")
    ckpt = save_checkpoint(tmp_path / "model.pt", model.config, model.state_dict(),
                           {"source": "src.json", "target": "tgt.json"})
    out = export_checkpoint(ckpt, tmp_path / "hf")
    assert (out / "model.safetensors").read_bytes() == (folder / "model.safetensors").read_bytes()


def test_only_transformers_export(vocabularies):
    from pipeline.nmt.gru import GruConfig, GruModel

    src, tgt = vocabularies
    gru = GruModel(GruConfig(src_vocab_size=len(src), tgt_vocab_size=len(tgt), pad_id=0, bos_id=1, eos_id=2,
                             embed_size=8, hidden_size=8, attention_size=8))
    with pytest.raises(TypeError, match="only Transformer models"):
        hf_model(gru, src, tgt)
