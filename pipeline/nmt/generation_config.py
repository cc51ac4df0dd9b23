"""What a pretrained model's `generation_config` asks of a search, and which of it ours follows.

`generate` reads the model's generation_config.json (OPUS-MT's holds `bad_words_ids=[[pad]]`, so that no output is
ever the pad token; M2M100/NLLB's a decoder start token; some an extra EOS id). Our batched beam search
(pipeline/nmt/pretrained.py) follows what shapes the model's output:

- `decoder_start_token_id` and `eos_token_id` (the generation config's first, the model config's otherwise);
- `bad_words_ids` of one token and `suppress_tokens`: never produced (-inf at every step);
- `forced_bos_token_id`: the first output of a one-pair model; a multilingual model's is the task's target language
  (named when the config says another);
- `forced_eos_token_id` equal to EOS: our length limit forces EOS as well.

It deliberately does not follow the search settings (`num_beams`, `length_penalty`, `max_length`, `early_stopping`
and the like: the pipeline's own, tuned per system), and it cannot follow what would change its scores' meaning
(`repetition_penalty`, `no_repeat_ngram_size`, `min_length`, bad words of several tokens, a second EOS id,
`begin_suppress_tokens`): each set to a value other than the default is named in `not_followed` and logged once.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

# generate's search settings: the pipeline's own search settings replace them
SEARCH_SETTINGS = ("num_beams", "num_return_sequences", "length_penalty", "max_length", "max_new_tokens",
                   "early_stopping", "do_sample", "temperature", "top_k", "top_p", "num_beam_groups")
# settings that change what the model's scores select, which our search does not apply, with their no-op values
NOT_APPLIED = {"repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0,
               "min_length": 0, "min_new_tokens": None, "begin_suppress_tokens": None, "diversity_penalty": 0.0,
               "exponential_decay_length_penalty": None, "sequence_bias": None}


@dataclass(frozen=True)
class GenerationRules:
    """The model's ids for the search and the tokens it must never produce (the model's own ids)."""

    decoder_start: int
    eos: int
    forced_bos: int | None = None
    banned: tuple[int, ...] = ()
    followed: dict[str, Any] = field(default_factory=dict)
    not_followed: dict[str, str] = field(default_factory=dict)


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, (list, tuple)) and value else value


def read_generation_rules(model: Any, name: str, multilingual: bool) -> GenerationRules:
    """The rules of `model` (a transformers model: its generation_config, else its config)."""
    config = model.config
    generation = getattr(model, "generation_config", None)
    get = (lambda key: getattr(generation, key, None)) if generation is not None else (lambda key: None)  # noqa
    changed = generation.to_diff_dict() if generation is not None else {}  # what the model's files set
    start = get("decoder_start_token_id")
    start = config.decoder_start_token_id if start is None else _first(start)
    eos_ids = get("eos_token_id") if get("eos_token_id") is not None else config.eos_token_id
    eos_list = list(eos_ids) if isinstance(eos_ids, (list, tuple)) else [eos_ids]
    followed: dict[str, Any] = {"decoder_start_token_id": start, "eos_token_id": eos_list[0]}
    not_followed: dict[str, str] = {}
    if len(eos_list) > 1:
        not_followed["eos_token_id"] = f"{eos_list}: only the first ends a hypothesis here"
    banned: set[int] = set()
    for words in get("bad_words_ids") or []:
        if len(words) == 1:
            banned.add(int(words[0]))
        else:
            not_followed.setdefault("bad_words_ids", "")
            not_followed["bad_words_ids"] += f"{list(words)} (several tokens) "
    banned.update(int(t) for t in get("suppress_tokens") or [])
    if banned:
        followed["banned"] = sorted(banned)
    forced_bos = get("forced_bos_token_id")
    if forced_bos is not None:
        if multilingual:
            not_followed["forced_bos_token_id"] = f"{forced_bos}: the task's target language token is forced instead"
            forced_bos = None
        else:
            followed["forced_bos_token_id"] = forced_bos
    forced_eos = _first(get("forced_eos_token_id"))
    if forced_eos is not None and forced_eos != eos_list[0]:
        not_followed["forced_eos_token_id"] = f"{forced_eos}: the length limit forces EOS {eos_list[0]}"
    for key, default in NOT_APPLIED.items():
        value = changed.get(key)
        if value is not None and value != default and value != []:
            not_followed[key] = f"{value}: not applied by this search"
    deliberately = {key: changed[key] for key in SEARCH_SETTINGS if changed.get(key) is not None}
    if deliberately:
        followed["search"] = "the pipeline's own search settings, not the model's " + ", ".join(
            f"{key}={value}" for key, value in sorted(deliberately.items()))
    for key, why in not_followed.items():
        log.warning("%s: generation_config %s=%s", name, key, why.strip())
    return GenerationRules(int(start), int(eos_list[0]), forced_bos, tuple(sorted(banned)), followed,
                           {k: v.strip() for k, v in not_followed.items()})
