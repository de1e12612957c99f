//===- dropout_hash.h - The counter-based dropout mask ----------*- C++ -*-===//
//
// The one definition of tcc.dropout's mask, shared by the interpreter and the
// generated host/CUDA kernels: element `index` of a dropout with `seed` is
// kept exactly when
//
//   key  = splitmix64(seed)              // nearby seeds give unrelated masks
//   bits = splitmix64(key ^ index)       // counter-based: no state, any order
//   u24  = bits >> 40                    // top 24 bits, uniform in [0, 2^24)
//   keep = u24 < ceil((1 - ratio) * 2^24)
//
// which is `dropoutUniform(seed, index) < 1 - ratio` evaluated in double
// (u = u24 / 2^24 is exact in float and double). The threshold is an integer
// so a device never has to reproduce a float comparison bit for bit: the host
// computes it once with dropoutKeepThreshold and passes it to the kernel.
// `index` is the row-major element index in the whole tensor; `seed` is the
// op's i64 attribute reinterpreted as unsigned. Kept elements are scaled by
// 1 / (1 - ratio).
//
// Plain C++ with no dependencies; marked for CUDA when compiled by nvcc.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_KERNELS_DROPOUT_HASH_H
#define TCC_KERNELS_DROPOUT_HASH_H

#include "kernels/host_device.h"

#include <cmath>
#include <cstdint>

namespace tcc {

/// SplitMix64's finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mix
/// in which every input bit affects every output bit.
TCC_HOST_DEVICE uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The seed a dropout with `seed` and a per-call `offset` draws from: steps
/// along SplitMix64's own stream, so offset 0 is the seed itself.
TCC_HOST_DEVICE uint64_t dropoutSeed(uint64_t seed, uint64_t offset) {
  return seed + offset * 0x9E3779B97F4A7C15ull;
}

/// The 24 random bits drawn for element `index`.
TCC_HOST_DEVICE uint32_t dropoutBits24(uint64_t seed, uint64_t index) {
  return static_cast<uint32_t>(splitmix64(splitmix64(seed) ^ index) >> 40);
}

/// Uniform in [0, 1) with 24-bit resolution; exact in float.
TCC_HOST_DEVICE float dropoutUniform(uint64_t seed, uint64_t index) {
  return static_cast<float>(dropoutBits24(seed, index)) * (1.0f / 16777216.0f);
}

/// Elements with dropoutBits24 below this are kept; ratio in [0, 1).
inline uint32_t dropoutKeepThreshold(double ratio) {
  return static_cast<uint32_t>(std::ceil((1.0 - ratio) * 16777216.0));
}

TCC_HOST_DEVICE bool dropoutKeep(uint64_t seed, uint64_t index,
                                 uint32_t keepThreshold) {
  return dropoutBits24(seed, index) < keepThreshold;
}

} // namespace tcc

#endif // TCC_KERNELS_DROPOUT_HASH_H
