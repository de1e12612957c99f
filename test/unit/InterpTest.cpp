// Unit tests of the reference interpreter: small MLIR functions against
// values derived by hand (closed forms in the comments and expectations).
#include "TestUtil.h"

#include "tcc/Interp/Interpreter.h"
#include "tcc/TccOps.h"

#include "kernels/dropout_hash.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace mlir;
using tcc::data::Array;
using tcc::data::DType;
using namespace testutil;

namespace {

void expectValues(const Array &a, const std::vector<double> &want,
                  double tol = 1e-6) {
  std::vector<double> got = valuesAsDouble(a);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
        << "element " << i;
}

class InterpTest : public ::testing::Test {
protected:
  InterpTest() {
    context.loadDialect<tcc::TccDialect, func::FuncDialect>();
    context.allowUnregisteredDialects();
  }

  func::FuncOp parse(const std::string &source) {
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module)
      return nullptr;
    return *module->getOps<func::FuncOp>().begin();
  }

  /// Runs the first function of `source`; fails the test on any error.
  std::vector<Array> run(const std::string &source,
                         const std::vector<Array> &inputs,
                         tcc::interp::Options options = {}) {
    func::FuncOp func = parse(source);
    EXPECT_TRUE(func) << "parse failed";
    std::vector<Array> results;
    std::string error;
    if (func)
      EXPECT_TRUE(tcc::interp::run(func, inputs, results, error, options))
          << error;
    return results;
  }

  /// Runs and expects a failure; returns the error.
  std::string runError(const std::string &source,
                       const std::vector<Array> &inputs) {
    func::FuncOp func = parse(source);
    EXPECT_TRUE(func) << "parse failed";
    std::vector<Array> results;
    std::string error;
    EXPECT_FALSE(func && tcc::interp::run(func, inputs, results, error));
    return error;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(InterpTest, SoftmaxOfOneTwoThree) {
  auto r = run(R"(func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
    %0 = tcc.softmax %x {axis = 0 : i64} : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  })",
               {f32({3}, {1, 2, 3})});
  double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expectValues(r[0], {std::exp(1.0) / s, std::exp(2.0) / s, std::exp(3.0) / s});
}

TEST_F(InterpTest, SoftmaxAndLogSoftmaxAreStable) {
  // Shifted by 1000, exp would overflow without subtracting the max first.
  auto r = run(
      R"(func.func @f(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
    %0 = tcc.softmax %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = tcc.log_softmax %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
  })",
      {f32({2, 3}, {1001, 1002, 1003, 1, 2, 3})});
  double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  std::vector<double> p = {std::exp(1.0) / s, std::exp(2.0) / s,
                           std::exp(3.0) / s};
  expectValues(r[0], {p[0], p[1], p[2], p[0], p[1], p[2]});
  std::vector<double> lp = {std::log(p[0]), std::log(p[1]), std::log(p[2])};
  expectValues(r[1], {lp[0], lp[1], lp[2], lp[0], lp[1], lp[2]}, 1e-5);
}

TEST_F(InterpTest, LayerNormOfAKnownRow) {
  // Row [1, 2, 3, 4]: mean 2.5, biased variance 1.25, so
  // y = (x - 2.5) / sqrt(1.25) * scale + bias.
  auto r = run(
      R"(func.func @f(%x: tensor<1x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<1x4xf32> {
    %0 = tcc.layer_norm %x scale %s bias %b {axis = 1 : i64, epsilon = 0.0 : f64} : (tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  })",
      {f32({1, 4}, {1, 2, 3, 4}), f32({4}, {1, 1, 2, 2}),
       f32({4}, {0, 1, 0, 1})});
  double k = 1 / std::sqrt(1.25);
  expectValues(r[0], {-1.5 * k, -0.5 * k + 1, 0.5 * k * 2, 1.5 * k * 2 + 1});
}

TEST_F(InterpTest, LayerNormOverTwoDimsWithoutAffine) {
  // Normalises over [1, 3): each batch row of 4 values, eps 1 shrinks it.
  auto r = run(R"(func.func @f(%x: tensor<2x2x2xf32>) -> tensor<2x2x2xf32> {
    %0 = tcc.layer_norm %x {axis = 1 : i64, epsilon = 1.0 : f64} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    return %0 : tensor<2x2x2xf32>
  })",
               {f32({2, 2, 2}, {1, 2, 3, 4, 10, 10, 10, 10})});
  double k = 1 / std::sqrt(1.25 + 1.0);
  expectValues(r[0], {-1.5 * k, -0.5 * k, 0.5 * k, 1.5 * k, 0, 0, 0, 0});
}

