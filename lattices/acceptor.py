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
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import numpy as np

from lattices.lattice import Lattice

if TYPE_CHECKING:
    from lattices.units import TokenMapper

__all__ = ["Acceptor", "acceptor_of_lattice", "build_acceptor_shard", "load_acceptors", "save_acceptors"]

_UNREACHABLE = np.iinfo(np.int64).max // 4


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
        rows = sorted(set(tuple(arc) + (0.0,) * (4 - len(arc)) for arc in arcs))
        table = np.asarray([r[:3] for r in rows], np.int64).reshape(-1, 3)
        src, label, dst = table[:, 0], table[:, 1], table[:, 2]
        if table.size and np.any((src[1:] == src[:-1]) & (label[1:] == label[:-1])):
            k = int(np.flatnonzero((src[1:] == src[:-1]) & (label[1:] == label[:-1]))[0])
            raise ValueError(f"not deterministic: state {src[k]} has two arcs labelled {label[k]}")
        final_costs = dict(final) if isinstance(final, Mapping) else dict.fromkeys(final, 0.0)
        is_final, final_cost = np.zeros(num_states, bool), np.zeros(num_states)
        is_final[list(final_costs)] = True
        final_cost[list(final_costs)] = list(final_costs.values())
        return cls(src, label, dst, is_final, _fewest_tokens_to_final(num_states, src, dst, is_final),
                   np.asarray([r[3] for r in rows], np.float64), final_cost)

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
        to_end = _cheapest_completion(lattice)
        src, dst, label = lattice.src.tolist(), lattice.dst.tolist(), lattice.label.tolist()
        # an arc's excess cost: its cost and the best completion after it, over the best completion before it
        excess = (lattice.cost + to_end[lattice.dst] - to_end[lattice.src]).clip(min=0.0).tolist()
        starts = [d for s, d, x in zip(src, dst, label) if s == lattice.start and x == bos_id]
        start = starts[0] if len(starts) == 1 else lattice.start  # without a leading <s>: the lattice's start
        keep = [(s, x, d, c) for s, d, x, c in zip(src, dst, label, excess) if x not in (bos_id, eos_id) or
                (x == bos_id and s != lattice.start)]
        finals: dict[int, float] = {}
        for s, x, c in zip(src, label, excess):
            if x == eos_id:
                finals[s] = min(finals.get(s, np.inf), c)
        for q in np.flatnonzero(np.isfinite(lattice.final)).tolist():
            finals[q] = min(finals.get(q, np.inf), max(0.0, float(lattice.final[q] - to_end[q])))
        # renumber the states reachable from the start, the start first
        order, seen, out = [start], {start}, {}
        for s, x, d, _ in keep:
            out.setdefault(s, []).append((x, d))
        for q in order:
            for _, d in out.get(q, ()):
                if d not in seen:
                    seen.add(d)
                    order.append(d)
        number = {q: i for i, q in enumerate(order)}
        arcs = [(number[s], x, number[d], c) for s, x, d, c in keep if s in number]
        acceptor = cls.build(len(order), arcs, {number[q]: c for q, c in finals.items() if q in number})
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
        return int(self.to_final[0]) if self.num_states and self.to_final[0] < _UNREACHABLE else None

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
    best = lattice.final.astype(np.float64).copy()
    order = np.argsort(-lattice.src, kind="stable")  # arcs by source state, last state first
    src, dst, cost = lattice.src[order].tolist(), lattice.dst[order].tolist(), lattice.cost[order].tolist()
    for s, d, c in zip(src, dst, cost):
        if c + best[d] < best[s]:
            best[s] = c + best[d]
    return best


def _fewest_tokens_to_final(n: int, src: np.ndarray, dst: np.ndarray, final: np.ndarray) -> np.ndarray:
    """Backward relaxation in reverse topological order; ValueError on a cycle."""
    out: list[list[int]] = [[] for _ in range(n)]
    indegree = np.zeros(n, np.int64)
    for s, d in zip(src.tolist(), dst.tolist()):
        out[s].append(d)
        indegree[d] += 1
    order, ready = [], [q for q in range(n) if indegree[q] == 0]
    while ready:
        q = ready.pop()
        order.append(q)
        for d in out[q]:
            indegree[d] -= 1
            if indegree[d] == 0:
                ready.append(d)
    if len(order) != n:
        raise ValueError("the acceptor has a cycle")
    dist = np.where(final, 0, _UNREACHABLE).astype(np.int64)
    for q in reversed(order):
        for d in out[q]:
            dist[q] = min(dist[q], dist[d] + 1)
    return dist


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
    from lattices.fst_io import read_lattice, sentence_index
    from lattices.units import TokenMapper, map_lattice

    mapper = mapper if mapper is not None else TokenMapper.from_files(codes, vocab)
    bos, eos = mapper.vocab.bos_id, mapper.vocab.eos_id
    acceptors = {sentence_index(Path(p)): acceptor_of_lattice(map_lattice(read_lattice(Path(p)), mapper), bos, eos,
                                                              nbest, engine, max_states) for p in lattice_paths}
    save_acceptors(out_path, acceptors)
    return {"sentences": len(acceptors), "states": int(sum(a.num_states for a in acceptors.values())),
            "arcs": int(sum(a.arc_src.size for a in acceptors.values())),
            "empty": sorted(s for s, a in acceptors.items() if a.shortest() is None)}
