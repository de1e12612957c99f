// SGD and AdamW updates, bit for bit torch 1.13's _single_tensor_sgd and
// _single_tensor_adamw on the CPU (and so lib/Interp/Train.cpp): every
// tensor op rounds to float, Python scalars are doubles rounded to float
// where they meet a tensor, and `t.add_(u, alpha=a)` / addcmul_ are one
// fused multiply-add each (ATen's vec::fmadd). Compiled with
// -ffp-contract=off so the compiler adds no other fusions. Elements are
// independent: large tensors are split over the worker pool (parallel.h).
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

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

} // namespace

void sgd_update(const float *param, const float *grad, const float *buf,
                float *newParam, float *newBuf, int64_t n, double lr,
                double momentum, double weightDecay, bool nesterov,
                WorkingCopy working) {
  const bool useBuf = momentum != 0;
  const float wd = float(weightDecay), mom = float(momentum),
              negLr = float(-lr);
  parallel_for(n, Chunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float p = param[i], d = grad[i];
      if (weightDecay != 0)
        d = std::fma(p, wd, d); // d_p = d_p.add(param, alpha=weight_decay)
      if (useBuf) {
        // buf.mul_(momentum).add_(d_p, alpha=1 - dampening); a zero buffer
        // gives d_p exactly, as PyTorch's first-step clone does.
        float b = std::fma(d, 1.0f, float(buf[i] * mom));
        newBuf[i] = b;
        d = nesterov ? std::fma(b, mom, d) : b;
      }
      float np = std::fma(d, negLr, p); // param.add_(d_p, alpha=-lr)
      newParam[i] = np;
      writeWorking(working, i, np);
    }
  });
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
  const float decay = float(1 - lr * weightDecay), b1 = float(beta1),
              b2 = float(beta2);
  const float oneMinusB1 = float(1 - beta1), oneMinusB2 = float(1 - beta2);
  const float bc2Sqrt = float(biasCorrection2Sqrt), epsF = float(eps),
              negStep = float(-stepSize);
  parallel_for(n, Chunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float g = grad[i];
      // param.mul_(1 - lr * weight_decay)
      float p = param[i] * decay;
      // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
      float m = std::fma(g, oneMinusB1, float(expAvg[i] * b1));
      // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
      float v = std::fma(float(oneMinusB2 * g), g, float(expAvgSq[i] * b2));
      // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
      float denom = float(float(std::sqrt(v)) / bc2Sqrt) + epsF;
      // param.addcdiv_(exp_avg, denom, value=-step_size)
      float np = p + float(float(negStep * m) / denom);
      newParam[i] = np;
      writeWorking(working, i, np);
      newExpAvg[i] = m;
      newExpAvgSq[i] = v;
    }
  });
  return true;
}

} // namespace tcc::cpu
