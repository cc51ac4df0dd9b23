"""Scale profiles (`configs/profiles/<name>.toml`): how big everything is (tiny, medium, paper), as
frozen dataclasses, each with the checks of its own values (`problems`)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from lattices.evidence import DEFAULT_MAX_STATES
from pipeline.errors import ConfigError
from pipeline.smt.reordering import KINDS as REORDERING_KINDS

#: LMBR gain forms (pipeline/decode/lmbr_hook.py): the paper's L at every step, or each n-gram paid once per hypothesis.
GAIN_FORMS = ("per_step", "bounded")
#: The searches of unconstrained LMBR decoding (pipeline/decode/anchored.py).
SEARCH_FORMS = ("free", "anchored")
#: The utilities of MBR selection over the NMT's samples (pipeline/mbr/utility.py).
MBR_UTILITIES = ("chrf", "bleu")
TRAIN_SOURCES = ("folder", "corpora")  # [data] train_source: the data folder's <pair>/train, or the named corpora


@dataclass(frozen=True)
class DataProfile:
    train_pairs: int  # random subsample of the training pairs (seeded); 0 keeps all
    tune_sentences: int  # first N lines of the tuning set; 0 keeps all
    eval_sentences: int  # first N lines of every evaluation set; 0 keeps all
    min_tokens: int  # training pairs with fewer tokens on a side are removed
    max_tokens: int  # training pairs with more tokens on a side are removed
    max_ratio: float  # training pairs whose token-length ratio exceeds this are removed
    train_source: str = "folder"  # "folder": <pair>/train of the data folder; "corpora": the task's [[corpora]]

    def hashed(self) -> dict[str, object]:
        """The settings in a prepared split's hash: all but train_source (the data stage hashes the corpora it reads
        instead, for the training split only), so that the folder runs keep their artifacts' ids."""
        settings = dataclasses.asdict(self)
        settings.pop("train_source")
        return settings

    def problems(self) -> list[tuple[str, str]]:
        """(key below 'data.', what is wrong) for every value that is out of range."""
        found = [(key, "must not be negative") for key in ("train_pairs", "tune_sentences", "eval_sentences",
                                                           "min_tokens", "max_tokens") if getattr(self, key) < 0]
        if self.train_source not in TRAIN_SOURCES:
            found.append(("train_source", f"must be one of {', '.join(TRAIN_SOURCES)}"))
        return found


@dataclass(frozen=True)
class BpeProfile:
    merges: int
    min_frequency: int


@dataclass(frozen=True)
class LmProfile:
    memory: str  # lmplz -S
    discount_fallback: bool  # lmplz --discount_fallback, needed on tiny corpora
    binary_type: str  # build_binary data structure: probing or trie

    def problems(self) -> list[tuple[str, str]]:
        """(key below 'lm.', what is wrong) for every value that is out of range."""
        if self.binary_type not in ("probing", "trie"):
            return [("binary_type", f"must be 'probing' or 'trie', not {self.binary_type!r}")]
        return []


@dataclass(frozen=True)
class PbmtProfile:
    """The phrase-based system (pipeline/smt): phrase extraction, decoder limits, MERT, lattices."""

    max_phrase_length: int  # longest phrase on either side (Moses: 7)
    options_per_phrase: int  # translation options kept per source phrase by weighted score (Moses -ttable-limit 20)
    stack_limit: int  # hypotheses per stack (Moses -s)
    beam_threshold: float  # prune hypotheses worse than the best times this (Moses -b); 0 turns it off
    distortion_limit: int  # longest jump in source words (Moses -dl); negative: unlimited
    mert_iterations: int  # at most this many decode + optimise rounds
    mert_nbest: int  # n-best size decoded per MERT round
    mert_random_directions: int  # random search directions besides the feature axes
    mert_restarts: int  # random starting points besides the current weights
    mert_sentences: int  # first N tuning sentences used by MERT; 0: all
    nbest: int  # n-best list written for a decoded split
    alpha: float  # path scale of the lattice posteriors, recorded in lattices.json
    workers: int  # decoding processes
    # "distance" (distance-based distortion alone) or "msd-bidirectional-fe" (plus Moses' lexicalised reordering
    # model: extracted with the phrases, six features tuned by MERT; pipeline/smt/reordering.py)
    reordering: str = "distance"

    def problems(self) -> list[tuple[str, str]]:
        """(key below 'pbmt.', what is wrong) for every value that is out of range."""
        found = [(key, "must be at least 1") for key in ("max_phrase_length", "stack_limit", "mert_nbest", "workers")
                 if getattr(self, key) < 1]
        if self.reordering not in REORDERING_KINDS:
            found.append(("reordering", f"must be one of {', '.join(map(repr, REORDERING_KINDS))}, "
                                        f"not {self.reordering!r}"))
        return found


