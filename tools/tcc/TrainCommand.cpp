// `tcc train`: builds the training step like `tcc compile` and runs it in
// the reference interpreter, with the data feed, progress lines, a CSV log,
// evaluation and resumable checkpoints of the compiled runtime to come. Slow
// but exact: it is the user-facing path until that runtime lands, and its
// checkpoints are the ones the runtime will write.
#include "Commands.h"
#include "InterpTrainer.h"
#include "Model.h"
#include "TrainFlags.h"

#include "checkpoint/checkpoint.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <optional>

namespace cl = llvm::cl;
using namespace mlir;
using tcc::data::Batcher;

namespace tcc::driver {

static cl::SubCommand trainCmd("train",
                               "Train a model in the reference interpreter "
                               "(exact, slow) with checkpoints and resume");
static ModelFlags modelFlags(trainCmd);
static TrainFlags trainFlags(trainCmd);
static cl::opt<std::string> dataPath(
    "data", cl::value_desc("file.npz"),
    cl::desc("Training data: one array per batch input (graph inputs and the "
             "loss's labels/target), leading axis = samples"),
    cl::sub(trainCmd), cl::cat(flagCategory()));
static cl::opt<int64_t>
    steps("steps", cl::value_desc("N"),
          cl::desc("Total number of optimizer steps (a resumed run "
                   "continues up to N)"),
          cl::sub(trainCmd), cl::cat(flagCategory()));
static cl::opt<std::string> checkpointDir(
    "checkpoint-dir", cl::value_desc("dir"),
    cl::desc("Write checkpoints to DIR/step-N (always after the last step)"),
    cl::sub(trainCmd), cl::cat(flagCategory()));
static cl::opt<int64_t>
    checkpointEvery("checkpoint-every", cl::value_desc("K"), cl::init(0),
                    cl::desc("Also write a checkpoint every K steps"),
                    cl::sub(trainCmd), cl::cat(flagCategory()));
static cl::opt<bool>
    resume("resume",
           cl::desc("Continue from the latest checkpoint in --checkpoint-dir"),
           cl::sub(trainCmd), cl::cat(flagCategory()));
static cl::opt<std::string> evalDataPath(
    "eval-data", cl::value_desc("file.npz"),
    cl::desc("Evaluation data: the mean loss over all its full batches is "
             "reported every --eval-every steps"),
    cl::sub(trainCmd), cl::cat(flagCategory()));
static cl::opt<int64_t> evalEvery(
    "eval-every", cl::value_desc("K"), cl::init(0),
    cl::desc("Evaluate every K steps (default: after the last step only)"),
    cl::sub(trainCmd), cl::cat(flagCategory()));
static cl::opt<std::string>
    logPath("log", cl::value_desc("file.csv"),
            cl::desc("Write step,loss,lr,seconds rows to this file"),
            cl::sub(trainCmd), cl::cat(flagCategory()));

static cl::opt<bool>
    f64("f64",
        cl::desc("Compute in float64, parameters and optimizer state "
                 "(and checkpoints) included: for tolerance studies"),
        cl::sub(trainCmd), cl::cat(flagCategory()));

bool trainChosen() { return static_cast<bool>(trainCmd); }

/// fail() for functions that return whether they succeeded.
static bool reject(const llvm::Twine &message) {
  fail(message);
  return false;
}

/// The shortest of %.15g..%.17g that reads back as `v`.
static std::string num(double v) {
  char buf[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

/// "A there, B here" for the fields in which two describeConfig() lines
/// differ, so a refused resume names what changed rather than two long lines.
static std::string configDifference(llvm::StringRef theirs,
                                    llvm::StringRef ours) {
  static const char *keys[] = {
      "loss=",   " optimizer=", " grad_clip=", " lr_schedule=",
      " accum=", " freeze=",    " no_decay="};
  auto field = [](llvm::StringRef line, size_t k) {
    size_t begin = line.find(keys[k]);
    if (begin == llvm::StringRef::npos)
      return line; // not one of ours: show it whole
    size_t end =
        k + 1 < std::size(keys) ? line.find(keys[k + 1], begin) : line.size();
    return line.slice(begin, end).ltrim();
  };
  std::string there, here;
  for (size_t k = 0; k < std::size(keys); ++k) {
    llvm::StringRef a = field(theirs, k), b = field(ours, k);
    if (a == b)
      continue;
    there += (there.empty() ? "" : " ") + a.str();
    here += (here.empty() ? "" : " ") + b.str();
    if (a == theirs || b == ours)
      break;
  }
  return there + " there, " + here + " here";
}

/// The learning rate of step `it` (from 0) as the IR computes it (nanoGPT's
/// get_lr in double); the step does not return it, and the log wants it.
static double learningRate(const TrainConfig &config, int64_t it) {
  const ScheduleSpec &s = config.schedule;
  double lr = config.optimizer.lr;
  if (s.kind == ScheduleSpec::Constant)
    return lr;
  if (it < s.warmup)
    return lr * double(it + 1) / double(s.warmup);
  if (it >= s.total)
    return s.kind == ScheduleSpec::Cosine ? s.minLr : 0.0;
  double ratio = double(it - s.warmup) / double(s.total - s.warmup);
  if (s.kind == ScheduleSpec::Cosine)
    return s.minLr +
           0.5 * (1.0 + std::cos(3.141592653589793 * ratio)) * (lr - s.minLr);
  return std::max(0.0, lr * (1.0 - ratio));
}

/// The flag combinations that need no model to reject.
static bool checkFlags() {
  if (dataPath.empty())
    return reject("train: --data FILE.npz is required");
  if (!steps.getNumOccurrences())
    return reject(
        "train: --steps N (the total number of optimizer steps) is required");
  if (steps <= 0)
    return reject(
        "train: --steps must be a positive number of optimizer steps, got " +
        std::to_string(steps));
  if (resume && checkpointDir.empty())
    return reject("train: --resume needs --checkpoint-dir DIR to resume from");
  if (checkpointEvery < 0 || (checkpointEvery && checkpointDir.empty()))
    return reject(
        "train: --checkpoint-every needs a positive K and --checkpoint-dir");
  if (evalEvery < 0 || (evalEvery && evalDataPath.empty()))
    return reject("train: --eval-every needs a positive K and --eval-data");
  return true;
}

/// Restores the latest checkpoint of --checkpoint-dir into `trainer` and
/// `feed`; false after printing why it cannot.
static bool resumeRun(InterpTrainer &trainer, Batcher &feed,
                      const std::string &fingerprint,
                      const std::string &config) {
  std::optional<std::string> latest =
      checkpoint::latestCheckpoint(checkpointDir);
  if (!latest)
    return reject("--resume: no checkpoint in '" + checkpointDir + "'");
  checkpoint::Checkpoint ck;
  try {
    ck = checkpoint::loadCheckpoint(*latest);
  } catch (const data::Error &e) {
    return reject(e.what());
  }
  if (ck.state.modelFingerprint != fingerprint) {
    auto it = ck.state.extra.find("train_config");
    if (it == ck.state.extra.end() || !it->is_string())
      return reject("--resume: '" + *latest +
                    "' is from another model or configuration (fingerprint " +
                    ck.state.modelFingerprint + ", this run " + fingerprint +
                    ")");
    std::string theirs = it->get<std::string>();
    if (theirs != config)
      return reject("--resume: '" + *latest +
                    "' was trained with another configuration: " +
                    configDifference(theirs, config));
    return reject("--resume: '" + *latest +
                  "' is a checkpoint of another model (its "
                  "parameters or batch inputs differ in name, dtype or shape)");
  }
  if (ck.state.step > steps)
    return reject("--resume: '" + *latest + "' is at step " +
                  std::to_string(ck.state.step) + ", past --steps " +
                  std::to_string(steps));
  std::string error;
  if (!trainer.restore(ck.params, ck.optState, ck.state.step, error))
    return reject("--resume: '" + *latest + "': " + error);
  try {
    feed.seek(ck.state.dataPosition);
  } catch (const data::Error &e) {
    return reject("--resume: '" + *latest +
                  "': data position does not fit: " + e.what());
  }
  llvm::outs() << "resuming from " << *latest << " (step " << ck.state.step
               << ")\n";
  return true;
}

/// Opens the CSV log. On resume, rows past the resumed step are dropped, so
/// the log reads as if the run had never stopped.
static std::unique_ptr<llvm::raw_fd_ostream> openLog(int64_t resumedStep) {
  std::string kept = "step,loss,lr,seconds\n";
  if (resume)
    if (auto old = llvm::MemoryBuffer::getFile(logPath)) {
      llvm::SmallVector<llvm::StringRef> lines;
      (*old)->getBuffer().split(lines, '\n', -1, false);
      for (llvm::StringRef line : llvm::drop_begin(lines)) {
        int64_t step;
        if (!line.split(',').first.getAsInteger(10, step) &&
            step <= resumedStep)
          kept += line.str() + "\n";
      }
    }
  std::error_code ec;
  auto log = std::make_unique<llvm::raw_fd_ostream>(logPath, ec,
                                                    llvm::sys::fs::OF_Text);
  if (ec) {
    fail("cannot write '" + logPath + "': " + ec.message());
    return nullptr;
  }
  *log << kept;
  return log;
}

static bool saveCheckpoint(const InterpTrainer &trainer, const Batcher &feed,
                           const std::string &fingerprint,
                           const std::string &config, double loss) {
  checkpoint::CheckpointState state;
  state.step = trainer.stepsDone();
  state.dataPosition = feed.position();
  state.modelFingerprint = fingerprint;
  state.rng = nlohmann::json::object(); // nothing random yet (no dropout)
  state.extra = {{"train_config", config}, {"loss", loss}};
  try {
    std::string dir = checkpoint::saveCheckpoint(
        checkpointDir, trainer.params(), trainer.optState(), state);
    llvm::outs() << "checkpoint " << dir << "\n";
  } catch (const data::Error &e) {
    return reject(e.what());
  }
  return true;
}

/// The mean of @eval_step's loss over every full batch of `feed`.
static bool evaluate(InterpTrainer &trainer, Batcher &feed) {
  int64_t batches = feed.numSamples() / feed.batchSize();
  feed.seek(0);
  double sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    double loss;
    std::string error;
    if (!trainer.evalLoss(feed.next(), loss, error))
      return reject(error);
    sum += loss;
  }
  llvm::outs() << llvm::format("eval step %lld: loss %.6f\n",
                               static_cast<long long>(trainer.stepsDone()),
                               sum / batches);
  return true;
}

static int trainLoop(InterpTrainer &trainer, const TrainConfig &config) {
  std::string configText = describeTrainConfig(config);
  std::string fingerprint = trainer.fingerprint(configText);
  std::optional<Batcher> feed, evalFeed;
  try {
    feed.emplace(Batcher::open(dataPath, trainer.batchSpecs()));
    if (!evalDataPath.empty()) {
      evalFeed.emplace(Batcher::open(evalDataPath, trainer.batchSpecs()));
      if (evalFeed->numSamples() < evalFeed->batchSize())
        return fail(evalDataPath + ": " +
                    std::to_string(evalFeed->numSamples()) +
                    " samples, fewer than one batch of " +
                    std::to_string(evalFeed->batchSize()));
    }
  } catch (const data::Error &e) {
    return fail(e.what());
  }
  if (resume && !resumeRun(trainer, *feed, fingerprint, configText))
    return 1;
  if (trainer.stepsDone() == steps) {
    llvm::outs() << "nothing to do: the checkpoint is at step " << steps
                 << " of " << steps << "\n";
    return 0;
  }
  std::unique_ptr<llvm::raw_fd_ostream> log;
  if (!logPath.empty() && !(log = openLog(trainer.stepsDone())))
    return 1;
  if (checkpointDir.empty())
    llvm::errs() << "tcc: warning: no --checkpoint-dir: the trained parameters "
                    "are not saved\n";

  double loss = 0;
  while (trainer.stepsDone() < steps) {
    int64_t it = trainer.stepsDone();
    std::string error;
    auto start = std::chrono::steady_clock::now();
    if (!trainer.step(feed->next(), loss, error))
      return fail(error);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    double lr = learningRate(config, it);
    llvm::outs() << llvm::format(
        "step %lld/%lld  loss %.6f  lr %.1e  (%.2f s/step)\n",
        static_cast<long long>(it + 1), static_cast<long long>(steps), loss, lr,
        seconds);
    llvm::outs().flush();
    if (log) {
      // Round-trip precision (of float, or of double with --f64), so the
      // log can be compared with a reference.
      *log << (it + 1) << ",";
      if (f64)
        *log << num(loss);
      else
        *log << llvm::format("%.9g", loss);
      *log << "," << num(lr) << "," << llvm::format("%.6f", seconds) << "\n";
      log->flush();
    }
    int64_t done = it + 1;
    if (evalFeed && (evalEvery ? done % evalEvery == 0 : done == steps) &&
        !evaluate(trainer, *evalFeed))
      return 1;
    if (!checkpointDir.empty() &&
        ((checkpointEvery && done % checkpointEvery == 0) || done == steps) &&
        !saveCheckpoint(trainer, *feed, fingerprint, configText, loss))
      return 1;
  }
  return 0;
}

int runTrain() {
  TrainConfig config;
  if (!checkFlags() || !trainFlags.toConfig(config))
    return 1;
  MLIRContext context;
  OwningOpRef<ModuleOp> module = loadModel(context, modelFlags);
  if (!module)
    return 1;
  if (!buildTrainStepOrReport(*module, config))
    return 1;
  InterpTrainer trainer;
  std::string error;
  interp::Options options;
  options.promoteToF64 = f64;
  if (!trainer.init(*module, options, error))
    return fail(error);
  return trainLoop(trainer, config);
}

} // namespace tcc::driver
