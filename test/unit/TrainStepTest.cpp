// Unit tests of the training-step builder: @train_step of small hand-written
// models run in the reference interpreter, against the closed forms of the
// loss, its gradient and the torch.optim updates (written out below in
// double), the nanoGPT learning-rate schedule, and gradient accumulation
// against one larger batch.
#include "ErrorCapture.h"
#include "TestUtil.h"

#include "tcc/Interp/Interpreter.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace mlir;
using tcc::data::Array;
using tcc::data::DType;
using namespace testutil;

namespace {

Array scalarI64(int64_t v) { return i64({}, {v}); }

// y = x W + b over a [4,3] batch; W is [3,2].
const char *kLinear = R"mlir(
  tcc.param @w = dense<[[0.5, -1.0], [0.25, 2.0], [1.0, 0.0]]> : tensor<3x2xf32>
  tcc.param @b = dense<[0.1, -0.2]> : tensor<2xf32>
  func.func @forward(%x: tensor<BATCHx3xf32> {tcc.name = "x"}) -> (tensor<BATCHx2xf32> {tcc.name = "y"}) {
    %w = tcc.get_param @w : tensor<3x2xf32>
    %b = tcc.get_param @b : tensor<2xf32>
    %0 = tcc.matmul %x, %w : (tensor<BATCHx3xf32>, tensor<3x2xf32>) -> tensor<BATCHx2xf32>
    %1 = tcc.add %0, %b : (tensor<BATCHx2xf32>, tensor<2xf32>) -> tensor<BATCHx2xf32>
    return %1 : tensor<BATCHx2xf32>
  }
)mlir";

std::string withBatch(std::string text, int64_t batch) {
  for (size_t p; (p = text.find("BATCH")) != std::string::npos;)
    text.replace(p, 5, std::to_string(batch));
  return text;
}

class TrainStepTest : public ::testing::Test {
protected:
  TrainStepTest() { context.loadDialect<tcc::TccDialect, func::FuncDialect>(); }

  /// Parses `text`, builds the training step with `config`; fails the test
  /// (returning null) on any diagnostic.
  OwningOpRef<ModuleOp> build(const std::string &text,
                              const tcc::TrainConfig &config) {
    std::string diag;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      diag += d.str() + "\n";
      return success();
    });
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    if (!module) {
      ADD_FAILURE() << "parse failed: " << diag;
      return nullptr;
    }
    if (failed(tcc::buildTrainStep(*module, config)) ||
        failed(verify(*module))) {
      ADD_FAILURE() << "buildTrainStep failed: " << diag;
      return nullptr;
    }
    return module;
  }

  std::vector<Array> run(ModuleOp module, StringRef name,
                         const std::vector<Array> &inputs,
                         bool promote = false) {
    auto f = module.lookupSymbol<func::FuncOp>(name);
    std::vector<Array> results;
    std::string error;
    tcc::interp::Options options;
    options.promoteToF64 = promote;
    EXPECT_TRUE(tcc::interp::run(f, inputs, results, error, options)) << error;
    return results;
  }

  /// Where the tests' training flags come from.
  Location flags() { return UnknownLoc::get(&context); }

  MLIRContext context;
};

const std::vector<float> kW = {0.5f, -1.0f, 0.25f, 2.0f, 1.0f, 0.0f};
const std::vector<float> kB = {0.1f, -0.2f};
const std::vector<float> kX = {1, 2, 0, -1, 0.5f, 3, 0, 1, -2, 2, -1, 1};
const std::vector<float> kT = {1, 0, 0.5f, -1, 2, 2, 0, 0.25f};

/// Loss and gradients of mean((x W + b - t)^2), in double.
struct MseGrad {
  double loss = 0;
  std::vector<double> dw = std::vector<double>(6), db = std::vector<double>(2);
};
MseGrad mseGrad(const std::vector<double> &w, const std::vector<double> &b,
                const std::vector<float> &x, const std::vector<float> &t,
                int64_t rows) {
  MseGrad g;
  double n = double(rows * 2);
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < 2; ++c) {
      double y = b[c];
      for (int k = 0; k < 3; ++k)
        y += x[r * 3 + k] * w[k * 2 + c];
      double d = y - t[r * 2 + c];
      g.loss += d * d / n;
      // dL/dy = 2 d / n; dL/dW[k][c] = sum_r x[r][k] dL/dy[r][c].
      for (int k = 0; k < 3; ++k)
        g.dw[k * 2 + c] += x[r * 3 + k] * 2 * d / n;
      g.db[c] += 2 * d / n;
    }
  return g;
}

