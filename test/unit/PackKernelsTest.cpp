// Pad-skipping's CPU kernels (runtime/kernels/cpu/pack.cpp and the packed
// path of attention.cpp): the packed order of a key mask, derived by hand;
// rows moved into and out of it; and attention over packed sequences
// against the dense attention with the same key mask, forward and
// backward, on the valid tokens (the padded ones must come out zero).
#include "kernels/cpu/cpu_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

TEST(PackKernels, IndexOfBoolAndBiasMasks) {
  // Row 0: tokens 0, 1, 3 (a hole at 2); row 1: only token 0; row 2: none.
  const uint8_t keep[] = {1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0};
  std::vector<int32_t> rows(12), cu(4);
  EXPECT_EQ(tcc::cpu::pack_index(keep, nullptr, 3, 4, rows.data(), cu.data()),
            -1);
  EXPECT_EQ(rows, (std::vector<int32_t>{0, 1, 3, 4, -1, -1, -1, -1, -1, -1,
                                        -1, -1}));
  EXPECT_EQ(cu, (std::vector<int32_t>{0, 3, 4, 4}));

  const float inf = std::numeric_limits<float>::infinity();
  const float bias[] = {0, -10000, 0, -inf, 0, 0, -3.4e38f, -1000};
  std::vector<int32_t> rows2(8), cu2(3);
  EXPECT_EQ(
      tcc::cpu::pack_index(nullptr, bias, 2, 4, rows2.data(), cu2.data()), -1);
  EXPECT_EQ(rows2, (std::vector<int32_t>{0, 2, 4, 5, -1, -1, -1, -1}));
  EXPECT_EQ(cu2, (std::vector<int32_t>{0, 2, 4}));

  // A bias that is neither 0 nor -1000 or below: its position.
  const float soft[] = {0, -5, 0, 0};
  EXPECT_EQ(tcc::cpu::pack_index(nullptr, soft, 1, 4, rows2.data(), cu2.data()),
            1);
}

TEST(PackKernels, PackUnpackRoundTripAndFillCheck) {
  const int64_t n = 5, width = 3;
  std::vector<float> x(n * width);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i + 1);
  const int32_t rows[] = {1, 3, 4, -1, -1};
  std::vector<float> packed(x.size(), NAN), back(x.size(), NAN);
  float zero = 0;
  auto bytes = [](auto *p) { return reinterpret_cast<uint8_t *>(p); };
  EXPECT_EQ(tcc::cpu::pack_rows(bytes(x.data()), rows, n, width * 4,
                                bytes(&zero), 4, false, false, bytes(packed.data())),
            -1);
  EXPECT_EQ(packed, (std::vector<float>{4, 5, 6, 10, 11, 12, 13, 14, 15, 0, 0,
                                        0, 0, 0, 0}));
  EXPECT_EQ(tcc::cpu::unpack_rows(bytes(packed.data()), rows, n, width * 4,
                                  5, 0, 0, bytes(back.data())),
            -1);
  EXPECT_EQ(back, (std::vector<float>{0, 0, 0, 4, 5, 6, 0, 0, 0, 10, 11, 12,
                                      13, 14, 15}));

  // Labels: the dropped rows 0 and 2 must already hold -100.
  int64_t labels[] = {-100, 7, 9, 8, 6};
  int64_t ignore = -100, out[5];
  EXPECT_EQ(tcc::cpu::pack_rows(bytes(labels), rows, n, 8, bytes(&ignore), 8,
                                true, false, bytes(out)),
            2);
  labels[2] = -100;
  EXPECT_EQ(tcc::cpu::pack_rows(bytes(labels), rows, n, 8, bytes(&ignore), 8,
                                true, false, bytes(out)),
            -1);
  EXPECT_EQ(std::vector<int64_t>(out, out + 5),
            (std::vector<int64_t>{7, 8, 6, -100, -100}));

  // A gradient entering packed order: the dropped rows must be zero (-0.0
  // is zero).
  std::vector<float> grad(x.size(), 0.0f);
  grad[3] = 1.0f, grad[0] = -0.0f;
  EXPECT_EQ(tcc::cpu::pack_rows(bytes(grad.data()), rows, n, width * 4,
                                bytes(&zero), 4, true, true,
                                bytes(packed.data())),
            -1);
  grad[7] = 2.0f; // row 2, which is padding
  EXPECT_EQ(tcc::cpu::pack_rows(bytes(grad.data()), rows, n, width * 4,
                                bytes(&zero), 4, true, true,
                                bytes(packed.data())),
            2);

  // Positions read after unpacking (a CLS token at t = 0 of sequences of
  // 5, one sequence here): row 0 is padding.
  EXPECT_EQ(tcc::cpu::unpack_rows(bytes(packed.data()), rows, n, width * 4,
                                  5, 0, 1, bytes(back.data())),
            0);
  EXPECT_EQ(tcc::cpu::unpack_rows(bytes(packed.data()), rows, n, width * 4,
                                  5, 3, 5, bytes(back.data())),
            -1);
}

