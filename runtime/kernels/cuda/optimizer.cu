// SGD and AdamW with the CPU kernels' roundings (runtime/kernels/cpu/
// optimizer.cpp, torch 1.13's _single_tensor_sgd / _single_tensor_adamw):
// every float operation is an explicitly rounded intrinsic, so nvcc cannot
// contract or reorder anything, and the double scalars are computed with
// explicitly rounded double operations as the CPU does with
// -ffp-contract=off. The multi-tensor AdamW walks a table of tensors cut
// into fixed chunks: one launch for all parameters, each with its own
// weight decay (the only per-tensor scalar: lr, step and the betas are the
// launch's). An update with a working copy (WorkingCopy) stores each new
// parameter also rounded to bf16 / f16 in the same loop.
#include "kernels/cuda/common.cuh"

#include <cstring>

namespace tcc::cuda {
namespace {
using namespace detail;

constexpr int kThreads = 256;
constexpr int64_t kChunk = 16384; // elements per chunk of the multi-tensor walk

struct AdamwScalars {
  float decay, b1, b2, oneMinusB1, oneMinusB2, bc2Sqrt, eps, negStep;
};

/// The CPU kernel's decoupled weight decay factor 1 - lr * weight_decay.
__device__ __forceinline__ float adamwDecay(double lr, double weightDecay) {
  return static_cast<float>(__dsub_rn(1.0, __dmul_rn(lr, weightDecay)));
}

/// The CPU kernel's host-side scalars, from the device lr and step.
__device__ __forceinline__ AdamwScalars adamwScalars(double lr, int64_t step,
                                                     double beta1,
                                                     double beta2, double eps,
                                                     double weightDecay) {
  const double t = double(step);
  const double biasCorrection1 = __dsub_rn(1.0, pow(beta1, t));
  const double biasCorrection2 = __dsub_rn(1.0, pow(beta2, t));
  const double stepSize = __ddiv_rn(lr, biasCorrection1);
  AdamwScalars s;
  s.decay = adamwDecay(lr, weightDecay);
  s.b1 = static_cast<float>(beta1);
  s.b2 = static_cast<float>(beta2);
  s.oneMinusB1 = static_cast<float>(__dsub_rn(1.0, beta1));
  s.oneMinusB2 = static_cast<float>(__dsub_rn(1.0, beta2));
  s.bc2Sqrt = static_cast<float>(__dsqrt_rn(biasCorrection2));
  s.eps = static_cast<float>(eps);
  s.negStep = static_cast<float>(-stepSize);
  return s;
}

struct AdamwOut {
  float p, m, v;
};

__device__ __forceinline__ AdamwOut adamwElement(const AdamwScalars &s,
                                                 float param, float g,
                                                 float expAvg,
                                                 float expAvgSq) {
  AdamwOut o;
  const float p = __fmul_rn(param, s.decay);
  o.m = __fmaf_rn(g, s.oneMinusB1, __fmul_rn(expAvg, s.b1));
  o.v = __fmaf_rn(__fmul_rn(s.oneMinusB2, g), g, __fmul_rn(expAvgSq, s.b2));
  const float denom =
      __fadd_rn(__fdiv_rn(__fsqrt_rn(o.v), s.bc2Sqrt), s.eps);
  o.p = __fadd_rn(p, __fdiv_rn(__fmul_rn(s.negStep, o.m), denom));
  return o;
}

/// Element i of a working copy: the new parameter p rounded to nearest even
/// (a uniform branch on the copy's type; nothing without one).
__device__ __forceinline__ void storeWorking(const WorkingCopy &w, int64_t i,
                                             float p) {
  if (!w.out)
    return;
  if (w.type == FloatType::BF16)
    static_cast<__nv_bfloat16 *>(w.out)[i] = __float2bfloat16_rn(p);
  else
    static_cast<__half *>(w.out)[i] = __float2half_rn(p);
}

/// A skipped update's working copy: the operand's bits, where the result is
/// elsewhere.
__device__ __forceinline__ void keepWorking(const WorkingCopy &w, int64_t i) {
  if (w.out && w.out != w.in)
    static_cast<uint16_t *>(w.out)[i] = static_cast<const uint16_t *>(w.in)[i];
}

/// Elements [begin, end) of one tensor; 16-byte accesses when `vec`
/// (begin a multiple of 4 and every pointer 16-byte aligned).
__device__ __forceinline__ void adamwRange(const AdamwScalars &s,
                                           const AdamwTensor &t, int64_t begin,
                                           int64_t end, int64_t tid,
                                           int64_t stride, bool vec) {
  int64_t i = begin;
  if (vec) {
    const int64_t quads = (end - begin) / 4;
    for (int64_t qd = tid; qd < quads; qd += stride) {
      const int64_t e = begin + qd * 4;
      float p[4], g[4], m[4], v[4];
      loadVec<4>(t.param + e, p);
      loadVec<4>(t.grad + e, g);
      loadVec<4>(t.expAvg + e, m);
      loadVec<4>(t.expAvgSq + e, v);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        AdamwOut o = adamwElement(s, p[u], g[u], m[u], v[u]);
        p[u] = o.p;
        m[u] = o.m;
        v[u] = o.v;
        storeWorking(t.working, e + u, o.p);
      }
      storeVec<4>(t.newParam + e, p);
      storeVec<4>(t.newExpAvg + e, m);
      storeVec<4>(t.newExpAvgSq + e, v);
    }
    i = begin + quads * 4;
  }
  for (int64_t e = i + tid; e < end; e += stride) {
    AdamwOut o = adamwElement(s, t.param[e], t.grad[e], t.expAvg[e],
                              t.expAvgSq[e]);
    t.newParam[e] = o.p;
    t.newExpAvg[e] = o.m;
    t.newExpAvgSq[e] = o.v;
    storeWorking(t.working, e, o.p);
  }
}

/// Dynamic loss scaling's overflow flag (null: never skip).
__device__ __forceinline__ bool skipped(const uint8_t *skip) {
  return skip != nullptr && *skip != 0;
}

/// A skipped update: the results are the operands (nothing to do in place).
__device__ __forceinline__ void adamwKeep(const AdamwTensor &t, int64_t begin,
                                          int64_t end, int64_t first,
                                          int64_t stride) {
  for (int64_t e = begin + first; e < end; e += stride) {
    if (t.newParam != t.param)
      t.newParam[e] = t.param[e];
    if (t.newExpAvg != t.expAvg)
      t.newExpAvg[e] = t.expAvg[e];
    if (t.newExpAvgSq != t.expAvgSq)
      t.newExpAvgSq[e] = t.expAvgSq[e];
    keepWorking(t.working, e);
  }
}

__device__ __forceinline__ bool tensorAligned(const AdamwTensor &t) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(t.param) |
                   reinterpret_cast<uintptr_t>(t.grad) |
                   reinterpret_cast<uintptr_t>(t.expAvg) |
                   reinterpret_cast<uintptr_t>(t.expAvgSq) |
                   reinterpret_cast<uintptr_t>(t.newParam) |
                   reinterpret_cast<uintptr_t>(t.newExpAvg) |
                   reinterpret_cast<uintptr_t>(t.newExpAvgSq);
  return (bits & 15u) == 0;
}

