"""Lattice MBR (Tromble et al. 2008) of a split: the reference for what L alone can do, with no NMT model.

Each sentence's translation is the string of its evidence space with the highest expected linear gain under L
(lattices/mbr.py, exact over the acceptor of BuildAcceptors and the L of BuildLMatrix, theta from the PBMT's
tune-set precisions). A sentence whose lattice accepts nothing keeps the PBMT 1-best; the count is in the stats.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lattices.lmatrix import LMatrixStore
from lattices.mbr import lattice_mbr
from pipeline.io import read_lines, write_lines
from pipeline.text import TextProcessor, get_tokenizer
from pipeline.vocab import Vocabulary
from tasks.base import PipelineTask
from tasks.data import BuildVocab, TrainTruecaser, load_truecaser
from tasks.lattices import BuildAcceptors, BuildLMatrix
from tasks.smt import DecodePBMT
from tasks.variants import VariantTask


class DecodeLatticeMBR(VariantTask):
    """MBR: translation.<target> (detokenized) and bpe.<target> of the lattice MBR strings of a split."""

    stage = "lattice-mbr"
    system = "MBR"

    def label(self) -> str:
        return f"{self.system}-{super().label()}"

    def requires(self) -> dict[str, PipelineTask]:
        return {"acceptors": self.clone(BuildAcceptors), "lmatrix": self.clone(BuildLMatrix),
                "pbmt": self.clone(DecodePBMT), "vocab": self.clone(BuildVocab),
                "truecaser": self.clone(TrainTruecaser)}

    def params(self) -> dict[str, Any]:
        return {"system": self.system, "split": self.split, **self.variant_params()}

    def build(self, out: Path) -> dict[str, Any]:
        target, inputs = self.config.target, self.requires()
        started = time.perf_counter()
        vocab = Vocabulary.load(inputs["vocab"].artifact_dir() / f"vocab.{target}.json")
        acceptors = inputs["acceptors"].acceptors()
        store = LMatrixStore(sorted(inputs["lmatrix"].artifact_dir().glob("shard-*.npz")))
        pbmt = list(read_lines(inputs["pbmt"].artifact_dir() / f"translation.{target}"))
        tokenizer = get_tokenizer(self.config.languages[target].tokenizer, target, Path(self.cache_dir) / "tokenizers")
        processor = TextProcessor(tokenizer=tokenizer, truecaser=load_truecaser(inputs["truecaser"].artifact_dir(),
                                                                                target), bpe=None)
        texts, subwords, fallback = [], [], []
        for line in range(len(pbmt)):
            acceptor = acceptors.get(line)
            result = None
            if acceptor is not None and line in store:
                result = lattice_mbr(acceptor, store.get([line])[0], vocab.bos_id, vocab.eos_id)
            if result is None:
                fallback.append(line + 1)
                texts.append(pbmt[line])
                subwords.append("")
                continue
            pieces = vocab.decode(list(result.tokens))
            subwords.append(" ".join(pieces))
            texts.append(processor.postprocess(pieces))
        write_lines(out / f"translation.{target}", texts)
        write_lines(out / f"bpe.{target}", subwords)
        return {"sentences": len(texts), "pbmt_fallback_lines": fallback,
                "timings": {"lattice_mbr": round(time.perf_counter() - started, 3)}}
