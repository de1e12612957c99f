// The tcc-build-train-step pass: the training-step builder with its
// settings as pass options, for tcc-opt pipelines and lit tests.
#include "tcc/Transforms/Passes.h"
#include "tcc/Transforms/TrainStep.h"

using namespace mlir;

namespace tcc {

#define GEN_PASS_DEF_BUILDTRAINSTEP
#include "tcc/Transforms/Passes.h.inc"

namespace {
struct BuildTrainStepPass : impl::BuildTrainStepBase<BuildTrainStepPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    TrainConfig config;
    std::string error;
    if (loss.empty()) {
      module.emitError("tcc-build-train-step needs the loss option");
      return signalPassFailure();
    }
    if (!parseLoss(loss, config.loss, error) ||
        !parseOptimizer(optimizer, config.optimizer, error) ||
        !parseSchedule(lrSchedule, config.schedule, error)) {
      module.emitError(error);
      return signalPassFailure();
    }
    if (gradClip != 0)
      config.gradClip = gradClip;
    config.accum = accum;
    config.freeze = freeze;
    config.noDecay = noDecay;
    config.lossScale.scale = lossScaleInit;
    config.lossScale.growthInterval = lossScaleGrowthInterval;
    if (!parsePrecision(precision, config.precision.precision, error) ||
        !parsePrecisionOverrides(precisionPolicy, config.precision, error,
                                 &getContext())) {
      module.emitError(error);
      return signalPassFailure();
    }
    if (config.precision.precision == Precision::FP16)
      config.lossScale.kind = LossScaleSpec::Dynamic;
    if (!lossScale.empty() &&
        !parseLossScale(lossScale, config.lossScale, error)) {
      module.emitError(error);
      return signalPassFailure();
    }
    if (failed(tcc::buildTrainStep(module, config)))
      signalPassFailure();
  }
};
} // namespace

} // namespace tcc
