"""A deterministic acceptor over NMT target units: the strings a constrained search may produce.

Lattice-constrained decoding (Stahlberg et al. 2016; the paper's section 4.2) keeps an NMT search inside the
strings of a sentence's PBMT lattice; terminology constraints keep it inside the strings that contain given
terms. Both reach the decoder as an :class:`Acceptor`, whatever built it:

- states 0..Q-1, state 0 the start; arcs (src, label, dst), at most one per (src, label), sorted by (src, label);
- ``final[q]``: the end of sentence (EOS) may follow in state q. EOS is never an arc label: a lattice's
  ``</s>`` arcs become final states (:meth:`Acceptor.from_lattice`), as its leading ``<s>`` becomes the start;
- ``to_final[q]``: the fewest tokens from q to a final state (the decoder forbids a token whose path could not end
  within the length limit);
- ``arc_cost[a]`` and ``final_cost[q]`` (>= 0): what a string's path costs over the best accepted string. A
  lattice's costs are pushed towards the start (:meth:`Acceptor.from_lattice`): the costs along any accepted
  string sum to its cost minus the best string's, and the cost of a prefix is what its best completion loses, so a
  left-to-right search that adds ``-weight * cost`` ranks prefixes by their best complete strings (lattice
  rescoring with the PBMT's own score, as Stahlberg et al. 2016 combine the NMT with the SMT lattice's weights).
  Acceptors of strings (terminology) cost nothing.

An acceptor with no state accepts nothing (a lattice with no complete path): the caller decodes such a sentence
unconstrained. The acceptors of a split's PBMT lattices (:func:`build_acceptor_shard`) accept the strings of the
same evidence space as L (full lattice within the state bound, or its n best), stored per shard as npz.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

import numpy as np

from lattices.acceptor_kernels import UNREACHABLE, cheapest_completion, fewest_tokens_to_final, reachable_order
from lattices.lattice import Lattice

if TYPE_CHECKING:
    from lattices.units import TokenMapper

__all__ = ["Acceptor", "acceptor_of_lattice", "build_acceptor_shard", "load_acceptors", "save_acceptors",
           "write_acceptor_shard"]

@dataclass(frozen=True)
class Acceptor:
    """A deterministic acyclic acceptor (see the module docstring)."""

    arc_src: np.ndarray    # [A] int64, sorted with arc_label
    arc_label: np.ndarray  # [A] int64
    arc_dst: np.ndarray    # [A] int64
    final: np.ndarray      # [Q] bool
    to_final: np.ndarray   # [Q] int64
    arc_cost: np.ndarray = field(default=None)    # [A] float64 >= 0 (None: zeros)
    final_cost: np.ndarray = field(default=None)  # [Q] float64 >= 0, the cost of ending there (None: zeros)

    def __post_init__(self) -> None:
        if self.arc_cost is None:
            object.__setattr__(self, "arc_cost", np.zeros(self.arc_src.size))
        if self.final_cost is None:
            object.__setattr__(self, "final_cost", np.zeros(self.final.size))

    @classmethod
    def build(cls, num_states: int, arcs: Iterable[tuple], final: Iterable[int] | Mapping[int, float]) -> "Acceptor":
        """From (src, label, dst) or (src, label, dst, cost) arcs and the final states (or {state: final cost});
        ValueError if it is not deterministic or has a cycle."""
        rows = [tuple(arc) + (0.0,) * (4 - len(arc)) for arc in arcs]
        table = np.asarray([r[:3] for r in rows], np.int64).reshape(-1, 3)
        final_costs = dict(final) if isinstance(final, Mapping) else dict.fromkeys(final, 0.0)
        final_cost = np.full(num_states, np.inf)
        final_cost[list(final_costs)] = list(final_costs.values())
        return cls._from_arrays(num_states, table[:, 0], table[:, 1], table[:, 2],
                                np.asarray([r[3] for r in rows], np.float64), final_cost)

    @classmethod
    def _from_arrays(cls, num_states: int, src: np.ndarray, label: np.ndarray, dst: np.ndarray, cost: np.ndarray,
                     final_cost: np.ndarray) -> "Acceptor":
        """:meth:`build` from arc arrays and [Q] final costs (inf: not final): the arcs sorted by (src, label, dst,
        cost), equal ones once."""
        order = np.lexsort((cost, dst, label, src))
        src, label, dst, cost = src[order], label[order], dst[order], cost[order]
        if src.size:
            repeat = np.zeros(src.size, bool)
            repeat[1:] = (src[1:] == src[:-1]) & (label[1:] == label[:-1]) & (dst[1:] == dst[:-1]) & \
                         (cost[1:] == cost[:-1])
            src, label, dst, cost = src[~repeat], label[~repeat], dst[~repeat], cost[~repeat]
        clash = (src[1:] == src[:-1]) & (label[1:] == label[:-1])
        if clash.any():
            k = int(np.flatnonzero(clash)[0])
            raise ValueError(f"not deterministic: state {src[k]} has two arcs labelled {label[k]}")
        is_final = np.isfinite(final_cost)
        to_final = fewest_tokens_to_final(num_states, src, dst, is_final)
        if to_final.size != num_states:
            raise ValueError("the acceptor has a cycle")
        return cls(src, label, dst, is_final, to_final, cost, np.where(is_final, final_cost, 0.0))

    @classmethod
    def from_lattice(cls, lattice: Lattice, bos_id: int, eos_id: int) -> "Acceptor":
        """A deterministic lattice over units (e.g. the evidence space of lattices/evidence.py) as an acceptor:
        the state after its leading ``<s>`` is the start, a state with a ``</s>`` arc is final, and the arcs
        after ``</s>`` go. Costs are pushed towards the start (the module docstring). Epsilon (label 0) arcs are
        refused."""
        if lattice.num_states == 0:
            return cls.empty()
        if np.any(lattice.label == 0):
            raise ValueError("the lattice has epsilon arcs: remove them (and determinise) first")
        src, dst, label = lattice.src.astype(np.int64), lattice.dst.astype(np.int64), lattice.label.astype(np.int64)
        to_end = _cheapest_completion(lattice)
        # an arc's excess cost: its cost and the best completion after it, over the best completion before it
        excess = (lattice.cost + to_end[lattice.dst] - to_end[lattice.src]).clip(min=0.0)
        starts = dst[(src == lattice.start) & (label == bos_id)]
        start = int(starts[0]) if starts.size == 1 else lattice.start  # without a leading <s>: the lattice's start
        keep = ((label != bos_id) & (label != eos_id)) | ((label == bos_id) & (src != lattice.start))
        finals = np.full(lattice.num_states, np.inf)
        ends = label == eos_id
        np.minimum.at(finals, src[ends], excess[ends])
        ending = np.isfinite(lattice.final)
        finals[ending] = np.minimum(finals[ending], np.maximum(0.0, lattice.final[ending] - to_end[ending]))
        # renumber the states reachable from the start, the start first
        order = reachable_order(lattice.num_states, start, src[keep], dst[keep])
        number = np.full(lattice.num_states, -1, np.int64)
        number[order] = np.arange(order.size)
        arcs = keep & (number[src] >= 0)
        acceptor = cls._from_arrays(order.size, number[src[arcs]], label[arcs], number[dst[arcs]],
                                    excess[arcs].astype(np.float64), finals[order])
        return acceptor if acceptor.final.any() else cls.empty()

    @classmethod
    def from_strings(cls, strings: Sequence[Sequence[int]]) -> "Acceptor":
        """The prefix tree of some token strings (none: accepts nothing)."""
        children: list[dict[int, int]] = [{}]
        finals = set()
        for string in strings:
            q = 0
            for x in string:
                if x not in children[q]:
                    children[q][x] = len(children)
                    children.append({})
                q = children[q][x]
            finals.add(q)
        if not finals:
            return cls.empty()
        return cls.build(len(children), [(q, x, d) for q, kids in enumerate(children) for x, d in kids.items()],
                         finals)

    @classmethod
    def empty(cls) -> "Acceptor":
        none = np.zeros(0, np.int64)
        return cls(none, none, none, np.zeros(0, bool), none)

    @property
    def num_states(self) -> int:
        return int(self.final.size)

    def accepts(self, tokens: Sequence[int]) -> bool:
        q = 0
        if self.num_states == 0:
            return False
        for x in tokens:
            q = self.next_state(q, x)
            if q < 0:
                return False
        return bool(self.final[q])

    def next_state(self, state: int, token: int) -> int:
        """The state after `token` in `state`, -1 when there is no such arc."""
        k = self._arc(state, token)
        return int(self.arc_dst[k]) if k >= 0 else -1

    def _arc(self, state: int, token: int) -> int:
        """The index of the arc labelled `token` out of `state`, -1 when there is none."""
        lo = np.searchsorted(self.arc_src, state, "left")
        hi = np.searchsorted(self.arc_src, state, "right")
        k = lo + np.searchsorted(self.arc_label[lo:hi], token)
        return int(k) if k < hi and self.arc_label[k] == token else -1

    def shortest(self) -> int | None:
        """Tokens in the shortest accepted string (None: nothing is accepted)."""
        return int(self.to_final[0]) if self.num_states and self.to_final[0] < UNREACHABLE else None

    def cost(self, tokens: Sequence[int]) -> float:
        """The cost of an accepted string over the best one (inf when it is not accepted)."""
        q, total = 0, 0.0
        if self.num_states == 0:
            return np.inf
        for x in tokens:
            k = self._arc(q, x)
            if k < 0:
                return np.inf
            q, total = int(self.arc_dst[k]), total + float(self.arc_cost[k])
        return total + float(self.final_cost[q]) if self.final[q] else np.inf


def _cheapest_completion(lattice: Lattice) -> np.ndarray:
    """[Q] the cost of the best path from each state to the end (the lattice's states are topologically sorted)."""
    order = np.argsort(-lattice.src, kind="stable")  # arcs by source state, last state first
    return cheapest_completion(lattice.final.astype(np.float64), lattice.src.astype(np.int64),
                               lattice.dst.astype(np.int64), lattice.cost.astype(np.float64), order)


# ------------------------------------------------------------------------------------ acceptors of a split
def acceptor_of_lattice(lattice: Lattice, bos_id: int, eos_id: int, nbest: int = 0, engine: str = "openfst",
                        max_states: int = 0) -> Acceptor:
    """The acceptor of a lattice over units: the strings of its evidence space (lattices/evidence.py: the whole
    lattice determinised, within the state bound, or its n best strings). The strings do not depend on the
    semiring, so the tropical determinisation serves every LMBR setting."""
    from lattices.evidence import bounded_evidence_space

    if lattice.num_states == 0:
        return Acceptor.empty()
    space = bounded_evidence_space(lattice, "tropical", 1.0, nbest, engine, max_states).lattice
    return Acceptor.from_lattice(space, bos_id, eos_id)


def save_acceptors(path: Path, acceptors: dict[int, Acceptor]) -> None:
    """Several sentences' acceptors in one npz file (written atomically)."""
    from pipeline.io import atomic_path

    sentences = sorted(acceptors)
    parts = [acceptors[s] for s in sentences]

    def offsets(sizes) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(list(sizes), dtype=np.int64)]).astype(np.int64)

    arrays = {"sentences": np.asarray(sentences, np.int64),
              "state_offsets": offsets(a.num_states for a in parts),
              "arc_offsets": offsets(a.arc_src.size for a in parts),
              "arcs": np.concatenate([np.stack([a.arc_src, a.arc_label, a.arc_dst], 1) for a in parts])
              if parts else np.zeros((0, 3), np.int64),
              "final": np.concatenate([a.final for a in parts]) if parts else np.zeros(0, bool),
              "to_final": np.concatenate([a.to_final for a in parts]) if parts else np.zeros(0, np.int64),
              "arc_cost": np.concatenate([a.arc_cost for a in parts]) if parts else np.zeros(0),
              "final_cost": np.concatenate([a.final_cost for a in parts]) if parts else np.zeros(0)}
    with atomic_path(Path(path)) as tmp:
        with tmp.open("wb") as f:
            np.savez(f, **arrays)