@dataclass(frozen=True)
class NmtTrainingProfile:
    """How the models of one NMT architecture are trained, checkpointed and combined."""

    seeds: tuple[int, ...]  # one model per seed; a system ensembles them (FNMT: the paper's 3 GRU models)
    max_tokens: int  # a batch holds at most this many source or target tokens, padding included
    lr: float  # Adam's learning rate (the peak, after warm-up)
    lr_schedule: str  # after a linear warm-up: "inverse_sqrt" (1/sqrt(update) decay), "constant", or "linear" (a
                      # linear decay to 0 at max_updates: the schedule of a fixed budget)
    warmup_updates: int  # linear warm-up from 0 to lr; 0: none
    label_smoothing: float
    clip_norm: float  # gradient norm clipping; 0 turns it off
    max_updates: int  # 0: no limit (the budget decides)
    budget_seconds: float  # wall-clock time per model, across resumes, validation included; 0: no limit
    checkpoint_every: int  # updates between checkpoints, each with validation loss and greedy BLEU
    keep_checkpoints: int  # the last K checkpoints kept
    average_checkpoints: int  # the last K checkpoints averaged into the decoded model (1: the last alone)
    valid_sentences: int  # first N tuning sentences for validation; 0: all
    ranks: int = 1  # data-parallel processes per node (DDP, pipeline/nmt/distributed.py); 0: one per visible GPU
    # "fp32", "bf16" or "fp16" autocast (fp16 with a gradient scaler) on CUDA; "auto": bf16 where the hardware
    # computes it natively (CUDA with bfloat16, a CPU with avx512_bf16 or AMX), fp32 elsewhere
    precision: str = "fp32"
    update_freq: int = 1  # batches of max_tokens accumulated into one update (gradient accumulation)
    compile: bool = False  # torch.compile the model for training (the same maths, fused kernels)
    # Sequence-level knowledge distillation (Kim & Rush 2016): "pbmt" trains on the PBMT's 1-best translations of the
    # training source instead of the references, "pbmt+references" on both (twice the pairs); "none" on the references
    distillation: str = "none"
    distillation_variant: str = ""  # the Table 2 variant whose PBMT limits translate the training source ("": the
                                    # profile's [pbmt] limits); the PBMT's weights are the profile's MERT weights
    # the checkpoint of every N-th update kept as well, weights only (the strength curve decodes them); 0: none.
    # The same model either way: only which files stay.
    snapshot_every: int = 0


#: Sequence-level distillation: where an NMT model's training targets come from (pipeline/nmt/distillation.py).
DISTILLATIONS = ("none", "pbmt", "pbmt+references")
#: Training precisions (pipeline/nmt/precision.py says what each becomes on a device).
PRECISIONS = ("fp32", "bf16", "fp16", "auto")
#: Learning-rate schedules: pipeline/nmt/lr_schedule.py's SCHEDULES (named here so that config stays free of torch).
LR_SCHEDULES = ("inverse_sqrt", "constant", "linear")


@dataclass(frozen=True)
class GruProfile:
    """Attention GRU (Bahdanau et al. 2015): bidirectional encoder, one-layer attentional decoder."""

    vocab_size: int  # per language, specials included; 0: the whole BuildVocab vocabulary
    embed_size: int
    hidden_size: int  # per encoder direction, and the decoder state
    attention_size: int
    encoder_layers: int
    dropout: float
    training: NmtTrainingProfile


