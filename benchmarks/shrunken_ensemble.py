"""Benchmark: the FNMT ensemble against its unfolded network, its shrunken network and its first member alone.

For each of the four models (Ensemble of the members; unfold(members); shrink(unfold(members)) at one member's
size, or the ShrinkEnsemble artifact given by --shrunken; the first member), on the first --sentences lines of a
split's BPE source and reference:

- the reference's cross-entropy (nats per target token, teacher-forced). The ensemble's own scores are not
  normalised, so its row is the renormalised ensemble, which is exactly the unfolded network (pipeline/nmt/unfold.py);
- pure NMT beam search (--beam, --threshold, the decoder's batching and the CPU speed-ups the profile's [decode]
  sets): words per minute (median of --runs, the models alternating run by run), BLEU of the BPE-merged output
  against the BPE-merged reference (tokenized and truecased, as the models see them: sacrebleu with tokenize none),
  and BLEU against the ensemble's own output (how closely a model imitates the ensemble).

Prints a table and writes JSON.

    .venv/bin/python benchmarks/shrunken_ensemble.py --system work/medium/eng-ger/nmt-system/FNMT-*/system.json \\
        --source work/medium/eng-ger/subwords/newstest2016-*/bpe.en.gz \\
        --reference work/medium/eng-ger/subwords/newstest2016-*/bpe.de.gz --threads 2
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import sacrebleu
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine  # noqa: E402
from pipeline.config import load_profile  # noqa: E402
from pipeline.decode import SearchSettings, decode_sources  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402
from pipeline.nmt.token_batches import pad_sequences  # noqa: E402
from pipeline.nmt.checkpoint import load_model  # noqa: E402
from pipeline.nmt.interface import Ensemble  # noqa: E402
from pipeline.nmt.shrink import shrink  # noqa: E402
from pipeline.nmt.speedups import CpuSpeedups, apply_speedups  # noqa: E402
from pipeline.nmt.system import load_system  # noqa: E402
from pipeline.nmt.unfold import unfold  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def merged(tokens: list[str]) -> str:
    return " ".join(tokens).replace("@@ ", "").removesuffix("@@")


def cross_entropy(model, sources: list[list[int]], targets: list[list[int]], bos: int, pad: int,
                  batch: int = 32) -> float:
    """Nats per reference token (EOS included) under `model` (teacher-forced step by step: any StepModel)."""
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(sources), batch):
            src, lengths = pad_sequences(sources[start:start + batch], pad)
            tgt, tgt_lengths = pad_sequences(targets[start:start + batch], pad)
            state = model.encode(src, lengths)
            prev = torch.full((src.shape[0],), bos, dtype=torch.long)
            for t in range(tgt.shape[1]):
                log_probs, state = model.step(state, prev)
                real = t < tgt_lengths
                total -= float(log_probs.gather(1, tgt[:, t:t + 1]).squeeze(1)[real].sum())
                count += int(real.sum())
                prev = tgt[:, t]
    return total / count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", type=Path, required=True, help="the FNMT system.json (NMTSystem artifact)")
    parser.add_argument("--shrunken", type=Path, help="a shrunken model.pt (ShrinkEnsemble); default: shrink here")
    parser.add_argument("--source", type=Path, required=True, help="BPE source lines (.gz)")
    parser.add_argument("--reference", type=Path, required=True, help="BPE reference lines (.gz)")
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--profile", default="medium", help="its [decode] batching and CPU speed-ups")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--threshold", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks-local" / "shrunken_ensemble.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    ensemble, src_vocab, tgt_vocab = load_system(args.system)
    members = ensemble.models
    unfolded = unfold(members)
    began = time.perf_counter()
    c = members[0].config
    shrunken = (load_model(args.shrunken) if args.shrunken else
                shrink(unfolded, c.embed_size, c.hidden_size, c.attention_size, c.attention_heads))
    shrink_seconds = time.perf_counter() - began
    models = {"ensemble": ensemble, "unfolded": unfolded, "shrunken": shrunken, "first member": members[0]}

    pairs = [(s.split(), t.split()) for s, t in zip(read_lines(args.source), read_lines(args.reference)) if s][
        :args.sentences]
    sources = [src_vocab.encode(s) + [src_vocab.eos_id] for s, _ in pairs]
    targets = [tgt_vocab.encode(t) + [tgt_vocab.eos_id] for _, t in pairs]
    references = [merged(t) for _, t in pairs]
    decode = load_profile(args.profile, REPO / "configs").decode
    speedups = CpuSpeedups.of(decode)
    settings = SearchSettings(beam=args.beam, threshold=args.threshold, length_penalty=decode.length_penalty,
                              max_length_a=decode.max_length_a, max_length_b=decode.max_length_b,
                              early_exit=decode.early_exit)
    fast = {name: (Ensemble([apply_speedups(m, speedups) for m in model.models]) if isinstance(model, Ensemble)
                   else apply_speedups(model, speedups)) for name, model in models.items()}

    results = {name: {"parameters": sum(m.num_parameters() for m in (model.models if isinstance(model, Ensemble)
                                                                      else [model])),
                      "seconds": []} for name, model in models.items()}
    for name, model in models.items():
        scorer = unfolded if name == "ensemble" else model  # the ensemble renormalised = the unfolded network
        results[name]["cross_entropy"] = cross_entropy(scorer, sources, targets, tgt_vocab.bos_id, tgt_vocab.pad_id)
    outputs: dict[str, list[str]] = {}
    for run in range(args.runs):
        for name, model in fast.items():
            began = time.perf_counter()
            hyps = decode_sources(model, sources, settings, batch_sentences=decode.batch_sentences, sort=decode.sort)
            results[name]["seconds"].append(time.perf_counter() - began)
            outputs[name] = [merged(tgt_vocab.decode(h[0].tokens)) for h in hyps]
        print(f"run {run + 1}: " + ", ".join(f"{n} {r['seconds'][-1]:.1f} s" for n, r in results.items()),
              file=sys.stderr)
    for name, result in results.items():
        words = sum(len(line.split()) for line in outputs[name])
        result["words"] = words
        result["words_per_minute"] = [60 * words / s for s in result["seconds"]]
        result["median_words_per_minute"] = statistics.median(result["words_per_minute"])
        result["bleu"] = sacrebleu.corpus_bleu(outputs[name], [references], tokenize="none", force=True).score
        result["bleu_against_ensemble"] = sacrebleu.corpus_bleu(outputs[name], [outputs["ensemble"]], force=True,
                                                                tokenize="none").score
    print(f"{len(pairs)} sentences, beam {args.beam}, threshold {args.threshold}, {args.threads} threads, "
          f"batches of {decode.batch_sentences}, speed-ups {speedups.names()}; shrinking took {shrink_seconds:.1f} s")
    print("| model | parameters | cross-entropy (nats/token) | BLEU (tokenized) | BLEU vs the ensemble | words/min |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['parameters']:,} | {r['cross_entropy']:.4f} | {r['bleu']:.2f} | "
              f"{r['bleu_against_ensemble']:.2f} | {r['median_words_per_minute']:,.0f} |")
    write_json(args.out, {"machine": machine(args.threads), "system": str(args.system), "sentences": len(pairs),
                          "beam": args.beam, "threshold": args.threshold, "batch_sentences": decode.batch_sentences,
                          "speedups": speedups.names(), "shrink_seconds": shrink_seconds, "models": results})


if __name__ == "__main__":
    main()
