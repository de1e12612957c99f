// tcc-fuse must not change a single bit: a training step (MLP with GELU,
// residual, LayerNorm, MSE, AdamW, gradient clipping), and the training
// steps of the tiny GPT, MLP and BERT of test/models (exported by PyTorch,
// compiled by the tcc driver, with their own initial weights), run in the
// reference interpreter unfused and fused for a few steps, and every loss,
// parameter and optimizer state comes out identical. After fusion every op
// is a kernel (exec.fusion), a library call or a non-launching view. The
// models' steps after tcc-fuse-gemm-epilogue (bias adds folded into GEMMs)
// train like the unfused steps up to rounding (it rounds each bias sum once
// rather than twice), and bit-identically with tcc-fuse run after it; the
// steps with attention in token rows (tcc-fold-attention-layout) train
// bit-identically.
#include "TestUtil.h"

#include "exec/ExecOps.h"
#include "tcc/Interp/Interpreter.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/Passes.h"
#include "tcc/Transforms/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

using namespace mlir;
using tcc::data::Array;
using tcc::data::DType;
using namespace testutil;

namespace {

// x -> gelu(x W1 + b1) W2 + b2 + x -> layer_norm -> * 0.5: bias+GELU and
// residual chains like a transformer block's MLP.
const char *kMlp = R"mlir(
  tcc.param @w1 = dense<0.0> : tensor<8x16xf32>
  tcc.param @b1 = dense<0.0> : tensor<16xf32>
  tcc.param @w2 = dense<0.0> : tensor<16x8xf32>
  tcc.param @b2 = dense<0.0> : tensor<8xf32>
  tcc.param @g = dense<1.0> : tensor<8xf32>
  tcc.param @beta = dense<0.0> : tensor<8xf32>
  func.func @forward(%x: tensor<4x8xf32> {tcc.name = "x"}) -> (tensor<4x8xf32> {tcc.name = "y"}) {
    %w1 = tcc.get_param @w1 : tensor<8x16xf32>
    %b1 = tcc.get_param @b1 : tensor<16xf32>
    %w2 = tcc.get_param @w2 : tensor<16x8xf32>
    %b2 = tcc.get_param @b2 : tensor<8xf32>
    %g = tcc.get_param @g : tensor<8xf32>
    %beta = tcc.get_param @beta : tensor<8xf32>
    %half = tcc.constant dense<0.5> : tensor<f32>
    %0 = tcc.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %1 = tcc.add %0, %b1 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %2 = tcc.gelu %1 {approximate = #tcc<gelu_approx tanh>} : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %3 = tcc.matmul %2, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %4 = tcc.add %3, %b2 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %5 = tcc.add %4, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %6 = tcc.layer_norm %5 scale %g bias %beta {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %7 = tcc.mul %6, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    return %7 : tensor<4x8xf32>
  }
)mlir";

/// Whether `op` may stand at the top level of a fused step function.
bool allowedAfterFusion(Operation &op) {
  return llvm::isa<tcc::exec::FusionOp>(op) || tcc::exec::isLibraryOp(&op) ||
         op.hasTrait<tcc::OpClass::View>() ||
         llvm::isa<tcc::ConstantOp, tcc::GetParamOp, func::ReturnOp>(op);
}

/// Deterministic values in [-1, 1) (non-negative for optimizer state, whose
/// second moment must be).
Array fill(RankedTensorType type, uint32_t seed, bool nonNegative) {
  std::vector<float> v(type.getNumElements());
  uint32_t s = seed * 2654435761u + 1;
  for (float &x : v) {
    s = s * 1664525u + 1013904223u;
    x = float(s >> 8) / float(1 << 24) * 2.0f - 1.0f;
    if (nonNegative)
      x = std::fabs(x) * 0.01f;
  }
  return f32(type.getShape(), v);
}

class FuseTest : public ::testing::Test {
protected:
  FuseTest() {
    context.loadDialect<tcc::TccDialect, tcc::exec::ExecDialect,
                        func::FuncDialect>();
  }

