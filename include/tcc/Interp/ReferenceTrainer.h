// Training on the reference interpreter: the state of a run (parameters,
// optimizer state, step counter) bound to the @train_step / @eval_step that
// buildTrainStep added. `tcc train --reference` drives it with data, logging
// and checkpoints; it is slow but exact, the numerics the compiled runtime is
// checked against.
#ifndef TCC_INTERP_REFERENCETRAINER_H
#define TCC_INTERP_REFERENCETRAINER_H

#include "tcc/Interp/Interpreter.h"
#include "tcc/Transforms/TrainStep.h"

#include "run/engine.h"

#include "data/batcher.h"
#include "data/npz.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::interp {

/// One training run's state and the interpreter calls that advance it: the
/// reference engine of the training loop (`tcc train --reference`).
/// Every method that can fail returns false with a one-line `error`.
class ReferenceTrainer : public run::Engine {
public:
  /// Binds the arguments and results of `module`'s @train_step and
  /// @eval_step by their tcc.* attributes and takes the parameters' initial
  /// values from the tcc.param ops; optimizer state starts at zero. With
  /// `options.promoteToF64` the f32 parameters and state are held (and
  /// checkpointed) in f64.
  bool init(mlir::ModuleOp module, const TrainConfig &config,
            const interp::Options &options, std::string &error);

  /// What the data feed must yield per optimizer step: one spec per batch
  /// argument, with the --accum micro-batch dim folded into the batch dim
  /// ([N*b, ...] for an argument [N, b, ...]), so consecutive samples fill
  /// the micro-batches in order.
  const std::vector<data::InputSpec> &batchSpecs() const override {
    return specs;
  }
  std::string tokenTarget() const override { return config.loss.label; }
  int64_t labelIgnoreIndex() const override { return config.loss.ignoreIndex; }

  /// One optimizer step on `batch` (in batchSpecs() order and shapes);
  /// `loss` is the step's loss before the update.
  bool step(std::vector<data::Array> batch, double &loss,
            std::string &error) override;
  /// The loss of @eval_step on `batch`, with the current parameters.
  bool evalLoss(std::vector<data::Array> batch, double &loss,
                std::string &error) override;

  /// Optimizer steps done.
  int64_t stepsDone() const override { return steps; }
  double learningRate(int64_t it) const override;
  bool optStateScalar(const std::string &name, double &value) const override;
  bool metric(const std::string &name, double &value) const override;
  bool findNonFinite(std::string &name, std::string &error) const override;
  bool saveCheckpoint(const std::string &dir, int64_t dataPosition,
                      const nlohmann::json &extra, std::string &written,
                      std::string &error) override;
  bool restoreCheckpoint(const std::string &dir, int64_t &dataPosition,
                         std::string &from, std::string &error) override;
  /// Every parameter (frozen ones too), named after its tcc.param.
  const std::vector<data::Array> &params() const { return paramValues; }
  /// Optimizer state, named after the tcc.opt_state attributes.
  const std::vector<data::Array> &optState() const { return stateValues; }

  /// Replaces the state with a checkpoint's. Every parameter and state slot
  /// must be present with its dtype and shape; extra arrays are an error
  /// too, as they mean the checkpoint belongs to another configuration.
  bool restore(const std::vector<data::Array> &params,
               const std::vector<data::Array> &optState, int64_t step,
               std::string &error);

  /// checkpoint::modelFingerprint of the parameters, the batch arguments
  /// and the configuration line, so that a checkpoint of another model or
  /// training configuration is refused instead of silently mis-resumed.
  std::string fingerprint() const;

private:
  /// Working: a parameter's bf16/f16 working copy, derived from the
  /// parameter at each call (the definition the optimizer's copy must meet).
  enum class Kind { Param, OptState, Step, Batch, Loss, Working, Metric };
  struct Slot {
    Kind kind;
    unsigned index; ///< into paramValues / stateValues / the batch / metrics
    data::DType dtype = data::DType::F32; ///< Working
  };
  bool bindFunction(mlir::func::FuncOp f, std::vector<Slot> &args,
                    std::vector<Slot> &results, std::string &error);
  std::vector<data::Array> gather(const std::vector<Slot> &slots,
                                  std::vector<data::Array> &batch) const;

  mlir::func::FuncOp trainFn, evalFn;
  std::vector<Slot> trainArgs, trainResults, evalArgs, evalResults;
  std::vector<data::Array> paramValues, stateValues;
  /// The metric results of both functions by name, and their last values.
  std::vector<std::string> metricNames;
  std::vector<double> metricValues;
  std::vector<data::InputSpec> specs;
  /// The batch arguments' own shapes ([N, b, ...] with --accum N).
  std::vector<std::vector<int64_t>> argShapes;
  int64_t accum = 1;
  int64_t steps = 0;
  interp::Options options;
  TrainConfig config;
  std::string configText;
};

} // namespace tcc::interp

#endif // TCC_INTERP_REFERENCETRAINER_H
