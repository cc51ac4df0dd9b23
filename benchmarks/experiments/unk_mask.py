"""Experiment: the unconstrained LMBR systems (LNMT, LTNMT) with and without ``<unk>`` forbidden in the search.

The PBMT passes source words it cannot translate through to its lattices; in NMT target units they are ``<unk>``,
so L rewards ``<unk>`` n-grams and an unconstrained LMBR search writes ``<unk>`` chains that nothing restores
(the -lat systems give the lattice's words back; lattices/restore.py). With the mask (TokenMaskHook) the search
cannot write ``<unk>``. Decodes the tuning set (TuneLMBR's sentences, its chosen point) and the devtest set (the
system's decoding task, its tuned lambda and theta), reads the built artifacts of a run and changes none of them.
Reports BLEU, chrF2, the output/reference length, repeated 4-grams, lines with ``<unk>``, and paired bootstrap of
the masked system against the unmasked one; writes JSON.

    .venv/bin/python benchmarks/experiments/unk_mask.py --task chi-eng --system LNMT --threads 1
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from common import machine, output_scores  # noqa: E402
from pipeline.decode.beam_search import SearchSettings  # noqa: E402
from pipeline.decode.hooks import chain_factories, token_mask_factory  # noqa: E402
from pipeline.decode.lmbr_hook import lmbr_hook_factory  # noqa: E402
from pipeline.decode.lmbr_tuning import GridPoint, ReweightedStore  # noqa: E402
from pipeline.decode.translate import translate_lines  # noqa: E402
from pipeline.evaluation.significance import chrf2, paired_bootstrap  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402
from lattices.lmatrix_shards import LMatrixStore  # noqa: E402
from pipeline.vocab import UNK  # noqa: E402


def describe(texts: list[str], references: list[str], lang: str, seconds: float) -> dict:
    return {**output_scores(texts, references, lang), "chrf2": round(chrf2(texts, references), 2),
            "unk_lines": sum(UNK in t for t in texts), "seconds": round(seconds, 1)}


def tuning_set(common: dict, models_name: str, masked: bool) -> tuple[list[str], list[str], float]:
    """(outputs, references, seconds) of TuneLMBR's sentences at its chosen point."""
    from tasks.tuning import TuneLMBR, tuning_inputs

    task = TuneLMBR(models=models_name, **common)
    inputs = task.requires()
    lines, references, models, processor = tuning_inputs(task, inputs)
    point = GridPoint(**task.chosen())
    lmbr, decode = task.profile_config.lmbr, task.profile_config.decode
    nbest = point.nbest if point.nbest is not None else -1
    store = LMatrixStore(sorted(inputs["lmatrix"][point.alpha, nbest].artifact_dir().glob("shard-*.npz")))
    factory = lmbr_hook_factory(ReweightedStore(store, point.theta(lmbr.theta_convention, lmbr.theta_t)),
                                models.tgt_vocab.bos_id, vocab_size=len(models.tgt_vocab), gains=point.gains)
    if masked:
        factory = chain_factories([factory, token_mask_factory([models.tgt_vocab.unk_id])])
    settings = SearchSettings(beam=decode.beam, threshold=decode.threshold, length_penalty=decode.length_penalty,
                              max_length_a=decode.max_length_a, max_length_b=decode.max_length_b,
                              weight=point.nmt_lambda, patience=lmbr.patience)
    started = time.perf_counter()
    out = translate_lines(lines, models, settings, processor, source=None, batch_sentences=decode.batch_sentences,
                          sort=decode.sort, hook_factory=factory)
    return out.text, references, time.perf_counter() - started


def devtest(common: dict, system: str, split: str, masked: bool) -> tuple[list[str], list[str], float]:
    """(outputs, references, seconds) of the system's decoding task on `split`: its artifact when unmasked, a fresh
    decoding (into a temporary folder) with the mask."""
    import tasks

    task = getattr(tasks, f"Decode{system}")(split=split, variant="", **common)
    target = task.config.target
    references = list(read_lines(next((Path(common["work_dir"]) / common["profile"] / common["task_name"] /
                                       "tokenized").glob(f"{split}-*/raw.{target}.gz"))))
    if not masked:
        built = task.artifact_dir()
        return list(read_lines(built / f"translation.{target}")), references, 0.0
    plain = task.hook_factory

    def with_mask(models, *rest):
        return chain_factories([plain(models, *rest), token_mask_factory([models.tgt_vocab.unk_id])])

    task.hook_factory = with_mask
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="unk_mask-") as tmp:
        task.build_shard(Path(tmp), 0, 1)
        texts = list(read_lines(Path(tmp) / f"translation.{target}"))
    return texts, references, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", required=True)
    p.add_argument("--profile", default="medium")
    p.add_argument("--work-dir", default="work")
    p.add_argument("--system", default="LNMT", choices=("LNMT", "LTNMT"))
    p.add_argument("--splits", default="tune,devtest", help="tune, devtest or both")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from pipeline.config import load_task

    config = load_task(args.task)
    common = {"task_name": args.task, "profile": args.profile, "work_dir": args.work_dir, "data_dir": "",
              "config_dir": str(REPO / "configs"), "processes": args.threads}
    models_name = {"LNMT": "FNMT", "LTNMT": "TNMT"}[args.system]
    result = {"benchmark": "unk_mask", "task": args.task, "profile": args.profile, "system": args.system,
              "machine": machine(args.threads), "splits": {}}
    for split in args.splits.split(","):
        rows, outputs = {}, {}
        for masked in (False, True):
            if split == "tune":
                texts, refs, seconds = tuning_set(common, models_name, masked)
            else:
                texts, refs, seconds = devtest(common, args.system, config.splits.devtest, masked)
            name = f"{args.system}{' -unk' if masked else ''}"
            outputs[name], rows[name] = texts, describe(texts, refs, config.target, seconds)
            print(split, name, rows[name], flush=True)
        names = list(outputs)
        rows["bootstrap"] = paired_bootstrap((names[0], outputs[names[0]]), [(names[1], outputs[names[1]])], refs,
                                             config.target)
        print(split, rows["bootstrap"], flush=True)
        result["splits"][split] = rows
    out = args.out or REPO / f"results/benchmarks/unk_mask_{args.profile}_{args.task}_{args.system}.json"
    write_json(out, result)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
