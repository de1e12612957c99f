//===- RuntimeTest.cpp - the C API on hand-written artifacts --------------===//

#include "RuntimeTestUtil.h"

#include "checkpoint/checkpoint.h"
#include "exec/backend.h"
#include "exec/inspect.h"
#include "plan/schedule.h"

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <sstream>

using namespace rttest;

namespace {

/// The regression trained in double: losses of `steps` steps and the final
/// w, b, momentum buffer.
struct Reference {
  std::vector<double> losses;
  double w[3], b, buf;
};

Reference trainInDouble(int steps, int64_t firstStep = 0) {
  std::vector<float> xf = regressionX(), yf = regressionY();
  Reference r{{}, {0.5, -0.25, 1.0}, 0.125, 0.0};
  for (int t = 0; t < steps; ++t) {
    double d[4], loss = 0;
    for (int i = 0; i < 4; ++i) {
      double p = 0;
      for (int j = 0; j < 3; ++j)
        p += xf[i * 3 + j] * r.w[j];
      d[i] = p + r.b - yf[i];
      loss += d[i] * d[i] / 4;
    }
    r.losses.push_back(loss);
    double lr = 0.1 / (1.0 + double(firstStep + t)), gb = 0;
    for (int i = 0; i < 4; ++i)
      gb += 0.5 * d[i];
    for (int j = 0; j < 3; ++j) {
      double gw = 0;
      for (int i = 0; i < 4; ++i)
        gw += xf[i * 3 + j] * 0.5 * d[i];
      r.w[j] -= lr * gw;
    }
    r.buf = 0.9 * r.buf + gb;
    r.b -= lr * r.buf;
  }
  return r;
}

TEST(Runtime, LinearRegressionTrainsAsComputedInDouble) {
  TempDir dir("linreg");
  linearRegression().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  EXPECT_EQ(tcc_num_params(s), 2);
  EXPECT_EQ(tcc_num_opt_state(s), 1);
  ASSERT_EQ(tcc_num_inputs(s), 2);
  tcc_tensor_info info;
  ASSERT_EQ(tcc_input_info(s, 0, &info), TCC_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, TCC_F32);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.shape[0], 4);
  EXPECT_EQ(info.shape[1], 3);
  EXPECT_EQ(info.bytes, 48u);
  EXPECT_EQ(tcc_label_input(s), nullptr);
  EXPECT_EQ(tcc_label_ignore_index(s), -100); // no cross_entropy
  bindRegression(s);

  Reference ref = trainInDouble(3);
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(tcc_steps_done(s), t);
    double loss = -1;
    ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
    EXPECT_NEAR(loss, ref.losses[t], 1e-5 * ref.losses[0]) << "step " << t;
  }
  EXPECT_EQ(tcc_steps_done(s), 3);
  std::vector<float> w = readParam<float>(s, "w", 3),
                     b = readParam<float>(s, "b", 1), buf(1);
  ASSERT_EQ(tcc_read_opt_state(s, "b.momentum_buffer", buf.data(), 4), TCC_OK);
  for (int j = 0; j < 3; ++j)
    EXPECT_NEAR(w[j], ref.w[j], 1e-5) << j;
  EXPECT_NEAR(b[0], ref.b, 1e-5);
  EXPECT_NEAR(buf[0], ref.buf, 1e-5);

  // eval_step sees the trained parameters and changes nothing.
  double eval = -1;
  ASSERT_EQ(tcc_eval_step(s, &eval), TCC_OK) << tcc_last_error();
  EXPECT_NEAR(eval, trainInDouble(4).losses[3], 1e-5);
  EXPECT_EQ(tcc_steps_done(s), 3);
  EXPECT_EQ(readParam<float>(s, "w", 3), w);
  tcc_session_close(s);
}

