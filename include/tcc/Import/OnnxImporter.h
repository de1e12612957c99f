// ONNX -> tcc dialect. One converter per ONNX op, registered in a table
// (lib/Import/*.cpp); shape sub-graphs are folded to constants on the way.
#ifndef TCC_IMPORT_ONNXIMPORTER_H
#define TCC_IMPORT_ONNXIMPORTER_H

#include "data/npz.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/Timing.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tcc {

struct ImportOptions {
  /// Static shapes for graph inputs, overriding (or filling in) the model's.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Run tcc-raise-attention and canonicalisation after conversion.
  bool raiseAttention = true;
  /// Replace PyTorch's exact and tanh GELU decompositions by tcc.gelu.
  bool raiseGelu = true;
  /// Graph inputs whose values are fixed at import time. They become
  /// constants (folded like everything else) instead of arguments of
  /// @forward, which lets models that take shapes, axes or flags as inputs
  /// import with static shapes.
  std::map<std::string, data::Array> constantInputs;
  /// When set, the import's stages (protobuf parse, ONNX checker and shape
  /// inference, conversion, each post-import pass) are timed in it.
  mlir::TimingScope *timing = nullptr;
};

/// Why an import failed, for callers that treat the two differently (ONNX's
/// conformance tests count what tcc does not support and fail on the rest).
/// `Unsupported` means a valid model uses something tcc does not handle (an
/// op, an attribute value, a dtype); `Invalid` means the input itself is
/// wrong (missing file, bad protobuf, bad --input-shape); `Internal` is
/// tcc's own bug (IR that does not verify, a library's exception): its
/// message starts "internal error" after the node it names.
enum class ImportFailure { Unsupported, Invalid, Internal };

/// Imports `path` into a module holding `tcc.param`s and `func.func @forward`
/// (arguments/results carry `tcc.name` attributes with the ONNX names). The
/// module, the parameters and @forward are at the file's location,
/// NameLoc(`path`); each node's ops at NameLoc(node name, or "Op#index").
/// On failure returns null after one error diagnostic at the file's
/// location whose message names the node and op where there is one
/// ("node 'rem' (op 'Mod'): ..."), and sets `failure` (when given).
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxFile(mlir::MLIRContext &context, const std::string &path,
               const ImportOptions &options, ImportFailure *failure = nullptr);

/// Dialects the importer's output uses; load them before importing/parsing.
void registerImportDialects(mlir::MLIRContext &context);

} // namespace tcc

#endif // TCC_IMPORT_ONNXIMPORTER_H
