// OpenFst's determinisation of an acyclic, epsilon-free tropical acceptor ("standard" arcs, float32 weights),
// followed by Lattice.from_fst's topological sort: the same automaton, state for state and bit for bit, straight
// from the Lattice's arrays (lattices/compiled_determinize.py calls it through ctypes).
//
// What is reproduced (OpenFst 1.8, determinize.h, dfs-visit.h, topsort.h; float32 arithmetic throughout):
// - a subset is a list of (state, residual) sorted by state, duplicates merged by min; residuals are
//   quantised as TropicalWeight::Quantize does: floor(r / delta + 0.5f) * delta in float;
// - a subset's arcs, by increasing label: weight m = min over (residual + arc cost) of its members, destination
//   residuals (w - m) quantised; two subsets are one state when their lists are equal (float ==);
// - final weight: min over members of residual + final cost;
// - numbering: a depth-first search from the start over each state's arcs in label order; states numbered in
//   reverse finishing order (TopSort), arcs then ordered by (source, destination), stably.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

struct Element {
  int32_t state;
  float weight;
};

struct Candidate {  // one member of a destination subset before merging
  int32_t label;
  int32_t state;
  float weight;
};

float quantize(float value, float delta) {
  return std::floor(value / delta + 0.5F) * delta;
}

struct SubsetKey {  // a subset in the shared element store
  int64_t begin;
  int32_t size;
  uint64_t hash;
};

struct Result {
  int32_t num_states = 0;
  std::vector<int64_t> src, dst, label;
  std::vector<double> cost, final_cost;
};

class Determinizer {
 public:
  Determinizer(int32_t n, int32_t start, const int64_t* out_ptr, const int64_t* dst, const int64_t* label,
               const float* cost, const float* final_cost, float delta)
      : out_ptr_(out_ptr), dst_(dst), label_(label), cost_(cost), final_(final_cost), delta_(delta) {
    elements_.reserve(2 * static_cast<size_t>(n) + 16);
    keys_.reserve(static_cast<size_t>(n) + 16);
    table_.assign(1024, -1);
    elements_.push_back({start, 0.0F});
    keys_.push_back({0, 1, hash(0, 1)});
    find_or_add(0);
  }

  // Returns 0 on success, 1 when the result would have more than max_states states (0: no bound).
  int run(int64_t max_states) {
    std::vector<Candidate> moves, grouped;
    std::vector<Element> merged;
    std::vector<int32_t> labels, label_first;  // label_first[x]: x's group while a state is expanded, else -1
    std::vector<int64_t> group_size;
    for (int32_t i = 0; i < static_cast<int32_t>(keys_.size()); ++i) {
      moves.clear();
      SubsetKey key = keys_[i];
      float final_weight = INFINITY;
      for (int32_t e = 0; e < key.size; ++e) {
        Element member = elements_[key.begin + e];
        float f = final_[member.state];
        if (f != INFINITY) final_weight = std::min(final_weight, member.weight + f);
        for (int64_t a = out_ptr_[member.state]; a < out_ptr_[member.state + 1]; ++a) {
          float c = cost_[a];
          moves.push_back({static_cast<int32_t>(label_[a]), static_cast<int32_t>(dst_[a]),
                           c == INFINITY ? INFINITY : member.weight + c});
        }
      }
      finals_.push_back(final_weight);
      arc_begin_.push_back(static_cast<int64_t>(arc_label_.size()));
      // group by label (the labels in increasing order), then by destination state
      labels.clear();
      for (size_t k = 0; k < moves.size(); ++k) {
        int32_t x = moves[k].label;
        if (x >= static_cast<int32_t>(label_first.size())) label_first.resize(x + 1, -1);
        if (label_first[x] < 0) {
          label_first[x] = static_cast<int32_t>(labels.size());
          labels.push_back(x);
          group_size.push_back(0);
        }
        ++group_size[label_first[x]];
      }
      std::sort(labels.begin(), labels.end());
      int64_t position = 0;
      for (int32_t x : labels) {  // each label's moves go to one block, blocks by label
        int32_t g = label_first[x];
        int64_t size = group_size[g];
        group_size[g] = position;
        position += size;
      }
      grouped.resize(moves.size());
      for (const Candidate& c : moves) grouped[group_size[label_first[c.label]]++] = c;
      for (int32_t x : labels) label_first[x] = -1;
      group_size.clear();
      for (size_t g = 0; g < grouped.size();) {
        size_t h = g;
        while (h < grouped.size() && grouped[h].label == grouped[g].label) ++h;
        std::sort(grouped.begin() + g, grouped.begin() + h,
                  [](const Candidate& a, const Candidate& b) { return a.state < b.state; });
        float m = INFINITY;
        merged.clear();
        for (size_t k = g; k < h; ++k) {  // min is exact, so equal states merge in any order
          const Candidate& c = grouped[k];
          if (c.weight < m) m = c.weight;
          if (!merged.empty() && merged.back().state == c.state) {
            if (c.weight < merged.back().weight) merged.back().weight = c.weight;
          } else {
            merged.push_back({c.state, c.weight});
          }
        }
        for (Element& e : merged) e.weight = quantize(e.weight - m, delta_);
        int64_t begin = static_cast<int64_t>(elements_.size());
        elements_.insert(elements_.end(), merged.begin(), merged.end());
        keys_.push_back({begin, static_cast<int32_t>(merged.size()), hash(begin, merged.size())});
        int32_t candidate = static_cast<int32_t>(keys_.size()) - 1;
        int32_t target = find_or_add(candidate);
        if (target != candidate) {  // an existing state: drop the copy
          keys_.pop_back();
          elements_.resize(begin);
        } else if (max_states > 0 && static_cast<int64_t>(keys_.size()) > max_states) {
          return 1;
        }
        arc_label_.push_back(grouped[g].label);
        arc_dst_.push_back(target);
        arc_cost_.push_back(m);
        g = h;
      }
    }
    arc_begin_.push_back(static_cast<int64_t>(arc_label_.size()));
    return 0;
  }

