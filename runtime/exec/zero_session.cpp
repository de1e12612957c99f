//===- zero_session.cpp - a session's ZeRO-1 shards ---------------------===//

#include "exec/zero_session.h"

#include <string>
#include <utility>

namespace tcc::rt {

ZeroShards::ZeroShards(const Artifact &art, Backend &backend)
    : art(art), backend(backend) {
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
    backend.startGather(paramMem[p].data(), offsets, counts,
                        "the gather of parameter '" + t.name + "' (ZeRO-1)");
    if (working[p].size()) {
      sliceBytes(t.elements, ranks(), data::dtypeSize(*t.working), offsets,
                 counts);
      backend.startGather(working[p].data(), offsets, counts,
                          "the gather of the working copy of '" + t.name +
                              "' (ZeRO-1)");
    }
  }
  backend.finishExchange();
}

std::vector<data::Array>
ZeroShards::stateSnapshot(const std::vector<Mem> &optState) {
  int me = rank();
  std::vector<data::Array> out(art.optState.size());
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
    if (me == 0)
      a.bytes.resize(size_t(t.bytes));
    sliceBytes(t.elements, ranks(), data::dtypeSize(t.dtype), offsets, counts);
    backend.startGatherToRoot(optState[i].data(), a.bytes.data(), offsets,
                              counts,
                              "the checkpoint's gather of optimizer state '" +
                                  t.name + "' (ZeRO-1)");
  }
  backend.finishExchange();
  return out;
}

} // namespace tcc::rt
