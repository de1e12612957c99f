// `tcc import`: ONNX (or tcc MLIR) in, tcc MLIR text out.
#include "Commands.h"
#include "Model.h"

#include "mlir/IR/MLIRContext.h"

namespace cl = llvm::cl;

namespace tcc::driver {

static cl::SubCommand importCmd("import", "Convert a model to tcc IR in MLIR text form");
static ModelFlags flags(importCmd);
static cl::opt<std::string> output("o", cl::desc("Output file (default: stdout)"),
                                   cl::value_desc("file"), cl::init("-"),
                                   cl::sub(importCmd), cl::cat(flagCategory()));


int runImport() {
  mlir::MLIRContext context;
  CommandErrors errors(context, flags.model);
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModel(context, flags);
  if (!module)
    return errors.report();
  return writeModule(*module, output);
}

} // namespace tcc::driver
