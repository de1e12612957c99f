// Gradient checks of the elementwise and data-movement ops against float64
// finite differences (harness: GradCheck.h).
#include "GradCheck.h"

using namespace gradcheck;

namespace {

TEST_P(GradCheck, MatchesFiniteDifferences) {
  const GradCase &c = GetParam();
  std::mt19937 rng(std::hash<std::string>()(c.name) & 0xffffffff);
  ASSERT_TRUE(prepare(c, rng));
  std::vector<Array> in32, in64;
  makeInputs(c, rng, in32, in64);

  std::vector<Array> grads = run(fGrad, in64, /*promote=*/true);
  ASSERT_EQ(grads.size(), c.args.size() + 1);
  std::vector<Array> grads32 = run(fGrad, in32, /*promote=*/false);
  ASSERT_EQ(grads32.size(), grads.size());
  const double eps = 1e-6;
  for (size_t a = 0; a < c.args.size(); ++a) {
    for (int64_t i = 0; i < count(c.args[a].shape); ++i) {
      std::vector<Array> probe = in64;
      double &x = probe[a].data<double>()[i];
      x = in64[a].data<double>()[i] + eps;
      double up = at(run(f, probe, true)[0], 0);
      x = in64[a].data<double>()[i] - eps;
      double down = at(run(f, probe, true)[0], 0);
      double fd = (up - down) / (2 * eps), g = at(grads[a + 1], i);
      EXPECT_NEAR(g, fd, c.tol * std::max(1.0, std::fabs(fd)))
          << "d/d%a" << a << "[" << i << "]";
      // f32 math, sums accumulated in double: a few ulps of float per term.
      EXPECT_NEAR(at(grads32[a + 1], i), g, 1e-4 * std::max(1.0, std::fabs(g)))
          << "f32 run, d/d%a" << a << "[" << i << "]";
    }
  }
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

std::vector<GradCase> binaryCases() {
  // Same shape, trailing broadcast, broadcast on both sides, scalar.
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1, 4}, {3, 1}}, {{2, 3}, {}}};
  std::vector<std::string> suffix = {"Same", "Row", "Both", "Scalar"};
  std::vector<GradCase> cases;
  for (const char *op : {"add", "sub", "mul", "div", "pow", "max", "min"})
    for (size_t s = 0; s < shapes.size(); ++s) {
      auto [l, r] = shapes[s];
      std::vector<int64_t> out =
          l.size() == 3 ? std::vector<int64_t>{2, 3, 4} : l;
      Arg lhs{l}, rhs{r};
      if (std::string(op) == "pow")
        lhs.range = Range::Positive;
      if (std::string(op) == "div")
        rhs.range = Range::Positive;
      std::string name = op;
      name[0] = std::toupper(name[0]);
      cases.push_back({name + suffix[s],
                       {lhs, rhs},
                       "  %y = tcc." + std::string(op) + " %a0, %a1 : (" +
                           ty(l) + ", " + ty(r) + ") -> " + ty(out),
                       out});
    }
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Binary, GradCheck, ::testing::ValuesIn(binaryCases()),
                         caseName);

std::vector<GradCase> unaryCases() {
  std::vector<GradCase> cases;
  for (const char *op : {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh",
                         "erf", "sigmoid", "relu", "cos", "sin", "gelu"}) {
    std::string name = op;
    name[0] = std::toupper(name[0]);
    bool positive = name == "Log" || name == "Sqrt" || name == "Rsqrt";
    cases.push_back({name,
                     {{{3, 4}, positive ? Range::Positive : Range::Signed}},
                     "  %y = tcc." + std::string(op) +
                         " %a0 : (tensor<3x4xf32>) -> tensor<3x4xf32>",
                     {3, 4}});
  }
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Unary, GradCheck, ::testing::ValuesIn(unaryCases()),
                         caseName);

// Ties of max/min are kinks: the central difference there is exactly the
// average of the one-sided slopes, 1/2 to each operand, which is also what
// torch.maximum / torch.minimum give (checked against torch 1.13).
const std::vector<float> tieA = {1, -2, 3, 0.5f, -1, 2},
                         tieB = {1, -1, 3, 0.5f, -2, 2};

