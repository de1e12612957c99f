//===- pack_calls.h - what both backends say and store for packed tokens --===//
//
// The pack ops of pad-skipping (pack_index, pack, unpack) run on the CPU
// (cpu_calls.cpp) and the CUDA backend (cuda_calls.cpp); their fill value
// and their error lines are defined once, here.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_PACK_CALLS_H
#define TCC_RUNTIME_EXEC_PACK_CALLS_H

#include "data/half.h"
#include "plan/plan.h"

#include <cstdint>
#include <string>

namespace tcc::rt {

/// `v` as one element of `dtype`: its bytes in the low end of the result
/// (little-endian), 8 bytes at most.
uint64_t scalarBits(data::DType dtype, double v);

/// Whether pack's fill check compares `dtype` rows as floats (+0 or -0).
bool packComparesFloats(data::DType dtype);

/// pack_index met a key-mask bias `value` that is neither 0 (a token) nor
/// <= -1000 (padding) at flat position `pos` of a [B, seq] mask named
/// `mask`. `where` is "FUNCTION step N (op): ".
std::string packIndexError(const std::string &where, const std::string &mask,
                           double value, int64_t pos, int64_t seq);

/// pack's fill check failed at row `row` of `value`: a float gradient that
/// is not zero there (`floats`), or an integer operand holding `held`
/// instead of `fill` (the loss's ignore_index).
std::string packFillError(const std::string &where, const std::string &value,
                          bool floats, int64_t row, int64_t held,
                          int64_t fill);

/// unpack found flat position `pos` (of sequences of `seq`), which the
/// model reads after the packed layers, to be padding.
std::string unpackReadError(const std::string &where, int64_t pos,
                            int64_t seq);

/// segment_index met position `value` at flat position `pos` of the
/// [B, seq] position ids named `ids`: neither 0 (a new document) nor the
/// previous position plus 1.
std::string segmentIndexError(const std::string &where, const std::string &ids,
                              int64_t value, int64_t pos, int64_t seq);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_PACK_CALLS_H
