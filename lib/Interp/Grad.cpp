// Kernels of the backward ops (TccGradOps.td) except cross_entropy_grad
// (Train.cpp). Each recomputes what it needs from the forward inputs (row
// statistics, attention probabilities) in double, the way a fused backward
// kernel does, and follows the forward kernel's masking rules exactly.
#include "Attention.h"
#include "Kernel.h"
#include "Numerics.h"

#include "tcc/TccOps.h"

#include "kernels/tcc_kernel.h"

#include <cstring>

using namespace mlir;
using tcc::data::Array;

namespace tcc::interp {
namespace {

/// softmax_grad and log_softmax_grad: a row sum, then an elementwise update.
template <bool Log> bool softmaxGradKernel(KernelContext &ctx) {
  const Array &y = ctx.in(0u), &dy = ctx.in(1u);
  int64_t axis = Log ? llvm::cast<LogSoftmaxGradOp>(ctx.op).getAxis()
                     : llvm::cast<SoftmaxGradOp>(ctx.op).getAxis();
  int64_t len = y.shape[axis];
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *py = y.data<T>(), *pg = dy.data<T>();
    T *po = ctx.out().data<T>();
    forEachRow(y.shape, axis, [&](int64_t base, int64_t stride) {
      double sum = 0; // log: sum(dy); else sum(dy * y)
      for (int64_t j = 0; j < len; ++j) {
        int64_t at = base + j * stride;
        sum += Log ? static_cast<double>(pg[at])
                   : static_cast<double>(pg[at]) * py[at];
      }
      T s = static_cast<T>(sum);
      for (int64_t j = 0; j < len; ++j) {
        int64_t at = base + j * stride;
        po[at] = Log ? pg[at] - std::exp(py[at]) * s : py[at] * (pg[at] - s);
      }
    });
    return true;
  };
  return ctx.finish(visitFloat(y.dtype, compute), y);
}

/// dy * gelu'(x), with PyTorch's formulas for both forms.
bool geluGradKernel(KernelContext &ctx) {
  bool tanhForm =
      llvm::cast<GeluGradOp>(ctx.op).getApproximate() == GeluApprox::tanh;
  const Array &x = ctx.in(0u), &dy = ctx.in(1u);
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>(), *pg = dy.data<T>();
    T *po = ctx.out().data<T>();
    const T invSqrt2 = static_cast<T>(0.7071067811865476);
    const T invSqrt2Pi = static_cast<T>(0.3989422804014327);
    for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
      T v = px[i];
      if (tanhForm) { // the kernels' formula (runtime/kernels/tcc_kernel.h)
        po[i] = tcc_k::gelu_grad_tanh(v, pg[i]);
        continue;
      }
      T cdf = T(0.5) * (T(1) + std::erf(v * invSqrt2));
      T d = cdf + v * invSqrt2Pi * std::exp(T(-0.5) * v * v);
      po[i] = pg[i] * d;
    }
    return true;
  };
  return ctx.finish(visitFloat(x.dtype, compute), x);
}