TEST_F(InterpTest, MatmulTransposesAndBatchBroadcast) {
  // a = [[1,2],[3,4]], stored transposed as [[1,3],[2,4]]; b = [[5,6],[7,8]]
  // stored transposed too: a @ b = [[19,22],[43,50]]. The rhs batch is 1 and
  // broadcasts against the lhs batch of 2 (second lhs matrix = 2a).
  auto r = run(
      R"(func.func @f(%a: tensor<2x2x2xf32>, %b: tensor<1x2x2xf32>) -> tensor<2x2x2xf32> {
    %0 = tcc.matmul %a, %b {transpose_lhs = true, transpose_rhs = true} : (tensor<2x2x2xf32>, tensor<1x2x2xf32>) -> tensor<2x2x2xf32>
    return %0 : tensor<2x2x2xf32>
  })",
      {f32({2, 2, 2}, {1, 3, 2, 4, 2, 6, 4, 8}), f32({1, 2, 2}, {5, 7, 6, 8})});
  expectValues(r[0], {19, 22, 43, 50, 38, 44, 86, 100});
}

TEST_F(InterpTest, MatmulNonSquare) {
  // [1x3] @ [3x2]: [1,2,3] . columns [1,0,1] and [0,1,1] = [4, 5].
  auto r = run(
      R"(func.func @f(%a: tensor<1x3xf32>, %b: tensor<3x2xf32>) -> tensor<1x2xf32> {
    %0 = tcc.matmul %a, %b : (tensor<1x3xf32>, tensor<3x2xf32>) -> tensor<1x2xf32>
    return %0 : tensor<1x2xf32>
  })",
      {f32({1, 3}, {1, 2, 3}), f32({3, 2}, {1, 0, 0, 1, 1, 1})});
  expectValues(r[0], {4, 5});
}

TEST_F(InterpTest, GemmAlphaBetaAndBroadcastC) {
  // 2 * [[1,2],[3,4]] @ I + 0.5 * [10, 20] (c broadcast over rows).
  auto r = run(
      R"(func.func @f(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>, %c: tensor<2xf32>) -> tensor<2x2xf32> {
    %0 = tcc.gemm %a, %b, %c {alpha = 2.0 : f64, beta = 0.5 : f64} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
    return %0 : tensor<2x2xf32>
  })",
      {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {1, 0, 0, 1}),
       f32({2}, {10, 20})});
  expectValues(r[0], {7, 14, 11, 18});
}

TEST_F(InterpTest, GemmBiasAndFullC) {
  // [[1,2],[3,4]] @ [[1,1],[0,1]] + bias [100, 200] + 2 * c:
  // [[1,3],[3,7]] + [[100,200],[100,200]] + [[2,4],[6,8]].
  auto r = run(
      R"(func.func @f(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>, %c: tensor<2x2xf32>, %bias: tensor<2xf32>) -> tensor<2x2xf32> {
    %0 = tcc.gemm %a, %b, %c bias %bias {beta = 2.0 : f64} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
    return %0 : tensor<2x2xf32>
  })",
      {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {1, 1, 0, 1}),
       f32({2, 2}, {1, 2, 3, 4}), f32({2}, {100, 200})});
  expectValues(r[0], {103, 207, 109, 215});
}

TEST_F(InterpTest, BroadcastingBinaryOps) {
  // [2x1] - [3] -> [2x3]; integer division truncates toward zero.
  auto r = run(
      R"(func.func @f(%a: tensor<2x1xf32>, %b: tensor<3xf32>, %i: tensor<2xi64>, %j: tensor<1xi64>) -> (tensor<2x3xf32>, tensor<2xi64>) {
    %0 = tcc.sub %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %1 = tcc.div %i, %j : (tensor<2xi64>, tensor<1xi64>) -> tensor<2xi64>
    return %0, %1 : tensor<2x3xf32>, tensor<2xi64>
  })",
      {f32({2, 1}, {10, 20}), f32({3}, {1, 2, 3}), i64({2}, {7, -7}),
       i64({1}, {2})});
  expectValues(r[0], {9, 8, 7, 19, 18, 17});
  expectValues(r[1], {3, -3});
}

