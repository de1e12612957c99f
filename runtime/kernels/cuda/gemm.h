//===- gemm.h - cuBLASLt GEMMs of the CUDA backend ---------------*- C++ -*-===//
//
// Every GEMM of the CUDA backend is a GemmPlan: made once per (transA,
// transB, m, n, k, batch, strides, dtype, epilogue, TF32) when the runtime
// loads an artifact - the cuBLASLt descriptors are built and the algorithm
// is chosen by cuBLASLt's heuristic there, never per step - and then `run`
// any number of times.
//
// Operands are row-major as in runtime/kernels/cpu/cpu_kernels.h's gemm:
// for b in [0, batch): C[b] = epilogue(alpha * op(A[b]) @ op(B[b]) +
// beta * C[b]), op(A) [m, k], op(B) [k, n], C [m, n]; A is stored [k, m]
// when transA (likewise B), each matrix dense; X[b] = x + b * strideX
// elements (0 broadcasts one matrix). cuBLASLt is column-major, so the plan
// computes C^T = op(B)^T op(A)^T: the operands swap places and nothing is
// copied. With beta == 0, C is only written.
//
// Plain C++: no CUDA or cuBLASLt types (cudaStream_t is declared the way
// driver_types.h declares it).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_CUDA_GEMM_H
#define TCC_RUNTIME_KERNELS_CUDA_GEMM_H

#include "kernels/cuda/cuda_kernels.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tcc::cuda {

/// The type of A, B, C and the bias (one type for all four). bf16 / f16
/// multiply exactly and accumulate in f32 (CUBLAS_COMPUTE_32F; alpha, beta
/// f32), and C is rounded once to nearest even.
enum class GemmDType { F32, BF16, F16 };

const char *gemmDTypeName(GemmDType t);

/// Bytes of one element.
inline size_t gemmDTypeSize(GemmDType t) { return t == GemmDType::F32 ? 4 : 2; }

enum class Epilogue {
  None,     ///< C = alpha * op(A) op(B) + beta * C
  Bias,     ///< ... + bias[j] on every row (bias [n]: a Linear's bias)
  GeluBias, ///< gelu_tanh(... + bias[j]) (cuBLASLt's GELU is the tanh form)
  /// C as None, and bias[i] = sum_k op(A)[i][k] for i < m: with
  /// op(A) = dY^T (transA, A = dY [rows, m]) the Linear bias gradient beside
  /// dW = dY^T X. cuBLASLt's BGRADB on the swapped operands. Not every
  /// cuBLASLt supports it for every type (fp32 in particular):
  /// GemmPlan::create then fails.
  BGradB,
};

const char *epilogueName(Epilogue e);

struct GemmDesc {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0; ///< elements
  GemmDType dtype = GemmDType::F32;
  Epilogue epilogue = Epilogue::None;
  /// TF32 tensor cores for fp32 (CUBLAS_COMPUTE_32F_FAST_TF32, ~1e-3
  /// relative); false keeps full fp32 (CUBLAS_COMPUTE_32F). Ignored for
  /// bf16 / f16 (always CUBLAS_COMPUTE_32F, on tensor cores).
  bool allowTF32 = false;
  /// The alignment (bytes) the runtime guarantees for A, B, C and bias; the
  /// heuristic only picks algorithms that accept it (the batch strides are
  /// folded in).
  int alignment = 16;
  /// The largest workspace the plan may use; run's workspace must be at
  /// least workspaceBytes() of the plan.
  size_t maxWorkspaceBytes = 32u << 20;
};

/// A cuBLASLt handle (one per device and thread of use).
class GemmContext {
public:
  /// Creates the handle on the current device; null with `error` set on
  /// failure (no device, no cuBLASLt).
  static std::unique_ptr<GemmContext> create(std::string *error);
  ~GemmContext();
  GemmContext(const GemmContext &) = delete;
  GemmContext &operator=(const GemmContext &) = delete;
  void *handle() const { return handle_; }

private:
  GemmContext() = default;
  void *handle_ = nullptr;
};

class GemmPlan {
public:
  /// Builds the descriptors and asks the heuristic for the algorithm;
  /// null with `error` naming the reason (bad shape, unsupported epilogue,
  /// no algorithm) on failure. The context must outlive the plan.
  static std::unique_ptr<GemmPlan> create(const GemmContext &context,
                                          const GemmDesc &desc,
                                          std::string *error);
  ~GemmPlan();
  GemmPlan(const GemmPlan &) = delete;
  GemmPlan &operator=(const GemmPlan &) = delete;

  const GemmDesc &desc() const { return desc_; }
  /// The workspace the chosen algorithm needs (<= maxWorkspaceBytes).
  size_t workspaceBytes() const { return workspaceBytes_; }

  /// Enqueues the GEMM. a, b, c and bias hold elements of the desc's
  /// dtype. With `cIn`, beta * C is read from there (laid out as c; it may
  /// be c) and the result written to c. `bias` is read for Bias/GeluBias and written for BGradB
  /// (ignored for None); every pointer must have the desc's alignment;
  /// `workspace` holds workspaceBytes() (may be null when that is 0). Not
  /// for concurrent use from several threads (it sets the bias pointer on
  /// the plan's descriptor).
  Status run(const void *a, const void *b, void *c, float alpha, float beta,
             void *bias, void *workspace, cudaStream_t stream,
             const void *cIn = nullptr) const;

private:
  struct Impl;
  GemmPlan() = default;
  GemmDesc desc_;
  size_t workspaceBytes_ = 0;
  std::unique_ptr<Impl> impl_;
};

} // namespace tcc::cuda

#endif // TCC_RUNTIME_KERNELS_CUDA_GEMM_H
