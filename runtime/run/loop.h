//===- loop.h - the training loop of `tcc run` and `tcc train` --*- C++ -*-===//
#ifndef TCC_RUNTIME_RUN_LOOP_H
#define TCC_RUNTIME_RUN_LOOP_H

#include "run/engine.h"

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace tcc::run {

struct RunOptions {
  /// Training data: .npz/.npy named arrays, or a uint16 token file (.bin).
  std::string data;
  /// Total optimizer steps (a resumed run continues up to it).
  int64_t steps = 0;
  bool stepsGiven = false;
  /// In place of --steps: passes over the data (steps = ceil(epochs *
  /// samples / B); a token file's pass is its batchesPerPass()).
  int64_t epochs = 0;
  /// In place of --steps on --resume: this many steps past the checkpoint.
  int64_t moreSteps = 0;
  /// Read the data in a shuffled order (token files: random windows) drawn
  /// from `seed` (data/random.h). Stored in the checkpoints; a resume
  /// continues the checkpoint's order.
  bool shuffle = false;
  int64_t seed = 0;
  bool seedGiven = false;
  /// --pack-documents EOT_ID: the end-of-text token (0..65535) whose
  /// documents token files pack whole into rows, with position ids, for an
  /// artifact with a `position_ids` batch input (TokenBatcher::
  /// packDocuments); -1: off.
  int64_t packDocuments = -1;
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  /// Keep only the newest K checkpoints of this run (0: keep all).
  int64_t keepCheckpoints = 0;
  /// Continue the newest run in checkpointDir (and its log).
  bool resume = false;
  /// Start a new run where another run left checkpoints or a log: its
  /// checkpoints stay (but a resume takes this run's), its log is replaced.
  bool overwrite = false;
  /// What a non-finite loss (or state about to be checkpointed) does:
  /// "stop" the run, "skip" back to this run's last checkpoint leaving out
  /// the batches since, or "continue" training on.
  std::string onNan = "stop";
  /// Train on .npz data with fewer samples than one batch (repeating them).
  bool allowRepeat = false;
  std::string evalData;
  int64_t evalEvery = 0;
  /// Evaluate on at most this many batches (0: all of --eval-data).
  int64_t evalBatches = 0;
  /// --early-stop patience=P,min_delta=D: stop when P evaluations in a row
  /// have not lowered the eval loss by more than D below its best.
  int64_t patience = 0;
  double minDelta = 0;
  /// Keep the checkpoint of the lowest eval loss in CHECKPOINT_DIR/best.
  bool saveBest = false;
  /// Write TensorBoard event files into this directory.
  std::string tensorboard;
  /// CSV: step,loss,lr,seconds,throughput,elapsed[,loss_scale,skipped]
  /// [,eval_loss].
  std::string log;
  /// Losses in the log with 17 significant digits instead of 9 (f64 runs).
  bool logDoubles = false;
  /// Progress: "auto" rewrites one line on a terminal and prints a line per
  /// step otherwise; "lines" always prints a line per step; "none" prints
  /// only evaluation, checkpoint and final lines.
  std::string progress = "auto";
  /// Data-parallel training (mpirun): this process is rank `rank` of
  /// `worldSize`. Every rank reads the same training data; each step's
  /// global batch is worldSize times the artifact's and rank r trains on
  /// its r-th block of rows. Only rank 0 writes checkpoints (every rank
  /// can resume from them).
  int rank = 0, worldSize = 1;
  /// --zero 1: each rank holds a slice of the optimizer state, so every
  /// rank takes part in each checkpoint (rank 0 gathers and writes it).
  bool shardedState = false;
  /// With worldSize > 1: sums `values` over the ranks in place (every rank
  /// calls it with as many values); throws rt::Error naming `what` when the
  /// others do not answer within the collective timeout. Evaluation reduces
  /// its per-batch sums with it, so rank 0 reports the global eval loss and
  /// accuracy; the ranks agree with it before each step whether a signal
  /// stops the run.
  std::function<void(std::vector<double> &values, const std::string &what)>
      sumOverRanks;
  /// When set, takes the run's last step in place of Engine::step, with the
  /// same contract (`tcc run --profile` times that step's plan steps).
  std::function<bool(std::vector<data::Array> batch, double &loss,
                     std::string &error)>
      lastStep;
};

/// Checks the option combinations that need no engine (--steps given and
/// positive, --resume/--checkpoint-every need --checkpoint-dir, ...).
bool checkRunOptions(const RunOptions &options, const std::string &command,
                     std::string &error);

/// Runs training to `options.steps`. Progress goes to `out`, problems to
/// `err` as "tcc: ..." lines. Returns the process exit code: 0, 1 on an
/// error or a non-finite loss, 128 + the signal when SIGINT or SIGTERM
/// stopped it (interrupt.h).
int runTraining(Engine &engine, const RunOptions &options, std::ostream &out,
                std::ostream &err);

} // namespace tcc::run

#endif // TCC_RUNTIME_RUN_LOOP_H
