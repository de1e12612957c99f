// What `tcc compile` keeps of each stage it runs: the module as MLIR text
// in --dump-dir (00-import.mlir, 01-lower-precision.mlir, ...), so that a
// user can diff stages or feed one to tcc-opt, and a row of the --report
// page's stage table.
#ifndef TCC_TOOLS_TCC_STAGELOG_H
#define TCC_TOOLS_TCC_STAGELOG_H

#include "tcc/Report/Report.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace tcc::driver {

class StageLog {
public:
  /// Dumps into `dumpDir` (none when empty): creates it, and removes the
  /// NN-*.mlir files of an earlier run, so that it holds this compile's
  /// stages only. When it cannot, an error at `loc` naming --dump-dir and
  /// the path.
  mlir::LogicalResult open(mlir::Location loc, const std::string &dumpDir);
  bool dumping() const { return !dir.empty(); }

  /// Stage `name` has left `module` as it is: writes DIR/NN-name.mlir and
  /// adds a report row with `note`. A file it cannot write is an error
  /// naming --dump-dir and the file.
  mlir::LogicalResult record(llvm::StringRef name, llvm::StringRef note,
                             mlir::ModuleOp module);
  /// A report row about work inside a stage (no dump).
  void note(report::ReportStage row) { rows.push_back(std::move(row)); }

  llvm::ArrayRef<report::ReportStage> reportRows() const { return rows; }

private:
  std::string dir;
  unsigned next = 0;
  llvm::SmallVector<report::ReportStage> rows;
};

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_STAGELOG_H
