// `tcc train`: `tcc compile -o` and `tcc run` in one command. The training
// step is compiled to an artifact (kept with --artifact, else in a temporary
// directory) and trained by the runtime through the same loop as `tcc run`.
// --reference trains in the reference interpreter instead: exact (with
// --f64, float64), slow, the oracle the compiled step is tested against.
// The loop's flags (--data, --steps, checkpoints, eval, log) are parsed by
// the runtime's own parser (runtime/run/cli.h) before LLVM's, so `tcc run`,
// `tcc-run` and `tcc train` accept them identically.
#include "Commands.h"
#include "Compile.h"
#include "Model.h"
#include "TrainFlags.h"

#include "tcc/Artifact/Artifact.h"
#include "tcc/Interp/ReferenceTrainer.h"

#include "run/cli.h"
#include "run/session_engine.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <iostream>

namespace cl = llvm::cl;
using namespace mlir;

namespace tcc::driver {

// cl::SubCommand keeps a StringRef to its description: the text must
// outlive it.
static const std::string trainDescription =
    "Compile a model's training step and train it (tcc compile -o + tcc "
    "run); --reference trains in the interpreter. The loop's flags are "
    "those of `tcc run`:\n" +
    std::string(run::runFlagsHelp());
static cl::SubCommand trainCmd("train", trainDescription);
static ModelFlags modelFlags(trainCmd);
static TrainFlags trainFlags(trainCmd);
static BuildFlags buildFlags(trainCmd);
static cl::opt<bool> reference(
    "reference",
    cl::desc("Train in the reference interpreter (exact, slow) instead of "
             "the compiled runtime"),
    cl::sub(trainCmd), cl::cat(flagCategory()));
static cl::opt<bool>
    f64("f64",
        cl::desc("With --reference: compute in float64, parameters and "
                 "optimizer state (and checkpoints) included"),
        cl::sub(trainCmd), cl::cat(flagCategory()));
static cl::opt<std::string> artifactPath(
    "artifact", cl::value_desc("OUT.tcc"),
    cl::desc("Keep the compiled artifact here (default: a temporary "
             "directory, removed after the run)"),
    cl::sub(trainCmd), cl::cat(flagCategory()));
static cl::opt<std::string>
    backend("backend", cl::value_desc("name"), cl::init("cpu"),
            cl::desc("Runtime backend: cpu or cuda"), cl::sub(trainCmd),
            cl::cat(flagCategory()));

run::RunOptions &trainRunOptions() {
  static run::RunOptions options;
  return options;
}

/// A temporary directory removed (with what is in it) when this goes.
struct TempDir {
  std::string path;
  ~TempDir() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};

int runTrain() {
  run::RunOptions &options = trainRunOptions();
  std::string error;
  if (!run::checkRunOptions(options, "train", error))
    return fail(error);
  if (f64 && !reference)
    return fail("train: --f64 needs --reference (the compiled runtime "
                "computes in float32)");
  if (reference && !artifactPath.empty())
    return fail("train: --artifact and --reference exclude each other (the "
                "interpreter compiles nothing)");
  MLIRContext context;
  CommandErrors errors(context, modelFlags.model);
  FailureOr<TrainConfig> config =
      trainFlags.toConfig(UnknownLoc::get(&context));
  if (failed(config))
    return errors.report();
  // --pack-documents EOT_ID (a run flag, read before the compile flags)
  // packs the token file's documents and compiles the step for them.
  if (options.packDocuments >= 0)
    config->packDocuments = true;

  if (reference) {
    if (const cl::Option *o = buildFlags.firstGiven())
      return fail("train: --" + o->ArgStr +
                  " is for the compiled step; --reference compiles nothing");
    OwningOpRef<ModuleOp> module = loadModel(context, modelFlags);
    if (!module)
      return errors.report();
    if (failed(runStages(*module, trainStages(*config))))
      return errors.report("train: ");
    interp::ReferenceTrainer trainer;
    interp::Options interpOptions;
    interpOptions.promoteToF64 = f64;
    if (!trainer.init(*module, *config, interpOptions, error))
      return fail(error);
    options.logDoubles = f64;
    return run::runTraining(trainer, options, std::cout, std::cerr);
  }

  TempDir temp;
  std::string path = artifactPath;
  if (path.empty()) {
    llvm::SmallString<128> dir;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("tcc-train", dir))
      return fail("train: cannot create a temporary directory: " +
                  ec.message());
    temp.path = dir.str().str();
    path = temp.path + "/model.tcc";
  }
  CompileJob job;
  job.prefix = "train: ";
  job.kind = "artifact";
  job.output = path;
  job.config = *config;
  // The run needs the host kernels only, unless it runs on the GPU;
  // --artifact keeps a complete one (and prints its summary).
  job.cuda = !artifactPath.empty() || backend == "cuda";
  job.printSummary = !artifactPath.empty();
  // The loop's --progress (auto, lines, none) covers the compile too.
  Progress progress(options.progress);
  if (int rc =
          compileModel(context, errors, modelFlags, buildFlags, job, progress))
    return rc;
  std::unique_ptr<run::SessionEngine> engine =
      run::SessionEngine::open(path, backend, /*device=*/0, error);
  if (!engine)
    return fail(error);
  return run::runTraining(*engine, options, std::cout, std::cerr);
}

} // namespace tcc::driver
