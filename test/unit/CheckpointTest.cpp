//===- CheckpointTest.cpp - tests for runtime/checkpoint ------------------===//

#include "checkpoint/checkpoint.h"

#include "data/safetensors.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sys/wait.h>
#include <unistd.h>

using namespace tcc::checkpoint;
using tcc::data::DType;
using tcc::data::findArray;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace testutil;

namespace {

/// A fresh per-process directory, removed when the test ends.
class TempDir {
public:
  explicit TempDir(const std::string &name)
      : path(testutil::tempPath("ckpt", name)) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string &rel) const {
    return (fs::path(path) / rel).string();
  }
  const std::string path;
};

Array f32(const std::string &name, std::vector<int64_t> shape,
          std::vector<float> vals) {
  return makeArray(name, DType::F32, std::move(shape), vals);
}

std::vector<Array> params(float bias) {
  return {f32("fc.weight", {2, 3}, {1, 2, 3, 4, 5, 6}),
          f32("fc.bias", {3}, {bias, -bias, 0})};
}

std::vector<Array> optState() {
  Array step;
  step.name = "step";
  step.dtype = DType::I64;
  step.bytes.resize(8);
  int64_t four = 4;
  std::memcpy(step.bytes.data(), &four, 8);
  return {f32("fc.weight.exp_avg", {2, 3}, {.1f, .2f, .3f, .4f, .5f, .6f}),
          f32("fc.weight.exp_avg_sq", {2, 3}, {1, 1, 1, 1, 1, 1}),
          f32("fc.bias.exp_avg", {3}, {0, 0, 1}),
          f32("fc.bias.exp_avg_sq", {3}, {2, 2, 2}), step};
}

CheckpointState stateAt(int64_t step) {
  CheckpointState st;
  st.step = step;
  st.dataPosition = 32 * step;
  st.modelFingerprint = "sha256:0123abcd";
  st.rng = {{"seed", 42}, {"offset", step * 1000}};
  st.extra = {{"loss_scale", 65536.0}, {"lr", 3e-4}};
  return st;
}

void expectSameArrays(const std::vector<Array> &got,
                      const std::vector<Array> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (const Array &w : want) {
    const Array *g = findArray(got, w.name);
    ASSERT_NE(g, nullptr) << w.name;
    EXPECT_EQ(g->dtype, w.dtype) << w.name;
    EXPECT_EQ(g->shape, w.shape) << w.name;
    EXPECT_EQ(g->bytes, w.bytes) << w.name;
  }
}

std::vector<std::string> entries(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

json readJson(const std::string &path) {
  std::ifstream in(path);
  return json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
}

} // namespace

TEST(Checkpoint, SaveLoadRoundTrip) {
  TempDir tmp("roundtrip");
  std::string dir = tmp / "nested/ckpts"; // Created on demand.
  std::string stepDir =
      saveCheckpoint(dir, params(0.5f), optState(), stateAt(4));
  EXPECT_EQ(stepDir, dir + "/step-4");
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"step-4"}));
  EXPECT_EQ(entries(stepDir),
            (std::vector<std::string>{"optimizer.safetensors",
                                      "params.safetensors", "state.json"}));

  // state.json is the documented format, readable by any JSON tool.
  EXPECT_EQ(readJson(stepDir + "/state.json"),
            json::parse(R"({"format_version": 1, "step": 4,
                            "data_position": 128, "model": "sha256:0123abcd",
                            "rng": {"seed": 42, "offset": 4000},
                            "loss_scale": 65536.0, "lr": 0.0003})"));
  // The parameter file is plain safetensors under the parameter names.
  expectSameArrays(tcc::data::readSafetensors(stepDir + "/params.safetensors"),
                   params(0.5f));

  Checkpoint ck = loadCheckpoint(stepDir);
  EXPECT_EQ(ck.dir, stepDir);
  expectSameArrays(ck.params, params(0.5f));
  expectSameArrays(ck.optState, optState());
  EXPECT_EQ(ck.state.step, 4);
  EXPECT_EQ(ck.state.dataPosition, 128);
  EXPECT_EQ(ck.state.modelFingerprint, "sha256:0123abcd");
  EXPECT_EQ(ck.state.rng, stateAt(4).rng);
  EXPECT_EQ(ck.state.extra, stateAt(4).extra);
  // The raw bits of the extra double survive (resume is bit-exact).
  EXPECT_EQ(ck.state.extra["lr"].get<double>(), 3e-4);
}

