"""Cased corpus BLEU on detokenized text with sacrebleu, one reference per segment."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

from sacrebleu.metrics import BLEU

# sacrebleu's tokenizer per target language; every other language uses "13a" (sacrebleu's default).
BLEU_TOKENIZERS: dict[str, str] = {"ja": "ja-mecab", "zh": "zh"}
DEFAULT_TOKENIZER = "13a"


def bleu_tokenizer(lang: str) -> str:
    """The sacrebleu tokenizer for a target language code ("ja", "zh-CN", "en", ...)."""
    primary = lang.strip().lower().replace("_", "-").split("-")[0]
    return BLEU_TOKENIZERS.get(primary, DEFAULT_TOKENIZER)


@dataclass(frozen=True)
class BleuScore:
    """A corpus BLEU score with its parts, as sacrebleu reports them (percentages)."""

    score: float
    precisions: tuple[float, float, float, float]
    brevity_penalty: float
    sys_len: int
    ref_len: int
    signature: str

    def to_dict(self) -> dict:
        """JSON-friendly form (precisions as a list)."""
        d = asdict(self)
        d["precisions"] = list(self.precisions)
        return d

    def __str__(self) -> str:
        p = "/".join(f"{x:.1f}" for x in self.precisions)
        return (f"BLEU = {self.score:.2f} {p} (BP = {self.brevity_penalty:.3f} "
                f"hyp_len = {self.sys_len} ref_len = {self.ref_len}) {self.signature}")


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str], target_lang: str) -> BleuScore:
    """Cased BLEU of detokenized hypotheses against one detokenized reference each.

    Raises ValueError when the lists are empty or differ in length.
    """
    for name, seq in (("hypotheses", hypotheses), ("references", references)):
        if isinstance(seq, str):
            raise TypeError(f"{name} must be a sequence of segments, not one string")
    hyps, refs = list(hypotheses), list(references)
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references: "
                         "BLEU needs one reference per hypothesis")
    if not hyps:
        raise ValueError("no segments to score (0 hypotheses and 0 references)")
    bleu = BLEU(tokenize=bleu_tokenizer(target_lang), lowercase=False)
    result = bleu.corpus_score(hyps, [refs])
    p1, p2, p3, p4 = (float(p) for p in result.precisions)
    return BleuScore(score=float(result.score), precisions=(p1, p2, p3, p4),
                     brevity_penalty=float(result.bp), sys_len=int(result.sys_len),
                     ref_len=int(result.ref_len), signature=str(bleu.get_signature()))
