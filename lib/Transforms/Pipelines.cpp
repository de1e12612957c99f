// The stage lists of Pipelines.h and their registration as tcc-opt
// pipelines. Stages are built from checked configs and add their passes with
// explicit options, so a pass manager prints (--dump-pass-pipeline) exactly
// what runs.
#include "tcc/Transforms/Pipelines.h"

#include "tcc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace tcc {

SmallVector<PipelineStage> forwardStages(const PrecisionPolicy &precision) {
  LowerPrecisionOptions options;
  options.precision = precisionName(precision.precision).str();
  options.policyText = describeOverrides(precision);
  // Before build-train-step the module's functions are the forward model:
  // @forward and what it calls.
  return {
      {"lower-precision", "tcc-lower-precision", [options](OpPassManager &pm) {
         pm.addNestedPass<func::FuncOp>(createLowerPrecision(options));
       }},
      // After the precision casts, so that the concatenated weights are the
      // parameters' working copies.
      {"merge-projections", "tcc-merge-projections", [](OpPassManager &pm) {
         pm.addNestedPass<func::FuncOp>(createMergeProjections());
       }}};
}

SmallVector<PipelineStage> trainStages(const TrainConfig &config) {
  SmallVector<PipelineStage> stages;
  if (config.packDocuments)
    stages.push_back({"pack-documents", "tcc-pack-documents",
                      [](OpPassManager &pm) { pm.addPass(createPackDocuments()); }});
  stages.append(forwardStages(config.precision));
  BuildTrainStepOptions options = trainStepOptions(config);
  stages.push_back({"build-train-step", "tcc-build-train-step",
                    [options](OpPassManager &pm) {
                      pm.addPass(createBuildTrainStep(options));
                    }});
  // Before rematerialisation, which then orders the bias gradients' updates
  // by where the layer norm gradients now make them.
  stages.push_back({"fuse-layer-norm-grad", "tcc-fuse-layer-norm-grad",
                    [](OpPassManager &pm) {
                      pm.addNestedPass<func::FuncOp>(createFuseLayerNormGrad());
                    }});
  return stages;
}

PipelineStage rematerializeStage(const MemoryBudget &budget) {
  RematerializeOptions options;
  options.budget = budget.budget;
  options.fixedBytes = budget.fixedBytes;
  return {"rematerialize", "tcc-rematerialize", [options](OpPassManager &pm) {
            pm.addPass(createRematerialize(options));
          }};
}

ArrayRef<StringRef> trainingRoots() {
  static const StringRef roots[] = {"train_step", "eval_step"};
  return roots;
}

ArrayRef<StringRef> inferenceRoots() {
  static const StringRef roots[] = {"forward"};
  return roots;
}

SmallVector<PipelineStage> lowerStages(const LowerConfig &config) {
  DropUnreachableOptions drop;
  drop.roots.assign(config.roots.begin(), config.roots.end());
  PlanMemoryOptions plan;
  plan.order = config.order;
  return {
      {"drop-unreachable", "tcc-drop-unreachable",
       [drop](OpPassManager &pm) { pm.addPass(createDropUnreachable(drop)); }},
      {"expand-batch-norm", "tcc-expand-batch-norm",
       [](OpPassManager &pm) {
         pm.addNestedPass<func::FuncOp>(createExpandBatchNorm());
       }},
      {"pack-tokens", "tcc-pack-tokens",
       [](OpPassManager &pm) {
         pm.addNestedPass<func::FuncOp>(createPackTokens());
       }},
      {"fold-attention-layout", "tcc-fold-attention-layout",
       [](OpPassManager &pm) {
         pm.addNestedPass<func::FuncOp>(createFoldAttentionLayout());
       }},
      {"fuse-gemm-epilogue", "tcc-fuse-gemm-epilogue",
       [](OpPassManager &pm) {
         pm.addNestedPass<func::FuncOp>(createFuseGemmEpilogue());
       }},
      {"fuse", "tcc-fuse", [](OpPassManager &pm) { pm.addPass(createFuse()); }},
      {"canonicalize", "canonicalize",
       [](OpPassManager &pm) { pm.addPass(createCanonicalizerPass()); }},
      {"cse", "cse", [](OpPassManager &pm) { pm.addPass(createCSEPass()); }},
      {"lower-calls", "tcc-lower-calls",
       [](OpPassManager &pm) {
         pm.addNestedPass<func::FuncOp>(createLowerCalls());
       }},
      {"plan-memory", "tcc-plan-memory",
       [plan](OpPassManager &pm) {
         pm.addNestedPass<func::FuncOp>(createPlanMemory(plan));
       }},
  };
}