TEST(Checkpoint, LatestPicksLargestCompleteStep) {
  TempDir tmp("latest");
  EXPECT_EQ(latestCheckpoint(tmp.path), std::nullopt); // No directory yet.
  fs::create_directories(tmp.path);
  EXPECT_EQ(latestCheckpoint(tmp.path), std::nullopt); // Empty.
  for (int64_t step : {2, 10, 9})
    saveCheckpoint(tmp.path, params(1), optState(), stateAt(step));
  // Numeric, not lexicographic: step-10 beats step-9.
  EXPECT_EQ(latestCheckpoint(tmp.path), tmp / "step-10");

  // Incomplete, non-canonical and foreign entries are ignored.
  fs::create_directories(tmp / "step-11");
  writeText(tmp / "step-11/params.safetensors", "");
  fs::create_directories(tmp / "step-012");
  fs::copy(tmp / "step-10", tmp / "step-012", fs::copy_options::recursive);
  writeText(tmp / "step-99", "a file, not a directory");
  writeText(tmp / "notes.txt", "");
  EXPECT_EQ(latestCheckpoint(tmp.path), tmp / "step-10");

  writeText(tmp / "plain", "");
  EXPECT_EQ(errorOf([&] { latestCheckpoint(tmp / "plain"); }),
            tmp / "plain" + ": not a directory");
}

// A process died while writing step 5: its temp directory holds a partial
// params file and no state. The last good checkpoint must still win.
TEST(Checkpoint, SimulatedCrashKeepsLastGood) {
  TempDir tmp("crash");
  saveCheckpoint(tmp.path, params(4), optState(), stateAt(4));
  std::string partial = tmp / ".step-5.tmp-123";
  fs::create_directories(partial);
  std::string full = tmp / "full.safetensors";
  tcc::data::writeSafetensors(full, params(5));
  fs::copy_file(full, partial + "/params.safetensors");
  fs::resize_file(partial + "/params.safetensors", 40);
  fs::remove(full);

  std::optional<std::string> latest = latestCheckpoint(tmp.path);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(*latest, tmp / "step-4");
  Checkpoint ck = loadCheckpoint(*latest);
  EXPECT_EQ(ck.state.step, 4);
  expectSameArrays(ck.params, params(4));
}

TEST(Checkpoint, ResaveReplacesStep) {
  TempDir tmp("resave");
  saveCheckpoint(tmp.path, params(1), optState(), stateAt(4));
  CheckpointState st = stateAt(4);
  st.dataPosition = 7;
  saveCheckpoint(tmp.path, params(2), optState(), st);
  EXPECT_EQ(entries(tmp.path), (std::vector<std::string>{"step-4"}));
  Checkpoint ck = loadCheckpoint(tmp / "step-4");
  expectSameArrays(ck.params, params(2));
  EXPECT_EQ(ck.state.dataPosition, 7);
}

