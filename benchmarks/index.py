"""The index of results/benchmarks: one row per JSON file (what measured it, the command, the machine, the date),
generated from the files themselves so that it cannot go stale.

    .venv/bin/python benchmarks/index.py            # write results/benchmarks/README.md
    .venv/bin/python benchmarks/index.py --check    # exit 1 when README.md is not what the files give

The producer of a file is its `benchmark` field, else its name's prefix (PREFIXES). Its date is its `date` field or
its machine's (common.machine records it); files written before that carry the date of the commit that added them.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FOLDER = REPO / "results" / "benchmarks"
INDEX = FOLDER / "README.md"

# producer: (the script, relative to benchmarks/, or None; what it measures)
PRODUCERS: dict[str, tuple[str | None, str]] = {
    "accelerated_pipeline": ("accelerated_pipeline.py", "the accelerated hybrid end to end against accelerated FNMT"),
    "beam_speed": ("beam_speed.py", "decoding speed against beam size and sentences per batch (Figures 2-3)"),
    "batch_invariance": ("batch_invariance.py", "every decoding mode against decoding each sentence alone"),
    "cpu_speedups": ("cpu_speedups.py", "int8, pre-computed embedding projections and threads"),
    "ct2_speed": ("ct2_speed.py", "our Transformer decoder against CTranslate2"),
    "decode_processes": ("decode_processes.py", "one search on T threads against T one-thread processes"),
    "decode_profile": ("decode_profile.py", "a decoding step's time: matrix products, ancestry kernels, other ops, "
                       "Python"),
    "hf_export_agreement": ("hf_export_agreement.py", "generate on our Transformer exported to transformers against "
                            "our decoder: the same 1-best?"),
    "hf_export_hybrid": ("hf_export_hybrid.py", "the hybrid over our Transformer exported to transformers against "
                         "the pipeline's own systems: the same BLEU?"),
    "hf_speed": ("hf_speed.py", "our decoder driving a transformers model against its generate, with and without L"),
    "job_curve": ("job_curve.py", "a task's training job packed and trained on another machine (a GPU): tuning-set "
                  "BLEU and loss"),
    "learning_curve": ("learning_curve.py", "a profile's model trained past its caps: tuning-set BLEU and loss"),
    "lm_train": ("lm_train.py", "KenLM training time and perplexity"),
    "lmbr_overhead": ("lmbr_overhead.py", "the same decoder with and without L"),
    "lnmt_lambda": ("experiments/lnmt_lambda.py", "unconstrained LNMT at the grid's smallest lambda against MBR"),
    "mbr_alpha": ("experiments/mbr_alpha.py", "lattice MBR's tuning-set BLEU under several path scales"),
    "length_tuning": ("length_tuning.py", "a length penalty tuned per NMT system against the shared one, on devtest"),
    "ngram_gains": (None, "bounded-gain decoding tasks timed before and after vectorised tables (an ad hoc script)"),
    "nmt_train": ("nmt_train.py", "NMT training target tokens per second against an earlier trainer"),
    "output_stats": ("output_stats.py", "every system's BLEU, chrF2, length and repeated 4-grams"),
    "paired_outputs": (None, "outputs of one system built two ways, with paired bootstrap (as sacrebleu --paired-bs)"),
    "pbmt_decode": ("pbmt_decode.py", "PBMT words per minute, compiled and Python search, with and without lattices"),
    "pbmt_reordering": ("experiments/pbmt_reordering.py", "lexicalised against distance-based reordering"),
    "peer_nmt": ("peer_nmt.py", "our Transformer training against eole's"),
    "phrase_table": ("phrase_table.py", "phrase-table building phase by phase against another checkout"),
    "posteriors": ("posteriors.py", "posteriors + L against the PBMT decoding of the same sentences"),
    "run_estimate": ("run_estimate.py", "reproduce-table's forecast before a build against a run's own build minutes, "
                     "stage by stage"),
    "run_timeline": (None, "how a reproduce-table run spent its wall time"),
    "serve_load": ("serve_load.py", "lmbr serve under concurrent clients against offline translation"),
    "shrunken_ensemble": ("shrunken_ensemble.py", "the FNMT ensemble, unfolded, shrunken and its first member"),
    "terms": ("terms.py", "terminology constraints: terms present, BLEU and speed"),
    "text_roundtrip": ("text_roundtrip.py", "the text pipeline's round trip: raw -> words -> subwords -> text"),
    "tune_bleu": ("tune_bleu.py", "a trained model's beam BLEU on the tuning set"),
    "tuning_bootstrap": ("tuning_bootstrap.py", "the rescoring rows' mu chosen again on resampled tuning sentences, "
                         "and the devtest BLEU of each choice"),
    "tuning_stability": ("tuning_stability.py", "tuned systems' devtest BLEU under several windows of tuning "
                         "sentences"),
    "unk_mask": ("experiments/unk_mask.py", "LNMT with <unk> forbidden"),
}
# a file name's prefix -> its producer, for files without a `benchmark` field (longest prefix first)
PREFIXES = {"anchored_": "paired_outputs", "unk_restore_": "paired_outputs", "serve_": "serve_load",
            **{name: name for name in PRODUCERS}}


def producer(name: str, data: Any) -> str:
    """The producer of the file `name` holding `data`."""
    if isinstance(data, dict) and data.get("benchmark") in PRODUCERS:
        return data["benchmark"]
    for prefix in sorted(PREFIXES, key=len, reverse=True):
        if name.startswith(prefix):
            return PREFIXES[prefix]
    raise SystemExit(f"{name}: no producer known; add its prefix to PREFIXES in benchmarks/index.py")


def machine_text(machine: Any) -> str:
    """CPU, cores and GPU as the file records them."""
    if isinstance(machine, str):
        return machine
    if not isinstance(machine, dict):
        return "not recorded"
    cpu = machine.get("cpu") or machine.get("processor") or "CPU not recorded"
    cores = machine.get("cpu_count") or machine.get("cores")
    parts = ([cpu] + ([machine["cpu_variant"]] if machine.get("cpu_variant") else []) + ([f"{cores} cores"] if cores
             else []) + ([machine["gpu"]] if machine.get("gpu") else []))
    return ", ".join(parts)


def date_of(data: Any) -> str:
    """The file's `date`, or its machine's."""
    if not isinstance(data, dict):
        return "not recorded"
    machine = data.get("machine")
    return data.get("date") or (machine.get("date") if isinstance(machine, dict) else None) or "not recorded"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def is_log(path: Path, folder: Path) -> bool:
    """A run's log kept beside its report (in a `<report>_logs/` folder), not a report itself."""
    return any(part.endswith("_logs") for part in path.relative_to(folder).parts[:-1])


