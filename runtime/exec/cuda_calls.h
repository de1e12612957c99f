//===- cuda_calls.h - the CUDA backend's library calls ----------*- C++ -*-===//
//
// Internal to the CUDA backend (cuda_backend.cpp): how each call step of a
// plan maps onto tcc_cuda_kernels and cuBLASLt GemmPlans, dispatched by the
// plan's dtypes (f32, and bf16 / f16 natively in every call but the
// optimizer updates). planCall runs
// when the session opens (shapes only: GEMM plans, workspace sizes, which
// steps report bad ids); enqueueCall when the step runs (enqueue only, no
// synchronisation, no allocation, so it can be captured in a CUDA graph).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_CUDA_CALLS_H
#define TCC_RUNTIME_EXEC_CUDA_CALLS_H

#include "exec/artifact.h"
#include "kernels/cuda/gemm.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt {

/// A matmul or gemm call as the CPU backend maps it (cpu_backend.cpp):
/// one GEMM over all rows, one strided-batched GEMM, or one GEMM per output
/// batch with the broadcast operand's matrix looked up.
struct GemmStep {
  std::unique_ptr<cuda::GemmPlan> plan;
  bool empty = false;     ///< no output element: nothing to do
  bool zero = false;      ///< k == 0: the output is zero-filled
  bool loop = false;      ///< one GEMM per entry of lmap / rmap
  std::vector<int64_t> lmap, rmap;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1, beta = 0;
  int64_t elementBytes = 4; ///< of A, B, C (f32 4, bf16 / f16 2)
  bool copyC = false; ///< gemm: c [m, n] is copied into the output first
  bool biasC = false; ///< gemm: c [n] / [1, n] added by the bias epilogue
};

struct CallPlan {
  GemmStep gemm;         ///< Matmul, Gemm
  size_t workspace = 0;  ///< scratch bytes the call needs
  int errorSlot = -1;    ///< its device error word, for steps reading ids
};

/// Whether call `op` reports bad rows / steps through an error word.
bool writesErrorWord(Op op);

/// Why the CUDA backend cannot run call `step` of `fn`, or "".
std::string cudaCallUnsupported(const Function &fn, const Step &step);

/// Plans call `s` of `fn` (its GemmPlan made on `gemm`); throws
/// TCC_ERROR_BACKEND naming `where` when cuBLASLt refuses the GEMM.
CallPlan planCall(const Function &fn, size_t s, const cuda::GemmContext &gemm,
                  const std::string &where);

struct CallContext {
  cudaStream_t stream = nullptr;
  void *workspace = nullptr;
  int64_t *errorWords = nullptr; ///< device, one per error slot
};

/// Enqueues call `s` of `fn`; `ptrs[v]` is value v's device address.
/// Returns 0 or the cudaError_t of a launcher that refused.
int enqueueCall(const Function &fn, size_t s, const CallPlan &plan,
                uint8_t *const *ptrs, const CallContext &ctx);

/// The TCC_ERROR_DATA / TCC_ERROR_FORMAT message for error word value
/// `word` (>= 0) of call `s`, as the CPU backend words it. `readInt(v, i)`
/// downloads element i of the integer value with id v; `params` names
/// parameters.
std::string callErrorMessage(
    const Function &fn, size_t s, int64_t word,
    const std::vector<TensorDesc> &params,
    const std::function<int64_t(int64_t, int64_t)> &readInt,
    tcc_status &status);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_CUDA_CALLS_H
