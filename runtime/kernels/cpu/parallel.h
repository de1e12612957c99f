//===- parallel.h - the CPU backend's persistent worker threads -*- C++ -*-===//
//
// One pool of worker threads per process, started on first use and kept
// until exit, so splitting a kernel over the cores costs a wake-up (a few
// microseconds) instead of starting and joining threads on every launch.
//
// parallel_for splits [0, n) into contiguous chunks that depend only on n,
// the chunk count and the thread count (never on timing), and each chunk
// computes its elements by itself: which thread runs a chunk cannot change
// a result, so the split is deterministic run to run.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_CPU_PARALLEL_H
#define TCC_RUNTIME_KERNELS_CPU_PARALLEL_H

#include <cstdint>

namespace tcc::cpu {

/// The threads parallel_for uses (the caller's included): the machine's
/// hardware threads, at most 8; TCC_CPU_THREADS=N (1..64) overrides it.
unsigned parallel_threads();

/// body(ctx, begin, end) over [0, n) in chunks of at least `min_chunk`
/// elements (one chunk, on the calling thread, when n < 2 * min_chunk or
/// only one thread is configured). Blocks until every chunk has run. The
/// workers run with the caller's floating-point mode (MXCSR on x86: flush
/// to zero, denormals are zero). A parallel_for called while another one
/// runs (from another thread, or from inside a body) runs on its caller
/// alone.
void parallel_for(int64_t n, int64_t min_chunk,
                  void (*body)(void *ctx, int64_t begin, int64_t end),
                  void *ctx);

/// parallel_for with a callable f(begin, end).
template <class F> void parallel_for(int64_t n, int64_t min_chunk, const F &f) {
  parallel_for(
      n, min_chunk,
      [](void *ctx, int64_t begin, int64_t end) {
        (*static_cast<const F *>(ctx))(begin, end);
      },
      const_cast<void *>(static_cast<const void *>(&f)));
}

} // namespace tcc::cpu

#endif // TCC_RUNTIME_KERNELS_CPU_PARALLEL_H
