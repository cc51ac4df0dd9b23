"""The data folder by name: each file of a pair assembled from public repositories at pinned commits.

`data/recipe/<pair>.toml` lists, for each split, the blocks its file is the concatenation of. A block names a
repository, a commit, the path of each language's file and its sha256, and how to read it:

    text        one segment a line, copied verbatim          gzip-text   the same, gzip-compressed
    iwslt-xml   the text of each <seg>, XML entities unescaped, stripped (IWSLT's official XML files)
    kftt-xml    KFTT's training articles of one category folder (pipeline/data/kftt.py), read from GitHub's
                archive of the commit; the archive has no stable bytes of its own, so its content is checked
                by the assembled file's sha256

A block may keep only the lines whose entry in a labels file (same repository) equals a value. Each file is
fetched through the Fetcher (`https://raw.githubusercontent.com/<repo>/<commit>/<path>`: download cache,
checksums, $MT_DOWNLOAD_MIRROR, $MT_OFFLINE), the blocks' line counts are checked, and the concatenation is
checked against the recipe's `text_sha256` before it is written, atomically, as `<folder>/<pair>/<split>.<lang>.gz`
(with `train.sources.tsv`, the line range of each block, for a training file). The recipe also records the sha256
of each gzip file as first published; the same compressor (`gzip`: "zlib" level 9 or "gnu" gzip -n -9) gives the
same bytes, and a different one (another zlib build) is logged, not an error: the text is what is read.
"""
from __future__ import annotations

import gzip
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from pipeline.data import kftt
from pipeline.data.download import seg_texts
from pipeline.data.fetch import DownloadError, Fetcher
from pipeline.errors import DataError
from pipeline.io import exclusive, gzip_writer, sha256_file, write_text

log = logging.getLogger(__name__)
RECIPES = Path(__file__).resolve().parents[2] / "data" / "recipe"
FORMATS = ("text", "gzip-text", "iwslt-xml", "kftt-xml")
SOURCES_HEADER = ("first_line", "last_line", "n_lines", "block", "repository", "commit", "paths")


def raw_url(repository: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repository}/{commit}/{path}"


def archive_url(repository: str, commit: str) -> str:
    return f"https://codeload.github.com/{repository}/tar.gz/{commit}"


@dataclass(frozen=True)
class Block:
    name: str
    repository: str
    commit: str
    format: str
    lines: int
    paths: Mapping[str, str] = field(default_factory=dict)  # {language: path in the repository}
    sha256: Mapping[str, str] = field(default_factory=dict)  # {language: sha256 of that file}
    directory: str = ""  # kftt-xml: the category folder
    keep_where: Mapping[str, str] = field(default_factory=dict)  # {labels: path, sha256: ..., equals: value}

    def source_paths(self) -> str:
        """The paths column of the sources table."""
        if self.format == "kftt-xml":
            return f"{self.directory}/*.xml"
        return ";".join([*self.paths.values(), *([self.keep_where["labels"]] if self.keep_where else [])])


@dataclass(frozen=True)
class RecipeFile:
    pair: str
    split: str
    lines: int
    gzip: str  # "zlib" or "gnu"
    sha256: Mapping[str, str]  # {language: sha256 of the gzip file as first published}
    text_sha256: Mapping[str, str]  # {language: sha256 of the text}
    sources_table: bool
    blocks: tuple[Block, ...]
    source: Path  # the recipe file


def recipe_path(pair: str, recipes: Path = RECIPES) -> Path:
    return Path(recipes) / f"{pair}.toml"