/// Attention over packed sequences equals dense attention with the key
/// mask, at every valid token, forward and backward; padding is zero.
void checkPackedAttention(bool causal) {
  const int64_t B = 3, H = 2, T = 7, D = 5;
  // Lengths 7 (none padded), 1 and 4, with a hole in row 2.
  std::vector<uint8_t> keep(B * T, 0);
  for (int64_t t = 0; t < 7; ++t)
    keep[t] = 1;
  keep[T + 0] = 1;
  for (int64_t t : {0, 1, 3, 6})
    keep[2 * T + t] = 1;
  std::vector<int32_t> rows(B * T), cu(B + 1);
  ASSERT_EQ(tcc::cpu::pack_index(keep.data(), nullptr, B, T, rows.data(),
                                 cu.data()),
            -1);
  const int64_t count = cu[B];

  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const size_t size = size_t(B * H * T * D);
  std::vector<float> q(size), k(size), v(size), dout(size);
  for (auto *t : {&q, &k, &v, &dout})
    for (float &x : *t)
      x = normal(rng);
  // The gradient of a padded query is none of the dense result's business.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        if (!keep[b * T + t])
          std::fill_n(dout.begin() + ((b * H + h) * T + t) * D, D, 0.0f);

  // Natural [B, H, T, D] row of token p (= b*T + t) for head h.
  auto at = [&](int64_t p, int64_t h) { return ((p / T) * H + h) * T + p % T; };
  auto pack = [&](const std::vector<float> &x) {
    std::vector<float> out(size, NAN);
    for (int64_t i = 0; i < count; ++i)
      for (int64_t h = 0; h < H; ++h)
        std::copy_n(x.begin() + at(rows[i], h) * D, D,
                    out.begin() + at(i, h) * D);
    return out;
  };

  tcc::cpu::KeyMask dense{keep.data(), nullptr, nullptr};
  tcc::cpu::KeyMask packed{nullptr, nullptr, cu.data()};
  std::vector<float> o(size), po(size, NAN);
  tcc::cpu::attention_fwd(q.data(), k.data(), v.data(), o.data(), B, H, T, T,
                          D, D, 0.4, causal, dense);
  std::vector<float> pq = pack(q), pk = pack(k), pv = pack(v), pd = pack(dout);
  tcc::cpu::attention_fwd(pq.data(), pk.data(), pv.data(), po.data(), B, H, T,
                          T, D, D, 0.4, causal, packed);

  std::vector<float> dq(size), dk(size), dv(size);
  std::vector<float> pdq(size, NAN), pdk(size, NAN), pdv(size, NAN);
  tcc::cpu::attention_bwd(q.data(), k.data(), v.data(), dout.data(), dq.data(),
                          dk.data(), dv.data(), B, H, T, T, D, D, 0.4, causal,
                          dense);
  tcc::cpu::attention_bwd(pq.data(), pk.data(), pv.data(), pd.data(),
                          pdq.data(), pdk.data(), pdv.data(), B, H, T, T, D, D,
                          0.4, causal, packed);

  for (int64_t i = 0; i < B * T; ++i)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d) {
        int64_t p = at(i, h) * D + d; // packed position of token i
        if (i >= count) {
          EXPECT_EQ(po[p], 0.0f);
          EXPECT_EQ(pdq[p], 0.0f);
          EXPECT_EQ(pdk[p], 0.0f);
          EXPECT_EQ(pdv[p], 0.0f);
          continue;
        }
        int64_t n = at(rows[i], h) * D + d; // its natural position
        EXPECT_NEAR(po[p], o[n], 1e-5) << "token " << rows[i];
        EXPECT_NEAR(pdq[p], dq[n], 1e-5) << "token " << rows[i];
        EXPECT_NEAR(pdk[p], dk[n], 1e-5) << "token " << rows[i];
        EXPECT_NEAR(pdv[p], dv[n], 1e-5) << "token " << rows[i];
      }
}

