// SGD and AdamW updates, bit for bit torch 1.13's _single_tensor_sgd and
// _single_tensor_adamw on the CPU (and so lib/Interp/Train.cpp): every
// tensor op rounds to float, Python scalars are doubles rounded to float
// where they meet a tensor, and `t.add_(u, alpha=a)` / addcmul_ are one
// fused multiply-add each (ATen's vec::fmadd). Compiled with
// -ffp-contract=off so the compiler adds no other fusions. Elements are
// independent: large tensors are split over the worker pool (parallel.h).
// The loops are cloned for x86-64-v4, x86-64-v3 and the baseline
// (TCC_CPU_CLONES): with FMA hardware std::fma is one instruction instead of
// libm's software fma, and the loops vectorise; fma, sqrt and division are
// correctly rounded in every clone, so every clone gives the same bits.
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/clones.h"

#include "data/half.h"

#include <cmath>

namespace tcc::cpu {

namespace {

/// The working copy's element i from the new parameter p.
inline void writeWorking(const WorkingCopy &w, int64_t i, float p) {
  if (w.data)
    w.data[i] = w.bf16 ? data::floatToBf16(p) : data::floatToF16(p);
}

/// Elements per chunk of the pool.
constexpr int64_t Chunk = int64_t(1) << 14;

/// sgd_update's elements [begin, end).
struct Sgd {
  const float *param, *grad, *buf;
  float *newParam, *newBuf;
  float wd, mom, negLr;
  bool useBuf, decay, nesterov;
  WorkingCopy working;
};

TCC_CPU_CLONES void sgdRange(const Sgd &a, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    float p = a.param[i], d = a.grad[i];
    if (a.decay)
      d = std::fma(p, a.wd, d); // d_p = d_p.add(param, alpha=weight_decay)
    if (a.useBuf) {
      // buf.mul_(momentum).add_(d_p, alpha=1 - dampening); a zero buffer
      // gives d_p exactly, as PyTorch's first-step clone does.
      float b = std::fma(d, 1.0f, float(a.buf[i] * a.mom));
      a.newBuf[i] = b;
      d = a.nesterov ? std::fma(b, a.mom, d) : b;
    }
    float np = std::fma(d, a.negLr, p); // param.add_(d_p, alpha=-lr)
    a.newParam[i] = np;
    writeWorking(a.working, i, np);
  }
}

/// adamw_update's elements [begin, end), with the host-side scalars.
struct Adamw {
  const float *param, *grad, *expAvg, *expAvgSq;
  float *newParam, *newExpAvg, *newExpAvgSq;
  float decay, b1, b2, oneMinusB1, oneMinusB2, bc2Sqrt, eps, negStep;
  WorkingCopy working;
};

TCC_CPU_CLONES void adamwRange(const Adamw &a, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    float g = a.grad[i];
    // param.mul_(1 - lr * weight_decay)
    float p = a.param[i] * a.decay;
    // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    float m = std::fma(g, a.oneMinusB1, float(a.expAvg[i] * a.b1));
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    float v = std::fma(float(a.oneMinusB2 * g), g, float(a.expAvgSq[i] * a.b2));
    // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    float denom = float(float(std::sqrt(v)) / a.bc2Sqrt) + a.eps;
    // param.addcdiv_(exp_avg, denom, value=-step_size)
    float np = p + float(float(a.negStep * m) / denom);
    a.newParam[i] = np;
    writeWorking(a.working, i, np);
    a.newExpAvg[i] = m;
    a.newExpAvgSq[i] = v;
  }
}

} // namespace

void sgd_update(const float *param, const float *grad, const float *buf,
                float *newParam, float *newBuf, int64_t n, double lr,
                double momentum, double weightDecay, bool nesterov,
                WorkingCopy working) {
  Sgd a{param,         grad,          buf,
        newParam,      newBuf,        float(weightDecay),
        float(momentum), float(-lr),  momentum != 0,
        weightDecay != 0, nesterov,   working};
  parallel_for(n, Chunk,
               [&](int64_t begin, int64_t end) { sgdRange(a, begin, end); });
}

bool adamw_update(const float *param, const float *grad, const float *expAvg,
                  const float *expAvgSq, float *newParam, float *newExpAvg,
                  float *newExpAvgSq, int64_t n, double lr, int64_t step,
                  double beta1, double beta2, double eps, double weightDecay,
                  WorkingCopy working) {
  if (step < 1)
    return false;
  // Host-side scalars, in double as Python computes them.
  double t = double(step);
  double biasCorrection1 = 1 - std::pow(beta1, t);
  double biasCorrection2 = 1 - std::pow(beta2, t);
  double stepSize = lr / biasCorrection1;
  double biasCorrection2Sqrt = std::sqrt(biasCorrection2);
  Adamw a{param,
          grad,
          expAvg,
          expAvgSq,
          newParam,
          newExpAvg,
          newExpAvgSq,
          float(1 - lr * weightDecay),
          float(beta1),
          float(beta2),
          float(1 - beta1),
          float(1 - beta2),
          float(biasCorrection2Sqrt),
          float(eps),
          float(-stepSize),
          working};
  parallel_for(n, Chunk,
               [&](int64_t begin, int64_t end) { adamwRange(a, begin, end); });
  return true;
}

} // namespace tcc::cpu
