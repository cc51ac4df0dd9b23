"""Compiled kernels (numba) of the exact n-gram posteriors: history expansion, the windowed forward pass, and
the direct sum over an n-best list.

:mod:`lattices.posteriors` calls them; the maths is ALGORITHMS.md section 2. On lattices, two ideas make them fast:

- **Expansion with integer histories.** A history (the last N-1 tokens) is itself an n-gram, so it is held as
  that n-gram's id. N-grams form a trie: n-gram ``g`` = ``prefix[g]`` followed by ``last[g]``, and
  ``suffix[g]`` is ``g`` without its first token (the suffix link). Reading token ``x`` after history ``h``
  creates or finds the n-grams ``x``, ``s_1 x``, ..., ``h x`` (``s_k`` the suffixes of ``h``, found along the
  suffix links) in the order of increasing length. States, arcs and n-gram ids come out in exactly the order of
  the dictionary-of-tuples expansion this replaces.
- **First occurrences, in a window.** With ``P(e)`` the posterior of arc ``e = (s -> t)`` and
  ``r_s[u] = P(prefix contains u | the path reaches s)``, a path contains ``u`` exactly when it has a first arc
  carrying ``u``, so (Markov property of the DAG)

      p(u) = sum over arcs e = (s -> t) carrying u of P(e) * (1 - r_s[u]).

  ``r_s[u]`` is only needed at the sources of arcs carrying ``u``, and it is 0 before the first state an arc
  carrying ``u`` enters. So ``u`` needs a slot in the state vectors only from ``first(u)`` (the smallest head of
  an arc carrying it) to ``last(u)`` (the largest), and only when some arc carrying it leaves a state at or after
  ``first(u)`` (otherwise ``p(u)`` is the plain sum of ``P(e)``). Slots are reused once ``last(u)`` is passed; a
  slot read from a state ``s`` counts only if its current n-gram was already live at ``s``. The vectors are as
  wide as the largest number of live n-grams at one state, a tenth of the n-grams of a phrase-based lattice or
  less, and each is released after its last successor (a pool of buffers).
- **Breadth-first visits, the numbering's sums.** "Before" above is any topological order, and the states are
  visited breadth-first, which on a determinised lattice (numbered depth-first by OpenFst's topological sort) makes
  the windows and the set of vectors alive at once about a quarter smaller. Each state still sums its incoming
  arcs in the numbering's order, a ratio outside its window is an exact 0.0 in either order, and each arc's term of
  ``p(u)`` is added in the numbering's order at the end: the posteriors are the same to the bit.

The ratios ``r`` stay in [0, 1] and every exponent is a difference of log forward and backward weights, so
nothing underflows however long the lattice.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from lattices.kernel_containers import lookup, new_table, room, set_new, stable_order, table_room

__all__ = ["by_destination", "expand", "forward", "ngram_tokens", "string_sums"]

_NONE = -1



# the counters of an expansion in progress (an int64 array shared by expand and _expand_into)
_STATE, _CHAIN, _EXPANDED, _ARCS, _IDS, _GRAMS = range(6)


@njit(cache=True)
def expand(num_states: int, out_ptr: np.ndarray, out_dst: np.ndarray, out_label: np.ndarray, out_cost: np.ndarray,
           order: int):
    """The history-expanded lattice of an acyclic acceptor whose arcs are grouped by source (CSR ``out_ptr``
    [num_states+1]; labels 0 are epsilons) and whose start is state 0.

    Returns (orig [E]: the original state of each expanded state; src, dst [A]: expanded states; cost [A];
    gram_ptr [A+1], gram_ids: the n-grams (orders 1..order) ending on each arc; prefix, last [G]: the n-gram trie;
    gram_order [G]). Expanded state 0 is the start.

    The work is done by :func:`_expand_into`, which stops where its arrays run out of room; they grow here, between
    its calls, so that no array is replaced inside its loops (a replacement there costs reference counting on
    every state).
    """
    arcs = out_dst.size
    counts = np.zeros(6, np.int64)
    counts[_CHAIN] = _NONE
    # first sizes: on phrase-based lattices the median is 1.3 expanded states per state, 1.25 expanded arcs per arc,
    # 5 n-gram ids and 1.1 n-grams per arc (1000 eng-ger lattices); about 1 in 100 outgrows these
    child_keys, child_values = new_table(2 * arcs + 16)
    state_keys, state_values = new_table(2 * num_states + 16)
    grams = 2 * arcs + 64
    prefix, last = np.empty(grams, np.int64), np.empty(grams, np.int64)
    suffix, gram_order = np.empty(grams, np.int64), np.empty(grams, np.int64)
    gram_ids = np.empty(6 * arcs + 64, np.int64)
    states = 2 * num_states + 64
    orig, hist, chain_next = np.empty(states, np.int64), np.empty(states, np.int64), np.empty(states, np.int64)
    src, dst, cost = np.empty(2 * arcs + 64, np.int64), np.empty(2 * arcs + 64, np.int64), np.empty(2 * arcs + 64)
    gram_ptr = np.zeros(2 * arcs + 65, np.int64)
    head = np.full(num_states, _NONE, np.int64)
    tail = np.full(num_states, _NONE, np.int64)
    orig[0], hist[0], chain_next[0] = 0, _NONE, _NONE
    head[0] = tail[0] = 0
    set_new(state_keys, state_values, 0, 0)  # state key: (hist + 1) * num_states + state
    counts[_EXPANDED] = 1
    needed = np.zeros(4, np.int64)  # n-grams, ids, expanded states, arcs: what the next state needs
    while not _expand_into(num_states, out_ptr, out_dst, out_label, out_cost, order, counts, needed, child_keys,
                           child_values, state_keys, state_values, prefix, last, suffix, gram_order, gram_ids, orig,
                           hist, chain_next, head, tail, src, dst, cost, gram_ptr):
        child_keys, child_values = table_room(child_keys, child_values, needed[0])
        state_keys, state_values = table_room(state_keys, state_values, needed[2])
        prefix, last = room(prefix, 2 * needed[0]), room(last, 2 * needed[0])
        suffix, gram_order = room(suffix, 2 * needed[0]), room(gram_order, 2 * needed[0])
        gram_ids = room(gram_ids, 2 * needed[1])
        orig, hist, chain_next = room(orig, 2 * needed[2]), room(hist, 2 * needed[2]), room(chain_next, 2 * needed[2])
        src, dst, cost = room(src, 2 * needed[3]), room(dst, 2 * needed[3]), room(cost, 2 * needed[3])
        gram_ptr = room(gram_ptr, 2 * needed[3] + 1)
    n_exp, n_arcs, n_ids, n_grams = counts[_EXPANDED], counts[_ARCS], counts[_IDS], counts[_GRAMS]
    return (orig[:n_exp].copy(), src[:n_arcs].copy(), dst[:n_arcs].copy(), cost[:n_arcs].copy(),
            gram_ptr[:n_arcs + 1].copy(), gram_ids[:n_ids].copy(), prefix[:n_grams].copy(), last[:n_grams].copy(),
            gram_order[:n_grams].copy())


@njit(cache=True)
def _expand_into(num_states, out_ptr, out_dst, out_label, out_cost, order, counts, needed, child_keys, child_values,
                 state_keys, state_values, prefix, last, suffix, gram_order, gram_ids, orig, hist, chain_next, head,
                 tail, src, dst, cost, gram_ptr) -> bool:
    """The expansion from where ``counts`` says it stands (the original state, the expanded state of its chain
    next, and how much is written), state by state, in place. Returns True when done; False, with ``needed`` set,
    when the next expanded state's arcs would not fit (nothing of it is written then)."""
    keep = order - 1
    base = np.int64(out_label.max()) + 1 if out_label.size else np.int64(1)
    n_exp, n_arcs, n_ids, n_grams = counts[_EXPANDED], counts[_ARCS], counts[_IDS], counts[_GRAMS]
    suffixes = np.empty(max(keep, 1), np.int64)
    q, e = counts[_STATE], counts[_CHAIN]
    while q < num_states:
        if e == _NONE:
            e = head[q]
        while e != _NONE:
            h = hist[e]
            m = 0  # suffixes[0] = h, suffixes[m-1] its last token
            g = h
            while g != _NONE:
                suffixes[m] = g
                m += 1
                g = suffix[g]
            # room for what this state's arcs can add: an arc, an expanded state and m + 1 n-grams each
            fan = out_ptr[q + 1] - out_ptr[q]
            needed[0], needed[1] = n_grams + fan * (m + 1), n_ids + fan * (m + 1)
            needed[2], needed[3] = n_exp + fan, n_arcs + fan
            if (2 * needed[0] > child_keys.size or needed[0] > prefix.size or needed[1] > gram_ids.size
                    or 2 * needed[2] > state_keys.size or needed[2] > orig.size or needed[3] + 1 > gram_ptr.size
                    or needed[3] > src.size):
                counts[_STATE], counts[_CHAIN] = q, e
                counts[_EXPANDED], counts[_ARCS], counts[_IDS], counts[_GRAMS] = n_exp, n_arcs, n_ids, n_grams
                return False
            for i in range(out_ptr[q], out_ptr[q + 1]):
                x = out_label[i]
                h2 = h
                if x != 0:
                    h2 = _NONE
                    previous = _NONE
                    for k in range(m, -1, -1):  # the n-gram of order m - k + 1: suffix of h of length m - k, then x
                        p = _NONE if k == m else suffixes[k]
                        key = (p + 1) * base + x
                        gid = lookup(child_keys, child_values, key)
                        if gid == _NONE:
                            gid = n_grams
                            set_new(child_keys, child_values, key, gid)
                            prefix[n_grams], last[n_grams], suffix[n_grams] = p, x, previous
                            gram_order[n_grams] = m - k + 1
                            n_grams += 1
                        gram_ids[n_ids] = gid
                        n_ids += 1
                        if m - k + 1 <= keep:
                            h2 = gid  # the history after x: its last min(m + 1, keep) tokens
                        previous = gid
                d = out_dst[i]
                key = (h2 + 1) * num_states + d
                t = lookup(state_keys, state_values, key)
                if t == _NONE:
                    t = n_exp
                    set_new(state_keys, state_values, key, t)
                    orig[n_exp], hist[n_exp], chain_next[n_exp] = d, h2, _NONE
                    if head[d] == _NONE:
                        head[d] = t
                    else:
                        chain_next[tail[d]] = t
                    tail[d] = t
                    n_exp += 1
                src[n_arcs], dst[n_arcs], cost[n_arcs] = e, t, out_cost[i]
                n_arcs += 1
                gram_ptr[n_arcs] = n_ids
            e = chain_next[e]
        q += 1
    counts[_STATE], counts[_CHAIN] = q, e
    counts[_EXPANDED], counts[_ARCS], counts[_IDS], counts[_GRAMS] = n_exp, n_arcs, n_ids, n_grams
    return True


