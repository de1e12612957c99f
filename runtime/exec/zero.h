//===- zero.h - ZeRO-1: which optimizer state the ranks shard -*- C++ -*-===//
//
// Under ZeRO-1 (tcc_session_options.zero_stage 1, `tcc run --zero 1`) each
// of N ranks keeps 1/N of the optimizer state. The artifact is the same
// for any world size: the session decides at open which state is sharded
// (the operands an optimizer update reads: adamw_update's moments,
// sgd_update's momentum buffer) and where each rank's slice lies (rank q
// holds elements [n*q/N, n*(q+1)/N) of a parameter of n). Each update step
// then runs on its rank's slice and the parameters are gathered from the
// ranks after the step. Both the session and `tcc inspect --data-parallel N
// --zero 1` (the memory a rank holds) read these facts from here.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_ZERO_H
#define TCC_RUNTIME_EXEC_ZERO_H

#include "exec/artifact.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace tcc::rt {

/// Elements [first, first + count) of a tensor.
struct Slice {
  int64_t first = 0, count = 0;
};

/// Rank q of `ranks`'s slice of a tensor of n elements.
Slice sliceOf(int64_t n, int q, int ranks);

/// Every rank's slice of a tensor of n elements of `elemBytes` each, in
/// bytes: offsets[q], counts[q] (dp::Group's gathers take them so).
void sliceBytes(int64_t n, int ranks, size_t elemBytes,
                std::vector<int64_t> &offsets, std::vector<int64_t> &counts);

/// The (operand, result) indices of an optimizer update's state
/// (adamw_update's moments, sgd_update's momentum buffer); empty for any
/// other step.
std::vector<std::pair<size_t, size_t>> updateState(const Step &step);

struct ZeroPlan {
  /// [opt state] the elements of the parameter whose update reads it
  /// (sharded), or -1 (whole on every rank: a loss scale, its counters).
  std::vector<int64_t> stateElements;
  /// [function][step] the parameter's elements for an update step, -1 for
  /// the others; empty for a function without updates.
  std::vector<std::vector<int64_t>> stepElements;
  /// The parameters the updates write, gathered after a step.
  std::vector<size_t> params;
};

/// The partition of `art`. TCC_ERROR_FORMAT naming the step when a plan
/// cannot be sharded: an update whose parameter or state operand is not a
/// slot of its own, or another step reading sharded state or an update's
/// results.
ZeroPlan planZero(const Artifact &art);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_ZERO_H
