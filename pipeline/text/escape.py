"""Moses escaping of the characters that the phrase-table, factor and XML formats reserve.

``escape`` replaces ``& | < > ' " [ ]`` by ``&amp; &#124; &lt; &gt; &apos; &quot; &#91; &#93;``, exactly as
sacremoses' ``MosesTokenizer(escape=True)`` does, so an escaped token never contains ``|``, ``<`` or ``>``
(Moses phrase tables use ``|||`` as field separator and KenLM reserves ``<s>``, ``</s>``, ``<unk>``).
``unescape`` is its exact inverse: it decodes the eight entities in one left-to-right pass, so
``unescape(escape(s)) == s`` for every string ``s`` (even one that already contains ``&amp;`` or ``&lt;``).
"""

from __future__ import annotations

import re

__all__ = ["escape", "unescape", "ESCAPES"]

#: Character -> entity, in the order sacremoses applies them (``&`` first, so entities are not re-escaped).
ESCAPES: dict[str, str] = {
    "&": "&amp;",
    "|": "&#124;",
    "<": "&lt;",
    ">": "&gt;",
    "'": "&apos;",
    '"': "&quot;",
    "[": "&#91;",
    "]": "&#93;",
}

_ESCAPE_TABLE = str.maketrans(ESCAPES)
_UNESCAPES = {entity: char for char, entity in ESCAPES.items()}
_ENTITY = re.compile("|".join(re.escape(entity) for entity in _UNESCAPES))


def escape(token: str) -> str:
    """Replace each reserved character by its Moses entity."""
    return token.translate(_ESCAPE_TABLE)


def unescape(text: str) -> str:
    """Replace each Moses entity by its character (the exact inverse of :func:`escape`)."""
    if "&" not in text:
        return text
    return _ENTITY.sub(lambda match: _UNESCAPES[match.group()], text)
