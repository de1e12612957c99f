//===- ErrorCapture.h - what a compiler failure says ------------*- C++ -*-===//
//
// The compiler libraries report a failure as an MLIR diagnostic at the op or
// location at fault. A test that checks what a failure says holds an
// ErrorCapture on the context, as the tcc driver holds its CommandErrors.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_TEST_UNIT_ERRORCAPTURE_H
#define TCC_TEST_UNIT_ERRORCAPTURE_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace testutil {

/// The error diagnostics of a context while it lives (warnings and remarks
/// are dropped).
class ErrorCapture {
public:
  explicit ErrorCapture(mlir::MLIRContext &context)
      : handler(&context, [this](mlir::Diagnostic &diag) {
          if (diag.getSeverity() == mlir::DiagnosticSeverity::Error) {
            messages.push_back(diag.str());
            locations.push_back(diag.getLocation());
          }
          return mlir::success();
        }) {}

  /// The first error's message; "" when there was none.
  std::string first() const { return messages.empty() ? "" : messages[0]; }
  /// Forgets what was captured, between the cases of one test.
  void clear() {
    messages.clear();
    locations.clear();
  }

  std::vector<std::string> messages;
  std::vector<mlir::Location> locations;

private:
  mlir::ScopedDiagnosticHandler handler;
};

/// `value`, which the test expects to have succeeded (a flag it knows to be
/// valid); a default T and a test failure when it did not.
template <typename T> T expectSuccess(mlir::FailureOr<T> value) {
  if (mlir::failed(value)) {
    ADD_FAILURE() << "expected success";
    return T();
  }
  return std::move(*value);
}

} // namespace testutil

#endif // TCC_TEST_UNIT_ERRORCAPTURE_H
