//===- zero.cpp - ZeRO-1: which optimizer state the ranks shard -----------===//

#include "exec/zero.h"

#include "data/npz.h"

#include <algorithm>
#include <string>

namespace tcc::rt {

Slice sliceOf(int64_t n, int q, int ranks) {
  int64_t first = n * q / ranks, end = n * (q + 1) / ranks;
  return {first, end - first};
}

void sliceBytes(int64_t n, int ranks, size_t elemBytes,
                std::vector<int64_t> &offsets, std::vector<int64_t> &counts) {
  offsets.clear();
  counts.clear();
  for (int q = 0; q < ranks; ++q) {
    Slice s = sliceOf(n, q, ranks);
    offsets.push_back(s.first * int64_t(elemBytes));
    counts.push_back(s.count * int64_t(elemBytes));
  }
}

std::vector<std::pair<size_t, size_t>> updateState(const Step &step) {
  if (step.kind != Step::Call)
    return {};
  // adamw_update(param, grad, m, v, lr, t, skip, working) -> (param, m, v,
  // working); sgd_update(param, grad, lr, buf, skip, working) -> (param,
  // buf, working).
  if (step.op == Op::AdamwUpdate)
    return {{2, 1}, {3, 2}};
  if (step.op == Op::SgdUpdate)
    return {{3, 1}};
  return {};
}

ZeroPlan planZero(const Artifact &art) {
  ZeroPlan z;
  z.stateElements.assign(art.optState.size(), -1);
  for (const Function &fn : art.functions) {
    std::vector<int64_t> elements(fn.steps.size(), -1);
    bool any = false;
    for (size_t i = 0; i < fn.steps.size(); ++i) {
      const Step &step = fn.steps[i];
      std::vector<std::pair<size_t, size_t>> state = updateState(step);
      if (state.empty())
        continue;
      std::string where = art.file("plan") + ": " + fn.name + " step " +
                          std::to_string(i) + " (" + opName(step.op) + "): ";
      const Value &param = fn.values[size_t(step.inputs[0])];
      if (param.storage != Storage::Param)
        fail(TCC_ERROR_FORMAT, where + "its parameter operand is not a "
                                       "parameter, so ZeRO-1 cannot shard it");
      if (step.attrs.elementOffset != 0 ||
          fn.values[size_t(step.inputs[1])].elements != param.elements)
        fail(TCC_ERROR_FORMAT,
             where + "it updates a block of its parameter (a weight "
                     "gradient made in row blocks under --memory-budget), "
                     "which ZeRO-1 does not shard; compile with a larger "
                     "budget or run without --zero");
      for (auto [in, out] : state) {
        if (in >= step.inputs.size() || step.inputs[in] < 0)
          continue;
        const Value &v = fn.values[size_t(step.inputs[in])];
        if (v.storage != Storage::OptState || v.elements != param.elements)
          fail(TCC_ERROR_FORMAT,
               where + "its optimizer state operand " + std::to_string(in) +
                   " is not an optimizer-state slot of the parameter's "
                   "size, so ZeRO-1 cannot shard it");
        z.stateElements[size_t(v.index)] = param.elements;
      }
      elements[i] = param.elements;
      any = true;
      if (std::find(z.params.begin(), z.params.end(), size_t(param.index)) ==
          z.params.end())
        z.params.push_back(size_t(param.index));
    }
    z.stepElements.push_back(any ? std::move(elements)
                                 : std::vector<int64_t>{});
  }
  // Nothing but the updates may read sharded state or an update's results
  // (which hold one rank's slice until the gather after the step).
  for (const Function &fn : art.functions) {
    std::vector<bool> updated(fn.values.size(), false);
    for (const Step &step : fn.steps)
      if (!updateState(step).empty())
        for (int64_t id : step.outputs)
          if (id >= 0)
            updated[size_t(id)] = true;
    for (size_t i = 0; i < fn.steps.size(); ++i) {
      if (!updateState(fn.steps[i]).empty())
        continue;
      for (int64_t id : fn.steps[i].inputs) {
        if (id < 0)
          continue;
        const Value &v = fn.values[size_t(id)];
        bool sharded = v.storage == Storage::OptState &&
                       z.stateElements[size_t(v.index)] >= 0;
        if (sharded || updated[size_t(id)])
          fail(TCC_ERROR_FORMAT,
               art.file("plan") + ": " + fn.name + " step " +
                   std::to_string(i) + " reads " +
                   (sharded ? "optimizer state '" +
                                  art.optState[size_t(v.index)].name + "'"
                            : "value " + std::to_string(id)) +
                   ", which ZeRO-1 shards over the ranks (only optimizer "
                   "updates may)");
      }
    }
  }
  return z;
}

} // namespace tcc::rt
