"""Benchmark: batch invariance - how often each decoding mode gives the output of decoding every sentence alone.

The modes follow the same search per sentence (pipeline/decode/divergence.py), but float32 rounding depends on the
shapes of the matrix products, so a near-tie can go the other way. Each mode decodes the first --sentences of a
split; its 1-best outputs are compared, sentence by sentence, with decoding each sentence alone (decode_sources,
one sentence per batch, input order):
  batched beam at --batch-sizes sentences per batch, sorted by length and in input order;
  streaming refill (--refill) with pools of --stream-pools sentences, sorted and in input order;
  the unbatched reference decoder (one neural query per hypothesis).
With --lattices every mode runs twice: pure NMT, and LMBR (L built from the split's PBMT lattices as in
benchmarks/lmbr_overhead.py, NMT weight --nmt-lambda; the alone reference then uses L too).
Variants (--variants) decode the alone reference and --variant-modes again under one change each, compared with
their own alone: float64 (model.double(), default dtype float64), deterministic (torch.use_deterministic_algorithms),
no-onednn (torch.backends.mkldnn disabled), one-thread (torch.set_num_threads(1)), fixed-shapes (every decoder
query on exactly --fixed-rows rows, one sentence per encoder query, sources padded to the longest of the set: a
wrapper in this file, to measure what shape-independent products cost), fixed-shapes-1thread (the same on one
thread: CPU attention with two threads gives rows different bits by their position in the batch), extra-beam
(--extra-beam). A probe measures the cause directly, per variant: the first decoder step's
log-probabilities of each sentence in input-order batches of --batch-sizes, bitwise against the sentence alone.
Reported per mode: identical outputs (% of sentences), the largest score gap among the differing sentences, and
seconds (one run, no repeats: this is about identity, not speed; a variant's seconds over the float32 mode's are
its cost). Prints Markdown tables and writes JSON.

    .venv/bin/python benchmarks/batch_invariance.py --model work/tiny/eng-ger/nmt-system/FNMT-* \\
        --source work/tiny/eng-ger/subwords/newstest2016-*/bpe.en.gz --sentences 150 \\
        --lattices work/tiny/eng-ger/pbmt/newstest2016-* \\
        --codes work/tiny/eng-ger/bpe/bpe-*/codes.de --vocab work/tiny/eng-ger/vocab/vocab-*/vocab.de.json --threads 2
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts OpenMP: see beam_speed.py

from common import OWN_RESULTS, REPO, load_model, log, machine, source_ids  # noqa: E402
from lattices.fst_io import lattice_paths  # noqa: E402
from lattices.lmatrix_shards import LMatrixStore, build_lmatrix_shard  # noqa: E402
from lattices.theta import Theta  # noqa: E402
from pipeline.decode import HookFactory, Hypothesis, SearchSettings, decode_sources  # noqa: E402
from pipeline.decode.divergence import compare_outputs, summary_line  # noqa: E402
from pipeline.decode.lmbr_hook import lmbr_hook_factory  # noqa: E402
from pipeline.decode.speed import timed  # noqa: E402
from pipeline.decode.unbatched import unbatched_decode  # noqa: E402
from pipeline.io import write_json  # noqa: E402
from pipeline.nmt.token_batches import pad_sequences  # noqa: E402
from pipeline.nmt.interface import DecoderState, Ensemble, StepModel  # noqa: E402

import torch  # noqa: E402
from torch import Tensor  # noqa: E402
import torch.nn.functional as F  # noqa: E402


@dataclass(frozen=True)
class Mode:
    """How the sentences are decoded (see decode_sources)."""

    name: str
    batch_sentences: int = 1
    sort: bool = False
    streaming: bool = False
    unbatched: bool = False


ALONE = Mode("alone")


def all_modes(batch_sizes: Sequence[int], pools: Sequence[int]) -> list[Mode]:
    """Batched and streaming modes, sorted and in input order, and the unbatched decoder."""
    orders = (("sorted", True), ("input", False))
    batched = [Mode(f"batch{n}-{label}", n, sort) for n in batch_sizes for label, sort in orders]
    streamed = [Mode(f"stream{n}-{label}", n, sort, streaming=True) for n in pools for label, sort in orders]
    return batched + streamed + [Mode("unbatched", unbatched=True)]


def decode(model: StepModel, ids: list[list[int]], settings: SearchSettings, mode: Mode,
           hook: HookFactory | None, refill: float) -> list[list[Hypothesis]]:
    if mode.unbatched:
        return unbatched_decode(model, ids, settings, hook_factory=hook)
    return decode_sources(model, ids, settings, mode.batch_sentences, mode.sort, hook_factory=hook,
                          streaming=mode.streaming, refill=refill)


def compare_modes(model: StepModel, ids: list[list[int]], settings: SearchSettings, hook: HookFactory | None,
                  modes: Sequence[Mode], refill: float) -> dict[str, Any]:
    """Decode alone, then every mode, each compared with alone: {"alone_seconds", "modes": {name: comparison}}."""
    seconds, reference = timed(1, lambda: decode(model, ids, settings, ALONE, hook, refill))
    rows = {}
    for mode in modes:
        mode_seconds, output = timed(1, lambda: decode(model, ids, settings, mode, hook, refill))
        rows[mode.name] = {"seconds": round(mode_seconds, 3), **compare_outputs(reference, output)}
        log(f"    {mode.name}: {summary_line(rows[mode.name])} ({mode_seconds:.1f} s)")
    return {"alone_seconds": round(seconds, 3), "modes": rows}


class FixedShapeModel:
    """A StepModel (benchmark only) whose every decoder query of `model` has exactly `rows` rows (the last block
    padded with copies of its first row), encoding one sentence at a time, every source padded to `source_length`
    positions: no product's shape depends on the batch."""

    def __init__(self, model: StepModel, rows: int, source_length: int) -> None:
        self.model, self.rows, self.source_length = model, rows, source_length

    bos_id = property(lambda self: self.model.bos_id)
    eos_id = property(lambda self: self.model.eos_id)
    pad_id = property(lambda self: self.model.pad_id)
    tgt_vocab_size = property(lambda self: self.model.tgt_vocab_size)

    def _blocks(self, count: int, device: torch.device) -> list[Tensor]:
        index = torch.arange(count, device=device)
        blocks = list(index.split(self.rows))
        blocks[-1] = F.pad(blocks[-1], (0, self.rows - len(blocks[-1])), value=int(blocks[-1][0]))
        return blocks

    def encode(self, src: Tensor, src_lengths: Tensor) -> DecoderState:
        """One sentence per query (a packed GRU encoder's shapes depend on the other sentences' lengths)."""
        src = F.pad(src, (0, self.source_length - src.shape[1]), value=self.model.pad_id)
        return DecoderState.concat([self.model.encode(src[i: i + 1], src_lengths[i: i + 1])
                                    for i in range(len(src))])

    def step(self, state: DecoderState, prev_tokens: Tensor) -> tuple[Tensor, DecoderState]:
        count = len(prev_tokens)
        outputs = [self.model.step(state.select(b), prev_tokens[b]) for b in self._blocks(count, prev_tokens.device)]
        keep = torch.arange(count, device=prev_tokens.device)
        return (torch.cat([log_probs for log_probs, _ in outputs])[:count],
                DecoderState.concat([s for _, s in outputs]).select(keep))

    def reorder(self, state: DecoderState, index: Tensor, same_sources: bool = False) -> DecoderState:
        return self.model.reorder(state, index, same_sources)


