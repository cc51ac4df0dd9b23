"""Benchmark: our batched beam decoder driving a `transformers` model against the model's own `generate`, and what
LMBR's L adds to ours.

The model: a `transformers` folder (--model: one exported by pipeline/nmt/export_hf.py, fed BPE subwords through
its ExportedVocabulary; or a MarianMT / M2M100 / NLLB folder with its tokenizer, fed raw text through it, as
load_pretrained does for the pipeline, target ids shifted by one), or a Transformer checkpoint of ours (--checkpoint,
exported to a temporary folder first). Ours drives the model through pipeline/nmt/pretrained.py's adapter (the
model's own key/value cache); `generate` runs on the same model object.

Both decode the first --sentences non-empty lines of --source, in the same batches (--batch sentences, sorted by
source length, longest first: pipeline.decode.make_batches), at beam --beam, on --threads threads, with raw scores
(length penalty 0), the same EOS policy (ours full_beam, `generate` early_stopping=True: a sentence ends with B
finished hypotheses) and the same length limit per sentence (a x |source| + b of the --profile's [decode], capped by
the model's positions; at the limit only EOS may follow: ours forces it, and a logits processor does the same in
`generate`). Ours also ends a sentence once its n-best is certain (`early_exit`, the profile's; the same outputs,
fewer steps); `generate` runs with the model's own generation config set aside (its bad words, repetition rules or
forced EOS would change the search). Reported: how many 1-best outputs agree.

LMBR's overhead: ours again with the LMBR hook (the profile's [lmbr] gains, lambda and patience, or --gains and
--nmt-lambda), same model, sentences and batches. L comes from --lmatrices (the pipeline's L shards in the model's
units, sentence i = line i of --source; for an exported model, the shards of the model it was exported from: its
scores are read back as wide as the target vocabulary), else it is synthetic: the n-gram posteriors (orders 1-4, theta from
--precisions) of the model's own --evidence-beam-best list of each sentence (from our decoder, untimed), each string
<s> ... </s> with probability proportional to exp(score). Real L comes from PBMT lattices, with other n-grams and
other sizes (the accelerated system's 200-best: a median of 558 n-grams and 340 rows per sentence, small eng-ger);
the JSON says which L was used and its size. The overhead is stated on the total time and per row-step (LMBR
changes the outputs, hence the steps).

Runs: --runs rounds of ours, `generate`, ours + L, alternating; before each run the benchmark waits until the
1-minute load average is below --max-load (at most --load-timeout seconds; a run started above it is marked as
taken on a loaded machine) and records the load. Medians of each, their ratio, per-run figures. Needs the `hf`
extra. Prints a table and writes JSON.

    .venv/bin/python benchmarks/hf_speed.py --checkpoint work/medium/ger-eng/nmt-average/transformer-seed1-*/model.pt \\
        --source work/medium/ger-eng/subwords/dev-*/bpe.de.gz --sentences 500 --threads 2
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts OpenMP: see beam_speed.py

from common import OWN_RESULTS, REPO, RunClock, first_lines, machine, wait_for_load  # noqa: E402
from pipeline.config import load_profile  # noqa: E402
from pipeline.decode import SearchSettings, decode_sources, make_batches  # noqa: E402
from pipeline.decode.batching import position_limit  # noqa: E402
from pipeline.decode.lmbr_hook import lmbr_hook_factory  # noqa: E402
from pipeline.decode.scores import force_eos, max_output_lengths  # noqa: E402
from pipeline.decode.speed import QueryCounter  # noqa: E402
from pipeline.io import write_json  # noqa: E402
from pipeline.nmt.pretrained import PretrainedModel  # noqa: E402
from pipeline.nmt.token_batches import pad_sequences  # noqa: E402

import torch  # noqa: E402

try:
    from transformers import LogitsProcessor
except ImportError:  # the hf extra is missing: main says so
    LogitsProcessor = object  # type: ignore[assignment,misc]


@dataclasses.dataclass
class Subject:
    """The model under both decoders: the adapter (its .model is the `transformers` model), the sources in the
    model's ids (EOS last), their words, and what the model and the input were."""

    adapter: PretrainedModel
    sources: list[list[int]]
    words: list[int]
    lines: list[int]  # the line number of each source in --source
    info: dict[str, Any]


