"""A module's name says one thing: a name used in two packages (pipeline/, lattices/, tasks/, as a module or a
package) is either the same thing seen from two layers, listed here with what it is, or a clash that fails."""
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("pipeline", "lattices", "tasks")

#: Names in more than one package, each for one thing.
SAME_THING = {
    "cluster": "Slurm: its client (pipeline/cluster/) and the Luigi tasks submitted as its jobs (tasks/cluster.py)",
    "data": "the data stage: the library (pipeline/data/) and its Luigi tasks (tasks/data.py)",
    "decode": "NMT decoding: the library (pipeline/decode/) and its Luigi tasks (tasks/decode.py)",
    "divergence": "sentences whose outputs differ between decoding modes: found (pipeline/decode/) and tabled "
                  "(pipeline/report/)",
    "lattice": "the PBMT lattice: written by the decoder (pipeline/smt/) and read for the posteriors (lattices/)",
    "lm": "the KenLM language model: trained and queried (pipeline/lm.py), and its Luigi task (tasks/lm.py)",
    "lmatrix": "the L matrix: computed (lattices/lmatrix.py) and built per split with its posteriors (tasks/)",
    "mbr": "lattice MBR: the decision rule (lattices/mbr.py) and its Luigi tasks (tasks/mbr.py)",
    "nmt": "the NMT models: the library (pipeline/nmt/) and its Luigi tasks (tasks/nmt.py)",
    "run_estimate": "the forecast before a run: its model (pipeline/run_estimate.py) and the run's graph of Luigi "
                    "stages it is applied to (tasks/run_estimate.py)",
    "strength": "LMBR's gain against the NMT's strength: the snapshots' decodings and gains (tasks/strength.py) "
                "and their table and figure (pipeline/report/strength.py)",
    "pretrained": "a pretrained transformers model as the NMT: loaded and driven (pipeline/nmt/pretrained.py) and "
                  "its Luigi stages, the rows PNMT to LPNMT-lat (tasks/pretrained.py)",
    "report": "the report: its tables (pipeline/report/) and what each task gives it (tasks/report.py)",
    "smt": "the phrase-based system: the library (pipeline/smt/) and its Luigi tasks (tasks/smt.py)",
    "speed": "Figures 2-3's decoding speed: measured (pipeline/decode/speed.py) and its Luigi task (tasks/speed.py)",
    "system": "a system of Table 1: its NMT half as one ensemble (pipeline/nmt/system.py) and the whole exported "
              "folder (pipeline/deploy/system.py)",
    "terms": "terminology constraints: the search hook (pipeline/decode/terms.py) and the terms files matched to "
             "input lines (pipeline/deploy/terms.py)",
}


def module_names() -> dict[str, list[str]]:
    """{name: the modules and packages of that name}."""
    found = defaultdict(list)
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            if path.name == "__init__.py":
                found[path.parent.name].append(path.parent.relative_to(REPO).as_posix() + "/")
            else:
                found[path.stem].append(path.relative_to(REPO).as_posix())
    return found


def test_a_name_in_two_packages_is_one_thing():
    """E.g. a tasks/lattices.py beside the lattices/ package fails, as would a learning-rate `schedule` in
    pipeline/nmt/ beside a worker's `schedule` in tasks/."""
    shared = {name: paths for name, paths in module_names().items() if len(paths) > 1}
    clashes = {name: paths for name, paths in shared.items() if name not in SAME_THING}
    assert not clashes, f"one name for different things (rename one, or list it in SAME_THING): {clashes}"
    assert not set(SAME_THING) - set(shared), f"listed but no longer shared: {set(SAME_THING) - set(shared)}"