@dataclass(frozen=True)
class TransformerProfile:
    """Pre-norm Transformer (Vaswani et al. 2017) encoder-decoder."""

    vocab_size: int  # per language, specials included; 0: the whole BuildVocab vocabulary
    layers: int  # encoder layers and decoder layers, each
    model_size: int
    heads: int
    ff_size: int
    dropout: float  # on the embeddings and on each sub-layer's output before the residual sum
    training: NmtTrainingProfile
    # fairseq's defaults, 0: attention dropout keeps the fused attention kernel off, and the feed-forward's
    # activation dropout draws 4x as many random numbers as the residual dropout of a layer
    attention_dropout: float = 0.0  # on the attention weights
    activation_dropout: float = 0.0  # on the feed-forward ReLU's output
    # the low-resource recipe (Sennrich & Zhang 2019; Araabi & Monz 2020), all off by default
    source_word_dropout: float = 0.0  # each source token's embedding dropped whole with this probability
    target_word_dropout: float = 0.0  # the same on the decoder's input tokens (teacher forcing)
    decoder_layerdrop: float = 0.0  # each decoder layer skipped whole in a training forward pass (Fan et al. 2020)


@dataclass(frozen=True)
class NmtProfile:
    gru: GruProfile
    transformer: TransformerProfile

    def problems(self) -> list[tuple[str, str]]:
        """(key below 'nmt.', what is wrong) for every value that is out of range."""
        found = []
        for arch in ("gru", "transformer"):
            model = getattr(self, arch)
            t = model.training
            checks = [
                ("vocab_size", model.vocab_size == 0 or model.vocab_size > 4, "must be 0 or more than the 4 specials"),
                ("dropout", 0 <= model.dropout < 1, "must be in [0, 1)"),
                ("training.seeds", 0 < len(t.seeds) == len(set(t.seeds)), "must be distinct, at least one"),
                ("training.lr_schedule", t.lr_schedule in LR_SCHEDULES, f"must be one of {', '.join(LR_SCHEDULES)}"),
                ("training.max_updates", t.lr_schedule != "linear" or t.max_updates > t.warmup_updates,
                 "must be above training.warmup_updates with lr_schedule 'linear' (it decays to 0 there)"),
                ("training.max_tokens", t.max_tokens > 0, "must be positive"),
                ("training.label_smoothing", 0 <= t.label_smoothing < 1, "must be in [0, 1)"),
                ("training.max_updates", t.max_updates > 0 or t.budget_seconds > 0,
                 "or training.budget_seconds must be positive"),
                ("training.checkpoint_every", t.checkpoint_every > 0, "must be positive"),
                ("training.snapshot_every", t.snapshot_every >= 0 and t.snapshot_every % t.checkpoint_every == 0,
                 "must be 0 or a multiple of training.checkpoint_every"),
                ("training.average_checkpoints", 1 <= t.average_checkpoints <= t.keep_checkpoints,
                 "must be between 1 and keep_checkpoints"),
                ("training.ranks", t.ranks >= 0, "must be 0 (one per GPU) or a positive number of processes"),
                ("training.precision", t.precision in PRECISIONS, f"must be one of {', '.join(PRECISIONS)}"),
                ("training.update_freq", t.update_freq >= 1, "must be at least 1"),
                ("training.distillation", t.distillation in DISTILLATIONS,
                 f"must be one of {', '.join(DISTILLATIONS)}"),
            ]
            if arch == "transformer":
                checks.append(("heads", model.heads > 0 and model.model_size % model.heads == 0,
                               "must divide model_size"))
                checks += [(key, 0 <= getattr(model, key) < 1, "must be in [0, 1)")
                           for key in ("attention_dropout", "activation_dropout", "source_word_dropout",
                                       "target_word_dropout", "decoder_layerdrop")]
            found += [(f"{arch}.{key}", problem) for key, ok, problem in checks if not ok]
        return found


