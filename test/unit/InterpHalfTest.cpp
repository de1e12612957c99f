// The interpreter's bf16 / f16 storage emulation: tensors of those element
// types hold 16-bit patterns; every op computes in float and rounds its
// result once, to nearest even. Expected bit patterns are derived by hand
// (bf16: 8 significant bits, f16: 11; see HalfTest.cpp for the formats).
#include "TestUtil.h"

#include "data/half.h"

#include "tcc/Interp/Interpreter.h"
#include "tcc/TccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using tcc::data::Array;
using tcc::data::DType;
using namespace testutil;

namespace {

Array bf16(std::vector<int64_t> shape, const std::vector<uint16_t> &bits) {
  return makeArray("", DType::BF16, std::move(shape), bits);
}
Array f16(std::vector<int64_t> shape, const std::vector<uint16_t> &bits) {
  return makeArray("", DType::F16, std::move(shape), bits);
}

class InterpHalfTest : public ::testing::Test {
protected:
  InterpHalfTest() {
    context.loadDialect<tcc::TccDialect, func::FuncDialect>();
  }

  std::vector<Array> run(const std::string &source,
                         const std::vector<Array> &inputs,
                         tcc::interp::Options options = {}) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << "parse failed";
    std::vector<Array> results;
    std::string error;
    if (module)
      EXPECT_TRUE(tcc::interp::run(*module->getOps<func::FuncOp>().begin(),
                                   inputs, results, error, options))
          << error;
    return results;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(InterpHalfTest, Bf16AddRoundsEachResult) {
  // x = [1, 256, 3, 1], y = [2^-8, 1, 2^-7, 3 * 2^-9].
  // 1 + 2^-8 ties to 1 (0x3F80); 257 ties to 256 (0x4380, spacing 2);
  // 3 + 2^-7 ties to 3 (0x4040); 1 + 0.75 * 2^-7 rounds up to 0x3F81.
  // Then (x + y) - x: 0, 0, 0, 2^-7: the sum was rounded before the sub.
  auto r = run(R"(func.func @f(%x: tensor<4xbf16>, %y: tensor<4xbf16>)
      -> (tensor<4xbf16>, tensor<4xbf16>) {
    %0 = tcc.add %x, %y : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
    %1 = tcc.sub %0, %x : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
    return %0, %1 : tensor<4xbf16>, tensor<4xbf16>
  })",
               {bf16({4}, {0x3F80, 0x4380, 0x4040, 0x3F80}),
                bf16({4}, {0x3B80, 0x3F80, 0x3C00, 0x3BC0})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].dtype, DType::BF16);
  EXPECT_EQ(values<uint16_t>(r[0]),
            (std::vector<uint16_t>{0x3F80, 0x4380, 0x4040, 0x3F81}));
  EXPECT_EQ(values<uint16_t>(r[1]),
            (std::vector<uint16_t>{0x0000, 0x0000, 0x0000, 0x3C00}));
}

TEST_F(InterpHalfTest, F16MulSubnormalsAndOverflow) {
  // 2^-24 * 0.5 ties to 0; 2^-24 * 1.5 ties to 2^-23 (0x0002);
  // 300 * 300 = 90000 > 65504: inf; 1 * 3 = 3 (0x4200).
  auto r = run(R"(func.func @f(%x: tensor<4xf16>, %y: tensor<4xf16>)
      -> tensor<4xf16> {
    %0 = tcc.mul %x, %y : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
    return %0 : tensor<4xf16>
  })",
               {f16({4}, {0x0001, 0x0001, 0x5CB0, 0x3C00}),
                f16({4}, {0x3800, 0x3E00, 0x5CB0, 0x4200})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].dtype, DType::F16);
  EXPECT_EQ(values<uint16_t>(r[0]),
            (std::vector<uint16_t>{0x0000, 0x0002, 0x7C00, 0x4200}));
}

