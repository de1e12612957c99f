// What `tcc compile` and `tcc train` share: the flags of how a model is
// built (--no-cuda, --cuda-arch, -j, --no-kernel-cache, --time, --report,
// --dump-dir, --memory-budget, --remat, --pad-skip) and the compile itself, from the model file to the artifact
// or IR, with its stage progress.
#ifndef TCC_TOOLS_TCC_COMPILE_H
#define TCC_TOOLS_TCC_COMPILE_H

#include "Model.h"
#include "Progress.h"

#include "tcc/Artifact/Artifact.h"
#include "tcc/Transforms/TrainStep.h"

#include "llvm/Support/CommandLine.h"

#include <string>

namespace tcc::driver {

struct BuildFlags {
  explicit BuildFlags(llvm::cl::SubCommand &sub);
  llvm::cl::opt<bool> noCuda;
  llvm::cl::opt<std::string> cudaArch;
  llvm::cl::opt<unsigned> jobs;
  llvm::cl::alias jobsShort;
  llvm::cl::opt<bool> noKernelCache;
  llvm::cl::opt<bool> time;
  llvm::cl::opt<std::string> report;
  llvm::cl::opt<std::string> dumpDir;
  llvm::cl::opt<std::string> memoryBudget;
  llvm::cl::opt<std::string> remat;
  llvm::cl::opt<std::string> padSkip;

  /// The first of these flags the command line gave, or null.
  const llvm::cl::Option *firstGiven() const;
};

/// One compile of a model.
struct CompileJob {
  /// "compile: " or "train: ", before the compile's own error messages.
  std::string prefix;
  /// artifact, mlir (the training step) or lowered.
  std::string kind;
  std::string output;
  /// The forward model (an inference artifact) instead of a training step.
  bool inference = false;
  TrainConfig config;
  /// Build kernels/kernels.fatbin (unless --no-cuda).
  bool cuda = true;
  /// Print the artifact's one-line summary (stdout).
  bool printSummary = true;
};

/// Imports `model`, builds the step and writes what `job` asks for, showing
/// `progress`. Returns the exit status, 1 after one error line.
int compileModel(mlir::MLIRContext &context, const CommandErrors &errors,
                 const ModelFlags &model, const BuildFlags &build,
                 const CompileJob &job, Progress &progress);

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_COMPILE_H
