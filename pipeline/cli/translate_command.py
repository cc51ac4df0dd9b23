"""`lmbr translate --system DIR` or `lmbr translate MODEL...`: translate a file with an exported system (any row of
Table 1: raw text through its whole chain, pipeline/deploy) or with a trained NMT model or ensemble.

MODEL: checkpoint files (several: an ensemble), a system.json (NMTSystem), or an artifact folder of the NMT tasks
(NMTSystem, AverageCheckpoints, TrainNMT). Input is raw text, preprocessed like the task's data (tokenizer of
`--task`, the truecaser of `--truecaser-dir`, the BPE codes of `--bpe-codes`), or BPE subwords with `--bpe-input`.
MODEL may also be a pretrained `transformers` model folder (pipeline/nmt/pretrained.py), which reads the raw text
through its own tokenizer (no BPE options) for the languages of `--task`.
Output is detokenized text (`-o`), optionally also the subwords (`--bpe-output`); with `--nbest N > 1` both are
Moses-style n-best lists. Search settings default to the `[decode]` section of `--profile`, by default the profile
the first model was trained with (its artifact's signature.json).

LMBR (`--lmbr DIR`): the L matrices of BuildLMatrix (its folder of shard-*.npz, or one shard file), built from
the lattices of the same input, line i using sentence i's L; the NMT log-probabilities are scaled by
`--lmbr-lambda` (0.5: the paper's 0.5 / models on the sum, here on the ensemble's average); `--lmbr-gains
bounded` pays each n-gram of the evidence space at most once per hypothesis (the paper's rule, `per_step`, pays it
at every step).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Iterator

from pipeline import config as configs
from pipeline.cli.arguments import positive_int
from pipeline.config import GAIN_FORMS
from pipeline.errors import DataError


#: The options that apply with --system (run_system reads these; the others set up a model's own decoding).
SYSTEM_OPTIONS = ("-i", "-o", "--timings", "--device", "--threads", "--batch-lines", "--terms", "--decode-processes")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("translate", help="translate text with an exported system (--system) or an NMT model "
                                                "or ensemble (batched beam search)")
    p.add_argument("models", nargs="*", help="checkpoint files, system.json, or NMT artifact folders (one ensemble)")
    p.add_argument("--system", help="an exported system folder (ExportSystem, reproduce-table --export): raw text "
                                    "through its whole chain; the other options but " + ", ".join(SYSTEM_OPTIONS) +
                                    " do not apply")
    p.add_argument("--terms", help="--system: a terminology, one 'source term<TAB>target term' a line: where a "
                                   "source term occurs, the translation contains its target term (NMT systems)")
    p.add_argument("--batch-lines", type=positive_int, default=64,
                   help="--system: input lines per batch of the chain (memory is bounded by it)")
    p.add_argument("--decode-processes", type=int, default=0,
                   help="--system: decode in N processes of one thread each, as `lmbr serve` does (0, the default: "
                        "in this process with --threads threads); outputs equal up to batch effects")
    p.add_argument("-i", "--input", default="-", help="input text, one segment a line (.gz allowed; - : stdin)")
    p.add_argument("-o", "--output", default="-", help="detokenized translation (- : stdout)")
    p.add_argument("--bpe-output", help="also write the BPE subwords of the output here")
    p.add_argument("--timings", help="write the timings (words per minute, seconds, peak memory) as JSON here")
    p.add_argument("--task", help="task config (e.g. ger-eng): languages and tokenizers (required without --system)")
    p.add_argument("--bpe-codes", help="source BPE codes (LearnBPE's codes.<source>); not with --bpe-input")
    p.add_argument("--truecaser-dir", help="folder of truecase.<lang>.json (TrainTruecaser), for cased languages")
    p.add_argument("--bpe-input", action="store_true", help="the input is already BPE subwords")
    p.add_argument("--profile", help="profile whose [decode] section gives the defaults (default: the profile the "
                                     "first model was trained with, from its artifact's signature.json; tiny when "
                                     "it has none)")
    p.add_argument("--beam", type=positive_int, help="hypotheses kept per sentence")
    p.add_argument("--batch-sentences", type=positive_int, help="sentences decoded together")
    p.add_argument("--sort", action=argparse.BooleanOptionalAction, default=None,
                   help="sort sentences by length before batching (the output keeps the input order)")
    p.add_argument("--streaming", action=argparse.BooleanOptionalAction, default=None,
                   help="streaming refill: keep the pool of --batch-sentences full (same outputs)")
    p.add_argument("--refill", type=float, help="streaming: refill when the sentences decoding drop to this "
                                                "fraction of --batch-sentences (default: the profile's)")
    p.add_argument("--nbest", type=positive_int, default=1, help="hypotheses written per sentence (<= beam)")
    p.add_argument("--threshold", type=float, help="early pruning: drop candidates below threshold x the best's "
                                                   "probability (0: off; the paper's accelerated system: 0.01)")
    p.add_argument("--length-penalty", type=float, help="rank finished hypotheses by score / length^alpha")
    p.add_argument("--max-length-a", type=float, help="at most a * |source subwords| + b output subwords")
    p.add_argument("--max-length-b", type=int, help="see --max-length-a")
    p.add_argument("--lmbr", help="LMBR decoding with the L matrices of this BuildLMatrix folder (or shard file)")
    p.add_argument("--lmbr-lambda", type=float, default=0.5, help="lambda, the scale of log P_NMT with --lmbr")
    p.add_argument("--lmbr-gains", choices=GAIN_FORMS, default="per_step",
                   help="with --lmbr: L at every step (the paper) or each n-gram paid at most once (bounded)")
    p.add_argument("--patience", type=float,
                   help="with --lmbr-gains bounded: a sentence may end once patience x beam hypotheses have finished "
                        "(default: the profile's [lmbr] patience)")
    p.add_argument("--early-exit", action=argparse.BooleanOptionalAction, default=None,
                   help="without --lmbr: end a sentence once no live hypothesis can reach its n-best (the same "
                        "output, fewer steps; raw scores only; default: the profile's [decode] early_exit)")
    p.add_argument("--int8", action=argparse.BooleanOptionalAction, default=None,
                   help="CPU: dynamic int8 quantisation of the linear layers (default: the profile's)")
    p.add_argument("--precompute-embeddings", action=argparse.BooleanOptionalAction, default=None,
                   help="CPU, GRU: per-token tables for the embedding products of a step (default: the profile's)")
    p.add_argument("--ancestry-cache", action=argparse.BooleanOptionalAction, default=None,
                   help="CPU, Transformer: self-attention caches that beam reorders never copy (default: the "
                        "profile's)")
    p.add_argument("--serial-small-ops", action=argparse.BooleanOptionalAction, default=None,
                   help="CPU: a step's small operations on one thread, its large matrix products on all (default: "
                        "on where OMP_WAIT_POLICY is PASSIVE)")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when there is a GPU, else cpu)")
    p.add_argument("--threads", type=positive_int, help="CPU threads of torch (default: torch's)")
    p.set_defaults(run=run)


def _processor(task: configs.TaskConfig, lang: str, truecaser_dir: str | None, codes: str | None):
    from pipeline.text import BpeSegmenter, TextProcessor, Truecaser, get_tokenizer

    truecaser = None
    if task.languages[lang].truecase:
        if truecaser_dir is None:
            raise DataError(f"{lang} is cased in task {task.name}: give --truecaser-dir (TrainTruecaser's folder)")
        path = Path(truecaser_dir) / f"truecase.{lang}.json"
        if not path.is_file():
            raise DataError(f"{path}: no such truecasing model")
        truecaser = Truecaser.load(path)
    return TextProcessor(tokenizer=get_tokenizer(task.languages[lang].tokenizer, lang),
                         truecaser=truecaser, bpe=BpeSegmenter(Path(codes)) if codes else None)


def _write(path: str, lines: list[str]) -> None:
    from pipeline.io import write_lines

    if path == "-":
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
    else:
        write_lines(Path(path), lines)


def _stdin_lines() -> list[str]:
    text = sys.stdin.read()
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") or not text else lines


def _input_lines(path: str) -> Iterator[str]:
    """The input's lines, read as they are needed (stdin or a file)."""
    from pipeline.io import read_lines

    if path != "-":
        yield from read_lines(Path(path))
        return
    for line in sys.stdin:
        yield line[:-1] if line.endswith("\n") else line