/// With xhat = (x - mean) * rstd and dxhat = dy * scale, per row:
/// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) + residual;
/// scale_grad and bias_grad sum dy * xhat and dy over the rows,
/// input_grad_sum the stored dx.
bool layerNormGradKernel(KernelContext &ctx) {
  auto op = llvm::cast<LayerNormGradOp>(ctx.op);
  const Array &in = ctx.in(op.getInput()), &dy = ctx.in(op.getResultGrad());
  const Array *scale = ctx.opt(op.getScale());
  const Array *residual = ctx.opt(op.getResidualGrad());
  int64_t axis = op.getAxis();
  double eps = op.getEpsilon().convertToDouble();
  int64_t rows = product(llvm::ArrayRef(in.shape).take_front(axis));
  int64_t len = product(llvm::ArrayRef(in.shape).drop_front(axis));
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *ps = scale ? scale->data<T>() : nullptr;
    std::vector<double> dScale(len, 0), dBias(len, 0), dSum(len, 0), xhat(len),
        dxhat(len);
    for (int64_t r = 0; r < rows; ++r) {
      const T *x = in.data<T>() + r * len, *g = dy.data<T>() + r * len;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < len; ++j)
        mean += x[j];
      mean /= len;
      for (int64_t j = 0; j < len; ++j)
        var += (x[j] - mean) * (x[j] - mean);
      double rstd = 1.0 / std::sqrt(var / len + eps);
      double meanDxhat = 0, meanDxhatXhat = 0;
      for (int64_t j = 0; j < len; ++j) {
        xhat[j] = (x[j] - mean) * rstd;
        dxhat[j] = static_cast<double>(g[j]) * (ps ? ps[j] : 1.0);
        meanDxhat += dxhat[j];
        meanDxhatXhat += dxhat[j] * xhat[j];
        dScale[j] += g[j] * xhat[j];
        dBias[j] += g[j];
      }
      meanDxhat /= len;
      meanDxhatXhat /= len;
      T *dx = ctx.out(0).data<T>() + r * len;
      const T *res = residual ? residual->data<T>() + r * len : nullptr;
      for (int64_t j = 0; j < len; ++j) {
        double v = rstd * (dxhat[j] - meanDxhat - xhat[j] * meanDxhatXhat);
        if (res)
          v += res[j];
        dx[j] = static_cast<T>(v);
        dSum[j] += dx[j];
      }
    }
    for (int64_t j = 0; j < len; ++j) {
      ctx.out(1).data<T>()[j] = static_cast<T>(dScale[j]);
      ctx.out(2).data<T>()[j] = static_cast<T>(dBias[j]);
      if (op.getInputGradSum())
        ctx.out(3).data<T>()[j] = static_cast<T>(dSum[j]);
    }
    return true;
  };
  return ctx.finish(visitFloat(in.dtype, compute), in);
}

/// Per (batch, head, query i), with p the probabilities the forward kernel
/// computes (same causal / key_mask rules, here in double) and do = dO_i:
/// dv_j += p_j do; dp_j = do . v_j; ds_j = p_j (dp_j - sum_k p_k dp_k);
/// dq_i = scale sum_j ds_j k_j; dk_j += scale ds_j q_i. Hidden keys have
/// p_j = 0 and get nothing; a query with every key hidden is NaN, as its
/// forward output is.
/// One (batch, head) pair's gradients; dq, dk, dv are written.
template <class T>
void attentionHeadGrad(const T *qp, const T *kp, const T *vp, const T *gp,
                       T *dqp, T *dkp, T *dvp, int64_t tq, int64_t tk,
                       int64_t d, int64_t dv, double scale, bool causal,
                       const Array *mask, int64_t b) {
  std::vector<double> p(tk), dp(tk), dk(tk * d, 0.0), dvAcc(tk * dv, 0.0);
  for (int64_t i = 0; i < tq; ++i) {
    attentionProbs(qp + i * d, kp, tk, d, scale, causal, mask, b, i, p.data());
    double pdp = 0;
    for (int64_t j = 0; j < tk; ++j) {
      double dot = 0;
      for (int64_t e = 0; e < dv; ++e) {
        dot += static_cast<double>(gp[i * dv + e]) * vp[j * dv + e];
        dvAcc[j * dv + e] += p[j] * gp[i * dv + e];
      }
      dp[j] = dot;
      pdp += p[j] * dot;
    }
    for (int64_t e = 0; e < d; ++e) {
      double sum = 0;
      for (int64_t j = 0; j < tk; ++j)
        sum += p[j] * (dp[j] - pdp) * kp[j * d + e];
      dqp[i * d + e] = static_cast<T>(scale * sum);
    }
    for (int64_t j = 0; j < tk; ++j) {
      double ds = scale * p[j] * (dp[j] - pdp);
      for (int64_t e = 0; e < d; ++e)
        dk[j * d + e] += ds * qp[i * d + e];
    }
  }
  for (int64_t e = 0; e < tk * d; ++e)
    dkp[e] = static_cast<T>(dk[e]);
  for (int64_t e = 0; e < tk * dv; ++e)
    dvp[e] = static_cast<T>(dvAcc[e]);
}

