"""Line normalisation: make a raw segment safe for one-segment-per-line files.

Only whitespace-like damage is repaired. Every control character (Unicode category ``Cc``: tab, carriage
return, vertical tab, form feed, the separators ``\\x1c``-``\\x1f``, NEL ``\\x85``, ...) and every line or
paragraph separator (``Zl`` ``\\u2028``, ``Zp`` ``\\u2029``) becomes a space, runs of spaces collapse into
one, and whitespace at the ends is stripped. Other spaces inside the line (no-break space, ideographic space)
are kept; the tokenizers treat them as separators anyway. The Unicode normalisation form is deliberately left
alone (no NFC/NFKC): scores are computed against the raw references, and changing code points there would
change BLEU. The result never contains a character that ``str.splitlines`` treats as a line break.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["normalize"]

_SPACE_RUN = re.compile(" {2,}")
_BREAKING_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})

# Every Cc/Zl/Zp code point lies below U+3000; a translation table replaces them all in one pass.
_TABLE = {code: " " for code in range(0x3000) if unicodedata.category(chr(code)) in _BREAKING_CATEGORIES}


def normalize(line: str) -> str:
    """Replace control and line-separator characters by spaces, collapse runs of spaces, strip the ends."""
    return _SPACE_RUN.sub(" ", line.translate(_TABLE)).strip()