  // Lattice.from_fst's numbering; false when a state cannot reach a final state (the caller falls back).
  bool number(Result* out) const {
    const int32_t n = static_cast<int32_t>(keys_.size());
    std::vector<int32_t> order(n, -1), finished;
    std::vector<uint8_t> colour(n, 0);
    std::vector<std::pair<int32_t, int64_t>> stack;  // (state, next arc)
    finished.reserve(n);
    colour[0] = 1;
    stack.push_back({0, arc_begin_[0]});
    while (!stack.empty()) {
      auto& top = stack.back();
      int32_t s = top.first;
      if (top.second == arc_begin_[s + 1]) {
        colour[s] = 2;
        finished.push_back(s);
        stack.pop_back();
        if (!stack.empty()) ++stack.back().second;
        continue;
      }
      int32_t d = arc_dst_[top.second];
      if (colour[d] == 0) {
        colour[d] = 1;
        stack.push_back({d, arc_begin_[d]});
      } else {
        ++top.second;
      }
    }
    for (int32_t k = 0; k < n; ++k) order[finished[n - 1 - k]] = k;
    // every state reaches a final one? (in reverse topological order)
    std::vector<uint8_t> alive(n, 0);
    for (int32_t k = n - 1; k >= 0; --k) {
      int32_t s = finished[n - 1 - k];
      bool live = finals_[s] != INFINITY;
      for (int64_t a = arc_begin_[s]; a < arc_begin_[s + 1] && !live; ++a) live = alive[arc_dst_[a]] != 0;
      alive[s] = live;
      if (!live) return false;
    }
    const int64_t m = static_cast<int64_t>(arc_label_.size());
    out->num_states = n;
    out->src.resize(m);
    out->dst.resize(m);
    out->label.resize(m);
    out->cost.resize(m);
    out->final_cost.resize(n);
    std::vector<int64_t> arcs;
    int64_t w = 0;
    for (int32_t k = 0; k < n; ++k) {
      int32_t s = finished[n - 1 - k];
      out->final_cost[k] = finals_[s];
      arcs.clear();
      for (int64_t a = arc_begin_[s]; a < arc_begin_[s + 1]; ++a) arcs.push_back(a);
      std::stable_sort(arcs.begin(), arcs.end(),
                       [&](int64_t a, int64_t b) { return order[arc_dst_[a]] < order[arc_dst_[b]]; });
      for (int64_t a : arcs) {
        out->src[w] = k;
        out->dst[w] = order[arc_dst_[a]];
        out->label[w] = arc_label_[a];
        out->cost[w] = arc_cost_[a];
        ++w;
      }
    }
    return true;
  }

