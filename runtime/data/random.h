//===- random.h - the data feed's reproducible random numbers ---*- C++ -*-===//
//
// Shuffled sample orders and random token windows must be the same on every
// machine and standard library, and reproducible from (seed, position)
// alone so a resumed run draws what the uninterrupted run would have drawn.
// std::shuffle and the <random> distributions are implementation-defined, so
// the feed uses these instead: SplitMix64 (Steele, Lea, Flood 2014) and
// Lemire's multiply-shift for an integer below n.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_DATA_RANDOM_H
#define TCC_RUNTIME_DATA_RANDOM_H

#include <cstdint>
#include <utility>
#include <vector>

namespace tcc::data {

/// SplitMix64's output function: a bijective mix of 64 bits.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// A SplitMix64 generator.
struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() { return mix64(state += 0x9e3779b97f4a7c15ULL); }
  /// Uniform in [0, n), n >= 1 (bias below n / 2^64).
  uint64_t below(uint64_t n) {
    return uint64_t((unsigned __int128)next() * n >> 64);
  }
};

/// The generator for item `index` of stream `seed` (an epoch's permutation,
/// a batch's windows): a function of both, independent of other items.
inline SplitMix64 streamAt(uint64_t seed, uint64_t index) {
  return SplitMix64(mix64(mix64(seed) ^ (index + 0x632be59bd9b4e019ULL)));
}

/// The permutation of [0, n) that shuffled epoch `epoch` of seed `seed`
/// reads the samples in (Fisher-Yates from the end).
inline std::vector<int64_t> epochPermutation(uint64_t seed, uint64_t epoch,
                                             int64_t n) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    p[size_t(i)] = i;
  SplitMix64 rng = streamAt(seed, epoch);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(p[size_t(i)], p[size_t(rng.below(uint64_t(i) + 1))]);
  return p;
}

} // namespace tcc::data

#endif // TCC_RUNTIME_DATA_RANDOM_H
