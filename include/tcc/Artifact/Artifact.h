//===- Artifact.h - Writing the OUT.tcc artifact ----------------*- C++ -*-===//
//
// The last stage of `tcc compile`: the training module (@train_step and
// @eval_step, as tcc::buildTrainStep builds them) — or, for an inference
// artifact, the model's @forward — is lowered (tcc::lowerStages: tcc-fuse,
// canonicalize, CSE, tcc-plan-memory, ...) and written as the directory that
// the runtime loads: manifest.json, plan.json, weights, constants and the
// compiled kernels. docs/artifact.md is the contract.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_ARTIFACT_ARTIFACT_H
#define TCC_ARTIFACT_ARTIFACT_H

#include "tcc/Codegen/Toolchain.h"
#include "tcc/Transforms/Pipelines.h"
#include "tcc/Transforms/TrainStep.h"

#include "plan/plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <string>

namespace tcc::artifact {

/// The format version written into manifest.json and plan.json; the
/// runtime's TCC_ARTIFACT_VERSION (runtime/api/tcc_runtime.h).
using rt::kArtifactVersion;

/// What an artifact runs (manifest "kind", runtime/plan/plan.h): a training
/// step (@train_step and @eval_step, with optimizer state and a training
/// configuration) or one inference function (@forward: inputs in, named
/// outputs out).
using rt::Kind;

struct ArtifactOptions {
  /// The model file as given on the command line; the manifest keeps its
  /// file name only, so an artifact does not depend on where it was built.
  std::string source;
  /// Build kernels/kernels.fatbin when nvcc was found at configure time.
  bool cudaKernels = true;
  /// How the kernels are built: the fatbin's architectures (--cuda-arch),
  /// compiler processes at once (-j), the kernel cache's directory.
  codegen::KernelBuildOptions kernelBuild;
  /// When set, the writer's stages (lowering pass by pass, kernel source,
  /// each compiler run, the plan and weight files) are timed in it.
  mlir::TimingScope *timing = nullptr;
  /// When set, sees the writer's lowered module after each lowering stage
  /// (what `tcc compile` shows as its progress).
  std::function<mlir::LogicalResult(const PipelineStage &)> afterStage;
  /// Prepended to every kernel's name ("c7_": exec.fusion "fused_0" becomes
  /// symbol tcc_c7_fused_0), so that the kernels of several artifacts can
  /// be compiled together into one shared object without clashing.
  std::string kernelPrefix;
  /// A shared object that already holds this artifact's kernels — built
  /// from kernelSource() with the same kernelPrefix, possibly together with
  /// other artifacts' kernels — hard-linked (or copied) as kernels/host.so
  /// instead of compiling kernels/kernels.cc. The runtime checks that it
  /// exports every kernel of the plan when it loads the artifact.
  std::string prebuiltHostKernels;
  /// fsync every file and directory before the artifact is renamed into
  /// place (and the rename after), so that it survives a crash. Scratch
  /// artifacts that a test writes and reads at once may skip it (the
  /// safetensors files are synced by data::writeSafetensors regardless).
  bool sync = true;
  /// Under --memory-budget: train_step's live arena timeline without the
  /// budget (SessionBytes::timeline), for the manifest's memory_budget.
  std::vector<int64_t> unbudgetedTimeline;
};

/// What one step function of the artifact does.
struct FunctionSummary {
  std::string name;
  int64_t kernels = 0; ///< "kernel" steps (generated kernel launches)
  int64_t calls = 0;   ///< "call" steps (library calls)
  int64_t collectives = 0; ///< "collective" steps
  int64_t arenaBytes = 0;
};

/// What was written, for the one-line summary `tcc compile` prints.
struct ArtifactSummary {
  Kind kind = Kind::Training;
  std::string path;
  int64_t kernels = 0; ///< generated kernels (exec.fusion ops)
  llvm::SmallVector<FunctionSummary, 2> functions;
  int64_t arenaBytes = 0; ///< the largest arena over the functions
  int64_t paramBytes = 0, optStateBytes = 0, constantBytes = 0;
  /// bf16/f16 working copies of parameters (--precision bf16|fp16).
  int64_t workingBytes = 0;
  bool cudaKernels = false; ///< kernels.fatbin was written
  std::string fingerprint;  ///< empty for an inference artifact
  /// Distinct kernels compiled: fusions that generate the same code share
  /// one (codegen::shareIdenticalKernels).
  int64_t distinctKernels = 0;
  /// What the kernel build ran and took from the cache (nothing of it
  /// when host.so was prebuilt and CUDA was off).
  codegen::KernelBuildReport kernelBuild;
};

/// The bytes a session of a training artifact allocates, by purpose, as
/// the runtime sums them (tcc_memory, `tcc inspect`).
struct SessionBytes {
  int64_t arena = 0; ///< the largest arena over the functions
  int64_t params = 0, working = 0, optState = 0, inputs = 0, constants = 0;
  /// train_step's live arena bytes in rt::kTimelineColumns columns (what
  /// the manifest's memory_budget keeps of the unbudgeted plan).
  std::vector<int64_t> timeline;
  int64_t outsideArena() const {
    return params + working + optState + inputs + constants;
  }
  int64_t total() const { return arena + outsideArena(); }
};

/// The session bytes of the artifact `module` (a training module, after
/// tcc-build-train-step) would be written as: lowers a copy and reads its
/// plan, as the writer does.
mlir::FailureOr<SessionBytes> planSession(mlir::ModuleOp module);

/// "wrote OUT.tcc: 7 kernels (host), train_step 7 launches + 9 library
/// calls, eval_step ..., arena N bytes, params N bytes, ..."; for an
/// inference artifact "wrote OUT.tcc (inference): 2 kernels (host), forward
/// 2 launches + 1 library calls, arena N bytes, params N bytes".
std::string formatSummary(const ArtifactSummary &summary);

/// Whether an artifact may be written at `path`: its parent directory
/// exists and `path` is absent or an earlier artifact (a directory whose
/// manifest.json says "tcc-artifact"), which is replaced only once the new
/// one is complete. Anything else (a file, another directory) is refused
/// with an error at `loc` that names the path.
mlir::LogicalResult checkArtifactPath(mlir::Location loc, llvm::StringRef path);

/// Lowers a training module in place for execution with tcc::lowerStages
/// (what tcc-lower-pipeline runs): drops every function but @train_step and
/// @eval_step (and what they call), fuses, wraps library calls, plans
/// memory (which the exec dialect verifies). `afterStage`, when given, sees
/// the module after each stage (`tcc compile --dump-dir`, `--report`); with
/// `timing`, each pass is timed in it (MLIR's pass timing). An op the
/// runtime cannot run is an error at that op.
mlir::LogicalResult lowerTrainModule(mlir::ModuleOp module,
                                     AfterStage afterStage = nullptr,
                                     mlir::TimingScope *timing = nullptr);

/// The same for an inference module: keeps @forward (and what it calls)
/// only and lowers it with the same stages
/// (`tcc-lower-pipeline=kind=inference`).
mlir::LogicalResult lowerInferenceModule(mlir::ModuleOp module,
                                         AfterStage afterStage = nullptr,
                                         mlir::TimingScope *timing = nullptr);

/// Lowers a copy of `module` (which is not changed) and writes the artifact
/// directory `path` (docs/artifact.md). Everything is written into a
/// temporary sibling directory that replaces `path` only when complete: on
/// any error nothing is left behind and an existing artifact at `path` is
/// unchanged. `summary` (may be null) receives what was written. What the
/// runtime cannot run is an error at the op at fault; a file that cannot be
/// written, or a kernel that does not compile, an error (at an unknown
/// location) that names the file or the compiler run.
mlir::LogicalResult writeArtifact(mlir::ModuleOp module,
                                  const TrainConfig &config,
                                  const ArtifactOptions &options,
                                  llvm::StringRef path,
                                  ArtifactSummary *summary);

/// The same for an inference artifact (manifest "kind": "inference"): the
/// plan's one function is @forward of `module` — its arguments are the
/// inputs (by tcc.name), its results the outputs (role "output", by
/// tcc.name); parameters are its tcc.param initializers. No optimizer state
/// and no training configuration.
mlir::LogicalResult writeInferenceArtifact(mlir::ModuleOp module,
                                           const ArtifactOptions &options,
                                           llvm::StringRef path,
                                           ArtifactSummary *summary);

/// The kernels/kernels.cc that writeArtifact (`kind` Training) or
/// writeInferenceArtifact would write for `module` with `options`, after
/// the same lowering and checks; nothing is written. Every source includes
/// only kernels/tcc_kernel.h (include-guarded), so the sources of several
/// artifacts with distinct kernelPrefix concatenate into one translation
/// unit for compileHostKernels — one compiler run for many artifacts.
mlir::FailureOr<std::string> kernelSource(mlir::ModuleOp module, Kind kind,
                                          const ArtifactOptions &options);

/// Compiles a kernel source (or several concatenated) with the host C++
/// compiler into the shared object `soPath`, as the writer builds
/// kernels/host.so. A failure is an error at `loc` holding the compiler's
/// output.
mlir::LogicalResult compileHostKernels(mlir::Location loc,
                                       const std::string &source,
                                       const std::string &soPath);

} // namespace tcc::artifact

#endif // TCC_ARTIFACT_ARTIFACT_H
