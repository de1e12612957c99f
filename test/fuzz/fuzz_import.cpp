// libFuzzer target: the ONNX importer (lib/Import, instrumented) on arbitrary
// bytes as a model file, through protobuf parsing, tcc's tensor checks, ONNX's
// checker, shape inference and version converter, the converters and the
// post-import passes. Every input is imported or refused with an error
// diagnostic; crashing, failing without a diagnostic, succeeding with one, or
// reporting an internal error (IR that does not verify) is a finding.
#include "FuzzUtil.h"

#include "tcc/Import/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = fuzz::writeInput("model.onnx", data, size);
  // A context per input: weights live in the context's resource blobs, so
  // one shared context would grow with every input.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  tcc::registerImportDialects(context);
  int errors = 0;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    errors += d.getSeverity() == mlir::DiagnosticSeverity::Error;
    return mlir::success();
  });
  tcc::ImportOptions options;
  // The failure's kind, not its text: names in the file may say anything.
  tcc::ImportFailure failure = tcc::ImportFailure::Invalid;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      tcc::importOnnxFile(context, path, options, &failure);
  bool internal = !module && failure == tcc::ImportFailure::Internal;
  if (internal || bool(module) == (errors > 0))
    __builtin_trap();
  return 0;
}
