// The CUDA library kernels on bf16 and f16 storage (the FloatType overloads
// of runtime/kernels/cuda/cuda_kernels.h), each for both types:
//
//  * against a float64 reference computed on the inputs *widened* from 16
//    bits (so only the kernel's own rounding is measured), outputs poisoned
//    with NaN (0xffff is NaN in both types) before every launch;
//  * where the kernel is the float32 kernel with 16-bit loads and stores
//    (row kernels, layer norm, cross-entropy, the FMA attention), against
//    that float32 kernel run on the widened inputs: the 16-bit result must
//    be its result rounded once, to within one unit in the last place (the
//    vector width, hence the order of the double sums, differs);
//  * bit for bit where the kernel is exact (embedding gather copies bits;
//    scatter-add and dropout equal the CPU backend's emulation: the float
//    kernel on widened values, rounded once);
//  * reductions twice, the same bits.
//
// Tolerances (|got - ref| <= tol * (|ref| + max|ref|), see expectClose):
//   16-bit outputs                 bf16 1e-2, f16 5e-3 (one rounding is at
//                                  most 2^-9 resp. 2^-12 relative)
//   f32 outputs of 16-bit inputs   as the float32 tests (layer norm mean /
//   (mean, rstd, loss sum, lse)    rstd 1e-6, loss 1e-5, FMA lse 2e-5); the
//                                  tensor-core lse sums probabilities
//                                  rounded to 16 bits: the 16-bit tolerance
//   attention backward             the 16-bit tolerance with a scale of at
//                                  least 1 (dq, dk cancel to ~0)
//
// Without a GPU every test prints "no CUDA device: skipped" and skips; the
// dispatch tests at the end need no GPU and run everywhere.
#include "GpuReference.h"
#include "GpuTestUtil.h"

#include "data/half.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/dropout_hash.h"

#include <algorithm>
#include <array>
#include <memory>