TEST_F(InterpTest, SliceWithNegativeStride) {
  // x[4::-2] of [0..5] = [4, 2, 0] (limit -1 means "past the front").
  auto r = run(R"(func.func @f(%x: tensor<6xf32>) -> tensor<3xf32> {
    %0 = tcc.slice %x {starts = array<i64: 4>, limits = array<i64: -1>, strides = array<i64: -2>} : (tensor<6xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  })",
               {f32({6}, {0, 1, 2, 3, 4, 5})});
  expectValues(r[0], {4, 2, 0});
}

TEST_F(InterpTest, GatherNegativeIndexAndTranspose) {
  // Columns -1 and 0 of [[0,1,2],[3,4,5]], then transposed.
  auto r = run(
      R"(func.func @f(%x: tensor<2x3xf32>, %i: tensor<2xi64>) -> tensor<2x2xf32> {
    %0 = tcc.gather %x, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x2xf32>
    %1 = tcc.transpose %0 {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    return %1 : tensor<2x2xf32>
  })",
      {f32({2, 3}, {0, 1, 2, 3, 4, 5}), i64({2}, {-1, 0})});
  expectValues(r[0], {2, 5, 0, 3});
}

TEST_F(InterpTest, GatherOutOfRangeIsAnError) {
  std::string error = runError(
      R"(func.func @f(%x: tensor<3xf32>, %i: tensor<1xi64>) -> tensor<1xf32> {
    %0 = tcc.gather %x, %i {axis = 0 : i64} : (tensor<3xf32>, tensor<1xi64>) -> tensor<1xf32>
    return %0 : tensor<1xf32>
  })",
      {f32({3}, {0, 1, 2}), i64({1}, {3})});
  EXPECT_NE(error.find("'tcc.gather' at loc("), std::string::npos) << error;
  EXPECT_NE(error.find("out of range"), std::string::npos) << error;
}

TEST_F(InterpTest, ConcatSplitEmbeddingBroadcastReshape) {
  auto r = run(
      R"(func.func @f(%t: tensor<3x2xf32>, %ids: tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<4xf32>) {
    %e = tcc.embedding %t, %ids : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
    %c = tcc.concat %e, %e {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
    %s:2 = tcc.split %c {axis = 1 : i64, sizes = array<i64: 1, 3>} : (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x3xf32>)
    %b = tcc.broadcast %s#0 : (tensor<2x1xf32>) -> tensor<2x2xf32>
    %r = tcc.reshape %e : (tensor<2x2xf32>) -> tensor<4xf32>
    return %e, %b, %r : tensor<2x2xf32>, tensor<2x2xf32>, tensor<4xf32>
  })",
      {f32({3, 2}, {0, 1, 10, 11, 20, 21}), i64({2}, {2, 0})});
  expectValues(r[0], {20, 21, 0, 1});
  expectValues(r[1], {20, 20, 0, 0});
  expectValues(r[2], {20, 21, 0, 1});
}

TEST_F(InterpTest, ReductionsWithAxesAndKeepdims) {
  auto r = run(
      R"(func.func @f(%x: tensor<2x3xf32>, %i: tensor<2x2xi32>) -> (tensor<3xf32>, tensor<2x1xf32>, tensor<f32>, tensor<1x2xi32>) {
    %0 = tcc.reduce_sum %x {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
    %1 = tcc.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
    %2 = tcc.reduce_max %x {axes = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<f32>
    %3 = tcc.reduce_min %i {axes = array<i64: 0>, keepdims = true} : (tensor<2x2xi32>) -> tensor<1x2xi32>
    return %0, %1, %2, %3 : tensor<3xf32>, tensor<2x1xf32>, tensor<f32>, tensor<1x2xi32>
  })",
      {f32({2, 3}, {1, 2, 3, 4, 5, 9}),
       makeArray<int32_t>("", DType::I32, {2, 2}, {3, -4, 1, 7})});
  expectValues(r[0], {5, 7, 12});
  expectValues(r[1], {2, 6});
  expectValues(r[2], {9});
  EXPECT_EQ(r[3].dtype, DType::I32);
  expectValues(r[3], {1, -4});
}

