// Loading a model for any tcc command: ONNX through the importer, MLIR text
// through the parser; either way the result is a verified tcc module.
#ifndef TCC_TOOLS_TCC_MODEL_H
#define TCC_TOOLS_TCC_MODEL_H

#include "Errors.h"

#include "tcc/Import/OnnxImporter.h"

#include "llvm/Support/CommandLine.h"

#include <string>

namespace tcc::driver {

/// The category of every tcc flag; LLVM's own flags are hidden from --help.
llvm::cl::OptionCategory &flagCategory();

/// Options shared by every command that reads a model.
struct ModelFlags {
  explicit ModelFlags(llvm::cl::SubCommand &sub);
  llvm::cl::opt<std::string> model;
  llvm::cl::list<std::string> inputShapes;
  llvm::cl::opt<bool> noRaiseAttention;
};

/// Loads `flags.model`; on failure reports an error diagnostic (for the
/// command's CommandErrors to print) and returns null. With `timing`, the
/// parse or the importer's stages are timed in it.
mlir::OwningOpRef<mlir::ModuleOp>
loadModel(mlir::MLIRContext &context, const ModelFlags &flags,
          mlir::TimingScope *timing = nullptr);

/// Prints `module` as MLIR text to `path` ("-": stdout); returns the exit
/// code, 1 after one line to stderr when the file cannot be written.
int writeModule(mlir::ModuleOp module, const std::string &path);

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_MODEL_H
