// tcc_session_options on the cuda backend, on the linear-regression artifact
// of CudaTestArtifact.h: the device ordinal (refused past the device count;
// the session's memory on that device; the caller's current device left as
// it was), the caller's stream (the steps, CUDA graphs included, run on it,
// give the numbers of a session on its own stream, and it survives the
// session; refused when it is the legacy stream or being captured), and the
// allocator hook with device memory (every buffer through it, all given
// back, the same numbers; a NULL a TCC_ERROR_MEMORY naming the buffer).
// Bit-exact comparisons: the same backend and device on both sides.
// Without a GPU every test prints "no CUDA device: skipped" and skips.
#include "CudaTestArtifact.h"
#include "GpuTestUtil.h"

#include "../runtime/CountingAllocator.h"

#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace tcc::gputest {
namespace {

using namespace rttest;
using CudaOptions = GpuTest;

tcc_session_options cudaOptions(int32_t device = 0) {
  tcc_session_options o;
  tcc_session_options_init(&o);
  o.backend = "cuda";
  o.device = device;
  return o;
}

int deviceCount() {
  int n = 0;
  check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
  return n;
}

int currentDevice() {
  int d = -1;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

/// 0xAB-filled device memory from cudaMalloc (256-byte aligned), ready for
/// any stream as tcc_allocator asks: the fill (on the legacy stream, which a
/// session's non-blocking stream does not wait for) has finished.
void *deviceAlloc(size_t bytes, size_t) {
  void *p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess)
    return nullptr;
  check(cudaMemset(p, 0xAB, bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return p;
}
void deviceFree(void *p) { cudaFree(p); }

/// The regression trained with `o` on a session of `dir`; empty (after a
/// test failure) when it does not open.
std::vector<double> trainWith(const TempDir &dir,
                              const tcc_session_options &o) {
  tcc_session *s = nullptr;
  EXPECT_EQ(tcc_session_open(dir.path.c_str(), &o, &s), TCC_OK)
      << tcc_last_error();
  if (!s)
    return {};
  std::vector<double> out = trainRegression(s);
  tcc_session_close(s);
  return out;
}

TEST_F(CudaOptions, AnOrdinalPastTheDevicesIsRefused) {
  TempDir dir("cuda-options-ordinal");
  writeRegressionArtifact(dir);
  int n = deviceCount();
  tcc_session_options o = cudaOptions(n);
  tcc_session *s = nullptr;
  EXPECT_EQ(tcc_session_open(dir.path.c_str(), &o, &s), TCC_ERROR_ARGUMENT);
  EXPECT_EQ(s, nullptr);
  std::string want = "backend 'cuda': device " + std::to_string(n) +
                     " does not exist: this machine has " + std::to_string(n) +
                     " CUDA device";
  EXPECT_EQ(std::string(tcc_last_error()).rfind(want, 0), 0u)
      << tcc_last_error();
}

TEST_F(CudaOptions, RunsOnItsDeviceAndLeavesTheCallersCurrent) {
  TempDir dir("cuda-options-device");
  writeRegressionArtifact(dir);
  int n = deviceCount();
  std::vector<double> want = trainWith(dir, cudaOptions(0));
  ASSERT_FALSE(want.empty());
  for (int device : {0, n - 1}) {
    // The caller works on another device when there is one.
    int caller = (device + 1) % n;
    check(cudaSetDevice(caller), "cudaSetDevice");
    CountingAllocator counter(deviceAlloc, deviceFree);
    tcc_session_options o = cudaOptions(device);
    o.allocator = counter.hook();
    tcc_session *s = nullptr;
    ASSERT_EQ(tcc_session_open(dir.path.c_str(), &o, &s), TCC_OK)
        << tcc_last_error();
    EXPECT_EQ(currentDevice(), caller) << "after open";
    for (const auto &block : counter.live) {
      cudaPointerAttributes attributes;
      check(cudaPointerGetAttributes(&attributes, block.first),
            "cudaPointerGetAttributes");
      EXPECT_EQ(attributes.device, device);
      EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
    }
    std::vector<double> got = trainRegression(s);
    EXPECT_EQ(currentDevice(), caller) << "after the steps";
    tcc_session_close(s);
    EXPECT_EQ(currentDevice(), caller) << "after close";
    // Devices of one machine may differ; device 0 gives `want` bit for bit.
    if (device == 0)
      EXPECT_EQ(got, want);
    else
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-6 * (1 + std::fabs(want[i]))) << i;
  }
  check(cudaSetDevice(0), "cudaSetDevice");
}

TEST_F(CudaOptions, StepsAndGraphsRunOnTheCallersStream) {
  TempDir dir("cuda-options-stream");
  writeRegressionArtifact(dir);
  std::vector<double> own = trainWith(dir, cudaOptions());
  ASSERT_FALSE(own.empty());
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "cudaStreamCreate");
  tcc_session_options o = cudaOptions();
  o.stream = stream;
  EXPECT_EQ(trainWith(dir, o), own) << "graphs captured on the stream";
  ::setenv("TCC_CUDA_GRAPHS", "0", 1);
  EXPECT_EQ(trainWith(dir, o), own) << "eager on the stream";
  ::unsetenv("TCC_CUDA_GRAPHS");
  // The closed sessions left the stream alone.
  EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);

