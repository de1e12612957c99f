// `tcc compile`: a forward model plus loss and optimizer flags in, the
// training step out: the OUT.tcc artifact the runtime runs
// (docs/artifact.md), or for people and tests the training step as tcc IR
// (--emit=mlir) or the lowered IR the artifact is written from
// (--emit=lowered). Without any training flag the model itself is compiled:
// an inference artifact whose one function is @forward.
#include "Commands.h"
#include "Model.h"
#include "TrainFlags.h"
#include "tcc/Transforms/Precision.h"

#include "tcc/Artifact/Artifact.h"
#include "tcc/Report/Report.h"
#include "tcc/TccOps.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

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
static cl::opt<bool> noCuda(
    "no-cuda", cl::desc("Do not build kernels/kernels.fatbin even when nvcc "
                        "is available (the artifact then runs on the CPU only)"),
    cl::sub(compileCmd), cl::cat(flagCategory()));
static cl::opt<std::string>
    report("report", cl::value_desc("file.html"),
           cl::desc("Also write a self-contained HTML report: pipeline "
                    "stages, kernels, fusion groups, memory plan, FLOPs"),
           cl::sub(compileCmd), cl::cat(flagCategory()));

bool compileChosen() { return static_cast<bool>(compileCmd); }

/// Where a diagnostic points, in terms a user can look up: "file:line:col: "
/// in a .mlir model, "model.onnx: " for the graph as a whole (the importer
/// names it after the file) and "node 'name': " for an ONNX node.
static std::string where(Location loc) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto file = llvm::dyn_cast<FileLineColLoc>(loc))
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn() << ": ";
  else if (auto name = llvm::dyn_cast<NameLoc>(loc))
    os << (name.getName() == modelFlags.model
               ? name.getName().str()
               : "node '" + name.getName().str() + "'")
       << ": ";
  return s;
}

/// Whether any training flag was given: without one, `compile` builds an
/// inference artifact of @forward.
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
  std::string error;
  // Before the (possibly long) compile: a bad -o fails at once.
  if (kind == "artifact" && !artifact::checkArtifactPath(output, error))
    return fail("compile: " + error);
  // An artifact (or the IR it is written from) without training flags is an
  // inference artifact; --emit=mlir prints a training step and needs them.
  bool inference = kind != "mlir" && !trainFlags.anyTrainingOnly();
  if (inference && !report.empty())
    return fail("compile: --report describes a training step; give the "
                "training flags (--loss ...)");
  TrainConfig config;
  if (inference ? !trainFlags.toPrecision(config.precision)
                : !trainFlags.toConfig(config))
    return 1;
  MLIRContext context;
  OwningOpRef<ModuleOp> module = loadModel(context, modelFlags);
  if (!module)
    return 1;

  llvm::SmallVector<report::ReportStage> stages;
  if (!report.empty()) {
    bool isMlir = llvm::StringRef(modelFlags.model).ends_with(".mlir");
    int64_t forwardOps = report::countFunctionOps(*module, "forward");
    unsigned attentions = 0;
    module->walk([&](tcc::AttentionOp) { ++attentions; });
    stages.push_back({isMlir ? "parse" : "import", "@forward", forwardOps,
                      modelFlags.model});
    stages.push_back(
        {"raise-attention", "@forward", forwardOps,
         isMlir || modelFlags.noRaiseAttention
             ? std::string("not run")
             : "in the importer; " + std::to_string(attentions) +
                   " tcc.attention"});
  }

  if (inference) {
    auto forward = module->lookupSymbol<func::FuncOp>("forward");
    if (forward && failed(lowerPrecision(forward, config.precision)))
      return fail("compile: cannot lower @forward to " +
                  describePrecision(config.precision));
  } else {
    if (!buildTrainStepOrReport(*module, config, where))
      return 1;
    if (!report.empty()) {
      stages.push_back({"build-train-step", "@train_step",
                        report::countFunctionOps(*module, "train_step"), ""});
      if (failed(report::writeReport(*module, stages, config.precision, report,
                                     error)))
        return fail(error);
    }
  }
  if (kind == "mlir")
    return writeModule(*module, output);
  if (kind == "lowered") {
    if (failed(inference ? artifact::lowerInferenceModule(*module, error)
                         : artifact::lowerTrainModule(*module, error)))
      return fail("compile: " + error);
    return writeModule(*module, output);
  }
  artifact::ArtifactOptions options;
  options.source = modelFlags.model;
  options.cudaKernels = !noCuda;
  artifact::ArtifactSummary summary;
  if (failed(inference ? artifact::writeInferenceArtifact(
                             *module, options, output, &summary, error)
                       : artifact::writeArtifact(*module, config, options,
                                                 output, &summary, error)))
    return fail("compile: " + error);
  llvm::outs() << artifact::formatSummary(summary) << "\n";
  return 0;
}

} // namespace tcc::driver
