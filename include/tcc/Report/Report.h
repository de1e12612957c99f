// `tcc compile --report`: one self-contained HTML page about the compiled
// training step (pipeline stages, kernels, fusion groups, memory plan,
// FLOPs), for people who would rather not read the IR.
#ifndef TCC_TOOLS_TCC_REPORT_H
#define TCC_TOOLS_TCC_REPORT_H

#include "tcc/Transforms/Precision.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>

namespace tcc::driver {

/// One pipeline stage already run, with the op count of the function it
/// produced or changed.
struct ReportStage {
  std::string name;
  std::string function;
  int64_t ops = 0;
  std::string note;
};

/// Top-level ops of the function `name` in `module` (0 if absent).
int64_t countFunctionOps(mlir::ModuleOp module, llvm::StringRef name);

/// Runs tcc-fuse and tcc-plan-memory on a clone of `module` (which must hold
/// @train_step) and writes the report to `path`. `module` is not changed. On
/// failure prints one line to stderr and returns false.
/// The precision policy `policy` (the compile's --precision and
/// --precision-policy) is printed as a table.
bool writeReport(mlir::ModuleOp module, llvm::SmallVector<ReportStage> stages,
                 const PrecisionPolicy &policy, const std::string &path);

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_REPORT_H
