//===- cuda_backend.h - running plan steps on a CUDA device -----*- C++ -*-===//
//
// Built only when the CUDA toolkit is found (TCC_CUDA, target
// tcc_cuda_kernels); backend.cpp reaches it under TCC_HAVE_CUDA_BACKEND.
//
// The CUDA device of the session's options (tcc_session_options.device),
// whose primary context each entry point makes current and gives back;
// device memory of exactly the plan's sizes (one arena, one buffer per
// parameter, optimizer slot, input and constant) plus a scratch workspace,
// the kernels' workspace (the largest plan "workspace_bytes", zeroed once),
// the kernel argument arrays and the error words (outside tcc_memory), all
// from the session's allocator. Kernel steps launch the `tcc_<name>` symbols of
// kernels/kernels.fatbin (driver API, resolved at open) over `elements`,
// their inputs a device array of device pointers written once at open. Call
// steps run tcc_cuda_kernels, cuBLASLt GemmPlans and (conv, when cuDNN
// loads: kernels/cuda/cudnn_conv.h) cuDNN conv plans made at open. Everything
// is enqueued on one stream, the caller's or one made here; the first run of
// each function captures it as CUDA graphs, later runs replay them
// (TCC_CUDA_GRAPHS=0: always eager).
// The step counter is a device value uploaded before each run, so replays
// see it without re-capture. Label / id errors come back through device
// error words, read when the stream is synchronised after the steps that
// read ids and before the first step that writes a parameter or optimizer
// slot, so a TCC_ERROR_DATA leaves the session unchanged.
//
// Checked on a GPU by test/unit/gpu (test/gpu/bringup.sh runs them); on a
// machine without one those tests say they skipped.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_CUDA_BACKEND_H
#define TCC_RUNTIME_EXEC_CUDA_BACKEND_H

#include "exec/backend.h"

#include <memory>
#include <string>

namespace tcc::rt {

/// Why the CUDA backend cannot run call `step` of `fn`, or "" when it can
/// (shape-only checks; cuBLASLt may still refuse a GEMM when the session
/// opens).
std::string cudaUnsupported(const Function &fn, const Step &step);

/// TCC_ERROR_BACKEND when there is no CUDA device or a call the backend
/// cannot run (naming the step and op), TCC_ERROR_FORMAT / TCC_ERROR_IO
/// when kernels/kernels.fatbin is missing, unreadable or lacks a symbol,
/// TCC_ERROR_ARGUMENT for a device ordinal past the device count or a
/// caller's stream of another device (checkBackendOptions has passed).
std::unique_ptr<Backend> makeCudaBackend(const SessionOptions &options,
                                         const Artifact &artifact);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_CUDA_BACKEND_H
