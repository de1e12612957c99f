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
#include "GpuTestUtil.h"

#include "../runtime/RuntimeTestUtil.h"

#include <cmath>

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

} // namespace
} // namespace tcc::gputest
