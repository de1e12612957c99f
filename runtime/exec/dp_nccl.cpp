//===- dp_nccl.cpp - the data-parallel module on CUDA over NCCL -----------===//
//
// The only file of the runtime that includes nccl.h. start() forks the
// communication stream off the compute stream with an event and enqueues
// ncclAllReduce there; join() records an event on the communication stream
// for the compute stream to wait on. Both are stream-ordered, so the CUDA
// backend captures them into its graphs like any step. synchronize() polls
// the compute stream and ncclCommGetAsyncError until the step is done, and
// aborts the communicator after the collective timeout.
//
// libnccl.so.2 is loaded when the first communicator is made or opened
// (dlopen; the header is needed to build, the library only to run on
// several GPUs), so a runtime built with NCCL support still starts and
// trains one process on a machine without it.
//
//===----------------------------------------------------------------------===//

#include "exec/dp_nccl.h"

#include "exec/zero.h"
#include "plan/plan.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <type_traits>

namespace tcc::rt::dp {

namespace {

/// The NCCL functions used here, from libnccl.so.2.
struct Api {
  decltype(&::ncclGetUniqueId) getUniqueId;
  decltype(&::ncclCommInitRank) commInitRank;
  decltype(&::ncclCommDestroy) commDestroy;
  decltype(&::ncclCommAbort) commAbort;
  decltype(&::ncclCommGetAsyncError) commGetAsyncError;
  decltype(&::ncclCommUserRank) commUserRank;
  decltype(&::ncclCommCount) commCount;
  decltype(&::ncclAllReduce) allReduce;
  decltype(&::ncclReduce) reduce;
  decltype(&::ncclBroadcast) broadcast;
  decltype(&::ncclSend) send;
  decltype(&::ncclRecv) recv;
  decltype(&::ncclGroupStart) groupStart;
  decltype(&::ncclGroupEnd) groupEnd;
  decltype(&::ncclGetErrorString) getErrorString;
};

/// The loaded API; data::Error naming the library or the missing symbol.
const Api &nccl() {
  static const Api api = [] {
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      throw data::Error(std::string("cannot load NCCL (libnccl.so.2): ") +
                        dlerror());
    auto sym = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(lib, name));
      if (!fn)
        throw data::Error(std::string("libnccl.so.2 has no ") + name);
    };
    Api a{};
    sym(a.getUniqueId, "ncclGetUniqueId");
    sym(a.commInitRank, "ncclCommInitRank");
    sym(a.commDestroy, "ncclCommDestroy");
    sym(a.commAbort, "ncclCommAbort");
    sym(a.commGetAsyncError, "ncclCommGetAsyncError");
    sym(a.commUserRank, "ncclCommUserRank");
    sym(a.commCount, "ncclCommCount");
    sym(a.allReduce, "ncclAllReduce");
    sym(a.reduce, "ncclReduce");
    sym(a.broadcast, "ncclBroadcast");
    sym(a.send, "ncclSend");
    sym(a.recv, "ncclRecv");
    sym(a.groupStart, "ncclGroupStart");
    sym(a.groupEnd, "ncclGroupEnd");
    sym(a.getErrorString, "ncclGetErrorString");
    return a;
  }();
  return api;
}

[[noreturn]] void cudaFailed(cudaError_t e, const std::string &what) {
  fail(TCC_ERROR_BACKEND, "NCCL group: " + what + ": " + cudaGetErrorString(e));
}

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    cudaFailed(e, what);
}

ncclDataType_t ncclType(data::DType dtype) {
  switch (dtype) {
  case data::DType::F32:
    return ncclFloat32;
  case data::DType::F64:
    return ncclFloat64;
  case data::DType::I32:
    return ncclInt32;
  case data::DType::I64:
    return ncclInt64;
  case data::DType::BF16:
    return ncclBfloat16;
  case data::DType::F16:
    return ncclFloat16;
  default:
    fail(TCC_ERROR_BACKEND, "cannot all-reduce " +
                                std::string(data::dtypeName(dtype)) +
                                " over NCCL");
  }
}

