//===- HalfCallsTest.cpp - library calls on bf16 / f16 operands -----------===//
//
// After precision lowering a library call may read and write bf16 or f16
// values. The CPU backend runs its f32 code on the operands widened exactly
// and rounds each float result once, to nearest even (the interpreter's
// rule). Each test runs one call twice through the runtime: on 16-bit
// operands, and on the same values widened to f32; the 16-bit results must
// be the f32 results rounded once, bit for bit, and f32 results (the loss of
// cross_entropy) equal. A few cases are also checked against values worked
// out by hand.
//
//===----------------------------------------------------------------------===//

#include "CallArtifact.h"

#include "data/half.h"

#include <cmath>

using namespace rttest;
using tcc::data::floatToBf16;
using tcc::data::floatToF16;
using testutil::i64;

namespace {

/// A 16-bit array widened exactly to f32; other arrays unchanged.
Array widened(const Array &a) {
  if (!isHalf(a.dtype))
    return a;
  std::vector<float> v(size_t(a.numElements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = at(a, int64_t(i));
  Array w = floats(DType::F32, a.shape, v);
  w.name = a.name;
  return w;
}

/// Runs the call on `inputs` (some 16-bit) and on them widened to f32, and
/// checks every 16-bit result against the f32 one rounded once; other
/// results must be equal. Returns the 16-bit run's outputs.
std::vector<Array> expectRoundedOnce(const std::string &tag,
                                     const std::string &op, const json &attrs,
                                     const std::vector<Array> &inputs,
                                     const std::vector<CallResult> &outputs) {
  std::vector<Array> wideInputs;
  for (const Array &in : inputs)
    wideInputs.push_back(widened(in));
  std::vector<CallResult> wideOutputs;
  for (const CallResult &o : outputs)
    wideOutputs.push_back(
        {isHalf(o.dtype) ? DType::F32 : o.dtype, o.shape, o.absent});
  std::vector<Array> half = runCall(tag + "_16", op, attrs, inputs, outputs);
  std::vector<Array> full =
      runCall(tag + "_32", op, attrs, wideInputs, wideOutputs);
  const size_t present = presentResults(outputs).size();
  EXPECT_EQ(half.size(), present) << tag;
  EXPECT_EQ(full.size(), present) << tag;
  if (half.size() != present || full.size() != present)
    return half;
  for (size_t k = 0; k < present; ++k) {
    const Array &h = half[k], &f = full[k];
    if (!isHalf(h.dtype)) {
      EXPECT_EQ(h.bytes, f.bytes) << tag << " output " << k;
      continue;
    }
    int64_t mismatches = 0;
    for (int64_t i = 0; i < h.numElements(); ++i) {
      float wide = f.data<float>()[i];
      uint16_t want = h.dtype == DType::BF16 ? floatToBf16(wide)
                                             : floatToF16(wide);
      uint16_t got = h.data<uint16_t>()[i];
      if (got != want && mismatches++ < 5)
        ADD_FAILURE() << tag << " output " << k << " element " << i
                      << ": got bits 0x" << std::hex << got << ", f32 "
                      << std::dec << wide << " rounds to 0x" << std::hex
                      << want;
    }
    EXPECT_EQ(mismatches, 0) << tag << " output " << k;
  }
  return half;
}

/// Parameterised by the dtype's name ("bf16", "f16").
class HalfCalls : public ::testing::TestWithParam<const char *> {
protected:
  DType t = std::string(GetParam()) == "bf16" ? DType::BF16 : DType::F16;
  std::string tag(const std::string &what) const {
    return what + (t == DType::BF16 ? "_bf16" : "_f16");
  }
};

TEST_P(HalfCalls, Matmul) {
  // Batched with a broadcast rhs, and transposed.
  Array l = floats(t, {2, 3, 4}, wave(24, 2.0f));
  Array r = floats(t, {4, 5}, wave(20, 1.5f, 0.4f));
  expectRoundedOnce(tag("matmul"), "matmul", json::object(), {l, r},
                    {{t, {2, 3, 5}}});
  Array lt = floats(t, {2, 4, 3}, wave(24, 2.0f, 1.0f));
  Array rt = floats(t, {2, 5, 4}, wave(40, 1.0f, 2.0f));
  expectRoundedOnce(tag("matmul_t"), "matmul",
                    {{"transpose_lhs", true}, {"transpose_rhs", true}},
                    {lt, rt}, {{t, {2, 3, 5}}});
}

TEST_P(HalfCalls, MatmulByHand) {
  // [1 1] @ [[1], [1 + 2^-7]] = 2 + 2^-7 in f32 (1 + 2^-7 is exact in
  // both types). bf16 spaces [2, 4) by 2^-6: halfway between 2 and
  // 2 + 2^-6, ties to even gives 2. f16 spaces it by 2^-9: exact.
  Array l = floats(t, {1, 2}, {1.0f, 1.0f});
  Array r = floats(t, {2, 1}, {1.0f, 1.0f + 1.0f / 128.0f});
  std::vector<Array> out =
      runCall(tag("matmul_hand"), "matmul", json::object(), {l, r},
              {{t, {1, 1}}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(at(out[0], 0), t == DType::BF16 ? 2.0f : 2.0f + 1.0f / 128.0f);
  // f16 overflows to inf above 65504, bf16 does not.
  Array big = floats(t, {1, 1}, {300.0f});
  out = runCall(tag("matmul_big"), "matmul", json::object(), {big, big},
                {{t, {1, 1}}});
  ASSERT_EQ(out.size(), 1u);
  if (t == DType::F16)
    EXPECT_TRUE(std::isinf(at(out[0], 0)));
  else
    EXPECT_EQ(at(out[0], 0), 90112.0f); // 90000 rounded to 8 bits
}

TEST_P(HalfCalls, Gemm) {
  Array a = floats(t, {3, 4}, wave(12, 1.0f));
  Array b = floats(t, {4, 2}, wave(8, 2.0f, 0.7f));
  Array c = floats(t, {2}, {0.3f, -1.7f});
  expectRoundedOnce(tag("gemm"), "gemm", {{"alpha", 0.5}, {"beta", 1.0}},
                    {a, b, c}, {{t, {3, 2}}});
  expectRoundedOnce(tag("gemm_noc"), "gemm", {{"transpose_a", true}},
                    {floats(t, {4, 3}, wave(12, 1.0f, 3.0f)), b, absent()},
                    {{t, {3, 2}}});
  expectRoundedOnce(tag("gemm_bias_c"), "gemm", json::object(),
                    {a, b, floats(t, {3, 2}, wave(6, 2.0f, 0.4f)), c},
                    {{t, {3, 2}}});
}

TEST_P(HalfCalls, LayerNorm) {
  Array x = floats(t, {3, 8}, wave(24, 3.0f));
  Array scale = floats(t, {8}, wave(8, 1.0f, 0.2f));
  Array bias = floats(t, {8}, wave(8, 0.5f, 0.9f));
  json attrs = {{"axis", -1}, {"epsilon", 1e-5}};
  expectRoundedOnce(tag("ln"), "layer_norm", attrs, {x, scale, bias},
                    {{t, {3, 8}}});
  expectRoundedOnce(tag("ln_noaffine"), "layer_norm", attrs,
                    {x, absent(), absent()}, {{t, {3, 8}}});
  // scale_grad and bias_grad are f32 for 16-bit input: the f32 run's bits.
  Array dy = floats(t, {3, 8}, wave(24, 1.0f, 1.1f));
  expectRoundedOnce(tag("ln_grad"), "layer_norm_grad", attrs,
                    {x, scale, dy, absent()},
                    {{t, {3, 8}}, {DType::F32, {8}}, {DType::F32, {8}},
                     absentResult()});
  // With a residual gradient, added before dx's one rounding, and dx's row
  // sum (f32 like the parameters' gradients: the f32 run's sum).
  expectRoundedOnce(tag("ln_grad_residual"), "layer_norm_grad", attrs,
                    {x, scale, dy, floats(t, {3, 8}, wave(24, 2.0f, 0.3f))},
                    {{t, {3, 8}}, {DType::F32, {8}}, {DType::F32, {8}},
                     {DType::F32, {8}}});
}

TEST_P(HalfCalls, Softmax) {
  Array x = floats(t, {4, 6}, wave(24, 4.0f));
  for (const char *op : {"softmax", "log_softmax"}) {
    expectRoundedOnce(tag(op), op, {{"axis", 1}}, {x}, {{t, {4, 6}}});
    // Over a leading axis (strided rows).
    expectRoundedOnce(tag(std::string(op) + "_axis0"), op, {{"axis", 0}}, {x},
                      {{t, {4, 6}}});
  }
  Array y = floats(t, {4, 6}, wave(24, 0.3f, 0.5f));
  Array dy = floats(t, {4, 6}, wave(24, 1.0f, 2.5f));
  for (const char *op : {"softmax_grad", "log_softmax_grad"})
    expectRoundedOnce(tag(op), op, {{"axis", -1}}, {y, dy}, {{t, {4, 6}}});
}

TEST_P(HalfCalls, SoftmaxByHand) {
  // softmax([0, 0]) = [0.5, 0.5]; softmax([ln 3, 0]) = [0.75, 0.25] up to
  // f32 rounding, which the 16-bit rounding removes.
  Array x = floats(t, {2, 2}, {0.0f, 0.0f, std::log(3.0f), 0.0f});
  std::vector<Array> out = runCall(tag("softmax_hand"), "softmax",
                                   {{"axis", 1}}, {x}, {{t, {2, 2}}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(at(out[0], 0), 0.5f);
  EXPECT_EQ(at(out[0], 1), 0.5f);
  // ln 3 itself is rounded to 16 bits first: 3 * e^(ln3' - ln3) stays
  // within a few 2^-9 of 3.
  EXPECT_NEAR(at(out[0], 2), 0.75f, t == DType::BF16 ? 4e-3 : 1e-3);
  EXPECT_NEAR(at(out[0], 3), 0.25f, t == DType::BF16 ? 4e-3 : 1e-3);
}

TEST_P(HalfCalls, CrossEntropy) {
  // 16-bit logits: the summed loss and the count come out in f32.
  Array logits = floats(t, {5, 7}, wave(35, 3.0f));
  Array labels = i64({5}, {3, 0, -100, 6, 2});
  std::vector<Array> out = expectRoundedOnce(
      tag("ce"), "cross_entropy", json::object(), {logits, labels},
      {{DType::F32, {}}, {DType::F32, {}}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].data<float>()[0], 4.0f); // one ignored row
  // The gradient with an f32 seed (the loss's type) and with a seed of the
  // logits' type.
  expectRoundedOnce(tag("ce_grad"), "cross_entropy_grad", json::object(),
                    {logits, labels, floats(DType::F32, {}, {0.25f})},
                    {{t, {5, 7}}});
  expectRoundedOnce(tag("ce_grad_seed16"), "cross_entropy_grad",
                    json::object(), {logits, labels, floats(t, {}, {0.25f})},
                    {{t, {5, 7}}});
}

TEST_P(HalfCalls, CrossEntropyByHand) {
  // Two equal logits: loss ln 2 per row, in f32 (not rounded to 16 bits).
  Array logits = floats(t, {2, 2}, {1.0f, 1.0f, -3.0f, -3.0f});
  std::vector<Array> out =
      runCall(tag("ce_hand"), "cross_entropy", json::object(),
              {logits, i64({2}, {0, 1})}, {{DType::F32, {}}, {DType::F32, {}}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NEAR(out[0].data<float>()[0], 2 * std::log(2.0), 1e-6);
  EXPECT_EQ(out[1].data<float>()[0], 2.0f);
}

TEST_P(HalfCalls, Attention) {
  Array q = floats(t, {1, 2, 3, 4}, wave(24, 1.0f));
  Array k = floats(t, {1, 2, 5, 4}, wave(40, 1.0f, 0.3f));
  Array v = floats(t, {1, 2, 5, 4}, wave(40, 2.0f, 0.8f));
  json attrs = {{"scale", 0.5}, {"causal", false}};
  expectRoundedOnce(tag("attn"), "attention", attrs, {q, k, v, absent()},
                    {{t, {1, 2, 3, 4}}});
  // An additive key mask of the 16-bit type, and a boolean one.
  Array bias = floats(t, {1, 5}, {0.0f, -1.5f, 0.0f, -1e4f, 0.5f});
  expectRoundedOnce(tag("attn_bias"), "attention", attrs, {q, k, v, bias},
                    {{t, {1, 2, 3, 4}}});
  Array keep = testutil::makeArray<uint8_t>("", DType::Bool, {1, 5},
                                            {1, 0, 1, 1, 0});
  expectRoundedOnce(tag("attn_keep"), "attention",
                    {{"scale", 0.5}, {"causal", true}}, {q, k, v, keep},
                    {{t, {1, 2, 3, 4}}});
  Array dout = floats(t, {1, 2, 3, 4}, wave(24, 1.0f, 1.9f));
  expectRoundedOnce(tag("attn_grad"), "attention_grad", attrs,
                    {q, k, v, dout, bias},
                    {{t, {1, 2, 3, 4}}, {t, {1, 2, 5, 4}}, {t, {1, 2, 5, 4}}});
}

TEST_P(HalfCalls, Embedding) {
  Array table = floats(t, {4, 3}, wave(12, 2.0f));
  Array ids = i64({2, 2}, {3, 0, 3, 1});
  std::vector<Array> out =
      expectRoundedOnce(tag("emb"), "embedding", json::object(), {table, ids},
                        {{t, {2, 2, 3}}});
  ASSERT_EQ(out.size(), 1u);
  // Rows are copied bit for bit.
  const uint16_t *rows = out[0].data<uint16_t>();
  const uint16_t *tab = table.data<uint16_t>();
  int64_t order[] = {3, 0, 3, 1};
  for (int j = 0; j < 4; ++j)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(rows[j * 3 + c], tab[order[j] * 3 + c]);
  // Its gradient: rows added in f32, rounded once.
  Array dy = floats(t, {2, 2, 3}, wave(12, 1.0f, 0.6f));
  expectRoundedOnce(tag("emb_grad"), "gather_grad", {{"axis", 0}}, {ids, dy},
                    {{t, {4, 3}}});
}

TEST_P(HalfCalls, Dropout) {
  Array x = floats(t, {64}, wave(64, 1.0f));
  expectRoundedOnce(tag("dropout"), "dropout", {{"ratio", 0.3}, {"seed", 7}},
                    {x, absent()}, {{t, {64}}, {DType::Bool, {64}}});
}

INSTANTIATE_TEST_SUITE_P(Types, HalfCalls, ::testing::Values("bf16", "f16"),
                         [](const ::testing::TestParamInfo<const char *> &info) {
                           return std::string(info.param);
                         });

} // namespace
