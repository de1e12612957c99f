//===- Plan.h - The artifact's plan as data ---------------------*- C++ -*-===//
//
// Internal to TccArtifact. PlanBuilder reads the lowered, memory-planned
// module into these structs; PlanJson and Manifest serialise them; Writer
// puts the files on disk. Keeping the IR walk apart from the JSON keeps
// each file small and lets the summary be read off the same data.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_LIB_ARTIFACT_PLAN_H
#define TCC_LIB_ARTIFACT_PLAN_H

#include "data/npz.h"
#include "data/safetensors.h"
#include "exec/format.h"
#include "tcc/Artifact/Artifact.h"
#include "tcc/Transforms/TrainStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tcc::artifact {

/// A named tensor without values: a parameter, a state slot, a batch input.
struct TensorDesc {
  std::string name;
  data::DType dtype = data::DType::F32;
  std::vector<int64_t> shape;
  /// Optimizer state: every element's initial value (plan "init"), from the
  /// argument's tcc.init; absent = zero.
  std::optional<double> init;
  /// Parameters: the dtype of its bf16/f16 working copy (plan "working"),
  /// from @train_step's or @eval_step's tcc.working argument; absent = none.
  std::optional<data::DType> working;
  int64_t bytes() const;
};

using rt::Storage;
using rt::storageName;

/// One entry of a function's "values" (its id is its position).
struct ValueDesc {
  data::DType dtype = data::DType::F32;
  std::vector<int64_t> shape;
  Storage storage = Storage::Arena;
  int64_t offset = 0;   ///< Arena
  int64_t index = 0;    ///< Param, OptState, Input
  std::string constant; ///< Constant: the tensor in constants.safetensors
};

struct StepDesc {
  bool kernel = true;
  std::string symbol;    ///< kernel: exported symbol
  int64_t elements = 0;  ///< kernel: output element count
  std::string op;        ///< call: tcc op name without "tcc."
  std::string attrsJson; ///< call: a compact JSON object
  std::vector<int64_t> inputs, outputs; ///< value ids; -1 = absent optional
};

struct ResultDesc {
  std::string role; ///< "loss", "param", "opt_state", "working";
                    ///< "output" (inference)
  int64_t index = 0;
  int64_t value = 0;
  std::string name; ///< "output": the result's tcc.name
};

struct FunctionPlan {
  std::string name;
  int64_t arenaBytes = 0;
  std::vector<TensorDesc> inputs;
  std::vector<ValueDesc> values;
  std::vector<StepDesc> steps;
  std::vector<ResultDesc> results;
};

struct Plan {
  ArtifactKind kind = ArtifactKind::Training;
  std::vector<TensorDesc> params, optState;
  /// train_step, eval_step; forward in an inference plan
  std::vector<FunctionPlan> functions;
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
/// needs.
bool elementsSource(mlir::Attribute value, mlir::Type type,
                    const std::string &name, data::TensorSource &out,
                    std::string &error);

/// Reads `lowered` (after lowerTrainModule or lowerInferenceModule and
/// checkExecutable) into a plan of `kind`.
bool buildPlan(mlir::ModuleOp lowered, ArtifactKind kind, Plan &plan,
               std::string &error);

/// plan.json text (docs/artifact.md).
std::string planJson(const Plan &plan);

/// The manifest's file list: role -> path relative to the artifact.
struct ManifestFiles {
  bool constants = false;
  bool cudaKernels = false;
};

/// manifest.json text (docs/artifact.md) of a training artifact.
std::string manifestJson(const std::string &source,
                         const std::string &fingerprint,
                         const TrainConfig &config, const ManifestFiles &files);

/// manifest.json text of an inference artifact: no training configuration.
std::string inferenceManifestJson(const std::string &source,
                                  const ManifestFiles &files);

/// "loc" text a user can look up: file:line:col, or node 'name' for ONNX.
std::string describeLoc(mlir::Location loc);

} // namespace tcc::artifact

#endif // TCC_LIB_ARTIFACT_PLAN_H
