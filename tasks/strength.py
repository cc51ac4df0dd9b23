"""LMBR's gain against the NMT's strength: TNMT, LTNMT and TNMT-lat decoded from snapshots of the Transformer's
training (training.snapshot_every), from weak to final, each tuned on the tuning set as Table 1's systems are
(TNMT's length penalty, LTNMT's lambda with its gain form, p and r, TNMT-lat's mu; LTNMT's search form and evidence
space stay those the final system chose), and the gains over the NMT set against the NMT's margin over the PBMT, each
with its paired bootstrap interval (pipeline/evaluation/difference_bootstrap.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.evaluation.difference_bootstrap import bleu_difference
from pipeline.io import read_lines, write_json
from pipeline.report.learning_curves import read_curve
from tasks.base import PipelineTask
from tasks.data import SplitTask, TokenizeSplit
from tasks.evaluate import EvaluateSystem
from tasks.nmt import TrainNMT

STRENGTH_FILE = "strength.json"
STRENGTH_SYSTEMS = ("TNMT", "LTNMT", "TNMT-lat")  # the NMT, LMBR on it, and lattice rescoring with it
GAINS = ("LTNMT", "TNMT-lat")  # each against TNMT


def snapshot_points(task: PipelineTask) -> list[int]:
    """The updates of the Transformer's kept snapshots below its last update (the final model is the last point);
    none when it keeps none or stops on a wall-clock budget alone."""
    training = task.config.nmt_for(task.profile_config, "transformer").training
    if not training.snapshot_every or not training.max_updates:
        return []
    return list(range(training.snapshot_every, training.max_updates, training.snapshot_every))


class StrengthCurve(SplitTask):
    """strength.json: per snapshot of the Transformer and for the final model, the BLEU of TNMT, LTNMT and TNMT-lat
    on the split, the tuned choices, and LTNMT - TNMT, TNMT-lat - TNMT and TNMT - PBMT with their intervals."""

    stage = "strength-curve"
    parallel = True

    def points(self) -> list[int]:
        """Snapshot updates, then 0: the final model."""
        return [*snapshot_points(self), 0]

    def requires(self) -> dict[str, PipelineTask]:
        seed = self.config.nmt_for(self.profile_config, "transformer").training.seeds[0]
        return {"PBMT": self.clone(EvaluateSystem, system="PBMT"), "raw": self.clone(TokenizeSplit),
                "model": self.clone(TrainNMT, architecture="transformer", seed=seed),
                **{f"{system}@{update}": self.clone(EvaluateSystem, system=system, snapshot=update)
                   for update in self.points() for system in STRENGTH_SYSTEMS}}

    def params(self) -> dict[str, Any]:
        return {"split": self.split, "points": self.points(), "systems": list(STRENGTH_SYSTEMS)}

    def build(self, out: Path) -> dict[str, Any]:
        required, target = self.requires(), self.config.target
        references = list(read_lines(required["raw"].artifact_dir() / f"raw.{target}.gz"))
        model = required["model"]
        curve = {p["update"]: p["valid_bleu"] for p in read_curve(model.artifact_dir() / "metrics.csv")}
        final_updates = model.signature()["stats"]["updates"]
        pbmt = _translation(required["PBMT"], target)
        rows = []
        for update in self.points():
            evaluations = {s: required[f"{s}@{update}"] for s in STRENGTH_SYSTEMS}
            outputs = {s: _translation(task, target) for s, task in evaluations.items()}
            decodes = {s: task.requires()["translation"] for s, task in evaluations.items()}
            rows.append({
                "point": update or "final", "updates": update or final_updates,
                "model": f"checkpoint {update}" if update else "final (averaged)",
                "tune_greedy_bleu": curve.get(update or final_updates),
                "bleu": {"PBMT": _bleu(required["PBMT"]), **{s: _bleu(task) for s, task in evaluations.items()}},
                "margin": bleu_difference(outputs["TNMT"], pbmt, references, target).to_dict(),
                "gains": {s: bleu_difference(outputs[s], outputs["TNMT"], references, target).to_dict()
                          for s in GAINS},
                "chosen": {"length_penalty": decodes["TNMT"].length_penalty(),
                           "nmt_lambda": decodes["LTNMT"].nmt_lambda(), "search": decodes["LTNMT"].search_form(),
                           "lattice_weight": decodes["TNMT-lat"].lattice_weight()}})
        write_json(out / STRENGTH_FILE, {"split": self.split, "rows": rows})
        return {"points": len(rows)}


def _translation(evaluation: EvaluateSystem, target: str) -> list[str]:
    return list(read_lines(evaluation.requires()["translation"].artifact_dir() / f"translation.{target}"))


def _bleu(evaluation: EvaluateSystem) -> float:
    return evaluation.signature()["stats"]["bleu"]["score"]
