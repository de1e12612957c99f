//===- artifact.h - the artifact as the runtime reads it --------*- C++ -*-===//
//
// loadArtifact reads OUT.tcc/manifest.json and plan.json (docs/artifact.md),
// of either kind — a training artifact (train_step, eval_step) or an
// inference artifact (forward) — and checks everything that does not need the
// tensor data or a backend: format and version, every field's type, dtypes and
// storages, value ids, arena offsets against arena_bytes, byte counts of values
// against the slots they live in, each library call's operand count, dtypes,
// shapes and attributes, the data flow (no value read before it is written),
// and the tensor names, dtypes and shapes of weights.safetensors and
// constants.safetensors (their headers only). Session opening and `tcc
// inspect` share it.
//
// Errors are tcc::rt::Error carrying a tcc_status and one line naming the
// file and the field, function, step or value at fault.
//
// No LLVM/MLIR here.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_ARTIFACT_H
#define TCC_RUNTIME_EXEC_ARTIFACT_H

#include "api/tcc_runtime.h"
#include "data/npz.h"
#include "exec/format.h"
#include "exec/schedule.h"

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tcc::rt {

/// A failure with the status the C API returns for it.
class Error : public std::runtime_error {
public:
  Error(tcc_status status, const std::string &message)
      : std::runtime_error(message), status(status) {}
  tcc_status status;
};

[[noreturn]] void fail(tcc_status status, const std::string &message);

/// "[2, 3]"; "[]" for a scalar.
std::string shapeString(const std::vector<int64_t> &shape);

/// A named tensor's dtype and shape, with its element and byte counts.
struct TensorDesc {
  std::string name;
  data::DType dtype = data::DType::F32;
  std::vector<int64_t> shape;
  int64_t elements = 1;
  int64_t bytes = 0;
  /// Optimizer state only: every element's value when the session opens
  /// (plan "init"; 0 when absent). The loader checked that it is finite and
  /// fits `dtype` (an integer for i32/i64, 0 or 1 for bool).
  double init = 0;
  /// Parameters only: the dtype (bf16 or f16) of the parameter's working
  /// copy (plan "working"), absent when it has none. The loader checked
  /// that the parameter is f32.
  std::optional<data::DType> working;
};


/// One entry of a function's "values".
struct Value {
  data::DType dtype = data::DType::F32;
  std::vector<int64_t> shape;
  int64_t elements = 1;
  int64_t bytes = 0;
  Storage storage = Storage::Arena;
  int64_t offset = 0; ///< Arena
  int64_t index = -1; ///< Param, OptState, Input, Working (the param's)
  std::string name;   ///< Constant
};

/// The library ops (exec::isLibraryOp), by their tcc op name without "tcc.".
enum class Op {
  Matmul,
  Gemm,
  LayerNorm,
  LayerNormGrad,
  Softmax,
  SoftmaxGrad,
  LogSoftmax,
  LogSoftmaxGrad,
  Attention,
  AttentionGrad,
  CrossEntropy,
  CrossEntropyGrad,
  Embedding,
  GatherGrad,
  Dropout,
  SgdUpdate,
  AdamwUpdate,
};
const char *opName(Op op);

/// The attributes of a library call, with the ODS defaults of the tcc op
/// where the plan leaves one out. Only the fields of the step's op mean
/// anything.
struct Attrs {
  bool transposeA = false, transposeB = false; // matmul (lhs/rhs), gemm
  double alpha = 1.0, beta = 1.0;              // gemm
  int64_t axis = 0; // layer_norm(_grad), (log_)softmax(_grad), gather_grad;
                    // normalised to [0, rank)
  double epsilon = 0;         // layer_norm(_grad)
  double scale = 0;           // attention(_grad)
  bool causal = false;        // attention(_grad)
  int64_t ignoreIndex = -100; // cross_entropy(_grad)
  double ratio = 0;           // dropout
  int64_t seed = 0;           // dropout
  double momentum = 0, weightDecay = 0; // sgd_update; adamw weight_decay
  bool nesterov = false;                // sgd_update
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8; // adamw_update
};

struct Step {
  enum Kind { Kernel, Call } kind = Kernel;
  std::string symbol;   ///< Kernel: the host.so symbol
  int64_t elements = 0; ///< Kernel: the output's element count
  Op op = Op::Matmul;   ///< Call
  Attrs attrs;          ///< Call
  /// Value ids in the op's operand / result order; -1 for an absent
  /// optional operand or an unused optional result.
  std::vector<int64_t> inputs, outputs;
};

struct Result {
  /// Working: the value becomes parameter `index`'s working copy.
  enum Role { Loss, Param, OptState, Output, Working } role = Loss;
  int64_t index = -1; ///< Param, OptState, Working
  int64_t value = -1;
  std::string name; ///< Output
};

struct Function {
  std::string name;
  int64_t arenaBytes = 0;
  std::vector<TensorDesc> inputs;
  std::vector<Value> values;
  std::vector<Step> steps;
  std::vector<Result> results;
  int64_t lossValue = -1; ///< the loss result's value
};

/// What an artifact runs (manifest "kind"; "training" when absent).
enum class Kind { Training, Inference };

struct Manifest {
  int64_t version = 0;
  Kind kind = Kind::Training;
  /// Training only (empty, a constant schedule and 1 for inference).
  std::string producer, source, fingerprint, trainConfig;
  Schedule schedule;
  int64_t accum = 1;
  /// "plan", "weights", ... -> path relative to the artifact directory.
  std::map<std::string, std::string> files;
};

struct Artifact {
  std::string dir;
  Manifest manifest;
  std::vector<TensorDesc> params, optState;
  /// From the headers of constants.safetensors (empty when absent).
  std::vector<TensorDesc> constants;
  /// In plan order of the JSON object (by name).
  std::vector<Function> functions;

  /// The function called `name`, or null.
  const Function *function(const std::string &name) const;
  bool inference() const { return manifest.kind == Kind::Inference; }
  /// The function whose inputs are the session's inputs: train_step, or
  /// forward in an inference artifact (the loader checked it exists).
  const Function &primary() const;
  /// DIR/<files[key]>, or "" when the manifest does not list `key`.
  std::string file(const std::string &key) const;
  /// Whether any function has a kernel step (then host_kernels is needed).
  bool hasKernelSteps() const;
};

/// Reads and checks DIR/manifest.json, its plan and the safetensors headers.
Artifact loadArtifact(const std::string &dir);

/// Tensor names, dtypes and shapes from a safetensors file's header.
std::vector<TensorDesc> readSafetensorsHeader(const std::string &path);

/// Bytes a session of this artifact holds, by purpose (tcc_memory).
struct MemoryPlan {
  int64_t arena = 0, params = 0, optState = 0, inputs = 0, constants = 0;
  /// The bf16/f16 working copies of parameters (2 bytes an element).
  int64_t working = 0;
  int64_t total() const {
    return arena + params + working + optState + inputs + constants;
  }
};
MemoryPlan memoryPlan(const Artifact &artifact);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_ARTIFACT_H