TEST(Checkpoint, FailedSaveKeepsOldAndLeavesNoTemp) {
  TempDir tmp("failed");
  saveCheckpoint(tmp.path, params(1), optState(), stateAt(4));
  std::vector<Array> bad = params(2);
  bad[1].bytes.pop_back();
  EXPECT_CONTAINS(
      errorOf([&] { saveCheckpoint(tmp.path, params(2), bad, stateAt(4)); }),
      "tensor 'fc.bias': holds 11 bytes but f32 [3] needs 12");
  EXPECT_EQ(entries(tmp.path), (std::vector<std::string>{"step-4"}));
  expectSameArrays(loadCheckpoint(tmp / "step-4").params, params(1));

  CheckpointState reserved = stateAt(5);
  reserved.extra["step"] = 3;
  EXPECT_EQ(errorOf([&] {
              saveCheckpoint(tmp.path, params(1), optState(), reserved);
            }),
            tmp.path + ": extra checkpoint field 'step' is reserved");
  CheckpointState notObject = stateAt(5);
  notObject.extra = json::array({1});
  EXPECT_EQ(errorOf([&] {
              saveCheckpoint(tmp.path, params(1), optState(), notObject);
            }),
            tmp.path + ": extra checkpoint state must be a JSON object");
  EXPECT_EQ(entries(tmp.path), (std::vector<std::string>{"step-4"}));
}

TEST(Checkpoint, LoadErrorsNameThePath) {
  TempDir tmp("loaderr");
  std::string stepDir =
      saveCheckpoint(tmp.path, params(1), optState(), stateAt(3));
  std::string state = stepDir + "/state.json";
  json good = readJson(state);
  auto loadWith = [&](const std::string &text) {
    writeText(state, text);
    return errorOf([&] { loadCheckpoint(stepDir); });
  };

  json v2 = good;
  v2["format_version"] = 2;
  EXPECT_EQ(loadWith(v2.dump()),
            state + ": unsupported format_version 2 (this runtime reads 1)");
  json noModel = good;
  noModel.erase("model");
  EXPECT_EQ(loadWith(noModel.dump()),
            state + ": missing or non-string 'model'");
  json badStep = good;
  badStep["step"] = "3";
  EXPECT_EQ(loadWith(badStep.dump()), state + ": 'step' is not an integer");
  json otherStep = good;
  otherStep["step"] = 5;
  EXPECT_EQ(loadWith(otherStep.dump()),
            state + ": step 5 does not match the directory name step-3");
  std::string text = good.dump(2);
  EXPECT_EQ(loadWith(text.substr(0, text.size() / 2)),
            state + ": malformed JSON (truncated or corrupt checkpoint state)");
  writeText(state, good.dump());
  EXPECT_EQ(loadCheckpoint(stepDir).state.step, 3);

  std::string paramsFile = stepDir + "/params.safetensors";
  fs::resize_file(paramsFile, fs::file_size(paramsFile) - 1);
  EXPECT_CONTAINS(errorOf([&] { loadCheckpoint(stepDir); }), paramsFile);
  fs::remove(stepDir + "/optimizer.safetensors");
  fs::remove(paramsFile);
  tcc::data::writeSafetensors(paramsFile, params(1));
  EXPECT_EQ(errorOf([&] { loadCheckpoint(stepDir); }),
            stepDir + "/optimizer.safetensors: cannot open: No such file or "
                      "directory");
  EXPECT_EQ(errorOf([&] { loadCheckpoint(tmp / "step-8"); }),
            tmp / "step-8" + ": not a checkpoint directory");
}

TEST(Checkpoint, PruneKeepsNewestAndClearsStaleTemps) {
  TempDir tmp("prune");
  for (int64_t step = 1; step <= 5; ++step)
    saveCheckpoint(tmp.path, params(float(step)), optState(), stateAt(step));
  // A pid that is certainly not running: a child we have reaped.
  pid_t child = fork();
  if (child == 0)
    _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);
  std::string dead = ".step-6.tmp-" + std::to_string(child);
  std::string deadOld = ".step-2.old-" + std::to_string(child);
  std::string alive = ".step-7.tmp-" + std::to_string(getpid());
  for (const std::string &d : {dead, deadOld, alive})
    fs::create_directories(tmp / d);

  pruneCheckpoints(tmp.path, 2, /*run=*/0);
  std::vector<std::string> want{alive, "step-4", "step-5"};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(entries(tmp.path), want);
  expectSameArrays(loadCheckpoint(tmp / "step-5").params, params(5));
  EXPECT_EQ(errorOf([&] { pruneCheckpoints(tmp.path, 0, 0); }),
            tmp.path + ": must keep at least one checkpoint");
}

