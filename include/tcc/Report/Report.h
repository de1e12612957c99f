// `tcc compile --report`: one self-contained HTML page about the compiled
// training step (pipeline stages, kernels, fusion groups, memory plan,
// FLOPs), for people who would rather not read the IR.
#ifndef TCC_REPORT_REPORT_H
#define TCC_REPORT_REPORT_H

#include "tcc/Transforms/Precision.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>

namespace tcc::report {

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
/// failure `error` is one line naming the flag (--report) and the cause.
/// The precision policy `policy` (the compile's --precision and
/// --precision-policy) is printed as a table.
mlir::LogicalResult writeReport(mlir::ModuleOp module,
                                llvm::SmallVector<ReportStage> stages,
                                const PrecisionPolicy &policy,
                                const std::string &path, std::string &error);

} // namespace tcc::report

#endif // TCC_REPORT_REPORT_H
