//===- allocator.cpp - where a backend's buffers come from ----------------===//

#include "exec/allocator.h"

#include "exec/artifact.h"

#include <cstdlib>
#include <cstring>

namespace tcc::rt {

namespace {

// calloc has no alignment argument: each block is over-allocated and the
// start of what calloc returned is kept in the word before the aligned
// address, where free finds it.
void *callocAligned(void *, size_t bytes, size_t alignment, tcc_memory_kind) {
  size_t extra = alignment + sizeof(void *);
  if (bytes > SIZE_MAX - extra)
    return nullptr;
  void *raw = std::calloc(bytes + extra, 1);
  if (!raw)
    return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(raw) + sizeof(void *);
  uintptr_t aligned = (start + alignment - 1) & ~uintptr_t(alignment - 1);
  std::memcpy(reinterpret_cast<void *>(aligned - sizeof(void *)), &raw,
              sizeof raw);
  return reinterpret_cast<void *>(aligned);
}

void freeAligned(void *, void *p, size_t, tcc_memory_kind) {
  void *raw;
  std::memcpy(&raw, static_cast<char *>(p) - sizeof(void *), sizeof raw);
  std::free(raw);
}

const char *kindName(tcc_memory_kind kind) {
  return kind == TCC_MEMORY_DEVICE ? "device" : "host";
}

} // namespace

tcc_allocator callocAllocator() {
  return {nullptr, callocAligned, freeAligned};
}

Allocator::Allocator(const tcc_allocator &hook, const tcc_allocator &own,
                     tcc_memory_kind kind, size_t alignment)
    : source(hook.alloc ? hook : own), isHook(hook.alloc != nullptr),
      kind(kind), alignment(alignment) {}

uint8_t *Allocator::allocate(size_t bytes, const std::string &what) {
  if (bytes == 0)
    return nullptr;
  blocks.reserve(blocks.size() + 1); // so the push below cannot throw
  void *p = source.alloc(source.ctx, bytes, alignment, kind);
  std::string buffer = std::to_string(bytes) + " bytes of " + kindName(kind) +
                       " memory for " + what;
  if (!p)
    fail(TCC_ERROR_MEMORY,
         "cannot allocate " + buffer +
             (isHook ? ": the session's tcc_allocator returned NULL" : ""));
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0) {
    source.free(source.ctx, p, bytes, kind);
    fail(TCC_ERROR_ARGUMENT, "the session's tcc_allocator returned " + buffer +
                                 " not aligned to " +
                                 std::to_string(alignment) + " bytes");
  }
  blocks.push_back({p, bytes});
  return static_cast<uint8_t *>(p);
}

void Allocator::release() {
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b)
    source.free(source.ctx, b->p, b->bytes, kind);
  blocks.clear();
}

} // namespace tcc::rt
