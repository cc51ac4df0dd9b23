"""Where the Moses detokenizer puts spaces, and the rules that correct it.

Detokenizing a sentence means choosing, for each gap between two tokens, a space or nothing.
:func:`moses_gaps` reads these choices off sacremoses' ``MosesDetokenizer``; :func:`fix_gaps` then overrides
the gaps where Moses is wrong in ways that show up in news and Wikipedia text:

* quotes: Moses pairs quotes by counting from the start of the line, so a line with a quote closed from a
  previous sentence, or an English possessive ("was 'kanga,'" -> "was' kanga, '"), flips every later quote.
  :func:`quote_roles` decides per quote whether it opens (no space after), closes (no space before) or sits
  inside a word ("Donald's" in German, "don’t"), pairing straight quotes and treating typographic ones by
  their shape;
* ``/`` between letters or digits ("and/or", "I/43"), ``:`` between digits ("21:00"), ``～`` (full-width
  tilde, "1221～1333"), ``#`` before a word or number ("#1", "#MeToo"), ``&`` between short capitals
  ("R&D"), ``°`` before ``C``/``F``, ``℃`` after a number and ``US$`` (also ``A$``, ``HK$``, ...) are
  written without spaces;
* ``<`` and ``>`` around one or two words are a tag ("<b>"), otherwise comparison signs ("a < b", "<=");
* a currency sign followed by a word is a unit after the amount ("5 € pro", "Millionen $ Gewinn"), not a
  prefix;
* a soft hyphen or zero-width character stays inside its word, and a quote stays attached to a hyphenated
  compound ('"Bild"-Zeitung').

The rules were chosen by counting both spellings in the training data of the three language pairs; each
one is the clearly more frequent spelling there.

Every rule looks at the tokens only, so the same tokens always give the same text.
"""

from __future__ import annotations

import re

from sacremoses import MosesDetokenizer

__all__ = ["moses_gaps", "quote_roles", "fix_gaps", "join_gaps"]

OPEN, CLOSE, INNER = "open", "close", "inner"

#: Tokens after which Moses puts no space (currency signs and opening brackets).
_RIGHT_SHIFT = re.compile(r"^[{}\(\[\{{\¿\¡]+$".format(MosesDetokenizer.IsSc))
#: Tokens before which Moses puts no space (closing punctuation).
_LEFT_SHIFT = MosesDetokenizer.IS_PUNCT
_EN_CONTRACTION = MosesDetokenizer.IS_ENGLISH_CONTRACTION
_CURRENCY = re.compile(r"^[{}]$".format(MosesDetokenizer.IsSc))
_DOLLAR_PREFIX = re.compile(r"(?:^|[^A-Za-z])(?:US|A|AU|C|CA|HK|NZ|NT|S|R)$")  # US$5 (also "million-US$")
_CLOSING_PUNCT = frozenset({",", ".", "!", "?", "...", "…", ";"})
_GERMAN_CLITICS = re.compile(r"^(s|sch\w*|n|ne|nen|nem|ner|m|em|r|re|ren|rer|st|t)\.?$")  # Moses keeps "s." whole
_CLITICS = re.compile(r"^(?:s|t|d|m|re|ve|ll|S|T|D|M|RE|VE|LL)\.?$")  # don’t, Trump’s, Ltd.’s
_ELISION = re.compile(r"^(?:[cdjlmnstCDJLMNOST]|qu|Qu)$")  # d'Arenberg, L'Ordre, c'est, O'Keefe
_DECADE = re.compile(r"^\d0s$")  # '90s
_SHORT_CAPS = re.compile(r"^[A-Z]{1,3}\.?$")  # R&D, H&M, AT&T, B&Q. (Moses keeps "Q." whole)
#: Written without spaces on either side: full-width tildes, the soft hyphen and zero-width characters.
_TIGHT = frozenset({"～", "〜", "\u00ad", "\u200b", "\u200c", "\u200d", "\u2060"})


def moses_gaps(detokenizer: MosesDetokenizer, words: list[str]) -> list[str]:
    """The separator ("" or " ") that Moses puts before each word after the first (unescaped words)."""
    text = detokenizer.detokenize(words, unescape=False)
    gaps: list[str] = []
    pos = 0
    for k, word in enumerate(words):
        start = pos + 1 if text.startswith(" " + word, pos) and k else pos
        if not text.startswith(word, start):
            raise ValueError(f"Moses detokenizer changed the token {word!r}")
        if k:
            gaps.append(text[pos:start])
        pos = start + len(word)
    return gaps


def _alnum_end(word: str) -> bool:
    return bool(word) and word[-1].isalnum()


