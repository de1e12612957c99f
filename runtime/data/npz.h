//===- npz.h - NumPy .npy / .npz array I/O ----------------------*- C++ -*-===//
//
// Reads and writes NumPy arrays so that weights, inputs and reference outputs
// can be exchanged with Python without a converter. Plain C++17 and zlib: the
// runtime links this and must not depend on LLVM.
//
// Only what np.save / np.savez / np.savez_compressed produce for numeric
// arrays is accepted: C order, little-endian, no object or structured dtypes.
// Everything else is rejected with a tcc::data::Error whose message is one
// line naming the file (and the array when known).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_DATA_NPZ_H
#define TCC_RUNTIME_DATA_NPZ_H

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tcc::data {

enum class DType {
  F16,
  BF16,
  F32,
  F64,
  I8,
  I16,
  I32,
  I64,
  U8,
  U16,
  U32,
  U64,
  Bool
};

/// Bytes per element.
size_t dtypeSize(DType dtype);
/// Short name used in messages and manifests: "f32", "bf16", "i64", "bool".
const char *dtypeName(DType dtype);

struct Array {
  /// For .npz members the member name without ".npy"; for readNpy the file
  /// name without directory and ".npy".
  std::string name;
  DType dtype = DType::F32;
  /// Empty for a 0-d (scalar) array.
  std::vector<int64_t> shape;
  /// C order, little-endian, dtypeSize(dtype) * numElements() bytes.
  std::vector<uint8_t> bytes;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  template <class T> const T *data() const {
    assert(sizeof(T) == dtypeSize(dtype) && "element type does not match");
    return reinterpret_cast<const T *>(bytes.data());
  }
  template <class T> T *data() {
    assert(sizeof(T) == dtypeSize(dtype) && "element type does not match");
    return reinterpret_cast<T *>(bytes.data());
  }
};

class Error : public std::runtime_error {
public:
  using runtime_error::runtime_error;
};

Array readNpy(const std::string &path);
/// Members in archive (central directory) order; stored or deflated members.
std::vector<Array> readNpz(const std::string &path);

/// Writers go through `path + ".tmp"` and a rename, so an interrupted write
/// never leaves a partial file at `path`. BF16 arrays are rejected: NumPy has
/// no bf16 dtype and a silent '<u2' would lose the type.
void writeNpy(const std::string &path, const Array &array);
/// Writes an uncompressed archive that np.load reads. Zip64 records are used
/// where sizes or offsets need them (> 4 GiB); `forceZip64` uses them always,
/// which lets tests cover that path without 4 GiB files.
void writeNpz(const std::string &path, const std::vector<Array> &arrays,
              bool forceZip64 = false);

/// The array called `name`, or null.
const Array *findArray(const std::vector<Array> &arrays,
                       const std::string &name);

} // namespace tcc::data

#endif // TCC_RUNTIME_DATA_NPZ_H
