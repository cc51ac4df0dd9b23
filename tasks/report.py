"""What reproduce-table builds for each translation task, and the numbers it reads back for the report."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import luigi

from pipeline.io import read_json
from pipeline.report.learning_curves import Curve, read_curve
from pipeline.report.cell_provenance import cell_run
from pipeline.report.tables import Record
from pipeline.config import TaskConfig
from tasks.base import PipelineTask
from tasks.data import BuildVocab, TokenizeSplit
from tasks.evaluate import CompareSystems, EvaluateSystem, RoundTripBLEU
from tasks.lm import TrainLM
from tasks.nmt import NMT_SYSTEMS, TrainNMT
from tasks.speed import MeasureDecodingSpeed
from tasks.strength import STRENGTH_FILE, StrengthCurve
from tasks.systems import NMT_MODELS_OF, VARIANT_SYSTEMS, comparisons

EVAL_SET_ALIASES = ("devtest", "test", "tune")


def resolve_eval_split(config: TaskConfig, eval_set: str) -> str:
    """The split that `eval_set` means for a task: devtest (its first development test set), test, tune, or a name."""
    splits = config.splits
    if eval_set == "devtest":
        return splits.devtest[0]
    if eval_set in ("test", "tune"):
        return getattr(splits, eval_set)
    config.split_key(eval_set)  # raises ConfigError naming the known splits
    return eval_set


class TaskReport(PipelineTask, luigi.WrapperTask):
    """Everything the report needs for one translation task (data, LM, round trip; systems in later stages)."""

    eval_set = luigi.Parameter(default="devtest", description="devtest, test, tune or a split name")
    systems = luigi.ListParameter(default=(), description="systems to evaluate (PBMT, FNMT, ...)")
    variants = luigi.ListParameter(default=(), description="Table 2: the NMT systems also decoded as these variants")
    strength_curve = luigi.BoolParameter(default=False, description="also LMBR's gain against the NMT's strength, "
                                         "from the Transformer's training snapshots (tasks/strength.py)")

    def eval_split(self) -> str:
        return resolve_eval_split(self.config, self.eval_set)

    def requires(self) -> dict[str, PipelineTask]:
        splits, split = self.config.splits, self.eval_split()
        return {
            "lm": self.clone(TrainLM),
            "vocab": self.clone(BuildVocab),
            "train": self.clone(TokenizeSplit, split=splits.train),
            "tune": self.clone(TokenizeSplit, split=splits.tune),
            "eval": self.clone(TokenizeSplit, split=split),
            "roundtrip": self.clone(RoundTripBLEU, split=split),
            **{f"system:{s}": self.clone(EvaluateSystem, system=s, split=split) for s in self.systems},
            **{f"variant:{v}:{s}": self.clone(EvaluateSystem, system=s, split=split, variant=v)
               for v in self.variants for s in self.variant_systems()},
            **{f"speed:{m}": self.clone(MeasureDecodingSpeed, models=m, split=split) for m in self.speed_models()},
            **({"significance": self.clone(CompareSystems, split=split, systems=tuple(self.systems))}
               if comparisons(list(self.systems)) else {}),
            **({"strength": self.clone(StrengthCurve, split=split)} if self.strength_curve else {}),
        }

    def significance(self) -> list[dict[str, Any]]:
        """Paired bootstrap records of the hybrids against PBMT and their NMT systems (task added)."""
        task = self.requires().get("significance")
        if task is None:
            return []
        return [{"task": self.task_name, **r} for r in read_json(task.artifact_dir() / "significance.json")]

    def strength_rows(self) -> list[dict[str, Any]]:
        """The strength curve's rows (task added), when it was asked for."""
        task = self.requires().get("strength")
        if task is None:
            return []
        return [{"task": self.task_name, **row} for row in read_json(task.artifact_dir() / STRENGTH_FILE)["rows"]]

    def speed_models(self) -> list[str]:
        """Figures 2-3 go with Table 2: the NMT model families among the chosen systems of a Table 2 task."""
        if not self.variants:
            return []
        return [m for m in ("FNMT", "TNMT") if any(s in self.systems for s in (m, "L" + m))]

    def speed_figures(self) -> list[tuple[str, Path]]:
        """(name in the report folder, file) of the Figures 2-3 measured for this task."""
        files = []
        for m in self.speed_models():
            folder = self.requires()[f"speed:{m}"].artifact_dir()
            for number, suffix in (("2", "beam"), ("3", "sentences")):
                files.append((f"figure{number}_{self.task_name}_{m}.png", folder / f"speed_{suffix}.png"))
                files.append((f"figure{number}_{self.task_name}_{m}.json", folder / f"figure{number}.json"))
        return files

    def learning_curves(self) -> dict[str, Curve]:
        """The tuning-set learning curve of every NMT model behind the chosen systems (built before them), by
        "task system architecture seed"."""
        curves = {}
        for system, architecture in NMT_SYSTEMS.items():
            if any(NMT_MODELS_OF.get(s) == system for s in self.systems):
                for seed in self.config.nmt_for(self.profile_config, architecture).training.seeds:
                    folder = self.clone(TrainNMT, architecture=architecture, seed=seed).artifact_dir()
                    curves[f"{self.task_name} {system} {architecture} seed {seed}"] = read_curve(folder / "metrics.csv")
        return curves

    def variant_systems(self) -> list[str]:
        """The systems of Table 2: the paper's NMT systems among those chosen."""
        return [s for s in self.systems if s in VARIANT_SYSTEMS]

    def output(self) -> list:
        return []

    def run(self) -> None:
        """Nothing to write: the report is complete when everything it requires is."""

    def complete(self) -> bool:
        return all(t.complete() for t in self.requires().values())

    def data_row(self) -> dict[str, Any]:
        sig = {name: task.signature() for name, task in self.requires().items()}
        src, tgt = self.config.source, self.config.target
        cleaning = sig["train"]["stats"]["cleaning"]
        lm = sig["lm"]["stats"]
        counts = lm["ngram_counts"]
        return {
            "task": self.task_name,
            "train_file_pairs": sig["train"]["stats"]["file_lines"],
            "train_selected": sig["train"]["stats"]["selected_lines"],
            "train_kept": cleaning["kept_pairs"],
            "removed": "/".join(str(cleaning[k]) for k in ("empty", "too_short", "too_long", "bad_ratio")),
            "tune_lines": sig["tune"]["stats"]["lines"],
            "eval_set": self.eval_split(),
            "eval_lines": sig["eval"]["stats"]["lines"],
            "vocab": f'{sig["vocab"]["stats"][f"size.{src}"]}/{sig["vocab"]["stats"][f"size.{tgt}"]}',
            "lm": f'{len(counts)} ({sum(counts.values())})',
            "tune_perplexity": lm["tune_perplexity"],
            "roundtrip_bleu": sig["roundtrip"]["stats"]["bleu"]["score"],
        }

    def records(self) -> list[Record]:
        """One record per evaluated system, then the round-trip ceiling."""
        required = self.requires()
        evaluations = [(s, "", required[f"system:{s}"].signature()) for s in self.systems]
        evaluations += [(s, v, required[f"variant:{v}:{s}"].signature())
                        for v in self.variants for s in self.variant_systems()]
        evaluations.append(("ROUNDTRIP", "", required["roundtrip"].signature()))
        records = []
        for system, variant, signature in evaluations:
            bleu = signature["stats"]["bleu"]
            records.append(Record(task=self.task_name, system=system, eval_set=self.eval_split(),
                                  bleu=bleu["score"], precisions=bleu["precisions"],
                                  chrf2=signature["stats"].get("chrf2"),
                                  fallback_lines=len(signature["stats"].get("fallback_lines", [])),
                                  signature={"bleu": bleu["signature"], "artifact": signature["signature"]},
                                  timings=signature["stats"].get("timings", {"seconds": signature["seconds"]}),
                                  source_words=signature["stats"].get("source_words"), variant=variant,
                                  run=cell_run(signature)))
        return records
