// The CUDA backend of the runtime (runtime/exec/cuda_backend.cpp) through the
// C API, on the hand-written linear-regression artifact of
// test/unit/runtime/RuntimeTestUtil.h (matmul calls, generated-kernel
// stand-ins, SGD with and without momentum, lr from the step counter). Its
// kernels/kernels.fatbin is built by running nvcc (TCC_TEST_NVCC) on
// the same kernel source, with the flags `tcc compile` uses (CudaTestArtifact.h).
//
// Tolerances: the CUDA session against the CPU session on the same steps,
// |cuda - cpu| <= 1e-6 * (1 + |cpu|) for losses and parameters (cuBLASLt
// fp32 and OpenBLAS may sum the 3-term / 4-term products in another order;
// the kernels and SGD are the same formulas). Bit-exact: parameters saved
// from a CUDA session and restored into a CPU session; the CUDA session with
// and without CUDA graphs (TCC_CUDA_GRAPHS=0). Without a GPU every test
// prints "no CUDA device: skipped" and skips.
//
// bf16 / f16 library calls (CudaHalfCalls): one hand-written artifact per
// call, with 16-bit operands and results, run by a CUDA session and by a
// CPU session (whose backend emulates 16-bit storage: its f32 kernels on
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
//
// Multi-tensor AdamW (grouped adamw_update calls, one launch) and `tcc
// inspect`'s cuda line: their sections below; the grouping rule, the fatbin
// reader and the inspect verdict are checked without a GPU too.
#include "CudaTestArtifact.h"
#include "GpuTestUtil.h"

#include "../runtime/CallArtifact.h"

#include "data/half.h"
#include "exec/artifact.h"
#include "exec/cuda_calls.h"
#include "kernels/cuda/cuda_kernels.h"

#include <cmath>
#include <cstring>