def load_recipe(pair: str, recipes: Path = RECIPES) -> dict[str, RecipeFile]:
    """{split: its recipe} for `pair`; {} when the pair has no recipe."""
    path = recipe_path(pair, recipes)
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        files = {}
        for i, entry in enumerate(data["files"]):
            where = f"{path}: files[{i}] (split {entry.get('split', '?')!r})"
            blocks = tuple(_block(b, f"{where}, blocks[{j}]", data["languages"]) for j, b in enumerate(entry["blocks"]))
            if sum(b.lines for b in blocks) != entry["lines"]:
                raise DataError(f"{where}: its blocks hold {sum(b.lines for b in blocks)} lines, not {entry['lines']}")
            if entry["gzip"] not in ("zlib", "gnu"):
                raise DataError(f"{where}: gzip must be \"zlib\" or \"gnu\", not {entry['gzip']!r}")
            files[entry["split"]] = RecipeFile(data["pair"], entry["split"], entry["lines"], entry["gzip"],
                                               entry["sha256"], entry["text_sha256"], entry["sources_table"], blocks, path)
    except (KeyError, TypeError, tomllib.TOMLDecodeError) as e:
        raise DataError(f"{path}: not a data recipe ({type(e).__name__}: {e})") from e
    return files


def _block(entry: dict, where: str, languages: list[str]) -> Block:
    block = Block(**entry)
    if block.format not in FORMATS:
        raise DataError(f"{where}: format {block.format!r} is not one of {', '.join(FORMATS)}")
    if block.format == "kftt-xml" and not block.directory:
        raise DataError(f"{where}: a kftt-xml block names its category folder (directory)")
    if block.format != "kftt-xml" and (set(block.paths) != set(languages) or set(block.sha256) != set(languages)):
        raise DataError(f"{where}: paths and sha256 must give one file for each of {', '.join(languages)}")
    return block


def assemble(recipe: RecipeFile, languages: tuple[str, str], fetcher: Fetcher, folder: Path) -> dict[str, Path]:
    """{language: <folder>/<pair>/<split>.<language>.gz}, assembled if not there yet (`languages` in any order)."""
    outputs = {lang: Path(folder) / recipe.pair / f"{recipe.split}.{lang}.gz" for lang in languages}
    with exclusive(Path(folder) / recipe.pair / recipe.split):
        if all(p.is_file() for p in outputs.values()):
            return outputs
        fetched = _fetch_all(recipe, fetcher)
        articles = _kftt_articles(recipe, fetched)
        segments = [_read_block(recipe, block, fetched, articles) for block in recipe.blocks]
        outputs[languages[0]].parent.mkdir(parents=True, exist_ok=True)
        texts = {lang: _checked_text(recipe, lang, [lines[lang] for lines in segments]) for lang in outputs}
        with tempfile.TemporaryDirectory(dir=outputs[languages[0]].parent) as work:
            for lang, text in texts.items():
                _write_gzip(recipe, lang, text, Path(work), outputs[lang])
        if recipe.sources_table:
            write_text(outputs[languages[0]].parent / f"{recipe.split}.sources.tsv", sources_table(recipe))
    return outputs


def sources_table(recipe: RecipeFile) -> str:
    rows, line = [SOURCES_HEADER], 0
    for b in recipe.blocks:
        rows.append((line + 1, line + b.lines, b.lines, b.name, b.repository, b.commit, b.source_paths()))
        line += b.lines
    return "".join("\t".join(map(str, row)) + "\n" for row in rows)


def _what(recipe: RecipeFile, block: Block, path: str = "") -> str:
    return (f"block '{block.name}' of {recipe.pair}/{recipe.split} ({block.repository}@{block.commit[:12]}"
            + (f", {path})" if path else ")"))


def _fetch_all(recipe: RecipeFile, fetcher: Fetcher) -> dict[tuple[str, str, str], Path]:
    """{(repository, commit, path or "" for the archive): the file in the cache}; the errors of every file at once."""
    wanted: dict[tuple[str, str, str], tuple[Block, str]] = {}  # key: (block, checksum)
    for block in recipe.blocks:
        if block.format == "kftt-xml":  # one archive of the commit serves every category folder
            wanted.setdefault((block.repository, block.commit, ""), (block, ""))
        for lang, path in block.paths.items():
            wanted[(block.repository, block.commit, path)] = (block, block.sha256[lang])
        if block.keep_where:
            wanted[(block.repository, block.commit, block.keep_where["labels"])] = (block, block.keep_where["sha256"])
    fetched, errors = {}, []
    for (repository, commit, path), (block, sha256) in wanted.items():
        try:
            if path:
                fetched[(repository, commit, path)] = fetcher.fetch(
                    raw_url(repository, commit, path), f"sha256:{sha256}", _what(recipe, block, path))
            else:
                fetched[(repository, commit, path)] = fetcher.fetch(
                    archive_url(repository, commit), "", _what(recipe, block),
                    verified_by=f"its content is checked by the sha256 of {recipe.pair}/{recipe.split}")
        except DownloadError as e:
            errors.append(str(e))
    if errors:
        raise DownloadError("\n".join(errors))
    return fetched