@contextmanager
def as_float64(model: Ensemble) -> Iterator[StepModel]:
    """The members in float64 and float64 as the default dtype (search scores), float32 again afterwards."""
    previous = torch.get_default_dtype()
    for member in model.models:
        member.double()
    torch.set_default_dtype(torch.float64)
    try:
        yield model
    finally:
        torch.set_default_dtype(previous)
        for member in model.models:
            member.float()


@contextmanager
def deterministic(model: Ensemble) -> Iterator[StepModel]:
    torch.use_deterministic_algorithms(True)
    try:
        yield model
    finally:
        torch.use_deterministic_algorithms(False)


@contextmanager
def without_onednn(model: Ensemble) -> Iterator[StepModel]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a TF32 notice about Intel GPUs
        with torch.backends.mkldnn.flags(enabled=False):
            yield model


@contextmanager
def one_thread(model: StepModel) -> Iterator[StepModel]:
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield model
    finally:
        torch.set_num_threads(previous)


Variant = tuple[Callable[[Ensemble], ContextManager[StepModel]], int]


def variants(args, source_length: int) -> dict[str, Variant]:
    """name -> (context manager giving the model to decode with, beam)."""
    def fixed(model: Ensemble) -> ContextManager[StepModel]:
        return nullcontext(FixedShapeModel(model, args.fixed_rows, source_length))

    return {"float64": (as_float64, args.beam), "deterministic": (deterministic, args.beam),
            "no-onednn": (without_onednn, args.beam), "one-thread": (one_thread, args.beam),
            "fixed-shapes": (fixed, args.beam),
            "fixed-shapes-1thread": (lambda model: one_thread(FixedShapeModel(model, args.fixed_rows, source_length)),
                                     args.beam),
            "extra-beam": (nullcontext, args.extra_beam)}