TEST_F(InterpTest, CastCmpWhereLogic) {
  auto r = run(
      R"(func.func @f(%x: tensor<4xf32>) -> (tensor<4xi64>, tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) {
    %0 = tcc.cast %x : (tensor<4xf32>) -> tensor<4xi64>
    %1 = tcc.cast %x : (tensor<4xf32>) -> tensor<4xi1>
    %z = tcc.constant dense<0.0> : tensor<f32>
    %2 = tcc.cmp gt, %x, %z : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
    %3 = tcc.and %1, %2 : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    %4 = tcc.not %3 : (tensor<4xi1>) -> tensor<4xi1>
    %5 = tcc.where %4, %z, %x : (tensor<4xi1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
    %6 = tcc.cast %2 : (tensor<4xi1>) -> tensor<4xf32>
    return %0, %1, %5, %6 : tensor<4xi64>, tensor<4xi1>, tensor<4xf32>, tensor<4xf32>
  })",
      {f32({4}, {-2.7f, 0.0f, 0.5f, 3.9f})});
  expectValues(r[0], {-2, 0, 0, 3}); // truncation toward zero
  EXPECT_EQ(r[1].dtype, DType::Bool);
  expectValues(r[1], {1, 0, 1, 1});
  expectValues(r[2], {0, 0, 0.5, 3.9});
  expectValues(r[3], {0, 0, 1, 1});
}

TEST_F(InterpTest, GeluExactAndTanh) {
  auto r =
      run(R"(func.func @f(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
    %0 = tcc.gelu %x : (tensor<2xf32>) -> tensor<2xf32>
    %1 = tcc.gelu %x {approximate = #tcc<gelu_approx tanh>} : (tensor<2xf32>) -> tensor<2xf32>
    return %0, %1 : tensor<2xf32>, tensor<2xf32>
  })",
          {f32({2}, {1.0f, -0.5f})});
  auto exact = [](double x) {
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  };
  auto approx = [](double x) {
    return 0.5 * x *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  };
  expectValues(r[0], {exact(1.0), exact(-0.5)});
  expectValues(r[1], {approx(1.0), approx(-0.5)});
}

TEST_F(InterpTest, CausalAttentionByHand) {
  // q = k = [[1,0],[0,1],[1,1]], v = [[1,2],[3,4],[5,6]], scale 0.5.
  // Query 0 sees key 0 only: out = v0. Query 1 sees keys 0,1 with scores
  // 0.5*[0,1]. Query 2 sees all three with scores 0.5*[1,1,2].
  auto r = run(
      R"(func.func @f(%q: tensor<1x1x3x2xf32>, %v: tensor<1x1x3x2xf32>) -> tensor<1x1x3x2xf32> {
    %0 = tcc.attention %q, %q, %v {scale = 0.5 : f64, causal = true} : (tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) -> tensor<1x1x3x2xf32>
    return %0 : tensor<1x1x3x2xf32>
  })",
      {f32({1, 1, 3, 2}, {1, 0, 0, 1, 1, 1}),
       f32({1, 1, 3, 2}, {1, 2, 3, 4, 5, 6})});
  double p10 = 1 / (1 + std::exp(0.5)), p11 = 1 - p10;
  double z = 2 * std::exp(0.5) + std::exp(1.0);
  double p20 = std::exp(0.5) / z, p22 = std::exp(1.0) / z;
  expectValues(r[0],
               {1, 2, p10 * 1 + p11 * 3, p10 * 2 + p11 * 4,
                p20 * 1 + p20 * 3 + p22 * 5, p20 * 2 + p20 * 4 + p22 * 6});
}

