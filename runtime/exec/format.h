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

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_FORMAT_H