@dataclass(frozen=True)
class DecodeProfile:
    """Batched beam decoding of the NMT systems (pipeline/decode). Batching and sorting change the speed only."""

    beam: int  # hypotheses kept per sentence (the paper's research systems: 12)
    batch_sentences: int  # sentences decoded together in one batch; 1: beam batching alone
    sort: bool  # sort sentences by source length before batching (the output keeps the input order)
    threshold: float  # early pruning: drop candidates below threshold x the best one's probability; 0: off
    length_penalty: float  # rank finished hypotheses by score / length^alpha; 0: by score
    max_length_a: float  # at most a * |source subwords| + b output subwords
    max_length_b: int
    streaming: bool = False  # streaming refill (ALGORITHMS.md section 6) instead of fixed sentence batches
    refill: float = 1 / 6  # streaming: refill the pool when the sentences decoding drop to refill x batch_sentences
    int8: bool = False  # CPU: dynamic int8 quantisation of the linear layers (pipeline/nmt/speedups.py)
    precompute_embeddings: bool = True  # CPU, GRU: per-token tables for the embedding products of a step
    fp16: bool = False  # CUDA: decode in half precision (the scores accumulate in fp32); ignored on the CPU
    early_exit: bool = True  # plain NMT systems: end a sentence once its n-best is certain (SearchSettings)
    ancestry_cache: bool = True  # CPU, Transformer: self-attention caches that reorders never copy (speedups.py)
    grid_length_penalty: tuple[float, ...] = ()  # the length penalties TuneLengthPenalty tries for the plain NMT
    #                                              systems (FNMT, TNMT, PNMT) on the tuning set; empty: length_penalty

    def hashed(self) -> dict[str, object]:
        """The settings in a decoding artifact's hash: all of them, fp16, early_exit and ancestry_cache only when on
        (they are on in every profile since 0.8.0; a profile that turns them off finds the artifacts of before).
        grid_length_penalty is left out: it enters the hashes of the stages it tunes (DecodeNMT.params)."""
        settings = dataclasses.asdict(self)
        settings.pop("grid_length_penalty")
        for key in ("fp16", "early_exit", "ancestry_cache"):
            if not settings[key]:
                settings.pop(key)
        return settings

    def length_penalties(self) -> tuple[float, ...]:
        """The length penalties the plain NMT systems are tuned over: the grid, or only length_penalty."""
        return tuple(self.grid_length_penalty) or (self.length_penalty,)

    def problems(self) -> list[tuple[str, str]]:
        """(key below 'decode.', what is wrong) for every value that is out of range."""
        checks = [("beam", self.beam >= 1, "must be at least 1"),
                  ("batch_sentences", self.batch_sentences >= 1, "must be at least 1"),
                  ("threshold", 0 <= self.threshold <= 1, "must be in [0, 1]"),
                  ("max_length_a", self.max_length_a >= 0, "must not be negative"),
                  ("max_length_b", self.max_length_b >= 0, "must not be negative"),
                  ("refill", 0 <= self.refill < 1, "must be in [0, 1)"),
                  ("early_exit", not self.early_exit or self.length_penalty == 0,
                   "needs raw scores (length_penalty 0)"),
                  ("grid_length_penalty", all(value >= 0 for value in self.grid_length_penalty),
                   "must not list negative values")]
        return [(key, problem) for key, ok, problem in checks if not ok]


