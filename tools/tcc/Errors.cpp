// The one place a tcc command turns diagnostics into what the user sees;
// see Errors.h.
#include "Errors.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tcc::driver {

int fail(const llvm::Twine &message) {
  llvm::errs() << "tcc: " << message << "\n";
  return 1;
}

CommandErrors::CommandErrors(MLIRContext &context, llvm::StringRef model)
    : model(model.str()), handler(&context, [this](Diagnostic &diag) {
        // A warning (an eval-mode ONNX export) is one line as it comes;
        // remarks are for tcc-opt; an error is one line, about the first.
        if (diag.getSeverity() == DiagnosticSeverity::Warning)
          llvm::errs() << "tcc: warning: " << where(diag.getLocation())
                       << diag.str() << "\n";
        if (diag.getSeverity() == DiagnosticSeverity::Error && !firstLoc) {
          firstLoc = diag.getLocation();
          firstMessage = diag.str();
        }
        return success();
      }) {}

int CommandErrors::report(llvm::StringRef prefix) const {
  if (!firstLoc)
    return fail(prefix + "failed without an error message");
  return fail(prefix + where(*firstLoc) + firstMessage);
}

std::string CommandErrors::where(Location loc) const {
  if (auto file = llvm::dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + llvm::Twine(file.getLine()) +
            ":" + llvm::Twine(file.getColumn()) + ": ")
        .str();
  // The importer names the graph after the model file and each node's ops
  // after the node.
  if (auto name = llvm::dyn_cast<NameLoc>(loc))
    return name.getName() == model ? model + ": "
                                   : "node '" + name.getName().str() + "': ";
  // A fused op (or an inlined one) is where its first known part is.
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      if (std::string text = where(inner); !text.empty())
        return text;
    return "";
  }
  if (auto call = llvm::dyn_cast<CallSiteLoc>(loc))
    return where(call.getCallee());
  if (auto opaque = llvm::dyn_cast<OpaqueLoc>(loc))
    return where(opaque.getFallbackLocation());
  return "";
}

} // namespace tcc::driver