/// tcc.attention_grad (three results) and tcc.attention_qkv_grad (the three
/// gradients at their operands' columns of one result).
template <class Op> bool attentionGradKernel(KernelContext &ctx) {
  auto op = llvm::cast<Op>(ctx.op);
  constexpr bool packed = std::is_same_v<Op, AttentionQkvGradOp>;
  const Array &q = ctx.in(op.getQuery()), &k = ctx.in(op.getKey()),
              &v = ctx.in(op.getValue()), &dout = ctx.in(op.getResultGrad());
  const Array *mask = ctx.opt(op.getKeyMask());
  double scale = op.getScale().convertToDouble();
  bool causal = op.getCausal();
  const AttentionDims a = op.getDims();
  const int64_t batch = a.batch, heads = a.heads, tq = a.tq, tk = a.tk,
                d = a.d, dv = a.dv;
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    // Token rows run on heads-first copies.
    const TokenRows rows{batch, heads, d};
    std::vector<T> qc, kc, vc, gc, dqc, dkc, dvc;
    const T *qp = q.data<T>(), *kp = k.data<T>(), *vp = v.data<T>(),
            *gp = dout.data<T>();
    T *dq = ctx.out(0).data<T>(), *dk = ctx.out(packed ? 0 : 1).data<T>(),
      *dvOut = ctx.out(packed ? 0 : 2).data<T>();
    if (a.tokenRows) {
      qc = rows.headsFirst(qp, tq, a.width[0], a.column[0]), qp = qc.data();
      kc = rows.headsFirst(kp, tk, a.width[1], a.column[1]), kp = kc.data();
      vc = rows.headsFirst(vp, tk, a.width[2], a.column[2]), vp = vc.data();
      gc = rows.headsFirst(gp, tq, heads * dv, 0), gp = gc.data();
      dqc.assign(size_t(batch * heads * tq * d), T(0)), dq = dqc.data();
      dkc.assign(size_t(batch * heads * tk * d), T(0)), dk = dkc.data();
      dvc.assign(size_t(batch * heads * tk * dv), T(0)), dvOut = dvc.data();
    }
    if (PackedRows::is(mask)) {
      PackedRows pk{mask->data<int32_t>(), batch, heads, tq,
                    mask->numElements() - 1};
      pk.zeroPadding(dq, d), pk.zeroPadding(dk, d), pk.zeroPadding(dvOut, dv);
      for (int64_t s = 0; s < pk.sequences; ++s)
        for (int64_t h = 0; h < heads; ++h) {
          int64_t n = pk.length(s);
          std::vector<T> qs = pk.gather(qp, s, h, d),
                         ks = pk.gather(kp, s, h, d),
                         vs = pk.gather(vp, s, h, dv),
                         gs = pk.gather(gp, s, h, dv),
                         dqs(n * d), dks(n * d), dvs(n * dv);
          attentionHeadGrad(qs.data(), ks.data(), vs.data(), gs.data(),
                            dqs.data(), dks.data(), dvs.data(), n, n, d, dv,
                            scale, causal, nullptr, 0);
          pk.scatter(dqs, s, h, d, dq), pk.scatter(dks, s, h, d, dk);
          pk.scatter(dvs, s, h, dv, dvOut);
        }
    } else {
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t h = 0; h < heads; ++h) {
          int64_t bh = b * heads + h;
          attentionHeadGrad(qp + bh * tq * d, kp + bh * tk * d,
                            vp + bh * tk * dv, gp + bh * tq * dv,
                            dq + bh * tq * d, dk + bh * tk * d,
                            dvOut + bh * tk * dv, tq, tk, d, dv, scale, causal,
                            mask, b);
        }
    }
    if (a.tokenRows && packed) {
      T *out = ctx.out(0).data<T>();
      rows.store(dqc, tq, out, a.width[0], a.column[0]);
      rows.store(dkc, tk, out, a.width[1], a.column[1]);
      rows.store(dvc, tk, out, a.width[2], a.column[2]);
    } else if (a.tokenRows) {
      rows.store(dqc, tq, ctx.out(0).data<T>(), heads * d, 0);
      rows.store(dkc, tk, ctx.out(1).data<T>(), heads * d, 0);
      rows.store(dvc, tk, ctx.out(2).data<T>(), heads * dv, 0);
    }
    return true;
  };
  return ctx.finish(visitFloat(q.dtype, compute), q);
}