@dataclass(frozen=True)
class LmbrProfile:
    """The LMBR evidence space, its n-gram posteriors and theta (ALGORITHMS.md sections 2-3)."""

    order: int  # n-gram orders 1..order (the paper: 4)
    semiring: str  # strings with several derivations: "tropical" (best derivation) or "log" (summed)
    nbest: int  # evidence space: 0 = the full lattice; 200 = the paper's accelerated system
    theta_convention: str  # "plain" (Theta_0 = -1) or "scaled" (divided by T)
    theta_t: float  # T of the scaled convention (10 in the Cambridge tools)
    engine: str = "openfst"  # evidence space: "openfst" (C++, float32 tropical costs) or "exact" (float64 Python)
    max_evidence_states: int = DEFAULT_MAX_STATES  # a determinised tropical full lattice past it is pruned (0: none)
    nmt_lambda: float = 0.5  # lambda, the scale of log P_NMT (the ensemble's average) in LMBR decoding
    tune: bool = False  # tune lambda, p and r on the tuning set's first tune_sentences by the grid below (TuneLMBR)
    tune_sentences: int = 200
    tune_start: int = 0  # the tuning window: sentences tune_start .. tune_start + tune_sentences of the tuning split
    #                      (0: its first tune_sentences, as before; tune_start is then left out of the artifacts' ids)
    tie_bleu: float = 0.0  # tuning BLEU within this of the best counts as a tie, won by the simpler point
    #                        (pipeline/decode/lmbr_tuning.py: simplicity); 0: off, the best point in grid order
    grid_lambda: tuple[float, ...] = (0.25, 0.5, 1.0)
    grid_pretrained_lambda: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0)  # lambda for the systems with a pretrained
    #                                  model (LPNMT, LPNMT-lat: TuneLMBR(PNMT)), far stronger than its lattice
    grid_p: tuple[float, ...] = (-0.1, 0.0, 0.1)  # offsets added to the PBMT's p
    grid_r: tuple[float, ...] = (-0.1, 0.0, 0.1)  # offsets added to the PBMT's r
    grid_alpha: tuple[float, ...] = ()  # path scales of the posteriors (empty: only the lattices', [pbmt] alpha)
    gains: str = "per_step"  # "per_step" (the paper: L at every step) or "bounded" (each n-gram paid once)
    grid_gains: tuple[str, ...] = ()  # gain forms the tuning tries (empty: only `gains`)
    grid_nbest: tuple[int, ...] = ()  # evidence spaces the tuning tries for LNMT/LTNMT: 0 the full lattice, K the K
    #                                   best strings (empty: only `nbest`); Table 2's variants keep their own
    patience: float = 1.0  # bounded gains: a sentence may also end once patience x beam hypotheses have finished
    search: str = "free"  # LNMT/LTNMT: "free" (one beam over all strings) or "anchored" (also a beam inside the
    #                       PBMT lattice, same objective, the better hypothesis wins: pipeline/decode/anchored.py)
    grid_search: tuple[str, ...] = ()  # searches TuneSearch tries at TuneLMBR's point (empty: only `search`)
    search_tie_bleu: float = 0.0  # TuneSearch: a search within this tuning BLEU of the best ties, and the first of
    #                               grid_search wins (0: tie_bleu's rule, free before anchored)
    lattice_weight: float = 0.0  # mu: the weight of the PBMT lattice's own cost in lattice rescoring (-lat systems)
    grid_lattice_weight: tuple[float, ...] = ()  # the mu the tuning tries for the -lat systems (empty: lattice_weight)

    race_sentences: tuple[int, ...] = ()  # TuneLMBR and TuneRescoring by successive halving: at each of these
    #                                       prefixes of the tune_sentences, only the best race_keep of the points go on
    race_keep: float = 1 / 3
    race_finalists: int = 1  # the race never narrows below this many points: at least they decode the whole window
    rescoring_sentences: int = 0  # TuneRescoring's own window, the tuning split's first this many sentences, with
    #                               every mu of the grid decoded on all of them (no race); 0: the tuning window and race
    search_sentences: int = 0  # TuneSearch's own window, the tuning split's first this many sentences, each search of
    #                            grid_search decoded on all of them at TuneLMBR's point; 0: the tuning window
    search_evidence: bool = False  # TuneSearch also chooses LNMT's and LTNMT's evidence space among grid_nbest, each
    #                                with each search on its window at TuneLMBR's point (off: TuneLMBR's choice stands)

    grid_mbr_p: tuple[float, ...] = ()  # offsets to the PBMT's p that the tuning of lattice MBR tries (empty: 0 only)
    grid_mbr_r: tuple[float, ...] = ()  # offsets to the PBMT's r, the same
    grid_mbr_alpha: tuple[float, ...] = ()  # path scales of lattice MBR's posteriors (empty: the lattices' alpha)

    def tune_window(self) -> range:
        """The tuning sentences (0-based lines of the prepared tuning split) that every tuning stage decodes."""
        return range(self.tune_start, self.tune_start + self.tune_sentences)

    def rescoring_window(self) -> range:
        """The tuning sentences TuneRescoring decodes: its own window when rescoring_sentences is set, else the
        tuning window."""
        if self.rescoring_sentences:
            return range(self.rescoring_sentences)
        return self.tune_window()

    def search_window(self) -> range:
        """The tuning sentences TuneSearch decodes: its own window when search_sentences is set, else the tuning
        window."""
        if self.search_sentences:
            return range(self.search_sentences)
        return self.tune_window()

    def mbr_p_offsets(self) -> tuple[float, ...]:
        return tuple(self.grid_mbr_p) or (0.0,)

    def mbr_r_offsets(self) -> tuple[float, ...]:
        return tuple(self.grid_mbr_r) or (0.0,)

    def mbr_alphas(self, lattice_alpha: float) -> tuple[float, ...]:
        """The path scales the tuning of lattice MBR tries: the grid's, or only the lattices' own."""
        return tuple(self.grid_mbr_alpha) or (lattice_alpha,)

    def lattice_weights(self) -> tuple[float, ...]:
        """The lattice weights the tuning of the -lat systems tries: the grid's, or only `lattice_weight`."""
        return tuple(self.grid_lattice_weight) or (self.lattice_weight,)

    def alphas(self, lattice_alpha: float) -> tuple[float, ...]:
        """The path scales the tuning tries: the grid's, or only the lattices' own."""
        return tuple(self.grid_alpha) or (lattice_alpha,)

    def gain_forms(self) -> tuple[str, ...]:
        """The gain forms the tuning tries: the grid's, or only `gains`."""
        return tuple(self.grid_gains) or (self.gains,)

    def search_forms(self) -> tuple[str, ...]:
        """The searches the tuning tries for LNMT/LTNMT: the grid's, or only `search`."""
        return tuple(self.grid_search) or (self.search,)

    def search_ties(self) -> tuple[float, tuple[str, ...]]:
        """TuneSearch's tie tolerance and its order of preference among tied searches: search_tie_bleu and the
        grid's order where it is set, else tie_bleu and the simpler search first (free, then anchored)."""
        if self.search_tie_bleu > 0:
            return self.search_tie_bleu, self.search_forms()
        return self.tie_bleu, tuple(sorted(self.search_forms(), key=lambda form: form != "free"))

    def nbests(self) -> tuple[int, ...]:
        """The evidence spaces the tuning tries (0: the full lattice): the grid's, or only `nbest`."""
        return tuple(self.grid_nbest) or (self.nbest,)

    def problems(self) -> list[tuple[str, str]]:
        """(key below 'lmbr.', what is wrong) for every value that is out of range."""
        checks = (("order", 1 <= self.order <= 4, "must be between 1 and 4"),
                  ("semiring", self.semiring in ("tropical", "log"), "must be 'tropical' or 'log'"),
                  ("engine", self.engine in ("openfst", "exact"), "must be 'openfst' or 'exact'"),
                  ("nmt_lambda", self.nmt_lambda > 0, "must be positive"),
                  ("tune_sentences", self.tune_sentences >= 1, "must be at least 1"),
                  ("tune_start", self.tune_start >= 0, "must not be negative"),
                  ("tie_bleu", self.tie_bleu >= 0, "must not be negative (0: no ties but exact ones)"),
                  ("search_tie_bleu", self.search_tie_bleu >= 0, "must not be negative (0: tie_bleu's rule)"),
                  ("grid_lambda", bool(self.grid_lambda) and min(self.grid_lambda) > 0, "must list positive values"),
                  ("grid_pretrained_lambda", bool(self.grid_pretrained_lambda) and min(self.grid_pretrained_lambda) > 0,
                   "must list positive values"),
                  ("grid_alpha", all(a > 0 for a in self.grid_alpha),
                   "must list positive values (or none: the lattices' alpha)"),
                  ("grid_mbr_alpha", all(a > 0 for a in self.grid_mbr_alpha),
                   "must list positive values (or none: the lattices' alpha)"),
                  ("gains", self.gains in GAIN_FORMS, f"must be one of {', '.join(GAIN_FORMS)}"),
                  ("patience", self.patience >= 1, "must be at least 1"),
                  ("race_sentences", list(self.race_sentences) == sorted(set(self.race_sentences)) and
                   all(0 < n < self.tune_sentences for n in self.race_sentences),
                   "must list increasing prefixes, each between 0 and tune_sentences"),
                  ("race_keep", 0 < self.race_keep <= 1, "must be in (0, 1]"),
                  ("race_finalists", self.race_finalists >= 1, "must be at least 1"),
                  ("rescoring_sentences", self.rescoring_sentences >= 0,
                   "must not be negative (0: the tuning window and its race)"),
                  ("search_sentences", self.search_sentences >= 0, "must not be negative (0: the tuning window)"),
                  ("lattice_weight", self.lattice_weight >= 0, "must not be negative"),
                  ("grid_lattice_weight", all(w >= 0 for w in self.grid_lattice_weight),
                   "must list values that are not negative (or none: only lattice_weight)"),
                  ("grid_gains", all(g in GAIN_FORMS for g in self.grid_gains),
                   f"must list gain forms of {', '.join(GAIN_FORMS)} (or none: only gains)"),
                  ("search", self.search in SEARCH_FORMS, f"must be one of {', '.join(SEARCH_FORMS)}"),
                  ("grid_search", all(f in SEARCH_FORMS for f in self.grid_search),
                   f"must list searches of {', '.join(SEARCH_FORMS)} (or none: only search)"),
                  ("nbest", self.nbest >= 0, "must not be negative (0: the full lattice)"),
                  ("grid_nbest", all(n >= 0 for n in self.grid_nbest),
                   "must list sizes that are not negative (0: the full lattice; none: only nbest)"),
                  ("max_evidence_states", self.max_evidence_states >= 0, "must not be negative (0: no bound)"),
                  ("theta_convention", self.theta_convention in ("plain", "scaled"), "must be 'plain' or 'scaled'"),
                  ("theta_t", self.theta_t > 0, "must be positive"))
        return [(key, problem) for key, ok, problem in checks if not ok]


