"""Shared fixtures: small parallel corpora written by the tests themselves."""
from __future__ import annotations

import gzip
import os
import random
from pathlib import Path

import pytest

os.environ.setdefault("TQDM_DISABLE", "1")

SUBJECTS = [("the man", "der Mann"), ("the woman", "die Frau"), ("the child", "das Kind"),
            ("my friend", "mein Freund"), ("the teacher", "der Lehrer"), ("our neighbour", "unser Nachbar")]
VERBS = [("sees", "sieht"), ("likes", "mag"), ("finds", "findet"), ("buys", "kauft"), ("paints", "malt")]
OBJECTS = [("a house", "ein Haus"), ("the red car", "das rote Auto"), ("a book", "ein Buch"),
           ("the old tree", "den alten Baum"), ("a small dog", "einen kleinen Hund"), ("the city", "die Stadt")]
ENDINGS = [(".", "."), ("!", "!"), (" today.", " heute."), (", doesn't he?", ", nicht wahr?")]


def sentence_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """n English-German pairs from a small grammar (cased, with punctuation), reproducible by seed."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        (se, sd), (ve, vd), (oe, od), (ee, ed) = (rng.choice(x) for x in (SUBJECTS, VERBS, OBJECTS, ENDINGS))
        pairs.append((f"{se[0].upper()}{se[1:]} {ve} {oe}{ee}", f"{sd[0].upper()}{sd[1:]} {vd} {od}{ed}"))
    return pairs


def write_gz(path: Path, lines: list[str] | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = lines if isinstance(lines, bytes) else "".join(line + "\n" for line in lines).encode("utf-8")
    with gzip.open(path, "wb") as f:
        f.write(data)
    return path


def write_pair(folder: Path, split: str, pairs: list[tuple[str, str]]) -> None:
    write_gz(folder / "de-en" / f"{split}.en.gz", [e for e, _ in pairs])
    write_gz(folder / "de-en" / f"{split}.de.gz", [d for _, d in pairs])


def write_deen_folder(folder: Path, eval_sentences: int = 30) -> Path:
    """A de-en data folder: train (300 pairs), dev (40) and newstest2016 (eval_sentences)."""
    write_pair(folder, "train", sentence_pairs(300, seed=1))
    write_pair(folder, "dev", sentence_pairs(40, seed=2))
    write_pair(folder, "newstest2016", sentence_pairs(eval_sentences, seed=3))
    return folder


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A de-en data folder: train (300 pairs), dev (40) and newstest2016 (30)."""
    return write_deen_folder(tmp_path / "data")


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory) -> Path:
    """A real single-node Slurm on loopback for the session (scripts/slurm-local.sh: installed when missing, stopped
    at the end with nothing left running). Yields the folder of its files; clients need SLURM_CONF."""
    import shutil
    import subprocess

    from pipeline.data.resolver import CHECKOUT

    if shutil.which("slurmctld") is None and os.geteuid() != 0:
        pytest.skip("Slurm is not installed and installing it needs root (scripts/slurm-local.sh install)")
    folder = tmp_path_factory.mktemp("slurm")
    script = str(CHECKOUT / "scripts" / "slurm-local.sh")
    subprocess.run([script, "start", str(folder)], check=True)
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(folder / "slurm.conf")
    try:
        yield folder
    finally:
        subprocess.run([script, "stop", str(folder)], check=True)
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous


@pytest.fixture(scope="session")
def exported_systems(tmp_path_factory):
    """Every exportable system of a small de-en pipeline (tuned, small grids), exported once for the session:
    ({system: ExportSystem task}, the raw source lines of its split newstest2016)."""
    import re

    from luigi.execution_summary import LuigiStatusCode

    from pipeline.deploy.system import KINDS
    from pipeline.io import read_lines
    from tasks.data import TokenizeSplit
    from tasks.export import ExportSystem
    from tests.tasks.helpers import build, shared_params
    from tests.tasks.test_decode_tasks import deterministic_configs

    tmp_path = tmp_path_factory.mktemp("export")
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=9)
    configs = deterministic_configs(tmp_path)
    profile = configs / "profiles" / "tiny.toml"
    text = profile.read_text()
    # (p - 0.5: the tiny dev set's PBMT precisions are 100%, and only a smaller p makes L's n-grams worth their cost)
    for key, value in (("tune_sentences", "10"), ("grid_lambda", "[0.001, 0.25]"), ("grid_p", "[-0.5, 0.0]"),
                       ("grid_r", "[0.0]"), ("grid_gains", '["bounded"]'), ("grid_lattice_weight", "[0.0, 10.0]")):
        text = re.sub(rf"^{key} = .*$", f"{key} = {value}", text, flags=re.M)
    # FNMT and TNMT with their length penalty tuned: the exported folder decodes with the chosen one
    profile.write_text(text.replace("[decode]\n", "[decode]\ngrid_length_penalty = [0.0, 2.0]\n", 1))
    params = shared_params(tmp_path, data, config_dir=configs)
    exports = {name: ExportSystem(system=name, split="newstest2016", **params) for name in KINDS}
    assert build(*exports.values()).status == LuigiStatusCode.SUCCESS
    raw = list(read_lines(TokenizeSplit(split="newstest2016", **params).artifact_dir() / "raw.de.gz"))
    return exports, raw