def first_step(model: StepModel, batch: Sequence[Sequence[int]]) -> Tensor:
    """The log-probabilities [N, V] of the first target token of every source of the batch."""
    src, lengths = pad_sequences(batch, model.pad_id)
    log_probs, _ = model.step(model.encode(src, lengths), torch.full((len(batch),), model.bos_id, dtype=torch.long))
    return log_probs.double()


def step_probe(model: StepModel, ids: list[list[int]], batch_sizes: Sequence[int]) -> dict[str, dict[str, float]]:
    """Per batch size (input order): % of sentences whose first-step log-probabilities equal alone's bit for bit,
    and the largest difference."""
    alone = torch.cat([first_step(model, [x]) for x in ids])
    probe = {}
    for n in batch_sizes:
        batched = torch.cat([first_step(model, ids[i: i + n]) for i in range(0, len(ids), n)])
        equal = batched == alone
        gap = torch.where(equal, torch.zeros_like(alone), (batched - alone).abs())
        probe[str(n)] = {"identical_rows": round(100 * float(equal.all(dim=1).double().mean()), 1),
                         "max_abs_diff": float(gap.max())}
    return probe


def lmbr_hook(args, model: Ensemble, count: int, folder: Path) -> tuple[HookFactory, dict[str, Any]]:
    """L of the first `count` sentences from the PBMT lattices (as benchmarks/lmbr_overhead.py) and its hook."""
    theta = Theta.from_precisions([float(x) for x in args.precisions.split(",")], args.theta_convention)
    shard = folder / "shard-0.npz"
    stats = build_lmatrix_shard(lattice_paths(args.lattices)[:count], args.codes, args.vocab, theta, None,
                                "tropical", args.nbest, shard, engine="openfst")
    factory = lmbr_hook_factory(LMatrixStore([shard]), model.bos_id, vocab_size=model.tgt_vocab_size)
    return factory, {"lattices": str(args.lattices), "codes": str(args.codes), "vocab": str(args.vocab),
                     "nbest": args.nbest, "nmt_lambda": args.nmt_lambda, "theta": theta.signature(),
                     "lmatrix": {k: stats[k] for k in ("sentences", "rows", "nnz")}}


