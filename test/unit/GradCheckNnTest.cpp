// Gradient checks of the reductions, normalisations, contractions,
// attention, dropout and the loss against float64 finite differences
// (harness: GradCheck.h), and of reduce_max / reduce_min at ties.
#include "GradCheck.h"

using namespace gradcheck;

namespace {

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

std::vector<GradCase> reduceCases() {
  std::vector<GradCase> cases;
  std::vector<int64_t> in = {2, 3, 4};
  for (const char *op : {"sum", "mean", "max", "min"})
    for (std::vector<int64_t> axes :
         {std::vector<int64_t>{0}, {1}, {2}, {0, 2}, {0, 1, 2}})
      for (bool keep : {false, true}) {
        std::string name = std::string("Reduce") + op, list;
        name[6] = std::toupper(name[6]);
        std::vector<int64_t> out;
        for (int64_t d = 0; d < 3; ++d) {
          bool reduced = llvm::is_contained(axes, d);
          if (!reduced || keep)
            out.push_back(reduced ? 1 : in[d]);
        }
        for (int64_t a : axes) {
          name += std::to_string(a);
          list += (list.empty() ? ": " : ", ") + std::to_string(a);
        }
        cases.push_back({name + (keep ? "Keep" : ""),
                         {{in}},
                         "  %y = tcc.reduce_" + std::string(op) +
                             " %a0 {axes = array<i64" + list +
                             ">, keepdims = " + (keep ? "true" : "false") +
                             "} : (" + ty(in) + ") -> " + ty(out),
                         out});
      }
  for (const char *op : {"softmax", "log_softmax"})
    for (int64_t axis = 0; axis < 3; ++axis)
      cases.push_back({std::string(op[0] == 's' ? "Softmax" : "LogSoftmax") +
                           std::to_string(axis),
                       {{in}},
                       "  %y = tcc." + std::string(op) +
                           " %a0 {axis = " + std::to_string(axis) +
                           " : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
                       in});
  // layer_norm over the last dim and over the last two, with every
  // combination of the optional scale and bias.
  for (int64_t axis : {2, 1})
    for (int which = 0; which < 4; ++which) {
      bool scale = which & 1, bias = which & 2;
      std::vector<int64_t> norm(in.begin() + axis, in.end());
      GradCase c{"LayerNorm" + std::to_string(axis) + (scale ? "Scale" : "") +
                     (bias ? "Bias" : ""),
                 {{in}},
                 "",
                 in};
      std::string attrs, types = ty(in);
      for (auto [present, keyword] :
           {std::pair(scale, " scale %a"), std::pair(bias, " bias %a")})
        if (present) {
          attrs += keyword + std::to_string(c.args.size());
          types += ", " + ty(norm);
          c.args.push_back({norm});
        }
      c.body = "  %y = tcc.layer_norm %a0" + attrs +
               " {axis = " + std::to_string(axis) +
               " : i64, epsilon = 1.0e-05 : f64} : (" + types + ") -> " +
               ty(in);
      cases.push_back(c);
    }
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Reduce, GradCheck, ::testing::ValuesIn(reduceCases()),
                         caseName);

//===----------------------------------------------------------------------===//
// Contractions, attention, dropout and the loss
//===----------------------------------------------------------------------===//

std::vector<GradCase> contractionCases() {
  std::vector<GradCase> cases;
  for (bool tl : {false, true})
    for (bool tr : {false, true}) {
      std::string flags = std::string("{transpose_lhs = ") +
                          (tl ? "true" : "false") +
                          ", transpose_rhs = " + (tr ? "true" : "false") + "}";
      // Plain matrices, and a batch broadcast on both sides ([2,1] x [3]).
      std::vector<int64_t> l =
          tl ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{3, 4};
      std::vector<int64_t> r =
          tr ? std::vector<int64_t>{5, 4} : std::vector<int64_t>{4, 5};
      std::string suffix = std::string(tl ? "T" : "N") + (tr ? "T" : "N");
      cases.push_back({"Matmul" + suffix,
                       {{l}, {r}},
                       "  %y = tcc.matmul %a0, %a1 " + flags + " : (" + ty(l) +
                           ", " + ty(r) + ") -> tensor<3x5xf32>",
                       {3, 5}});
      std::vector<int64_t> bl = {2, 1, l[0], l[1]}, br = {3, r[0], r[1]};
      cases.push_back({"MatmulBatchBroadcast" + suffix,
                       {{bl}, {br}},
                       "  %y = tcc.matmul %a0, %a1 " + flags + " : (" + ty(bl) +
                           ", " + ty(br) + ") -> tensor<2x3x3x5xf32>",
                       {2, 3, 3, 5}});
      // gemm: alpha and beta, c broadcast from a row.
      std::string gflags =
          std::string("{alpha = 0.5 : f64, beta = 2.0 : f64, transpose_a = ") +
          (tl ? "true" : "false") +
          ", transpose_b = " + (tr ? "true" : "false") + "}";
      cases.push_back({"Gemm" + suffix,
                       {{l}, {r}, {{5}}},
                       "  %y = tcc.gemm %a0, %a1, %a2 " + gflags + " : (" +
                           ty(l) + ", " + ty(r) +
                           ", tensor<5xf32>) -> tensor<3x5xf32>",
                       {3, 5}});
    }
  // A matrix rhs broadcast over the lhs's batch: its gradient is one
  // product over all the lhs rows (flattenedWeightGrad), plain, transposed,
  // and over two batch dims; a transposed lhs takes the per-batch product
  // and its sum.
  cases.push_back({"MatmulRank2Rhs",
                   {{{2, 3, 4}}, {{4, 5}}},
                   "  %y = tcc.matmul %a0, %a1 : (tensor<2x3x4xf32>, "
                   "tensor<4x5xf32>) -> tensor<2x3x5xf32>",
                   {2, 3, 5}});
  cases.push_back({"MatmulRank2RhsT",
                   {{{2, 3, 4}}, {{5, 4}}},
                   "  %y = tcc.matmul %a0, %a1 {transpose_rhs = true} : "
                   "(tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>",
                   {2, 3, 5}});
  cases.push_back({"MatmulRank2RhsTwoBatchDims",
                   {{{2, 2, 3, 4}}, {{4, 5}}},
                   "  %y = tcc.matmul %a0, %a1 : (tensor<2x2x3x4xf32>, "
                   "tensor<4x5xf32>) -> tensor<2x2x3x5xf32>",
                   {2, 2, 3, 5}});
  cases.push_back({"MatmulRank2RhsLhsT",
                   {{{2, 4, 3}}, {{4, 5}}},
                   "  %y = tcc.matmul %a0, %a1 {transpose_lhs = true} : "
                   "(tensor<2x4x3xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>",
                   {2, 3, 5}});
  for (const char *c : {"3x1", "3x5", "1x1"}) {
    std::vector<int64_t> shape = {c[0] - '0', c[2] - '0'};
    cases.push_back({std::string("GemmC") + c[0] + "x" + c[2],
                     {{{3, 4}}, {{4, 5}}, {shape}},
                     "  %y = tcc.gemm %a0, %a1, %a2 {beta = -1.5 : f64} : "
                     "(tensor<3x4xf32>, "
                     "tensor<4x5xf32>, " +
                         ty(shape) + ") -> tensor<3x5xf32>",
                     {3, 5}});
  }
  cases.push_back({"GemmBiasAndC",
                   {{{3, 4}}, {{5, 4}}, {{3, 5}}, {{5}}},
                   "  %y = tcc.gemm %a0, %a1, %a2 bias %a3 {beta = 0.5 : f64, "
                   "transpose_b = true} : (tensor<3x4xf32>, tensor<5x4xf32>, "
                   "tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>",
                   {3, 5}});
  cases.push_back({"GemmWithoutC",
                   {{{3, 4}}, {{4, 5}}},
                   "  %y = tcc.gemm %a0, %a1 {alpha = 3.0 : f64} : "
                   "(tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>",
                   {3, 5}});

  // Attention over [batch 2, heads 2, 3 queries, 5 keys]; key 0 is always
  // visible so no query is fully masked.
  const std::string
      qkv = "%a0, %a1, %a2",
      types = "tensor<2x2x3x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5x3xf32>";
  const std::string boolMask = "  %m = tcc.constant dense<[[true, false, true, "
                               "true, false], [true, true, true, false, "
                               "false]]> : tensor<2x5xi1>\n";
  const std::string floatMask = "  %m = tcc.constant dense<[[0.0, -1.5, 0.5, "
                                "-10000.0, 2.0], [1.0, 0.0, -0.5, 0.25, "
                                "-3.0]]> : tensor<2x5xf32>\n";
  std::vector<Arg> args = {{{2, 2, 3, 4}}, {{2, 2, 5, 4}}, {{2, 2, 5, 3}}};
  auto attention = [&](std::string name, std::string prefix, std::string mask,
                       std::string maskType, bool causal) {
    cases.push_back({name,
                     args,
                     prefix + "  %y = tcc.attention " + qkv + mask +
                         " {scale = 0.5 : f64" +
                         (causal ? ", causal = true" : "") + "} : (" + types +
                         maskType + ") -> tensor<2x2x3x3xf32>",
                     {2, 2, 3, 3}});
  };
  attention("Attention", "", "", "", false);
  attention("AttentionCausal", "", "", "", true);
  attention("AttentionBoolMask", boolMask, ", %m", ", tensor<2x5xi1>", false);
  attention("AttentionFloatMask", floatMask, ", %m", ", tensor<2x5xf32>",
            false);
  attention("AttentionCausalBoolMask", boolMask, ", %m", ", tensor<2x5xi1>",
            true);

  cases.push_back(
      {"Dropout",
       {{{4, 5}}},
       "  %y, %mask = tcc.dropout %a0 {ratio = 0.3 : f64, seed = 7 : i64} : "
       "(tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x5xi1>)",
       {4, 5}});
  // The mean loss: count gets a gradient too, which must not reach logits.
  cases.push_back(
      {"CrossEntropyMeanIgnoredLabel",
       {{{4, 5}}},
       "  %t = tcc.constant dense<[1, -100, 3, 0]> : tensor<4xi64>\n"
       "  %s, %n = tcc.cross_entropy %a0, %t : (tensor<4x5xf32>, "
       "tensor<4xi64>) -> "
       "(tensor<f32>, tensor<f32>)\n"
       "  %y = tcc.div %s, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>",
       {}});
  cases.push_back(
      {"CrossEntropySumCustomIgnore",
       {{{2, 3, 5}}},
       "  %t = tcc.constant dense<[[1, 2, 4], [4, 0, 0]]> : tensor<2x3xi32>\n"
       "  %y, %n = tcc.cross_entropy %a0, %t {ignore_index = 4 : i64} : "
       "(tensor<2x3x5xf32>, tensor<2x3xi32>) -> (tensor<f32>, tensor<f32>)",
       {}});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Nn, GradCheck, ::testing::ValuesIn(contractionCases()),
                         caseName);

//===----------------------------------------------------------------------===//
// Convolution and pooling: strides, asymmetric padding, dilation, groups
//===----------------------------------------------------------------------===//

std::vector<GradCase> windowCases() {
  std::vector<GradCase> cases;
  struct Conv {
    const char *name;
    std::vector<int64_t> in, w;
    std::string attrs;
    std::vector<int64_t> out;
    bool bias;
  };
  for (const Conv &c : std::vector<Conv>{
           {"ConvPlain", {2, 3, 5, 5}, {4, 3, 3, 3}, "", {2, 4, 3, 3}, true},
           {"ConvStridePad",
            {1, 2, 6, 5},
            {3, 2, 3, 2},
            "stride_h = 2 : i64, pad_top = 1 : i64, pad_bottom = 2 : i64, "
            "pad_left = 1 : i64",
            {1, 3, 4, 5},
            true},
           {"ConvDilatedGrouped",
            {1, 4, 7, 7},
            {6, 2, 2, 3},
            "dilation_h = 2 : i64, dilation_w = 2 : i64, group = 2 : i64, "
            "stride_w = 2 : i64",
            {1, 6, 5, 2},
            false},
           {"Conv1dDepthwise",
            {2, 3, 1, 8},
            {3, 1, 1, 3},
            "group = 3 : i64, pad_left = 1 : i64, pad_right = 1 : i64",
            {2, 3, 1, 8},
            false}}) {
    GradCase g{c.name, {{c.in}, {c.w}}, "", c.out};
    std::string types = ty(c.in) + ", " + ty(c.w);
    if (c.bias) {
      g.args.push_back({{c.w[0]}});
      types += ", " + ty({c.w[0]});
    }
    g.body = std::string("  %y = tcc.conv %a0, %a1") + (c.bias ? ", %a2" : "") +
             " {" + c.attrs + "} : (" + types + ") -> " + ty(c.out);
    cases.push_back(g);
  }
  // Pools over distinct random values (no ties: a max's derivative is
  // defined), padded and strided, overlapping windows.
  std::string win = "kernel_h = 3 : i64, kernel_w = 2 : i64, stride_h = 2 : "
                    "i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_right "
                    "= 1 : i64";
  std::vector<int64_t> in = {2, 2, 5, 4}, out = {2, 2, 3, 4};
  cases.push_back(
      {"MaxPool",
       {{in}},
       "  %y = tcc.max_pool %a0 {" + win + "} : (" + ty(in) + ") -> " + ty(out),
       out});
  cases.push_back({"MaxPoolDilated",
                   {{in}},
                   "  %y = tcc.max_pool %a0 {kernel_h = 2 : i64, kernel_w = 2 "
                   ": i64, dilation_h = 2 : i64} : (" +
                       ty(in) + ") -> " + ty({2, 2, 3, 3}),
                   {2, 2, 3, 3}});
  for (bool include : {false, true})
    cases.push_back(
        {include ? "AvgPoolIncludePad" : "AvgPool",
         {{in}},
         "  %y = tcc.avg_pool %a0 {" + win +
             ", count_include_pad = " + (include ? "true" : "false") + "} : (" +
             ty(in) + ") -> " + ty(out),
         out});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Window, GradCheck, ::testing::ValuesIn(windowCases()),
                         caseName);

//===----------------------------------------------------------------------===//
// Ties of reduce_max / reduce_min: not a smooth point, so no finite
// difference; the rule is torch.amax / torch.amin's (torch 1.13): the
// gradient is split evenly among the tied elements.
//===----------------------------------------------------------------------===//

class GradTies : public GradCheck {};

TEST_F(GradTies, ReduceMaxAndMinSplitEvenlyAmongTies) {
  for (const char *op : {"max", "min"}) {
    SCOPED_TRACE(op);
    bool isMax = op[1] == 'a';
    GradCase c{
        "Ties",
        {{{2, 3}, Range::Signed, {}}},
        std::string("  %y = tcc.reduce_") + op +
            " %a0 {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>",
        {2},
        0,
        {2.0f, -3.0f}};
    // Row 0 has two tied extrema, row 1 three.
    c.args[0].values = isMax ? std::vector<float>{1, 3, 3, 2, 2, 2}
                             : std::vector<float>{1, 1, 3, 2, 2, 2};
    std::mt19937 rng(1);
    ASSERT_TRUE(prepare(c, rng));
    std::vector<Array> in32, in64;
    makeInputs(c, rng, in32, in64);
    std::vector<Array> grads = run(fGrad, in64, true);
    ASSERT_EQ(grads.size(), 2u);
    std::vector<double> want = isMax ? std::vector<double>{0, 1, 1, -1, -1, -1}
                                     : std::vector<double>{1, 1, 0, -1, -1, -1};
    for (int64_t i = 0; i < 6; ++i)
      EXPECT_DOUBLE_EQ(at(grads[1], i), want[i]) << "element " << i;
  }
}

} // namespace
