"""Benchmark: the accelerated hybrid pipeline end to end against accelerated FNMT (paper, section 4.3 and Figure 1).

LNMT's three phases run one after the other on the same sentences, as a deployed hybrid would: phrase-based
decoding writing lattices (the variant's PBMT limits, one process), posteriors + L over the variant's evidence space
(the L built directly under the theta the pipeline uses: TuneLMBR's p and r when the profile tunes), and the batched
beam decoder with L added at every step (the tuned lambda), free, and where the variant searches anchored
(`tuned_search`, TuneSearch's choice) also anchored: acceptors of the same lattices over the same evidence space,
each sentence searched free and inside its lattice, the better kept (pipeline/decode/anchored.py); the two LNMT
searches are reported side by side. FNMT decodes the same sentences with the same model (the variant's: the
shrunken ensemble, or the first member) and search. Everything is located as the Luigi artifacts of DecodeFNMT /
DecodeLNMT(variant) under --work-dir (``--build`` builds what is missing), so the settings are the pipeline's, and
each run's outputs are compared with those artifacts' (``identical_outputs``, for the search the artifact used). FNMT
and LNMT alternate within every run; the medians over --runs are reported, with words per minute on source words and
each LNMT search's share of FNMT's words per minute (paper: 52%); "posteriors + L" includes the anchored search's
acceptors.

    .venv/bin/python benchmarks/accelerated_pipeline.py --task eng-ger --work-dir work --runs 3
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see beam_speed.py

import torch  # noqa: E402

from common import OWN_RESULTS, REPO, artifact_arguments, machine  # noqa: E402
from lattices.acceptor import build_acceptor_shard, load_acceptors  # noqa: E402
from lattices.lmatrix_shards import LMatrixStore, build_lmatrix_shard  # noqa: E402
from lattices.theta import Theta  # noqa: E402
from pipeline.decode.anchored import translate_anchored  # noqa: E402
from pipeline.decode.beam_search import SearchSettings  # noqa: E402
from pipeline.decode.lmbr_hook import lmbr_hook_factory  # noqa: E402
from pipeline.decode.translate import load_models, translate_lines  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402
from pipeline.nmt.system import system_members  # noqa: E402
from pipeline.smt.decoder import Decoder  # noqa: E402
from pipeline.smt.parallel import Job, decode_all  # noqa: E402
from pipeline.smt.phrase_table import FastPhraseTable  # noqa: E402
from pipeline.smt.weights import load_weights  # noqa: E402
from pipeline.text import TextProcessor, get_tokenizer  # noqa: E402


class Pipelines:
    """Everything both systems need, loaded once from the artifacts of DecodeFNMT and DecodeLNMT."""

    def __init__(self, args: argparse.Namespace) -> None:
        import kenlm
        import luigi

        from tasks.data import load_truecaser
        from tasks.decode import DecodeFNMT, DecodeLNMT
        from tasks.smt import TABLE_FAST, decoder_settings, split_words

        common = {"task_name": args.task, "profile": args.profile, "work_dir": str(args.work_dir),
                  "config_dir": str(args.config_dir), "processes": 1}
        self.fnmt = DecodeFNMT(split=args.split, variant=args.variant, **common)
        self.lnmt = DecodeLNMT(split=args.split, variant=args.variant, **common)
        if args.build and not (self.fnmt.complete() and self.lnmt.complete()):
            luigi.build([self.fnmt, self.lnmt], local_scheduler=True, log_level="WARNING")
        missing = [str(t) for t in (self.fnmt, self.lnmt) if not t.complete()]
        if missing:
            raise SystemExit(f"not built yet: {', '.join(missing)} (pass --build)")
        config, lmbr = self.lnmt.config, self.lnmt.profile_config.lmbr
        self.lmatrix = self.lnmt.lmatrix()  # the L of the alpha LNMT decodes with
        self.pbmt = self.lmatrix.requires()["lattices"]
        pbmt_inputs = self.pbmt.requires()
        self.words = split_words(pbmt_inputs["words"].artifact_dir(), config.source)
        self.bpe_lines = list(read_lines(self.lnmt.requires()["subwords"].artifact_dir() / f"bpe.{config.source}.gz"))
        if args.sentences:
            self.words, self.bpe_lines = self.words[:args.sentences], self.bpe_lines[:args.sentences]
        self.table = FastPhraseTable.load(pbmt_inputs["phrases"].artifact_dir() / TABLE_FAST).filter(self.words)
        self.lm = kenlm.Model(str(pbmt_inputs["lm"].artifact_dir() / "lm.bin"))
        self.weights = load_weights(pbmt_inputs["weights"].artifact_dir() / "weights.json").weights
        self.settings = decoder_settings(self.pbmt)
        self.pbmt_nbest = self.pbmt.nbest()
        self.alpha = self.lmatrix.alpha or self.pbmt.profile_config.pbmt.alpha
        lmatrix_inputs = self.lmatrix.requires()
        self.codes = lmatrix_inputs["codes"].artifact_dir() / f"codes.{config.target}"
        self.vocab = lmatrix_inputs["vocab"].artifact_dir() / f"vocab.{config.target}.json"
        self.lmbr, self.evidence = lmbr, self.lmatrix.nbest()
        if lmbr.tune:
            chosen = self.lnmt.chosen()
            self.theta = Theta.from_p_r(chosen["p"], chosen["r"], lmbr.theta_convention, lmbr.theta_t)
        else:
            self.theta = self.lmatrix.theta()
        system = self.lnmt.system_task().artifact_dir() / "system.json"  # the shrunken ensemble where it is used
        variant = self.lnmt.variant_config()
        first_only = variant is not None and variant.single_model and not self.lnmt.shrunken()
        self.models = load_models(system_members(system)[:1] if first_only else [system], "cpu")
        self.searches = ["free", "anchored"] if self.lnmt.search_form() == "anchored" else ["free"]
        tokenizer = get_tokenizer(config.languages[config.target].tokenizer, config.target,
                                  Path(self.lnmt.cache_dir) / "tokenizers")
        self.processor = TextProcessor(tokenizer=tokenizer, truecaser=load_truecaser(
            self.lnmt.requires()["truecaser"].artifact_dir(), config.target), bpe=None)
        beam, threshold = self.lnmt.search()
        decode = self.lnmt.profile_config.decode
        self.decode = decode
        self.search = SearchSettings(beam=beam, threshold=threshold, length_penalty=decode.length_penalty,
                                     max_length_a=decode.max_length_a, max_length_b=decode.max_length_b,
                                     early_exit=decode.early_exit)  # FNMT's; LNMT's as DecodeLNMT sets it below
        self.nmt_lambda, self.gains = self.lnmt.nmt_lambda(), self.lnmt.gains()
        self.lnmt_search = dataclasses.replace(self.search, weight=self.nmt_lambda, patience=lmbr.patience,
                                               early_exit=False)
        self.source_words = sum(map(len, self.words))
        target = config.target
        self.expected = {name: list(read_lines(task.artifact_dir() / f"bpe.{target}"))[:len(self.bpe_lines)]
                         for name, task in (("FNMT", self.fnmt), (f"LNMT {self.searches[-1]}", self.lnmt))}

    def neural(self, search: SearchSettings, hook_factory=None) -> tuple[float, list[str]]:
        started = time.perf_counter()
        result = translate_lines(self.bpe_lines, self.models, search,
                                 self.processor, source=None, batch_sentences=self.decode.batch_sentences,
                                 sort=self.decode.sort, hook_factory=hook_factory, streaming=self.decode.streaming,
                                 refill=self.decode.refill)
        return time.perf_counter() - started, result.bpe

    def run_fnmt(self) -> tuple[dict[str, float], list[str]]:
        seconds, bpe = self.neural(self.search)
        return {"neural decoding": seconds}, bpe

    def run_lnmt(self, search: str = "free") -> tuple[dict[str, float], list[str]]:
        with tempfile.TemporaryDirectory(prefix="accelerated-") as tmp:
            started = time.perf_counter()
            decoder = Decoder(self.table, self.lm, self.weights, self.settings)  # a fresh cache of scored options
            decode_all(Job(decoder, self.words, nbest=self.pbmt_nbest, lattice_dir=Path(tmp) / "lattices"), 1,
                       desc="pbmt")
            decoded = time.perf_counter()
            paths = [Path(tmp) / "lattices" / f"{i}.fst" for i in range(len(self.words))]
            shard = Path(tmp) / "shard-0.npz"
            build_lmatrix_shard(paths, self.codes, self.vocab, self.theta, self.alpha, self.lmbr.semiring,
                                self.evidence, shard, self.lmbr.order, self.lmbr.engine,
                                self.lmbr.max_evidence_states)
            store, sentences = LMatrixStore([shard]), list(range(len(self.bpe_lines)))
            if search == "anchored":  # the lattice copies' acceptors, over the same evidence space
                build_acceptor_shard(paths, self.codes, self.vocab, self.evidence, Path(tmp) / "acceptors.npz",
                                     self.lmbr.engine, self.lmbr.max_evidence_states)
                acceptors = load_acceptors([Path(tmp) / "acceptors.npz"])
            built = time.perf_counter()
            bos, size = self.models.tgt_vocab.bos_id, len(self.models.tgt_vocab)

            def hooks(ids):
                return lmbr_hook_factory(store, bos, sentence_ids=ids, vocab_size=size, gains=self.gains)

            if search == "anchored":
                clock = time.perf_counter()
                result, _ = translate_anchored(
                    self.bpe_lines, self.models, self.lnmt_search, self.processor, hooks, sentences,
                    [acceptors.get(i) for i in sentences], batch_sentences=self.decode.batch_sentences,
                    sort=self.decode.sort, streaming=self.decode.streaming, refill=self.decode.refill)
                neural, bpe = time.perf_counter() - clock, result.bpe
            else:
                neural, bpe = self.neural(self.lnmt_search, hooks(sentences))
        return {"phrase-based decoding": decoded - started, "posteriors + L": built - decoded,
                "neural decoding": neural}, bpe


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    artifact_arguments(p, "eng-ger")
    p.add_argument("--split", default="newstest2016", help="a devtest split of the task")
    p.add_argument("--variant", default="accelerated")
    p.add_argument("--sentences", type=int, default=0, help="first N sentences (0: the whole split)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="torch threads (PBMT and posteriors use one process)")
    p.add_argument("--build", action="store_true", help="build missing artifacts with Luigi first")
    p.add_argument("--out", type=Path, default=OWN_RESULTS / "accelerated_pipeline.json")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    pipelines = Pipelines(args)
    words = pipelines.source_words
    systems = [("FNMT", pipelines.run_fnmt), *((f"LNMT {search}", lambda search=search: pipelines.run_lnmt(search))
                                               for search in pipelines.searches)]
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in systems}
    identical: dict[str, bool | None] = {name: True if name in pipelines.expected else None for name, _ in systems}
    for r in range(args.runs):
        for name, run in systems:
            phases, bpe = run()
            phases["total"] = sum(phases.values())
            runs[name].append(phases)
            if identical[name] is not None:  # (the search of the pipeline's artifact)
                identical[name] &= bpe == pipelines.expected[name]
            print(f"run {r + 1} {name}: " + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items())
                  + f", {60 * words / phases['total']:.0f} wpm", file=sys.stderr)
    medians = {name: {k: round(statistics.median(run[k] for run in rs), 3) for k in rs[0]} for name, rs in runs.items()}
    wpm = {name: round(60 * words / m["total"], 1) for name, m in medians.items()}
    share = {name: round(statistics.median(f["total"] / l["total"] for f, l in zip(runs["FNMT"], runs[name])), 4)
             for name in runs if name != "FNMT"}
    print(f"{len(pipelines.words)} sentences, {words} source words, {args.threads} torch thread(s), beam "
          f"{pipelines.search.beam}, {pipelines.decode.batch_sentences} sentences per batch, PBMT "
          f"{pipelines.settings}, evidence space {pipelines.evidence or 'full lattice'}")
    for name in runs:
        print(f"{name}: " + ", ".join(f"{k} {v:.2f} s" for k, v in medians[name].items())
              + f" -> {wpm[name]:.0f} wpm (identical outputs to the pipeline's: {identical[name]})")
    for name, value in share.items():
        print(f"accelerated {name} runs at {100 * value:.1f}% of accelerated FNMT's words per minute (median of "
              f"{args.runs} runs; paper: 52%)")
    write_json(args.out, {
        "benchmark": "accelerated_pipeline", "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "task": args.task, "profile": args.profile, "split": args.split, "variant": args.variant,
        "sentences": len(pipelines.words), "source_words": words, "runs": args.runs,
        "beam": pipelines.search.beam, "threshold": pipelines.search.threshold,
        "batch_sentences": pipelines.decode.batch_sentences, "pbmt": pipelines.settings.__dict__,
        "pbmt_processes": 1, "pbmt_nbest": pipelines.pbmt_nbest, "evidence_nbest": pipelines.evidence,
        "nmt_lambda": pipelines.nmt_lambda, "theta": pipelines.theta.signature(), "median_seconds": medians,
        "words_per_minute": wpm, "lnmt_share_of_fnmt_wpm": share, "per_run": runs,
        "identical_outputs": identical, "machine": {**machine(args.threads), "load_average_at_end": os.getloadavg()}})
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