def load_acceptors(paths: Iterable[Path]) -> dict[int, Acceptor]:
    """{sentence: acceptor} of the npz files of :func:`save_acceptors` (files without costs: zero costs)."""
    result = {}
    for path in paths:
        with np.load(Path(path), allow_pickle=False) as z:
            a = {k: z[k] for k in z.files}
        so, ao = a["state_offsets"], a["arc_offsets"]
        arc_cost = a.get("arc_cost", np.zeros(len(a["arcs"])))
        final_cost = a.get("final_cost", np.zeros(len(a["final"])))
        for k, sentence in enumerate(a["sentences"].tolist()):
            arcs = a["arcs"][ao[k]:ao[k + 1]]
            result[sentence] = Acceptor(arcs[:, 0].copy(), arcs[:, 1].copy(), arcs[:, 2].copy(),
                                        a["final"][so[k]:so[k + 1]].copy(), a["to_final"][so[k]:so[k + 1]].copy(),
                                        arc_cost[ao[k]:ao[k + 1]].copy(), final_cost[so[k]:so[k + 1]].copy())
    return result


def build_acceptor_shard(lattice_paths: Sequence[Path], codes: Path | None, vocab: Path, nbest: int, out_path: Path,
                         engine: str = "openfst", max_states: int = 0, mapper: TokenMapper | None = None) -> dict:
    """The acceptors of the given lattice files (``<i>.fst``, mapped to target units as for L) into ``out_path``;
    statistics: sentences, states, arcs, and the sentences whose lattice accepts nothing. ``mapper``: the
    TokenMapper of codes and vocab when the caller holds one (a server: loading the codes costs ~50 ms)."""
    from lattices.units import TokenMapper, map_lattice

    mapper = mapper if mapper is not None else TokenMapper.from_files(codes, vocab)
    return write_acceptor_shard(lattice_paths, lambda lattice: map_lattice(lattice, mapper), mapper.vocab.bos_id,
                                mapper.vocab.eos_id, nbest, out_path, engine, max_states)


def write_acceptor_shard(lattice_paths: Sequence[Path], to_units: Callable[[Lattice], Lattice], bos_id: int,
                         eos_id: int, nbest: int, out_path: Path, engine: str = "openfst",
                         max_states: int = 0) -> dict:
    """:func:`build_acceptor_shard` with any mapping of word lattices to target units (``to_units``: a word lattice
    -> the lattice in target ids, label 0 epsilon; ``bos_id``, ``eos_id``: the labels of its <s> and </s>)."""
    from lattices.fst_io import read_lattice, sentence_index

    acceptors = {sentence_index(Path(p)): acceptor_of_lattice(to_units(read_lattice(Path(p))), bos_id, eos_id, nbest,
                                                              engine, max_states) for p in lattice_paths}
    save_acceptors(out_path, acceptors)
    return {"sentences": len(acceptors), "states": int(sum(a.num_states for a in acceptors.values())),
            "arcs": int(sum(a.arc_src.size for a in acceptors.values())),
            "empty": sorted(s for s, a in acceptors.items() if a.shortest() is None)}
