// The training loop shared by `tcc run`, `tcc-run` and `tcc train`.
#include "run/loop.h"

#include "run/feed.h"

#include "checkpoint/checkpoint.h"
#include "data/prefetch.h"
#include "run/csvlog.h"
#include "run/interrupt.h"
#include "run/tensorboard.h"
#include "plan/plan.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace tcc::run {

Engine::~Engine() = default;

namespace {

using Clock = std::chrono::steady_clock;

std::string clock(double seconds) {
  long s = long(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60,
                  s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

std::string format(const char *fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

/// Dynamic loss scaling (mixed precision) as the optimizer state shows it:
/// the scalars "loss_scale" and "loss_scale.skipped" (steps skipped on an
/// overflow), read after each step. Absent in full-precision runs.
struct LossScale {
  bool present = false, hasSkipped = false;
  double scale = 0, skipped = 0;

  /// Reads both; `present` says whether the engine has a loss scale.
  void read(const Engine &engine) {
    present = engine.optStateScalar("loss_scale", scale);
    hasSkipped = present && engine.optStateScalar("loss_scale.skipped", skipped);
  }
  /// "  scale 65536  skipped 2" for the progress line; "" without one.
  std::string progressText() const {
    if (!present)
      return "";
    std::string text = "  scale " + format("%g", scale);
    if (hasSkipped)
      text += "  skipped " + format("%.0f", skipped);
    return text;
  }
  /// The log's extra columns: header ",loss_scale,skipped" and per step
  /// ",65536,2" (skipped empty when the state has none); "" without one.
  std::string csvHeader() const { return present ? ",loss_scale,skipped" : ""; }
  std::string csvFields() const {
    if (!present)
      return "";
    return "," + format("%.9g", scale) + "," +
           (hasSkipped ? format("%.0f", skipped) : std::string());
  }
};

class Loop {
public:
  Loop(Engine &engine, const RunOptions &options, std::ostream &out,
       std::ostream &err)
      : engine(engine), options(options), out(out), err(err) {}

  /// The run; whatever a step of it throws that no step expects (an
  /// allocation that fails in the data feed, say) is one `tcc:` line too,
  /// never an abort.
  int run();

private:
  /// What the run does after a non-finite value: goes on, has gone back to
  /// its last checkpoint (--on-nan skip), or stops with exit status 1.
  enum class Next { Train, Rewound, Stop };

  int runSteps();
  bool openFeeds();
  bool startRun();
  /// The data order of the run (options.shuffle, options.seed) applied to
  /// the training feed.
  void applyOrder();
  /// --epochs and --more-steps as a number of steps; false when the
  /// checkpoint resumed is past it.
  bool resolveSteps();
  /// The loop's state.json fields of a checkpoint at this point.
  nlohmann::json checkpointExtra(double loss) const;
  bool prepareOutputs();
  /// Prints the run's one error line; returns exit status 1.
  int fail(const std::string &message) {
    endLiveLine();
    // One write a line: under mpirun the ranks' and mpirun's own output
    // share a stream, and a line written in pieces can be split.
    err << ("tcc: " + message + "\n") << std::flush;
    return 1;
  }
  bool reject(const std::string &message) {
    fail(message);
    return false;
  }
  Next stop(const std::string &message) {
    fail(message);
    return Next::Stop;
  }
  void warn(const std::string &message) {
    endLiveLine();
    err << ("tcc: warning: " + message + "\n") << std::flush;
  }
  void endLiveLine() {
    if (liveLine) {
      out << "\n";
      liveLine = false;
    }
  }
  std::string lastSaved() const {
    return lastCheckpoint.empty() ? "no checkpoint written"
                                  : "last checkpoint: " + lastCheckpoint;
  }
  bool evaluate();
  /// After an evaluation: --save-best and --early-stop's count; true when
  /// the run stops early.
  bool afterEvaluation(double loss, bool &stopEarly);
  /// Writes the step's log row (once), with the eval loss (and accuracy)
  /// when evaluated: `evalFields` "loss[,accuracy]".
  void flushRow(const std::string &evalFields = "");
  Next checkpoint(double loss);
  bool save(const std::string &dir, double loss, std::string &written,
            std::string &error);
  Next nonFinite(const std::string &what);
  int interrupted(double loss, int signal);
  /// The signal that stops the run before the next step: this process's,
  /// or with several ranks any rank's (SIGTERM over SIGINT), so that every
  /// rank stops after the same step; -1 (after an error) when the ranks do
  /// not answer.
  int stopSignal();
  void progress(int64_t done, double loss, double seconds);

  Engine &engine;
  /// A copy: --epochs, --more-steps and a resumed data order resolve into it.
  RunOptions options;
  std::ostream &out, &err;
  Feed train, eval;
  CsvLog log;
  bool live = false, liveLine = false;
  Clock::time_point runStart;
  /// Steps this process ran (a rewind does not take them back): the pace.
  int64_t stepsRun = 0;
  int64_t tokens = 0, samples = 0;
  LossScale lossScale;
  /// This run's number in the checkpoint directory (checkpoint::RunField).
  int64_t runNumber = 1;
  /// This run's newest checkpoint ("" before the first) and its step.
  std::string lastCheckpoint;
  int64_t savedStep = -1;
  /// --on-nan: skip has gone back since the last checkpoint; continue has
  /// warned once.
  bool rewound = false, warnedNonFinite = false;
  /// The last evaluation's mean loss (NaN before the first), and whether
  /// the last evaluate() got to the end (a signal cuts it short).
  double evalLoss = NAN;
  bool evalDone = false;
  /// The engine returns the gradient norm of each step (metric
  /// "grad_norm"), and per evaluation batch the labels counted and those
  /// predicted right (metrics "counted", "correct": a classification loss).
  bool hasGradNorm = false, hasAccuracy = false;
  /// A pad-skipping step returns its valid tokens (metric "valid_tokens"):
  /// the throughput counts those, and the padding share is shown.
  bool hasValidTokens = false;
  /// The last evaluation's accuracy: correct / counted over its batches.
  double evalAccuracy = NAN;
  /// The lowest eval loss and its step (--save-best); the --early-stop
  /// reference (lowered only by more than min_delta) and the evaluations
  /// since it was.
  double bestLoss = INFINITY, stopBest = INFINITY;
  int64_t bestStep = -1, sinceBest = 0;
  /// The log row of the step just done, until flushRow writes it.
  std::string pendingRow;
  bool rowPending = false;
  EventWriter events;
};

bool Loop::openFeeds() {
  try {
    openFeed(train, options.data, engine, options.packDocuments, options.rank,
             options.worldSize);
    if (train.arrays &&
        train.arrays->numSamples() < train.arrays->batchSize() &&
        !options.allowRepeat)
      return reject(options.data + ": " +
                    std::to_string(train.arrays->numSamples()) +
                    " samples, fewer than one batch of " +
                    std::to_string(train.arrays->batchSize()) +
                    ": every batch would repeat samples (--allow-repeat "
                    "trains on it anyway)");
    if (!options.evalData.empty()) {
      openFeed(eval, options.evalData, engine, options.packDocuments,
               options.rank, options.worldSize);
      if (eval.arrays && eval.arrays->numSamples() < eval.arrays->batchSize())
        return reject(options.evalData + ": " +
                      std::to_string(eval.arrays->numSamples()) +
                      " samples, fewer than one batch of " +
                      std::to_string(eval.arrays->batchSize()));
    }
  } catch (const data::Error &e) {
    return reject(e.what());
  }
  return true;
}

/// Resumes the newest run of --checkpoint-dir, or numbers a new one there,
/// refusing to start it beside another run's checkpoints without
/// --overwrite: its retention would delete them and a later --resume would
/// take theirs.
bool Loop::startRun() {
  std::vector<checkpoint::StepDir> found;
  try {
    found = checkpoint::listCheckpoints(options.checkpointDir);
  } catch (const data::Error &e) {
    return reject((options.resume ? "--resume: " : "") + std::string(e.what()));
  }
  if (!options.resume) {
    if (!found.empty() && !options.overwrite)
      return reject("--checkpoint-dir " + options.checkpointDir + ": holds " +
                    std::to_string(found.size()) +
                    " checkpoints of another run (newest " + found[0].path +
                    "); --resume continues it, --overwrite starts a new run "
                    "beside them");
    runNumber = found.empty() ? 1 : found[0].run + 1;
    return true;
  }
  if (found.empty())
    return reject("--resume: no checkpoint in '" + options.checkpointDir + "'");
  int64_t position = 0;
  std::string from, error;
  if (!engine.restoreCheckpoint(found[0].path, position, from, error))
    return reject("--resume: " + error);
  // The loop's own fields of state.json: the data order, the evaluations.
  nlohmann::json state;
  try {
    std::ifstream in(std::filesystem::path(from) / checkpoint::StateFile);
    state = nlohmann::json::parse(in);
  } catch (const std::exception &e) {
    return reject("--resume: '" + from + "': state.json: " + e.what());
  }
  bool shuffled = false;
  int64_t seed = 0;
  if (state.contains("data_order")) {
    shuffled = state["data_order"].value("shuffle", false);
    seed = state["data_order"].value("seed", int64_t(0));
  }
  if (((options.shuffle || options.seedGiven) && !shuffled) ||
      (shuffled && options.seedGiven && options.seed != seed))
    return reject("--resume: '" + from + "' read the data " +
                  (shuffled ? "shuffled with --seed " + std::to_string(seed)
                            : std::string("in order")) +
                  "; a resumed run continues that order (leave out --shuffle "
                  "and --seed)");
  if (shuffled && options.packDocuments >= 0)
    return reject("--resume: '" + from +
                  "' read the data shuffled (--shuffle); --pack-documents "
                  "reads it in order");
  // Packed documents: the data position is a document start of that
  // packing; another end-of-text token (or none) would cut other rows.
  int64_t packed = state.contains("data_order")
                       ? state["data_order"].value("pack_documents", int64_t(-1))
                       : int64_t(-1);
  if (packed != options.packDocuments)
    return reject("--resume: '" + from + "' read the data " +
                  (packed >= 0 ? "as packed documents ending in token " +
                                     std::to_string(packed)
                               : std::string("without --pack-documents")) +
                  "; a resumed run packs it the same way (" +
                  (packed >= 0 ? "--pack-documents " + std::to_string(packed)
                               : std::string("leave out --pack-documents")) +
                  ")");
  options.shuffle = shuffled;
  options.seed = seed;
  if (state.contains("eval")) {
    const nlohmann::json &e = state["eval"];
    bestLoss = e.value("best_loss", double(INFINITY));
    bestStep = e.value("best_step", int64_t(-1));
    stopBest = e.value("early_stop_best", double(INFINITY));
    sinceBest = e.value("since_best", int64_t(0));
  }
  applyOrder();
  try {
    train.source().seek(position);
  } catch (const data::Error &e) {
    return reject("--resume: '" + from +
                  "': data position does not fit: " + e.what());
  }
  runNumber = found[0].run;
  lastCheckpoint = from;
  savedStep = engine.stepsDone();
  return true;
}

/// The checkpoint directory and the log, found writable before the first
/// step rather than at the first save after hours of training.
void Loop::applyOrder() {
  if (!options.shuffle)
    return;
  if (train.arrays)
    train.arrays->shuffle(uint64_t(options.seed));
  else
    train.tokens->randomWindows(uint64_t(options.seed));
}

bool Loop::resolveSteps() {
  if (options.epochs > 0) {
    // Batches run across epochs as one stream: the last may end early in
    // the following epoch.
    double batches =
        train.arrays
            ? double(options.epochs) * double(train.arrays->numSamples()) /
                  double(train.arrays->batchSize())
            : double(options.epochs) * double(train.tokens->batchesPerPass());
    options.steps = int64_t(std::ceil(batches));
  }
  if (options.moreSteps > 0)
    options.steps = engine.stepsDone() + options.moreSteps;
  if (engine.stepsDone() > options.steps)
    return reject("--resume: '" + lastCheckpoint + "' is at step " +
                  std::to_string(engine.stepsDone()) + ", past " +
                  (options.epochs
                       ? "--epochs " + std::to_string(options.epochs) + " (" +
                             std::to_string(options.steps) + " steps)"
                       : "--steps " + std::to_string(options.steps)) +
                  " (--more-steps N trains N steps past it)");
  return true;
}

nlohmann::json Loop::checkpointExtra(double loss) const {
  nlohmann::json extra = {{checkpoint::RunField, runNumber}};
  extra["loss"] = std::isfinite(loss)
                      ? nlohmann::json(loss)
                      : nlohmann::json(nullptr); // no NaN in JSON
  extra["data_order"] = {{"shuffle", options.shuffle}, {"seed", options.seed}};
  if (options.packDocuments >= 0)
    extra["data_order"]["pack_documents"] = options.packDocuments;
  if (bestStep >= 0 && (options.saveBest || options.patience)) {
    extra["eval"] = {{"best_loss", bestLoss},
                     {"best_step", bestStep},
                     {"since_best", sinceBest}};
    if (std::isfinite(stopBest))
      extra["eval"]["early_stop_best"] = stopBest;
  }
  return extra;
}

bool Loop::prepareOutputs() {
  if (!options.checkpointDir.empty()) {
    std::error_code ec;
    std::string why;
    if (!std::filesystem::create_directories(options.checkpointDir, ec) && ec)
      why = ec.message();
    else if (!std::filesystem::is_directory(options.checkpointDir, ec))
      why = "not a directory";
    else if (::access(options.checkpointDir.c_str(), W_OK) != 0)
      why = std::strerror(errno);
    if (!why.empty())
      return reject("--checkpoint-dir " + options.checkpointDir +
                    ": cannot create or write: " + why);
  }
  if (!options.log.empty()) {
    std::string header = "step,loss,lr,seconds,throughput,elapsed" +
                         lossScale.csvHeader() +
                         (hasGradNorm ? ",grad_norm" : "") +
                         (hasValidTokens ? ",padding" : "") +
                         (options.evalData.empty() ? ""
                          : hasAccuracy            ? ",eval_loss,eval_accuracy"
                                                   : ",eval_loss");
    std::string error;
    bool opened =
        options.resume
            ? log.resume(options.log, header, engine.stepsDone(), error)
            : log.create(options.log, header, options.overwrite, error);
    if (!opened)
      return reject(error);
  }
  if (!options.tensorboard.empty()) {
    std::string error;
    if (!events.open(options.tensorboard, error))
      return reject(error);
  }
  if (options.checkpointDir.empty() && options.rank == 0)
    warn("no --checkpoint-dir: the trained parameters are not saved");
  return true;
}

bool Loop::evaluate() {
  // Each rank evaluates its block of every global batch (the artifact's
  // batch times the ranks, as training reads it; the last partial batch is
  // left out, as one process leaves it out). Per batch the loss is a
  // fraction, sum / count for cross-entropy (weighted by the labels
  // counted) and mean / 1 otherwise, so the ranks' parts add up to the
  // global batch's loss.
  int64_t batches = 0;
  if (eval.arrays) {
    eval.arrays->seek(0);
    batches = eval.arrays->numSamples() / eval.arrays->batchSize();
  } else {
    eval.tokens->seek(0);
    batches = eval.tokens->batchesPerPass();
  }
  if (options.evalBatches > 0)
    batches = std::min(batches, options.evalBatches);
  // num[0..batches), den[0..batches), correct, counted.
  std::vector<double> sums(size_t(2 * batches + 2), 0.0);
  bool shared = options.worldSize > 1;
  for (int64_t b = 0; b < batches; ++b) {
    // The ranks evaluate together: a signal ends the run after this.
    if (!shared && InterruptScope::received()) {
      evalDone = false; // the checkpoint matters more than this evaluation
      return true;
    }
    double loss;
    std::string error;
    if (!engine.evalLoss(eval.next(), loss, error)) {
      fail("evaluation: " + error);
      return false;
    }
    double c = 0, n = 1;
    if (hasAccuracy && engine.metric(rt::kCorrectMetric, c) &&
        engine.metric(rt::kCountedMetric, n)) {
      sums[2 * batches] += c;
      sums[2 * batches + 1] += n;
    }
    // Counted labels weigh the loss only across ranks (n = 0: no loss).
    if (!shared)
      n = 1;
    sums[b] = n > 0 ? loss * n : 0;
    sums[batches + b] = n;
  }
  if (shared) {
    try {
      options.sumOverRanks(sums, "the evaluation's sums");
    } catch (const std::exception &e) {
      fail("evaluation: " + std::string(e.what()));
      return false;
    }
  }
  double sum = 0;
  for (int64_t b = 0; b < batches; ++b)
    sum += sums[b] / sums[batches + b];
  evalLoss = sum / double(batches);
  double counted = sums[2 * batches + 1];
  evalAccuracy = counted > 0 ? sums[2 * batches] / counted : NAN;
  evalDone = true;
  endLiveLine();
  out << "eval step " << engine.stepsDone() << ": loss "
      << format("%.6f", evalLoss);
  if (hasAccuracy)
    out << "  accuracy " << format("%.4f", evalAccuracy);
  if (shared)
    out << "  (" << batches << " batches on each of " << options.worldSize
        << " ranks)";
  out << "\n";
  return true;
}

bool Loop::afterEvaluation(double loss, bool &stopEarly) {
  stopEarly = false;
  int64_t done = engine.stepsDone();
  if (events.isOpen()) {
    std::vector<std::pair<std::string, double>> scalars = {
        {"eval/loss", evalLoss}};
    if (hasAccuracy)
      scalars.push_back({"eval/accuracy", evalAccuracy});
    events.scalars(done, scalars);
  }
  bool best = evalLoss < bestLoss;
  if (best) {
    bestLoss = evalLoss;
    bestStep = done;
  }
  if (options.patience > 0) {
    if (evalLoss < stopBest - options.minDelta) {
      stopBest = evalLoss;
      sinceBest = 0;
    } else {
      ++sinceBest;
    }
  }
  if (best && options.saveBest) {
    std::string dir =
        (std::filesystem::path(options.checkpointDir) / "best").string();
    std::string written, error;
    if (!save(dir, loss, written, error))
      return reject(error);
    if (options.rank == 0) { // rank 0 writes the whole state and says so
      try {
        checkpoint::pruneCheckpoints(dir, 1, runNumber);
      } catch (const data::Error &e) {
        return reject(e.what());
      }
      out << "best checkpoint " << written << " (eval loss "
          << format("%.6f", evalLoss) << ")\n";
    }
  }
  if (options.patience > 0 && sinceBest >= options.patience) {
    out << "early stop at step " << done << ": " << sinceBest
        << " evaluations without an eval loss below "
        << format("%.6f", stopBest - options.minDelta) << " (best "
        << format("%.6f", bestLoss) << " at step " << bestStep << ")\n";
    stopEarly = true;
  }
  return true;
}

void Loop::flushRow(const std::string &evalFields) {
  if (!rowPending)
    return;
  rowPending = false;
  // A step without an evaluation leaves the eval columns empty.
  std::string fields =
      evalFields.empty() && hasAccuracy ? std::string(",") : evalFields;
  if (log.isOpen())
    log.row(pendingRow + (options.evalData.empty() ? "" : "," + fields));
}

/// Writes a checkpoint of the state to `dir` on rank 0 (`written` its path).
/// The other ranks take part only when each holds a slice of the optimizer
/// state (--zero 1), which rank 0 gathers; their `written` is empty.
bool Loop::save(const std::string &dir, double loss, std::string &written,
                std::string &error) {
  written.clear();
  if (options.rank != 0 && !options.shardedState)
    return true;
  return engine.saveCheckpoint(dir, train.prefetch->position(),
                               checkpointExtra(loss), written, error);
}

/// Saves the state after the step just done, unless it holds a NaN or an
/// infinity: such a checkpoint would only be resumed into more of them.
Loop::Next Loop::checkpoint(double loss) {
  std::string bad, written, error;
  if (!engine.findNonFinite(bad, error))
    return stop(error);
  int64_t done = engine.stepsDone();
  if (options.shardedState && options.worldSize > 1) {
    // Each rank holds a slice of the optimizer state: they agree, as every
    // rank must take part in the save or in none.
    std::vector<double> found = {bad.empty() ? 0.0 : 1.0};
    try {
      options.sumOverRanks(found, "the ranks' check of the state of step " +
                                      std::to_string(done));
    } catch (const std::exception &e) {
      return stop(e.what());
    }
    if (found[0] > 0 && bad.empty())
      bad = "the optimizer state of another rank";
  }
  if (!bad.empty()) {
    std::string what = "'" + bad + "' holds a NaN or an infinity";
    if (options.onNan != "continue")
      return nonFinite(what);
    std::string at = "step " + std::to_string(done) + ": " + what;
    if (done == options.steps)
      return stop(at + ": the final checkpoint is not written (" + lastSaved() +
                  ")");
    warn(at + ": no checkpoint written (--on-nan continue)");
    return Next::Train;
  }
  if (!save(options.checkpointDir, loss, written, error))
    return stop(error);
  if (options.rank != 0) { // rank 0 writes the whole state
    savedStep = done;
    return Next::Train;
  }
  endLiveLine();
  out << "checkpoint " << written << "\n";
  lastCheckpoint = written;
  savedStep = done;
  rewound = false;
  // Also removes the temp directories of saves that a crash interrupted.
  int keep = options.keepCheckpoints > 0 &&
                     options.keepCheckpoints < int64_t(INT_MAX)
                 ? int(options.keepCheckpoints)
                 : INT_MAX;
  try {
    checkpoint::pruneCheckpoints(options.checkpointDir, keep, runNumber);
  } catch (const data::Error &e) {
    return stop(e.what());
  }
  return Next::Train;
}

/// --on-nan for `what` ("the loss is nan", "'w' holds a NaN ...") after
/// the step just done. Skipping goes back to this run's last checkpoint and
/// on with the batch after this step's, leaving out the batches of the
/// steps since the checkpoint (what large-model trainings do after a loss
/// spike); a second non-finite value before the next checkpoint stops.
Loop::Next Loop::nonFinite(const std::string &what) {
  int64_t done = engine.stepsDone();
  std::string at = "step " + std::to_string(done) + ": " + what;
  if (options.onNan == "continue") {
    if (!warnedNonFinite)
      warn(at + "; training on (--on-nan continue)");
    warnedNonFinite = true;
    return Next::Train;
  }
  if (options.onNan == "stop")
    return stop(at + "; stopped (" + lastSaved() +
                "; --on-nan skip or continue trains on)");
  if (lastCheckpoint.empty())
    return stop(at + "; stopped: --on-nan skip has no checkpoint of this "
                     "run to go back to");
  if (rewound)
    return stop(at + " again before a new checkpoint; stopped (" + lastSaved() +
                ")");
  int64_t position = 0;
  std::string from, error;
  if (!engine.restoreCheckpoint(lastCheckpoint, position, from, error))
    return stop("--on-nan skip: " + error);
  if (log.isOpen() && !log.rewind(engine.stepsDone(), error))
    return stop(error);
  lossScale.read(engine);
  rewound = true;
  int64_t first = engine.stepsDone() + 1;
  warn(at + "; back to " + from + ", leaving out the batch" +
       (first == done ? " of step "
                      : "es of steps " + std::to_string(first) + "-") +
       std::to_string(done) + " (--on-nan skip)");
  return Next::Rewound;
}

int Loop::stopSignal() {
  int signal = InterruptScope::received();
  if (options.worldSize <= 1 || !options.sumOverRanks)
    return signal;
  // One signal reaches one rank (a scheduler's SIGTERM to a node, Ctrl-C
  // in one terminal): the ranks agree before each step, or the others would
  // wait for it in the next step's all-reduce until the collective timeout.
  std::vector<double> asked = {signal == SIGINT ? 1.0 : 0.0,
                               signal == SIGTERM ? 1.0 : 0.0};
  try {
    options.sumOverRanks(asked, "the ranks' agreement to go on before step " +
                                    std::to_string(engine.stepsDone() + 1));
  } catch (const std::exception &e) {
    fail(e.what());
    return -1;
  }
  return asked[1] > 0 ? SIGTERM : asked[0] > 0 ? SIGINT : 0;
}

/// After SIGINT or SIGTERM: saves the last step unless it is saved, says
/// where, and returns 128 + the signal.
int Loop::interrupted(double loss, int signal) {
  if (!options.checkpointDir.empty() && savedStep != engine.stepsDone() &&
      checkpoint(loss) == Next::Stop)
    return 1;
  if (options.rank != 0)
    return 128 + signal; // rank 0 saves and says where
  std::string saved =
      options.checkpointDir.empty() ? "nothing saved (no --checkpoint-dir)"
      : lastCheckpoint.empty()      ? "no checkpoint written"
                               : "--resume continues from " + lastCheckpoint;
  endLiveLine();
  err << ("tcc: " + std::string(signalName(signal)) + ": stopped after step " +
          std::to_string(engine.stepsDone()) + "; " + saved + "\n")
      << std::flush;
  return 128 + signal;
}

void Loop::progress(int64_t done, double loss, double seconds) {
  double elapsed =
      std::chrono::duration<double>(Clock::now() - runStart).count();
  double rate = elapsed > 0 ? stepsRun / elapsed : 0;
  double eta = rate > 0 ? (options.steps - done) / rate : 0;
  double counted = double(tokens ? tokens : samples), padding = NAN;
  if (hasValidTokens && tokens > 0) {
    double valid = NAN;
    engine.metric(rt::kValidTokensMetric, valid);
    valid *= double(options.worldSize);
    padding = 1.0 - valid / double(tokens);
    counted = valid;
  }
  double throughput = seconds > 0 ? counted / seconds : 0;
  double lr = engine.learningRate(done - 1);
  std::ostringstream line;
  double gradNorm = NAN;
  if (hasGradNorm)
    engine.metric(rt::kGradNormMetric, gradNorm);
  line << "step " << done << "/" << options.steps << "  loss "
       << format("%.6f", loss) << "  lr " << format("%.1e", lr);
  if (hasGradNorm)
    line << "  grad norm " << format("%.3g", gradNorm);
  line << "  " << format(throughput >= 100 ? "%.0f" : "%.3g", throughput)
       << (hasValidTokens ? " valid tok/s (padding " +
                                format("%.1f", 100 * padding) + "%)"
           : tokens       ? std::string(" tok/s")
                          : std::string(" samples/s"))
       << "  elapsed " << clock(elapsed)
       << "  ETA " << clock(eta);
  lossScale.read(engine);
  line << lossScale.progressText();
  if (options.worldSize > 1)
    line << "  ranks " << options.worldSize;
  if (options.progress == "none") {
    // only the log
  } else if (live) {
    out << "\r" << line.str() << "\033[K";
    liveLine = true;
  } else {
    out << line.str() << "\n";
  }
  out.flush();
  pendingRow = std::to_string(done) + "," +
               format(options.logDoubles ? "%.17g" : "%.9g", loss) + "," +
               format("%.17g", lr) + "," + format("%.6f", seconds) + "," +
               format("%.6g", throughput) + "," + format("%.3f", elapsed) +
               lossScale.csvFields() +
               (hasGradNorm ? "," + format("%.9g", gradNorm) : "") +
               (hasValidTokens ? "," + format("%.4f", padding) : "");
  rowPending = true;
  if (events.isOpen()) {
    std::vector<std::pair<std::string, double>> scalars = {
        {"train/loss", loss},
        {"train/lr", lr},
        {hasValidTokens ? "train/valid_tokens_per_second"
         : tokens       ? "train/tokens_per_second"
                        : "train/samples_per_second",
         throughput}};
    if (hasValidTokens)
      scalars.push_back({"train/padding", padding});
    if (hasGradNorm)
      scalars.push_back({"train/grad_norm", gradNorm});
    if (lossScale.present)
      scalars.push_back({"train/loss_scale", lossScale.scale});
    events.scalars(done, scalars);
  }
}

int Loop::run() {
  try {
    return runSteps();
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const LogWriteError &e) {
    return fail(e.what());
  } catch (const std::exception &e) {
    return fail(std::string("internal error: ") + e.what());
  }
}

int Loop::runSteps() {
  if (!openFeeds())
    return 1;
  if (!options.checkpointDir.empty() && !startRun())
    return 1;
  if (!options.resume)
    applyOrder();
  if (!resolveSteps())
    return 1;
  if (options.resume)
    out << "resuming from " << lastCheckpoint << " (step " << engine.stepsDone()
        << ")\n";
  train.prefetch = std::make_unique<data::Prefetcher>(train.source());
  if (engine.stepsDone() == options.steps) {
    out << "nothing to do: the checkpoint is at step " << options.steps
        << " of " << options.steps << "\n";
    return 0;
  }
  lossScale.read(engine); // the log's columns depend on it
  double unused;
  hasGradNorm = engine.metric(rt::kGradNormMetric, unused);
  hasValidTokens = engine.metric(rt::kValidTokensMetric, unused);
  hasAccuracy = engine.metric(rt::kCorrectMetric, unused) &&
                engine.metric(rt::kCountedMetric, unused);
  if (!prepareOutputs())
    return 1;

  live = options.progress == "auto" && isatty(STDOUT_FILENO);
  const std::vector<data::InputSpec> &specs = engine.batchSpecs();
  // Throughput counts the global batch, all ranks together.
  tokens = tokensPerStep(specs) * options.worldSize;
  samples = (specs.empty() || specs[0].shape.empty() ? 1 : specs[0].shape[0]) *
            options.worldSize;
  runStart = Clock::now();
  if (savedStep < 0)
    savedStep = engine.stepsDone(); // the initial state: nothing to save
  InterruptScope interrupts;
  double loss = 0;
  while (engine.stepsDone() < options.steps) {
    if (int signal = stopSignal())
      return signal < 0 ? 1 : interrupted(loss, signal);
    std::vector<data::Array> batch;
    try {
      batch = train.prefetch->next();
    } catch (const data::Error &e) {
      return fail(e.what());
    }
    std::string error;
    double skippedBefore = lossScale.skipped;
    auto start = Clock::now();
    bool last = engine.stepsDone() + 1 == options.steps;
    bool stepped = last && options.lastStep
                       ? options.lastStep(std::move(batch), loss, error)
                       : engine.step(std::move(batch), loss, error);
    if (!stepped)
      return fail(error);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    ++stepsRun;
    int64_t done = engine.stepsDone();
    progress(done, loss, seconds);
    // A step that dynamic loss scaling skipped on an overflow changed
    // nothing: its non-finite loss is the scaler's business (precision.md).
    bool scalerSkipped =
        lossScale.hasSkipped && lossScale.skipped > skippedBefore;
    if (!std::isfinite(loss) && !scalerSkipped) {
      flushRow();
      Next next =
          nonFinite(std::string("the loss is ") + (std::isnan(loss) ? "nan"
                                                   : loss > 0       ? "inf"
                                                                    : "-inf"));
      if (next == Next::Stop)
        return 1;
      if (next == Next::Rewound)
        continue;
    }
    bool evalDue = options.evalEvery ? done % options.evalEvery == 0
                                     : done == options.steps;
    bool stopEarly = false;
    // One process skips a due evaluation once a signal came (the checkpoint
    // matters more); ranks evaluate together (stopSignal decides after it).
    bool stopping = options.worldSize <= 1 && InterruptScope::received();
    if ((eval.arrays || eval.tokens) && evalDue && !stopping) {
      if (!evaluate()) {
        flushRow();
        return 1;
      }
      if (evalDone) {
        flushRow(format("%.9g", evalLoss) +
                 (hasAccuracy ? "," + format("%.9g", evalAccuracy) : ""));
        if (!afterEvaluation(loss, stopEarly))
          return 1;
      }
    }
    flushRow();
    bool saveDue =
        (options.checkpointEvery && done % options.checkpointEvery == 0) ||
        done == options.steps || stopEarly;
    if (!options.checkpointDir.empty() && saveDue &&
        checkpoint(loss) == Next::Stop)
      return 1;
    if (stopEarly)
      break;
  }
  endLiveLine();
  return 0;
}

} // namespace

bool checkRunOptions(const RunOptions &o, const std::string &command,
                     std::string &error) {
  auto reject = [&](const std::string &message) {
    error = command + ": " + message;
    return false;
  };
  if (o.data.empty())
    return reject("--data FILE.npz is required (or a .bin token file)");
  int lengths = int(o.stepsGiven) + int(o.epochs != 0) + int(o.moreSteps != 0);
  if (lengths > 1)
    return reject("give one of --steps, --epochs and --more-steps");
  if (o.epochs < 0)
    return reject("--epochs must be a positive number of passes over the "
                  "data, got " +
                  std::to_string(o.epochs));
  if (o.moreSteps < 0 || (o.moreSteps && !o.resume))
    return reject("--more-steps needs a positive N and --resume (a new run "
                  "takes --steps)");
  if (o.steps <= 0 && !o.epochs && !o.moreSteps)
    return reject(o.steps == 0 && !o.stepsGiven
                      ? "--steps N (the total number of optimizer steps) is "
                        "required (or --epochs N)"
                      : "--steps must be a positive number of optimizer "
                        "steps, got " +
                            std::to_string(o.steps));
  if (o.seedGiven && !o.shuffle && !o.resume)
    return reject("--seed seeds --shuffle: give --shuffle too");
  if (o.packDocuments >= 0 && o.shuffle)
    return reject("--pack-documents packs the documents in the data's order: "
                  "it cannot take --shuffle (random windows)");
  if (o.evalBatches < 0 || (o.evalBatches && o.evalData.empty()))
    return reject("--eval-batches needs a positive N and --eval-data");
  if (o.patience && o.evalData.empty())
    return reject("--early-stop watches the eval loss: it needs --eval-data");
  if (o.saveBest && (o.evalData.empty() || o.checkpointDir.empty()))
    return reject("--save-best needs --eval-data and --checkpoint-dir");
  if (o.resume && o.checkpointDir.empty())
    return reject("--resume needs --checkpoint-dir DIR to resume from");
  if (o.resume && o.overwrite)
    return reject("--resume continues a run, --overwrite starts a new one: "
                  "give one of them");
  if (o.checkpointEvery < 0 || (o.checkpointEvery && o.checkpointDir.empty()))
    return reject("--checkpoint-every needs a positive K and --checkpoint-dir");
  if (o.keepCheckpoints < 0 || (o.keepCheckpoints && o.checkpointDir.empty()))
    return reject("--keep-checkpoints needs a positive K and --checkpoint-dir");
  if (o.evalEvery < 0 || (o.evalEvery && o.evalData.empty()))
    return reject("--eval-every needs a positive K and --eval-data");
  if (o.progress != "auto" && o.progress != "lines" && o.progress != "none")
    return reject("--progress must be auto, lines or none, got '" +
                  o.progress + "'");
  if (o.onNan != "stop" && o.onNan != "skip" && o.onNan != "continue")
    return reject("--on-nan must be stop, skip or continue, got '" + o.onNan +
                  "'");
  if (o.onNan == "skip" && o.checkpointDir.empty())
    return reject("--on-nan skip goes back to the last checkpoint: it needs "
                  "--checkpoint-dir");
  return true;
}

int runTraining(Engine &engine, const RunOptions &options, std::ostream &out,
                std::ostream &err) {
  return Loop(engine, options, out, err).run();
}

} // namespace tcc::run
