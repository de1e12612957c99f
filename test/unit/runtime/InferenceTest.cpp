//===- InferenceTest.cpp - inference artifacts through the C API ----------===//
//
// A hand-written inference artifact (manifest kind "inference", one function
// "forward" whose results are named outputs): tcc_forward, the outputs, the
// errors of training calls on it and of tcc_forward on a training artifact,
// and what the loader refuses.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include "exec/backend.h"
#include "exec/inspect.h"

#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <sstream>

using namespace rttest;

namespace {

/// y = relu(x @ w + z); the outputs are y, p = x @ w and z itself (an input
/// passed through, which tcc_forward copies).
TestArtifact inferenceModel() {
  TestArtifact a;
  a.manifest = {{"format", "tcc-artifact"},
                {"version", TCC_ARTIFACT_VERSION},
                {"kind", "inference"},
                {"producer", "runtime test"},
                {"source", "hand-written"},
                {"files",
                 {{"plan", "plan.json"},
                  {"weights", "weights.safetensors"},
                  {"kernel_source", "kernels/kernels.cc"},
                  {"host_kernels", "kernels/host.so"}}}};
  a.plan["params"] = {tensor("w", "f32", {3, 1})};
  a.weights = {named("w", testutil::f32({3, 1}, {0.5f, -0.25f, 1.0f}))};
  a.fn("forward") = {
      {"arena_bytes", 128},
      {"inputs", {tensor("x", "f32", {4, 3}), tensor("z", "f32", {4, 1})}},
      {"values",
       {
           slot("input", "f32", {4, 3}, 0), // 0 x
           slot("input", "f32", {4, 1}, 1), // 1 z
           slot("param", "f32", {3, 1}, 0), // 2 w
           arena("f32", {4, 1}, 0),         // 3 p
           arena("f32", {4, 1}, 64),        // 4 y
       }},
      {"steps",
       {call("matmul", {0, 2}, {3}), kernel("add_relu", {3, 1}, 4, 4)}},
      {"results",
       {{{"role", "output"}, {"name", "y"}, {"value", 4}},
        {{"role", "output"}, {"name", "p"}, {"value", 3}},
        {{"role", "output"}, {"name", "echo"}, {"value", 1}}}}};
  return a;
}

std::vector<float> inputX() {
  return {1, 2, 3, -1, 0.5f, 2, 0, 1, -1, 2, -2, 0.25f};
}
std::vector<float> inputZ() { return {0.25f, -3, 1, 0}; }

/// x @ w in float, as the CPU GEMM computes a 3-term dot product.
std::vector<float> matmulRef(const std::vector<float> &x,
                             const std::vector<float> &w) {
  std::vector<float> p(4);
  for (int i = 0; i < 4; ++i)
    p[i] = x[i * 3] * w[0] + x[i * 3 + 1] * w[1] + x[i * 3 + 2] * w[2];
  return p;
}

std::vector<float> readOutput(tcc_session *s, const char *name) {
  std::vector<float> v(4, NAN);
  EXPECT_EQ(tcc_read_output(s, name, v.data(), v.size() * 4), TCC_OK)
      << tcc_last_error();
  return v;
}

void expectNear(const std::vector<float> &got, const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6) << "element " << i;
}

/// The status of `status`, expecting TCC_ERROR_ARGUMENT and every part in
/// the message.
void expectArgumentError(tcc_status status,
                         std::initializer_list<const char *> parts) {
  EXPECT_EQ(status, TCC_ERROR_ARGUMENT);
  std::string msg = tcc_last_error();
  for (const char *p : parts)
    EXPECT_NE(msg.find(p), std::string::npos)
        << "'" << p << "' not in: " << msg;
}

