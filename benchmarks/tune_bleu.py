"""Benchmark: beam-search BLEU on the tuning set of one TrainNMT model, its newest checkpoint and the averages of its
newest k, to choose NMT training settings without decoding a split that is reported.

Reads the checkpoints of the profile's TrainNMT model: its resumable state folder while it trains
(`<work>/<profile>/<task>/nmt-train-state/<model>-<hash>/`), else its finished artifact's `checkpoints/` (or any
folder given as `--checkpoints`). For every k of `--average` it averages the newest k checkpoints in memory, and for
every alpha of `--length-penalty` (default: the profile's) it decodes the first `--sentences` tuning sentences with
beam `--beam` (the profile's output limits, batches of 16) and scores them two ways:

- `bleu`: cased sacrebleu of the detokenized output against the raw reference, as Table 1 scores devtest;
- `bleu_truecased_tokens`: sacrebleu with `tokenize="none"` of the merged BPE output against the truecased,
  tokenized reference, the measure of the one-off comparisons made before this script.

`--outputs DIR` keeps each setting's detokenized output (`average<k>_lp<alpha>.<target>`), for a paired bootstrap
between two models (`sacrebleu REF -i A B --paired-bs`).

    .venv/bin/python benchmarks/tune_bleu.py --profile medium --task ger-eng --architecture transformer \
        --data-dir DATA_FOLDER --average 4 1 --length-penalty 0 1 --out results/benchmarks/tune_bleu_x.json
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import sacrebleu  # noqa: E402
import torch  # noqa: E402

from common import first_lines, machine  # noqa: E402
from pipeline.config import DecodeProfile, load_profile, load_task  # noqa: E402
from pipeline.decode.beam_search import SearchSettings  # noqa: E402
from pipeline.decode.translate import load_models, translate_lines  # noqa: E402
from pipeline.evaluation.bleu import corpus_bleu  # noqa: E402
from pipeline.io import write_json, write_lines  # noqa: E402
from pipeline.nmt.average import average_checkpoints  # noqa: E402
from pipeline.nmt.checkpoint import list_checkpoints, load_checkpoint  # noqa: E402
from pipeline.text import TextProcessor, Truecaser, get_tokenizer  # noqa: E402
from pipeline.text.bpe import merge_bpe  # noqa: E402
from tasks.data import ApplyBPE, TokenizeSplit, TrainTruecaser, TruecaseSplit  # noqa: E402


def train_task(args: argparse.Namespace):
    """The TrainNMT task of the model: its inputs (the tuning set's subwords, the truecaser) are the ones it was
    trained with, whatever else the work folder holds."""
    from tasks.nmt import TrainNMT

    extra = {"data_dir": args.data_dir} if args.data_dir else {}
    if args.config_dir:
        extra["config_dir"] = str(args.config_dir)
    return TrainNMT(task_name=args.task, profile=args.profile, work_dir=str(args.work_dir),
                    architecture=args.architecture, seed=args.seed, **extra)


def checkpoint_folder(args: argparse.Namespace) -> Path:
    """--checkpoints, else the TrainNMT model's state folder while it holds checkpoints, else its artifact's."""
    if args.checkpoints:
        return args.checkpoints
    task = train_task(args)
    return task.state_dir() if list_checkpoints(task.state_dir()) else task.artifact_dir() / "checkpoints"


def artifact_of(task) -> Path:
    """The artifact folder of a Luigi task of the model's inputs, or an exit that names the stage to build."""
    folder = task.artifact_dir()
    if not (folder / "signature.json").is_file():
        raise SystemExit(f"{folder}: not built; build the model's inputs first (its TrainNMT task)")
    return folder


def score(args: argparse.Namespace, decode: DecodeProfile, checkpoints: list[Path], length_penalty: float,
          sources: list[str], processor: TextProcessor, references: list[str], truecased: list[str],
          target: str) -> dict:
    """Decode `sources` (BPE lines) with the average of `checkpoints` and score the output both ways."""
    settings = SearchSettings(beam=args.beam, length_penalty=length_penalty,
                              max_length_a=decode.max_length_a, max_length_b=decode.max_length_b)
    with tempfile.TemporaryDirectory() as tmp:
        model = checkpoints[0]
        if len(checkpoints) > 1:  # the average names the vocabularies beside the checkpoints by absolute paths
            vocabularies = {side: str((model.parent / path).resolve())
                            for side, path in load_checkpoint(model).vocabularies.items()}
            model = average_checkpoints(checkpoints, Path(tmp) / "average.pt", vocabularies)
        models = load_models([model], "cpu")
        started = time.monotonic()
        result = translate_lines(sources, models, settings, target=processor, batch_sentences=16)
    merged = [" ".join(merge_bpe(line.split())) for line in result.bpe]
    if args.outputs:
        write_lines(args.outputs / f"average{len(checkpoints)}_lp{length_penalty:g}.{target}", result.text)
    return {"checkpoints": [p.name for p in checkpoints], "seconds": round(time.monotonic() - started, 1),
            "bleu": round(corpus_bleu(result.text, references, target).score, 2),
            "bleu_truecased_tokens": round(
                sacrebleu.corpus_bleu(merged, [truecased], tokenize="none", force=True).score, 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--profile", default="medium")
    p.add_argument("--task", required=True)
    p.add_argument("--architecture", choices=("gru", "transformer"), default="transformer")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--work-dir", type=Path, default=Path("work"))
    p.add_argument("--data-dir", help="the data folder the model was trained from (default: the project's setting)")
    p.add_argument("--config-dir", type=Path, help="a folder of tasks/*.toml and profiles/*.toml (default: the "
                   "checkout's configs/): the recipe a learning_curve.py run trained with")
    p.add_argument("--checkpoints", type=Path, help="a folder of checkpoint-*.pt files (default: the TrainNMT model's)")
    p.add_argument("--average", type=int, nargs="+", default=[1], help="average the newest k checkpoints, per k")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--length-penalty", type=float, nargs="+",
                   help="alphas of score / length^alpha, each decoded (default: the profile's)")
    p.add_argument("--sentences", type=int, default=1000, help="the first N tuning sentences")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, help="JSON: the scores, the machine and the settings")
    p.add_argument("--outputs", type=Path, help="a folder for each setting's detokenized output")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)

    configs = {"config_dir": args.config_dir} if args.config_dir else {}
    config = load_task(args.task, **configs)
    tune = config.splits.tune
    decode = load_profile(args.profile, **configs).decode
    inputs = {stage: artifact_of(train_task(args).clone(kind, split=tune)) for stage, kind in
              (("subwords", ApplyBPE), ("tokenized", TokenizeSplit), ("truecased", TruecaseSplit))}
    sources = first_lines(inputs["subwords"] / f"bpe.{config.source}.gz", args.sentences)
    references = first_lines(inputs["tokenized"] / f"raw.{config.target}.gz", args.sentences)
    truecased = first_lines(inputs["truecased"] / f"words.{config.target}.gz", args.sentences)
    truecaser = Truecaser.load(artifact_of(train_task(args).clone(TrainTruecaser)) / f"truecase.{config.target}.json")
    processor = TextProcessor(tokenizer=get_tokenizer("moses", config.target, REPO / "cache" / "tokenizers"),
                              truecaser=truecaser, bpe=None)
    folder = checkpoint_folder(args)
    found = list_checkpoints(folder) if folder.is_dir() else []
    if not found:
        raise SystemExit(f"{folder}: no checkpoint-*.pt files (train the model first)")
    rows = []
    for k in args.average:
        for alpha in args.length_penalty or [decode.length_penalty]:
            row = {"average": k, "length_penalty": alpha,
                   **score(args, decode, found[-k:], alpha, sources, processor, references, truecased,
                           config.target)}
            print(f"newest {k} checkpoint(s) {row['checkpoints'][0]}..{row['checkpoints'][-1]}, length penalty "
                  f"{alpha}: BLEU {row['bleu']}, truecased tokens {row['bleu_truecased_tokens']} "
                  f"({row['seconds']} s)", flush=True)
            rows.append(row)
    if args.out:
        write_json(args.out, {"benchmark": "tune_bleu", "machine": machine(args.threads), "profile": args.profile,
                              "task": args.task, "split": tune, "sentences": len(sources), "beam": args.beam,
                              "checkpoints": str(folder), "results": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