namespace tcc::gputest {
namespace {

using namespace rttest;
using CudaBackend = GpuTest;

void expectClose(double got, double want, const std::string &what) {
  EXPECT_LE(std::fabs(got - want), 1e-6 * (1 + std::fabs(want)))
      << what << ": cuda " << got << ", cpu " << want;
}

std::vector<float> params(tcc_session *s) {
  std::vector<float> w = readParam<float>(s, "w", 3), b = readParam<float>(s, "b", 1);
  w.push_back(b[0]);
  float buf = 0;
  EXPECT_EQ(tcc_read_opt_state(s, "b.momentum_buffer", &buf, 4), TCC_OK);
  w.push_back(buf);
  return w;
}

TEST_F(CudaBackend, TrainsLikeTheCpuBackend) {
  TempDir dir("cuda-vs-cpu");
  writeRegressionArtifact(dir);
  tcc_session *cpu = openRegression(dir, "cpu"), *gpu = openRegression(dir, "cuda");
  ASSERT_TRUE(cpu && gpu);
  tcc_memory_info mc, mg;
  ASSERT_EQ(tcc_memory(cpu, &mc), TCC_OK);
  ASSERT_EQ(tcc_memory(gpu, &mg), TCC_OK) << tcc_last_error();
  EXPECT_EQ(mg.total_bytes, mc.total_bytes);
  EXPECT_EQ(mg.arena_bytes, mc.arena_bytes);
  for (int t = 0; t < 5; ++t) {
    double lc = -1, lg = -1;
    ASSERT_EQ(tcc_train_step(cpu, &lc), TCC_OK) << tcc_last_error();
    ASSERT_EQ(tcc_train_step(gpu, &lg), TCC_OK) << tcc_last_error();
    expectClose(lg, lc, "loss of step " + std::to_string(t));
  }
  EXPECT_EQ(tcc_steps_done(gpu), 5);
  std::vector<float> pc = params(cpu), pg = params(gpu);
  for (size_t i = 0; i < pc.size(); ++i)
    expectClose(pg[i], pc[i], "parameter/state " + std::to_string(i));
  double ec = -1, eg = -1;
  ASSERT_EQ(tcc_eval_step(cpu, &ec), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_eval_step(gpu, &eg), TCC_OK) << tcc_last_error();
  expectClose(eg, ec, "eval loss");
  tcc_session_close(cpu);
  tcc_session_close(gpu);
}

TEST_F(CudaBackend, LossFalls) {
  TempDir dir("cuda-loss");
  writeRegressionArtifact(dir);
  tcc_session *s = openRegression(dir, "cuda");
  ASSERT_TRUE(s);
  std::vector<double> losses;
  for (int t = 0; t < 20; ++t) {
    double l = -1;
    ASSERT_EQ(tcc_train_step(s, &l), TCC_OK) << tcc_last_error();
    ASSERT_TRUE(std::isfinite(l)) << "step " << t;
    losses.push_back(l);
  }
  EXPECT_LT(losses.back(), 0.5 * losses.front());
  EXPECT_LT(losses[10], losses[0]);
  tcc_session_close(s);
}

TEST_F(CudaBackend, GraphsReplayTheEagerSteps) {
  TempDir dir("cuda-graphs");
  writeRegressionArtifact(dir);
  tcc_session *graphs = openRegression(dir, "cuda");
  ::setenv("TCC_CUDA_GRAPHS", "0", 1);
  tcc_session *eager = openRegression(dir, "cuda");
  ::unsetenv("TCC_CUDA_GRAPHS");
  ASSERT_TRUE(graphs && eager);
  for (int t = 0; t < 4; ++t) {
    double a = -1, b = -2;
    ASSERT_EQ(tcc_train_step(graphs, &a), TCC_OK) << tcc_last_error();
    ASSERT_EQ(tcc_train_step(eager, &b), TCC_OK) << tcc_last_error();
    EXPECT_EQ(a, b) << "step " << t;
  }
  EXPECT_EQ(params(graphs), params(eager));
  tcc_session_close(graphs);
  tcc_session_close(eager);
}

TEST_F(CudaBackend, CheckpointRestoresIntoACpuSession) {
  TempDir dir("cuda-ckpt");
  writeRegressionArtifact(dir);
  tcc_session *gpu = openRegression(dir, "cuda");
  ASSERT_TRUE(gpu);
  for (int t = 0; t < 3; ++t)
    ASSERT_EQ(tcc_train_step(gpu, nullptr), TCC_OK) << tcc_last_error();
  const char *written = nullptr;
  ASSERT_EQ(tcc_save_checkpoint(gpu, (dir / "ck").c_str(), 12, nullptr,
                                &written),
            TCC_OK)
      << tcc_last_error();
  tcc_session *cpu = openRegression(dir, "cpu");
  ASSERT_TRUE(cpu);
  int64_t position = -1;
  ASSERT_EQ(tcc_restore_checkpoint(cpu, (dir / "ck").c_str(), &position,
                                   nullptr),
            TCC_OK)
      << tcc_last_error();
  EXPECT_EQ(position, 12);
  EXPECT_EQ(tcc_steps_done(cpu), 3);
  EXPECT_EQ(params(cpu), params(gpu)); // bit for bit
  // The next step from there agrees too (same lr: the step counter moved).
  double lc = -1, lg = -1;
  ASSERT_EQ(tcc_train_step(cpu, &lc), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_train_step(gpu, &lg), TCC_OK) << tcc_last_error();
  expectClose(lg, lc, "loss after the restore");
  // And back: a CPU checkpoint restores into a CUDA session.
  ASSERT_EQ(tcc_save_checkpoint(cpu, (dir / "ck2").c_str(), 0, nullptr,
                                nullptr),
            TCC_OK)
      << tcc_last_error();
  tcc_session *gpu2 = openRegression(dir, "cuda");
  ASSERT_TRUE(gpu2);
  ASSERT_EQ(tcc_restore_checkpoint(gpu2, (dir / "ck2").c_str(), nullptr,
                                   nullptr),
            TCC_OK)
      << tcc_last_error();
  EXPECT_EQ(params(gpu2), params(cpu));
  tcc_session_close(cpu);
  tcc_session_close(gpu);
  tcc_session_close(gpu2);
}

TEST_F(CudaBackend, MissingFatbinIsAFormatErrorNamingIt) {
  TempDir dir("cuda-nofatbin");
  linearRegression().write(dir.path); // no kernels.fatbin
  tcc_session *s = nullptr;
  EXPECT_EQ(tcc_session_open(dir.path.c_str(), "cuda", &s), TCC_ERROR_FORMAT);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(std::string(tcc_last_error()).find("kernels.fatbin"),
            std::string::npos)
      << tcc_last_error();
}

//===----------------------------------------------------------------------===//
// bf16 / f16 library calls: CUDA == the CPU backend's emulation
//===----------------------------------------------------------------------===//

/// The call's artifact (CallArtifact.h) with kernels.fatbin in its manifest.
TestArtifact oneCall(const std::string &op, const json &attrs,
                     const std::vector<Array> &inputs,
                     const std::vector<CallResult> &results) {
  TestArtifact a = callArtifact(op, attrs, inputs, results);
  a.manifest["files"]["cuda_kernels"] = "kernels/kernels.fatbin";
  return a;
}

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
  TestArtifact a = oneCall(op, attrs, inputs, results);
  a.write(dir.path);
  std::string fb = testFatbin();
  ASSERT_FALSE(fb.empty());
  fs::copy_file(fb, dir / "kernels/kernels.fatbin",
                fs::copy_options::overwrite_existing);
  std::vector<Array> cpu = runCallArtifact(dir.path, a, "cpu", inputs);
  std::vector<Array> gpu = runCallArtifact(dir.path, a, "cuda", inputs);
  ASSERT_EQ(cpu.size(), results.size());
  ASSERT_EQ(gpu.size(), results.size());
  for (size_t k = 0; k < results.size(); ++k) {
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
  // transposes, gemm with a bias row (the bias epilogue) and with a full c.
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
                       {{"axis", 1}, {"epsilon", 1e-5}}, {x, scale, dy},
                       {{t, {6, 96}}, {t, {96}}, {t, {96}}}, Agree::Ulp);
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
  // Head dim 64: the tensor-core forward; causal with a 16-bit additive
  // key mask. The gradient runs the FMA kernels.
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


//===----------------------------------------------------------------------===//
// Multi-tensor AdamW: runs of adamw_update steps as one launch
//===----------------------------------------------------------------------===//
//
// cuda_calls.cpp's adamwGroups decides which adamw_update steps one
// adamw_update_multi launch runs (checked here without a GPU, on fake
// addresses); cuda_backend.cpp uploads each group's table when the session
// opens and launches it at the group's first step. On a GPU, a train_step
// of seven adamw_update calls (sizes 1 to 3 x 16384 + 17, odd ones
// included; weight decays 0.01, 0, 0.1, 0.05; one with its new param in the
// arena, copied back; one with another beta1, so it stays a lone call) runs
// in three sessions: cuda (grouped: one launch for six calls), cuda with
// TCC_CUDA_MULTI_TENSOR=0 (a launch per call) and cpu, from the same random
// state, for three steps (each starting from the cpu session's state):
//   grouped == ungrouped            bit for bit (the same scalars and the
//                                   same per-element roundings; only the
//                                   walk over the elements differs)
//   exp_avg, exp_avg_sq == cpu      bit for bit (no bias correction in them)
//   param == cpu                    within 1 ulp: bit for bit unless the
//                                   device's pow(beta, t) differs from
//                                   glibc's in the last bit of a double and
//                                   that moves the rounding of the f32 step
//                                   size or sqrt(bias_correction2); the
//                                   update (|lr * m / sqrt(v)| < 0.1) is far
//                                   below the params (|p| >= 0.5), so such a
//                                   change moves a param by 1 ulp at most
// and a step operand of 0 is TCC_ERROR_FORMAT naming the group's first
// step, as ungrouped, with nothing written.

struct AdamwCall {
  int64_t n;
  double weightDecay;
  double beta1 = 0.9;
  bool arenaParam = false; ///< new param into the arena, copied back
};

const std::vector<AdamwCall> &adamwCalls() {
  static const std::vector<AdamwCall> calls = {
      {1, 0.01},          {7, 0.0},     {16384 + 3, 0.1, 0.9, true},
      {1001, 0.01, 0.8},  {3 * 16384 + 17, 0.0},
      {64, 0.05},         {4097, 0.01}};
  return calls;
}

/// Grouped: every call but the one with beta1 0.8.
const std::vector<size_t> kAdamwGroup = {0, 1, 2, 4, 5, 6};

std::string pname(size_t i) { return "p" + std::to_string(i); }
std::string mname(size_t i) { return pname(i) + ".exp_avg"; }
std::string vname(size_t i) { return pname(i) + ".exp_avg_sq"; }

/// Inputs g0.. (the gradients), lr (f64), t (i64); params p0..; optimizer
/// state p<i>.exp_avg, p<i>.exp_avg_sq; one adamw_update per param, in
/// place but for arenaParam; the loss is a zero kernel.
TestArtifact adamwArtifact() {
  const std::vector<AdamwCall> &calls = adamwCalls();
  const int64_t k = int64_t(calls.size());
  TestArtifact a;
  a.manifest["files"]["cuda_kernels"] = "kernels/kernels.fatbin";
  a.manifest["train_config"] =
      "loss=mse(p,y) optimizer=adamw:lr=0.001 grad_clip=none "
      "lr_schedule=constant accum=1 freeze= no_decay=";
  a.manifest["schedule"] = {{"kind", "constant"}, {"lr", 0.001}};
  json inputs = json::array(), params = json::array(), opt = json::array(),
       values = json::array(), steps = json::array(), results = json::array();
  for (int64_t i = 0; i < k; ++i) {
    inputs.push_back(tensor("g" + std::to_string(i), "f32", {calls[i].n}));
    values.push_back(slot("input", "f32", {calls[i].n}, i)); // i: g_i
  }
  inputs.push_back(tensor("lr", "f64", {}));
  inputs.push_back(tensor("t", "i64", {}));
  const int64_t lr = values.size(), t = lr + 1;
  values.push_back(slot("input", "f64", {}, k));
  values.push_back(slot("input", "i64", {}, k + 1));
  int64_t offset = 0;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t n = calls[i].n;
    params.push_back(tensor(pname(i), "f32", {n}));
    opt.push_back(tensor(mname(i), "f32", {n}));
    opt.push_back(tensor(vname(i), "f32", {n}));
    std::vector<float> p = randomUniform(size_t(n), 100 + uint32_t(i), 0.5f,
                                         2.0f);
    for (size_t j = 0; j < p.size(); j += 2)
      p[j] = -p[j];
    a.weights.push_back(named(pname(i), testutil::f32({n}, p)));
    const int64_t p0 = values.size();
    values.push_back(slot("param", "f32", {n}, i));
    values.push_back(slot("opt_state", "f32", {n}, 2 * i));
    values.push_back(slot("opt_state", "f32", {n}, 2 * i + 1));
    const int64_t out = values.size();
    if (calls[i].arenaParam) {
      values.push_back(arena("f32", {n}, offset));
      offset += (n * 4 + 63) / 64 * 64;
    } else {
      values.push_back(slot("param", "f32", {n}, i));
    }
    values.push_back(slot("opt_state", "f32", {n}, 2 * i));
    values.push_back(slot("opt_state", "f32", {n}, 2 * i + 1));
    steps.push_back(call("adamw_update", {p0, i, p0 + 1, p0 + 2, lr, t},
                         {out, out + 1, out + 2},
                         {{"beta1", calls[i].beta1},
                          {"beta2", 0.999},
                          {"eps", 1e-8},
                          {"weight_decay", calls[i].weightDecay}}));
    results.push_back({{"role", "param"}, {"index", i}, {"value", out}});
    results.push_back(
        {{"role", "opt_state"}, {"index", 2 * i}, {"value", out + 1}});
    results.push_back(
        {{"role", "opt_state"}, {"index", 2 * i + 1}, {"value", out + 2}});
  }
  const int64_t loss = values.size();
  values.push_back(arena("f32", {}, offset));
  steps.push_back(kernel("zero", {}, loss, 1));
  results.push_back({{"role", "loss"}, {"value", loss}});
  a.plan["params"] = params;
  a.plan["opt_state"] = opt;
  a.fn("train_step") = {{"arena_bytes", offset + 64},
                        {"inputs", inputs},
                        {"values", values},
                        {"steps", steps},
                        {"results", results}};
  return a;
}

/// Every value of `fn` at a made-up address: each slot 16 MiB apart, arena
/// values at their offsets (adamwGroups only compares byte ranges).
std::vector<uint8_t *> fakeAddresses(const tcc::rt::Function &fn) {
  using tcc::rt::Storage;
  std::vector<uint8_t *> ptrs;
  for (const tcc::rt::Value &v : fn.values) {
    uintptr_t base = 0;
    int64_t at = v.index;
    switch (v.storage) {
    case Storage::Input:
      base = uintptr_t(1) << 40;
      break;
    case Storage::Param:
      base = uintptr_t(2) << 40;
      break;
    case Storage::OptState:
      base = uintptr_t(3) << 40;
      break;
    case Storage::Arena:
      base = uintptr_t(4) << 40;
      at = 0;
      break;
    default:
      base = uintptr_t(5) << 40;
      at = int64_t(ptrs.size());
      break;
    }
    uintptr_t p = base + uintptr_t(at) * (uintptr_t(1) << 24) +
                  (v.storage == Storage::Arena ? uintptr_t(v.offset) : 0);
    ptrs.push_back(reinterpret_cast<uint8_t *>(p));
  }
  return ptrs;
}

using Groups = std::vector<std::vector<size_t>>;

TEST(CudaAdamwGroups, RunsOfIndependentCallsWithOneKey) {
  TempDir dir("cuda-adamw-groups");
  adamwArtifact().write(dir.path);
  tcc::rt::Artifact art = tcc::rt::loadArtifact(dir.path);
  const tcc::rt::Function base = *art.function("train_step");
  auto groups = [](const tcc::rt::Function &fn) {
    std::vector<uint8_t *> ptrs = fakeAddresses(fn);
    return tcc::rt::adamwGroups(fn, ptrs.data());
  };
  // Weight decays differ within the group; beta1 0.8 keeps step 3 alone.
  EXPECT_EQ(groups(base), Groups{kAdamwGroup});

  // A step reading what an earlier one writes ends the run there.
  tcc::rt::Function dep = base;
  dep.steps[4].inputs[1] = dep.steps[1].outputs[0]; // grad := new p1
  EXPECT_EQ(groups(dep), (Groups{{0, 1, 2}, {4, 5, 6}}));
  // ... and one writing what an earlier one reads.
  tcc::rt::Function war = base;
  war.steps[5].outputs[1] = war.steps[0].inputs[1]; // new exp_avg := g0
  EXPECT_EQ(groups(war), (Groups{{0, 1, 2, 4}, {5, 6}}));

  // Another lr value: its own group.
  tcc::rt::Function lr = base;
  lr.values.push_back(lr.values[lr.steps[0].inputs[4]]);
  lr.values.back().index = 99;
  for (size_t s : {1, 5})
    lr.steps[s].inputs[4] = int64_t(lr.values.size()) - 1;
  EXPECT_EQ(groups(lr), (Groups{{0, 2, 4, 6}, {1, 5}}));

  // Any other step in between ends the run.
  tcc::rt::Function split = base;
  split.steps.insert(split.steps.begin() + 2, split.steps.back());
  EXPECT_EQ(groups(split), (Groups{{0, 1}, {3, 5, 6, 7}}));

  // One skip flag for all (dynamic loss scaling's): grouped as without.
  tcc::rt::Function shared = base;
  for (tcc::rt::Step &st : shared.steps) {
    st.inputs.resize(7, -1);
    st.inputs[6] = shared.steps[0].inputs[5];
  }
  EXPECT_EQ(groups(shared), groups(base));

  // Not grouped: a skip operand the others do not share, an empty tensor
  // (its call launches nothing), a lone call.
  tcc::rt::Function skip = base;
  skip.steps[0].inputs.resize(7, -1);
  skip.steps[0].inputs[6] = skip.steps[0].inputs[5];
  skip.steps[6].inputs.resize(7, -1); // absent: still grouped
  EXPECT_EQ(groups(skip), (Groups{{1, 2, 4, 5, 6}}));
  tcc::rt::Function empty = base;
  empty.values[empty.steps[0].inputs[0]].elements = 0;
  empty.values[empty.steps[0].inputs[0]].bytes = 0;
  EXPECT_EQ(groups(empty), (Groups{{1, 2, 4, 5, 6}}));
  tcc::rt::Function lone = base;
  lone.steps.erase(lone.steps.begin() + 1, lone.steps.end() - 1);
  EXPECT_EQ(groups(lone), Groups{});

  // The table: one entry per member, chunks of 16384 elements.
  std::vector<uint8_t *> ptrs = fakeAddresses(base);
  int64_t chunks = -1;
  std::vector<char> table =
      tcc::rt::adamwGroupTable(base, kAdamwGroup, ptrs.data(), chunks);
  EXPECT_EQ(chunks, 1 + 1 + 2 + 4 + 1 + 1);
  ASSERT_EQ(table.size(), cuda::adamw_table_bytes(6));
  cuda::AdamwTensor second;
  std::memcpy(&second, table.data() + sizeof(second), sizeof(second));
  EXPECT_EQ(second.n, 7);
  EXPECT_EQ(second.weightDecay, 0.0);
  EXPECT_EQ(second.param, reinterpret_cast<const float *>(
                              ptrs[base.steps[1].inputs[0]]));
  EXPECT_EQ(second.newParam, second.param); // in place
  cuda::AdamwTensor third;
  std::memcpy(&third, table.data() + 2 * sizeof(third), sizeof(third));
  EXPECT_NE(third.newParam, third.param); // into the arena
  EXPECT_EQ(third.weightDecay, 0.1);

  // The artifact itself is well formed: a cpu session trains it.
  tcc_session *cpu = nullptr;
  ASSERT_EQ(tcc_session_open(dir.path.c_str(), "cpu", &cpu), TCC_OK)
      << tcc_last_error();
  for (size_t i = 0; i < adamwCalls().size(); ++i) {
    std::vector<float> g = randomNormal(size_t(adamwCalls()[i].n), 7);
    ASSERT_EQ(tcc_bind_input(cpu, ("g" + std::to_string(i)).c_str(), g.data(),
                             g.size() * 4),
              TCC_OK)
        << tcc_last_error();
  }
  double lrValue = 1e-3;
  int64_t step = 1;
  ASSERT_EQ(tcc_bind_input(cpu, "lr", &lrValue, 8), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_bind_input(cpu, "t", &step, 8), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_train_step(cpu, nullptr), TCC_OK) << tcc_last_error();
  tcc_session_close(cpu);
}

/// One tensor of every param and optimizer slot of a session.
struct AdamwState {
  std::vector<std::vector<float>> p, m, v;
};

AdamwState readState(tcc_session *s) {
  AdamwState st;
  for (size_t i = 0; i < adamwCalls().size(); ++i) {
    size_t n = size_t(adamwCalls()[i].n);
    st.p.push_back(readParam<float>(s, pname(i).c_str(), n));
    std::vector<float> m(n), v(n);
    EXPECT_EQ(tcc_read_opt_state(s, mname(i).c_str(), m.data(), n * 4), TCC_OK)
        << tcc_last_error();
    EXPECT_EQ(tcc_read_opt_state(s, vname(i).c_str(), v.data(), n * 4), TCC_OK)
        << tcc_last_error();
    st.m.push_back(m);
    st.v.push_back(v);
  }
  return st;
}

void writeState(tcc_session *s, const AdamwState &st) {
  for (size_t i = 0; i < st.p.size(); ++i) {
    size_t bytes = st.p[i].size() * 4;
    ASSERT_EQ(tcc_write_param(s, pname(i).c_str(), st.p[i].data(), bytes),
              TCC_OK)
        << tcc_last_error();
    ASSERT_EQ(tcc_write_opt_state(s, mname(i).c_str(), st.m[i].data(), bytes),
              TCC_OK)
        << tcc_last_error();
    ASSERT_EQ(tcc_write_opt_state(s, vname(i).c_str(), st.v[i].data(), bytes),
              TCC_OK)
        << tcc_last_error();
  }
}

void bindAdamwInputs(tcc_session *s, uint32_t seed, double lr, int64_t t) {
  for (size_t i = 0; i < adamwCalls().size(); ++i) {
    std::vector<float> g =
        randomNormal(size_t(adamwCalls()[i].n), seed + uint32_t(i));
    ASSERT_EQ(tcc_bind_input(s, ("g" + std::to_string(i)).c_str(), g.data(),
                             g.size() * 4),
              TCC_OK)
        << tcc_last_error();
  }
  ASSERT_EQ(tcc_bind_input(s, "lr", &lr, 8), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_bind_input(s, "t", &t, 8), TCC_OK) << tcc_last_error();
}

/// Elements of `got` not bit-equal to `want`; fails for any more than 1 ulp
/// apart (same sign, adjacent bit patterns).
size_t expectWithinUlp(const std::vector<float> &got,
                       const std::vector<float> &want, const std::string &what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  size_t differ = 0;
  for (size_t j = 0; j < std::min(got.size(), want.size()); ++j) {
    int32_t a, b;
    std::memcpy(&a, &got[j], 4);
    std::memcpy(&b, &want[j], 4);
    if (a == b)
      continue;
    ++differ;
    EXPECT_LE(std::abs(int64_t(a) - int64_t(b)), 1)
        << what << " element " << j << ": cuda " << got[j] << ", cpu "
        << want[j];
  }
  return differ;
}

TEST_F(CudaBackend, MultiTensorAdamwMatchesPerCallAndCpu) {
  TempDir dir("cuda-adamw-multi");
  adamwArtifact().write(dir.path);
  std::string fb = testFatbin();
  ASSERT_FALSE(fb.empty());
  fs::copy_file(fb, dir / "kernels/kernels.fatbin",
                fs::copy_options::overwrite_existing);
  auto openOn = [&](const char *backend) {
    tcc_session *s = nullptr;
    EXPECT_EQ(tcc_session_open(dir.path.c_str(), backend, &s), TCC_OK)
        << backend << ": " << tcc_last_error();
    return s;
  };
  tcc_session *cpu = openOn("cpu"), *grouped = openOn("cuda");
  ::setenv("TCC_CUDA_MULTI_TENSOR", "0", 1);
  tcc_session *perCall = openOn("cuda");
  ::unsetenv("TCC_CUDA_MULTI_TENSOR");
  ASSERT_TRUE(cpu && grouped && perCall);

  // A random optimizer state (exp_avg_sq >= 0), the same everywhere.
  AdamwState start = readState(cpu);
  for (size_t i = 0; i < start.p.size(); ++i) {
    start.m[i] = randomNormal(start.m[i].size(), 200 + uint32_t(i), 0.1f);
    start.v[i] = randomNormal(start.v[i].size(), 300 + uint32_t(i), 0.01f);
    for (float &x : start.v[i])
      x = x * x;
  }
  for (tcc_session *s : {cpu, grouped, perCall})
    writeState(s, start);

  size_t paramsOff = 0, total = 0;
  for (int64_t t = 1; t <= 3; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    const double lr = 1e-3 * (1.0 + 0.25 * double(t));
    for (tcc_session *s : {cpu, grouped, perCall}) {
      bindAdamwInputs(s, 1000 * uint32_t(t), lr, t);
      ASSERT_EQ(tcc_train_step(s, nullptr), TCC_OK) << tcc_last_error();
    }
    AdamwState c = readState(cpu), g = readState(grouped),
               u = readState(perCall);
    for (size_t i = 0; i < c.p.size(); ++i) {
      std::string what = pname(i);
      expectBitEqual(g.p[i], u.p[i], what + " grouped vs per call");
      expectBitEqual(g.m[i], u.m[i], mname(i) + " grouped vs per call");
      expectBitEqual(g.v[i], u.v[i], vname(i) + " grouped vs per call");
      expectBitEqual(g.m[i], c.m[i], mname(i) + " cuda vs cpu");
      expectBitEqual(g.v[i], c.v[i], vname(i) + " cuda vs cpu");
      paramsOff += expectWithinUlp(g.p[i], c.p[i], what + " cuda vs cpu");
      total += c.p[i].size();
    }
    // The next step starts from the cpu state in all three sessions.
    writeState(grouped, c);
    writeState(perCall, c);
  }
  std::printf("  multi-tensor AdamW: %zu of %zu params 1 ulp off the cpu "
              "backend, the rest bit for bit\n",
              paramsOff, total);

  // Step 0: nothing written, the error names the group's first step, as a
  // launch per call does.
  AdamwState before = readState(grouped);
  std::string messages[2];
  tcc_session *cuda[2] = {grouped, perCall};
  for (int k = 0; k < 2; ++k) {
    bindAdamwInputs(cuda[k], 5000, 1e-3, 0);
    EXPECT_EQ(tcc_train_step(cuda[k], nullptr), TCC_ERROR_FORMAT);
    messages[k] = tcc_last_error();
  }
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[0].find("train_step step 0 (adamw_update): step 0 is "
                             "not a valid AdamW step"),
            std::string::npos)
      << messages[0];
  AdamwState after = readState(grouped);
  for (size_t i = 0; i < before.p.size(); ++i) {
    expectBitEqual(after.p[i], before.p[i], pname(i) + " after step 0");
    expectBitEqual(after.m[i], before.m[i], mname(i) + " after step 0");
    expectBitEqual(after.v[i], before.v[i], vname(i) + " after step 0");
  }
  for (tcc_session *s : {cpu, grouped, perCall})
    tcc_session_close(s);
}


