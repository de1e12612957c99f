//===- Plan.h - Reading the lowered module into the plan --------*- C++ -*-===//
//
// Internal to TccArtifact. PlanBuilder reads the lowered, memory-planned
// module into the artifact format's schema (runtime/plan/plan.h), which the
// runtime's writer serialises (runtime/plan/plan_json.h); Writer puts the
// files on disk.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_LIB_ARTIFACT_PLAN_H
#define TCC_LIB_ARTIFACT_PLAN_H

#include "data/npz.h"
#include "data/safetensors.h"
#include "plan/plan.h"
#include "tcc/Artifact/Artifact.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Types.h"

#include <optional>
#include <string>
#include <vector>

namespace tcc::artifact {

/// The plan with the tensors written beside it.
struct PlanData {
  rt::Plan plan;
  /// Initial parameters (params order) and constants.safetensors, read
  /// from the module's attributes as the files are written.
  std::vector<data::TensorSource> weights, constants;
};

/// The artifact dtype of a tensor element type; nullopt for others.
std::optional<data::DType> toDType(mlir::Type element);

/// A source for a DenseElementsAttr (splats expanded) or
/// DenseResourceElementsAttr of static `type`, named `name`, that streams
/// the attribute's bytes when the file is written: a weight is never
/// copied whole. Checks up front that the value holds the bytes `type`
/// needs; a value that does not is an error started by `emitError` (which
/// names what holds it) and continued with `'name': why`.
mlir::FailureOr<data::TensorSource>
elementsSource(mlir::Attribute value, mlir::Type type, const std::string &name,
               llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// Reads `lowered` (after lowerTrainModule or lowerInferenceModule) into the
/// plan of an artifact of `kind`. What the runtime cannot run is an error at
/// the op, function or parameter at fault.
mlir::FailureOr<PlanData> buildPlan(mlir::ModuleOp lowered, rt::Kind kind);

} // namespace tcc::artifact

#endif // TCC_LIB_ARTIFACT_PLAN_H