namespace tcc::gputest {
namespace {

namespace cu = tcc::cuda;
using cu::FloatType;
using Bits = std::vector<uint16_t>;

uint16_t toBits(FloatType t, float f) {
  return t == FloatType::BF16 ? data::floatToBf16(f) : data::floatToF16(f);
}

float fromBits(FloatType t, uint16_t h) {
  return t == FloatType::BF16 ? data::bf16ToFloat(h) : data::f16ToFloat(h);
}

Bits toBits(FloatType t, const std::vector<float> &v) {
  Bits b(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    b[i] = toBits(t, v[i]);
  return b;
}

std::vector<float> widen(FloatType t, const Bits &b) {
  std::vector<float> v(b.size());
  for (size_t i = 0; i < b.size(); ++i)
    v[i] = fromBits(t, b[i]);
  return v;
}

/// Rounds `v` to `t` in place (the values the kernel will see, widened) and
/// returns the 16-bit patterns.
Bits roundTo(FloatType t, std::vector<float> &v) {
  Bits b = toBits(t, v);
  v = widen(t, b);
  return b;
}

double tolerance(FloatType t) { return t == FloatType::BF16 ? 1e-2 : 5e-3; }

const char *name(FloatType t) { return cu::float_type_name(t); }

/// The 16-bit patterns in the order of their values (-0 == +0).
int ordered(uint16_t h) {
  return (h & 0x8000u) ? -int(h & 0x7fffu) : int(h);
}

bool isNaN(FloatType t, uint16_t h) { return std::isnan(fromBits(t, h)); }

/// Every got[i] is wide[i] rounded once to `t`, or a neighbour of it (one
/// unit in the last place); NaN matches NaN.
void expectRoundedFrom(FloatType t, const Bits &got,
                       const std::vector<float> &wide,
                       const std::string &what) {
  ASSERT_EQ(got.size(), wide.size()) << what;
  size_t bad = 0, exact = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    uint16_t want = toBits(t, wide[i]);
    bool ok;
    if (std::isnan(wide[i]) || isNaN(t, got[i]))
      ok = std::isnan(wide[i]) && isNaN(t, got[i]);
    else
      ok = std::abs(ordered(got[i]) - ordered(want)) <= 1;
    exact += got[i] == want || (std::isnan(wide[i]) && isNaN(t, got[i]));
    if (!ok && !bad++)
      first = i;
  }
  if (std::getenv("TCC_GPU_TEST_VERBOSE") && !got.empty())
    std::printf("  %-16s %zu of %zu exactly the f32 result rounded\n",
                what.c_str(), exact, got.size());
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size()
                     << " elements more than 1 ulp from the f32 result "
                        "rounded; first at "
                     << first << ": got " << fromBits(t, got[first])
                     << ", f32 " << wide[first];
}

void expectClose16(FloatType t, const Bits &got, const std::vector<double> &ref,
                   const std::string &what, double floor = 0) {
  expectClose(widen(t, got), ref, tolerance(t), what, floor);
}

class HalfKernels : public GpuTest,
                    public ::testing::WithParamInterface<FloatType> {
protected:
  FloatType t = GetParam();
};

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

// Lengths across the one-warp / 128-thread / 512-thread kernels, multiples
// of 8 (16-byte accesses), of 4 only and odd (scalar accesses).
const RowShape kRowShapes[] = {
    {1, 1, 0},    {3, 7, 0},    {17, 128, 0}, {5, 129, 0},  {9, 64, 1},
    {6, 100, 0},  {4, 1000, 0}, {3, 2049, 0}, {2, 5000, 0}, {33, 2048, 0},
};

std::string rowName(const RowShape &s) {
  return "rows " + std::to_string(s.rows) + " len " + std::to_string(s.len) +
         (s.offset ? " misaligned" : "");
}

TEST_P(HalfKernels, SoftmaxAndLogSoftmaxRows) {
  for (const RowShape &s : kRowShapes)
    for (bool log : {false, true}) {
      SCOPED_TRACE(rowName(s) + (log ? " log " : " ") + name(t));
      std::vector<float> x = randomNormal(s.rows * s.len, 7 + s.len, 3.0f);
      if (s.rows >= 3 && s.len >= 2) {
        x[0 * s.len + s.len / 2] = NAN; // row 0: a NaN
        for (int64_t j = 0; j < s.len; ++j)
          x[1 * s.len + j] = -INFINITY; // row 1: all -inf
        x[2 * s.len] = INFINITY;        // row 2: a +inf
      }
      Bits xb = roundTo(t, x);
      std::vector<double> ref;
      for (int64_t r = 0; r < s.rows; ++r) {
        std::vector<double> y = refSoftmaxRow(&x[r * s.len], s.len, log);
        ref.insert(ref.end(), y.begin(), y.end());
      }
      DevBuf<uint16_t> dx(xb, s.offset), dy(x.size(), s.offset);
      auto run = [&] {
        dy.poison();
        checkStatus(log ? cu::log_softmax_rows(t, dx.get(), dy.get(), s.rows,
                                               s.len, nullptr)
                        : cu::softmax_rows(t, dx.get(), dy.get(), s.rows,
                                           s.len, nullptr),
                    "softmax");
        return dy.download();
      };
      Bits got = run();
      expectClose16(t, got, ref, log ? "log_softmax" : "softmax");
      expectBitEqual(got, run(), "second run");
      // The float32 kernel on the widened input, rounded once.
      DevBuf<float> fx(x), fy(x.size());
      checkStatus(log ? cu::log_softmax_rows(fx.get(), fy.get(), s.rows, s.len,
                                             nullptr)
                      : cu::softmax_rows(fx.get(), fy.get(), s.rows, s.len,
                                         nullptr),
                  "softmax f32");
      expectRoundedFrom(t, got, fy.download(), "rounded f32");
      // In place.
      checkStatus(log ? cu::log_softmax_rows(t, dx.get(), dx.get(), s.rows,
                                             s.len, nullptr)
                      : cu::softmax_rows(t, dx.get(), dx.get(), s.rows, s.len,
                                         nullptr),
                  "softmax in place");
      expectBitEqual(dx.download(), got, "in place");
    }
}

TEST_P(HalfKernels, SoftmaxGradRows) {
  for (const RowShape &s : kRowShapes)
    for (bool log : {false, true}) {
      SCOPED_TRACE(rowName(s) + (log ? " log " : " ") + name(t));
      std::vector<float> x = randomNormal(s.rows * s.len, 11 + s.len, 2.0f);
      std::vector<float> g = randomNormal(s.rows * s.len, 13 + s.len);
      // y: the forward's output, as the op receives it (16-bit).
      std::vector<float> y(x.size());
      if (log)
        cpu::log_softmax_rows(x.data(), y.data(), s.rows, s.len);
      else
        cpu::softmax_rows(x.data(), y.data(), s.rows, s.len);
      Bits yb = roundTo(t, y), gb = roundTo(t, g);
      std::vector<double> ref = refSoftmaxGradRows(y, g, s.rows, s.len, log);
      DevBuf<uint16_t> dy_(yb, s.offset), dg(gb, s.offset),
          dx(x.size(), s.offset);
      auto run = [&] {
        dx.poison();
        checkStatus(log ? cu::log_softmax_grad_rows(t, dy_.get(), dg.get(),
                                                    dx.get(), s.rows, s.len,
                                                    nullptr)
                        : cu::softmax_grad_rows(t, dy_.get(), dg.get(),
                                                dx.get(), s.rows, s.len,
                                                nullptr),
                    "softmax grad");
        return dx.download();
      };
      Bits got = run();
      expectClose16(t, got, ref, "softmax grad");
      expectBitEqual(got, run(), "second run");
      DevBuf<float> fy(y), fg(g), fdx(x.size());
      checkStatus(log ? cu::log_softmax_grad_rows(fy.get(), fg.get(),
                                                  fdx.get(), s.rows, s.len,
                                                  nullptr)
                      : cu::softmax_grad_rows(fy.get(), fg.get(), fdx.get(),
                                              s.rows, s.len, nullptr),
                  "softmax grad f32");
      expectRoundedFrom(t, got, fdx.download(), "rounded f32");
    }
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

TEST_P(HalfKernels, LayerNormForward) {
  const double eps = 1e-5;
  for (const RowShape &s : kNormShapes)
    for (int affine = 0; affine < 3; ++affine) { // none, scale, scale + bias
      SCOPED_TRACE(rowName(s) + " affine " + std::to_string(affine) + " " +
                   name(t));
      std::vector<float> x = randomNormal(s.rows * s.len, 17 + s.len, 2.0f);
      for (float &v : x)
        v += 5.0f; // an offset the centred variance must not cancel
      std::vector<float> sc = randomNormal(s.len, 19),
                         bi = randomNormal(s.len, 23);
      Bits xb = roundTo(t, x), scb = roundTo(t, sc), bib = roundTo(t, bi);
      LayerNormRef ref = refLayerNormFwd(x, affine >= 1 ? sc.data() : nullptr,
                                         affine >= 2 ? bi.data() : nullptr,
                                         s.rows, s.len, eps);
      DevBuf<uint16_t> dx(xb, s.offset), dsc(scb, s.offset),
          dbi(bib, s.offset), dy(x.size(), s.offset);
      DevBuf<float> dmean(s.rows), drstd(s.rows);
      auto run = [&] {
        dy.poison();
        dmean.poison();
        drstd.poison();
        checkStatus(cu::layer_norm_fwd(t, dx.get(),
                                       affine >= 1 ? dsc.get() : nullptr,
                                       affine >= 2 ? dbi.get() : nullptr,
                                       dy.get(), dmean.get(), drstd.get(),
                                       s.rows, s.len, eps, nullptr),
                    "layer_norm_fwd");
        return dy.download();
      };
      Bits got = run();
      expectClose16(t, got, ref.y, "y");
      expectClose(dmean.download(), ref.mean, 1e-6, "mean");
      expectClose(drstd.download(), ref.rstd, 1e-6, "rstd");
      expectBitEqual(got, run(), "second run");
      DevBuf<float> fx(x), fsc(sc), fbi(bi), fy(x.size());
      checkStatus(cu::layer_norm_fwd(fx.get(), affine >= 1 ? fsc.get() : nullptr,
                                     affine >= 2 ? fbi.get() : nullptr,
                                     fy.get(), nullptr, nullptr, s.rows, s.len,
                                     eps, nullptr),
                  "layer_norm_fwd f32");
      expectRoundedFrom(t, got, fy.download(), "rounded f32");
    }
}

TEST_P(HalfKernels, LayerNormBackward) {
  const double eps = 1e-5;
  for (const RowShape &s : kNormShapes)
    for (int variant = 0; variant < 4; ++variant) {
      // bit 0: scale given; bit 1: the forward's mean / rstd given.
      const bool withScale = variant & 1, withStats = variant & 2;
      SCOPED_TRACE(rowName(s) + " variant " + std::to_string(variant) + " " +
                   name(t));
      std::vector<float> x = randomNormal(s.rows * s.len, 29 + s.len, 2.0f);
      std::vector<float> g = randomNormal(s.rows * s.len, 31 + s.len);
      std::vector<float> sc = randomNormal(s.len, 37);
      Bits xb = roundTo(t, x), gb = roundTo(t, g), scb = roundTo(t, sc);
      std::vector<float> mean(s.rows), rstd(s.rows), yScratch(x.size());
      cpu::layer_norm_fwd(x.data(), nullptr, nullptr, yScratch.data(),
                          mean.data(), rstd.data(), s.rows, s.len, eps);
      LayerNormGradRef ref = refLayerNormBwd(
          x, g, withScale ? sc.data() : nullptr,
          withStats ? mean.data() : nullptr, withStats ? rstd.data() : nullptr,
          s.rows, s.len, eps);
      DevBuf<uint16_t> dx_(xb, s.offset), dg(gb, s.offset), dsc(scb, s.offset),
          ddx(x.size(), s.offset);
      // dscale / dbias are float for every storage type (fp32 parameter
      // gradients): the f32 kernel's bits on the same (widened) inputs.
      DevBuf<float> dds(s.len), ddb(s.len);
      DevBuf<float> dmean(mean), drstd(rstd);
      DevBytes ws(cu::layer_norm_bwd_workspace_bytes(s.rows, s.len));
      auto run = [&] {
        ddx.poison();
        dds.poison();
        ddb.poison();
        checkStatus(cu::layer_norm_bwd(
                        t, dx_.get(), withScale ? dsc.get() : nullptr, dg.get(),
                        nullptr, withStats ? dmean.get() : nullptr,
                        withStats ? drstd.get() : nullptr, ddx.get(),
                        dds.get(), ddb.get(), nullptr, s.rows, s.len, eps,
                        ws.get(), nullptr),
                    "layer_norm_bwd");
        return ddx.download();
      };
      Bits gotDx = run();
      std::vector<float> gotDs = dds.download(), gotDb = ddb.download();
      expectClose16(t, gotDx, ref.dx, "dx");
      expectClose(gotDs, ref.dscale, 1e-4, "dscale");
      expectClose(gotDb, ref.dbias, 1e-4, "dbias");
      expectBitEqual(gotDx, run(), "dx second run");
      expectBitEqual(gotDs, dds.download(), "dscale second run");
      expectBitEqual(gotDb, ddb.download(), "dbias second run");
      DevBuf<float> fx(x), fg(g), fsc(sc), fdx(x.size()), fds(s.len),
          fdb(s.len);
      checkStatus(cu::layer_norm_bwd(fx.get(), withScale ? fsc.get() : nullptr,
                                     fg.get(), nullptr,
                                     withStats ? dmean.get() : nullptr,
                                     withStats ? drstd.get() : nullptr,
                                     fdx.get(), fds.get(), fdb.get(), nullptr,
                                     s.rows, s.len, eps, ws.get(), nullptr),
                  "layer_norm_bwd f32");
      expectRoundedFrom(t, gotDx, fdx.download(), "dx rounded f32");
      expectBitEqual(gotDs, fds.download(), "dscale = f32's");
      expectBitEqual(gotDb, fdb.download(), "dbias = f32's");
    }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// Head dims 64 and 128 with d == dv take the tensor cores (also with
// sequence lengths that are not multiples of the 64-query / 64-key tiles,
// causal, both masks); the others the FMA kernel.
const AttnShape kHalfAttnShapes[] = {
    {1, 1, 1, 1, 8, 8, false, 0},        {2, 3, 17, 17, 16, 16, true, 0},
    {1, 2, 64, 64, 64, 64, false, 0},    {2, 2, 100, 77, 64, 64, false, 1},
    {1, 2, 130, 130, 64, 64, true, 2},   {1, 1, 70, 90, 128, 128, false, 0},
    {2, 1, 65, 65, 40, 24, true, 1},     {1, 2, 33, 200, 96, 96, false, 2},
    {1, 1, 129, 129, 128, 100, true, 0}, {3, 1, 5, 300, 64, 64, false, 1},
    {1, 2, 200, 200, 128, 128, true, 2}, {2, 1, 1, 70, 64, 64, false, 0},
};

/// The attention data rounded to `t` (q, k, v, g and, for an additive mask
/// stored in 16 bits, the bias), with the float vectors replaced by their
/// widened values so refAttention sees what the kernel sees.
struct HalfAttn {
  AttnData a;
  Bits q, k, v, g, bias;
};

HalfAttn makeHalfAttn(FloatType t, const AttnShape &s, uint32_t seed,
                      bool bias16) {
  HalfAttn h;
  h.a = makeAttn(s, seed);
  h.q = roundTo(t, h.a.q);
  h.k = roundTo(t, h.a.k);
  h.v = roundTo(t, h.a.v);
  h.g = roundTo(t, h.a.g);
  if (bias16)
    h.bias = roundTo(t, h.a.bias);
  return h;
}

TEST_P(HalfKernels, AttentionForward) {
  uint32_t seed = 100;
  for (const AttnShape &s : kHalfAttnShapes)
    for (bool bias16 : {true, false}) {
      if (!bias16 && s.mask != 2)
        continue;
      SCOPED_TRACE(attnName(s) + (s.mask == 2 && !bias16 ? " (f32 bias) " : " ") +
                   name(t));
      HalfAttn h = makeHalfAttn(t, s, seed += 10, bias16);
      const AttnData &a = h.a;
      AttnRef ref = refAttention(a);
      DevBuf<uint16_t> q(h.q), k(h.k), v(h.v), out(ref.out.size()),
          bias16buf(h.bias);
      DevBuf<float> lse(ref.lse.size()), bias32(a.bias);
      DevBuf<uint8_t> keep(a.keep);
      cu::KeyMask mask;
      if (s.mask == 1)
        mask.keep = keep.get();
      if (s.mask == 2 && bias16) {
        mask.bias = bias16buf.get();
        mask.biasType = t;
      } else if (s.mask == 2) {
        mask.bias = bias32.get();
      }
      const bool tc = cu::attention_fwd_uses_tensor_cores(
          t, s.d, s.dv, q.get(), k.get(), v.get(), out.get());
      EXPECT_EQ(tc, s.d == s.dv && (s.d == 64 || s.d == 128));
      auto run = [&](cu::AttentionPath path) {
        out.poison();
        lse.poison();
        checkStatus(cu::attention_fwd(t, q.get(), k.get(), v.get(), out.get(),
                                      s.b, s.h, s.tq, s.tk, s.d, s.dv, a.scale,
                                      s.causal, mask, lse.get(), nullptr,
                                      path),
                    "attention_fwd");
        return out.download();
      };
      // The FMA kernel: the float32 kernel on the widened inputs, rounded.
      Bits fma = run(cu::AttentionPath::Fma);
      expectClose16(t, fma, ref.out, "out (fma)");
      expectClose(lse.download(), ref.lse, 2e-5, "lse (fma)");
      expectBitEqual(fma, run(cu::AttentionPath::Fma), "fma second run");
      DevBuf<float> fq(a.q), fk(a.k), fv(a.v), fout(ref.out.size());
      cu::KeyMask fmask = mask;
      if (s.mask == 2) {
        fmask.bias = bias32.get(); // the widened bias
        fmask.biasType = FloatType::F32;
      }
      checkStatus(cu::attention_fwd(fq.get(), fk.get(), fv.get(), fout.get(),
                                    s.b, s.h, s.tq, s.tk, s.d, s.dv, a.scale,
                                    s.causal, fmask, nullptr, nullptr),
                  "attention_fwd f32");
      expectRoundedFrom(t, fma, fout.download(), "fma rounded f32");
      if (!tc)
        continue;
      Bits got = run(cu::AttentionPath::TensorCore);
      expectClose16(t, got, ref.out, "out (tensor cores)");
      expectClose(lse.download(), ref.lse, tolerance(t), "lse (tensor cores)");
      expectBitEqual(got, run(cu::AttentionPath::Auto), "auto == tensor cores");
      expectBitEqual(got, run(cu::AttentionPath::TensorCore),
                     "tensor cores second run");
    }
}

TEST_P(HalfKernels, AttentionBackward) {
  uint32_t seed = 300;
  for (const AttnShape &s : kHalfAttnShapes) {
    SCOPED_TRACE(attnName(s) + " " + name(t));
    HalfAttn h = makeHalfAttn(t, s, seed += 10, true);
    const AttnData &a = h.a;
    AttnRef ref = refAttention(a);
    DevBuf<uint16_t> q(h.q), k(h.k), v(h.v), g(h.g), out(ref.out.size()),
        bias(h.bias), dq(a.q.size()), dk(a.k.size()), dv(a.v.size());
    DevBuf<float> lse(ref.lse.size());
    DevBuf<uint8_t> keep(a.keep);
    cu::KeyMask mask;
    if (s.mask == 1)
      mask.keep = keep.get();
    if (s.mask == 2) {
      mask.bias = bias.get();
      mask.biasType = t;
    }
    checkStatus(cu::attention_fwd(t, q.get(), k.get(), v.get(), out.get(), s.b,
                                  s.h, s.tq, s.tk, s.d, s.dv, a.scale,
                                  s.causal, mask, lse.get(), nullptr),
                "attention_fwd");
    const bool tc = cu::attention_bwd_uses_tensor_cores(
        t, s.d, s.dv, q.get(), k.get(), v.get(), g.get(), dq.get(), dk.get(),
        dv.get());
    EXPECT_EQ(tc, s.d == s.dv && (s.d == 64 || s.d == 128));
    // dq, dk, dv of one path, with or without the forward's out and lse;
    // run twice, bit-identical (no atomics, a fixed order).
    auto run = [&](cu::AttentionPath path, bool haveForward) {
      std::array<Bits, 3> got;
      DevBytes ws(cu::attention_bwd_workspace_bytes(s.b, s.h, s.tq, s.tk, s.d,
                                                    s.dv, haveForward));
      for (int rep = 0; rep < 2; ++rep) {
        dq.poison();
        dk.poison();
        dv.poison();
        checkStatus(cu::attention_bwd(
                        t, q.get(), k.get(), v.get(), g.get(), dq.get(),
                        dk.get(), dv.get(), s.b, s.h, s.tq, s.tk, s.d, s.dv,
                        a.scale, s.causal, mask,
                        haveForward ? out.get() : nullptr,
                        haveForward ? lse.get() : nullptr, ws.get(), nullptr,
                        path),
                    "attention_bwd");
        std::array<Bits, 3> now = {dq.download(), dk.download(),
                                   dv.download()};
        if (rep == 0) {
          got = now;
        } else {
          expectBitEqual(now[0], got[0], "dq second run");
          expectBitEqual(now[1], got[1], "dk second run");
          expectBitEqual(now[2], got[2], "dv second run");
        }
      }
      return got;
    };
    const char *names[3] = {"dq", "dk", "dv"};
    const std::vector<double> *refs[3] = {&ref.dq, &ref.dk, &ref.dv};
    std::array<Bits, 3> recomputed[2];
    for (cu::AttentionPath path :
         {cu::AttentionPath::Fma, cu::AttentionPath::TensorCore}) {
      const bool isTc = path == cu::AttentionPath::TensorCore;
      if (isTc && !tc)
        continue;
      SCOPED_TRACE(isTc ? "tensor cores" : "fma");
      // What the runtime runs: the forward recomputed inside, in float; and
      // with the forward's 16-bit out (delta from the rounded out) and lse.
      for (bool haveForward : {false, true}) {
        std::array<Bits, 3> got = run(path, haveForward);
        for (int i = 0; i < 3; ++i)
          expectClose16(t, got[i], *refs[i],
                        std::string(names[i]) +
                            (haveForward ? " (given forward)" : ""),
                        1.0);
        if (!haveForward)
          recomputed[isTc] = got;
      }
    }
    // Auto takes the tensor cores where they fit, else the FMA kernels.
    std::array<Bits, 3> autoGot = run(cu::AttentionPath::Auto, false);
    for (int i = 0; i < 3; ++i)
      expectBitEqual(autoGot[i], recomputed[tc][i],
                     std::string(names[i]) + ": auto == " +
                         (tc ? "tensor cores" : "fma"));
    // The recomputing FMA backward is the float32 backward on the widened
    // inputs, rounded once.
    DevBuf<float> fq(a.q), fk(a.k), fv(a.v), fg(a.g), fbias(a.bias),
        fdq(a.q.size()), fdk(a.k.size()), fdv(a.v.size());
    cu::KeyMask fmask = mask;
    if (s.mask == 2) {
      fmask.bias = fbias.get();
      fmask.biasType = FloatType::F32;
    }
    DevBytes ws(cu::attention_bwd_workspace_bytes(s.b, s.h, s.tq, s.tk, s.d,
                                                  s.dv, false));
    checkStatus(cu::attention_bwd(fq.get(), fk.get(), fv.get(), fg.get(),
                                  fdq.get(), fdk.get(), fdv.get(), s.b, s.h,
                                  s.tq, s.tk, s.d, s.dv, a.scale, s.causal,
                                  fmask, nullptr, nullptr, ws.get(), nullptr),
                "attention_bwd f32");
    expectRoundedFrom(t, recomputed[0][0], fdq.download(), "dq rounded f32");
    expectRoundedFrom(t, recomputed[0][1], fdk.download(), "dk rounded f32");
    expectRoundedFrom(t, recomputed[0][2], fdv.download(), "dv rounded f32");
  }
}

TEST_P(HalfKernels, AttentionAllKeysHiddenIsNaN) {
  for (int64_t d : {16, 64}) { // FMA, tensor cores
    SCOPED_TRACE("d " + std::to_string(d) + " " + name(t));
    AttnShape s{2, 2, 9, 11, d, d, false, 1};
    HalfAttn h = makeHalfAttn(t, s, 7, false);
    std::fill(h.a.keep.begin(), h.a.keep.begin() + s.tk, uint8_t(0));
    AttnRef ref = refAttention(h.a);
    DevBuf<uint16_t> q(h.q), k(h.k), v(h.v), out(ref.out.size());
    DevBuf<uint8_t> keep(h.a.keep);
    cu::KeyMask mask;
    mask.keep = keep.get();
    checkStatus(cu::attention_fwd(t, q.get(), k.get(), v.get(), out.get(), s.b,
                                  s.h, s.tq, s.tk, s.d, s.dv, h.a.scale, false,
                                  mask, nullptr, nullptr),
                "attention_fwd");
    Bits got = out.download();
    for (int64_t i = 0; i < s.h * s.tq * s.dv; ++i) // batch 0
      ASSERT_TRUE(isNaN(t, got[i])) << i;
    expectClose16(t, got, ref.out, "out");
  }
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

template <class L>
void crossEntropyCase(FloatType t, int64_t rows, int64_t classes,
                      uint32_t seed) {
  SCOPED_TRACE("rows " + std::to_string(rows) + " classes " +
               std::to_string(classes) + (sizeof(L) == 4 ? " i32 " : " i64 ") +
               name(t));
  const int64_t ignore = -100;
  std::vector<float> x = randomNormal(rows * classes, seed, 3.0f);
  Bits xb = roundTo(t, x);
  std::mt19937 rng(seed + 1);
  std::vector<L> labels(rows);
  for (int64_t r = 0; r < rows; ++r)
    labels[r] = r % 5 == 3 ? L(ignore) : L(rng() % classes);
  // A seed that 16 bits hold exactly, so both seed types give one gradient.
  const double lossGrad = 0.375;
  CrossEntropyRef ref = refCrossEntropy(x, labels, classes, ignore, lossGrad);
  DevBuf<uint16_t> dx(xb), dgrad(x.size());
  DevBuf<float> dloss(1), dcount(1);
  DevBuf<float> seed32(std::vector<float>{float(lossGrad)});
  DevBuf<uint16_t> seed16(Bits{toBits(t, float(lossGrad))});
  DevBuf<L> dlabels(labels);
  DevBuf<int64_t> err(1);
  DevBytes ws(cu::cross_entropy_fwd_workspace_bytes(rows));
  std::vector<float> first;
  for (int rep = 0; rep < 2; ++rep) {
    dloss.poison();
    dcount.poison();
    checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
    checkStatus(cu::cross_entropy_fwd(t, dx.get(), dlabels.get(), rows,
                                      classes, ignore, dloss.get(),
                                      dcount.get(), ws.get(), err.get(),
                                      nullptr),
                "cross_entropy_fwd");
    EXPECT_EQ(cu::read_error_word(err.get(), nullptr), -1);
    std::vector<float> got = dloss.download();
    if (rep == 0) {
      first = got;
      // f32 outputs of exactly widened logits: the float32 tolerance.
      expectClose(got, {ref.sum}, 1e-5, "loss sum");
      EXPECT_EQ(dcount.download()[0], float(ref.count));
    } else {
      expectBitEqual(got, first, "loss second run");
    }
  }
  Bits grad[2];
  for (int seed16bit = 0; seed16bit < 2; ++seed16bit) {
    dgrad.poison();
    checkStatus(cu::cross_entropy_grad(
                    t, dx.get(), dlabels.get(),
                    seed16bit ? t : FloatType::F32,
                    seed16bit ? static_cast<const void *>(seed16.get())
                              : static_cast<const void *>(seed32.get()),
                    dgrad.get(), rows, classes, ignore, err.get(), nullptr),
                "cross_entropy_grad");
    EXPECT_EQ(cu::read_error_word(err.get(), nullptr), -1);
    grad[seed16bit] = dgrad.download();
  }
  expectClose16(t, grad[0], ref.grad, "dlogits");
  expectBitEqual(grad[1], grad[0], "16-bit seed");
  DevBuf<float> fx(x), fgrad(x.size());
  checkStatus(cu::cross_entropy_grad(fx.get(), dlabels.get(), seed32.get(),
                                     fgrad.get(), rows, classes, ignore,
                                     err.get(), nullptr),
              "cross_entropy_grad f32");
  expectRoundedFrom(t, grad[0], fgrad.download(), "rounded f32");

  // Out-of-range labels: the first bad row is reported, the row is zero.
  if (rows >= 4) {
    labels[rows - 1] = L(classes);
    labels[2] = L(-1);
    dlabels.upload(labels);
    checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
    checkStatus(cu::cross_entropy_fwd(t, dx.get(), dlabels.get(), rows,
                                      classes, ignore, dloss.get(),
                                      dcount.get(), ws.get(), err.get(),
                                      nullptr),
                "cross_entropy_fwd");
    EXPECT_EQ(cu::read_error_word(err.get(), nullptr), 2);
    checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
    dgrad.poison();
    checkStatus(cu::cross_entropy_grad(t, dx.get(), dlabels.get(),
                                       FloatType::F32, seed32.get(),
                                       dgrad.get(), rows, classes, ignore,
                                       err.get(), nullptr),
                "cross_entropy_grad");
    EXPECT_EQ(cu::read_error_word(err.get(), nullptr), 2);
    Bits got = dgrad.download();
    for (int64_t j = 0; j < classes; ++j)
      ASSERT_EQ(got[2 * classes + j], 0u); // the bad row is +0
  }
}

TEST_P(HalfKernels, CrossEntropy) {
  crossEntropyCase<int64_t>(t, 1, 1, 1);
  crossEntropyCase<int64_t>(t, 7, 10, 2);
  crossEntropyCase<int32_t>(t, 33, 129, 3);
  crossEntropyCase<int64_t>(t, 20, 3001, 4);
  crossEntropyCase<int32_t>(t, 64, 50257, 5);
  crossEntropyCase<int64_t>(t, 3000, 64, 6);
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

template <class I>
void embeddingCase(FloatType t, int64_t n, int64_t vocab, int64_t dim,
                   size_t offset, uint32_t seed) {
  SCOPED_TRACE("n " + std::to_string(n) + " vocab " + std::to_string(vocab) +
               " dim " + std::to_string(dim) + " offset " +
               std::to_string(offset) + " " + name(t));
  std::mt19937 rng(seed);
  std::vector<float> table = randomNormal(vocab * dim, seed + 1);
  std::vector<float> dy = randomNormal(n * dim, seed + 2);
  Bits tableb = roundTo(t, table), dyb = roundTo(t, dy);
  tableb[0] = 0x7fa5; // a NaN with a payload: the gather copies bits
  std::vector<I> ids(n);
  std::vector<int64_t> ids64(n);
  for (int64_t j = 0; j < n; ++j) {
    ids64[j] = int64_t(rng() % std::min<int64_t>(vocab, 7));
    ids[j] = I(ids64[j]);
  }
  DevBuf<uint16_t> dtable(tableb, offset), ddy(dyb, offset),
      out(n * dim, offset), dgrad(vocab * dim, offset);
  DevBuf<I> dids(ids);
  DevBuf<int64_t> err(1);

  Bits refOut(n * dim);
  for (int64_t j = 0; j < n; ++j)
    std::copy(tableb.begin() + ids64[j] * dim,
              tableb.begin() + (ids64[j] + 1) * dim, refOut.begin() + j * dim);
  checkStatus(cu::set_error_word(err.get(), nullptr), "set_error_word");
  checkStatus(cu::gather_rows(t, dtable.get(), dids.get(), n, vocab, dim,
                              out.get(), err.get(), nullptr),
              "gather_rows");
  EXPECT_EQ(cu::read_error_word(err.get(), nullptr), -1);
  expectBitEqual(out.download(), refOut, "gather");

  // Scatter-add (negative ids count from the end): the CPU kernel on the
  // widened dy, rounded once - bit for bit.
  for (int64_t j = 0; j < n; j += 3) {
    ids64[j] -= vocab;
    ids[j] = I(ids64[j]);
  }
  dids.upload(ids);
  std::vector<float> wideGrad(vocab * dim);
  ASSERT_EQ(cpu::scatter_add_rows(ids64.data(), dy.data(), n, vocab, dim,
                                  wideGrad.data()),
            -1);
  Bits refGrad = toBits(t, wideGrad);
  DevBytes ws(cu::scatter_add_rows_workspace_bytes(n, vocab));
  for (int rep = 0; rep < 2; ++rep) {
    dgrad.poison();
    checkStatus(cu::scatter_add_rows(t, dids.get(), ddy.get(), n, vocab, dim,
                                     dgrad.get(), ws.get(), err.get(),
                                     nullptr),
                "scatter_add_rows");
    expectBitEqual(dgrad.download(), refGrad, "scatter-add");
  }
  EXPECT_EQ(cu::read_error_word(err.get(), nullptr), -1);

  // Bad ids: reported (the first), the gather row is +0.
  if (n >= 5) {
    for (int64_t j = 0; j < n; ++j)
      ids[j] = I(ids64[j] < 0 ? ids64[j] + vocab : ids64[j]);
    ids[4] = I(vocab);
    dids.upload(ids);
    checkStatus(cu::gather_rows(t, dtable.get(), dids.get(), n, vocab, dim,
                                out.get(), err.get(), nullptr),
                "gather_rows");
    EXPECT_EQ(cu::read_error_word(err.get(), nullptr), 4);
    Bits got = out.download();
    for (int64_t c = 0; c < dim; ++c)
      ASSERT_EQ(got[4 * dim + c], 0u);
  }
}

TEST_P(HalfKernels, Embedding) {
  embeddingCase<int64_t>(t, 1, 1, 1, 0, 1);
  embeddingCase<int64_t>(t, 37, 50, 33, 0, 2);   // 2-byte copies
  embeddingCase<int32_t>(t, 1000, 50, 64, 0, 3); // 16-byte copies
  embeddingCase<int64_t>(t, 4099, 50257, 768, 0, 4);
  embeddingCase<int32_t>(t, 300, 20, 1100, 1, 5); // misaligned
  embeddingCase<int64_t>(t, 64, 30, 12, 0, 6);    // 24-byte rows
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

TEST_P(HalfKernels, DropoutMatchesTheEmulationBitForBit) {
  const uint64_t seed = 0x1234abcdull;
  const int64_t step = 17;
  struct Case {
    int64_t n;
    double ratio;
    size_t offset;
    bool withOffset;
  };
  for (const Case &c : {Case{1, 0.5, 0, false}, Case{1001, 0.1, 0, true},
                        Case{100003, 0.5, 1, false}, Case{4097, 0.3, 0, true},
                        Case{999, 0.9, 3, false}}) {
    SCOPED_TRACE("n " + std::to_string(c.n) + " ratio " +
                 std::to_string(c.ratio) + " misaligned " +
                 std::to_string(c.offset) + " " + name(t));
    std::vector<float> x = randomNormal(c.n, 9, 3.0f);
    Bits xb = roundTo(t, x);
    uint64_t s = c.withOffset ? dropoutSeed(seed, step) : seed;
    uint32_t threshold = dropoutKeepThreshold(c.ratio);
    const float scale = static_cast<float>(1.0 / (1.0 - c.ratio));
    Bits ref(c.n);
    std::vector<uint8_t> refMask(c.n);
    for (int64_t i = 0; i < c.n; ++i) {
      refMask[i] = dropoutKeep(s, uint64_t(i), threshold);
      ref[i] = refMask[i] ? toBits(t, x[i] * scale) : uint16_t(0);
    }
    DevBuf<uint16_t> dx(xb, c.offset), dy(c.n, c.offset);
    DevBuf<uint8_t> mask(c.n, c.offset);
    DevBuf<int64_t> doff(std::vector<int64_t>{step});
    checkStatus(cu::dropout(t, dx.get(), dy.get(), mask.get(), c.n, c.ratio,
                            seed, c.withOffset ? doff.get() : nullptr,
                            nullptr),
                "dropout");
    expectBitEqual(dy.download(), ref, "y");
    expectBitEqual(mask.download(), refMask, "mask");
  }
}

INSTANTIATE_TEST_SUITE_P(Types, HalfKernels,
                         ::testing::Values(FloatType::BF16, FloatType::F16),
                         [](const ::testing::TestParamInfo<FloatType> &info) {
                           return std::string(cu::float_type_name(info.param));
                         });

//===----------------------------------------------------------------------===//
// Dispatch (host only: runs without a GPU)
//===----------------------------------------------------------------------===//

TEST(HalfDispatch, AttentionTakesTensorCoresForHeadDims64And128) {
  alignas(16) static char buf[64];
  const void *p = buf, *odd = buf + 2;
  for (FloatType t : {FloatType::BF16, FloatType::F16}) {
    EXPECT_TRUE(cu::attention_fwd_uses_tensor_cores(t, 64, 64, p, p, p, p));
    EXPECT_TRUE(cu::attention_fwd_uses_tensor_cores(t, 128, 128, p, p, p, p));
    EXPECT_FALSE(cu::attention_fwd_uses_tensor_cores(t, 96, 96, p, p, p, p));
    EXPECT_FALSE(cu::attention_fwd_uses_tensor_cores(t, 128, 64, p, p, p, p));
    EXPECT_FALSE(cu::attention_fwd_uses_tensor_cores(t, 64, 64, p, odd, p, p));
    EXPECT_FALSE(cu::attention_fwd_uses_tensor_cores(t, 64, 64, p, p, p, odd));
  }
  EXPECT_FALSE(
      cu::attention_fwd_uses_tensor_cores(FloatType::F32, 64, 64, p, p, p, p));
  // The backward also needs aligned gradients.
  EXPECT_TRUE(cu::attention_bwd_uses_tensor_cores(FloatType::BF16, 64, 64, p, p,
                                                  p, p, p, p, p));
  EXPECT_FALSE(cu::attention_bwd_uses_tensor_cores(FloatType::BF16, 64, 64, p,
                                                   p, p, p, p, odd, p));
  EXPECT_FALSE(cu::attention_bwd_uses_tensor_cores(FloatType::F32, 64, 64, p, p,
                                                   p, p, p, p, p));
  EXPECT_EQ(cu::attention_bwd(FloatType::F16, p, p, p, p, buf, buf, buf, 1, 1,
                              4, 4, 96, 96, 1.0, false, {}, nullptr, nullptr,
                              buf, nullptr, cu::AttentionPath::TensorCore),
            int(cudaErrorInvalidValue));
  // Forcing the tensor cores where they cannot run is refused before
  // anything is enqueued (no device needed).
  EXPECT_EQ(cu::attention_fwd(FloatType::BF16, p, p, p, buf, 1, 1, 4, 4, 96,
                              96, 1.0, false, {}, nullptr, nullptr,
                              cu::AttentionPath::TensorCore),
            int(cudaErrorInvalidValue));
  EXPECT_EQ(cu::attention_fwd(FloatType::F32, p, p, p, buf, 1, 1, 4, 4, 64, 64,
                              1.0, false, {}, nullptr, nullptr,
                              cu::AttentionPath::TensorCore),
            int(cudaErrorInvalidValue));
}

TEST(HalfDispatch, TypeNamesAndSizes) {
  EXPECT_STREQ(cu::float_type_name(FloatType::F32), "f32");
  EXPECT_STREQ(cu::float_type_name(FloatType::BF16), "bf16");
  EXPECT_STREQ(cu::float_type_name(FloatType::F16), "f16");
  EXPECT_EQ(cu::float_type_size(FloatType::F32), 4u);
  EXPECT_EQ(cu::float_type_size(FloatType::BF16), 2u);
  EXPECT_EQ(cu::float_type_size(FloatType::F16), 2u);
}

} // namespace
} // namespace tcc::gputest
