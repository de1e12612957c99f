// The training loop shared by `tcc run`, `tcc-run` and `tcc train`.
#include "run/loop.h"

#include "checkpoint/checkpoint.h"
#include "data/prefetch.h"

#include <cerrno>
#include <chrono>
#include <climits>
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

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A feed of either kind behind one interface.
struct Feed {
  std::optional<data::Batcher> arrays;
  std::optional<data::TokenBatcher> tokens;
  std::unique_ptr<data::Prefetcher> prefetch;

  data::Prefetcher::Source source() {
    if (arrays)
      return data::Prefetcher::of(*arrays);
    return data::Prefetcher::of(*tokens);
  }
};

/// Opens `path` for `engine`'s batch inputs: a .bin token file needs two
/// int64 [B, T] inputs, one of them the loss's target.
void openFeed(Feed &feed, const std::string &path, const Engine &engine) {
  const std::vector<data::InputSpec> &specs = engine.batchSpecs();
  if (!endsWith(path, ".bin")) {
    feed.arrays.emplace(data::Batcher::open(path, specs));
    return;
  }
  std::string target = engine.tokenTarget();
  const data::InputSpec *x = nullptr, *y = nullptr;
  for (const data::InputSpec &s : specs)
    (s.name == target ? y : x) = &s;
  if (specs.size() != 2 || !x || !y || x->shape != y->shape ||
      x->shape.size() != 2 || x->dtype != data::DType::I64 ||
      y->dtype != data::DType::I64)
    throw data::Error(path +
                      ": a token file feeds models with exactly two int64 "
                      "[B, T] batch inputs, the tokens and the loss's "
                      "targets; this model's inputs do not fit");
  feed.tokens.emplace(path, x->shape[0], x->shape[1], x->name, y->name);
}

/// Elements of the first integer input of rank >= 2 (tokens per step), or 0.
int64_t tokensPerStep(const std::vector<data::InputSpec> &specs) {
  for (const data::InputSpec &s : specs)
    if ((s.dtype == data::DType::I64 || s.dtype == data::DType::I32) &&
        s.shape.size() >= 2) {
      int64_t n = 1;
      for (int64_t d : s.shape)
        n *= d;
      return n;
    }
  return 0;
}

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
  int runSteps();
  int fail(const std::string &message) {
    endLiveLine();
    err << "tcc: " << message << "\n";
    return 1;
  }
  void endLiveLine() {
    if (liveLine) {
      out << "\n";
      liveLine = false;
    }
  }
  bool openLog(int64_t resumedStep);
  bool evaluate();
  bool checkpoint(double loss);
  void progress(int64_t done, double loss, double seconds);

  Engine &engine;
  const RunOptions &options;
  std::ostream &out, &err;
  Feed train, eval;
  std::ofstream log;
  bool live = false, liveLine = false;
  Clock::time_point runStart;
  int64_t firstStep = 0;
  int64_t tokens = 0, samples = 0;
  LossScale lossScale;
};

bool Loop::openLog(int64_t resumedStep) {
  std::string kept =
      "step,loss,lr,seconds,throughput,elapsed" + lossScale.csvHeader() + "\n";
  if (options.resume) {
    std::ifstream old(options.log);
    std::string line;
    bool header = true;
    while (std::getline(old, line)) {
      if (header) {
        header = false;
        continue;
      }
      long long step;
      if (std::sscanf(line.c_str(), "%lld,", &step) == 1 &&
          step <= resumedStep)
        kept += line + "\n";
    }
  }
  errno = 0;
  log.open(options.log, std::ios::trunc);
  if (!log) {
    fail("--log " + options.log + ": cannot open for writing" +
         (errno ? std::string(": ") + std::strerror(errno) : ""));
    return false;
  }
  log << kept;
  log.flush();
  return true;
}

