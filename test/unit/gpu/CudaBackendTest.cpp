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
// `tcc inspect`'s cuda line: its section below, checked without a GPU too
// (the fatbin reader and the verdict). bf16 / f16 library calls are
// CudaHalfCallsTest.cpp, multi-tensor AdamW CudaAdamwTest.cpp.
#include "CudaAdamwArtifact.h"
#include "CudaTestArtifact.h"
#include "GpuTestUtil.h"

#include "../runtime/CallArtifact.h"

#include "exec/artifact.h"
#include "exec/cuda_calls.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

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
  EXPECT_EQ(openOn(dir.path, "cuda", &s), TCC_ERROR_FORMAT);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(std::string(tcc_last_error()).find("kernels.fatbin"),
            std::string::npos)
      << tcc_last_error();
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
  rttest::reseal(dir.path); // the fatbin's verdict, not its damage
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
  TestArtifact softmax0 = cudaCallArtifact("softmax", {{"axis", 0}},
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