LogicalResult runStages(ModuleOp module, ArrayRef<PipelineStage> stages,
                        AfterStage afterStage, TimingScope *timing) {
  for (const PipelineStage &stage : stages) {
    PassManager pm(module.getContext());
    stage.add(pm);
    // One scope per stage, named after it: MLIR keys pass timers by the
    // pass object's address, which a later stage's pass may reuse, so that
    // scopes shared by several stages would report it under another name.
    TimingScope scope;
    if (timing) {
      scope = timing->nest(stage.name);
      pm.enableTiming(scope);
    }
    if (failed(pm.run(module)))
      return failure();
    if (afterStage && failed(afterStage(stage)))
      return failure();
  }
  return success();
}

namespace {

/// --tcc-train-pipeline's options: tcc-build-train-step's (with its defaults)
/// and the precision.
struct TrainPipelineOptions : PassPipelineOptions<TrainPipelineOptions> {
  Option<std::string> loss{
      *this, "loss",
      llvm::cl::desc("cross_entropy(LOGITS,LABELS[,ignore_index=N]), "
                     "mse(OUTPUT,TARGET) or a scalar output's name")};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("sgd:lr=..,momentum=..,weight_decay=..,nesterov=0|1 or "
                     "adamw:lr=..,beta1=..,beta2=..,eps=..,weight_decay=.."),
      llvm::cl::init(BuildTrainStepOptions().optimizer)};
  Option<double> gradClip{
      *this, "grad-clip",
      llvm::cl::desc("clip the global gradient L2 norm to this value (0: no "
                     "clipping)"),
      llvm::cl::init(BuildTrainStepOptions().gradClip)};
  Option<bool> gradNorm{
      *this, "grad-norm",
      llvm::cl::desc("return the global gradient L2 norm (metric grad_norm) "
                     "also without clipping or dynamic loss scaling"),
      llvm::cl::init(BuildTrainStepOptions().gradNorm)};
  Option<std::string> lrSchedule{
      *this, "lr-schedule",
      llvm::cl::desc("constant, cosine:warmup=W,total=N,min=M or "
                     "linear:warmup=W,total=N"),
      llvm::cl::init(BuildTrainStepOptions().lrSchedule)};
  Option<int64_t> accum{
      *this, "accum",
      llvm::cl::desc("micro-batches per optimizer step (gradient "
                     "accumulation)"),
      llvm::cl::init(BuildTrainStepOptions().accum)};
  Option<std::string> freeze{
      *this, "freeze",
      llvm::cl::desc("regex of parameters that are not trained")};
  Option<std::string> noDecay{
      *this, "no-decay",
      llvm::cl::desc("regex of parameters trained without weight decay")};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32, bf16 or fp16: runs tcc-lower-precision on the "
                     "forward model first"),
      llvm::cl::init("fp32")};
  Option<std::string> precisionPolicy{
      *this, "precision-policy",
      llvm::cl::desc("per op kind overrides of the precision policy: "
                     "OP=low|fp32,...")};
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("none, dynamic or a static scale (default: dynamic for "
                     "fp16, else none)")};
  Option<double> lossScaleInit{
      *this, "loss-scale-init",
      llvm::cl::desc("the dynamic loss scale's initial value"),
      llvm::cl::init(BuildTrainStepOptions().lossScaleInit)};
  Option<int64_t> lossScaleGrowthInterval{
      *this, "loss-scale-growth-interval",
      llvm::cl::desc("clean steps before the dynamic scale doubles"),
      llvm::cl::init(BuildTrainStepOptions().lossScaleGrowthInterval)};
  Option<bool> packDocuments{
      *this, "pack-documents",
      llvm::cl::desc("runs tcc-pack-documents on the forward model first "
                     "(input position_ids, attention within each document)"),
      llvm::cl::init(false)};
};

