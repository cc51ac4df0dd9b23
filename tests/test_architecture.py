"""docs/architecture.md names every module of the libraries and of tasks/, and every task class: a new module or
stage that is not on the map fails here."""
import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "architecture.md"
PACKAGES = ("pipeline", "lattices", "tasks")


def modules() -> list[Path]:
    return sorted(p.relative_to(REPO) for package in PACKAGES for p in (REPO / package).rglob("*.py")
                  if p.name != "__init__.py" and "__pycache__" not in p.parts)


def named(module: Path, text: str) -> bool:
    """Named by its path (`pipeline/decode/anchored.py`), or by its stem in backquotes on a line that names its
    folder (`pipeline/decode/` (`scores`, `topk`, ...))."""
    if module.as_posix() in text:
        return True
    folder = module.parent.as_posix() + "/"
    return any(folder in line and re.search(rf"`{re.escape(module.stem)}`", line) for line in text.splitlines())


@pytest.mark.parametrize("module", modules(), ids=str)
def test_every_module_is_on_the_map(module):
    assert named(module, PAGE.read_text(encoding="utf-8")), f"{module} is missing from {PAGE.relative_to(REPO)}"


def test_every_task_class_is_on_the_map():
    text = PAGE.read_text(encoding="utf-8")
    classes = [node.name for path in (REPO / "tasks").glob("*.py")
               for node in ast.parse(path.read_text(encoding="utf-8")).body
               if isinstance(node, ast.ClassDef) and not node.name.startswith("_")]
    missing = [name for name in classes if not re.search(rf"\b{name}\b", text)]
    assert not missing, f"task classes missing from {PAGE.relative_to(REPO)}: {missing}"


def test_the_check_can_fail(tmp_path):
    assert not named(Path("pipeline/decode/anchored.py"), "`pipeline/decode/` (`scores`, `topk`)")
    assert named(Path("pipeline/decode/topk.py"), "`pipeline/decode/` (`scores`, `topk`)")
