//===- dp.h - the data-parallel module: MPI groups and the world -*- C++
//-*-===//
//
// Everything that touches MPI lives behind this header, in dp_mpi.cpp (built
// when CMake finds MPI) or dp_none.cpp (a runtime without MPI: one process,
// and a clear refusal of anything more). The CPU backend all-reduces through
// a Group; the runtime CLI (runtime/run) joins the job mpirun started
// through the world functions.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_DP_H
#define TCC_RUNTIME_EXEC_DP_H

#include "data/npz.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt::dp {

/// Whether this runtime was built with MPI.
bool haveMpi();

/// The ranks of a session's MPI communicator, reducing tensors in place.
class Group {
public:
  virtual ~Group() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Starts the sum over the ranks of `elements` values of `dtype` at `buf`
  /// in place (MPI_Iallreduce); divided by the number of ranks when `mean`,
  /// once waitAll() returns. `what` names it in a timeout message.
  virtual void start(uint8_t *buf, int64_t elements, data::DType dtype,
                     bool mean, const std::string &what) = 0;
  /// Starts the sum over the ranks of the `elements` values of `dtype` at
  /// `buf` (divided by the number of ranks when `mean`), of which this rank
  /// keeps its slice (zero.h's sliceOf): once waitAll() returns, `buf`
  /// holds the reduced slice in place and zeros elsewhere
  /// (MPI_Ireduce_scatter). ZeRO-1's gradient reduction.
  virtual void startScatter(uint8_t *buf, int64_t elements, data::DType dtype,
                            bool mean, const std::string &what) = 0;
  /// Starts gathering `buf` in place (MPI_Iallgatherv of bytes): rank r
  /// holds bytes [offsets[r], offsets[r] + counts[r]) and, once waitAll()
  /// returns, every rank holds every rank's. ZeRO-1's parameter gather.
  virtual void startGather(uint8_t *buf, const std::vector<int64_t> &offsets,
                           const std::vector<int64_t> &counts,
                           const std::string &what) = 0;
  /// Starts sending `counts[rank]` bytes at `mine` to rank 0, where they
  /// land at `all` + offsets[rank] once waitAll() returns (MPI_Igatherv;
  /// `all` is only read on rank 0). ZeRO-1's checkpoint of the state.
  virtual void startGatherToRoot(const uint8_t *mine, uint8_t *all,
                                 const std::vector<int64_t> &offsets,
                                 const std::vector<int64_t> &counts,
                                 const std::string &what) = 0;
  /// Lets started reductions progress without waiting (MPI_Testall).
  virtual void progress() = 0;
  virtual bool pending() const = 0;
  /// Waits for every started reduction and gather. TCC_ERROR_BACKEND naming the
  /// reduction when it has not finished after the timeout (a rank died or
  /// hangs).
  virtual void waitAll() = 0;
};

/// A group over the MPI_Comm `comm` points to; `timeoutSeconds` <= 0 waits
/// forever. TCC_ERROR_BACKEND without MPI.
std::unique_ptr<Group> openGroup(void *comm, double timeoutSeconds);

/// Whether `dtype` can be all-reduced (f32, f64, i32, i64: MPI has no
/// 16-bit float sum).
inline bool reducible(data::DType dtype) {
  return dtype == data::DType::F32 || dtype == data::DType::F64 ||
         dtype == data::DType::I32 || dtype == data::DType::I64;
}

/// The job this process is a rank of.
struct World {
  int rank = 0, size = 1;
  /// Points to the world's MPI_Comm (null for a process mpirun did not
  /// start): a session's communicator.
  void *comm = nullptr;
};

/// Joins the job mpirun started this process in (Open MPI's or PMI's
/// environment says so), or a world of one. A launched process in a
/// runtime without MPI is an error (data::Error).
World joinWorld();
/// Leaves the job (MPI_Finalize) after a normal end.
void leaveWorld();
/// Ends every rank of the job (MPI_Abort) after this rank's error: others
/// may be waiting in a collective for it.
[[noreturn]] void abortWorld(int status);
/// Whether every rank passed the same `text`.
bool sameOnAllRanks(const std::string &text);
/// Overwrites `bytes` at `buf` with rank 0's (MPI_Bcast; nothing in a
/// world of one): NCCL's unique id travels so.
void broadcastFromRank0(void *buf, size_t bytes);

} // namespace tcc::rt::dp

#endif // TCC_RUNTIME_EXEC_DP_H