/// Scatter-add of result_grad slices into zeros shaped like the gathered
/// data; indices wrap from the end and are range-checked as gather's are.
bool gatherGradKernel(KernelContext &ctx) {
  auto op = llvm::cast<GatherGradOp>(ctx.op);
  const Array &indices = ctx.in(op.getIndices()),
              &g = ctx.in(op.getResultGrad());
  Array &out = ctx.out();
  int64_t axis = op.getAxis(), dim = out.shape[axis];
  int64_t outer = product(llvm::ArrayRef(out.shape).take_front(axis));
  int64_t inner = product(llvm::ArrayRef(out.shape).drop_front(axis + 1));
  int64_t count = indices.numElements();
  if (!checkGatherIndices(ctx, indices, axis, dim))
    return false;
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *pg = g.data<T>();
    T *po = out.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < count; ++j) {
        int64_t index = readInt(indices, j);
        index += index < 0 ? dim : 0;
        T *dst = po + (o * dim + index) * inner;
        const T *src = pg + (o * count + j) * inner;
        for (int64_t i = 0; i < inner; ++i)
          dst[i] += src[i];
      }
    return true;
  };
  return ctx.finish(visitFloat(g.dtype, compute), g);
}

/// Zeros with each result_grad element stored where the slice read it from
/// (the positions are distinct, so nothing accumulates).
bool sliceGradKernel(KernelContext &ctx) {
  auto op = llvm::cast<SliceGradOp>(ctx.op);
  const Array &g = ctx.in(0u);
  Array &out = ctx.out();
  SmallVector<int64_t> outStrides = stridesOf(out.shape), strides;
  int64_t base = 0;
  for (size_t d = 0; d < out.shape.size(); ++d) {
    base += op.getStarts()[d] * outStrides[d];
    strides.push_back(op.getStrides()[d] * outStrides[d]);
  }
  IndexMap map = IndexMap::strided(g.shape, strides, base);
  size_t size = data::dtypeSize(g.dtype);
  for (int64_t i = 0, n = g.numElements(); i < n; ++i)
    std::memcpy(out.bytes.data() + map(i) * size, g.bytes.data() + i * size,
                size);
  return true;
}

} // namespace

void registerGradKernels(KernelTable &t) {
  t[SoftmaxGradOp::getOperationName()] = softmaxGradKernel<false>;
  t[LogSoftmaxGradOp::getOperationName()] = softmaxGradKernel<true>;
  t[GeluGradOp::getOperationName()] = geluGradKernel;
  t[LayerNormGradOp::getOperationName()] = layerNormGradKernel;
  t[AttentionGradOp::getOperationName()] = attentionGradKernel<AttentionGradOp>;
  t[AttentionQkvGradOp::getOperationName()] =
      attentionGradKernel<AttentionQkvGradOp>;
  t[GatherGradOp::getOperationName()] = gatherGradKernel;
  t[SliceGradOp::getOperationName()] = sliceGradKernel;
}

} // namespace tcc::interp
