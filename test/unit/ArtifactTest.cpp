// The artifact writer's pieces that are easier to pin here than through
// tcc compile: attribute -> JSON for library calls (every kind, defaults of
// ops that do not spell their attributes), the double format, the path
// checks, and a hand-written planned module written and read back.
#include "ErrorCapture.h"
#include "TestUtil.h"

#include "exec/ExecOps.h"
#include "data/safetensors.h"
#include "tcc/Artifact/Artifact.h"
#include "tcc/TccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

using namespace mlir;
namespace fs = std::filesystem;
namespace artifact = tcc::artifact;

namespace {

class ArtifactTest : public ::testing::Test {
protected:
  ArtifactTest() {
    context.loadDialect<tcc::TccDialect, tcc::exec::ExecDialect,
                        func::FuncDialect>();
  }

  OwningOpRef<ModuleOp> parse(const char *text) {
    std::string diag;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      diag += d.str() + "\n";
      return success();
    });
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module) << diag;
    return module;
  }

  /// The first error since the last call: what the failure just checked
  /// said (it is forgotten).
  std::string lastError() {
    std::string message = errors.first();
    errors.clear();
    return message;
  }

  MLIRContext context;
  testutil::ErrorCapture errors{context};
};

TEST_F(ArtifactTest, PathChecks) {
  std::string root = testutil::tempPath("artifact", "paths");
  fs::remove_all(root);
  fs::create_directories(root);
  Location loc = UnknownLoc::get(&context);
  EXPECT_TRUE(succeeded(artifact::checkArtifactPath(loc, root + "/new.tcc")))
      << lastError();
  EXPECT_TRUE(
      failed(artifact::checkArtifactPath(loc, root + "/missing/new.tcc")));
  EXPECT_EQ(lastError(), "cannot write '" + root +
                             "/missing/new.tcc': directory '" + root +
                             "/missing' does not exist");
  EXPECT_TRUE(failed(artifact::checkArtifactPath(loc, "-")));
  EXPECT_EQ(lastError(),
            "the artifact needs a directory path, e.g. -o model.tcc");

  // A directory that is not an artifact, a file: refused.
  fs::create_directories(root + "/other.tcc");
  std::ofstream(root + "/other.tcc/notes.txt") << "mine\n";
  EXPECT_TRUE(failed(artifact::checkArtifactPath(loc, root + "/other.tcc")));
  EXPECT_EQ(lastError(), "'" + root +
                             "/other.tcc' exists and is not a tcc "
                             "artifact; refusing to replace it");
  std::ofstream(root + "/file.tcc") << "x";
  EXPECT_TRUE(failed(artifact::checkArtifactPath(loc, root + "/file.tcc")));
  // A manifest of another format is not an artifact either.
  fs::create_directories(root + "/fake.tcc");
  std::ofstream(root + "/fake.tcc/manifest.json") << "{\"format\": \"x\"}";
  EXPECT_TRUE(failed(artifact::checkArtifactPath(loc, root + "/fake.tcc")));
  // An earlier artifact may be replaced (trailing slash or not).
  fs::create_directories(root + "/old.tcc");
  std::ofstream(root + "/old.tcc/manifest.json")
      << "{\"format\": \"tcc-artifact\", \"version\": 1}";
  errors.clear();
  EXPECT_TRUE(succeeded(artifact::checkArtifactPath(loc, root + "/old.tcc")))
      << lastError();
  EXPECT_TRUE(succeeded(artifact::checkArtifactPath(loc, root + "/old.tcc/")))
      << lastError();
  fs::remove_all(root);
}

