//===- inspect.h - `tcc inspect OUT.tcc` ------------------------*- C++ -*-===//
//
// Prints what an artifact holds, read through the runtime's own loader: the
// manifest, the batch inputs, parameters and optimizer state, per function
// its steps (generated kernels, library calls by op) and arena, whether the
// CPU backend and the CUDA backend can run it (the CUDA backend's refusal
// rules and the fatbin's architectures, no GPU needed; "not built" without
// TCC_CUDA), and the memory a session holds — the same numbers tcc_memory()
// reports for a session of it; on request the GPU cost model of each
// function (gpu_cost.h).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_INSPECT_H
#define TCC_RUNTIME_EXEC_INSPECT_H

#include "api/tcc_runtime.h"

#include <ostream>
#include <string>

namespace tcc::rt {

/// Prints the summary of artifact `dir` to `out`. Returns TCC_OK, or the
/// status a session's open would return with `error` set to its one-line
/// message when the artifact cannot be read; nothing is printed then. (The
/// tools' entry to the loader: like the C API, nothing is thrown.)
/// With `gpu` (gpu_cost.h) the summary is followed by the GPU cost model
/// on that device (`tf32`: f32 GEMMs on TF32).
struct GpuSpec;
tcc_status inspectArtifact(const std::string &dir, std::ostream &out,
                           std::string &error, const GpuSpec *gpu = nullptr,
                           bool tf32 = false);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_INSPECT_H
