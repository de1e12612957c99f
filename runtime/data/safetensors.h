//===- safetensors.h - safetensors tensor file I/O --------------*- C++ -*-===//
//
// The format Hugging Face uses for weights, and the one tcc uses for initial
// weights and checkpoints, so that a checkpoint loads in PyTorch with
// safetensors.torch.load_file and vice versa:
//
//   8 bytes    N, little-endian u64
//   N bytes    JSON: {"__metadata__": {"k": "v", ...},
//                     "name": {"dtype": "F32", "shape": [2, 3],
//                              "data_offsets": [begin, end]}, ...}
//   the rest   tensor data, C order, little-endian; offsets are relative to
//              the first byte after the header
//
// Reading accepts tensors in any header order and any data order, but, as the
// reference implementation does, the data ranges must tile the data section
// exactly: no gaps, no overlaps, nothing after the last tensor. Problems are
// reported as tcc::data::Error, one line naming the file and the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_DATA_SAFETENSORS_H
#define TCC_RUNTIME_DATA_SAFETENSORS_H

#include "data/npz.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tcc::data {

/// The header's dtype string ("F32", "BF16", "BOOL", ...).
const char *safetensorsDTypeName(DType dtype);

/// Tensors in data order (ascending data_offsets), which for files this
/// library writes is the write order described below. When `metadata` is
/// given it receives the "__metadata__" map (cleared when there is none).
/// Tensor data is read straight into each Array; the file is not mapped.
std::vector<Array>
readSafetensors(const std::string &path,
                std::map<std::string, std::string> *metadata = nullptr);

/// Writes the file the reference implementation (safetensors.numpy.save_file)
/// writes for the same tensors: compact JSON, "__metadata__" first and only
/// when non-empty, header padded with spaces to a multiple of 8 bytes, data
/// ordered by descending dtype alignment, then by name (byte-wise). That order
/// keeps every tensor naturally aligned for a zero-copy load, and is
/// deterministic. Metadata keys are written in sorted order.
///
/// Goes through `path + ".tmp"`, fsync and a rename, so an interrupted write
/// never leaves a partial file at `path`. Names must be unique, non-empty and
/// valid UTF-8, and not "__metadata__"; each Array's byte count must match its
/// dtype and shape.
void writeSafetensors(const std::string &path, const std::vector<Array> &arrays,
                      const std::map<std::string, std::string> &metadata = {});

/// Receives a tensor's bytes piece by piece, in order.
using ByteSink = std::function<void(const void *data, size_t size)>;

/// A tensor for streamSafetensors: the header's fields, and `write`, which
/// passes exactly dtypeSize(dtype) * numElements() bytes to its sink. The
/// bytes go from wherever they live (a compiler's IR, a mapped file) to the
/// file without a copy of the whole set in memory.
struct TensorSource {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::function<void(const ByteSink &sink)> write;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// writeSafetensors for tensors whose bytes are pulled while the file is
/// written: the same file, order, checks and atomic replacement. A source
/// that passes a different number of bytes than its shape needs is an
/// Error, and nothing is left at `path`.
void streamSafetensors(const std::string &path,
                       const std::vector<TensorSource> &tensors,
                       const std::map<std::string, std::string> &metadata = {});

} // namespace tcc::data

#endif // TCC_RUNTIME_DATA_SAFETENSORS_H
