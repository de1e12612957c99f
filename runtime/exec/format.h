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
#include "data/half.h"
#include "data/npz.h"

#include <cmath>
#include <limits>
#include <string>

#include <optional>

namespace tcc::rt {

/// The artifact format version (manifest and plan "version").
constexpr int kArtifactVersion = TCC_ARTIFACT_VERSION;

/// Where a plan value's bytes live ("storage").
/// Working: the bf16/f16 working copy of parameter `index` (plan
/// params[i].working), kept equal to its master rounded to nearest even.
enum class Storage { Arena, Param, OptState, Step, Input, Constant, Working };

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
  case Storage::Working:
    return "working";
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

/// Why `v` cannot be every element of a `dtype` tensor (an optimizer
/// state's "init"), or "": the writer and the loader check the same.
inline std::string initUnfit(double v, data::DType dtype) {
  using data::DType;
  if (!std::isfinite(v))
    return "is not finite";
  switch (dtype) {
  case DType::F64:
    return "";
  case DType::F32:
  case DType::BF16:
  case DType::F16: {
    if (std::fabs(v) > double(std::numeric_limits<float>::max()))
      return "is beyond the range of " + std::string(data::dtypeName(dtype));
    float f = static_cast<float>(v);
    if (dtype == DType::BF16 && !std::isfinite(data::roundToBf16(f)))
      return "is beyond the range of bf16";
    if (dtype == DType::F16 && !std::isfinite(data::roundToF16(f)))
      return "is beyond the range of f16 (largest finite 65504)";
    return "";
  }
  case DType::I32:
  case DType::I64: {
    if (v != std::trunc(v))
      return "is not an integer";
    bool i32 = dtype == DType::I32;
    double lo = i32 ? -2147483648.0 : -9223372036854775808.0;
    double hi = i32 ? 2147483647.0 : 9223372036854775808.0; // i64: exclusive
    if (v < lo || (i32 ? v > hi : v >= hi))
      return "is beyond the range of " + std::string(data::dtypeName(dtype));
    return "";
  }
  case DType::Bool:
    return v == 0 || v == 1 ? "" : "is not 0 or 1";
  default:
    return std::string("cannot initialise a ") + data::dtypeName(dtype) +
           " tensor";
  }
}

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_FORMAT_H
