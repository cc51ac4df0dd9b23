// The stack search of pipeline/smt/decoder.py (Decoder._search and Decoder._graph), compiled, against KenLM's
// own C++ model. It is the same search step for step: the same expansions in the same order, the same double
// arithmetic in the same order (built with -ffp-contract=off), the same insertion-ordered stacks and stable
// pruning, so it returns the same search graph, arc for arc and bit for bit. The Python search stays the
// reference (tests/pipeline/smt/test_compiled_search.py compares the two).
//
// C interface for ctypes (pipeline/smt/compiled_search.py):
//   pbmt_load(path, error, error_size) -> model handle or null (error filled)
//   pbmt_vocab(model, words, lengths, count, out)   KenLM word ids of '\n'-separated words
//   pbmt_search(model, inputs...) -> result handle; pbmt_result_* read it; pbmt_result_free frees it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lm/model.hh"
#include "util/murmur_hash.hh"

namespace {

using lm::WordIndex;
using lm::ngram::State;

// A coverage bitmask of up to 64 * W source words.
template <int W> struct Coverage {
  uint64_t bits[W] = {};

  bool operator==(const Coverage &o) const { return std::memcmp(bits, o.bits, sizeof bits) == 0; }
  bool test(int i) const { return bits[i >> 6] >> (i & 63) & 1; }
  bool overlaps(const Coverage &o) const {
    for (int k = 0; k < W; ++k)
      if (bits[k] & o.bits[k]) return true;
    return false;
  }
  Coverage operator|(const Coverage &o) const {
    Coverage c;
    for (int k = 0; k < W; ++k) c.bits[k] = bits[k] | o.bits[k];
    return c;
  }
  int first_zero() const {  // the first gap: (~c & (c + 1)).bit_length() - 1
    for (int k = 0; k < W; ++k)
      if (~bits[k]) return 64 * k + __builtin_ctzll(~bits[k]);
    return 64 * W;
  }
  int count() const {
    int c = 0;
    for (int k = 0; k < W; ++k) c += __builtin_popcountll(bits[k]);
    return c;
  }
  void set_range(int first, int last) {
    for (int i = first; i <= last; ++i) bits[i >> 6] |= uint64_t(1) << (i & 63);
  }
  uint64_t hash() const { return util::MurmurHashNative(bits, sizeof bits, 0); }
};

struct Arc {
  int32_t prev;  // node index
  int32_t option;
  double lm;  // ln LM score
  int32_t distortion;
  int8_t orientation;      // with the reordering model: against the phrase before (else -1)
  int8_t end_orientation;  // on an arc that completes the sentence: against its end (else -1)
};

template <int W> struct Node {
  double score;
  Coverage<W> coverage;
  int32_t last;
  int32_t state;  // interned KenLM state
  double future;
  std::vector<Arc> arcs;
  int32_t first;   // first source position of the last phrase
  int32_t option;  // the option of the arc that made the node (-1 at the start)
  double total() const { return score + future; }
};

// Recombination key: (coverage, last position, LM state), with the reordering model also the first position of the
// last phrase and the class of its forward probabilities (else both -1); the start and the end node have the key
// None.
template <int W> struct Key {
  Coverage<W> coverage;
  int32_t last;
  int32_t state;
  int32_t first;
  int32_t forward_class;
  bool none;
  bool operator==(const Key &o) const {
    return none == o.none && last == o.last && state == o.state && first == o.first &&
           forward_class == o.forward_class && coverage == o.coverage;
  }
};

template <int W> struct KeyHash {
  size_t operator()(const Key<W> &k) const {
    return k.none ? 0
                  : k.coverage.hash() ^ (uint64_t(k.last) * 0x9E3779B97F4A7C15ULL) ^ (uint64_t(k.state) << 20) ^
                        (uint64_t(uint32_t(k.first)) * 0xC2B2AE3D27D4EB4FULL) ^
                        (uint64_t(uint32_t(k.forward_class)) << 40);
  }
};

struct StateHash {
  size_t operator()(const State &s) const { return lm::ngram::hash_value(s); }
};

struct CoverageHashW {
  template <class C> size_t operator()(const C &c) const { return c.hash(); }
};

// A stack: a dict in insertion order, as Python's.
template <int W> struct Stack {
  std::vector<int32_t> order;
  std::unordered_map<Key<W>, int32_t, KeyHash<W>> index;
  void clear() {
    std::vector<int32_t>().swap(order);
    std::unordered_map<Key<W>, int32_t, KeyHash<W>>().swap(index);
  }
};

struct Inputs {
  int n;
  const int32_t *by_start_begin;  // [n + 1] first span of each start position
  const int32_t *span_end;        // [spans]
  const double *span_best_future;
  const int32_t *span_entry_begin;  // [spans + 1]
  const int32_t *entry_option;      // [entries]
  const double *entry_future;
  const double *entry_score;
  const int32_t *entry_target;
  const int32_t *target_word_begin;  // [targets + 1]
  const WordIndex *target_words;
  int32_t num_targets;
  const double *future_table;  // [n, n]
  const double *static_score;  // [options]
  double w_lm10;               // w_lm * ln 10 (the search sums LM scores in log10)
  double w_lm;
  double w_d;
  double ln10;
  double beam;  // may be inf
  int32_t limit_d;
  int32_t stack_limit;
  // the reordering model (WeightedReordering), or null: [options, 3] weighted backward and forward ln probabilities
  // (m, s, d) and [options] the class of the forward ones
  const double *lr_backward;
  const double *lr_forward;
  const int32_t *lr_class;

