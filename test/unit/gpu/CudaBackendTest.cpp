// The CUDA backend of the runtime (runtime/exec/cuda_backend.cpp) through the
// C API, on the hand-written linear-regression artifact of
// test/unit/runtime/RuntimeTestUtil.h (matmul calls, generated-kernel
// stand-ins, SGD with and without momentum, lr from the step counter). Its
// kernels/kernels.fatbin is built here by running nvcc (TCC_TEST_NVCC) on
// the same kernel source, with the flags `tcc compile` uses.
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
#include "GpuTestUtil.h"

#include "../runtime/RuntimeTestUtil.h"

#include "data/half.h"

#include <cmath>
#include <cstring>

namespace tcc::gputest {
namespace {

using namespace rttest;
using CudaBackend = GpuTest;

/// kernels.fatbin of kernelSource(), built once per test process.
std::string fatbin() {
  static const std::string path = [] {
    std::string base = ::testing::TempDir() + "tcc_cuda_backend_" +
                       std::to_string(::getpid());
    std::string cu = base + ".cu", out = base + ".fatbin";
    std::ofstream(cu) << kernelSource();
    std::string cmd = std::string("'") + TCC_TEST_NVCC +
                      "' -fatbin -std=c++17 --fmad=false"
                      " -gencode arch=compute_80,code=sm_80"
                      " -gencode arch=compute_90,code=sm_90"
                      " -gencode arch=compute_90,code=compute_90 -I'" +
                      TCC_KERNEL_INCLUDE_DIR + "' '" + cu + "' -o '" + out +
                      "'";
    int rc = std::system(cmd.c_str());
    fs::remove(cu);
    if (rc != 0) {
      ADD_FAILURE() << "cannot build the test fatbin: " << cmd;
      return std::string();
    }
    return out;
  }();
  return path;
}

/// The linear regression with its fatbin, written to `dir`.
void writeArtifact(const TempDir &dir) {
  TestArtifact a = linearRegression();
  a.manifest["files"]["cuda_kernels"] = "kernels/kernels.fatbin";
  a.write(dir.path);
  std::string fb = fatbin();
  ASSERT_FALSE(fb.empty());
  fs::copy_file(fb, dir / "kernels/kernels.fatbin",
                fs::copy_options::overwrite_existing);
}

tcc_session *open(const TempDir &dir, const char *backend) {
  tcc_session *s = nullptr;
  EXPECT_EQ(tcc_session_open(dir.path.c_str(), backend, &s), TCC_OK)
      << backend << ": " << tcc_last_error();
  if (s)
    bindRegression(s);
  return s;
}

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
  writeArtifact(dir);
  tcc_session *cpu = open(dir, "cpu"), *gpu = open(dir, "cuda");
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
  writeArtifact(dir);
  tcc_session *s = open(dir, "cuda");
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
  writeArtifact(dir);
  tcc_session *graphs = open(dir, "cuda");
  ::setenv("TCC_CUDA_GRAPHS", "0", 1);
  tcc_session *eager = open(dir, "cuda");
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
  writeArtifact(dir);
  tcc_session *gpu = open(dir, "cuda");
  ASSERT_TRUE(gpu);
  for (int t = 0; t < 3; ++t)
    ASSERT_EQ(tcc_train_step(gpu, nullptr), TCC_OK) << tcc_last_error();
  const char *written = nullptr;
  ASSERT_EQ(tcc_save_checkpoint(gpu, (dir / "ck").c_str(), 12, nullptr,
                                &written),
            TCC_OK)
      << tcc_last_error();
  tcc_session *cpu = open(dir, "cpu");
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
  tcc_session *gpu2 = open(dir, "cuda");
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

bool isHalf(DType t) { return t == DType::BF16 || t == DType::F16; }

/// `v` rounded into an array of `dtype` (f32, bf16, f16) of `shape`.
Array floats(DType dtype, std::vector<int64_t> shape,
             const std::vector<float> &v) {
  Array a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.bytes.resize(v.size() * tcc::data::dtypeSize(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(a.bytes.data() + 4 * i, &v[i], 4);
      continue;
    }
    uint16_t h = dtype == DType::BF16 ? tcc::data::floatToBf16(v[i])
                                      : tcc::data::floatToF16(v[i]);
    std::memcpy(a.bytes.data() + 2 * i, &h, 2);
  }
  return a;
}

/// Element i of a float array of any float dtype, widened.
float at(const Array &a, int64_t i) {
  if (a.dtype == DType::F32)
    return a.data<float>()[i];
  uint16_t h = a.data<uint16_t>()[i];
  return a.dtype == DType::BF16 ? tcc::data::bf16ToFloat(h)
                                : tcc::data::f16ToFloat(h);
}

Array absent() {
  Array a;
  a.name = "-";
  return a;
}

struct Result {
  DType dtype;
  std::vector<int64_t> shape;
};

/// A train_step of one call: inputs "in0".. (an Array named "-" is an
/// absent optional operand), each result copied into parameter "outK"; the
/// loss is a zero kernel. kernels.fatbin included.
TestArtifact oneCall(const std::string &op, const json &attrs,
                     const std::vector<Array> &inputs,
                     const std::vector<Result> &results) {
  TestArtifact a;
  a.manifest["files"]["cuda_kernels"] = "kernels/kernels.fatbin";
  json fnInputs = json::array(), values = json::array(), ids = json::array();
  int64_t n = 0;
  for (const Array &in : inputs) {
    if (in.name == "-") {
      ids.push_back(-1);
      continue;
    }
    std::string name = "in" + std::to_string(n);
    const char *dtype = tcc::data::dtypeName(in.dtype);
    fnInputs.push_back(tensor(name, dtype, in.shape));
    ids.push_back(values.size());
    values.push_back(slot("input", dtype, in.shape, n++));
  }
  int64_t offset = 0;
  json outIds = json::array(), roles = json::array(), params = json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const Result &r = results[i];
    std::string name = "out" + std::to_string(i);
    const char *dtype = tcc::data::dtypeName(r.dtype);
    params.push_back(tensor(name, dtype, r.shape));
    Array zero;
    zero.name = name;
    zero.dtype = r.dtype;
    zero.shape = r.shape;
    zero.bytes.assign(zero.numElements() * tcc::data::dtypeSize(r.dtype), 0);
    a.weights.push_back(zero);
    outIds.push_back(values.size());
    roles.push_back({{"role", "param"}, {"index", i}, {"value", values.size()}});
    values.push_back(arena(dtype, r.shape, offset));
    offset += (int64_t(zero.bytes.size()) + 63) / 64 * 64;
  }
  roles.push_back({{"role", "loss"}, {"value", values.size()}});
  values.push_back(arena("f32", {}, offset));
  a.plan["params"] = params;
  a.fn("train_step") = {
      {"arena_bytes", offset + 64},
      {"inputs", fnInputs},
      {"values", values},
      {"steps",
       {call(op, ids.get<std::vector<int64_t>>(),
             outIds.get<std::vector<int64_t>>(), attrs),
        kernel("zero", {}, values.size() - 1, 1)}},
      {"results", roles}};
  return a;
}

/// Runs the call's artifact on `backend`; its results (empty on failure).
std::vector<Array> runOn(const TempDir &dir, const TestArtifact &a,
                         const char *backend,
                         const std::vector<Array> &inputs) {
  tcc_session *s = nullptr;
  EXPECT_EQ(tcc_session_open(dir.path.c_str(), backend, &s), TCC_OK)
      << backend << ": " << tcc_last_error();
  if (!s)
    return {};
  int n = 0;
  for (const Array &in : inputs)
    if (in.name != "-") {
      std::string name = "in" + std::to_string(n++);
      EXPECT_EQ(tcc_bind_input(s, name.c_str(), in.bytes.data(),
                               in.bytes.size()),
                TCC_OK)
          << backend << ": " << tcc_last_error();
    }
  double loss;
  EXPECT_EQ(tcc_train_step(s, &loss), TCC_OK)
      << backend << ": " << tcc_last_error();
  std::vector<Array> out;
  for (const Array &w : a.weights) {
    Array o = w;
    EXPECT_EQ(tcc_read_param(s, w.name.c_str(), o.bytes.data(), o.bytes.size()),
              TCC_OK)
        << backend << ": " << tcc_last_error();
    out.push_back(o);
  }
  tcc_session_close(s);
  return out;
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
                          const std::vector<Result> &results, Agree agree,
                          double floor = 0) {
  SCOPED_TRACE(tag);
  TempDir dir(tag);
  TestArtifact a = oneCall(op, attrs, inputs, results);
  a.write(dir.path);
  std::string fb = fatbin();
  ASSERT_FALSE(fb.empty());
  fs::copy_file(fb, dir / "kernels/kernels.fatbin",
                fs::copy_options::overwrite_existing);
  std::vector<Array> cpu = runOn(dir, a, "cpu", inputs);
  std::vector<Array> gpu = runOn(dir, a, "cuda", inputs);
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

std::vector<float> wave(size_t n, float scale, float shift = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(float(i) * 1.3f + shift) * scale;
  return v;
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

} // namespace
} // namespace tcc::gputest
