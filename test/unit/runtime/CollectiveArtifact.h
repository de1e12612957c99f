// The linear regression of RuntimeTestUtil.h with its gradients all-reduced
// before the update, as a data-parallel step is planned (CollectiveTest.cpp
// on the CPU, test/unit/gpu/CudaNcclTest.cpp through NCCL).
#ifndef TCC_TEST_UNIT_RUNTIME_COLLECTIVEARTIFACT_H
#define TCC_TEST_UNIT_RUNTIME_COLLECTIVEARTIFACT_H

#include "RuntimeTestUtil.h"

namespace rttest {

/// linearRegression() with `all_reduce(gw, gb)` between the gradients and
/// the SGD updates (two new arena values, 17 and 18).
inline TestArtifact allReducedRegression() {
  TestArtifact a = linearRegression();
  json &fn = a.fn("train_step");
  fn["arena_bytes"] = 640;
  fn["values"].push_back(arena("f32", {3, 1}, 512)); // 17 gw, reduced
  fn["values"].push_back(arena("f32", {1}, 576));    // 18 gb, reduced
  json &steps = fn["steps"];
  json collective = {{"kind", "collective"}, {"op", "all_reduce"},
                     {"reduction", "mean"},  {"bucket", 0},
                     {"stream", 1},          {"inputs", {11, 12}},
                     {"outputs", {17, 18}}};
  steps.insert(steps.begin() + 7, collective); // before the first update
  steps[8]["inputs"][1] = 17;
  steps[9]["inputs"][1] = 18;
  return a;
}

} // namespace rttest

#endif // TCC_TEST_UNIT_RUNTIME_COLLECTIVEARTIFACT_H