@njit(cache=True)
def by_destination(orig: np.ndarray, num_original: int, src: np.ndarray, dst: np.ndarray, cost: np.ndarray,
                   gram_ptr: np.ndarray, gram_ids: np.ndarray):
    """The expanded lattice as :func:`forward` takes it: states renumbered by their original state (stably, so the
    numbering stays topological), arcs ordered by destination (stably), each arc's n-grams moved with it.

    Returns (state_order [E]: the expanded state at each new number, src, dst, cost [A], gram_ptr [A+1],
    gram_ids): the stable argsorts of numpy, as counting sorts.
    """
    state_order = stable_order(orig, num_original)
    renumber = np.empty(state_order.size, np.int64)
    for k in range(state_order.size):
        renumber[state_order[k]] = k
    new_dst = np.empty(dst.size, np.int64)
    for i in range(dst.size):
        new_dst[i] = renumber[dst[i]]
    arc_order = stable_order(new_dst, state_order.size)
    out_src = np.empty(src.size, np.int64)
    out_dst = np.empty(dst.size, np.int64)
    out_cost = np.empty(cost.size, np.float64)
    out_ptr = np.empty(gram_ptr.size, np.int64)
    out_ids = np.empty(gram_ids.size, np.int64)
    out_ptr[0] = 0
    n = 0
    for k in range(arc_order.size):
        i = arc_order[k]
        out_src[k], out_dst[k], out_cost[k] = renumber[src[i]], new_dst[i], cost[i]
        for j in range(gram_ptr[i], gram_ptr[i + 1]):
            out_ids[n] = gram_ids[j]
            n += 1
        out_ptr[k + 1] = n
    return state_order, out_src, out_dst, out_cost, out_ptr, out_ids