CheckpointState stateOfRun(int64_t step, int64_t run) {
  CheckpointState st = stateAt(step);
  st.extra[RunField] = run;
  return st;
}

// Two runs in one directory: run 2 (started with --overwrite beside run 1's
// checkpoints) is the newest whatever its steps, and pruning run 2 leaves
// run 1's checkpoints alone.
TEST(Checkpoint, RunsAreListedAndPrunedApart) {
  TempDir tmp("runs");
  for (int64_t step : {10, 20, 30, 40})
    saveCheckpoint(tmp.path, params(1), optState(), stateOfRun(step, 1));
  for (int64_t step : {5, 10, 15})
    saveCheckpoint(tmp.path, params(2), optState(), stateOfRun(step, 2));
  std::vector<std::pair<int64_t, int64_t>> listed;
  for (const StepDir &s : listCheckpoints(tmp.path))
    listed.emplace_back(s.run, s.step);
  // step-10 of run 1 was replaced by run 2's.
  EXPECT_EQ(listed, (std::vector<std::pair<int64_t, int64_t>>{
                        {2, 15}, {2, 10}, {2, 5}, {1, 40}, {1, 30}, {1, 20}}));
  EXPECT_EQ(latestCheckpoint(tmp.path), tmp / "step-15");

  pruneCheckpoints(tmp.path, 1, /*run=*/2);
  EXPECT_EQ(
      entries(tmp.path),
      (std::vector<std::string>{"step-15", "step-20", "step-30", "step-40"}));

  json state = readJson(tmp / "step-40/state.json");
  state[RunField] = "one";
  writeText(tmp / "step-40/state.json", state.dump());
  EXPECT_EQ(errorOf([&] { listCheckpoints(tmp.path); }),
            tmp / "step-40/state.json" +
                ": 'run' is not a non-negative integer");
}

namespace {

/// Every tensor's SHA-256 is saved with it: a flipped byte in either file's
/// tensor data is refused on load, naming the file and the tensor, where it
/// used to resume silently. Files saved without checksums still load.
TEST(CheckpointDigests, FlippedTensorBytesAreRefused) {
  for (const char *file : {"params.safetensors", "optimizer.safetensors"}) {
    TempDir dir(std::string("digest-") + file);
    std::string step =
        saveCheckpoint(dir.path, params(0.5f), optState(), stateAt(3));
    std::map<std::string, std::string> meta;
    tcc::data::readSafetensors(step + "/" + file, &meta);
    EXPECT_EQ(meta.size(), std::string(file) == "params.safetensors" ? 2u : 5u);
    EXPECT_EQ(loadCheckpoint(step).state.step, 3);
    std::vector<uint8_t> bytes = readFile(step + "/" + file);
    bytes[bytes.size() - 9] ^= 0x01; // inside the last tensor's data
    writeFile(step + "/" + file, bytes);
    try {
      loadCheckpoint(step);
      ADD_FAILURE() << "a flipped byte in " << file << " was not noticed";
    } catch (const tcc::data::Error &e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(std::string(file) + ": tensor '"), std::string::npos)
          << msg;
      EXPECT_NE(msg.find("is damaged"), std::string::npos) << msg;
    }
  }
}

TEST(CheckpointDigests, FilesWithoutChecksumsStillLoad) {
  TempDir dir("digest-none");
  std::string step =
      saveCheckpoint(dir.path, params(0.5f), optState(), stateAt(3));
  // As a checkpoint written before checksums: the same tensors, no metadata.
  tcc::data::writeSafetensors(step + "/params.safetensors", params(0.25f));
  Checkpoint c = loadCheckpoint(step);
  expectSameArrays(c.params, params(0.25f));
}

} // namespace