def run(args, model: Ensemble, ids: list[list[int]], hooks: dict[str, HookFactory | None]) -> dict[str, Any]:
    """Every mode in float32 and every variant, per hook (NMT, LMBR); the step probe per variant."""
    modes = [m for m in all_modes(args.batch_sizes, args.stream_pools) if not args.modes or m.name in args.modes]
    chosen = [m for m in all_modes(args.batch_sizes, args.stream_pools) if m.name in args.variant_modes]
    table = variants(args, max(len(x) for x in ids))
    results: dict[str, Any] = {"float32": {}, "variants": {}, "probe": {}}
    for name, hook in hooks.items():
        settings = SearchSettings(beam=args.beam, weight=args.nmt_lambda if hook else 1.0)
        log(f"float32, {name}:")
        results["float32"][name] = compare_modes(model, ids, settings, hook, modes, args.refill)
    with torch.inference_mode():
        results["probe"]["float32"] = step_probe(model, ids, args.batch_sizes)
    for variant in args.variants:
        setup, beam = table[variant]
        results["variants"][variant] = {"beam": beam}
        with setup(model) as changed:
            for name, hook in hooks.items():
                settings = SearchSettings(beam=beam, weight=args.nmt_lambda if hook else 1.0)
                log(f"{variant}, {name}:")
                results["variants"][variant][name] = compare_modes(changed, ids, settings, hook, chosen, args.refill)
            if beam == args.beam:  # (the probe does not depend on the beam)
                with torch.inference_mode():
                    results["probe"][variant] = step_probe(changed, ids, args.batch_sizes)
    return results


def share(row: dict[str, Any]) -> str:
    return f"{100 * row['identical'] / row['sentences']:.2f}% ({row['identical']}/{row['sentences']})"


def gap(row: dict[str, Any]) -> str:
    return f"{row['max_score_gap']:.5f}" if row["identical"] < row["sentences"] else "-"


def mode_table(results: dict[str, Any]) -> list[str]:
    """| mode | per hook: identical outputs, largest score gap, seconds |."""
    hooks = list(results["float32"])
    lines = ["| mode | " + " | ".join(f"{h}: identical | {h}: largest gap | {h}: s" for h in hooks) + " |",
             "|---" * (1 + 3 * len(hooks)) + "|"]
    for mode in results["float32"][hooks[0]]["modes"]:
        cells = [f"{share(r)} | {gap(r)} | {r['seconds']:.1f}"
                 for r in (results["float32"][h]["modes"][mode] for h in hooks)]
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    lines.append("| alone (reference) | " + " | ".join(f"- | - | {results['float32'][h]['alone_seconds']:.1f}"
                                                      for h in hooks) + " |")
    return lines


def variant_table(results: dict[str, Any]) -> list[str]:
    """| variant | mode | per hook: identical, largest gap, seconds (x the float32 mode's) |."""
    hooks = list(results["float32"])
    lines = ["| variant | beam | mode | " + " | ".join(f"{h}: identical | {h}: largest gap | {h}: s (x float32)"
                                                   for h in hooks) + " |", "|---" * (3 + 3 * len(hooks)) + "|"]
    for variant, data in results["variants"].items():
        for mode in ["alone", *data[hooks[0]]["modes"]]:
            cells = []
            for h in hooks:
                base, row = results["float32"][h], data[h]
                seconds = row["alone_seconds"] if mode == "alone" else row["modes"][mode]["seconds"]
                reference = base["alone_seconds"] if mode == "alone" else base["modes"].get(mode, {}).get("seconds")
                ratio = f" (x{seconds / reference:.2f})" if reference and data["beam"] == results["beam"] else ""
                same = ("(reference) | -" if mode == "alone"
                        else f"{share(row['modes'][mode])} | {gap(row['modes'][mode])}")
                cells.append(f"{same} | {seconds:.1f}{ratio}")
            lines.append(f"| {variant} | {data['beam']} | {mode} | " + " | ".join(cells) + " |")
    return lines