def _alnum_start(word: str) -> bool:
    return bool(word) and word[0].isalnum()


def _close_evidence(words: list[str], i: int) -> int:
    """How much the neighbours of the quote at ``i`` suggest a closing (> 0) or an opening (< 0) quote.

    Counted on the unpaired quotes of the training and development data: a colon or the line start precede
    openers; a line end or closing punctuation follows closers; after a comma, a lower-case word follows
    closers ('well," said') and a capitalised one openers ('Donnelly, "When').
    """
    before = words[i - 1] if i > 0 else None
    after = words[i + 1] if i + 1 < len(words) else None
    evidence = 0
    if before is None or before == ":":
        evidence -= 2
    elif before in ("?", "!"):
        evidence += 1
    elif before == "," and after:
        evidence += 1 if after[:1].islower() else -1 if after[:1].isupper() else 0
    if after is None or _LEFT_SHIFT.match(after):
        evidence += 2
    return evidence


def _straight_double(words: list[str], roles: dict[int, str]) -> None:
    quotes = [i for i, word in enumerate(words) if word == '"']
    alternating = [OPEN if k % 2 == 0 else CLOSE for k in range(len(quotes))]
    best = alternating  # Moses: pair from the start of the line
    if len(quotes) % 2 == 1:
        # One quote is unpaired (its partner is in another segment). Try each quote as the unpaired one, as
        # an opener or a closer, with the others paired in order; keep the arrangement the surroundings of
        # the quotes support best, and on a tie the one closest to Moses' pairing.
        evidence = [_close_evidence(words, i) for i in quotes]
        best_key = None
        for k in range(len(quotes)):
            for role in (OPEN, CLOSE):
                paired = [OPEN if j % 2 == 0 else CLOSE for j in range(len(quotes) - 1)]
                candidate = paired[:k] + [role] + paired[k:]
                support = sum(e if r == CLOSE else -e for e, r in zip(evidence, candidate))
                distance = sum(a != b for a, b in zip(candidate, alternating))
                key = (support, -distance)
                if best_key is None or key > best_key:
                    best, best_key = candidate, key
    roles.update(zip(quotes, best))


def _straight_single(words: list[str], roles: dict[int, str], lang: str) -> None:
    quotes = []
    for i, word in enumerate(words):
        if word != "'":
            continue
        before = words[i - 1] if i > 0 else ""
        after = words[i + 1] if i + 1 < len(words) else ""
        if lang != "en" and _alnum_end(before) and _GERMAN_CLITICS.match(after):
            roles[i] = INNER  # Donald's, geht's, Pauli'sche
        elif lang != "en" and _ELISION.match(before) and after[:1].isalpha():
            roles[i] = INNER  # d'Arenberg, c'est
        elif _DECADE.match(after):
            roles[i] = OPEN  # the late '60s and '70s
        else:
            quotes.append(i)
    is_open = False
    for k, i in enumerate(quotes):
        before = words[i - 1] if i > 0 else ""
        after = words[i + 1] if i + 1 < len(words) else ""
        possessive = before.endswith("s") and _alnum_start(after)
        if is_open:
            roles[i], is_open = CLOSE, False
        elif possessive and (len(quotes) - k) % 2 == 1:
            roles[i] = CLOSE  # an odd number of quotes left: this one is an apostrophe (the daimyos' heads)
        elif k + 1 < len(quotes) and after and after not in _CLOSING_PUNCT:
            roles[i], is_open = OPEN, True  # a partner follows: 'star cradle'
        elif not after or before in _CLOSING_PUNCT:
            roles[i] = CLOSE  # talented,' one person wrote
        elif _alnum_start(after) and not possessive:
            roles[i] = OPEN  # a quotation that ends in another token ("for 'dumbing down'") or segment
        elif _alnum_end(before):
            roles[i] = CLOSE  # the Jones' house, Darlin':
        else:
            roles[i] = OPEN


def _typographic(words: list[str], roles: dict[int, str]) -> None:
    low_open = single_low_open = False
    guillemet_opens = ""
    single_open = False
    for i, word in enumerate(words):
        if word == "„":
            roles[i], low_open = OPEN, True
        elif word == "“":
            roles[i] = CLOSE if low_open else OPEN
            low_open = False
        elif word == "”":
            roles[i] = CLOSE
        elif word == "‚":
            roles[i], single_low_open = OPEN, True
        elif word == "‘":
            if single_low_open:
                roles[i], single_low_open = CLOSE, False
            else:
                roles[i], single_open = OPEN, True
        elif word == "’":
            inside = 0 < i < len(words) - 1 and bool(_CLITICS.match(words[i + 1]))
            if single_open or not inside:
                roles[i], single_open = CLOSE, False
            else:
                roles[i] = INNER  # don’t, Trump’s
        elif word in ("«", "»"):
            guillemet_opens = guillemet_opens or word  # »German« or «French»
            roles[i] = OPEN if word == guillemet_opens else CLOSE


