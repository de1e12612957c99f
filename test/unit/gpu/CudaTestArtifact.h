// The CUDA side of the hand-written test artifacts (test/unit/runtime/
// RuntimeTestUtil.h, CallArtifact.h): their kernels/kernels.fatbin, built
// by running nvcc (TCC_TEST_NVCC) on the same kernel source with the flags
// `tcc compile` uses, and the linear-regression and one-call artifacts
// with it. Shared by the CUDA backend, profile and working-copy tests.
#ifndef TCC_TEST_UNIT_GPU_CUDATESTARTIFACT_H
#define TCC_TEST_UNIT_GPU_CUDATESTARTIFACT_H

#include "../runtime/CallArtifact.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace tcc::gputest {

/// kernels.fatbin of rttest::kernelSource(), built once per test process;
/// "" (after a test failure) when nvcc fails.
inline std::string testFatbin() {
  static const std::string path = [] {
    std::string base = ::testing::TempDir() + "tcc_cuda_test_" +
                       std::to_string(::getpid());
    std::string cu = base + ".cu", out = base + ".fatbin";
    std::ofstream(cu) << rttest::kernelSource();
    std::string cmd = std::string("'") + TCC_TEST_NVCC +
                      "' -fatbin -std=c++17 --fmad=false"
                      " -gencode arch=compute_80,code=sm_80"
                      " -gencode arch=compute_90,code=sm_90"
                      " -gencode arch=compute_90,code=compute_90 -I'" +
                      TCC_KERNEL_INCLUDE_DIR + "' '" + cu + "' -o '" + out +
                      "'";
    int rc = std::system(cmd.c_str());
    rttest::fs::remove(cu);
    if (rc != 0) {
      ADD_FAILURE() << "cannot build the test fatbin: " << cmd;
      return std::string();
    }
    return out;
  }();
  return path;
}

/// Copies testFatbin() into the artifact written to `dir` (its manifest
/// names kernels/kernels.fatbin) and records the fatbin's size and SHA-256
/// in the manifest's integrity, as `tcc compile` does.
inline void installTestFatbin(const rttest::TempDir &dir) {
  std::string fb = testFatbin();
  ASSERT_FALSE(fb.empty());
  rttest::fs::copy_file(fb, dir / "kernels/kernels.fatbin",
                        rttest::fs::copy_options::overwrite_existing);
  rttest::reseal(dir.path);
}

/// The linear regression of RuntimeTestUtil.h with its fatbin, written to
/// `dir`.
inline void writeRegressionArtifact(const rttest::TempDir &dir) {
  rttest::TestArtifact a = rttest::linearRegression();
  a.manifest["files"]["cuda_kernels"] = "kernels/kernels.fatbin";
  a.write(dir.path);
  installTestFatbin(dir);
}

/// The one-call artifact of CallArtifact.h with kernels.fatbin in its
/// manifest (the caller copies testFatbin() there).
inline rttest::TestArtifact
cudaCallArtifact(const std::string &op, const rttest::json &attrs,
                 const std::vector<rttest::Array> &inputs,
                 const std::vector<rttest::CallResult> &results) {
  rttest::TestArtifact a = rttest::callArtifact(op, attrs, inputs, results);
  a.manifest["files"]["cuda_kernels"] = "kernels/kernels.fatbin";
  return a;
}

/// A session of the regression artifact in `dir` on `backend`, its inputs
/// bound; null (after a test failure) when it does not open.
inline tcc_session *openRegression(const rttest::TempDir &dir,
                                   const char *backend) {
  tcc_session *s = nullptr;
  EXPECT_EQ(rttest::openOn(dir.path, backend, &s), TCC_OK)
      << backend << ": " << tcc_last_error();
  if (s)
    rttest::bindRegression(s);
  return s;
}

} // namespace tcc::gputest

#endif // TCC_TEST_UNIT_GPU_CUDATESTARTIFACT_H