TEST_F(InterpHalfTest, CastsBetweenF32Bf16F16) {
  // 1/3 -> bf16 0x3EAB (0.333984375) -> f16 0x3558 (exact: fewer bits);
  // 1/3 -> f16 0x3555; 65520 -> bf16 0x4780 (65536), f16 inf; 1 + 2^-8 ->
  // bf16 1 (tie), f16 0x3C04 (exact). Back to f32: the rounded values.
  auto r = run(R"(func.func @f(%x: tensor<3xf32>)
      -> (tensor<3xbf16>, tensor<3xf16>, tensor<3xf16>, tensor<3xf32>) {
    %0 = tcc.cast %x : (tensor<3xf32>) -> tensor<3xbf16>
    %1 = tcc.cast %x : (tensor<3xf32>) -> tensor<3xf16>
    %2 = tcc.cast %0 : (tensor<3xbf16>) -> tensor<3xf16>
    %3 = tcc.cast %0 : (tensor<3xbf16>) -> tensor<3xf32>
    return %0, %1, %2, %3 : tensor<3xbf16>, tensor<3xf16>, tensor<3xf16>, tensor<3xf32>
  })",
               {f32({3}, {1.0f / 3.0f, 65520.0f, 1.00390625f})});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(values<uint16_t>(r[0]),
            (std::vector<uint16_t>{0x3EAB, 0x4780, 0x3F80}));
  EXPECT_EQ(values<uint16_t>(r[1]),
            (std::vector<uint16_t>{0x3555, 0x7C00, 0x3C04}));
  EXPECT_EQ(values<uint16_t>(r[2]),
            (std::vector<uint16_t>{0x3558, 0x7C00, 0x3C00}));
  EXPECT_EQ(r[3].dtype, DType::F32);
  EXPECT_EQ(values<float>(r[3]),
            (std::vector<float>{0.333984375f, 65536.0f, 1.0f}));
}

TEST_F(InterpHalfTest, ReductionAccumulatesWideRoundsOnce) {
  // 1 + 2^-8 + 2^-8 = 1 + 2^-7 (0x3F81); adding in bf16 step by step would
  // give 1. Constants are stored in bf16 too: 0.1 -> 0x3DCD.
  auto r = run(R"(func.func @f(%x: tensor<3xbf16>) -> (tensor<bf16>, tensor<2xbf16>) {
    %0 = tcc.reduce_sum %x {axes = array<i64: 0>} : (tensor<3xbf16>) -> tensor<bf16>
    %1 = tcc.constant dense<[0.1, -2.5]> : tensor<2xbf16>
    return %0, %1 : tensor<bf16>, tensor<2xbf16>
  })",
               {bf16({3}, {0x3F80, 0x3B80, 0x3B80})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(values<uint16_t>(r[0]), (std::vector<uint16_t>{0x3F81}));
  EXPECT_EQ(values<uint16_t>(r[1]), (std::vector<uint16_t>{0x3DCD, 0xC020}));
}

TEST_F(InterpHalfTest, SplatConstantAndPromote) {
  // A splat constant is rounded to bf16 once (1/3 -> 0x3EAB); under
  // promoteToF64 half tensors still store 16 bits.
  tcc::interp::Options promote;
  promote.promoteToF64 = true;
  auto r = run(R"(func.func @f(%x: tensor<2xbf16>) -> tensor<2xbf16> {
    %0 = tcc.constant dense<0.333333333> : tensor<2xbf16>
    %1 = tcc.add %x, %0 : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>
    return %1 : tensor<2xbf16>
  })",
               {bf16({2}, {0x0000, 0x3F80})}, promote);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].dtype, DType::BF16);
  // 0 + 0x3EAB; 1 + 0.333984375 = 1.333984375 -> 1.3359375 (0x3FAB).
  EXPECT_EQ(values<uint16_t>(r[0]), (std::vector<uint16_t>{0x3EAB, 0x3FAB}));
}

} // namespace
