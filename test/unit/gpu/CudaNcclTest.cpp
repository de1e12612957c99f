// The CUDA backend's collectives over NCCL (runtime/exec/dp_nccl.cpp) at
// world size 1, the most one GPU can test (NCCL refuses two ranks on one
// device): the linear regression with its gradients all-reduced (mean) on
// NCCL's stream trains bit-identically to the regression without the
// all-reduce and without a communicator (the mean over one rank is the
// value), with CUDA graphs and without; and so it does under ZeRO-1 with
// the gradients marked for reduce-scattering (one ncclReduce of the whole
// slice, the update of a slice that is the whole tensor, one ncclBroadcast
// of the parameters). No MPI: the communicator's unique id stays in the
// process. Without a GPU: "no CUDA device: skipped"; in a
// runtime built without NCCL: "runtime built without NCCL: skipped"; without
// libnccl.so.2 on the machine: "cannot load NCCL ...: skipped".
#include "CudaTestArtifact.h"
#include "GpuTestUtil.h"

#include "../runtime/CollectiveArtifact.h"

#include "exec/dp_nccl.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tcc::gputest {
namespace {

using namespace rttest;
using CudaNccl = GpuTest;

/// w and b after 3 steps of the artifact in `dir` on "cuda", through the
/// NCCL communicator `comm` when not null, at ZeRO stage `zero`.
std::vector<float> trained(const TempDir &dir, void *comm, int zero = 0) {
  tcc_session_options o;
  tcc_session_options_init(&o);
  o.backend = "cuda";
  if (comm) {
    o.communicator_kind = TCC_COMMUNICATOR_NCCL;
    o.communicator = comm;
    o.collective_timeout_s = 60;
    o.zero_stage = zero;
  }
  tcc_session *s = nullptr;
  EXPECT_EQ(tcc_session_open(dir.path.c_str(), &o, &s), TCC_OK)
      << tcc_last_error();
  if (!s)
    return {};
  bindRegression(s);
  for (int t = 0; t < 3; ++t)
    EXPECT_EQ(tcc_train_step(s, nullptr), TCC_OK) << tcc_last_error();
  std::vector<float> out = readParam<float>(s, "w", 3);
  out.push_back(readParam<float>(s, "b", 1)[0]);
  tcc_session_close(s);
  return out;
}

TEST_F(CudaNccl, WorldOfOneTrainsLikeNoCommunicator) {
  if (!rt::dp::haveNccl()) {
    std::printf("runtime built without NCCL: skipped\n");
    GTEST_SKIP() << "runtime built without NCCL";
  }
  TempDir plain("nccl-plain"), reduced("nccl-reduced"), zero("nccl-zero");
  writeRegressionArtifact(plain);
  TestArtifact a = allReducedRegression();
  a.manifest["files"]["cuda_kernels"] = "kernels/kernels.fatbin";
  a.write(reduced.path);
  installTestFatbin(reduced);
  a.fn("train_step")["steps"][7]["gradients"] = 2;
  a.write(zero.path);
  installTestFatbin(zero);
  void *comm = nullptr;
  try {
    comm = rt::dp::createNcclComm(0, 1, 0, [](void *, size_t) {});
  } catch (const data::Error &e) {
    if (std::strstr(e.what(), "cannot load NCCL")) { // not tcc's to test
      std::printf("%s: skipped\n", e.what());
      GTEST_SKIP() << e.what();
    }
    FAIL() << e.what();
  }
  ASSERT_NE(comm, nullptr);
  std::vector<float> want = trained(plain, nullptr);
  std::vector<float> got = trained(reduced, comm);
  std::vector<float> sharded = trained(zero, comm, 1);
  setenv("TCC_CUDA_GRAPHS", "0", 1);
  std::vector<float> eager = trained(reduced, comm);
  unsetenv("TCC_CUDA_GRAPHS");
  rt::dp::destroyNcclComm(comm);
  ASSERT_EQ(want.size(), 4u);
  ASSERT_EQ(got.size(), 4u);
  ASSERT_EQ(eager.size(), 4u);
  ASSERT_EQ(sharded.size(), 4u);
  EXPECT_EQ(std::memcmp(want.data(), sharded.data(), 16), 0)
      << "ZeRO-1: w0 " << sharded[0] << " vs " << want[0];
  EXPECT_EQ(std::memcmp(want.data(), got.data(), 16), 0)
      << "graphs: w0 " << got[0] << " vs " << want[0];
  EXPECT_EQ(std::memcmp(want.data(), eager.data(), 16), 0)
      << "eager: w0 " << eager[0] << " vs " << want[0];
}

} // namespace
} // namespace tcc::gputest