TEST(Runtime, WriteParamAndOptState) {
  TempDir dir("write");
  linearRegression().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  std::vector<float> w = {1, 2, 3};
  ASSERT_EQ(tcc_write_param(s, "w", w.data(), 12), TCC_OK);
  EXPECT_EQ(readParam<float>(s, "w", 3), w);
  float buf = 0.5f, back = 0;
  ASSERT_EQ(tcc_write_opt_state(s, "b.momentum_buffer", &buf, 4), TCC_OK);
  ASSERT_EQ(tcc_read_opt_state(s, "b.momentum_buffer", &back, 4), TCC_OK);
  EXPECT_EQ(back, 0.5f);
  EXPECT_EQ(tcc_write_param(s, "w", w.data(), 8), TCC_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tcc_last_error()).find("'w' is 12 bytes"),
            std::string::npos)
      << tcc_last_error();
  EXPECT_EQ(tcc_read_param(s, "nope", w.data(), 12), TCC_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tcc_last_error()).find("no parameter 'nope'"),
            std::string::npos)
      << tcc_last_error();
  tcc_session_close(s);
}

TEST(Runtime, BindErrors) {
  TempDir dir("bind");
  linearRegression().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  std::vector<float> x = regressionX();
  EXPECT_EQ(tcc_bind_input(s, "z", x.data(), 48), TCC_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tcc_last_error()).find("no input 'z' (x, y)"),
            std::string::npos)
      << tcc_last_error();
  EXPECT_EQ(tcc_bind_input(s, "x", x.data(), 44), TCC_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tcc_last_error())
                .find("input 'x' is 48 bytes (f32 [4, 3]), got 44"),
            std::string::npos)
      << tcc_last_error();
  // x bound, y not: the step refuses to run on garbage.
  ASSERT_EQ(tcc_bind_input(s, "x", x.data(), 48), TCC_OK);
  double loss;
  EXPECT_EQ(tcc_train_step(s, &loss), TCC_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tcc_last_error()).find("input 'y' is not bound"),
            std::string::npos)
      << tcc_last_error();
  EXPECT_EQ(tcc_steps_done(s), 0);
  EXPECT_EQ(tcc_input_info(s, 2, nullptr), TCC_ERROR_ARGUMENT);
  tcc_session_close(s);
}

TEST(Runtime, AccumInputsAreReportedAsTheFeedYieldsThem) {
  TempDir dir("accum");
  TestArtifact a = linearRegression();
  a.manifest["accum"] = 2;
  // With accum 2 every batch input leads with the micro-batch count...
  tcc_session *s = nullptr;
  a.write(dir.path);
  std::string msg;
  EXPECT_EQ(openStatus(dir.path, msg), TCC_ERROR_FORMAT);
  EXPECT_NE(msg.find("with accum 2 its leading dim must be the accumulation"),
            std::string::npos)
      << msg;
  // ...and the feed yields 2 * b samples.
  a.plan["functions"].erase("eval_step");
  json &fn = a.fn("train_step");
  fn["inputs"] = {tensor("x", "f32", {2, 2, 3}), tensor("y", "f32", {2, 2, 1})};
  // The step reads reshapes of the inputs: same bytes, its own shapes.
  fn["values"][0]["shape"] = {4, 3};
  fn["values"][1]["shape"] = {4, 1};
  a.write(dir.path);
  ASSERT_EQ(tcc_session_open(dir.path.c_str(), nullptr, &s), TCC_OK)
      << tcc_last_error();
  tcc_tensor_info info;
  ASSERT_EQ(tcc_input_info(s, 0, &info), TCC_OK);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.shape[0], 4);
  EXPECT_EQ(info.shape[1], 3);
  double loss;
  bindRegression(s);
  ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
  EXPECT_NEAR(loss, trainInDouble(1).losses[0], 1e-5);
  EXPECT_EQ(tcc_eval_step(s, &loss), TCC_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tcc_last_error()).find("no eval_step"),
            std::string::npos);
  tcc_session_close(s);
}

//===----------------------------------------------------------------------===//
// Data errors at run time
//===----------------------------------------------------------------------===//

