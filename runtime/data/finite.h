//===- finite.h - NaN and infinity in arrays --------------------*- C++ -*-===//
//
// The training loop refuses to checkpoint parameters or optimizer state that
// hold a NaN or an infinity (runtime/run); both engines answer through this.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_DATA_FINITE_H
#define TCC_RUNTIME_DATA_FINITE_H

#include "data/npz.h"

#include <cstddef>
#include <cstdint>

namespace tcc::data {

/// Whether every element of `bytes` (`size` bytes of `dtype`) is finite;
/// integer and bool data always are.
bool allFinite(DType dtype, const uint8_t *bytes, size_t size);

inline bool allFinite(const Array &a) {
  return allFinite(a.dtype, a.bytes.data(), a.bytes.size());
}

} // namespace tcc::data

#endif // TCC_RUNTIME_DATA_FINITE_H