void expectNear(const Array &got, const std::vector<double> &want, double tol,
                const std::string &what) {
  std::vector<double> v = valuesAsDouble(got);
  ASSERT_EQ(v.size(), want.size()) << what;
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_NEAR(v[i], want[i], tol) << what << "[" << i << "]";
}

TEST_F(TrainStepTest, SgdMomentumTwoSteps) {
  tcc::TrainConfig config;
  config.loss = expectSuccess(tcc::parseLoss(flags(), "mse(y,target)"));
  config.optimizer = expectSuccess(tcc::parseOptimizer(
      flags(), "sgd:lr=0.1,momentum=0.9,weight_decay=0.01"));
  auto module = build(withBatch(kLinear, 4), config);
  ASSERT_TRUE(module);
  // (w, b, w.momentum_buffer, b.momentum_buffer, step, x, target)
  std::vector<double> w(kW.begin(), kW.end()), b(kB.begin(), kB.end());
  std::vector<double> bufW(6, 0), bufB(2, 0);
  Array aw = f32({3, 2}, kW), ab = f32({2}, kB);
  Array mw = f32({3, 2}, std::vector<float>(6, 0)), mb = f32({2}, {0, 0});
  for (int64_t step = 0; step < 2; ++step) {
    auto out = run(
        *module, "train_step",
        {aw, ab, mw, mb, scalarI64(step), f32({4, 3}, kX), f32({4, 2}, kT)});
    ASSERT_EQ(out.size(), 5u); // loss, w, b, w.buf, b.buf
    MseGrad g = mseGrad(w, b, kX, kT, 4);
    EXPECT_NEAR(valuesAsDouble(out[0])[0], g.loss, 1e-6 * g.loss)
        << "loss, step " << step;
    // d = g + wd p; buf = momentum buf + d (the first step: buf = d); p -= lr
    // buf.
    for (int i = 0; i < 6; ++i) {
      bufW[i] = 0.9 * bufW[i] + (g.dw[i] + 0.01 * w[i]);
      w[i] -= 0.1 * bufW[i];
    }
    for (int i = 0; i < 2; ++i) {
      bufB[i] = 0.9 * bufB[i] + (g.db[i] + 0.01 * b[i]);
      b[i] -= 0.1 * bufB[i];
    }
    expectNear(out[1], w, 1e-6, "w");
    expectNear(out[2], b, 1e-6, "b");
    expectNear(out[3], bufW, 1e-6, "w.momentum_buffer");
    expectNear(out[4], bufB, 1e-6, "b.momentum_buffer");
    aw = out[1], ab = out[2], mw = out[3], mb = out[4];
  }
}

TEST_F(TrainStepTest, AdamWTwoStepsWithNoDecayAndFreeze) {
  tcc::TrainConfig config;
  config.loss = expectSuccess(tcc::parseLoss(flags(), "mse(y,target)"));
  config.optimizer = expectSuccess(tcc::parseOptimizer(
      flags(), "adamw:lr=0.01,beta1=0.8,beta2=0.9,eps=1e-6,weight_decay=0.1"));
  config.noDecay = "^b$";
  auto module = build(withBatch(kLinear, 4), config);
  ASSERT_TRUE(module);
  const double lr = 0.01, b1 = 0.8, b2 = 0.9, eps = 1e-6, wd = 0.1;
  std::vector<double> w(kW.begin(), kW.end()), b(kB.begin(), kB.end());
  std::vector<double> mW(6, 0), vW(6, 0), mB(2, 0), vB(2, 0);
  Array aw = f32({3, 2}, kW), ab = f32({2}, kB);
  Array s[4] = {f32({3, 2}, std::vector<float>(6, 0)),
                f32({3, 2}, std::vector<float>(6, 0)), f32({2}, {0, 0}),
                f32({2}, {0, 0})};
  auto adamw = [&](std::vector<double> &p, std::vector<double> &m,
                   std::vector<double> &v, const std::vector<double> &g,
                   double decay, int t) {
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1 - lr * decay;
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      double mHat = m[i] / (1 - std::pow(b1, t));
      double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(b2, t)) + eps;
      p[i] -= lr * mHat / denom;
    }
  };
  for (int64_t step = 0; step < 2; ++step) {
    auto out = run(*module, "train_step",
                   {aw, ab, s[0], s[1], s[2], s[3], scalarI64(step),
                    f32({4, 3}, kX), f32({4, 2}, kT)});
    ASSERT_EQ(out.size(), 7u);
    MseGrad g = mseGrad(w, b, kX, kT, 4);
    EXPECT_NEAR(valuesAsDouble(out[0])[0], g.loss, 1e-6 * g.loss);
    adamw(w, mW, vW, g.dw, wd, int(step) + 1);
    adamw(b, mB, vB, g.db, 0.0, int(step) + 1); // --no-decay '^b$'
    expectNear(out[1], w, 1e-6, "w");
    expectNear(out[2], b, 1e-6, "b");
    expectNear(out[3], mW, 1e-6, "w.exp_avg");
    expectNear(out[4], vW, 1e-6, "w.exp_avg_sq");
    expectNear(out[5], mB, 1e-6, "b.exp_avg");
    expectNear(out[6], vB, 1e-6, "b.exp_avg_sq");
    aw = out[1], ab = out[2];
    for (int i = 0; i < 4; ++i)
      s[i] = out[3 + i];
  }

  // Frozen: b is an argument but gets no state, no update and no result.
  config.freeze = "^b$";
  auto frozen = build(withBatch(kLinear, 4), config);
  ASSERT_TRUE(frozen);
  auto f = frozen->lookupSymbol<func::FuncOp>("train_step");
  EXPECT_EQ(f.getNumArguments(),
            7u); // w, b, w.exp_avg, w.exp_avg_sq, step, x, target
  EXPECT_EQ(f.getNumResults(), 4u); // loss, w, w.exp_avg, w.exp_avg_sq
  EXPECT_EQ(f.getArgAttrOfType<StringAttr>(1, tcc::kParamAttr).getValue(), "b");
  EXPECT_EQ(f.getResultAttrOfType<StringAttr>(2, tcc::kOptStateAttr).getValue(),
            "w.exp_avg");
}

