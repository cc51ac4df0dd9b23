"""Terminology constraints end to end: a terms file, matched to raw lines, met in the translations."""
from __future__ import annotations

import logging
import random

import pytest

from pipeline.deploy.decoding_service import DecodingService
from pipeline.deploy.system import load_system
from pipeline.deploy.terms import Terminology
from pipeline.deploy.translator import Translator
from pipeline.errors import DataError
from pipeline.io import read_lines
from pipeline.text import get_tokenizer
from tasks.data import TokenizeSplit

TOKENIZE_DE = get_tokenizer("moses", "de").tokenize
TOKENIZE_EN = get_tokenizer("moses", "en").tokenize


@pytest.mark.parametrize("text, problem", [
    ("Haus\thouse\n\nAuto\tcar\tvehicle\n", "terms.tsv:3: expected 'source term<TAB>target term', found 3"),
    ("# a comment\nHaus house\n", "terms.tsv:2: expected 'source term<TAB>target term', found 1"),
    ("Haus\t \n", "terms.tsv:1: the target term is empty"),
])
def test_a_malformed_terms_file_is_an_error_naming_file_and_line(tmp_path, text, problem):
    path = tmp_path / "terms.tsv"
    path.write_text(text)
    with pytest.raises(DataError, match=problem):
        Terminology.load(path, TOKENIZE_DE)


def test_source_terms_match_whole_tokenized_words_and_a_line_initial_capital():
    terms = Terminology.parse("Haus\thouse\nneues Auto\tnew car\nhaus\tHOUSE\nHausboot\thouseboat\n", TOKENIZE_DE)
    assert [t.target for t in terms.matches(TOKENIZE_DE("Das neues Auto, das Haus."))] == ["house", "new car"]
    assert [t.target for t in terms.matches(TOKENIZE_DE("Haus und Hof"))] == ["house", "HOUSE"]
    assert terms.matches(TOKENIZE_DE("Das neue Auto.")) == []


def seeded_terms(exports, raw: list[str], count: int, seed: int = 1) -> list[tuple[str, str]]:
    """(source word, reference word) pairs from the first `count` lines: a word of the line and a word of its
    reference that the plain translation lacks, so that only the constraint puts it there."""
    params = {k: getattr(exports["FNMT"], k) for k in ("task_name", "profile", "work_dir", "data_dir", "cache_dir",
                                                        "tools_dir", "processes", "config_dir")}
    split = TokenizeSplit(split="newstest2016", **params)
    references = list(read_lines(split.artifact_dir() / "raw.en.gz"))
    rng = random.Random(seed)
    pairs = []
    for line, reference in list(zip(raw, references))[:count]:
        source = [w for w in TOKENIZE_DE(line) if w.isalpha() and len(w) > 3]
        target = [w for w in TOKENIZE_EN(reference) if w.isalpha() and len(w) > 3]
        if source and target:
            pairs.append((rng.choice(source), rng.choice(target)))
    return pairs


def has_term(output: str, term: str) -> bool:
    """Whether the term's words occur in the output's (its first word may be capitalised: detruecasing does that at a
    sentence start)."""
    words, wanted = TOKENIZE_EN(output), TOKENIZE_EN(term)
    initial = [wanted[0][:1].upper() + wanted[0][1:], *wanted[1:]]
    return any(words[i:i + len(wanted)] in (wanted, initial) for i in range(len(words) - len(wanted) + 1))


