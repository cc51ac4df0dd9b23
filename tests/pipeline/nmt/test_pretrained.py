"""Pretrained transformers models behind the step interface: our beam search gives `generate`'s n-best lists.

The models are tiny, random and built in the test (tiny_hf.py): no network. `generate` runs with num_beams=k,
length_penalty=0 (raw sums of log-probabilities) and early_stopping=True (a sentence ends with k finished
hypotheses, as Algorithm 1 does); our search with the same EOS policy (full_beam). Every hypothesis must end by EOS
before the length limit (the models give EOS a bias), since at the limit the two searches differ by design (ours
forces EOS, `generate` returns the hypotheses unfinished).
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from pipeline.decode.batching import decode_sources  # noqa: E402
from pipeline.decode.beam_search import SearchSettings  # noqa: E402
from pipeline.nmt.pretrained import PretrainedModelError, load_pretrained  # noqa: E402
from tests.pipeline.nmt.tiny_hf import FAMILIES, synthetic_lines, tiny_family, tiny_marian  # noqa: E402

BEAM, LIMIT = 4, 40
LINES = synthetic_lines(8, seed=5)


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def system(request, tmp_path_factory):
    return load_pretrained(tiny_family(request.param, tmp_path_factory.mktemp(request.param)), "de", "en")


def generate_nbest(system, lines: list[str]) -> list[list[tuple[tuple[int, ...], float]]]:
    """`generate`'s k-best (tokens without the decoder's prefix and EOS, score) of each line, lines in one batch."""
    model, vocab = system.model, system.vocab
    inputs = vocab.tokenizer(lines, return_tensors="pt", padding=True)
    forced = {"forced_bos_token_id": model.bos_id} if model.prefix else {}
    out = model.model.generate(**inputs, num_beams=BEAM, num_return_sequences=BEAM, length_penalty=0.0,
                               early_stopping=True, max_new_tokens=LIMIT + 5, output_scores=True,
                               return_dict_in_generate=True, **forced)
    skip = 1 + len(model.prefix)  # decoder_start_token_id (and M2M100's language token)
    nbest = []
    for i, line in enumerate(lines):
        entries = []
        for row in range(i * BEAM, (i + 1) * BEAM):
            ids = out.sequences[row, skip:].tolist()
            assert vocab.eos_id in ids, "generate's hypothesis did not end by EOS"
            entries.append((tuple(ids[:ids.index(vocab.eos_id)]), float(out.sequences_scores[row])))
        nbest.append(entries)
    return nbest


def our_nbest(system, lines: list[str], batch: int, early_exit: bool = False,
              **options) -> list[list[tuple[tuple[int, ...], float]]]:
    sources = [system.vocab.encode_line(line) for line in lines]
    settings = SearchSettings(beam=BEAM, nbest=BEAM, max_length_a=0, max_length_b=LIMIT, full_beam=True,
                              early_exit=early_exit)
    hyps = decode_sources(system.model, sources, settings, batch_sentences=batch, **options)
    return [[(h.tokens, h.score) for h in sentence] for sentence in hyps]


def assert_same_nbest(ours, theirs, vocab) -> None:
    for mine, reference in zip(ours, theirs, strict=True):
        assert [vocab.decode_line(t) for t, _ in mine] == [vocab.decode_line(t) for t, _ in reference]
        assert [t for t, _ in mine] == [t for t, _ in reference]
        assert [s for _, s in mine] == pytest.approx([s for _, s in reference], abs=1e-4)
        assert all(len(t) < LIMIT for t, _ in mine), "a hypothesis reached the length limit"


def test_batched_nbest_equals_generate(system):
    ours = our_nbest(system, LINES, batch=len(LINES))
    assert_same_nbest(ours, generate_nbest(system, LINES), system.vocab)
    lengths = {len(t) for sentence in ours for t, _ in sentence}
    assert len(lengths) > 2, f"the model's hypotheses all have lengths {lengths}: a weak test"


def test_early_exit_keeps_the_nbest_of_generate(system):
    ours = our_nbest(system, LINES, batch=4, early_exit=True)
    assert_same_nbest(ours, generate_nbest(system, LINES), system.vocab)


def test_unbatched_nbest_equals_generate(system):
    ours = our_nbest(system, LINES[:4], batch=1)
    theirs = [generate_nbest(system, [line])[0] for line in LINES[:4]]
    assert_same_nbest(ours, theirs, system.vocab)


def test_streaming_refill_joins_the_cache(system):
    """Batches that start at other steps join (DecoderState.concat over the cache tensors): the same n-best."""
    plain = our_nbest(system, LINES, batch=3)
    streamed = our_nbest(system, LINES, batch=3, streaming=True, refill=0.5)
    assert_same_nbest(streamed, plain, system.vocab)


def test_the_paper_eos_policy_also_runs(system):
    """Without full_beam the beam gives up finished slots for a step: a valid search, n-best sorted by score."""
    sources = [system.vocab.encode_line(line) for line in LINES[:3]]
    settings = SearchSettings(beam=BEAM, nbest=BEAM, max_length_a=0, max_length_b=LIMIT)
    for hyps in decode_sources(system.model, sources, settings, batch_sentences=3):
        scores = [h.score for h in hyps]
        assert len(hyps) == BEAM and scores == sorted(scores, reverse=True)


def test_vocabulary_follows_the_contract(system):
    vocab, model = system.vocab, system.model
    assert len(vocab) == model.tgt_vocab_size
    assert (vocab.pad_id, vocab.bos_id, vocab.eos_id) == (model.pad_id, model.bos_id, model.eos_id)
    assert vocab.tokens[vocab.eos_id] == "</s>" and vocab.id("</s>") == vocab.eos_id
    ids = vocab.encode_line(LINES[0])
    assert ids[-1] == vocab.eos_id
    pieces = [p for p in vocab.decode(ids) if p not in ("</s>", "__de__")]
    assert vocab.encode(pieces) == [i for i in ids if vocab.tokens[i] in pieces]
    assert vocab.decode_line([i for i in ids if i != vocab.eos_id and vocab.tokens[i] != "__de__"]) == LINES[0]


# Loading errors


def test_a_hub_name_offline_fails_at_once_naming_the_model_and_the_folder(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.monotonic()
    with pytest.raises(PretrainedModelError, match=r"Helsinki-NLP/opus-mt-xx-yy: not in the Hugging Face cache and "
                                                   r"the hub is not to be reached \(offline\); put the model in .*hub"):
        load_pretrained("Helsinki-NLP/opus-mt-xx-yy", "de", "en")
    assert time.monotonic() - started < 5
    with pytest.raises(PretrainedModelError, match="opus-mt-xx-yy"):
        load_pretrained("Helsinki-NLP/opus-mt-xx-yy", "de", "en", local_files_only=True)


def test_a_folder_without_its_tokenizer_is_a_clear_error(system, tmp_path):
    folder = tmp_path / "no-tokenizer"
    system.model.model.save_pretrained(folder)
    with pytest.raises(PretrainedModelError, match=rf"{folder}: the model's tokenizer is missing"):
        load_pretrained(folder, "de", "en")


def test_a_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(PretrainedModelError, match="no such model folder"):
        load_pretrained(tmp_path / "nothing-here", "de", "en")


def test_languages_that_do_not_match_the_task_are_a_clear_error(system):
    folder = system.name
    if system.model.prefix:  # M2M100: the language must be one of its tokens
        with pytest.raises(PretrainedModelError, match="no language token for the task's target language 'xx'"):
            load_pretrained(folder, "de", "xx")
        with pytest.raises(PretrainedModelError, match="source language 'xx'"):
            load_pretrained(folder, "xx", "en")
    else:  # Marian: one pair, named by its tokenizer
        with pytest.raises(PretrainedModelError, match=r"translates de -> en, the task's source language is en"):
            load_pretrained(folder, "en", "de")
        with pytest.raises(PretrainedModelError, match=r"the task's target language is ja"):
            load_pretrained(folder, "de", "ja")


# The model's positions


def test_the_length_limit_stops_at_marians_last_position(tmp_path):
    """A Marian model with 12 positions that never prefers EOS: the search stops at 11 tokens (position 11 is the
    last one a step reads) instead of indexing past the position table, whatever max_length_b says; a longer source
    is refused before it reaches the encoder."""
    from pipeline.decode.batching import position_limit
    from pipeline.decode.translate import load_models, translate_lines
    from pipeline.errors import DataError

    folder = tiny_marian(tmp_path / "short", seed=1, init_std=0.15, eos_bias=-30.0, max_positions=12)
    system = load_pretrained(folder, "de", "en")
    assert system.model.max_positions == 12 and position_limit(system.model) == 12
    sources = [system.vocab.encode_line(line) for line in ("haus katze", "wald feld stadt")]
    settings = SearchSettings(beam=2, nbest=2, max_length_a=3.0, max_length_b=100)
    for hyps in decode_sources(system.model, sources, settings, batch_sentences=2):
        assert [len(h.tokens) for h in hyps] == [11, 11]
    models = load_models([folder], languages=("de", "en"))
    assert position_limit(models.ensemble) == 12
    with pytest.raises(DataError, match=r"line 2: \d+ source subwords \(with </s>\), more than the model's 12 "
                                        r"positions"):
        translate_lines(["haus", " ".join(["haus"] * 20)], models, settings, target=None)


def test_m2m100s_prefix_takes_one_of_its_positions(system):
    config = system.model.model.config
    assert system.model.max_positions == config.max_position_embeddings - len(system.model.prefix)


# One decoding call: raw lines in, text out


def test_translate_lines_reads_raw_text_through_the_models_tokenizer(system):
    """load_models on the model's folder and translate_lines on raw lines (sorted, in batches of 3, early exit, an
    empty line kept): the texts of `generate`'s 1-best; the pieces are the model's."""
    from pipeline.decode.translate import load_models, translate_lines

    models = load_models([system.name], languages=("de", "en"))
    assert models.pretrained and models.members == [Path(system.name)]
    lines = LINES[:3] + [""] + LINES[3:]
    settings = SearchSettings(beam=BEAM, nbest=2, max_length_a=0, max_length_b=LIMIT, full_beam=True, early_exit=True)
    result = translate_lines(lines, models, settings, batch_sentences=3, sort=True)
    vocab = models.tgt_vocab
    expected = [system.vocab.decode_line(nbest[0][0]) for nbest in generate_nbest(system, LINES)]
    assert result.text == expected[:3] + [""] + expected[3:]
    assert result.nbest_bpe == [[" ".join(vocab.decode(h.tokens)) for h in hyps] for hyps in result.nbest]
    assert result.nbest_text == [[vocab.decode_line(h.tokens) for h in hyps] for hyps in result.nbest]
    assert [len(hyps) for hyps in result.nbest] == [2, 2, 2, 0] + [2] * (len(LINES) - 3)
    assert result.stats["decoded_sentences"] == len(LINES)
    assert result.stats["source_words"] == sum(len(line.split()) for line in LINES)


def test_a_pretrained_model_is_loaded_alone_and_for_the_tasks_languages(system, tmp_path):
    from pipeline.decode.translate import load_models
    from pipeline.nmt.checkpoint import CheckpointError

    with pytest.raises(CheckpointError, match="a pretrained model is loaded for a task's languages"):
        load_models([system.name])
    with pytest.raises(CheckpointError, match="decodes alone"):
        load_models([system.name, system.name], languages=("de", "en"))


def test_model_folder_finds_a_hub_name_in_the_cache_and_fails_at_once_offline(system, tmp_path, monkeypatch):
    """A hub name resolves to its snapshot in the Hugging Face cache (laid out as the hub client writes it);
    one that is not there fails at once offline, naming the model."""
    import shutil

    from huggingface_hub import constants

    from pipeline.nmt.pretrained import model_folder

    assert model_folder(system.name) == Path(system.name)
    cache = tmp_path / "hub"
    snapshot = cache / "models--tiny--opus-mt-de-en" / "snapshots" / ("0" * 40)
    shutil.copytree(system.name, snapshot)
    (cache / "models--tiny--opus-mt-de-en" / "refs").mkdir()
    (cache / "models--tiny--opus-mt-de-en" / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert model_folder("tiny/opus-mt-de-en") == snapshot
    with pytest.raises(PretrainedModelError, match=r"tiny/opus-mt-xx-yy: not in the Hugging Face cache"):
        model_folder("tiny/opus-mt-xx-yy")
    with pytest.raises(PretrainedModelError, match="no such model folder"):
        model_folder(tmp_path / "nothing")
