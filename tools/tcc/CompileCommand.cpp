// `tcc compile`: a forward model plus loss and optimizer flags in, the
// training step out. For now the output is the tcc module with @train_step
// and @eval_step (--emit=mlir); the model.tcc artifact comes with codegen.
#include "Commands.h"
#include "Model.h"
#include "Report.h"
#include "TrainFlags.h"

#include "tcc/TccOps.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;
using namespace mlir;

namespace tcc::driver {

static cl::SubCommand
    compileCmd("compile", "Build a model's training step: loss, gradients, "
                          "gradient clipping, lr schedule and optimizer");
static ModelFlags modelFlags(compileCmd);
static TrainFlags trainFlags(compileCmd);
static cl::opt<std::string>
    emit("emit", cl::value_desc("kind"),
         cl::desc("What to write: mlir (the tcc module with "
                  "@train_step and @eval_step); required for now"),
         cl::sub(compileCmd), cl::cat(flagCategory()));
static cl::opt<std::string> output("o",
                                   cl::desc("Output file (default: stdout)"),
                                   cl::value_desc("file"), cl::init("-"),
                                   cl::sub(compileCmd),
                                   cl::cat(flagCategory()));
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

int runCompile() {
  if (emit != "mlir")
    return fail(
        emit.empty()
            ? "compile: --emit=mlir is required (the model.tcc artifact is not "
              "implemented yet)"
            : "compile: --emit '" + emit +
                  "' is not supported; only --emit=mlir is implemented yet");
  TrainConfig config;
  if (!trainFlags.toConfig(config))
    return 1;
  MLIRContext context;
  OwningOpRef<ModuleOp> module = loadModel(context, modelFlags);
  if (!module)
    return 1;

  llvm::SmallVector<ReportStage> stages;
  if (!report.empty()) {
    bool isMlir = llvm::StringRef(modelFlags.model).ends_with(".mlir");
    int64_t forwardOps = countFunctionOps(*module, "forward");
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

  if (!buildTrainStepOrReport(*module, config, where))
    return 1;
  if (!report.empty()) {
    stages.push_back({"build-train-step", "@train_step",
                      countFunctionOps(*module, "train_step"), ""});
    if (!writeReport(*module, stages, report))
      return 1;
  }
  return writeModule(*module, output);
}

} // namespace tcc::driver
