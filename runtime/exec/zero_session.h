//===- zero_session.h - a session's ZeRO-1 shards -------------*- C++ -*-===//
//
// What a session does differently under ZeRO-1 (tcc_session_options
// .zero_stage 1 with a communicator: MPI on the cpu backend, NCCL on
// cuda), kept out of session.cpp: which slice of each optimizer state this
// rank holds (zero.h decides), the per-step shards the backend runs the
// updates on, the gather of the parameters (and their working copies)
// after a step, and the gather of the whole state to rank 0 for a
// checkpoint. The backend moves the bytes (Backend::startGather...).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_ZERO_SESSION_H
#define TCC_RUNTIME_EXEC_ZERO_SESSION_H

#include "data/npz.h"
#include "exec/artifact.h"
#include "exec/backend.h"
#include "exec/zero.h"

#include <vector>

namespace tcc::rt {

class ZeroShards {
public:
  /// Plans `art`'s shards over the ranks of `backend`'s communicator
  /// (TCC_ERROR_FORMAT naming the step when the plan cannot be sharded;
  /// zero.h).
  ZeroShards(const Artifact &art, Backend &backend);

  int rank() const { return backend.rank(); }
  int ranks() const { return backend.ranks(); }

  /// Optimizer state i as this rank holds it: all of it, or its slice.
  Slice held(size_t i) const;

  /// Function f's FunctionBinding::shards (empty: nothing sharded).
  const std::vector<FunctionBinding::Shard> &stepShards(size_t f) const {
    return shards[f];
  }

  /// After function f ran: when it updated slices, every rank's slice of
  /// each updated parameter (and working copy) to every rank.
  void gatherAfter(size_t f, const std::vector<Mem> &params,
                   const std::vector<Mem> &working);

  /// The whole optimizer state for a checkpoint: every rank sends its
  /// slices to rank 0, whose arrays are whole; the others' are empty.
  std::vector<data::Array> stateSnapshot(const std::vector<Mem> &optState);

private:
  const Artifact &art;
  Backend &backend;
  /// [opt state] the elements of its parameter when it is sharded (this
  /// rank holds sliceOf(n, rank, ranks) of them), else -1.
  std::vector<int64_t> stateElements;
  /// [function] its FunctionBinding::shards.
  std::vector<std::vector<FunctionBinding::Shard>> shards;
  /// The parameters whose updates are sharded.
  std::vector<size_t> params;
};

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_ZERO_SESSION_H