class Nccl final : public NcclGroup {
public:
  Nccl(ncclComm_t comm, double timeout) : comm(comm), timeout(timeout) {
    nccl().commUserRank(comm, &me);
    nccl().commCount(comm, &ranks);
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
          "cudaStreamCreateWithFlags");
    check(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming),
          "cudaEventCreate");
    check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
          "cudaEventCreate");
  }
  ~Nccl() override {
    cudaStreamSynchronize(stream);
    cudaEventDestroy(forked);
    cudaEventDestroy(done);
    cudaStreamDestroy(stream);
  }
  int rank() const override { return me; }
  int size() const override { return ranks; }

  void start(void *buf, int64_t elements, data::DType dtype, bool mean,
             void *compute) override {
    fork(compute);
    ok(nccl().allReduce(buf, buf, size_t(elements), ncclType(dtype),
                        mean ? ncclAvg : ncclSum, comm, stream),
       "ncclAllReduce");
  }

  void startScatter(void *buf, int64_t elements, data::DType dtype, bool mean,
                    void *compute) override {
    fork(compute);
    auto *bytes = static_cast<uint8_t *>(buf);
    size_t size = data::dtypeSize(dtype);
    ok(nccl().groupStart(), "ncclGroupStart");
    for (int q = 0; q < ranks; ++q) {
      Slice s = sliceOf(elements, q, ranks);
      if (s.count == 0)
        continue;
      uint8_t *at = bytes + size_t(s.first) * size;
      ok(nccl().reduce(at, at, size_t(s.count), ncclType(dtype),
                       mean ? ncclAvg : ncclSum, q, comm, stream),
         "ncclReduce");
    }
    ok(nccl().groupEnd(), "ncclGroupEnd");
    // The other ranks' slices still hold this rank's own gradient.
    Slice mine = sliceOf(elements, me, ranks);
    size_t first = size_t(mine.first) * size, end = first + size_t(mine.count) * size;
    if (first > 0)
      check(cudaMemsetAsync(bytes, 0, first, stream), "cudaMemsetAsync");
    if (size_t(elements) * size > end)
      check(cudaMemsetAsync(bytes + end, 0, size_t(elements) * size - end,
                            stream),
            "cudaMemsetAsync");
  }

  void startGather(void *buf, const std::vector<int64_t> &offsets,
                   const std::vector<int64_t> &counts, void *compute) override {
    fork(compute);
    auto *bytes = static_cast<uint8_t *>(buf);
    ok(nccl().groupStart(), "ncclGroupStart");
    for (int q = 0; q < ranks; ++q)
      if (counts[size_t(q)] > 0) {
        uint8_t *at = bytes + offsets[size_t(q)];
        ok(nccl().broadcast(at, at, size_t(counts[size_t(q)]), ncclUint8, q,
                            comm, stream),
           "ncclBroadcast");
      }
    ok(nccl().groupEnd(), "ncclGroupEnd");
  }

  void startSend(const void *buf, size_t bytes, int peer,
                 void *compute) override {
    fork(compute);
    ok(nccl().send(buf, bytes, ncclUint8, peer, comm, stream), "ncclSend");
  }

  void startRecv(void *buf, size_t bytes, int peer, void *compute) override {
    fork(compute);
    ok(nccl().recv(buf, bytes, ncclUint8, peer, comm, stream), "ncclRecv");
  }

  void join(void *compute) override {
    if (!pending)
      return;
    check(cudaEventRecord(done, stream), "cudaEventRecord");
    check(cudaStreamWaitEvent(static_cast<cudaStream_t>(compute), done, 0),
          "cudaStreamWaitEvent");
    pending = false;
  }

  void synchronize(void *compute, const std::string &what) override {
    using Clock = std::chrono::steady_clock;
    auto c = static_cast<cudaStream_t>(compute);
    Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(timeout));
    for (int spins = 0;; ++spins) {
      cudaError_t e = cudaStreamQuery(c);
      if (e == cudaSuccess)
        return;
      if (e != cudaErrorNotReady)
        cudaFailed(e, what);
      ncclResult_t async = ncclSuccess;
      nccl().commGetAsyncError(comm, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        nccl().commAbort(comm);
        fail(TCC_ERROR_BACKEND,
             "rank " + std::to_string(me) + " of " + std::to_string(ranks) +
                 ": " + what + ": NCCL error: " + nccl().getErrorString(async));
      }
      if (timeout > 0 && Clock::now() > deadline) {
        nccl().commAbort(comm);
        fail(TCC_ERROR_BACKEND,
             "rank " + std::to_string(me) + " of " + std::to_string(ranks) +
                 ": " + what + " did not finish within the collective " +
                 "timeout of " + std::to_string(int(timeout)) +
                 " s (another rank died or hangs)");
      }
      if (spins > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

private:
  /// Orders the communication stream after the work enqueued so far on
  /// `compute`.
  void fork(void *compute) {
    check(cudaEventRecord(forked, static_cast<cudaStream_t>(compute)),
          "cudaEventRecord");
    check(cudaStreamWaitEvent(stream, forked, 0), "cudaStreamWaitEvent");
    pending = true;
  }
  void ok(ncclResult_t r, const char *call) {
    if (r != ncclSuccess)
      fail(TCC_ERROR_BACKEND, "rank " + std::to_string(me) + ": " + call +
                                  ": " + nccl().getErrorString(r));
  }

  ncclComm_t comm;
  double timeout;
  int me = 0, ranks = 1;
  cudaStream_t stream = nullptr;
  cudaEvent_t forked = nullptr, done = nullptr;
  bool pending = false;
};

} // namespace

bool haveNccl() { return true; }

std::unique_ptr<NcclGroup> openNcclGroup(void *comm, double timeoutSeconds) {
  try {
    nccl();
  } catch (const data::Error &e) {
    fail(TCC_ERROR_BACKEND, std::string("TCC_COMMUNICATOR_NCCL: ") + e.what());
  }
  return std::make_unique<Nccl>(static_cast<ncclComm_t>(comm), timeoutSeconds);
}

void *createNcclComm(int rank, int ranks, int device,
                     const std::function<void(void *, size_t)> &shareId) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank == 0)
    if (ncclResult_t r = nccl().getUniqueId(&id); r != ncclSuccess)
      throw data::Error(std::string("ncclGetUniqueId: ") +
                        nccl().getErrorString(r));
  shareId(&id, sizeof id);
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
    throw data::Error("cudaSetDevice(" + std::to_string(device) +
                      "): " + cudaGetErrorString(e));
  ncclComm_t comm = nullptr;
  if (ncclResult_t r = nccl().commInitRank(&comm, ranks, id, rank);
      r != ncclSuccess)
    throw data::Error("rank " + std::to_string(rank) + " of " +
                      std::to_string(ranks) + ": ncclCommInitRank on device " +
                      std::to_string(device) + ": " + nccl().getErrorString(r));
  return comm;
}

void destroyNcclComm(void *comm) {
  if (comm)
    nccl().commDestroy(static_cast<ncclComm_t>(comm));
}

} // namespace tcc::rt::dp
