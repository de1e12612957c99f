// Kernels of the training ops: cross-entropy and its gradient, and the SGD
// and AdamW updates.
//
// The optimizer kernels follow torch 1.13's _single_tensor_sgd and
// _single_tensor_adamw op by op: every tensor op rounds to the tensor's type,
// Python scalars are doubles rounded to the tensor's type where they meet a
// tensor, and `t.add_(u, alpha=a)` is one fused multiply-add (ATen's
// vectorised add is vec::fmadd; addcmul_ fuses its final add the same way
// under GCC). Checked bit for bit against torch.optim on the CPU.
#include "Kernel.h"

#include "tcc/TccOps.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using tcc::data::Array;

namespace tcc::interp {
namespace {

/// Row r's label, checked against the class count; nullopt for ignored rows.
bool readLabel(KernelContext &ctx, const Array &labels, int64_t r,
               int64_t classes, int64_t ignoreIndex,
               std::optional<int64_t> &label) {
  int64_t l = readInt(labels, r);
  label.reset();
  if (l == ignoreIndex)
    return true;
  if (l < 0 || l >= classes)
    return ctx.fail("label " + std::to_string(l) + " at row " +
                    std::to_string(r) + " is out of range for " +
                    std::to_string(classes) +
                    " classes (and is not ignore_index " +
                    std::to_string(ignoreIndex) + ")");
  label = l;
  return true;
}

/// log(sum(exp(row))) in double, shifted by the row maximum.
template <class T> double logSumExp(const T *row, int64_t n) {
  double m = -INFINITY;
  for (int64_t j = 0; j < n; ++j)
    if (double(row[j]) > m || std::isnan(double(row[j])))
      m = row[j];
  if (std::isinf(m))
    return m; // all -inf (or some +inf): no finite shift exists
  double s = 0;
  for (int64_t j = 0; j < n; ++j)
    s += std::exp(double(row[j]) - m);
  return m + std::log(s);
}

bool crossEntropyKernel(KernelContext &ctx) {
  auto op = llvm::cast<CrossEntropyOp>(ctx.op);
  const Array &logits = ctx.in(0u), &labels = ctx.in(1u);
  int64_t classes = logits.shape.back();
  int64_t rows = labels.numElements();
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *x = logits.data<T>();
    double sum = 0;
    int64_t count = 0;
    for (int64_t r = 0; r < rows; ++r) {
      std::optional<int64_t> label;
      if (!readLabel(ctx, labels, r, classes, op.getIgnoreIndex(), label))
        return false;
      if (!label)
        continue;
      const T *row = x + r * classes;
      sum += logSumExp(row, classes) - double(row[*label]);
      ++count;
    }
    ctx.out(0).template data<T>()[0] = static_cast<T>(sum);
    ctx.out(1).template data<T>()[0] = static_cast<T>(count);
    return true;
  };
  return ctx.finish(visitFloat(logits.dtype, compute), logits);
}

bool crossEntropyGradKernel(KernelContext &ctx) {
  auto op = llvm::cast<CrossEntropyGradOp>(ctx.op);
  const Array &logits = ctx.in(0u), &labels = ctx.in(1u), &seed = ctx.in(2u);
  int64_t classes = logits.shape.back();
  int64_t rows = labels.numElements();
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *x = logits.data<T>();
    T *dx = ctx.out().template data<T>();
    double g = seed.data<T>()[0];
    for (int64_t r = 0; r < rows; ++r) {
      std::optional<int64_t> label;
      if (!readLabel(ctx, labels, r, classes, op.getIgnoreIndex(), label))
        return false;
      const T *row = x + r * classes;
      T *drow = dx + r * classes;
      if (!label) {
        std::fill(drow, drow + classes, T(0));
        continue;
      }
      double lse = logSumExp(row, classes);
      for (int64_t j = 0; j < classes; ++j) {
        double p = std::exp(double(row[j]) - lse);
        drow[j] = static_cast<T>((p - (j == *label ? 1.0 : 0.0)) * g);
      }
    }
    return true;
  };
  return ctx.finish(visitFloat(logits.dtype, compute), logits);
}

/// The lr operand: tensor<f64> in the IR, so f64 with or without promotion.
double scalarF64(const Array &a) { return a.data<double>()[0]; }

/// The `skip` operand of an optimizer update (dynamic loss scaling's
/// overflow flag): true leaves parameter and state unchanged.
bool skipped(KernelContext &ctx, Value skip) {
  return skip && ctx.in(skip).data<uint8_t>()[0] != 0;
}

/// The elements an optimizer update changes: [first, first + count) of
/// its parameter, the gradient's elements from offset `first`.
struct UpdateRange {
  int64_t first = 0, count = 0;
  bool whole(int64_t n) const { return first == 0 && count == n; }
  bool contains(int64_t i) const { return i >= first && i < first + count; }
};

UpdateRange blockOf(int64_t offset, const Array &grad) {
  return {offset, grad.numElements()};
}

/// An optimizer update's working copy (result `index`): the new parameter
/// (result 0) rounded to the working type, or the old copy on a skipped
/// step.
/// A block update (`block`) rounds the block's elements only; the rest of
/// the copy passes through.
bool writeWorking(KernelContext &ctx, Value working, unsigned index, bool skip,
                  UpdateRange block) {
  if (!working)
    return true;
  if (skip) {
    ctx.out(index).bytes = ctx.in(working).bytes;
    return true;
  }
  data::Array rounded;
  if (!convertArray(ctx.out(0), ctx.out(index).dtype, rounded))
    return ctx.unsupportedDType(ctx.out(index));
  if (block.whole(ctx.out(0).numElements())) {
    ctx.out(index).bytes = std::move(rounded.bytes);
    return true;
  }
  size_t elem = data::dtypeSize(ctx.out(index).dtype);
  ctx.out(index).bytes = ctx.in(working).bytes;
  std::copy_n(rounded.bytes.begin() + block.first * elem, block.count * elem,
              ctx.out(index).bytes.begin() + block.first * elem);
  return true;
}