/// loss = cross_entropy(logits, labels) sum / count, on batch inputs.
TestArtifact crossEntropyArtifact() {
  TestArtifact a;
  a.plan["params"] = json::array();
  a.fn("train_step") = {
      {"arena_bytes", 192},
      {"inputs", {tensor("logits", "f32", {3, 4}), tensor("labels", "i64", {3})}},
      {"values",
       {slot("input", "f32", {3, 4}, 0), slot("input", "i64", {3}, 1),
        arena("f32", {}, 0), arena("f32", {}, 64), arena("f32", {}, 128)}},
      {"steps",
       {call("cross_entropy", {0, 1}, {2, 3}, {{"ignore_index", -1}}),
        kernel("div", {2, 3}, 4, 1)}},
      {"results", {{{"role", "loss"}, {"value", 4}}}}};
  return a;
}

TEST(Runtime, CrossEntropyLossAndLabelOutOfRange) {
  TempDir dir("xent");
  crossEntropyArtifact().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  EXPECT_STREQ(tcc_label_input(s), "labels");
  EXPECT_EQ(tcc_label_ignore_index(s), -1);
  EXPECT_EQ(tcc_label_ignore_index(nullptr), -100);
  std::vector<float> logits = {1, 2, 3, 4, -1, 0, 1, 0.5f, 2, 2, 2, 2};
  std::vector<int64_t> labels = {3, -1, 0};
  ASSERT_EQ(tcc_bind_input(s, "logits", logits.data(), 48), TCC_OK);
  ASSERT_EQ(tcc_bind_input(s, "labels", labels.data(), 24), TCC_OK);
  double loss;
  ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
  double expected = 0;
  for (int r : {0, 2}) {
    double m = 0;
    for (int j = 0; j < 4; ++j)
      m += std::exp(double(logits[r * 4 + j]));
    expected += std::log(m) - logits[r * 4 + labels[r]];
  }
  EXPECT_NEAR(loss, expected / 2, 1e-6);

  labels = {3, 7, 0};
  ASSERT_EQ(tcc_bind_input(s, "labels", labels.data(), 24), TCC_OK);
  EXPECT_EQ(tcc_train_step(s, &loss), TCC_ERROR_DATA);
  std::string msg = tcc_last_error();
  EXPECT_NE(msg.find("train_step step 0 (cross_entropy): label 7 in row 1 of "
                     "input 'labels' is out of range for 4 classes"),
            std::string::npos)
      << msg;
  EXPECT_EQ(tcc_steps_done(s), 1);
  tcc_session_close(s);
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

TEST(Runtime, CheckpointRoundTripIsBitExact) {
  TempDir dir("ckpt");
  linearRegression().write(dir / "a.tcc");
  std::string ckpt = dir / "ckpt";

  tcc_session *s = openOrFail(dir / "a.tcc");
  ASSERT_TRUE(s);
  bindRegression(s);
  double loss;
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
  const char *written = nullptr;
  ASSERT_EQ(tcc_save_checkpoint(s, ckpt.c_str(), 8, "{\"loss\": 0.5}",
                                &written),
            TCC_OK)
      << tcc_last_error();
  EXPECT_EQ(std::string(written), ckpt + "/step-2");
  tcc::checkpoint::Checkpoint ck = tcc::checkpoint::loadCheckpoint(written);
  EXPECT_EQ(ck.state.step, 2);
  EXPECT_EQ(ck.state.dataPosition, 8);
  EXPECT_EQ(ck.state.modelFingerprint, "0123456789abcdef");
  EXPECT_EQ(ck.state.extra["train_config"],
            linearRegression().manifest["train_config"]);
  EXPECT_EQ(ck.state.extra["loss"], 0.5);
  ASSERT_EQ(ck.params.size(), 2u);
  EXPECT_EQ(ck.optState[0].name, "b.momentum_buffer");
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK);
  std::vector<float> w4 = readParam<float>(s, "w", 3),
                     b4 = readParam<float>(s, "b", 1);
  EXPECT_EQ(tcc_save_checkpoint(s, ckpt.c_str(), 0, "{\"step\": 1}", nullptr),
            TCC_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tcc_last_error()).find("'step' is reserved"),
            std::string::npos);
  EXPECT_EQ(tcc_save_checkpoint(s, ckpt.c_str(), 0, "[1]", nullptr),
            TCC_ERROR_ARGUMENT);
  tcc_session_close(s);

  // A fresh session resumes from the root (latest checkpoint) and lands on
  // the same bits.
  s = openOrFail(dir / "a.tcc");
  ASSERT_TRUE(s);
  bindRegression(s);
  int64_t position = -1;
  const char *from = nullptr;
  ASSERT_EQ(tcc_restore_checkpoint(s, ckpt.c_str(), &position, &from), TCC_OK)
      << tcc_last_error();
  EXPECT_EQ(position, 8);
  EXPECT_EQ(std::string(from), ckpt + "/step-2");
  EXPECT_EQ(tcc_steps_done(s), 2);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK);
  std::vector<float> w = readParam<float>(s, "w", 3),
                     b = readParam<float>(s, "b", 1);
  EXPECT_EQ(std::memcmp(w.data(), w4.data(), 12), 0);
  EXPECT_EQ(std::memcmp(b.data(), b4.data(), 4), 0);
  tcc_session_close(s);
}

