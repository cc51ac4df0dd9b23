"""No hand-typed figure in README.md and docs/: every number shaped like a result (a decimal, a ratio `1.5x`, a
percentage, a duration `12 minutes`) outside code is inside a generated region (pipeline/report/doc_regions.py),
or on tests/docs_figures.toml with its reason. Generated regions must be current.

    .venv/bin/python tests/test_docs_figures.py --pending   # print the figures that are on no list, as TOML
"""
from __future__ import annotations

import re
import sys
import tomllib
from collections import Counter
from pathlib import Path

from pipeline.report.doc_regions import REPO, doc_files, outside_regions, stale_files

ALLOWLIST = Path(__file__).with_name("docs_figures.toml")
FIGURE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?x\b|\d+(?:\.\d+)?\s?%|\d+ (?:min|minutes|hours|seconds|s)\b|"
                    r"\d+\.\d+(?![.\d]))")
NOT_PROSE = (re.compile(r"`[^`]*`"), re.compile(r"\]\([^)]*\)"), re.compile(r"https?://\S+"),
             re.compile(r"<!--.*?-->"))


def figures(text: str) -> list[tuple[int, str]]:
    """(line, figure) of every result-shaped number outside code, links and generated regions."""
    found, fenced = [], False
    for number, line in outside_regions(text):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for pattern in NOT_PROSE:
            line = pattern.sub(" ", line)
        found += [(number, figure) for figure in FIGURE.findall(line)]
    return found


def unlisted(repo: Path = REPO, allowlist: Path = ALLOWLIST) -> dict[str, list[tuple[int, str]]]:
    """The figures of each doc that no entry of the allow-list covers (an entry covers as many as it lists)."""
    listed: dict[str, Counter] = {}
    for entry in tomllib.loads(allowlist.read_text(encoding="utf-8")).get("allowed", []):
        listed.setdefault(entry["file"], Counter()).update(entry["figures"])
    problems = {}
    for path in doc_files(repo):
        name = path.relative_to(repo).as_posix()
        budget = Counter(listed.get(name, Counter()))
        left = []
        for line, figure in figures(path.read_text(encoding="utf-8")):
            if budget[figure] > 0:
                budget[figure] -= 1
            else:
                left.append((line, figure))
        if left:
            problems[name] = left
    return problems


def test_finds_figures_outside_code_and_regions():
    text = ("TNMT reaches 15.89, 1.5x faster, 12% more, in 110 minutes; torch 2.13.0 and `0.25` do not count.\n"
            "```\n3.14\n```\n<!-- generated: table1 results/medium -->\n| 9.99 |\n<!-- end generated -->\n"
            "see [it](results/1.5.json) <!-- value: a.json b .2f -->4.20<!-- /value -->\n")
    assert [f for _, f in figures(text)] == ["15.89", "1.5x", "12%", "110 minutes"]


def test_the_allow_list_covers_only_what_it_lists(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("PBMT 21.94 and TNMT 17.32; the paper's 28.9.\n")
    allow = tmp_path / "allow.toml"
    allow.write_text('[[allowed]]\nfile = "README.md"\nreason = "the paper\'s"\nfigures = ["28.9"]\n')
    assert unlisted(tmp_path, allow) == {"README.md": [(1, "21.94"), (1, "17.32")]}


def test_every_figure_in_the_docs_is_generated_or_listed_with_a_reason():
    entries = tomllib.loads(ALLOWLIST.read_text(encoding="utf-8"))["allowed"]
    assert all(entry.get("reason", "").strip() for entry in entries), "every allow-list entry gives its reason"
    problems = unlisted()
    assert problems == {}, ("figures typed by hand (generate them with pipeline/report/doc_regions.py, or list them "
                            f"in {ALLOWLIST.name} with the reason): {problems}")


def test_no_allow_list_entry_outlives_its_figures():
    found: dict[str, Counter] = {p.relative_to(REPO).as_posix(): Counter(f for _, f in figures(p.read_text()))
                                 for p in doc_files()}
    listed: dict[str, Counter] = {}
    for entry in tomllib.loads(ALLOWLIST.read_text(encoding="utf-8"))["allowed"]:
        listed.setdefault(entry["file"], Counter()).update(entry["figures"])
    extra = {name: dict(counts - found.get(name, Counter())) for name, counts in listed.items()
             if counts - found.get(name, Counter())}
    assert extra == {}, f"allow-list entries whose figures are gone from the docs: {extra}"


def test_every_generated_region_is_current():
    assert stale_files() == [], "run: .venv/bin/python -m pipeline.report.doc_regions (make docs does)"


if __name__ == "__main__" and sys.argv[1:] == ["--pending"]:
    for name, left in unlisted().items():
        print(f'[[allowed]]\nfile = "{name}"\nreason = ""\nfigures = {[f for _, f in left]!r}\n'.replace("'", '"'))
