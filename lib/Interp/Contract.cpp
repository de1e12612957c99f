// Contractions: matmul (transposes, broadcast batch dims), gemm and
// attention. Plain loops; dot products accumulate in double (Numerics.h).
#include "Attention.h"
#include "Kernel.h"
#include "Numerics.h"

#include "tcc/TccOps.h"

using namespace mlir;
using tcc::data::Array;

namespace tcc::interp {
namespace {

/// A row-major matrix, read as itself or as its transpose.
template <class T> struct MatrixRef {
  const T *p;
  int64_t cols; // of the stored matrix
  bool transposed;
  T operator()(int64_t r, int64_t c) const {
    return transposed ? p[c * cols + r] : p[r * cols + c];
  }
};

/// out[m, n] = sum_k a(m, k) * b(k, n), accumulated in Acc<T> in order of
/// k. The loops run i, k, j over a row-major copy of op(b), so the inner loop
/// is contiguous: still plain, but usable on model-sized matrices.
template <class T>
void matmulInto(MatrixRef<T> a, MatrixRef<T> b, int64_t m, int64_t n, int64_t k,
                std::vector<Acc<T>> &out) {
  std::vector<T> bRows(k * n);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      bRows[p * n + j] = b(p, j);
  out.assign(m * n, 0);
  for (int64_t i = 0; i < m; ++i) {
    Acc<T> *row = out.data() + i * n;
    for (int64_t p = 0; p < k; ++p) {
      Acc<T> aip = a(i, p);
      const T *bRow = bRows.data() + p * n;
      for (int64_t j = 0; j < n; ++j)
        row[j] += aip * bRow[j];
    }
  }
}

bool matmulKernel(KernelContext &ctx) {
  auto op = llvm::cast<MatmulOp>(ctx.op);
  const Array &lhs = ctx.in(op.getLhs()), &rhs = ctx.in(op.getRhs());
  Array &out = ctx.out();
  bool tl = op.getTransposeLhs(), tr = op.getTransposeRhs();
  size_t lr = lhs.shape.size(), rr = rhs.shape.size(), orank = out.shape.size();
  int64_t m = out.shape[orank - 2], n = out.shape[orank - 1];
  int64_t k = lhs.shape[tl ? lr - 2 : lr - 1];
  llvm::ArrayRef<int64_t> batch = llvm::ArrayRef(out.shape).drop_back(2);
  // Which lhs/rhs matrix each output matrix reads (batch dims broadcast).
  IndexMap lhsBatch =
      IndexMap::broadcast(llvm::ArrayRef(lhs.shape).drop_back(2), batch);
  IndexMap rhsBatch =
      IndexMap::broadcast(llvm::ArrayRef(rhs.shape).drop_back(2), batch);
  int64_t batches = 1;
  for (int64_t d : batch)
    batches *= d;
  int64_t lhsCols = lhs.shape[lr - 1], rhsCols = rhs.shape[rr - 1];
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    std::vector<Acc<T>> acc;
    for (int64_t b = 0; b < batches; ++b) {
      MatrixRef<T> a{lhs.data<T>() + lhsBatch(b) * m * k, lhsCols, tl};
      MatrixRef<T> c{rhs.data<T>() + rhsBatch(b) * k * n, rhsCols, tr};
      matmulInto(a, c, m, n, k, acc);
      T *po = out.data<T>() + b * m * n;
      for (int64_t i = 0; i < m * n; ++i)
        po[i] = static_cast<T>(acc[i]);
    }
    return true;
  };
  return ctx.finish(visitFloat(lhs.dtype, compute), lhs);
}

bool gemmKernel(KernelContext &ctx) {
  auto op = llvm::cast<GemmOp>(ctx.op);
  const Array &a = ctx.in(op.getA()), &b = ctx.in(op.getB());
  const Array *c = ctx.opt(op.getC()), *bias = ctx.opt(op.getBias());
  Array &out = ctx.out();
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  double alpha = op.getAlpha().convertToDouble(),
         beta = op.getBeta().convertToDouble();
  int64_t m = out.shape[0], n = out.shape[1], k = a.shape[ta ? 0 : 1];
  IndexMap cMap =
      c ? IndexMap::broadcast(c->shape, out.shape) : IndexMap::identity();
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    std::vector<double> acc;
    matmulInto(MatrixRef<T>{a.data<T>(), a.shape[1], ta},
               MatrixRef<T>{b.data<T>(), b.shape[1], tb}, m, n, k, acc);
    T *po = out.data<T>();
    for (int64_t i = 0; i < m * n; ++i) {
      double v = alpha * acc[i];
      if (bias)
        v += static_cast<double>(bias->data<T>()[i % n]);
      if (c)
        v += beta * c->data<T>()[cMap(i)];
      po[i] = static_cast<T>(v);
    }
    // The sums of op(a)'s rows, each over k in order (as reduce_sum adds
    // the rows of the value it replaces).
    if (op.getWithBiasGrad()) {
      T *pg = ctx.out(1).data<T>();
      const T *pa = a.data<T>();
      int64_t cols = a.shape[1];
      for (int64_t i = 0; i < m; ++i) {
        Acc<T> sum = 0;
        for (int64_t j = 0; j < k; ++j)
          sum += static_cast<Acc<T>>(ta ? pa[j * cols + i] : pa[i * cols + j]);
        pg[i] = static_cast<T>(sum);
      }
    }
    return true;
  };
  return ctx.finish(visitFloat(a.dtype, compute), a);
}

