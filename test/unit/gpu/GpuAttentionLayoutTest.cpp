// The CUDA attention kernels on token rows (tcc-fold-attention-layout: q, k
// and v read from one [B, T, 3 * H * D] tensor at columns 0, H * D and
// 2 * H * D, the result, dout and the gradients [B, T, H * D]) against the
// same kernels on heads-first copies of the same data, bit for bit: the
// layout only changes addresses (runtime/kernels/attention_layout.h). Per
// storage type (f32; bf16 and f16 on the FMA kernels for head dim 16 and on
// tensor cores for 64), causal or not, dense, packed tokens (cu_seqlens
// [B + 1]: gathered through the strides) and packed documents (in place);
// and the gradients written side by side into one [B, T, 3 * H * D] tensor
// (tcc.attention_qkv_grad).
// Without a GPU every test prints "no CUDA device: skipped" and skips.
#include "GpuTestUtil.h"

#include "data/half.h"
#include "kernels/attention_layout.h"
#include "kernels/cuda/cuda_kernels.h"

namespace tcc::gputest {
namespace {

namespace cu = tcc::cuda;
using cu::FloatType;
using kernels::AttentionLayout;
using kernels::AttentionStrides;

enum class Mode { Dense, Tokens, Documents };

struct LayoutCase {
  FloatType type;
  int64_t b, h, t, d;
  bool causal;
  Mode mode;
};

std::string caseName(const LayoutCase &c) {
  const char *types[] = {"f32", "bf16", "f16"};
  const char *modes[] = {"dense", "tokens", "documents"};
  return std::string(types[int(c.type)]) + " b" + std::to_string(c.b) + " h" +
         std::to_string(c.h) + " t" + std::to_string(c.t) + " d" +
         std::to_string(c.d) + (c.causal ? " causal " : " ") +
         modes[int(c.mode)];
}

/// Floats stored as `type`, as bytes.
std::vector<uint8_t> stored(FloatType type, const std::vector<float> &v) {
  const size_t es = cu::float_type_size(type);
  std::vector<uint8_t> out(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i) {
    if (type == FloatType::F32) {
      std::memcpy(&out[i * 4], &v[i], 4);
      continue;
    }
    uint16_t h = type == FloatType::BF16 ? data::floatToBf16(v[i])
                                         : data::floatToF16(v[i]);
    std::memcpy(&out[i * 2], &h, 2);
  }
  return out;
}

/// [B, T, width] rows from `column` (elements of `es` bytes) -> [B, H, T, D].
std::vector<uint8_t> headsFirst(const std::vector<uint8_t> &rows, size_t es,
                                const LayoutCase &c, int64_t width,
                                int64_t column) {
  std::vector<uint8_t> out(size_t(c.b * c.h * c.t * c.d) * es);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.h; ++h)
      for (int64_t t = 0; t < c.t; ++t)
        std::memcpy(&out[size_t(((b * c.h + h) * c.t + t) * c.d) * es],
                    &rows[size_t((b * c.t + t) * width + column + h * c.d) * es],
                    size_t(c.d) * es);
  return out;
}

/// [B, H, T, D] -> [B, T, H * D].
std::vector<uint8_t> tokenRows(const std::vector<uint8_t> &heads, size_t es,
                               const LayoutCase &c) {
  std::vector<uint8_t> out(heads.size());
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.h; ++h)
      for (int64_t t = 0; t < c.t; ++t)
        std::memcpy(&out[size_t((b * c.t + t) * c.h * c.d + h * c.d) * es],
                    &heads[size_t(((b * c.h + h) * c.t + t) * c.d) * es],
                    size_t(c.d) * es);
  return out;
}

/// The cu_seqlens of the case: two sequences shorter than their rows
/// (tokens), or documents that never cross a row (B * T + 1 entries).
std::vector<int32_t> seqlens(const LayoutCase &c) {
  const int32_t t = int32_t(c.t);
  if (c.mode == Mode::Tokens)
    return {0, t - 7, 2 * t - 16};
  std::vector<int32_t> lens = {0, t / 3, t, t + t / 2, 2 * t};
  lens.resize(size_t(c.b * c.t + 1), 2 * t);
  return lens;
}

