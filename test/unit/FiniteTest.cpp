//===- FiniteTest.cpp - tests for runtime/data/finite.h -------------------===//
//
// NaN and infinity in every float format the runtime stores, by bit pattern:
// f16 0x7C00 = inf, 0x7E00 = NaN, 0x7BFF = 65504 (largest finite); bf16
// 0x7F80 = inf, 0xFFC0 = -NaN, 0x7F7F = largest finite.
//
//===----------------------------------------------------------------------===//

#include "data/finite.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tcc::data;
using testutil::makeArray;

namespace {

template <class T> bool finite(DType dtype, std::vector<T> values) {
  return allFinite(makeArray("a", dtype, {int64_t(values.size())}, values));
}

TEST(Finite, EveryFloatFormat) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(finite<float>(DType::F32, {0.f, -1.f, 3.4e38f, 1e-45f}));
  EXPECT_FALSE(finite<float>(DType::F32, {0.f, std::nanf("")}));
  EXPECT_FALSE(finite<float>(DType::F32, {-inf, 1.f}));
  EXPECT_TRUE(finite<double>(DType::F64, {1e308, -1e-300}));
  EXPECT_FALSE(finite<double>(DType::F64, {1.0, double(inf)}));
  EXPECT_TRUE(finite<uint16_t>(DType::F16, {0x3C00, 0x7BFF, 0xFBFF, 0x0001}));
  EXPECT_FALSE(finite<uint16_t>(DType::F16, {0x3C00, 0x7C00}));
  EXPECT_FALSE(finite<uint16_t>(DType::F16, {0x7E00}));
  EXPECT_TRUE(finite<uint16_t>(DType::BF16, {0x3F80, 0x7F7F}));
  EXPECT_FALSE(finite<uint16_t>(DType::BF16, {0x7F80}));
  EXPECT_FALSE(finite<uint16_t>(DType::BF16, {0x3F80, 0xFFC0}));
  EXPECT_TRUE(finite<float>(DType::F32, {}));
}

TEST(Finite, IntegersAlwaysAre) {
  // All exponent bits set when read as a float, but integers.
  EXPECT_TRUE(finite<int32_t>(DType::I32, {int32_t(0x7F800000)}));
  EXPECT_TRUE(finite<int64_t>(DType::I64, {-1}));
  EXPECT_TRUE(finite<uint16_t>(DType::U16, {0xFFFF}));
}

} // namespace
