//===- cuda_adamw.cpp - multi-tensor AdamW groups of the CUDA backend -----===//
//
// Which adamw_update steps of a function one adamw_update_multi launch runs
// (adamwGroups) and the host table of each group (adamwGroupTable), as
// exec/cuda_calls.h describes them. Needs no GPU: tested on the host.
//
//===----------------------------------------------------------------------===//

#include "exec/cuda_calls.h"

#include "kernels/cuda/cuda_kernels.h"

#include <algorithm>
#include <iterator>
#include <map>

namespace tcc::rt {

namespace {

/// A union of byte ranges [begin, end) of device addresses, merged.
class ByteRanges {
public:
  void add(uintptr_t b, uintptr_t e) {
    if (b >= e)
      return;
    auto it = ranges.upper_bound(b);
    if (it != ranges.begin() && std::prev(it)->second >= b)
      --it;
    while (it != ranges.end() && it->first <= e) {
      b = std::min(b, it->first);
      e = std::max(e, it->second);
      it = ranges.erase(it);
    }
    ranges.emplace(b, e);
  }
  bool overlaps(uintptr_t b, uintptr_t e) const {
    if (b >= e)
      return false;
    auto it = ranges.upper_bound(b); // first range starting after b
    if (it != ranges.end() && it->first < e)
      return true;
    return it != ranges.begin() && std::prev(it)->second > b;
  }

private:
  std::map<uintptr_t, uintptr_t> ranges; // begin -> end, disjoint
};

/// Operands param, grad, exp_avg, exp_avg_sq, lr, step and the three
/// results all present (a skip flag may be too: a group shares it; so may
/// a working copy, per tensor), the whole parameter updated (not a block):
/// the steps a multi-tensor launch can take.
bool groupableAdamw(const Function &fn, const Step &step) {
  if (step.kind != Step::Call || step.op != Op::AdamwUpdate ||
      step.inputs.size() < 6 || step.outputs.size() < 3)
    return false;
  if (step.attrs.elementOffset != 0 || step.inputs[0] < 0 ||
      step.inputs[1] < 0 ||
      fn.values[step.inputs[1]].elements != fn.values[step.inputs[0]].elements)
    return false;
  for (size_t i = 8; i < step.inputs.size(); ++i)
    if (step.inputs[i] >= 0)
      return false;
  for (size_t i = 4; i < step.outputs.size(); ++i)
    if (step.outputs[i] >= 0)
      return false;
  for (size_t i = 0; i < 6; ++i)
    if (step.inputs[i] < 0)
      return false;
  for (size_t i = 0; i < 3; ++i)
    if (step.outputs[i] < 0)
      return false;
  return true;
}

/// Step s's update: the elements [first, first + count) of its parameter
/// (the whole without ZeRO-1).
FunctionBinding::Shard updated(const Function &fn, size_t s,
                               const std::vector<FunctionBinding::Shard> &shards) {
  if (!shards.empty() && shards[s].count >= 0)
    return shards[s];
  return {0, fn.values[fn.steps[s].inputs[0]].elements};
}

} // namespace

std::vector<std::vector<size_t>>
adamwGroups(const Function &fn, uint8_t *const *ptrs,
            const std::vector<FunctionBinding::Shard> &shards) {
  std::vector<std::vector<size_t>> groups;
  auto range = [&](int64_t v) {
    uintptr_t b = reinterpret_cast<uintptr_t>(ptrs[v]);
    int64_t bytes = fn.values[v].bytes;
    return std::make_pair(b, b + uintptr_t(bytes > 0 && ptrs[v] ? bytes : 0));
  };
  std::vector<size_t> run;
  ByteRanges read, written; // by the run's steps
  auto closeRun = [&] {
    // Groups in order of their first step; a step joins the first group of
    // its key. Empty tensors stay alone (their call enqueues nothing), so a
    // group's first step is the first of its members the per-call path
    // would launch: the error word of an invalid step is the same one.
    std::vector<std::vector<size_t>> keyed;
    for (size_t s : run) {
      const Step &a = fn.steps[s];
      if (updated(fn, s, shards).count <= 0)
        continue;
      bool placed = false;
      for (std::vector<size_t> &g : keyed) {
        const Step &b = fn.steps[g.front()];
        auto skipOf = [](const Step &x) {
          return x.inputs.size() > 6 ? x.inputs[6] : -1;
        };
        if (a.inputs[4] == b.inputs[4] && a.inputs[5] == b.inputs[5] &&
            skipOf(a) == skipOf(b) &&
            a.attrs.beta1 == b.attrs.beta1 && a.attrs.beta2 == b.attrs.beta2 &&
            a.attrs.eps == b.attrs.eps) {
          g.push_back(s);
          placed = true;
          break;
        }
      }
      if (!placed)
        keyed.push_back({s});
    }
    for (std::vector<size_t> &g : keyed)
      if (g.size() >= 2)
        groups.push_back(std::move(g));
    run.clear();
    read = ByteRanges();
    written = ByteRanges();
  };
  for (size_t s = 0; s < fn.steps.size(); ++s) {
    const Step &step = fn.steps[s];
    if (!groupableAdamw(fn, step)) {
      closeRun();
      continue;
    }
    // Independent of every step of the run: reads nothing they write,
    // writes nothing they read or write. (The working copy's operand
    // counts as read: a skipped update copies it.)
    std::vector<int64_t> reads(step.inputs.begin(), step.inputs.begin() + 6),
        writes(step.outputs.begin(), step.outputs.begin() + 3);
    if (step.inputs.size() > 7 && step.inputs[7] >= 0)
      reads.push_back(step.inputs[7]);
    if (step.outputs.size() > 3 && step.outputs[3] >= 0)
      writes.push_back(step.outputs[3]);
    bool dependent = false;
    for (size_t i = 0; i < reads.size() && !dependent; ++i) {
      auto [b, e] = range(reads[i]);
      dependent = written.overlaps(b, e);
    }
    for (size_t i = 0; i < writes.size() && !dependent; ++i) {
      auto [b, e] = range(writes[i]);
      dependent = written.overlaps(b, e) || read.overlaps(b, e);
    }
    if (dependent)
      closeRun();
    run.push_back(s);
    for (int64_t v : reads) {
      auto [b, e] = range(v);
      read.add(b, e);
    }
    for (int64_t v : writes) {
      auto [b, e] = range(v);
      written.add(b, e);
    }
  }
  closeRun();
  return groups;
}

std::vector<char>
adamwGroupTable(const Function &fn, const std::vector<size_t> &group,
                uint8_t *const *ptrs,
                const std::vector<FunctionBinding::Shard> &shards,
                int64_t &chunks) {
  std::vector<cuda::AdamwTensor> tensors;
  for (size_t s : group) {
    const Step &step = fn.steps[s];
    FunctionBinding::Shard shard = updated(fn, s, shards);
    // The parameter, gradient and working copy from the slice's first
    // element; the moments hold just the slice.
    auto at = [&](int64_t id, bool sliced) {
      return ptrs[id] + (sliced ? size_t(shard.first) *
                                      data::dtypeSize(fn.values[id].dtype)
                                : 0);
    };
    auto in = [&](size_t i, bool sliced = false) {
      return reinterpret_cast<const float *>(at(step.inputs[i], sliced));
    };
    auto out = [&](size_t i, bool sliced = false) {
      return reinterpret_cast<float *>(at(step.outputs[i], sliced));
    };
    cuda::WorkingCopy working = workingCopy(fn, step, ptrs, 7, 3);
    if (working.out) {
      working.in = at(step.inputs[7], true);
      working.out = at(step.outputs[3], true);
    }
    tensors.push_back({in(0, true), in(1, true), in(2), in(3), out(0, true),
                       out(1), out(2), shard.count, step.attrs.weightDecay,
                       working});
  }
  int count = int(tensors.size());
  std::vector<char> table(cuda::adamw_table_bytes(count));
  chunks = cuda::adamw_build_table(tensors.data(), count, table.data());
  return table;
}

} // namespace tcc::rt
