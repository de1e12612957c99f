// tcc-fuse must not change a single bit: a training step (MLP with GELU,
// residual, LayerNorm, MSE, AdamW, gradient clipping) runs in the reference
// interpreter unfused and fused for a few steps, and every loss, parameter
// and optimizer state comes out identical.
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
    std::string error;
    EXPECT_TRUE(tcc::parseLoss("mse(y,target)", config.loss, error)) << error;
    EXPECT_TRUE(tcc::parseOptimizer("adamw:lr=0.01,weight_decay=0.1",
                                    config.optimizer, error))
        << error;
    config.gradClip = 0.5;
    if (!module || failed(tcc::buildTrainStep(*module, config)) ||
        failed(verify(*module))) {
      ADD_FAILURE() << "building the step failed: " << diag;
      return nullptr;
    }
    return module;
  }

  /// Runs @train_step `steps` times from the same start, feeding parameters
  /// and optimizer state back; returns every step's results.
  std::vector<std::vector<Array>> train(ModuleOp module, int steps,
                                        bool promote) {
    auto func = module.lookupSymbol<func::FuncOp>("train_step");
    std::vector<Array> inputs;
    unsigned stepIndex = 0;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto type = llvm::cast<RankedTensorType>(func.getArgument(i).getType());
      if (func.getArgAttr(i, tcc::kStepAttr)) {
        stepIndex = i;
        inputs.push_back(i64({}, {0}));
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
      // order of the arguments that carry them.
      for (unsigned r = 1; r < results.size(); ++r) {
        EXPECT_EQ(func.getResultAttrDict(r), func.getArgAttrDict(r - 1));
        inputs[r - 1] = results[r];
      }
      inputs[stepIndex] = i64({}, {step + 1});
      all.push_back(std::move(results));
    }
    return all;
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
  // Nothing elementwise is left outside a kernel.
  step.walk([&](Operation *op) {
    if (tcc::exec::isFusibleOp(op))
      EXPECT_TRUE(op->getParentOfType<tcc::exec::FusionOp>())
          << op->getName().getStringRef().str() << " outside exec.fusion";
  });

  for (bool promote : {false, true}) {
    std::vector<std::vector<Array>> want = train(*unfused, 3, promote);
    std::vector<std::vector<Array>> got = train(*fused, 3, promote);
    ASSERT_EQ(want.size(), 3u);
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

} // namespace
