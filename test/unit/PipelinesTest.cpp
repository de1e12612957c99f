// Unit tests of the stage lists (include/tcc/Transforms/Pipelines.h): a
// config survives being spelt as tcc-build-train-step's options and read
// back (the train pipeline creates the pass that way, so a lossy spelling
// would change what `tcc compile` builds), and the stages come in the order
// the docs and the dump files name them.
#include "ErrorCapture.h"

#include "tcc/Transforms/Pipelines.h"
#include "tcc/Transforms/Passes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using tcc::BuildTrainStepOptions;
using tcc::TrainConfig;

/// The config of `options` under `precision` ("fp32", "bf16", "fp16").
TrainConfig parse(const BuildTrainStepOptions &options,
                  const std::string &precision = "fp32") {
  mlir::MLIRContext context;
  testutil::ErrorCapture errors(context);
  mlir::Location loc = mlir::UnknownLoc::get(&context);
  tcc::PrecisionPolicy policy =
      testutil::expectSuccess(tcc::parsePrecisionPolicy(loc, precision, ""));
  TrainConfig config =
      testutil::expectSuccess(tcc::parseTrainStepOptions(loc, options, policy));
  EXPECT_EQ(errors.first(), "");
  return config;
}

/// parse(trainStepOptions(c)) == c, compared through describeTrainConfig
/// (every field, doubles in round-trip precision).
void expectRoundTrip(const BuildTrainStepOptions &options,
                     const std::string &precision = "fp32") {
  TrainConfig config = parse(options, precision);
  // The precision is not an option of the pass: @forward's types carry it.
  TrainConfig back = parse(tcc::trainStepOptions(config), "fp32");
  back.precision = config.precision;
  EXPECT_EQ(tcc::describeTrainConfig(back), tcc::describeTrainConfig(config));
}

TEST(PipelinesTest, TrainStepOptionsRoundTrip) {
  BuildTrainStepOptions o;
  o.loss = "cross_entropy(logits,labels)";
  expectRoundTrip(o);

  o.loss = "mse(y,target)";
  o.optimizer = "sgd:lr=0.1,momentum=0.9,nesterov=1,weight_decay=1e-4";
  o.gradClip = 0.3;
  o.gradNorm = true;
  EXPECT_NE(tcc::describeTrainConfig(parse(o)).find(" grad_norm "),
            std::string::npos);
  o.lrSchedule = "linear:warmup=3,total=50";
  o.accum = 4;
  o.freeze = "^wte\\.";
  o.noDecay = "bias|ln";
  expectRoundTrip(o);

  o.loss = "cross_entropy(logits,labels,ignore_index=-1)";
  o.optimizer = "adamw:lr=3e-4,beta1=0.85,beta2=0.95,eps=1e-7,weight_decay=0.1";
  o.lrSchedule = "cosine:warmup=10,total=1000,min=6e-5";
  o.lossScale = "1024";
  expectRoundTrip(o, "bf16");

  // fp16 defaults to dynamic scaling, with its init and growth interval.
  o.lossScale = "";
  o.lossScaleInit = 512;
  o.lossScaleGrowthInterval = 7;
  expectRoundTrip(o, "fp16");
  o.loss = "loss";
  o.lossScale = "none";
  o.lossScaleInit = BuildTrainStepOptions().lossScaleInit;
  o.lossScaleGrowthInterval = BuildTrainStepOptions().lossScaleGrowthInterval;
  expectRoundTrip(o, "fp16");
}

TEST(PipelinesTest, OptionErrorsNameTheOption) {
  mlir::MLIRContext context;
  testutil::ErrorCapture errors(context);
  mlir::Location loc = mlir::UnknownLoc::get(&context);
  tcc::PrecisionPolicy policy;
  BuildTrainStepOptions o;
  o.loss = "mse(y,target)";
  o.lossScaleInit = 1024;
  EXPECT_TRUE(failed(tcc::parseTrainStepOptions(loc, o, policy)));
  EXPECT_EQ(
      errors.first().rfind("--loss-scale-init needs dynamic loss scaling", 0),
      0u)
      << errors.first();
  o.lossScaleInit = BuildTrainStepOptions().lossScaleInit;
  o.gradClip = -1;
  errors.clear();
  EXPECT_TRUE(failed(tcc::parseTrainStepOptions(loc, o, policy)));
  EXPECT_EQ(errors.first(), "--grad-clip '-1': must be a positive number");
  errors.clear();
  EXPECT_TRUE(failed(tcc::parsePrecisionPolicy(loc, "fp32", "softmax=fp32")));
  EXPECT_EQ(errors.first(),
            "--precision-policy needs --precision bf16 or fp16");
}

std::vector<std::string> names(llvm::ArrayRef<tcc::PipelineStage> stages) {
  std::vector<std::string> out;
  for (const tcc::PipelineStage &stage : stages)
    out.push_back(stage.name);
  return out;
}

TEST(PipelinesTest, StagesInOrder) {
  BuildTrainStepOptions o;
  o.loss = "mse(y,target)";
  EXPECT_EQ(names(tcc::trainStages(parse(o))),
            (std::vector<std::string>{"lower-precision", "merge-projections",
                                      "build-train-step", "fuse-layer-norm-grad"}));
  tcc::LowerConfig lower;
  lower.roots.assign(tcc::trainingRoots().begin(), tcc::trainingRoots().end());
  EXPECT_EQ(
      names(tcc::lowerStages(lower)),
      (std::vector<std::string>{"drop-unreachable", "expand-batch-norm", "pack-tokens",
                                "fold-attention-layout", "fuse-gemm-epilogue",
                                "fuse", "canonicalize", "cse", "lower-calls", "plan-memory"}));
}

} // namespace
