"""Word lattices in a pretrained model's units, checked against the model's tokenizer on detokenized text.

The target side is English: the project's Moses detokenizer and detruecaser, and a SentencePiece model trained in
the test on the tiny profile's English training text (in the repository), wrapped as a MarianTokenizer.
"""
from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from lattices.lattice import Lattice  # noqa: E402
from lattices.model_units import (LABEL_OFFSET, Context, ModelUnitMapper, map_lattice_to_model,  # noqa: E402
                                  mapping_mismatches, sentencepiece_pieces)
from pipeline.text.processor import TextProcessor  # noqa: E402
from pipeline.text.tokenizers import get_tokenizer  # noqa: E402
from pipeline.text.truecase import Truecaser  # noqa: E402
from pipeline.vocab import BOS, EOS  # noqa: E402
from tests.pipeline.nmt.tiny_hf import marian_tokenizer  # noqa: E402

ENGLISH = Path(__file__).resolve().parents[2] / "data" / "tiny" / "de-en" / "train.en.gz"


@pytest.fixture(scope="module")
def english():
    with gzip.open(ENGLISH, "rt", encoding="utf-8") as f:
        lines = [next(f).strip() for _ in range(2000)]
    return lines


@pytest.fixture(scope="module")
def tokenizer(english, tmp_path_factory):
    return marian_tokenizer(tmp_path_factory.mktemp("en-spm"), lines=english, vocab_size=800)


@pytest.fixture(scope="module")
def processor():
    return TextProcessor(get_tokenizer("moses", "en"), Truecaser({}), None)


@pytest.fixture(scope="module")
def mapper(tokenizer, processor):
    return ModelUnitMapper(lambda words: processor.postprocess(words, subword=False),
                           sentencepiece_pieces(tokenizer.spm_target), tokenizer.convert_tokens_to_ids,
                           bos_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id)


def encode(tokenizer):
    return lambda text: [i for i in tokenizer(text_target=text)["input_ids"] if i != tokenizer.eos_token_id]


def sausage(words_by_position: list[list[str]], rng: random.Random) -> Lattice:
    """<s>, then one of the words at each position, then </s>; random costs."""
    symbols: dict[str, int] = {}
    label = lambda w: symbols.setdefault(w, len(symbols) + 1)  # noqa: E731
    arcs = [(0, 1, label(BOS), 0.0)]
    for k, options in enumerate(words_by_position):
        arcs += [(k + 1, k + 2, label(w), rng.uniform(0, 1)) for w in options]
    end = len(words_by_position) + 1
    arcs.append((end, end + 1, label(EOS), 0.0))
    return Lattice.from_arcs(end + 2, 0, arcs, {end + 1: 0.0}, {i: w for w, i in symbols.items()})


QUOTES = ["&quot;", "&apos;"]
EXTRAS = [",", ".", "(", ")", "&apos;s", "n&apos;t", "?", ":", "the", "Europe", "-", "%", "3.5"]


def word_lattices(english, processor, count: int = 12, seed: int = 3, quotes: bool = False) -> list[Lattice]:
    """Sausages over tokenized, escaped, lower-cased-first lines, with punctuation and brackets mixed in (and
    quotes, when `quotes`; else only lines without them)."""
    rng = random.Random(seed)
    extras = EXTRAS + (QUOTES if quotes else [])
    lines = [ws for ws in (processor.tokenizer.tokenize(line)[:8] for line in english[100:])
             if quotes or not set(ws) & set(QUOTES)]
    lattices = []
    for words in lines[:count]:
        words[0] = words[0][:1].lower() + words[0][1:]
        positions = [[w, rng.choice(extras)] if rng.random() < 0.5 else [w] for w in words]
        lattices.append(sausage(positions, rng))
    return lattices


def test_words_in_context_spell_the_tokenizers_pieces_of_the_detokenized_text(english, processor, mapper,
                                                                           tokenizer):
    check = mapping_mismatches(word_lattices(english, processor), mapper, encode(tokenizer))
    assert check.paths > 200
    assert check.mismatches == 0, check.examples[:3]


def test_quotes_are_where_the_left_context_falls_short_and_are_counted(english, processor, mapper, tokenizer):
    """The detokenizer places a quote by what comes after it (a closing quote at the end of the text) and by the
    parity of single quotes, which the context does not hold: those paths are counted as mismatches, and only
    paths with a quote are."""
    check = mapping_mismatches(word_lattices(english, processor, quotes=True), mapper, encode(tokenizer))
    assert check.paths > 200 and 0 < check.rate < 0.3
    assert all("'" in text or '"' in text for text, _, _ in check.examples)


