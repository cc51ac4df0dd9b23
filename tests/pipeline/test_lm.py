"""Tests of pipeline.lm with KenLM's real lmplz/build_binary (built by `make install`)."""

from __future__ import annotations

import logging
import os
import random
import stat
from pathlib import Path

import kenlm
import pytest

from pipeline.lm import KenlmTools, LmResult, perplexity, read_arpa_counts, train_lm

REPO = Path(__file__).resolve().parents[2]
ORDER = 3


def _corpus(seed: int, n: int = 200, vocab_size: int = 30) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(vocab_size)]
    return [" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 12))) for _ in range(n)]


@pytest.fixture(scope="module")
def tools() -> KenlmTools:
    return KenlmTools.locate(REPO / "tools")


@pytest.fixture(scope="module")
def trained(tools: KenlmTools, tmp_path_factory: pytest.TempPathFactory) -> LmResult:
    out = tmp_path_factory.mktemp("lm")
    # Uniform random text has no singleton unigrams: lmplz's closed-form discounts fail without fallback.
    return train_lm(_corpus(0), out, ORDER, tools, memory="64M", discount_fallback=True)


@pytest.fixture(scope="module")
def model(trained: LmResult) -> kenlm.Model:
    return kenlm.Model(str(trained.arpa))


def _arpa_unigrams(arpa: Path) -> dict[str, float]:
    words: dict[str, float] = {}
    section = None
    for line in arpa.read_text(encoding="utf-8").splitlines():
        if line.startswith("\\"):
            section = line
        elif section == "\\1-grams:" and line.strip():
            fields = line.split("\t")
            words[fields[1]] = float(fields[0])
    return words


def _state_after(model: kenlm.Model, context: list[str], bos: bool) -> kenlm.State:
    state = kenlm.State()
    (model.BeginSentenceWrite if bos else model.NullContextWrite)(state)
    for word in context:
        nxt = kenlm.State()
        model.BaseScore(state, word, nxt)
        state = nxt
    return state


@pytest.mark.parametrize("context,bos", [
    ([], True),                 # p(. | <s>)
    ([], False),                # unigram distribution
    (["w1"], True),             # p(. | <s> w1)
    (["w3", "w3"], False),      # a full trigram context, probably unseen
    (["w0", "w1", "w2"], True),  # longer than order-1: only the last two words matter
    (["zzz"], True),            # an OOV in the context: backs off to the null context
])
def test_next_word_distribution_sums_to_one(trained: LmResult, model: kenlm.Model,
                                             context: list[str], bos: bool) -> None:
    # In KenLM's ARPA, <s> has a placeholder log10 prob of 0 (it is only ever a context, never
    # predicted), so it is not an outcome. The outcomes are every other vocabulary entry: the real
    # words, </s> and <unk>, which lmplz gives the interpolated uniform mass. Those sum to one.
    unigrams = _arpa_unigrams(trained.arpa)
    assert unigrams["<s>"] == 0.0
    outcomes = [w for w in unigrams if w != "<s>"]
    assert {"<unk>", "</s>"} <= set(outcomes) and len(outcomes) == 30 + 2
    state = _state_after(model, context, bos)
    probs = {w: 10 ** model.BaseScore(state, w, kenlm.State()) for w in outcomes}
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-3)
    # <unk> carries real mass: the known words and </s> alone do not sum to one.
    assert probs["<unk>"] > 1e-4
    assert sum(p for w, p in probs.items() if w != "<unk>") < 1.0 - 1e-4
    # Any OOV word gets exactly <unk>'s probability.
    assert 10 ** model.BaseScore(state, "never-seen", kenlm.State()) == pytest.approx(probs["<unk>"])


