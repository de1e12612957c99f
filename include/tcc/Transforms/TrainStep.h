// Building the training step from a forward model: loss, gradients,
// gradient clipping, learning-rate schedule and optimizer update as IR.
#ifndef TCC_TRANSFORMS_TRAINSTEP_H
#define TCC_TRANSFORMS_TRAINSTEP_H

#include "tcc/Transforms/Precision.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tcc {

/// `--loss`: cross_entropy(logits,labels[,ignore_index=N]) | mse(out,target)
/// | <output>.
struct LossSpec {
  enum Kind { CrossEntropy, Mse, Output } kind = Output;
  std::string output; ///< the forward result the loss reads
  std::string label;  ///< the input holding labels/targets (new unless
                      ///< @forward already has an input of that name)
  int64_t ignoreIndex = -100;
};

/// `--optimizer`: sgd:lr=..,momentum=..,weight_decay=..,nesterov=0|1 or
/// adamw:lr=..,beta1=..,beta2=..,eps=..,weight_decay=.. with PyTorch's
/// defaults (parseOptimizer sets AdamW's weight_decay default, 0.01).
struct OptimizerSpec {
  enum Kind { Sgd, AdamW } kind = AdamW;
  double lr = 1e-3;
  double momentum = 0, weightDecay = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

/// `--lr-schedule`: constant | cosine:warmup=W,total=N,min=M |
/// linear:warmup=W,total=N, nanoGPT's convention with `it` from 0.
struct ScheduleSpec {
  enum Kind { Constant, Cosine, Linear } kind = Constant;
  int64_t warmup = 0, total = 0;
  double minLr = 0;
};

/// Loss scaling (mostly for fp16): the backward pass is seeded with the
/// scale instead of 1 and the gradients are divided by it again in fp32.
/// Dynamic scaling keeps the scale as optimizer state: a step whose
/// gradients are not finite is skipped and halves the scale; every
/// `growthInterval` clean steps double it (torch.cuda.amp.GradScaler).
struct LossScaleSpec {
  enum Kind { None, Static, Dynamic } kind = None;
  double scale = 65536; ///< the static scale, or the dynamic one's start
  int64_t growthInterval = 2000;
};

struct TrainConfig {
  LossSpec loss;
  OptimizerSpec optimizer;
  std::optional<double> gradClip; ///< max global L2 norm, as clip_grad_norm_
  /// Return the global gradient norm (metric grad_norm) also when neither
  /// clipping nor dynamic loss scaling computes it (--grad-norm).
  bool gradNorm = false;
  ScheduleSpec schedule;
  int64_t accum = 1;   ///< micro-batches per optimizer step
  std::string freeze;  ///< regex of parameters that are not trained
  std::string noDecay; ///< regex of parameters without weight decay
  PrecisionPolicy precision; ///< applied to @forward before differentiating
  LossScaleSpec lossScale;
  /// Data-parallel training: gradients, the loss and the label count are
  /// all-reduced (mean) over the ranks, gradients in buckets of about
  /// `bucketBytes` in the order backward produces them.
  bool dataParallel = false;
  int64_t bucketBytes = 25 << 20;
  /// Packed documents: tcc-pack-documents runs on @forward first (input
  /// position_ids, attention within each document).
  bool packDocuments = false;
};

/// Flag parsers. A malformed value is an error diagnostic at `loc` (where
/// the flags came from: the command line, a pass's op) naming the flag and
/// the offending text, e.g. `--loss 'huber(y,t)': unknown loss 'huber'...`.
mlir::FailureOr<LossSpec> parseLoss(mlir::Location loc, llvm::StringRef text);
mlir::FailureOr<OptimizerSpec> parseOptimizer(mlir::Location loc,
                                              llvm::StringRef text);
mlir::FailureOr<ScheduleSpec> parseSchedule(mlir::Location loc,
                                            llvm::StringRef text);
/// "none" | "dynamic" | a positive number (a static scale), keeping the
/// spec's scale and growth interval for "dynamic".
mlir::LogicalResult parseLossScale(mlir::Location loc, llvm::StringRef text,
                                   LossScaleSpec &spec);
/// Checks the values the parsers do not see: accum >= 1, grad clip > 0 and
/// valid `--freeze` / `--no-decay` regexes. Same error contract as the
/// parsers.
mlir::LogicalResult checkConfig(mlir::Location loc, const TrainConfig &config);

/// tcc-build-train-step's options (Passes.h): the training flags' text.
struct BuildTrainStepOptions;

/// The options as a config for a @forward that computes under `precision`
/// (tcc-lower-precision ran on it): every value parsed and checked as by
/// checkConfig; under fp16 dynamic loss scaling is the default; a loss-scale
/// init or growth interval other than its default needs dynamic scaling.
/// Same error contract as the parsers.
mlir::FailureOr<TrainConfig>
parseTrainStepOptions(mlir::Location loc, const BuildTrainStepOptions &options,
                      const PrecisionPolicy &precision);

/// The options that parseTrainStepOptions reads back as `config` (given its
/// precision): pipelines create tcc-build-train-step from a config with
/// them, so the pass prints (--dump-pass-pipeline) exactly what it runs.
BuildTrainStepOptions trainStepOptions(const TrainConfig &config);

/// Every field of `config` on one line ("loss=... optimizer=... accum=...
/// freeze='...' no_decay='...'"): hashed into the checkpoint fingerprint and
/// stored in the artifact's manifest and in checkpoints, so that a refused
/// resume can say which fields differ.
std::string describeTrainConfig(const TrainConfig &config);

/// Whether parameter `name` matches a `--freeze` / `--no-decay` regex: an
/// unanchored search, like Python's re.search (anchor with ^...$). An empty
/// regex matches nothing.
bool matchesParamRegex(llvm::StringRef regex, llvm::StringRef name);

/// Argument and result attributes of @train_step / @eval_step, by which a
/// runner binds values without relying on their positions.
inline constexpr llvm::StringLiteral kParamAttr = "tcc.param"; // "<param>"
inline constexpr llvm::StringLiteral kOptStateAttr =
    "tcc.opt_state";                                         // "<param>.<slot>"
/// On a parameter's bf16/f16 working copy (arguments, and @train_step's
/// results for trained parameters): "<param>". The runtime keeps it equal to
/// the parameter rounded to nearest even; the optimizer update rewrites it.
inline constexpr llvm::StringLiteral kWorkingAttr = "tcc.working";
inline constexpr llvm::StringLiteral kStepAttr = "tcc.step"; // unit
inline constexpr llvm::StringLiteral kNameAttr =
    "tcc.name"; // batch input / "loss" / a metric
/// A scalar result named other than "loss" is a metric (plan role "metric",
/// tcc_read_metric; the names are runtime/plan/plan.h's): @train_step's
/// grad_norm when it computes the norm, @eval_step's correct / counted for
/// a cross-entropy loss.
inline constexpr llvm::StringLiteral kAccumAttr =
    "tcc.accum"; // i64, on the functions
/// On an optimizer-state argument that does not start at zero (the loss
/// scale): its initial value, an f64 attribute.
inline constexpr llvm::StringLiteral kInitAttr = "tcc.init";
/// Optimizer-state names of dynamic loss scaling (scalars).
inline constexpr llvm::StringLiteral kLossScaleState = "loss_scale"; // f32
inline constexpr llvm::StringLiteral kGoodStepsState =
    "loss_scale.good_steps"; // i64: clean steps since the scale last changed
inline constexpr llvm::StringLiteral kSkippedState =
    "loss_scale.skipped"; // i64: updates skipped so far

/// Adds `@train_step` and `@eval_step` to a module holding `@forward` and its
/// `tcc.param`s (see docs/training.md for the signatures and attributes).
/// The step computes in @forward's types: under bf16/fp16, @forward has been
/// lowered to config.precision already (trainStages() runs
/// tcc-lower-precision first). Emits a diagnostic and fails when the config
/// does not fit the model.
mlir::LogicalResult buildTrainStep(mlir::ModuleOp module,
                                   const TrainConfig &config);

} // namespace tcc

#endif // TCC_TRANSFORMS_TRAINSTEP_H