INSTANTIATE_TEST_SUITE_P(
    Elementwise, GradCheck,
    ::testing::Values(
        GradCase{"MulSameOperandTwice",
                 {{{2, 3}}},
                 "  %y = tcc.mul %a0, %a0 : (tensor<2x3xf32>, tensor<2x3xf32>) "
                 "-> tensor<2x3xf32>",
                 {2, 3}},
        GradCase{"MaxTies",
                 {{{2, 3}, Range::Signed, tieA}, {{2, 3}, Range::Signed, tieB}},
                 "  %y = tcc.max %a0, %a1 : (tensor<2x3xf32>, tensor<2x3xf32>) "
                 "-> tensor<2x3xf32>",
                 {2, 3}},
        GradCase{"MinTies",
                 {{{2, 3}, Range::Signed, tieA}, {{2, 3}, Range::Signed, tieB}},
                 "  %y = tcc.min %a0, %a1 : (tensor<2x3xf32>, tensor<2x3xf32>) "
                 "-> tensor<2x3xf32>",
                 {2, 3}},
        // A constant exponent: only the base is differentiated (no log(b)).
        GradCase{"PowConstantExponent",
                 {{{2, 3}}},
                 "  %e = tcc.constant dense<[2.0, 3.0, -1.0]> : tensor<3xf32>\n"
                 "  %y = tcc.pow %a0, %e : (tensor<2x3xf32>, tensor<3xf32>) -> "
                 "tensor<2x3xf32>",
                 {2, 3}},
        // PyTorch's conventions at a zero base: d/db is 0 where e == 0 and
        // d/de is 0 where b == 0 and e >= 0; here both are also the limits.
        GradCase{
            "PowZeroBase",
            {{{4}, Range::Signed, {0, 0, 1.5f, 0.7f}}},
            "  %e = tcc.constant dense<[0.0, 2.0, 0.0, 3.0]> : tensor<4xf32>\n"
            "  %y = tcc.pow %a0, %e : (tensor<4xf32>, tensor<4xf32>) -> "
            "tensor<4xf32>",
            {4}},
        GradCase{"PowZeroBaseVaryingExponent",
                 {{{3}, Range::Signed, {0, 0, 1.5f}},
                  {{3}, Range::Signed, {2, 3, 1.5f}}},
                 "  %y = tcc.pow %a0, %a1 : (tensor<3xf32>, tensor<3xf32>) -> "
                 "tensor<3xf32>",
                 {3}},
        GradCase{"Where",
                 {{{2, 3}}, {{3}}},
                 "  %c = tcc.constant dense<[[true, false, true], [false, "
                 "false, true]]> : tensor<2x3xi1>\n"
                 "  %y = tcc.where %c, %a0, %a1 : (tensor<2x3xi1>, "
                 "tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>",
                 {2, 3}},
        GradCase{
            "WhereBroadcastCondition",
            {{{3}}, {{2, 1}}},
            "  %c = tcc.constant dense<[[true], [false]]> : tensor<2x1xi1>\n"
            "  %y = tcc.where %c, %a0, %a1 : (tensor<2x1xi1>, tensor<3xf32>, "
            "tensor<2x1xf32>) -> tensor<2x3xf32>",
            {2, 3}},
        GradCase{"GeluTanh",
                 {{{3, 4}}},
                 "  %y = tcc.gelu %a0 {approximate = #tcc<gelu_approx tanh>} : "
                 "(tensor<3x4xf32>) -> tensor<3x4xf32>",
                 {3, 4}},
        // f32 -> f64 -> f32 carries the gradient; through i32 nothing flows.
        GradCase{"CastFloatAndInt",
                 {{{2, 3}}},
                 "  %d = tcc.cast %a0 : (tensor<2x3xf32>) -> tensor<2x3xf64>\n"
                 "  %e = tcc.exp %d : (tensor<2x3xf64>) -> tensor<2x3xf64>\n"
                 "  %f = tcc.cast %e : (tensor<2x3xf64>) -> tensor<2x3xf32>\n"
                 "  %i = tcc.cast %a0 : (tensor<2x3xf32>) -> tensor<2x3xi32>\n"
                 "  %j = tcc.cast %i : (tensor<2x3xi32>) -> tensor<2x3xf32>\n"
                 "  %y = tcc.mul %f, %j : (tensor<2x3xf32>, tensor<2x3xf32>) "
                 "-> tensor<2x3xf32>",
                 {2, 3}}),
    caseName);

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