def quote_roles(words: list[str], lang: str) -> dict[int, str]:
    """For each quote token (by position): "open", "close" or "inner" (an apostrophe inside a word)."""
    roles: dict[int, str] = {}
    _straight_double(words, roles)
    _straight_single(words, roles, lang)
    _typographic(words, roles)
    return roles


def _fix_quotes(words: list[str], gaps: list[str], lang: str) -> None:
    roles = quote_roles(words, lang)
    for i, role in sorted(roles.items()):
        if i > 0:  # gap before the quote
            if role == OPEN:
                before = words[i - 1]
                glued = roles.get(i - 1) == OPEN or bool(_RIGHT_SHIFT.match(before))
                glued = glued or (len(before) > 1 and before.endswith("-"))  # Plakatier-"Vandalismus"
                gaps[i - 1] = "" if glued else " "
            else:
                gaps[i - 1] = ""
        if i < len(words) - 1:  # gap after the quote
            after = words[i + 1]
            if role == CLOSE:
                glued = roles.get(i + 1) == CLOSE or bool(_LEFT_SHIFT.match(after))
                glued = glued or (len(after) > 1 and after.startswith("-"))  # "Bild"-Zeitung
                glued = glued or (lang == "en" and _EN_CONTRACTION.match(after) is not None)
                gaps[i] = "" if glued else " "
            else:
                gaps[i] = ""


def _glue_around(gaps: list[str], i: int, before: bool = True, after: bool = True) -> None:
    if before and i > 0:
        gaps[i - 1] = ""
    if after and i < len(gaps):
        gaps[i] = ""


def _fix_angle_brackets(words: list[str], gaps: list[str]) -> None:
    """Write ``<`` ... ``>`` around one or two words as a tag ("<b>", "</b>"); leave "a < b and c > d" alone."""
    opening = None
    for i, word in enumerate(words):
        if word == "<":
            opening = i if i + 1 < len(words) and (words[i + 1][:1].isalpha() or words[i + 1] == "/") else None
        elif word == ">" and opening is not None and 1 < i - opening <= 3:
            for gap in range(opening, i):
                gaps[gap] = ""
            opening = None


def _fix_symbols(words: list[str], gaps: list[str]) -> None:
    last = len(words) - 1
    for i, word in enumerate(words):
        prev = words[i - 1] if i > 0 else ""
        after = words[i + 1] if i < last else ""
        if word == "/" and _alnum_end(prev) and _alnum_start(after):
            _glue_around(gaps, i)
        elif word == ":" and prev[-1:].isdigit() and after[:1].isdigit():
            _glue_around(gaps, i)
        elif word in _TIGHT:
            _glue_around(gaps, i)
        elif word == "#" and _alnum_start(after):
            _glue_around(gaps, i, before=False)
        elif word == "&" and _SHORT_CAPS.match(prev) and not prev.endswith(".") and _SHORT_CAPS.match(after):
            _glue_around(gaps, i)
        elif word in ("<", ">", "=") and after in ("=", ">") and word + after != "==":
            gaps[i] = ""  # <=, >=, =>
        elif word == "°" and after in ("C", "F"):
            _glue_around(gaps, i, before=False)
        elif word == "℃" and prev[-1:].isdigit():
            _glue_around(gaps, i, after=False)
        elif _CURRENCY.match(word):
            if word == "$" and _DOLLAR_PREFIX.search(prev):
                _glue_around(gaps, i, after=False)
            elif after.isalpha() and (prev[-1:].isdigit() or prev.isalpha()):
                gaps[i] = " "  # a unit after the amount: 5 € pro, 2 Millionen $ Gewinn


def fix_gaps(words: list[str], gaps: list[str], lang: str) -> list[str]:
    """Return ``gaps`` (Moses' separators before ``words[1:]``) with the module's corrections applied."""
    gaps = list(gaps)
    _fix_quotes(words, gaps, lang)
    _fix_symbols(words, gaps)
    _fix_angle_brackets(words, gaps)
    return gaps


def join_gaps(words: list[str], gaps: list[str]) -> str:
    """Concatenate ``words`` with ``gaps[k]`` between ``words[k]`` and ``words[k + 1]``."""
    parts = [words[0]] if words else []
    for gap, word in zip(gaps, words[1:]):
        parts.append(gap)
        parts.append(word)
    return "".join(parts)