TEST_F(InterpTest, AttentionKeyMasks) {
  // One query, keys with equal scores. Bool mask hides key 1, so out = v0;
  // a float mask of [0, log 3] weights key 1 three times key 0.
  const char *source =
      R"(func.func @f(%q: tensor<1x1x1x1xf32>, %k: tensor<1x1x2x1xf32>, %v: tensor<1x1x2x1xf32>, %b: tensor<1x2xi1>, %m: tensor<1x2xf32>) -> (tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) {
    %0 = tcc.attention %q, %k, %v, %b {scale = 1.0 : f64} : (tensor<1x1x1x1xf32>, tensor<1x1x2x1xf32>, tensor<1x1x2x1xf32>, tensor<1x2xi1>) -> tensor<1x1x1x1xf32>
    %1 = tcc.attention %q, %k, %v, %m {scale = 1.0 : f64} : (tensor<1x1x1x1xf32>, tensor<1x1x2x1xf32>, tensor<1x1x2x1xf32>, tensor<1x2xf32>) -> tensor<1x1x1x1xf32>
    return %0, %1 : tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>
  })";
  Array mask = makeArray<uint8_t>("", DType::Bool, {1, 2}, {1, 0});
  auto r = run(source, {f32({1, 1, 1, 1}, {1}), f32({1, 1, 2, 1}, {2, 2}),
                        f32({1, 1, 2, 1}, {10, 30}), mask,
                        f32({1, 2}, {0, float(std::log(3.0))})});
  expectValues(r[0], {10});
  expectValues(r[1], {0.25 * 10 + 0.75 * 30});

  // Every key hidden: softmax of all -inf is NaN, as in torch.softmax.
  Array none = makeArray<uint8_t>("", DType::Bool, {1, 2}, {0, 0});
  r = run(source, {f32({1, 1, 1, 1}, {1}), f32({1, 1, 2, 1}, {2, 2}),
                   f32({1, 1, 2, 1}, {10, 30}), none, f32({1, 2}, {0, 0})});
  EXPECT_TRUE(std::isnan(valuesAsDouble(r[0])[0]));
}

TEST_F(InterpTest, DropoutHashIsPinned) {
  // SplitMix64's well-known first output for state 0: kernels on every
  // backend must produce exactly these bits.
  EXPECT_EQ(tcc::splitmix64(0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(tcc::dropoutKeepThreshold(0.0), 1u << 24);
  EXPECT_EQ(tcc::dropoutKeepThreshold(0.5), 1u << 23);
  for (uint64_t i = 0; i < 100; ++i)
    EXPECT_EQ(tcc::dropoutKeep(7, i, tcc::dropoutKeepThreshold(0.25)),
              double(tcc::dropoutUniform(7, i)) < 0.75);
}

TEST_F(InterpTest, DropoutMaskIsReproducibleWithTheExpectedRate) {
  const int64_t n = 100000;
  std::string source =
      R"(func.func @f(%x: tensor<100000xf32>) -> (tensor<100000xf32>, tensor<100000xi1>) {
    %0:2 = tcc.dropout %x {ratio = 0.3 : f64, seed = SEED : i64} : (tensor<100000xf32>) -> (tensor<100000xf32>, tensor<100000xi1>)
    return %0#0, %0#1 : tensor<100000xf32>, tensor<100000xi1>
  })";
  auto withSeed = [&](const std::string &seed) {
    std::string s = source;
    s.replace(s.find("SEED"), 4, seed);
    return s;
  };
  Array x = f32({n}, std::vector<float>(n, 2.0f));
  auto a = run(withSeed("42"), {x}), b = run(withSeed("42"), {x}),
       c = run(withSeed("43"), {x});
  EXPECT_EQ(a[0].bytes, b[0].bytes);
  EXPECT_EQ(a[1].bytes, b[1].bytes);
  EXPECT_NE(a[1].bytes, c[1].bytes);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool keep = a[1].data<uint8_t>()[i];
    kept += keep;
    ASSERT_EQ(keep, tcc::dropoutKeep(42, i, tcc::dropoutKeepThreshold(0.3)));
    ASSERT_FLOAT_EQ(a[0].data<float>()[i], keep ? 2.0f / 0.7f : 0.0f);
  }
  // The keep count is Binomial(1e5, 0.7): standard deviation about 145.
  EXPECT_NEAR(double(kept) / n, 0.7, 0.01);
}

