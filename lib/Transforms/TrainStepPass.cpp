// The tcc-build-train-step pass: the training-step builder with its
// settings as pass options, for tcc-opt pipelines and lit tests.
#include "exec/ExecOps.h"
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
    if (loss.empty()) {
      module.emitError("tcc-build-train-step needs the loss option");
      return signalPassFailure();
    }
    BuildTrainStepOptions options;
    options.loss = loss;
    options.optimizer = optimizer;
    options.gradClip = gradClip;
    options.gradNorm = gradNorm;
    options.lrSchedule = lrSchedule;
    options.accum = accum;
    options.freeze = freeze;
    options.noDecay = noDecay;
    options.lossScale = lossScale;
    options.lossScaleInit = lossScaleInit;
    options.lossScaleGrowthInterval = lossScaleGrowthInterval;
    options.dataParallel = dataParallel;
    options.bucketSize = bucketSize;
    // @forward's precision is only what its types say; the config's is for
    // manifests, which this pass does not write.
    FailureOr<TrainConfig> config =
        parseTrainStepOptions(module.getLoc(), options, PrecisionPolicy());
    if (failed(config) || failed(tcc::buildTrainStep(module, *config)))
      signalPassFailure();
  }
};
} // namespace

} // namespace tcc
