//===- cpu_collectives.cpp - the CPU backend's exchanges between ranks ----===//
//
// The collective steps of a data-parallel plan and ZeRO-1's gathers, over
// the MPI group of the session's communicator (exec/dp.h): an all_reduce
// output all-reduced, reduce-scattered or left alone as exchangeOf says.
//
//===----------------------------------------------------------------------===//

#include "exec/cpu_backend.h"

#include <cstring>
#include <string>

namespace tcc::rt {

void CpuBackend::startCollective(const Function &fn, size_t s,
                                 uint8_t *const *ptrs, bool scatter) {
  const Step &step = fn.steps[s];
  if (step.collective != CollectiveOp::AllReduce)
    fail(TCC_ERROR_BACKEND, fn.name + " step " + std::to_string(s) + " (" +
                                collectiveName(step.collective) +
                                "): only all_reduce runs over MPI");
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    const Value &v = fn.values[step.outputs[i]];
    uint8_t *out = ptrs[step.outputs[i]];
    const uint8_t *in = ptrs[step.inputs[i]];
    if (out != in)
      std::memmove(out, in, size_t(v.bytes));
    bool mean = step.reduction == Reduction::Mean;
    std::string what = fn.name + " step " + std::to_string(s);
    switch (exchangeOf(step, i, scatter)) {
    case Exchange::None:
      break;
    case Exchange::AllReduce:
      group->start(out, v.elements, v.dtype, mean,
                   what + (step.scatteredOnly
                               ? std::string(" (the sum of the ranks' parts "
                                             "of the gradient norm, ZeRO-1)")
                               : " (all_reduce of bucket " +
                                     std::to_string(step.bucket) + ")"));
      break;
    case Exchange::ReduceScatter:
      group->startScatter(out, v.elements, v.dtype, mean,
                          what + " (reduce_scatter of bucket " +
                              std::to_string(step.bucket) + ", ZeRO-1)");
      break;
    }
  }
}

void CpuBackend::startGather(uint8_t *buf, const std::vector<int64_t> &offsets,
                             const std::vector<int64_t> &counts,
                             const std::string &what) {
  if (group)
    group->startGather(buf, offsets, counts, what);
}

void CpuBackend::startGatherToRoot(const uint8_t *mine, uint8_t *all,
                                   const std::vector<int64_t> &offsets,
                                   const std::vector<int64_t> &counts,
                                   const std::string &what) {
  if (group)
    group->startGatherToRoot(mine, all, offsets, counts, what);
  else if (counts[0] > 0)
    std::memcpy(all + offsets[0], mine, size_t(counts[0]));
}

void CpuBackend::finishExchange() {
  if (group)
    group->waitAll();
}

} // namespace tcc::rt
