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

/// Writes the report to `path`: the stages (`stages`, in the order they
/// ran), the precision policy `policy` (the compile's --precision and
/// --precision-policy) as a table, and @train_step before lowering (in
/// `trained`) and after (in `lowered`, which tcc::lowerStages produced):
/// kernel counts, fusion groups, the memory plan and estimated cost. A file
/// it cannot write is an error (at an unknown location) naming the flag
/// (--report) and the cause. Under `--memory-budget` (@train_step carries
/// tcc-rematerialize's `tcc.remat`), `unbudgeted` is the lowered step
/// without the budget: a "Memory budget" section shows what was
/// recomputed and both steps' live arena bytes on one chart.
mlir::LogicalResult writeReport(mlir::ModuleOp trained, mlir::ModuleOp lowered,
                                llvm::ArrayRef<ReportStage> stages,
                                const PrecisionPolicy &policy,
                                const std::string &path,
                                mlir::ModuleOp unbudgeted = nullptr);

} // namespace tcc::report

#endif // TCC_REPORT_REPORT_H
