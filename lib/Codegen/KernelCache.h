//===- KernelCache.h - Compiled kernels by content hash ---------*- C++ -*-===//
//
// A directory of compiled files (host objects, fatbins, shared objects)
// named by the SHA-256 of everything that produced them: the compiler's
// identity, its flags and its inputs' bytes. Recompiling a model whose
// kernels did not change takes them from here.
//
// Each entry is the file's bytes followed by a trailer {8-byte magic, the
// byte count, the bytes' SHA-256}; an entry that fails the check (a torn
// or corrupted file) is deleted and reported as a miss, so it is rebuilt.
// Entries are written to a unique temporary name and renamed into place,
// so concurrent compiles (several processes sharing the directory) never
// see a partial entry; the last writer of a key wins, with the same bytes.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_LIB_CODEGEN_KERNELCACHE_H
#define TCC_LIB_CODEGEN_KERNELCACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace tcc::codegen {

class KernelCache {
public:
  /// A cache under `dir` (created on first store); empty: disabled.
  explicit KernelCache(std::string dir) : dir(std::move(dir)) {}

  bool enabled() const { return !dir.empty(); }

  /// The hex SHA-256 of `parts`, each length-prefixed so that no two lists
  /// hash alike.
  static std::string key(llvm::ArrayRef<llvm::StringRef> parts);

  /// The result of fetch.
  enum class Fetch { Hit, Miss, Corrupt };

  /// Copies entry `key` to `path` (replacing it). Corrupt: the entry failed
  /// its check and was removed.
  Fetch fetch(const std::string &key, const std::string &path) const;

  /// Stores the file at `path` as entry `key`. A cache is an optimisation:
  /// a directory that cannot be written is not an error, so this returns
  /// nothing.
  void store(const std::string &key, const std::string &path) const;

  /// Where entry `key` lives (for tests).
  std::string entryPath(const std::string &key) const;

private:
  std::string dir;
};

/// A stand-in for a program in a cache key: its resolved path, size and
/// modification time, so an upgraded compiler misses the cache without
/// running it.
std::string toolIdentity(llvm::StringRef program);

} // namespace tcc::codegen

#endif // TCC_LIB_CODEGEN_KERNELCACHE_H
