"""The docs list what the code has: every profile of configs/profiles/ in each list of profiles, and every page of
the site on its home page, the one list of pages (the README links to it). Every option of every command is on the
command reference, docs/cli.md, generated from the parsers (tests/tasks/test_cli_reference.py)."""
import re
from pathlib import Path

import pytest
import yaml

from pipeline import config as configs

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PROFILES = configs.available("profiles")
_ALT = "|".join(sorted(map(re.escape, PROFILES), key=len, reverse=True))
# a profile name in backquotes, or as an item of a plain list: "(tiny, medium, ...)", "tiny, medium or paper"
_QUOTED = re.compile(rf"`({_ALT})`")
_LISTED = re.compile(rf"(?<![\w-])({_ALT})(?=, |\)| or | and )|(?<=, )({_ALT})(?![\w-])|(?<=\()({_ALT})(?![\w-])")


def profiles_named(text: str) -> set[str]:
    return set(_QUOTED.findall(text)) | {name for match in _LISTED.findall(text) for name in match if name}


def statements(text: str) -> list[str]:
    """Table rows one by one, and the sentences of every other paragraph."""
    units = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        if lines and all(line.startswith("|") for line in lines):
            units += lines
        else:
            units += re.split(r"(?<=\.)\s+(?=[A-Z`(])", " ".join(lines))
    return units


def test_a_list_of_profiles_names_every_profile():
    """A table row or sentence that names three profiles or more is a list of them: it names them all."""
    partial = [f"{page.relative_to(REPO)}: {sorted(found)}: {unit[:120]}" for page in PAGES
               for unit in statements(page.read_text(encoding="utf-8"))
               if len(found := profiles_named(unit)) >= 3 and found != set(PROFILES)]
    assert not partial, "profiles missing from a list of them:\n" + "\n".join(partial)


@pytest.mark.parametrize("page", ["README.md", "docs/profiles.md"])
def test_every_profile_has_a_row_in_the_profile_table(page):
    rows = re.findall(r"^\| `([\w-]+)` \|", (REPO / page).read_text(encoding="utf-8"), re.M)
    assert set(PROFILES) <= set(rows), f"{page}: no row for {sorted(set(PROFILES) - set(rows))}"


def test_the_list_detector_can_fail():
    assert profiles_named("| `--profile` | `tiny`, `medium`, `paper` or `paper-rehearsal` |") == {
        "tiny", "medium", "paper", "paper-rehearsal"}
    assert profiles_named("scale profile (tiny, medium, paper)") == {"tiny", "medium", "paper"}
    assert profiles_named("the paper's corpora on a medium machine") == set()


def _nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return [page for item in nav for page in _nav_pages(item)]


def test_the_home_page_links_every_page_of_the_site():
    site = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    home = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([^)#]+\.md)", home))
    missing = [page for page in _nav_pages(site["nav"]) if page != "index.md" and page not in linked]
    assert not missing, f"docs/index.md does not link: {missing}"


def test_the_readme_links_the_docs_home_page_and_keeps_no_copy_of_its_list():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "](docs/index.md)" in readme
    rows = [line for line in readme.splitlines() if re.match(r"^\| \[[^]]+\]\(docs/\w+\.md\) \|", line)]
    assert not rows, f"the README lists docs pages itself: {rows[:3]}"