/// --tcc-lower-pipeline's options.
struct LowerPipelineOptions : PassPipelineOptions<LowerPipelineOptions> {
  Option<std::string> kind{
      *this, "kind",
      llvm::cl::desc("training (roots @train_step and @eval_step) or "
                     "inference (root @forward)"),
      llvm::cl::init("training")};
  Option<std::string> order{
      *this, "order",
      llvm::cl::desc("tcc-plan-memory's placement order: best, size or "
                     "definition"),
      llvm::cl::init("best")};
};

using ErrorHandler = function_ref<LogicalResult(const Twine &)>;

LogicalResult buildTrainPipeline(OpPassManager &pm, StringRef text,
                                 ErrorHandler errorHandler) {
  TrainPipelineOptions o;
  if (failed(o.parseFromString(text)))
    return failure();
  if (o.loss.empty())
    return errorHandler("tcc-train-pipeline needs the loss option");
  BuildTrainStepOptions step;
  step.loss = o.loss;
  step.optimizer = o.optimizer;
  step.gradClip = o.gradClip;
  step.gradNorm = o.gradNorm;
  step.lrSchedule = o.lrSchedule;
  step.accum = o.accum;
  step.freeze = o.freeze;
  step.noDecay = o.noDecay;
  step.lossScale = o.lossScale;
  step.lossScaleInit = o.lossScaleInit;
  step.lossScaleGrowthInterval = o.lossScaleGrowthInterval;
  // A pipeline is built before there is a module (or a context) to report
  // on: MLIR takes its errors as text. The flag parsers' diagnostics go
  // there from a context of their own, which has no ops registered, so
  // tcc-lower-precision checks the op kinds when it runs.
  MLIRContext context(MLIRContext::Threading::DISABLED);
  std::string error;
  ScopedDiagnosticHandler toText(&context, [&](Diagnostic &diag) {
    if (error.empty())
      error = diag.str();
    return success();
  });
  Location loc = UnknownLoc::get(&context);
  FailureOr<PrecisionPolicy> precision =
      parsePrecisionPolicy(loc, o.precision, o.precisionPolicy);
  if (failed(precision))
    return errorHandler("tcc-train-pipeline: " + error);
  FailureOr<TrainConfig> config = parseTrainStepOptions(loc, step, *precision);
  if (failed(config))
    return errorHandler("tcc-train-pipeline: " + error);
  config->packDocuments = o.packDocuments;
  for (const PipelineStage &stage : trainStages(*config))
    stage.add(pm);
  return success();
}

LogicalResult buildLowerPipeline(OpPassManager &pm, StringRef text,
                                 ErrorHandler errorHandler) {
  LowerPipelineOptions o;
  if (failed(o.parseFromString(text)))
    return failure();
  LowerConfig config;
  if (o.kind == "training")
    config.roots.assign(trainingRoots().begin(), trainingRoots().end());
  else if (o.kind == "inference")
    config.roots.assign(inferenceRoots().begin(), inferenceRoots().end());
  else
    return errorHandler("tcc-lower-pipeline: kind '" + o.kind.getValue() +
                        "' is not training or inference");
  config.order = o.order;
  for (const PipelineStage &stage : lowerStages(config))
    stage.add(pm);
  return success();
}

} // namespace

void registerTccPipelines() {
  registerPassPipeline(
      "tcc-train-pipeline",
      "The training step from a forward model: lower-precision (with "
      "precision=bf16|fp16), build-train-step",
      buildTrainPipeline,
      [](function_ref<void(const mlir::detail::PassOptions &)> print) {
        print(TrainPipelineOptions());
      });
  registerPassPipeline(
      "tcc-lower-pipeline",
      "A training (or inference) module to what an artifact holds: "
      "drop-unreachable, fuse-gemm-epilogue, fuse, canonicalize, cse, "
      "plan-memory",
      buildLowerPipeline,
      [](function_ref<void(const mlir::detail::PassOptions &)> print) {
        print(LowerPipelineOptions());
      });
}

} // namespace tcc
