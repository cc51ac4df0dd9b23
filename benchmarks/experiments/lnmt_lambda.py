"""Measurement: unconstrained LNMT/LTNMT at a given lambda, free and anchored, against the lattice MBR row.

The question: is unconstrained LNMT at the smallest lambda of the grid, with bounded gains, within 1 BLEU of lattice
MBR, with an output/reference length ratio in [0.9, 1.1]? This decodes a split exactly as DecodeLNMT does (its L, the
tuned theta and evidence space, its restoration of <unk> words) but at the lambda and gain form given, with the free
search and with the anchored one (pipeline/decode/anchored.py), and compares each with the split's MBR output by
paired bootstrap (and reports its length ratio and repeated 4-grams). Prints a table and writes JSON.

The rest of the point (theta's p and r, the path scale alpha and the evidence space) is, with `--point tuned`,
TuneLMBR's choice for the tuned lambda; with `--point at-lambda` (the default), the point TuneLMBR's own grid scored
best on the tuning set at the lambda and gain form given (among the points its race kept longest), so that every
setting is still chosen on the tuning set, for the lambda measured.

    .venv/bin/python benchmarks/experiments/lnmt_lambda.py --profile medium --task ger-eng --lambda 0.001 \\
        --out results/benchmarks/lnmt_lambda_small_ger-eng.json
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import torch  # noqa: E402

from common import machine, repeated_4grams  # noqa: E402
from pipeline.decode.beam_search import SearchSettings  # noqa: E402
from pipeline.decode.translate import load_models, translate_lines  # noqa: E402
from pipeline.evaluation.bleu import corpus_bleu  # noqa: E402
from pipeline.evaluation.significance import paired_bootstrap  # noqa: E402
from pipeline.io import read_json, read_lines, write_json  # noqa: E402
from pipeline.text import TextProcessor, get_tokenizer  # noqa: E402
from tasks.data import TokenizeSplit, load_truecaser  # noqa: E402
from tasks.decode import DecodeLNMT, DecodeLTNMT  # noqa: E402
from tasks.lmatrix import word_restorer  # noqa: E402
from tasks.mbr import DecodeLatticeMBR  # noqa: E402


def best_at_lambda(tuning, nmt_lambda: float, gains: str) -> dict:
    """TuneLMBR's grid point with this lambda and gain form that its race kept longest, the best of those on the
    tuning set (a point never eliminated ran on all the tuning sentences)."""
    points = [point for point in read_json(tuning.artifact_dir() / "lmbr.json")["grid"]
              if point["nmt_lambda"] == nmt_lambda and point["gains"] == gains]
    if not points:
        raise SystemExit(f"TuneLMBR's grid has no point at lambda {nmt_lambda} with {gains} gains")
    best = max(points, key=lambda point: (point.get("eliminated_at", float("inf")), point["bleu"]))
    return {key: value for key, value in best.items() if key not in ("bleu", "eliminated_at")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--profile", default="medium")
    p.add_argument("--task", required=True)
    p.add_argument("--system", choices=("LNMT", "LTNMT"), default="LNMT")
    p.add_argument("--split", help="the split (default: the task's devtest)")
    p.add_argument("--lambda", dest="nmt_lambda", type=float, default=0.0,
                   help="lambda (default: the smallest of the profile's grid_lambda)")
    p.add_argument("--gains", default="bounded", choices=("per_step", "bounded"))
    p.add_argument("--point", choices=("at-lambda", "tuned"), default="at-lambda",
                   help="theta, alpha and evidence space: TuneLMBR's best at this lambda, or its tuned choice")
    p.add_argument("--work-dir", default="work")
    p.add_argument("--lines", type=int, default=1000)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    cls = DecodeLNMT if args.system == "LNMT" else DecodeLTNMT
    common = {"task_name": args.task, "profile": args.profile, "work_dir": args.work_dir}
    probe = cls(split="x", **common)
    task = cls(split=args.split or probe.config.splits.devtest[0], **common)
    lmbr, decode = task.profile_config.lmbr, task.profile_config.decode
    nmt_lambda = args.nmt_lambda or min(lmbr.grid_lambda)
    task.nmt_lambda, task.gains = (lambda: nmt_lambda), (lambda: args.gains)
    if args.point == "at-lambda":
        point = best_at_lambda(task.requires()["tuning"], nmt_lambda, args.gains)
        task.chosen = lambda: point
    inputs, source, target = task.requires(), task.config.source, task.config.target
    models = load_models([inputs["system"].artifact_dir() / "system.json"], "cpu")
    lines = list(read_lines(inputs["subwords"].artifact_dir() / f"bpe.{source}.gz"))[:args.lines]
    span = range(len(lines))
    tokenizer = get_tokenizer(task.config.languages[target].tokenizer, target, Path(task.cache_dir) / "tokenizers")
    processor = TextProcessor(tokenizer=tokenizer, truecaser=load_truecaser(inputs["truecaser"].artifact_dir(),
                                                                            target), bpe=None)
    settings = SearchSettings(beam=decode.beam, threshold=decode.threshold, length_penalty=decode.length_penalty,
                              max_length_a=decode.max_length_a, max_length_b=decode.max_length_b,
                              weight=nmt_lambda, patience=lmbr.patience)
    batching = {"batch_sentences": decode.batch_sentences, "sort": decode.sort}
    restorer = word_restorer(inputs["words"], target)
    references = list(read_lines(task.clone(TokenizeSplit).artifact_dir() / f"raw.{target}.gz"))[:len(lines)]
    mbr = list(read_lines(task.clone(DecodeLatticeMBR).artifact_dir() / f"translation.{target}"))[:len(lines)]
    outputs, seconds = {"MBR": mbr}, {}
    for search in ("free", "anchored"):
        began = time.perf_counter()
        if search == "free":
            result, from_lattice = translate_lines(lines, models, settings, processor, source=None,
                                                   hook_factory=task.hook_factory(models, span, lines, settings, []),
                                                   **batching), []
        else:
            result, from_lattice = task.translate_anchored(models, span, lines, settings, processor, [], batching)
        seconds[search] = round(time.perf_counter() - began, 1)
        outputs[search] = restorer.restore(span, result.bpe, result.text,
                                           lambda words: processor.postprocess(words, subword=False),
                                           paths=set(from_lattice))[0]
    rows = []
    for name, hypotheses in outputs.items():
        bleu = corpus_bleu(hypotheses, references, target)
        repeats, total = repeated_4grams([" ".join(tokenizer.tokenize(h)) for h in hypotheses])
        rows.append({"output": name, "bleu": round(bleu.score, 2),
                     "length_ratio": round(bleu.sys_len / bleu.ref_len, 3), "repeated_4grams": repeats,
                     "4grams": total})
        behind = "" if name == "MBR" else f"  {rows[-1]['bleu'] - rows[0]['bleu']:+.2f} against MBR"
        print(f"{name:>9} BLEU {rows[-1]['bleu']:6.2f}  length {rows[-1]['length_ratio']:.3f}  repeated 4-grams "
              f"{repeats}/{total}{behind}")
    differ = sum(a != b for a, b in zip(outputs["free"], outputs["anchored"]))
    print(f"anchored: {differ} of {len(lines)} outputs differ from the free search's")
    tests = paired_bootstrap(("MBR", mbr), [(name, outputs[name]) for name in ("free", "anchored")], references,
                             target)
    write_json(args.out, {"machine": machine(1), "task": args.task, "profile": args.profile, "system": args.system,
                          "split": task.split, "lines": len(lines), "nmt_lambda": nmt_lambda, "gains": args.gains,
                          "point": args.point,
                          "chosen": {k: task.chosen()[k] for k in ("p", "r", "alpha", "nbest")}, "rows": rows,
                          "anchored_outputs_differing": differ, "paired_bootstrap": tests, "decode_seconds": seconds}) if args.out else None
    return 0


if __name__ == "__main__":
    sys.exit(main())
