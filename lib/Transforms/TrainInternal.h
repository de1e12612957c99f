// Pieces of the training-step builder (TrainStep.cpp drives them): the loss
// (TrainLoss.cpp), the learning-rate schedule (TrainSchedule.cpp), gradient
// clipping and the optimizer updates (TrainOptimizer.cpp), the micro-batch
// order under --accum (TrainMicroBatches.cpp).
#ifndef TCC_LIB_TRANSFORMS_TRAININTERNAL_H
#define TCC_LIB_TRANSFORMS_TRAININTERNAL_H

#include "tcc/Transforms/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace tcc::train {

/// The loss resolved against @forward, checked before anything is built.
struct LossPlan {
  LossSpec spec;
  unsigned output = 0; ///< index of the forward result the loss reads
  /// The labels/target input of one micro-batch; null for an output loss.
  mlir::RankedTensorType labelType;
  /// Set when the labels/target are an existing @forward argument (e.g. an
  /// autoencoder's mse(y,x)) rather than a new batch input.
  std::optional<unsigned> labelArg;
};

/// Resolves `spec` against `forward`'s named results and arguments; emits an
/// error on `forward` and fails when they do not fit.
mlir::LogicalResult planLoss(mlir::func::FuncOp forward, const LossSpec &spec,
                             LossPlan &plan);

/// The loss of one micro-batch as a fraction: the mean loss over all
/// micro-batches is sum(numerator) / sum(denominator). Cross-entropy gives
/// (loss sum, counted labels), so micro-batches weigh by token count; the
/// others give (mean, null), each micro-batch weighing the same.
struct MicroLoss {
  mlir::Value numerator;
  mlir::Value denominator;
};
MicroLoss buildMicroLoss(mlir::OpBuilder &b, mlir::Location loc,
                         const LossPlan &plan, mlir::Value output,
                         mlir::Value label);
/// For a cross-entropy loss: the labels of one micro-batch that `logits`
/// predict right (the label's logit is the row's largest, a tie counting as
/// right), over the rows whose label is not ignore_index, as an f32 scalar.
/// The accuracy is its sum over micro-batches over the sum of the
/// cross-entropy's counts.
mlir::Value buildCorrectCount(mlir::OpBuilder &b, mlir::Location loc,
                              const LossPlan &plan, mlir::Value logits,
                              mlir::Value label);
/// For a cross-entropy loss: the labels of `labels` (all micro-batches)
/// that are not ignore_index, as a scalar of `type` (the cross-entropy
/// count's). Under --accum it is the mean's denominator: it reads no
/// logits, so a micro-batch's backward pass does not wait for the other
/// micro-batches' forward passes.
mlir::Value countLabels(mlir::OpBuilder &b, mlir::Location loc,
                        const LossPlan &plan, mlir::Value labels,
                        mlir::Type type);
/// The mean loss over `parts` (a float scalar of the output's element type).
/// With `allReduceCount` (a data-parallel train step) the summed
/// denominator is replaced by its mean over the ranks (exec.all_reduce,
/// bucket 0 on the compute stream): each rank's loss is then its loss sum
/// over 1/N of the global count, whose mean over the ranks, like that of
/// its gradients, is the global mean. A given `count` (countLabels, already
/// reduced over the ranks) is the denominator in place of the parts' sum.
mlir::Value combineLosses(mlir::OpBuilder &b, mlir::Location loc,
                          llvm::ArrayRef<MicroLoss> parts,
                          bool allReduceCount = false,
                          mlir::Value count = nullptr);
/// `count` replaced by its mean over the ranks (exec.all_reduce, bucket 0).
mlir::Value allReduceCount(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value count);

/// Under --accum: reorders `step` (the same ops) so that each micro-batch's
/// forward and backward pass run before the next micro-batch's (its
/// slices of the `batch` arguments say which ops are whose), and an op that
/// joins two micro-batches (a gradient sum) runs right after its last
/// operand. Only the summed gradients carry over from one micro-batch to
/// the next, as in PyTorch's accumulation loop. Returns the number of ops
/// moved (TrainMicroBatches.cpp).
int64_t runMicroBatchesInOrder(mlir::func::FuncOp step,
                               mlir::ValueRange batch);

/// The learning rate of step `step` (tensor<i64>, steps already taken) as a
/// tensor<f64>, computed in the IR.
mlir::Value buildLearningRate(mlir::OpBuilder &b, mlir::Location loc,
                              const OptimizerSpec &opt,
                              const ScheduleSpec &schedule, mlir::Value step);

/// The global L2 norm of `grads` as clip_grad_norm_ returns it (an f32
/// scalar). Inf or NaN when any gradient element is. Two kernels per group
/// of gradients (about kNormGroups of them, each at most kNormGroupBytes of
/// squares, a transient vector) and two more. `dataParallel`: the sum of
/// squares passes through a scattered_only exec.all_reduce before its root,
/// so that ranks holding slices of the gradients (ZeRO-1) add their parts.
mlir::Value globalGradNorm(mlir::OpBuilder &b, mlir::Location loc,
                           llvm::ArrayRef<mlir::Value> grads,
                           bool dataParallel);
inline constexpr int64_t kNormGroups = 8;
inline constexpr int64_t kNormGroupBytes = int64_t(64) << 20;

/// Multiplies every gradient by the scalar `factor` (cast to its type).
void scaleGradients(mlir::OpBuilder &b, mlir::Location loc, mlir::Value factor,
                    llvm::MutableArrayRef<mlir::Value> grads);

/// Scales `grads` in place as torch.nn.utils.clip_grad_norm_(max_norm)
/// given their global norm `total`.
void clipGradients(mlir::OpBuilder &b, mlir::Location loc, double maxNorm,
                   mlir::Value total, llvm::MutableArrayRef<mlir::Value> grads);

/// Dynamic loss scaling's state update, given whether this step's
/// gradients are all finite (`ok`, an i1 scalar): the new scale (halved on
/// overflow, doubled after `growthInterval` clean steps), clean-step count
/// and skipped-update count.
struct ScaleState {
  mlir::Value scale, goodSteps, skipped;
};
ScaleState updateLossScale(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value ok, const ScaleState &state,
                           int64_t growthInterval);

/// An i1 scalar: whether the f32 scalar `norm` is finite (not inf or NaN).
mlir::Value isFinite(mlir::OpBuilder &b, mlir::Location loc, mlir::Value norm);

/// The optimizer state slots of one parameter, in argument order.
llvm::SmallVector<llvm::StringRef> stateSlots(const OptimizerSpec &opt);

/// One optimizer step on one parameter; `state` holds stateSlots(opt)
/// values; `skip` (an i1 scalar, or null) leaves everything unchanged when
/// true. `working` (or null) is the parameter's bf16/f16 working copy,
/// rewritten by the same op. Returns the new parameter, the new state and
/// the new working copy when there is one.
llvm::SmallVector<mlir::Value>
buildUpdate(mlir::OpBuilder &b, mlir::Location loc, const OptimizerSpec &opt,
            double weightDecay, mlir::Value param, mlir::Value grad,
            mlir::ValueRange state, mlir::Value lr, mlir::Value step,
            mlir::Value skip, mlir::Value working);

/// A scalar (rank-0) constant.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type elementType, double value);

} // namespace tcc::train

#endif // TCC_LIB_TRANSFORMS_TRAININTERNAL_H