@pytest.mark.parametrize("name", ["FNMT", "LNMT", "LTNMT"])
def test_every_satisfiable_term_appears_and_the_service_gives_the_same(exported_systems, name, tmp_path):
    exports, raw = exported_systems
    system = load_system(exports[name].folder())
    pairs = seeded_terms(exports, raw, count=6)
    lines = raw[:6]
    path = tmp_path / "terms.tsv"
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    terms = Terminology.load(path, TOKENIZE_DE)
    plain = list(Translator(system).translate(lines))
    constrained = list(Translator(system, terms=terms).translate(lines))
    wanted = [[t.target for t in terms.matches(TOKENIZE_DE(line))] for line in lines]
    assert sum(map(len, wanted)) >= 6
    for output, targets in zip(constrained, wanted):
        assert all(has_term(output, target) for target in targets), (output, targets)
    assert any(not all(has_term(p, t) for t in targets) for p, targets in zip(plain, wanted))  # the test can fail
    service = DecodingService(Translator(system), pool_sentences=3)
    futures = [service.submit([line], terms) for line in lines]
    assert [f.result(timeout=120)[0] for f in futures] == constrained
    service.close()


def test_an_lmbr_system_decodes_a_line_with_terms_on_its_lattice(exported_systems):
    """LNMT: a line whose terms the PBMT forced is decoded on its lattice's acceptor, so its output is a string of
    that lattice (the term where the PBMT placed it); a line without terms is not constrained."""
    exports, raw = exported_systems
    translator = Translator(load_system(exports["LNMT"].folder()))
    lines = raw[:6]
    terms = Terminology.parse("".join(f"{s}\t{t}\n" for s, t in seeded_terms(exports, raw, count=2)), TOKENIZE_DE)
    prepared = translator.prepare(lines, [terms] * len(lines))
    forced = [bool(item.forced) for item in prepared]
    assert any(forced) and not all(forced)
    assert [item.acceptor is not None for item in prepared] == forced
    outputs = translator._decode(prepared)
    for item, hypotheses in zip(prepared, outputs):
        if item.acceptor is not None:
            assert item.acceptor.accepts(hypotheses[0].tokens)
    plain = translator._decode(translator.prepare(lines))
    assert any(not item.acceptor.accepts(hyps[0].tokens)  # unconstrained, the search leaves the lattice
               for item, hyps in zip(prepared, plain) if item.acceptor is not None)


def test_a_term_beyond_the_length_limit_gives_the_plain_translation_with_a_warning(exported_systems, caplog):
    exports, raw = exported_systems
    system = load_system(exports["FNMT"].folder())
    word = next(w for w in TOKENIZE_DE(raw[1]) if w.isalpha())
    terms = Terminology.parse(f"{word}\t{' '.join(['house'] * 200)}\n", TOKENIZE_DE, origin="terms.tsv")
    plain = list(Translator(system).translate(raw[:3]))
    with caplog.at_level(logging.WARNING, logger="pipeline.deploy.translator"):
        got = list(Translator(system, terms=terms).translate(raw[:3]))
    assert got == plain
    assert any("line 2" in r.getMessage() and "terms.tsv:1" in r.getMessage() and "cannot be met" in r.getMessage()
               for r in caplog.records)
    service = DecodingService(Translator(system), pool_sentences=2)  # the service decodes it again, too
    assert service.submit(raw[:3], terms).result(timeout=120) == plain
    service.close()


def test_the_phrase_based_system_translates_a_term_span_by_its_term_alone(exported_systems):
    """Moses' XML input, exclusive: the PBMT (and so the lattices of the hybrids) writes the target term."""
    exports, raw = exported_systems
    system = load_system(exports["PBMT"].folder())
    lines = raw[:5]
    # letters only: the Moses tokenizer splits a clitic off a word ("Xyzb't" -> "Xyzb 't") but not off a digit
    terms = Terminology.parse("".join(f"{s}\tXYZterm{'abcde'[k]}\n"
                                      for k, (s, _) in enumerate(seeded_terms(exports, raw, 5))), TOKENIZE_DE)
    got = list(Translator(system, terms=terms).translate(lines))
    wanted = [[t.target for t in terms.matches(TOKENIZE_DE(line))] for line in lines]
    assert sum(map(len, wanted)) >= 3
    assert all(has_term(text, t) for text, targets in zip(got, wanted) for t in targets), got
    assert list(Translator(system).translate(lines)) != got
