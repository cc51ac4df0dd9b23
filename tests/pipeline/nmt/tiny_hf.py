"""Tiny random Hugging Face translation models and their tokenizers, built without a network.

A SentencePiece model is trained on a few hundred synthetic lines; a MarianMT or M2M100 folder is written around it
(tokenizer files, config, random weights), as `save_pretrained` lays out a real OPUS-MT or M2M100 model. The output
layer gives EOS a bias (`eos_bias`), so that beam searches end after a few tokens instead of at a length limit.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import torch

WORDS = ("haus katze hund baum wasser feuer erde luft sonne mond stern berg fluss meer wald feld stadt dorf "
         "strasse weg tag nacht morgen abend jahr zeit mensch kind frau mann").split()


def synthetic_lines(n: int = 300, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8))) for _ in range(n)]


def train_sentencepiece(folder: Path, vocab_size: int = 60, seed: int = 0, lines: list[str] | None = None) -> Path:
    """A unigram SentencePiece model of `lines` (default: the synthetic lines): folder/spm.model."""
    import sentencepiece

    folder.mkdir(parents=True, exist_ok=True)
    text = folder / "train.txt"
    text.write_text("\n".join(lines if lines is not None else synthetic_lines(seed=seed)) + "\n", encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(input=str(text), model_prefix=str(folder / "spm"),
                                             vocab_size=vocab_size, model_type="unigram", character_coverage=1.0,
                                             bos_id=-1, eos_id=-1, unk_id=0, num_threads=1, hard_vocab_limit=False,
                                             minloglevel=2)
    return folder / "spm.model"


def _pieces(spm: Path) -> list[str]:
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=str(spm))
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())
            if processor.id_to_piece(i) != "<unk>"]


def bias_token(model, token: int, bias: float, unit: int = 0) -> None:
    """Make `token` likely at every step: a logit bias (Marian's final_logits_bias) or, for models without one, a
    constant hidden unit `unit` read only by that token's output row (the decoder's final layer norm gives the unit
    the value 1)."""
    with torch.no_grad():
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias[0, token] += bias
            return
        norm = model.get_decoder().layer_norm
        norm.weight[unit], norm.bias[unit] = 0.0, 1.0
        head = model.get_output_embeddings().weight
        head[:, unit] = 0.0
        head[token, unit] = bias


def _bias_eos(model, eos_id: int, eos_bias: float) -> None:
    """Make EOS likely at every step (hidden unit 0 where the model has no logit bias)."""
    bias_token(model, eos_id, eos_bias)


def marian_tokenizer(folder: Path, seed: int = 0, source_lang: str = "de", target_lang: str = "en",
                     lines: list[str] | None = None, vocab_size: int = 60):
    """A MarianTokenizer over one SentencePiece model of `lines` (source and target), saved to `folder`."""
    from transformers import MarianTokenizer

    spm = train_sentencepiece(folder / "spm", vocab_size=vocab_size, seed=seed, lines=lines)
    tokens = ["</s>", "<unk>"] + _pieces(spm) + ["<pad>"]
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}), encoding="utf-8")
    for name in ("source.spm", "target.spm"):
        (folder / name).write_bytes(spm.read_bytes())
    tokenizer = MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"),
                                source_lang=source_lang, target_lang=target_lang)
    tokenizer.save_pretrained(folder)
    return tokenizer


def tiny_marian(folder: Path, seed: int = 0, eos_bias: float = 0.0, init_std: float = 0.3, source_lang: str = "de",
                target_lang: str = "en", lines: list[str] | None = None, vocab_size: int = 60,
                max_positions: int = 128) -> Path:
    """A random MarianMT model with one shared SentencePiece vocabulary (of `lines`), saved to `folder`; its position
    table has `max_positions` entries."""
    from transformers import MarianConfig, MarianMTModel

    tokenizer = marian_tokenizer(folder, seed, source_lang, target_lang, lines, vocab_size)
    tokens = len(tokenizer.encoder)
    pad = tokenizer.pad_token_id
    config = MarianConfig(vocab_size=tokens, d_model=32, encoder_layers=2, decoder_layers=2,
                          encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                          decoder_ffn_dim=64, max_position_embeddings=max_positions, pad_token_id=pad, eos_token_id=0,
                          decoder_start_token_id=pad, forced_eos_token_id=None, dropout=0.0, init_std=init_std,
                          tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = MarianMTModel(config).eval()
    _bias_eos(model, 0, eos_bias)
    model.save_pretrained(folder)
    return folder


def tiny_m2m100(folder: Path, seed: int = 0, eos_bias: float = 0.0, init_std: float = 0.3) -> Path:
    """A random M2M100 model (the NLLB layout: pre-norm, sinusoidal positions, language tokens), saved to `folder`."""
    from transformers import M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer

    spm = train_sentencepiece(folder / "spm", seed=seed)
    tokens = ["<s>", "<pad>", "</s>", "<unk>"] + _pieces(spm)
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}), encoding="utf-8")
    (folder / "sentencepiece.bpe.model").write_bytes(spm.read_bytes())
    tokenizer = M2M100Tokenizer(str(folder / "vocab.json"), str(folder / "sentencepiece.bpe.model"),
                                src_lang="de", tgt_lang="en")
    tokenizer.save_pretrained(folder)
    size = tokenizer.encoder_size + len(tokenizer.lang_code_to_id) + tokenizer.num_madeup_words
    config = M2M100Config(vocab_size=size, d_model=32, encoder_layers=2, decoder_layers=2,
                          encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                          decoder_ffn_dim=64, max_position_embeddings=128, pad_token_id=1, bos_token_id=0,
                          eos_token_id=2, decoder_start_token_id=2, dropout=0.0, tie_word_embeddings=False,
                          init_std=init_std)
    torch.manual_seed(seed)
    model = M2M100ForConditionalGeneration(config).eval()
    _bias_eos(model, 2, eos_bias)
    model.save_pretrained(folder)
    return folder


#: The two families, each with the settings under which the tests' searches end before their length limits.
FAMILIES = {"marian": (tiny_marian, {"seed": 1, "init_std": 0.15, "eos_bias": 2.0}),
            "m2m100": (tiny_m2m100, {"seed": 2, "init_std": 0.3, "eos_bias": 3.5})}


def tiny_family(name: str, folder: Path) -> Path:
    """The tiny random model folder of family `name` (FAMILIES) in `folder`."""
    build, options = FAMILIES[name]
    return build(folder, **options)


def fast_tokenizer(spm: Path):
    """A fast (`tokenizers`) tokenizer with the pieces, scores and ids of a SentencePiece unigram model, as
    tokenizer.json files hold them (NLLB's): Unigram over Metaspace pre-tokenization, no special tokens added."""
    import sentencepiece
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    processor = sentencepiece.SentencePieceProcessor(model_file=str(spm))
    vocab = [(processor.id_to_piece(i), processor.get_score(i)) for i in range(processor.get_piece_size())]
    backend = Tokenizer(models.Unigram(vocab, unk_id=processor.unk_id(), byte_fallback=False))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    backend.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
