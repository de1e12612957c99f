#include "TrainFlags.h"
#include "Model.h"

#include "tcc/TccOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

namespace cl = llvm::cl;

namespace tcc::driver {

TrainFlags::TrainFlags(cl::SubCommand &sub)
    : loss("loss", cl::value_desc("loss"),
           cl::desc(
               "Required. cross_entropy(LOGITS,LABELS[,ignore_index=N]): mean "
               "cross-entropy of output LOGITS [..., classes] against a new "
               "int64 input LABELS (ignore_index default -100); "
               "mse(OUTPUT,TARGET): mean squared error against a new input "
               "TARGET shaped like OUTPUT; or NAME: a scalar output that "
               "already is the loss"),
           cl::sub(sub), cl::cat(flagCategory())),
      optimizer(
          "optimizer", cl::value_desc("opt"), cl::init("adamw"),
          cl::desc("sgd:lr=..,momentum=..,weight_decay=..,nesterov=0|1 or "
                   "adamw:lr=..,beta1=..,beta2=..,eps=..,weight_decay=.. "
                   "(torch.optim semantics and defaults; default: adamw)"),
          cl::sub(sub), cl::cat(flagCategory())),
      gradClip(
          "grad-clip", cl::value_desc("max-norm"),
          cl::desc("Clip the global L2 norm of the gradients to this value, "
                   "as torch.nn.utils.clip_grad_norm_"),
          cl::sub(sub), cl::cat(flagCategory())),
      lrSchedule(
          "lr-schedule", cl::value_desc("schedule"), cl::init("constant"),
          cl::desc("constant | cosine:warmup=W,total=N,min=M | "
                   "linear:warmup=W,total=N (nanoGPT's get_lr, step counted "
                   "from 0; default: constant)"),
          cl::sub(sub), cl::cat(flagCategory())),
      accum(
          "accum", cl::value_desc("N"), cl::init(1),
          cl::desc("Gradient accumulation: N micro-batches per optimizer step; "
                   "every batch input gets a leading dim N (default 1)"),
          cl::sub(sub), cl::cat(flagCategory())),
      freeze(
          "freeze", cl::value_desc("regex"),
          cl::desc("Parameters whose name matches this regex are not trained"),
          cl::sub(sub), cl::cat(flagCategory())),
      noDecay(
          "no-decay", cl::value_desc("regex"),
          cl::desc(
              "Parameters whose name matches this regex get no weight decay"),
          cl::sub(sub), cl::cat(flagCategory())),
      precision(
          "precision", cl::value_desc("fp32|bf16|fp16"), cl::init("fp32"),
          cl::desc("Compute precision: bf16/fp16 store activations and "
                   "gradients in 16 bits and run GEMMs and attention on "
                   "them, with fp32 master weights, optimizer and losses "
                   "(default: fp32)"),
          cl::sub(sub), cl::cat(flagCategory())),
      precisionPolicy(
          "precision-policy", cl::value_desc("OP=low|fp32,..."),
          cl::desc("Override the precision policy per op kind, e.g. "
                   "layer_norm=fp32,softmax=fp32 (the table: tcc compile "
                   "--report, docs/precision.md)"),
          cl::sub(sub), cl::cat(flagCategory())),
      lossScale(
          "loss-scale", cl::value_desc("none|dynamic|S"),
          cl::desc("Loss scaling: dynamic (skip steps whose gradients "
                   "overflow, halve the scale; default with fp16), a static "
                   "scale S, or none (default otherwise)"),
          cl::sub(sub), cl::cat(flagCategory())),
      lossScaleInit(
          "loss-scale-init", cl::value_desc("S"), cl::init(65536.0),
          cl::desc("Initial dynamic loss scale (default 65536)"),
          cl::sub(sub), cl::cat(flagCategory())),
      lossScaleGrowthInterval(
          "loss-scale-growth-interval", cl::value_desc("N"), cl::init(2000),
          cl::desc("Double the dynamic loss scale after N steps without "
                   "overflow (default 2000)"),
          cl::sub(sub), cl::cat(flagCategory())) {}

bool TrainFlags::anyTrainingOnly() const {
  return loss.getNumOccurrences() || optimizer.getNumOccurrences() ||
         gradClip.getNumOccurrences() || lrSchedule.getNumOccurrences() ||
         accum.getNumOccurrences() || freeze.getNumOccurrences() ||
         noDecay.getNumOccurrences() || lossScale.getNumOccurrences() ||
         lossScaleInit.getNumOccurrences() ||
         lossScaleGrowthInterval.getNumOccurrences();
}

bool TrainFlags::toPrecision(PrecisionPolicy &policy) const {
  policy = PrecisionPolicy();
  std::string error;
  // Op kinds are checked against the dialect's registered ops.
  mlir::MLIRContext context;
  context.getOrLoadDialect<TccDialect>();
  if (!parsePrecision(precision, policy.precision, error) ||
      !parsePrecisionOverrides(precisionPolicy, policy, error, &context)) {
    fail(error);
    return false;
  }
  if (!precisionPolicy.empty() && policy.precision == Precision::FP32) {
    fail("--precision-policy needs --precision bf16 or fp16");
    return false;
  }
  return true;
}

bool TrainFlags::toConfig(TrainConfig &config) const {
  config = TrainConfig();
  std::string error;
  if (loss.empty()) {
    fail("--loss is required, e.g. --loss 'cross_entropy(logits,labels)'");
    return false;
  }
  if (!parseLoss(loss, config.loss, error) ||
      !parseOptimizer(optimizer, config.optimizer, error) ||
      !parseSchedule(lrSchedule, config.schedule, error)) {
    fail(error);
    return false;
  }
  if (gradClip.getNumOccurrences())
    config.gradClip = gradClip;
  config.accum = accum;
  config.freeze = freeze;
  config.noDecay = noDecay;
  if (!toPrecision(config.precision))
    return false;
  LossScaleSpec &scaling = config.lossScale;
  scaling.scale = lossScaleInit;
  scaling.growthInterval = lossScaleGrowthInterval;
  if (config.precision.precision == Precision::FP16)
    scaling.kind = LossScaleSpec::Dynamic;
  if (lossScale.getNumOccurrences() &&
      !parseLossScale(lossScale, scaling, error)) {
    fail(error);
    return false;
  }
  if (scaling.kind != LossScaleSpec::Dynamic &&
      (lossScaleInit.getNumOccurrences() ||
       lossScaleGrowthInterval.getNumOccurrences())) {
    fail(std::string(lossScaleInit.getNumOccurrences()
                         ? "--loss-scale-init"
                         : "--loss-scale-growth-interval") +
         " needs dynamic loss scaling (--loss-scale dynamic, the default "
         "with --precision fp16)");
    return false;
  }
  if (!checkConfig(config, error)) {
    fail(error);
    return false;
  }
  return true;
}

bool buildTrainStepOrReport(
    mlir::ModuleOp module, const TrainConfig &config,
    const std::function<std::string(mlir::Location)> &where) {
  // The builder reports through diagnostics; the CLI contract is one line.
  std::string firstError;
  mlir::ScopedDiagnosticHandler handler(
      module.getContext(), [&](mlir::Diagnostic &diag) {
        if (diag.getSeverity() == mlir::DiagnosticSeverity::Error &&
            firstError.empty())
          firstError = (where ? where(diag.getLocation()) : "") + diag.str();
        return mlir::success();
      });
  if (mlir::failed(buildTrainStep(module, config))) {
    fail(firstError.empty() ? "cannot build the training step" : firstError);
    return false;
  }
  if (mlir::failed(mlir::verify(module))) {
    fail("internal error: the training step does not verify: " + firstError);
    return false;
  }
  return true;
}

} // namespace tcc::driver