def load_subject(folder: Path, source: str, count: int, languages: tuple[str, str]) -> Subject:
    """An exported folder (BPE input, target ids as ours) or a tokenizer's folder (raw text, ids shifted by one)."""
    from pipeline.nmt.export_hf import VOCABULARY_FILE, load_exported
    from pipeline.text.bpe import merge_bpe

    lines = [(i, line) for i, line in enumerate(first_lines(Path(source), 10 * count + 100)) if line.strip()][:count]
    if (folder / VOCABULARY_FILE).is_file():
        adapter, vocab = load_exported(folder)
        sources = [vocab.encode_source(line.split()) for _, line in lines]
        words = [len(merge_bpe(line.split())) for _, line in lines]
        kind = "exported by pipeline/nmt/export_hf.py: BPE subwords through its ExportedVocabulary"
    else:
        from lattices.model_units import LABEL_OFFSET
        from pipeline.nmt.pretrained import load_pretrained

        system = load_pretrained(folder, languages[0], languages[1], local_files_only=True, offset=LABEL_OFFSET)
        adapter = system.model
        sources = [system.vocab.encode_line(line) for _, line in lines]
        words = [len(line.split()) for _, line in lines]
        kind = f"raw text through the model's tokenizer; target ids + {LABEL_OFFSET} (as the pipeline loads it)"
    hf = adapter.model
    info = {"folder": str(folder), "model_type": hf.config.model_type, "input": kind,
            "parameters": sum(p.numel() for p in hf.parameters()), "target_vocab_size": adapter.tgt_vocab_size}
    return Subject(adapter.eval(), sources, words, [i for i, _ in lines], info)


class LengthLimit(LogitsProcessor):
    """Only EOS at step t == a sentence's limit (as our search does), for `generate`'s rows [N*k] (sentence-major);
    `skip` counts the decoder inputs before the first scored step (the start token, M2M100's language token)."""

    def __init__(self, limits: Sequence[int], beam: int, skip: int, eos_id: int) -> None:
        self.limits = torch.tensor(list(limits), dtype=torch.long).repeat_interleave(beam)
        self.skip, self.eos_id = skip, eos_id

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        t = input_ids.shape[1] - self.skip
        if t < 0 or t < int(self.limits.min()):
            return scores
        return force_eos(scores, self.limits <= t, self.eos_id)


def generate_run(subject: Subject, batches: list[list[int]], limits: list[int], beam: int) -> list[tuple[int, ...]]:
    """`generate`'s 1-best of every source (model ids, without the prefix and EOS), batch by batch with padding.
    The model's own generation config (bad words, repetition rules, forced EOS) is set aside for the run: one with
    the special ids alone stands in."""
    from transformers import GenerationConfig, LogitsProcessorList

    adapter = subject.adapter
    hf, offset = adapter.model, adapter.offset
    eos, skip = adapter.eos_id - offset, 1 + len(adapter.prefix)
    own = hf.generation_config
    start = own.decoder_start_token_id if own.decoder_start_token_id is not None else hf.config.decoder_start_token_id
    forced = {"forced_bos_token_id": adapter.bos_id - offset} if adapter.prefix else {}
    out: list[tuple[int, ...]] = [()] * len(subject.sources)
    hf.generation_config = GenerationConfig(decoder_start_token_id=start, eos_token_id=eos,
                                            pad_token_id=hf.config.pad_token_id)
    try:
        for batch in batches:
            src, lengths = pad_sequences([subject.sources[i] for i in batch], adapter.pad_id)
            mask = (torch.arange(src.shape[1])[None, :] < lengths[:, None]).long()
            limit = [limits[i] for i in batch]
            generated = hf.generate(input_ids=src, attention_mask=mask, num_beams=beam, length_penalty=0.0,
                                    early_stopping=True, do_sample=False, max_length=skip + max(limit) + 1,
                                    logits_processor=LogitsProcessorList([LengthLimit(limit, beam, skip, eos)]),
                                    **forced)
            for i, row in zip(batch, generated[:, skip:].tolist()):
                out[i] = tuple(row[:row.index(eos)] if eos in row else row)
    finally:
        hf.generation_config = own
    return out


def ours_run(subject: Subject, settings: SearchSettings, batch: int, hook_factory=None) -> tuple[list, int]:
    """Our 1-best of every source (model ids, as generate_run gives them) and the row-steps the search took."""
    counter = QueryCounter(subject.adapter)
    nbest = decode_sources(counter, subject.sources, settings, batch_sentences=batch, sort=True,
                           hook_factory=hook_factory)
    offset, eos = subject.adapter.offset, subject.adapter.eos_id
    return [tuple(t - offset for t in hyps[0].tokens if t != eos) if hyps else () for hyps in nbest], counter.rows


