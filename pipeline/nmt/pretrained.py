"""A pretrained Hugging Face translation model (MarianMT, M2M100/NLLB) behind the decoder's step interface.

    system = load_pretrained("models/opus-mt-de-en", source_lang="de", target_lang="en")
    src = system.vocab.encode_line("Das Haus ist klein.")      # the model's ids, ending in EOS
    hyps = decode_sources(system.model, [src], SearchSettings(beam=4, full_beam=True))
    system.vocab.decode_line(hyps[0][0].tokens)                  # text again

One adapter for every `AutoModelForSeq2SeqLM` whose cache is a `transformers` EncoderDecoderCache (self-attention
keys and values growing by one position per step, cross-attention keys and values computed once):

    encode(src [N, S], src_lengths [N])     the encoder once; the decoder over the model's forced prefix
    step(state, prev [B])                   one decoder position with the model's own cache -> log-probs [B, V]
    reorder(state, index [B'])              index_select of every cached tensor (DecoderState.select)

The cache lives in the DecoderState as plain tensors, so the beam search reorders, joins and narrows it like our
own Transformer's: per layer l, "self.l.k"/"self.l.v" [B, H, T, D] and, after the first step, "cross.l.k"/
"cross.l.v" [B, H, S, D] (per source: not copied while the beam reshuffles within sentences), with the encoder
output "memory" [B, S, E] and its "mask" [B, S].

Target specials (:class:`PretrainedVocabulary`): pad, EOS and BOS. BOS is the token the search feeds first: the
model's decoder_start_token_id for Marian; for M2M100/NLLB, the target language's token, which `generate` forces as
the first output (score 0) after decoder_start_token_id: here `encode` consumes decoder_start_token_id and the search
starts from the language token, so no hypothesis holds it and none pays for it, as in `generate`.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Sequence

import torch
from torch import Tensor

from pipeline.errors import PipelineError
from pipeline.nmt.generation_config import GenerationRules, read_generation_rules
from pipeline.nmt.interface import DecoderState
from pipeline.vocab import TokenLookup

__all__ = ["PretrainedModel", "PretrainedModelError", "PretrainedSystem", "PretrainedVocabulary",
           "is_pretrained_folder", "load_pretrained", "model_folder"]

log = logging.getLogger(__name__)

# ISO 639-1 codes of the tasks' languages -> ISO 639-3 (NLLB's codes start with them, e.g. deu_Latn)
_ISO3 = {"de": "deu", "en": "eng", "zh": "zho", "ja": "jpn", "fr": "fra", "es": "spa", "ru": "rus", "cs": "ces"}
# the target language tokens of NLLB's tokenizer, per task language
_NLLB = {"de": "deu_Latn", "en": "eng_Latn", "zh": "zho_Hans", "ja": "jpn_Jpan", "fr": "fra_Latn", "es": "spa_Latn",
         "ru": "rus_Cyrl", "cs": "ces_Latn"}


class PretrainedModelError(PipelineError, ValueError):
    """A pretrained model that cannot be loaded or used for a task: the message names the model or its folder."""


@dataclass(frozen=True)
class PretrainedVocabulary(TokenLookup):
    """The model's token ids as the project's Vocabulary contract (pipeline/vocab.py): tokens by id, specials by id.

    tokens: the token of every target id: `offset` times "<eps>" (see PretrainedModel), then the tokenizer's token
    of every output id of the model (V = the output layer's size; ids the tokenizer lacks are named "<extra_i>").
    The special ids are target ids (the model's + offset); bos_id is what the search feeds first (see the module
    docstring). encode_line gives source ids (the model's own), decode_line reads target ids.
    """

    tokens: tuple[str, ...]
    pad_id: int
    bos_id: int
    eos_id: int
    unk_id: int
    tokenizer: Any = field(default=None, compare=False, repr=False)
    offset: int = 0

    def __post_init__(self) -> None:
        self._index()

    def encode_line(self, line: str) -> list[int]:
        """A raw source line -> the ids the encoder reads (the tokenizer's, EOS last)."""
        return list(self.tokenizer(line)["input_ids"])

    def decode_line(self, ids: Sequence[int]) -> str:
        """Target ids (without EOS) -> text, special tokens dropped."""
        return self.tokenizer.decode([i - self.offset for i in ids], skip_special_tokens=True)


def _layer(keys: Tensor | None = None, values: Tensor | None = None):
    """A transformers DynamicLayer holding keys/values [B, H, T, D] as they are (no copy); empty without them."""
    from transformers.cache_utils import DynamicLayer

    layer = DynamicLayer()
    if keys is not None:
        layer.lazy_initialization(keys, values)
        layer.keys, layer.values = keys, values
    return layer


class PretrainedModel:
    """A StepModel (pipeline/nmt/interface.py) over a transformers encoder-decoder `model` (in eval mode).

    bos_id, eos_id: the model's ids; pad_id pads the sources. prefix: the decoder inputs before BOS (M2M100/NLLB:
    decoder_start_token_id; Marian: none), consumed by `encode`. offset: target ids are the model's + offset, and
    the first `offset` ids are never produced (-inf): with offset 1, id 0 is free for the FST epsilon, so that L
    and the acceptors of a lattice in the model's units (lattices/model_units.py, labels = ids + 1) index the
    decoder's scores directly. Sources are the model's ids either way.
    """

    joins_at_any_step = False

    def __init__(self, model, bos_id: int, eos_id: int, pad_id: int, prefix: Sequence[int] = (),
                 offset: int = 0, banned: Sequence[int] = ()) -> None:
        self.model = model.eval()
        self.offset = offset
        self.banned = tuple(banned)  # the model's ids it must never produce (its generation_config's bad words)
        self.bos_id, self.eos_id, self.pad_id = bos_id + offset, eos_id + offset, pad_id
        self.prefix = tuple(prefix)
        self.tgt_vocab_size = model.get_output_embeddings().weight.shape[0] + offset
        self.layers = len(model.get_decoder().layers)

    @property
    def max_positions(self) -> int:
        """The positions the search may use (the decoder's step t reads position len(prefix) + t): the model's
        max_position_embeddings less its prefix. Marian's position table ends there (a position past it is an
        index error); M2M100/NLLB extend their sinusoids, but were trained no further. The search's length limit
        and the source check (pipeline/decode/batching.position_limit) honour it."""
        return int(self.model.config.max_position_embeddings) - len(self.prefix)

    def eval(self) -> "PretrainedModel":
        self.model.eval()
        return self

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def _per_source(self) -> dict[str, int]:
        axes = {"memory": 1, "mask": 1}
        axes.update({f"cross.{i}.{kv}": 2 for i in range(self.layers) for kv in "kv"})
        return axes

    @torch.inference_mode()
    def encode(self, src: Tensor, src_lengths: Tensor) -> DecoderState:
        """The encoder over src [N, S] (padded after src_lengths [N]); then the decoder over the prefix, if any."""
        mask = torch.arange(src.shape[1], device=src.device)[None, :] < src_lengths[:, None]    # [N, S]
        memory = self.model.get_encoder()(input_ids=src, attention_mask=mask.long()).last_hidden_state
        state = DecoderState({"memory": memory, "mask": mask}, 0, self._per_source())
        for token in self.prefix:
            prev = torch.full((src.shape[0],), token, dtype=torch.long, device=src.device)
            _, state = self._forward(state, prev)
        return DecoderState(state.tensors, 0, state.per_source)

    @torch.inference_mode()
    def step(self, state: DecoderState, prev_tokens: Tensor) -> tuple[Tensor, DecoderState]:
        """Consume prev_tokens [B]: log-probabilities [B, V] (float32) of the next token, the state at time + 1."""
        log_probs, state = self._forward(state, prev_tokens - self.offset if self.offset else prev_tokens)
        if self.banned:
            log_probs[:, list(self.banned)] = float("-inf")
        if self.offset:
            log_probs = torch.cat([log_probs.new_full((log_probs.shape[0], self.offset), float("-inf")), log_probs],
                                  dim=1)
        return log_probs, state

    def reorder(self, state: DecoderState, index: Tensor, same_sources: bool = False) -> DecoderState:
        """Rows `index` [B'] of every cached tensor (the cross-attention cache kept when `same_sources`)."""
        return state.select(index, same_sources)

    def _forward(self, state: DecoderState, prev: Tensor) -> tuple[Tensor, DecoderState]:
        from transformers.cache_utils import Cache, EncoderDecoderCache
        from transformers.modeling_outputs import BaseModelOutput

        t = state.tensors
        started = "cross.0.k" in t
        self_layers = [_layer(t.get(f"self.{i}.k"), t.get(f"self.{i}.v")) for i in range(self.layers)]
        cross_layers = [_layer(t[f"cross.{i}.k"], t[f"cross.{i}.v"]) if started else _layer()
                        for i in range(self.layers)]
        cache = EncoderDecoderCache(Cache(layers=self_layers), Cache(layers=cross_layers))
        out = self.model(encoder_outputs=BaseModelOutput(last_hidden_state=t["memory"]),
                         attention_mask=t["mask"].long(), decoder_input_ids=prev[:, None], past_key_values=cache,
                         use_cache=True)
        log_probs = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
        cache = out.past_key_values
        tensors = {"memory": t["memory"], "mask": t["mask"]}
        for i in range(self.layers):
            own, cross = cache.self_attention_cache.layers[i], cache.cross_attention_cache.layers[i]
            tensors[f"self.{i}.k"], tensors[f"self.{i}.v"] = own.keys, own.values
            tensors[f"cross.{i}.k"], tensors[f"cross.{i}.v"] = cross.keys, cross.values
        return log_probs, DecoderState(tensors, state.time + 1, state.per_source)


@dataclass
class PretrainedSystem:
    """A loaded pretrained model: the step model, its vocabulary (tokenizer inside) and where it came from."""

    model: PretrainedModel
    vocab: PretrainedVocabulary
    name: str
    generation: GenerationRules | None = None  # what of the model's generation_config the search follows
    languages_declared: bool = True  # False: the model does not say which languages it translates


def is_pretrained_folder(path: Path) -> bool:
    """Whether `path` is a `transformers` model folder (a config.json naming its model_type), not one of ours."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return False
    import json

    try:
        return "model_type" in json.loads(config.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False


def _offline(local_files_only: bool | None) -> bool:
    if local_files_only is not None:
        return local_files_only
    return any(os.environ.get(name, "").upper() in ("1", "ON", "YES", "TRUE")
               for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _cache_folder() -> str:
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


def _not_here(name: str, why: str, error: Exception) -> NoReturn:
    raise PretrainedModelError(
        f"{name}: not in the Hugging Face cache and {why}; put the model in {_cache_folder()} (e.g. `hf download "
        f"{name}` where a network is reachable, then copy that cache folder over), or download it to a folder of "
        "its own and name that folder instead") from error


def model_folder(name_or_path: str | Path, local_files_only: bool | None = None) -> Path:
    """The folder of a model: a local folder as it is; a hub name's snapshot in the Hugging Face cache (fetched
    first unless offline, as for load_pretrained). Raises PretrainedModelError naming the model and the cache."""
    name, folder = str(name_or_path), Path(name_or_path)
    if folder.is_dir():
        return folder
    if folder.is_absolute() or name.startswith(".") or folder.exists():
        raise PretrainedModelError(f"{name}: no such model folder")
    from huggingface_hub import snapshot_download

    offline = _offline(local_files_only)
    try:
        return Path(snapshot_download(repo_id=name, local_files_only=True))
    except Exception as error:  # noqa: BLE001 (not in the cache, in any of the hub client's ways)
        if offline:
            _not_here(name, "the hub is not to be reached (offline)", error)
    try:
        return Path(snapshot_download(repo_id=name))
    except Exception as error:  # noqa: BLE001
        _not_here(name, "fetching it from the hub failed", error)


def _language_matches(ours: str, theirs: str | None) -> bool:
    """Whether a model's language code (de, deu, deu_Latn, de+nl, mul) covers the task's ISO 639-1 code."""
    if not theirs:
        return True  # the model does not say
    codes = {c.split("_")[0].lower() for c in theirs.replace("+", ",").split(",")}
    return bool(codes & {ours.lower(), _ISO3.get(ours.lower(), ours.lower()), "mul"})


def _target_language_id(tokenizer, target_lang: str, name: str) -> int | None:
    """The id of the target language token that a multilingual model (M2M100, NLLB) must start with; None for a
    model without language tokens (Marian)."""
    lookup = getattr(tokenizer, "lang_code_to_id", None)
    if lookup is None and not hasattr(tokenizer, "src_lang"):
        return None
    for code in (target_lang, _NLLB.get(target_lang, target_lang)):
        if lookup is not None and code in lookup:
            return lookup[code]
        token_id = tokenizer.convert_tokens_to_ids(code)
        if isinstance(token_id, int) and token_id != tokenizer.unk_token_id:
            return token_id
    raise PretrainedModelError(f"{name}: this multilingual model has no language token for the task's target "
                               f"language {target_lang!r}")


def _set_source_language(tokenizer, source_lang: str, name: str) -> None:
    lookup = getattr(tokenizer, "lang_code_to_id", None)
    for code in (source_lang, _NLLB.get(source_lang, source_lang)):
        if (lookup is not None and code in lookup) or (lookup is None and tokenizer.convert_tokens_to_ids(code)
                                                       != tokenizer.unk_token_id):
            tokenizer.src_lang = code
            return
    raise PretrainedModelError(f"{name}: this multilingual model has no language token for the task's source "
                               f"language {source_lang!r}")


def load_pretrained(name_or_path: str | Path, source_lang: str, target_lang: str,
                    device: str | torch.device = "cpu", local_files_only: bool | None = None,
                    offset: int = 0) -> PretrainedSystem:
    """A transformers translation model from a local folder, or by hub name: from the local cache, else fetched
    from the hub unless offline (`local_files_only`, or HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE set); checked
    against the task's languages. offset: target ids are the model's + offset (1 for LMBR; see PretrainedModel).

    Raises PretrainedModelError naming the model: not in the cache while offline (with the folder to put it in), a
    folder without a tokenizer, languages the model does not translate.
    """
    try:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    except ImportError as error:
        raise PretrainedModelError("pretrained models need the hf extra: pip install -e '.[hf]'") from error
    name = str(name_or_path)
    folder = Path(name_or_path)
    local = folder.is_dir()
    if not local and (folder.is_absolute() or name.startswith(".") or folder.exists()):
        raise PretrainedModelError(f"{name}: no such model folder")
    offline = _offline(local_files_only)
    try:  # a folder, or the local cache first: no network for a model that is already here
        model = AutoModelForSeq2SeqLM.from_pretrained(name, local_files_only=True)
    except OSError as error:
        if local:
            raise PretrainedModelError(f"{name}: not a transformers model folder ({error})") from error
        if offline:
            _not_here(name, "the hub is not to be reached (offline)", error)
        model = None
    if model is None:
        try:
            model = AutoModelForSeq2SeqLM.from_pretrained(name)
        except OSError as error:
            _not_here(name, "fetching it from the hub failed", error)
    try:
        tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError, TypeError, AssertionError, KeyError) as error:
        raise PretrainedModelError(
            f"{name}: the model's tokenizer is missing or unreadable; put the tokenizer files that came with the "
            "model beside its config.json (tokenizer_config.json and its vocabulary: vocab.json with source.spm and "
            f"target.spm for Marian, sentencepiece.bpe.model for M2M100, tokenizer.json for NLLB) ({error})") from error
    if tokenizer is None or isinstance(tokenizer, bool):
        raise PretrainedModelError(f"{name}: the model's tokenizer is missing")
    return _system(model.to(device), tokenizer, name, source_lang, target_lang, offset)


def _system(model, tokenizer, name: str, source_lang: str, target_lang: str, offset: int) -> PretrainedSystem:
    config = model.config
    forced = _target_language_id(tokenizer, target_lang, name)
    declared = True
    if forced is None:  # one language pair (Marian): the tokenizer may say which
        pair = (getattr(tokenizer, "source_lang", None), getattr(tokenizer, "target_lang", None))
        for side, ours, theirs in (("source", source_lang, pair[0]), ("target", target_lang, pair[1])):
            if not _language_matches(ours, theirs):
                raise PretrainedModelError(f"{name}: the model translates {tokenizer.source_lang} -> "
                                           f"{tokenizer.target_lang}, the task's {side} language is {ours}")
        declared = all(pair)
        if not declared:
            log.warning("%s: the model does not declare the languages it translates; taken to translate %s -> %s "
                        "as the task says (check that it does)", name, source_lang, target_lang)
    else:
        _set_source_language(tokenizer, source_lang, name)
    rules = read_generation_rules(model, name, multilingual=forced is not None)
    start, eos = rules.decoder_start, rules.eos
    if forced is None and rules.forced_bos is not None:  # a one-pair model whose config forces a first token
        forced = rules.forced_bos
    size = model.get_output_embeddings().weight.shape[0]
    unk = tokenizer.unk_token_id if tokenizer.unk_token_id is not None else config.pad_token_id
    names = tokenizer.convert_ids_to_tokens(list(range(size)))  # ids beyond the tokenizer's come back as <unk>
    tokens = tuple(n if isinstance(n, str) and (n != tokenizer.unk_token or i == unk) else f"<extra_{i}>"
                   for i, n in enumerate(names))
    bos, prefix = (start, ()) if forced is None else (forced, (start,))
    vocab = PretrainedVocabulary(("<eps>",) * offset + tokens, config.pad_token_id + offset, bos + offset,
                                 eos + offset, unk + offset, tokenizer, offset)
    return PretrainedSystem(PretrainedModel(model, bos, eos, config.pad_token_id, prefix, offset, rules.banned),
                            vocab, name, rules, declared)
