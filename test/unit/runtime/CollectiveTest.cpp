//===- CollectiveTest.cpp - collective plan steps at one rank -------------===//
//
// The linear regression of RuntimeTestUtil.h with its gradients all-reduced
// before the update, as a data-parallel step is planned: at one rank it
// must train bit-identically to the step without, and the loader must
// refuse malformed collective steps naming the step and the field.
//
//===----------------------------------------------------------------------===//

#include "CollectiveArtifact.h"

#include <cstring>

using namespace rttest;

namespace {

/// w and b after `steps` training steps of the artifact written to `dir`.
std::vector<float> trained(const TestArtifact &art, const std::string &dir,
                           int steps) {
  art.write(dir);
  tcc_session *s = openOrFail(dir);
  if (!s)
    return {};
  bindRegression(s);
  for (int t = 0; t < steps; ++t)
    EXPECT_EQ(tcc_train_step(s, nullptr), TCC_OK) << tcc_last_error();
  std::vector<float> out = readParam<float>(s, "w", 3);
  out.push_back(readParam<float>(s, "b", 1)[0]);
  tcc_session_close(s);
  return out;
}

TEST(Collective, AllReduceAtOneRankTrainsBitIdentically) {
  TempDir plain("collective-plain"), reduced("collective-reduced");
  std::vector<float> want = trained(linearRegression(), plain.path, 3);
  std::vector<float> got = trained(allReducedRegression(), reduced.path, 3);
  ASSERT_EQ(want.size(), 4u);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(std::memcmp(want.data(), got.data(), 16), 0);
}

TEST(Collective, ProfileNamesTheCollective) {
  TempDir dir("collective-profile");
  allReducedRegression().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  bindRegression(s);
  size_t count = 0;
  ASSERT_EQ(tcc_profile_step(s, nullptr, nullptr, 0, &count), TCC_OK);
  std::vector<tcc_profile_record> records(count);
  ASSERT_EQ(tcc_profile_step(s, nullptr, records.data(), count, &count), TCC_OK)
      << tcc_last_error();
  ASSERT_EQ(count, 10u);
  EXPECT_EQ(records[7].kind, TCC_PROFILE_COLLECTIVE);
  EXPECT_STREQ(records[7].name, "all_reduce");
  tcc_session_close(s);
}

class CollectiveLoadError : public ::testing::Test {
protected:
  TempDir dir{"collective-load"};
  TestArtifact art = allReducedRegression();

  json &step() { return art.fn("train_step")["steps"][7]; }
  void expect(tcc_status status, std::vector<std::string> parts) {
    art.write(dir.path);
    std::string msg;
    EXPECT_EQ(openStatus(dir.path, msg), status) << msg;
    for (const std::string &p : parts)
      EXPECT_NE(msg.find(p), std::string::npos)
          << "'" << p << "' not in: " << msg;
    art = allReducedRegression();
  }
};

TEST_F(CollectiveLoadError, Fields) {
  step()["op"] = "broadcast";
  expect(TCC_ERROR_FORMAT, {"plan.json: functions.train_step.steps[7].op",
                            "unknown collective 'broadcast'"});
  step()["reduction"] = "max";
  expect(TCC_ERROR_FORMAT, {"steps[7] (all_reduce).reduction",
                            "unknown reduction 'max' (expected sum or mean)"});
  step().erase("bucket");
  expect(TCC_ERROR_FORMAT, {"steps[7] (all_reduce)", "missing 'bucket'"});
  step()["stream"] = -1;
  expect(TCC_ERROR_FORMAT, {"bucket and stream are non-negative"});
  step()["gradients"] = 3;
  expect(TCC_ERROR_FORMAT, {"steps[7] (all_reduce).gradients",
                            "3 is not a count of its 2 inputs"});
  step()["scattered_only"] = 1;
  expect(TCC_ERROR_FORMAT, {"steps[7] (all_reduce).scattered_only",
                            "expected true or false, got 1"});
  step()["scattered_only"] = true;
  expect(TCC_ERROR_FORMAT, {"steps[7] (all_reduce).scattered_only",
                            "a scattered_only all_reduce sums partial sums: "
                            "reduction sum, no gradients"});
  step()["kind"] = "barrier";
  expect(TCC_ERROR_FORMAT, {"unknown step kind 'barrier' (expected kernel, "
                            "call or collective)"});
}

TEST_F(CollectiveLoadError, InputsAndOutputs) {
  step()["outputs"] = {17};
  expect(TCC_ERROR_FORMAT, {"steps[7] (all_reduce)",
                            "2 inputs and 1 outputs; a collective has one "
                            "output per input"});
  step()["outputs"] = {18, 17};
  expect(TCC_ERROR_FORMAT, {"output 0 is f32 [1], expected f32 [3, 1] for "
                            "input f32 [3, 1]"});
  step()["inputs"] = {11, -1};
  expect(TCC_ERROR_FORMAT, {"value id -1 is out of range"});
}

TEST_F(CollectiveLoadError, RanksAndSlices) {
  // gw [3, 1] scattered over 3 ranks into [1, 1] (the updates read the
  // unreduced gradients): the plan is well formed, but a session is one rank.
  auto scatter = [&](int64_t ranks, std::vector<int64_t> shape) {
    json &fn = art.fn("train_step");
    fn["values"][17] = arena("f32", shape, 512);
    fn["steps"][7] = {{"kind", "collective"}, {"op", "reduce_scatter"},
                      {"reduction", "sum"},   {"world_size", ranks},
                      {"bucket", 0},          {"stream", 1},
                      {"inputs", {11}},       {"outputs", {17}}};
    fn["steps"][8]["inputs"][1] = 11;
    fn["steps"][9]["inputs"][1] = 12;
  };
  scatter(3, {1, 1});
  expect(TCC_ERROR_BACKEND, {"train_step step 7 (reduce_scatter) was planned "
                             "for 3 ranks; this session runs one"});
  // Slices that do not divide the leading dimension are refused by the
  // loader, as the dialect's verifier refuses them.
  scatter(2, {1, 1});
  expect(TCC_ERROR_FORMAT, {"steps[7] (reduce_scatter)",
                            "input 0 (f32 [3, 1]) does not split into "
                            "world_size 2 slices"});
  scatter(0, {3, 1});
  expect(TCC_ERROR_FORMAT, {"world_size", "is 0, not positive"});
}

} // namespace
