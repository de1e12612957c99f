// Variable-length attention over packed tokens and packed documents
// (cuda::attention_varlen_fwd / _bwd) against the CPU kernels' packed path
// (cpu::attention_fwd / _bwd with KeyMask::cuSeqlens), for f32 (FMA
// kernels), bf16 and f16 (FMA and tensor cores), causal or not, on
// sequences that cross the 64-row tiles, a one-token sequence, an empty
// one, and padding rows holding garbage that must not leak: every padded
// row of every result is exactly zero.
//
// The CPU reference runs on the inputs as the kernel sees them (16-bit
// values widened). Tolerances (expectClose, scaled by the tensor's largest
// magnitude): f32 forward 1e-5, backward 1e-4 (both sum in another order
// than OpenBLAS); 16-bit the storage type's (bf16 1e-2, f16 5e-3), the
// backward's scale at least 1 (dq, dk cancel to ~0).
//
// Without a GPU every test prints "no CUDA device: skipped" and skips.
#include "GpuTestUtil.h"

#include "data/half.h"
#include "exec/cuda_calls.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"

#include <cmath>
#include <string>
#include <vector>

namespace tcc::gputest {
namespace {

namespace cu = tcc::cuda;
using cu::FloatType;

struct VarlenCase {
  /// Packed tokens: the tokens of each batch row (<= seq). Packed
  /// documents: the documents' lengths, filling rows of seq in order.
  std::vector<int> lengths;
  int64_t heads, seq, d;
  bool causal, documents = false;
};

const VarlenCase kCases[] = {
    {{80, 1, 37}, 2, 80, 64, false},
    {{80, 1, 37}, 2, 80, 64, true},
    {{0, 130, 65}, 1, 130, 64, true},
    {{5, 3}, 2, 8, 16, false},
    {{100, 100}, 1, 100, 128, true},
    // Packed documents (tcc.segment_index's cu_seqlens [B*T + 1]): rows of
    // 130 holding documents of 30 + 100, 130, 1 + 64 + 65 tokens.
    {{30, 100, 130, 1, 64, 65}, 2, 130, 64, true, true},
    {{30, 100, 130, 1, 64, 65}, 1, 130, 64, false, true},
    {{3, 5, 8}, 2, 8, 16, true, true},
};

std::string caseName(const VarlenCase &c, FloatType t) {
  std::string s = std::string(cu::float_type_name(t)) +
                  (c.documents ? " documents" : " lengths");
  for (int n : c.lengths)
    s += " " + std::to_string(n);
  return s + " heads " + std::to_string(c.heads) + " seq " +
         std::to_string(c.seq) + " d " + std::to_string(c.d) +
         (c.causal ? " causal" : "");
}

/// `v` as `t` stores it: the 16-bit bits (in `bits`) and the widened values.
std::vector<float> roundTo(FloatType t, const std::vector<float> &v,
                           std::vector<uint16_t> &bits) {
  std::vector<float> w(v.size());
  bits.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == FloatType::BF16) {
      bits[i] = data::floatToBf16(v[i]);
      w[i] = data::bf16ToFloat(bits[i]);
    } else {
      bits[i] = data::floatToF16(v[i]);
      w[i] = data::f16ToFloat(bits[i]);
    }
  }
  return w;
}

/// A device tensor of `t` holding `v` (f32 as is, 16-bit rounded; `v` is
/// replaced by what the device holds).
struct Tensor {
  Tensor(FloatType t, std::vector<float> &v) : type(t) {
    if (t == FloatType::F32) {
      f = std::make_unique<DevBuf<float>>(v);
    } else {
      std::vector<uint16_t> bits;
      v = roundTo(t, v, bits);
      h = std::make_unique<DevBuf<uint16_t>>(bits);
    }
  }
  Tensor(FloatType t, size_t n) : type(t) {
    if (t == FloatType::F32)
      f = std::make_unique<DevBuf<float>>(n);
    else
      h = std::make_unique<DevBuf<uint16_t>>(n);
  }
  void *get() const {
    return f ? static_cast<void *>(f->get()) : static_cast<void *>(h->get());
  }
  std::vector<float> download() const {
    if (f)
      return f->download();
    std::vector<uint16_t> bits = h->download();
    std::vector<float> w(bits.size());
    for (size_t i = 0; i < bits.size(); ++i)
      w[i] = type == FloatType::BF16 ? data::bf16ToFloat(bits[i])
                                     : data::f16ToFloat(bits[i]);
    return w;
  }
  FloatType type;
  std::unique_ptr<DevBuf<float>> f;
  std::unique_ptr<DevBuf<uint16_t>> h;
};