TEST_F(InterpTest, DropoutOffsetSelectsTheStream) {
  // offset k draws from seed + k * golden: offset 0 is the plain seed, and
  // another offset gives the mask of that shifted seed.
  std::string source =
      R"(func.func @f(%x: tensor<4096xf32>, %k: tensor<i64>) -> tensor<4096xi1> {
    %0:2 = tcc.dropout %x offset %k {ratio = 0.5 : f64, seed = 11 : i64} : (tensor<4096xf32>, tensor<i64>) -> (tensor<4096xf32>, tensor<4096xi1>)
    return %0#1 : tensor<4096xi1>
  })";
  Array x = f32({4096}, std::vector<float>(4096, 1.0f));
  auto offset = [](int64_t k) {
    return makeArray<int64_t>("", DType::I64, {}, {k});
  };
  auto m0 = run(source, {x, offset(0)}), m3 = run(source, {x, offset(3)});
  uint32_t threshold = tcc::dropoutKeepThreshold(0.5);
  uint64_t shifted = 11 + 3 * 0x9E3779B97F4A7C15ull;
  for (int64_t i = 0; i < 4096; ++i) {
    ASSERT_EQ(m0[0].data<uint8_t>()[i], tcc::dropoutKeep(11, i, threshold));
    ASSERT_EQ(m3[0].data<uint8_t>()[i],
              tcc::dropoutKeep(shifted, i, threshold));
  }
  EXPECT_NE(m0[0].bytes, m3[0].bytes);
}

TEST_F(InterpTest, ConstantsAndParams) {
  auto r = run(R"(
  tcc.param @w = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  func.func @f() -> (tensor<2x2xf32>, tensor<3xi64>, tensor<2xi1>, tensor<2xf32>) {
    %w = tcc.get_param @w : tensor<2x2xf32>
    %s = tcc.constant dense<5> : tensor<3xi64>
    %b = tcc.constant dense<[true, false]> : tensor<2xi1>
    %r = tcc.constant dense_resource<blob> : tensor<2xf32>
    return %w, %s, %b, %r : tensor<2x2xf32>, tensor<3xi64>, tensor<2xi1>, tensor<2xf32>
  }
  {-# dialect_resources: { builtin: { blob: "0x040000000000803F00000040" } } #-}
  )",
               {});
  expectValues(r[0], {1, 2, 3, 4});
  expectValues(r[1], {5, 5, 5});
  expectValues(r[2], {1, 0});
  expectValues(r[3], {1, 2}); // 0x3F800000 = 1.0f, 0x40000000 = 2.0f
}

TEST_F(InterpTest, PromoteToF64ComputesInDouble) {
  // (x + 1) - x with x = 1e8: 0 in float (spacing 8 there), 1 in double.
  const char *source = R"(
  tcc.param @one = dense<1.0> : tensor<f32>
  func.func @f(%x: tensor<f32>) -> tensor<f32> {
    %c = tcc.get_param @one : tensor<f32>
    %0 = tcc.add %x, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %1 = tcc.sub %0, %x : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %1 : tensor<f32>
  })";
  auto r = run(source, {f32({}, {1e8f})});
  EXPECT_EQ(r[0].dtype, DType::F32);
  expectValues(r[0], {0});
  tcc::interp::Options promote;
  promote.promoteToF64 = true;
  r = run(source, {f32({}, {1e8f})}, promote);
  EXPECT_EQ(r[0].dtype, DType::F64);
  expectValues(r[0], {1});
}

TEST_F(InterpTest, IntegerEdgeCasesDoNotTrap) {
  auto r = run(
      R"(func.func @f(%x: tensor<2xf32>, %i: tensor<1xi32>) -> (tensor<2xi64>, tensor<1xi32>, tensor<1xi32>) {
    %0 = tcc.cast %x : (tensor<2xf32>) -> tensor<2xi64>
    %m = tcc.constant dense<-1> : tensor<1xi32>
    %1 = tcc.div %i, %m : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
    %2 = tcc.add %i, %m : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
    return %0, %1, %2 : tensor<2xi64>, tensor<1xi32>, tensor<1xi32>
  })",
      {f32({2}, {NAN, 1e30f}),
       makeArray<int32_t>("", DType::I32, {1}, {INT32_MIN})});
  EXPECT_EQ(r[0].data<int64_t>()[0], 0);         // NaN -> 0
  EXPECT_EQ(r[0].data<int64_t>()[1], INT64_MAX); // saturates
  EXPECT_EQ(r[1].data<int32_t>()[0], INT32_MIN); // min / -1 wraps
  EXPECT_EQ(r[2].data<int32_t>()[0], INT32_MAX); // min - 1 wraps

  std::string error =
      runError(R"(func.func @f(%i: tensor<2xi64>) -> tensor<2xi64> {
    %0 = tcc.div %i, %i : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    return %0 : tensor<2xi64>
  })",
               {i64({2}, {1, 0})});
  EXPECT_NE(error.find("division by zero"), std::string::npos) << error;
}

