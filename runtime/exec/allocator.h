//===- allocator.h - where a backend's buffers come from --------*- C++ -*-===//
//
// Every buffer a session holds comes from one Allocator of its backend: the
// caller's tcc_allocator (tcc_session_options.allocator) when there is one,
// else the backend's own (calloc, cudaMalloc) in the same shape. The
// Allocator remembers what it handed out and gives it all back in release(),
// so a session that fails halfway through opening frees what it had.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_ALLOCATOR_H
#define TCC_RUNTIME_EXEC_ALLOCATOR_H

#include "api/tcc_runtime.h"
#include "plan/plan.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

/// Host buffers start at multiples of the arena alignment, which the plan's
/// offsets and the kernels' vector accesses assume.
constexpr size_t kHostAlignment = size_t(kArenaAlignment);
/// Device buffers at multiples of 256 bytes, as cudaMalloc gives them.
constexpr size_t kDeviceAlignment = 256;

/// The backend's own host allocator: zero-filled blocks from calloc, which
/// leaves large ones to fresh zero pages, so an arena or state the steps
/// never touch costs no physical memory and no time to clear.
tcc_allocator callocAllocator();

class Allocator {
public:
  /// Buffers of `kind` from `hook` when it has an alloc, else from `own`.
  Allocator(const tcc_allocator &hook, const tcc_allocator &own,
            tcc_memory_kind kind, size_t alignment);
  ~Allocator() { release(); }
  Allocator(const Allocator &) = delete;
  Allocator &operator=(const Allocator &) = delete;

  /// `bytes` bytes for `what` (null for 0), aligned; not cleared when they
  /// come from the caller's hook. TCC_ERROR_MEMORY naming `what` and the
  /// size when the source returns null; TCC_ERROR_ARGUMENT when the hook
  /// returns a misaligned address (given back first).
  uint8_t *allocate(size_t bytes, const std::string &what);

  /// Whether the buffers come from the caller's tcc_allocator.
  bool hooked() const { return isHook; }

  /// Gives every buffer back, the newest first.
  void release();

private:
  struct Block {
    void *p;
    size_t bytes;
  };
  tcc_allocator source;
  bool isHook;
  tcc_memory_kind kind;
  size_t alignment;
  std::vector<Block> blocks;
};

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_ALLOCATOR_H