//===----------------------------------------------------------------------===//
// tcc inspect's cuda line (cuda_calls.cpp cudaBackendVerdict): no GPU needed
//===----------------------------------------------------------------------===//

/// A fatbin of one entry per (kind, arch): 1 PTX, 2 SASS; payloads of 8
/// bytes (nvcc's layout, see readFatbinCode).
std::string handMadeFatbin(const std::vector<std::pair<int, int>> &entries) {
  std::string body;
  for (auto [kind, arch] : entries) {
    std::string e(64 + 8, '\0');
    uint16_t k = uint16_t(kind), v = 0x0101;
    uint32_t header = 64, a = uint32_t(arch);
    uint64_t payload = 8;
    std::memcpy(&e[0], &k, 2);
    std::memcpy(&e[2], &v, 2);
    std::memcpy(&e[4], &header, 4);
    std::memcpy(&e[8], &payload, 8);
    std::memcpy(&e[28], &a, 4);
    body += e;
  }
  std::string h(16, '\0');
  uint32_t magic = 0xBA55ED50u;
  uint16_t version = 1, header = 16;
  uint64_t size = body.size();
  std::memcpy(&h[0], &magic, 4);
  std::memcpy(&h[4], &version, 2);
  std::memcpy(&h[6], &header, 2);
  std::memcpy(&h[8], &size, 8);
  return h + body;
}