def run_system(args: argparse.Namespace) -> int:
    """`--system DIR`: raw text through the exported system's chain, batch by batch."""
    import time

    import torch

    from pipeline.deploy.system import load_system
    from pipeline.deploy.terms import Terminology
    from pipeline.deploy.decoding_service import translate_in_processes
    from pipeline.deploy.translator import PREPARE_PHASES, Translator
    from pipeline.io import write_json, write_lines

    if args.models:
        raise DataError("give an exported system (--system) or models, not both")
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    system = load_system(Path(args.system))
    terms = Terminology.load(Path(args.terms), _source_tokenizer(system)) if args.terms else None
    translator = Translator(system, batch_lines=args.batch_lines, device=args.device, terms=terms)
    loaded = time.perf_counter()
    counted = {"lines": 0, "words": 0}

    def inputs() -> Iterator[str]:
        for line in _input_lines(args.input):
            counted["lines"] += 1
            counted["words"] += len(line.split())
            yield line

    if args.decode_processes < 0:
        raise DataError(f"--decode-processes must be at least 0, not {args.decode_processes}")
    in_processes = args.decode_processes > 0 and translator.models is not None
    try:
        texts = translate_in_processes(translator, inputs(), args.decode_processes) if in_processes \
            else translator.translate(inputs())
        if args.output == "-":
            for text in texts:
                sys.stdout.write(text + "\n")
                sys.stdout.flush()
        else:
            write_lines(Path(args.output), texts)
    except DataError as e:
        raise DataError(f"{'stdin' if args.input == '-' else args.input}: {e}") from None
    seconds = time.perf_counter() - loaded
    stats = {"system": translator.system.name, "sentences": counted["lines"], "source_words": counted["words"],
             "load_seconds": round(loaded - started, 3), "seconds": round(seconds, 3),
             "words_per_minute": round(60 * counted["words"] / max(seconds, 1e-9), 1),
             "timings": {phase: round(value, 3) for phase, value in translator.timings.items()
                         if not in_processes or phase in PREPARE_PHASES},  # (the rest run in the processes)
             "decode_processes": args.decode_processes if in_processes else 0}
    if args.timings:
        write_json(Path(args.timings), stats)
    print(f"lmbr translate: {translator.system.name}: {stats['sentences']} lines, {stats['source_words']} words in "
          f"{seconds:.2f} s ({stats['words_per_minute']:.0f} words/minute; "
          + ", ".join(f"{k} {v:.2f} s" for k, v in stats["timings"].items()) + ")", file=sys.stderr)
    return 0


