// The CUDA library kernels (runtime/kernels/cuda) against float64 references
// computed here on the host, on random inputs of several shapes (row
// lengths across the one-warp / 128-thread / 512-thread row kernels, odd
// lengths that take the scalar path, sequence lengths that are not multiples
// of the attention tiles), with every output poisoned with NaN before the
// launch. Kernels the header calls bit-identical (embedding, dropout,
// optimizers) are compared bit for bit with the CPU kernels; every
// reduction is also run twice and must give the same bits.
//
// Tolerances (|got - ref| <= tol * (|ref| + max|ref|), see expectClose):
//   softmax family, layer norm, cross-entropy  1e-5
//   attention forward                          2e-5 (fp32 FMA dot products)
//   attention backward                         5e-5 (recomputed P, dP - delta;
//                                              scale at least 1: dq, dk
//                                              cancel to ~0 from O(1) terms)
// Without a GPU every test prints "no CUDA device: skipped" and skips.
#include "GpuReference.h"
#include "GpuTestUtil.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/window_kernels.h"
#include "kernels/dropout_hash.h"

#include <algorithm>
#include <limits>
#include <memory>

namespace tcc::gputest {
namespace {

namespace cu = tcc::cuda;
using Gpu = GpuTest;


//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

const RowShape kRowShapes[] = {
    {1, 1, 0},     {3, 7, 0},    {17, 128, 0},  {5, 129, 0}, {9, 64, 1},
    {4, 1000, 0},  {3, 2049, 0}, {2, 5000, 0},  {2, 5001, 0}, {33, 2048, 0},
};

TEST_F(Gpu, SoftmaxAndLogSoftmaxRows) {
  for (const RowShape &s : kRowShapes)
    for (bool log : {false, true}) {
      SCOPED_TRACE("rows " + std::to_string(s.rows) + " len " +
                   std::to_string(s.len) + (log ? " log" : ""));
      std::vector<float> x = randomNormal(s.rows * s.len, 7 + s.len, 3.0f);
      if (s.rows >= 3 && s.len >= 2) {
        x[0 * s.len + s.len / 2] = NAN; // row 0: a NaN
        for (int64_t j = 0; j < s.len; ++j)
          x[1 * s.len + j] = -INFINITY; // row 1: all -inf
        x[2 * s.len] = INFINITY;        // row 2: a +inf
      }
      std::vector<double> ref;
      for (int64_t r = 0; r < s.rows; ++r) {
        std::vector<double> y = refSoftmaxRow(&x[r * s.len], s.len, log);
        ref.insert(ref.end(), y.begin(), y.end());
      }
      DevBuf<float> dx(x, s.offset), dy(x.size(), s.offset);
      auto run = [&] {
        dy.poison();
        checkStatus(log ? cu::log_softmax_rows(dx.get(), dy.get(), s.rows,
                                               s.len, nullptr)
                        : cu::softmax_rows(dx.get(), dy.get(), s.rows, s.len,
                                           nullptr),
                    "softmax");
        return dy.download();
      };
      std::vector<float> got = run();
      expectClose(got, ref, 1e-5, log ? "log_softmax" : "softmax");
      expectBitEqual(got, run(), "second run");
      // In place.
      checkStatus(log ? cu::log_softmax_rows(dx.get(), dx.get(), s.rows,
                                             s.len, nullptr)
                      : cu::softmax_rows(dx.get(), dx.get(), s.rows, s.len,
                                         nullptr),
                  "softmax in place");
      expectBitEqual(dx.download(), got, "in place");
    }
}

TEST_F(Gpu, SoftmaxGradRows) {
  for (const RowShape &s : kRowShapes)
    for (bool log : {false, true}) {
      SCOPED_TRACE("rows " + std::to_string(s.rows) + " len " +
                   std::to_string(s.len) + (log ? " log" : ""));
      std::vector<float> x = randomNormal(s.rows * s.len, 11 + s.len, 2.0f);
      std::vector<float> g = randomNormal(s.rows * s.len, 13 + s.len);
      // y: the forward's output, as the op receives it.
      std::vector<float> y(x.size());
      if (log)
        cpu::log_softmax_rows(x.data(), y.data(), s.rows, s.len);
      else
        cpu::softmax_rows(x.data(), y.data(), s.rows, s.len);
      std::vector<double> ref = refSoftmaxGradRows(y, g, s.rows, s.len, log);
      DevBuf<float> dy_(y, s.offset), dg(g, s.offset), dx(x.size(), s.offset);
      auto run = [&] {
        dx.poison();
        checkStatus(log ? cu::log_softmax_grad_rows(dy_.get(), dg.get(),
                                                    dx.get(), s.rows, s.len,
                                                    nullptr)
                        : cu::softmax_grad_rows(dy_.get(), dg.get(), dx.get(),
                                                s.rows, s.len, nullptr),
                    "softmax grad");
        return dx.download();
      };
      std::vector<float> got = run();
      expectClose(got, ref, 1e-5, "softmax grad");
      expectBitEqual(got, run(), "second run");
    }
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

TEST_F(Gpu, LayerNormForward) {
  const double eps = 1e-5;
  for (const RowShape &s : kNormShapes)
    for (int affine = 0; affine < 3; ++affine) { // none, scale, scale + bias
      SCOPED_TRACE("rows " + std::to_string(s.rows) + " len " +
                   std::to_string(s.len) + " affine " + std::to_string(affine));
      std::vector<float> x = randomNormal(s.rows * s.len, 17 + s.len, 2.0f);
      for (float &v : x)
        v += 5.0f; // an offset the centred variance must not cancel
      std::vector<float> sc = randomNormal(s.len, 19), bi = randomNormal(s.len, 23);
      LayerNormRef ref = refLayerNormFwd(x, affine >= 1 ? sc.data() : nullptr,
                                         affine >= 2 ? bi.data() : nullptr,
                                         s.rows, s.len, eps);
      DevBuf<float> dx(x, s.offset), dsc(sc, s.offset), dbi(bi, s.offset),
          dy(x.size(), s.offset), dmean(s.rows), drstd(s.rows);
      auto run = [&] {
        dy.poison();
        dmean.poison();
        drstd.poison();
        checkStatus(cu::layer_norm_fwd(dx.get(), affine >= 1 ? dsc.get() : nullptr,
                                       affine >= 2 ? dbi.get() : nullptr,
                                       dy.get(), dmean.get(), drstd.get(),
                                       s.rows, s.len, eps, nullptr),
                    "layer_norm_fwd");
        return dy.download();
      };
      std::vector<float> got = run();
      expectClose(got, ref.y, 1e-5, "y");
      expectClose(dmean.download(), ref.mean, 1e-6, "mean");
      expectClose(drstd.download(), ref.rstd, 1e-6, "rstd");
      expectBitEqual(got, run(), "second run");
    }
}

TEST_F(Gpu, LayerNormBackward) {
  const double eps = 1e-5;
  for (const RowShape &s : kNormShapes)
    for (int variant = 0; variant < 8; ++variant) {
      // bit 0: scale given; bit 1: the forward's mean / rstd given; bit 2:
      // a residual gradient added and dx's column sums wanted.
      const bool withScale = variant & 1, withStats = variant & 2,
                 withResidual = variant & 4;
      SCOPED_TRACE("rows " + std::to_string(s.rows) + " len " +
                   std::to_string(s.len) + " variant " + std::to_string(variant));
      std::vector<float> x = randomNormal(s.rows * s.len, 29 + s.len, 2.0f);
      std::vector<float> g = randomNormal(s.rows * s.len, 31 + s.len);
      std::vector<float> res = randomNormal(s.rows * s.len, 41 + s.len);
      std::vector<float> sc = randomNormal(s.len, 37);
      std::vector<float> mean(s.rows), rstd(s.rows), yScratch(x.size());
      cpu::layer_norm_fwd(x.data(), nullptr, nullptr, yScratch.data(),
                          mean.data(), rstd.data(), s.rows, s.len, eps);
      LayerNormGradRef ref = refLayerNormBwd(
          x, g, withScale ? sc.data() : nullptr,
          withStats ? mean.data() : nullptr, withStats ? rstd.data() : nullptr,
          s.rows, s.len, eps, withResidual ? res.data() : nullptr);
      DevBuf<float> dx_(x, s.offset), dg(g, s.offset), dres(res, s.offset),
          dsc(sc, s.offset), dmean(mean), drstd(rstd),
          ddx(x.size(), s.offset), dds(s.len), ddb(s.len), dsum(s.len);
      DevBytes ws(cu::layer_norm_bwd_workspace_bytes(s.rows, s.len));
      auto run = [&] {
        ddx.poison();
        dds.poison();
        ddb.poison();
        dsum.poison();
        checkStatus(cu::layer_norm_bwd(
                        dx_.get(), withScale ? dsc.get() : nullptr, dg.get(),
                        withResidual ? dres.get() : nullptr,
                        withStats ? dmean.get() : nullptr,
                        withStats ? drstd.get() : nullptr, ddx.get(),
                        dds.get(), ddb.get(),
                        withResidual ? dsum.get() : nullptr, s.rows, s.len,
                        eps, ws.get(), nullptr),
                    "layer_norm_bwd");
        return ddx.download();
      };
      std::vector<float> gotDx = run();
      std::vector<float> gotDs = dds.download(), gotDb = ddb.download(),
                         gotSum = dsum.download();
      expectClose(gotDx, ref.dx, 1e-5, "dx");
      expectClose(gotDs, ref.dscale, 1e-5, "dscale");
      expectClose(gotDb, ref.dbias, 1e-5, "dbias");
      if (withResidual)
        expectClose(gotSum, ref.dxsum, 1e-5, "dx's sum");
      expectBitEqual(gotDx, run(), "dx second run");
      expectBitEqual(gotDs, dds.download(), "dscale second run");
      expectBitEqual(gotDb, ddb.download(), "dbias second run");
      if (withResidual)
        expectBitEqual(gotSum, dsum.download(), "dx's sum second run");
    }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

const AttnShape kAttnShapes[] = {
    {1, 1, 1, 1, 8, 8, false, 0},       {2, 3, 17, 17, 16, 16, true, 0},
    {1, 2, 64, 64, 64, 64, false, 0},   {2, 2, 100, 77, 64, 64, false, 1},
    {1, 2, 130, 130, 32, 32, true, 2},  {1, 1, 70, 90, 128, 128, false, 0},
    {2, 1, 65, 65, 40, 24, true, 1},    {1, 2, 33, 200, 96, 96, false, 2},
    {1, 1, 129, 129, 128, 100, true, 0}, {3, 1, 5, 300, 64, 64, false, 1},
};

TEST_F(Gpu, AttentionForward) {
  uint32_t seed = 100;
  for (const AttnShape &s : kAttnShapes) {
    SCOPED_TRACE(attnName(s));
    AttnData a = makeAttn(s, seed += 10);
    AttnRef ref = refAttention(a);
    DevBuf<float> q(a.q), k(a.k), v(a.v), out(ref.out.size()),
        lse(ref.lse.size()), bias(a.bias);
    DevBuf<uint8_t> keep(a.keep);
    cu::KeyMask mask;
    if (s.mask == 1)
      mask.keep = keep.get();
    if (s.mask == 2)
      mask.bias = bias.get();
    auto run = [&] {
      out.poison();
      lse.poison();
      checkStatus(cu::attention_fwd(q.get(), k.get(), v.get(), out.get(), s.b,
                                    s.h, s.tq, s.tk, s.d, s.dv, a.scale,
                                    s.causal, mask, lse.get(), nullptr),
                  "attention_fwd");
      return out.download();
    };
    std::vector<float> got = run();
    expectClose(got, ref.out, 2e-5, "out");
    expectClose(lse.download(), ref.lse, 2e-5, "lse");
    expectBitEqual(got, run(), "second run");
  }
}

TEST_F(Gpu, AttentionBackward) {
  uint32_t seed = 300;
  for (const AttnShape &s : kAttnShapes) {
    SCOPED_TRACE(attnName(s));
    AttnData a = makeAttn(s, seed += 10);
    AttnRef ref = refAttention(a);
    DevBuf<float> q(a.q), k(a.k), v(a.v), g(a.g), out(ref.out.size()),
        lse(ref.lse.size()), bias(a.bias), dq(a.q.size()), dk(a.k.size()),
        dv(a.v.size());
    DevBuf<uint8_t> keep(a.keep);
    cu::KeyMask mask;
    if (s.mask == 1)
      mask.keep = keep.get();
    if (s.mask == 2)
      mask.bias = bias.get();
    checkStatus(cu::attention_fwd(q.get(), k.get(), v.get(), out.get(), s.b,
                                  s.h, s.tq, s.tk, s.d, s.dv, a.scale,
                                  s.causal, mask, lse.get(), nullptr),
                "attention_fwd");
    std::vector<float> grads[2][3];
    for (int haveForward = 0; haveForward < 2; ++haveForward) {
      DevBytes ws(cu::attention_bwd_workspace_bytes(s.b, s.h, s.tq, s.tk, s.d,
                                                    s.dv, haveForward));
      for (int rep = 0; rep < 2; ++rep) {
        dq.poison();
        dk.poison();
        dv.poison();
        checkStatus(cu::attention_bwd(
                        q.get(), k.get(), v.get(), g.get(), dq.get(), dk.get(),
                        dv.get(), s.b, s.h, s.tq, s.tk, s.d, s.dv, a.scale,
                        s.causal, mask, haveForward ? out.get() : nullptr,
                        haveForward ? lse.get() : nullptr, ws.get(), nullptr),
                    "attention_bwd");
        std::vector<float> gq = dq.download(), gk = dk.download(),
                           gv = dv.download();
        if (rep == 0) {
          grads[haveForward][0] = gq;
          grads[haveForward][1] = gk;
          grads[haveForward][2] = gv;
        } else {
          expectBitEqual(gq, grads[haveForward][0], "dq second run");
          expectBitEqual(gk, grads[haveForward][1], "dk second run");
          expectBitEqual(gv, grads[haveForward][2], "dv second run");
        }
      }
    }
    // Recomputing the forward inside gives the forward's exact bits.
    for (int t = 0; t < 3; ++t)
      expectBitEqual(grads[0][t], grads[1][t], "recomputed forward");
    expectClose(grads[1][0], ref.dq, 5e-5, "dq", 1.0);
    expectClose(grads[1][1], ref.dk, 5e-5, "dk", 1.0);
    expectClose(grads[1][2], ref.dv, 5e-5, "dv", 1.0);
  }
}

TEST_F(Gpu, AttentionAllKeysHiddenIsNaN) {
  AttnShape s{2, 2, 9, 11, 16, 16, false, 1};
  AttnData a = makeAttn(s, 7);
  std::fill(a.keep.begin(), a.keep.begin() + s.tk, uint8_t(0)); // batch 0
  AttnRef ref = refAttention(a);
  DevBuf<float> q(a.q), k(a.k), v(a.v), out(ref.out.size());
  DevBuf<uint8_t> keep(a.keep);
  cu::KeyMask mask;
  mask.keep = keep.get();
  checkStatus(cu::attention_fwd(q.get(), k.get(), v.get(), out.get(), s.b, s.h,
                                s.tq, s.tk, s.d, s.dv, a.scale, false, mask,
                                nullptr, nullptr),
              "attention_fwd");
  std::vector<float> got = out.download();
  for (int64_t i = 0; i < s.h * s.tq * s.dv; ++i)
    ASSERT_TRUE(std::isnan(got[i])) << i;
  expectClose(got, ref.out, 2e-5, "out");
  // The gradients: NaN for batch 0 (as the CPU kernel's all-NaN
  // probabilities give), finite and right for batch 1.
  DevBuf<float> g(a.g), dq(a.q.size()), dk(a.k.size()), dv(a.v.size());
  DevBytes ws(cu::attention_bwd_workspace_bytes(s.b, s.h, s.tq, s.tk, s.d,
                                                s.dv, false));
  checkStatus(cu::attention_bwd(q.get(), k.get(), v.get(), g.get(), dq.get(),
                                dk.get(), dv.get(), s.b, s.h, s.tq, s.tk, s.d,
                                s.dv, a.scale, false, mask, nullptr, nullptr,
                                ws.get(), nullptr),
              "attention_bwd");
  expectClose(dq.download(), ref.dq, 5e-5, "dq", 1.0);
  expectClose(dk.download(), ref.dk, 5e-5, "dk", 1.0);
  expectClose(dv.download(), ref.dv, 5e-5, "dv", 1.0);
}

TEST_F(Gpu, AttentionRejectsLargeHeads) {
  EXPECT_NE(cu::attention_fwd(nullptr, nullptr, nullptr, nullptr, 1, 1, 4, 4,
                              129, 64, 1.0, false, {}, nullptr, nullptr),
            0);
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

template <class L> void crossEntropyCase(int64_t rows, int64_t classes,
                                         uint32_t seed) {
  SCOPED_TRACE("rows " + std::to_string(rows) + " classes " +
               std::to_string(classes) + (sizeof(L) == 4 ? " i32" : " i64"));
  const int64_t ignore = -100;
  std::vector<float> x = randomNormal(rows * classes, seed, 3.0f);
  std::mt19937 rng(seed + 1);
  std::vector<L> labels(rows);
  for (int64_t r = 0; r < rows; ++r)
    labels[r] = r % 5 == 3 ? L(ignore) : L(rng() % classes);
  const double lossGrad = 0.37;
  CrossEntropyRef ref = refCrossEntropy(x, labels, classes, ignore, lossGrad);
  DevBuf<float> dx(x), dloss(1), dcount(1), dgrad(x.size());
  DevBuf<float> dlossGrad(std::vector<float>{float(lossGrad)});
  DevBuf<L> dlabels(labels);
  DevBuf<int64_t> err(1);
  DevBytes ws(cu::cross_entropy_fwd_workspace_bytes(rows));
  std::vector<float> first;
  for (int rep = 0; rep < 2; ++rep) {
    dloss.poison();
    dcount.poison();
    checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
    checkStatus(cu::cross_entropy_fwd(dx.get(), dlabels.get(), rows, classes,
                                      ignore, dloss.get(), dcount.get(),
                                      ws.get(), err.get(), nullptr),
                "cross_entropy_fwd");
    EXPECT_EQ(cu::read_error_word(err.get(), nullptr), -1);
    std::vector<float> got = dloss.download();
    if (rep == 0) {
      first = got;
      expectClose(got, {ref.sum}, 1e-5, "loss sum");
      EXPECT_EQ(dcount.download()[0], float(ref.count));
    } else {
      expectBitEqual(got, first, "loss second run");
    }
  }
  checkStatus(cu::cross_entropy_grad(dx.get(), dlabels.get(), dlossGrad.get(),
                                     dgrad.get(), rows, classes, ignore,
                                     err.get(), nullptr),
              "cross_entropy_grad");
  expectClose(dgrad.download(), ref.grad, 1e-5, "dlogits");
  EXPECT_EQ(cu::read_error_word(err.get(), nullptr), -1);

  // Out-of-range labels: the first bad row is reported, the row is skipped.
  if (rows >= 4) {
    labels[rows - 1] = L(classes);
    labels[2] = L(-1);
    dlabels.upload(labels);
    checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
    checkStatus(cu::cross_entropy_fwd(dx.get(), dlabels.get(), rows, classes,
                                      ignore, dloss.get(), dcount.get(),
                                      ws.get(), err.get(), nullptr),
                "cross_entropy_fwd");
    EXPECT_EQ(cu::read_error_word(err.get(), nullptr), 2);
    checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
    dgrad.poison();
    checkStatus(cu::cross_entropy_grad(dx.get(), dlabels.get(),
                                       dlossGrad.get(), dgrad.get(), rows,
                                       classes, ignore, err.get(), nullptr),
                "cross_entropy_grad");
    EXPECT_EQ(cu::read_error_word(err.get(), nullptr), 2);
    std::vector<float> got = dgrad.download();
    for (int64_t j = 0; j < classes; ++j)
      ASSERT_EQ(got[2 * classes + j], 0.0f); // the bad row is zero
  }
}

TEST_F(Gpu, CrossEntropy) {
  crossEntropyCase<int64_t>(1, 1, 1);
  crossEntropyCase<int64_t>(7, 10, 2);
  crossEntropyCase<int32_t>(33, 129, 3);
  crossEntropyCase<int64_t>(20, 3001, 4);
  crossEntropyCase<int32_t>(64, 50257, 5);
  crossEntropyCase<int64_t>(3000, 64, 6);
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

template <class I> void embeddingCase(int64_t n, int64_t vocab, int64_t dim,
                                      size_t offset, uint32_t seed) {
  SCOPED_TRACE("n " + std::to_string(n) + " vocab " + std::to_string(vocab) +
               " dim " + std::to_string(dim) + " offset " +
               std::to_string(offset));
  std::mt19937 rng(seed);
  std::vector<float> table = randomNormal(vocab * dim, seed + 1);
  std::vector<float> dy = randomNormal(n * dim, seed + 2);
  std::vector<I> ids(n);
  std::vector<int64_t> ids64(n);
  for (int64_t j = 0; j < n; ++j) {
    // Few distinct ids so most repeat; some negative for the scatter.
    ids64[j] = int64_t(rng() % std::min<int64_t>(vocab, 7));
    ids[j] = I(ids64[j]);
  }
  DevBuf<float> dtable(table, offset), ddy(dy, offset), out(n * dim, offset),
      dgrad(vocab * dim, offset);
  DevBuf<I> dids(ids);
  DevBuf<int64_t> err(1);

  std::vector<float> refOut(n * dim);
  ASSERT_EQ(cpu::gather_rows(table.data(), ids64.data(), n, vocab, dim,
                             refOut.data()),
            -1);
  checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
  checkStatus(cu::gather_rows(dtable.get(), dids.get(), n, vocab, dim,
                              out.get(), err.get(), nullptr),
              "gather_rows");
  EXPECT_EQ(cu::read_error_word(err.get(), nullptr), -1);
  expectBitEqual(out.download(), refOut, "gather");

  // Scatter-add with negative ids counting from the end.
  for (int64_t j = 0; j < n; j += 3) {
    ids64[j] -= vocab;
    ids[j] = I(ids64[j]);
  }
  dids.upload(ids);
  std::vector<float> refGrad(vocab * dim);
  ASSERT_EQ(cpu::scatter_add_rows(ids64.data(), dy.data(), n, vocab, dim,
                                  refGrad.data()),
            -1);
  DevBytes ws(cu::scatter_add_rows_workspace_bytes(n, vocab));
  for (int rep = 0; rep < 2; ++rep) {
    dgrad.poison();
    checkStatus(cu::scatter_add_rows(dids.get(), ddy.get(), n, vocab, dim,
                                     dgrad.get(), ws.get(), err.get(),
                                     nullptr),
                "scatter_add_rows");
    expectBitEqual(dgrad.download(), refGrad, "scatter-add");
  }
  EXPECT_EQ(cu::read_error_word(err.get(), nullptr), -1);

  // Bad ids: reported (the first), the gather row is zero.
  if (n >= 5) {
    for (int64_t j = 0; j < n; ++j)
      ids[j] = I(ids64[j] < 0 ? ids64[j] + vocab : ids64[j]);
    ids[4] = I(vocab);
    ids[n - 1] = I(-vocab - 1);
    dids.upload(ids);
    checkStatus(cu::gather_rows(dtable.get(), dids.get(), n, vocab, dim,
                                out.get(), err.get(), nullptr),
                "gather_rows");
    EXPECT_EQ(cu::read_error_word(err.get(), nullptr), 4);
    std::vector<float> got = out.download();
    for (int64_t c = 0; c < dim; ++c)
      ASSERT_EQ(got[4 * dim + c], 0.0f);
    checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
    checkStatus(cu::scatter_add_rows(dids.get(), ddy.get(), n, vocab, dim,
                                     dgrad.get(), ws.get(), err.get(),
                                     nullptr),
                "scatter_add_rows");
    // Both are outside [-vocab, vocab); the first is reported.
    EXPECT_EQ(cu::read_error_word(err.get(), nullptr), 4);
  }
}

TEST_F(Gpu, Embedding) {
  embeddingCase<int64_t>(1, 1, 1, 0, 1);
  embeddingCase<int64_t>(37, 50, 33, 0, 2);
  embeddingCase<int32_t>(1000, 50, 64, 0, 3);
  embeddingCase<int64_t>(4099, 50257, 768, 0, 4);
  embeddingCase<int32_t>(300, 20, 1100, 1, 5);
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

template <class T> void dropoutCase(int64_t n, double ratio, size_t offset,
                                    bool withOffset) {
  SCOPED_TRACE("n " + std::to_string(n) + " ratio " + std::to_string(ratio) +
               " misaligned " + std::to_string(offset));
  const uint64_t seed = 0x1234abcdull;
  const int64_t step = 17;
  std::vector<T> x(n);
  std::mt19937 rng(9);
  for (T &v : x)
    v = T(std::normal_distribution<double>()(rng));
  uint64_t s = withOffset ? dropoutSeed(seed, step) : seed;
  uint32_t threshold = dropoutKeepThreshold(ratio);
  const T scale = static_cast<T>(1.0 / (1.0 - ratio));
  std::vector<T> ref(n);
  std::vector<uint8_t> refMask(n);
  for (int64_t i = 0; i < n; ++i) {
    refMask[i] = dropoutKeep(s, uint64_t(i), threshold);
    ref[i] = refMask[i] ? x[i] * scale : T(0);
  }
  DevBuf<T> dx(x, offset), dy(n, offset);
  DevBuf<uint8_t> mask(n, offset);
  DevBuf<int64_t> doff(std::vector<int64_t>{step});
  checkStatus(cu::dropout(dx.get(), dy.get(), mask.get(), n, ratio, seed,
                          withOffset ? doff.get() : nullptr, nullptr),
              "dropout");
  expectBitEqual(dy.download(), ref, "y");
  expectBitEqual(mask.download(), refMask, "mask");
}

TEST_F(Gpu, Dropout) {
  dropoutCase<float>(1, 0.5, 0, false);
  dropoutCase<float>(1001, 0.1, 0, true);
  dropoutCase<float>(100003, 0.5, 1, false);
  dropoutCase<double>(4097, 0.25, 0, true);
  dropoutCase<double>(999, 0.9, 1, false);
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

TEST_F(Gpu, SgdMatchesCpuBitForBit) {
  const int64_t n = 10007;
  std::vector<float> p = randomNormal(n, 1), g = randomNormal(n, 2),
                     buf = randomNormal(n, 3, 0.1f);
  const double lr = 0.0371;
  DevBuf<double> dlr(std::vector<double>{lr});
  for (double momentum : {0.0, 0.9})
    for (double wd : {0.0, 0.01})
      for (bool nesterov : {false, true}) {
        if (nesterov && momentum == 0)
          continue;
        SCOPED_TRACE("momentum " + std::to_string(momentum) + " wd " +
                     std::to_string(wd) + (nesterov ? " nesterov" : ""));
        std::vector<float> refP(n), refB(n);
        cpu::sgd_update(p.data(), g.data(), buf.data(), refP.data(),
                        refB.data(), n, lr, momentum, wd, nesterov);
        DevBuf<float> dp(p), dg(g), db(buf), np(n), nb(n);
        checkStatus(cu::sgd_update(dp.get(), dg.get(), db.get(), np.get(),
                                   nb.get(), n, dlr.get(), momentum, wd,
                                   nesterov, nullptr, {}, nullptr),
                    "sgd_update");
        expectBitEqual(np.download(), refP, "param");
        if (momentum != 0)
          expectBitEqual(nb.download(), refB, "buf");
      }
}

/// AdamW against the CPU kernel: bit-identical except where the device's
/// pow differs from glibc's in the last bit of a double (at most 2 ulp).
void expectAdamwClose(const std::vector<float> &got,
                      const std::vector<float> &ref, const std::string &what) {
  ASSERT_EQ(got.size(), ref.size());
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    int32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &ref[i], 4);
    if (a != b) {
      ++differ;
      ASSERT_LE(std::abs(int64_t(a) - int64_t(b)), 2)
          << what << " element " << i << ": " << got[i] << " vs " << ref[i];
    }
  }
  EXPECT_LE(differ, got.size() / 100) << what << ": too many differ";
}

TEST_F(Gpu, AdamwSingleAndMultiTensor) {
  const double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  const int64_t step = 7;
  // Sizes: empty, one, a chunk and a bit, unaligned, a few chunks; the
  // weight decay is per tensor in the multi-tensor launch.
  const int64_t sizes[] = {0, 1, 16384 + 3, 1001, 3 * 16384 + 17};
  const size_t offsets[] = {0, 0, 0, 1, 0};
  const double wds[] = {0.01, 0.0, 0.1, 0.0, 0.01};
  const int count = 5;
  AdamwInputs in = adamwInputs(sizes, count);
  std::vector<std::vector<float>> &p = in.p, &g = in.g, &m = in.m, &v = in.v;
  std::vector<std::vector<float>> refP(count), refM(count), refV(count);
  for (int t = 0; t < count; ++t) {
    int64_t n = sizes[t];
    refP[t].resize(n);
    refM[t].resize(n);
    refV[t].resize(n);
    ASSERT_TRUE(cpu::adamw_update(p[t].data(), g[t].data(), m[t].data(),
                                  v[t].data(), refP[t].data(), refM[t].data(),
                                  refV[t].data(), n, lr, step, beta1, beta2,
                                  eps, wds[t]));
  }
  DevBuf<double> dlr(std::vector<double>{lr});
  DevBuf<int64_t> dstep(std::vector<int64_t>{step}), err(1);

  // Single tensor, out of place.
  {
    DevBuf<float> dp(p[4]), dg(g[4]), dm(m[4]), dv(v[4]), np(sizes[4]),
        nm(sizes[4]), nv(sizes[4]);
    checkStatus(cu::adamw_update(dp.get(), dg.get(), dm.get(), dv.get(),
                                 np.get(), nm.get(), nv.get(), sizes[4],
                                 dlr.get(), dstep.get(), beta1, beta2, eps,
                                 wds[4], nullptr, {}, err.get(), nullptr),
                "adamw_update");
    expectAdamwClose(np.download(), refP[4], "param");
    expectAdamwClose(nm.download(), refM[4], "exp_avg");
    expectAdamwClose(nv.download(), refV[4], "exp_avg_sq");
  }

  // All tensors in one launch, in place.
  std::vector<std::unique_ptr<DevBuf<float>>> bufs;
  std::vector<cu::AdamwTensor> tensors;
  for (int t = 0; t < count; ++t) {
    bufs.push_back(std::make_unique<DevBuf<float>>(p[t], offsets[t]));
    bufs.push_back(std::make_unique<DevBuf<float>>(g[t], offsets[t]));
    bufs.push_back(std::make_unique<DevBuf<float>>(m[t], offsets[t]));
    bufs.push_back(std::make_unique<DevBuf<float>>(v[t], offsets[t]));
    float *bp = bufs[4 * t]->get(), *bm = bufs[4 * t + 2]->get(),
          *bv = bufs[4 * t + 3]->get();
    tensors.push_back({bp, bufs[4 * t + 1]->get(), bm, bv, bp, bm, bv,
                       sizes[t], wds[t]});
  }
  std::vector<char> table(cu::adamw_table_bytes(count));
  int64_t chunks = cu::adamw_build_table(tensors.data(), count, table.data());
  EXPECT_EQ(chunks, 0 + 1 + 2 + 1 + 4);
  DevBytes dtable(table.size());
  check(cudaMemcpy(dtable.get(), table.data(), table.size(),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy");
  checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
  checkStatus(cu::adamw_update_multi(dtable.get(), count, chunks, dlr.get(),
                                     dstep.get(), beta1, beta2, eps,
                                     nullptr, err.get(), nullptr),
              "adamw_update_multi");
  EXPECT_EQ(cu::read_error_word(err.get(), nullptr), -1);
  for (int t = 0; t < count; ++t) {
    SCOPED_TRACE("tensor " + std::to_string(t));
    expectAdamwClose(bufs[4 * t]->download(), refP[t], "param");
    expectAdamwClose(bufs[4 * t + 2]->download(), refM[t], "exp_avg");
    expectAdamwClose(bufs[4 * t + 3]->download(), refV[t], "exp_avg_sq");
  }

  // Step 0 is refused: nothing written, the error word says so.
  DevBuf<int64_t> zero(std::vector<int64_t>{0});
  std::vector<float> before = bufs[4]->download();
  checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
  checkStatus(cu::adamw_update_multi(dtable.get(), count, chunks, dlr.get(),
                                     zero.get(), beta1, beta2, eps,
                                     nullptr, err.get(), nullptr),
              "adamw_update_multi");
  EXPECT_EQ(cu::read_error_word(err.get(), nullptr), 0);
  expectBitEqual(bufs[4]->download(), before, "untouched");

  // A set skip flag (dynamic loss scaling's overflow): nothing changes.
  DevBuf<uint8_t> skip(std::vector<uint8_t>{1});
  std::vector<std::vector<float>> kept;
  for (auto &b : bufs)
    kept.push_back(b->download());
  checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
  checkStatus(cu::adamw_update_multi(dtable.get(), count, chunks, dlr.get(),
                                     dstep.get(), beta1, beta2, eps,
                                     skip.get(), err.get(), nullptr),
              "adamw_update_multi skipped");
  EXPECT_EQ(cu::read_error_word(err.get(), nullptr), -1);
  for (size_t i = 0; i < bufs.size(); ++i)
    expectBitEqual(bufs[i]->download(), kept[i], "skipped");
}

//===----------------------------------------------------------------------===//
// Convolution and pooling: against the CPU kernels (tested against the
// interpreter in CpuKernelsTest), 1e-5; run twice, the same bits.
//===----------------------------------------------------------------------===//

std::vector<double> widened(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

TEST_F(Gpu, ConvAndPools) {
  kernels::WindowShape s;
  s.n = 2, s.c = 4, s.h = 9, s.w = 7, s.oc = 6, s.kh = 3, s.kw = 2;
  s.sh = 2, s.sw = 1, s.padTop = 1, s.padBottom = 2, s.padLeft = 0,
  s.padRight = 1, s.dh = 1, s.dw = 2, s.group = 2;
  s.oh = 5, s.ow = 6;
  size_t nx = size_t(s.n * s.c * s.h * s.w),
         nw = size_t(s.oc * 2 * s.kh * s.kw),
         ny = size_t(s.n * s.oc * s.oh * s.ow);
  std::vector<float> x = randomNormal(nx, 3), w = randomNormal(nw, 5),
                     b = randomNormal(size_t(s.oc), 7),
                     gy = randomNormal(ny, 11);
  std::vector<float> y(ny), dx(nx), dw(nw), db(size_t(s.oc));
  cpu::conv2d_fwd(s, x.data(), w.data(), b.data(), y.data());
  cpu::conv2d_bwd(s, x.data(), w.data(), gy.data(), dx.data(), dw.data(),
                  db.data());
  DevBuf<float> dX(x), dW(w), dB(b), dGy(gy), dY(ny), dDx(nx), dDw(nw),
      dDb(size_t(s.oc));
  auto conv = [&] {
    dY.poison(), dDx.poison(), dDw.poison(), dDb.poison();
    checkStatus(
        cu::conv2d_fwd(s, dX.get(), dW.get(), dB.get(), dY.get(), nullptr),
        "conv2d_fwd");
    checkStatus(cu::conv2d_bwd(s, dX.get(), dW.get(), dGy.get(), dDx.get(),
                               dDw.get(), dDb.get(), nullptr),
                "conv2d_bwd");
    return dY.download();
  };
  std::vector<float> got = conv();
  expectClose(got, widened(y), 1e-5, "conv y");
  expectClose(dDx.download(), widened(dx), 1e-5, "conv dx");
  expectClose(dDw.download(), widened(dw), 1e-5, "conv dw");
  expectClose(dDb.download(), widened(db), 1e-5, "conv db");
  expectBitEqual(got, conv(), "conv second run");

  // Pools: same window with the group's channels, c = oc.
  s.oc = s.c, s.group = 1;
  size_t np = size_t(s.n * s.c * s.oh * s.ow);
  std::vector<float> gp = randomNormal(np, 13), py(np), pdx(nx);
  DevBuf<float> dGp(gp), dPy(np), dPdx(nx);
  for (int kind = 0; kind < 3; ++kind) { // max, avg, avg with padding counted
    SCOPED_TRACE("pool " + std::to_string(kind));
    s.countIncludePad = kind == 2;
    dPy.poison(), dPdx.poison();
    if (kind == 0) {
      cpu::max_pool2d_fwd(s, x.data(), py.data());
      cpu::max_pool2d_bwd(s, x.data(), gp.data(), pdx.data());
      checkStatus(cu::max_pool2d_fwd(s, dX.get(), dPy.get(), nullptr),
                  "max_pool2d_fwd");
      checkStatus(
          cu::max_pool2d_bwd(s, dX.get(), dGp.get(), dPdx.get(), nullptr),
          "max_pool2d_bwd");
    } else {
      cpu::avg_pool2d_fwd(s, x.data(), py.data());
      cpu::avg_pool2d_bwd(s, gp.data(), pdx.data());
      checkStatus(cu::avg_pool2d_fwd(s, dX.get(), dPy.get(), nullptr),
                  "avg_pool2d_fwd");
      checkStatus(cu::avg_pool2d_bwd(s, dGp.get(), dPdx.get(), nullptr),
                  "avg_pool2d_bwd");
    }
    expectClose(dPy.download(), widened(py), 1e-5, "pool y");
    expectClose(dPdx.download(), widened(pdx), 1e-5, "pool dx");
  }
}

} // namespace
} // namespace tcc::gputest