/// One run of the forward and the backward: out, dq, dk, dv as bytes.
struct Results {
  std::vector<uint8_t> out, dq, dk, dv;
};

Results run(const LayoutCase &c, const void *q, const void *k, const void *v,
            const void *dout, const int32_t *cuDev, int64_t sequences,
            const AttentionLayout &layout) {
  const size_t es = cu::float_type_size(c.type);
  const size_t n = size_t(c.b * c.h * c.t * c.d) * es;
  DevBuf<uint8_t> out(n), dq(n), dk(n), dv(n);
  const double scale = 1.0 / std::sqrt(double(c.d));
  if (c.mode == Mode::Dense) {
    checkStatus(cu::attention_fwd(c.type, q, k, v, out.get(), c.b, c.h, c.t,
                                  c.t, c.d, c.d, scale, c.causal, {}, nullptr,
                                  nullptr, cu::AttentionPath::Auto, layout),
                "attention_fwd");
    DevBytes ws(cu::attention_bwd_workspace_bytes(c.b, c.h, c.t, c.t, c.d,
                                                  c.d, false));
    checkStatus(cu::attention_bwd(c.type, q, k, v, dout, dq.get(), dk.get(),
                                  dv.get(), c.b, c.h, c.t, c.t, c.d, c.d,
                                  scale, c.causal, {}, nullptr, nullptr,
                                  ws.get(), nullptr, cu::AttentionPath::Auto,
                                  layout),
                "attention_bwd");
  } else {
    DevBytes fws(cu::attention_varlen_workspace_bytes(
        c.type, sequences, c.b, c.h, c.t, c.d, c.d, false));
    checkStatus(cu::attention_varlen_fwd(c.type, q, k, v, out.get(), cuDev,
                                         sequences, c.b, c.h, c.t, c.d, c.d,
                                         scale, c.causal, fws.get(), nullptr,
                                         cu::AttentionPath::Auto, layout),
                "attention_varlen_fwd");
    DevBytes bws(cu::attention_varlen_workspace_bytes(
        c.type, sequences, c.b, c.h, c.t, c.d, c.d, true));
    checkStatus(cu::attention_varlen_bwd(
                    c.type, q, k, v, dout, dq.get(), dk.get(), dv.get(), cuDev,
                    sequences, c.b, c.h, c.t, c.d, c.d, scale, c.causal,
                    bws.get(), nullptr, cu::AttentionPath::Auto, layout),
                "attention_varlen_bwd");
  }
  check(cudaDeviceSynchronize(), "attention");
  return {out.download(), dq.download(), dk.download(), dv.download()};
}

/// The backward writing dq, dk and dv into one [B, T, 3 * H * D] buffer at
/// columns 0, H * D and 2 * H * D (tcc.attention_qkv_grad): its bytes.
std::vector<uint8_t> runQkvGrad(const LayoutCase &c, const void *q,
                                const void *k, const void *v, const void *dout,
                                const int32_t *cuDev, int64_t sequences,
                                AttentionLayout layout) {
  const size_t es = cu::float_type_size(c.type);
  const int64_t C = c.h * c.d, W = 3 * C;
  layout.dq = layout.dk = layout.dv = AttentionStrides::tokenRows(c.t, W, c.d);
  DevBuf<uint8_t> dx(size_t(c.b * c.t * W) * es);
  dx.poison(); // every byte must be written
  uint8_t *dq = dx.get(), *dk = dq + C * es, *dv = dq + 2 * C * es;
  const double scale = 1.0 / std::sqrt(double(c.d));
  if (c.mode == Mode::Dense) {
    DevBytes ws(
        cu::attention_bwd_workspace_bytes(c.b, c.h, c.t, c.t, c.d, c.d, false));
    checkStatus(cu::attention_bwd(c.type, q, k, v, dout, dq, dk, dv, c.b, c.h,
                                  c.t, c.t, c.d, c.d, scale, c.causal, {},
                                  nullptr, nullptr, ws.get(), nullptr,
                                  cu::AttentionPath::Auto, layout),
                "attention_bwd (qkv)");
  } else {
    DevBytes bws(cu::attention_varlen_workspace_bytes(
        c.type, sequences, c.b, c.h, c.t, c.d, c.d, true));
    checkStatus(cu::attention_varlen_bwd(
                    c.type, q, k, v, dout, dq, dk, dv, cuDev, sequences, c.b,
                    c.h, c.t, c.d, c.d, scale, c.causal, bws.get(), nullptr,
                    cu::AttentionPath::Auto, layout),
                "attention_varlen_bwd (qkv)");
  }
  check(cudaDeviceSynchronize(), "attention (qkv)");
  return dx.download();
}