def probe_table(probe: dict[str, Any]) -> list[str]:
    """| variant | per batch size: % of first-step log-prob rows bitwise equal to alone | largest difference |."""
    sizes = list(next(iter(probe.values())))
    lines = ["| variant | " + " | ".join(f"batch {n}" for n in sizes) + " | largest abs diff |",
             "|---" * (2 + len(sizes)) + "|"]
    for variant, rows in probe.items():
        largest = max(r["max_abs_diff"] for r in rows.values())
        lines.append(f"| {variant} | " + " | ".join(f"{rows[n]['identical_rows']:.1f}%" for n in sizes)
                     + f" | {largest:.3g} |")
    return lines


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", nargs="+", help="checkpoint files / NMT artifact folders / system.json (default: "
                   "random weights, as benchmarks/beam_speed.py)")
    p.add_argument("--architecture", default="gru", choices=("gru", "transformer"), help="for random weights")
    p.add_argument("--profile", default="medium", help="sizes of the random-weight model")
    p.add_argument("--random-vocab", type=int, default=8000, help="vocabulary of the random-weight model")
    p.add_argument("--source", help="BPE source lines of the split (default: synthetic sentences)")
    p.add_argument("--sentences", type=int, default=150)
    p.add_argument("--lattices", type=Path, help="the split's DecodePBMT folder (LMBR rows; default: NMT only)")
    p.add_argument("--codes", type=Path, help="target BPE codes (LearnBPE's codes.<tgt>)")
    p.add_argument("--vocab", type=Path, help="target vocabulary (BuildVocab's vocab.<tgt>.json)")
    p.add_argument("--precisions", default="58.62,27.50,14.50,8.00", help="PBMT BLEU precisions for theta")
    p.add_argument("--theta-convention", default="scaled", choices=("plain", "scaled"))
    p.add_argument("--nbest", type=int, default=200, help="evidence space (0: the full lattice)")
    p.add_argument("--nmt-lambda", type=float, default=0.5)
    p.add_argument("--no-plain", action="store_true", help="with --lattices: LMBR only, no pure-NMT rows")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--batch-sizes", default="2,4,8,16,32")
    p.add_argument("--stream-pools", default="8,32")
    p.add_argument("--refill", type=float, default=1 / 6)
    p.add_argument("--modes", default="", help="comma-separated mode names, e.g. batch32-input (default: all)")
    p.add_argument("--variants", default="float64,deterministic,no-onednn,one-thread,fixed-shapes,"
                   "fixed-shapes-1thread,extra-beam",
                   help="comma-separated, empty for none")
    p.add_argument("--variant-modes", default="batch16-sorted,stream32-input")
    p.add_argument("--fixed-rows", type=int, default=32, help="fixed-shapes: rows of every neural query")
    p.add_argument("--extra-beam", type=int, default=12)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=OWN_RESULTS / "batch_invariance.json")
    args = p.parse_args(argv)
    if args.lattices and not (args.codes and args.vocab):
        p.error("--lattices needs --codes and --vocab")
    args.batch_sizes = [int(n) for n in args.batch_sizes.split(",")]
    args.stream_pools = [int(n) for n in args.stream_pools.split(",")]
    args.variants = [v for v in args.variants.split(",") if v]
    args.variant_modes = args.variant_modes.split(",")
    args.modes = [m for m in args.modes.split(",") if m]
    return args


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse(argv)
    torch.set_num_threads(args.threads)
    model, vocab, model_info = load_model(args)
    ids, _, info = source_ids(args, vocab, args.sentences)
    summary = {"benchmark": "batch_invariance", "command": " ".join([Path(sys.executable).name, *sys.argv]),
               "machine": machine(args.threads), "model": model_info, "data": info, "beam": args.beam,
               "threads": args.threads, "refill": args.refill, "fixed_rows": args.fixed_rows}
    with tempfile.TemporaryDirectory() as tmp:
        hooks: dict[str, HookFactory | None] = {} if args.lattices and args.no_plain else {"NMT": None}
        if args.lattices:
            hooks["LMBR"], summary["lmbr"] = lmbr_hook(args, model, len(ids), Path(tmp))
        for mode in (ALONE, Mode("warm-up", 8, True)):  # first calls allocate and load kernels
            decode(model, ids[:8], SearchSettings(beam=args.beam), mode, None, args.refill)
        summary.update(run(args, model, ids, hooks))
    summary["seconds"] = round(time.perf_counter() - started, 1)
    summary["machine"]["load_average_at_end"] = os.getloadavg()
    tables = [mode_table(summary), variant_table(summary) if summary["variants"] else [], probe_table(summary["probe"])]
    print("\n".join(line for table in tables if table for line in ["", *table]))
    write_json(args.out, summary)
    log(f"wrote {args.out} ({summary['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