TEST_F(TrainStepTest, GradClip) {
  tcc::TrainConfig config;
  config.loss = expectSuccess(tcc::parseLoss(flags(), "mse(y,target)"));
  config.optimizer = expectSuccess(tcc::parseOptimizer(flags(), "sgd:lr=1"));
  config.gradClip = 0.5;
  auto module = build(withBatch(kLinear, 4), config);
  ASSERT_TRUE(module);
  auto out = run(*module, "train_step",
                 {f32({3, 2}, kW), f32({2}, kB), scalarI64(0), f32({4, 3}, kX),
                  f32({4, 2}, kT)});
  ASSERT_EQ(out.size(), 4u); // loss, w, b, and grad_norm (clipping computes it)
  std::vector<double> w(kW.begin(), kW.end()), b(kB.begin(), kB.end());
  MseGrad g = mseGrad(w, b, kX, kT, 4);
  double sq = 0;
  for (double v : g.dw)
    sq += v * v;
  for (double v : g.db)
    sq += v * v;
  // The norm before clipping, as clip_grad_norm_ returns it.
  expectNear(out[3], {std::sqrt(sq)}, 1e-6, "grad_norm");
  double coef = std::min(1.0, 0.5 / (std::sqrt(sq) + 1e-6));
  ASSERT_LT(coef, 0.5); // the clip is active
  for (int i = 0; i < 6; ++i)
    w[i] -= coef * g.dw[i];
  for (int i = 0; i < 2; ++i)
    b[i] -= coef * g.db[i];
  expectNear(out[1], w, 1e-6, "w");
  expectNear(out[2], b, 1e-6, "b");
}

// The loss is the parameter itself, so one SGD step with lr schedule moves
// it from 0 to exactly -lr(step) (computed in f64 via --f64 promotion).
const char *kScalar = R"mlir(
  tcc.param @p = dense<0.0> : tensor<f32>
  func.func @forward() -> (tensor<f32> {tcc.name = "loss"}) {
    %p = tcc.get_param @p : tensor<f32>
    return %p : tensor<f32>
  }
)mlir";

