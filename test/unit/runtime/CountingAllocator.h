//===- CountingAllocator.h - a tcc_allocator that keeps the books ---------===//
//
// The allocator hook of tcc_session_options for the session-options tests
// (cpu here, cuda in test/unit/gpu): every block it hands out is recorded
// with its size and kind, every free is matched against that record, and it
// can fail (return NULL) at a chosen allocation or return addresses off
// their alignment. Host blocks are filled with 0xAB, so a session that
// reads memory it did not clear shows it.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_TEST_UNIT_RUNTIME_COUNTINGALLOCATOR_H
#define TCC_TEST_UNIT_RUNTIME_COUNTINGALLOCATOR_H

#include "api/tcc_runtime.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

namespace rttest {

class CountingAllocator {
public:
  /// Where the blocks come from: `alloc` returns `bytes` at a multiple of
  /// `alignment` or null, `release` takes them back. Host memory by default.
  using Alloc = void *(*)(size_t bytes, size_t alignment);
  using Release = void (*)(void *p);
  CountingAllocator(Alloc alloc = hostAlloc, Release release = std::free)
      : inner(alloc), innerRelease(release) {}

  tcc_allocator hook() { return {this, allocThunk, freeThunk}; }

  /// The allocation with this index (0-based) returns NULL; -1: none.
  int64_t failAt = -1;
  /// Added to every address handed out (to test misaligned hooks).
  size_t offset = 0;

  int64_t allocs = 0, frees = 0;
  /// Frees of an address not handed out, or with another size or kind.
  int64_t badFrees = 0;
  /// The bytes of every successful allocation.
  size_t bytes = 0;
  std::set<size_t> alignments;
  std::set<int> kinds;
  /// Address -> (bytes, kind) of the blocks not yet freed.
  std::map<void *, std::pair<size_t, int>> live;

  /// 0xAB-filled host memory from aligned_alloc.
  static void *hostAlloc(size_t bytes, size_t alignment) {
    void *p = std::aligned_alloc(alignment, (bytes + alignment - 1) /
                                                alignment * alignment);
    if (p)
      std::memset(p, 0xAB, bytes);
    return p;
  }

private:
  static void *allocThunk(void *ctx, size_t bytes, size_t alignment,
                          tcc_memory_kind kind) {
    auto *self = static_cast<CountingAllocator *>(ctx);
    if (self->allocs++ == self->failAt)
      return nullptr;
    self->alignments.insert(alignment);
    self->kinds.insert(kind);
    void *p = self->inner(bytes + self->offset, alignment);
    if (!p)
      return nullptr;
    void *out = static_cast<char *>(p) + self->offset;
    self->live[out] = {bytes, kind};
    self->bytes += bytes;
    return out;
  }
  static void freeThunk(void *ctx, void *p, size_t bytes,
                        tcc_memory_kind kind) {
    auto *self = static_cast<CountingAllocator *>(ctx);
    ++self->frees;
    auto it = self->live.find(p);
    if (it == self->live.end() || it->second.first != bytes ||
        it->second.second != kind) {
      ++self->badFrees;
      return;
    }
    self->live.erase(it);
    self->innerRelease(static_cast<char *>(p) - self->offset);
  }

  Alloc inner;
  Release innerRelease;
};

} // namespace rttest

#endif // TCC_TEST_UNIT_RUNTIME_COUNTINGALLOCATOR_H
