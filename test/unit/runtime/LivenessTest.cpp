//===- LivenessTest.cpp - the live arena timeline of a plan ---------------===//
//
// heldArenaBytes and timelinePeaks (plan/liveness.h, `tcc inspect`'s memory
// chart) on a four-step function whose held bytes are derived by hand.
//
//===----------------------------------------------------------------------===//

#include "plan/liveness.h"

#include <gtest/gtest.h>

using namespace tcc::rt;

namespace {

Value arenaValue(int64_t offset, int64_t bytes) {
  Value v = Value::make(tcc::data::DType::F32, {bytes / 4});
  v.storage = Storage::Arena;
  v.offset = offset;
  return v;
}

Step kernel(std::vector<int64_t> inputs, int64_t output) {
  Step s;
  s.kind = Step::Kernel;
  s.inputs = std::move(inputs);
  s.outputs = {output};
  return s;
}

/// v0 an input; v1 = f(v0) at [0, 64); v2 = g(v1) at [64, 128); v3 = h(v2)
/// at [0, 64), v1's bytes once v1 is dead; the loss v4 = k(v3, v2) at
/// [128, 132).
Function fourSteps() {
  Function fn;
  fn.name = "train_step";
  fn.arenaBytes = 192;
  Value input = Value::make(tcc::data::DType::F32, {16});
  input.storage = Storage::Input;
  input.index = 0;
  fn.values = {input, arenaValue(0, 64), arenaValue(64, 64), arenaValue(0, 64),
               arenaValue(128, 4)};
  fn.steps = {kernel({0}, 1), kernel({1}, 2), kernel({2}, 3),
              kernel({3, 2}, 4)};
  Result loss;
  loss.role = Role::Loss;
  loss.value = 4;
  fn.results = {loss};
  return fn;
}

TEST(Liveness, HeldArenaBytesByHand) {
  Function fn = fourSteps();
  Dataflow flow = analyzeDataflow(
      fn, [](const std::string &why) { FAIL() << why; });
  // Before step 0 nothing is written; before 1, v1; before 2, v2 (v1 was
  // last read by step 1); before 3, v2 and v3; reading the results, v4.
  EXPECT_EQ(heldArenaBytes(fn, flow, fn.arenaBytes),
            (std::vector<int64_t>{0, 64, 64, 128, 4}));
}

TEST(Liveness, TimelinePeaksKeepEachShareMaximum) {
  std::vector<int64_t> t{0, 64, 64, 128, 4};
  // 5 entries in 2 columns: [0, 2) and [2, 5).
  EXPECT_EQ(timelinePeaks(t, 2), (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(timelinePeaks(t, 5), t);
  EXPECT_EQ(timelinePeaks(t, 64), t);
}

} // namespace
