//===- WorkingCopyTest.cpp - bf16/f16 working copies of parameters --------===//
//
// Under --precision bf16|fp16 a parameter the forward reads in 16 bits has
// a persistent working copy (plan params[i].working), always its f32
// master rounded to nearest even. The optimizer call writes it
// (sgd_update's / adamw_update's optional working -> new_working) in the
// kernel that writes the master; the session fills it when it writes the
// master from the host. Checked here: the calls bit for bit against
// data/half.h's rounding of the f32 result they write, the loader's
// refusals, and a session (open, steps, tcc_write_param, a checkpoint
// restore, tcc_memory and tcc inspect).
//
//===----------------------------------------------------------------------===//

#include "CallArtifact.h"
#include "WorkingTestArtifact.h"

#include "checkpoint/checkpoint.h"
#include "exec/inspect.h"

#include <algorithm>
#include <cmath>
#include <sstream>

using namespace rttest;
using testutil::i64;
using testutil::makeArray;

namespace {


Array flag(bool on) {
  return makeArray<uint8_t>("", DType::Bool, {}, {uint8_t(on ? 1 : 0)});
}
Array f64(double v) { return makeArray<double>("", DType::F64, {}, {v}); }

/// `working` (16-bit) against `master` (f32) rounded to nearest even, bit
/// for bit.
void expectRounded(const Array &working, const Array &master,
                   const std::string &what) {
  ASSERT_EQ(working.numElements(), master.numElements()) << what;
  int64_t wrong = 0;
  for (int64_t i = 0; i < master.numElements(); ++i) {
    float p = master.data<float>()[i];
    uint16_t want = halfBits(working.dtype, p);
    uint16_t got = working.data<uint16_t>()[i];
    if (got != want && wrong++ < 5)
      ADD_FAILURE() << what << " element " << i << ": got 0x" << std::hex
                    << got << ", " << std::dec << p << " rounds to 0x"
                    << std::hex << want;
  }
  EXPECT_EQ(wrong, 0) << what;
}

class WorkingCopy : public ::testing::TestWithParam<const char *> {
protected:
  DType t = std::string(GetParam()) == "bf16" ? DType::BF16 : DType::F16;
  std::string tag(const std::string &what) const {
    return what + "_" + GetParam();
  }
};

TEST_P(WorkingCopy, SgdWritesTheRoundedNewParam) {
  const size_t n = 37;
  Array p = testutil::f32({int64_t(n)}, wave(n, 3.0f)),
        g = testutil::f32({int64_t(n)}, wave(n, 0.7f, 1.0f)),
        buf = testutil::f32({int64_t(n)}, wave(n, 0.2f, 2.0f));
  Array old = floats(t, {int64_t(n)}, wave(n, 5.0f, 3.0f));
  CallResult f32n{DType::F32, {int64_t(n)}}, halfn{t, {int64_t(n)}};
  for (bool momentum : {false, true}) {
    SCOPED_TRACE(momentum ? "momentum" : "plain");
    json attrs = momentum ? json{{"momentum", 0.9}, {"nesterov", true},
                                 {"weight_decay", 0.01}}
                          : json{{"weight_decay", 0.01}};
    Array b = momentum ? buf : absent();
    CallResult nb = momentum ? f32n : absentResult();
    std::vector<Array> plain =
        runCall(tag("sgd_plain"), "sgd_update", attrs,
                {p, g, f64(0.03), b}, {f32n, nb});
    std::vector<Array> with =
        runCall(tag("sgd_working"), "sgd_update", attrs,
                {p, g, f64(0.03), b, absent(), old}, {f32n, nb, halfn});
    ASSERT_EQ(with.size(), plain.size() + 1);
    // The master (and buffer) as without a working copy; the copy rounded
    // from the master just written.
    for (size_t k = 0; k < plain.size(); ++k)
      EXPECT_EQ(with[k].bytes, plain[k].bytes) << "output " << k;
    EXPECT_NE(with[0].bytes, p.bytes); // it did update
    expectRounded(with.back(), with[0], "new_working");
  }
}

TEST_P(WorkingCopy, AdamwWritesTheRoundedNewParam) {
  const size_t n = 29;
  Array p = testutil::f32({int64_t(n)}, wave(n, 2.0f)),
        g = testutil::f32({int64_t(n)}, wave(n, 0.1f, 1.0f)),
        m = testutil::f32({int64_t(n)}, wave(n, 0.01f, 2.0f)),
        v = testutil::f32({int64_t(n)}, std::vector<float>(n, 0.001f));
  Array old = floats(t, {int64_t(n)}, wave(n, 5.0f, 3.0f));
  CallResult f32n{DType::F32, {int64_t(n)}}, halfn{t, {int64_t(n)}};
  json attrs = {{"weight_decay", 0.1}};
  std::vector<Array> plain =
      runCall(tag("adamw_plain"), "adamw_update", attrs,
              {p, g, m, v, f64(1e-2), i64({}, {3})}, {f32n, f32n, f32n});
  std::vector<Array> with = runCall(
      tag("adamw_working"), "adamw_update", attrs,
      {p, g, m, v, f64(1e-2), i64({}, {3}), absent(), old},
      {f32n, f32n, f32n, halfn});
  ASSERT_EQ(plain.size(), 3u);
  ASSERT_EQ(with.size(), 4u);
  for (size_t k = 0; k < 3; ++k)
    EXPECT_EQ(with[k].bytes, plain[k].bytes) << "output " << k;
  EXPECT_NE(with[0].bytes, p.bytes);
  expectRounded(with[3], with[0], "new_working");
}

TEST_P(WorkingCopy, RoundsTiesToEvenByHand) {
  // lr 0 and no weight decay: new_param = fma(grad, -0, param) = param
  // exactly, so the working copy is the param rounded. workingW0 holds two
  // ties of the type (to even: down, then up) and 0.1.
  std::vector<float> w0 = workingW0(t);
  Array p = testutil::f32({3}, w0), g = testutil::f32({3}, {1.5f, -2, 8});
  Array old = floats(t, {3}, {7, 7, 7});
  std::vector<Array> out =
      runCall(tag("sgd_ties"), "sgd_update", json::object(),
              {p, g, f64(0.0), absent(), absent(), old},
              {{DType::F32, {3}}, absentResult(), {t, {3}}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].bytes, p.bytes);
  std::vector<uint16_t> want = workingW0Bits(t);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(out[1].data<uint16_t>()[i], want[i]) << "element " << i;
}

TEST_P(WorkingCopy, SkippedUpdateKeepsTheWorkingCopy) {
  // Dynamic loss scaling's overflow: nothing changes; results that are not
  // their operands in place get the operands' bits.
  const size_t n = 11;
  Array p = testutil::f32({int64_t(n)}, wave(n, 3.0f)),
        g = testutil::f32({int64_t(n)}, wave(n, 0.7f, 1.0f)),
        m = testutil::f32({int64_t(n)}, wave(n, 0.01f, 2.0f)),
        v = testutil::f32({int64_t(n)}, std::vector<float>(n, 0.001f));
  // A working copy that is not p rounded: a skip must not refresh it.
  Array old = floats(t, {int64_t(n)}, wave(n, 5.0f, 3.0f));
  CallResult f32n{DType::F32, {int64_t(n)}}, halfn{t, {int64_t(n)}};
  std::vector<Array> sgd =
      runCall(tag("sgd_skip"), "sgd_update", json::object(),
              {p, g, f64(0.03), absent(), flag(true), old},
              {f32n, absentResult(), halfn});
  ASSERT_EQ(sgd.size(), 2u);
  EXPECT_EQ(sgd[0].bytes, p.bytes);
  EXPECT_EQ(sgd[1].bytes, old.bytes);
  std::vector<Array> adamw = runCall(
      tag("adamw_skip"), "adamw_update", json::object(),
      {p, g, m, v, f64(1e-2), i64({}, {3}), flag(true), old},
      {f32n, f32n, f32n, halfn});
  ASSERT_EQ(adamw.size(), 4u);
  EXPECT_EQ(adamw[0].bytes, p.bytes);
  EXPECT_EQ(adamw[1].bytes, m.bytes);
  EXPECT_EQ(adamw[2].bytes, v.bytes);
  EXPECT_EQ(adamw[3].bytes, old.bytes);
  // A clear flag updates as without one.
  std::vector<Array> clear = runCall(
      tag("adamw_noskip"), "adamw_update", json::object(),
      {p, g, m, v, f64(1e-2), i64({}, {3}), flag(false), old},
      {f32n, f32n, f32n, halfn});
  ASSERT_EQ(clear.size(), 4u);
  EXPECT_NE(clear[0].bytes, p.bytes);
  expectRounded(clear[3], clear[0], "new_working");
}

//===----------------------------------------------------------------------===//
// A session with working copies
//===----------------------------------------------------------------------===//

TEST_P(WorkingCopy, SessionKeepsWorkingCopiesRoundedFromTheMasters) {
  TempDir dir(tag("session"));
  workingArtifact(t).write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  // Working copies are not parameters or optimizer state of the C API.
  EXPECT_EQ(tcc_num_params(s), 4);
  EXPECT_EQ(tcc_num_opt_state(s), 0);
  bindWorking(s, t);
  double loss;

  // After open: the initial weights rounded (the ties by hand).
  std::vector<uint16_t> w0 = workingW0Bits(t);
  w0.push_back(halfBits(t, workingB0()));
  ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
  EXPECT_EQ(readProbes(s), w0);
  std::vector<float> w1 = readParam<float>(s, "w", 3);
  EXPECT_NE(w1, workingW0(t)); // the step updated the master
  const char *written = nullptr;
  ASSERT_EQ(tcc_save_checkpoint(s, (dir / "ckpt").c_str(), 0, nullptr,
                                &written),
            TCC_OK)
      << tcc_last_error();
  std::vector<uint16_t> afterStep1 = roundedMasters(s, t);

  // The optimizer wrote them (w's in place, b's copied back by its
  // working result).
  ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
  EXPECT_EQ(readProbes(s), afterStep1);
  std::vector<uint16_t> afterStep2 = roundedMasters(s, t);
  ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
  EXPECT_EQ(readProbes(s), afterStep2);

  // tcc_write_param rewrites the copy from the new values.
  std::vector<float> nw = {0.333333343f, -65519.0f, 3.0e-6f};
  ASSERT_EQ(tcc_write_param(s, "w", nw.data(), 12), TCC_OK) << tcc_last_error();
  std::vector<uint16_t> want;
  for (float f : nw)
    want.push_back(halfBits(t, f));
  want.push_back(roundedMasters(s, t)[3]);
  ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
  EXPECT_EQ(readProbes(s), want);
  if (t == DType::F16) // 65519 is below the halfway point to inf: 65504
    EXPECT_EQ(want[1], 0xFBFF);

  // A restore rewrites them from the restored masters.
  ASSERT_EQ(tcc_restore_checkpoint(s, written, nullptr, nullptr), TCC_OK)
      << tcc_last_error();
  EXPECT_EQ(readParam<float>(s, "w", 3), w1);
  ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
  EXPECT_EQ(readProbes(s), afterStep1);

  // The checkpoint holds the masters only.
  tcc::checkpoint::Checkpoint ck = tcc::checkpoint::loadCheckpoint(written);
  std::vector<std::string> names;
  for (const Array &a : ck.params)
    names.push_back(a.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"b", "probe_b", "probe_w", "w"}));
  EXPECT_TRUE(ck.optState.empty());

  // Memory: 4 elements of 2 bytes, in the total and in tcc inspect.
  tcc_memory_info m;
  ASSERT_EQ(tcc_memory(s, &m), TCC_OK);
  EXPECT_EQ(m.working_bytes, 8);
  EXPECT_EQ(m.param_bytes, 12 + 4 + 6 + 2);
  EXPECT_EQ(m.total_bytes, m.arena_bytes + m.param_bytes + m.working_bytes +
                               m.opt_state_bytes + m.input_bytes +
                               m.constant_bytes);
  tcc_session_close(s);
  std::ostringstream text;
  std::string error;
  ASSERT_EQ(tcc::rt::inspectArtifact(dir.path, text, error), TCC_OK) << error;
  std::string out = text.str();
  EXPECT_NE(out.find("  parameters                  24 bytes\n"
                     "  working copies               8 bytes\n"
                     "  optimizer"),
            std::string::npos)
      << out;
  size_t at = out.find("  total");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_EQ(std::stoll(out.substr(at + 7)), m.total_bytes) << out;
}

