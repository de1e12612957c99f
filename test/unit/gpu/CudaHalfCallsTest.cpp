// bf16 / f16 library calls on the CUDA backend of the runtime
// (CudaHalfCalls): one hand-written artifact per call (CallArtifact.h),
// with 16-bit operands and results, run by a CUDA session and by a CPU
// session (whose backend emulates 16-bit storage: its f32 kernels on
// widened operands, each result rounded once). The CUDA kernels run
// natively on 16-bit data with the same f32 arithmetic, so:
//   embedding, gather_grad, dropout          bit for bit
//   softmax family, layer norm (+grad),      within 1 ulp of the 16-bit
//   cross_entropy_grad                       type (both round an f32 result
//                                            that may differ in its last
//                                            bits: other sum orders)
//   cross_entropy's f32 loss sum and count   1e-5 relative
//   matmul, gemm (cuBLASLt), attention       bf16 1e-2, f16 5e-3 relative
//   (+grad; tensor cores for head dim 64)    to the tensor's magnitude
// Without a GPU every test prints "no CUDA device: skipped" and skips.
#include "CudaTestArtifact.h"
#include "GpuTestUtil.h"

#include "../runtime/CallArtifact.h"

#include <cmath>

namespace tcc::gputest {
namespace {

using namespace rttest;

enum class Agree {
  Bits,      ///< bit for bit
  Ulp,       ///< within one unit in the last place of the 16-bit type
  Tolerance, ///< bf16 1e-2 / f16 5e-3 of the tensor's magnitude
};

int ordered(uint16_t h) {
  return (h & 0x8000u) ? -int(h & 0x7fffu) : int(h);
}

/// Runs the call on both backends and compares every result; f32 results
/// (cross_entropy's loss sum and count) to 1e-5 relative.
void expectCudaMatchesCpu(const std::string &tag, const std::string &op,
                          const json &attrs, const std::vector<Array> &inputs,
                          const std::vector<CallResult> &results, Agree agree,
                          double floor = 0) {
  SCOPED_TRACE(tag);
  TempDir dir(tag);
  TestArtifact a = cudaCallArtifact(op, attrs, inputs, results);
  a.write(dir.path);
  installTestFatbin(dir);
  std::vector<Array> cpu = runCallArtifact(dir.path, a, "cpu", inputs);
  std::vector<Array> gpu = runCallArtifact(dir.path, a, "cuda", inputs);
  const size_t present = presentResults(results).size();
  ASSERT_EQ(cpu.size(), present);
  ASSERT_EQ(gpu.size(), present);
  for (size_t k = 0; k < present; ++k) {
    const Array &c = cpu[k], &g = gpu[k];
    const std::string what = tag + " result " + std::to_string(k);
    const int64_t n = c.numElements();
    if (c.dtype == DType::F32) {
      for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(at(g, i), at(c, i), 1e-5 * (1 + std::fabs(at(c, i))))
            << what << " element " << i;
      continue;
    }
    if (!isHalf(c.dtype)) { // dropout's mask
      EXPECT_EQ(g.bytes, c.bytes) << what;
      continue;
    }
    if (agree == Agree::Tolerance) {
      std::vector<float> got(n);
      std::vector<double> ref(n);
      for (int64_t i = 0; i < n; ++i) {
        got[i] = at(g, i);
        ref[i] = at(c, i);
      }
      gputest::expectClose(got, ref, c.dtype == DType::BF16 ? 1e-2 : 5e-3,
                           what, floor);
      continue;
    }
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      uint16_t hc = c.data<uint16_t>()[i], hg = g.data<uint16_t>()[i];
      bool nc = std::isnan(at(c, i)), ng = std::isnan(at(g, i));
      bool ok = nc || ng ? nc && ng
                         : agree == Agree::Bits
                               ? hc == hg
                               : std::abs(ordered(hc) - ordered(hg)) <= 1;
      if (!ok && bad++ < 5)
        ADD_FAILURE() << what << " element " << i << ": cuda " << at(g, i)
                      << " (0x" << std::hex << hg << "), cpu " << at(c, i)
                      << " (0x" << hc << ")" << std::dec;
    }
    EXPECT_EQ(bad, 0) << what;
  }
}

class CudaHalfCalls : public GpuTest,
                      public ::testing::WithParamInterface<DType> {
protected:
  DType t = GetParam();
  std::string tag(const std::string &what) const {
    return "cuda_" + what + (t == DType::BF16 ? "_bf16" : "_f16");
  }
};

TEST_P(CudaHalfCalls, MatmulAndGemm) {
  // One GEMM over all rows (broadcast rhs), a strided batch with
  // transposes, gemm with a bias row (the bias epilogue), with a full c,
  // and with both.
  expectCudaMatchesCpu(tag("matmul"), "matmul", json::object(),
                       {floats(t, {2, 3, 64}, wave(384, 1.0f)),
                        floats(t, {64, 40}, wave(2560, 0.5f, 0.3f))},
                       {{t, {2, 3, 40}}}, Agree::Tolerance);
  expectCudaMatchesCpu(tag("matmul_t"), "matmul",
                       {{"transpose_lhs", true}, {"transpose_rhs", true}},
                       {floats(t, {2, 48, 5}, wave(480, 1.0f, 1.0f)),
                        floats(t, {2, 7, 48}, wave(672, 1.0f, 2.0f))},
                       {{t, {2, 5, 7}}}, Agree::Tolerance);
  expectCudaMatchesCpu(tag("gemm_bias"), "gemm", {{"transpose_b", true}},
                       {floats(t, {6, 32}, wave(192, 1.0f)),
                        floats(t, {24, 32}, wave(768, 0.7f, 0.5f)),
                        floats(t, {24}, wave(24, 0.3f, 0.1f))},
                       {{t, {6, 24}}}, Agree::Tolerance);
  expectCudaMatchesCpu(tag("gemm_c"), "gemm",
                       {{"alpha", 0.5}, {"beta", 0.25}},
                       {floats(t, {6, 32}, wave(192, 1.0f)),
                        floats(t, {32, 24}, wave(768, 0.7f, 0.5f)),
                        floats(t, {6, 24}, wave(144, 2.0f, 0.1f))},
                       {{t, {6, 24}}}, Agree::Tolerance);
  // A bias and a full c: a projection with its residual (cuBLASLt reads C
  // from c's buffer and writes the result to another).
  expectCudaMatchesCpu(tag("gemm_bias_c"), "gemm", {{"transpose_b", true}},
                       {floats(t, {6, 32}, wave(192, 1.0f)),
                        floats(t, {24, 32}, wave(768, 0.7f, 0.5f)),
                        floats(t, {6, 24}, wave(144, 2.0f, 0.1f)),
                        floats(t, {24}, wave(24, 0.3f, 0.1f))},
                       {{t, {6, 24}}}, Agree::Tolerance);
}

TEST_P(CudaHalfCalls, LayerNorm) {
  Array x = floats(t, {6, 96}, wave(576, 3.0f));
  Array scale = floats(t, {96}, wave(96, 1.0f, 0.2f));
  Array bias = floats(t, {96}, wave(96, 0.5f, 0.7f));
  expectCudaMatchesCpu(tag("layer_norm"), "layer_norm",
                       {{"axis", 1}, {"epsilon", 1e-5}}, {x, scale, bias},
                       {{t, {6, 96}}}, Agree::Ulp);
  Array dy = floats(t, {6, 96}, wave(576, 1.0f, 0.9f));
  expectCudaMatchesCpu(tag("layer_norm_grad"), "layer_norm_grad",
                       {{"axis", 1}, {"epsilon", 1e-5}},
                       {x, scale, dy, absent()},
                       {{t, {6, 96}}, {DType::F32, {96}}, {DType::F32, {96}},
                        absentResult()},
                       Agree::Ulp);
  // A residual gradient and dx's row sum (f32: both backends sum dx's f32
  // values before their rounding to 16 bits).
  expectCudaMatchesCpu(tag("layer_norm_grad_residual"), "layer_norm_grad",
                       {{"axis", 1}, {"epsilon", 1e-5}},
                       {x, scale, dy, floats(t, {6, 96}, wave(576, 2.0f, 0.3f))},
                       {{t, {6, 96}}, {DType::F32, {96}}, {DType::F32, {96}},
                        {DType::F32, {96}}},
                       Agree::Ulp);
}

TEST_P(CudaHalfCalls, SoftmaxFamily) {
  Array x = floats(t, {5, 100}, wave(500, 4.0f));
  Array dy = floats(t, {5, 100}, wave(500, 1.0f, 0.4f));
  for (const char *op : {"softmax", "log_softmax"})
    expectCudaMatchesCpu(tag(op), op, {{"axis", -1}}, {x}, {{t, {5, 100}}},
                         Agree::Ulp);
  // y of the gradients: a softmax output (probabilities) or log-probs.
  Array p = floats(t, {5, 100}, wave(500, 0.01f, 0.1f));
  expectCudaMatchesCpu(tag("softmax_grad"), "softmax_grad", {{"axis", 1}},
                       {p, dy}, {{t, {5, 100}}}, Agree::Ulp);
  Array lp = floats(t, {5, 100}, wave(500, 1.0f, 0.2f));
  expectCudaMatchesCpu(tag("log_softmax_grad"), "log_softmax_grad",
                       {{"axis", 1}}, {lp, dy}, {{t, {5, 100}}}, Agree::Ulp);
}

TEST_P(CudaHalfCalls, Attention) {
  // Head dim 64: the tensor-core forward and backward; causal with a 16-bit
  // additive key mask.
  const int64_t B = 1, H = 2, T = 40, D = 64;
  Array q = floats(t, {B, H, T, D}, wave(B * H * T * D, 1.0f));
  Array k = floats(t, {B, H, T, D}, wave(B * H * T * D, 1.0f, 0.5f));
  Array v = floats(t, {B, H, T, D}, wave(B * H * T * D, 1.0f, 1.1f));
  Array bias = floats(t, {B, T}, wave(B * T, 1.0f, 0.3f));
  json attrs = {{"scale", 0.125}, {"causal", true}};
  expectCudaMatchesCpu(tag("attention"), "attention", attrs, {q, k, v, bias},
                       {{t, {B, H, T, D}}}, Agree::Tolerance);
  expectCudaMatchesCpu(tag("attention_nomask"), "attention",
                       {{"scale", 0.125}}, {q, k, v, absent()},
                       {{t, {B, H, T, D}}}, Agree::Tolerance);
  Array dout = floats(t, {B, H, T, D}, wave(B * H * T * D, 1.0f, 0.8f));
  expectCudaMatchesCpu(tag("attention_grad"), "attention_grad", attrs,
                       {q, k, v, dout, bias},
                       {{t, {B, H, T, D}}, {t, {B, H, T, D}}, {t, {B, H, T, D}}},
                       Agree::Tolerance, 1.0);
}

TEST_P(CudaHalfCalls, CrossEntropy) {
  Array logits = floats(t, {12, 50}, wave(600, 3.0f));
  Array labels = testutil::i64({12}, {3, 0, 49, -100, 7, 7, 20, 1, -100, 33, 2, 48});
  json attrs = {{"ignore_index", -100}};
  expectCudaMatchesCpu(tag("cross_entropy"), "cross_entropy", attrs,
                       {logits, labels},
                       {{DType::F32, {}}, {DType::F32, {}}}, Agree::Ulp);
  expectCudaMatchesCpu(tag("cross_entropy_grad"), "cross_entropy_grad", attrs,
                       {logits, labels, floats(DType::F32, {}, {0.1f})},
                       {{t, {12, 50}}}, Agree::Ulp);
  expectCudaMatchesCpu(tag("cross_entropy_grad_seed16"), "cross_entropy_grad",
                       attrs, {logits, labels, floats(t, {}, {0.1f})},
                       {{t, {12, 50}}}, Agree::Ulp);
}

TEST_P(CudaHalfCalls, EmbeddingGatherGradAndDropout) {
  Array table = floats(t, {11, 24}, wave(264, 2.0f));
  Array ids = testutil::i64({3, 5}, {0, 10, 3, 3, 7, 1, 0, 0, 9, 2, 3, 4, 5,
                                     6, 10});
  expectCudaMatchesCpu(tag("embedding"), "embedding", json::object(),
                       {table, ids}, {{t, {3, 5, 24}}}, Agree::Bits);
  Array dy = floats(t, {3, 5, 24}, wave(360, 1.0f, 0.6f));
  expectCudaMatchesCpu(tag("gather_grad"), "gather_grad", {{"axis", 0}},
                       {ids, dy}, {{t, {11, 24}}}, Agree::Bits);
  Array x = floats(t, {1000}, wave(1000, 3.0f));
  expectCudaMatchesCpu(tag("dropout"), "dropout",
                       {{"ratio", 0.3}, {"seed", 1234}}, {x, absent()},
                       {{t, {1000}}, {DType::Bool, {1000}}}, Agree::Bits);
}

INSTANTIATE_TEST_SUITE_P(Types, CudaHalfCalls,
                         ::testing::Values(DType::BF16, DType::F16),
                         [](const ::testing::TestParamInfo<DType> &info) {
                           return std::string(
                               tcc::data::dtypeName(info.param));
                         });

} // namespace
} // namespace tcc::gputest
