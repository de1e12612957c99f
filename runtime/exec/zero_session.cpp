//===- zero_session.cpp - a session's ZeRO-1 shards ---------------------===//

#include "exec/zero_session.h"

#include <string>
#include <utility>

namespace tcc::rt {

ZeroShards::ZeroShards(const Artifact &art, std::unique_ptr<dp::Group> g)
    : art(art), group(std::move(g)) {
  ZeroPlan z = planZero(art);
  int q = rank(), n = ranks();
  stateElements = std::move(z.stateElements);
  params = std::move(z.params);
  for (const std::vector<int64_t> &elements : z.stepElements) {
    std::vector<FunctionBinding::Shard> s(elements.size());
    for (size_t i = 0; i < elements.size(); ++i)
      if (elements[i] >= 0) {
        Slice r = sliceOf(elements[i], q, n);
        s[i] = {r.first, r.count};
      }
    shards.push_back(std::move(s));
  }
}

Slice ZeroShards::held(size_t i) const {
  if (stateElements[i] < 0)
    return {0, art.optState[i].elements};
  return sliceOf(stateElements[i], rank(), ranks());
}

void ZeroShards::gatherAfter(size_t f, const std::vector<Mem> &paramMem,
                             const std::vector<Mem> &working) {
  if (shards[f].empty())
    return;
  std::vector<int64_t> offsets, counts;
  for (size_t p : params) {
    const TensorDesc &t = art.params[p];
    sliceBytes(t.elements, ranks(), data::dtypeSize(t.dtype), offsets, counts);
    group->startGather(paramMem[p].data(), offsets, counts,
                       "the gather of parameter '" + t.name + "' (ZeRO-1)");
    if (working[p].size()) {
      sliceBytes(t.elements, ranks(), data::dtypeSize(*t.working), offsets,
                 counts);
      group->startGather(working[p].data(), offsets, counts,
                         "the gather of the working copy of '" + t.name +
                             "' (ZeRO-1)");
    }
  }
  group->waitAll();
}

std::vector<data::Array>
ZeroShards::stateSnapshot(Backend &backend, const std::vector<Mem> &optState) {
  int me = rank();
  std::vector<data::Array> out(art.optState.size());
  std::vector<std::vector<uint8_t>> mine(out.size());
  std::vector<int64_t> offsets, counts;
  for (size_t i = 0; i < out.size(); ++i) {
    const TensorDesc &t = art.optState[i];
    data::Array &a = out[i];
    a.name = t.name;
    a.dtype = t.dtype;
    a.shape = t.shape;
    if (stateElements[i] < 0) {
      if (me == 0) {
        a.bytes.resize(optState[i].size());
        backend.download(a.bytes.data(), optState[i].data(), a.bytes.size());
      }
      continue;
    }
    mine[i].resize(optState[i].size());
    if (!mine[i].empty())
      backend.download(mine[i].data(), optState[i].data(), mine[i].size());
    if (me == 0)
      a.bytes.resize(size_t(t.bytes));
    sliceBytes(t.elements, ranks(), data::dtypeSize(t.dtype), offsets, counts);
    group->startGatherToRoot(mine[i].data(), a.bytes.data(), offsets, counts,
                             "the checkpoint's gather of optimizer state '" +
                                 t.name + "' (ZeRO-1)");
  }
  group->waitAll();
  return out;
}

} // namespace tcc::rt