  OwningOpRef<ModuleOp> buildStep() {
    std::string diag;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      diag += d.str() + "\n";
      return success();
    });
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kMlp, &context);
    tcc::TrainConfig config;
    Location flags = UnknownLoc::get(&context);
    FailureOr<tcc::LossSpec> loss = tcc::parseLoss(flags, "mse(y,target)");
    FailureOr<tcc::OptimizerSpec> optimizer =
        tcc::parseOptimizer(flags, "adamw:lr=0.01,weight_decay=0.1");
    if (failed(loss) || failed(optimizer)) {
      ADD_FAILURE() << "bad training flags: " << diag;
      return nullptr;
    }
    config.loss = *loss;
    config.optimizer = *optimizer;
    config.gradClip = 0.5;
    if (!module || failed(tcc::buildTrainStep(*module, config)) ||
        failed(verify(*module))) {
      ADD_FAILURE() << "building the step failed: " << diag;
      return nullptr;
    }
    return module;
  }

  /// Runs @train_step `steps` times from the same start, feeding parameters
  /// and optimizer state back; returns every step's results. Parameters
  /// start from the module's tcc.param values when `realParams`, optimizer
  /// state from small non-negative values, integer batch inputs (token ids,
  /// labels) in [0, 8) and attention masks as ones with one hidden key.
  std::vector<std::vector<Array>> train(ModuleOp module, int steps,
                                        bool promote, bool realParams = false) {
    auto func = module.lookupSymbol<func::FuncOp>("train_step");
    std::vector<Array> params;
    if (realParams)
      params = paramValues(module, func);
    std::vector<Array> inputs;
    unsigned stepIndex = 0;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto type = llvm::cast<RankedTensorType>(func.getArgument(i).getType());
      auto name = func.getArgAttrOfType<StringAttr>(i, "tcc.name");
      if (func.getArgAttr(i, tcc::kStepAttr)) {
        stepIndex = i;
        inputs.push_back(i64({}, {0}));
      } else if (realParams && func.getArgAttr(i, tcc::kParamAttr)) {
        inputs.push_back(params[i]);
      } else if (type.getElementType().isInteger(64)) {
        std::vector<int64_t> v(type.getNumElements());
        bool mask = name && name.getValue().contains("mask");
        for (size_t e = 0; e < v.size(); ++e)
          v[e] = mask ? e + 1 != v.size() : (e * 7 + i) % 8;
        inputs.push_back(i64(type.getShape(), v));
      } else
        inputs.push_back(
            fill(type, i, bool(func.getArgAttr(i, "tcc.opt_state"))));
    }
    std::vector<std::vector<Array>> all;
    tcc::interp::Options options;
    options.promoteToF64 = promote;
    for (int step = 0; step < steps; ++step) {
      std::vector<Array> results;
      std::string error;
      EXPECT_TRUE(tcc::interp::run(func, inputs, results, error, options))
          << error;
      if (results.size() != func.getNumResults())
        return all;
      // Results after the loss are the updated params and state, in the
      // order of the arguments that carry them; then the metrics, which
      // carry only their name (grad_norm with clipping).
      unsigned updates = results.size();
      while (updates > 1) {
        DictionaryAttr d = func.getResultAttrDict(updates - 1);
        if (!d || d.size() != 1 || !d.get("tcc.name"))
          break;
        --updates;
      }
      for (unsigned r = 1; r < updates; ++r) {
        EXPECT_EQ(func.getResultAttrDict(r), func.getArgAttrDict(r - 1));
        inputs[r - 1] = results[r];
      }
      inputs[stepIndex] = i64({}, {step + 1});
      all.push_back(std::move(results));
    }
    return all;
  }

  /// The initial value of each parameter argument of `func` (others left
  /// empty), read by the interpreter from the module's tcc.param ops.
  std::vector<Array> paramValues(ModuleOp module, func::FuncOp func) {
    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    SmallVector<Type> types;
    SmallVector<unsigned> indices;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (func.getArgAttr(i, tcc::kParamAttr)) {
        types.push_back(func.getArgument(i).getType());
        indices.push_back(i);
      }
    auto reader = func::FuncOp::create(b, func.getLoc(), "read_params",
                                       b.getFunctionType({}, types));
    b.setInsertionPointToEnd(reader.addEntryBlock());
    SmallVector<Value> values;
    for (unsigned i : indices) {
      auto name = func.getArgAttrOfType<StringAttr>(i, tcc::kParamAttr);
      values.push_back(tcc::GetParamOp::create(
          b, func.getLoc(), func.getArgument(i).getType(),
          FlatSymbolRefAttr::get(name)));
    }
    func::ReturnOp::create(b, func.getLoc(), values);
    std::vector<Array> results;
    std::string error;
    EXPECT_TRUE(tcc::interp::run(reader, {}, results, error)) << error;
    reader.erase();
    std::vector<Array> params(func.getNumArguments());
    for (auto [k, i] : llvm::enumerate(indices))
      if (k < results.size())
        params[i] = results[k];
    return params;
  }

  /// Checks that `fused` (a copy of `unfused` after tcc-fuse) trains
  /// bit-identically for `steps` steps, in f32 and promoted to f64.
  void expectSameTraining(ModuleOp unfused, ModuleOp fused, int steps,
                          bool realParams) {
    for (bool promote : {false, true}) {
      std::vector<std::vector<Array>> want =
          train(unfused, steps, promote, realParams);
      std::vector<std::vector<Array>> got =
          train(fused, steps, promote, realParams);
      ASSERT_EQ(want.size(), size_t(steps));
      ASSERT_EQ(got.size(), want.size());
      for (size_t s = 0; s < want.size(); ++s) {
        ASSERT_EQ(got[s].size(), want[s].size());
        EXPECT_TRUE(std::isfinite(valuesAsDouble(want[s][0])[0]));
        for (size_t r = 0; r < want[s].size(); ++r) {
          EXPECT_EQ(got[s][r].dtype, want[s][r].dtype);
          EXPECT_EQ(got[s][r].shape, want[s][r].shape);
          EXPECT_TRUE(got[s][r].bytes == want[s][r].bytes)
              << "step " << s << " result '" << want[s][r].name
              << "' differs (f64: " << promote << ")";
        }
      }
    }
  }

  /// Checks that `got` (a copy of `want` after tcc-fuse-gemm-epilogue)
  /// trains like `want` up to rounding: every result of `steps` steps within
  /// atol + rtol * |want|, in f32 and promoted to f64. Returns the largest
  /// error relative to that bound.
  double expectCloseTraining(ModuleOp want, ModuleOp got, int steps,
                             bool realParams, double rtol, double atol) {
    double worst = 0;
    for (bool promote : {false, true}) {
      std::vector<std::vector<Array>> a = train(want, steps, promote, realParams);
      std::vector<std::vector<Array>> b = train(got, steps, promote, realParams);
      EXPECT_EQ(a.size(), size_t(steps));
      if (a.size() != b.size())
        return INFINITY;
      for (size_t s = 0; s < a.size(); ++s) {
        if (a[s].size() != b[s].size())
          return INFINITY;
        for (size_t r = 0; r < a[s].size(); ++r) {
          std::vector<double> x = valuesAsDouble(a[s][r]),
                              y = valuesAsDouble(b[s][r]);
          EXPECT_EQ(x.size(), y.size());
          int bad = 0;
          for (size_t e = 0; e < x.size() && e < y.size(); ++e) {
            double ratio =
                std::fabs(x[e] - y[e]) / (atol + rtol * std::fabs(x[e]));
            worst = std::max(worst, ratio);
            bad += !(ratio <= 1);
          }
          EXPECT_EQ(bad, 0) << "step " << s << " result '" << a[s][r].name
                            << "' differs beyond rounding (f64: " << promote
                            << ")";
        }
      }
    }
    return worst;
  }

  MLIRContext context;
};