def test_perplexity_equals_brute_force(trained: LmResult, model: kenlm.Model) -> None:
    dev = _corpus(1, n=40) + ["", "w1 unknownword w2"]
    log10_sum = 0.0
    tokens = 0
    for sentence in dev:
        scores = list(model.full_scores(sentence, bos=True, eos=True))
        assert len(scores) == len(sentence.split()) + 1  # one score per word plus </s>, none for <s>
        log10_sum += sum(s[0] for s in scores)
        tokens += len(scores)
    expected = 10 ** (-log10_sum / tokens)
    # kenlm sums a sentence's scores in float32, so agreement is to about 1e-7, not 1e-15.
    assert perplexity(trained.arpa, dev) == pytest.approx(expected, rel=1e-6)
    assert perplexity(trained.binary, dev) == pytest.approx(expected, rel=1e-4)


def test_perplexity_single_sentence_matches_kenlm(trained: LmResult, model: kenlm.Model) -> None:
    sentence = _corpus(2, n=1)[0]
    assert perplexity(trained.arpa, [sentence]) == pytest.approx(model.perplexity(sentence), rel=1e-9)


def test_perplexity_empty_line_counts_only_eos(trained: LmResult, model: kenlm.Model) -> None:
    p_eos_after_bos = model.score("", bos=True, eos=True)  # log10 p(</s> | <s>)
    assert perplexity(trained.arpa, [""]) == pytest.approx(10 ** -p_eos_after_bos, rel=1e-9)
    with pytest.raises(ValueError):
        perplexity(trained.arpa, [])


def test_arpa_counts_match_result(trained: LmResult) -> None:
    header: dict[int, int] = {}
    for line in trained.arpa.read_text(encoding="utf-8").splitlines():
        if line.startswith("ngram "):
            n, count = line.split()[1].split("=")
            header[int(n)] = int(count)
    assert trained.ngram_counts == header == read_arpa_counts(trained.arpa)
    assert trained.order == ORDER and sorted(header) == list(range(1, ORDER + 1))
    # Vocabulary: 30 words plus <unk>, <s>, </s>; and the sections hold as many entries as declared.
    assert header[1] == 33
    section_sizes = {n: 0 for n in header}
    current = None
    for line in trained.arpa.read_text(encoding="utf-8").splitlines():
        if line.endswith("-grams:"):
            current = int(line[1:].split("-")[0])
        elif line.startswith("\\"):
            current = None
        elif current is not None and line.strip():
            section_sizes[current] += 1
    assert section_sizes == header
    assert trained.seconds > 0
    assert sorted(p.name for p in trained.arpa.parent.iterdir()) == ["lm.arpa", "lm.bin"]


def test_binary_scores_equal_arpa(trained: LmResult, model: kenlm.Model) -> None:
    binary = kenlm.Model(str(trained.binary))
    assert binary.order == model.order == ORDER
    for sentence in _corpus(3, n=30) + ["", "oov w1 w2 oov2"]:
        a = [s[0] for s in model.full_scores(sentence)]
        b = [s[0] for s in binary.full_scores(sentence)]
        assert a == pytest.approx(b, abs=1e-4)


def test_trie_binary(tools: KenlmTools, model: kenlm.Model, tmp_path: Path) -> None:
    result = train_lm(_corpus(0), tmp_path, ORDER, tools, memory="64M", discount_fallback=True,
                      binary_type="trie", tmp_dir=tmp_path)
    trie = kenlm.Model(str(result.binary))
    assert trie.score("w1 w2 w3") == pytest.approx(model.score("w1 w2 w3"), abs=1e-4)