@dataclass(frozen=True)
class SampleMbrProfile:
    """MBR over the NMT's own samples ([mbr]: the rows TNMT-MBR, LTNMT-smp, LTNMT-mix and MBR-union): epsilon
    sampling of the Transformer, the utility of MBR selection and the lattice's weight in the mixed evidence, the last
    two chosen on the tuning window ([lmbr] tune_start and tune_sentences)."""

    samples: int = 32  # samples per sentence (candidates and pseudo-references)
    epsilon: float = 0.02  # tokens below this probability are never drawn (Freitag et al. 2023)
    seed: int = 1  # the samples of a sentence follow from the seed and the sentence's index
    utilities: tuple[str, ...] = ("chrf", "bleu")  # the utilities MBR selection tries on the tuning window
    grid_lattice_share: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)  # w of LTNMT-mix: w x the lattice's
    #                                  posteriors + (1 - w) x the samples'; chosen by tuning BLEU (ties: the first)

    def problems(self) -> list[tuple[str, str]]:
        checks = [("samples", self.samples >= 1, "must be at least 1"),
                  ("epsilon", 0 <= self.epsilon < 1, "must be in [0, 1)"),
                  ("utilities", bool(self.utilities) and all(u in MBR_UTILITIES for u in self.utilities),
                   f"must list utilities of {', '.join(MBR_UTILITIES)}"),
                  ("grid_lattice_share", bool(self.grid_lattice_share)
                   and all(0 <= w <= 1 for w in self.grid_lattice_share), "must list weights in [0, 1]")]
        return [(key, problem) for key, ok, problem in checks if not ok]


