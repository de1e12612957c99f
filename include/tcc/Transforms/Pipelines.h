//===- Pipelines.h - tcc's stages, as registered pipelines ------*- C++ -*-===//
//
// The one list of the stages a model goes through after import:
//
//   tcc-train-pipeline   [pack-documents], lower-precision, build-train-step
//   tcc-lower-pipeline   drop-unreachable, pack-tokens, fuse-gemm-epilogue, fuse,
//                        canonicalize, cse, plan-memory
//
// `tcc compile` runs these stage by stage (so that --dump-dir and --report
// see the module between stages), lib/Artifact lowers every artifact with
// them, and tcc-opt runs them as the registered pipelines
// `--tcc-train-pipeline="loss=..."` and `--tcc-lower-pipeline`.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TRANSFORMS_PIPELINES_H
#define TCC_TRANSFORMS_PIPELINES_H

#include "tcc/Transforms/TrainStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>
#include <string>

namespace tcc {

/// One stage: a name (for reports and IR dump files), the pass it runs as
/// tcc-opt spells it, and how to add it to a module-level pass manager.
struct PipelineStage {
  std::string name;
  std::string pass;
  std::function<void(mlir::OpPassManager &)> add;
};

/// The forward model's stages, before anything is differentiated:
/// lower-precision (tcc-lower-precision under `precision` on every function
/// of the forward model; nothing changes at fp32), then merge-projections
/// (tcc-merge-projections: an attention's separate q/k/v projections as
/// one GEMM).
llvm::SmallVector<PipelineStage>
forwardStages(const PrecisionPolicy &precision);

/// tcc-train-pipeline: pack-documents (tcc-pack-documents, with
/// config.packDocuments), forwardStages(config.precision), then
/// build-train-step (tcc-build-train-step with `config`).
llvm::SmallVector<PipelineStage> trainStages(const TrainConfig &config);

/// The session memory budget of `tcc compile --memory-budget`: `budget`
/// bytes for the whole session, `fixedBytes` of them outside the arena
/// (parameters, working copies, optimizer state, inputs, constants).
struct MemoryBudget {
  int64_t budget = 0;
  int64_t fixedBytes = 0;
};

/// rematerialize: tcc-rematerialize with `budget` on a training module
/// (after trainStages, before lowerStages).
PipelineStage rematerializeStage(const MemoryBudget &budget);

/// What tcc-lower-pipeline lowers: the functions an artifact runs (with what
/// they call) and how the memory planner places buffers.
struct LowerConfig {
  llvm::SmallVector<std::string, 2> roots;
  std::string order = "best"; ///< tcc-plan-memory's `order`
};

/// The roots of a training artifact (@train_step, @eval_step) and of an
/// inference artifact (@forward), in plan order.
llvm::ArrayRef<llvm::StringRef> trainingRoots();
llvm::ArrayRef<llvm::StringRef> inferenceRoots();

/// tcc-lower-pipeline: drop-unreachable, pack-tokens, fuse-gemm-epilogue, fuse,
/// canonicalize, cse, plan-memory.
llvm::SmallVector<PipelineStage> lowerStages(const LowerConfig &config);

/// Called after each stage with the module as the stage left it; failing
/// (after its own error diagnostic) stops the run.
using AfterStage =
    llvm::function_ref<mlir::LogicalResult(const PipelineStage &stage)>;

/// Runs `stages` in order on `module`, each in a pass manager of its own so
/// that `afterStage` (when given) sees the module between stages; with
/// `timing` every pass is timed in it (MLIR's pass timing). A failing pass
/// reports through diagnostics.
mlir::LogicalResult runStages(mlir::ModuleOp module,
                              llvm::ArrayRef<PipelineStage> stages,
                              AfterStage afterStage = nullptr,
                              mlir::TimingScope *timing = nullptr);

/// Registers --tcc-train-pipeline and --tcc-lower-pipeline (tcc-opt).
void registerTccPipelines();

} // namespace tcc

#endif // TCC_TRANSFORMS_PIPELINES_H