// A step written by hand in the form the writer accepts once lowered: a
// one-layer linear model with cross-entropy and AdamW, one generated kernel,
// reshape aliases and constants.
const char *kStep = R"mlir(
  tcc.param @w = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  tcc.param @b frozen = dense<0.5> : tensor<2xf32>
  func.func @forward(%x: tensor<4x3xf32> {tcc.name = "x"}) -> (tensor<3x4xf32> {tcc.name = "y"}) {
    %t = tcc.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
    return %t : tensor<3x4xf32>
  }
  func.func @train_step(
      %w: tensor<3x2xf32> {tcc.param = "w"}, %b: tensor<2xf32> {tcc.param = "b"},
      %m: tensor<3x2xf32> {tcc.opt_state = "w.exp_avg"},
      %v: tensor<3x2xf32> {tcc.opt_state = "w.exp_avg_sq"},
      %step: tensor<i64> {tcc.step},
      %x: tensor<4x3xf32> {tcc.name = "x"}, %labels: tensor<4xi64> {tcc.name = "labels"})
      -> (tensor<f32> {tcc.name = "loss"}, tensor<3x2xf32> {tcc.param = "w"},
          tensor<3x2xf32> {tcc.opt_state = "w.exp_avg"},
          tensor<3x2xf32> {tcc.opt_state = "w.exp_avg_sq"})
      attributes {tcc.accum = 1 : i64} {
    %lr = tcc.constant dense<1.0e-3> : tensor<f64>
    %y = tcc.gemm %x, %w, %b : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    %l:2 = tcc.cross_entropy %y, %labels : (tensor<4x2xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<f32>)
    %s1 = tcc.reshape %l#0 : (tensor<f32>) -> tensor<1xf32>
    %q = exec.fusion "fused_0" (%s1, %l#1) : (tensor<1xf32>, tensor<f32>) -> tensor<1xf32> {
    ^bb0(%s: tensor<1xf32>, %c: tensor<f32>):
      %d = tcc.div %s, %c : (tensor<1xf32>, tensor<f32>) -> tensor<1xf32>
      exec.yield %d : tensor<1xf32>
    }
    %loss = tcc.reshape %q : (tensor<1xf32>) -> tensor<f32>
    %one = tcc.constant dense<1.0> : tensor<f32>
    %dy = tcc.cross_entropy_grad %y, %labels, %one : (tensor<4x2xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x2xf32>
    %dw = tcc.matmul %x, %dy {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
    %u:3 = tcc.adamw_update %w, %dw, %m, %v, %lr, %step : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<f64>, tensor<i64>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
    return %loss, %u#0, %u#1, %u#2 : tensor<f32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
  }
)mlir";

llvm::json::Value readJson(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(bool(buffer)) << path;
  if (!buffer)
    return nullptr;
  llvm::Expected<llvm::json::Value> value =
      llvm::json::parse((*buffer)->getBuffer());
  if (!value) {
    ADD_FAILURE() << path << ": " << llvm::toString(value.takeError());
    return nullptr;
  }
  return std::move(*value);
}

std::string text(const llvm::json::Value *v) {
  if (!v)
    return "<missing>";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << *v;
  return s;
}

/// The call step of `op` in `steps` (null if none).
const llvm::json::Object *findCall(const llvm::json::Array &steps,
                                   llvm::StringRef op) {
  for (const llvm::json::Value &s : steps)
    if (s.getAsObject()->getString("op") == op)
      return s.getAsObject();
  return nullptr;
}

/// Value `id` (its "id" must equal its position).
const llvm::json::Object *value(const llvm::json::Array &values,
                                const llvm::json::Value &id) {
  std::optional<int64_t> i = id.getAsInteger();
  if (!i || *i < 0 || *i >= int64_t(values.size()))
    return nullptr;
  const llvm::json::Object *v = values[*i].getAsObject();
  EXPECT_EQ(v->getInteger("id"), *i);
  return v;
}

TEST_F(ArtifactTest, WritesAHandWrittenStep) {
  OwningOpRef<ModuleOp> module = parse(kStep);
  ASSERT_TRUE(module);
  std::string dir = testutil::tempPath("artifact", "step.tcc");
  fs::remove_all(dir);
  tcc::TrainConfig config;
  config.loss = testutil::expectSuccess(
      tcc::parseLoss(UnknownLoc::get(&context), "cross_entropy(y,labels)"));
  artifact::ArtifactOptions options;
  options.source = "/some/where/model.mlir";
  options.cudaKernels = false;
  artifact::ArtifactSummary summary;
  ASSERT_TRUE(succeeded(
      artifact::writeArtifact(*module, config, options, dir, &summary)))
      << lastError();
  // The caller's module is not lowered in place; @forward (whose transpose
  // has no kernel) is not part of the artifact.
  EXPECT_FALSE(module->lookupSymbol<func::FuncOp>("train_step")->hasAttr(
      "exec.arena_bytes"));
  EXPECT_EQ(summary.kernels, 1);
  ASSERT_EQ(summary.functions.size(), 1u);
  EXPECT_EQ(summary.functions[0].kernels, 1);
  EXPECT_EQ(summary.functions[0].calls, 5);
  EXPECT_EQ(summary.paramBytes, 6 * 4 + 2 * 4);
  EXPECT_EQ(summary.optStateBytes, 2 * 6 * 4);
  EXPECT_EQ(summary.constantBytes, 8 + 4);
  EXPECT_FALSE(summary.cudaKernels);

  llvm::json::Value manifest = readJson(dir + "/manifest.json");
  const llvm::json::Object *m = manifest.getAsObject();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->getString("format"), "tcc-artifact");
  EXPECT_EQ(m->getInteger("version"), TCC_ARTIFACT_VERSION);
  EXPECT_EQ(m->getString("kind"), "training");
  EXPECT_EQ(m->getString("source"), "model.mlir");
  EXPECT_EQ(m->getString("fingerprint"), summary.fingerprint);
  EXPECT_EQ(text(m->get("schedule")), "{\"kind\":\"constant\",\"lr\":0.001}");
  EXPECT_EQ(text(m->get("files")),
            "{\"constants\":\"constants.safetensors\",\"host_kernels\":"
            "\"kernels/host.so\",\"kernel_prelude\":\"kernels/tcc_kernel.h\","
            "\"kernel_source\":\"kernels/kernels.cc\","
            "\"plan\":\"plan.json\",\"weights\":\"weights.safetensors\"}");

  llvm::json::Value planValue = readJson(dir + "/plan.json");
  const llvm::json::Object *plan = planValue.getAsObject();
  ASSERT_TRUE(plan);
  EXPECT_EQ(text(plan->get("params")),
            "[{\"dtype\":\"f32\",\"name\":\"w\",\"shape\":[3,2]},"
            "{\"dtype\":\"f32\",\"name\":\"b\",\"shape\":[2]}]");
  EXPECT_EQ(text(plan->get("opt_state")),
            "[{\"dtype\":\"f32\",\"name\":\"w.exp_avg\",\"shape\":[3,2]},"
            "{\"dtype\":\"f32\",\"name\":\"w.exp_avg_sq\",\"shape\":[3,2]}]");
  const llvm::json::Object *functions = plan->getObject("functions");
  ASSERT_TRUE(functions);
  EXPECT_EQ(functions->size(), 1u);
  const llvm::json::Object *train = functions->getObject("train_step");
  ASSERT_TRUE(train);
  EXPECT_EQ(text(train->get("inputs")),
            "[{\"dtype\":\"f32\",\"name\":\"x\",\"shape\":[4,3]},"
            "{\"dtype\":\"i64\",\"name\":\"labels\",\"shape\":[4]}]");
  const llvm::json::Array *values = train->getArray("values");
  const llvm::json::Array *steps = train->getArray("steps");
  ASSERT_TRUE(values && steps);
  // Arguments first, in order: w b m v step x labels.
  EXPECT_EQ(text(&(*values)[0]), "{\"dtype\":\"f32\",\"id\":0,\"index\":0,"
                                 "\"shape\":[3,2],\"storage\":\"param\"}");
  EXPECT_EQ(text(&(*values)[3]), "{\"dtype\":\"f32\",\"id\":3,\"index\":1,"
                                 "\"shape\":[3,2],\"storage\":\"opt_state\"}");
  EXPECT_EQ(text(&(*values)[4]),
            "{\"dtype\":\"i64\",\"id\":4,\"shape\":[],\"storage\":\"step\"}");
  EXPECT_EQ(text(&(*values)[6]), "{\"dtype\":\"i64\",\"id\":6,\"index\":1,"
                                 "\"shape\":[4],\"storage\":\"input\"}");
  ASSERT_EQ(steps->size(), 6u);

  // gemm: the optional c present, the optional bias absent (-1);
  // attributes the IR leaves at their defaults are written all the same.
  const llvm::json::Object *gemm = findCall(*steps, "gemm");
  ASSERT_TRUE(gemm);
  EXPECT_EQ(text(gemm->get("attrs")),
            "{\"alpha\":1,\"beta\":1,\"transpose_a\":false,"
            "\"transpose_b\":false,\"with_bias_grad\":false}");
  EXPECT_EQ(text(gemm->get("inputs")), "[5,0,1,-1]");
  EXPECT_EQ(text(findCall(*steps, "matmul")->get("attrs")),
            "{\"transpose_lhs\":true,\"transpose_rhs\":false}");
  EXPECT_EQ(text(findCall(*steps, "cross_entropy")->get("attrs")),
            "{\"ignore_index\":-100}");

  // The kernel reads loss_sum through its reshape: same offset, new id.
  const llvm::json::Object *kernel = nullptr;
  for (const llvm::json::Value &s : *steps)
    if (s.getAsObject()->getString("kind") == "kernel")
      kernel = s.getAsObject();
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->getString("symbol"), "tcc_fused_0");
  EXPECT_EQ(kernel->getInteger("elements"), 1);
  const llvm::json::Object *ce = findCall(*steps, "cross_entropy");
  const llvm::json::Object *lossSum =
      value(*values, ce->getArray("outputs")->front());
  const llvm::json::Object *reshaped =
      value(*values, kernel->getArray("inputs")->front());
  ASSERT_TRUE(lossSum && reshaped);
  EXPECT_EQ(lossSum->getString("storage"), "arena");
  EXPECT_EQ(reshaped->getString("storage"), "arena");
  EXPECT_EQ(reshaped->getInteger("offset"), lossSum->getInteger("offset"));
  EXPECT_NE(reshaped->getInteger("id"), lossSum->getInteger("id"));
  EXPECT_EQ(text(reshaped->get("shape")), "[1]");

  // The lr and the seed of the loss gradient are constants.
  const llvm::json::Object *adamw = findCall(*steps, "adamw_update");
  ASSERT_TRUE(adamw);
  const llvm::json::Object *lr = value(*values, (*adamw->getArray("inputs"))[4]);
  ASSERT_TRUE(lr);
  EXPECT_EQ(lr->getString("storage"), "constant");
  EXPECT_EQ(lr->getString("dtype"), "f64");
  // The AdamW update writes its results over its arguments.
  const llvm::json::Object *attrs = adamw->getObject("attrs");
  ASSERT_TRUE(attrs);
  EXPECT_EQ(attrs->size(), 5u);
  EXPECT_EQ(attrs->getNumber("beta1"), 0.9);
  EXPECT_EQ(attrs->getNumber("beta2"), 0.999);
  EXPECT_EQ(attrs->getNumber("eps"), 1e-8);
  EXPECT_EQ(attrs->getNumber("weight_decay"), 0.01);
  EXPECT_EQ(attrs->getInteger("element_offset"), 0); // the whole parameter
  // In the file, the shortest form of each double.
  std::vector<uint8_t> planBytes = testutil::readFile(dir + "/plan.json");
  std::string planText(planBytes.begin(), planBytes.end());
  EXPECT_NE(planText.find("\"attrs\":{\"beta1\":0.9,\"beta2\":0.999,"
                          "\"eps\":1e-08,\"weight_decay\":0.01,"
                          "\"element_offset\":0}"),
            std::string::npos);
  // Every result of the op, the absent optional new_working as -1.
  const llvm::json::Array *outs = adamw->getArray("outputs");
  ASSERT_TRUE(outs && outs->size() == 4);
  EXPECT_EQ((*outs)[3].getAsInteger(), -1);
  for (int k = 0; k < 3; ++k) {
    const llvm::json::Object *v = value(*values, (*outs)[k]);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->getString("storage"), k == 0 ? "param" : "opt_state");
    EXPECT_EQ(v->getInteger("index"), k == 0 ? 0 : k - 1);
  }
  const llvm::json::Array *results = train->getArray("results");
  ASSERT_TRUE(results && results->size() == 4);
  EXPECT_EQ(text((*results)[0].getAsObject()->get("role")), "\"loss\"");
  EXPECT_EQ((*results)[1].getAsObject()->get("value")->getAsInteger(),
            (*outs)[0].getAsInteger());

  EXPECT_TRUE(fs::is_regular_file(dir + "/weights.safetensors"));
  EXPECT_TRUE(fs::is_regular_file(dir + "/constants.safetensors"));
  EXPECT_TRUE(fs::is_regular_file(dir + "/kernels/kernels.cc"));
  EXPECT_TRUE(fs::is_regular_file(dir + "/kernels/host.so"));
  EXPECT_FALSE(fs::exists(dir + "/kernels/kernels.fatbin"));
  {
    std::vector<tcc::data::Array> weights =
        tcc::data::readSafetensors(dir + "/weights.safetensors");
    ASSERT_EQ(weights.size(), 2u);
    const tcc::data::Array *w = tcc::data::findArray(weights, "w");
    const tcc::data::Array *b = tcc::data::findArray(weights, "b");
    ASSERT_TRUE(w && b);
    EXPECT_EQ(w->shape, (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(std::vector<float>(w->data<float>(), w->data<float>() + 6),
              (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(std::vector<float>(b->data<float>(), b->data<float>() + 2),
              (std::vector<float>{0.5f, 0.5f}));
  }

  // Written again over itself: replaced, and no temporary left beside it.
  ASSERT_TRUE(succeeded(
      artifact::writeArtifact(*module, config, options, dir, nullptr)))
      << lastError();
  for (const auto &entry : fs::directory_iterator(fs::path(dir).parent_path()))
    EXPECT_EQ(entry.path().filename().string().find("step.tcc.tmp"),
              std::string::npos);
  if (!getenv("TCC_KEEP_TEST_ARTIFACT"))
    fs::remove_all(dir);
}

// An inference module: @forward as the importer writes it, a parameter read
// through tcc.get_param, one library call, one generated kernel and an input
// passed through as an output.
const char *kForward = R"mlir(
  tcc.param @w = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  func.func @forward(%x: tensor<4x3xf32> {tcc.name = "x"}, %z: tensor<4x2xf32> {tcc.name = "z"})
      -> (tensor<4x2xf32> {tcc.name = "y"}, tensor<4x2xf32> {tcc.name = "p"},
          tensor<4x2xf32> {tcc.name = "z_out"}) {
    %w = tcc.get_param @w : tensor<3x2xf32>
    %p = tcc.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %s = tcc.add %p, %z : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %y = tcc.exp %s : (tensor<4x2xf32>) -> tensor<4x2xf32>
    return %y, %p, %z : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
  }
)mlir";

TEST_F(ArtifactTest, WritesAnInferenceArtifact) {
  OwningOpRef<ModuleOp> module = parse(kForward);
  ASSERT_TRUE(module);
  std::string root = testutil::tempPath("artifact", "inference");
  fs::remove_all(root);
  fs::create_directories(root);
  std::string dir = root + "/fwd.tcc";
  artifact::ArtifactOptions options;
  options.source = "/some/where/model.onnx";
  options.cudaKernels = false;
  artifact::ArtifactSummary summary;
  ASSERT_TRUE(succeeded(
      artifact::writeInferenceArtifact(*module, options, dir, &summary)))
      << lastError();
  EXPECT_EQ(summary.kind, artifact::Kind::Inference);
  EXPECT_TRUE(summary.fingerprint.empty());
  ASSERT_EQ(summary.functions.size(), 1u);
  EXPECT_EQ(summary.functions[0].name, "forward");
  EXPECT_EQ(summary.functions[0].kernels, 1);
  EXPECT_EQ(summary.functions[0].calls, 1);
  EXPECT_EQ(artifact::formatSummary(summary).rfind(
                "wrote " + dir +
                    " (inference): 1 kernels (host), forward 1 "
                    "launches + 1 library calls, arena ",
                0),
            0u)
      << artifact::formatSummary(summary);
  EXPECT_EQ(artifact::formatSummary(summary).find("optimizer"),
            std::string::npos);

  // The manifest: the kind, no training configuration.
  llvm::json::Value manifest = readJson(dir + "/manifest.json");
  const llvm::json::Object *m = manifest.getAsObject();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->getString("kind"), "inference");
  EXPECT_EQ(m->getInteger("version"), TCC_ARTIFACT_VERSION);
  EXPECT_EQ(m->getString("source"), "model.onnx");
  for (const char *absent :
       {"fingerprint", "train_config", "schedule", "accum"})
    EXPECT_FALSE(m->get(absent)) << absent;

  // The plan: one function, forward; inputs by name; outputs by name.
  llvm::json::Value planValue = readJson(dir + "/plan.json");
  const llvm::json::Object *plan = planValue.getAsObject();
  ASSERT_TRUE(plan);
  EXPECT_EQ(text(plan->get("params")),
            "[{\"dtype\":\"f32\",\"name\":\"w\",\"shape\":[3,2]}]");
  EXPECT_EQ(text(plan->get("opt_state")), "[]");
  const llvm::json::Object *functions = plan->getObject("functions");
  ASSERT_TRUE(functions);
  EXPECT_EQ(functions->size(), 1u);
  const llvm::json::Object *forward = functions->getObject("forward");
  ASSERT_TRUE(forward);
  EXPECT_EQ(text(forward->get("inputs")),
            "[{\"dtype\":\"f32\",\"name\":\"x\",\"shape\":[4,3]},"
            "{\"dtype\":\"f32\",\"name\":\"z\",\"shape\":[4,2]}]");
  const llvm::json::Array *values = forward->getArray("values");
  const llvm::json::Array *results = forward->getArray("results");
  ASSERT_TRUE(values && results);
  ASSERT_EQ(results->size(), 3u);
  const char *names[] = {"y", "p", "z_out"};
  for (size_t i = 0; i < 3; ++i) {
    const llvm::json::Object *r = (*results)[i].getAsObject();
    EXPECT_EQ(r->getString("role"), "output");
    EXPECT_EQ(r->getString("name"), names[i]);
    EXPECT_FALSE(r->get("index"));
  }
  // z is passed through: the output is input value 1.
  EXPECT_EQ((*results)[2].getAsObject()->getInteger("value"), 1);
  const llvm::json::Object *y =
      value(*values, *(*results)[0].getAsObject()->get("value"));
  ASSERT_TRUE(y);
  EXPECT_EQ(y->getString("storage"), "arena");
  std::vector<uint8_t> planBytes = testutil::readFile(dir + "/plan.json");
  std::string planText(planBytes.begin(), planBytes.end());
  EXPECT_NE(planText.find("{\"role\":\"output\",\"name\":\"y\",\"value\":"),
            std::string::npos)
      << planText;
  EXPECT_TRUE(fs::is_regular_file(dir + "/kernels/host.so"));

  // A result without a name cannot be read by one: refused, nothing written.
  OwningOpRef<ModuleOp> unnamed = parse(R"mlir(
    func.func @forward(%x: tensor<4xf32> {tcc.name = "x"}) -> tensor<4xf32> {
      %y = tcc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
      return %y : tensor<4xf32>
    }
  )mlir");
  ASSERT_TRUE(unnamed);
  EXPECT_TRUE(failed(artifact::writeInferenceArtifact(
      *unnamed, options, root + "/unnamed.tcc", nullptr)));
  EXPECT_EQ(lastError(), "@forward: result #0 has no tcc.name to read it by");
  EXPECT_FALSE(fs::exists(root + "/unnamed.tcc"));
  // Without @forward there is nothing to compile.
  OwningOpRef<ModuleOp> empty = parse("module {}");
  EXPECT_TRUE(failed(artifact::writeInferenceArtifact(
      *empty, options, root + "/empty.tcc", nullptr)));
  EXPECT_EQ(lastError(), "the module has no @forward");
  fs::remove_all(root);
}

TEST_F(ArtifactTest, KernelsOfSeveralArtifactsInOneSharedObject) {
  // Two artifacts' kernels, renamed apart by a prefix, compiled once and
  // linked into both; the sources are what each artifact's kernels.cc holds.
  OwningOpRef<ModuleOp> module = parse(kForward);
  ASSERT_TRUE(module);
  std::string root = testutil::tempPath("artifact", "shared-kernels");
  fs::remove_all(root);
  fs::create_directories(root);
  std::string combined;
  std::vector<std::string> sources;
  for (const char *prefix : {"a_", "b_"}) {
    artifact::ArtifactOptions options;
    options.kernelPrefix = prefix;
    FailureOr<std::string> source =
        artifact::kernelSource(*module, artifact::Kind::Inference, options);
    ASSERT_TRUE(succeeded(source)) << lastError();
    EXPECT_NE(source->find(std::string("TCC_KERNEL(") + prefix + "fused_0)"),
              std::string::npos)
        << *source;
    sources.push_back(*source);
    combined += *source;
  }
  std::string so = root + "/kernels.so";
  ASSERT_TRUE(succeeded(
      artifact::compileHostKernels(UnknownLoc::get(&context), combined, so)))
      << lastError();
  for (size_t i = 0; i < 2; ++i) {
    artifact::ArtifactOptions options;
    options.cudaKernels = false;
    options.kernelPrefix = i ? "b_" : "a_";
    options.prebuiltHostKernels = so;
    options.sync = false;
    std::string dir = root + "/" + std::to_string(i) + ".tcc";
    ASSERT_TRUE(succeeded(
        artifact::writeInferenceArtifact(*module, options, dir, nullptr)))
        << lastError();
    std::vector<uint8_t> cc = testutil::readFile(dir + "/kernels/kernels.cc");
    EXPECT_EQ(std::string(cc.begin(), cc.end()), sources[i]);
    EXPECT_EQ(fs::file_size(dir + "/kernels/host.so"), fs::file_size(so));
    std::vector<uint8_t> planBytes = testutil::readFile(dir + "/plan.json");
    std::string planText(planBytes.begin(), planBytes.end());
    EXPECT_NE(planText.find(std::string("\"symbol\":\"tcc_") +
                            options.kernelPrefix + "fused_0\""),
              std::string::npos)
        << planText;
  }
  // The caller's module keeps its names.
  module->walk(
      [](tcc::exec::FusionOp f) { ADD_FAILURE() << "lowered in place"; });

  // A missing prebuilt object fails the write and leaves nothing behind.
  artifact::ArtifactOptions options;
  options.cudaKernels = false;
  options.prebuiltHostKernels = root + "/missing.so";
  EXPECT_TRUE(failed(artifact::writeInferenceArtifact(
      *module, options, root + "/missing.tcc", nullptr)));
  std::string missing = lastError();
  EXPECT_NE(missing.find("missing.so"), std::string::npos) << missing;
  EXPECT_FALSE(fs::exists(root + "/missing.tcc"));
  fs::remove_all(root);
}

// Optimizer state with tcc.init (the loss scale of mixed precision): the
// opt_state entry of plan.json gets "init", the others none.
TEST_F(ArtifactTest, WritesOptStateInit) {
  auto module = [&](const char *scaleType, const char *init) {
    std::string text = R"mlir(
    tcc.param @w = dense<1.0> : tensor<3x2xf32>
    func.func @train_step(%w: tensor<3x2xf32> {tcc.param = "w"},
        %s: tensor<SCALE> {tcc.opt_state = "loss_scale", tcc.init = INIT},
        %g: tensor<i64> {tcc.opt_state = "loss_scale.good_steps"},
        %k: tensor<i64> {tcc.opt_state = "loss_scale.skipped", tcc.init = 0.000000e+00 : f64},
        %x: tensor<4x3xf32> {tcc.name = "x"}, %labels: tensor<4xi64> {tcc.name = "labels"})
        -> (tensor<f32> {tcc.name = "loss"}, tensor<SCALE> {tcc.opt_state = "loss_scale"}) {
      %y = tcc.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
      %l:2 = tcc.cross_entropy %y, %labels : (tensor<4x2xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<f32>)
      %loss = tcc.div %l#0, %l#1 : (tensor<f32>, tensor<f32>) -> tensor<f32>
      %s2 = tcc.add %s, %s : (tensor<SCALE>, tensor<SCALE>) -> tensor<SCALE>
      return %loss, %s2 : tensor<f32>, tensor<SCALE>
    }
  )mlir";
    for (auto [key, value] : {std::pair<std::string, std::string>{"SCALE", scaleType},
                              {"INIT", init}})
      for (size_t at; (at = text.find(key)) != std::string::npos;)
        text.replace(at, key.size(), value);
    return parse(text.c_str());
  };
  tcc::TrainConfig config;
  config.loss = testutil::expectSuccess(
      tcc::parseLoss(UnknownLoc::get(&context), "cross_entropy(y,labels)"));
  artifact::ArtifactOptions options;
  options.cudaKernels = false;
  std::string dir = testutil::tempPath("artifact", "init.tcc");
  fs::remove_all(dir);

  OwningOpRef<ModuleOp> m = module("f32", "6.553600e+04 : f64");
  ASSERT_TRUE(m);
  ASSERT_TRUE(
      succeeded(artifact::writeArtifact(*m, config, options, dir, nullptr)))
      << lastError();
  std::vector<uint8_t> bytes = testutil::readFile(dir + "/plan.json");
  std::string plan(bytes.begin(), bytes.end());
  EXPECT_NE(plan.find("    {\"name\":\"loss_scale\",\"dtype\":\"f32\","
                      "\"shape\":[],\"init\":65536.0},\n"
                      "    {\"name\":\"loss_scale.good_steps\",\"dtype\":"
                      "\"i64\",\"shape\":[]},\n"
                      "    {\"name\":\"loss_scale.skipped\",\"dtype\":\"i64\","
                      "\"shape\":[],\"init\":0.0}\n"),
            std::string::npos)
      << plan;
  // Parameters and inputs never carry one.
  EXPECT_EQ(plan.find("\"init\"", plan.find("\"functions\"")),
            std::string::npos);
  fs::remove_all(dir);

  // Refused: a value the state's dtype cannot hold, a non-number.
  m = module("f16", "6.553600e+04 : f64");
  ASSERT_TRUE(m);
  EXPECT_TRUE(
      failed(artifact::writeArtifact(*m, config, options, dir, nullptr)));
  EXPECT_EQ(lastError(), "@train_step: optimizer state 'loss_scale' (f16): "
                         "tcc.init = 65536 is beyond the range of f16 "
                         "(largest finite 65504)");
  m = module("f32", "\"big\"");
  ASSERT_TRUE(m);
  EXPECT_TRUE(
      failed(artifact::writeArtifact(*m, config, options, dir, nullptr)));
  EXPECT_EQ(lastError(), "@train_step: tcc.init of optimizer state "
                         "'loss_scale' is not a number");
  EXPECT_FALSE(fs::exists(dir));
}

} // namespace
