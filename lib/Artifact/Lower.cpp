// Lowering a training or inference module to the executable form the
// artifact describes: the stages of tcc::lowerStages, as tcc-lower-pipeline
// runs them. tcc-lower-calls refuses any op the runtime cannot run, and the
// exec dialect verifies the memory plan.
#include "tcc/Artifact/Artifact.h"

#include "Plan.h"

#include "exec/ExecOps.h"
#include "exec/MemoryPlan.h"
#include "tcc/Transforms/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace tcc::artifact {

/// Runs tcc::lowerStages with `roots`.
static LogicalResult lowerModule(ModuleOp module, ArrayRef<StringRef> roots,
                                 std::string &error, AfterStage afterStage,
                                 TimingScope *timing) {
  MLIRContext *context = module.getContext();
  context->getOrLoadDialect<exec::ExecDialect>();
  context->getOrLoadDialect<func::FuncDialect>();

  std::string firstError;
  ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
      firstError = describeLoc(diag.getLocation()) + ": " + diag.str();
    return success();
  });
  LowerConfig config;
  config.roots.assign(roots.begin(), roots.end());
  if (failed(runStages(module, lowerStages(config), afterStage, timing))) {
    error = "lowering failed: " +
            (firstError.empty() ? std::string("a pass failed") : firstError);
    return failure();
  }
  return success();
}

LogicalResult lowerTrainModule(ModuleOp module, std::string &error,
                               AfterStage afterStage, TimingScope *timing) {
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  if (!train || train.isExternal()) {
    error = "the module has no @train_step (build it with tcc compile or "
            "--tcc-build-train-step)";
    return failure();
  }
  return lowerModule(module, trainingRoots(), error, afterStage, timing);
}

LogicalResult lowerInferenceModule(ModuleOp module, std::string &error,
                                   AfterStage afterStage, TimingScope *timing) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal()) {
    error = "the module has no @forward";
    return failure();
  }
  return lowerModule(module, inferenceRoots(), error, afterStage, timing);
}

} // namespace tcc::artifact
