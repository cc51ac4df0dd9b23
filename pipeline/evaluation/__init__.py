"""Evaluation of translations: cased corpus BLEU with sacrebleu."""

from pipeline.evaluation.bleu import BLEU_TOKENIZERS, BleuScore, bleu_tokenizer, corpus_bleu

__all__ = ["BLEU_TOKENIZERS", "BleuScore", "bleu_tokenizer", "corpus_bleu"]
