//===- checkpoint.h - training checkpoints ----------------------*- C++ -*-===//
//
// The checkpoint layout of design.md ("Contracts users rely on"):
//
//   DIR/step-<N>/params.safetensors     parameters by name (ONNX initializer
//                                       names), as the caller holds them
//                                       (fp32 master weights)
//   DIR/step-<N>/optimizer.safetensors  optimizer state: "<param>.exp_avg",
//                                       "<param>.exp_avg_sq",
//                                       "<param>.momentum_buffer", scalars
//   DIR/step-<N>/state.json             {"format_version": 1, "step": N,
//                                        "data_position": ..., "model": ...,
//                                        "rng": ..., caller's extra fields}
//
// N is the number of optimizer steps done. Several runs may leave checkpoints
// in one DIR; the caller's extra field "run" (RunField) tells them apart. A
// checkpoint is written into DIR/.step-<N>.tmp-<pid>/, fsynced, and renamed to
// DIR/step-<N> only when complete, so a crash mid-save leaves the last good
// checkpoint untouched and at worst a temp directory that latestCheckpoint
// ignores.
//
// Errors are tcc::data::Error, one line naming the path.
//
// Testing hook: with TCC_CHECKPOINT_FAULT=POINT or POINT:N in the
// environment, saveCheckpoint ends the process with _exit(86) at POINT of
// the save (of step N only, with :N), as a kill would, to test that the
// previous checkpoint stays loadable. POINT is `after-params` (the temp
// directory holds params.safetensors only) or `before-rename` (every file
// is written and synced, the temp directory is not yet renamed). Other
// values are ignored. Not for production use.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_CHECKPOINT_CHECKPOINT_H
#define TCC_RUNTIME_CHECKPOINT_CHECKPOINT_H

#include "data/npz.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tcc::checkpoint {

using tcc::data::Array;
using tcc::data::Error;

/// The state.json format this library writes and the only one it reads.
constexpr int64_t FormatVersion = 1;

struct CheckpointState {
  /// Optimizer steps done; names the directory step-<step>.
  int64_t step = 0;
  /// Index of the next sample (or token) the data feed yields.
  int64_t dataPosition = 0;
  /// Identifies the model (e.g. a hash of parameter names and shapes) so a
  /// resume can refuse another model's checkpoint. Opaque here.
  std::string modelFingerprint;
  /// RNG state, opaque here; stored as "rng".
  nlohmann::json rng;
  /// Further top-level fields of state.json (loss scale, learning-rate
  /// schedule, ...): a JSON object or null. Its keys must not be the ones
  /// above ("format_version", "step", "data_position", "model", "rng"). On
  /// load it holds every field that is not one of those.
  nlohmann::json extra = nlohmann::json::object();
};

struct Checkpoint {
  /// The step-<N> directory it was loaded from.
  std::string dir;
  std::vector<Array> params;
  std::vector<Array> optState;
  CheckpointState state;
};

/// The file names inside a step directory.
extern const char *const ParamsFile;    // "params.safetensors"
extern const char *const OptimizerFile; // "optimizer.safetensors"
extern const char *const StateFile;     // "state.json"

/// Writes DIR/step-<state.step>, creating DIR if needed and replacing an
/// existing checkpoint of the same step (the old one stays in place until the
/// new one is complete). Returns the step directory's path.
std::string saveCheckpoint(const std::string &dir,
                           const std::vector<Array> &params,
                           const std::vector<Array> &optState,
                           const CheckpointState &state);

/// The extra state.json field naming the run that wrote a checkpoint: a run
/// number >= 1, which the training loop (runtime/run) gives each new run in a
/// directory (one more than the highest there) and keeps on resume. A
/// checkpoint without it counts as run 0.
extern const char *const RunField; // "run"

/// A complete checkpoint: a step-<N> directory with all three files.
struct StepDir {
  int64_t step = 0;
  /// Its state.json's RunField.
  int64_t run = 0;
  std::string path;
};

/// The complete checkpoints of DIR, newest first: the highest run first and
/// within a run the highest step; none when DIR does not exist. Temp
/// directories and names other than step-<decimal N> are ignored. Reads each
/// state.json for its run, so a malformed one is an Error naming it.
std::vector<StepDir> listCheckpoints(const std::string &dir);

/// The newest of listCheckpoints(dir), or nullopt when DIR has none or does
/// not exist.
std::optional<std::string> latestCheckpoint(const std::string &dir);

/// What a user's --checkpoint PATH names: PATH itself when it is a step
/// directory (it holds state.json), else the newest complete checkpoint under
/// it; an Error "PATH: no checkpoint there" when neither.
std::string checkpointStepDir(const std::string &path);

/// Reads a step directory. Refuses a state.json of another format_version,
/// with missing or mistyped fields, or whose step differs from the N of a
/// step-<N> directory name.
Checkpoint loadCheckpoint(const std::string &stepDir);

/// Keeps the newest `keepLast` (>= 1) complete checkpoints of run `run` and
/// removes its older ones (never another run's), and removes temp directories
/// left by saves of processes that are no longer running on this host.
void pruneCheckpoints(const std::string &dir, int keepLast, int64_t run);

/// "A there, B here" for the fields in which two training-configuration
/// lines (the manifest's and checkpoint's "train_config", as the compiler's
/// describeTrainConfig writes them: "loss=... optimizer=... grad_clip=...
/// lr_schedule=... accum=... freeze=... no_decay=...") differ, so a refused
/// resume names what changed rather than printing two long lines. A line
/// that lacks one of the fields is shown whole.
std::string configDifference(const std::string &theirs,
                             const std::string &ours);

} // namespace tcc::checkpoint

#endif // TCC_RUNTIME_CHECKPOINT_CHECKPOINT_H
