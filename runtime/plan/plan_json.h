//===- plan_json.h - manifest.json and plan.json, written and read -*- C++
//-*-=//
//
// The one reader and the one writer of the schema in plan.h. The writer is
// the compiler's (lib/Artifact); the reader is the runtime loader's, and
// checks everything that does not need tensor data or a backend: format and
// version, every field's type, dtypes and storages, value ids, arena offsets
// against arena_bytes, byte counts of values against the slots they live in,
// each library call against its op (library_ops.inc, plan/calls.cpp), and
// the data flow (no value read before it is written). Errors are rt::Error
// with one line naming the file and the field, function, step or value.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_PLAN_PLAN_JSON_H
#define TCC_RUNTIME_PLAN_PLAN_JSON_H

#include "plan/plan.h"

#include <string>
#include <vector>

namespace tcc::rt {

/// manifest.json text: two-space indented, keys in docs/artifact.md order.
std::string writeManifestJson(const Manifest &manifest);

/// plan.json text: one tensor, value, step or result per line, so the file
/// is as easy to read and grep as to parse.
std::string writePlanJson(const Plan &plan);

/// Reads and checks `path`, a manifest.json.
Manifest readManifestJson(const std::string &path);

/// Reads and checks `path`, the plan.json of an artifact with `manifest`.
/// `constants` are the tensors of its constants file `constantsFile` ("" when
/// it has none), which constant values must name.
Plan readPlanJson(const std::string &path, const Manifest &manifest,
                  const std::vector<TensorDesc> &constants,
                  const std::string &constantsFile);

} // namespace tcc::rt

#endif // TCC_RUNTIME_PLAN_PLAN_JSON_H
