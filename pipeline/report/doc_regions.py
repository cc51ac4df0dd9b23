"""Generated regions of the hand-written docs: every figure a run produced is drawn from its JSON, never typed.

    .venv/bin/python -m pipeline.report.doc_regions           # rewrite every region of README.md and docs/
    .venv/bin/python -m pipeline.report.doc_regions --check   # exit 1, naming file and line, when one is stale

A block region is a generator and its arguments between two comments; an inline value is a JSON path between two
comments within a sentence or a table cell (pipeline/report/doc_sources.py: what each generator reads):

    <!-- generated: table1 results/medium -->
    | task | PBMT | ... |
    <!-- end generated -->

    TNMT reaches <!-- value: results/medium/results.json task=eng-ger,system=TNMT,variant=/bleu .2f -->15.89<!-- /value -->

`make docs` rewrites them; tests/test_docs_figures.py fails when one is stale, and finds every figure outside
them that is not on its allow-list.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from pipeline.report.doc_sources import DocSourceError, render_block, render_value

REPO = Path(__file__).resolve().parents[2]
# a block's comments stand at the start of a line, a value's outside a code span (so the docs can show the syntax)
BLOCK = re.compile(r"(^<!-- generated: (?P<spec>[^\n]*?) -->\n)(?P<body>.*?)(^<!-- end generated -->)", re.S | re.M)
VALUE = re.compile(r"((?<!`)<!-- value: (?P<spec>[^\n]*?) -->)(?P<body>[^\n]*?)(<!-- /value -->)")
OPENINGS = ((re.compile(r"^<!-- generated:", re.M), "<!-- end generated -->", BLOCK),
            (re.compile(r"(?<!`)<!-- value:"), "<!-- /value -->", VALUE))


class DocRegionError(ValueError):
    """A region that cannot be generated: names the file, the line and why."""


@dataclass(frozen=True)
class Region:
    kind: str  # "block" or "value"
    spec: str
    line: int  # 1-based line of the opening comment
    start: int  # offsets of the generated body in the text
    end: int


def doc_files(repo: Path = REPO) -> list[Path]:
    """README.md and every page under docs/, except the results page (generated whole)."""
    return [repo / "README.md", *sorted(p for p in (repo / "docs").rglob("*.md") if p.name != "RESULTS.md")]


def find_regions(text: str) -> list[Region]:
    regions = []
    for kind, pattern in (("block", BLOCK), ("value", VALUE)):
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            regions.append(Region(kind, match["spec"].strip(), line, match.start("body"), match.end("body")))
    return sorted(regions, key=lambda r: r.start)


def _check_balanced(text: str, path: Path) -> None:
    for opening, closing, pattern in OPENINGS:
        matched = {m.start() for m in pattern.finditer(text)}
        for m in opening.finditer(text):
            if m.start() not in matched:
                line = text.count("\n", 0, m.start()) + 1
                raise DocRegionError(f"{path}:{line}: {m.group()} ... without its closing {closing}")


def refreshed(text: str, path: Path, repo: Path = REPO) -> str:
    """`text` with every region's body generated again from the files it names (relative to `repo`)."""
    _check_balanced(text, path)
    out, last = [], 0
    for region in find_regions(text):
        try:
            body = (render_block(region.spec, repo) if region.kind == "block" else render_value(region.spec, repo))
        except DocSourceError as error:
            raise DocRegionError(f"{path}:{region.line}: {region.spec}: {error}") from None
        out += [text[last:region.start], body]
        last = region.end
    return "".join(out) + text[last:]


def outside_regions(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the text with every region's body blanked: what a figure scan should look at."""
    for region in reversed(find_regions(text)):
        blank = "\n" * text.count("\n", region.start, region.end)
        text = text[:region.start] + blank + text[region.end:]
    return list(enumerate(text.splitlines(), 1))


def stale_files(repo: Path = REPO) -> list[str]:
    """The docs whose regions differ from what their sources give now (with the first stale line)."""
    problems = []
    for path in doc_files(repo):
        text = path.read_text(encoding="utf-8")
        new = refreshed(text, path.relative_to(repo), repo)
        if new != text:
            old_lines, new_lines = text.splitlines(), new.splitlines()
            line = next((i for i, (a, b) in enumerate(zip(old_lines, new_lines), 1) if a != b),
                        min(len(old_lines), len(new_lines)) + 1)
            problems.append(f"{path.relative_to(repo)}:{line}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rewrite the generated regions of README.md and docs/.")
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--check", action="store_true", help="only report stale regions (exit 1)")
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = stale_files(args.repo)
            for problem in problems:
                print(f"stale generated region: {problem} (run python -m pipeline.report.doc_regions)",
                      file=sys.stderr)
            return 1 if problems else 0
        from pipeline.io import write_text

        written = 0
        for path in doc_files(args.repo):
            text = path.read_text(encoding="utf-8")
            new = refreshed(text, path.relative_to(args.repo), args.repo)
            if new != text:
                write_text(path, new)
                written += 1
    except DocRegionError as error:
        print(f"doc_regions: {error}", file=sys.stderr)
        return 2
    print(f"doc_regions: {written} file(s) rewritten", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
