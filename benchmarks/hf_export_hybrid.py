"""Benchmark: does the hybrid over our Transformer exported to `transformers` score as the pipeline's own systems?

For each system (default TNMT, LTNMT, TNMT-lat; also LTNMT-lat) of a built pipeline work folder, the pipeline's own
decoding task (tasks/decode.py) must already be built. Its translation of the split is scored with cased BLEU as
EvaluateSystem scores it. Then the system's Transformer (the NMTSystem(TNMT) member: one averaged model) is exported
with pipeline/nmt/export_hf.py, loaded with `AutoModelForSeq2SeqLM.from_pretrained` and driven by our batched beam
search through pipeline/nmt/pretrained.py's adapter. The same task object translates the split with it
(DecodeNMT.translate_with: the same search settings and tuned lambda, batching, L store and tuned theta, acceptors
and tuned mu, anchored or free search, and the words of <unk> outputs restored), and that output is scored too.

It reports per system both BLEU scores, their difference, the identical lines and the words per minute of each (the
pipeline's from its artifact, which may have been decoded with other threads or CPU speed-ups: informative only;
--ours decodes with our own models here too, at the same threads, and compares their 1-best scores). Needs the `hf`
extra.

    .venv/bin/python benchmarks/hf_export_hybrid.py --profile medium --task jpn-eng --work-dir work \
        --data-dir data --threads 2 [--sentences 100] [--ours]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OWN_RESULTS, REPO, machine  # noqa: E402
from pipeline.evaluation import corpus_bleu  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402
from pipeline.nmt.export_hf import ExportedVocabulary, export_checkpoint, load_exported  # noqa: E402
from pipeline.nmt.system import system_members  # noqa: E402

import torch  # noqa: E402

SYSTEMS = ("TNMT", "LTNMT", "TNMT-lat", "LTNMT-lat")
MAX_BLEU_DIFFERENCE = 0.1


@dataclass(frozen=True)
class ExportedSource:
    """Our source vocabulary as the exported encoder reads it: translate_lines encodes a BPE line as
    encode(subwords) + [eos_id], here in the joint table (source ids + the offset)."""

    vocab: ExportedVocabulary

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return self.vocab.encode_source(tokens)[:-1]

    @property
    def eos_id(self) -> int:
        return self.vocab.source_offset + self.vocab.source.eos_id


def pipeline_task(system: str, args: argparse.Namespace):
    """The pipeline's decoding task of `system` on the split (the task's devtest unless --split), built."""
    from tasks.systems import translation_task

    given = {"data_dir": args.data_dir, "config_dir": args.config_dir, "cache_dir": args.cache_dir}
    common = {"task_name": args.task, "profile": args.profile, "work_dir": args.work_dir,
              **{key: value for key, value in given.items() if value}}
    cls = translation_task(system)
    task = cls(split=args.split or cls(split="-", **common).config.splits.devtest[0], **common)
    if not (task.artifact_dir() / "signature.json").is_file():
        raise SystemExit(f"{system} is not built: {task.artifact_dir()} has no signature.json; build it first "
                         f"(reproduce-table --profile {args.profile} --task {args.task}, or luigi --module tasks "
                         f"{cls.__name__} --split {task.split})")
    return task


def exported_models(task, out_dir: Path, device: torch.device):
    """LoadedModels whose ensemble is the exported Transformer of the task's NMT system, driven by our search."""
    from pipeline.decode.translate import LoadedModels
    from pipeline.nmt.interface import Ensemble

    members = system_members(task.requires()["system"].artifact_dir() / "system.json")
    if len(members) != 1:
        raise SystemExit(f"{task.system}: its NMT system has {len(members)} models; only one model is supported")
    folder = export_checkpoint(members[0], out_dir)
    model, vocab = load_exported(folder, device)
    return LoadedModels(Ensemble([model]), ExportedSource(vocab), vocab.target, [folder], device), members[0]


def references(system: str, task) -> list[str]:
    """The split's references as EvaluateSystem reads them."""
    from tasks.evaluate import EvaluateSystem

    evaluate = task.clone(EvaluateSystem, system=system)
    return list(read_lines(evaluate.requires()["raw"].artifact_dir() / f"raw.{task.config.target}.gz"))


