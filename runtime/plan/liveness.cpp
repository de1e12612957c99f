//===- liveness.cpp - data flow and arena liveness of a plan --------------===//

#include "plan/liveness.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace tcc::rt {

namespace {

/// Which value last wrote each byte of the arena: disjoint segments
/// [begin, end) -> owner, gaps unowned.
class OwnerMap {
public:
  void assign(int64_t begin, int64_t end, int64_t owner) {
    if (begin >= end)
      return;
    split(begin);
    split(end);
    segs.erase(segs.lower_bound(begin), segs.lower_bound(end));
    segs.emplace(begin, Seg{end, owner});
  }

  /// Calls f(begin, end, owner) over [begin, end) in order, owner -1 for
  /// unowned gaps.
  template <class F> void forEach(int64_t begin, int64_t end, F f) const {
    int64_t at = begin;
    auto it = segs.upper_bound(begin);
    if (it != segs.begin())
      --it;
    for (; it != segs.end() && it->first < end; ++it) {
      if (it->second.end <= at)
        continue;
      if (it->first > at)
        f(at, it->first, int64_t(-1));
      int64_t b = std::max(at, it->first), e = std::min(end, it->second.end);
      f(b, e, it->second.owner);
      at = e;
    }
    if (at < end)
      f(at, end, int64_t(-1));
  }

private:
  struct Seg {
    int64_t end, owner;
  };
  std::map<int64_t, Seg> segs;

  void split(int64_t at) {
    auto it = segs.upper_bound(at);
    if (it == segs.begin())
      return;
    --it;
    if (it->first < at && at < it->second.end) {
      Seg tail = it->second;
      it->second.end = at;
      segs.emplace(at, tail);
    }
  }
};

struct UnionFind {
  std::vector<int64_t> parent;
  explicit UnionFind(size_t n) : parent(n) {
    std::iota(parent.begin(), parent.end(), 0);
  }
  int64_t find(int64_t x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  }
  void unite(int64_t a, int64_t b) { parent[find(a)] = find(b); }
};

std::string range(const Value &v) {
  return "arena bytes [" + std::to_string(v.offset) + ", " +
         std::to_string(v.offset + v.bytes) + ")";
}

} // namespace

Dataflow analyzeDataflow(const Function &fn,
                         const std::function<void(const std::string &)> &bad) {
  size_t n = fn.values.size();
  int64_t numSteps = static_cast<int64_t>(fn.steps.size());
  Dataflow flow;
  flow.def.assign(n, -1);
  for (int64_t s = 0; s < numSteps; ++s)
    for (int64_t o : fn.steps[s].outputs) {
      if (o < 0)
        continue;
      if (flow.def[o] >= 0)
        bad("value " + std::to_string(o) + " is written by step " +
            std::to_string(flow.def[o]) + " and again by step " +
            std::to_string(s));
      flow.def[o] = s;
    }

  auto isArena = [&](int64_t v) {
    return fn.values[v].storage == Storage::Arena;
  };
  UnionFind groups(n);
  std::vector<bool> resolved(n, false);
  OwnerMap owners;
  // An arena value no step writes: joins the groups of the values that last
  // wrote its bytes.
  auto resolveAlias = [&](int64_t v, const std::string &reader) {
    if (resolved[v])
      return;
    resolved[v] = true;
    const Value &val = fn.values[v];
    owners.forEach(val.offset, val.offset + val.bytes,
                   [&](int64_t b, int64_t e, int64_t owner) {
                     if (owner < 0)
                       bad(reader + " reads value " + std::to_string(v) +
                           " (" + range(val) + "), but no step before writes "
                           "arena bytes [" + std::to_string(b) + ", " +
                           std::to_string(e) + ")");
                     groups.unite(v, owner);
                   });
  };
  for (int64_t s = 0; s < numSteps; ++s) {
    const Step &step = fn.steps[s];
    std::string reader = "step " + std::to_string(s);
    for (int64_t i : step.inputs) {
      if (i < 0)
        continue;
      if (flow.def[i] >= s)
        bad(reader + " reads value " + std::to_string(i) +
            (flow.def[i] == s ? ", which it writes itself"
                              : " before step " + std::to_string(flow.def[i]) +
                                    " writes it"));
      if (isArena(i) && flow.def[i] < 0)
        resolveAlias(i, reader);
    }
    for (int64_t o : step.outputs)
      if (o >= 0 && isArena(o))
        owners.assign(fn.values[o].offset,
                      fn.values[o].offset + fn.values[o].bytes, o);
  }
  for (const Result &r : fn.results)
    if (isArena(r.value) && flow.def[r.value] < 0)
      resolveAlias(r.value, "the result of value " + std::to_string(r.value));

  flow.group.assign(n, -1);
  flow.lastUse.assign(n, -1);
  for (size_t v = 0; v < n; ++v)
    if (isArena(v) && (flow.def[v] >= 0 || resolved[v]))
      flow.group[v] = groups.find(v);
  auto use = [&](int64_t v, int64_t at) {
    if (v >= 0 && flow.group[v] >= 0)
      flow.lastUse[flow.group[v]] = std::max(flow.lastUse[flow.group[v]], at);
  };
  for (int64_t s = 0; s < numSteps; ++s) {
    for (int64_t i : fn.steps[s].inputs)
      use(i, s);
    for (int64_t o : fn.steps[s].outputs)
      use(o, s);
  }
  for (const Result &r : fn.results)
    use(r.value, numSteps);
  return flow;
}

std::vector<std::vector<ByteRange>>
poisonSchedule(const Function &fn, const Dataflow &flow, int64_t arenaSize) {
  std::vector<std::vector<ByteRange>> schedule(fn.steps.size() + 1);
  OwnerMap owners;
  for (size_t s = 0; s <= fn.steps.size(); ++s) {
    std::vector<ByteRange> &ranges = schedule[s];
    owners.forEach(0, arenaSize, [&](int64_t b, int64_t e, int64_t owner) {
      bool held = owner >= 0 && flow.group[owner] >= 0 &&
                  flow.lastUse[flow.group[owner]] >= int64_t(s);
      if (held)
        return;
      if (!ranges.empty() && ranges.back().end == b)
        ranges.back().end = e;
      else
        ranges.push_back({b, e});
    });
    if (s == fn.steps.size())
      break;
    for (int64_t o : fn.steps[s].outputs)
      if (o >= 0 && fn.values[o].storage == Storage::Arena)
        owners.assign(fn.values[o].offset,
                      fn.values[o].offset + fn.values[o].bytes, o);
  }
  return schedule;
}

std::vector<int64_t> heldArenaBytes(const Function &fn, const Dataflow &flow,
                                    int64_t arenaSize) {
  std::vector<int64_t> held;
  for (const std::vector<ByteRange> &free :
       poisonSchedule(fn, flow, arenaSize)) {
    int64_t bytes = arenaSize;
    for (const ByteRange &r : free)
      bytes -= r.end - r.begin;
    held.push_back(bytes);
  }
  return held;
}

std::vector<int64_t> timelinePeaks(const std::vector<int64_t> &timeline,
                                   size_t columns) {
  size_t n = timeline.size();
  if (n <= columns || columns == 0)
    return timeline;
  std::vector<int64_t> peaks(columns, 0);
  for (size_t c = 0; c < columns; ++c)
    for (size_t i = c * n / columns; i < (c + 1) * n / columns; ++i)
      peaks[c] = std::max(peaks[c], timeline[i]);
  return peaks;
}

} // namespace tcc::rt