TEST_F(FuseTest, TrainStepIsBitIdenticalAfterFusion) {
  OwningOpRef<ModuleOp> unfused = buildStep();
  ASSERT_TRUE(unfused);
  OwningOpRef<ModuleOp> fused = buildStep();
  ASSERT_TRUE(fused);
  PassManager pm(&context);
  pm.addPass(tcc::createFuse());
  ASSERT_TRUE(succeeded(pm.run(*fused)));
  ASSERT_TRUE(succeeded(verify(*fused)));

  auto step = fused->lookupSymbol<func::FuncOp>("train_step");
  int kernels = 0;
  step.walk([&](tcc::exec::FusionOp) { ++kernels; });
  EXPECT_GT(kernels, 5);
  // Every op is a kernel, a library call or a non-launching view.
  for (Operation &op : step.getBody().front())
    EXPECT_TRUE(allowedAfterFusion(op))
        << op.getName().getStringRef().str() << " outside exec.fusion";
  // The gradient-clipping norm: the small gradients' squares concatenated
  // in groups (b1 alone, padded with zeros; b2 with the layer norm's scale
  // and bias: one kernel a group; W1's and W2's squares are their own
  // kernels), the groups summed by columns, and one kernel for the sum of
  // the partial sums and its square root.
  int squares = 0, normKernels = 0;
  step.walk([&](tcc::exec::FusionOp fusion) {
    Operation *structured = fusion.getStructuredOp();
    if (structured && llvm::isa<tcc::ConcatOp>(structured))
      for (Operation &op : fusion.getBody().front())
        if (llvm::isa<tcc::MulOp>(op) && op.getOperand(0) == op.getOperand(1))
          ++squares;
    if (structured && llvm::isa<tcc::ReduceSumOp>(structured) &&
        llvm::count_if(fusion.getBody().front(), [](Operation &op) {
          return llvm::isa<tcc::SqrtOp>(op);
        }) == 1)
      ++normKernels;
  });
  EXPECT_EQ(squares, 4);
  EXPECT_EQ(normKernels, 1);

  expectSameTraining(*unfused, *fused, 3, /*realParams=*/false);
}