def rows(folder: Path) -> list[tuple[str, str, str, str, str]]:
    """(file, producer, command, machine, date) of every JSON report under `folder` (runs' logs left out), by
    producer and file."""
    found = []
    for path in sorted(p for p in folder.rglob("*.json") if not is_log(p, folder)):
        name = path.relative_to(folder).as_posix()
        data = json.loads(path.read_text(encoding="utf-8"))
        command = data.get("command") if isinstance(data, dict) else None
        found.append((name, producer(path.name, data), command or "not recorded", machine_text(
            data.get("machine") if isinstance(data, dict) else None), date_of(data)))
    return sorted(found, key=lambda r: (r[1], r[0]))


def render(folder: Path = FOLDER) -> str:
    """The index's text."""
    lines = ["# results/benchmarks", "",
             "Generated by `python benchmarks/index.py` from the JSON files of this folder; do not edit by hand. "
             "What each suite measures and its current figures: the benchmark pages (`docs/benchmarks/`).", ""]
    by_producer: dict[str, list] = {}
    for row in rows(folder):
        by_producer.setdefault(row[1], []).append(row)
    for name, found in by_producer.items():
        script, what = PRODUCERS[name]
        source = f"`benchmarks/{script}`" if script else "no script kept"
        lines += [f"## {name}", "", f"{what[0].upper()}{what[1:]} ({source}).", "", "| file | command | machine | date |",
                  "|---|---|---|---|"]
        lines += [f"| [{f}]({f}) | {cell(f'`{c}`' if c != 'not recorded' else c)} | {cell(m)} | {d} |"
                  for f, _, c, m, d in found]
        lines.append("")
    others = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                    if p.is_file() and (p.suffix != ".json" or is_log(p, folder)) and p != folder / INDEX.name)
    if others:
        lines += ["## Other files", "", "Tables, figures, metrics and runs' logs beside the JSON files:", ""]
        lines += [f"- [{name}]({name})" for name in others]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 when the index is out of date")
    p.add_argument("--folder", type=Path, default=FOLDER)
    args = p.parse_args(argv)
    index = args.folder / INDEX.name
    text = render(args.folder)
    if args.check:
        if not index.is_file() or index.read_text(encoding="utf-8") != text:
            print(f"{index} is out of date: run `python benchmarks/index.py`", file=sys.stderr)
            return 1
        return 0
    index.write_text(text, encoding="utf-8")
    print(f"wrote {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