 private:
  uint64_t hash(int64_t begin, size_t size) const {
    uint64_t h = 1469598103934665603ULL;
    for (size_t e = 0; e < size; ++e) {
      const Element& x = elements_[begin + e];
      uint32_t bits;
      float w = x.weight == 0.0F ? 0.0F : x.weight;  // -0 == +0
      std::memcpy(&bits, &w, sizeof bits);
      h = (h ^ static_cast<uint32_t>(x.state)) * 1099511628211ULL;
      h = (h ^ bits) * 1099511628211ULL;
    }
    return h ^ (h >> 29);
  }

  bool equal(int32_t a, int32_t b) const {
    const SubsetKey& x = keys_[a];
    const SubsetKey& y = keys_[b];
    if (x.hash != y.hash || x.size != y.size) return false;
    for (int32_t e = 0; e < x.size; ++e) {
      const Element& p = elements_[x.begin + e];
      const Element& q = elements_[y.begin + e];
      if (p.state != q.state || !(p.weight == q.weight)) return false;
    }
    return true;
  }

  // The state whose subset equals the candidate's, or the candidate, now added (open addressing, linear probing).
  int32_t find_or_add(int32_t candidate) {
    if (2 * keys_.size() > table_.size()) {
      std::vector<int32_t> old(table_.size() * 2, -1);
      old.swap(table_);
      for (int32_t id : old) {
        if (id < 0) continue;
        size_t slot = keys_[id].hash & (table_.size() - 1);
        while (table_[slot] >= 0) slot = (slot + 1) & (table_.size() - 1);
        table_[slot] = id;
      }
    }
    size_t mask = table_.size() - 1;
    size_t slot = keys_[candidate].hash & mask;
    while (table_[slot] >= 0) {
      if (equal(table_[slot], candidate)) return table_[slot];
      slot = (slot + 1) & mask;
    }
    table_[slot] = candidate;
    return candidate;
  }

  const int64_t* out_ptr_;
  const int64_t* dst_;
  const int64_t* label_;
  const float* cost_;
  const float* final_;
  float delta_;
  std::vector<Element> elements_;
  std::vector<SubsetKey> keys_;
  std::vector<float> finals_;
  std::vector<int64_t> arc_begin_;
  std::vector<int32_t> arc_label_, arc_dst_;
  std::vector<float> arc_cost_;
  std::vector<int32_t> table_;  // subset ids by hash; -1 empty
};

}  // namespace

extern "C" {

// Determinises the acceptor given as arcs grouped by source state (out_ptr [n + 1]; dst, label, cost [arcs],
// no label 0) with final costs [n] (INFINITY: not final). Returns a result handle, or null with *status set:
// 1 more than max_states states, 2 a state of the result reaches no final state (not trimmed: use OpenFst).
void* tropical_determinize(int32_t n, int32_t start, const int64_t* out_ptr, const int64_t* dst,
                           const int64_t* label, const float* cost, const float* final_cost, float delta,
                           int64_t max_states, int32_t* status) {
  Determinizer det(n, start, out_ptr, dst, label, cost, final_cost, delta);
  *status = det.run(max_states);
  if (*status != 0) return nullptr;
  Result* result = new Result();
  if (!det.number(result)) {
    delete result;
    *status = 2;
    return nullptr;
  }
  return result;
}

int32_t tropical_result_states(const void* handle) { return static_cast<const Result*>(handle)->num_states; }

int64_t tropical_result_arcs(const void* handle) {
  return static_cast<int64_t>(static_cast<const Result*>(handle)->src.size());
}

void tropical_result_copy(const void* handle, int64_t* src, int64_t* dst, int64_t* label, double* cost,
                          double* final_cost) {
  const Result* r = static_cast<const Result*>(handle);
  size_t m = r->src.size();
  std::memcpy(src, r->src.data(), m * sizeof(int64_t));
  std::memcpy(dst, r->dst.data(), m * sizeof(int64_t));
  std::memcpy(label, r->label.data(), m * sizeof(int64_t));
  std::memcpy(cost, r->cost.data(), m * sizeof(double));
  std::memcpy(final_cost, r->final_cost.data(), r->final_cost.size() * sizeof(double));
}

void tropical_result_free(void* handle) { delete static_cast<Result*>(handle); }

}  // extern "C"