@njit(cache=True)
def string_sums(tokens: np.ndarray, offsets: np.ndarray, weights: np.ndarray, order: int):
    """The direct sum over strings: p(u) = sum of weights[s] over the strings s that contain u (each string counts
    once per n-gram), strings s = tokens[offsets[s]:offsets[s+1]], accumulated in string order.

    Returns (values [G], prefix, last, gram_order [G]): the n-grams as a trie (see :func:`ngram_tokens`).
    """
    base = np.int64(tokens.max()) + 1 if tokens.size else np.int64(1)
    child_keys, child_values = new_table(2 * tokens.size)
    prefix = np.empty(64, np.int64)
    last = np.empty(64, np.int64)
    gram_order = np.empty(64, np.int64)
    values = np.zeros(64)
    counted_by = np.empty(64, np.int64)  # the last string that counted the n-gram
    n_grams = 0
    for s in range(offsets.size - 1):
        lo, hi = offsets[s], offsets[s + 1]
        needed = n_grams + (hi - lo) * order  # room for every n-gram this string can add
        child_keys, child_values = table_room(child_keys, child_values, needed)
        prefix, last, gram_order = room(prefix, needed), room(last, needed), room(gram_order, needed)
        values, counted_by = room(values, needed), room(counted_by, needed)
        for i in range(lo, hi):
            node = _NONE
            for n in range(1, min(order, hi - i) + 1):
                x = tokens[i + n - 1]
                key = (node + 1) * base + x
                g = lookup(child_keys, child_values, key)
                if g == _NONE:
                    g = n_grams
                    set_new(child_keys, child_values, key, g)
                    prefix[n_grams], last[n_grams], gram_order[n_grams] = node, x, n
                    values[n_grams], counted_by[n_grams] = 0.0, _NONE
                    n_grams += 1
                if counted_by[g] != s:
                    counted_by[g] = s
                    values[g] += weights[s]
                node = g
    return values[:n_grams].copy(), prefix[:n_grams].copy(), last[:n_grams].copy(), gram_order[:n_grams].copy()