TEST(Inference, ForwardComputesTheOutputs) {
  TempDir dir("inference");
  inferenceModel().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  EXPECT_EQ(tcc_num_params(s), 1);
  EXPECT_EQ(tcc_num_opt_state(s), 0);
  ASSERT_EQ(tcc_num_inputs(s), 2);
  tcc_tensor_info info;
  ASSERT_EQ(tcc_input_info(s, 1, &info), TCC_OK) << tcc_last_error();
  EXPECT_STREQ(info.name, "z");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.bytes, 16u);

  ASSERT_EQ(tcc_num_outputs(s), 3);
  const char *names[] = {"y", "p", "echo"};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(tcc_output_info(s, i, &info), TCC_OK) << tcc_last_error();
    EXPECT_STREQ(info.name, names[i]);
    EXPECT_EQ(info.dtype, TCC_F32);
    ASSERT_EQ(info.rank, 2);
    EXPECT_EQ(info.shape[0], 4);
    EXPECT_EQ(info.shape[1], 1);
    EXPECT_EQ(info.bytes, 16u);
  }
  expectArgumentError(tcc_output_info(s, 3, &info),
                      {"output index 3 is out of range (3)"});

  // No value before the first forward.
  std::vector<float> out(4);
  expectArgumentError(tcc_read_output(s, "y", out.data(), 16),
                      {"output 'y'", "tcc_forward has not run"});

  std::vector<float> x = inputX(), z = inputZ(), w = {0.5f, -0.25f, 1.0f};
  ASSERT_EQ(tcc_bind_input(s, "x", x.data(), x.size() * 4), TCC_OK);
  ASSERT_EQ(tcc_bind_input(s, "z", z.data(), z.size() * 4), TCC_OK);
  ASSERT_EQ(tcc_forward(s), TCC_OK) << tcc_last_error();
  std::vector<float> p = matmulRef(x, w), y(4);
  for (int i = 0; i < 4; ++i)
    y[i] = std::max(p[i] + z[i], 0.0f);
  expectNear(readOutput(s, "y"), y);
  expectNear(readOutput(s, "p"), p);
  EXPECT_EQ(readOutput(s, "echo"), z);

  // The outputs are the last forward's: rebinding an input or writing a
  // parameter changes nothing until the next one.
  std::vector<float> z2 = {1, 1, 1, 1}, w2 = {1, 0, 0};
  ASSERT_EQ(tcc_bind_input(s, "z", z2.data(), 16), TCC_OK);
  ASSERT_EQ(tcc_write_param(s, "w", w2.data(), 12), TCC_OK);
  EXPECT_EQ(readOutput(s, "echo"), z);
  expectNear(readOutput(s, "p"), p);
  ASSERT_EQ(tcc_forward(s), TCC_OK) << tcc_last_error();
  EXPECT_EQ(readOutput(s, "echo"), z2);
  std::vector<float> p2 = {x[0], x[3], x[6], x[9]};
  expectNear(readOutput(s, "p"), p2);
  std::vector<float> y2(4);
  for (int i = 0; i < 4; ++i)
    y2[i] = std::max(p2[i] + 1.0f, 0.0f);
  expectNear(readOutput(s, "y"), y2);

  // Reading by a wrong name or size.
  expectArgumentError(tcc_read_output(s, "logits", out.data(), 16),
                      {"no output 'logits'", "y, p, echo"});
  expectArgumentError(tcc_read_output(s, "y", out.data(), 12),
                      {"output 'y' is 16 bytes", "got 12"});
  expectArgumentError(tcc_read_output(s, "y", nullptr, 16),
                      {"the buffer is NULL"});
  tcc_session_close(s);
}

TEST(Inference, ForwardNeedsEveryInputBound) {
  TempDir dir("inference-unbound");
  inferenceModel().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  std::vector<float> x = inputX();
  ASSERT_EQ(tcc_bind_input(s, "x", x.data(), x.size() * 4), TCC_OK);
  expectArgumentError(tcc_forward(s), {"forward: input 'z' is not bound"});
  // A failed forward leaves no outputs to read.
  std::vector<float> out(4);
  expectArgumentError(tcc_read_output(s, "y", out.data(), 16),
                      {"tcc_forward has not run (or failed)"});
  expectArgumentError(tcc_bind_input(s, "y", out.data(), 16), {"no input 'y'"});
  tcc_session_close(s);
}

