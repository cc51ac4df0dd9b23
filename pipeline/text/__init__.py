"""Text processing for the translation systems: normalise, tokenize, escape, truecase, BPE, and back.

The forward path turns a raw segment into truecased, Moses-escaped *words* (for the phrase-based system and
KenLM) and BPE *subwords* (for NMT); the reverse path turns model output back into plain text. One module per
concept; :class:`TextProcessor` ties a language's pieces together. No Luigi here.
"""

from .bpe import BpeSegmenter, learn_bpe, merge_bpe
from .cjk import join_cjk
from .escape import escape, unescape
from .normalize import normalize
from .processor import TextProcessor
from .tokenizer_base import Tokenizer
from .tokenizer_jieba import JiebaTokenizer
from .tokenizer_mecab import MecabTokenizer
from .tokenizer_moses import MosesTokenizer
from .tokenizers import TOKENIZERS, get_tokenizer
from .truecase import Truecaser

__all__ = [
    "BpeSegmenter",
    "JiebaTokenizer",
    "MecabTokenizer",
    "MosesTokenizer",
    "TOKENIZERS",
    "TextProcessor",
    "Tokenizer",
    "Truecaser",
    "escape",
    "get_tokenizer",
    "join_cjk",
    "learn_bpe",
    "merge_bpe",
    "normalize",
    "unescape",
]
