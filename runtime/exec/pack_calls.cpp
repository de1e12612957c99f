//===- pack_calls.cpp - what both backends say and store for packed tokens ===//

#include "exec/pack_calls.h"

#include <cstring>

namespace tcc::rt {

using data::DType;

uint64_t scalarBits(DType dtype, double v) {
  uint64_t bits = 0;
  auto put = [&](auto x) { std::memcpy(&bits, &x, sizeof x); };
  switch (dtype) {
  case DType::F64:
    put(v);
    break;
  case DType::F32:
    put(static_cast<float>(v));
    break;
  case DType::BF16:
    put(data::floatToBf16(static_cast<float>(v)));
    break;
  case DType::F16:
    put(data::floatToF16(static_cast<float>(v)));
    break;
  case DType::I64:
    put(static_cast<int64_t>(v));
    break;
  case DType::I32:
    put(static_cast<int32_t>(v));
    break;
  default:
    put(static_cast<uint8_t>(v != 0));
    break;
  }
  return bits;
}

bool packComparesFloats(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::BF16 ||
         dtype == DType::F16;
}

std::string packIndexError(const std::string &where, const std::string &mask,
                           double value, int64_t pos, int64_t seq) {
  return where + "the attention key mask " + mask + " holds " +
         std::to_string(value) + " at position (" + std::to_string(pos / seq) +
         ", " + std::to_string(pos % seq) +
         "): pad-skipping packs tokens whose mask is 0 and drops those of "
         "-1000 or below; compile with --pad-skip=off to keep any other bias";
}

std::string packFillError(const std::string &where, const std::string &value,
                          bool floats, int64_t row, int64_t held,
                          int64_t fill) {
  if (floats)
    return where + value + " is not zero at padded row " +
           std::to_string(row) +
           ": a gradient reaches a token the attention mask pads (a CLS "
           "token that is padding?); compile with --pad-skip=off";
  return where + value + " holds " + std::to_string(held) +
         " at padded row " + std::to_string(row) +
         " (the attention mask is 0 there), not the loss's ignore_index " +
         std::to_string(fill) +
         ": pad-skipping drops padded tokens, so their labels must be "
         "ignored (set them to " +
         std::to_string(fill) +
         ", as Hugging Face's collators do, or compile with --pad-skip=off)";
}

std::string unpackReadError(const std::string &where, int64_t pos,
                            int64_t seq) {
  return where + "the model reads position " + std::to_string(pos % seq) +
         " of sequence " + std::to_string(pos / seq) +
         " (a CLS token) after the packed layers, but the attention mask "
         "marks it as padding, so pad-skipping computed nothing there: give "
         "every sequence that token, or compile with --pad-skip=off";
}

std::string segmentIndexError(const std::string &where, const std::string &ids,
                              int64_t value, int64_t pos, int64_t seq) {
  return where + ids + " holds " + std::to_string(value) + " at (" +
         std::to_string(pos / seq) + ", " + std::to_string(pos % seq) +
         "): a document's positions count 0, 1, 2, ... and 0 starts the next "
         "document (packed documents, --pack-documents)";
}

} // namespace tcc::rt
