// The training flags (--loss, --optimizer, --grad-clip, --grad-norm,
// --lr-schedule, --accum, --freeze, --no-decay, --precision, --loss-scale,
// --data-parallel...), shared by every command that builds a training step
// (`tcc compile`, `tcc train`).
#ifndef TCC_TOOLS_TCC_TRAINFLAGS_H
#define TCC_TOOLS_TCC_TRAINFLAGS_H

#include "tcc/Transforms/TrainStep.h"

#include "mlir/IR/Location.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace tcc::driver {

struct TrainFlags {
  explicit TrainFlags(llvm::cl::SubCommand &sub);
  llvm::cl::opt<std::string> loss;
  llvm::cl::opt<std::string> optimizer;
  llvm::cl::opt<double> gradClip;
  llvm::cl::opt<bool> gradNorm;
  llvm::cl::opt<std::string> lrSchedule;
  llvm::cl::opt<int> accum;
  llvm::cl::opt<std::string> freeze;
  llvm::cl::opt<std::string> noDecay;
  llvm::cl::opt<std::string> precision;
  llvm::cl::opt<std::string> precisionPolicy;
  llvm::cl::opt<std::string> lossScale;
  llvm::cl::opt<double> lossScaleInit;
  llvm::cl::opt<int64_t> lossScaleGrowthInterval;
  llvm::cl::opt<bool> dataParallel;
  llvm::cl::opt<double> bucketSize;
  llvm::cl::opt<bool> packDocuments;

  /// Whether a flag that only a training step uses was given (--precision
  /// and --precision-policy also apply to an inference artifact).
  bool anyTrainingOnly() const;
  /// --precision and --precision-policy, op kinds checked against the tcc
  /// dialect (loaded into loc's context).
  mlir::FailureOr<PrecisionPolicy> toPrecision(mlir::Location loc) const;

  /// Parses and checks the flags into a config. A bad or missing value is an
  /// error diagnostic at `loc` naming the flag (`--loss '...': ...`).
  mlir::FailureOr<TrainConfig> toConfig(mlir::Location loc) const;
};

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_TRAINFLAGS_H