TEST_F(InterpTest, ErrorsNameTheOpOrArgument) {
  std::string error =
      runError(R"(func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = "foo.bar"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  })",
               {f32({2}, {1, 2})});
  EXPECT_NE(error.find("unsupported op 'foo.bar' at loc("), std::string::npos)
      << error;

  error = runError(R"(func.func @f() -> tensor<2xi16> {
    %0 = tcc.constant dense<1> : tensor<2xi16>
    return %0 : tensor<2xi16>
  })",
                   {});
  EXPECT_NE(error.find("'tcc.constant' at loc("), std::string::npos) << error;
  EXPECT_NE(error.find("i16"), std::string::npos) << error;

  const char *source =
      R"(func.func @f(%x: tensor<2xf32> {tcc.name = "x"}) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  })";
  error = runError(source, {i64({2}, {1, 2})});
  EXPECT_NE(error.find("argument 'x'"), std::string::npos) << error;
  error = runError(source, {f32({3}, {1, 2, 3})});
  EXPECT_NE(error.find("shape [2]"), std::string::npos) << error;
  error = runError(source, {});
  EXPECT_NE(error.find("takes 1 arguments"), std::string::npos) << error;
}

TEST_F(InterpTest, BindByNameAndResultNames) {
  func::FuncOp func = parse(
      R"(func.func @f(%a: tensor<1xf32> {tcc.name = "a"}, %b: tensor<1xf32> {tcc.name = "b"}) -> (tensor<1xf32> {tcc.name = "y"}, tensor<1xf32>) {
    %0 = tcc.sub %a, %b : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    return %0, %a : tensor<1xf32>, tensor<1xf32>
  })");
  ASSERT_TRUE(func);
  Array a = f32({1}, {5}), b = f32({1}, {3}),
        extra = f32({7}, std::vector<float>(7));
  a.name = "a";
  b.name = "b";
  extra.name = "unused";
  std::vector<Array> ordered, results;
  std::string error;
  ASSERT_TRUE(tcc::interp::bindByName(func, {extra, b, a}, ordered, error))
      << error;
  ASSERT_TRUE(tcc::interp::run(func, ordered, results, error)) << error;
  expectValues(results[0], {2});
  EXPECT_EQ(results[0].name, "y");
  EXPECT_EQ(results[1].name, "output1");
  EXPECT_FALSE(tcc::interp::bindByName(func, {a}, ordered, error));
  EXPECT_NE(error.find("'b'"), std::string::npos) << error;
}

TEST_F(InterpTest, EvaluateRunsOneOp) {
  // The op-level entry the importer's constant folder uses: the same kernel
  // as a function run (softmax of [1, 2, 3] over its one axis).
  func::FuncOp func = parse(R"(func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
    %0 = tcc.softmax %x {axis = 0 : i64} : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  })");
  ASSERT_TRUE(func);
  Operation *softmax = &func.getBody().front().front();
  std::vector<Array> results;
  std::string error;
  ASSERT_TRUE(tcc::interp::evaluate(softmax, {f32({3}, {1, 2, 3})}, results,
                                    error))
      << error;
  ASSERT_EQ(results.size(), 1u);
  double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expectValues(results[0],
               {std::exp(1.0) / s, std::exp(2.0) / s, std::exp(3.0) / s});

  // Operands are checked as run checks arguments, naming the op.
  EXPECT_FALSE(
      tcc::interp::evaluate(softmax, {i64({3}, {1, 2, 3})}, results, error));
  EXPECT_NE(error.find("'tcc.softmax' at loc("), std::string::npos) << error;
  EXPECT_NE(error.find("operand #0 is tensor<3xf32> but its array is i64"),
            std::string::npos)
      << error;
  EXPECT_FALSE(tcc::interp::evaluate(softmax, {}, results, error));
  EXPECT_NE(error.find("has 1 operands, got 0 arrays"), std::string::npos)
      << error;
}