@pytest.mark.parametrize("lines,order,flag", [
    ([], 3, False),              # empty corpus: lmplz aborts (no counts to estimate discounts)
    (_corpus(0, n=20), 0, True),  # invalid order
])
def test_failing_lmplz_raises_and_leaves_nothing(tools: KenlmTools, tmp_path: Path,
                                                 lines: list[str], order: int, flag: bool) -> None:
    out = tmp_path / "out"
    with pytest.raises(RuntimeError) as err:
        train_lm(lines, out, order, tools, memory="64M", discount_fallback=flag)
    message = str(err.value)
    assert str(tools.lmplz) in message and f"-o {order}" in message and "-S 64M" in message
    assert list(out.iterdir()) == []  # no lm.arpa, lm.bin, temporary files or sort directory


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_failing_build_binary_leaves_nothing(tools: KenlmTools, tmp_path: Path) -> None:
    bad = _script(tmp_path / "build_binary", 'echo "boom: cannot build" >&2; exit 3')
    out = tmp_path / "out"
    with pytest.raises(RuntimeError) as err:
        train_lm(_corpus(0), out, ORDER, KenlmTools(tools.lmplz, bad), memory="64M",
                 discount_fallback=True)
    assert str(bad) in str(err.value) and "probing" in str(err.value)
    assert "boom: cannot build" in str(err.value) and "exit status 3" in str(err.value)
    assert list(out.iterdir()) == []


def test_stderr_tail_is_limited_to_20_lines(tools: KenlmTools, tmp_path: Path) -> None:
    noisy = _script(tmp_path / "lmplz", 'cat >/dev/null; for i in $(seq 1 50); do echo "line $i" >&2; done; exit 1')
    with pytest.raises(RuntimeError) as err:
        train_lm(["a b"], tmp_path / "out", 2, KenlmTools(noisy, tools.build_binary))
    message = str(err.value)
    assert "line 50" in message and "line 31" in message and "line 30\n" not in message


def test_memory_and_temp_dir_always_passed(tools: KenlmTools, tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    args_file = tmp_path / "args"
    wrapper = _script(tmp_path / "lmplz", f'echo "$@" > {args_file}; exec {tools.lmplz} "$@"')
    sort_root = tmp_path / "sort"
    sort_root.mkdir()
    with caplog.at_level(logging.DEBUG, logger="pipeline.lm"):
        train_lm(_corpus(0), tmp_path / "out", 2, KenlmTools(wrapper, tools.build_binary),
                 tmp_dir=sort_root, discount_fallback=True)
    args = args_file.read_text().split()
    assert args[args.index("-S") + 1] == "1G"
    assert args[args.index("-T") + 1].startswith(str(sort_root) + os.sep)
    assert "--discount_fallback" in args
    assert list(sort_root.iterdir()) == []  # the per-run sort directory is removed
    assert any("Writing ARPA model" in r.getMessage() for r in caplog.records)  # lmplz's progress


def test_retraining_replaces_files(tools: KenlmTools, tmp_path: Path) -> None:
    first = train_lm(_corpus(0), tmp_path, 2, tools, memory="64M", discount_fallback=True)
    second = train_lm(_corpus(5), tmp_path, 3, tools, memory="64M", discount_fallback=True)
    assert first.arpa == second.arpa and read_arpa_counts(second.arpa) == second.ngram_counts
    assert kenlm.Model(str(second.binary)).order == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lm.arpa", "lm.bin"]


def test_locate_missing_names_every_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(FileNotFoundError) as err:
        KenlmTools.locate(tmp_path)
    message = str(err.value)
    assert str(tmp_path / "kenlm" / "bin") in message
    assert "PATH (empty)" in message and "make install" in message


def test_locate_prefers_tools_dir_then_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = tmp_path / "on_path"
    on_path.mkdir()
    for name in ("lmplz", "build_binary"):
        _script(on_path / name, "exit 0")
    monkeypatch.setenv("PATH", str(on_path))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert KenlmTools.locate(empty) == KenlmTools(on_path / "lmplz", on_path / "build_binary")
    assert KenlmTools.locate(None).lmplz == on_path / "lmplz"
    bin_dir = tmp_path / "tools" / "kenlm" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("lmplz", "build_binary"):
        _script(bin_dir / name, "exit 0")
    assert KenlmTools.locate(tmp_path / "tools") == KenlmTools(bin_dir / "lmplz", bin_dir / "build_binary")
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(FileNotFoundError, match=str(empty)):
        KenlmTools.locate(empty)