def test_the_mapped_lattice_spells_the_same_unit_strings_with_the_same_costs(english, processor, mapper):
    for lattice in word_lattices(english, processor, count=5):
        expected = {}
        for labels, cost in lattice.paths():
            context, units = Context(), []
            for word in (lattice.symbols[x] for x in labels):
                units.extend(mapper.ids(word, context))
                context = mapper.next_context(context, word)
            expected[tuple(units)] = cost
        mapped = map_lattice_to_model(lattice, mapper)
        got = {tuple(x - LABEL_OFFSET for x in labels): cost for labels, cost in mapped.paths()}
        assert got.keys() == expected.keys()
        assert all(got[k] == pytest.approx(expected[k]) for k in got)


def test_context_decides_the_space_and_the_case(mapper, tokenizer):
    pieces = lambda ids: tokenizer.convert_ids_to_tokens(list(ids))  # noqa: E731
    first, middle = Context(), Context(start=False, begin=False)
    assert pieces(mapper.ids("europe", first))[0].startswith("\u2581E")     # capitalised at the start
    assert pieces(mapper.ids(",", middle))[0] == ","                        # glued to the word before
    after_bracket = mapper.next_context(middle, "(")
    assert after_bracket.glued and not pieces(mapper.ids("the", after_bracket))[0].startswith("\u2581")
    after_stop = mapper.next_context(middle, ".")
    assert after_stop.start and pieces(mapper.ids("the", after_stop))[0].startswith("\u2581Th")
    opening = mapper.next_context(middle, "&quot;")
    assert opening.quote_open and opening.glued and not mapper.next_context(opening, "&quot;").quote_open


def test_a_fast_tokenizer_without_a_sentencepiece_processor_maps_by_its_own_pieces(english, processor, tokenizer,
                                                                                  tmp_path):
    """A fast tokenizer (tokenizer.json, as NLLB's loads: no SentencePiece processor) over the same pieces: the
    mapper of a loaded model (lattices/model_shards.py) takes its pieces from tokenize(), without a mismatch."""
    import types

    from lattices.model_shards import model_unit_mapper
    from tests.pipeline.nmt.tiny_hf import fast_tokenizer

    (tmp_path / "target.spm").write_bytes(tokenizer.spm_target.serialized_model_proto())
    fast = fast_tokenizer(tmp_path / "target.spm")
    assert getattr(fast, "sp_model", None) is None and getattr(fast, "spm_target", None) is None
    size = len(fast)
    vocab = types.SimpleNamespace(offset=LABEL_OFFSET, tokenizer=fast, bos_id=size + 1, eos_id=size + 2,
                                  unk_id=fast.unk_token_id + LABEL_OFFSET)
    mapper = model_unit_mapper(vocab, lambda words: processor.postprocess(words, subword=False))
    check = mapping_mismatches(word_lattices(english, processor), mapper, lambda text: fast(text)["input_ids"])
    assert check.paths > 200
    assert check.mismatches == 0, check.examples[:3]


def test_the_pbmt_lattices_of_a_tiny_pipeline_map_without_a_mismatch(exported_systems, tokenizer):
    """Real lattices: the phrase-based decoder's, of the session's tiny de-en pipeline (the export tests' run);
    their English words through that run's own truecaser and the Moses detokenizer."""
    from lattices.fst_io import lattice_paths, read_lattice

    exports, _ = exported_systems
    task_dir = Path(exports["FNMT"].work_dir) / "tiny" / "ger-eng"
    folders = [p for p in task_dir.glob("pbmt/newstest2016-*/lattices") if p.is_dir()]
    truecasers = [p for p in task_dir.glob("truecaser/*/truecase.en.json")]
    assert len(folders) == 1 and len(truecasers) == 1
    processor = TextProcessor(get_tokenizer("moses", "en"), Truecaser.load(truecasers[0]), None)
    mapper = ModelUnitMapper(lambda words: processor.postprocess(words, subword=False),
                             sentencepiece_pieces(tokenizer.spm_target), tokenizer.convert_tokens_to_ids,
                             bos_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id)
    lattices = [read_lattice(path) for path in lattice_paths(folders[0].parent)]
    check = mapping_mismatches(lattices, mapper, encode(tokenizer), paths_per_lattice=200, all_paths_below=500)
    assert len(lattices) >= 5 and check.paths >= 500
    assert check.mismatches == 0, check.examples[:3]
    for lattice in lattices[:3]:  # the mapped lattice holds every sampled path's units
        mapped = map_lattice_to_model(lattice, mapper)
        assert mapped.num_states >= lattice.num_states
