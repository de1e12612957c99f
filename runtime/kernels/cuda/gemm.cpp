// cuBLASLt GEMM plans (gemm.h): descriptors and the heuristic's algorithm
// chosen once at creation, row-major operands mapped to cuBLASLt's
// column-major by swapping A and B.
#include "kernels/cuda/gemm.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace tcc::cuda {
namespace {

std::string ltError(const char *what, cublasStatus_t st) {
  return std::string(what) + " failed: " + cublasLtGetStatusName(st) + " (" +
         cublasLtGetStatusString(st) + ")";
}

/// The largest power of two <= cap dividing `bytes` (cap when bytes is 0),
/// at least `least` (the element size, which every offset is a multiple of).
uint32_t alignmentOf(uint64_t bytes, uint32_t cap, uint32_t least) {
  uint32_t a = cap;
  while (a > least && bytes % a != 0)
    a /= 2;
  return a;
}

cudaDataType_t ltType(GemmDType t) {
  switch (t) {
  case GemmDType::F32:
    return CUDA_R_32F;
  case GemmDType::BF16:
    return CUDA_R_16BF;
  case GemmDType::F16:
    return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

cublasLtEpilogue_t ltEpilogue(Epilogue e) {
  switch (e) {
  case Epilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case Epilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case Epilogue::GeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  case Epilogue::BGradB:
    return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

} // namespace

const char *gemmDTypeName(GemmDType t) {
  switch (t) {
  case GemmDType::F32:
    return "f32";
  case GemmDType::BF16:
    return "bf16";
  case GemmDType::F16:
    return "f16";
  }
  return "?";
}

const char *epilogueName(Epilogue e) {
  switch (e) {
  case Epilogue::None:
    return "none";
  case Epilogue::Bias:
    return "bias";
  case Epilogue::GeluBias:
    return "gelu_bias";
  case Epilogue::BGradB:
    return "bgradb";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// GemmContext
//===----------------------------------------------------------------------===//

std::unique_ptr<GemmContext> GemmContext::create(std::string *error) {
  cublasLtHandle_t h = nullptr;
  cublasStatus_t st = cublasLtCreate(&h);
  if (st != CUBLAS_STATUS_SUCCESS) {
    if (error)
      *error = ltError("cublasLtCreate", st);
    return nullptr;
  }
  std::unique_ptr<GemmContext> c(new GemmContext());
  c->handle_ = h;
  return c;
}

GemmContext::~GemmContext() {
  if (handle_)
    cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

//===----------------------------------------------------------------------===//
// GemmPlan
//===----------------------------------------------------------------------===//

struct GemmPlan::Impl {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  // cuBLASLt's A is our B and its B our A (C^T = op(B)^T op(A)^T).
  cublasLtMatrixLayout_t ltA = nullptr, ltB = nullptr, ltC = nullptr;
  cublasLtMatmulAlgo_t algo{};

  ~Impl() {
    if (ltC)
      cublasLtMatrixLayoutDestroy(ltC);
    if (ltB)
      cublasLtMatrixLayoutDestroy(ltB);
    if (ltA)
      cublasLtMatrixLayoutDestroy(ltA);
    if (op)
      cublasLtMatmulDescDestroy(op);
  }
};

GemmPlan::~GemmPlan() = default;

std::unique_ptr<GemmPlan> GemmPlan::create(const GemmContext &context,
                                           const GemmDesc &d,
                                           std::string *error) {
  auto fail = [&](const std::string &msg) -> std::unique_ptr<GemmPlan> {
    if (error)
      *error = msg;
    return nullptr;
  };
  if (d.m <= 0 || d.n <= 0 || d.k <= 0 || d.batch <= 0)
    return fail("GEMM shape must have m, n, k, batch > 0 (got m=" +
                std::to_string(d.m) + " n=" + std::to_string(d.n) +
                " k=" + std::to_string(d.k) +
                " batch=" + std::to_string(d.batch) + ")");
  if (d.m > INT32_MAX || d.n > INT32_MAX || d.k > INT32_MAX ||
      d.batch > INT32_MAX)
    return fail("GEMM dimension beyond 2^31");
  if (d.strideA < 0 || d.strideB < 0 || d.strideC < 0)
    return fail("GEMM batch strides must be >= 0");
  if (d.batch > 1 && d.strideC < d.m * d.n)
    return fail("GEMM output batches overlap (strideC < m * n)");
  if (d.epilogue == Epilogue::BGradB && d.batch != 1)
    return fail("the bgradb epilogue needs batch == 1");
  if (d.alignment < int(gemmDTypeSize(d.dtype)) ||
      (d.alignment & (d.alignment - 1)) != 0)
    return fail("GEMM alignment must be a power of two >= the element size");

  std::unique_ptr<GemmPlan> plan(new GemmPlan());
  plan->desc_ = d;
  plan->impl_ = std::make_unique<Impl>();
  Impl &im = *plan->impl_;
  im.handle = static_cast<cublasLtHandle_t>(context.handle());

  // 16-bit operands: exact products, f32 accumulation, f32 alpha / beta.
  const bool tf32 = d.allowTF32 && d.dtype == GemmDType::F32;
  cublasComputeType_t compute =
      tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t type = ltType(d.dtype);
  const uint64_t elementBytes = gemmDTypeSize(d.dtype);
  cublasStatus_t st = cublasLtMatmulDescCreate(&im.op, compute, CUDA_R_32F);
  if (st != CUBLAS_STATUS_SUCCESS)
    return fail(ltError("cublasLtMatmulDescCreate", st));
  auto setOp = [&](cublasLtMatmulDescAttributes_t attr, const void *value,
                   size_t size) {
    return cublasLtMatmulDescSetAttribute(im.op, attr, value, size);
  };
  cublasOperation_t opA = d.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = d.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epi = ltEpilogue(d.epilogue);
  if ((st = setOp(CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA)) ||
      (st = setOp(CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB)) ||
      (st = setOp(CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi)))
    return fail(ltError("cublasLtMatmulDescSetAttribute", st));

  const uint32_t cap = static_cast<uint32_t>(d.alignment);
  auto strideAlign = [&](int64_t stride) {
    return d.batch > 1 && stride != 0
               ? alignmentOf(uint64_t(stride) * elementBytes, cap,
                             uint32_t(elementBytes))
               : cap;
  };
  if (d.epilogue != Epilogue::None) {
    // The bias (or bias gradient) in the operands' type.
    int32_t biasType = type;
    if ((st = setOp(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
                    sizeof biasType)))
      return fail(ltError("cublasLtMatmulDescSetAttribute(bias type)", st));
    // The heuristic reads the bias pointer's alignment only; a stand-in
    // whose address is the guaranteed alignment says exactly that. run()
    // sets the real pointer.
    const void *standIn = reinterpret_cast<const void *>(uintptr_t(cap));
    if ((st = setOp(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &standIn,
                    sizeof standIn)))
      return fail(ltError("cublasLtMatmulDescSetAttribute(bias)", st));
  }

  // Column-major views of the row-major operands.
  auto layout = [&](cublasLtMatrixLayout_t *out, int64_t rows, int64_t cols,
                    int64_t stride) {
    cublasStatus_t s =
        cublasLtMatrixLayoutCreate(out, type, uint64_t(rows),
                                   uint64_t(cols), rows);
    if (s != CUBLAS_STATUS_SUCCESS || d.batch == 1)
      return s;
    int32_t count = static_cast<int32_t>(d.batch);
    s = cublasLtMatrixLayoutSetAttribute(
        *out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    if (s != CUBLAS_STATUS_SUCCESS)
      return s;
    return cublasLtMatrixLayoutSetAttribute(
        *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof stride);
  };
  // Our B: [k, n] row-major = n x k column-major (ld n); [n, k] when transB.
  if ((st = d.transB ? layout(&im.ltA, d.k, d.n, d.strideB)
                     : layout(&im.ltA, d.n, d.k, d.strideB)) ||
      // Our A: [m, k] row-major = k x m column-major; [k, m] when transA.
      (st = d.transA ? layout(&im.ltB, d.m, d.k, d.strideA)
                     : layout(&im.ltB, d.k, d.m, d.strideA)) ||
      // C: [m, n] row-major = n x m column-major.
      (st = layout(&im.ltC, d.n, d.m, d.strideC)))
    return fail(ltError("cublasLtMatrixLayoutCreate", st));

  cublasLtMatmulPreference_t pref = nullptr;
  if ((st = cublasLtMatmulPreferenceCreate(&pref)))
    return fail(ltError("cublasLtMatmulPreferenceCreate", st));
  uint64_t maxWs = d.maxWorkspaceBytes;
  uint32_t alignLtA = strideAlign(d.strideB), alignLtB = strideAlign(d.strideA),
           alignC = strideAlign(d.strideC);
  auto setPref = [&](cublasLtMatmulPreferenceAttributes_t attr,
                     const void *value, size_t size) {
    return cublasLtMatmulPreferenceSetAttribute(pref, attr, value, size);
  };
  if ((st = setPref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWs,
                    sizeof maxWs)) ||
      (st = setPref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignLtA,
                    sizeof alignLtA)) ||
      (st = setPref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignLtB,
                    sizeof alignLtB)) ||
      (st = setPref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC,
                    sizeof alignC)) ||
      (st = setPref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC,
                    sizeof alignC))) {
    cublasLtMatmulPreferenceDestroy(pref);
    return fail(ltError("cublasLtMatmulPreferenceSetAttribute", st));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  st = cublasLtMatmulAlgoGetHeuristic(im.handle, im.op, im.ltA, im.ltB,
                                      im.ltC, im.ltC, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0)
    return fail(std::string("no cuBLASLt algorithm for this GEMM (epilogue ") +
                epilogueName(d.epilogue) + ", " +
                (tf32 ? "tf32" : gemmDTypeName(d.dtype)) + ")" +
                (st != CUBLAS_STATUS_SUCCESS
                     ? ": " + ltError("cublasLtMatmulAlgoGetHeuristic", st)
                     : std::string()));
  im.algo = result.algo;
  plan->workspaceBytes_ = result.workspaceSize;
  return plan;
}

Status GemmPlan::run(const void *a, const void *b, void *c, float alpha,
                     float beta, void *bias, void *workspace,
                     cudaStream_t stream, const void *cIn) const {
  Impl &im = *impl_;
  if (desc_.epilogue != Epilogue::None) {
    if (!bias)
      return static_cast<Status>(cudaErrorInvalidValue);
    const void *ptr = bias;
    if (cublasLtMatmulDescSetAttribute(im.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &ptr, sizeof ptr) !=
        CUBLAS_STATUS_SUCCESS)
      return static_cast<Status>(cudaErrorInvalidValue);
  }
  if (workspaceBytes_ > 0 && !workspace)
    return static_cast<Status>(cudaErrorInvalidValue);
  cublasStatus_t st = cublasLtMatmul(
      im.handle, im.op, &alpha, b, im.ltA, a, im.ltB, &beta, cIn ? cIn : c,
      im.ltC, c, im.ltC, &im.algo, workspace, workspaceBytes_, stream);
  if (st != CUBLAS_STATUS_SUCCESS) {
    // A launch failure is a CUDA error; anything else is a usage error.
    cudaError_t e = cudaGetLastError();
    return static_cast<Status>(e != cudaSuccess ? e : cudaErrorInvalidValue);
  }
  return 0;
}

} // namespace tcc::cuda
