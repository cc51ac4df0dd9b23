"""Experiment: lattice MBR on the tuning set under several path scales alpha (the sharpness of the posteriors).

MERT's weights are scale-free for the 1-best, but the posteriors are computed under exp(alpha * score), so the same
alpha gives flat posteriors for one task's weights and sharp ones for another's. This builds the tuning sentences'
L under each alpha of --alphas (BuildLMatrix through Luigi: content-addressed artifacts beside the run's own),
then runs TuneMBR's p x r grid on each, and prints the tuning-set BLEU of the PBMT 1-best and of every alpha's best
point. Writes JSON. Reads a run's artifacts (work/<profile>/<task>), changes none.

    .venv/bin/python benchmarks/experiments/mbr_alpha.py --task ger-eng --alphas 0.25,0.5,1,2,4
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from common import machine  # noqa: E402
from pipeline.io import write_json  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", required=True)
    p.add_argument("--profile", default="medium")
    p.add_argument("--work-dir", default="work")
    p.add_argument("--alphas", default="0.25,0.5,1,2,4")
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)

    import luigi

    from lattices.lmatrix_shards import LMatrixStore
    from pipeline.decode.lmbr_tuning import ReweightedStore, lmbr_grid
    from pipeline.evaluation.bleu import corpus_bleu
    from tasks.lmatrix import lmatrix_for
    from tasks.mbr import TuneMBR

    common = {"task_name": args.task, "profile": args.profile, "work_dir": args.work_dir, "data_dir": "",
              "config_dir": str(REPO / "configs"), "processes": args.processes}
    tune = TuneMBR(**common)
    lmbr, target = tune.profile_config.lmbr, tune.config.target
    n = lmbr.tune_sentences
    references, fallback, translate = tune.tuning_mbr()
    pbmt_bleu = corpus_bleu(fallback, references, target).score
    print(f"{args.task}: PBMT 1-best on the first {n} tuning sentences: BLEU {pbmt_bleu:.2f}", flush=True)
    rows = []
    for alpha in (float(a) for a in args.alphas.split(",")):
        built = lmatrix_for(tune, alpha, -1, split=tune.config.splits.tune, sentences=n)
        luigi.build([built], local_scheduler=True, log_level="WARNING")
        store = LMatrixStore(sorted(built.artifact_dir().glob("shard-*.npz")))
        start = built.theta()
        points = []
        for point in lmbr_grid(start.p, start.r, (0.0,), lmbr.mbr_p_offsets(), lmbr.mbr_r_offsets()):
            theta = point.theta(lmbr.theta_convention, lmbr.theta_t)
            texts = translate(ReweightedStore(store, theta))
            points.append({"p": point.p, "r": point.r, "bleu": round(corpus_bleu(texts, references, target).score, 2)})
        best = max(points, key=lambda x: x["bleu"])
        rows.append({"alpha": alpha, "best": best, "at_start": points[0], "points": points})
        print(f"alpha {alpha:g}: best BLEU {best['bleu']:.2f} (p {best['p']:.3f}, r {best['r']:.3f}); at the PBMT's "
              f"p, r: {points[0]['bleu']:.2f}", flush=True)
    out = args.out or REPO / f"results/benchmarks/mbr_alpha_{args.profile}_{args.task}.json"
    write_json(out, {"benchmark": "mbr_alpha", "task": args.task, "profile": args.profile, "sentences": n,
                     "pbmt_bleu": round(pbmt_bleu, 2), "machine": machine(args.processes), "alphas": rows})
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
