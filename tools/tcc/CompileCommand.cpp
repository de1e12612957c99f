// `tcc compile`: a forward model plus loss and optimizer flags in, the
// training step out: the OUT.tcc artifact the runtime runs
// (docs/artifact.md), or for people and tests the training step as tcc IR
// (--emit=mlir) or the lowered IR the artifact is written from
// (--emit=lowered). Without any training flag the model itself is compiled:
// an inference artifact whose one function is @forward.
#include "Commands.h"
#include "Compile.h"
#include "TrainFlags.h"

#include "mlir/IR/MLIRContext.h"

namespace cl = llvm::cl;
using namespace mlir;

namespace tcc::driver {

static cl::SubCommand
    compileCmd("compile", "Build a model's training step: loss, gradients, "
                          "gradient clipping, lr schedule and optimizer "
                          "(without training flags: the model for inference)");
static ModelFlags modelFlags(compileCmd);
static TrainFlags trainFlags(compileCmd);
static cl::opt<std::string> emit(
    "emit", cl::value_desc("kind"),
    cl::desc("What to write: artifact (the OUT.tcc directory the runtime "
             "runs; the default for -o *.tcc), mlir (the training step as tcc "
             "IR: @train_step and @eval_step; the default for -o *.mlir), "
             "lowered (the IR the artifact is written from: fused kernels "
             "and the memory plan). Without training flags (--loss ...) "
             "artifact and lowered compile @forward for inference"),
    cl::sub(compileCmd), cl::cat(flagCategory()));
static cl::opt<std::string>
    output("o",
           cl::desc("Output: the artifact directory OUT.tcc, or the IR file "
                    "for --emit=mlir|lowered (default: stdout)"),
           cl::value_desc("file"), cl::init("-"), cl::sub(compileCmd),
           cl::cat(flagCategory()));
static BuildFlags buildFlags(compileCmd);
static cl::opt<std::string> progressMode(
    "progress", cl::value_desc("mode"), cl::init("auto"),
    cl::desc("Stage progress on stderr: auto (when stderr is a terminal), "
             "lines (always), none"),
    cl::sub(compileCmd), cl::cat(flagCategory()));

/// What to write: --emit, else what the -o name says.
static std::string emitKind() {
  if (!emit.empty())
    return emit;
  llvm::StringRef out = llvm::StringRef(output).rtrim('/');
  if (out.ends_with(".tcc"))
    return "artifact";
  if (out.ends_with(".mlir"))
    return "mlir";
  return "";
}

int runCompile() {
  std::string kind = emitKind();
  if (kind.empty())
    return fail(output == "-"
                    ? "compile: -o OUT.tcc is required (or --emit=mlir to "
                      "print the training step)"
                    : "compile: cannot tell what to write to '" + output +
                          "'; name it OUT.tcc or OUT.mlir, or pass "
                          "--emit=artifact|mlir|lowered");
  if (kind != "artifact" && kind != "mlir" && kind != "lowered")
    return fail("compile: --emit '" + kind +
                "' is not supported (expected artifact, mlir or lowered)");
  if (std::string error = checkProgressMode(progressMode); !error.empty())
    return fail("compile: " + error);
  MLIRContext context;
  CommandErrors errors(context, modelFlags.model);
  // An artifact (or the IR it is written from) without training flags is an
  // inference artifact; --emit=mlir prints a training step and needs them.
  CompileJob job;
  job.prefix = "compile: ";
  job.kind = kind;
  job.output = output;
  job.inference = kind != "mlir" && !trainFlags.anyTrainingOnly();
  if (job.inference && !buildFlags.report.empty())
    return fail("compile: --report describes a training step; give the "
                "training flags (--loss ...)");
  // An inference compile takes the precision flags only.
  Location flagLoc = UnknownLoc::get(&context);
  if (job.inference) {
    FailureOr<PrecisionPolicy> policy = trainFlags.toPrecision(flagLoc);
    if (failed(policy))
      return errors.report();
    job.config.precision = *policy;
  } else {
    FailureOr<TrainConfig> parsed = trainFlags.toConfig(flagLoc);
    if (failed(parsed))
      return errors.report();
    job.config = *parsed;
  }
  Progress progress(progressMode);
  return compileModel(context, errors, modelFlags, buildFlags, job, progress);
}

} // namespace tcc::driver
