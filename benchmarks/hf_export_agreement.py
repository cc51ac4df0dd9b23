"""Benchmark: does a Transformer of ours, exported to the `transformers` format (pipeline/nmt/export_hf.py), translate
as ours does? The 1-best of `generate` on the exported model against our decoder's on our checkpoint.

Exports --model (a checkpoint or an artifact folder's model.pt) to a Blenderbot folder, loads it with
`AutoModelForSeq2SeqLM.from_pretrained`, and translates the first --sentences BPE lines of --source three ways, beam
--beam, no length penalty, each sentence limited to the profile's a x |source| + b output tokens:

- `ours`: our batched beam search with the profile's [decode] settings (the paper's EOS policy, early exit);
- `ours_full_beam`: the same with `generate`'s EOS policy (full_beam);
- `generate`: `model.generate(num_beams, length_penalty=0, early_stopping=True)`, one sentence at a time.

It reports how many 1-best outputs of `generate` equal each of ours (as token ids), and where they differ whether
`generate`'s output scores higher or lower under our model (a search difference) or the same (a tie or rounding).
Needs the `hf` extra.

    .venv/bin/python benchmarks/hf_export_agreement.py --model work/medium/ger-eng/nmt-average/transformer-seed1-*/model.pt \
        --source work/medium/ger-eng/subwords/newstest2016-*/bpe.de.gz --sentences 500 --threads 2
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OWN_RESULTS, REPO, machine, source_ids  # noqa: E402
from pipeline.config import load_profile  # noqa: E402
from pipeline.decode import SearchSettings, decode_sources  # noqa: E402
from pipeline.decode.scores import max_output_lengths  # noqa: E402
from pipeline.decode.translate import load_models  # noqa: E402
from pipeline.io import write_json  # noqa: E402
from pipeline.nmt.export_hf import ExportedVocabulary, export_checkpoint  # noqa: E402

import torch  # noqa: E402


def checkpoint_path(model: Path) -> Path:
    """A checkpoint file, or the model.pt of an artifact folder."""
    return model / "model.pt" if model.is_dir() else model


def sequence_score(model, source: list[int], target: list[int]) -> float:
    """log P(target + EOS | source) under our model (teacher forcing), in float64 sums."""
    src = torch.tensor([source])
    tgt_in = torch.tensor([[model.bos_id] + target])
    gold = torch.tensor(target + [model.eos_id])
    log_probs = torch.log_softmax(model(src, torch.tensor([len(source)]), tgt_in)[0].double(), dim=-1)
    return float(log_probs.gather(1, gold[:, None]).sum())


def generate_one_best(theirs, vocab: ExportedVocabulary, sources: list[list[int]], src_vocab,
                      limits: list[int], beam: int) -> list[list[int]]:
    """generate's 1-best target ids (ours, without BOS and EOS) for each source (our ids, EOS last)."""
    out = []
    for source, limit in zip(sources, limits):
        subwords = [src_vocab.tokens[i] for i in source[:-1]]
        ids = torch.tensor([vocab.encode_source(subwords)])
        generated = theirs.generate(input_ids=ids, attention_mask=torch.ones_like(ids), num_beams=beam,
                                    length_penalty=0.0, early_stopping=True, max_new_tokens=limit, do_sample=False)
        tokens = generated[0, 1:].tolist()
        eos = vocab.target.eos_id
        out.append(tokens[:tokens.index(eos)] if eos in tokens else tokens)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", type=Path, required=True, help="our Transformer checkpoint, or an artifact folder")
    p.add_argument("--source", required=True, help="BPE source lines")
    p.add_argument("--profile", default="medium", help="the decoding settings (output limits, early exit)")
    p.add_argument("--sentences", type=int, default=500)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=OWN_RESULTS / "hf_export_agreement.json")
    args = p.parse_args(argv)
    from transformers import AutoModelForSeq2SeqLM

    torch.set_num_threads(args.threads)
    decode = load_profile(args.profile).decode
    loaded = load_models([checkpoint_path(args.model)], "cpu")
    ours_model = loaded.ensemble.models[0].eval()
    ids, words, data = source_ids(argparse.Namespace(source=args.source), loaded.src_vocab, args.sentences)
    lengths = torch.tensor([len(s) for s in ids])
    limits = max_output_lengths(lengths, decode.max_length_a, decode.max_length_b).tolist()
    results: dict[str, Any] = {}
    one_best: dict[str, list[list[int]]] = {}
    with torch.inference_mode():
        for name, full_beam in (("ours", False), ("ours_full_beam", True)):
            settings = SearchSettings(beam=args.beam, max_length_a=decode.max_length_a,
                                      max_length_b=decode.max_length_b, early_exit=decode.early_exit and not full_beam,
                                      full_beam=full_beam)
            started = time.perf_counter()
            nbest = decode_sources(ours_model, ids, settings, batch_sentences=16, sort=True)
            one_best[name] = [list(hyps[0].tokens) for hyps in nbest]
            results[name] = {"seconds": round(time.perf_counter() - started, 2)}
            print(f"{name}: {results[name]['seconds']} s", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            folder = export_checkpoint(checkpoint_path(args.model), Path(tmp) / "hf")
            theirs = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
            vocab = ExportedVocabulary.load(folder)
            started = time.perf_counter()
            one_best["generate"] = generate_one_best(theirs, vocab, ids, loaded.src_vocab, limits, args.beam)
        results["generate"] = {"seconds": round(time.perf_counter() - started, 2)}
        eos = ours_model.eos_id
        for name in ("ours", "ours_full_beam"):
            same = differ_higher = differ_lower = differ_level = 0
            for source, mine, theirs_best in zip(ids, one_best[name], one_best["generate"]):
                mine = [t for t in mine if t != eos]
                if mine == theirs_best:
                    same += 1
                    continue
                delta = sequence_score(ours_model, source, theirs_best) - sequence_score(ours_model, source, mine)
                differ_higher += delta > 1e-4
                differ_lower += delta < -1e-4
                differ_level += abs(delta) <= 1e-4
            results[name].update({"same_1best": same, "same_1best_share": round(same / len(ids), 4),
                                  "generate_scores_higher": differ_higher, "generate_scores_lower": differ_lower,
                                  "level_scores": differ_level})
            print(f"generate's 1-best equals {name}'s on {same} of {len(ids)} sentences", file=sys.stderr)
    write_json(args.out, {"benchmark": "hf_export_agreement", "machine": machine(args.threads), "beam": args.beam,
                          "profile": args.profile, "model": str(args.model), "data": data,
                          "sentences": len(ids), "results": results})
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