def synthetic_lmatrices(subject: Subject, args: argparse.Namespace, profile, folder: Path) -> tuple[list[Path], dict]:
    """An L shard of the posteriors of each sentence's own --evidence-beam-best list (see the module docstring)."""
    from lattices.lmatrix import build_lmatrix
    from lattices.lmatrix_shards import save_shard
    from lattices.posteriors import string_posteriors
    from lattices.theta import Theta

    adapter, decode = subject.adapter, profile.decode
    theta = Theta.from_precisions([float(x) for x in args.precisions.split(",")], profile.lmbr.theta_convention,
                                  profile.lmbr.theta_t)
    settings = SearchSettings(beam=args.evidence_beam, nbest=args.evidence_beam, max_length_a=decode.max_length_a,
                              max_length_b=decode.max_length_b, full_beam=True)
    nbest = decode_sources(adapter, subject.sources, settings, batch_sentences=args.batch, sort=True)
    matrices = []
    for line, hyps in zip(subject.lines, nbest):
        strings = [((adapter.bos_id, *h.tokens, adapter.eos_id), -h.score) for h in hyps]
        matrices.append(build_lmatrix(string_posteriors(strings, 4), theta, adapter.tgt_vocab_size, sentence=line))
    save_shard(folder / "shard-0.npz", matrices, {"kind": "synthetic"})
    return [folder / "shard-0.npz"], {
        "kind": "synthetic: n-gram posteriors (orders 1-4) of the model's own n-best (our decoder, beam = n = "
                f"{args.evidence_beam}, full_beam), strings <s> ... </s> weighted by exp(score)",
        "theta": theta.signature(), "strings": sum(len(h) for h in nbest),
        "ngrams": sum(len(m.posteriors) for m in matrices), "rows": sum(m.num_rows for m in matrices),
        "nnz": sum(m.nnz for m in matrices), "per_sentence_median": {
            "ngrams": statistics.median(len(m.posteriors) for m in matrices),
            "rows": statistics.median(m.num_rows for m in matrices),
            "nnz": statistics.median(m.nnz for m in matrices)}}


def timed_run(name: str, fn: Callable[[], Any], words: int, args: argparse.Namespace) -> tuple[dict, Any]:
    """One run of `fn` after waiting for a quiet machine: its figures and its result."""
    start = wait_for_load(args.max_load, args.load_timeout, poll=5.0)
    with RunClock() as clock:
        result = fn()
    log = {"decoder": name, **clock.record(), "wpm": round(60 * words / clock.seconds, 1), **start}
    steal = "" if clock.steal_seconds is None else f"  steal {clock.steal_seconds:.1f} s"
    print(f"  {name:13s} {log['wpm']:9.0f} wpm  {clock.seconds:7.2f} s  cpu {clock.cpu_seconds:7.2f} s{steal}  "
          f"load {start['load_at_start']:.2f}{'' if start['quiet'] else ' (loaded)'}", file=sys.stderr)
    return log, result


def summary_of(runs: list[dict], name: str, words: int) -> dict[str, Any]:
    seconds = statistics.median(r["seconds"] for r in runs if r["decoder"] == name)
    return {"median_seconds": round(seconds, 3), "median_wpm": round(60 * words / seconds, 1)}


def arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    model = p.add_mutually_exclusive_group(required=True)
    model.add_argument("--model", type=Path, help="a transformers model folder (exported by export_hf, or with its "
                                                   "tokenizer)")
    model.add_argument("--checkpoint", type=Path, help="our Transformer checkpoint (or an artifact folder with "
                                                       "model.pt), exported first")
    p.add_argument("--source", required=True, help="source lines: BPE for an exported model, raw text otherwise")
    p.add_argument("--languages", default="de,en", help="source,target (a tokenizer's model only)")
    p.add_argument("--profile", default="medium", help="the [decode] length limits and early exit, the [lmbr] hook")
    p.add_argument("--sentences", type=int, default=500)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--batch", type=int, default=16, help="sentences per batch, both decoders")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--early-exit", action=argparse.BooleanOptionalAction, default=None,
                   help="ours ends a sentence once its n-best is certain (default: the profile's [decode])")
    p.add_argument("--max-load", type=float, default=0.5, help="wait for a 1-minute load average below this")
    p.add_argument("--load-timeout", type=float, default=300.0, help="seconds to wait for it before each run")
    p.add_argument("--lmatrices", type=Path, nargs="*", help="L shards in the model's units (default: synthetic)")
    p.add_argument("--evidence-beam", type=int, default=32, help="synthetic L: the n-best list's size")
    p.add_argument("--precisions", default="58.62,27.50,14.50,8.00", help="synthetic L: BLEU precisions for theta")
    p.add_argument("--nmt-lambda", type=float, help="LMBR's lambda (default: the profile's [lmbr] nmt_lambda)")
    p.add_argument("--gains", choices=("per_step", "bounded"), help="default: the profile's [lmbr] gains")
    p.add_argument("--out", type=Path, default=OWN_RESULTS / "hf_speed.json")
    return p.parse_args(argv)