INSTANTIATE_TEST_SUITE_P(
    Shape, GradCheck,
    ::testing::Values(
        GradCase{
            "BroadcastRow",
            {{{3}}},
            "  %y = tcc.broadcast %a0 : (tensor<3xf32>) -> tensor<2x3xf32>",
            {2, 3}},
        GradCase{
            "BroadcastInner",
            {{{1, 3}}},
            "  %y = tcc.broadcast %a0 : (tensor<1x3xf32>) -> tensor<2x4x3xf32>",
            {2, 4, 3}},
        GradCase{
            "BroadcastColumn",
            {{{2, 1}}},
            "  %y = tcc.broadcast %a0 : (tensor<2x1xf32>) -> tensor<2x3xf32>",
            {2, 3}},
        GradCase{
            "Reshape",
            {{{2, 3, 4}}},
            "  %y = tcc.reshape %a0 : (tensor<2x3x4xf32>) -> tensor<6x4xf32>",
            {6, 4}},
        GradCase{"Transpose",
                 {{{2, 3, 4}}},
                 "  %y = tcc.transpose %a0 {perm = array<i64: 2, 0, 1>} : "
                 "(tensor<2x3x4xf32>) -> tensor<4x2x3xf32>",
                 {4, 2, 3}},
        GradCase{"Slice",
                 {{{5, 6}}},
                 "  %y = tcc.slice %a0 {starts = array<i64: 1, 0>, limits = "
                 "array<i64: 4, 6>, strides = array<i64: 1, 2>} : "
                 "(tensor<5x6xf32>) -> tensor<3x3xf32>",
                 {3, 3}},
        GradCase{"SliceNegativeStride",
                 {{{4, 5}}},
                 "  %y = tcc.slice %a0 {starts = array<i64: 3, 4>, limits = "
                 "array<i64: -1, 0>, strides = array<i64: -1, -2>} : "
                 "(tensor<4x5xf32>) -> tensor<4x2xf32>",
                 {4, 2}},
        GradCase{"Concat",
                 {{{2, 1}}, {{2, 3}}, {{2, 2}}},
                 "  %y = tcc.concat %a0, %a1, %a2 {axis = 1 : i64} : "
                 "(tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x2xf32>) -> "
                 "tensor<2x6xf32>",
                 {2, 6}},
        // The middle piece is unused: its gradient is zeros in the concat.
        GradCase{"SplitWithUnusedResult",
                 {{{2, 6}}},
                 "  %s:3 = tcc.split %a0 {axis = 1 : i64, sizes = array<i64: "
                 "2, 1, 3>} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, "
                 "tensor<2x1xf32>, tensor<2x3xf32>)\n"
                 "  %y = tcc.concat %s#2, %s#0 {axis = 1 : i64} : "
                 "(tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x5xf32>",
                 {2, 5}},
        // Repeated indices accumulate; -1 is the last row.
        GradCase{
            "GatherAxis0RepeatedIndices",
            {{{4, 3}}},
            "  %i = tcc.constant dense<[[0, 2], [2, -1]]> : tensor<2x2xi64>\n"
            "  %y = tcc.gather %a0, %i {axis = 0 : i64} : (tensor<4x3xf32>, "
            "tensor<2x2xi64>) -> tensor<2x2x3xf32>",
            {2, 2, 3}},
        GradCase{"GatherAxis1",
                 {{{2, 4, 3}}},
                 "  %i = tcc.constant dense<[1, 1, -4]> : tensor<3xi32>\n"
                 "  %y = tcc.gather %a0, %i {axis = 1 : i64} : "
                 "(tensor<2x4x3xf32>, tensor<3xi32>) -> tensor<2x3x3xf32>",
                 {2, 3, 3}},
        GradCase{
            "Embedding",
            {{{5, 3}}},
            "  %i = tcc.constant dense<[[1, 4], [1, 0]]> : tensor<2x2xi64>\n"
            "  %y = tcc.embedding %a0, %i : (tensor<5x3xf32>, tensor<2x2xi64>) "
            "-> tensor<2x2x3xf32>",
            {2, 2, 3}}),
    caseName);

} // namespace