bool Loop::evaluate() {
  double sum = 0;
  int64_t batches = 0;
  if (eval.arrays) {
    eval.arrays->seek(0);
    batches = eval.arrays->numSamples() / eval.arrays->batchSize();
  } else {
    eval.tokens->seek(0);
    const data::InputSpec &s = engine.batchSpecs()[0];
    batches = (eval.tokens->numTokens() - 1) / (s.shape[0] * s.shape[1]);
  }
  for (int64_t b = 0; b < batches; ++b) {
    double loss;
    std::string error;
    std::vector<data::Array> batch =
        eval.arrays ? eval.arrays->next() : eval.tokens->next();
    if (!engine.evalLoss(std::move(batch), loss, error)) {
      fail("evaluation: " + error);
      return false;
    }
    sum += loss;
  }
  endLiveLine();
  out << "eval step " << engine.stepsDone() << ": loss " << format("%.6f", sum / batches)
      << "\n";
  return true;
}

bool Loop::checkpoint(double loss) {
  std::string written, error;
  if (!engine.saveCheckpoint(options.checkpointDir,
                             train.prefetch->position(), loss, written,
                             error)) {
    fail(error);
    return false;
  }
  endLiveLine();
  out << "checkpoint " << written << "\n";
  // Also removes the temp directories of saves that a crash interrupted.
  int keep = options.keepCheckpoints > 0 &&
                     options.keepCheckpoints < int64_t(INT_MAX)
                 ? int(options.keepCheckpoints)
                 : INT_MAX;
  try {
    checkpoint::pruneCheckpoints(options.checkpointDir, keep, /*run=*/0);
  } catch (const data::Error &e) {
    fail(e.what());
    return false;
  }
  return true;
}

void Loop::progress(int64_t done, double loss, double seconds) {
  double elapsed =
      std::chrono::duration<double>(Clock::now() - runStart).count();
  int64_t thisRun = done - firstStep;
  double rate = elapsed > 0 ? thisRun / elapsed : 0;
  double eta = rate > 0 ? (options.steps - done) / rate : 0;
  double throughput =
      seconds > 0 ? double(tokens ? tokens : samples) / seconds : 0;
  double lr = engine.learningRate(done - 1);
  std::ostringstream line;
  line << "step " << done << "/" << options.steps << "  loss "
       << format("%.6f", loss) << "  lr " << format("%.1e", lr) << "  "
       << format(throughput >= 100 ? "%.0f" : "%.3g", throughput)
       << (tokens ? " tok/s" : " samples/s") << "  elapsed " << clock(elapsed)
       << "  ETA " << clock(eta);
  lossScale.read(engine);
  line << lossScale.progressText();
  if (options.progress == "none") {
    // only the log
  } else if (live) {
    out << "\r" << line.str() << "\033[K";
    liveLine = true;
  } else {
    out << line.str() << "\n";
  }
  out.flush();
  if (log.is_open()) {
    log << done << "," << format(options.logDoubles ? "%.17g" : "%.9g", loss)
        << "," << format("%.17g", lr) << "," << format("%.6f", seconds) << ","
        << format("%.6g", throughput) << "," << format("%.3f", elapsed)
        << lossScale.csvFields() << "\n";
    log.flush();
  }
}

int Loop::run() {
  try {
    return runSteps();
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &e) {
    return fail(std::string("internal error: ") + e.what());
  }
}