  // What an arc adds (WeightedReordering.score): backward, then the previous option's forward, then the end's.
  double reordering(int32_t previous, int32_t option, int orientation, int end) const {
    double gain = lr_backward[3 * size_t(option) + orientation];
    if (previous >= 0) gain = gain + lr_forward[3 * size_t(previous) + orientation];
    if (end >= 0) gain = gain + lr_forward[3 * size_t(option) + end];
    return gain;
  }
};

struct Result {
  int32_t num_states = 0;
  int64_t hypotheses = 0, expansions = 0;
  std::vector<int32_t> u, v, option, distortion;
  std::vector<double> lm;
  std::vector<int32_t> orientation, previous, end_orientation;  // with the reordering model
};

template <int W> class Search {
 public:
  Search(const lm::base::Model &model, const Inputs &in) : model_(model), in_(in) {}

  // Fills result; returns false when no hypothesis completes (the caller passes the sentence through).
  bool run(Result &result) {
    const int n = in_.n;
    Coverage<W> full;
    full.set_range(0, n - 1);
    const double beam = in_.beam;
    const int limit_d = in_.limit_d;
    const int stack_limit = std::max(1, in_.stack_limit);
    const double inf = INFINITY;
    std::vector<Stack<W>> stacks(n + 1);
    std::vector<double> floor(n + 1, -inf);
    State bos;
    model_.BeginSentenceWrite(&bos);
    nodes_.push_back(Node<W>{0.0, Coverage<W>(), -1, intern(bos), future(Coverage<W>()), {}, -1, -1});
    const bool reordering = in_.lr_backward != nullptr;
    insert(stacks[0], none_key(), 0);
    const WordIndex eos = model_.BaseVocabulary().EndSentence();
    std::unordered_map<uint64_t, std::pair<double, int32_t>> lm_cache;  // (state, target) -> (log10, state)
    std::unordered_map<int32_t, double> end_cache;
    for (int k = 0; k < n; ++k) {
      std::vector<int32_t> expand = prune(stacks[k], stack_limit, beam);
      stacks[k].clear();
      for (int32_t nd : expand) {
        const double score = nodes_[nd].score;
        const Coverage<W> coverage = nodes_[nd].coverage;
        const int last = nodes_[nd].last;
        const int32_t state = nodes_[nd].state;
        const int first = nodes_[nd].first;
        const int32_t previous = nodes_[nd].option;
        const int first_gap = coverage.first_zero();
        const int lo = std::max(first_gap, last + 1 - limit_d), hi = std::min(n - 1, last + 1 + limit_d);
        for (int i = lo; i <= hi; ++i) {
          if (coverage.test(i)) continue;
          const int distortion = -std::abs(i - last - 1);
          const double base = score + in_.w_d * distortion;
          for (int s = in_.by_start_begin[i]; s < in_.by_start_begin[i + 1]; ++s) {
            const int j = in_.span_end[s];
            Coverage<W> mask;
            mask.set_range(i, j);
            if (coverage.overlaps(mask)) break;  // longer spans from i overlap too
            if (i > first_gap && j + 1 - first_gap > limit_d) break;  // could not jump back to the first gap
            const Coverage<W> new_coverage = coverage | mask;
            const bool complete = new_coverage == full;
            const double fc = future(new_coverage);
            const int k2 = k + j - i + 1;
            int orientation = -1, end_orientation = -1;
            if (reordering) {
              orientation = i == last + 1 ? 0 : j == first - 1 ? 1 : 2;  // m, s, d
              if (complete) end_orientation = j == n - 1 ? 0 : 2;
            }
            double stack_floor = floor[k2];
            double bar = stack_floor - base - fc;
            if (in_.span_best_future[s] < bar) continue;
            Stack<W> &stack = stacks[k2];
            for (int e = in_.span_entry_begin[s]; e < in_.span_entry_begin[s + 1]; ++e) {
              if (in_.entry_future[e] < bar) break;  // options are sorted by future score
              ++result.expansions;
              const int32_t target = in_.entry_target[e];
              const uint64_t cache_key = uint64_t(state) * uint64_t(in_.num_targets) + uint64_t(target);
              auto cached = lm_cache.find(cache_key);
              if (cached == lm_cache.end()) {
                State s_in = states_[state], s_out;
                double lm10 = 0.0;
                for (int w = in_.target_word_begin[target]; w < in_.target_word_begin[target + 1]; ++w) {
                  lm10 += model_.BaseScore(&s_in, in_.target_words[w], &s_out);
                  s_in = s_out;
                }
                cached = lm_cache.emplace(cache_key, std::make_pair(lm10, intern(s_in))).first;
              }
              double lm10 = cached->second.first;
              const int32_t out_state = cached->second.second;
              Key<W> key;
              if (complete) {
                auto end = end_cache.find(out_state);
                if (end == end_cache.end()) {
                  State ignored;
                  end = end_cache.emplace(out_state, model_.BaseScore(&states_[out_state], eos, &ignored)).first;
                }
                lm10 += end->second;
                key = none_key();
              } else if (!reordering) {
                key = Key<W>{new_coverage, j, out_state, -1, -1, false};
              } else {
                key = Key<W>{new_coverage, j, out_state, i, in_.lr_class[in_.entry_option[e]], false};
              }
              double new_score = base + in_.entry_score[e] + in_.w_lm10 * lm10;
              if (reordering)
                new_score = new_score + in_.reordering(previous, in_.entry_option[e], orientation, end_orientation);
              const double total = new_score + fc;
              if (total < stack_floor) continue;
              const Arc arc{nd, in_.entry_option[e], lm10 * in_.ln10, distortion, int8_t(orientation),
                            int8_t(end_orientation)};
              auto existing = stack.index.find(key);
              if (existing == stack.index.end()) {
                ++result.hypotheses;
                nodes_.push_back(Node<W>{new_score, new_coverage, j, out_state, fc, {arc}, i, in_.entry_option[e]});
                insert(stack, key, int32_t(nodes_.size() - 1));
                if (stack.index.size() > size_t(2 * stack_limit)) {
                  const double kept = prune_in_place(stack, stack_limit, beam);
                  stack_floor = floor[k2] = kept > stack_floor ? kept : stack_floor;
                  bar = stack_floor - base - fc;
                }
              } else {
                Node<W> &node = nodes_[existing->second];
                if (new_score > node.score) node.score = new_score;
                node.arcs.push_back(arc);
              }
              if (total - beam > stack_floor) {
                stack_floor = floor[k2] = total - beam;
                bar = stack_floor - base - fc;
              }
            }
          }
        }
      }
    }
    auto end_it = stacks[n].index.find(none_key());
    if (end_it == stacks[n].index.end()) return false;
    Node<W> &end = nodes_[end_it->second];
    if (beam < inf) {  // arcs into the end node: the threshold applies to them too
      const double end_floor = end.score - beam;
      std::vector<Arc> kept;
      for (const Arc &a : end.arcs) {
        double gain = in_.static_score[a.option] + in_.w_lm * a.lm + in_.w_d * a.distortion;
        if (in_.lr_backward != nullptr)
          gain = gain + in_.reordering(nodes_[a.prev].option, a.option, a.orientation, a.end_orientation);
        if (nodes_[a.prev].score + gain >= end_floor) kept.push_back(a);
      }
      end.arcs.swap(kept);
    }
    if (end.arcs.empty()) return false;
    graph(end_it->second, result);
    return true;
  }

 private:
  static Key<W> none_key() { return Key<W>{Coverage<W>(), -2, -1, -1, -1, true}; }

  int32_t intern(const State &s) {
    auto it = state_ids_.find(s);
    if (it != state_ids_.end()) return it->second;
    states_.push_back(s);
    return state_ids_.emplace(s, int32_t(states_.size() - 1)).first->second;
  }

  // FutureCosts.compute: the table summed over the uncovered runs, left to right.
  double future(const Coverage<W> &coverage) {
    auto it = future_cache_.find(coverage);
    if (it != future_cache_.end()) return it->second;
    const int n = in_.n;
    double total = 0.0;
    int i = 0;
    while (i < n) {
      if (coverage.test(i)) {
        ++i;
        continue;
      }
      int j = i;
      while (j + 1 < n && !coverage.test(j + 1)) ++j;
      total += in_.future_table[size_t(i) * n + j];
      i = j + 1;
    }
    future_cache_.emplace(coverage, total);
    return total;
  }

  void insert(Stack<W> &stack, const Key<W> &key, int32_t node) {
    stack.index.emplace(key, node);
    stack.order.push_back(node);
  }

  // _prune: the stack's best `limit` nodes by total, ties in insertion order (heapq.nlargest), then the beam.
  std::vector<int32_t> prune(const Stack<W> &stack, int limit, double beam) const {
    std::vector<int32_t> nodes = stack.order;
    std::stable_sort(nodes.begin(), nodes.end(),
                     [this](int32_t a, int32_t b) { return nodes_[a].total() > nodes_[b].total(); });
    if (nodes.size() > size_t(limit)) nodes.resize(limit);
    if (!nodes.empty() && beam < INFINITY) {
      const double floor = nodes_[nodes[0]].total() - beam;
      std::vector<int32_t> kept;
      for (int32_t nd : nodes)
        if (nodes_[nd].total() >= floor) kept.push_back(nd);
      nodes.swap(kept);
    }
    return nodes;
  }

  // _prune_in_place: keep the best `limit` (in their insertion order); the total of the worst one kept.
  double prune_in_place(Stack<W> &stack, int limit, double beam) {
    const std::vector<int32_t> kept = prune(stack, limit, beam);
    mark_.resize(nodes_.size(), 0);
    for (int32_t nd : kept) mark_[nd] = 1;
    std::vector<int32_t> order;
    for (int32_t nd : stack.order)
      if (mark_[nd]) order.push_back(nd);
    stack.order.swap(order);
    for (auto it = stack.index.begin(); it != stack.index.end();) {
      if (mark_[it->second])
        ++it;
      else
        it = stack.index.erase(it);
    }
    for (int32_t nd : kept) mark_[nd] = 0;
    return kept.size() >= size_t(limit) ? nodes_[kept.back()].total() : -INFINITY;
  }

  // _graph: the nodes that reach the end, depth first from it, numbered by covered words (stable), end last.
  void graph(int32_t end, Result &result) const {
    std::vector<char> seen(nodes_.size(), 0);
    std::vector<int32_t> order, todo{end};
    seen[end] = 1;
    while (!todo.empty()) {
      const int32_t nd = todo.back();
      todo.pop_back();
      for (const Arc &a : nodes_[nd].arcs) {
        if (!seen[a.prev]) {
          seen[a.prev] = 1;
          order.push_back(a.prev);
          todo.push_back(a.prev);
        }
      }
    }
    std::vector<int> count(nodes_.size());
    for (int32_t nd : order) count[nd] = nodes_[nd].coverage.count();
    std::stable_sort(order.begin(), order.end(), [&count](int32_t a, int32_t b) { return count[a] < count[b]; });
    order.push_back(end);
    std::vector<int32_t> id(nodes_.size(), -1);
    for (size_t k = 0; k < order.size(); ++k) id[order[k]] = int32_t(k);
    for (size_t k = 0; k < order.size(); ++k) {
      for (const Arc &a : nodes_[order[k]].arcs) {
        result.u.push_back(id[a.prev]);
        result.v.push_back(int32_t(k));
        result.option.push_back(a.option);
        result.lm.push_back(a.lm);
        result.distortion.push_back(a.distortion);
        if (in_.lr_backward != nullptr) {
          result.orientation.push_back(a.orientation);
          result.previous.push_back(nodes_[a.prev].option);
          result.end_orientation.push_back(a.end_orientation);
        }
      }
    }
    result.num_states = int32_t(order.size());
  }

  const lm::base::Model &model_;
  const Inputs &in_;
  std::vector<Node<W>> nodes_;
  std::vector<char> mark_;  // all zero between calls of prune_in_place
  std::vector<State> states_;
  std::unordered_map<State, int32_t, StateHash> state_ids_;
  std::unordered_map<Coverage<W>, double, CoverageHashW> future_cache_;
};

template <int W> bool run_search(const lm::base::Model &model, const Inputs &in, Result &result) {
  return Search<W>(model, in).run(result);
}

void set_error(const char *message, char *error, int error_size) {
  if (error && error_size > 0) {
    std::strncpy(error, message, error_size - 1);
    error[error_size - 1] = '\0';
  }
}

}  // namespace

