//===- HalfTest.cpp - tests for runtime/data/half.h -----------------------===//
//
// Bit patterns derived by hand from the formats: bf16 is the top half of an
// f32 (1.0f = 0x3F800000 -> 0x3F80); f16 has exponent bias 15, 10 mantissa
// bits (1.0 = 0x3C00, 65504 = 0x7BFF the largest finite, 2^-24 = 0x0001 the
// smallest subnormal, 2^-14 = 0x0400 the smallest normal).
//
//===----------------------------------------------------------------------===//

#include "data/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tcc::data;

namespace {

float fromBits(uint32_t u) { return bitsFloat(u); }
const float Inf = std::numeric_limits<float>::infinity();

TEST(Half, Bf16Exact) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBf16(-2.0f), 0xC000);
  EXPECT_EQ(floatToBf16(0.0f), 0x0000);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBf16(Inf), 0x7F80);
  EXPECT_EQ(floatToBf16(-Inf), 0xFF80);
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xC0A0), -5.0f);
  EXPECT_EQ(floatBits(bf16ToFloat(0x7F7F)), 0x7F7F0000u);
}

TEST(Half, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between 0x3F80 (even) and 0x3F81.
  EXPECT_EQ(floatToBf16(fromBits(0x3F808000)), 0x3F80);
  // 1 + 3 * 2^-8: halfway between 0x3F81 and 0x3F82 (even).
  EXPECT_EQ(floatToBf16(fromBits(0x3F818000)), 0x3F82);
  EXPECT_EQ(floatToBf16(fromBits(0x3F808001)), 0x3F81); // Just above.
  EXPECT_EQ(floatToBf16(fromBits(0x3F807FFF)), 0x3F80); // Just below.
  EXPECT_EQ(floatToBf16(1.0f / 3.0f), 0x3EAB);          // 0x3EAAAAAB
  EXPECT_EQ(floatToBf16(-1.0f / 3.0f), 0xBEAB);
  // f32 subnormals: 0x8000 ties to 0, 0x18000 ties to 2.
  EXPECT_EQ(floatToBf16(fromBits(0x00008000)), 0x0000);
  EXPECT_EQ(floatToBf16(fromBits(0x00018000)), 0x0002);
  EXPECT_EQ(floatToBf16(fromBits(0x00000001)), 0x0000);
}

TEST(Half, Bf16OverflowAndNaN) {
  // FLT_MAX is past halfway above 0x7F7F (the largest bf16): inf.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBf16(-std::numeric_limits<float>::max()), 0xFF80);
  EXPECT_EQ(floatToBf16(fromBits(0x7F7F7FFF)), 0x7F7F);
  // A signalling NaN whose payload sits in the low bits must not become inf.
  EXPECT_EQ(floatToBf16(fromBits(0x7F800001)), 0x7FC0);
  EXPECT_EQ(floatToBf16(fromBits(0xFFC00000)), 0xFFC0);
  EXPECT_EQ(floatToBf16(fromBits(0x7FFFFFFF)), 0x7FFF);
  EXPECT_TRUE(std::isnan(bf16ToFloat(0x7FC0)));
}