TEST(Runtime, RestoreRefusesAnotherModelAndChangesNothing) {
  TempDir dir("ckpt-refuse");
  TestArtifact a = linearRegression();
  a.write(dir / "a.tcc");
  std::string ckpt = dir / "ckpt";
  tcc_session *s = openOrFail(dir / "a.tcc");
  ASSERT_TRUE(s);
  bindRegression(s);
  double loss;
  ASSERT_EQ(tcc_train_step(s, &loss), TCC_OK);
  ASSERT_EQ(tcc_save_checkpoint(s, ckpt.c_str(), 4, nullptr, nullptr), TCC_OK)
      << tcc_last_error();
  tcc_session_close(s);

  // Another configuration: the difference is named.
  TestArtifact b = linearRegression();
  b.manifest["fingerprint"] = "fedcba9876543210";
  std::string config = b.manifest["train_config"];
  config.replace(config.find("lr=0.1"), 6, "lr=0.2");
  b.manifest["train_config"] = config;
  b.write(dir / "b.tcc");
  s = openOrFail(dir / "b.tcc");
  ASSERT_TRUE(s);
  std::vector<float> w0 = readParam<float>(s, "w", 3);
  EXPECT_EQ(tcc_restore_checkpoint(s, ckpt.c_str(), nullptr, nullptr),
            TCC_ERROR_CHECKPOINT);
  std::string msg = tcc_last_error();
  EXPECT_NE(msg.find("was trained with another configuration: "
                     "optimizer=sgd:lr=0.1,momentum=0.9 there, "
                     "optimizer=sgd:lr=0.2,momentum=0.9 here"),
            std::string::npos)
      << msg;
  EXPECT_EQ(readParam<float>(s, "w", 3), w0);
  EXPECT_EQ(tcc_steps_done(s), 0);
  tcc_session_close(s);

  // Same configuration, another fingerprint: another model.
  b.manifest["train_config"] = a.manifest["train_config"];
  b.write(dir / "c.tcc");
  s = openOrFail(dir / "c.tcc");
  ASSERT_TRUE(s);
  EXPECT_EQ(tcc_restore_checkpoint(s, ckpt.c_str(), nullptr, nullptr),
            TCC_ERROR_CHECKPOINT);
  EXPECT_NE(std::string(tcc_last_error()).find("a checkpoint of another model"),
            std::string::npos)
      << tcc_last_error();
  tcc_session_close(s);

  // The right fingerprint but arrays that do not match the artifact.
  s = openOrFail(dir / "a.tcc");
  ASSERT_TRUE(s);
  tcc::checkpoint::Checkpoint ck =
      tcc::checkpoint::loadCheckpoint(ckpt + "/step-1");
  auto tryArrays = [&](std::vector<Array> params, std::vector<Array> opt,
                       const std::string &expected) {
    std::string root = dir / "bad";
    fs::remove_all(root);
    tcc::checkpoint::saveCheckpoint(root, params, opt, ck.state);
    EXPECT_EQ(tcc_restore_checkpoint(s, root.c_str(), nullptr, nullptr),
              TCC_ERROR_CHECKPOINT);
    EXPECT_NE(std::string(tcc_last_error()).find(expected), std::string::npos)
        << tcc_last_error();
    EXPECT_EQ(tcc_steps_done(s), 0);
  };
  const Array &pw = *tcc::data::findArray(ck.params, "w");
  const Array &pb = *tcc::data::findArray(ck.params, "b");
  tryArrays({pw}, ck.optState, "no tensor 'b'");
  tryArrays({pw, pb, named("c", testutil::f32({1}, {1}))}, ck.optState,
            "tensor 'c' is not in the artifact");
  std::vector<Array> reshaped = {pw, pb};
  reshaped[0].shape = {1, 3};
  tryArrays(reshaped, ck.optState, "'w' is f32 [1, 3], the artifact's is "
                                   "f32 [3, 1]");
  tryArrays(ck.params, {}, "no tensor 'b.momentum_buffer'");
  EXPECT_EQ(tcc_restore_checkpoint(s, (dir / "none").c_str(), nullptr, nullptr),
            TCC_ERROR_IO);
  tcc_session_close(s);
}

