//===- dp_estimate.h - `tcc inspect --data-parallel N` ----------*- C++ -*-===//
//
// The scaling estimate of a data-parallel artifact on N ranks: from
// train_step's plan (each gradient bucket's all_reduce, its bytes and where
// it sits) and the time of every plan step on one rank (measured by `tcc
// run --profile-json`, or the GPU cost model's), a replay of one step:
//
//   - the compute steps run one after another (T1: their sum);
//   - a bucket's ring all-reduce takes 2 (N - 1) / N * bytes / link and
//     starts when the compute before it is done and the previous bucket's
//     all-reduce has finished (one link, one communication stream);
//   - a compute step that reads a reduced gradient waits for its bucket.
//
// The step on N ranks takes T1 + exposed, `exposed` the time compute waits
// for communication (the part of each all-reduce no compute runs beside);
// the scaling efficiency is T1 / (T1 + exposed). A second replay gives the
// step under ZeRO-1: the gradients reduce-scattered ((N - 1) / N of their
// bytes), the gradient norm's partial sum all-reduced, then the parameter
// gather after the update, which nothing overlaps. Latency per message and
// the link's sharing by several ranks of a machine are not modelled
// (docs/data-parallel.md compares the estimate with measured CPU runs).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_DP_ESTIMATE_H
#define TCC_RUNTIME_EXEC_DP_ESTIMATE_H

#include "api/tcc_runtime.h"

#include <ostream>
#include <string>
#include <vector>

namespace tcc::rt {

struct GpuSpec;

struct DpEstimateOptions {
  int ranks = 2;
  /// The link's rate in Gbit/s (1e9 bits per second).
  double linkGbps = 0;
  /// Measured: ms per train_step plan step, indexed as the plan's steps
  /// (run/profile.h readProfileJson), and the file they come from. Empty:
  /// the cost model on `gpu`.
  std::vector<double> measuredMs;
  std::string measuredFrom;
  const GpuSpec *gpu = nullptr;
  bool tf32 = false;
};

/// Prints the estimate for artifact `dir` to `out`. TCC_OK, or a status
/// with `error` set to one line (an artifact without all_reduce steps, a
/// profile of another plan).
tcc_status inspectDataParallel(const std::string &dir,
                               const DpEstimateOptions &options,
                               std::ostream &out, std::string &error);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_DP_ESTIMATE_H