extern "C" {

int pbmt_max_words() { return 64 * 8; }

void *pbmt_load(const char *path, char *error, int error_size) {
  try {
    lm::ngram::Config config;
    config.load_method = util::POPULATE_OR_READ;
    return lm::ngram::LoadVirtual(path, config);
  } catch (const std::exception &e) {
    set_error(e.what(), error, error_size);
    return nullptr;
  }
}

void pbmt_free(void *model) { delete static_cast<lm::base::Model *>(model); }

// KenLM ids of `count` words, each `lengths[k]` bytes long, laid end to end in `words`.
void pbmt_vocab(void *model, const char *words, const int32_t *lengths, int32_t count, uint32_t *out) {
  const lm::base::Vocabulary &vocab = static_cast<lm::base::Model *>(model)->BaseVocabulary();
  for (int32_t k = 0; k < count; ++k) {
    out[k] = vocab.Index(StringPiece(words, lengths[k]));
    words += lengths[k];
  }
}

// Returns a result handle, or null on an error (written to `error`). A result whose num_states is 0 means that
// no hypothesis completed.
void *pbmt_search(void *model, int32_t n, const int32_t *by_start_begin, const int32_t *span_end,
                  const double *span_best_future, const int32_t *span_entry_begin, const int32_t *entry_option,
                  const double *entry_future, const double *entry_score, const int32_t *entry_target,
                  const int32_t *target_word_begin, const uint32_t *target_words, int32_t num_targets,
                  const double *future_table, const double *static_score, const double *weights,
                  int32_t limit_d, int32_t stack_limit, const double *lr_backward, const double *lr_forward,
                  const int32_t *lr_class, char *error, int error_size) {
  // weights: w_lm * ln 10, w_lm, w_d, ln 10, beam; lr_*: null without the reordering model
  const Inputs in{n, by_start_begin, span_end, span_best_future, span_entry_begin, entry_option, entry_future,
                  entry_score, entry_target, target_word_begin, target_words, num_targets, future_table,
                  static_score, weights[0], weights[1], weights[2], weights[3], weights[4], limit_d, stack_limit,
                  lr_backward, lr_forward, lr_class};
  Result *result = new Result();
  try {
    const lm::base::Model &m = *static_cast<lm::base::Model *>(model);
    bool found;
    if (n <= 64) found = run_search<1>(m, in, *result);
    else if (n <= 128) found = run_search<2>(m, in, *result);
    else if (n <= 256) found = run_search<4>(m, in, *result);
    else if (n <= 512) found = run_search<8>(m, in, *result);
    else throw std::runtime_error("a sentence of more than 512 words");
    if (!found) result->num_states = 0;
    return result;
  } catch (const std::exception &e) {
    set_error(e.what(), error, error_size);
    delete result;
    return nullptr;
  }
}

int32_t pbmt_result_states(void *result) { return static_cast<Result *>(result)->num_states; }
int64_t pbmt_result_arcs(void *result) { return int64_t(static_cast<Result *>(result)->u.size()); }
void pbmt_result_stats(void *result, int64_t *out) {
  out[0] = static_cast<Result *>(result)->hypotheses;
  out[1] = static_cast<Result *>(result)->expansions;
}

void pbmt_result_copy(void *result, int32_t *u, int32_t *v, int32_t *option, double *lm, int32_t *distortion) {
  const Result &r = *static_cast<Result *>(result);
  std::copy(r.u.begin(), r.u.end(), u);
  std::copy(r.v.begin(), r.v.end(), v);
  std::copy(r.option.begin(), r.option.end(), option);
  std::copy(r.lm.begin(), r.lm.end(), lm);
  std::copy(r.distortion.begin(), r.distortion.end(), distortion);
}

// The reordering columns (orientation, previous option, orientation against the end) of a search with the model.
void pbmt_result_orientations(void *result, int32_t *orientation, int32_t *previous, int32_t *end_orientation) {
  const Result &r = *static_cast<Result *>(result);
  std::copy(r.orientation.begin(), r.orientation.end(), orientation);
  std::copy(r.previous.begin(), r.previous.end(), previous);
  std::copy(r.end_orientation.begin(), r.end_orientation.end(), end_orientation);
}

void pbmt_result_free(void *result) { delete static_cast<Result *>(result); }

}  // extern "C"
