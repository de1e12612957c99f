//===- sha256.h - SHA-256 (FIPS 180-4) of bytes and files -------*- C++ -*-===//
//
// The digest the artifact manifest records for each file and the checkpoint
// records for each tensor (docs/artifact.md, "Integrity"). Self-contained:
// no crypto library. Integrity against damage, not authentication: anyone
// who can rewrite a file can rewrite its digest.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_DATA_SHA256_H
#define TCC_RUNTIME_DATA_SHA256_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace tcc::data {

/// Incremental SHA-256.
class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t size);
  /// The digest as 64 lowercase hex digits; the object is then spent.
  std::string hexDigest();

private:
  void block(const uint8_t *p);
  uint32_t h[8];
  uint8_t buf[64];
  size_t used = 0;
  uint64_t total = 0;
};

/// SHA-256 of `size` bytes, in hex.
std::string sha256Hex(const void *data, size_t size);

/// A file's size and SHA-256, read in chunks.
struct FileDigest {
  uint64_t bytes = 0;
  std::string sha256;
};
/// Throws std::runtime_error ("PATH: cannot read: why") when it cannot be
/// read.
FileDigest digestFile(const std::string &path);

} // namespace tcc::data

#endif // TCC_RUNTIME_DATA_SHA256_H