std::string verdictWith(const TempDir &dir, const TestArtifact &a,
                        const std::string *fatbinBytes) {
  a.write(dir.path);
  fs::remove(dir / "kernels/kernels.fatbin");
  if (fatbinBytes)
    std::ofstream(dir / "kernels/kernels.fatbin", std::ios::binary)
        << *fatbinBytes;
  return tcc::rt::cudaBackendVerdict(tcc::rt::loadArtifact(dir.path));
}

TEST(CudaInspect, FatbinArchitecturesAndRefusals) {
  // nvcc's own fatbin (the flags of `tcc compile`).
  std::string fb = testFatbin();
  ASSERT_FALSE(fb.empty());
  tcc::rt::FatbinCode code;
  std::string error;
  ASSERT_TRUE(tcc::rt::readFatbinCode(fb, code, error)) << error;
  EXPECT_EQ(code.sass, (std::vector<int>{80, 90}));
  EXPECT_EQ(code.ptx, (std::vector<int>{90}));
  EXPECT_TRUE(code.runsOn(80) && code.runsOn(86) && code.runsOn(90));
  EXPECT_FALSE(code.runsOn(75));

  TempDir dir("cuda-inspect");
  TestArtifact lr = linearRegression();
  lr.manifest["files"]["cuda_kernels"] = "kernels/kernels.fatbin";
  std::ifstream in(fb, std::ios::binary);
  std::string real((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(verdictWith(dir, lr, &real),
            "runs every step (kernels/kernels.fatbin: sm_80, sm_90, "
            "compute_90 PTX)");
  EXPECT_EQ(verdictWith(dir, lr, nullptr),
            "cannot run its kernel steps: kernels/kernels.fatbin is missing");
  std::string junk = "not a fatbin";
  EXPECT_EQ(verdictWith(dir, lr, &junk),
            "cannot run its kernel steps: kernels/kernels.fatbin: not a CUDA "
            "fatbin (no fatbin header)");
  std::string cut = real.substr(0, real.size() / 2);
  EXPECT_EQ(verdictWith(dir, lr, &cut),
            "cannot run its kernel steps: kernels/kernels.fatbin: a fatbin "
            "header runs past the end of the file");
  std::string old = handMadeFatbin({{2, 75}});
  EXPECT_EQ(verdictWith(dir, lr, &old),
            "cannot run its kernel steps on sm_80 or sm_90: "
            "kernels/kernels.fatbin holds sm_75");
  std::string hopper = handMadeFatbin({{2, 90}});
  EXPECT_EQ(verdictWith(dir, lr, &hopper),
            "runs every step (kernels/kernels.fatbin: sm_90; nothing for "
            "sm_80)");
  std::string ptx = handMadeFatbin({{1, 80}});
  EXPECT_EQ(verdictWith(dir, lr, &ptx),
            "runs every step (kernels/kernels.fatbin: compute_80 PTX)");

  // A call the backend refuses, named as at session open; no kernel steps
  // and no fatbin otherwise.
  TestArtifact softmax0 = oneCall("softmax", {{"axis", 0}},
                               {floats(DType::F32, {4, 3}, wave(12, 1.0f))},
                               {{DType::F32, {4, 3}}});
  EXPECT_EQ(verdictWith(dir, softmax0, &real),
            "cannot run train_step step 0 (softmax): the cuda backend runs "
            "softmax over the last axis only, not axis 0");
  TestArtifact adamw = adamwArtifact();
  adamw.fn("train_step")["steps"].erase(
      adamw.fn("train_step")["steps"].size() - 1); // the loss kernel
  adamw.fn("train_step")["values"].back() = slot("input", "f32", {}, 9);
  adamw.fn("train_step")["inputs"].push_back(tensor("zero", "f32", {}));
  EXPECT_EQ(verdictWith(dir, adamw, nullptr),
            "runs every step (no kernel steps: no fatbin needed)");
}

} // namespace
} // namespace tcc::gputest