bool sgdUpdateKernel(KernelContext &ctx) {
  auto op = llvm::cast<SgdUpdateOp>(ctx.op);
  bool skip = skipped(ctx, op.getSkip());
  const Array &param = ctx.in(op.getParam()), &grad = ctx.in(op.getGrad());
  const Array *buffer = ctx.opt(op.getMomentumBuffer());
  double lr = scalarF64(ctx.in(op.getLr()));
  double momentum = op.getMomentum().convertToDouble();
  double weightDecay = op.getWeightDecay().convertToDouble();
  bool nesterov = op.getNesterov();
  UpdateRange block = blockOf(op.getElementOffset(), grad);
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *p = param.data<T>(), *g = grad.data<T>();
    const T *buf = buffer ? buffer->data<T>() : nullptr;
    T *newP = ctx.out(0).template data<T>();
    T *newBuf = buffer ? ctx.out(1).template data<T>() : nullptr;
    const T wd = T(weightDecay), mom = T(momentum), negLr = T(-lr);
    for (int64_t i = 0, n = param.numElements(); i < n; ++i) {
      if (skip || !block.contains(i)) {
        newP[i] = p[i];
        if (buf)
          newBuf[i] = buf[i];
        continue;
      }
      T d = g[i - block.first];
      if (weightDecay != 0)
        d = std::fma(p[i], wd, d); // d_p = d_p.add(param, alpha=weight_decay)
      if (buf) {
        // buf.mul_(momentum).add_(d_p, alpha=1 - dampening); a zero buffer
        // gives d_p exactly, as PyTorch's first-step clone does.
        T b = std::fma(d, T(1), T(buf[i] * mom));
        newBuf[i] = b;
        d = nesterov ? std::fma(b, mom, d) : b;
      }
      newP[i] = std::fma(d, negLr, p[i]); // param.add_(d_p, alpha=-lr)
    }
    return true;
  };
  return ctx.finish(visitFloat(param.dtype, compute), param) &&
         writeWorking(ctx, op.getWorking(), buffer ? 2 : 1, skip, block);
}

bool adamwUpdateKernel(KernelContext &ctx) {
  auto op = llvm::cast<AdamwUpdateOp>(ctx.op);
  bool skip = skipped(ctx, op.getSkip());
  const Array &param = ctx.in(op.getParam()), &grad = ctx.in(op.getGrad());
  const Array &expAvg = ctx.in(op.getExpAvg()),
              &expAvgSq = ctx.in(op.getExpAvgSq());
  double lr = scalarF64(ctx.in(op.getLr()));
  double step = double(readInt(ctx.in(op.getStep()), 0));
  double beta1 = op.getBeta1().convertToDouble(),
         beta2 = op.getBeta2().convertToDouble();
  double eps = op.getEps().convertToDouble();
  double weightDecay = op.getWeightDecay().convertToDouble();
  UpdateRange block = blockOf(op.getElementOffset(), grad);
  if (step < 1)
    return ctx.fail("step " + std::to_string(int64_t(step)) +
                    " is not a valid AdamW step (the first update is step 1)");
  // Host-side scalars, in double as Python computes them.
  double biasCorrection1 = 1 - std::pow(beta1, step);
  double biasCorrection2 = 1 - std::pow(beta2, step);
  double stepSize = lr / biasCorrection1;
  double biasCorrection2Sqrt = std::sqrt(biasCorrection2);
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *p = param.data<T>(), *g = grad.data<T>();
    const T *m = expAvg.data<T>(), *v = expAvgSq.data<T>();
    T *newP = ctx.out(0).template data<T>(),
      *newM = ctx.out(1).template data<T>();
    T *newV = ctx.out(2).template data<T>();
    const T decay = T(1 - lr * weightDecay), b1 = T(beta1), b2 = T(beta2);
    const T oneMinusB1 = T(1 - beta1), oneMinusB2 = T(1 - beta2);
    const T bc2Sqrt = T(biasCorrection2Sqrt), epsT = T(eps),
            negStep = T(-stepSize);
    for (int64_t i = 0, n = param.numElements(); i < n; ++i) {
      if (skip || !block.contains(i)) {
        newP[i] = p[i];
        newM[i] = m[i];
        newV[i] = v[i];
        continue;
      }
      const T gi = g[i - block.first];
      // param.mul_(1 - lr * weight_decay)
      T pi = p[i] * decay;
      // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
      T mi = std::fma(gi, oneMinusB1, T(m[i] * b1));
      // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
      T vi = std::fma(T(oneMinusB2 * gi), gi, T(v[i] * b2));
      // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
      T denom = T(T(std::sqrt(vi)) / bc2Sqrt) + epsT;
      // param.addcdiv_(exp_avg, denom, value=-step_size)
      newP[i] = pi + T(T(negStep * mi) / denom);
      newM[i] = mi;
      newV[i] = vi;
    }
    return true;
  };
  return ctx.finish(visitFloat(param.dtype, compute), param) &&
         writeWorking(ctx, op.getWorking(), 3, skip, block);
}

} // namespace

void registerTrainKernels(KernelTable &t) {
  t[CrossEntropyOp::getOperationName()] = crossEntropyKernel;
  t[CrossEntropyGradOp::getOperationName()] = crossEntropyGradKernel;
  t[SgdUpdateOp::getOperationName()] = sgdUpdateKernel;
  t[AdamwUpdateOp::getOperationName()] = adamwUpdateKernel;
}

} // namespace tcc::interp