def _kftt_articles(recipe: RecipeFile, fetched: dict) -> dict[str, list[tuple[str, str]]]:
    """{category folder: its KFTT training pairs} of every kftt-xml block, each archive read once."""
    folders: dict[Path, list[str]] = {}
    for b in recipe.blocks:
        if b.format == "kftt-xml":
            folders.setdefault(fetched[(b.repository, b.commit, "")], []).append(b.directory)
    return {d: pairs for archive, dirs in folders.items() for d, pairs in kftt.training_pairs(archive, dirs).items()}


def _read_block(recipe: RecipeFile, block: Block, fetched: dict, articles: dict) -> dict[str, list[str]]:
    """{language: the block's segments}, checked against its line count."""
    if block.format == "kftt-xml":
        pairs = articles[block.directory]
        lines = {lang: [pair[i] for pair in pairs] for i, lang in enumerate(kftt.LANGUAGES)}
    else:
        lines = {lang: _segments(fetched[(block.repository, block.commit, p)], block.format)
                 for lang, p in block.paths.items()}
    if block.keep_where:
        labels = _segments(fetched[(block.repository, block.commit, block.keep_where["labels"])], "text")
        keep = [label == block.keep_where["equals"] for label in labels]
        lines = {lang: [s for s, k in zip(segs, keep) if k] for lang, segs in lines.items()}
    for lang, segs in lines.items():
        if len(segs) != block.lines:
            raise DataError(f"{_what(recipe, block, block.paths.get(lang, block.directory))}: {len(segs)} "
                            f"{lang} segments, but the recipe ({recipe.source}) expects {block.lines}")
    return lines


def _segments(path: Path, form: str) -> list[str]:
    data = gzip.decompress(path.read_bytes()) if form == "gzip-text" else path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 at byte {e.start}") from e
    if form == "iwslt-xml":
        return seg_texts(text)
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _checked_text(recipe: RecipeFile, lang: str, blocks: list[list[str]]) -> bytes:
    """The file's text, one segment a line; DataError unless its sha256 is the recipe's."""
    text = "".join(f"{segment}\n" for segments in blocks for segment in segments).encode("utf-8")
    digest = hashlib.sha256(text).hexdigest()
    if digest != recipe.text_sha256[lang]:
        raise DataError(f"{recipe.pair}/{recipe.split}.{lang}: the assembled text has sha256 {digest}, but the recipe "
                        f"({recipe.source}) expects {recipe.text_sha256[lang]}: an upstream file changed "
                        "or the recipe is wrong; nothing was written")
    return text


def _write_gzip(recipe: RecipeFile, lang: str, text: bytes, work: Path, output: Path) -> None:
    packed = work / output.name
    _compress(text, packed, recipe.gzip)
    if sha256_file(packed) != recipe.sha256[lang]:
        log.warning("%s: the text is the recipe's, but this machine's %s compression gives other gzip bytes than the "
                    "published file (sha256 %s)", output.name, recipe.gzip, recipe.sha256[lang])
    output.parent.mkdir(parents=True, exist_ok=True)
    os.replace(packed, output)
    log.info("assembled %s: %d lines from %d blocks", output, recipe.lines, len(recipe.blocks))


def _compress(text: bytes, path: Path, kind: str) -> None:
    gnu = shutil.which("gzip") if kind == "gnu" else None
    if gnu:
        with path.open("wb") as out:
            subprocess.run([gnu, "-n", "-9", "-c"], input=text, stdout=out, check=True)
        return
    with gzip_writer(path, compresslevel=9) as out:
        out.write(text)
