//===- artifact.h - the artifact as the runtime reads it --------*- C++ -*-===//
//
// loadArtifact reads OUT.tcc/manifest.json and plan.json (docs/artifact.md),
// of either kind — a training artifact (train_step, eval_step) or an
// inference artifact (forward) — with the schema's reader (plan/plan_json.h,
// which checks the plan), and checks the artifact's files against it: the
// tensor names, dtypes and shapes of weights.safetensors and
// constants.safetensors (their headers only) and the kernels the plan needs.
// Session opening and `tcc inspect` share it.
//
// Errors are tcc::rt::Error carrying a tcc_status and one line naming the
// file and the field, function, step or value at fault.
//
// No LLVM/MLIR here.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_ARTIFACT_H
#define TCC_RUNTIME_EXEC_ARTIFACT_H

#include "plan/plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

/// A loaded artifact: its plan (plan.h), its manifest, and the tensors of
/// its constants file.
struct Artifact : Plan {
  std::string dir;
  Manifest manifest;
  /// From the headers of constants.safetensors (empty when absent).
  std::vector<TensorDesc> constants;

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