TEST(Runtime, ConfigDifferenceNamesTheFields) {
  using tcc::checkpoint::configDifference;
  std::string a = "loss=mse(y,t) optimizer=adamw:lr=0.001 grad_clip=1 "
                  "lr_schedule=constant accum=1 freeze= no_decay=";
  std::string b = "loss=mse(y,t) optimizer=adamw:lr=0.002 grad_clip=1 "
                  "lr_schedule=constant accum=2 freeze= no_decay=";
  EXPECT_EQ(configDifference(a, b), "optimizer=adamw:lr=0.001 accum=1 there, "
                                    "optimizer=adamw:lr=0.002 accum=2 here");
  EXPECT_EQ(configDifference("something else", a),
            "something else there, loss=mse(y,t) here");
}

//===----------------------------------------------------------------------===//
// Poisoning, memory, schedules
//===----------------------------------------------------------------------===//

/// Trains 2 steps with TCC_POISON_ARENA set or not; the losses and w.
std::vector<float> trainPoisoned(const std::string &dir, bool poison) {
  if (poison)
    ::setenv("TCC_POISON_ARENA", "1", 1);
  else
    ::unsetenv("TCC_POISON_ARENA");
  tcc_session *s = openOrFail(dir);
  ::unsetenv("TCC_POISON_ARENA");
  if (!s)
    return {};
  bindRegression(s);
  std::vector<float> out;
  for (int i = 0; i < 2; ++i) {
    double loss = 0, eval = 0;
    EXPECT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
    EXPECT_EQ(tcc_eval_step(s, &eval), TCC_OK) << tcc_last_error();
    out.push_back(float(loss));
    out.push_back(float(eval));
  }
  for (float w : readParam<float>(s, "w", 3))
    out.push_back(w);
  tcc_session_close(s);
  return out;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(Runtime, PoisoningLeavesACorrectPlanAlone) {
  TempDir dir("poison-ok");
  linearRegression().write(dir.path);
  std::vector<float> plain = trainPoisoned(dir.path, false),
                     poisoned = trainPoisoned(dir.path, true);
  ASSERT_EQ(plain.size(), 7u);
  EXPECT_TRUE(sameBits(plain, poisoned));
  for (float v : poisoned)
    EXPECT_FALSE(std::isnan(v));
}

TEST(Runtime, PoisoningExposesOverlappingLiveValues) {
  // A planner bug: gb (written at step 5, read at step 8) is put on the
  // loss's bytes while the loss is still live (a result). Without
  // poisoning the loss silently reads gb; with it, the bytes gb took over
  // are free once gb is dead, and the loss is NaN.
  TempDir dir("poison-bad");
  TestArtifact a = linearRegression();
  a.fn("train_step")["values"][12]["offset"] = 128;
  a.write(dir.path);
  std::vector<float> plain = trainPoisoned(dir.path, false),
                     poisoned = trainPoisoned(dir.path, true);
  ASSERT_EQ(plain.size(), 7u);
  EXPECT_FALSE(std::isnan(plain[0]));
  EXPECT_NE(plain[0], float(trainInDouble(1).losses[0])); // wrong, silently
  EXPECT_TRUE(std::isnan(poisoned[0]));
  EXPECT_FALSE(sameBits(plain, poisoned));
  // eval_step's plan is correct: unaffected.
  EXPECT_EQ(plain[1], poisoned[1]);
}

TEST(Runtime, MemoryMatchesInspect) {
  TempDir dir("memory");
  linearRegression().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  tcc_memory_info m;
  ASSERT_EQ(tcc_memory(s, &m), TCC_OK);
  EXPECT_EQ(m.arena_bytes, 512); // the larger of train_step's and eval_step's
  EXPECT_EQ(m.param_bytes, 16);
  EXPECT_EQ(m.opt_state_bytes, 4);
  EXPECT_EQ(m.input_bytes, 64);
  EXPECT_EQ(m.constant_bytes, 4);
  EXPECT_EQ(m.total_bytes, 600);
  tcc_session_close(s);

  std::ostringstream out;
  std::string error;
  ASSERT_EQ(tcc::rt::inspectArtifact(dir.path, out, error), TCC_OK) << error;
  std::string text = out.str();
  for (const std::string &part : std::vector<std::string>{
       "format       tcc-artifact version " +
            std::to_string(TCC_ARTIFACT_VERSION), "producer     runtime test",
        "fingerprint  0123456789abcdef", "schedule     constant lr=0.1",
        "kernels      kernels/kernels.cc kernels/host.so",
        "x  f32 [4, 3]  48 bytes", "parameters: 2, 4 elements, 16 bytes",
        "optimizer state: 1, 4 bytes",
        "train_step: 9 steps, 5 kernels, 4 library calls (matmul 2, "
        "sgd_update 2); arena 512 bytes",
        "eval_step: 3 steps, 2 kernels, 1 library calls (matmul 1); arena "
        "192 bytes",
        "cpu backend: runs every step"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  // No kernels.fatbin: the cuda backend (when built) refuses the kernels.
  std::string cuda = tcc::rt::haveCudaBackend()
                         ? "cuda backend: cannot run its kernel steps: "
                           "kernels/kernels.fatbin is missing\n"
                         : "cuda backend: not built\n";
  EXPECT_NE(text.find(cuda), std::string::npos) << cuda << text;
  size_t at = text.find("  total");
  ASSERT_NE(at, std::string::npos) << text;
  std::istringstream line(text.substr(at + 7));
  int64_t total = -1;
  line >> total;
  EXPECT_EQ(total, m.total_bytes) << text;

  EXPECT_EQ(tcc::rt::inspectArtifact(dir / "missing", out, error),
            TCC_ERROR_IO);
  EXPECT_NE(error.find("no such artifact directory"), std::string::npos);
}

TEST(Runtime, LearningRateSchedules) {
  using tcc::rt::Schedule;
  Schedule cosine{Schedule::Cosine, 1e-3, 10, 100, 1e-4};
  // Warmup: lr * (it + 1) / warmup.
  EXPECT_DOUBLE_EQ(tcc::rt::learningRate(cosine, 0), 1e-4);
  EXPECT_DOUBLE_EQ(tcc::rt::learningRate(cosine, 9), 1e-3);
  // Halfway through the decay: min + 0.5 * (lr - min).
  EXPECT_DOUBLE_EQ(tcc::rt::learningRate(cosine, 55), 1e-4 + 0.5 * 9e-4);
  EXPECT_DOUBLE_EQ(tcc::rt::learningRate(cosine, 10), 1e-3);
  EXPECT_DOUBLE_EQ(tcc::rt::learningRate(cosine, 100), 1e-4);
  EXPECT_DOUBLE_EQ(tcc::rt::learningRate(cosine, 1000), 1e-4);
  Schedule linear{Schedule::Linear, 0.1, 0, 4, 0};
  EXPECT_DOUBLE_EQ(tcc::rt::learningRate(linear, 0), 0.1);
  EXPECT_DOUBLE_EQ(tcc::rt::learningRate(linear, 1), 0.075);
  EXPECT_DOUBLE_EQ(tcc::rt::learningRate(linear, 3), 0.025);
  EXPECT_DOUBLE_EQ(tcc::rt::learningRate(linear, 4), 0.0);
  Schedule constant{Schedule::Constant, 0.3, 0, 0, 0};
  EXPECT_DOUBLE_EQ(tcc::rt::learningRate(constant, 12345), 0.3);

  // Through the C API, from the manifest.
  TempDir dir("lr");
  TestArtifact a = linearRegression();
  a.manifest["schedule"] = {{"kind", "cosine"}, {"lr", 0.001}, {"warmup", 10},
                            {"total", 100},     {"min_lr", 0.0001}};
  a.write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(tcc_learning_rate(s, 4), 0.001 * 5 / 10);
  double r = double(32 - 10) / 90.0;
  EXPECT_DOUBLE_EQ(tcc_learning_rate(s, 32),
                   0.0001 + 0.5 * (1 + std::cos(3.141592653589793 * r)) *
                                (0.001 - 0.0001));
  EXPECT_EQ(std::string(tcc_train_config(s)),
            a.manifest["train_config"].get<std::string>());
  tcc_session_close(s);
}

TEST(Runtime, StatusStringsAndNullArguments) {
  EXPECT_STREQ(tcc_status_string(TCC_OK), "ok");
  EXPECT_STREQ(tcc_status_string(TCC_ERROR_DATA), "bad input data");
  EXPECT_EQ(tcc_num_params(nullptr), 0);
  tcc_session_close(nullptr);
  EXPECT_EQ(tcc_train_step(nullptr, nullptr), TCC_ERROR_ARGUMENT);
  EXPECT_STREQ(tcc_last_error(), "session is NULL");
  EXPECT_EQ(tcc_session_open("x", nullptr, nullptr), TCC_ERROR_ARGUMENT);
}

TEST(Runtime, SharedLibraryExportsTheCApiOnly) {
  void *lib = ::dlopen(TCC_RUNTIME_SHARED_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(lib) << ::dlerror();
  for (const char *fn : {"tcc_session_open", "tcc_train_step",
                         "tcc_save_checkpoint", "tcc_memory", "tcc_last_error",
                         "tcc_label_input", "tcc_label_ignore_index"})
    EXPECT_TRUE(::dlsym(lib, fn)) << fn;
  EXPECT_FALSE(::dlsym(lib, "_ZN3tcc2rt12loadArtifactERKNSt7__cxx1112basic_"
                            "stringIcSt11char_traitsIcESaIcEEE"));
  auto open = reinterpret_cast<decltype(&tcc_session_open)>(
      ::dlsym(lib, "tcc_session_open"));
  auto lastError =
      reinterpret_cast<decltype(&tcc_last_error)>(::dlsym(lib, "tcc_last_error"));
  tcc_session *s = nullptr;
  EXPECT_EQ(open("/nonexistent/artifact", nullptr, &s), TCC_ERROR_IO);
  EXPECT_NE(std::string(lastError()).find("no such artifact"),
            std::string::npos);
  ::dlclose(lib);
}

} // namespace