int Loop::runSteps() {
  try {
    openFeed(train, options.data, engine);
    if (!options.evalData.empty()) {
      openFeed(eval, options.evalData, engine);
      if (eval.arrays && eval.arrays->numSamples() < eval.arrays->batchSize())
        return fail(options.evalData + ": " +
                    std::to_string(eval.arrays->numSamples()) +
                    " samples, fewer than one batch of " +
                    std::to_string(eval.arrays->batchSize()));
    }
  } catch (const data::Error &e) {
    return fail(e.what());
  }
  if (options.resume) {
    int64_t position = 0;
    std::string from, error;
    if (!engine.restoreCheckpoint(options.checkpointDir, position, from,
                                  error))
      return fail("--resume: " + error);
    if (engine.stepsDone() > options.steps)
      return fail("--resume: '" + from + "' is at step " +
                  std::to_string(engine.stepsDone()) + ", past --steps " +
                  std::to_string(options.steps));
    try {
      train.source().seek(position);
    } catch (const data::Error &e) {
      return fail("--resume: '" + from +
                  "': data position does not fit: " + e.what());
    }
    out << "resuming from " << from << " (step " << engine.stepsDone()
        << ")\n";
  }
  train.prefetch = std::make_unique<data::Prefetcher>(train.source());
  if (engine.stepsDone() == options.steps) {
    out << "nothing to do: the checkpoint is at step " << options.steps
        << " of " << options.steps << "\n";
    return 0;
  }
  lossScale.read(engine); // the log's columns depend on it
  if (!options.log.empty() && !openLog(engine.stepsDone()))
    return 1;
  if (options.checkpointDir.empty()) {
    err << "tcc: warning: no --checkpoint-dir: the trained parameters are "
           "not saved\n";
  } else {
    // Found now, not at the first save after hours of training.
    std::error_code ec;
    std::string why;
    if (!std::filesystem::create_directories(options.checkpointDir, ec) && ec)
      why = ec.message();
    else if (!std::filesystem::is_directory(options.checkpointDir, ec))
      why = "not a directory";
    else if (::access(options.checkpointDir.c_str(), W_OK) != 0)
      why = std::strerror(errno);
    if (!why.empty())
      return fail("--checkpoint-dir " + options.checkpointDir +
                  ": cannot create or write: " + why);
  }

  live = options.progress == "auto" && isatty(STDOUT_FILENO);
  const std::vector<data::InputSpec> &specs = engine.batchSpecs();
  tokens = tokensPerStep(specs);
  samples = specs.empty() || specs[0].shape.empty() ? 1 : specs[0].shape[0];
  runStart = Clock::now();
  firstStep = engine.stepsDone();
  double loss = 0;
  while (engine.stepsDone() < options.steps) {
    std::vector<data::Array> batch;
    try {
      batch = train.prefetch->next();
    } catch (const data::Error &e) {
      return fail(e.what());
    }
    std::string error;
    auto start = Clock::now();
    bool last = engine.stepsDone() + 1 == options.steps;
    bool stepped = last && options.lastStep
                       ? options.lastStep(std::move(batch), loss, error)
                       : engine.step(std::move(batch), loss, error);
    if (!stepped)
      return fail(error);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    int64_t done = engine.stepsDone();
    progress(done, loss, seconds);
    bool evalDue = options.evalEvery ? done % options.evalEvery == 0
                                     : done == options.steps;
    if ((eval.arrays || eval.tokens) && evalDue && !evaluate())
      return 1;
    if (!options.checkpointDir.empty() &&
        ((options.checkpointEvery && done % options.checkpointEvery == 0) ||
         done == options.steps) &&
        !checkpoint(loss))
      return 1;
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
  if (o.steps <= 0)
    return reject(o.steps == 0 && !o.stepsGiven
                      ? "--steps N (the total number of optimizer steps) is "
                        "required"
                      : "--steps must be a positive number of optimizer "
                        "steps, got " + std::to_string(o.steps));
  if (o.resume && o.checkpointDir.empty())
    return reject("--resume needs --checkpoint-dir DIR to resume from");
  if (o.checkpointEvery < 0 || (o.checkpointEvery && o.checkpointDir.empty()))
    return reject("--checkpoint-every needs a positive K and --checkpoint-dir");
  if (o.keepCheckpoints < 0 || (o.keepCheckpoints && o.checkpointDir.empty()))
    return reject("--keep-checkpoints needs a positive K and --checkpoint-dir");
  if (o.evalEvery < 0 || (o.evalEvery && o.evalData.empty()))
    return reject("--eval-every needs a positive K and --eval-data");
  if (o.progress != "auto" && o.progress != "lines" && o.progress != "none")
    return reject("--progress must be auto, lines or none, got '" +
                  o.progress + "'");
  return true;
}

int runTraining(Engine &engine, const RunOptions &options, std::ostream &out,
                std::ostream &err) {
  return Loop(engine, options, out, err).run();
}

} // namespace tcc::run
