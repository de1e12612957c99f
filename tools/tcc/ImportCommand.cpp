// `tcc import`: ONNX (or tcc MLIR) in, tcc MLIR text out.
#include "Commands.h"
#include "Model.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;

namespace tcc::driver {

static cl::SubCommand importCmd("import", "Convert a model to tcc IR in MLIR text form");
static ModelFlags flags(importCmd);
static cl::opt<std::string> output("o", cl::desc("Output file (default: stdout)"),
                                   cl::value_desc("file"), cl::init("-"),
                                   cl::sub(importCmd), cl::cat(flagCategory()));

bool importChosen() { return static_cast<bool>(importCmd); }

int runImport() {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModel(context, flags);
  if (!module)
    return 1;
  std::error_code ec;
  llvm::ToolOutputFile out(output, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return fail("cannot write '" + output + "': " + ec.message());
  module->print(out.os());
  out.keep();
  return 0;
}

} // namespace tcc::driver
