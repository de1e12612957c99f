// The lowering pipeline from the training module to the executable form the
// artifact describes, and the check that the runtime can run every op.
#include "tcc/Artifact/Artifact.h"

#include "Plan.h"

#include "exec/ExecOps.h"
#include "tcc/Transforms/MemoryPlan.h"
#include "tcc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace tcc::artifact {

/// The functions an artifact holds, in plan order: the steps of a training
/// artifact, the one function of an inference artifact.
static constexpr llvm::StringLiteral kStepFunctions[] = {"train_step",
                                                         "eval_step"};
static constexpr llvm::StringLiteral kInferenceFunctions[] = {"forward"};

ArrayRef<LoweringStage> loweringStages() {
  static const LoweringStage stages[] = {
      {"fuse-gemm-epilogue", "tcc-fuse-gemm-epilogue",
       [](OpPassManager &pm) {
         pm.addNestedPass<func::FuncOp>(createFuseGemmEpilogue());
       }},
      {"fuse", "tcc-fuse", [](OpPassManager &pm) { pm.addPass(createFuse()); }},
      {"canonicalize", "canonicalize",
       [](OpPassManager &pm) { pm.addPass(createCanonicalizerPass()); }},
      {"cse", "cse", [](OpPassManager &pm) { pm.addPass(createCSEPass()); }},
      {"plan-memory", "tcc-plan-memory",
       [](OpPassManager &pm) {
         pm.addNestedPass<func::FuncOp>(createPlanMemory());
       }},
  };
  return stages;
}

/// Drops every function `roots` do not reach and runs the pipeline.
static LogicalResult lowerModule(ModuleOp module,
                                 ArrayRef<llvm::StringLiteral> roots,
                                 std::string &error, TimingScope *timing) {
  MLIRContext *context = module.getContext();
  context->getOrLoadDialect<exec::ExecDialect>();
  context->getOrLoadDialect<func::FuncDialect>();

  // Anything the roots do not call (in a training module @forward) is not
  // part of the artifact: no kernels for it, and no reason to reject its ops.
  llvm::StringSet<> reachable;
  SmallVector<Operation *> work;
  for (StringRef name : roots)
    if (Operation *f = module.lookupSymbol(name)) {
      reachable.insert(name);
      work.push_back(f);
    }
  while (!work.empty()) {
    Operation *f = work.pop_back_val();
    if (auto uses = SymbolTable::getSymbolUses(f))
      for (const SymbolTable::SymbolUse &use : *uses) {
        StringRef callee = use.getSymbolRef().getRootReference().getValue();
        if (auto g = module.lookupSymbol<func::FuncOp>(callee))
          if (reachable.insert(callee).second)
            work.push_back(g);
      }
  }
  for (func::FuncOp f :
       llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (!reachable.contains(f.getSymName()))
      f.erase();

  std::string firstError;
  ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
      firstError = describeLoc(diag.getLocation()) + ": " + diag.str();
    return success();
  });
  PassManager pm(context);
  for (const LoweringStage &stage : loweringStages())
    stage.add(pm);
  if (timing)
    pm.enableTiming(*timing);
  if (failed(pm.run(module))) {
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
                               TimingScope *timing) {
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  if (!train || train.isExternal()) {
    error = "the module has no @train_step (build it with tcc compile or "
            "--tcc-build-train-step)";
    return failure();
  }
  return lowerModule(module, kStepFunctions, error, timing);
}

LogicalResult lowerInferenceModule(ModuleOp module, std::string &error,
                                   TimingScope *timing) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal()) {
    error = "the module has no @forward";
    return failure();
  }
  return lowerModule(module, kInferenceFunctions, error, timing);
}

LogicalResult checkExecutable(ModuleOp lowered, std::string &error) {
  SmallVector<StringRef, 3> names(std::begin(kStepFunctions),
                                  std::end(kStepFunctions));
  // A training module's @forward is dropped by lowering; in an inference
  // module it is the function that runs.
  if (!lowered.lookupSymbol("train_step"))
    names.push_back(kInferenceFunctions[0]);
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
