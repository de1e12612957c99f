//===- LoadErrorTest.cpp - artifacts the runtime refuses at load --------===//
//
// Hand-written artifacts spoiled one way at a time: the session refuses
// each with one message naming the file and what is wrong, and a plan with
// any integer replaced by a bad value is refused or runs, never crashes.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include <fstream>
#include <functional>

using namespace rttest;

namespace {

//===----------------------------------------------------------------------===//
// Load-time errors: one line naming the file and what is wrong
//===----------------------------------------------------------------------===//

class LoadError : public ::testing::Test {
protected:
  TempDir dir{"load-" + std::string(::testing::UnitTest::GetInstance()
                                        ->current_test_info()
                                        ->name())};
  TestArtifact art = linearRegression();

  /// Writes `art`, lets `edit` spoil the files, and expects `status` with a
  /// message containing every one of `parts`.
  void expect(tcc_status status, std::vector<std::string> parts,
              const std::function<void()> &edit = {}) {
    art.write(dir.path);
    if (edit) {
      edit();
      reseal(dir.path); // the edit's own error, not "damaged"
    }
    std::string msg;
    EXPECT_EQ(openStatus(dir.path, msg), status) << msg;
    for (const std::string &p : parts)
      EXPECT_NE(msg.find(p), std::string::npos)
          << "'" << p << "' not in: " << msg;
  }
  std::string file(const char *name) { return dir / name; }
  void overwrite(const char *name, const std::string &text) {
    std::ofstream(dir / name, std::ios::trunc) << text;
  }
  json &trainValues() { return art.fn("train_step")["values"]; }
  json &trainSteps() { return art.fn("train_step")["steps"]; }
};

TEST_F(LoadError, MissingDirectoryAndManifest) {
  std::string msg;
  EXPECT_EQ(openStatus(dir / "nothing", msg), TCC_ERROR_IO);
  EXPECT_NE(msg.find("no such artifact directory"), std::string::npos) << msg;
  expect(TCC_ERROR_IO, {file("manifest.json"), "no such file"},
         [&] { fs::remove(dir / "manifest.json"); });
}

TEST_F(LoadError, CorruptJson) {
  expect(TCC_ERROR_FORMAT, {file("manifest.json"), "malformed JSON"},
         [&] { overwrite("manifest.json", "{\"format\": \"tcc-art"); });
  expect(TCC_ERROR_FORMAT, {file("plan.json"), "malformed JSON", "line"},
         [&] { overwrite("plan.json", "{\"version\": 1,\n ]"); });
}

TEST_F(LoadError, WrongFormat) {
  art.manifest["format"] = "onnx";
  expect(TCC_ERROR_FORMAT,
         {file("manifest.json"), "format", "expected \"tcc-artifact\"",
          "\"onnx\""});
}

TEST_F(LoadError, OtherVersionNamesBoth) {
  // Version 1 artifacts (before the plan schema was one definition) and
  // artifacts of a later format are both refused, naming both versions.
  const std::string ours =
      "reads version " + std::to_string(TCC_ARTIFACT_VERSION);
  for (int other : {1, TCC_ARTIFACT_VERSION + 1}) {
    art = linearRegression();
    art.manifest["version"] = other;
    expect(TCC_ERROR_VERSION,
           {file("manifest.json"),
            "artifact version " + std::to_string(other), "this runtime " + ours});
    art = linearRegression();
    art.plan["version"] = other;
    expect(TCC_ERROR_VERSION,
           {file("plan.json"), "plan version " + std::to_string(other), ours});
  }
}

TEST_F(LoadError, MissingFields) {
  art.manifest.erase("fingerprint");
  expect(TCC_ERROR_FORMAT, {file("manifest.json"), "missing 'fingerprint'"});
  art = linearRegression();
  art.manifest["schedule"] = {{"kind", "cosine"}, {"lr", 0.1}};
  expect(TCC_ERROR_FORMAT, {"schedule", "missing 'total'"});
  art = linearRegression();
  art.manifest["schedule"]["kind"] = "step";
  expect(TCC_ERROR_FORMAT, {"schedule.kind", "unknown schedule 'step'"});
  art = linearRegression();
  art.fn("train_step").erase("arena_bytes");
  expect(TCC_ERROR_FORMAT,
         {file("plan.json"), "functions.train_step", "missing 'arena_bytes'"});
  art = linearRegression();
  art.plan["functions"].erase("train_step");
  expect(TCC_ERROR_FORMAT, {"missing 'train_step'"});
}

TEST_F(LoadError, MissingWeights) {
  expect(TCC_ERROR_IO, {file("weights.safetensors"), "no such file"},
         [&] { fs::remove(dir / "weights.safetensors"); });
  art.weights.pop_back();
  expect(TCC_ERROR_FORMAT,
         {file("weights.safetensors"), "no tensor for parameter 'b'"});
  art = linearRegression();
  art.weights[0] = named("w", testutil::f32({1, 3}, {1, 2, 3}));
  expect(TCC_ERROR_FORMAT, {"parameter 'w' is f32 [1, 3]", "f32 [3, 1]"});
}

TEST_F(LoadError, MissingSymbol) {
  trainSteps()[2]["symbol"] = "tcc_mean_sq5";
  expect(TCC_ERROR_FORMAT,
         {file("kernels/host.so"), "no kernel 'tcc_mean_sq5'"});
  art = linearRegression();
  expect(TCC_ERROR_IO, {file("kernels/host.so")},
         [&] { fs::remove(dir / "kernels/host.so"); });
}

TEST_F(LoadError, KernelStepsAreCheckedAgainstTheKernelTable) {
  // Step 1 is bias_sub(p [4,1], b [1], y [4,1]) -> d [4,1]. What a fuzzer
  // found running: no inputs (the kernel read garbage), libc's abort called
  // as a kernel, an input swapped for a smaller buffer.
  json table = TestArtifact::kernelTableOf(art.plan);
  art.plan["kernels"] = table;
  trainSteps()[1]["inputs"] = json::array();
  expect(TCC_ERROR_FORMAT, {file("plan.json"), "steps[1].inputs",
                            "0 inputs, but kernel 'tcc_bias_sub' takes 3"});
  art = linearRegression();
  art.plan["kernels"] = table;
  trainSteps()[1]["symbol"] = "abort";
  expect(TCC_ERROR_FORMAT,
         {"steps[1].symbol", "'abort' is not a kernel of the plan's kernel "
                             "table"});
  art = linearRegression();
  art.plan["kernels"] = table;
  art.plan["kernels"][0]["symbol"] = "free";
  expect(TCC_ERROR_FORMAT, {file("plan.json"), "kernels[0].symbol",
                            "'free' is not a generated kernel's name"});
  art = linearRegression();
  art.plan["kernels"] = table;
  trainSteps()[1]["inputs"][0] = 12; // gb, f32 [1], for p, f32 [4, 1]
  expect(TCC_ERROR_FORMAT,
         {"steps[1].inputs[0]", "value 12 (f32 [1]) does not fit kernel "
                                "'tcc_bias_sub', which reads up to 4 f32"});
  art = linearRegression();
  art.plan.erase("kernels");
  art.plan["kernels"] = json::array();
  expect(TCC_ERROR_FORMAT, {"is not a kernel of the plan's kernel table"});
  // A kernel's stores (plan "stores"): a step writes its output and each.
  size_t bias = 0;
  while (table[bias]["symbol"] != "tcc_bias_sub")
    ++bias;
  art = linearRegression();
  art.plan["kernels"] = table;
  trainSteps()[1]["outputs"].push_back(12);
  expect(TCC_ERROR_FORMAT,
         {"steps[1].outputs", "2 outputs, but kernel 'tcc_bias_sub' writes 1 "
                              "(its output and its stores)"});
  art = linearRegression();
  art.plan["kernels"] = table;
  art.plan["kernels"][bias]["stores"] = json::array(
      {json{{"dtype", "f32"}, {"elements", 1}}});
  expect(TCC_ERROR_FORMAT,
         {"steps[1].outputs", "1 outputs, but kernel 'tcc_bias_sub' writes 2"});
  art = linearRegression();
  art.plan["kernels"] = table;
  art.plan["kernels"][bias]["stores"] = json::array(
      {json{{"dtype", "f32"}, {"elements", 4}}});
  // eval_step's step 1 runs the kernel too (read first): its loss, f32 [],
  // for the store's 4 elements.
  art.fn("eval_step")["steps"][1]["outputs"].push_back(6);
  expect(TCC_ERROR_FORMAT,
         {"eval_step.steps[1].outputs[1]",
          "value 6 (f32 []) does not fit kernel 'tcc_bias_sub', which writes "
          "4 f32"});
  art = linearRegression();
  art.plan["kernels"] = table;
  art.plan["kernels"][bias]["stores"] = json::array();
  expect(TCC_ERROR_FORMAT,
         {"kernels[" + std::to_string(bias) + "].stores", "is empty"});
  // A column reduction's CUDA launch shape: 1 to 1024 outputs per block.
  art = linearRegression();
  art.plan["kernels"] = table;
  art.plan["kernels"][0]["outputs_per_block"] = 0;
  art.plan["kernels"][0]["block_threads"] = 1024;
  expect(TCC_ERROR_FORMAT,
         {"kernels[0].outputs_per_block",
          "0 is out of range (1 to 1024 outputs per block)"});
  art = linearRegression();
  art.plan["kernels"] = table;
  art.plan["kernels"][0]["outputs_per_block"] = 32;
  art.plan["kernels"][0]["block_threads"] = 1000;
  expect(TCC_ERROR_FORMAT,
         {"kernels[0].block_threads", "1000 is not a CUDA block of whole "
                                      "warps (32 to 1024 threads)"});
  // Its row slices (2 to 65535) and their workspace: a double per
  // (slice, output) at least.
  art = linearRegression();
  art.plan["kernels"] = table;
  art.plan["kernels"][0]["outputs_per_block"] = 32;
  art.plan["kernels"][0]["block_threads"] = 1024;
  art.plan["kernels"][0]["row_slices"] = 1;
  art.plan["kernels"][0]["workspace_bytes"] = 1024;
  expect(TCC_ERROR_FORMAT,
         {"kernels[0].row_slices",
          "1 is out of range (2 to 65535 slices; absent for 1)"});
  art = linearRegression();
  art.plan["kernels"] = table;
  art.plan["kernels"][0]["outputs_per_block"] = 32;
  art.plan["kernels"][0]["block_threads"] = 1024;
  art.plan["kernels"][0]["row_slices"] = 4;
  art.plan["kernels"][0]["workspace_bytes"] = 8;
  expect(TCC_ERROR_FORMAT, {"kernels[0].workspace_bytes",
                            "8 does not fit row_slices x output doubles"});
  art = linearRegression();
  art.plan["kernels"] = table;
  art.plan["kernels"][0]["outputs_per_block"] = 32;
  art.plan["kernels"][0]["block_threads"] = 1024;
  art.plan["kernels"][0]["row_slices"] = 4;
  art.plan["kernels"][0]["workspace_bytes"] = 1 << 20;
  art.write(dir.path);
  tcc_session *s = nullptr;
  EXPECT_EQ(tcc_session_open(dir.path.c_str(), nullptr, &s), TCC_OK)
      << tcc_last_error();
  tcc_session_close(s);
}

/// Damage is found before anything reads the file, host.so before dlopen:
/// a truncated or bit-flipped file names itself.
TEST_F(LoadError, DamagedFilesAreNamed) {
  auto damaged = [&](const char *name, bool truncate) {
    art = linearRegression();
    art.write(dir.path);
    fs::path path = dir / name;
    std::vector<uint8_t> bytes = testutil::readFile(path.string());
    ASSERT_GT(bytes.size(), 100u);
    if (truncate)
      bytes.resize(bytes.size() / 2);
    else
      bytes[bytes.size() / 2] ^= 0x10;
    testutil::writeFile(path.string(), bytes);
    std::string msg;
    EXPECT_EQ(openStatus(dir.path, msg), TCC_ERROR_FORMAT) << msg;
    EXPECT_NE(msg.find(path.string() + ": damaged: "), std::string::npos)
        << msg;
    EXPECT_NE(
        msg.find(truncate ? "bytes, the manifest records" : "its SHA-256 is "),
        std::string::npos)
        << msg;
  };
  for (const char *name :
       {"kernels/host.so", "weights.safetensors", "plan.json"}) {
    damaged(name, true);
    damaged(name, false);
  }
  art = linearRegression();
  art.manifest["integrity"] = json::object();
  expect(TCC_ERROR_FORMAT,
         {file("constants.safetensors"),
          ": no size and SHA-256 for it in the manifest's integrity "
          "(files.constants)"});
}

TEST_F(LoadError, UnknownOpDtypeStorage) {
  trainSteps()[0]["op"] = "matmull";
  expect(TCC_ERROR_FORMAT, {"functions.train_step.steps[0].op",
                            "unknown op 'matmull'", "library ops: adamw_update, attention, attention_grad"});
  art = linearRegression();
  trainValues()[7]["dtype"] = "f8";
  expect(TCC_ERROR_FORMAT,
         {"functions.train_step.values[7].dtype", "unknown dtype 'f8'"});
  art = linearRegression();
  trainValues()[7]["storage"] = "heap";
  expect(TCC_ERROR_FORMAT,
         {"functions.train_step.values[7].storage", "unknown storage 'heap'"});
  art = linearRegression();
  trainSteps()[1]["kind"] = "launch";
  expect(TCC_ERROR_FORMAT, {"steps[1].kind", "unknown step kind 'launch'"});
}

TEST_F(LoadError, ValueIdsOutOfRange) {
  trainSteps()[1]["inputs"][1] = 99;
  expect(TCC_ERROR_FORMAT, {"functions.train_step.steps[1].inputs[1]",
                            "value id 99 is out of range (17 values)"});
  art = linearRegression();
  trainSteps()[1]["inputs"][1] = -1; // a kernel has no optional operands
  expect(TCC_ERROR_FORMAT, {"steps[1].inputs[1]", "value id -1"});
  art = linearRegression();
  art.fn("train_step")["results"][0]["value"] = 17;
  expect(TCC_ERROR_FORMAT, {"results[0].value", "value id 17"});
  art = linearRegression();
  trainValues()[2]["index"] = 2;
  expect(TCC_ERROR_FORMAT,
         {"values[2].index", "param index 2 is out of range (2 params)"});
}

TEST_F(LoadError, OffsetBeyondArena) {
  trainValues()[13]["offset"] = 512;
  expect(TCC_ERROR_FORMAT,
         {"functions.train_step.values[13]", "arena offset 512 + 8 bytes",
          "beyond arena_bytes 512"});
  art = linearRegression();
  trainValues()[13]["offset"] = 100;
  expect(TCC_ERROR_FORMAT, {"values[13].offset", "multiple of 64"});
}

TEST_F(LoadError, ShapeAndByteMismatches) {
  // A value that does not fit its slot.
  trainValues()[2]["shape"] = {4, 1};
  expect(TCC_ERROR_FORMAT, {"values[2]", "f32 [4, 1] (16 bytes) does not fit "
                                         "param 0 'w', f32 [3, 1] (12 bytes)"});
  // A library call whose operands do not agree.
  art = linearRegression();
  trainSteps()[0]["inputs"] = {0, 1};
  expect(TCC_ERROR_FORMAT, {"steps[0] (matmul)", "contract dims of 3 and 4"});
  art = linearRegression();
  trainSteps()[7]["attrs"] = {{"momentum", 0.9}};
  expect(TCC_ERROR_FORMAT,
         {"steps[7] (sgd_update)", "momentum_buffer must be present"});
  art = linearRegression();
  trainSteps()[1]["elements"] = 5;
  expect(TCC_ERROR_FORMAT,
         {"steps[1].elements", "5 elements, but output value 8"});
  art = linearRegression();
  art.fn("train_step")["results"][1]["value"] = 15;
  expect(TCC_ERROR_FORMAT, {"results[1]", "does not fit param 'w'"});
}

TEST_F(LoadError, FusedCallLayouts) {
  // attention_qkv_grad writes the q, k and v gradients at their operands'
  // columns of one tensor: the columns must tile its rows. gemm's
  // bias_grad result goes with with_bias_grad, never beside a bias.
  auto qkvGrad = [&](int64_t keyColumn) {
    TestArtifact a;
    a.fn("train_step") = {
        {"arena_bytes", 256},
        {"inputs",
         {tensor("x", "f32", {1, 2, 24}), tensor("g", "f32", {1, 2, 8})}},
        {"values",
         {slot("input", "f32", {1, 2, 24}, 0),
          slot("input", "f32", {1, 2, 8}, 1), arena("f32", {1, 2, 24}, 0),
          arena("f32", {}, 192)}},
        {"steps",
         {kernel("zero", {}, 3, 1), call("attention_qkv_grad", {0, 1, -1}, {2},
                                         {{"scale", 0.5},
                                          {"heads", 2},
                                          {"head_dim", 4},
                                          {"query_column", 0},
                                          {"key_column", keyColumn},
                                          {"value_column", 16}})}},
        {"results", {{{"role", "loss"}, {"value", 3}}}}};
    return a;
  };
  art = qkvGrad(8);
  expect(TCC_OK, {});
  art = qkvGrad(4);
  expect(TCC_ERROR_FORMAT,
         {"steps[1] (attention_qkv_grad)",
          "qkv f32 [1, 2, 24] is not token rows tiled by 2 heads of 4 at "
          "query, key and value columns 0, 4, 16"});
  art = linearRegression();
  json &gemm = trainSteps()[0];
  gemm["op"] = "gemm";
  gemm["attrs"] = {{"transpose_a", false}, {"with_bias_grad", true}};
  expect(TCC_ERROR_FORMAT,
         {"steps[0] (gemm)", "with_bias_grad has no bias_grad result"});
}

TEST_F(LoadError, DataFlow) {
  // gw's step moved before the step writing g.
  std::swap(trainSteps()[3], trainSteps()[4]);
  expect(TCC_ERROR_FORMAT, {"functions.train_step", "step 3 reads value 10 "
                                                    "before step 4 writes it"});
  // An arena value no step writes before it is read (b' is written at step
  // 8).
  art = linearRegression();
  trainValues().push_back(arena("f32", {4, 1}, 448));
  trainSteps()[1]["inputs"] = {17, 3, 1};
  expect(TCC_ERROR_FORMAT,
         {"step 1 reads value 17 (arena bytes [448, 464)), but no step before "
          "writes arena bytes [448, 464)"});
  // A value written twice.
  art = linearRegression();
  trainSteps()[3]["outputs"] = {8};
  expect(TCC_ERROR_FORMAT,
         {"value 8 is written by step 1 and again by step 3"});
}

TEST_F(LoadError, BackendRefusesWhatItCannotRun) {
  // Valid plans the CPU kernels cannot run: f64 softmax, softmax over a
  // leading axis.
  auto softmax = [&](const char *dtype, int64_t axis) {
    TestArtifact a;
    a.fn("train_step") = {
        {"arena_bytes", 128},
        {"inputs", {tensor("x", dtype, {2, 3})}},
        {"values",
         {slot("input", dtype, {2, 3}, 0), arena(dtype, {2, 3}, 0),
          arena("f32", {}, 64)}},
        {"steps",
         {kernel("zero", {}, 2, 1),
          call("softmax", {0}, {1}, {{"axis", axis}})}},
        {"results", {{{"role", "loss"}, {"value", 2}}}}};
    return a;
  };
  art = softmax("f64", 1);
  expect(TCC_ERROR_BACKEND, {file("plan.json"), "train_step step 1 (softmax)",
                             "the cpu backend runs softmax on f32, bf16 "
                             "and f16 only, not f64"});
  art = softmax("f32", 0); // any axis: strided rows are gathered
  expect(TCC_OK, {});
  art = softmax("f32", -1); // the last axis, counted from the end
  expect(TCC_OK, {});
  tcc_session *s = nullptr;
  // Without CUDA in this build or without a device: TCC_ERROR_BACKEND; on a
  // GPU the hand-written artifact has no kernels.fatbin: TCC_ERROR_FORMAT.
  tcc_status st = openOn(dir.path, "cuda", &s);
  EXPECT_EQ(s, nullptr);
  std::string msg = tcc_last_error();
  if (st == TCC_ERROR_BACKEND)
    EXPECT_NE(msg.find("backend 'cuda'"), std::string::npos) << msg;
  else
    EXPECT_EQ(st, TCC_ERROR_FORMAT) << msg;
  if (st == TCC_ERROR_FORMAT)
    EXPECT_NE(msg.find("kernels.fatbin"), std::string::npos) << msg;
  tcc_session_close(s);
  EXPECT_EQ(openOn(dir.path, "tpu", &s), TCC_ERROR_BACKEND);
  EXPECT_NE(std::string(tcc_last_error())
                .find("backend 'tpu' is not available; this runtime has: cpu"),
            std::string::npos)
      << tcc_last_error();
}

/// Every integer of the plan replaced, one at a time, by a few bad values:
/// the session either refuses the artifact with a message or runs it; it
/// never crashes.
TEST(Runtime, CorruptedPlansAreRefusedOrRunNeverCrash) {
  TempDir dir("mutate");
  TestArtifact base = linearRegression();
  base.plan["kernels"] = TestArtifact::kernelTableOf(base.plan);
  std::vector<json::json_pointer> numbers;
  std::function<void(const json &, const json::json_pointer &)> walk =
      [&](const json &j, const json::json_pointer &at) {
        if (j.is_number_integer())
          numbers.push_back(at);
        else if (j.is_array())
          for (size_t i = 0; i < j.size(); ++i)
            walk(j[i], at / i);
        else if (j.is_object())
          for (auto it = j.begin(); it != j.end(); ++it)
            walk(it.value(), at / it.key());
      };
  walk(base.plan, json::json_pointer());
  ASSERT_GT(numbers.size(), 100u);
  int refused = 0, ran = 0;
  base.write(dir.path);
  for (const json::json_pointer &at : numbers)
    for (int64_t bad : {int64_t(-1), int64_t(1), int64_t(7),
                        int64_t(1) << 40}) {
      json plan = base.plan;
      if (plan[at] == bad)
        continue;
      plan[at] = bad;
      std::ofstream(dir / "plan.json", std::ios::trunc) << plan.dump();
      reseal(dir.path);
      tcc_session *s = nullptr;
      tcc_status st = tcc_session_open(dir.path.c_str(), nullptr, &s);
      if (st != TCC_OK) {
        ++refused;
        EXPECT_NE(std::string(tcc_last_error()), "") << at.to_string();
        continue;
      }
      ++ran;
      bindRegression(s);
      double loss;
      tcc_train_step(s, &loss);
      tcc_eval_step(s, &loss);
      tcc_session_close(s);
    }
  EXPECT_GT(refused, ran);
}

} // namespace