std::vector<double> widen(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

/// The rows of packed tokens past cu[batch], for every head, are exactly 0.
void expectPaddingZero(const std::vector<float> &got, const VarlenCase &c,
                       int64_t batch, int64_t count, int64_t dim,
                       const std::string &what) {
  size_t bad = 0;
  for (int64_t h = 0; h < c.heads; ++h)
    for (int64_t r = count; r < batch * c.seq; ++r) {
      int64_t row = ((r / c.seq) * c.heads + h) * c.seq + r % c.seq;
      for (int64_t e = 0; e < dim; ++e)
        bad += got[size_t(row * dim + e)] != 0.0f;
    }
  EXPECT_EQ(bad, 0u) << what << ": padded rows not zero";
}

class VarlenAttention : public GpuTest,
                        public ::testing::WithParamInterface<FloatType> {};

TEST_P(VarlenAttention, ForwardAndBackwardMatchTheCpuKernels) {
  const FloatType t = GetParam();
  uint32_t seed = 7;
  for (const VarlenCase &c : kCases) {
    SCOPED_TRACE(caseName(c, t));
    const int64_t seq = c.seq;
    int64_t total = 0;
    for (int n : c.lengths)
      total += n;
    const int64_t batch =
        c.documents ? total / seq : int64_t(c.lengths.size());
    const int64_t d = c.d, n = batch * c.heads * seq * d;
    const double scale = 1.0 / std::sqrt(double(d));
    std::vector<int32_t> cuHost;
    if (c.documents) {
      // One sequence per document, then batch*seq up to [B*T + 1].
      int32_t start = 0;
      for (int len : c.lengths)
        cuHost.push_back(start), start += len;
      cuHost.resize(size_t(batch * seq + 1), start);
    } else {
      // cu_seqlens from a left-aligned mask (pack_index's rows do not
      // matter to attention; only the sequence boundaries do).
      std::vector<uint8_t> keep(size_t(batch * seq), 0);
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < c.lengths[size_t(b)]; ++i)
          keep[size_t(b * seq + i)] = 1;
      std::vector<int32_t> rows(size_t(batch * seq));
      cuHost.resize(size_t(batch + 1));
      ASSERT_EQ(cpu::pack_index(keep.data(), nullptr, batch, seq,
                                rows.data(), cuHost.data()),
                -1);
    }
    const int64_t sequences = int64_t(cuHost.size()) - 1;
    const int64_t count = cuHost.back();
    // Every row random, the padding rows too: garbage the kernels must not
    // read.
    std::vector<float> q = randomNormal(size_t(n), seed++),
                       k = randomNormal(size_t(n), seed++),
                       v = randomNormal(size_t(n), seed++),
                       g = randomNormal(size_t(n), seed++);
    Tensor qd(t, q), kd(t, k), vd(t, v), gd(t, g); // q..g now as stored
    DevBuf<int32_t> cu(cuHost);

    cpu::KeyMask mask;
    mask.cuSeqlens = cuHost.data();
    mask.sequences = sequences;
    const size_t elems = static_cast<size_t>(n);
    std::vector<float> refOut(elems), refDq(elems), refDk(elems), refDv(elems);
    cpu::attention_fwd(q.data(), k.data(), v.data(), refOut.data(), batch,
                       c.heads, seq, seq, d, d, scale, c.causal, mask);
    cpu::attention_bwd(q.data(), k.data(), v.data(), g.data(), refDq.data(),
                       refDk.data(), refDv.data(), batch, c.heads, seq, seq, d,
                       d, scale, c.causal, mask);

    const bool half = t != FloatType::F32;
    const double fwdTol = t == FloatType::F32    ? 1e-5
                          : t == FloatType::BF16 ? 1e-2
                                                 : 5e-3;
    const double bwdTol = t == FloatType::F32 ? 1e-4 : fwdTol;
    std::vector<cu::AttentionPath> paths = {cu::AttentionPath::Fma};
    if (half && (d == 64 || d == 128))
      paths.push_back(cu::AttentionPath::TensorCore);
    for (cu::AttentionPath path : paths) {
      SCOPED_TRACE(path == cu::AttentionPath::Fma ? "fma" : "tensor cores");
      Tensor out(t, elems), dq(t, elems), dk(t, elems), dv(t, elems);
      DevBytes fwdWs(cu::attention_varlen_workspace_bytes(
          t, sequences, batch, c.heads, seq, d, d, false));
      DevBytes bwdWs(cu::attention_varlen_workspace_bytes(
          t, sequences, batch, c.heads, seq, d, d, true));
      checkStatus(cu::attention_varlen_fwd(t, qd.get(), kd.get(), vd.get(),
                                           out.get(), cu.get(), sequences, batch, c.heads,
                                           seq, d, d, scale, c.causal,
                                           fwdWs.get(), nullptr, path),
                  "attention_varlen_fwd");
      checkStatus(cu::attention_varlen_bwd(
                      t, qd.get(), kd.get(), vd.get(), gd.get(), dq.get(),
                      dk.get(), dv.get(), cu.get(), sequences, batch, c.heads, seq, d, d,
                      scale, c.causal, bwdWs.get(), nullptr, path),
                  "attention_varlen_bwd");
      std::vector<float> o = out.download(), gq = dq.download(),
                         gk = dk.download(), gv = dv.download();
      expectClose(o, widen(refOut), fwdTol, "out");
      expectClose(gq, widen(refDq), bwdTol, "dq", 1.0);
      expectClose(gk, widen(refDk), bwdTol, "dk", 1.0);
      expectClose(gv, widen(refDv), bwdTol, "dv", 1.0);
      expectPaddingZero(o, c, batch, count, d, "out");
      expectPaddingZero(gq, c, batch, count, d, "dq");
      expectPaddingZero(gk, c, batch, count, d, "dk");
      expectPaddingZero(gv, c, batch, count, d, "dv");
      // Deterministic: a second forward gives the same bits.
      Tensor again(t, elems);
      checkStatus(cu::attention_varlen_fwd(t, qd.get(), kd.get(), vd.get(),
                                           again.get(), cu.get(), sequences, batch,
                                           c.heads, seq, d, d, scale, c.causal,
                                           fwdWs.get(), nullptr, path),
                  "attention_varlen_fwd");
      expectBitEqual(o, again.download(), "second forward");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, VarlenAttention,
                         ::testing::Values(FloatType::F32, FloatType::BF16,
                                           FloatType::F16),
                         [](const auto &info) {
                           return std::string(
                               cu::float_type_name(info.param));
                         });

// The CUDA backend's token buckets (no GPU needed): 8 row counts from an
// eighth of the capacity up, rounded to 64 rows; a count picks the smallest
// holding it; only steps over packed tokens follow the bucket.
TEST(TokenBuckets, SmallestBucketHoldingTheTokens) {
  rt::TokenBuckets t;
  t.capacity = 8192, t.count = 8;
  EXPECT_EQ(t.rows(1), 1024);
  EXPECT_EQ(t.rows(3), 3072);
  EXPECT_EQ(t.rows(8), 8192);
  EXPECT_EQ(t.of(0), 1);
  EXPECT_EQ(t.of(1024), 1);
  EXPECT_EQ(t.of(1025), 2);
  EXPECT_EQ(t.of(8192), 8);
  rt::TokenBuckets odd; // 8 rows of 1000: 125 -> 128 rows, capped at 1000
  odd.capacity = 1000, odd.count = 8;
  EXPECT_EQ(odd.rows(1), 128);
  EXPECT_EQ(odd.rows(7), 896);
  EXPECT_EQ(odd.rows(8), 1000);
  EXPECT_EQ(odd.of(897), 8);
  rt::Step packed, plain;
  packed.tokenRows = 8192;
  EXPECT_EQ(t.rowsOf(packed, 8192, 2), 2048);
  EXPECT_EQ(t.rowsOf(packed, 8192, 0), 8192); // before pack_index ran
  EXPECT_EQ(t.rowsOf(packed, 4096, 2), 4096); // not its token rows
  EXPECT_EQ(t.rowsOf(plain, 8192, 2), 8192);
}

} // namespace
} // namespace tcc::gputest
