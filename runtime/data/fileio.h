//===- fileio.h - bounds-checked reads and atomic writes --------*- C++ -*-===//
//
// Internal to tcc_data: the file access that the .npz and safetensors codecs
// share, so both report I/O errors with the same messages.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_DATA_FILEIO_H
#define TCC_RUNTIME_DATA_FILEIO_H

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tcc::data::detail {

/// A whole file opened for random reads. Every read is checked against the
/// size taken at open, so a size from a corrupt file cannot read past the end
/// or allocate beyond the file.
class InFile {
public:
  explicit InFile(const std::string &path);
  ~InFile();
  InFile(const InFile &) = delete;
  InFile &operator=(const InFile &) = delete;

  /// `what` names the structure in the "truncated file" error.
  void read(uint64_t offset, void *dst, uint64_t len, const char *what);
  std::vector<uint8_t> read(uint64_t offset, uint64_t len, const char *what);

  uint64_t size = 0;

private:
  void checkRange(uint64_t offset, uint64_t len, const char *what);

  std::string path;
  std::FILE *f;
};

/// Writes to `path.tmp`; commit() fsyncs and renames it over `path`. Without
/// commit the temporary is removed, so no partial file survives an error.
class OutFile {
public:
  explicit OutFile(const std::string &path);
  ~OutFile();
  OutFile(const OutFile &) = delete;
  OutFile &operator=(const OutFile &) = delete;

  void write(const void *p, size_t n);
  void write(const std::vector<uint8_t> &v) { write(v.data(), v.size()); }
  void write(const std::string &s) { write(s.data(), s.size()); }
  void commit();

  /// Bytes written so far: the offset of the next write.
  uint64_t pos = 0;

private:
  std::string path, tmp;
  std::FILE *f;
};

} // namespace tcc::data::detail

#endif // TCC_RUNTIME_DATA_FILEIO_H
