#include "TrainFlags.h"
#include "Model.h"

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
          cl::sub(sub), cl::cat(flagCategory())) {}

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