TEST_F(InterpTest, BlockUpdatesEqualTheWholeUpdate) {
  // A weight gradient made in row blocks (tcc-rematerialize under a
  // budget): each block updates its elements of the parameter and state
  // (element_offset) and passes the rest through, so the two block updates
  // give the bytes of one update of the whole (AdamW; SGD with momentum).
  const char *adamw = R"(func.func @f(%p: tensor<3x2xf32>, %g: tensor<3x2xf32>,
      %m: tensor<3x2xf32>, %v: tensor<3x2xf32>, %lr: tensor<f64>,
      %t: tensor<i64>, %g0: tensor<2x2xf32>, %g1: tensor<1x2xf32>)
      -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>,
          tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
    %a:3 = tcc.adamw_update %p, %g, %m, %v, %lr, %t : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<f64>, tensor<i64>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
    %b:3 = tcc.adamw_update %p, %g0, %m, %v, %lr, %t : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<f64>, tensor<i64>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
    %c:3 = tcc.adamw_update %b#0, %g1, %b#1, %b#2, %lr, %t {element_offset = 4 : i64} : (tensor<3x2xf32>, tensor<1x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<f64>, tensor<i64>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
    return %a#0, %a#1, %a#2, %c#0, %c#1, %c#2 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
  })";
  std::vector<float> g = {0.5f, -1.25f, 2.0f, 0.125f, -0.75f, 3.0f};
  Array p = f32({3, 2}, {1, -2, 3, -4, 5, -6});
  Array m = f32({3, 2}, {0.1f, 0.2f, -0.3f, 0.4f, 0.0f, -0.1f});
  Array v = f32({3, 2}, {0.01f, 0.02f, 0.03f, 0.0f, 0.05f, 0.06f});
  Array lr = makeArray<double>("", DType::F64, {}, {1e-2}),
        t = i64({}, {3});
  std::vector<Array> r =
      run(adamw, {p, f32({3, 2}, {g[0], g[1], g[2], g[3], g[4], g[5]}), m, v,
                  lr, t, f32({2, 2}, {g[0], g[1], g[2], g[3]}),
                  f32({1, 2}, {g[4], g[5]})});
  ASSERT_EQ(r.size(), 6u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(r[i].bytes, r[i + 3].bytes) << "result " << i;
  EXPECT_NE(r[0].bytes, p.bytes); // the update changed every element

  const char *sgd = R"(func.func @f(%p: tensor<4xf32>, %g: tensor<4xf32>,
      %buf: tensor<4xf32>, %lr: tensor<f64>, %g0: tensor<3xf32>,
      %g1: tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %a:2 = tcc.sgd_update %p, %g, %lr, %buf {momentum = 0.9 : f64, weight_decay = 0.1 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %b:2 = tcc.sgd_update %p, %g0, %lr, %buf {momentum = 0.9 : f64, weight_decay = 0.1 : f64} : (tensor<4xf32>, tensor<3xf32>, tensor<f64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %c:2 = tcc.sgd_update %b#0, %g1, %lr, %b#1 {element_offset = 3 : i64, momentum = 0.9 : f64, weight_decay = 0.1 : f64} : (tensor<4xf32>, tensor<1xf32>, tensor<f64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    return %a#0, %a#1, %c#0, %c#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  })";
  r = run(sgd, {f32({4}, {1, 2, 3, 4}), f32({4}, {0.5f, -0.5f, 1.5f, 2.5f}),
                f32({4}, {0.1f, 0.2f, 0.3f, 0.4f}), lr,
                f32({3}, {0.5f, -0.5f, 1.5f}), f32({1}, {2.5f})});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].bytes, r[2].bytes);
  EXPECT_EQ(r[1].bytes, r[3].bytes);
  // By hand: d = g + 0.1 * p, buf' = 0.9 * buf + d (element 3: 2.9, 3.26).
  expectValues(r[1], {0.69, -0.12, 2.07, 3.26});
}

TEST_F(InterpTest, EveryTccOpHasAKernel) {
  std::vector<std::string> ops = tcc::interp::supportedOps();
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "tcc" ||
        name.getStringRef() == "tcc.param")
      continue;
    EXPECT_NE(std::find(ops.begin(), ops.end(), name.getStringRef().str()),
              ops.end())
        << name.getStringRef().str() << " has no interpreter kernel";
  }
}

} // namespace
