#include "Model.h"

#include "tcc/TccOps.h"
#include "tcc/Support/OutputFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace tcc::driver {

cl::OptionCategory &flagCategory() {
  static cl::OptionCategory category("tcc options");
  return category;
}

ModelFlags::ModelFlags(cl::SubCommand &sub)
    : model(cl::Positional, cl::Required, cl::desc("<model.onnx|model.mlir>"),
            cl::sub(sub), cl::cat(flagCategory())),
      inputShapes("input-shape", cl::ZeroOrMore, cl::value_desc("name=AxBx..."),
                  cl::desc("Static shape of an ONNX graph input, e.g. "
                           "input_ids=8x1024 (repeatable)"),
                  cl::sub(sub), cl::cat(flagCategory())),
      noRaiseAttention("no-raise-attention",
                       cl::desc("Keep PyTorch's attention sub-graph as separate "
                                "ops instead of raising it to tcc.attention"),
                       cl::sub(sub), cl::cat(flagCategory())) {}

/// Parses `name=8x1024` into `options`; fails with an error naming the flag
/// when it is malformed.
static LogicalResult parseInputShape(Location loc, llvm::StringRef flag,
                                     ImportOptions &options) {
  auto [name, dims] = flag.rsplit('=');
  if (name.empty() || dims.empty() || !flag.contains('='))
    return emitError(loc) << "--input-shape '" << flag
                          << "': expected NAME=DIMxDIM..., e.g. "
                             "input_ids=8x1024";
  std::vector<int64_t> shape;
  llvm::SmallVector<llvm::StringRef> parts;
  dims.split(parts, 'x');
  for (llvm::StringRef p : parts) {
    int64_t d;
    if (p.getAsInteger(10, d) || d <= 0)
      return emitError(loc) << "--input-shape '" << flag << "': '" << p
                            << "' is not a positive dimension";
    shape.push_back(d);
  }
  options.inputShapes[name.str()] = shape;
  return success();
}

static OwningOpRef<ModuleOp> parseMlir(MLIRContext &context,
                                       const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    emitError(UnknownLoc::get(&context))
        << "cannot read '" << path << "': " << buffer.getError().message();
    return nullptr;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

OwningOpRef<ModuleOp> loadModel(MLIRContext &context, const ModelFlags &flags,
                                TimingScope *timing) {
  registerImportDialects(context);
  // The command line's problems are named in their messages.
  Location flagLoc = UnknownLoc::get(&context);
  const std::string &path = flags.model;
  llvm::StringRef ext = llvm::StringRef(path).rsplit('.').second;
  if (ext == "mlir") {
    if (!flags.inputShapes.empty()) {
      emitError(flagLoc) << "--input-shape applies to ONNX models; '" << path
                         << "' already has static shapes";
      return nullptr;
    }
    TimingScope scope = timing ? timing->nest("parse") : TimingScope();
    return parseMlir(context, path);
  }
  if (ext != "onnx") {
    emitError(flagLoc) << "'" << path
                       << "': unknown model format (expected .onnx or .mlir)";
    return nullptr;
  }
  ImportOptions options;
  options.raiseAttention = !flags.noRaiseAttention;
  options.timing = timing;
  for (const std::string &s : flags.inputShapes)
    if (failed(parseInputShape(flagLoc, s, options)))
      return nullptr;
  return importOnnxFile(context, path, options);
}

int writeModule(ModuleOp module, const std::string &path) {
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return fail("cannot write '" + path + "': " + ec.message());
  module->print(out.os());
  if ((ec = commitOutput(out)))
    return fail("cannot write '" + path + "': " + ec.message());
  return 0;
}

} // namespace tcc::driver
