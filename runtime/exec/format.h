//===- format.h - the artifact format's shared vocabulary -------*- C++ -*-===//
//
// Names in plan.json that both sides of the format spell: the compiler's
// writer (lib/Artifact) and the runtime's loader (runtime/exec) include
// this one definition (docs/artifact.md). Header-only, no dependencies.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_EXEC_FORMAT_H
#define TCC_RUNTIME_EXEC_FORMAT_H

#include "api/tcc_runtime.h"
#include "data/npz.h"

#include <optional>

namespace tcc::rt {

/// The artifact format version (manifest and plan "version").
constexpr int kArtifactVersion = TCC_ARTIFACT_VERSION;

/// Where a plan value's bytes live ("storage").
enum class Storage { Arena, Param, OptState, Step, Input, Constant };

inline const char *storageName(Storage storage) {
  switch (storage) {
  case Storage::Arena:
    return "arena";
  case Storage::Param:
    return "param";
  case Storage::OptState:
    return "opt_state";
  case Storage::Step:
    return "step";
  case Storage::Input:
    return "input";
  case Storage::Constant:
    return "constant";
  }
  return "?";
}

/// The C API's name of a plan dtype (the plan admits only these).
inline tcc_dtype apiDType(data::DType t) {
  switch (t) {
  case data::DType::F64:
    return TCC_F64;
  case data::DType::I32:
    return TCC_I32;
  case data::DType::I64:
    return TCC_I64;
  case data::DType::Bool:
    return TCC_BOOL;
  case data::DType::BF16:
    return TCC_BF16;
  case data::DType::F16:
    return TCC_F16;
  default:
    return TCC_F32;
  }
}

/// The data dtype of a C API dtype.
inline data::DType fromApiDType(tcc_dtype t) {
  switch (t) {
  case TCC_F64:
    return data::DType::F64;
  case TCC_I32:
    return data::DType::I32;
  case TCC_I64:
    return data::DType::I64;
  case TCC_BOOL:
    return data::DType::Bool;
  case TCC_BF16:
    return data::DType::BF16;
  case TCC_F16:
    return data::DType::F16;
  default:
    return data::DType::F32;
  }
}

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_FORMAT_H
