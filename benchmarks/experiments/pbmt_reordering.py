"""Benchmark: what the lexicalised reordering model costs and gains, against the distance-based PBMT of one task.

It takes two DecodePBMT artifacts of the same split: ``--baseline`` (the profile's ``[pbmt] reordering`` =
"distance") and ``--reordering`` ("msd-bidirectional-fe"), and reports:

- quality: cased BLEU and chrF2 of each artifact's translation against the raw reference, and sacrebleu's paired
  bootstrap (1000 resamples) of the reordering system against the baseline;
- speed: both systems decode the same first ``--sentences`` sentences again, each with its own phrase table, LM,
  MERT weights and decoder settings (from its signature; ``--stack-limit`` overrides the stack), writing lattices
  and n-best lists as the stage does, alternately ``--runs`` times in ``--processes`` processes: the median words
  per minute of each, their ratio, and the lattice sizes.

    .venv/bin/python benchmarks/experiments/pbmt_reordering.py --baseline work/medium/eng-ger/pbmt/newstest2016-<hash> \\
        --reordering work/medium/eng-ger/pbmt/newstest2016-<hash> --sentences 300 --runs 3 --stack-limit 200
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import kenlm  # noqa: E402

from pipeline.config import load_task  # noqa: E402
from pipeline.evaluation.bleu import corpus_bleu  # noqa: E402
from pipeline.evaluation.significance import chrf2, paired_bootstrap  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402
from pipeline.smt.decoder import Decoder, DecoderSettings  # noqa: E402
from pipeline.smt.parallel import Job, decode_all  # noqa: E402
from pipeline.smt.phrase_table import FastPhraseTable  # noqa: E402
from pipeline.smt.weights import load_weights  # noqa: E402


def artifact_inputs(folder: Path, work_dir: Path) -> tuple[dict, dict[str, Path]]:
    """A DecodePBMT artifact's parameters and its input folders by stage."""
    params = json.loads((folder / "signature.json").read_text(encoding="utf-8"))["params"]
    return params, {Path(p).parts[2]: work_dir / p for p in params["inputs"]}  # <profile>/<task>/<stage>/<name>


def raw_reference(params: dict, work_dir: Path) -> list[str]:
    """The split's raw reference lines (TokenizeSplit's raw.<tgt>.gz; the first N, as the artifact decoded)."""
    from tasks.data import TokenizeSplit

    split = TokenizeSplit(task_name=params["task"], profile=params["profile"], work_dir=str(work_dir),
                          split=params["split"])
    return list(read_lines(split.artifact_dir() / f"raw.{split.config.target}.gz"))


def decoder_of(params: dict, inputs: dict[str, Path], sentences: list[list[str]], stack_limit: int) -> Decoder:
    settings = dict(params["decoder"])
    if stack_limit > 0:
        settings["stack_limit"] = stack_limit
    table = FastPhraseTable.load(inputs["phrases"] / "phrase-table.npz").filter(sentences)
    return Decoder(table, kenlm.Model(str(inputs["lm"] / "lm.bin")),
                   load_weights(inputs["mert"] / "weights.json").weights, DecoderSettings(**settings))