def measure(subject: Subject, args: argparse.Namespace, profile, tmp: Path) -> dict[str, Any]:
    """The alternating runs of the three decoders: per-run figures, the last outputs, the settings used."""
    from lattices.lmatrix_shards import LMatrixStore

    decode, adapter = profile.decode, subject.adapter
    gains = args.gains or profile.lmbr.gains
    limits = max_output_lengths(torch.tensor([len(s) for s in subject.sources]), decode.max_length_a,
                                decode.max_length_b, position_limit(adapter)).tolist()
    batches = make_batches([len(s) for s in subject.sources], args.batch, sort=True)
    plain = SearchSettings(beam=args.beam, max_length_a=decode.max_length_a, max_length_b=decode.max_length_b,
                           early_exit=decode.early_exit if args.early_exit is None else args.early_exit,
                           full_beam=True)
    lmbr = dataclasses.replace(plain, weight=profile.lmbr.nmt_lambda if args.nmt_lambda is None else args.nmt_lambda,
                               patience=profile.lmbr.patience if gains == "bounded" else 1.0)
    if args.lmatrices:
        shards, lmatrix = args.lmatrices, {"kind": "given", "files": [str(s) for s in args.lmatrices]}
    else:
        shards, lmatrix = synthetic_lmatrices(subject, args, profile, tmp)
    factory = lmbr_hook_factory(LMatrixStore(shards), adapter.bos_id, subject.lines,
                                vocab_size=adapter.tgt_vocab_size, gains=gains)
    decoders = {"ours": lambda: ours_run(subject, plain, args.batch),
                "generate": lambda: generate_run(subject, batches, limits, args.beam),
                "ours_lmbr": lambda: ours_run(subject, lmbr, args.batch, factory)}
    first = dataclasses.replace(subject, sources=[subject.sources[i] for i in batches[0]])
    ours_run(first, plain, args.batch)  # warm-up: one batch each
    generate_run(first, [list(range(len(batches[0])))], [limits[i] for i in batches[0]], args.beam)
    runs, outputs = [], {}
    for round_ in range(args.runs):
        print(f"round {round_ + 1} of {args.runs}", file=sys.stderr)
        for name, fn in decoders.items():
            log, outputs[name] = timed_run(name, fn, sum(subject.words), args)
            runs.append({"round": round_ + 1, **log})
    return {"runs": runs, "outputs": outputs, "limits": limits, "ours_settings": plain,
            "lmbr": {"nmt_lambda": lmbr.weight, "gains": gains, "patience": lmbr.patience, "lmatrix": lmatrix}}