TEST(Half, F16Exact) {
  EXPECT_EQ(floatToF16(1.0f), 0x3C00);
  EXPECT_EQ(floatToF16(-2.0f), 0xC000);
  EXPECT_EQ(floatToF16(0.5f), 0x3800);
  EXPECT_EQ(floatToF16(0.0f), 0x0000);
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  EXPECT_EQ(floatToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToF16(std::ldexp(1023.0f, -24)), 0x03FF);
  EXPECT_EQ(floatToF16(Inf), 0x7C00);
  EXPECT_EQ(floatToF16(-Inf), 0xFC00);
  EXPECT_EQ(f16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(f16ToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(f16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16ToFloat(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(f16ToFloat(0x7C00), Inf);
  EXPECT_EQ(f16ToFloat(0xFC00), -Inf);
  EXPECT_EQ(floatBits(f16ToFloat(0x8000)), 0x80000000u);
}

TEST(Half, F16RoundsToNearestEven) {
  EXPECT_EQ(floatToF16(0.1f), 0x2E66);
  EXPECT_EQ(floatToF16(1.0f / 3.0f), 0x3555);
  // 1 + 2^-11: halfway between 0x3C00 (even) and 0x3C01.
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(1.0f, -11) +
                       std::ldexp(1.0f, -20)),
            0x3C01);
  // Spacing 2 at 2048: 2049 ties to 2048, 2051 to 2052.
  EXPECT_EQ(floatToF16(2049.0f), 0x6800);
  EXPECT_EQ(floatToF16(2051.0f), 0x6802);
  // A mantissa carry into the exponent: 2047.99 -> 2048.
  EXPECT_EQ(floatToF16(2047.5f), 0x6800); // tie between 0x67FF and 0x6800
}

TEST(Half, F16Subnormals) {
  // In units of 2^-24: 0.5 ties to 0, 1.5 to 2, 2.5 to 2, 0.75 to 1.
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToF16(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(floatToF16(std::ldexp(5.0f, -25)), 0x0002);
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(floatToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(floatToF16(std::numeric_limits<float>::denorm_min()), 0x0000);
  // 1023.5 units ties to 1024, the smallest normal.
  EXPECT_EQ(floatToF16(std::ldexp(2047.0f, -25)), 0x0400);
  EXPECT_EQ(floatToF16(std::ldexp(2045.0f, -25)), 0x03FE);
}

TEST(Half, F16OverflowAndNaN) {
  EXPECT_EQ(floatToF16(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToF16(65520.0f), 0x7C00); // Halfway; 0x7BFF is odd.
  EXPECT_EQ(floatToF16(-65520.0f), 0xFC00);
  EXPECT_EQ(floatToF16(1e10f), 0x7C00);
  EXPECT_EQ(floatToF16(std::numeric_limits<float>::max()), 0x7C00);
  EXPECT_EQ(floatToF16(fromBits(0x7FC00000)), 0x7E00);
  EXPECT_EQ(floatToF16(fromBits(0x7F800001)), 0x7E00); // Quiet, not inf.
  EXPECT_EQ(floatToF16(fromBits(0xFFA00000)), 0xFF00);
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7C01)));
}

// Every non-NaN 16-bit pattern survives the round trip through float, and
// every midpoint between neighbours rounds to the even one.
TEST(Half, ExhaustiveRoundTripAndMidpoints) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t b = static_cast<uint16_t>(h);
    if (!std::isnan(bf16ToFloat(b)))
      ASSERT_EQ(floatToBf16(bf16ToFloat(b)), b) << std::hex << h;
    else
      ASSERT_TRUE(std::isnan(bf16ToFloat(floatToBf16(bf16ToFloat(b)))));
    if (!std::isnan(f16ToFloat(b)))
      ASSERT_EQ(floatToF16(f16ToFloat(b)), b) << std::hex << h;
    else
      ASSERT_TRUE(std::isnan(f16ToFloat(floatToF16(f16ToFloat(b)))));
  }
  // Positive finite neighbours h, h + 1 (f16 up to 0x7BFE).
  for (uint16_t h = 0; h < 0x7BFF; ++h) {
    double lo = f16ToFloat(h), hi = f16ToFloat(uint16_t(h + 1));
    float mid = static_cast<float>((lo + hi) / 2); // Exact in float.
    uint16_t even = (h & 1) ? uint16_t(h + 1) : h;
    ASSERT_EQ(floatToF16(mid), even) << std::hex << h;
    ASSERT_EQ(floatToF16(std::nextafter(mid, 0.0f)), h) << std::hex << h;
    ASSERT_EQ(floatToF16(std::nextafter(mid, Inf)), uint16_t(h + 1));
    ASSERT_EQ(floatToF16(-mid), uint16_t(even | 0x8000));
  }
  for (uint16_t h = 0; h < 0x7F7F; ++h) {
    double lo = bf16ToFloat(h), hi = bf16ToFloat(uint16_t(h + 1));
    float mid = static_cast<float>((lo + hi) / 2);
    if (static_cast<double>(mid) != (lo + hi) / 2)
      continue; // Subnormal f32 midpoints of the smallest bf16 need 1 bit more.
    uint16_t even = (h & 1) ? uint16_t(h + 1) : h;
    ASSERT_EQ(floatToBf16(mid), even) << std::hex << h;
  }
}

} // namespace