TEST(WorkingCopyInspect, NoLineWithoutWorkingCopies) {
  TempDir dir("working_inspect_none");
  linearRegression().write(dir.path);
  std::ostringstream text;
  std::string error;
  ASSERT_EQ(tcc::rt::inspectArtifact(dir.path, text, error), TCC_OK) << error;
  EXPECT_EQ(text.str().find("working copies"), std::string::npos);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  tcc_memory_info m;
  ASSERT_EQ(tcc_memory(s, &m), TCC_OK);
  EXPECT_EQ(m.working_bytes, 0);
  tcc_session_close(s);
}

//===----------------------------------------------------------------------===//
// What the loader refuses
//===----------------------------------------------------------------------===//

class WorkingLoadError : public ::testing::Test {
protected:
  TempDir dir{"working_load_error"};
  TestArtifact art = workingArtifact(DType::BF16);

  json &values() { return art.fn("train_step")["values"]; }
  json &steps() { return art.fn("train_step")["steps"]; }
  json &results() { return art.fn("train_step")["results"]; }

  /// Opening fails with `status` and a message containing every part.
  void expect(tcc_status status, std::vector<std::string> parts) {
    fs::remove_all(dir.path);
    art.write(dir.path);
    std::string msg;
    EXPECT_EQ(openStatus(dir.path, msg), status) << msg;
    for (const std::string &p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' in: " << msg;
    art = workingArtifact(DType::BF16);
  }
};

TEST_F(WorkingLoadError, WorkingDtype) {
  art.plan["params"][1]["working"] = "f32";
  expect(TCC_ERROR_FORMAT,
         {"plan.json: params[1].working: unknown working dtype 'f32' "
          "(expected bf16 or f16)"});
  art.plan["params"][0]["working"] = 16;
  expect(TCC_ERROR_FORMAT, {"params[0].working", "expected a string"});
  // Only an f32 parameter has one.
  art.plan["params"][2]["working"] = "bf16";
  expect(TCC_ERROR_FORMAT,
         {"params[2].working", "parameter 'probe_w' is bf16 [3, 1]: only f32 "
                               "parameters have a working copy"});
}

TEST_F(WorkingLoadError, WorkingValues) {
  // Of another dtype than the param's working copy, or another size.
  values()[7]["dtype"] = "f16";
  expect(TCC_ERROR_FORMAT,
         {"functions.train_step.values[7]",
          "f16 [3, 1] does not fit the working copy of param 0 'w', bf16 "
          "[3, 1]"});
  values()[7]["shape"] = {4, 1};
  expect(TCC_ERROR_FORMAT,
         {"values[7]", "bf16 [4, 1] does not fit the working copy of param "
                       "0 'w'"});
  // Of a param without one.
  art.plan["params"][0].erase("working");
  expect(TCC_ERROR_FORMAT,
         {"values[7]", "the working copy of param 0 'w', which has none "
                       "(params[0] has no 'working')"});
  values()[7]["index"] = 4;
  expect(TCC_ERROR_FORMAT,
         {"values[7].index", "param index 4 is out of range (4 params)"});
  values()[7]["storage"] = "workng";
  expect(TCC_ERROR_FORMAT,
         {"values[7].storage", "unknown storage 'workng' (expected arena, "
                               "param, opt_state, working, step, input or "
                               "constant)"});
}

TEST_F(WorkingLoadError, OptimizerCalls) {
  // working without new_working, and the reverse.
  steps()[3]["outputs"] = {13, -1, -1};
  expect(TCC_ERROR_FORMAT,
         {"steps[3] (sgd_update)",
          "working is present but new_working is absent (both or neither)"});
  steps()[3]["inputs"] = {5, 2, 4, -1, -1, -1};
  expect(TCC_ERROR_FORMAT,
         {"steps[3] (sgd_update)", "new_working is present but working is "
                                   "absent"});
  // Of the param's shape.
  steps()[4]["inputs"] = {6, 3, 4, -1, -1, 9};
  expect(TCC_ERROR_FORMAT, {"steps[4] (sgd_update)", "working is bf16 [1, 1], "
                                                     "expected bf16 [1]"});
  // A parameter "extra" with an f16 working copy (value 17).
  auto addExtra = [&] {
    art.plan["params"].push_back(tensor("extra", "f32", {3, 1}));
    art.plan["params"][4]["working"] = "f16";
    art.weights.push_back(named("extra", testutil::f32({3, 1}, {0, 0, 0})));
    values().push_back(slot("working", "f16", {3, 1}, 4));
  };
  // new_working of another dtype than working.
  addExtra();
  steps()[3]["outputs"] = {13, -1, 17};
  expect(TCC_ERROR_FORMAT,
         {"steps[3] (sgd_update)", "new_working is f16 [3, 1], expected bf16 "
                                   "[3, 1]"});
  // The working copy of another parameter than the one updated.
  addExtra();
  steps()[3]["inputs"] = {5, 2, 4, -1, -1, 17};
  steps()[3]["outputs"] = {13, -1, 17};
  expect(TCC_ERROR_FORMAT,
         {"steps[3] (sgd_update)", "working is the working copy of param 4, "
                                   "but param is param 0"});
  // A working copy of a bf16 param.
  steps()[3] = call("sgd_update", {10, 10, 4, -1, -1, 7}, {10, -1, 14});
  expect(TCC_ERROR_FORMAT,
         {"steps[3] (sgd_update)", "param is bf16 [3, 1]: only an f32 "
                                   "parameter has a working copy"});
  // adamw_update: the same rules (operand 7, result 3).
  art.plan["opt_state"] = {tensor("m", "f32", {1}), tensor("v", "f32", {1})};
  values().push_back(slot("opt_state", "f32", {1}, 0)); // 17
  values().push_back(slot("opt_state", "f32", {1}, 1)); // 18
  values().push_back(
      {{"dtype", "i64"}, {"shape", json::array()}, {"storage", "step"}}); // 19
  steps()[4] = call("adamw_update", {6, 3, 17, 18, 4, 19, -1, 8}, {15, 17, 18});
  expect(TCC_ERROR_FORMAT,
         {"steps[4] (adamw_update)",
          "working is present but new_working is absent (both or neither)"});
}

TEST_F(WorkingLoadError, WorkingResults) {
  results()[3] = {{"role", "working"}, {"index", 2}, {"value", 14}};
  expect(TCC_ERROR_FORMAT,
         {"results[3]", "param 2 'probe_w' has no working copy"});
  results()[3] = {{"role", "working"}, {"index", 1}, {"value", 14}};
  expect(TCC_ERROR_FORMAT,
         {"results[3]", "value 14 (bf16 [3, 1]) does not fit the working "
                        "copy of param 'b' (bf16 [1])"});
  results()[3] = {{"role", "working"}, {"index", 1}, {"value", 16}};
  expect(TCC_ERROR_FORMAT,
         {"results[4]", "a second result for the working copy of param 'b'"});
  results()[3] = {{"role", "working"}, {"index", 9}, {"value", 14}};
  expect(TCC_ERROR_FORMAT, {"results[3].index", "param index 9 is out of range"});
  results()[3] = {{"role", "workin"}, {"index", 0}, {"value", 14}};
  expect(TCC_ERROR_FORMAT,
         {"results[3].role", "unknown role 'workin' (expected loss, metric, "
                             "param, opt_state or working"});
}

// A metric (train_step's grad_norm, eval_step's correct / counted) is a
// named f32 or f64 scalar.
TEST_F(WorkingLoadError, MetricResults) {
  results()[3] = {{"role", "metric"}, {"name", "grad_norm"}, {"value", 14}};
  expect(TCC_ERROR_FORMAT,
         {"results[3]",
          "metric 'grad_norm' is bf16 [3, 1], not an f32 or f64 scalar"});
  results()[3] = {{"role", "metric"}, {"name", ""}, {"value", 14}};
  expect(TCC_ERROR_FORMAT, {"results[3].name", "is empty"});
  results()[3] = {{"role", "metric"}, {"name", "loss"}, {"value", 14}};
  expect(TCC_ERROR_FORMAT, {"results[3].name", "'loss' is the loss's role"});
}

INSTANTIATE_TEST_SUITE_P(Types, WorkingCopy, ::testing::Values("bf16", "f16"),
                         [](const ::testing::TestParamInfo<const char *> &info) {
                           return std::string(info.param);
                         });

} // namespace