TEST(Inference, TrainingCallsAreRefused) {
  TempDir dir("inference-train");
  inferenceModel().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  double loss = 0;
  expectArgumentError(tcc_train_step(s, &loss),
                      {"tcc_train_step", dir.path.c_str(),
                       "is an inference artifact", "tcc_forward"});
  expectArgumentError(tcc_eval_step(s, &loss),
                      {"tcc_eval_step", "is an inference artifact"});
  expectArgumentError(
      tcc_save_checkpoint(s, (dir / "ck").c_str(), 0, nullptr, nullptr),
      {"tcc_save_checkpoint", "is an inference artifact"});
  EXPECT_FALSE(fs::exists(dir / "ck"));
  expectArgumentError(
      tcc_restore_checkpoint(s, (dir / "ck").c_str(), nullptr, nullptr),
      {"tcc_restore_checkpoint", "is an inference artifact"});
  EXPECT_EQ(tcc_steps_done(s), 0);
  EXPECT_TRUE(std::isnan(tcc_learning_rate(s, 0)));
  EXPECT_STREQ(tcc_train_config(s), "");
  EXPECT_EQ(tcc_label_input(s), nullptr);
  float v = 0;
  expectArgumentError(tcc_read_opt_state(s, "w.exp_avg", &v, 4),
                      {"no optimizer state 'w.exp_avg' (there are none)"});
  tcc_session_close(s);
}

TEST(Inference, ForwardOnATrainingArtifactIsRefused) {
  TempDir dir("inference-on-training");
  linearRegression().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  EXPECT_EQ(tcc_num_outputs(s), 0);
  expectArgumentError(tcc_forward(s), {"tcc_forward", "is a training artifact",
                                       "tcc_train_step"});
  tcc_tensor_info info;
  expectArgumentError(tcc_output_info(s, 0, &info),
                      {"tcc_output_info", "is a training artifact"});
  float v[4];
  expectArgumentError(tcc_read_output(s, "loss", v, 4),
                      {"tcc_read_output", "is a training artifact"});
  tcc_session_close(s);
  EXPECT_EQ(tcc_forward(nullptr), TCC_ERROR_ARGUMENT);
  EXPECT_STREQ(tcc_last_error(), "session is NULL");
  EXPECT_EQ(tcc_num_outputs(nullptr), 0);
}