class AttentionLayoutTest : public GpuTest {};

TEST_F(AttentionLayoutTest, TokenRowsMatchHeadsFirstBitForBit) {
  std::vector<LayoutCase> cases;
  for (FloatType type : {FloatType::F32, FloatType::BF16, FloatType::F16})
    for (int64_t d : {16, 64})
      for (bool causal : {false, true})
        for (Mode mode : {Mode::Dense, Mode::Tokens, Mode::Documents})
          cases.push_back({type, 2, 3, 70, d, causal, mode});
  uint32_t seed = 11;
  for (const LayoutCase &c : cases) {
    SCOPED_TRACE(caseName(c));
    const size_t es = cu::float_type_size(c.type);
    const int64_t C = c.h * c.d, W = 3 * C;
    std::vector<uint8_t> x = stored(c.type, randomNormal(size_t(c.b * c.t * W),
                                                         seed += 7, 1.0f)),
                         g = stored(c.type, randomNormal(size_t(c.b * c.t * C),
                                                         seed += 7, 1.0f));
    std::vector<int32_t> cuHost =
        c.mode == Mode::Dense ? std::vector<int32_t>{0} : seqlens(c);
    const int64_t sequences = int64_t(cuHost.size()) - 1;
    DevBuf<int32_t> cuDev(cuHost);

    // Token rows straight from x and g.
    AttentionLayout rows;
    rows.q = rows.k = rows.v = AttentionStrides::tokenRows(c.t, W, c.d);
    rows.o = rows.dq = rows.dk = rows.dv =
        AttentionStrides::tokenRows(c.t, C, c.d);
    DevBuf<uint8_t> xd(x), gd(g);
    const uint8_t *base = xd.get();
    Results got = run(c, base, base + C * es, base + 2 * C * es, gd.get(),
                      cuDev.get(), sequences, rows);

    // Heads-first copies.
    DevBuf<uint8_t> qh(headsFirst(x, es, c, W, 0)),
        kh(headsFirst(x, es, c, W, C)), vh(headsFirst(x, es, c, W, 2 * C)),
        gh(headsFirst(g, es, c, C, 0));
    Results want = run(c, qh.get(), kh.get(), vh.get(), gh.get(), cuDev.get(),
                       sequences, {});
    EXPECT_EQ(cu::attention_fwd_uses_tensor_cores(c.type, c.d, c.d, base,
                                                  base + C * es,
                                                  base + 2 * C * es, gd.get(),
                                                  rows),
              cu::attention_fwd_uses_tensor_cores(c.type, c.d, c.d, qh.get(),
                                                  kh.get(), vh.get(),
                                                  gh.get()));
    EXPECT_EQ(got.out, tokenRows(want.out, es, c)) << "result";
    EXPECT_EQ(got.dq, tokenRows(want.dq, es, c)) << "query_grad";
    EXPECT_EQ(got.dk, tokenRows(want.dk, es, c)) << "key_grad";
    EXPECT_EQ(got.dv, tokenRows(want.dv, es, c)) << "value_grad";

    // The three gradients side by side in one tensor of x's layout.
    std::vector<uint8_t> qkv =
        runQkvGrad(c, base, base + C * es, base + 2 * C * es, gd.get(),
                   cuDev.get(), sequences, rows);
    std::vector<uint8_t> wantQkv(qkv.size());
    const std::vector<uint8_t> parts[3] = {tokenRows(want.dq, es, c),
                                           tokenRows(want.dk, es, c),
                                           tokenRows(want.dv, es, c)};
    for (int64_t r = 0; r < c.b * c.t; ++r)
      for (int i = 0; i < 3; ++i)
        std::memcpy(&wantQkv[size_t(r * W + i * C) * es],
                    &parts[i][size_t(r * C) * es], size_t(C) * es);
    EXPECT_EQ(qkv, wantQkv) << "qkv_grad";
  }
}

} // namespace
} // namespace tcc::gputest