TEST(PackKernels, AttentionOverPackedSequences) { checkPackedAttention(false); }
TEST(PackKernels, CausalAttentionOverPackedSequences) {
  checkPackedAttention(true);
}

/// Packed documents: segment_index's offsets from position ids, derived by
/// hand, and its error.
TEST(PackKernels, SegmentIndexFromPositionIds) {
  // Row 0: documents of 3 and 2 tokens; row 1: one of 5 whose positions
  // continue from the previous row (a row start starts a document anyway).
  const int64_t pos[] = {0, 1, 2, 0, 1, 5, 6, 7, 8, 9};
  std::vector<int32_t> cu(11, -7);
  EXPECT_EQ(tcc::cpu::segment_index(pos, true, 2, 5, cu.data()), -1);
  EXPECT_EQ(cu, (std::vector<int32_t>{0, 3, 5, 10, 10, 10, 10, 10, 10, 10, 10}));
  const int32_t bad[] = {0, 1, 3, 4}; // 3 neither restarts nor continues
  std::vector<int32_t> cu2(5);
  EXPECT_EQ(tcc::cpu::segment_index(bad, false, 1, 4, cu2.data()), 2);
}

/// Attention over packed documents equals attention over each document as
/// a batch of its own, forward and backward.
void checkDocumentAttention(bool causal) {
  const int64_t B = 2, H = 2, T = 6, D = 4;
  // Row 0: documents of 2 and 4 tokens; row 1: 1, 1 and 4.
  const std::vector<std::pair<int64_t, int64_t>> docs = {
      {0, 2}, {2, 4}, {6, 1}, {7, 1}, {8, 4}};
  std::vector<int32_t> cu;
  for (auto [start, len] : docs)
    cu.push_back(int32_t(start));
  cu.resize(size_t(B * T + 1), int32_t(B * T));

  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  const size_t size = size_t(B * H * T * D);
  std::vector<float> q(size), k(size), v(size), g(size);
  for (auto *t : {&q, &k, &v, &g})
    for (float &x : *t)
      x = normal(rng);
  tcc::cpu::KeyMask mask;
  mask.cuSeqlens = cu.data();
  mask.sequences = B * T;
  std::vector<float> o(size), dq(size), dk(size), dv(size);
  tcc::cpu::attention_fwd(q.data(), k.data(), v.data(), o.data(), B, H, T, T,
                          D, D, 0.5, causal, mask);
  tcc::cpu::attention_bwd(q.data(), k.data(), v.data(), g.data(), dq.data(),
                          dk.data(), dv.data(), B, H, T, T, D, D, 0.5, causal,
                          mask);
  // [B, H, T, D] row of token p (= b*T + t) for head h.
  auto at = [&](int64_t p, int64_t h) { return ((p / T) * H + h) * T + p % T; };
  for (auto [start, len] : docs) {
    // The document alone: [1, H, len, D].
    const size_t one = size_t(H * len * D);
    std::vector<float> sq(one), sk(one), sv(one), sg(one), so(one), sdq(one),
        sdk(one), sdv(one);
    auto gather = [&](const std::vector<float> &x, std::vector<float> &out) {
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < len; ++i)
          std::copy_n(x.begin() + at(start + i, h) * D, D,
                      out.begin() + (h * len + i) * D);
    };
    gather(q, sq), gather(k, sk), gather(v, sv), gather(g, sg);
    tcc::cpu::attention_fwd(sq.data(), sk.data(), sv.data(), so.data(), 1, H,
                            len, len, D, D, 0.5, causal, {});
    tcc::cpu::attention_bwd(sq.data(), sk.data(), sv.data(), sg.data(),
                            sdq.data(), sdk.data(), sdv.data(), 1, H, len, len,
                            D, D, 0.5, causal, {});
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < len; ++i)
        for (int64_t d = 0; d < D; ++d) {
          int64_t p = at(start + i, h) * D + d, s = (h * len + i) * D + d;
          EXPECT_NEAR(o[p], so[s], 1e-6) << "document at " << start;
          EXPECT_NEAR(dq[p], sdq[s], 1e-6) << "document at " << start;
          EXPECT_NEAR(dk[p], sdk[s], 1e-6) << "document at " << start;
          EXPECT_NEAR(dv[p], sdv[s], 1e-6) << "document at " << start;
        }
  }
}

TEST(PackKernels, AttentionOverPackedDocuments) { checkDocumentAttention(false); }
TEST(PackKernels, CausalAttentionOverPackedDocuments) {
  checkDocumentAttention(true);
}

} // namespace