def results_of(measured: dict[str, Any], words: int) -> dict[str, Any]:
    """Medians, the ratio, the agreement and LMBR's overhead."""
    runs, outputs = measured["runs"], measured["outputs"]
    (ours_best, ours_steps), (lmbr_best, lmbr_steps) = outputs["ours"], outputs["ours_lmbr"]
    results = {name: summary_of(runs, name, words) for name in outputs}
    results["ours"].update(row_steps=ours_steps, target_tokens=sum(map(len, ours_best)))
    results["ours_lmbr"].update(row_steps=lmbr_steps, target_tokens=sum(map(len, lmbr_best)))
    results["generate"]["target_tokens"] = sum(map(len, outputs["generate"]))
    seconds = {name: r["median_seconds"] for name, r in results.items()}
    per_row_step = [seconds[n] / results[n]["row_steps"] for n in ("ours", "ours_lmbr")]
    ours_runs, generate_runs = ([r["seconds"] for r in runs if r["decoder"] == n] for n in ("ours", "generate"))
    ratios = [round(g / o, 3) for o, g in zip(ours_runs, generate_runs)]  # paired in time: a drifting host cancels
    return {"results": results, "ours_over_generate": round(seconds["generate"] / seconds["ours"], 3),
            "ratio_per_round": ratios, "ratio_per_round_median": round(statistics.median(ratios), 3),
            "same_1best": sum(a == b for a, b in zip(ours_best, outputs["generate"])),
            "ours_1best_at_length_limit": sum(len(b) == n for b, n in zip(ours_best, measured["limits"])),
            "lmbr_same_1best_as_ours": sum(a == b for a, b in zip(ours_best, lmbr_best)),
            "lmbr_overhead": {"total_time": round(seconds["ours_lmbr"] / seconds["ours"] - 1, 4),
                              "per_row_step": round(per_row_step[1] / per_row_step[0] - 1, 4)}}


def print_table(report: dict[str, Any]) -> None:
    overhead, loaded = report["lmbr_overhead"], report["loaded_runs"]
    print(f"{'decoder':13s} {'median wpm':>11s} {'median s':>9s}")
    for name, r in report["results"].items():
        print(f"{name:13s} {r['median_wpm']:11.0f} {r['median_seconds']:9.2f}")
    print(f"ours / generate (words per minute): {report['ours_over_generate']:.2f}x by the medians, "
          f"{report['ratio_per_round_median']:.2f}x by the median of the rounds' ratios; the same 1-best on "
          f"{report['same_1best']} of {report['sentences']}")
    print(f"LMBR over ours alone: {100 * overhead['total_time']:+.1f}% time, {100 * overhead['per_row_step']:+.1f}% "
          f"per row-step ({report['lmbr']['lmatrix']['kind'].split(':')[0]} L)")
    if loaded:
        print(f"{loaded} of {len(report['per_run'])} runs started on a loaded machine")


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    try:
        import transformers
    except ImportError:
        raise SystemExit("hf_speed.py needs the hf extra: pip install -e '.[hf]'") from None
    torch.set_num_threads(args.threads)
    profile = load_profile(args.profile)
    with tempfile.TemporaryDirectory(prefix="hf_speed-") as tmp, torch.inference_mode():
        folder = args.model
        if args.checkpoint is not None:
            from pipeline.nmt.export_hf import export_checkpoint

            checkpoint = args.checkpoint / "model.pt" if args.checkpoint.is_dir() else args.checkpoint
            folder = export_checkpoint(checkpoint, Path(tmp) / "hf")
        subject = load_subject(folder, args.source, args.sentences, tuple(args.languages.split(",")))
        if args.checkpoint is not None:
            subject.info.update(folder=None, checkpoint=str(args.checkpoint))
        measured = measure(subject, args, profile, Path(tmp))
    words, decode, loaded = sum(subject.words), profile.decode, sum(not r["quiet"] for r in measured["runs"])
    report = {"benchmark": "hf_speed", "command": " ".join([Path(sys.executable).name, *sys.argv]),
              "machine": {**machine(args.threads), "load_average_at_end": os.getloadavg()},
              "transformers": transformers.__version__, "model": subject.info,
              "data": {"file": str(args.source), "sentences": len(subject.sources), "source_words": words},
              "sentences": len(subject.sources), "beam": args.beam, "batch_sentences": args.batch,
              "threads": args.threads, "runs": args.runs, "sentence_order": "sorted by source length, longest first",
              "length_limit": f"per sentence: {decode.max_length_a} * |source| + {decode.max_length_b}, at most the "
                              "model's positions; then only EOS",
              "ours_settings": {"full_beam": True, "early_exit": measured["ours_settings"].early_exit,
                                "length_penalty": 0, "row_steps": "counted by a wrapper around the adapter"},
              "generate_settings": {"num_beams": args.beam, "length_penalty": 0.0, "early_stopping": True,
                                    "generation_config": "the model's set aside: one with the special ids alone",
                                    "max_length": "decoder prefix + the batch's largest limit + EOS"},
              "lmbr": measured["lmbr"], "max_load": args.max_load, "load_timeout_s": args.load_timeout,
              "loaded_runs": loaded, "taken_on_a_loaded_machine": loaded > 0, "per_run": measured["runs"],
              **results_of(measured, words)}
    print_table(report)
    write_json(args.out, report)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