def timed(decoder: Decoder, sentences: list[list[str]], nbest: int, processes: int) -> tuple[float, int, int]:
    """Seconds to decode every sentence with lattices and n-best lists, and the lattices' states and arcs."""
    with tempfile.TemporaryDirectory(prefix="pbmt-reordering-") as tmp:
        started = time.perf_counter()
        results = decode_all(Job(decoder, sentences, nbest=nbest, lattice_dir=Path(tmp)), processes, desc="pbmt")
        seconds = time.perf_counter() - started
    return seconds, sum(r.lattice_states for r in results), sum(r.lattice_arcs for r in results)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", type=Path, required=True, help="DecodePBMT artifact, distance-based reordering")
    p.add_argument("--reordering", type=Path, required=True, help="DecodePBMT artifact, lexicalised reordering")
    p.add_argument("--work-dir", type=Path, default=REPO / "work")
    p.add_argument("--sentences", type=int, default=300, help="first N sentences decoded for speed (0: none)")
    p.add_argument("--stack-limit", type=int, default=0, help="stack of the speed runs (0: the artifacts')")
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", type=Path, default=REPO / "results/benchmarks-local/pbmt_reordering.json")
    args = p.parse_args(argv)

    systems = {"distance": args.baseline, "msd-bidirectional-fe": args.reordering}
    found = {name: artifact_inputs(folder, args.work_dir) for name, folder in systems.items()}
    (base_params, _), (params, inputs) = found["distance"], found["msd-bidirectional-fe"]
    if (base_params["task"], base_params["split"]) != (params["task"], params["split"]):
        raise SystemExit("the two artifacts must decode the same task and split")
    task = load_task(params["task"])
    references = raw_reference(params, args.work_dir)
    translations = {name: list(read_lines(folder / f"translation.{task.target}")) for name, folder in systems.items()}
    references = references[:len(translations["distance"])]
    quality = {name: {"bleu": round(corpus_bleu(hyps, references, task.target).score, 2),
                      "chrf2": round(chrf2(hyps, references), 2)} for name, hyps in translations.items()}
    significance = paired_bootstrap(("distance", translations["distance"]),
                                    [("msd-bidirectional-fe", translations["msd-bidirectional-fe"])], references,
                                    task.target)
    print(f"{params['task']} {params['split']} ({len(references)} sentences): " + ", ".join(
        f"{name} BLEU {q['bleu']:.2f} chrF2 {q['chrf2']:.2f}" for name, q in quality.items()))
    for record in significance:
        print(f"  {record['metric']}: {record['score']:.2f} vs {record['baseline_score']:.2f}, "
              f"p {record['p_value']:.4f}, 95% interval +-{record['ci']:.2f}")

    speed: dict = {}
    if args.sentences > 0:
        words_file = inputs["truecased"] / f"words.{task.source}.gz"
        sentences = [line.split() for line in read_lines(words_file)][:args.sentences]
        words = sum(map(len, sentences))
        decoders = {name: decoder_of(*found[name], sentences, args.stack_limit) for name in systems}
        runs: dict[str, list] = {name: [] for name in systems}
        for _ in range(args.runs):
            for name, decoder in decoders.items():  # alternately, so that both see the same machine
                runs[name].append(timed(decoder, sentences, found[name][0]["nbest"], args.processes))
        for name, timings in runs.items():
            seconds = statistics.median(t[0] for t in timings)
            speed[name] = {"seconds": [round(t[0], 3) for t in timings], "median_seconds": round(seconds, 3),
                           "words_per_minute": round(60 * words / seconds, 1), "lattice_states": timings[0][1],
                           "lattice_arcs": timings[0][2],
                           "stack_limit": decoders[name].settings.stack_limit}
        speed["ratio"] = round(speed["msd-bidirectional-fe"]["words_per_minute"]
                               / speed["distance"]["words_per_minute"], 3)
        print(f"speed, {len(sentences)} sentences ({words} words), {args.processes} processes, median of "
              f"{args.runs}: " + ", ".join(f"{name} {speed[name]['words_per_minute']:.0f} wpm "
                                            f"({speed[name]['lattice_arcs']} lattice arcs)" for name in systems)
              + f"; ratio {speed['ratio']:.3f}")
    write_json(args.out, {"machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
                          "task": params["task"], "split": params["split"], "sentences": len(references),
                          "artifacts": {name: str(folder) for name, folder in systems.items()},
                          "quality": quality, "significance": significance, "speed": speed,
                          "speed_settings": {"sentences": args.sentences, "processes": args.processes,
                                             "runs": args.runs, "stack_limit": args.stack_limit or None}})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
