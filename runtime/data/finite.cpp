#include "data/finite.h"

#include <cstring>

namespace tcc::data {

/// Whether no element of type Bits has all of `exponent`'s bits set, the
/// encoding of NaN and infinity in every IEEE-like float format.
template <class Bits>
static bool noneAllOnes(const uint8_t *bytes, size_t size, Bits exponent) {
  for (size_t i = 0; i + sizeof(Bits) <= size; i += sizeof(Bits)) {
    Bits v;
    std::memcpy(&v, bytes + i, sizeof v);
    if ((v & exponent) == exponent)
      return false;
  }
  return true;
}

bool allFinite(DType dtype, const uint8_t *bytes, size_t size) {
  switch (dtype) {
  case DType::F16:
    return noneAllOnes<uint16_t>(bytes, size, 0x7c00);
  case DType::BF16:
    return noneAllOnes<uint16_t>(bytes, size, 0x7f80);
  case DType::F32:
    return noneAllOnes<uint32_t>(bytes, size, 0x7f800000u);
  case DType::F64:
    return noneAllOnes<uint64_t>(bytes, size, 0x7ff0000000000000ull);
  default:
    return true;
  }
}

} // namespace tcc::data
