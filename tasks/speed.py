"""Figures 2 and 3 of the paper for one NMT system: decoding speed vs beam size (batched vs unbatched) and vs
sentences per batch (sorted vs unsorted), measured on the first sentences of a split (pipeline/decode/speed.py).

The timings are only as good as the machine is quiet: with several Luigi workers, other tasks run beside this one
(benchmarks/beam_speed.py measures the same on its own)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import luigi
import torch

from pipeline.decode.speed import plot_speed, speed_vs_batch, speed_vs_beam
from pipeline.decode.translate import load_models
from pipeline.io import read_lines, write_json
from pipeline.nmt.system import system_members
from pipeline.text.bpe import merge_bpe
from tasks.base import PipelineTask
from tasks.data import ApplyBPE, SplitTask
from tasks.nmt import NMTSystem

BEAMS = (1, 2, 4, 8, 12)
BATCH_SIZES = (1, 2, 3, 5, 7, 10, 16, 24, 32)


class MeasureDecodingSpeed(SplitTask):
    """figure2.json / figure3.json and their PNGs for one model of NMTSystem(models), on CPU threads = processes."""

    stage = "speed"
    version = 2  # 2: one sentence per batch timed once for both orders (Figure 3)
    parallel = True
    models = luigi.Parameter(description="FNMT or TNMT: the first model of that system is measured")
    sentences_a = luigi.IntParameter(default=40, description="Figure 2: first N sentences, one at a time")
    sentences_b = luigi.IntParameter(default=96, description="Figure 3: first N sentences")
    runs = luigi.IntParameter(default=1, description="timed runs per configuration (the fastest is kept)")

    def label(self) -> str:
        return f"{self.models}-{self.split}"

    def requires(self) -> dict[str, PipelineTask]:
        return {"system": self.clone(NMTSystem, system=self.models), "subwords": self.clone(ApplyBPE)}

    def params(self) -> dict[str, Any]:
        return {"models": self.models, "split": self.split, "sentences_a": self.sentences_a,
                "sentences_b": self.sentences_b, "runs": self.runs, "beams": BEAMS, "batch_sizes": BATCH_SIZES,
                "beam_b": self.profile_config.decode.beam}

    def build(self, out: Path) -> dict[str, Any]:
        torch.set_num_threads(max(1, self.processes))
        inputs = self.requires()
        member = system_members(inputs["system"].artifact_dir() / "system.json")[0]
        loaded = load_models([member], "cpu")
        model, vocab = loaded.ensemble.models[0], loaded.src_vocab
        lines = [line.split() for line in read_lines(inputs["subwords"].artifact_dir() /
                                                     f"bpe.{self.config.source}.gz") if line.strip()]
        ids = [vocab.encode(tokens) + [vocab.eos_id] for tokens in lines]
        words = [len(merge_bpe(tokens)) for tokens in lines]
        beam_b = self.profile_config.decode.beam
        with torch.inference_mode():
            figure_a = speed_vs_beam(model, ids[:self.sentences_a], words[:self.sentences_a], BEAMS, self.runs)
            figure_b = speed_vs_batch(model, ids[:self.sentences_b], words[:self.sentences_b], BATCH_SIZES, beam_b,
                                      self.runs)
        label = f"{self.models} {model.config.architecture}, {torch.get_num_threads()} CPU threads"
        write_json(out / "figure2.json", figure_a)
        write_json(out / "figure3.json", figure_b)
        plot_speed(figure_a, figure_b, label, beam_b, out / "speed")
        speedups = {r["beam"]: r["speedup"] for r in figure_a}
        seven = next((r.get("sorted_speedup") for r in figure_b if r["batch_sentences"] == 7), None)
        return {"model": str(member), "threads": torch.get_num_threads(), "beam_speedups": speedups,
                "sentence_batching_speedup_at_7": seven}
