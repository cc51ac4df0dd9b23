"""KFTT's training split rebuilt from its source corpus: NICT's "Japanese-English Bilingual Corpus of Wikipedia's
Kyoto Articles" v2.01, one XML file per article in one folder per category.

The rule (it reproduces KFTT 1.0's dev, tune and test sets line for line, and its 440,288 training pairs): every
`<sen>` of every article, in file-name order within a category; Japanese = the text of `<j>` with ASCII spaces and
`|` removed, stripped; English = the text of the last `<e type="check">` (the checked translation), stripped.
Articles `*00002.xml`, `*00003.xml` and `*00004.xml` are KFTT's dev, tune and test sets; all others are training
data. One article (GNM00155.xml) is not well-formed inside its `<copyright>` element, which holds no sentence, so
that element is dropped before parsing every file.
"""
from __future__ import annotations

import re
import tarfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path, PurePosixPath
from typing import Iterable

from pipeline.errors import DataError

LANGUAGES = ("ja", "en")  # the order of each pair
HELD_OUT = ("00002", "00003", "00004")  # KFTT dev, tune and test articles
_COPYRIGHT = re.compile(rb"<copyright>.*?</copyright>", re.DOTALL)


def article_pairs(xml: bytes, name: str) -> list[tuple[str, str]]:
    """The (Japanese, English) pairs of one article's XML, in document order."""
    try:
        root = ElementTree.fromstring(_COPYRIGHT.sub(b"", xml))
    except ElementTree.ParseError as e:
        raise DataError(f"{name}: not well-formed XML ({e})") from e
    pairs = []
    for sentence in root.iter("sen"):
        japanese = sentence.find("j")
        checked = [e for e in sentence.findall("e") if e.get("type") == "check"]
        ja = "".join(japanese.itertext()) if japanese is not None else ""
        en = "".join(checked[-1].itertext()) if checked else ""
        pairs.append((ja.replace(" ", "").replace("|", "").strip(), en.strip()))
    return pairs


def is_training_article(name: str) -> bool:
    return not PurePosixPath(name).stem.endswith(HELD_OUT)


def training_pairs(archive: Path, directories: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """{directory: its training pairs, articles in file-name order} from a tar archive of the corpus, read in one
    pass. A directory is a path inside the repository (e.g. wiki_corpus_2.01/BDS); the archive's top folder (GitHub
    names it <repo>-<commit>) is ignored."""
    wanted = {d.strip("/"): {} for d in directories}
    try:
        with tarfile.open(archive, "r|*") as tar:
            for member in tar:
                inner = PurePosixPath(*PurePosixPath(member.name).parts[1:])
                folder = inner.parent.as_posix()
                if member.isfile() and folder in wanted and inner.suffix == ".xml" and is_training_article(inner.name):
                    wanted[folder][inner.name] = article_pairs(tar.extractfile(member).read(), f"{archive}:{member.name}")
    except tarfile.TarError as e:
        raise DataError(f"{archive}: not a readable tar archive ({e})") from e
    empty = [d for d, articles in wanted.items() if not articles]
    if empty:
        raise DataError(f"{archive}: no article in {', '.join(empty)}")
    return {d: [pair for name in sorted(articles) for pair in articles[name]] for d, articles in wanted.items()}