TEST_F(TrainStepTest, LearningRateSchedules) {
  const double lr = 6e-4, minLr = 6e-5;
  const int64_t warmup = 10, total = 100;
  auto lrAtStep = [&](ModuleOp m, int64_t step) {
    Array p = makeArray<double>("", DType::F64, {}, {0.0});
    auto out = run(m, "train_step", {p, scalarI64(step)}, /*promote=*/true);
    return -valuesAsDouble(out[1])[0];
  };
  // nanoGPT's get_lr (it from 0), as Python evaluates it.
  auto cosine = [&](int64_t it) {
    if (it < warmup)
      return lr * double(it + 1) / double(warmup);
    if (it >= total)
      return minLr;
    double ratio = double(it - warmup) / double(total - warmup);
    double coeff = 0.5 * (1.0 + std::cos(3.141592653589793 * ratio));
    return minLr + coeff * (lr - minLr);
  };
  auto linear = [&](int64_t it) {
    if (it < warmup)
      return lr * double(it + 1) / double(warmup);
    if (it >= total)
      return 0.0;
    return std::max(0.0,
                    lr * (1 - double(it - warmup) / double(total - warmup)));
  };
  for (const char *schedule :
       {"constant", "cosine:warmup=10,total=100,min=6e-5",
        "linear:warmup=10,total=100"}) {
    tcc::TrainConfig config;
    config.loss = expectSuccess(tcc::parseLoss(flags(), "loss"));
    config.optimizer =
        expectSuccess(tcc::parseOptimizer(flags(), "sgd:lr=6e-4"));
    config.schedule = expectSuccess(tcc::parseSchedule(flags(), schedule));
    auto module = build(kScalar, config);
    ASSERT_TRUE(module);
    for (int64_t it : {0, 1, 5, 9, 10, 11, 37, 54, 99, 100, 101, 1000}) {
      double want = config.schedule.kind == tcc::ScheduleSpec::Constant ? lr
                    : config.schedule.kind == tcc::ScheduleSpec::Cosine
                        ? cosine(it)
                        : linear(it);
      EXPECT_DOUBLE_EQ(lrAtStep(*module, it), want)
          << schedule << " at step " << it;
    }
  }
}

/// accum=2 over [2, rows, ...] must equal accum=1 over the [2*rows, ...]
/// batch: same loss, same new parameters and AdamW moments.
void expectSameStep(const std::vector<Array> &a, const std::vector<Array> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<double> va = valuesAsDouble(a[i]), vb = valuesAsDouble(b[i]);
    ASSERT_EQ(va.size(), vb.size());
    for (size_t j = 0; j < va.size(); ++j)
      EXPECT_NEAR(va[j], vb[j], 1e-6) << "result " << i << "[" << j << "]";
  }
}

TEST_F(TrainStepTest, AccumulationMatchesLargerBatchMse) {
  std::vector<float> x2 = kX, t2 = kT;
  for (float v : kX)
    x2.push_back(0.5f * v - 0.25f);
  for (float v : kT)
    t2.push_back(1.0f - v);
  tcc::TrainConfig config;
  config.loss = expectSuccess(tcc::parseLoss(flags(), "mse(y,target)"));
  config.optimizer =
      expectSuccess(tcc::parseOptimizer(flags(), "adamw:lr=0.01"));
  auto big = build(withBatch(kLinear, 8), config);
  config.accum = 2;
  auto accum = build(withBatch(kLinear, 4), config);
  ASSERT_TRUE(big && accum);
  std::vector<Array> state = {f32({3, 2}, kW),
                              f32({2}, kB),
                              f32({3, 2}, std::vector<float>(6, 0.01f)),
                              f32({3, 2}, std::vector<float>(6, 0.02f)),
                              f32({2}, {0.01f, 0.01f}),
                              f32({2}, {0.02f, 0.02f}),
                              scalarI64(3)};
  auto withBatchArgs = [&](std::vector<int64_t> xs, std::vector<int64_t> ts) {
    std::vector<Array> in = state;
    in.push_back(f32(std::move(xs), x2));
    in.push_back(f32(std::move(ts), t2));
    return in;
  };
  expectSameStep(run(*accum, "train_step", withBatchArgs({2, 4, 3}, {2, 4, 2})),
                 run(*big, "train_step", withBatchArgs({8, 3}, {8, 2})));
  std::vector<Array> evalIn = {f32({3, 2}, kW), f32({2}, kB)};
  auto evalAccum = evalIn, evalBig = evalIn;
  evalAccum.push_back(f32({2, 4, 3}, x2));
  evalAccum.push_back(f32({2, 4, 2}, t2));
  evalBig.push_back(f32({8, 3}, x2));
  evalBig.push_back(f32({8, 2}, t2));
  expectSameStep(run(*accum, "eval_step", evalAccum),
                 run(*big, "eval_step", evalBig));
}

// Logits [rows, 3] = x W; cross-entropy with ignored labels: micro-batches
// weigh by their number of counted labels, not equally.
const char *kClassifier = R"mlir(
  tcc.param @w = dense<[[0.5, -1.0, 0.3], [0.25, 2.0, -0.7]]> : tensor<2x3xf32>
  func.func @forward(%x: tensor<BATCHx2xf32> {tcc.name = "x"}) -> (tensor<BATCHx3xf32> {tcc.name = "logits"}) {
    %w = tcc.get_param @w : tensor<2x3xf32>
    %0 = tcc.matmul %x, %w : (tensor<BATCHx2xf32>, tensor<2x3xf32>) -> tensor<BATCHx3xf32>
    return %0 : tensor<BATCHx3xf32>
  }
)mlir";