@dataclass(frozen=True)
class VariantProfile:
    """A system variant of Table 2 (paper, section 4.3): settings that override the profile's for one decoding."""

    description: str
    beam: int  # NMT beam
    threshold: float  # NMT early pruning (0: off)
    single_model: bool  # FNMT: the first seed's model instead of the ensemble
    lmbr_nbest: int  # LMBR evidence space: 0 = the full lattice, K = the K best strings
    pbmt_stack_limit: int  # PBMT stack limit of the lattices (0: the profile's)
    pbmt_distortion_limit: int  # PBMT distortion limit (0: the profile's)
    pbmt_options_per_phrase: int = 0  # PBMT translation options per source phrase (0: the profile's)
    pbmt_nbest: int = -1  # size of the PBMT n-best list written beside the lattices (-1: the profile's; 0: none)
    # LMBR decodes with its system's tuned choices (Table 1's): TuneSearch's search form and TuneLMBR's evidence space
    # (alpha, n-best), over the variant's lattices; lmbr_nbest then only names the variant's default L. Lambda and
    # the gain form are the tuned ones in every variant.
    tuned_choices: bool = False
    # LMBR searches as TuneSearch chose for its system (anchored or free) but over the variant's own lattices and
    # evidence space (tuned_choices implies it)
    tuned_search: bool = False
    # FNMT with single_model: the ensemble unfolded and shrunk without data to one member's size (the paper's
    # accelerated system: Stahlberg and Byrne 2017) instead of the first seed's model
    shrunken: bool = False

    def searches_as_tuned(self) -> bool:
        """Whether LMBR takes its system's tuned search form (anchored or free) rather than the free search."""
        return self.tuned_choices or self.tuned_search

    def problems(self) -> list[tuple[str, str]]:
        checks = [("beam", self.beam >= 1, "must be at least 1"),
                  ("shrunken", self.single_model or not self.shrunken, "needs single_model = true"),
                  ("threshold", 0 <= self.threshold <= 1, "must be in [0, 1]"),
                  ("lmbr_nbest", self.lmbr_nbest >= 0, "must not be negative"),
                  ("pbmt_stack_limit", self.pbmt_stack_limit >= 0, "must not be negative"),
                  ("pbmt_distortion_limit", self.pbmt_distortion_limit >= 0, "must not be negative"),
                  ("pbmt_options_per_phrase", self.pbmt_options_per_phrase >= 0, "must not be negative"),
                  ("pbmt_nbest", self.pbmt_nbest >= -1, "must be -1 (the profile's), 0 (none) or a list size")]
        return [(key, problem) for key, ok, problem in checks if not ok]


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    seed: int
    data: DataProfile
    bpe: BpeProfile
    lm: LmProfile
    pbmt: PbmtProfile
    nmt: NmtProfile
    decode: DecodeProfile
    lmbr: LmbrProfile
    variants: dict[str, VariantProfile] = field(default_factory=dict)  # Table 2: research, accelerated
    mbr: SampleMbrProfile = field(default_factory=SampleMbrProfile)  # MBR over the NMT's samples
    path: Path = Path()

    def variant(self, name: str) -> VariantProfile:
        """The named variant (ConfigError naming the profile file when there is none)."""
        if name not in self.variants:
            raise ConfigError(f"{self.path}: no [variants.{name}] (known: {', '.join(self.variants) or 'none'})")
        return self.variants[name]

    def problems(self) -> list[tuple[str, str]]:
        """(full key, what is wrong) for every value that is out of range, section by section."""
        sections = [("lm", self.lm), ("data", self.data), ("pbmt", self.pbmt), ("nmt", self.nmt),
                    ("decode", self.decode), *((f"variants.{name}", v) for name, v in self.variants.items()),
                    ("lmbr", self.lmbr), ("mbr", self.mbr)]
        found = [(f"{prefix}.{key}", problem) for prefix, section in sections for key, problem in section.problems()]
        end = self.lmbr.tune_window().stop
        if self.data.tune_sentences and end > self.data.tune_sentences:
            found.append(("lmbr.tune_start", f"the tuning window ends at sentence {end} (tune_start "
                          f"{self.lmbr.tune_start} + tune_sentences {self.lmbr.tune_sentences}), past the "
                          f"{self.data.tune_sentences} tuning lines that [data] tune_sentences prepares"))
        for key, window in (("rescoring_sentences", self.lmbr.rescoring_window()),
                            ("search_sentences", self.lmbr.search_window())):
            if self.data.tune_sentences and window.stop > self.data.tune_sentences:
                found.append((f"lmbr.{key}", f"{window.stop} sentences, past the {self.data.tune_sentences} "
                              "tuning lines that [data] tune_sentences prepares"))
        for arch in ("gru", "transformer"):
            variant = getattr(self.nmt, arch).training.distillation_variant
            if variant and variant not in self.variants:
                found.append((f"nmt.{arch}.training.distillation_variant",
                              f"names no [variants.{variant}] (known: {', '.join(self.variants) or 'none'})"))
        return found
