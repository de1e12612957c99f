#include "TrainFlags.h"
#include "Model.h"

#include "tcc/TccOps.h"
#include "tcc/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
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
      gradNorm(
          "grad-norm",
          cl::desc("Compute the global L2 norm of the gradients before "
                   "clipping every step and report it (the run's grad_norm); "
                   "--grad-clip and dynamic loss scaling report it without "
                   "this flag, at no extra cost"),
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
      precision("precision", cl::value_desc("fp32|bf16|fp16"), cl::init("fp32"),
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
      lossScaleInit("loss-scale-init", cl::value_desc("S"), cl::init(65536.0),
                    cl::desc("Initial dynamic loss scale (default 65536)"),
                    cl::sub(sub), cl::cat(flagCategory())),
      lossScaleGrowthInterval(
          "loss-scale-growth-interval", cl::value_desc("N"), cl::init(2000),
          cl::desc("Double the dynamic loss scale after N steps without "
                   "overflow (default 2000)"),
          cl::sub(sub), cl::cat(flagCategory())),
      dataParallel(
          "data-parallel",
          cl::desc("Compile for data-parallel training (mpirun -np N tcc "
                   "run): gradients, loss and label count are all-reduced "
                   "(mean) over the ranks; also runs as one process"),
          cl::sub(sub), cl::cat(flagCategory())),
      bucketSize(
          "bucket-size", cl::value_desc("MiB"), cl::init(25.0),
          cl::desc("With --data-parallel: MiB of gradients per all-reduce "
                   "bucket, in the order backward produces them (default 25, "
                   "as PyTorch DDP)"),
          cl::sub(sub), cl::cat(flagCategory())),
      packDocuments(
          "pack-documents",
          cl::desc("Packed documents: the step takes position_ids [B, T] "
                   "(0 starts a document) and each document attends only to "
                   "itself, its position embedding restarting at 0 (train "
                   "with tcc run --pack-documents EOT_ID; "
                   "docs/pad-skipping.md)"),
          cl::sub(sub), cl::cat(flagCategory())) {}

bool TrainFlags::anyTrainingOnly() const {
  return loss.getNumOccurrences() || optimizer.getNumOccurrences() ||
         gradClip.getNumOccurrences() || gradNorm.getNumOccurrences() ||
         lrSchedule.getNumOccurrences() ||
         accum.getNumOccurrences() || freeze.getNumOccurrences() ||
         noDecay.getNumOccurrences() || lossScale.getNumOccurrences() ||
         lossScaleInit.getNumOccurrences() ||
         lossScaleGrowthInterval.getNumOccurrences() ||
         dataParallel.getNumOccurrences() || bucketSize.getNumOccurrences() ||
         packDocuments.getNumOccurrences();
}

FailureOr<PrecisionPolicy> TrainFlags::toPrecision(Location loc) const {
  loc.getContext()->getOrLoadDialect<TccDialect>();
  return parsePrecisionPolicy(loc, precision, precisionPolicy,
                              /*checkOpKinds=*/true);
}

FailureOr<TrainConfig> TrainFlags::toConfig(Location loc) const {
  if (loss.empty())
    return emitError(loc)
           << "--loss is required, e.g. --loss 'cross_entropy(logits,labels)'";
  FailureOr<PrecisionPolicy> policy = toPrecision(loc);
  if (failed(policy))
    return failure();
  // Flags left out take the option's defaults, so that a given
  // --loss-scale-init is checked against the scaling it needs.
  BuildTrainStepOptions options;
  options.loss = loss;
  options.optimizer = optimizer;
  options.lrSchedule = lrSchedule;
  options.accum = accum;
  options.freeze = freeze;
  options.noDecay = noDecay;
  options.gradNorm = gradNorm;
  options.dataParallel = dataParallel;
  options.bucketSize = bucketSize;
  if (bucketSize.getNumOccurrences() && !dataParallel)
    return emitError(loc) << "--bucket-size needs --data-parallel";
  if (gradClip.getNumOccurrences())
    options.gradClip = gradClip;
  if (lossScale.getNumOccurrences())
    options.lossScale = lossScale;
  if (lossScaleInit.getNumOccurrences())
    options.lossScaleInit = lossScaleInit;
  if (lossScaleGrowthInterval.getNumOccurrences())
    options.lossScaleGrowthInterval = lossScaleGrowthInterval;
  FailureOr<TrainConfig> config = parseTrainStepOptions(loc, options, *policy);
  if (failed(config))
    return failure();
  config->packDocuments = packDocuments;
  // The option's 0 means "no clipping"; a --grad-clip given must clip.
  if (gradClip.getNumOccurrences()) {
    config->gradClip = gradClip;
    if (failed(checkConfig(loc, *config)))
      return failure();
  }
  return config;
}

} // namespace tcc::driver
