//===- profile.h - `tcc run --profile`: where a step's time goes -*- C++ -*-===//
//
// A profiled run takes its last step through tcc_profile_step
// (runtime/api/tcc_runtime.h) instead of tcc_train_step: the same optimizer
// step, with each plan step timed by the backend. Afterwards it prints the
// time per family of ops (GEMM, attention, generated kernels, optimizer,
// ...) and the slowest plan steps, and can write both as JSON for the
// benchmark (test/bench/gpt_bench.py).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_RUN_PROFILE_H
#define TCC_RUNTIME_RUN_PROFILE_H

#include "api/tcc_runtime.h"
#include "data/npz.h"

#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace tcc::run {

/// One profiled optimizer step.
struct StepProfile {
  std::string backend; ///< "cpu", "cuda"
  std::string notes;   ///< tcc_backend_notes (each line ends in "\n")
  int64_t step = 0;    ///< the step as the progress line counts it (1-based)
  double wallMs = 0;   ///< tcc_profile_step's wall time
  /// One per plan step, in plan order; names point into the session.
  std::vector<tcc_profile_record> records;
};

/// The time of one family of plan steps.
struct FamilyTime {
  std::string family;
  double ms = 0;
  int64_t count = 0;
};

/// The family a plan step's time is summed under: "generated kernels" for
/// every kernel step; "GEMM", "attention", "layer_norm", "softmax",
/// "cross_entropy", "embedding", "dropout" or "optimizer" for a library
/// call (an op and its gradient together); an op added later is its own.
std::string profileFamily(const tcc_profile_record &record);

/// The families of `profile`, the most time first.
std::vector<FamilyTime> familyTimes(const StepProfile &profile);

/// The report: a header naming the step and the backend, the backend's
/// notes (which library runs conv on cuda), the time per
/// family with the sum of the steps and the step's wall time, then the
/// `top` slowest plan steps and a line for the rest.
void printProfile(std::ostream &out, const StepProfile &profile, size_t top);

/// The profile as one JSON object (docs/user-guide.md, --profile-json).
void writeProfileJson(std::ostream &out, const StepProfile &profile);

/// Reads a writeProfileJson file back: the ms of each plan step, indexed
/// as the plan's steps (`tcc inspect --data-parallel N --profile-json`).
/// False with `error` naming `path` and what is wrong.
bool readProfileJson(const std::string &path, std::vector<double> &ms,
                     std::string &error);

/// Binds `batch` to `session` and takes one optimizer step through
/// tcc_profile_step into `profile` (its records, wall time and step).
bool profileStep(tcc_session *session, const std::vector<data::Array> &batch,
                 double &loss, StepProfile &profile, std::string &error);

/// `tcc run --profile [--profile-json FILE]` around the training loop.
class Profiler {
public:
  /// Opens FILE ("" for none) before the run, so an unwritable path is an
  /// error before the first step; false with `error` naming the flag.
  bool open(const std::string &jsonPath, std::string &error);
  /// The loop's RunOptions::lastStep: a profiled step of `session`.
  std::function<bool(std::vector<data::Array>, double &, std::string &)>
  lastStep(tcc_session *session, const std::string &backend);
  /// After a successful run: prints the profile and writes the JSON file;
  /// false with `error` when no step was profiled (a resumed run already
  /// at --steps).
  bool report(std::ostream &out, std::string &error);

private:
  std::optional<StepProfile> profile;
  std::string jsonPath;
  std::ofstream json;
};

} // namespace tcc::run

#endif // TCC_RUNTIME_RUN_PROFILE_H
