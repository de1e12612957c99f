// How a tcc command reports a failure: one line on stderr,
// `tcc: <prefix><where><message>`, and exit status 1.
//
// The compiler libraries report a failure as an MLIR diagnostic at the op or
// location at fault. A command installs one CommandErrors on its context
// before it does anything that can fail; it keeps the first error, and the
// command prints it (report) where it gives up. Problems the driver finds
// itself (a missing flag) it prints directly with fail().
#ifndef TCC_TOOLS_TCC_ERRORS_H
#define TCC_TOOLS_TCC_ERRORS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <optional>
#include <string>

namespace tcc::driver {

/// Prints `tcc: <message>` to stderr and returns 1, for `return fail(...)`.
int fail(const llvm::Twine &message);

class CommandErrors {
public:
  /// Takes every diagnostic of `context` while it lives, printing a warning
  /// at once as `tcc: warning: <where><message>`. `model` is the
  /// model file as the command line names it: a diagnostic at its location
  /// (the imported graph as a whole) says so.
  CommandErrors(mlir::MLIRContext &context, llvm::StringRef model);
  CommandErrors(const CommandErrors &) = delete;
  CommandErrors &operator=(const CommandErrors &) = delete;

  /// Prints the first error as `tcc: <prefix><where><message>` and returns
  /// 1. `where` is "file:line:col: " in a .mlir model, "node 'name': " for
  /// an ONNX node, "model.onnx: " for the graph as a whole, and nothing for
  /// a flag, an output path or a compiler run, which the message names.
  int report(llvm::StringRef prefix = "") const;

private:
  std::string where(mlir::Location loc) const;

  std::string model;
  std::optional<mlir::Location> firstLoc;
  std::string firstMessage;
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_ERRORS_H
