// Lowering a training or inference module to the executable form the
// artifact describes (the stages of tcc::lowerStages, as tcc-lower-pipeline
// runs them), and the check that the runtime can run every op.
#include "tcc/Artifact/Artifact.h"

#include "Plan.h"

#include "exec/ExecOps.h"
#include "tcc/Transforms/MemoryPlan.h"
#include "tcc/Transforms/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace tcc::artifact {

/// Runs tcc::lowerStages with `roots` and checks the memory plan.
static LogicalResult lowerModule(ModuleOp module, ArrayRef<StringRef> roots,
                                 std::string &error, AfterStage afterStage) {
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
  if (failed(runStages(module, lowerStages(config), error, afterStage))) {
    if (error.empty())
      error = "lowering failed: " +
              (firstError.empty() ? std::string("a pass failed") : firstError);
    return failure();
  }
  // tcc-plan-memory verifies its own result; check again here so a plan
  // that a later change breaks is never written.
  for (func::FuncOp f : module.getOps<func::FuncOp>())
    if (failed(verifyMemoryPlan(f))) {
      error = "the memory plan of @" + f.getSymName().str() +
              " is invalid: " + firstError;
      return failure();
    }
  return success();
}

LogicalResult lowerTrainModule(ModuleOp module, std::string &error,
                               AfterStage afterStage) {
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  if (!train || train.isExternal()) {
    error = "the module has no @train_step (build it with tcc compile or "
            "--tcc-build-train-step)";
    return failure();
  }
  return lowerModule(module, trainingRoots(), error, afterStage);
}

LogicalResult lowerInferenceModule(ModuleOp module, std::string &error,
                                   AfterStage afterStage) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal()) {
    error = "the module has no @forward";
    return failure();
  }
  return lowerModule(module, inferenceRoots(), error, afterStage);
}

LogicalResult checkExecutable(ModuleOp lowered, std::string &error) {
  SmallVector<StringRef, 3> names(trainingRoots());
  // A training module's @forward is dropped by lowering; in an inference
  // module it is the function that runs.
  if (!lowered.lookupSymbol("train_step"))
    llvm::append_range(names, inferenceRoots());
  for (StringRef name : names) {
    auto f = lowered.lookupSymbol<func::FuncOp>(name);
    if (!f)
      continue;
    for (Operation &op : f.getBody().getOps()) {
      if (llvm::isa<exec::FusionOp, ReshapeOp, ConstantOp, GetParamOp,
                    func::ReturnOp>(op) ||
          exec::isLibraryOp(&op))
        continue;
      error = "op '" + op.getName().getStringRef().str() + "' at " +
              describeLoc(op.getLoc()) + " (in @" + name.str() +
              ") has no kernel or library call in the runtime";
      return failure();
    }
  }
  return success();
}

} // namespace tcc::artifact