def models_profile(model: Path) -> str:
    """The profile a model was trained with (its artifact's signature), else tiny, said on stderr."""
    from pipeline.signature import artifact_param

    found = artifact_param(model, "profile")
    if found is None:
        print(f"lmbr translate: {model} has no artifact signature naming its profile: the tiny profile's [decode] "
              f"settings apply (pass --profile to choose)", file=sys.stderr)
        return "tiny"
    print(f"lmbr translate: the {found[0]} profile's [decode] settings ({found[1]})", file=sys.stderr)
    return str(found[0])


def run(args: argparse.Namespace) -> int:
    import torch

    if args.system:
        return run_system(args)
    if not args.models or not args.task:
        raise DataError("give an exported system (--system DIR), or models and --task")

    from pipeline.decode.beam_search import SearchSettings
    from pipeline.decode.translate import format_nbest, load_models, translate_lines
    from pipeline.io import read_lines, write_json

    from pipeline.nmt.pretrained import is_pretrained_folder

    task = configs.load_task(args.task)
    profile = configs.load_profile(args.profile or models_profile(Path(args.models[0])))
    decode = profile.decode
    pretrained = any(is_pretrained_folder(Path(m)) for m in args.models)
    if pretrained and (args.bpe_input or args.bpe_codes):
        raise DataError(f"{args.models[0]}: a pretrained model reads raw text through its own tokenizer: no "
                        "--bpe-codes or --bpe-input")
    if not pretrained and args.bpe_input == bool(args.bpe_codes):
        raise DataError("give --bpe-codes for raw input, or --bpe-input for input that is already BPE subwords")
    try:
        settings = SearchSettings(
            beam=args.beam or decode.beam, nbest=args.nbest,
            threshold=decode.threshold if args.threshold is None else args.threshold,
            length_penalty=decode.length_penalty if args.length_penalty is None else args.length_penalty,
            max_length_a=decode.max_length_a if args.max_length_a is None else args.max_length_a,
            max_length_b=decode.max_length_b if args.max_length_b is None else args.max_length_b,
            weight=args.lmbr_lambda if args.lmbr else 1.0,
            patience=args.patience if args.patience is not None else profile.lmbr.patience,
            early_exit=not args.lmbr and (decode.early_exit if args.early_exit is None else args.early_exit))
    except ValueError as e:
        raise DataError(str(e)) from None
    if args.refill is not None and not 0 <= args.refill < 1:
        raise DataError(f"--refill must be in [0, 1), not {args.refill}")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    source = None if args.bpe_input or pretrained else _processor(task, task.source, args.truecaser_dir,
                                                                  args.bpe_codes)
    target = None if pretrained else _processor(task, task.target, args.truecaser_dir, None)
    lines = _stdin_lines() if args.input == "-" else list(read_lines(Path(args.input)))
    from pipeline.nmt.speedups import CpuSpeedups

    chosen = {name: getattr(args, name) for name in CpuSpeedups.__dataclass_fields__}
    speedups = replace(CpuSpeedups.of(decode), **{k: v for k, v in chosen.items() if v is not None})
    if pretrained:  # (the speed-ups are this project's models')
        speedups = CpuSpeedups(**{name: False for name in CpuSpeedups.__dataclass_fields__})
    models = load_models([Path(m) for m in args.models], device, speedups, languages=(task.source, task.target))
    hook_factory = None
    if args.lmbr:
        from lattices.lmatrix_shards import LMatrixStore
        from pipeline.decode.lmbr_hook import lmbr_hook_factory

        folder = Path(args.lmbr)
        shards = sorted(folder.glob("shard-*.npz")) if folder.is_dir() else [folder]
        if not shards or not all(p.is_file() for p in shards):
            raise DataError(f"{folder}: no L matrices (shard-*.npz of BuildLMatrix) there")
        hook_factory = lmbr_hook_factory(LMatrixStore(shards), models.tgt_vocab.bos_id,
                                         vocab_size=len(models.tgt_vocab), gains=args.lmbr_gains)
    try:
        result = translate_lines(lines, models, settings, target, source,
                                 batch_sentences=args.batch_sentences or decode.batch_sentences,
                                 sort=decode.sort if args.sort is None else args.sort, hook_factory=hook_factory,
                                 streaming=decode.streaming if args.streaming is None else args.streaming,
                                 refill=decode.refill if args.refill is None else args.refill)
    except DataError as e:
        raise DataError(f"{'stdin' if args.input == '-' else args.input}: {e}") from None
    nbest = args.nbest > 1
    _write(args.output, format_nbest(result) if nbest else result.text)
    if args.bpe_output:
        _write(args.bpe_output, format_nbest(result, bpe=True) if nbest else result.bpe)
    stats = {**result.stats, "model_files": [str(m) for m in models.members], "task": task.name,
             "lmbr": {"matrices": args.lmbr, "lambda": args.lmbr_lambda, "gains": args.lmbr_gains}
             if args.lmbr else None,
             "speedups": speedups.names()}
    if args.timings:
        write_json(Path(args.timings), stats)
    print(f"lmbr translate: {stats['sentences']} sentences, {stats['source_words']} source words in "
          f"{stats['seconds']:.2f} s: {stats['words_per_minute']:.0f} words/minute (beam {settings.beam}, "
          f"{stats['batch_sentences']} sentences per batch, {stats['device']}, {stats['threads']} threads)",
          file=sys.stderr)
    return 0


def _source_tokenizer(system):
    """The tokenize function of an exported system's source language."""
    from pipeline.text import get_tokenizer

    return get_tokenizer(system.language(system.source)["tokenizer"], system.source).tokenize
