// Packed tokens (pad-skipping): the key mask's valid positions in packed
// order, and rows moved into and out of that order; packed documents'
// boundaries from their position ids. Rows are opaque bytes,
// so one kernel serves every dtype.
#include "kernels/cpu/cpu_kernels.h"

#include <cstring>
#include <vector>

namespace tcc::cpu {

int64_t pack_index(const uint8_t *keep, const float *bias, int64_t batch,
                   int64_t seq, int32_t *rows, int32_t *cu) {
  int32_t count = 0;
  for (int64_t b = 0; b < batch; ++b) {
    cu[b] = count;
    for (int64_t t = 0; t < seq; ++t) {
      int64_t p = b * seq + t;
      bool token;
      if (keep) {
        token = keep[p] != 0;
      } else if (bias[p] == 0.0f) {
        token = true;
      } else if (bias[p] <= -1000.0f) {
        token = false;
      } else {
        return p; // also NaN
      }
      if (token)
        rows[count++] = static_cast<int32_t>(p);
    }
  }
  cu[batch] = count;
  for (int64_t i = count; i < batch * seq; ++i)
    rows[i] = -1;
  return -1;
}

int64_t segment_index(const void *pos, bool pos64, int64_t batch,
                      int64_t seq, int32_t *cu) {
  auto at = [&](int64_t r) {
    return pos64 ? static_cast<const int64_t *>(pos)[r]
                 : int64_t(static_cast<const int32_t *>(pos)[r]);
  };
  int64_t count = 0;
  for (int64_t r = 0; r < batch * seq; ++r) {
    int64_t p = at(r);
    if (r % seq == 0 || p == 0)
      cu[count++] = static_cast<int32_t>(r);
    else if (p != at(r - 1) + 1)
      return r;
  }
  for (int64_t s = count; s <= batch * seq; ++s)
    cu[s] = static_cast<int32_t>(batch * seq);
  return -1;
}

namespace {

/// Whether a row of floats of `elemBytes` bytes is all +0 or -0.
bool zeroFloats(const uint8_t *row, int64_t rowBytes, int64_t elemBytes) {
  for (int64_t b = 0; b < rowBytes; b += elemBytes) {
    uint64_t bits = 0;
    std::memcpy(&bits, row + b, static_cast<size_t>(elemBytes));
    uint64_t sign = uint64_t(1) << (8 * elemBytes - 1);
    if ((bits & ~sign) != 0)
      return false;
  }
  return true;
}

} // namespace

int64_t pack_rows(const uint8_t *in, const int32_t *rows, int64_t n,
                  int64_t rowBytes, const uint8_t *fill, int64_t elemBytes,
                  bool check, bool floatZero, uint8_t *out) {
  std::vector<uint8_t> fillRow(static_cast<size_t>(rowBytes));
  for (int64_t b = 0; b + elemBytes <= rowBytes; b += elemBytes)
    std::memcpy(fillRow.data() + b, fill, static_cast<size_t>(elemBytes));
  std::vector<uint8_t> kept(check ? static_cast<size_t>(n) : 0);
  for (int64_t i = 0; i < n; ++i) {
    uint8_t *dst = out + i * rowBytes;
    if (rows[i] < 0) {
      std::memcpy(dst, fillRow.data(), static_cast<size_t>(rowBytes));
      continue;
    }
    std::memcpy(dst, in + int64_t(rows[i]) * rowBytes,
                static_cast<size_t>(rowBytes));
    if (check)
      kept[size_t(rows[i])] = 1;
  }
  if (check)
    for (int64_t p = 0; p < n; ++p) {
      const uint8_t *row = in + p * rowBytes;
      if (!kept[size_t(p)] &&
          (floatZero ? !zeroFloats(row, rowBytes, elemBytes)
                     : std::memcmp(row, fillRow.data(),
                                   static_cast<size_t>(rowBytes)) != 0))
        return p;
    }
  return -1;
}

int64_t unpack_rows(const uint8_t *in, const int32_t *rows, int64_t n,
                    int64_t rowBytes, int64_t seq, int64_t readBegin,
                    int64_t readEnd, uint8_t *out) {
  std::memset(out, 0, static_cast<size_t>(n * rowBytes));
  std::vector<uint8_t> filled(readEnd > readBegin ? size_t(n) : 0);
  for (int64_t i = 0; i < n && rows[i] >= 0; ++i) {
    std::memcpy(out + int64_t(rows[i]) * rowBytes, in + i * rowBytes,
                static_cast<size_t>(rowBytes));
    if (!filled.empty())
      filled[size_t(rows[i])] = 1;
  }
  if (!filled.empty())
    for (int64_t b = 0; b < n / seq; ++b)
      for (int64_t t = readBegin; t < readEnd; ++t)
        if (!filled[size_t(b * seq + t)])
          return b * seq + t;
  return -1;
}

} // namespace tcc::cpu