TEST_F(TrainStepTest, AccumulationMatchesLargerBatchCrossEntropy) {
  std::vector<float> x = {1,    2,    -1, 0.5f, 0, 1, 2, -1,
                          0.5f, 0.5f, -2, 1,    1, 1, 3, -1};
  // First micro-batch: 3 counted labels, second: 1.
  std::vector<int64_t> labels = {0, 2, -100, 1, -100, -100, 2, -100};
  tcc::TrainConfig config;
  config.loss =
      expectSuccess(tcc::parseLoss(flags(), "cross_entropy(logits,labels)"));
  config.optimizer =
      expectSuccess(tcc::parseOptimizer(flags(), "sgd:lr=0.5,momentum=0.9"));
  config.gradClip = 10.0;
  auto big = build(withBatch(kClassifier, 8), config);
  config.accum = 2;
  auto accum = build(withBatch(kClassifier, 4), config);
  ASSERT_TRUE(big && accum);
  std::vector<float> w = {0.5f, -1.0f, 0.3f, 0.25f, 2.0f, -0.7f};
  Array buf = f32({2, 3}, {0.1f, 0, 0, 0, 0, -0.1f});
  auto a = run(*accum, "train_step",
               {f32({2, 3}, w), buf, scalarI64(0), f32({2, 4, 2}, x),
                i64({2, 4}, labels)});
  auto b = run(
      *big, "train_step",
      {f32({2, 3}, w), buf, scalarI64(0), f32({8, 2}, x), i64({8}, labels)});
  expectSameStep(a, b);

  // The loss is the mean over the 4 counted rows.
  double sum = 0;
  int counted = 0;
  for (int r = 0; r < 8; ++r) {
    if (labels[r] == -100)
      continue;
    double logit[3], m = -INFINITY, s = 0;
    for (int c = 0; c < 3; ++c) {
      logit[c] = x[r * 2] * w[c] + x[r * 2 + 1] * w[3 + c];
      m = std::max(m, logit[c]);
    }
    for (double l : logit)
      s += std::exp(l - m);
    sum += m + std::log(s) - logit[labels[r]];
    ++counted;
  }
  EXPECT_NEAR(valuesAsDouble(a[0])[0], sum / counted, 1e-6);
}

TEST(TrainFlagsTest, ParseErrorsNameTheFlag) {
  MLIRContext context;
  ErrorCapture errors(context);
  Location loc = UnknownLoc::get(&context);
  tcc::LossSpec loss = expectSuccess(
      tcc::parseLoss(loc, "cross_entropy(logits, labels, ignore_index=-1)"));
  EXPECT_EQ(loss.ignoreIndex, -1);
  EXPECT_EQ(loss.label, "labels");
  EXPECT_TRUE(failed(tcc::parseLoss(loc, "huber(y,t)")));
  EXPECT_EQ(
      errors.first().rfind("--loss 'huber(y,t)': unknown loss 'huber'", 0), 0u)
      << errors.first();
  EXPECT_TRUE(failed(tcc::parseLoss(loc, "mse(y)")));
  tcc::OptimizerSpec opt = expectSuccess(tcc::parseOptimizer(loc, "adamw"));
  EXPECT_EQ(opt.weightDecay, 0.01); // torch.optim.AdamW's default
  errors.clear();
  EXPECT_TRUE(failed(tcc::parseOptimizer(loc, "adamw:lr=abc")));
  EXPECT_EQ(errors.first(),
            "--optimizer 'adamw:lr=abc': lr='abc' is not a number");
  EXPECT_TRUE(failed(tcc::parseOptimizer(loc, "sgd:nesterov=1")));
  EXPECT_TRUE(failed(tcc::parseOptimizer(loc, "sgd:beta1=0.9")));
  EXPECT_TRUE(failed(tcc::parseSchedule(loc, "cosine:warmup=10")));
  EXPECT_TRUE(failed(tcc::parseSchedule(loc, "cosine:warmup=10,total=10")));
  tcc::ScheduleSpec schedule =
      expectSuccess(tcc::parseSchedule(loc, "linear:total=5"));
  EXPECT_EQ(schedule.warmup, 0);
  tcc::TrainConfig config;
  config.freeze = "(";
  errors.clear();
  EXPECT_TRUE(failed(tcc::checkConfig(loc, config)));
  EXPECT_EQ(errors.first().rfind("--freeze '(': invalid regex", 0), 0u)
      << errors.first();
  EXPECT_TRUE(tcc::matchesParamRegex("bias|ln", "h.0.ln_1.weight"));
  EXPECT_FALSE(tcc::matchesParamRegex("", "anything"));
}

} // namespace
