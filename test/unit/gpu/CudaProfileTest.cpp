// tcc_profile_step on the CUDA backend (cuda_backend.cpp: the steps launched
// eagerly between a pair of CUDA events each), on the hand-written
// linear-regression artifact of test/unit/runtime/RuntimeTestUtil.h with its
// kernels/kernels.fatbin built by nvcc as CudaBackendTest.cpp builds it.
// Checked: one record per plan step with the names and kinds the CPU backend
// reports, non-negative times that fit in the call's wall time, and a
// profiled step that trains exactly as a graph replay (graphs == eager bit
// for bit), with graph replays going on after it. Without a GPU every test
// prints "no CUDA device: skipped" and skips.
#include "CudaTestArtifact.h"
#include "GpuTestUtil.h"

#include "../runtime/RuntimeTestUtil.h"

#include <chrono>

namespace tcc::gputest {
namespace {

using namespace rttest;
using CudaProfile = GpuTest;

/// One profiled step; `wallMs` receives the call's wall time.
std::vector<tcc_profile_record> profile(tcc_session *s, double &loss,
                                        double &wallMs) {
  size_t count = 0;
  EXPECT_EQ(tcc_profile_step(s, nullptr, nullptr, 0, &count), TCC_OK)
      << tcc_last_error();
  std::vector<tcc_profile_record> records(count);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(tcc_profile_step(s, &loss, records.data(), count, &count), TCC_OK)
      << tcc_last_error();
  wallMs = std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
               .count();
  return records;
}

std::vector<float> state(tcc_session *s) {
  std::vector<float> v = readParam<float>(s, "w", 3);
  v.push_back(readParam<float>(s, "b", 1)[0]);
  float buf = 0;
  EXPECT_EQ(tcc_read_opt_state(s, "b.momentum_buffer", &buf, 4), TCC_OK);
  v.push_back(buf);
  return v;
}

TEST_F(CudaProfile, OneRecordPerStepNamedAsOnTheCpu) {
  TempDir dir("cuda-profile");
  writeRegressionArtifact(dir);
  tcc_session *cpu = openRegression(dir, "cpu"), *gpu = openRegression(dir, "cuda");
  ASSERT_TRUE(cpu && gpu);
  // A replayed step first: the profiled one comes after the graphs exist.
  ASSERT_EQ(tcc_train_step(cpu, nullptr), TCC_OK) << tcc_last_error();
  ASSERT_EQ(tcc_train_step(gpu, nullptr), TCC_OK) << tcc_last_error();
  double lc = -1, lg = -2, wc = 0, wg = 0;
  std::vector<tcc_profile_record> rc = profile(cpu, lc, wc),
                                  rg = profile(gpu, lg, wg);
  ASSERT_EQ(rg.size(), 9u);
  ASSERT_EQ(rg.size(), rc.size());
  double sum = 0;
  for (size_t i = 0; i < rg.size(); ++i) {
    EXPECT_EQ(rg[i].step, int32_t(i));
    EXPECT_EQ(rg[i].kind, rc[i].kind) << i;
    EXPECT_STREQ(rg[i].name, rc[i].name);
    EXPECT_GE(rg[i].ms, 0.0) << i;
    sum += rg[i].ms;
  }
  EXPECT_LE(sum, wg);
  EXPECT_LE(std::fabs(lg - lc), 1e-6 * (1 + std::fabs(lc)))
      << "cuda " << lg << ", cpu " << lc;
  EXPECT_EQ(tcc_steps_done(gpu), 2);
  tcc_session_close(cpu);
  tcc_session_close(gpu);
}

TEST_F(CudaProfile, TrainsAsTheGraphReplayDoes) {
  TempDir dir("cuda-profile-graphs");
  writeRegressionArtifact(dir);
  tcc_session *replayed = openRegression(dir, "cuda"), *profiled = openRegression(dir, "cuda");
  ASSERT_TRUE(replayed && profiled);
  for (int t = 0; t < 4; ++t) {
    double a = -1, b = -2, wall = 0;
    ASSERT_EQ(tcc_train_step(replayed, &a), TCC_OK) << tcc_last_error();
    if (t == 1)
      profile(profiled, b, wall);
    else
      ASSERT_EQ(tcc_train_step(profiled, &b), TCC_OK) << tcc_last_error();
    EXPECT_EQ(a, b) << "step " << t;
  }
  EXPECT_EQ(state(replayed), state(profiled));
  tcc_session_close(replayed);
  tcc_session_close(profiled);
}

} // namespace
} // namespace tcc::gputest