struct ModelCase {
  const char *name, *model, *flags;
};

class FuseModelTest : public FuseTest,
                      public ::testing::WithParamInterface<ModelCase> {};

// The models' AdamW steps with gradient clipping (and, for GPT, two
// accumulated micro-batches: slices of the batch, concats), fused and
// unfused, train bit-identically for two steps from their real weights.
TEST_P(FuseModelTest, TrainStepIsBitIdenticalAfterFusion) {
  ModelCase param = GetParam();
  if (!haveDriver())
    GTEST_SKIP() << binDir() << "/tcc is not built";
  std::string step, error;
  // The stages too: the step before tcc-fuse-layer-norm-grad (the last
  // training stage, which --emit=mlir includes) is checked against it.
  std::string stages = tempPath("fuse_stages_" + std::string(param.name),
                                param.model);
  ASSERT_TRUE(buildModelStep("fuse_" + std::string(param.name), param.model,
                             std::string(param.flags) +
                                 " --optimizer adamw:lr=1e-3 --grad-clip 1.0"
                                 " --dump-dir '" + stages + "'",
                             step, error))
      << error;
  std::vector<uint8_t> text = readFile(step);
  std::string source(text.begin(), text.end());
  OwningOpRef<ModuleOp> unfused = parseSourceString<ModuleOp>(source, &context);
  OwningOpRef<ModuleOp> fused = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(unfused && fused);
  PassManager pm(&context);
  pm.addPass(tcc::createFuse());
  ASSERT_TRUE(succeeded(pm.run(*fused)));
  ASSERT_TRUE(succeeded(verify(*fused)));
  for (auto func : fused->getOps<func::FuncOp>())
    for (Operation &op : func.getBody().front())
      EXPECT_TRUE(allowedAfterFusion(op))
          << "@" << func.getSymName().str() << ": "
          << op.getName().getStringRef().str() << " outside exec.fusion";

  expectSameTraining(*unfused, *fused, 2, /*realParams=*/true);

  // tcc-fuse-layer-norm-grad adds the residual gradient in the layer norm
  // gradient's double arithmetic (one rounding instead of two) and sums
  // the result there: the step trains as the one before the fold to
  // rounding. Every model here has a layer norm whose input gradient is a
  // Linear's output gradient, so each folds at least one sum.
  std::vector<uint8_t> beforeText =
      readFile(stages + "/03-build-train-step.mlir");
  ASSERT_FALSE(beforeText.empty()) << stages << ": no 03-build-train-step.mlir";
  OwningOpRef<ModuleOp> beforeFold = parseSourceString<ModuleOp>(
      std::string(beforeText.begin(), beforeText.end()), &context);
  ASSERT_TRUE(beforeFold);
  int folds = 0;
  unfused->walk([&](tcc::LayerNormGradOp op) {
    folds += bool(op.getResidualGrad()) + bool(op.getInputGradSum());
  });
  EXPECT_GT(folds, 0) << "no layer_norm_grad takes a residual or a sum";
  double folded = expectCloseTraining(*beforeFold, *unfused, 2,
                                      /*realParams=*/true, 1e-5, 1e-7);
  std::printf("%s: layer norm gradient folds vs before, worst error / "
              "bound: %.3g\n",
              param.name, folded);

  // The artifact's pipeline folds bias and residual adds into GEMMs first
  // (the MLP's ONNX Gemms come with their bias). That rounds each sum once
  // instead of twice, so it is compared with a tolerance; tcc-fuse after
  // it is again bit-exact.
  OwningOpRef<ModuleOp> epilogue =
      parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(epilogue);
  PassManager gemm(&context);
  gemm.addNestedPass<func::FuncOp>(tcc::createFuseGemmEpilogue());
  ASSERT_TRUE(succeeded(gemm.run(*epilogue)));
  ASSERT_TRUE(succeeded(verify(*epilogue)));
  int gemms = 0;
  epilogue->walk(
      [&](tcc::GemmOp op) { gemms += op.getC() || op.getBias(); });
  EXPECT_GT(gemms, 0) << "no GEMM adds a bias or C";
  OwningOpRef<ModuleOp> both = epilogue->clone();
  PassManager fuse(&context);
  fuse.addPass(tcc::createFuse());
  ASSERT_TRUE(succeeded(fuse.run(*both)));
  ASSERT_TRUE(succeeded(verify(*both)));
  double worst = expectCloseTraining(*unfused, *epilogue, 2,
                                     /*realParams=*/true, 1e-5, 1e-7);
  std::printf("%s: gemm epilogue vs unfused, worst error / bound: %.3g\n",
              param.name, worst);
  expectSameTraining(*epilogue, *both, 2, /*realParams=*/true);

  // Attention in token rows (tcc-fold-attention-layout) reads and writes
  // the same values at other addresses: the step trains bit-identically,
  // and again with tcc-fuse after it. The GPT and BERT fold every
  // attention and attention gradient.
  OwningOpRef<ModuleOp> rows = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(rows);
  PassManager fold(&context);
  fold.addNestedPass<func::FuncOp>(tcc::createFoldAttentionLayout());
  ASSERT_TRUE(succeeded(fold.run(*rows)));
  ASSERT_TRUE(succeeded(verify(*rows)));
  int attention = 0, tokenRows = 0;
  rows->walk([&](Operation *op) {
    if (auto a = llvm::dyn_cast<tcc::AttentionOp>(op))
      ++attention, tokenRows += a.getHeads() != 0;
    if (auto g = llvm::dyn_cast<tcc::AttentionGradOp>(op))
      ++attention, tokenRows += g.getHeads() != 0;
  });
  EXPECT_EQ(tokenRows, attention);
  if (std::string(param.model) != "mlp")
    EXPECT_GT(tokenRows, 0);
  expectSameTraining(*unfused, *rows, 2, /*realParams=*/true);
  OwningOpRef<ModuleOp> rowsFused = rows->clone();
  PassManager fuseRows(&context);
  fuseRows.addPass(tcc::createFuse());
  ASSERT_TRUE(succeeded(fuseRows.run(*rowsFused)));
  expectSameTraining(*rows, *rowsFused, 2, /*realParams=*/true);
}

INSTANTIATE_TEST_SUITE_P(
    Fuse, FuseModelTest,
    ::testing::Values(
        ModelCase{"gpt", "gpt", "--loss 'cross_entropy(logits,labels)'"},
        ModelCase{"gpt_accum2", "gpt",
                  "--loss 'cross_entropy(logits,labels)' --accum 2"},
        ModelCase{"mlp", "mlp", "--loss 'mse(y,target)'"},
        ModelCase{"bert", "bert", "--loss 'cross_entropy(logits,labels)'"}),
    [](const ::testing::TestParamInfo<ModelCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
