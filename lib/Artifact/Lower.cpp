// Lowering a training or inference module to the executable form the
// artifact describes: the stages of tcc::lowerStages, as tcc-lower-pipeline
// runs them. tcc-lower-calls refuses any op the runtime cannot run, and the
// exec dialect verifies the memory plan.
#include "tcc/Artifact/Artifact.h"

#include "exec/ExecOps.h"
#include "exec/MemoryPlan.h"
#include "tcc/Transforms/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace tcc::artifact {

/// Runs tcc::lowerStages with `roots`.
static LogicalResult lowerModule(ModuleOp module, ArrayRef<StringRef> roots,
                                 AfterStage afterStage, TimingScope *timing) {
  MLIRContext *context = module.getContext();
  context->getOrLoadDialect<exec::ExecDialect>();
  context->getOrLoadDialect<func::FuncDialect>();
  LowerConfig config;
  config.roots.assign(roots.begin(), roots.end());
  return runStages(module, lowerStages(config), afterStage, timing);
}

LogicalResult lowerTrainModule(ModuleOp module, AfterStage afterStage,
                               TimingScope *timing) {
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  if (!train || train.isExternal())
    return module.emitError("the module has no @train_step (build it with tcc "
                            "compile or --tcc-build-train-step)");
  return lowerModule(module, trainingRoots(), afterStage, timing);
}

LogicalResult lowerInferenceModule(ModuleOp module, AfterStage afterStage,
                                   TimingScope *timing) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal())
    return module.emitError("the module has no @forward");
  return lowerModule(module, inferenceRoots(), afterStage, timing);
}

} // namespace tcc::artifact
