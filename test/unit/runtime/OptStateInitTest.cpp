//===- OptStateInitTest.cpp - optimizer state "init" and the loss scale ---===//
//
// The plan's opt_state entries may carry "init", the value every element
// starts at (the loss scale of mixed precision: 65536): the session fills
// each slot in its dtype when it opens, the loader refuses values that do
// not fit, a restored checkpoint overwrites them. The training loop shows
// the optimizer state "loss_scale" (and "loss_scale.skipped") on the
// progress line and in two more CSV columns.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include "data/half.h"
#include "run/loop.h"
#include "run/session_engine.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <sstream>

using namespace rttest;

namespace {

/// The linear regression of RuntimeTestUtil.h with loss scaling state:
/// "loss_scale" (f32, init 65536) doubled by every step, the counters
/// "loss_scale.good_steps" (i64, no init: 0) and "loss_scale.skipped" (i64,
/// init 3), and slots of the other dtypes with an init.
TestArtifact withLossScale() {
  TestArtifact a = linearRegression();
  json &state = a.plan["opt_state"];
  state.push_back(tensor("loss_scale", "f32", {}));
  state.back()["init"] = 65536.0;
  state.push_back(tensor("loss_scale.good_steps", "i64", {}));
  state.push_back(tensor("loss_scale.skipped", "i64", {}));
  state.back()["init"] = 3;
  state.push_back(tensor("x.bf16", "bf16", {3}));
  state.back()["init"] = 0.1;
  state.push_back(tensor("x.f16", "f16", {2}));
  state.back()["init"] = -2.5;
  state.push_back(tensor("x.f64", "f64", {2}));
  state.back()["init"] = 0.1;
  state.push_back(tensor("x.i32", "i32", {2}));
  state.back()["init"] = -7;
  state.push_back(tensor("x.neg_zero", "f32", {1}));
  state.back()["init"] = -0.0;
  json &train = a.fn("train_step");
  train["arena_bytes"] = 576;
  json &values = train["values"];
  int64_t scale = int64_t(values.size());
  values.push_back(slot("opt_state", "f32", {}, 1));
  values.push_back(arena("f32", {}, 512));
  train["steps"].push_back(kernel("add_relu", {scale, scale}, scale + 1, 1));
  train["results"].push_back(
      {{"role", "opt_state"}, {"index", 1}, {"value", scale + 1}});
  return a;
}

template <class T> T readState(tcc_session *s, const char *name) {
  T v;
  std::memset(&v, 0xAB, sizeof v);
  EXPECT_EQ(tcc_read_opt_state(s, name, &v, sizeof v), TCC_OK)
      << tcc_last_error();
  return v;
}

template <class T, size_t N>
std::array<T, N> readStates(tcc_session *s, const char *name) {
  std::array<T, N> v;
  EXPECT_EQ(tcc_read_opt_state(s, name, v.data(), sizeof v), TCC_OK)
      << tcc_last_error();
  return v;
}

TEST(OptStateInit, SlotsStartAtTheirInit) {
  TempDir dir("opt_init");
  withLossScale().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  EXPECT_EQ(readState<float>(s, "loss_scale"), 65536.0f);
  EXPECT_EQ(readState<int64_t>(s, "loss_scale.good_steps"), 0);
  EXPECT_EQ(readState<int64_t>(s, "loss_scale.skipped"), 3);
  EXPECT_EQ(readState<float>(s, "b.momentum_buffer"), 0.0f); // no init
  for (uint16_t h : readStates<uint16_t, 3>(s, "x.bf16"))
    EXPECT_EQ(h, tcc::data::floatToBf16(0.1f));
  for (uint16_t h : readStates<uint16_t, 2>(s, "x.f16"))
    EXPECT_EQ(h, tcc::data::floatToF16(-2.5f));
  for (double d : readStates<double, 2>(s, "x.f64"))
    EXPECT_EQ(d, 0.1);
  for (int32_t i : readStates<int32_t, 2>(s, "x.i32"))
    EXPECT_EQ(i, -7);
  float negZero = readState<float>(s, "x.neg_zero");
  EXPECT_EQ(negZero, 0.0f);
  EXPECT_TRUE(std::signbit(negZero));

  // The step doubles the scale; a checkpoint of step 1, restored into a
  // fresh session, overwrites the init.
  bindRegression(s);
  double loss;
  ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
  EXPECT_EQ(readState<float>(s, "loss_scale"), 131072.0f);
  int64_t three = 3;
  ASSERT_EQ(tcc_write_opt_state(s, "loss_scale.good_steps", &three, 8), TCC_OK);
  const char *written = nullptr;
  ASSERT_EQ(tcc_save_checkpoint(s, (dir / "ckpt").c_str(), 0, nullptr,
                                &written),
            TCC_OK)
      << tcc_last_error();
  tcc_session_close(s);

  s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  EXPECT_EQ(readState<float>(s, "loss_scale"), 65536.0f);
  int64_t position;
  ASSERT_EQ(tcc_restore_checkpoint(s, (dir / "ckpt").c_str(), &position,
                                   nullptr),
            TCC_OK)
      << tcc_last_error();
  EXPECT_EQ(readState<float>(s, "loss_scale"), 131072.0f);
  EXPECT_EQ(readState<int64_t>(s, "loss_scale.good_steps"), 3);
  EXPECT_EQ(readState<int64_t>(s, "loss_scale.skipped"), 3);
  tcc_session_close(s);
}

TEST(OptStateInit, LoaderRefusesAnInitThatDoesNotFit) {
  struct Case {
    const char *dtype;
    json init;
    const char *why;
  } cases[] = {
      {"f32", "65536", "expected a number, got \"65536\""},
      {"f32", 1e39, "1e+39 is beyond the range of f32"},
      {"bf16", 1e39, "1e+39 is beyond the range of bf16"},
      {"bf16", 3.4e38, "3.4e+38 is beyond the range of bf16"},
      {"f16", 65536.0, "65536 is beyond the range of f16"},
      {"i64", 0.5, "0.5 is not an integer"},
      {"i64", 9.3e18, "9.3e+18 is beyond the range of i64"},
      {"i32", 3e9, "3000000000 is beyond the range of i32"},
      {"bool", 2, "2 is not 0 or 1"},
  };
  for (const Case &c : cases) {
    TempDir dir("opt_init_bad");
    TestArtifact a = linearRegression();
    a.plan["opt_state"].push_back(tensor("loss_scale", c.dtype, {}));
    a.plan["opt_state"].back()["init"] = c.init;
    a.write(dir.path);
    std::string message;
    EXPECT_EQ(openStatus(dir.path, message), TCC_ERROR_FORMAT) << c.why;
    EXPECT_NE(message.find("plan.json: opt_state[1].init: "),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(c.why), std::string::npos) << message;
    if (c.init.is_number())
      EXPECT_NE(message.find("optimizer state 'loss_scale' is " +
                             std::string(c.dtype) + " []"),
                std::string::npos)
          << message;
  }
  // In range: the largest finite f16, a bf16 value below its overflow.
  for (auto [dtype, init] : {std::pair<const char *, double>{"f16", 65504.0},
                             {"bf16", 3.0e38},
                             {"bool", 1.0},
                             {"i64", -9223372036854775808.0}}) {
    TempDir dir("opt_init_ok");
    TestArtifact a = linearRegression();
    a.plan["opt_state"].push_back(tensor("s", dtype, {}));
    a.plan["opt_state"].back()["init"] = init;
    a.write(dir.path);
    std::string message;
    EXPECT_EQ(openStatus(dir.path, message), TCC_OK) << dtype << ": " << message;
  }
}

/// Trains `artifact` for 3 steps through the loop; its output and log.
void runLoop(const TestArtifact &artifact, std::string &out,
             std::string &log) {
  TempDir dir("opt_init_loop");
  artifact.write(dir / "a.tcc");
  std::vector<float> x = regressionX(), y = regressionY();
  tcc::data::writeNpz(dir / "train.npz",
                      {named("x", testutil::f32({4, 3}, x)),
                       named("y", testutil::f32({4, 1}, y))});
  std::string error;
  std::unique_ptr<tcc::run::SessionEngine> engine =
      tcc::run::SessionEngine::open(dir / "a.tcc", "cpu", 0, error);
  ASSERT_TRUE(engine) << error;
  tcc::run::RunOptions options;
  options.data = dir / "train.npz";
  options.steps = 3;
  options.stepsGiven = true;
  options.progress = "lines";
  options.log = dir / "log.csv";
  std::ostringstream o, e;
  EXPECT_EQ(tcc::run::runTraining(*engine, options, o, e), 0) << e.str();
  out = o.str();
  std::vector<uint8_t> bytes = testutil::readFile(dir / "log.csv");
  log.assign(bytes.begin(), bytes.end());
}

TEST(OptStateInit, LoopShowsTheLossScale) {
  std::string out, log;
  runLoop(withLossScale(), out, log);
  // After each step: 65536 doubled.
  EXPECT_NE(out.find("  scale 131072  skipped 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  scale 262144  skipped 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  scale 524288  skipped 3\n"), std::string::npos) << out;
  std::istringstream lines(log);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "step,loss,lr,seconds,throughput,elapsed,loss_scale,skipped");
  for (const char *end : {",131072,3", ",262144,3", ",524288,3"}) {
    ASSERT_TRUE(std::getline(lines, line));
    EXPECT_EQ(line.substr(line.size() - std::strlen(end)), end) << line;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 7) << line;
  }

  // Without a loss scale: six columns, nothing more on the line.
  runLoop(linearRegression(), out, log);
  EXPECT_EQ(out.find("scale"), std::string::npos) << out;
  EXPECT_EQ(log.substr(0, log.find('\n')),
            "step,loss,lr,seconds,throughput,elapsed");
  EXPECT_EQ(std::count(log.begin(), log.end(), ','), 4 * 5) << log;
}

} // namespace
