"""CTranslate2 scores a batch with the log-probabilities of our Transformer, from the exported weights."""
import pytest
import torch

from pipeline.nmt.token_batches import collate
from pipeline.nmt.checkpoint import save_checkpoint
from pipeline.nmt.export_ct2 import export_checkpoint, export_model
from pipeline.nmt.greedy import translate_ids
from tests.pipeline.nmt.conftest import digit_data, make_model

ctranslate2 = pytest.importorskip("ctranslate2")


def our_scores(model, vocab, sources, targets):
    """Per-token log-probabilities of targets + EOS, like CTranslate2's score_batch."""
    batch = collate([vocab.encode(s) for s in sources], [vocab.encode(t) for t in targets], vocab, vocab)
    with torch.no_grad():
        log_probs = model.score(batch.src, batch.src_lengths, batch.tgt_in)
    return [log_probs[i, torch.arange(n), batch.tgt_out[i, :n]].tolist() for i, n in enumerate(batch.tgt_lengths)]


def test_ctranslate2_scores_like_our_model(train_once, tmp_path):
    trained = train_once("transformer")
    vocab = trained.vocab
    vocab.save(tmp_path / "vocab.json")
    ckpt = save_checkpoint(tmp_path / "model.pt", trained.model.config, trained.model.state_dict(),
                           {"source": "vocab.json", "target": "vocab.json"})
    out = export_checkpoint(ckpt, tmp_path / "ct2")
    assert (out / "model.bin").is_file()
    data = digit_data(16, seed=11, task="copy")
    targets = [t if i % 2 else t[::-1] + ["7"] for i, t in enumerate(data.targets)]  # likely and unlikely ones
    translator = ctranslate2.Translator(str(out), device="cpu", intra_threads=1)
    results = translator.score_batch(data.sources, targets)
    ours = our_scores(trained.model, vocab, data.sources, targets)
    for theirs, mine, target in zip(results, ours, targets):
        assert theirs.tokens == target + ["</s>"]
        assert theirs.log_probs == pytest.approx(mine, abs=1e-3)
    greedy = translator.translate_batch(data.sources, beam_size=1)
    mine = translate_ids(trained.model, [vocab.encode(s) + [vocab.eos_id] for s in data.sources], vocab.pad_id, "cpu")
    assert [r.hypotheses[0] for r in greedy] == [vocab.decode(ids) for ids in mine]


def test_an_untrained_model_with_large_weights_also_matches(vocab, tmp_path):
    model = make_model("transformer", vocab, seed=3, layers=1, model_size=32, heads=2, ff_size=48).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)  # peaked distributions: differences would show
    out = export_model(model, vocab, vocab, tmp_path / "ct2")
    sources, targets = [list("123"), list("9")], [list("321"), list("99")]
    results = ctranslate2.Translator(str(out), device="cpu", intra_threads=1).score_batch(sources, targets)
    for theirs, mine in zip(results, our_scores(model, vocab, sources, targets)):
        assert theirs.log_probs == pytest.approx(mine, abs=1e-3)
    assert min(min(m) for m in our_scores(model, vocab, sources, targets)) < -3


def test_only_transformers_export(vocab, tmp_path):
    with pytest.raises(TypeError, match="only Transformer models"):
        export_model(make_model("gru", vocab), vocab, vocab, tmp_path / "ct2")