@njit(cache=True)
def ngram_tokens(prefix: np.ndarray, last: np.ndarray, gram_order: np.ndarray, order: int) -> np.ndarray:
    """[G, order] the tokens of each n-gram of the trie, left-aligned, -1 after them."""
    out = np.full((prefix.size, max(order, 1)), -1, np.int64)
    for g in range(prefix.size):
        k, node = gram_order[g] - 1, g
        while node != _NONE:
            out[g, k] = last[node]
            node = prefix[node]
            k -= 1
    return out


@njit(cache=True)
def _log_add(a: float, b: float) -> float:
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a < b:
        a, b = b, a
    return a + np.log1p(np.exp(b - a))


@njit(cache=True)
def _breadth_first_places(num_states: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """[num_states] each state's place in a breadth-first topological order from state 0 (Kahn's algorithm, first
    in first out, successors in arc order): a state's vector is then needed for a shorter stretch than in a
    depth-first numbering."""
    indegree = np.zeros(num_states, np.int64)
    for i in range(src.size):
        indegree[dst[i]] += 1
    by_src = stable_order(src, num_states)
    out_ptr = np.searchsorted(src[by_src], np.arange(num_states + 1))
    queue = np.empty(num_states, np.int64)
    queue[0] = 0
    head, tail = 0, 1
    while head < tail:
        q = queue[head]
        head += 1
        for j in range(out_ptr[q], out_ptr[q + 1]):
            d = dst[by_src[j]]
            indegree[d] -= 1
            if indegree[d] == 0:
                queue[tail] = d
                tail += 1
    if tail < num_states:  # a state not reachable from 0: keep the numbering's order
        return np.arange(num_states)
    at = np.empty(num_states, np.int64)
    at[queue[:tail]] = np.arange(tail)
    return at


@njit(cache=True)
def forward(num_states: int, src: np.ndarray, dst: np.ndarray, cost: np.ndarray, gram_ptr: np.ndarray,
            gram_ids: np.ndarray, final: np.ndarray, num_grams: int, breadth_first: bool = True) -> np.ndarray:
    """[G] at-least-once posteriors of the n-grams on the arcs of an acyclic expanded lattice whose states are
    numbered topologically (start 0) and whose arcs are sorted by destination; every path weighs exp(-cost).

    ``breadth_first``: compute the ratios in breadth-first order (less memory, fewer live slots) rather than in the
    numbering's; the result is the same to the bit, since every sum runs in the numbering's order either way (a
    ratio read outside its n-gram's window in one order is an exact 0.0 in the other).
    """
    n_arcs = src.size
    in_ptr = np.searchsorted(dst, np.arange(num_states + 1))
    # forward (log) weights: a[t] = log sum over incoming arcs of exp(a[s] - cost)
    log_a = np.full(num_states, -np.inf)
    log_a[0] = 0.0
    for t in range(1, num_states):
        top = -np.inf
        for i in range(in_ptr[t], in_ptr[t + 1]):
            top = max(top, log_a[src[i]] - cost[i])
        total = 0.0
        for i in range(in_ptr[t], in_ptr[t + 1]):
            total += np.exp(log_a[src[i]] - cost[i] - top)
        log_a[t] = top + np.log(total)
    # backward (log) weights: b[s] = log (exp(-final[s]) + sum over outgoing arcs of exp(-cost + b[t]))
    log_b = -final.copy()
    for i in range(n_arcs - 1, -1, -1):  # arcs by destination, descending: every b[t] is complete when read
        log_b[src[i]] = _log_add(log_b[src[i]], log_b[dst[i]] - cost[i])
    log_z = log_b[0]
    # the ratios are computed state by state in breadth-first order (at[t]: t's place), which keeps windows and
    # the vectors alive at once smaller than the numbering's order; the sums stay those of the numbering's order
    at = _breadth_first_places(num_states, src, dst) if breadth_first else np.arange(num_states)
    # the window of each n-gram, in places: first(u) = earliest head, last(u) = latest head, last_src(u) = latest tail
    first = np.full(num_grams, num_states, np.int64)
    last = np.full(num_grams, -1, np.int64)
    last_src = np.full(num_grams, -1, np.int64)
    for i in range(n_arcs):
        for k in range(gram_ptr[i], gram_ptr[i + 1]):
            u = gram_ids[k]
            first[u] = min(first[u], at[dst[i]])
            last[u] = max(last[u], at[dst[i]])
            last_src[u] = max(last_src[u], at[src[i]])
    live = first <= last_src
    starts = np.flatnonzero(live)
    starts = starts[stable_order(first[starts], num_states)]
    ends = starts[stable_order(last[starts], num_states)]
    # each state's vector is released after the last place that reads it (its own when none does)
    release_at = at.copy()
    for i in range(n_arcs):
        release_at[src[i]] = max(release_at[src[i]], at[dst[i]])
    releases = stable_order(release_at, num_states)
    # sizes: slots = the most n-grams live at once, buffers = the most vectors alive at once
    width = 0
    live_now = 0
    j = 0
    k = 0
    for p in range(num_states):
        while j < ends.size and last[ends[j]] < p:
            live_now -= 1
            j += 1
        while k < starts.size and first[starts[k]] == p:
            live_now += 1
            k += 1
        width = max(width, live_now)
    alive = np.zeros(num_states + 1, np.int64)
    for s in range(num_states):
        alive[at[s]] += 1
        alive[release_at[s] + 1] -= 1
    buffers = int(np.max(np.cumsum(alive))) if num_states else 0
    pool = np.empty((buffers, width))  # a vector's slots up to `high` are cleared when a state takes it
    free_buffers = np.arange(buffers - 1, -1, -1)
    n_free_buffers = buffers
    buffer_of = np.full(num_states, -1, np.int64)
    slot_of = np.full(num_grams, -1, np.int64)
    slot_first = np.full(width, num_states, np.int64)  # first(u) of the slot's n-gram (num_states: free)
    free_slots = np.arange(width - 1, -1, -1)
    n_free_slots = width
    high = 0  # 1 + the highest slot ever used
    order = np.empty(num_states, np.int64)  # the state at each place
    order[at] = np.arange(num_states)
    gained = np.zeros(gram_ids.size)  # each (arc, n-gram) entry's term of p(u), added in arc order at the end
    next_start = 0
    next_end = 0
    next_release = 0
    for p in range(num_states):
        t = order[p]
        while next_end < ends.size and last[ends[next_end]] < p:  # windows that closed before p
            slot = slot_of[ends[next_end]]
            slot_first[slot] = num_states
            free_slots[n_free_slots] = slot
            n_free_slots += 1
            next_end += 1
        while next_start < starts.size and first[starts[next_start]] == p:  # windows that open at p
            u = starts[next_start]
            n_free_slots -= 1
            slot = free_slots[n_free_slots]
            slot_of[u] = slot
            slot_first[slot] = p
            high = max(high, slot + 1)
            next_start += 1
        n_free_buffers -= 1
        buffer_of[t] = free_buffers[n_free_buffers]
        r = pool[buffer_of[t]]
        r[:high] = 0.0  # a slot from `high` on opens after t: read from t never (slot_first is later)
        for i in range(in_ptr[t], in_ptr[t + 1]):  # in the numbering's order, as every sum below
            s = src[i]
            place = at[s]
            g = np.exp(log_a[s] - cost[i] - log_a[t])
            rs = pool[buffer_of[s]]
            for k in range(high):
                if slot_first[k] <= place:
                    r[k] += g * rs[k]
            arc_posterior = np.exp(log_a[s] - cost[i] + log_b[t] - log_z)
            for k in range(gram_ptr[i], gram_ptr[i + 1]):
                u = gram_ids[k]
                slot = slot_of[u]
                seen = 0.0
                if slot >= 0:
                    if slot_first[slot] <= place:
                        seen = rs[slot]
                    r[slot] += g * (1.0 - seen)
                gained[k] = arc_posterior * (1.0 - seen)
        while next_release < num_states and release_at[releases[next_release]] <= p:  # vectors nobody reads again
            free_buffers[n_free_buffers] = buffer_of[releases[next_release]]
            n_free_buffers += 1
            next_release += 1
    posterior = np.zeros(num_grams)
    for k in range(gram_ids.size):
        posterior[gram_ids[k]] += gained[k]
    return np.minimum(np.maximum(posterior, 0.0), 1.0)
