//===- engine.h - what a training run drives --------------------*- C++ -*-===//
//
// The training loop (loop.h: data feed, progress line, CSV log, evaluation,
// checkpoints, resume) is written once against this interface. Two engines
// implement it: the compiled artifact through the runtime's C API
// (SessionEngine, session_engine.h) and, in the compiler driver, the
// reference interpreter (`tcc train --reference`).
//
// Every method that can fail returns false with a one-line `error`.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_RUN_ENGINE_H
#define TCC_RUNTIME_RUN_ENGINE_H

#include "data/batcher.h"
#include "data/npz.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::run {

class Engine {
public:
  virtual ~Engine();

  /// What the data feed must yield per optimizer step, one spec per batch
  /// input: with --accum N the leading dim is N*b.
  virtual const std::vector<data::InputSpec> &batchSpecs() const = 0;
  /// The batch input holding next-token targets when training on a token
  /// file (the loss's label), or "" when the model has none.
  virtual std::string tokenTarget() const = 0;
  /// The ignore_index of the loss's cross_entropy (a target equal to it
  /// counts for nothing): what a packed row's padding holds as targets.
  /// -100, PyTorch's default, when the loss has none (the default).
  virtual int64_t labelIgnoreIndex() const { return -100; }

  /// One optimizer step; `loss` is the step's loss before the update.
  virtual bool step(std::vector<data::Array> batch, double &loss,
                    std::string &error) = 0;
  /// The evaluation loss on one batch with the current parameters.
  virtual bool evalLoss(std::vector<data::Array> batch, double &loss,
                        std::string &error) = 0;
  virtual int64_t stepsDone() const = 0;
  /// The learning rate the step with index `it` (0-based) uses.
  virtual double learningRate(int64_t it) const = 0;
  /// The scalar optimizer state `name` as it is now (after the last step),
  /// e.g. the mixed-precision "loss_scale"; false when the engine has no
  /// such scalar (the default).
  virtual bool optStateScalar(const std::string &name, double &value) const {
    (void)name;
    (void)value;
    return false;
  }

  /// The metric `name` (plan role "metric": "grad_norm" of the last step,
  /// "correct" and "counted" of the last evaluation batch); NaN before
  /// one has run. False when the engine has no such metric (the default).
  virtual bool metric(const std::string &name, double &value) const {
    (void)name;
    (void)value;
    return false;
  }

  /// `name` receives the first parameter or optimizer-state slot that
  /// holds a NaN or an infinity, "" when every value is finite.
  virtual bool findNonFinite(std::string &name, std::string &error) const = 0;

  /// Writes DIR/step-<stepsDone()> with the data position; the fields of
  /// `extra` (a JSON object: the loop's "loss" and "run") are added to its
  /// state.json. `written` receives the step directory.
  virtual bool saveCheckpoint(const std::string &dir, int64_t dataPosition,
                              const nlohmann::json &extra, std::string &written,
                              std::string &error) = 0;
  /// Restores `path`: a step directory, or the latest checkpoint under a
  /// checkpoint directory; refuses one of another model or configuration,
  /// saying what differs.
  virtual bool restoreCheckpoint(const std::string &path, int64_t &dataPosition,
                                 std::string &from, std::string &error) = 0;
};

} // namespace tcc::run

#endif // TCC_RUNTIME_RUN_ENGINE_H