__global__ void __launch_bounds__(kThreads)
    adamwKernel(AdamwTensor t, const double *lr, const int64_t *step,
                double beta1, double beta2, double eps, double weightDecay,
                const uint8_t *skip, int64_t *error) {
  const int64_t st = *step;
  if (st < 1) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
      recordError(error, 0);
    return;
  }
  if (skipped(skip)) {
    adamwKeep(t, 0, t.n, int64_t(blockIdx.x) * blockDim.x + threadIdx.x,
              int64_t(gridDim.x) * blockDim.x);
    return;
  }
  const AdamwScalars s = adamwScalars(*lr, st, beta1, beta2, eps, weightDecay);
  adamwRange(s, t, 0, t.n, int64_t(blockIdx.x) * blockDim.x + threadIdx.x,
             int64_t(gridDim.x) * blockDim.x, tensorAligned(t));
}

/// Table: `count` AdamwTensor, then count + 1 chunk offsets (int64): tensor
/// i owns chunks [start[i], start[i + 1]). The scalars are adamwKernel's,
/// the decay factor from each tensor's weight decay.
__global__ void __launch_bounds__(kThreads)
    adamwMultiKernel(const AdamwTensor *tensors, const int64_t *chunkStart,
                     int count, int64_t chunks, const double *lr,
                     const int64_t *step, double beta1, double beta2,
                     double eps, const uint8_t *skip, int64_t *error) {
  const int64_t st = *step;
  if (st < 1) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
      recordError(error, 0);
    return;
  }
  const bool keep = skipped(skip);
  const double lrValue = *lr;
  AdamwScalars s = adamwScalars(lrValue, st, beta1, beta2, eps, 0.0);
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    // The tensor owning chunk c: the last i with chunkStart[i] <= c.
    int lo = 0, hi = count - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) / 2;
      if (chunkStart[mid] <= c)
        lo = mid;
      else
        hi = mid - 1;
    }
    const AdamwTensor t = tensors[lo];
    s.decay = adamwDecay(lrValue, t.weightDecay);
    const int64_t begin = (c - chunkStart[lo]) * kChunk;
    const int64_t end = begin + kChunk < t.n ? begin + kChunk : t.n;
    if (keep)
      adamwKeep(t, begin, end, threadIdx.x, blockDim.x);
    else
      adamwRange(s, t, begin, end, threadIdx.x, blockDim.x, tensorAligned(t));
  }
}

