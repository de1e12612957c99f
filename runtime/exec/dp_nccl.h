//===- dp_nccl.h - the data-parallel module on CUDA: NCCL -------*- C++ -*-===//
//
// Everything that touches NCCL lives behind this header, in dp_nccl.cpp
// (built when CMake finds nccl.h beside the CUDA toolkit; it loads
// libnccl.so.2 when a communicator is first made or opened) or
// dp_nccl_none.cpp (a runtime without NCCL: a clear refusal). The CUDA
// backend all-reduces through an NcclGroup on a communication stream of its
// own, ordered against the compute stream by events, so a bucket's
// reduction overlaps the rest of backward (and both are captured into the
// backend's CUDA graphs); tcc-run makes the communicator.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_DP_NCCL_H
#define TCC_RUNTIME_EXEC_DP_NCCL_H

#include "data/npz.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt::dp {

/// Whether this runtime was built with NCCL.
bool haveNccl();

/// The ranks of an ncclComm_t, reducing device tensors in place. Streams
/// are cudaStream_t, passed as void * (no CUDA header here).
class NcclGroup {
public:
  virtual ~NcclGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Enqueues the sum (`mean`: the average) over the ranks of `elements`
  /// values of `dtype` at device address `buf`, in place, on the
  /// communication stream, after the work enqueued so far on `compute`.
  virtual void start(void *buf, int64_t elements, data::DType dtype, bool mean,
                     void *compute) = 0;
  /// ZeRO-1's reduce-scatter: the same sum (or average) over the ranks,
  /// of which this rank keeps its slice (zero.h's sliceOf) in place and
  /// zeros elsewhere (one ncclReduce per slice, to its rank, in a group).
  virtual void startScatter(void *buf, int64_t elements, data::DType dtype,
                            bool mean, void *compute) = 0;
  /// ZeRO-1's gather in place: rank r holds bytes [offsets[r], offsets[r] +
  /// counts[r]) of `buf`; once joined every rank holds every rank's (one
  /// ncclBroadcast per slice, from its rank, in a group).
  virtual void startGather(void *buf, const std::vector<int64_t> &offsets,
                           const std::vector<int64_t> &counts,
                           void *compute) = 0;
  /// Point to point: `bytes` at `buf` to rank `peer`, or from it into
  /// `buf` (ncclSend / ncclRecv; the peer calls the other).
  virtual void startSend(const void *buf, size_t bytes, int peer,
                         void *compute) = 0;
  virtual void startRecv(void *buf, size_t bytes, int peer, void *compute) = 0;
  /// Makes `compute` wait for every reduction started so far.
  virtual void join(void *compute) = 0;
  /// Waits until `compute` has finished, polling NCCL's asynchronous error;
  /// an NCCL error, or `timeout` seconds passing (another rank died or
  /// hangs), aborts the communicator and fails (TCC_ERROR_BACKEND) naming
  /// `what`.
  virtual void synchronize(void *compute, const std::string &what) = 0;
};

/// A group over the ncclComm_t `comm`; `timeoutSeconds` <= 0 waits
/// forever. Makes its stream and events on the current device.
/// TCC_ERROR_BACKEND without NCCL.
std::unique_ptr<NcclGroup> openNcclGroup(void *comm, double timeoutSeconds);

/// A communicator of rank `rank` of `ranks` on CUDA device `device` (an
/// ncclComm_t): rank 0 makes the unique id and `shareId(bytes, size)` hands
/// its bytes to every rank (MPI_Bcast; nothing to do for one rank).
/// data::Error naming the NCCL call that failed, or without NCCL.
void *createNcclComm(int rank, int ranks, int device,
                     const std::function<void(void *, size_t)> &shareId);
/// Destroys a communicator createNcclComm made (null: nothing).
void destroyNcclComm(void *comm);

} // namespace tcc::rt::dp

#endif // TCC_RUNTIME_EXEC_DP_NCCL_H