def compare(system: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """One system: the pipeline's output and the exported model's, scored on the same lines."""
    from pipeline.nmt.train import default_device

    task = pipeline_task(system, args)
    target, device = task.config.target, default_device()
    ours = list(read_lines(task.artifact_dir() / f"translation.{target}"))
    refs, lines = references(system, task), task.source_lines()
    count = min(args.sentences or len(lines), len(lines))
    started = time.perf_counter()
    models, member = exported_models(task, tmp / system, device)
    loaded = time.perf_counter() - started
    theirs, result, stats = task.translate_with(models, lines, 0, count)
    ours, refs = ours[:count], refs[:count]
    bleu_ours, bleu_theirs = (corpus_bleu(h, refs, target).score for h in (ours, theirs))
    pipeline_stats = task.signature()["stats"]
    row = {"system": system, "split": task.split, "artifact": str(task.artifact_dir()), "model": str(member),
           "sentences": count,
           "bleu_pipeline": round(bleu_ours, 4), "bleu_exported": round(bleu_theirs, 4),
           "bleu_difference": round(bleu_theirs - bleu_ours, 4),
           "identical_lines": sum(a == b for a, b in zip(ours, theirs)),
           "wpm_pipeline": pipeline_stats.get("words_per_minute"), "wpm_exported": stats["words_per_minute"],
           "pipeline_device": pipeline_stats.get("device"), "pipeline_threads": pipeline_stats.get("threads"),
           "exported_load_seconds": round(loaded, 2), "exported_decode_seconds": stats["seconds"],
           "search": task.search_form()}
    for key in ("lmbr", "lattice_weight", "unconstrained_lines", "restored_lines"):
        if key in stats:
            row[key] = stats[key]
    row["within_0.1_bleu"] = abs(row["bleu_difference"]) <= MAX_BLEU_DIFFERENCE
    if args.ours:
        row["ours_here"] = rerun_ours(task, lines, count, result, device)
    if args.outputs:
        row["outputs"] = {"pipeline": ours, "exported": theirs, "exported_bpe": result.bpe}
    return row


def rerun_ours(task, lines: list[str], count: int, exported, device: torch.device) -> dict[str, Any]:
    """Our own models decoding the same lines in this process (the same threads): words per minute, lines equal to
    the exported model's, and the largest difference of their 1-best scores where the 1-best tokens agree."""
    _, result, stats = task.translate_with(task.loaded_models(device), lines, 0, count)
    same = [(a[0].score, b[0].score) for a, b in zip(result.nbest, exported.nbest)
            if a and b and a[0].tokens == b[0].tokens]
    return {"wpm": stats["words_per_minute"], "decode_seconds": stats["seconds"],
            "identical_bpe_lines": sum(a == b for a, b in zip(result.bpe, exported.bpe)),
            "max_score_difference": max((abs(a - b) for a, b in same), default=0.0)}


def table(rows: list[dict[str, Any]]) -> str:
    head = f"{'system':<10} {'lines':>6} {'BLEU ours':>9} {'BLEU HF':>8} {'diff':>7} {'identical':>9} " \
           f"{'wpm ours':>9} {'wpm HF':>8}"
    body = [f"{r['system']:<10} {r['sentences']:>6} {r['bleu_pipeline']:>9.2f} {r['bleu_exported']:>8.2f} "
            f"{r['bleu_difference']:>+7.2f} {r['identical_lines']:>9} {r['wpm_pipeline'] or 0:>9.0f} "
            f"{r['wpm_exported']:>8.0f}" for r in rows]
    return "\n".join([head, *body])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--profile", default="medium")
    p.add_argument("--task", required=True, help="the translation task, e.g. jpn-eng")
    p.add_argument("--work-dir", required=True, help="the pipeline's work folder (work/<profile>/<task> below it)")
    p.add_argument("--data-dir", help="the pipeline's data folder (as it was built with)")
    p.add_argument("--config-dir", help="the pipeline's configs (default: the checkout's)")
    p.add_argument("--cache-dir", help="downloads and tool caches (default: luigi.cfg's)")
    p.add_argument("--split", help="the split (default: the task's first devtest)")
    p.add_argument("--systems", default=",".join(SYSTEMS[:3]), help=f"comma-separated, of {', '.join(SYSTEMS)}")
    p.add_argument("--sentences", type=int, default=0, help="only the first N lines (0: all)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ours", action="store_true",
                   help="also decode with our own models here: their speed at these threads, their scores")
    p.add_argument("--outputs", action="store_true", help="keep both outputs in the JSON")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        p.error(f"not a system over the Transformer: {', '.join(unknown)} (choose from {', '.join(SYSTEMS)})")
    torch.set_num_threads(args.threads)
    from pipeline.nmt.train import default_device

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for system in systems:
            rows.append(compare(system, args, Path(tmp)))
            print(table(rows[-1:]).splitlines()[-1], file=sys.stderr)
    out = args.out or OWN_RESULTS / f"hf_export_hybrid_{args.profile}_{args.task}.json"
    write_json(out, {"benchmark": "hf_export_hybrid", "command": " ".join([Path(sys.executable).name, *sys.argv]),
                     "machine": machine(args.threads, default_device().type),
                     "profile": args.profile, "task": args.task, "work_dir": str(args.work_dir),
                     "max_bleu_difference": MAX_BLEU_DIFFERENCE, "systems": rows})
    print(table(rows))
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