__global__ void __launch_bounds__(kThreads)
    sgdKernel(const float *param, const float *grad, const float *buf,
              float *newParam, float *newBuf, int64_t n, const double *lr,
              double momentum, double weightDecay, bool nesterov,
              const uint8_t *skip, WorkingCopy working) {
  const bool useBuf = momentum != 0;
  if (skipped(skip)) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
      if (newParam != param)
        newParam[i] = param[i];
      if (useBuf && newBuf != buf)
        newBuf[i] = buf[i];
      keepWorking(working, i);
    }
    return;
  }
  const float wd = float(weightDecay), mom = float(momentum),
              negLr = float(-*lr);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float p = param[i], d = grad[i];
    if (weightDecay != 0)
      d = __fmaf_rn(p, wd, d);
    if (useBuf) {
      float b = __fmaf_rn(d, 1.0f, __fmul_rn(buf[i], mom));
      newBuf[i] = b;
      d = nesterov ? __fmaf_rn(b, mom, d) : b;
    }
    const float np = __fmaf_rn(d, negLr, p);
    newParam[i] = np;
    storeWorking(working, i, np);
  }
}

unsigned elementwiseBlocks(int64_t n, int perThread) {
  int64_t blocks = ceilDiv(n, int64_t(kThreads) * perThread);
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 8192 ? 8192 : blocks);
}

/// A working copy is 16-bit with an operand to keep when it has a result.
bool validWorking(const WorkingCopy &w) {
  return !w.out || ((w.type == FloatType::BF16 || w.type == FloatType::F16) &&
                    w.in != nullptr);
}

size_t tableOffsets(int count) {
  return roundUp256(sizeof(AdamwTensor) * size_t(count));
}

} // namespace

Status sgd_update(const float *param, const float *grad, const float *buf,
                  float *newParam, float *newBuf, int64_t n, const double *lr,
                  double momentum, double weightDecay, bool nesterov,
                  const uint8_t *skip, WorkingCopy working,
                  cudaStream_t stream) {
  if (n < 0 || (momentum != 0 && (!buf || !newBuf)) || !validWorking(working))
    return invalid();
  if (n == 0)
    return 0;
  sgdKernel<<<elementwiseBlocks(n, 1), kThreads, 0, stream>>>(
      param, grad, buf, newParam, newBuf, n, lr, momentum, weightDecay,
      nesterov, skip, working);
  return launched();
}

Status adamw_update(const float *param, const float *grad,
                    const float *expAvg, const float *expAvgSq,
                    float *newParam, float *newExpAvg, float *newExpAvgSq,
                    int64_t n, const double *lr, const int64_t *step,
                    double beta1, double beta2, double eps,
                    double weightDecay, const uint8_t *skip,
                    WorkingCopy working, int64_t *error, cudaStream_t stream) {
  if (n < 0 || !validWorking(working))
    return invalid();
  if (n == 0)
    return 0;
  AdamwTensor t{param,     grad,        expAvg, expAvgSq,    newParam,
                newExpAvg, newExpAvgSq, n,      weightDecay, working};
  adamwKernel<<<elementwiseBlocks(n, 4), kThreads, 0, stream>>>(
      t, lr, step, beta1, beta2, eps, weightDecay, skip, error);
  return launched();
}

size_t adamw_table_bytes(int count) {
  return count <= 0 ? 0
                    : tableOffsets(count) + sizeof(int64_t) * size_t(count + 1);
}

int64_t adamw_build_table(const AdamwTensor *tensors, int count,
                          void *hostTable) {
  if (count <= 0)
    return 0;
  char *p = static_cast<char *>(hostTable);
  std::memcpy(p, tensors, sizeof(AdamwTensor) * size_t(count));
  int64_t *start = reinterpret_cast<int64_t *>(p + tableOffsets(count));
  int64_t chunks = 0;
  for (int i = 0; i < count; ++i) {
    start[i] = chunks;
    chunks += ceilDiv(tensors[i].n < 0 ? 0 : tensors[i].n, kChunk);
  }
  start[count] = chunks;
  return chunks;
}

Status adamw_update_multi(const void *deviceTable, int count, int64_t chunks,
                          const double *lr, const int64_t *step, double beta1,
                          double beta2, double eps, const uint8_t *skip,
                          int64_t *error, cudaStream_t stream) {
  if (count < 0 || chunks < 0 || (count > 0 && !deviceTable))
    return invalid();
  if (count == 0 || chunks == 0)
    return 0;
  const char *p = static_cast<const char *>(deviceTable);
  const auto *tensors = reinterpret_cast<const AdamwTensor *>(p);
  const auto *start =
      reinterpret_cast<const int64_t *>(p + tableOffsets(count));
  const unsigned blocks =
      static_cast<unsigned>(chunks < 65535 ? chunks : 65535);
  adamwMultiKernel<<<blocks, kThreads, 0, stream>>>(
      tensors, start, count, chunks, lr, step, beta1, beta2, eps, skip, error);
  return launched();
}

} // namespace tcc::cuda