TEST(Inference, PoisoningLeavesTheOutputsAlone) {
  TempDir dir("inference-poison");
  inferenceModel().write(dir.path);
  std::vector<float> x = inputX(), z = inputZ();
  std::vector<std::vector<float>> runs;
  for (const char *poison : {"0", "1"}) {
    ::setenv("TCC_POISON_ARENA", poison, 1);
    tcc_session *s = openOrFail(dir.path);
    ::unsetenv("TCC_POISON_ARENA");
    ASSERT_TRUE(s);
    ASSERT_EQ(tcc_bind_input(s, "x", x.data(), x.size() * 4), TCC_OK);
    ASSERT_EQ(tcc_bind_input(s, "z", z.data(), z.size() * 4), TCC_OK);
    ASSERT_EQ(tcc_forward(s), TCC_OK) << tcc_last_error();
    std::vector<float> all = readOutput(s, "y"), p = readOutput(s, "p");
    all.insert(all.end(), p.begin(), p.end());
    runs.push_back(all);
    tcc_session_close(s);
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(Inference, InspectAndMemory) {
  TempDir dir("inference-inspect");
  inferenceModel().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  tcc_memory_info m;
  ASSERT_EQ(tcc_memory(s, &m), TCC_OK);
  EXPECT_EQ(m.arena_bytes, 128);
  EXPECT_EQ(m.param_bytes, 12);
  EXPECT_EQ(m.opt_state_bytes, 0);
  EXPECT_EQ(m.input_bytes, 64);
  EXPECT_EQ(m.total_bytes, 204);
  tcc_session_close(s);

  std::ostringstream out;
  std::string error;
  ASSERT_EQ(tcc::rt::inspectArtifact(dir.path, out, error), TCC_OK) << error;
  std::string text = out.str();
  for (const char *part :
       {"kind         inference", "inputs (2, as forward takes them)",
        "outputs (3)", "echo  f32 [4, 1]  16 bytes",
        "forward: 2 steps, 1 kernels, 1 library calls (matmul 1); arena 128 "
        "bytes",
        "cpu backend: runs every step"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  // No kernels.fatbin: the cuda backend (when built) refuses the kernels.
  std::string cuda = tcc::rt::haveCudaBackend()
                         ? "cuda backend: cannot run its kernel steps: "
                           "kernels/kernels.fatbin is missing\n"
                         : "cuda backend: not built\n";
  EXPECT_NE(text.find(cuda), std::string::npos) << cuda << text;
  for (const char *absent :
       {"fingerprint", "train_config", "schedule", "optimizer state:"})
    EXPECT_EQ(text.find(absent), std::string::npos) << absent << "\n" << text;

  // A training artifact says so.
  TempDir train("inference-inspect-train");
  linearRegression().write(train.path);
  out.str("");
  ASSERT_EQ(tcc::rt::inspectArtifact(train.path, out, error), TCC_OK) << error;
  EXPECT_NE(out.str().find("kind         training"), std::string::npos)
      << out.str();
}

/// Loader errors of inference artifacts (and of "output" in a training one).
class InferenceLoadError : public ::testing::Test {
protected:
  TempDir dir{"inference-load-error"};
  TestArtifact art = inferenceModel();

  void expect(tcc_status status, std::vector<std::string> parts) {
    art.write(dir.path);
    std::string msg;
    EXPECT_EQ(openStatus(dir.path, msg), status) << msg;
    for (const std::string &p : parts)
      EXPECT_NE(msg.find(p), std::string::npos)
          << "'" << p << "' not in: " << msg;
  }
  json &results() { return art.fn("forward")["results"]; }
};

TEST_F(InferenceLoadError, Kind) {
  art.manifest["kind"] = "serving";
  expect(TCC_ERROR_FORMAT, {"manifest.json: kind", "unknown kind 'serving'",
                            "expected training or inference"});
  // Every manifest says its kind (since format version 2).
  art = inferenceModel();
  art.manifest.erase("kind");
  expect(TCC_ERROR_FORMAT, {"manifest.json: missing 'kind'"});
}

TEST_F(InferenceLoadError, Functions) {
  art.plan["functions"]["train_step"] = art.fn("forward");
  expect(TCC_ERROR_FORMAT,
         {"plan.json: functions",
          "an inference artifact has one function, 'forward', not 2"});
  art = inferenceModel();
  art.plan["functions"]["predict"] = art.fn("forward");
  art.plan["functions"].erase("forward");
  expect(TCC_ERROR_FORMAT, {"functions: missing 'forward'"});
  art = inferenceModel();
  art.plan["opt_state"] = {tensor("w.exp_avg", "f32", {3, 1})};
  expect(TCC_ERROR_FORMAT,
         {"opt_state", "an inference artifact has no optimizer state"});
}

TEST_F(InferenceLoadError, Results) {
  results()[0] = {{"role", "loss"}, {"value", 4}};
  expect(TCC_ERROR_FORMAT, {"functions.forward.results[0].role",
                            "role 'loss' in an inference artifact"});
  art = inferenceModel();
  results()[1]["name"] = "y";
  expect(TCC_ERROR_FORMAT,
         {"functions.forward.results[1].name", "a second output named 'y'"});
  art = inferenceModel();
  results()[0].erase("name");
  expect(TCC_ERROR_FORMAT, {"functions.forward.results[0]", "missing 'name'"});
  art = inferenceModel();
  results()[0]["name"] = "";
  expect(TCC_ERROR_FORMAT, {"results[0].name", "is empty"});
  art = inferenceModel();
  results()[0]["value"] = 9;
  expect(TCC_ERROR_FORMAT, {"results[0].value", "value id 9 is out of range"});

  // "output" is not a role of a training artifact.
  art = linearRegression();
  art.fn("eval_step")["results"].push_back(
      {{"role", "output"}, {"name", "p"}, {"value", 4}});
  expect(TCC_ERROR_FORMAT, {"functions.eval_step.results[1].role",
                            "role 'output' is for inference artifacts"});
}

TEST_F(InferenceLoadError, ExplicitTrainingKindLoads) {
  art = linearRegression();
  art.manifest["kind"] = "training";
  expect(TCC_OK, {});
}

TEST(Inference, SharedLibraryExportsTheInferenceCalls) {
  void *lib = ::dlopen(TCC_RUNTIME_SHARED_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(lib) << ::dlerror();
  for (const char *fn :
       {"tcc_forward", "tcc_num_outputs", "tcc_output_info", "tcc_read_output"})
    EXPECT_TRUE(::dlsym(lib, fn)) << fn;
  ::dlclose(lib);
}

} // namespace