  // A step inside the caller's own capture of the stream is refused, and
  // the session works once the capture has ended.
  tcc_session *s = nullptr;
  ASSERT_EQ(tcc_session_open(dir.path.c_str(), &o, &s), TCC_OK)
      << tcc_last_error();
  bindRegression(s);
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed),
        "cudaStreamBeginCapture");
  double loss = -1;
  EXPECT_EQ(tcc_train_step(s, &loss), TCC_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tcc_last_error()).find("being captured"),
            std::string::npos)
      << tcc_last_error();
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  if (graph)
    cudaGraphDestroy(graph);
  EXPECT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
  EXPECT_EQ(loss, own[0]);
  EXPECT_EQ(tcc_steps_done(s), 1);
  tcc_session_close(s);
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

TEST_F(CudaOptions, StreamsGraphsCannotUseAreRefused) {
  TempDir dir("cuda-options-bad-stream");
  writeRegressionArtifact(dir);
  tcc_session_options o = cudaOptions();
  o.stream = cudaStreamLegacy;
  tcc_session *s = nullptr;
  EXPECT_EQ(tcc_session_open(dir.path.c_str(), &o, &s), TCC_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tcc_last_error()).find("legacy default stream"),
            std::string::npos)
      << tcc_last_error();
  if (deviceCount() < 2)
    return;
  check(cudaSetDevice(1), "cudaSetDevice");
  cudaStream_t other = nullptr;
  check(cudaStreamCreate(&other), "cudaStreamCreate");
  check(cudaSetDevice(0), "cudaSetDevice");
  o.stream = other;
  EXPECT_EQ(tcc_session_open(dir.path.c_str(), &o, &s), TCC_ERROR_ARGUMENT);
  EXPECT_EQ(std::string(tcc_last_error()),
            "backend 'cuda': tcc_session_options.stream belongs to device 1, "
            "the session's device is 0");
  cudaStreamDestroy(other);
}

TEST_F(CudaOptions, DeviceMemoryComesFromTheAllocatorHook) {
  TempDir dir("cuda-options-hook");
  writeRegressionArtifact(dir);
  std::vector<double> byDefault = trainWith(dir, cudaOptions());
  ASSERT_FALSE(byDefault.empty());
  CountingAllocator counter(deviceAlloc, deviceFree);
  tcc_session_options o = cudaOptions();
  o.allocator = counter.hook();
  tcc_session *s = nullptr;
  ASSERT_EQ(tcc_session_open(dir.path.c_str(), &o, &s), TCC_OK)
      << tcc_last_error();
  tcc_memory_info mem;
  ASSERT_EQ(tcc_memory(s, &mem), TCC_OK);
  // tcc_memory's buffers and the step counter, and the backend's own on top
  // (argument arrays, workspace, error words).
  EXPECT_GT(counter.bytes, size_t(mem.total_bytes) + 8);
  EXPECT_EQ(counter.kinds, std::set<int>{TCC_MEMORY_DEVICE});
  EXPECT_EQ(counter.alignments, std::set<size_t>{256});
  uint32_t momentum = 1;
  ASSERT_EQ(tcc_read_opt_state(s, "b.momentum_buffer", &momentum, 4), TCC_OK);
  EXPECT_EQ(momentum, 0u) << "the session clears the hook's memory";
  EXPECT_EQ(trainRegression(s), byDefault);
  tcc_session_close(s);
  EXPECT_TRUE(counter.live.empty()) << counter.live.size() << " not freed";
  EXPECT_EQ(counter.frees, counter.allocs);
  EXPECT_EQ(counter.badFrees, 0);
}

TEST_F(CudaOptions, AFailingDeviceAllocatorIsAMemoryErrorNamingTheBuffer) {
  TempDir dir("cuda-options-fail");
  writeRegressionArtifact(dir);
  CountingAllocator counter(deviceAlloc, deviceFree);
  tcc_session_options o = cudaOptions();
  o.allocator = counter.hook();
  tcc_session *s = nullptr;
  ASSERT_EQ(tcc_session_open(dir.path.c_str(), &o, &s), TCC_OK)
      << tcc_last_error();
  tcc_memory_info mem;
  ASSERT_EQ(tcc_memory(s, &mem), TCC_OK);
  tcc_session_close(s);
  bool arenaNamed = false;
  for (int64_t k = 0; k < counter.allocs; ++k) {
    CountingAllocator failing(deviceAlloc, deviceFree);
    failing.failAt = k;
    o.allocator = failing.hook();
    EXPECT_EQ(tcc_session_open(dir.path.c_str(), &o, &s), TCC_ERROR_MEMORY)
        << k;
    EXPECT_EQ(s, nullptr);
    std::string message = tcc_last_error();
    EXPECT_NE(message.find(": the session's tcc_allocator returned NULL"),
              std::string::npos)
        << message;
    arenaNamed |= message == "cannot allocate " +
                                 std::to_string(mem.arena_bytes) +
                                 " bytes of device memory for the arena: the "
                                 "session's tcc_allocator returned NULL";
    EXPECT_TRUE(failing.live.empty()) << k << ": " << message;
    EXPECT_EQ(failing.badFrees, 0);
  }
  EXPECT_TRUE(arenaNamed);
}

} // namespace
} // namespace tcc::gputest
