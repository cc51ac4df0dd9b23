"""Smoke tests of hf_speed: our decoder driving a `transformers` model against its `generate`, with and without L.

Tiny random models built here (no network): a MarianMT and an M2M100 model with a SentencePiece vocabulary, fed raw
text (tests/pipeline/nmt/tiny_hf.py), and a Transformer checkpoint of ours, exported by the benchmark and fed BPE.
The two decoders run the same search, so every 1-best must agree.
"""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from tests.pipeline.nmt.tiny_hf import FAMILIES, synthetic_lines, tiny_family  # noqa: E402

SENTENCES = 6
QUICK = ("--sentences", str(SENTENCES), "--batch", "4", "--beam", "4", "--runs", "1", "--threads", "1",
         "--evidence-beam", "4", "--profile", "tiny")


def check_report(report: dict, sentences: int = SENTENCES) -> None:
    assert report["benchmark"] == "hf_speed" and report["machine"]["cpu_count"] >= 1
    assert report["sentences"] == sentences and report["beam"] == 4 and report["batch_sentences"] == 4
    assert [r["decoder"] for r in report["per_run"]] == ["ours", "generate", "ours_lmbr"]
    assert all(r["seconds"] > 0 and "load_at_start" in r for r in report["per_run"])
    assert all(0 < r["cpu_seconds"] and "steal_s" in r for r in report["per_run"])
    for name in ("ours", "generate", "ours_lmbr"):
        assert report["results"][name]["median_wpm"] > 0
    assert report["ours_over_generate"] > 0 and len(report["ratio_per_round"]) == 1
    assert report["ratio_per_round_median"] == report["ratio_per_round"][0]
    assert report["same_1best"] == sentences  # the same search on the same model
    assert report["results"]["ours"]["target_tokens"] == report["results"]["generate"]["target_tokens"]
    assert report["results"]["ours_lmbr"]["row_steps"] > 0
    lmatrix = report["lmbr"]["lmatrix"]
    assert lmatrix["kind"].startswith("synthetic") and lmatrix["rows"] > 0 and lmatrix["nnz"] > 0
    assert set(report["lmbr_overhead"]) == {"total_time", "per_row_step"}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_hf_speed_on_a_tokenizers_model_reads_raw_text(run_benchmark, tmp_path, family):
    folder = tiny_family(family, tmp_path / family)
    source = tmp_path / "source.de"
    source.write_text("\n".join(synthetic_lines(SENTENCES + 2, seed=5)) + "\n", encoding="utf-8")
    report = run_benchmark("hf_speed", "--model", str(folder), "--source", str(source), *QUICK,
                           "--max-load", "1000")
    check_report(report)
    assert report["model"]["model_type"] == {"marian": "marian", "m2m100": "m2m_100"}[family]
    assert "tokenizer" in report["model"]["input"]
    assert not report["taken_on_a_loaded_machine"] and all(r["quiet"] for r in report["per_run"])


def tiny_checkpoint(folder: Path) -> Path:
    """A random Transformer checkpoint of ours over BPE-like vocabularies, EOS made likely (see test_export_hf)."""
    import torch

    from pipeline.nmt.checkpoint import save_checkpoint
    from pipeline.nmt.transformer import TransformerConfig, TransformerModel
    from pipeline.vocab import Vocabulary

    src, tgt = Vocabulary.build([["s1", "s2@@", "s3", "s4@@", "s5"]]), Vocabulary.build([[f"t{i}" for i in range(9)]])
    torch.manual_seed(3)
    config = TransformerConfig(src_vocab_size=len(src), tgt_vocab_size=len(tgt), pad_id=tgt.pad_id, bos_id=tgt.bos_id,
                               eos_id=tgt.eos_id, layers=2, model_size=32, heads=4, ff_size=48, max_positions=64)
    model = TransformerModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
        model.decoder_norm.weight[0], model.decoder_norm.bias[0] = 0.0, 1.0
        model.tgt_embed.weight[:, 0] = 0.0
        model.tgt_embed.weight[tgt.eos_id, 0] = 1.0
    folder.mkdir(parents=True)
    src.save(folder / "src.json")
    tgt.save(folder / "tgt.json")
    return save_checkpoint(folder / "model.pt", config, model.state_dict(),
                           {"source": "src.json", "target": "tgt.json"})


def test_hf_speed_exports_our_checkpoint_and_feeds_it_bpe_and_marks_a_loaded_machine(run_benchmark, tmp_path):
    checkpoint = tiny_checkpoint(tmp_path / "model")
    source = tmp_path / "bpe.de"
    source.write_text("s1 s2@@ s3\n\ns4@@ s5 s1 s1\ns3\ns2@@ s5 s4@@ s1 s3\ns5 s5\ns1 s4@@ s3 s2@@ s2@@ s1 s5\n",
                      encoding="utf-8")
    report = run_benchmark("hf_speed", "--checkpoint", str(checkpoint), "--source", str(source), *QUICK,
                           "--max-load", "0", "--load-timeout", "0")
    check_report(report)
    assert report["model"]["model_type"] == "blenderbot" and "BPE" in report["model"]["input"]
    assert report["model"]["target_vocab_size"] == 9 + 4  # t0-t8 and the specials: the width of the pipeline's L
    assert report["data"]["source_words"] == 2 + 3 + 1 + 3 + 2 + 4  # BPE merged; the empty line skipped
    assert 0 < report["ours_1best_at_length_limit"] < SENTENCES  # generate's limit is ours
    assert report["taken_on_a_loaded_machine"] and report["loaded_runs"] == 3
    assert all(not r["quiet"] and r["waited_s"] == 0 for r in report["per_run"])
