//===- tensorboard.h - TensorBoard event files, written by hand -*- C++ -*-===//
//
// `tcc run --tensorboard DIR` writes DIR/events.out.tfevents.<time>.<host>.
// <pid>.tcc, which TensorBoard reads, without TensorFlow: a TFRecord file
// (tensorflow/core/lib/io/record_writer.cc) of Event protos
// (tensorflow/core/util/event.proto) encoded here.
//
// Each record: uint64 length, uint32 masked_crc32c(length bytes), the
// bytes, uint32 masked_crc32c(bytes), all little-endian; masked(c) =
// ((c >> 15) | (c << 17)) + 0xa282ead8, CRC-32C (Castagnoli). The first
// event carries file_version "brain.Event:2"; every other one wall_time (1,
// double), step (2, int64) and a Summary (5) with one Value (1) per scalar:
// tag (1, string) and simple_value (2, float).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_RUN_TENSORBOARD_H
#define TCC_RUNTIME_RUN_TENSORBOARD_H

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace tcc::run {

/// CRC-32C of `n` bytes, and TFRecord's mask of it.
uint32_t crc32c(const void *data, size_t n);
uint32_t maskedCrc32c(const void *data, size_t n);

class EventWriter {
public:
  /// Creates DIR (if needed) and a new event file in it.
  bool open(const std::string &dir, std::string &error);
  bool isOpen() const { return out.is_open(); }
  /// One event at `step` holding these (tag, value) scalars; flushed.
  void scalars(int64_t step,
               const std::vector<std::pair<std::string, double>> &values);
  const std::string &path() const { return file; }

private:
  void record(const std::string &bytes);

  std::string file;
  std::ofstream out;
};

} // namespace tcc::run

#endif // TCC_RUNTIME_RUN_TENSORBOARD_H
