// The training flags (--loss, --optimizer, --grad-clip, --lr-schedule,
// --accum, --freeze, --no-decay, --precision, --loss-scale...), shared by
// every command that builds a training step (`tcc compile`, `tcc train`).
#ifndef TCC_TOOLS_TCC_TRAINFLAGS_H
#define TCC_TOOLS_TCC_TRAINFLAGS_H

#include "tcc/Transforms/Pipelines.h"
#include "tcc/Transforms/TrainStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/CommandLine.h"

#include <functional>
#include <string>

namespace tcc::driver {

struct TrainFlags {
  explicit TrainFlags(llvm::cl::SubCommand &sub);
  llvm::cl::opt<std::string> loss;
  llvm::cl::opt<std::string> optimizer;
  llvm::cl::opt<double> gradClip;
  llvm::cl::opt<std::string> lrSchedule;
  llvm::cl::opt<int> accum;
  llvm::cl::opt<std::string> freeze;
  llvm::cl::opt<std::string> noDecay;
  llvm::cl::opt<std::string> precision;
  llvm::cl::opt<std::string> precisionPolicy;
  llvm::cl::opt<std::string> lossScale;
  llvm::cl::opt<double> lossScaleInit;
  llvm::cl::opt<int64_t> lossScaleGrowthInterval;

  /// Whether a flag that only a training step uses was given (--precision
  /// and --precision-policy also apply to an inference artifact).
  bool anyTrainingOnly() const;
  /// --precision and --precision-policy; false after printing one line.
  bool toPrecision(PrecisionPolicy &policy) const;

  /// Parses and checks the flags into `config`. On a bad or missing value
  /// prints one line naming the flag (`tcc: --loss '...': ...`) and returns
  /// false.
  bool toConfig(TrainConfig &config) const;
};

/// Runs `stages` (tcc::trainStages, tcc::forwardStages) on `module`. On
/// failure prints one line and returns false: what `afterStage` said, or the
/// first error diagnostic, prefixed with `where` of its location when given.
/// With `timing`, every pass is timed in it.
bool runStagesOrReport(
    mlir::ModuleOp module, llvm::ArrayRef<PipelineStage> stages,
    const std::function<std::string(mlir::Location)> &where = nullptr,
    AfterStage afterStage = nullptr, mlir::TimingScope *timing = nullptr);

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_TRAINFLAGS_H
