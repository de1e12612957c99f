//===- half.h - float <-> bf16 / f16 conversions ----------------*- C++ -*-===//
//
// The 16-bit storage types of the precision work, as raw bit patterns
// (uint16_t): bfloat16 (1 sign, 8 exponent, 7 mantissa bits: the top half
// of an f32) and IEEE binary16 (1, 5, 10). Plain C++17, no LLVM, header only,
// so the runtime, the interpreter and tests share one definition.
//
// float -> 16 bits rounds to nearest, ties to even (what CUDA's
// __float2bfloat16_rn / __float2half_rn do); values past the largest finite
// value round to +-inf; a NaN stays a NaN and is made quiet (the top mantissa
// bit set) keeping the sign and the top payload bits; f16 subnormals are
// exact. 16 bits -> float is exact.
//
// The generated kernels carry their own copy (tcc_k:: in
// runtime/kernels/tcc_kernel.h, which must stand alone); the unit tests pin
// both to the same bit patterns.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_DATA_HALF_H
#define TCC_RUNTIME_DATA_HALF_H

#include <cstdint>
#include <cstring>

namespace tcc::data {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// float -> bfloat16 bits, round to nearest even.
inline uint16_t floatToBf16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) // NaN: truncate, force quiet.
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  x += 0x7FFFu + ((x >> 16) & 1u); // Carries into the exponent (up to inf).
  return static_cast<uint16_t>(x >> 16);
}

inline float bf16ToFloat(uint16_t h) {
  return bitsFloat(static_cast<uint32_t>(h) << 16);
}

/// float -> IEEE binary16 bits, round to nearest even.
inline uint16_t floatToF16(float f) {
  uint32_t x = floatBits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x > 0x7F800000u) // NaN: top payload bits, forced quiet.
    return static_cast<uint16_t>(sign | 0x7E00u | ((x >> 13) & 0x3FFu));
  if (x >= 0x477FF000u) // >= 65520, halfway past 65504 (odd): inf.
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (x >= 0x38800000u) { // >= 2^-14: normal.
    uint32_t h = ((((x >> 23) - 127u + 15u) << 10) | ((x >> 13) & 0x3FFu));
    uint32_t rem = x & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
      ++h; // A mantissa carry moves into the exponent, as it should.
    return static_cast<uint16_t>(sign | h);
  }
  if (x <= 0x33000000u) // <= 2^-25 (a tie with 0 goes to 0).
    return sign;
  // Subnormal: units of 2^-24. value = m * 2^(e - 150), so h = m >> (126 - e).
  uint32_t e = x >> 23;
  uint32_t m = (x & 0x7FFFFFu) | 0x800000u;
  uint32_t shift = 126u - e; // 14 .. 24
  uint32_t h = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (h & 1u)))
    ++h; // May become 0x400, the smallest normal: right.
  return static_cast<uint16_t>(sign | h);
}

inline float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1Fu;
  uint32_t m = h & 0x3FFu;
  if (e == 0x1Fu)
    return bitsFloat(sign | 0x7F800000u | (m << 13));
  if (e == 0) {
    if (m == 0)
      return bitsFloat(sign);
    int32_t exp = 1;
    while (!(m & 0x400u)) {
      m <<= 1;
      --exp;
    }
    m &= 0x3FFu;
    return bitsFloat(sign | (static_cast<uint32_t>(exp + 112) << 23) |
                     (m << 13));
  }
  return bitsFloat(sign | ((e + 112u) << 23) | (m << 13));
}

/// `f` rounded to the nearest bf16 / f16 value, as a float.
inline float roundToBf16(float f) { return bf16ToFloat(floatToBf16(f)); }
inline float roundToF16(float f) { return f16ToFloat(floatToF16(f)); }

} // namespace tcc::data

#endif // TCC_RUNTIME_DATA_HALF_H