/// For every (batch, head, query): scores s_j = scale * q.k_j, then hidden
/// keys (causal: j > i, the query and key sequences aligned at their start;
/// i1 key_mask false) set to -inf, a float key_mask added, softmax over j,
/// and the output is sum_j p_j v_j. A query with every key hidden gets NaN,
/// like torch.softmax of an all -inf row (see softmaxRow); we keep that
/// rather than invent zeros, so such rows are loud in any comparison.
/// One (batch, head) pair: `tq` queries over `tk` keys.
template <class T>
void attentionHead(const T *qp, const T *kp, const T *vp, T *po, int64_t tq,
                   int64_t tk, int64_t d, int64_t dv, double scale, bool causal,
                   const Array *mask, int64_t b) {
  std::vector<T> p(tk);
  for (int64_t i = 0; i < tq; ++i) {
    attentionProbs(qp + i * d, kp, tk, d, scale, causal, mask, b, i, p.data());
    for (int64_t e = 0; e < dv; ++e) {
      double sum = 0;
      for (int64_t j = 0; j < tk; ++j)
        sum += static_cast<double>(p[j]) * vp[j * dv + e];
      po[i * dv + e] = static_cast<T>(sum);
    }
  }
}

bool attentionKernel(KernelContext &ctx) {
  auto op = llvm::cast<AttentionOp>(ctx.op);
  const Array &q = ctx.in(op.getQuery()), &k = ctx.in(op.getKey()),
              &v = ctx.in(op.getValue());
  const Array *mask = ctx.opt(op.getKeyMask());
  Array &out = ctx.out();
  double scale = op.getScale().convertToDouble();
  bool causal = op.getCausal();
  const AttentionDims a = op.getDims();
  const int64_t batch = a.batch, heads = a.heads, tq = a.tq, tk = a.tk,
                d = a.d, dv = a.dv;
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    // Token rows run on heads-first copies.
    const TokenRows rows{batch, heads, d};
    std::vector<T> qc, kc, vc, oc;
    const T *qp = q.data<T>(), *kp = k.data<T>(), *vp = v.data<T>();
    T *po = out.data<T>();
    if (a.tokenRows) {
      qc = rows.headsFirst(qp, tq, a.width[0], a.column[0]), qp = qc.data();
      kc = rows.headsFirst(kp, tk, a.width[1], a.column[1]), kp = kc.data();
      vc = rows.headsFirst(vp, tk, a.width[2], a.column[2]), vp = vc.data();
      oc.assign(size_t(batch * heads * tq * dv), T(0)), po = oc.data();
    }
    if (PackedRows::is(mask)) {
      // Each sequence's packed tokens attend to each other only.
      PackedRows pk{mask->data<int32_t>(), batch, heads, tq,
                    mask->numElements() - 1};
      pk.zeroPadding(po, dv);
      for (int64_t s = 0; s < pk.sequences; ++s)
        for (int64_t h = 0; h < heads; ++h) {
          int64_t n = pk.length(s);
          std::vector<T> qs = pk.gather(qp, s, h, d),
                         ks = pk.gather(kp, s, h, d),
                         vs = pk.gather(vp, s, h, dv), os(n * dv);
          attentionHead(qs.data(), ks.data(), vs.data(), os.data(), n, n, d,
                        dv, scale, causal, nullptr, 0);
          pk.scatter(os, s, h, dv, po);
        }
    } else {
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t h = 0; h < heads; ++h) {
          int64_t bh = b * heads + h;
          attentionHead(qp + bh * tq * d, kp + bh * tk * d, vp + bh * tk * dv,
                        po + bh * tq * dv, tq, tk, d, dv, scale, causal, mask,
                        b);
        }
    }
    if (a.tokenRows)
      rows.store(oc, tq, out.data<T>(), heads * dv, 0);
    return true;
  };
  return ctx.finish(visitFloat(q.dtype, compute), q);
}

} // namespace

void registerContractKernels(KernelTable &t) {
  t[MatmulOp::getOperationName()] = matmulKernel;
  t[GemmOp::getOperationName()] = gemmKernel;
  t[AttentionOp::getOperationName()] = attentionKernel;
}

} // namespace tcc::interp
